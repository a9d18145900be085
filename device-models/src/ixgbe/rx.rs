//! What the 82599's receiver does its own way (datasheet §7.1): L2 filtering
//! (FCTRL, the 128 receive address registers, MTA, the VLAN filter), the
//! maximum frame size of HLREG0/MAXFRS, the PTP message selection of RXMTRL,
//! and checksum status in the descriptor (§7.1.6). The rest of the receive
//! path is the shared [`crate::function::rx`].

use net_util::csum::verify_rx;

use super::regs::*;
use super::{fctrl, hlreg0, Ixgbe};
use crate::desc::RXD_STAT_IPCS;
use crate::function::{PtpMatch, RxStatus};
use crate::ptp;

/// ETQF: filter enable.
pub(super) const ETQF_FILTER_EN: u32 = 1 << 31;
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

/// Checksum status / error bits of a frame (always checked on the 82599)
/// and its RSS hash, which the descriptor always carries.
pub(super) fn status(frame: &[u8], ptype: u16, hash: u32) -> RxStatus {
    let mut st = 0;
    if ptype != 0 {
        let c = verify_rx(frame);
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
    }
    RxStatus { csum: st, hash }
}

impl Ixgbe {
    /// The frame carries a VLAN tag of VLNCTRL.VET.
    fn tagged(&self, frame: &[u8]) -> bool {
        let vet = self.regs.peek(VLNCTRL) as u16;
        frame.len() >= 18 && u16::from_be_bytes([frame[12], frame[13]]) == vet
    }

    /// Longest frame taken, without FCS: MAXFRS.MFS with HLREG0.JUMBOEN, else
    /// a standard frame; four bytes more for a tagged frame.
    pub(super) fn max_frame(&self, frame: &[u8]) -> usize {
        let mut max = if self.regs.peek(HLREG0) & hlreg0::JUMBOEN != 0 {
            (self.regs.peek(MAXFRS) >> 16) as usize
        } else {
            MAX_STD_FRAME
        };
        if self.tagged(frame) {
            max += 4;
        }
        max.max(64) - FCS
    }

    /// PTP messages selected for receive stamps (§7.9.1.1): RXMTRL's v1
    /// control, v2 message type and UDP port (319 when 0).
    pub(super) fn ptp_match(&self) -> PtpMatch {
        let mtrl = self.regs.peek(RXMTRL);
        let port = (mtrl >> 16) as u16;
        PtpMatch {
            v1_ctrl: mtrl as u8,
            v2_msg: ((mtrl >> 8) & 0xf) as u8,
            udp_port: if port == 0 { ptp::PTP_EVENT_PORT } else { port },
        }
    }

    /// Destination and VLAN filtering (§7.1.1, §7.1.2).
    pub(super) fn rx_accept(&self, f: &[u8]) -> bool {
        let fc = self.regs.peek(FCTRL);
        if self.tagged(f) && self.regs.peek(VLNCTRL) & VLNCTRL_VFE != 0 {
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
}
