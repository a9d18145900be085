// SPDX-License-Identifier: Apache-2.0
//! What the driver double ([`crate::testutil::driver`]) does the igb
//! driver's way on an 82576, and the driver's MDIC access to the PHY.

use super::*;
use crate::function::Function;
use crate::testutil::driver::{autoneg_done, rd, wr, DriverPart, DriverQueues};
use crate::testutil::TestEnv;

impl DriverQueues for I82576 {
    const RAM: usize = 4 << 20;
    /// `igb_configure_tx_ring`: PTHRESH 8, HTHRESH 1, WTHRESH 1 (plus the
    /// enable bit).
    const TXDCTL: u32 = 0x0201_0108;
    /// `igb_configure_rx_ring`: PTHRESH 8, HTHRESH 8, WTHRESH 1.
    const RXDCTL: u32 = 0x0201_0808;
    /// Advanced one-buffer descriptors, 2 KiB buffers, a 256-byte header
    /// buffer size field.
    const SRRCTL: u32 = 0x0200_0402;

    fn test_config(mac: [u8; 6]) -> IgbConfig {
        IgbConfig { mac }
    }

    /// `E1000_RDBAL(n)`: queues 0-3 at their legacy aliases 0x2800 + 0x100 n.
    fn driver_rxq(q: usize) -> u32 {
        match q {
            0..4 => 0x2800 + 0x100 * q as u32,
            _ => Self::rxq_base(q),
        }
    }

    /// `E1000_TDBAL(n)`: queues 0-3 at 0x3800 + 0x100 n.
    fn driver_txq(q: usize) -> u32 {
        match q {
            0..4 => 0x3800 + 0x100 * q as u32,
            _ => Self::txq_base(q),
        }
    }

    fn enable_tx(d: &Igb) {
        wr(d, TCTL, tctl::EN | tctl::PSP | 0xf0 | (63 << 12));
    }

    fn set_rx_enabled(d: &Igb, on: bool) {
        let en = if on { rctl::EN } else { 0 };
        wr(d, RCTL, en | rctl::BAM | rctl::SECRC | rctl::LPE);
    }
}

impl DriverPart for I82576 {
    const EERD: u32 = EERD;
    const SYSTIML: u32 = SYSTIML;
    const RX_CAUSE: u32 = intr::ICR_RXT0;
    const ICR: u32 = ICR;
    const MPC: u32 = stat::MPC;
    const RNBC: u32 = stat::RNBC;
    const GPRC_COUNTS_MISSED: bool = false;
    const NEGOTIATES: bool = true;
    /// `IGB_RX_HDR_LEN`.
    const LBTEST_SIZE: usize = 256;

    fn rx_queue_drops(q: usize) -> u32 {
        Self::rxq_base(q) + q::RQDPC
    }

    fn link_up(d: &Igb) {
        let v = rd(d, CTRL) | ctrl::SLU;
        wr(d, CTRL, v);
    }

    /// `igb_integrated_phy_loopback`: the PHY's loopback at 1000 Mb/s full
    /// duplex; off, the PHY reset to autonegotiation and the link back up.
    fn set_loopback(d: &Igb, t: &TestEnv, on: bool) {
        if on {
            phy_write(d, 0, 0x4140);
        } else {
            phy_write(d, 0, 0x1140);
            autoneg_done(d, t);
            Self::link_up(d);
        }
    }
}

/// Reads PHY register `reg` through MDIC (`igb_read_phy_reg_mdic`).
pub fn phy_read(d: &Function<I82576>, reg: u32) -> u16 {
    wr(d, MDIC, (reg << 16) | (1 << 21) | (2 << 26));
    let v = rd(d, MDIC);
    assert_ne!(v & (1 << 28), 0, "MDIC ready");
    assert_eq!(v & (1 << 30), 0, "MDIC error");
    v as u16
}

/// Writes PHY register `reg` through MDIC (`igb_write_phy_reg_mdic`).
pub fn phy_write(d: &Function<I82576>, reg: u32, val: u16) {
    wr(
        d,
        MDIC,
        (reg << 16) | (1 << 21) | (1 << 26) | u32::from(val),
    );
    assert_ne!(rd(d, MDIC) & (1 << 28), 0);
}
