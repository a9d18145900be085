// SPDX-License-Identifier: Apache-2.0
//! What the 82576's receiver does its own way (datasheet §7.1): the receive
//! enable and long packet settings of RCTL, address / multicast / VLAN
//! filtering, the PTP message selection of TSYNCRXCFG, checksum status as
//! RXCSUM asks for it, and what a missed frame counts (§8.19). The rest of the receive path is the shared
//! [`crate::function::rx`].

use nicemu_net_util::csum::verify_rx;

use super::regs::*;
use super::{ctrl, rctl, Igb, I82576};
use crate::desc::{RXD_ERR_IPE, RXD_ERR_L4E, RXD_STAT_IPCS, RXD_STAT_TCPCS, RXD_STAT_UDPCS};
use crate::function::{MaxFrame, PauseCounters, PtpMatch, Receive, RxHooks, RxStatus};
use crate::ptp;

/// ETQF: filter enable.
pub(super) const ETQF_FILTER_ENABLE: u32 = 1 << 26;
/// RXCSUM: IPv4 checksum offload.
const RXCSUM_IPOFL: u32 = 1 << 8;
/// RXCSUM: TCP/UDP checksum offload.
const RXCSUM_TUOFL: u32 = 1 << 9;
/// RXCSUM: packet checksum disable (RSS hash in the descriptor instead).
const RXCSUM_PCSD: u32 = 1 << 13;
/// RAH: address select (00 = destination address).
const RAH_ASEL: u32 = 3 << 16;
/// RLPML: the maximum frame length with RCTL.LPE.
const RLPML: u32 = 0x5004;

/// Largest frame accepted without RCTL.LPE: 1514 bytes plus a VLAN tag (no FCS).
const MAX_STD_FRAME: usize = 1514 + 4;

impl Receive for I82576 {
    /// Link (or PHY loopback), for frames from the wire and loopbacks alike.
    fn rx_link(f: &Igb) -> bool {
        f.link_up()
    }

    fn rx_enabled(f: &Igb) -> bool {
        f.regs.peek(RCTL) & rctl::EN != 0
    }

    fn rss_enabled(mrqc: u32) -> bool {
        matches!(mrqc & 7, 1 | 2 | 5)
    }

    /// RLPML with RCTL.LPE, else a tagged standard frame.
    fn max_frame(f: &Igb) -> MaxFrame {
        let max = if f.regs.peek(RCTL) & rctl::LPE != 0 {
            (f.regs.peek(RLPML) & 0x3fff) as usize
        } else {
            MAX_STD_FRAME
        };
        MaxFrame::any(max.max(64))
    }

    /// Destination and VLAN filtering (§7.1.1).
    fn rx_accept(f: &Igb, frame: &[u8]) -> bool {
        let rctl = f.regs.peek(RCTL);
        let dst = &frame[0..6];
        let vet = f.regs.peek(VET) as u16;
        let tagged = frame.len() >= 16 && u16::from_be_bytes([frame[12], frame[13]]) == vet;
        if rctl & rctl::VFE != 0 && tagged && !f.vfta_has(frame) {
            return false;
        }
        if dst == [0xff; 6] {
            return rctl & (rctl::BAM | rctl::MPE | rctl::UPE) != 0;
        }
        if rctl & rctl::UPE != 0 || f.rar_match(dst) {
            return true;
        }
        if dst[0] & 1 != 0 {
            return rctl & rctl::MPE != 0 || f.mta_has(dst, rctl >> rctl::MO_SHIFT);
        }
        false
    }

    /// TSYNCRXCFG's v1 control and v2 message type, UDP port 319 (§7.9.2.3).
    fn ptp_match(f: &Igb) -> PtpMatch {
        let cfg = f.regs.peek(TSYNCRXCFG);
        PtpMatch {
            v1_ctrl: cfg as u8,
            v2_msg: ((cfg >> 8) & 0xf) as u8,
            udp_port: ptp::PTP_EVENT_PORT,
        }
    }

    /// CTRL.VME strips the tags of every queue.
    fn vlan_strip(f: &Igb, _: usize) -> bool {
        f.regs.peek(CTRL) & ctrl::VME != 0
    }

    /// Status and error bits of RX checksum offload (RXCSUM.IPOFL/TUOFL,
    /// §7.1.6); the RSS hash in the descriptor with RXCSUM.PCSD.
    #[inline]
    fn rx_status(f: &Igb, frame: &[u8], ptype: u16, hash: u32) -> RxStatus {
        let rxcsum = f.regs.peek(RXCSUM);
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
            st |= if c.l4_proto == nicemu_net_util::IPPROTO_TCP {
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

    /// XONRXC (0x4048) and XOFFRXC (0x4050).
    const PAUSE_RX: PauseCounters = PauseCounters {
        xon: 0x4048,
        xoff: 0x4050,
    };

    /// Neither: the 82576 model has no Flow Director and no IPsec receive
    /// engine (its `steer` and `rx_security` are the defaults, none), so no
    /// frame asks them.
    fn rx_hooks(_: &Igb) -> RxHooks {
        RxHooks {
            steer: false,
            security: false,
        }
    }

    /// MPC, RNBC and the queue's RQDPC.
    fn count_rx_miss(f: &Igb, qi: usize) {
        f.stat_add(stat::MPC, 1);
        f.stat_add(stat::RNBC, 1);
        f.stat_add(RXQ_BASE + qi as u32 * QUEUE_STRIDE + q::RQDPC, 1);
    }
}

impl Igb {
    /// Exact match against the 24 receive address registers with AV set
    /// that select destination addresses (RAH.ASEL 00).
    fn rar_match(&self, dst: &[u8]) -> bool {
        (0..24u32).any(|i| {
            let ral = if i < 16 {
                RAL + 8 * i
            } else {
                RAL2 + 8 * (i - 16)
            };
            self.rar_holds(ral, dst, RAH_ASEL)
        })
    }
}
