// SPDX-License-Identifier: Apache-2.0
//! The VF side of the PF/VF mailbox (82576 datasheet §7.8.2.2 "Mailbox",
//! V2PMAILBOX §8.27; 82599 §7.10.2.10, VFMailbox §8.3.5.1.x): one control
//! register and a 16-word message buffer shared by the VF and the PF.
//!
//! The register's bits, as the igbvf and ixgbevf drivers use them
//! (`e1000_read_v2p_mailbox`, `ixgbevf_read_mailbox_vf`):
//! REQ (write 1: a message for the PF is in the buffer), ACK (write 1: the
//! PF's message was read), VFU (the VF owns the buffer, granted while the PF
//! does not), PFU (the PF owns it), PFSTS (the PF wrote a message), PFACK
//! (the PF took the VF's message), RSTI (the PF is resetting the VF's
//! resources), RSTD (that reset is done). PFSTS, PFACK and RSTD clear when
//! read; REQ and ACK read as 0.
//!
//! The PF here is nicemu's agent ([`super::agent`]), which answers at once:
//! a REQ hands the buffer to the agent and the reply is in the buffer with
//! PFACK and PFSTS set before the VF's next access. A message the PF starts
//! itself (a control message on a link change) waits while the VF holds the
//! buffer or has not acknowledged the previous one, in one slot (a newer
//! control message replaces a waiting one), so a VF that never lets go costs
//! one message of memory.

/// Words of the message buffer (`E1000_VFMAILBOX_SIZE`, `IXGBE_VFMAILBOX_SIZE`).
pub const WORDS: usize = 16;

/// Mailbox register bits (82576 §8.27.2, 82599 §8.3.5.1.6).
pub mod bits {
    /// VF → PF: a message is in the buffer (write only).
    pub const REQ: u32 = 1 << 0;
    /// VF → PF: the PF's message was received (write only).
    pub const ACK: u32 = 1 << 1;
    /// The VF owns the buffer.
    pub const VFU: u32 = 1 << 2;
    /// The PF owns the buffer.
    pub const PFU: u32 = 1 << 3;
    /// The PF wrote a message (clear on read).
    pub const PFSTS: u32 = 1 << 4;
    /// The PF acknowledged the VF's message (clear on read).
    pub const PFACK: u32 = 1 << 5;
    /// Reset in progress: the PF is resetting the VF's resources.
    pub const RSTI: u32 = 1 << 6;
    /// The PF has finished the VF's reset (clear on read).
    pub const RSTD: u32 = 1 << 7;
    /// The bits a read clears.
    pub const R2C: u32 = PFSTS | PFACK | RSTD;
    /// The bits a read returns.
    pub const READABLE: u32 = VFU | PFU | PFSTS | PFACK | RSTI | RSTD;
}

/// A message: its words and how many of them are meaningful.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The words (the rest of the buffer as it was).
    pub words: [u32; WORDS],
    /// Words written (1..=16).
    pub len: usize,
}

impl Message {
    /// A message of `words`.
    pub fn new(words: &[u32]) -> Self {
        let len = words.len().clamp(1, WORDS);
        let mut w = [0; WORDS];
        w[..len].copy_from_slice(&words[..len]);
        Message { words: w, len }
    }
}

/// What a VF write to the mailbox register asks of the PF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfEvent {
    /// Nothing for the PF to do.
    None,
    /// REQ: the buffer holds a message for the PF.
    Request([u32; WORDS]),
}

/// Mailbox counters (`ctl mailbox`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MailboxStats {
    /// Messages the VF sent (REQ).
    pub requests: u64,
    /// Messages the PF sent (replies and its own).
    pub pf_messages: u64,
    /// Acknowledgements the VF gave.
    pub acks: u64,
    /// Buffer writes without VFU held: ignored.
    pub unlocked_writes: u64,
    /// PF messages replaced in the waiting slot by a newer one.
    pub replaced: u64,
}

/// The mailbox of one VF. See the module documentation.
#[derive(Clone, Debug)]
pub struct Mailbox {
    /// VFU, PFU, PFSTS, PFACK, RSTI, RSTD as stored.
    reg: u32,
    mem: [u32; WORDS],
    /// The VF has not acknowledged the PF's last message.
    unacked: bool,
    /// A message the PF started that waits for the buffer.
    waiting: Option<Message>,
    stats: MailboxStats,
}

impl Default for Mailbox {
    fn default() -> Self {
        Mailbox {
            reg: bits::RSTD,
            mem: [0; WORDS],
            unacked: false,
            waiting: None,
            stats: MailboxStats::default(),
        }
    }
}

