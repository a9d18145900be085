//! The 82599 receive engine (datasheet §7.1): L2 filtering (FCTRL, the 128
//! receive address registers, MTA, VLAN filter), RSS queue selection (MRQC,
//! RSSRK, RETA), descriptor write-back in the advanced one-buffer format with
//! packet type, RSS hash and checksum status (§7.1.6), per-queue VLAN
//! stripping (RXDCTL.VME), drop accounting and the RX interrupt cause.

use super::intr::Dir;
use super::regs::*;
use super::{fctrl, hlreg0, Ixgbe};
use crate::desc::{rx_status, rx_writeback, RXD_STAT_IPCS, RXD_STAT_VP};
use crate::offload;
use crate::ptp::{self, RxFilter};
use crate::ring::{self, Ring};
use crate::rss::{self, RssType};
use crate::sync::lock_or_try;

/// ETQF: filter enable.
const ETQF_FILTER_EN: u32 = 1 << 31;
/// ETQF: time stamp frames of this ethertype (IEEE 1588).
const ETQF_1588: u32 = 1 << 30;
/// RXCTRL: receive enable.
const RXCTRL_RXEN: u32 = 1 << 0;
/// VLNCTRL: VLAN filter enable.
const VLNCTRL_VFE: u32 = 1 << 30;
/// MCSTCTRL: multicast filter enable.
const MCSTCTRL_MFE: u32 = 1 << 2;
/// RX status: L4 (TCP/UDP) checksum computed (`IXGBE_RXD_STAT_L4CS`).
const RXD_STAT_L4CS: u32 = 1 << 5;
/// RX error: TCP/UDP checksum error (`IXGBE_RXDADV_ERR_TCPE`).
const RXD_ERR_TCPE: u32 = 1 << 30;
/// RX error: IPv4 header checksum error (`IXGBE_RXDADV_ERR_IPE`).
const RXD_ERR_IPE: u32 = 1 << 31;
/// Standard maximum frame with FCS.
const MAX_STD_FRAME: usize = 1518;
const FCS: usize = 4;

impl Ixgbe {
    /// Delivers a frame (without FCS) from the wire or the MAC loopback;
    /// `sent` is when it left its sender, if known (for its IEEE 1588 stamp).
    ///
    /// The receive queue is chosen first (RSS) and only that queue's lock is
    /// taken, so frames for different queues are placed concurrently. Without
    /// `wait`, a busy queue makes this return false before anything changed;
    /// otherwise the frame is consumed (placed, or dropped and counted) and
    /// this returns true.
    pub(super) fn rx_frame(&self, frame: &[u8], sent: Option<u64>, wait: bool) -> bool {
        if self.regs.peek(RXCTRL) & RXCTRL_RXEN == 0 {
            self.errors.rx_disabled();
            return true;
        }
        let (hash, ty) = if frame.len() >= 14 {
            self.rss_hash(frame)
        } else {
            (0, RssType::None)
        };
        let qi = self.rx_queue_for(hash, ty) % NUM_QUEUES;
        let Some(_queue) = lock_or_try(&self.rxq[qi], wait) else {
            return false;
        };
        match self.faults.take_rx() {
            Some(crate::fault::RxFault::Corrupt) => {
                self.stat_add(stat::CRCERRS, 1);
                return true;
            }
            Some(crate::fault::RxFault::Drop) => {
                self.count_rx_drop(0);
                return true;
            }
            None => {}
        }
        if frame.len() < 14 {
            self.stat_add(stat::RUC, 1);
            return true;
        }
        let vet = self.regs.peek(VLNCTRL) as u16;
        let tagged = frame.len() >= 18 && u16::from_be_bytes([frame[12], frame[13]]) == vet;
        let mut max = if self.regs.peek(HLREG0) & hlreg0::JUMBOEN != 0 {
            (self.regs.peek(MAXFRS) >> 16) as usize
        } else {
            MAX_STD_FRAME
        };
        if tagged {
            max += 4;
        }
        if frame.len() + FCS > max.max(64) {
            self.stat_add(stat::ROC, 1);
            return true;
        }
        if !self.rx_accept(frame, tagged) {
            self.errors.rx_filtered();
            return true;
        }
        let ts = self.rx_timestamp(frame, sent);
        self.rx_to_queue(qi, frame, hash, ty, tagged, ts);
        true
    }

    /// IEEE 1588 receive stamp (§7.9.1.1): TSYNCRXCTL selects the frame with
    /// RXMTRL (v1 control, v2 message type, UDP port in bits 31:16; 319 when
    /// 0) and the ETQF filters with the 1588 bit. Taken once the frame passed
    /// the address filters; the latch stays locked until RXSTMPH is read.
    fn rx_timestamp(&self, frame: &[u8], sent: Option<u64>) -> bool {
        let mut ts = self.ts();
        if !ts.rx_enabled() {
            return false;
        }
        let regs = &self.regs;
        let mtrl = regs.peek(RXMTRL);
        let port = (mtrl >> 16) as u16;
        let filter = RxFilter {
            kind: ts.rxctl() & ptp::TSYNCRXCTL_TYPE_MASK,
            v1_ctrl: mtrl as u8,
            v2_msg: ((mtrl >> 8) & 0xf) as u8,
            udp_port: if port == 0 { ptp::PTP_EVENT_PORT } else { port },
            l2_1588: |et: u16| {
                (0..8).any(|i| {
                    let q = regs.peek(ETQF + 4 * i);
                    q & ETQF_FILTER_EN != 0 && q & ETQF_1588 != 0 && q as u16 == et
                })
            },
        };
        ts.rx_stamp(self.env.clock.now_ns(), sent, frame, &filter)
    }

