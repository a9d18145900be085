// SPDX-License-Identifier: Apache-2.0
//! What the 82576's transmitter does its own way (datasheet §7.2): TCTL's
//! padding, VET as the inserted VLAN ethertype, PHY and MAC loopback, and the
//! time sync interrupt of a transmit stamp. The rest of the transmit path is
//! the shared [`crate::function::tx`].

use super::regs::*;
use super::{intr, rctl, tctl, Igb, I82576};
use crate::function::{Transmit, TxRoute};
use crate::txframe::FinishSettings;

/// TSICR / TSIM: transmit time stamp taken.
const TSICR_TXTS: u32 = 1 << 1;

/// The MAC loops transmitted frames back (RCTL.LBM).
fn mac_loopback(f: &Igb) -> bool {
    f.regs.peek(RCTL) & rctl::LBM_MASK == rctl::LBM_MAC
}

impl Transmit for I82576 {
    fn tx_enabled(f: &Igb) -> bool {
        f.regs.peek(TCTL) & tctl::EN != 0
    }

    /// VLAN insertion with VET; short frames padded with TCTL.PSP.
    fn tx_settings(f: &Igb) -> FinishSettings {
        FinishSettings {
            tpid: f.regs.peek(VET) as u16,
            pad: f.regs.peek(TCTL) & tctl::PSP != 0,
        }
    }

    /// TSICR.TXTS (§7.9.2.2), which reaches ICR.TS when TSIM enables it.
    /// (The igb driver polls TSYNCTXCTL.VALID on the 82576,
    /// `igb_ptp_tx_work`.)
    fn tx_stamped(f: &Igb) {
        f.regs.set_bits(TSICR, TSICR_TXTS);
        if f.regs.peek(TSIM) & TSICR_TXTS != 0 {
            f.raise_icr(intr::ICR_TS);
        }
    }

    /// The PHY has link or loops back, or the MAC loops back (the 82576
    /// stops transmit DMA without link: `igb_watchdog_task`, which then
    /// resets the function to flush what is queued).
    fn tx_link(f: &Igb) -> bool {
        f.link_up() || mac_loopback(f)
    }

    /// The PHY or the MAC (RCTL.LBM) loops back; else the wire.
    fn tx_route(f: &Igb) -> TxRoute {
        if f.media_loopback() || mac_loopback(f) {
            TxRoute::Loopback
        } else {
            TxRoute::Wire
        }
    }
}
