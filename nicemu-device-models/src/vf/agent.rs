// SPDX-License-Identifier: Apache-2.0
//! nicemu's PF agent: what the host's PF driver answers a VF through the
//! mailbox, written from the message protocol the igbvf and ixgbevf drivers
//! speak (their `mbx.h`: message ids, the ACK/NACK/CTS bits, the info field
//! in bits 23:16) and the behaviour the Linux PF drivers document for them
//! (igb's and ixgbe's handling of each message, read for facts only).
//!
//! The agent keeps what the PF keeps per VF: the administrative settings
//! ([`Admin`], as `ip link set PF vf N …` sets them), whether the VF is clear
//! to send (after its VF_RESET), the MAC address and the receive filters the
//! VF asked for, its maximum frame size, its multicast/promiscuous mode and
//! the mailbox API version it negotiated. Every message costs bounded work:
//! counts in a message are clamped to what the buffer and the part hold,
//! lists are bounded, and an unknown opcode is refused (NACK).

use std::collections::VecDeque;

use super::mailbox::{Message, WORDS};

/// Message type bits of word 0 (`E1000_VT_MSGTYPE_*`, `IXGBE_VT_MSGTYPE_*`).
pub mod msgtype {
    /// The PF did what was asked (ixgbe: SUCCESS).
    pub const ACK: u32 = 0x8000_0000;
    /// The PF refused (ixgbe: FAILURE).
    pub const NACK: u32 = 0x4000_0000;
    /// The VF is clear to send.
    pub const CTS: u32 = 0x2000_0000;
    /// Bits 23:16: a message's extra information (a count, an index).
    pub const INFO_SHIFT: u32 = 16;
    /// Mask of the information field.
    pub const INFO_MASK: u32 = 0xff << INFO_SHIFT;
    /// The opcode bits.
    pub const OP_MASK: u32 = 0xffff;
}

/// Opcodes (`E1000_VF_*`, `IXGBE_VF_*`).
pub mod op {
    /// VF requests a reset; the reply carries its MAC address.
    pub const RESET: u32 = 0x01;
    /// Set the VF's MAC address (igb: with info 1/2, clear/add a filter).
    pub const SET_MAC_ADDR: u32 = 0x02;
    /// Set the multicast hash list (count in the info field).
    pub const SET_MULTICAST: u32 = 0x03;
    /// Add (info 1) or remove a VLAN filter.
    pub const SET_VLAN: u32 = 0x04;
    /// Set the largest frame (word 1).
    pub const SET_LPE: u32 = 0x05;
    /// igb: promiscuous modes; ixgbe: SET_MACVLAN (a MAC filter at index
    /// info, 0 clears them).
    pub const SET_PROMISC_OR_MACVLAN: u32 = 0x06;
    /// ixgbe: negotiate the mailbox API (version in word 1).
    pub const API_NEGOTIATE: u32 = 0x08;
    /// ixgbe: queues and default queue.
    pub const GET_QUEUES: u32 = 0x09;
    /// ixgbe: the redirection table (when allowed).
    pub const GET_RETA: u32 = 0x0a;
    /// ixgbe: the RSS key (when allowed).
    pub const GET_RSS_KEY: u32 = 0x0b;
    /// ixgbe: multicast / promiscuous mode (word 1).
    pub const UPDATE_XCAST_MODE: u32 = 0x0c;
    /// ixgbe: the VF's administrative link state.
    pub const GET_LINK_STATE: u32 = 0x10;
    /// ixgbe, API 1.7: features both sides support.
    pub const FEATURES_NEGOTIATE: u32 = 0x12;
    /// PF → VF: a control message (link change, PF reset).
    pub const PF_CONTROL_MSG: u32 = 0x0100;
}

/// Which part's PF the agent answers as: the 82576's (igb) or the 82599's
/// (ixgbe) — their message sets and limits differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfKind {
    /// igb on an 82576.
    Igb,
    /// ixgbe on an 82599.
    Ixgbe,
}

/// The mailbox API versions (`enum ixgbe_pfvf_api_rev`), by their number on
/// the wire.
pub mod api {
    /// 1.0.
    pub const V10: u32 = 0;
    /// 2.0 (Solaris).
    pub const V20: u32 = 1;
    /// 1.1.
    pub const V11: u32 = 2;
    /// 1.2.
    pub const V12: u32 = 3;
    /// 1.3.
    pub const V13: u32 = 4;
    /// 1.4.
    pub const V14: u32 = 5;
    /// 1.5 (the locked mailbox protocol the Linux PF does not accept).
    pub const V15: u32 = 6;
    /// 1.6.
    pub const V16: u32 = 7;
    /// 1.7.
    pub const V17: u32 = 8;
}

