// SPDX-License-Identifier: Apache-2.0
//! What the driver double ([`crate::testutil::driver`]) does the ixgbe
//! driver's way on an 82599.

use super::*;
use crate::testutil::driver::{rd, wr, DriverPart, DriverQueues};
use crate::testutil::TestEnv;

/// SYSTIML (82599 §8.2.3.26.11; SYSTIMH follows).
pub const SYSTIML: u32 = 0x8c0c;

impl DriverQueues for I82599 {
    const RAM: usize = 1 << 20;
    /// `ixgbe_configure_tx_ring`: WTHRESH 1, HTHRESH 1, PTHRESH 32.
    const TXDCTL: u32 = QUEUE_ENABLE | (1 << 16) | (1 << 8) | 32;
    const RXDCTL: u32 = QUEUE_ENABLE;
    /// Advanced one-buffer descriptors, 2 KiB buffers.
    const SRRCTL: u32 = 0x0200_0002;

    fn test_config(mac: [u8; 6]) -> IxgbeConfig {
        IxgbeConfig {
            mac,
            sfp: SfpKind::DirectAttach,
        }
    }

    /// DMATXCTL.TE (`ixgbe_configure_tx`).
    fn enable_tx(d: &Ixgbe) {
        let v = rd(d, DMATXCTL) | 1;
        wr(d, DMATXCTL, v);
    }

    /// RXCTRL.RXEN with DMBYPS (`ixgbe_enable_rx_dma`), and FCTRL.BAM for
    /// broadcasts.
    fn set_rx_enabled(d: &Ixgbe, on: bool) {
        if on {
            let v = rd(d, FCTRL) | fctrl::BAM;
            wr(d, FCTRL, v);
        }
        wr(d, RXCTRL, if on { 1 | 2 } else { 0 });
    }
}

impl DriverPart for I82599 {
    const EERD: u32 = EERD;
    const SYSTIML: u32 = SYSTIML;
    const RX_CAUSE: u32 = 0;
    const ICR: u32 = EICR;
    const MPC: u32 = stat::MPC;
    const RNBC: u32 = stat::RNBC;
    const GPRC_COUNTS_MISSED: bool = true;
    const NEGOTIATES: bool = false;
    /// `ixgbe_run_loopback_test`.
    const LBTEST_SIZE: usize = 1024;

    fn rx_queue_drops(q: usize) -> u32 {
        stat::QPRDC + 0x40 * q as u32
    }

    fn link_up(_: &Ixgbe) {}

    /// `ixgbe_setup_loopback_test`: MAC loopback, broadcasts and bad
    /// packets accepted, multicast promiscuous, AUTOC forced to 10G.
    fn set_loopback(d: &Ixgbe, _: &TestEnv, on: bool) {
        let v = rd(d, HLREG0);
        if !on {
            wr(d, HLREG0, v & !hlreg0::LPBK);
            return;
        }
        wr(d, HLREG0, v | hlreg0::LPBK);
        let v = rd(d, FCTRL) | fctrl::BAM | fctrl::SBP | fctrl::MPE;
        wr(d, FCTRL, v);
        wr(d, AUTOC, regs::AUTOC_RESET | 1);
    }
}