    /// RSS hash when MRQC.MRQE selects RSS (§7.1.2.8).
    fn rss_hash(&self, frame: &[u8]) -> (u32, RssType) {
        let mrqc = self.regs.peek(MRQC);
        if !matches!(mrqc & 0xf, 1..=5) {
            return (0, RssType::None);
        }
        rss::hash_with_regs(|i| self.regs.peek(RSSRK + 4 * i), mrqc, frame)
    }

    /// Queue for a frame: RETA entry `hash[6:0]` (4-bit queue index) when RSS
    /// hashed it, else queue 0.
    fn rx_queue_for(&self, hash: u32, ty: RssType) -> usize {
        rss::reta_queue(|i| self.regs.peek(RETA + 4 * i), hash, ty)
    }

    /// Destination and VLAN filtering (§7.1.1, §7.1.2).
    fn rx_accept(&self, f: &[u8], tagged: bool) -> bool {
        let fc = self.regs.peek(FCTRL);
        if tagged && self.regs.peek(VLNCTRL) & VLNCTRL_VFE != 0 {
            let vid = u32::from(u16::from_be_bytes([f[14], f[15]]) & 0xfff);
            if self.regs.peek(VFTA + 4 * (vid >> 5)) & (1 << (vid & 31)) == 0 {
                return false;
            }
        }
        let dst = &f[0..6];
        if dst == [0xff; 6] {
            return fc & (fctrl::BAM | fctrl::MPE | fctrl::UPE) != 0;
        }
        if fc & fctrl::UPE != 0 || self.rar_match(dst) {
            return true;
        }
        if dst[0] & 1 != 0 {
            return fc & fctrl::MPE != 0 || self.mta_match(dst);
        }
        false
    }

    /// Exact match against the 128 receive address registers with AV set.
    fn rar_match(&self, dst: &[u8]) -> bool {
        (0..128u32).any(|i| {
            let rah = self.regs.peek(RAL + 8 * i + 4);
            if rah & (1 << 31) == 0 {
                return false;
            }
            let ral = self.regs.peek(RAL + 8 * i).to_le_bytes();
            let rah = (rah as u16).to_le_bytes();
            dst == [ral[0], ral[1], ral[2], ral[3], rah[0], rah[1]]
        })
    }

    /// Multicast table lookup: 12 address bits selected by MCSTCTRL.MO.
    fn mta_match(&self, dst: &[u8]) -> bool {
        let mc = self.regs.peek(MCSTCTRL);
        if mc & MCSTCTRL_MFE == 0 {
            return false;
        }
        let (b4, b5) = (u32::from(dst[4]), u32::from(dst[5]));
        let hash = match mc & 3 {
            0 => (b4 >> 4) | (b5 << 4),
            1 => (b4 >> 3) | (b5 << 5),
            2 => (b4 >> 2) | (b5 << 6),
            _ => b4 | (b5 << 8),
        } & 0xfff;
        self.regs.peek(MTA + 4 * (hash >> 5)) & (1 << (hash & 31)) != 0
    }

    /// Checksum status / error bits and the packet type of a frame.
    fn rx_csum_bits(&self, frame: &[u8]) -> (u32, u16) {
        let mut st = 0;
        let ptype = rss::packet_type(frame);
        if ptype == 0 {
            return (0, 0);
        }
        let c = offload::verify_rx(frame);
        if c.ip_checked {
            st |= RXD_STAT_IPCS;
            if !c.ip_ok {
                st |= RXD_ERR_IPE;
            }
        }
        if c.l4_checked {
            st |= RXD_STAT_L4CS;
            if !c.l4_ok {
                st |= RXD_ERR_TCPE;
            }
        }
        (st, ptype)
    }

    /// Places a frame into receive queue `qi` (its lock held), spanning
    /// descriptors if needed.
    fn rx_to_queue(&self, qi: usize, frame: &[u8], hash: u32, ty: RssType, tagged: bool, ts: bool) {
        let base = rxq_base(qi as u32);
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            self.count_rx_drop(qi);
            return;
        }
        let mut r = match Ring::from_block(|o| self.regs.peek(o), base) {
            Ok(r) => r,
            Err(e) => {
                self.errors.ring();
                log::debug!("ixgbe: rx queue {qi}: {e}");
                self.count_rx_drop(qi);
                return;
            }
        };
        let strip = tagged && self.regs.peek(base + q::DCTL) & RXDCTL_VME != 0;
        let (vlan, status_vp) = if strip {
            (u16::from_be_bytes([frame[14], frame[15]]), RXD_STAT_VP)
        } else {
            (0, 0)
        };
        let parts: [&[u8]; 2] = if strip {
            [&frame[..12], &frame[16..]]
        } else {
            [frame, &[]]
        };
        let total = parts[0].len() + parts[1].len();
        let srrctl = self.regs.peek(base + q::SRRCTL);
        let bufsize = match (srrctl & 0x1f) as usize * 1024 {
            0 => 2048,
            n => n,
        };
        let needed = total.div_ceil(bufsize) as u32;
        if r.pending() < needed {
            self.count_rx_drop(qi);
            return;
        }
        let (csum_st, ptype) = self.rx_csum_bits(frame);
        let pkt_info = (ptype & 0xfff0) | ty as u16;
        let Some(mem) = self.mem.get() else {
            // Bus mastering off (PCI COMMAND.BME): the frame cannot be placed.
            self.errors.dma_blocked();
            return;
        };
        let eop_bits = csum_st | if ts { ptp::RXD_STAT_TS } else { 0 };
        let placed = ring::place_frame(&mem, &mut r, &parts, total, bufsize, |last, len| {
            rx_writeback(
                pkt_info,
                hash,
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
            self.count_rx(qi, frame);
        }
        self.queue_interrupt(qi, Dir::Rx);
    }
}
