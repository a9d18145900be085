//! The 82576 receive engine (datasheet §7.1): address / multicast / VLAN
//! filtering, queue selection, descriptor write-back in the advanced one-buffer
//! format, VLAN stripping, missed-packet accounting and the RX interrupt cause.

use super::intr::Dir;
use super::regs::*;
use super::{ctrl, rctl, Igb};
use crate::desc::{
    rx_status, rx_writeback, RXD_ERR_IPE, RXD_ERR_L4E, RXD_STAT_IPCS, RXD_STAT_TCPCS,
    RXD_STAT_UDPCS, RXD_STAT_VP,
};
use crate::fault::RxFault;
use crate::offload;
use crate::ptp::{self, RxFilter};
use crate::ring::{self, Ring};
use crate::rss::{self, RssType};
use crate::sync::lock_or_try;

/// ETQF: filter enable.
const ETQF_FILTER_ENABLE: u32 = 1 << 26;
/// ETQF: time stamp frames of this ethertype (IEEE 1588).
const ETQF_1588: u32 = 1 << 30;
/// RXCSUM: IPv4 checksum offload.
const RXCSUM_IPOFL: u32 = 1 << 8;
/// RXCSUM: TCP/UDP checksum offload.
const RXCSUM_TUOFL: u32 = 1 << 9;
/// RXCSUM: packet checksum disable (RSS hash in the descriptor instead).
const RXCSUM_PCSD: u32 = 1 << 13;

/// Largest frame accepted without RCTL.LPE: 1514 bytes plus a VLAN tag (no FCS).
const MAX_STD_FRAME: usize = 1514 + 4;

impl Igb {
    /// Delivers a frame from the wire (or loopback) to the host; `sent` is
    /// when it left its sender, if known (for its IEEE 1588 stamp).
    ///
    /// The receive queue is chosen first (RSS) and only that queue's lock is
    /// taken, so frames for different queues are placed concurrently. Without
    /// `wait`, a busy queue makes this return false before anything changed;
    /// otherwise the frame is consumed (placed, or dropped and counted) and
    /// this returns true.
    pub(super) fn rx_frame(&self, frame: &[u8], sent: Option<u64>, wait: bool) -> bool {
        let rctl = self.regs.peek(RCTL);
        if !self.link_up() {
            self.errors.rx_no_link();
            return true;
        }
        if rctl & rctl::EN == 0 {
            self.errors.rx_disabled();
            return true;
        }
        let (rss, rss_type) = if frame.len() >= 14 {
            self.rss_hash(frame)
        } else {
            (0, RssType::None)
        };
        let qi = self.rx_queue_for(rss, rss_type) % NUM_QUEUES;
        let Some(_queue) = lock_or_try(&self.rxq[qi], wait) else {
            return false;
        };
        match self.faults.take_rx() {
            Some(RxFault::Corrupt) => {
                // A frame with a bad FCS: counted, not delivered (RCTL.SBP aside).
                self.stat_add(stat::CRCERRS, 1);
                return true;
            }
            Some(RxFault::Drop) => {
                self.stat_add(stat::MPC, 1);
                self.stat_add(stat::RNBC, 1);
                return true;
            }
            None => {}
        }
        if frame.len() < 14 {
            self.stat_add(0x40a4, 1); // RUC
            return true;
        }
        let max = if rctl & rctl::LPE != 0 {
            (self.regs.peek(0x5004) & 0x3fff) as usize
        } else {
            MAX_STD_FRAME
        };
        if frame.len() > max.max(64) {
            self.stat_add(stat::ROC, 1);
            return true;
        }
        if !self.rx_accept(frame, rctl) {
            self.errors.rx_filtered();
            return true;
        }
        let ts = self.rx_timestamp(frame, sent);
        self.rx_to_queue(qi, frame, rss, rss_type, ts);
        true
    }

