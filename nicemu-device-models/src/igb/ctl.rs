// SPDX-License-Identifier: Apache-2.0
//! The 82576's control registers: CTRL (device and PHY reset, set link up;
//! §8.2.1), STATUS (§8.2.2), the MDIO interface to the internal PHY (MDIC,
//! §8.2.4), whose writes can change the link, and TCTL's transmit enable.

use super::regs::*;
use super::{ctrl, rctl, status, tctl, Igb, I82576};
use crate::autoneg::Speed;
use crate::function::{Control, Ctl};
use crate::phy::Phy;
use crate::regfile::Written;

/// MDIC fields (82576 §8.2.4).
mod mdic {
    pub const DATA: u32 = 0xffff;
    pub const REG_SHIFT: u32 = 16;
    pub const PHY_SHIFT: u32 = 21;
    pub const OP_WRITE: u32 = 1 << 26;
    pub const OP_READ: u32 = 2 << 26;
    pub const READY: u32 = 1 << 28;
    pub const ERROR: u32 = 1 << 30;
    /// The internal PHY's MDIO address.
    pub const PHY_ADDR: u32 = 1;
}

impl Control for I82576 {
    fn ctl_read(_: &Igb, _: &mut Ctl<Phy>, _: CtlReg, v: u32) -> u32 {
        v
    }

    fn ctl_write(f: &Igb, c: &mut Ctl<Phy>, r: CtlReg, w: &Written<Hook>) {
        match r {
            CtlReg::Ctrl => {
                if w.new & ctrl::RST != 0 {
                    f.software_reset(c);
                    return;
                }
                if w.new & ctrl::PHY_RST != 0 {
                    c.media.reset();
                    f.regs.clear_bits(CTRL, ctrl::PHY_RST);
                }
                f.check_link_change(c);
            }
            CtlReg::Mdic => f.mdic_write(c, w.raw),
        }
    }

    fn read(f: &Igb, r: Reg, v: u32) -> u32 {
        match r {
            Reg::Status => f.status(),
            Reg::Tctl => v,
        }
    }

    fn write(f: &Igb, r: Reg, w: &Written<Hook>) {
        match r {
            Reg::Status => {}
            Reg::Tctl => {
                if w.new & tctl::EN != 0 && w.old & tctl::EN == 0 {
                    f.tx_doorbell_all();
                }
            }
        }
    }

    fn mac_enabled(f: &Igb) -> (bool, bool) {
        (
            f.regs.peek(RCTL) & rctl::EN != 0,
            f.regs.peek(TCTL) & tctl::EN != 0,
        )
    }
}

impl Igb {
    /// An MDIO command: a read or write of the internal PHY completes at
    /// once; another PHY address or a bad opcode reports an error.
    fn mdic_write(&self, c: &mut Ctl<Phy>, v: u32) {
        let reg = ((v >> mdic::REG_SHIFT) & 0x1f) as u8;
        let phy = (v >> mdic::PHY_SHIFT) & 0x1f;
        let mut out = v & !(mdic::READY | mdic::ERROR);
        if phy != mdic::PHY_ADDR {
            out |= mdic::ERROR;
        } else if v & mdic::OP_READ != 0 && v & mdic::OP_WRITE == 0 {
            out = (out & !mdic::DATA) | u32::from(c.media.read(reg));
        } else if v & mdic::OP_WRITE != 0 && v & mdic::OP_READ == 0 {
            c.media.write(reg, v as u16);
        } else {
            out |= mdic::ERROR;
        }
        self.regs.poke(MDIC, out | mdic::READY);
        self.check_link_change(c);
    }

    /// STATUS (82576 §8.2.2): the speed (bits 7:6) and duplex (bit 0) the
    /// PHY resolved while it has link (1000 Mb/s full duplex otherwise),
    /// link, GIO master enable.
    fn status(&self) -> u32 {
        let c = self.regs.peek(CTRL);
        let mut s = status::PF_RST_DONE;
        s |= match self.link_mode() {
            Some(m) => {
                let speed = match m.speed {
                    Speed::Mb10 => 0,
                    Speed::Mb100 => status::SPEED_100,
                    Speed::Mb1000 => status::SPEED_1000,
                };
                speed | if m.full { status::FD } else { 0 }
            }
            None => status::FD | status::SPEED_1000,
        };
        if self.link_up() {
            s |= status::LU;
        }
        if c & ctrl::GIO_MASTER_DISABLE == 0 {
            s |= status::GIO_MASTER_ENABLE;
        }
        s
    }
}
