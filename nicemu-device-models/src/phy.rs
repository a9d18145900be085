// SPDX-License-Identifier: Apache-2.0
//! An IEEE 802.3 clause-22 copper PHY behind an MDIO interface.
//!
//! Models the basic registers (802.3 §22.2.4): control with self-clearing reset
//! and autonegotiation restart, status with latched-low link, identifiers,
//! advertisement / link-partner ability, 1000BASE-T control/status and extended
//! status, plus the vendor registers a driver reads (as given by the part's
//! table). Link partner: a port that autonegotiates every 10/100/1000BASE-T
//! mode ([`Offer::IDEAL_PARTNER`]), present while the emulated cable is
//! connected; the link runs at the mode [`crate::autoneg::resolve`] gives for
//! this PHY's advertisement (registers 4 and 9) or forced speed (register 0)
//! against it, and stays down when there is none. The partner registers (5, 6,
//! 10 and the part's status register) report the partner and that mode.
//! Autonegotiation takes [`AUTONEG_NS`]: the link
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
/// Control: speed selection, most significant bit (1000 Mb/s when forced).
pub const MII_CR_SPEED_1000: u16 = 1 << 6;
/// Control: speed selection, least significant bit (100 Mb/s when forced).
pub const MII_CR_SPEED_100: u16 = 1 << 13;
/// Control: full duplex (when forced).
pub const MII_CR_FULL_DUPLEX: u16 = 1 << 8;
/// Link partner ability: selector field IEEE 802.3 (802.3 Table 28B-1).
const LPA_SELECTOR_802_3: u16 = 0x0001;
/// Link partner ability: symmetric pause.
const LPA_PAUSE: u16 = 1 << 10;
/// Link partner ability: acknowledge.
const LPA_ACK: u16 = 1 << 14;
/// Autonegotiation expansion: link partner autonegotiation able.
const EXP_LP_AUTONEG_ABLE: u16 = 1 << 0;
/// 1000BASE-T status: local and remote receiver OK.
const GSR_RECEIVERS_OK: u16 = (1 << 13) | (1 << 12);

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

/// A vendor register reporting the resolved link (speed, duplex, link).
#[derive(Clone, Copy, Debug)]
pub struct VendorStatus {
    /// Register address.
    pub addr: u16,
    /// Its value while the link is up at a mode.
    pub value: fn(Mode) -> u16,
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
    /// The part's own status register, if it has one.
    pub vendor_status: Option<VendorStatus>,
}