/// Multicast / promiscuous modes (`IXGBEVF_XCAST_MODE_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Xcast {
    /// No multicast: broadcast and the unicast filters only (mode 0).
    None,
    /// The multicast hash list (the default).
    #[default]
    Multi,
    /// Every multicast.
    AllMulti,
    /// Every frame (trusted VFs only).
    Promisc,
}

/// The administrative link state of a VF (`ip link set … vf N state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkMode {
    /// Follows the PF's link.
    #[default]
    Auto,
    /// Up whatever the PF's link.
    Enable,
    /// Down.
    Disable,
}

/// What the host sets for a VF (`ip link set PF vf N mac|vlan|spoofchk|
/// trust|state`), with the Linux PFs' defaults: no MAC (the VF's reset is
/// refused and its driver picks one), no port VLAN, spoof checking on,
/// not trusted, link following the PF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admin {
    /// The administrative MAC address: the VF may not change it unless
    /// trusted.
    pub mac: Option<[u8; 6]>,
    /// Port VLAN (1..=4094) the VF's frames are tagged with, and its QoS.
    pub vlan: Option<(u16, u8)>,
    /// Drop frames the VF sends from another MAC address.
    pub spoofchk: bool,
    /// Trusted: may change an administrative MAC, go promiscuous.
    pub trust: bool,
    /// Link state.
    pub link: LinkMode,
    /// The VF may read the RSS redirection table and key.
    pub rss_query: bool,
}

impl Default for Admin {
    fn default() -> Self {
        Admin {
            mac: None,
            vlan: None,
            spoofchk: true,
            trust: false,
            link: LinkMode::Auto,
            rss_query: false,
        }
    }
}

/// Multicast hashes a VF may register (`E1000_VF_SET_MULTICAST`'s 30, also
/// `IXGBE_MAX_VF_MC_ENTRIES`).
pub const MAX_MC_HASHES: usize = 30;
/// VLAN filters of one VF (the 82576's VLVF has 32 entries).
pub const MAX_VLANS: usize = 32;
/// Extra unicast MAC filters of one VF.
pub const MAX_UC_FILTERS: usize = 15;
/// Messages the trace keeps (`ctl mailbox`).
pub const TRACE_LEN: usize = 64;
/// Queues of a VF's pool.
pub const POOL_QUEUES: u32 = 2;

/// One mailbox message in the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// From the VF (true) or the PF.
    pub from_vf: bool,
    /// Its meaningful words (the first few).
    pub words: [u32; 4],
    /// How many words it had.
    pub len: u8,
}

/// The PF's state of one VF. See the module documentation.
#[derive(Clone, Debug)]
pub struct Agent {
    kind: PfKind,
    /// The host's settings.
    pub admin: Admin,
    /// The VF completed a VF_RESET: other messages are served.
    pub cts: bool,
    /// The VF's MAC address (all zero: none).
    pub mac: [u8; 6],
    /// Extra unicast addresses the VF receives.
    pub uc: Vec<[u8; 6]>,
    /// The multicast hash values (12 bits, MO 0).
    pub mc: Vec<u16>,
    /// VLAN IDs the VF receives.
    pub vlans: Vec<u16>,
    /// The largest frame the VF takes (without FCS), from SET_LPE.
    pub max_frame: u32,
    /// Multicast / promiscuous mode.
    pub xcast: Xcast,
    /// The negotiated mailbox API.
    pub api: u32,
    /// Receive and transmit enabled by the PF (after VF_RESET).
    pub enabled: bool,
    /// Messages refused.
    pub nacks: u64,
    /// When the last bare NACK for a read while not clear to send went out.
    ack_nack_ns: Option<u64>,
    trace: VecDeque<TraceEntry>,
}

/// Least time between two bare NACKs answering a VF that reads while not
/// clear to send (`igb_rcv_ack_from_vf`'s 2 s).
pub const ACK_NACK_INTERVAL_NS: u64 = 2_000_000_000;

