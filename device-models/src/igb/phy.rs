// SPDX-License-Identifier: Apache-2.0
//! The 82576's internal IGP03 copper PHY (82576 datasheet §8.24, PHY registers;
//! ID 0x02A8_0390 as the igb driver's `igb_get_phy_id_82575` expects).

use crate::phy::{PhyModel, PhyRegDef, MII_SR_AUTONEG_COMPLETE, MII_SR_LINK_STATUS};

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

/// Partner registers while the link is up: LP ability (1000/100/10 FD+HD, pause,
/// ack), autoneg expansion (LP autoneg able), 1000T status (local and remote
/// receiver OK, LP 1000 FD/HD), port status (1000 Mb/s, full duplex, link).
static LINK_VALUES: &[(u16, u16)] = &[
    (0x05, 0x45e1),
    (0x06, 0x0005),
    (0x0a, 0x3c00),
    (0x11, 0xc000 | 0x0200 | 0x0400),
];

/// The IGP03 model.
pub const IGP03: PhyModel = PhyModel {
    regs: REGS,
    page_select: Some(0x1f),
    status_link_bits: LINK_BITS,
    link_values: LINK_VALUES,
};
