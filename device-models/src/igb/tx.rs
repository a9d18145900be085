//! What the 82576's transmitter does its own way (datasheet §7.2): TCTL's
//! padding, VET as the inserted VLAN ethertype, PHY and MAC loopback, and the
//! time sync interrupt of a transmit stamp. The rest of the transmit path is
//! the shared [`crate::function::tx`].

use super::regs::*;
use super::{ctrl, intr, rctl, tctl, Igb};
use crate::function::TxRoute;
use crate::txframe::FinishSettings;

/// TSICR / TSIM: transmit time stamp taken.
const TSICR_TXTS: u32 = 1 << 1;

impl Igb {
    /// VLAN insertion with VET; short frames padded with TCTL.PSP.
    pub(super) fn tx_settings(&self) -> FinishSettings {
        FinishSettings {
            tpid: self.regs.peek(VET) as u16,
            pad: self.regs.peek(TCTL) & tctl::PSP != 0,
        }
    }

    /// The PHY or the MAC (RCTL.LBM) loops back; else the wire, while the
    /// link is up or forced (CTRL.SLU).
    pub(super) fn tx_route(&self) -> TxRoute {
        let mac_loop = self.regs.peek(RCTL) & rctl::LBM_MASK == rctl::LBM_MAC;
        if self.media_loopback() || mac_loop {
            TxRoute::Loopback
        } else if self.regs.peek(CTRL) & ctrl::SLU != 0 || self.carrier() {
            TxRoute::Wire
        } else {
            TxRoute::Nowhere
        }
    }

    /// A transmit stamp was latched (§7.9.2.2): TSICR.TXTS, which reaches
    /// ICR.TS when TSIM enables it. (The igb driver polls TSYNCTXCTL.VALID on
    /// the 82576, `igb_ptp_tx_work`.)
    pub(super) fn tx_stamped(&self) {
        self.regs.set_bits(TSICR, TSICR_TXTS);
        if self.regs.peek(TSIM) & TSICR_TXTS != 0 {
            self.raise_icr(intr::ICR_TS);
        }
    }
}
