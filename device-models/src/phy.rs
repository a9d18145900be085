// SPDX-License-Identifier: Apache-2.0
//! An IEEE 802.3 clause-22 copper PHY behind an MDIO interface.
//!
//! Models the basic registers (802.3 §22.2.4): control with self-clearing reset
//! and autonegotiation restart, status with latched-low link, identifiers,
//! advertisement / link-partner ability, 1000BASE-T control/status and extended
//! status, plus the vendor registers a driver reads (as given by the part's
//! table). Link partner: an ideal 1000BASE-T full-duplex peer, present while the
//! emulated cable is connected. Autonegotiation takes [`AUTONEG_NS`]: the link
//! is down from a reset, a restart, a power-up or a cable connect until the
//! device calls [`Phy::complete_autoneg`] (it arms its timer when
//! [`Phy::take_autoneg_started`] says one began).

/// Basic control register.
pub const PHY_CONTROL: u8 = 0x00;
/// Basic status register.
pub const PHY_STATUS: u8 = 0x01;
/// PHY identifier 1.
pub const PHY_ID1: u8 = 0x02;
/// PHY identifier 2.
pub const PHY_ID2: u8 = 0x03;
/// Autonegotiation advertisement.
pub const PHY_AUTONEG_ADV: u8 = 0x04;
/// Link partner ability.
pub const PHY_LP_ABILITY: u8 = 0x05;
/// Autonegotiation expansion.
pub const PHY_AUTONEG_EXP: u8 = 0x06;
/// 1000BASE-T control.
pub const PHY_1000T_CTRL: u8 = 0x09;
/// 1000BASE-T status.
pub const PHY_1000T_STATUS: u8 = 0x0a;
/// Extended status.
pub const PHY_EXT_STATUS: u8 = 0x0f;

/// Control: software reset (self-clearing).
pub const MII_CR_RESET: u16 = 1 << 15;
/// Control: loopback.
pub const MII_CR_LOOPBACK: u16 = 1 << 14;
/// Control: autonegotiation enable.
pub const MII_CR_AUTO_NEG_EN: u16 = 1 << 12;
/// Control: power down.
pub const MII_CR_POWER_DOWN: u16 = 1 << 11;
/// Control: restart autonegotiation (self-clearing).
pub const MII_CR_RESTART_AUTO_NEG: u16 = 1 << 9;
/// Status: link up (latched low).
pub const MII_SR_LINK_STATUS: u16 = 1 << 2;
/// Status: autonegotiation complete.
pub const MII_SR_AUTONEG_COMPLETE: u16 = 1 << 5;

/// How long autonegotiation with the ideal partner takes: 1 s, IEEE 802.3 clause 28's
/// `link_fail_inhibit_timer` (750-1000 ms for 1000BASE-T) after the FLP exchange; real
/// parts take that or longer (igb's own link test waits 5 s, `igb_link_test`). A
/// driver that restarts its link (igb on every open, reset, `ethtool -L`/`-G` and XDP
/// attach) sees no link meanwhile. With link at once, `igb_update_stats` (which skips
/// while `link_speed == 0`) published the ring counters `igb_reinit_queues` had just
/// zeroed and stats.py's procfs_downup_hammer saw the totals go backwards; it still
/// does when a TCG guest spends longer than this between two resets. 2 s made that
/// rarer but failed xdp.py's single-buffer cases, which send one datagram right after
/// attaching their program (the attach resets the port) and give up within 2 s.
pub const AUTONEG_NS: u64 = 1_000_000_000;

/// A PHY register's reset value and writable bits.
#[derive(Clone, Copy, Debug)]
pub struct PhyRegDef {
    /// Register address (0..32), or a paged address `page << 5 | reg` for
    /// vendor pages selected through the page-select register.
    pub addr: u16,
    /// Value after reset.
    pub reset: u16,
    /// Bits the driver may write.
    pub wmask: u16,
}

/// Static description of a PHY part.
#[derive(Clone, Copy, Debug)]
pub struct PhyModel {
    /// Register table.
    pub regs: &'static [PhyRegDef],
    /// Page-select register address, if the part pages its vendor registers.
    pub page_select: Option<u8>,
    /// Status bits set while the link is up (merged into register 1).
    pub status_link_bits: u16,
    /// Values of vendor/partner registers while the link is up: (addr, value).
    pub link_values: &'static [(u16, u16)],
}

