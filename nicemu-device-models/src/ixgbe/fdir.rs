// SPDX-License-Identifier: Apache-2.0
//! The 82599's Flow Director (datasheet §7.1.2.7): filters that steer a
//! received IPv4/IPv6 flow to a queue ahead of RSS.
//!
//! The driver initialises the table by writing FDIRCTRL (`ixgbe_fdir_enable_82599`:
//! PBALLOC sizes it, PERFECT_MATCH chooses the mode) and adds or removes one
//! filter per FDIRCMD command, with the filter's bucket hash (and signature or
//! software index) in FDIRHASH. Two modes:
//! - **signature** (`ixgbe_init_fdir_signature_82599`; ATR, `ixgbe_atr`): a
//!   filter is a 15-bit bucket hash and a 15-bit signature of the flow, both
//!   computed with the hash function of §7.1.2.7.15 under the keys FDIRHKEY
//!   and FDIRSKEY; a received frame matches when both of its hashes do;
//! - **perfect match** (`ixgbe_init_fdir_perfect_82599`; ethtool ntuple rules,
//!   `ixgbe_fdir_write_perfect_filter_82599`): a filter holds the flow's
//!   fields (FDIRSIPv6/FDIRIPSA/FDIRIPDA, FDIRPORT, FDIRVLAN, the L4 type in
//!   FDIRCMD) under the global masks (FDIRM, FDIRSIP4M/FDIRDIP4M,
//!   FDIRTCPM/FDIRUDPM) and is filed under the 13-bit bucket hash of the
//!   masked fields; a received frame matches when a filter of its bucket
//!   holds its masked fields.
//!
//! A match sends the frame to FDIRCMD's queue (or, with DROP, to FDIRCTRL's
//! drop queue) and counts FDIRMATCH; an IP frame that matches nothing goes on
//! to RSS and counts FDIRMISS. FDIRFREE (free filters, collisions), FDIRLEN
//! (the longest bucket), FDIRUSTAT (filters added / removed) and FDIRFSTAT
//! (failed adds / removes) report the table; when the free filters fall to
//! FDIRCTRL.FULL_THRESH × 16 the flow director cause (EICR bit 16) is raised,
//! which `ixgbe_msix_other` answers by re-initialising the table.
//!
//! Not modelled: the FDIRCTRL.REPORT_STATUS descriptor fields (ixgbe never
//! sets it), VT pools, tunnelled flows, the per-filter match interrupt, IPv6
//! perfect filters beyond the source address (ixgbe programs none:
//! `ixgbe_fdir_set_input_mask_82599` always masks the IPv6 destination).
//! The table lives behind one lock that the receive path only reads; with
//! FDIRCTRL's PBALLOC 0 or INIT_DONE clear the receive path looks at nothing
//! but that register.

use std::collections::HashMap;
use std::sync::RwLock;

use nicemu_net_util::frame::{parse, IPPROTO_TCP, IPPROTO_UDP};

use super::intr::EICR_FLOW_DIR;
use super::regs::*;
use super::Ixgbe;

/// FDIRCTRL bits and fields (§8.2.3.21.1).
pub mod ctrl {
    /// Packet buffer allocation: 0 = flow director off, 1..3 = 64/128/256 KB.
    pub const PBALLOC: u32 = 0x3;
    /// Initialisation done (read only).
    pub const INIT_DONE: u32 = 1 << 3;
    /// Perfect match filters (else signature filters).
    pub const PERFECT_MATCH: u32 = 1 << 4;
    /// Drop queue, bits 14:8.
    pub const DROP_Q_SHIFT: u32 = 8;
    /// Flexible bytes offset in 16-bit words from the start of the frame,
    /// bits 20:16.
    pub const FLEX_SHIFT: u32 = 16;
    /// Free-filter threshold of the flow director interrupt, bits 31:28,
    /// in units of 16 filters.
    pub const FULL_THRESH_SHIFT: u32 = 28;
}

