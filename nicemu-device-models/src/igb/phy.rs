// SPDX-License-Identifier: Apache-2.0
//! The 82576's internal IGP03 copper PHY (82576 datasheet §8.24, PHY registers;
//! ID 0x02A8_0390 as the igb driver's `igb_get_phy_id_82575` expects).

use crate::autoneg::{Mode, Speed};
use crate::phy::{PhyModel, PhyRegDef, VendorStatus, MII_SR_AUTONEG_COMPLETE, MII_SR_LINK_STATUS};

const fn r(addr: u16, reset: u16, wmask: u16) -> PhyRegDef {
    PhyRegDef { addr, reset, wmask }
}

static REGS: &[PhyRegDef] = &[
    r(0x00, 0x1140, 0xffc0), // control: autoneg, full duplex, 1000
    r(0x01, 0x7949, 0x0000), // status (link bits added while up)
    r(0x02, 0x02a8, 0x0000), // PHY ID 1
    r(0x03, 0x0391, 0x0000), // PHY ID 2 (IGP03, revision 1)
    r(0x04, 0x0de1, 0x0fff), // autoneg advertisement
    r(0x05, 0x0000, 0x0000), // link partner ability
    r(0x06, 0x0004, 0x0000), // autoneg expansion
    r(0x07, 0x2001, 0xffff), // next page
    r(0x08, 0x0000, 0x0000), // link partner next page
    r(0x09, 0x0300, 0x1f00), // 1000BASE-T control
    r(0x0a, 0x0000, 0x0000), // 1000BASE-T status
    r(0x0f, 0x3000, 0x0000), // extended status
    r(0x10, 0x0120, 0xffff), // port configuration
    r(0x11, 0x0000, 0x0000), // port status
    r(0x12, 0x1000, 0xffff), // port control (auto MDI-X)
    r(0x13, 0x0000, 0x0000), // link health
    r(0x19, 0x008d, 0xffff), // power management
];

/// Status bits while the link is up: link and autonegotiation complete.
const LINK_BITS: u16 = MII_SR_LINK_STATUS | MII_SR_AUTONEG_COMPLETE;

/// Port status (0x11) while the link is up: speed (bits 15:14, 01 = 10,
/// 10 = 100, 11 = 1000 Mb/s), link (bit 10), full duplex (bit 9) — the bits
/// igb's `igb_get_phy_info_igp` and `igb_check_polarity_igp` read
/// (`IGP01E1000_PSSR_*`).
fn port_status(m: Mode) -> u16 {
    let speed = match m.speed {
        Speed::Mb10 => 0x4000,
        Speed::Mb100 => 0x8000,
        Speed::Mb1000 => 0xc000,
    };
    speed | 0x0400 | if m.full { 0x0200 } else { 0 }
}

/// The IGP03 model.
pub const IGP03: PhyModel = PhyModel {
    regs: REGS,
    page_select: Some(0x1f),
    status_link_bits: LINK_BITS,
    vendor_status: Some(VendorStatus {
        addr: 0x11,
        value: port_status,
    }),
};