impl Mailbox {
    /// The VF reads the register: the R2C bits it returns are cleared.
    pub fn vf_read(&mut self) -> u32 {
        let v = self.reg & bits::READABLE;
        self.reg &= !bits::R2C;
        v
    }

    /// The register as stored, without a read's side effects.
    pub fn peek(&self) -> u32 {
        self.reg & bits::READABLE
    }

    /// The VF writes the register: VFU is taken (unless the PF owns the
    /// buffer) or let go, ACK acknowledges the PF's message, REQ hands the
    /// buffer to the PF. Returns the message for the PF, if any; a PF
    /// message that waited may be posted meanwhile (then true in the second
    /// field: the VF is to be interrupted).
    pub fn vf_write(&mut self, v: u32) -> (VfEvent, bool) {
        if v & bits::VFU != 0 {
            if self.reg & bits::PFU == 0 {
                self.reg |= bits::VFU;
            }
        } else {
            self.reg &= !bits::VFU;
        }
        if v & bits::ACK != 0 {
            self.unacked = false;
            self.stats.acks += 1;
        }
        let ev = if v & bits::REQ != 0 {
            self.stats.requests += 1;
            VfEvent::Request(self.mem)
        } else {
            VfEvent::None
        };
        let posted = ev == VfEvent::None && self.flush_waiting();
        (ev, posted)
    }

    /// Word `i` of the buffer as the VF reads it.
    pub fn mem_read(&self, i: usize) -> u32 {
        self.mem[i % WORDS]
    }

    /// The VF writes word `i` of the buffer: only while it holds VFU (the
    /// drivers take it first, `e1000_obtain_mbx_lock_vf`,
    /// `ixgbevf_obtain_mbx_lock_vf`); otherwise ignored and counted.
    pub fn mem_write(&mut self, i: usize, v: u32) -> bool {
        if self.reg & bits::VFU == 0 {
            self.stats.unlocked_writes += 1;
            return false;
        }
        self.mem[i % WORDS] = v;
        true
    }

    /// The PF answers the VF's message: the reply goes into the buffer with
    /// PFACK (message taken) and PFSTS (message written).
    pub fn pf_reply(&mut self, reply: &Message) {
        self.write_pf(reply);
        self.reg |= bits::PFACK;
    }

    /// The PF sends a message of its own: posted now when the buffer is
    /// free (returns true: interrupt the VF), else kept until it is.
    pub fn pf_send(&mut self, msg: Message) -> bool {
        if self.waiting.replace(msg).is_some() {
            self.stats.replaced += 1;
        }
        self.flush_waiting()
    }

    /// Posts the waiting PF message if the VF neither holds the buffer nor
    /// has a PF message unacknowledged.
    fn flush_waiting(&mut self) -> bool {
        if self.reg & bits::VFU != 0 || self.unacked {
            return false;
        }
        match self.waiting.take() {
            Some(m) => {
                self.write_pf(&m);
                true
            }
            None => false,
        }
    }

    fn write_pf(&mut self, m: &Message) {
        self.mem[..m.len].copy_from_slice(&m.words[..m.len]);
        self.reg |= bits::PFSTS;
        self.unacked = true;
        self.stats.pf_messages += 1;
    }

    /// The VF was reset (CTRL.RST, FLR): the buffer is free, nothing is
    /// owed, and the PF has done its part of the reset at once (RSTD).
    pub fn vf_reset(&mut self) {
        self.reg = bits::RSTD;
        self.mem = [0; WORDS];
        self.unacked = false;
        self.waiting = None;
    }

    /// The PF is resetting (RSTI until [`Self::pf_reset_done`]).
    pub fn pf_reset(&mut self) {
        self.reg = (self.reg & !bits::RSTD) | bits::RSTI;
        self.waiting = None;
        self.unacked = false;
    }

    /// The PF's reset is over: RSTI gives way to RSTD.
    pub fn pf_reset_done(&mut self) {
        self.reg = (self.reg & !bits::RSTI) | bits::RSTD;
    }

    /// The PF takes the buffer back from a VF that holds it (RVFU).
    pub fn pf_reset_vfu(&mut self) -> bool {
        self.reg &= !bits::VFU;
        self.flush_waiting()
    }

    /// The counters.
    pub fn stats(&self) -> MailboxStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::bits::*;
    use super::*;