/// FDIRCMD bits and fields (§8.2.3.21.8).
pub mod cmd {
    /// Command: 1 add, 2 remove, 3 query.
    pub const CMD: u32 = 0x3;
    /// Add a flow.
    pub const ADD: u32 = 1;
    /// Remove a flow.
    pub const REMOVE: u32 = 2;
    /// Query (the result is FILTER_VALID).
    pub const QUERY: u32 = 3;
    /// The queried filter exists.
    pub const FILTER_VALID: u32 = 1 << 2;
    /// An add may replace a filter of the same identity.
    pub const FILTER_UPDATE: u32 = 1 << 3;
    /// Flow type: L4 type (bits 6:5) and IPv6 (bit 7).
    pub const FLOW_TYPE_SHIFT: u32 = 5;
    /// Clear the hash table (bit 8; the driver writes 1 then 0).
    pub const CLEARHT: u32 = 1 << 8;
    /// Matching frames go to the drop queue.
    pub const DROP: u32 = 1 << 9;
    /// The add found a filter of the same identity.
    pub const COLLISION: u32 = 1 << 12;
    /// The filter names a queue.
    pub const QUEUE_EN: u32 = 1 << 15;
    /// Receive queue, bits 22:16.
    pub const RX_QUEUE_SHIFT: u32 = 16;
}

/// FDIRM bits: masked fields of perfect match filters (§8.2.3.21.13).
pub mod mask {
    /// VLAN ID.
    pub const VLANID: u32 = 1 << 0;
    /// VLAN priority.
    pub const VLANP: u32 = 1 << 1;
    /// L4 type (and with it the ports).
    pub const L4P: u32 = 1 << 3;
    /// Flexible bytes.
    pub const FLEX: u32 = 1 << 4;
    /// IPv6 destination address.
    pub const DIPV6: u32 = 1 << 5;
}

/// Flow types of the hash input and FDIRCMD (`IXGBE_ATR_FLOW_TYPE_*`).
const L4_UDP: u8 = 1;
const L4_TCP: u8 = 2;
const L4_SCTP: u8 = 3;
const FLOW_IPV6: u8 = 4;
const L4_MASK: u8 = 3;
const IPPROTO_SCTP: u8 = 132;
/// Bucket hashes: 15 bits in signature mode, 13 in perfect match mode.
const SIG_BUCKET_MASK: u32 = 0x7fff;
const PERFECT_BUCKET_MASK: u32 = 0x1fff;

/// The fields of a flow the filters look at (the hash input of §7.1.2.7.15:
/// VM pool, flow type and VLAN, then the addresses, ports and flexible
/// bytes, all as the frame carries them, most significant byte first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowFields {
    /// Flow type: L4 type in bits 1:0, IPv6 in bit 2.
    pub flow_type: u8,
    /// VLAN tag control (priority and ID), 0 untagged.
    pub vlan: u16,
    /// Destination address (IPv4 in the first word).
    pub dst_ip: [u32; 4],
    /// Source address (IPv4 in the first word).
    pub src_ip: [u32; 4],
    /// L4 source port.
    pub src_port: u16,
    /// L4 destination port.
    pub dst_port: u16,
    /// The flexible bytes (FDIRCTRL.FLEX_OFFSET).
    pub flex: u16,
}

impl FlowFields {
    /// The fields of an IPv4/IPv6 frame; `None` for other frames.
    pub fn of_frame(frame: &[u8], flex_word: usize, vet: u16) -> Option<FlowFields> {
        let p = parse(frame)?;
        let mut f = FlowFields::default();
        if u16::from_be_bytes([frame[12], frame[13]]) == vet && frame.len() >= 16 {
            f.vlan = u16::from_be_bytes([frame[14], frame[15]]);
        }
        let at = 2 * flex_word;
        if let Some(b) = frame.get(at..at + 2) {
            f.flex = u16::from_be_bytes([b[0], b[1]]);
        }
        let word =
            |o: usize| u32::from_be_bytes([frame[o], frame[o + 1], frame[o + 2], frame[o + 3]]);
        if p.ipv4 {
            f.src_ip[0] = word(p.l3 + 12);
            f.dst_ip[0] = word(p.l3 + 16);
        } else {
            f.flow_type = FLOW_IPV6;
            for i in 0..4 {
                f.src_ip[i] = word(p.l3 + 8 + 4 * i);
                f.dst_ip[i] = word(p.l3 + 24 + 4 * i);
            }
        }
        let l4 = match p.proto {
            IPPROTO_TCP => L4_TCP,
            IPPROTO_UDP => L4_UDP,
            IPPROTO_SCTP => L4_SCTP,
            _ => 0,
        };
        if let Some(o) = p.l4.filter(|&o| l4 != 0 && frame.len() >= o + 4) {
            f.flow_type |= l4;
            f.src_port = u16::from_be_bytes([frame[o], frame[o + 1]]);
            f.dst_port = u16::from_be_bytes([frame[o + 2], frame[o + 3]]);
        }
        Some(f)
    }