/// Runtime state of a PHY.
#[derive(Clone, Debug)]
pub struct Phy {
    model: PhyModel,
    vals: [u16; 64],
    /// Last value written to the page-select register (the full paged offset,
    /// as `igb_write_phy_reg_igp` writes it); the page is its bits above 4.
    page_select: u16,
    cable: bool,
    link_latched_low: bool,
    /// Autonegotiation is under way: no link until it completes.
    negotiating: bool,
    /// A negotiation started since [`Phy::take_autoneg_started`] last asked.
    autoneg_started: bool,
}

impl Phy {
    /// A PHY in its reset state with the cable connected.
    pub fn new(model: PhyModel) -> Self {
        let mut p = Phy {
            model,
            vals: [0; 64],
            page_select: 0,
            cable: true,
            link_latched_low: false,
            negotiating: false,
            autoneg_started: false,
        };
        p.reset();
        // Powered on with the cable in long ago: the link is already up.
        p.complete_autoneg();
        p.autoneg_started = false;
        p
    }

    fn slot(&self, reg: u8) -> Option<usize> {
        let reg = u16::from(reg & 0x1f);
        let page = self.page_select >> 5;
        let addr = if reg >= 0x10 && page != 0 {
            (page << 5) | reg
        } else {
            reg
        };
        self.model
            .regs
            .iter()
            .position(|d| d.addr == addr)
            .filter(|i| *i < self.vals.len())
    }

    /// Software reset: registers back to reset values, autonegotiation restarts
    /// (if the reset values enable it).
    pub fn reset(&mut self) {
        for (i, d) in self.model.regs.iter().enumerate().take(self.vals.len()) {
            self.vals[i] = d.reset;
        }
        self.page_select = 0;
        self.start_autoneg();
    }

    /// Starts autonegotiation when it is enabled (control register bit 12),
    /// taking the link down until [`Self::complete_autoneg`]; with it disabled
    /// (speed forced) there is nothing to negotiate.
    fn start_autoneg(&mut self) {
        let was_up = self.link_up();
        self.negotiating = self.get(PHY_CONTROL) & MII_CR_AUTO_NEG_EN != 0;
        if self.negotiating {
            self.autoneg_started = true;
            if was_up {
                self.link_latched_low = true;
            }
        }
        self.update_link();
    }

    /// True once after a negotiation started: the device then schedules
    /// [`Self::complete_autoneg`] [`AUTONEG_NS`] later (a later start moves
    /// that time).
    pub fn take_autoneg_started(&mut self) -> bool {
        std::mem::replace(&mut self.autoneg_started, false)
    }

    /// Autonegotiation is under way.
    pub fn negotiating(&self) -> bool {
        self.negotiating
    }

    /// Autonegotiation with the ideal partner is done: link (if the cable is in
    /// and the PHY powered).
    pub fn complete_autoneg(&mut self) {
        self.negotiating = false;
        self.update_link();
    }

    /// Connects or disconnects the emulated cable.
    pub fn set_cable(&mut self, connected: bool) {
        let plugged = connected && !self.cable;
        if !connected {
            self.link_latched_low = true;
        }
        self.cable = connected;
        if plugged {
            self.start_autoneg();
        } else {
            self.update_link();
        }
    }

    /// True while the PHY reports link (cable present, not powered down,
    /// autonegotiation done or speed forced).
    pub fn link_up(&self) -> bool {
        let ctrl = self.get(PHY_CONTROL);
        self.cable && ctrl & MII_CR_POWER_DOWN == 0 && !self.negotiating
    }

    /// True when the PHY is looping transmitted frames back to the receiver.
    pub fn loopback(&self) -> bool {
        self.get(PHY_CONTROL) & MII_CR_LOOPBACK != 0
    }

    fn get(&self, reg: u8) -> u16 {
        self.model
            .regs
            .iter()
            .position(|d| d.addr == u16::from(reg))
            .map(|i| self.vals[i])
            .unwrap_or(0)
    }

    fn set(&mut self, addr: u16, v: u16) {
        if let Some(i) = self.model.regs.iter().position(|d| d.addr == addr) {
            self.vals[i] = v;
        }
    }

    fn update_link(&mut self) {
        let up = self.link_up();
        let st_addr = u16::from(PHY_STATUS);
        let reset_status = self
            .model
            .regs
            .iter()
            .find(|d| d.addr == st_addr)
            .map(|d| d.reset)
            .unwrap_or(0);
        if up {
            self.set(st_addr, reset_status | self.model.status_link_bits);
            for (a, v) in self.model.link_values {
                self.set(*a, *v);
            }
        } else {
            self.set(
                st_addr,
                reset_status & !(MII_SR_LINK_STATUS | MII_SR_AUTONEG_COMPLETE),
            );
            for (a, _) in self.model.link_values {
                let r = self
                    .model
                    .regs
                    .iter()
                    .find(|d| d.addr == *a)
                    .map(|d| d.reset)
                    .unwrap_or(0);
                self.set(*a, r);
            }
        }
    }