/// Largest frame the 82576 takes (`MAX_JUMBO_FRAME_SIZE`, 9216 bytes).
const IGB_MAX_FRAME: u32 = 9216;
/// Largest frame the 82599 takes (`IXGBE_MAX_JUMBO_FRAME_SIZE`).
const IXGBE_MAX_FRAME: u32 = 9728;
/// Standard frame: 1514 bytes and a VLAN tag.
pub const STD_FRAME: u32 = 1518;

/// The 12-bit multicast table hash of a MAC address with MO = 0 (82576
/// §8.10.15, 82599 §8.2.3.7.7): address bits 47:36.
pub fn mc_hash(mac: &[u8]) -> u16 {
    ((u16::from(mac[4]) >> 4) | (u16::from(mac[5]) << 4)) & 0xfff
}

fn mac_of(words: &[u32], first: usize) -> [u8; 6] {
    let a = words[first].to_le_bytes();
    let b = words[first + 1].to_le_bytes();
    [a[0], a[1], a[2], a[3], b[0], b[1]]
}

fn put_mac(words: &mut [u32], first: usize, mac: [u8; 6]) {
    words[first] = u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]);
    words[first + 1] = u32::from(u16::from_le_bytes([mac[4], mac[5]]));
}

/// A unicast address that is not all zero (`is_valid_ether_addr`).
pub fn valid_unicast(mac: &[u8; 6]) -> bool {
    mac[0] & 1 == 0 && *mac != [0; 6]
}

impl Agent {
    /// A VF of `kind`'s PF with the host's settings `admin`.
    pub fn new(kind: PfKind, admin: Admin) -> Self {
        Agent {
            kind,
            admin,
            cts: false,
            mac: admin.mac.unwrap_or([0; 6]),
            uc: Vec::new(),
            mc: Vec::new(),
            vlans: Vec::new(),
            max_frame: STD_FRAME,
            xcast: Xcast::Multi,
            api: api::V10,
            enabled: false,
            nacks: 0,
            ack_nack_ns: None,
            trace: VecDeque::new(),
        }
    }

    /// The PF kind.
    pub fn kind(&self) -> PfKind {
        self.kind
    }

    /// The VF was reset (CTRL.RST, FLR) and is not clear to send until its
    /// VF_RESET message: its receive and transmit are off.
    pub fn vf_reset(&mut self) {
        self.cts = false;
        self.enabled = false;
    }

    /// Serves one message from the VF: the reply to post.
    pub fn handle(&mut self, words: &[u32; WORDS]) -> Message {
        self.record(true, words, WORDS);
        let w0 = words[0];
        let opcode = w0 & msgtype::OP_MASK;
        let reply = if opcode == op::RESET {
            self.reset_msg()
        } else if !self.cts {
            // Not clear to send: refused, without CTS.
            self.nacks += 1;
            Message::new(&[w0 & !(msgtype::ACK | msgtype::CTS) | msgtype::NACK])
        } else {
            let mut out = *words;
            out[0] &= !(msgtype::ACK | msgtype::NACK | msgtype::CTS);
            let ok = self.serve(opcode, &mut out);
            if !ok {
                self.nacks += 1;
            }
            out[0] |= if ok { msgtype::ACK } else { msgtype::NACK } | msgtype::CTS;
            match self.kind {
                // igb replies with word 0 only unless the message carries data.
                PfKind::Igb => Message { words: out, len: 1 },
                // ixgbe writes the whole buffer back.
                PfKind::Ixgbe => Message {
                    words: out,
                    len: WORDS,
                },
            }
        };
        self.record(false, &reply.words, reply.len);
        reply
    }

    /// The VF acknowledged a PF message at `now_ns`: while it is not clear
    /// to send (after a PF reset, a VF reset it did not follow with
    /// VF_RESET) the PF tells it so with a bare NACK, at most every
    /// [`ACK_NACK_INTERVAL_NS`] (`igb_rcv_ack_from_vf`,
    /// `ixgbe_rcv_ack_from_vf`). The drivers' link check reads that NACK
    /// as "lost clear to send" and resets the VF (`e1000_check_for_link_vf`,
    /// `ixgbevf_check_mac_link_vf`); without it a VF whose PF reset waits
    /// with its link down for ever.
    pub fn on_vf_ack(&mut self, now_ns: u64) -> Option<Message> {
        if self.cts {
            return None;
        }
        if let Some(t) = self.ack_nack_ns {
            if now_ns.saturating_sub(t) < ACK_NACK_INTERVAL_NS {
                return None;
            }
        }
        self.ack_nack_ns = Some(now_ns);
        let m = Message::new(&[msgtype::NACK]);
        self.record(false, &m.words, 1);
        Some(m)
    }