    /// The first word of the hash input: VM pool (0), flow type, VLAN.
    fn head(&self) -> u32 {
        u32::from(self.flow_type) << 16 | u32::from(self.vlan)
    }

    /// The other ten words of the hash input folded into one (the hash is
    /// linear in them): addresses, ports, flexible bytes.
    fn folded(&self) -> u32 {
        let ips = self.dst_ip.iter().chain(&self.src_ip).fold(0, |a, w| a ^ w);
        ips ^ (u32::from(self.src_port) << 16 | u32::from(self.dst_port))
            ^ (u32::from(self.flex) << 16)
    }
}

/// The flow director hash of §7.1.2.7.15 under `key`, 15 bits: each key bit
/// set adds (XOR) the input stream shifted by its position; the stream is
/// the folded address/port word and the head word, which enters after bit 0
/// of the low half (the computation `ixgbe_atr_compute_sig_hash_82599` and
/// `ixgbe_atr_compute_perfect_hash_82599` unroll).
pub fn hash(key: u32, f: &FlowFields) -> u32 {
    let head = f.head();
    let folded = f.folded();
    let hi = folded ^ head ^ (head >> 16);
    let mut lo = folded.rotate_left(16);
    let mut h = 0u32;
    for n in 0..16 {
        if n == 1 {
            lo ^= head ^ (head << 16);
        }
        if key & (1 << n) != 0 {
            h ^= lo >> n;
        }
        if key & (1 << (n + 16)) != 0 {
            h ^= hi >> n;
        }
    }
    h & SIG_BUCKET_MASK
}

/// The global masks of perfect match filters, as FDIRM, FDIRSIP4M,
/// FDIRDIP4M and FDIRTCPM hold them (a set bit ignores that bit).
#[derive(Clone, Copy, Debug, Default)]
struct Masks {
    fdirm: u32,
    sip4: u32,
    dip4: u32,
    /// Source port bits to ignore (FDIRTCPM bits 15:0, bit-reversed).
    sport: u16,
    /// Destination port bits to ignore (FDIRTCPM bits 31:16, bit-reversed).
    dport: u16,
}

impl Masks {
    fn read(f: &Ixgbe) -> Masks {
        let tcpm = f.regs.peek(FDIRTCPM);
        Masks {
            fdirm: f.regs.peek(FDIRM),
            // The address masks hold the address bytes in frame order
            // (`IXGBE_WRITE_REG_BE32`).
            sip4: u32::from_be_bytes(f.regs.peek(FDIRSIP4M).to_le_bytes()),
            dip4: u32::from_be_bytes(f.regs.peek(FDIRDIP4M).to_le_bytes()),
            sport: (tcpm as u16).reverse_bits(),
            dport: ((tcpm >> 16) as u16).reverse_bits(),
        }
    }

    /// The fields with the masked bits cleared.
    fn apply(&self, mut f: FlowFields) -> FlowFields {
        let m = self.fdirm;
        if m & mask::VLANID != 0 {
            f.vlan &= !0x0fff;
        }
        if m & mask::VLANP != 0 {
            f.vlan &= !0xe000;
        }
        if m & mask::FLEX != 0 {
            f.flex = 0;
        }
        if m & mask::L4P != 0 {
            f.flow_type &= FLOW_IPV6;
            f.src_port = 0;
            f.dst_port = 0;
        } else {
            f.src_port &= !self.sport;
            f.dst_port &= !self.dport;
        }
        if f.flow_type & FLOW_IPV6 == 0 {
            f.src_ip[0] &= !self.sip4;
            f.dst_ip[0] &= !self.dip4;
        } else if m & mask::DIPV6 != 0 {
            f.dst_ip = [0; 4];
        }
        f
    }
}

/// Where a matching frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Action {
    queue: Option<u8>,
    drop: bool,
}

/// One filter of a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Filter {
    /// Signature (signature mode) or software index (perfect mode): the
    /// filter's identity within its bucket (FDIRHASH bits 31:16).
    id: u16,
    /// The masked fields (perfect mode).
    fields: FlowFields,
    action: Action,
}