    /// MDIO read of register `reg` (0..32).
    pub fn read(&mut self, reg: u8) -> u16 {
        if Some(reg) == self.model.page_select {
            return self.page_select;
        }
        let v = self.slot(reg).map(|i| self.vals[i]).unwrap_or(0);
        if reg == PHY_STATUS && self.link_latched_low {
            // Latched-low link bit: the first read after a drop reports it.
            self.link_latched_low = false;
            return v & !MII_SR_LINK_STATUS;
        }
        v
    }

    /// MDIO write of register `reg` (0..32).
    pub fn write(&mut self, reg: u8, v: u16) {
        if Some(reg) == self.model.page_select {
            self.page_select = v;
            return;
        }
        let Some(i) = self.slot(reg) else {
            log::debug!("phy: write to unknown register {reg:#x} = {v:#06x} ignored");
            return;
        };
        let d = self.model.regs[i];
        let old = self.vals[i];
        self.vals[i] = (old & !d.wmask) | (v & d.wmask);
        if reg == PHY_CONTROL {
            self.control_written(i, old, v);
        }
    }

    /// Side effects of a control register write (802.3 §22.2.4.1): reset,
    /// restart, power-up and enabling autonegotiation start a negotiation;
    /// disabling it (forced speed) ends one. Reset and restart self-clear.
    fn control_written(&mut self, i: usize, old: u16, v: u16) {
        let now = self.vals[i];
        if v & MII_CR_RESET != 0 {
            let keep = now & !(MII_CR_RESET | MII_CR_RESTART_AUTO_NEG);
            self.reset();
            // Speed/duplex/autoneg settings written with the reset stay.
            self.vals[i] = keep;
        }
        self.vals[i] &= !(MII_CR_RESET | MII_CR_RESTART_AUTO_NEG);
        let powered_up = old & MII_CR_POWER_DOWN != 0 && now & MII_CR_POWER_DOWN == 0;
        let enabled = old & MII_CR_AUTO_NEG_EN == 0 && now & MII_CR_AUTO_NEG_EN != 0;
        if v & (MII_CR_RESET | MII_CR_RESTART_AUTO_NEG) != 0 || powered_up || enabled {
            self.start_autoneg();
        } else if now & MII_CR_AUTO_NEG_EN == 0 {
            self.complete_autoneg();
        } else {
            self.update_link();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::igb::phy_model_for_tests as IGP03;

    #[test]
    fn link_waits_for_autonegotiation_after_reset_restart_power_up_and_cable() {
        let mut p = Phy::new(IGP03);
        assert!(p.link_up(), "powered on with link");
        assert!(!p.take_autoneg_started());
        let starts: [&dyn Fn(&mut Phy); 4] = [
            &|p| p.write(PHY_CONTROL, 0x1140 | MII_CR_RESET),
            &|p| p.write(PHY_CONTROL, 0x1140 | MII_CR_RESTART_AUTO_NEG),
            &|p| {
                p.write(PHY_CONTROL, 0x1140 | MII_CR_POWER_DOWN);
                assert!(!p.link_up(), "powered down");
                p.write(PHY_CONTROL, 0x1140);
            },
            &|p| {
                p.set_cable(false);
                p.set_cable(true);
            },
        ];
        for start in starts {
            start(&mut p);
            assert!(p.take_autoneg_started());
            assert!(p.negotiating() && !p.link_up());
            assert_eq!(p.read(PHY_STATUS) & MII_SR_AUTONEG_COMPLETE, 0);
            p.complete_autoneg();
            assert!(p.link_up());
            let _ = p.read(PHY_STATUS); // clears the latched-low link bit
            assert_ne!(p.read(PHY_STATUS) & MII_SR_LINK_STATUS, 0);
        }
        // The same control value again starts nothing.
        p.write(PHY_CONTROL, 0x1140);
        assert!(!p.take_autoneg_started() && p.link_up());
    }

    #[test]
    fn forced_speed_has_link_without_negotiating() {
        let mut p = Phy::new(IGP03);
        p.write(PHY_CONTROL, 0x1140 | MII_CR_RESTART_AUTO_NEG);
        assert!(!p.link_up());
        // igb_phy_force_speed_duplex: autonegotiation off, 1000 FD.
        p.write(PHY_CONTROL, 0x0140);
        assert!(p.link_up() && !p.negotiating());
        p.write(PHY_CONTROL, 0x0140 | MII_CR_RESET);
        assert!(
            p.link_up(),
            "a reset keeping forced speed negotiates nothing"
        );
    }
}
