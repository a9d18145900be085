//! What the 82576's receiver does its own way (datasheet §7.1): the receive
//! enable and long packet settings of RCTL, address / multicast / VLAN
//! filtering, the PTP message selection of TSYNCRXCFG, and checksum status
//! as RXCSUM asks for it. The rest of the receive path is the shared
//! [`crate::function::rx`].

use net_util::csum::verify_rx;

use super::regs::*;
use super::{rctl, Igb};
use crate::desc::{RXD_ERR_IPE, RXD_ERR_L4E, RXD_STAT_IPCS, RXD_STAT_TCPCS, RXD_STAT_UDPCS};
use crate::function::{PtpMatch, RxStatus};
use crate::ptp;

/// ETQF: filter enable.
pub(super) const ETQF_FILTER_ENABLE: u32 = 1 << 26;
/// RXCSUM: IPv4 checksum offload.
const RXCSUM_IPOFL: u32 = 1 << 8;
/// RXCSUM: TCP/UDP checksum offload.
const RXCSUM_TUOFL: u32 = 1 << 9;
/// RXCSUM: packet checksum disable (RSS hash in the descriptor instead).
const RXCSUM_PCSD: u32 = 1 << 13;
/// RLPML: the maximum frame length with RCTL.LPE.
const RLPML: u32 = 0x5004;

/// Largest frame accepted without RCTL.LPE: 1514 bytes plus a VLAN tag (no FCS).
const MAX_STD_FRAME: usize = 1514 + 4;

impl Igb {
    /// Longest frame taken: RLPML with RCTL.LPE, else a tagged standard frame.
    pub(super) fn max_frame(&self) -> usize {
        let max = if self.regs.peek(RCTL) & rctl::LPE != 0 {
            (self.regs.peek(RLPML) & 0x3fff) as usize
        } else {
            MAX_STD_FRAME
        };
        max.max(64)
    }

    /// PTP messages selected for receive stamps (§7.9.2.3): TSYNCRXCFG's v1
    /// control and v2 message type, UDP port 319.
    pub(super) fn ptp_match(&self) -> PtpMatch {
        let cfg = self.regs.peek(TSYNCRXCFG);
        PtpMatch {
            v1_ctrl: cfg as u8,
            v2_msg: ((cfg >> 8) & 0xf) as u8,
            udp_port: ptp::PTP_EVENT_PORT,
        }
    }

    /// Status and error bits of RX checksum offload (RXCSUM.IPOFL/TUOFL,
    /// §7.1.6); the RSS hash in the descriptor with RXCSUM.PCSD.
    pub(super) fn rx_status(&self, frame: &[u8], ptype: u16, hash: u32) -> RxStatus {
        let rxcsum = self.regs.peek(RXCSUM);
        let hash = if rxcsum & RXCSUM_PCSD != 0 { hash } else { 0 };
        let mut st = 0;
        if rxcsum & (RXCSUM_IPOFL | RXCSUM_TUOFL) == 0 || ptype == 0 {
            return RxStatus { csum: st, hash };
        }
        let c = verify_rx(frame);
        if rxcsum & RXCSUM_IPOFL != 0 && c.ip_checked {
            st |= RXD_STAT_IPCS;
            if !c.ip_ok {
                st |= RXD_ERR_IPE;
            }
        }
        if rxcsum & RXCSUM_TUOFL != 0 && c.l4_checked {
            st |= if c.l4_proto == net_util::IPPROTO_TCP {
                RXD_STAT_TCPCS
            } else {
                RXD_STAT_UDPCS
            };
            if !c.l4_ok {
                st |= RXD_ERR_L4E;
            }
        }
        RxStatus { csum: st, hash }
    }

    /// Destination and VLAN filtering (§7.1.1).
    pub(super) fn rx_accept(&self, f: &[u8]) -> bool {
        let rctl = self.regs.peek(RCTL);
        let dst = &f[0..6];
        let vet = self.regs.peek(VET) as u16;
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
}