/// The filter table.
#[derive(Debug, Default)]
struct Table {
    perfect: bool,
    /// Filters the table holds at most (PBALLOC).
    capacity: u32,
    count: u32,
    collisions: u32,
    buckets: HashMap<u16, Vec<Filter>>,
}

impl Table {
    fn bucket_mask(&self) -> u32 {
        if self.perfect {
            PERFECT_BUCKET_MASK
        } else {
            SIG_BUCKET_MASK
        }
    }
}

/// The 82599's Flow Director state (part of the function's
/// [`super::State`]).
#[derive(Debug, Default)]
pub struct FlowDirector {
    table: RwLock<Table>,
}

/// What a command did, for FDIRCMD and the statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Added,
    Updated,
    Collision,
    Full,
    Removed,
    Missing,
    Found,
}

impl FlowDirector {
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// FDIRCTRL written: an empty table of PBALLOC's size in the chosen
    /// mode (the initialisation completes at once).
    fn init(&self, fdirctrl: u32) {
        let pballoc = fdirctrl & ctrl::PBALLOC;
        let perfect = fdirctrl & ctrl::PERFECT_MATCH != 0;
        let capacity = match (pballoc, perfect) {
            (0, _) => 0,
            (p, true) => (1024 << p) - 2,
            (p, false) => (4096 << p) - 2,
        };
        *self.write() = Table {
            perfect,
            capacity,
            ..Table::default()
        };
    }

    /// Device reset: the table is gone.
    pub fn reset(&self) {
        *self.write() = Table::default();
    }

    /// Filters free and collisions seen (FDIRFREE).
    fn free(&self) -> u32 {
        let t = self.read();
        (t.capacity - t.count.min(t.capacity)) & 0xffff | (t.collisions & 0x7fff) << 16
    }

    /// The longest bucket and its hash (FDIRLEN).
    fn longest(&self) -> u32 {
        let t = self.read();
        t.buckets
            .iter()
            .max_by_key(|(h, v)| (v.len(), std::cmp::Reverse(**h)))
            .map_or(0, |(h, v)| (v.len() as u32).min(0x3f) | u32::from(*h) << 16)
    }

    /// Runs one FDIRCMD command with the filter in FDIRHASH (and, for a
    /// perfect filter, its fields in the flow registers).
    fn command(&self, f: &Ixgbe, fdircmd: u32) -> Outcome {
        let fdirhash = f.regs.peek(FDIRHASH);
        let mut t = self.write();
        let bucket = (fdirhash & t.bucket_mask()) as u16;
        let id = (fdirhash >> 16) as u16 & if t.perfect { 0xffff } else { 0x7fff };
        match fdircmd & cmd::CMD {
            cmd::ADD => {
                let fields = if t.perfect {
                    programmed_fields(f, fdircmd)
                } else {
                    FlowFields::default()
                };
                let action = Action {
                    queue: (fdircmd & cmd::QUEUE_EN != 0)
                        .then_some((fdircmd >> cmd::RX_QUEUE_SHIFT) as u8 & 0x7f),
                    drop: fdircmd & cmd::DROP != 0,
                };
                add(
                    &mut t,
                    bucket,
                    Filter { id, fields, action },
                    fdircmd & cmd::FILTER_UPDATE != 0,
                )
            }
            cmd::REMOVE => {
                let list = t.buckets.entry(bucket).or_default();
                let before = list.len();
                list.retain(|x| x.id != id);
                let removed = list.len() != before;
                if list.is_empty() {
                    t.buckets.remove(&bucket);
                }
                if removed {
                    t.count -= 1;
                    Outcome::Removed
                } else {
                    Outcome::Missing
                }
            }
            cmd::QUERY => match t
                .buckets
                .get(&bucket)
                .is_some_and(|l| l.iter().any(|x| x.id == id))
            {
                true => Outcome::Found,
                false => Outcome::Missing,
            },
            _ => Outcome::Missing,
        }
    }