    /// IEEE 1588 receive stamp (§7.9.2.3): TSYNCRXCTL selects the frame with
    /// TSYNCRXCFG, the ETQF filters with the 1588 bit for L2 and UDP port 319
    /// for L4 messages. The latch is taken when the frame passed the address
    /// filters, before a receive buffer is known (a frame then dropped for lack
    /// of descriptors leaves the latch locked, as `igb_ptp_rx_hang` expects).
    fn rx_timestamp(&self, frame: &[u8], sent: Option<u64>) -> bool {
        let mut ts = self.ts();
        if !ts.rx_enabled() {
            return false;
        }
        let regs = &self.regs;
        let cfg = regs.peek(TSYNCRXCFG);
        let filter = RxFilter {
            kind: ts.rxctl() & ptp::TSYNCRXCTL_TYPE_MASK,
            v1_ctrl: cfg as u8,
            v2_msg: ((cfg >> 8) & 0xf) as u8,
            udp_port: ptp::PTP_EVENT_PORT,
            l2_1588: |et: u16| {
                (0..8).any(|i| {
                    let q = regs.peek(ETQF + 4 * i);
                    q & ETQF_FILTER_ENABLE != 0 && q & ETQF_1588 != 0 && q as u16 == et
                })
            },
        };
        ts.rx_stamp(self.env.clock.now_ns(), sent, frame, &filter)
    }

    /// RSS hash of a frame when MRQC enables RSS (§7.1.2.8).
    pub(super) fn rss_hash(&self, frame: &[u8]) -> (u32, RssType) {
        let mrqc = self.regs.peek(MRQC);
        if !matches!(mrqc & 7, 1 | 2 | 5) {
            return (0, RssType::None);
        }
        rss::hash_with_regs(|i| self.regs.peek(RSSRK + 4 * i), mrqc, frame)
    }

    /// Queue for a frame: RETA entry `hash[6:0]` when RSS hashed it, else queue 0.
    pub(super) fn rx_queue_for(&self, hash: u32, ty: RssType) -> usize {
        rss::reta_queue(|i| self.regs.peek(RETA + 4 * i), hash, ty)
    }

    /// Status and error bits of RX checksum offload (RXCSUM.IPOFL/TUOFL, §7.1.6)
    /// and the packet type field.
    fn rx_csum_bits(&self, frame: &[u8]) -> (u32, u16) {
        let rxcsum = self.regs.peek(RXCSUM);
        let mut st = 0;
        let ptype = rss::packet_type(frame);
        if rxcsum & (RXCSUM_IPOFL | RXCSUM_TUOFL) == 0 || ptype == 0 {
            return (st, ptype);
        }
        let c = offload::verify_rx(frame);
        if rxcsum & RXCSUM_IPOFL != 0 && c.ip_checked {
            st |= RXD_STAT_IPCS;
            if !c.ip_ok {
                st |= RXD_ERR_IPE;
            }
        }
        if rxcsum & RXCSUM_TUOFL != 0 && c.l4_checked {
            st |= if c.l4_proto == 6 {
                RXD_STAT_TCPCS
            } else {
                RXD_STAT_UDPCS
            };
            if !c.l4_ok {
                st |= RXD_ERR_L4E;
            }
        }
        (st, ptype)
    }

    /// Destination and VLAN filtering (§7.1.1).
    fn rx_accept(&self, f: &[u8], rctl: u32) -> bool {
        let dst = &f[0..6];
        let vet = self.regs.peek(0x0038) as u16;
        if rctl & rctl::VFE != 0 && f.len() >= 16 && u16::from_be_bytes([f[12], f[13]]) == vet {
            let vid = u32::from(u16::from_be_bytes([f[14], f[15]]) & 0xfff);
            if self.regs.peek(VFTA + 4 * (vid >> 5)) & (1 << (vid & 31)) == 0 {
                return false;
            }
        }
        if dst == [0xff; 6] {
            return rctl & (rctl::BAM | rctl::MPE | rctl::UPE) != 0;
        }
        if rctl & rctl::UPE != 0 || self.rar_match(dst) {
            return true;
        }
        if dst[0] & 1 != 0 {
            return rctl & rctl::MPE != 0 || self.mta_match(dst, rctl);
        }
        false
    }

