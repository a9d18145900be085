// SPDX-License-Identifier: Apache-2.0
//! What the 82599's receiver does its own way (datasheet §7.1): L2 filtering
//! (FCTRL, the 128 receive address registers, MTA, the VLAN filter), the
//! maximum frame size of HLREG0/MAXFRS, the PTP message selection of RXMTRL,
//! and checksum status in the descriptor (§7.1.6). The rest of the receive
//! path is the shared [`crate::function::rx`].

use nicemu_net_util::csum::verify_rx;
use nicemu_net_util::rss::HashType;

use super::regs::*;
use super::{fctrl, hlreg0, Ixgbe, I82599};
use crate::desc::RXD_STAT_IPCS;
use crate::function::{MaxFrame, PauseCounters, PtpMatch, Receive, RxHooks, RxSecurity, RxStatus};
use crate::ptp;

/// ETQF: filter enable.
pub(super) const ETQF_FILTER_EN: u32 = 1 << 31;
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

impl Receive for I82599 {
    fn rx_enabled(f: &Ixgbe) -> bool {
        f.regs.peek(RXCTRL) & RXCTRL_RXEN != 0
    }

    /// Without link, or while the MAC loops back, frames from the wire are
    /// dropped.
    fn wire_rx(f: &Ixgbe) -> bool {
        f.link_up() && !f.mac_loopback()
    }

    fn rss_enabled(mrqc: u32) -> bool {
        matches!(mrqc & 0xf, 1..=5)
    }

    /// MAXFRS.MFS with HLREG0.JUMBOEN, else a standard frame; four bytes more
    /// for a tagged frame (MFS counts the FCS).
    fn max_frame(f: &Ixgbe) -> MaxFrame {
        let max = if f.regs.peek(HLREG0) & hlreg0::JUMBOEN != 0 {
            (f.regs.peek(MAXFRS) >> 16) as usize
        } else {
            MAX_STD_FRAME
        };
        MaxFrame {
            plain: max.max(64) - FCS,
            tagged: (max + 4).max(64) - FCS,
            vet: f.regs.peek(VLNCTRL) as u16,
        }
    }

    /// Destination and VLAN filtering (§7.1.1, §7.1.2).
    fn rx_accept(f: &Ixgbe, frame: &[u8]) -> bool {
        let fc = f.regs.peek(FCTRL);
        if f.tagged(frame) && f.regs.peek(VLNCTRL) & VLNCTRL_VFE != 0 && !f.vfta_has(frame) {
            return false;
        }
        let dst = &frame[0..6];
        if dst == [0xff; 6] {
            return fc & (fctrl::BAM | fctrl::MPE | fctrl::UPE) != 0;
        }
        if fc & fctrl::UPE != 0 || f.rar_match(dst) {
            return true;
        }
        if dst[0] & 1 != 0 {
            return fc & fctrl::MPE != 0 || f.mta_match(dst);
        }
        false
    }

    /// RXMTRL's v1 control, v2 message type and UDP port (319 when 0;
    /// §7.9.1.1).
    fn ptp_match(f: &Ixgbe) -> PtpMatch {
        let mtrl = f.regs.peek(RXMTRL);
        let port = (mtrl >> 16) as u16;
        PtpMatch {
            v1_ctrl: mtrl as u8,
            v2_msg: ((mtrl >> 8) & 0xf) as u8,
            udp_port: if port == 0 { ptp::PTP_EVENT_PORT } else { port },
        }
    }

    /// RXDCTL.VME of the queue.
    fn vlan_strip(f: &Ixgbe, qi: usize) -> bool {
        f.regs.peek(rxq_base(qi as u32) + q::DCTL) & RXDCTL_VME != 0
    }

    /// Checksum status / error bits (always checked on the 82599) and the
    /// RSS hash, which the descriptor always carries.
    #[inline]
    fn rx_status(_: &Ixgbe, frame: &[u8], ptype: u16, hash: u32) -> RxStatus {
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

    fn count_rx_queue(f: &Ixgbe, qi: usize, frames: u32, octets: u64) {
        f.count_rx_queue(qi, frames, octets);
    }

    /// LXONRXCNT (0x41a4) and LXOFFRXCNT (0x41a8).
    const PAUSE_RX: PauseCounters = PauseCounters {
        xon: 0x41a4,
        xoff: 0x41a8,
    };

    fn count_rx_miss(f: &Ixgbe, qi: usize) {
        f.count_rx_miss(qi);
    }

    /// Receive side coalescing (§7.11) where the queue has it on. Inline:
    /// a queue without RSC pays two register tests, not a call.
    #[inline]
    fn rx_place(f: &Ixgbe, qi: usize, frame: &[u8], hash: u32, ty: HashType, ts: bool) -> bool {
        if !f.rsc_enabled(qi) {
            return false;
        }
        f.rsc_receive(qi, frame, hash, ty, ts);
        true
    }

    const RX_PLACE: bool = true;

    fn rx_place_on(f: &Ixgbe, qi: usize) -> bool {
        f.rsc_enabled(qi)
    }

    /// The Flow Director while FDIRCTRL says it is initialised, the IPsec
    /// receive engine while it is on.
    fn rx_hooks(f: &Ixgbe) -> RxHooks {
        RxHooks {
            steer: f.fdir_on(),
            security: f.ipsec_rx_on(),
        }
    }

    fn rx_timer(f: &Ixgbe, now_ns: u64) {
        f.rsc_timer(now_ns);
    }

    /// The IPsec engine's receive side (§7.12.5); inline, the engine's
    /// work out of line.
    #[inline]
    fn rx_security(f: &Ixgbe, frame: &[u8]) -> Option<(RxSecurity, Option<Vec<u8>>)> {
        f.ipsec_rx(frame)
    }

    /// The Flow Director's queue (§7.1.2.7), ahead of RSS; inline, the
    /// filter lookup out of line.
    #[inline]
    fn steer(f: &Ixgbe, frame: &[u8]) -> Option<usize> {
        f.fdir_steer(frame)
    }
}

impl Ixgbe {
    /// The frame carries a VLAN tag of VLNCTRL.VET.
    fn tagged(&self, frame: &[u8]) -> bool {
        let vet = self.regs.peek(VLNCTRL) as u16;
        frame.len() >= 18 && u16::from_be_bytes([frame[12], frame[13]]) == vet
    }

    /// Exact match against the 128 receive address registers with AV set.
    fn rar_match(&self, dst: &[u8]) -> bool {
        (0..128u32).any(|i| self.rar_holds(RAL + 8 * i, dst, 0))
    }

    /// Multicast table lookup with MCSTCTRL.MO, while MCSTCTRL.MFE is set.
    fn mta_match(&self, dst: &[u8]) -> bool {
        let mc = self.regs.peek(MCSTCTRL);
        mc & MCSTCTRL_MFE != 0 && self.mta_has(dst, mc)
    }
}