    /// The queue a received frame's filter names (`Some(drop queue)` for a
    /// drop filter), or `None` for RSS; counts FDIRMATCH / FDIRMISS for IP
    /// frames.
    #[inline(never)]
    pub fn steer(&self, f: &Ixgbe, frame: &[u8], fdirctrl: u32) -> Option<usize> {
        let flex = ((fdirctrl >> ctrl::FLEX_SHIFT) & 0x1f) as usize;
        let vet = f.regs.peek(VLNCTRL) as u16;
        let fields = Masks::read(f).apply(FlowFields::of_frame(frame, flex, vet)?);
        let action = {
            let t = self.read();
            let bucket = hash(f.regs.peek(FDIRHKEY), &fields) & t.bucket_mask();
            let list = t.buckets.get(&(bucket as u16));
            if t.perfect {
                list.and_then(|l| l.iter().find(|x| x.fields == fields))
            } else {
                let sig = hash(f.regs.peek(FDIRSKEY), &fields) as u16;
                list.and_then(|l| l.iter().find(|x| x.id == sig))
            }
            .map(|x| x.action)
        };
        let Some(a) = action else {
            f.stat_add(FDIRMISS, 1);
            return None;
        };
        f.stat_add(FDIRMATCH, 1);
        if a.drop {
            return Some(((fdirctrl >> ctrl::DROP_Q_SHIFT) & 0x7f) as usize);
        }
        a.queue.map(usize::from)
    }
}

/// Adds a filter to its bucket (table lock held).
fn add(t: &mut Table, bucket: u16, flt: Filter, update: bool) -> Outcome {
    let full = t.count >= t.capacity;
    let list = t.buckets.entry(bucket).or_default();
    if let Some(old) = list.iter_mut().find(|x| x.id == flt.id) {
        if update {
            *old = flt;
            return Outcome::Updated;
        }
        t.collisions = t.collisions.saturating_add(1);
        return Outcome::Collision;
    }
    if full {
        if list.is_empty() {
            t.buckets.remove(&bucket);
        }
        return Outcome::Full;
    }
    list.push(flt);
    t.count += 1;
    Outcome::Added
}

/// A perfect filter's fields from the flow registers and FDIRCMD's flow type
/// (`ixgbe_fdir_write_perfect_filter_82599`: addresses and the flexible
/// bytes in frame byte order, ports and VLAN as numbers), masked.
fn programmed_fields(f: &Ixgbe, fdircmd: u32) -> FlowFields {
    let be = |off: u32| u32::from_be_bytes(f.regs.peek(off).to_le_bytes());
    let port = f.regs.peek(FDIRPORT);
    let vlan = f.regs.peek(FDIRVLAN);
    let flow_type = ((fdircmd >> cmd::FLOW_TYPE_SHIFT) & 0x7) as u8;
    let mut fl = FlowFields {
        flow_type,
        vlan: vlan as u16,
        src_port: port as u16,
        dst_port: (port >> 16) as u16,
        flex: u16::from_be_bytes(((vlan >> 16) as u16).to_le_bytes()),
        ..FlowFields::default()
    };
    if flow_type & FLOW_IPV6 == 0 {
        fl.src_ip[0] = be(FDIRIPSA);
        fl.dst_ip[0] = be(FDIRIPDA);
    } else {
        for i in 0..3 {
            fl.src_ip[i] = be(FDIRSIPV6 + 4 * i as u32);
        }
        fl.src_ip[3] = be(FDIRIPSA);
        fl.dst_ip[0] = be(FDIRIPDA);
    }
    if flow_type & L4_MASK == 0 {
        fl.src_port = 0;
        fl.dst_port = 0;
    }
    Masks::read(f).apply(fl)
}

impl Ixgbe {
    /// FDIRCTRL written: the table is initialised and INIT_DONE set.
    pub(super) fn fdir_init(&self, fdirctrl: u32) {
        self.part.fdir.init(fdirctrl);
        if fdirctrl & ctrl::PBALLOC != 0 {
            self.regs.set_bits(FDIRCTRL, ctrl::INIT_DONE);
        }
    }

