// SPDX-License-Identifier: Apache-2.0
//! What the 82599's transmitter does its own way (datasheet §7.2): DMATXCTL's
//! enable and VLAN ethertype, HLREG0's padding and MAC loopback. The 82599 has no interrupt
//! for a transmit stamp: the driver polls TSYNCTXCTL.VALID
//! (`ixgbe_ptp_tx_hwtstamp_work`). The rest of the transmit path is the
//! shared [`crate::function::tx`].

use super::regs::*;
use super::{hlreg0, Ixgbe, I82599};
use crate::desc::TxContext;
use crate::function::{Transmit, TxRoute};
use crate::txframe::{FinishSettings, FrameOpts};

/// DMATXCTL: transmit enable.
const DMATXCTL_TE: u32 = 1 << 0;

impl Transmit for I82599 {
    fn tx_enabled(f: &Ixgbe) -> bool {
        f.regs.peek(DMATXCTL) & DMATXCTL_TE != 0
    }

    /// VLAN insertion with DMATXCTL.VT (0x8100 when 0); padding with
    /// HLREG0.TXPADEN.
    fn tx_settings(f: &Ixgbe) -> FinishSettings {
        FinishSettings {
            tpid: match (f.regs.peek(DMATXCTL) >> 16) as u16 {
                0 => 0x8100,
                vt => vt,
            },
            pad: f.regs.peek(HLREG0) & hlreg0::TXPADEN != 0,
        }
    }

    /// Link, or the MAC loops back (without either the 82599 stops transmit
    /// DMA: `ixgbe_watchdog_flush_tx`).
    fn tx_link(f: &Ixgbe) -> bool {
        f.link_up() || f.mac_loopback()
    }

    /// The IPsec engine's transmit side (§7.12.4).
    fn tx_security(
        f: &Ixgbe,
        (o, ctx): (&FrameOpts, &TxContext),
        seg: usize,
        frame: &mut Vec<u8>,
    ) -> bool {
        f.ipsec_tx(o, ctx, seg, frame)
    }

    /// The MAC loops back with HLREG0.LPBK; else the wire.
    fn tx_route(f: &Ixgbe) -> TxRoute {
        if f.mac_loopback() {
            TxRoute::Loopback
        } else {
            TxRoute::Wire
        }
    }

    fn count_tx_queue(f: &Ixgbe, qi: usize, frames: u32, octets: u64) {
        f.count_tx_queue(qi, frames, octets);
    }
}
