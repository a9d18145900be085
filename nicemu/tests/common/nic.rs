// SPDX-License-Identifier: Apache-2.0
//! An igb or ixgbe "driver" over vfio-user for tests that move frames:
//! queue 0 of each direction with [`RING`] descriptors, set up the way
//! `igb_configure_tx_ring`/`ixgbe_configure_tx_ring` and their receive
//! counterparts leave them (advanced descriptors, one 2 KiB buffer per
//! frame), frames sent from the test thread and received frames taken from
//! the ring and counted as the driver's clean-up does.

use std::time::{Duration, Instant};

use vfio_user::Client;

use super::{bus_master, rd, wr, Nicemu, Ram};

/// Descriptors per ring.
pub const RING: u32 = 32;
const TX_RING: u64 = 0x10000;
const RX_RING: u64 = 0x20000;
const RX_BUF: u64 = 0x40000;
const TX_BUF: u64 = 0x80000;
/// Descriptor write-back: DD.
const DD: u32 = 1;
/// Queue enable in TXDCTL / RXDCTL (both models).
const QUEUE_ENABLE: u32 = 1 << 25;

/// Which model, and where its queue 0 registers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 82576: TX queue 0 at 0x3800, RX at 0x2800 (`E1000_TDBAL(0)`…).
    Igb,
    /// 82599: TX queue 0 at 0x6000, RX at 0x1000 (`IXGBE_TDBAL(0)`…).
    Ixgbe,
}

impl Kind {
    fn tx_base(self) -> u64 {
        match self {
            Kind::Igb => 0x3800,
            Kind::Ixgbe => 0x6000,
        }
    }

    fn rx_base(self) -> u64 {
        match self {
            Kind::Igb => 0x2800,
            Kind::Ixgbe => 0x1000,
        }
    }

    /// Receive control and its enable value (igb: RCTL.EN|BAM|SECRC;
    /// ixgbe: RXCTRL.RXEN).
    pub fn rx_control(self) -> (u64, u32) {
        match self {
            Kind::Igb => (0x100, 0x2 | (1 << 15) | (1 << 26)),
            Kind::Ixgbe => (0x3000, 1),
        }
    }
}

/// Register offsets within a queue's block (the same in both models).
mod q {
    pub const BAL: u64 = 0x00;
    pub const BAH: u64 = 0x04;
    pub const LEN: u64 = 0x08;
    pub const SRRCTL: u64 = 0x0c;
    pub const H: u64 = 0x10;
    pub const T: u64 = 0x18;
    pub const DCTL: u64 = 0x28;
}

/// One function as its driver holds it: client, RAM, ring positions and
/// what it moved.
pub struct Nic {
    pub kind: Kind,
    sock: String,
    c: Option<Client>,
    pub ram: Ram,
    tx_next: u32,
    /// The transmit head as last read (descriptors before it are done).
    tx_clean: u32,
    rx_next: u32,
    /// Frames posted for transmit.
    pub posted: u64,
    /// Frames not posted because every descriptor was in use (the
    /// function held them: no link).
    pub ring_full: u64,
    /// Frames posted that a reset or reconnect discarded before the
    /// function took them (it held them for want of link).
    pub flushed: u64,
    /// Frames taken from the receive ring.
    pub received: u64,
}

impl Nic {
    /// Connects to `sock` of `n`, maps 1 MiB of RAM and sets the rings up.
    pub fn open(n: &Nicemu, kind: Kind, sock: &str) -> Nic {
        let mut nic = Nic {
            kind,
            sock: sock.into(),
            c: None,
            ram: Ram::new(&n.dir, sock, 1 << 20),
            tx_next: 0,
            tx_clean: 0,
            rx_next: 0,
            posted: 0,
            ring_full: 0,
            flushed: 0,
            received: 0,
        };
        nic.reconnect(n);
        nic
    }

    /// The vfio-user client.
    pub fn c(&mut self) -> &mut Client {
        self.c.as_mut().expect("connected")
    }

    /// A new client (the old connection ends first: nicemu serves one at a
    /// time and resets the function in between), set up again.
    pub fn reconnect(&mut self, n: &Nicemu) {
        if self.c.is_some() {
            self.flushed += self.drain_tx(Duration::from_secs(3));
        }
        self.c = None;
        let mut c = n.client(&self.sock);
        self.ram.map(&mut c);
        self.c = Some(c);
        self.set_up();
    }

    /// A function reset (DEVICE_RESET, as QEMU's FLR) and the rings again.
    pub fn reset(&mut self) {
        self.flushed += self.drain_tx(Duration::from_secs(3));
        self.c().reset().unwrap();
        self.set_up();
    }

    fn ring(&mut self, base: u64, ring: u64) {
        let c = self.c();
        wr(c, base + q::DCTL, 0);
        wr(c, base + q::BAL, ring as u32);
        wr(c, base + q::BAH, 0);
        wr(c, base + q::LEN, RING * 16);
        wr(c, base + q::H, 0);
        wr(c, base + q::T, 0);
    }