use crate::autoneg::{resolve, Abilities, Mode, Offer, Speed};
use crate::cable::{CableEnd, Signal};

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
    /// What the other end of the cable signals.
    partner: Signal,
    /// The cable to another port's PHY; without one the partner is
    /// [`Offer::IDEAL_PARTNER`].
    wire: Option<CableEnd>,
    /// The mode the last negotiation (or forced setting) resolved to; none
    /// when the two ends share none.
    resolved: Option<Mode>,
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
            partner: Signal::Offer(Offer::IDEAL_PARTNER),
            wire: None,
            resolved: None,
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
        } else {
            self.resolved = self.resolve();
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

    /// Autonegotiation is done: the link runs at the mode this PHY's offer
    /// and the partner's resolve to (if the cable is in, the PHY powered and
    /// there is one).
    pub fn complete_autoneg(&mut self) {
        self.negotiating = false;
        self.resolved = self.resolve();
        self.update_link();
    }

    /// The mode this PHY's offer and the partner's resolve to; none while
    /// the partner signals no offer.
    fn resolve(&self) -> Option<Mode> {
        match self.partner {
            Signal::Offer(p) => resolve(self.offer(), p),
            Signal::Off | Signal::Negotiating => None,
        }
    }

    /// What this PHY puts on the cable.
    fn signal(&self) -> Signal {
        if !self.cable || self.get(PHY_CONTROL) & MII_CR_POWER_DOWN != 0 {
            Signal::Off
        } else if self.negotiating {
            Signal::Negotiating
        } else {
            Signal::Offer(self.offer())
        }
    }

    /// Cables this PHY to another port's (whose device calls
    /// [`Self::partner_changed`] when kicked): the partner is what the other
    /// end signals from now on, and the link is resolved against it at once
    /// (as at power-up, no negotiation time).
    pub fn attach_cable(&mut self, end: CableEnd) {
        self.partner = end.partner();
        self.wire = Some(end);
        self.resolved = self.resolve();
        self.update_link();
    }

    /// The partner's signal changed (the cable kicked this end's device):
    /// a partner that starts negotiating, or comes back with another offer,
    /// takes an autonegotiating link that was up into a new negotiation
    /// (802.3 §28.3.1: link_status FAIL restarts arbitration); otherwise the
    /// link is resolved against what the partner signals now (a partner
    /// gone dark takes the link down; a forced end follows at once).
    pub fn partner_changed(&mut self) {
        let Some(now) = self.wire.as_ref().map(CableEnd::partner) else {
            return;
        };
        if now == self.partner {
            return;
        }
        let was_up = self.link_up();
        self.partner = now;
        if self.negotiating {
            // Resolved when this negotiation completes.
            self.update_link();
            return;
        }
        let autoneg = self.get(PHY_CONTROL) & MII_CR_AUTO_NEG_EN != 0;
        if autoneg && was_up && now != Signal::Off {
            self.start_autoneg();
            return;
        }
        self.resolved = self.resolve();
        if was_up && !self.link_up() {
            self.link_latched_low = true;
        }
        self.update_link();
    }

    /// What this PHY offers its partner: its advertisement (registers 4 and
    /// 9) with autonegotiation on, else the speed and duplex register 0
    /// forces (802.3 §22.2.4.1.3: bits 6 and 13 select the speed).
    pub fn offer(&self) -> Offer {
        let ctrl = self.get(PHY_CONTROL);
        if ctrl & MII_CR_AUTO_NEG_EN != 0 {
            return Offer::Autoneg(Abilities::from_registers(
                self.get(PHY_AUTONEG_ADV),
                self.get(PHY_1000T_CTRL),
            ));
        }
        let speed = match (ctrl & MII_CR_SPEED_1000 != 0, ctrl & MII_CR_SPEED_100 != 0) {
            (true, _) => Speed::Mb1000,
            (false, true) => Speed::Mb100,
            (false, false) => Speed::Mb10,
        };
        Offer::Forced(Mode {
            speed,
            full: ctrl & MII_CR_FULL_DUPLEX != 0,
        })
    }

    /// The mode the link runs at, while it is up.
    /// In loopback the link is inside the PHY, at the mode it is set to.
    pub fn link_mode(&self) -> Option<Mode> {
        if !self.link_up() {
            return None;
        }
        match (self.resolved, self.offer()) {
            (Some(m), _) => Some(m),
            (None, Offer::Forced(m)) => Some(m),
            (None, Offer::Autoneg(a)) => a.highest_common(Abilities::ALL),
        }
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
    /// autonegotiation done or speed forced, and a mode both ends share or
    /// the PHY looping back).
    pub fn link_up(&self) -> bool {
        let ctrl = self.get(PHY_CONTROL);
        self.cable
            && ctrl & MII_CR_POWER_DOWN == 0
            && !self.negotiating
            && (self.resolved.is_some() || ctrl & MII_CR_LOOPBACK != 0)
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

    fn reset_value(&self, addr: u16) -> u16 {
        self.model
            .regs
            .iter()
            .find(|d| d.addr == addr)
            .map(|d| d.reset)
            .unwrap_or(0)
    }

    /// The status and partner registers for the link as it is now, and this
    /// end's signal on the cable.
    fn update_link(&mut self) {
        self.show_link();
        if let Some(c) = &self.wire {
            c.publish(self.signal());
        }
    }

    /// The status and partner registers for the link as it is now.
    fn show_link(&mut self) {
        let st_addr = u16::from(PHY_STATUS);
        let reset_status = self.reset_value(st_addr);
        let partner_regs = [
            u16::from(PHY_LP_ABILITY),
            u16::from(PHY_AUTONEG_EXP),
            u16::from(PHY_1000T_STATUS),
        ];
        for a in partner_regs {
            self.set(a, self.reset_value(a));
        }
        if let Some(v) = self.model.vendor_status {
            self.set(v.addr, self.reset_value(v.addr));
        }
        let Some(mode) = self.link_mode() else {
            self.set(
                st_addr,
                reset_status & !(MII_SR_LINK_STATUS | MII_SR_AUTONEG_COMPLETE),
            );
            return;
        };
        self.set(st_addr, reset_status | self.model.status_link_bits);
        if let Signal::Offer(Offer::Autoneg(lp)) = self.partner {
            // Partner's base page (802.3 §28.2.1.2) and 1000BASE-T abilities.
            let lpa = lp.anar_bits() | LPA_SELECTOR_802_3 | LPA_PAUSE | LPA_ACK;
            let exp = self.reset_value(u16::from(PHY_AUTONEG_EXP)) | EXP_LP_AUTONEG_ABLE;
            let mut gsr = lp.lp_1000t_bits();
            if mode.speed == Speed::Mb1000 {
                gsr |= GSR_RECEIVERS_OK;
            }
            self.set(u16::from(PHY_LP_ABILITY), lpa);
            self.set(u16::from(PHY_AUTONEG_EXP), exp);
            self.set(u16::from(PHY_1000T_STATUS), gsr);
        }
        if let Some(v) = self.model.vendor_status {
            self.set(v.addr, (v.value)(mode));
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
        // igb_phy_force_speed_duplex: autonegotiation off, 100 FD.
        let forced_100 = MII_CR_SPEED_100 | MII_CR_FULL_DUPLEX;
        p.write(PHY_CONTROL, forced_100);
        assert!(p.link_up() && !p.negotiating());
        p.write(PHY_CONTROL, forced_100 | MII_CR_RESET);
        assert!(
            p.link_up(),
            "a reset keeping forced speed negotiates nothing"
        );
        assert_eq!(p.link_mode(), mode(Speed::Mb100, true));
        // 1000BASE-T cannot be forced against a partner (§40.5.1)...
        p.write(PHY_CONTROL, 0x0140);
        assert!(!p.link_up());
        // ...but igb's loopback self-test (igb_integrated_phy_loopback:
        // 0x4140, loopback at 1000 FD) has its link inside the PHY.
        p.write(PHY_CONTROL, 0x4140);
        assert!(p.link_up() && p.loopback());
        assert_eq!(p.link_mode(), mode(Speed::Mb1000, true));
    }

    /// Two PHYs on one cable; `settle` plays both devices' timers: kicks
    /// re-read the partner, due negotiations complete, until quiet.
    fn cabled() -> (Phy, Phy) {
        let (ea, eb) = CableEnd::pair();
        let (mut a, mut b) = (Phy::new(IGP03), Phy::new(IGP03));
        a.attach_cable(ea);
        b.attach_cable(eb);
        a.partner_changed();
        settle(&mut a, &mut b);
        (a, b)
    }

    fn settle(a: &mut Phy, b: &mut Phy) {
        for _ in 0..8 {
            for p in [&mut *a, &mut *b] {
                p.partner_changed();
            }
            for p in [&mut *a, &mut *b] {
                p.take_autoneg_started();
                if p.negotiating() {
                    p.complete_autoneg();
                }
            }
        }
    }

    const ADV_ALL: u16 = 0x01e1;

    fn advertise(p: &mut Phy, anar: u16, gcr: u16) {
        p.write(PHY_AUTONEG_ADV, anar);
        p.write(PHY_1000T_CTRL, gcr);
        p.write(PHY_CONTROL, 0x1140 | MII_CR_RESTART_AUTO_NEG);
    }

    fn mode(speed: Speed, full: bool) -> Option<Mode> {
        Some(Mode { speed, full })
    }

    #[test]
    fn the_ideal_partner_gives_the_highest_advertised_mode() {
        let mut p = Phy::new(IGP03);
        assert_eq!(p.link_mode(), mode(Speed::Mb1000, true));
        advertise(&mut p, 0x0101, 0); // 100 FD only
        p.complete_autoneg();
        assert_eq!(p.link_mode(), mode(Speed::Mb100, true));
        assert_eq!(p.read(0x11) & 0xc200, 0x8200, "port status: 100, full");
        assert_eq!(p.read(PHY_LP_ABILITY), 0x45e1, "the partner's abilities");
        advertise(&mut p, 0x0001, 0); // nothing
        p.complete_autoneg();
        assert!(!p.link_up());
        assert_eq!(p.link_mode(), None);
    }

    #[test]
    fn cabled_phys_resolve_the_highest_common_ability_on_both_ends() {
        let (mut a, mut b) = cabled();
        assert_eq!(a.link_mode(), mode(Speed::Mb1000, true));
        assert_eq!(b.link_mode(), mode(Speed::Mb1000, true));
        // a advertises 10/100 only: both end up at 100 full duplex.
        advertise(&mut a, ADV_ALL, 0);
        settle(&mut a, &mut b);
        assert_eq!(a.link_mode(), mode(Speed::Mb100, true));
        assert_eq!(b.link_mode(), mode(Speed::Mb100, true));
        let _ = b.read(PHY_STATUS);
        assert_ne!(b.read(PHY_STATUS) & MII_SR_LINK_STATUS, 0);
        assert_eq!(b.read(PHY_LP_ABILITY) & 0x01e0, 0x01e0, "b sees a's 10/100");
        assert_eq!(b.read(PHY_1000T_STATUS) & 0x0c00, 0, "and no 1000BASE-T");
        assert_eq!(
            a.read(PHY_1000T_STATUS) & 0x0800,
            0x0800,
            "a sees b's 1000 FD"
        );
    }

    #[test]
    fn cabled_phys_without_a_common_ability_have_no_link() {
        let (mut a, mut b) = cabled();
        advertise(&mut a, 0x0041, 0); // 10 FD
        advertise(&mut b, 0x0101, 0); // 100 FD
        settle(&mut a, &mut b);
        assert!(!a.link_up() && !b.link_up());
        // b adds 10 FD: link at 10 full duplex.
        advertise(&mut b, 0x0141, 0);
        settle(&mut a, &mut b);
        assert_eq!(a.link_mode(), mode(Speed::Mb10, true));
        assert_eq!(b.link_mode(), mode(Speed::Mb10, true));
    }

    #[test]
    fn cabled_forced_speeds_link_when_equal_and_against_autonegotiation() {
        let (mut a, mut b) = cabled();
        // igb_phy_force_speed_duplex: autonegotiation off, 100 full.
        let forced_100 = MII_CR_SPEED_100 | MII_CR_FULL_DUPLEX;
        a.write(PHY_CONTROL, forced_100);
        settle(&mut a, &mut b);
        assert_eq!(a.link_mode(), mode(Speed::Mb100, true));
        assert_eq!(
            b.link_mode(),
            mode(Speed::Mb100, false),
            "parallel detection"
        );
        b.write(PHY_CONTROL, MII_CR_FULL_DUPLEX); // forced 10 full
        settle(&mut a, &mut b);
        assert!(!a.link_up() && !b.link_up(), "10 against 100: no link");
        b.write(PHY_CONTROL, forced_100);
        settle(&mut a, &mut b);
        assert_eq!(a.link_mode(), mode(Speed::Mb100, true));
        assert_eq!(b.link_mode(), mode(Speed::Mb100, true));
    }

    #[test]
    fn a_partner_powered_down_or_negotiating_takes_the_link_down() {
        let (mut a, mut b) = cabled();
        b.write(PHY_CONTROL, 0x1140 | MII_CR_POWER_DOWN);
        a.partner_changed();
        assert!(!a.link_up(), "no signal from b");
        b.write(PHY_CONTROL, 0x1140);
        a.partner_changed();
        assert!(!a.link_up() && b.negotiating());
        settle(&mut a, &mut b);
        assert!(a.link_up() && b.link_up());
        // b restarts: a renegotiates too (it restarted when b went quiet).
        b.write(PHY_CONTROL, 0x1140 | MII_CR_RESTART_AUTO_NEG);
        a.partner_changed();
        assert!(a.negotiating() && !a.link_up());
        settle(&mut a, &mut b);
        assert!(a.link_up() && b.link_up());
    }
}