    /// Refuses a message (an injected fault): NACK, with CTS when the VF
    /// is clear to send.
    pub fn refuse(&mut self, words: &[u32; WORDS]) -> Message {
        self.record(true, words, WORDS);
        self.nacks += 1;
        let cts = if self.cts { msgtype::CTS } else { 0 };
        let w0 = words[0] & !(msgtype::ACK | msgtype::CTS) | msgtype::NACK | cts;
        let m = Message::new(&[w0]);
        self.record(false, &m.words, 1);
        m
    }

    /// VF_RESET: filters cleared, receive and transmit on, clear to send,
    /// API back to 1.0; the reply carries the MAC address (ACK) or, without
    /// one, NACK (the VF driver then picks a random address), and ixgbe's
    /// the multicast filter type (word 3).
    fn reset_msg(&mut self) -> Message {
        self.uc.clear();
        self.mc.clear();
        self.vlans.clear();
        self.xcast = Xcast::Multi;
        self.api = api::V10;
        self.max_frame = STD_FRAME;
        self.cts = true;
        self.enabled = true;
        let mut w = [0u32; 4];
        w[0] = op::RESET
            | if valid_unicast(&self.mac) {
                put_mac(&mut w, 1, self.mac);
                msgtype::ACK
            } else {
                self.nacks += 1;
                msgtype::NACK
            };
        match self.kind {
            PfKind::Igb => Message::new(&w[..3]),
            PfKind::Ixgbe => Message::new(&w),
        }
    }

    /// A message of a VF clear to send: whether it was done (`out` holds
    /// what the reply carries beyond word 0's type bits).
    fn serve(&mut self, opcode: u32, out: &mut [u32; WORDS]) -> bool {
        let info = (out[0] & msgtype::INFO_MASK) >> msgtype::INFO_SHIFT;
        match (opcode, self.kind) {
            (op::SET_MAC_ADDR, PfKind::Igb) if info != 0 => self.igb_mac_filter(info, out),
            (op::SET_MAC_ADDR, _) => self.set_mac(mac_of(out, 1)),
            (op::SET_MULTICAST, _) => {
                // The hashes follow as 16-bit values; a count beyond what
                // the buffer holds or the PF keeps is clamped.
                let n = (info as usize).min(MAX_MC_HASHES);
                self.mc = (0..n)
                    .map(|i| {
                        let w = out[1 + i / 2];
                        (if i % 2 == 0 { w } else { w >> 16 }) as u16 & 0xfff
                    })
                    .collect();
                true
            }
            (op::SET_VLAN, _) => self.set_vlan(info != 0, (out[1] & 0xfff) as u16),
            (op::SET_LPE, _) => self.set_lpe(out[1]),
            (op::SET_PROMISC_OR_MACVLAN, PfKind::Igb) => {
                // `E1000_VF_SET_PROMISC`: multicast promiscuous only
                // (info bit 1); unicast (bit 0) is refused.
                if info & 1 != 0 {
                    return false;
                }
                self.xcast = if info & 2 != 0 {
                    Xcast::AllMulti
                } else {
                    Xcast::Multi
                };
                true
            }
            (op::SET_PROMISC_OR_MACVLAN, PfKind::Ixgbe) => self.macvlan(info, mac_of(out, 1)),
            (_, PfKind::Igb) => false,
            (op::API_NEGOTIATE, _) => self.negotiate(out[1]),
            (op::GET_QUEUES, _) => self.get_queues(out),
            (op::GET_RETA, _) => self.get_rss(out, 4),
            (op::GET_RSS_KEY, _) => self.get_rss(out, 10),
            (op::UPDATE_XCAST_MODE, _) => self.update_xcast(out),
            (op::GET_LINK_STATE, _) => {
                if self.api < api::V12 || self.api == api::V20 {
                    return false;
                }
                out[1] = u32::from(self.admin.link != LinkMode::Disable);
                true
            }
            (op::FEATURES_NEGOTIATE, _) => {
                if self.api != api::V17 {
                    return false;
                }
                // No IPsec offload for VFs here: no feature in common.
                out[1] = 0;
                true
            }
            _ => false,
        }
    }