    /// Exact match against the 24 receive address registers with AV set.
    fn rar_match(&self, dst: &[u8]) -> bool {
        (0..24u32).any(|i| {
            let lo = if i < 16 {
                RAL + 8 * i
            } else {
                RAL2 + 8 * (i - 16)
            };
            let rah = self.regs.peek(lo + 4);
            if rah & (1 << 31) == 0 || (rah >> 16) & 3 != 0 {
                return false;
            }
            let ral = self.regs.peek(lo).to_le_bytes();
            let rah = (rah as u16).to_le_bytes();
            dst == [ral[0], ral[1], ral[2], ral[3], rah[0], rah[1]]
        })
    }

    /// Multicast table lookup: 12 address bits selected by RCTL.MO (§7.1.1.2).
    fn mta_match(&self, dst: &[u8], rctl: u32) -> bool {
        let (b4, b5) = (u32::from(dst[4]), u32::from(dst[5]));
        let hash = match (rctl >> rctl::MO_SHIFT) & 3 {
            0 => (b4 >> 4) | (b5 << 4),
            1 => (b4 >> 3) | (b5 << 5),
            2 => (b4 >> 2) | (b5 << 6),
            _ => b4 | (b5 << 8),
        } & 0xfff;
        self.regs.peek(MTA + 4 * (hash >> 5)) & (1 << (hash & 31)) != 0
    }

    /// Places a frame into receive queue `qi` (its lock held), spanning
    /// descriptors if needed.
    fn rx_to_queue(&self, qi: usize, frame: &[u8], rss: u32, rss_type: RssType, ts: bool) {
        let base = RXQ_BASE + qi as u32 * QUEUE_STRIDE;
        let miss = |d: &Igb| {
            d.stat_add(stat::MPC, 1);
            d.stat_add(stat::RNBC, 1);
            d.stat_add(base + q::RQDPC, 1);
        };
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            miss(self);
            return;
        }
        let mut r = match Ring::from_block(|o| self.regs.peek(o), base) {
            Ok(r) => r,
            Err(e) => {
                self.errors.ring();
                log::debug!("igb: rx queue {qi}: {e}");
                miss(self);
                return;
            }
        };
        // VLAN strip (CTRL.VME): the tag goes to the descriptor.
        let vet = self.regs.peek(0x0038) as u16;
        let tagged = frame.len() >= 18 && u16::from_be_bytes([frame[12], frame[13]]) == vet;
        let (vlan, status_vp) = if tagged && self.regs.peek(CTRL) & ctrl::VME != 0 {
            (u16::from_be_bytes([frame[14], frame[15]]), RXD_STAT_VP)
        } else {
            (0, 0)
        };
        let parts: [&[u8]; 2] = if status_vp != 0 {
            [&frame[..12], &frame[16..]]
        } else {
            [frame, &[]]
        };
        let total = parts[0].len() + parts[1].len();
        let (csum_st, ptype) = self.rx_csum_bits(frame);
        // With RXCSUM.PCSD the first dword after pkt_info carries the RSS hash.
        let hi = if self.regs.peek(RXCSUM) & RXCSUM_PCSD != 0 {
            rss
        } else {
            0
        };
        let pkt_info = ptype | rss_type as u16;
        let srrctl = self.regs.peek(base + q::SRRCTL);
        let bufsize = match (srrctl & 0x7f) as usize * 1024 {
            0 => 2048,
            n => n,
        };
        let needed = total.div_ceil(bufsize) as u32;
        if r.pending() < needed {
            miss(self);
            return;
        }
        let Some(mem) = self.mem.get() else {
            // Bus mastering off (PCI COMMAND.BME): the frame cannot be placed.
            self.errors.dma_blocked();
            return;
        };
        let eop_bits = csum_st | if ts { ptp::RXD_STAT_TS } else { 0 };
        let placed = ring::place_frame(&mem, &mut r, &parts, total, bufsize, |last, len| {
            rx_writeback(
                pkt_info,
                hi,
                rx_status(last, status_vp, eop_bits),
                len,
                vlan,
            )
        });
        let ok = placed.is_ok();
        if !ok {
            self.errors.dma();
        }
        self.regs.poke(base + q::H, r.head);
        if ok {
            self.count_rx(frame);
        }
        self.queue_interrupt(qi, Dir::Rx);
    }
}