    /// FDIRCMD written: the command runs and completes at once (CMD reads 0
    /// again); FILTER_VALID answers a query, COLLISION an add that found its
    /// filter taken; FDIRUSTAT / FDIRFSTAT count.
    pub(super) fn fdir_command(&self, fdircmd: u32) {
        let mut done = fdircmd & !(cmd::CMD | cmd::FILTER_VALID | cmd::COLLISION);
        if fdircmd & cmd::CLEARHT != 0 {
            let c = self.regs.peek(FDIRCTRL);
            self.part.fdir.init(c);
        }
        if fdircmd & cmd::CMD != 0 && self.regs.peek(FDIRCTRL) & ctrl::INIT_DONE != 0 {
            match self.part.fdir.command(self, fdircmd) {
                Outcome::Added => self.fdir_count(FDIRUSTAT, 0, 0xffff),
                Outcome::Updated => {}
                Outcome::Collision => {
                    done |= cmd::COLLISION;
                    self.fdir_count(FDIRFSTAT, 0, 0xff);
                }
                Outcome::Full => self.fdir_count(FDIRFSTAT, 0, 0xff),
                Outcome::Removed => self.fdir_count(FDIRUSTAT, 16, 0xffff),
                Outcome::Missing if fdircmd & cmd::CMD == cmd::REMOVE => {
                    self.fdir_count(FDIRFSTAT, 8, 0xff)
                }
                Outcome::Missing => {}
                Outcome::Found => done |= cmd::FILTER_VALID,
            }
            self.fdir_check_full();
        }
        self.regs.poke(FDIRCMD, done);
    }

    /// Adds one to the `width`-bit field at `shift` of a statistics register
    /// (wrapping within the field).
    fn fdir_count(&self, reg: u32, shift: u32, width: u32) {
        self.regs.update(reg, |v| {
            let n = ((v >> shift) & width).wrapping_add(1) & width;
            (v & !(width << shift)) | n << shift
        });
    }

    /// Raises the flow director cause when the free filters reach the
    /// threshold of FDIRCTRL.FULL_THRESH.
    fn fdir_check_full(&self) {
        let c = self.regs.peek(FDIRCTRL);
        let thresh = (c >> ctrl::FULL_THRESH_SHIFT) * 16;
        if thresh != 0 && self.part.fdir.free() & 0xffff <= thresh {
            self.raise_other(EICR_FLOW_DIR);
        }
    }

    /// FDIRFREE as read: free filters and collisions.
    pub(super) fn fdir_free(&self) -> u32 {
        self.part.fdir.free()
    }

    /// FDIRLEN as read: the longest bucket's length and hash.
    pub(super) fn fdir_len(&self) -> u32 {
        self.part.fdir.longest()
    }

    /// The Flow Director's queue for a received frame, if it is on and a
    /// filter matches (one register check when it is off).
    #[inline]
    pub(super) fn fdir_steer(&self, frame: &[u8]) -> Option<usize> {
        let c = self.regs.peek(FDIRCTRL);
        if !fdir_ready(c) {
            return None;
        }
        self.part.fdir.steer(self, frame, c)
    }

    /// FDIRCTRL says the Flow Director has its table and is initialised
    /// ([`Self::fdir_steer`] may steer frames).
    pub(super) fn fdir_on(&self) -> bool {
        fdir_ready(self.regs.peek(FDIRCTRL))
    }
}

/// FDIRCTRL allocates the Flow Director's table (PBALLOC) and reports it
/// initialised (INIT_DONE).
fn fdir_ready(c: u32) -> bool {
    c & ctrl::PBALLOC != 0 && c & ctrl::INIT_DONE != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `IXGBE_ATR_BUCKET_HASH_KEY` / `IXGBE_ATR_SIGNATURE_HASH_KEY`.
    const HKEY: u32 = 0x3dad_14e2;
    const SKEY: u32 = 0x174d_3614;

    #[test]
    fn hash_is_linear_and_keyed() {
        let a = FlowFields {
            flow_type: L4_TCP,
            src_ip: [0x0a00_0001, 0, 0, 0],
            dst_ip: [0x0a00_0002, 0, 0, 0],
            src_port: 1234,
            dst_port: 80,
            flex: 0x0800,
            ..FlowFields::default()
        };
        assert_eq!(hash(0, &a), 0);
        assert!(hash(HKEY, &a) <= 0x7fff && hash(SKEY, &a) <= 0x7fff);
        assert_ne!(hash(HKEY, &a), hash(SKEY, &a));
        // Swapping the addresses leaves the folded word, and so the hash.
        let b = FlowFields {
            src_ip: a.dst_ip,
            dst_ip: a.src_ip,
            ..a
        };
        assert_eq!(hash(HKEY, &a), hash(HKEY, &b));
        let c = FlowFields { dst_port: 81, ..a };
        assert_ne!(hash(HKEY, &a), hash(HKEY, &c));
        let d = FlowFields { vlan: 5, ..a };
        assert_ne!(hash(HKEY, &a), hash(HKEY, &d), "the head word counts");
    }
}