    /// SET_MAC_ADDR: refused for an address that is not a valid unicast
    /// one, or when the host set the VF's address and does not trust it
    /// (ixgbe lets it "change" to the same address).
    fn set_mac(&mut self, mac: [u8; 6]) -> bool {
        if !valid_unicast(&mac) {
            return false;
        }
        if self.admin.mac.is_some() && !self.admin.trust {
            return self.kind == PfKind::Ixgbe && mac == self.mac;
        }
        self.mac = mac;
        true
    }

    /// igb's SET_MAC_ADDR with info 1 (clear the extra filters) or 2 (add
    /// one): refused for an untrusted VF with an administrative MAC.
    fn igb_mac_filter(&mut self, info: u32, out: &[u32; WORDS]) -> bool {
        if self.admin.mac.is_some() && !self.admin.trust {
            return false;
        }
        match info {
            1 => {
                self.uc.clear();
                true
            }
            2 => self.add_uc(mac_of(out, 1)),
            _ => false,
        }
    }

    /// ixgbe's SET_MACVLAN: index 0 clears the extra filters, another adds
    /// one (refused for an untrusted VF with an administrative MAC).
    fn macvlan(&mut self, index: u32, mac: [u8; 6]) -> bool {
        if index == 0 {
            self.uc.clear();
            return true;
        }
        if self.admin.mac.is_some() && !self.admin.trust {
            return false;
        }
        self.add_uc(mac)
    }

    fn add_uc(&mut self, mac: [u8; 6]) -> bool {
        if !valid_unicast(&mac) {
            return false;
        }
        if !self.uc.contains(&mac) {
            if self.uc.len() >= MAX_UC_FILTERS {
                return false;
            }
            self.uc.push(mac);
        }
        true
    }

    /// SET_VLAN: refused under a port VLAN; removing VLAN 0 is a no-op.
    fn set_vlan(&mut self, add: bool, vid: u16) -> bool {
        if self.admin.vlan.is_some() {
            return false;
        }
        if add {
            if !self.vlans.contains(&vid) {
                if self.vlans.len() >= MAX_VLANS {
                    return false;
                }
                self.vlans.push(vid);
            }
        } else {
            self.vlans.retain(|&v| v != vid);
        }
        true
    }

    /// SET_LPE: the largest frame; igb clamps to its jumbo limit, ixgbe
    /// refuses one outside 68..=9728.
    fn set_lpe(&mut self, size: u32) -> bool {
        match self.kind {
            PfKind::Igb => {
                self.max_frame = size.clamp(64, IGB_MAX_FRAME);
                true
            }
            PfKind::Ixgbe => {
                if !(68..=IXGBE_MAX_FRAME).contains(&size) {
                    return false;
                }
                self.max_frame = size;
                true
            }
        }
    }

    /// API_NEGOTIATE: the versions the Linux ixgbe PF accepts (1.0–1.4,
    /// 1.6, 1.7); 1.5, 2.0 and unknown ones refused.
    fn negotiate(&mut self, v: u32) -> bool {
        let ok = matches!(
            v,
            api::V10 | api::V11 | api::V12 | api::V13 | api::V14 | api::V16 | api::V17
        );
        if ok {
            self.api = v;
        }
        ok
    }

    /// GET_QUEUES (API 1.1 on): the pool's queues each way, whether the PF
    /// inserts a VLAN (port VLAN), the default queue.
    fn get_queues(&self, out: &mut [u32; WORDS]) -> bool {
        if self.api < api::V11 {
            return false;
        }
        out[1] = POOL_QUEUES;
        out[2] = POOL_QUEUES;
        out[3] = u32::from(self.admin.vlan.is_some());
        out[4] = 0;
        true
    }

    /// GET_RETA / GET_RSS_KEY (API 1.2 on, when the host allows the query):
    /// `n` words of the pool's table (every entry queue 0) or key (zero).
    fn get_rss(&self, out: &mut [u32; WORDS], n: usize) -> bool {
        if self.api < api::V12 || !self.admin.rss_query {
            return false;
        }
        out[1..=n].fill(0);
        true
    }