    /// Bus mastering, both rings of queue 0, transmitter and receiver on;
    /// igb also sets CTRL.SLU as `igb_setup_copper_link` does.
    pub fn set_up(&mut self) {
        let k = self.kind;
        bus_master(self.c());
        self.ring(k.tx_base(), TX_RING);
        self.ring(k.rx_base(), RX_RING);
        let c = self.c();
        wr(c, k.tx_base() + q::DCTL, QUEUE_ENABLE);
        match k {
            Kind::Igb => wr(c, 0x400, 0x2 | 0x8), // TCTL.EN|PSP
            Kind::Ixgbe => {
                let v = rd(c, 0x4a80);
                wr(c, 0x4a80, v | 1); // DMATXCTL.TE
            }
        }
        // SRRCTL: advanced one-buffer descriptors, 2 KiB buffers.
        let srrctl = match k {
            Kind::Igb => (k.rx_base() + q::SRRCTL, 0x0200_0402),
            Kind::Ixgbe => (k.rx_base() + 0x14, 0x0200_0002),
        };
        wr(c, srrctl.0, srrctl.1);
        wr(c, k.rx_base() + q::DCTL, QUEUE_ENABLE);
        for i in 0..u64::from(RING) {
            self.ram
                .put(RX_RING + i * 16, &(RX_BUF + i * 2048).to_le_bytes());
            self.ram.put(RX_RING + i * 16 + 8, &0u64.to_le_bytes());
        }
        let c = self.c.as_mut().unwrap();
        wr(c, k.rx_base() + q::T, RING - 1);
        self.receiver(true);
        if k == Kind::Igb {
            let c = self.c();
            let ctrl = rd(c, 0);
            wr(c, 0, ctrl | 0x40);
        }
        self.tx_next = 0;
        self.tx_clean = 0;
        self.rx_next = 0;
    }

    /// Turns the receiver on or off (RCTL.EN / RXCTRL.RXEN).
    pub fn receiver(&mut self, on: bool) {
        let (reg, v) = self.kind.rx_control();
        let c = self.c();
        wr(c, reg, if on { v } else { v & !0x3 });
    }

    /// Transmits `frame` from the next descriptor; false (and counted in
    /// `ring_full`) when every descriptor is in use. The function processes
    /// the ring during the tail write while it has link; without link it
    /// holds the frames, as the driver learns from TDH when the ring looks
    /// full.
    pub fn send(&mut self, frame: &[u8]) -> bool {
        let in_use = |n: &Nic| (n.tx_next + RING - n.tx_clean) % RING;
        if in_use(self) == RING - 1 {
            self.tx_clean = self.tx_head() % RING;
            if in_use(self) == RING - 1 {
                self.ring_full += 1;
                return false;
            }
        }
        let idx = self.tx_next;
        let buf = TX_BUF + u64::from(idx) * 2048;
        self.ram.put(buf, frame);
        let d = TX_RING + u64::from(idx) * 16;
        self.ram.put(d, &buf.to_le_bytes());
        // DTYP advanced data, DCMD EOP|IFCS|RS|DEXT; PAYLEN.
        self.ram
            .put(d + 8, &(0x2b30_0000u32 | frame.len() as u32).to_le_bytes());
        self.ram
            .put(d + 12, &((frame.len() as u32) << 14).to_le_bytes());
        self.tx_next = (idx + 1) % RING;
        let tdt = self.kind.tx_base() + q::T;
        let next = self.tx_next;
        wr(self.c(), tdt, next);
        self.posted += 1;
        true
    }

    /// Waits until the function took every posted frame (it holds them
    /// while it has no link; an igb negotiates for 1 s after a cable
    /// connect), at most `limit`; returns how many it still holds.
    pub fn drain_tx(&mut self, limit: Duration) -> u64 {
        let t = Instant::now();
        loop {
            let held = (self.tx_next + RING - self.tx_head() % RING) % RING;
            if held == 0 || t.elapsed() > limit {
                return u64::from(held);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The transmit head (descriptors the function has taken).
    pub fn tx_head(&mut self) -> u32 {
        let tdh = self.kind.tx_base() + q::H;
        rd(self.c(), tdh)
    }

    /// Takes every received frame from the ring (descriptors with DD, from
    /// where the last call stopped), gives the buffers back and moves the
    /// tail; returns the lengths taken.
    pub fn harvest(&mut self) -> Vec<usize> {
        let mut lens = Vec::new();
        loop {
            let d = RX_RING + u64::from(self.rx_next) * 16;
            let wb = self.ram.get(d + 8, 8);
            let status = u32::from_le_bytes(wb[0..4].try_into().unwrap());
            if status & DD == 0 {
                break;
            }
            lens.push(usize::from(u16::from_le_bytes([wb[4], wb[5]])));
            let i = u64::from(self.rx_next);
            self.ram.put(d, &(RX_BUF + i * 2048).to_le_bytes());
            self.ram.put(d + 8, &0u64.to_le_bytes());
            self.rx_next = (self.rx_next + 1) % RING;
        }
        if !lens.is_empty() {
            let rdt = self.kind.rx_base() + q::T;
            let tail = (self.rx_next + RING - 1) % RING;
            wr(self.c(), rdt, tail);
            self.received += lens.len() as u64;
        }
        lens
    }
}
