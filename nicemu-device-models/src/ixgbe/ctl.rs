// SPDX-License-Identifier: Apache-2.0
//! The 82599's control registers: CTRL (device and link reset, §8.2.3.1.1),
//! STATUS and LINKS (computed from the link), the SFP+ cage behind ESDP and
//! I2CCTL (§8.2.3.1.4), AUTOC's autonegotiation restart, the MDIO interface
//! (no PHY on an SFP+ port); the flow director's registers go to [`super::fdir`].

use super::regs::*;
use super::sfp::{I2cBus, SfpKind};
use super::{ctrl, links, status, Ixgbe, I82599};
use crate::function::{Control, Ctl, Media, Receive, Transmit};
use crate::regfile::Written;

const MSCA_MDI_COMMAND: u32 = 1 << 30;
const MSCA_OP_READ: u32 = 1 << 27;
const AUTOC_AN_RESTART: u32 = 1 << 12;
const ESDP_SDP2: u32 = 1 << 2;
const I2C_CLK_IN: u32 = 1 << 0;
const I2C_CLK_OUT: u32 = 1 << 1;
const I2C_DATA_IN: u32 = 1 << 2;
const I2C_DATA_OUT: u32 = 1 << 3;
const DMATXCTL_TE: u32 = 1 << 0;

/// The SFP+ cage: the module on its I2C bus, and the emulated link partner
/// (the control path can pull the cable).
#[derive(Debug)]
pub struct SfpCage {
    /// I2C bus to the module.
    pub i2c: I2cBus,
    /// Cable connected.
    pub cable: bool,
}

impl SfpCage {
    /// A cage holding a module of `kind` (or none), cable connected.
    pub fn new(kind: SfpKind) -> Self {
        SfpCage {
            i2c: I2cBus::new(kind),
            cable: true,
        }
    }
}

impl Media for SfpCage {
    /// Link is up while a module is plugged and the partner is connected.
    fn link_up(&self) -> bool {
        self.i2c.present() && self.cable
    }
    fn set_cable(&mut self, up: bool) {
        self.cable = up;
    }
    fn reset(&mut self) {
        self.i2c.reset();
    }
}

impl Control for I82599 {
    /// ESDP shows the module, I2CCTL the bus lines.
    fn ctl_read(f: &Ixgbe, c: &mut Ctl<SfpCage>, r: CtlReg, v: u32) -> u32 {
        match r {
            // SDP2 is the module-present input on X520 adapters
            // (`ixgbe_check_mac_link_generic`, crosstalk fix).
            CtlReg::Esdp if c.media.i2c.present() => v | ESDP_SDP2,
            CtlReg::Esdp => v & !ESDP_SDP2,
            CtlReg::I2cctl => {
                let (scl, sda) = c.media.i2c.lines();
                let mut v = f.regs.peek(I2CCTL) & (I2C_CLK_OUT | I2C_DATA_OUT);
                if scl {
                    v |= I2C_CLK_IN;
                }
                if sda {
                    v |= I2C_DATA_IN;
                }
                v
            }
            CtlReg::Ctrl | CtlReg::Autoc => v,
        }
    }

    fn ctl_write(f: &Ixgbe, c: &mut Ctl<SfpCage>, r: CtlReg, w: &Written<Hook>) {
        match r {
            CtlReg::Ctrl => {
                if w.new & (ctrl::RST | ctrl::LNK_RST) != 0 {
                    log::debug!("ixgbe: reset ({:#x})", w.new);
                    f.software_reset(c);
                }
            }
            CtlReg::Esdp => {}
            CtlReg::I2cctl => {
                c.media
                    .i2c
                    .drive(w.new & I2C_CLK_OUT != 0, w.new & I2C_DATA_OUT != 0);
            }
            CtlReg::Autoc => {
                if w.new & AUTOC_AN_RESTART != 0 {
                    f.regs.clear_bits(AUTOC, AUTOC_AN_RESTART);
                    f.check_link_change(c);
                }
            }
        }
    }

    /// STATUS and LINKS are computed from the link.
    fn read(f: &Ixgbe, r: Reg, v: u32) -> u32 {
        match r {
            Reg::Status => f.status(),
            Reg::Links => f.links(),
            Reg::Fdirfree => f.fdir_free(),
            Reg::Fdirlen => f.fdir_len(),
            _ => v,
        }
    }

    fn write(f: &Ixgbe, r: Reg, w: &Written<Hook>) {
        match r {
            Reg::Status | Reg::Links | Reg::Fdirfree | Reg::Fdirlen => {}
            Reg::Msca => {
                // No PHY on the MDIO bus of an SFP+ port: commands complete at
                // once and reads return all ones (`ixgbe_identify_phy_generic`).
                f.regs.poke(MSCA, w.new & !MSCA_MDI_COMMAND);
                if w.new & MSCA_MDI_COMMAND != 0 && w.new & MSCA_OP_READ != 0 {
                    let d = f.regs.peek(MSRWD) & 0xffff;
                    f.regs.poke(MSRWD, 0xffff_0000 | d);
                }
            }
            Reg::Dmatxctl => {
                if w.new & DMATXCTL_TE != 0 && w.old & DMATXCTL_TE == 0 {
                    f.tx_doorbell_all();
                }
            }
            Reg::Fdirctrl => f.fdir_init(w.new),
            Reg::Fdircmd => f.fdir_command(w.new),
            Reg::Ipstxidx => f.ipsec_tx_index(w.new),
            Reg::Ipsrxidx => f.ipsec_rx_index(w.new),
        }
    }

    fn mac_enabled(f: &Ixgbe) -> (bool, bool) {
        (Self::rx_enabled(f), Self::tx_enabled(f))
    }
}

impl Ixgbe {
    /// STATUS: link up, GIO master enable.
    fn status(&self) -> u32 {
        let mut s = 0;
        if self.link_up() {
            s |= status::LINK_UP;
        }
        if self.regs.peek(CTRL) & ctrl::GIO_DIS == 0 {
            s |= status::GIO;
        }
        s
    }

    /// LINKS: up at 10 Gb/s with lanes aligned and synchronised, or nothing.
    fn links(&self) -> u32 {
        if self.link_up() {
            links::UP
                | links::SPEED_10G
                | links::LINK_STATUS
                | links::ALIGN_10G
                | links::LANE_SYNC_10G
        } else {
            0
        }
    }
}