    /// UPDATE_XCAST_MODE (API 1.2 on; promiscuous from 1.3): beyond
    /// all-multicast only for a trusted VF — an untrusted one gets
    /// multicast, and the reply says which mode applies.
    fn update_xcast(&mut self, out: &mut [u32; WORDS]) -> bool {
        if self.api < api::V12 || self.api == api::V20 {
            return false;
        }
        let mut mode = match out[1] {
            0 => Xcast::None,
            1 => Xcast::Multi,
            2 => Xcast::AllMulti,
            3 if self.api >= api::V13 => Xcast::Promisc,
            _ => return false,
        };
        if mode > Xcast::Multi && !self.admin.trust {
            mode = Xcast::Multi;
        }
        self.xcast = mode;
        out[1] = mode as u32;
        true
    }

    /// The PF's control message (link change, after its reset): CTS while
    /// the VF is clear to send.
    pub fn control_msg(&mut self) -> Message {
        let w = op::PF_CONTROL_MSG | if self.cts { msgtype::CTS } else { 0 };
        let m = Message::new(&[w]);
        self.record(false, &m.words, 1);
        m
    }

    fn record(&mut self, from_vf: bool, words: &[u32; WORDS], len: usize) {
        if self.trace.len() == TRACE_LEN {
            self.trace.pop_front();
        }
        let mut w = [0; 4];
        w.copy_from_slice(&words[..4]);
        self.trace.push_back(TraceEntry {
            from_vf,
            words: w,
            len: len as u8,
        });
    }

    /// The last [`TRACE_LEN`] messages, oldest first.
    pub fn trace(&self) -> Vec<TraceEntry> {
        self.trace.iter().copied().collect()
    }

    /// The VF takes a frame to `dst` (the destination filters: its MAC, its
    /// extra unicast addresses, broadcast, the multicast hashes or mode;
    /// 82576 §7.10.3.3, 82599 §7.10.3.3).
    pub fn accepts_dst(&self, dst: &[u8]) -> bool {
        if dst == [0xff; 6] {
            return true;
        }
        if self.xcast == Xcast::Promisc {
            return true;
        }
        if dst[0] & 1 != 0 {
            return match self.xcast {
                Xcast::None => false,
                Xcast::Multi => self.mc.contains(&mc_hash(dst)),
                Xcast::AllMulti | Xcast::Promisc => true,
            };
        }
        dst == self.mac || self.uc.iter().any(|m| m == dst)
    }

    /// The VF takes a frame of VLAN `vid` (None: untagged): the VLANs it
    /// asked for (VLAN 0, priority tagged, always).
    ///
    /// Under a port VLAN, frames of that VLAN only (the PF strips its tag).
    pub fn accepts_vlan(&self, vid: Option<u16>) -> bool {
        if let Some((pv, _)) = self.admin.vlan {
            return vid == Some(pv);
        }
        match vid {
            None | Some(0) => true,
            Some(v) => self.xcast == Xcast::Promisc || self.vlans.contains(&v),
        }
    }

    /// What the PF does to a frame the VF sends (82576 §7.8.3.x VMVIR and
    /// anti-spoofing, 82599 §7.10.3.9): under a port VLAN an untagged frame
    /// gets the port VLAN's tag, a tagged one is a spoof; otherwise, with
    /// spoof checking on, the source must be the VF's address (or one of its
    /// extra unicast addresses) and a VLAN tag one of its VLANs.
    pub fn tx_verdict(&self, frame: &[u8]) -> TxVerdict {
        if frame.len() < 14 {
            return TxVerdict::Pass;
        }
        let src = &frame[6..12];
        if self.admin.spoofchk && src != self.mac && !self.uc.iter().any(|m| m == src) {
            return TxVerdict::Spoofed;
        }
        let tag = (frame.len() >= 16 && frame[12..14] == [0x81, 0x00])
            .then(|| u16::from_be_bytes([frame[14], frame[15]]) & 0xfff);
        match (self.admin.vlan, tag) {
            (Some((vid, qos)), None) => TxVerdict::Tag((u16::from(qos & 7) << 13) | vid),
            (Some(_), Some(_)) => TxVerdict::Spoofed,
            (None, Some(v)) if self.admin.spoofchk && v != 0 && !self.vlans.contains(&v) => {
                TxVerdict::Spoofed
            }
            _ => TxVerdict::Pass,
        }
    }
}

/// What happens to a frame a VF sends ([`Agent::tx_verdict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxVerdict {
    /// Out as it is.
    Pass,
    /// Out with this 802.1Q tag control word inserted (port VLAN).
    Tag(u16),
    /// Dropped and counted (anti-spoofing).
    Spoofed,
}

#[cfg(test)]
mod tests;
