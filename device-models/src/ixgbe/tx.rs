//! What the 82599's transmitter does its own way (datasheet §7.2): the VLAN
//! ethertype of DMATXCTL.VT and HLREG0's padding. The 82599 has no interrupt
//! for a transmit stamp: the driver polls TSYNCTXCTL.VALID
//! (`ixgbe_ptp_tx_hwtstamp_work`). The rest of the transmit path, MAC
//! loopback included, is the shared [`crate::function::tx`].

use super::regs::*;
use super::{hlreg0, Ixgbe};
use crate::txframe::FinishSettings;

impl Ixgbe {
    /// VLAN insertion with DMATXCTL.VT (0x8100 when 0); padding with
    /// HLREG0.TXPADEN.
    pub(super) fn tx_settings(&self) -> FinishSettings {
        FinishSettings {
            tpid: match (self.regs.peek(DMATXCTL) >> 16) as u16 {
                0 => 0x8100,
                vt => vt,
            },
            pad: self.regs.peek(HLREG0) & hlreg0::TXPADEN != 0,
        }
    }
}