    /// igbvf's `e1000_write_posted_mbx` then `e1000_read_posted_mbx`
    /// (legacy: REQ alone lets go of VFU; the read takes VFU, ACK lets go).
    #[test]
    fn legacy_exchange_as_igbvf_does_it() {
        let mut m = Mailbox::default();
        assert_eq!(m.vf_read(), RSTD, "reset done after power-on");
        assert_eq!(m.vf_read(), 0, "RSTD clears on read");
        m.vf_write(VFU);
        assert_eq!(m.vf_read() & VFU, VFU, "lock granted");
        assert!(m.mem_write(0, 0x01));
        let (ev, _) = m.vf_write(REQ);
        let VfEvent::Request(words) = ev else {
            panic!("no request")
        };
        assert_eq!(words[0], 0x01);
        m.pf_reply(&Message::new(&[0x8000_0001, 0x0012_3456]));
        let r = m.vf_read();
        assert_eq!(r & (PFACK | PFSTS), PFACK | PFSTS);
        assert_eq!(r & VFU, 0, "REQ alone released the buffer");
        assert_eq!(m.vf_read() & (PFACK | PFSTS), 0, "cleared on read");
        m.vf_write(VFU);
        assert_eq!(m.mem_read(0), 0x8000_0001);
        assert_eq!(m.mem_read(1), 0x0012_3456);
        m.vf_write(ACK);
        assert_eq!(m.peek() & VFU, 0);
        assert_eq!(m.stats().acks, 1);
    }

    /// ixgbevf's API 1.5+ protocol: VFU held across REQ and the ACK poll,
    /// released after; the reply read without the lock.
    #[test]
    fn locked_exchange_as_ixgbevf_does_it() {
        let mut m = Mailbox::default();
        m.vf_read();
        m.vf_write(VFU);
        m.mem_write(0, 0x08);
        m.mem_write(1, 7);
        let (ev, _) = m.vf_write(VFU | REQ);
        assert!(matches!(ev, VfEvent::Request(w) if w[..2] == [8, 7]));
        m.pf_reply(&Message::new(&[0x8000_0008 | 0x2000_0000, 7]));
        assert_eq!(m.vf_read() & (VFU | PFACK | PFSTS), VFU | PFACK | PFSTS);
        m.vf_write(0);
        assert_eq!(m.mem_read(0), 0xa000_0008);
        m.vf_write(ACK);
        assert_eq!(m.stats().requests, 1);
    }

    #[test]
    fn writes_without_the_lock_are_ignored_and_counted() {
        let mut m = Mailbox::default();
        assert!(!m.mem_write(3, 0xdead));
        assert_eq!(m.mem_read(3), 0);
        assert_eq!(m.stats().unlocked_writes, 1);
        m.vf_write(VFU);
        assert!(m.mem_write(19, 5), "word index wraps within the buffer");
        assert_eq!(m.mem_read(3), 5);
    }

    #[test]
    fn a_pf_message_waits_for_the_buffer_and_the_last_ack() {
        let mut m = Mailbox::default();
        m.vf_read();
        m.vf_write(VFU);
        assert!(!m.pf_send(Message::new(&[0x100])), "VF holds the buffer");
        assert!(
            !m.pf_send(Message::new(&[0x2000_0100])),
            "a newer message replaces the waiting one"
        );
        assert_eq!(m.stats().replaced, 1);
        assert_eq!(m.vf_read() & PFSTS, 0);
        let (_, posted) = m.vf_write(0);
        assert!(posted, "posted once VFU is let go");
        assert_eq!(m.mem_read(0), 0x2000_0100);
        assert_eq!(m.vf_read() & PFSTS, PFSTS);
        assert!(
            !m.pf_send(Message::new(&[0x100])),
            "the last one is unacked"
        );
        let (_, posted) = m.vf_write(ACK);
        assert!(posted);
        assert_eq!(m.mem_read(0), 0x100);
        assert_eq!(m.stats().pf_messages, 2);
    }

    #[test]
    fn vf_and_pf_resets() {
        let mut m = Mailbox::default();
        m.vf_read();
        m.vf_write(VFU);
        m.mem_write(0, 9);
        m.vf_reset();
        assert_eq!(m.vf_read(), RSTD);
        assert_eq!(m.mem_read(0), 0);
        m.pf_reset();
        assert_eq!(m.vf_read(), RSTI, "RSTI stays while the PF resets");
        assert_eq!(m.vf_read(), RSTI);
        m.pf_reset_done();
        assert_eq!(m.vf_read(), RSTD);
        m.vf_write(VFU);
        m.pf_send(Message::new(&[1]));
        assert!(m.pf_reset_vfu(), "RVFU takes the buffer back");
        assert_eq!(m.peek() & VFU, 0);
    }
}
