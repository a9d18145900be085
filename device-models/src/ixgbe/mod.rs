//! Intel 82599 (ixgbe) 10 Gigabit Ethernet controller, one SFP+ PCI function
//! (device 8086:10FB, as on the X520 adapters).
//!
//! Behaviour follows the 82599 datasheet and what the Linux `ixgbe` driver
//! reads and writes during probe (`ixgbe_probe`, `ixgbe_reset_hw_82599`,
//! `ixgbe_identify_sfp_module_generic`, `ixgbe_setup_sfp_modules_82599`), open,
//! the watchdog and `ethtool -t`. The register file is [`regs::TABLE`]; this
//! module holds the side effects. Shared pieces (register file engine, NVM,
//! ring engine, descriptors, offloads, RSS, PCI config space) live in the crate
//! root; only what differs on the 82599 is here.

mod eeprom;
mod intr;
mod pci;
pub mod regs;
mod rx;
pub mod sfp;
mod stats;
mod tx;

use crate::bar::{self, IoWindow, RegisterWindow};
use crate::nvm::Nvm;
use crate::pci::ConfigSpace;
use crate::ptp::{BasePeriod, TimeSync};
use crate::regfile::RegFile;
use crate::{Bar, DeviceEnv, GuestRam, NicFunction};

pub use eeprom::NVM_WORDS;
pub use pci::{DEVICE_82599_SFP, MSIX_VECTORS, VENDOR_INTEL};
use regs::*;
pub use sfp::SfpKind;

/// CTRL bits (82599 §8.2.3.1.1).
pub mod ctrl {
    /// GIO master disable.
    pub const GIO_DIS: u32 = 1 << 2;
    /// Link reset (self-clearing).
    pub const LNK_RST: u32 = 1 << 3;
    /// Device reset (self-clearing).
    pub const RST: u32 = 1 << 26;
}

/// STATUS bits (82599 §8.2.3.1.2).
pub mod status {
    /// Link up.
    pub const LINK_UP: u32 = 1 << 7;
    /// GIO master enable status.
    pub const GIO: u32 = 1 << 19;
}

/// LINKS bits (82599 §8.2.3.22.19).
pub mod links {
    /// Link up.
    pub const UP: u32 = 1 << 30;
    /// Link speed field: 10 Gb/s.
    pub const SPEED_10G: u32 = 3 << 28;
    /// MAC link status.
    pub const LINK_STATUS: u32 = 1 << 7;
    /// 10G lanes aligned.
    pub const ALIGN_10G: u32 = 1 << 17;
    /// 10G lanes synchronised.
    pub const LANE_SYNC_10G: u32 = 0xf << 12;
}

/// HLREG0 bits (82599 §8.2.3.22.8).
pub mod hlreg0 {
    /// Jumbo frames: MAXFRS.MFS limits the frame size.
    pub const JUMBOEN: u32 = 1 << 2;
    /// Pad short transmit frames.
    pub const TXPADEN: u32 = 1 << 10;
    /// MAC loopback.
    pub const LPBK: u32 = 1 << 15;
}

/// FCTRL bits (82599 §8.2.3.7.1).
pub mod fctrl {
    /// Store bad packets.
    pub const SBP: u32 = 1 << 1;
    /// Multicast promiscuous.
    pub const MPE: u32 = 1 << 8;
    /// Unicast promiscuous.
    pub const UPE: u32 = 1 << 9;
    /// Broadcast accept.
    pub const BAM: u32 = 1 << 10;
}

const EEC_REQ: u32 = 1 << 6;
const EEC_GNT: u32 = 1 << 7;
const EEC_PRES: u32 = 1 << 8;
const EEC_ARD: u32 = 1 << 9;
const MSCA_MDI_COMMAND: u32 = 1 << 30;
const MSCA_OP_READ: u32 = 1 << 27;
const AUTOC_AN_RESTART: u32 = 1 << 12;
const ESDP_SDP2: u32 = 1 << 2;
const I2C_CLK_IN: u32 = 1 << 0;
const I2C_CLK_OUT: u32 = 1 << 1;
const I2C_DATA_IN: u32 = 1 << 2;
const I2C_DATA_OUT: u32 = 1 << 3;
const FDIRCTRL_INIT_DONE: u32 = 1 << 3;
const DMATXCTL_TE: u32 = 1 << 0;

/// Device configuration chosen by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IxgbeConfig {
    /// Permanent MAC address (stored in the NVM).
    pub mac: [u8; 6],
    /// Module in the SFP+ cage.
    pub sfp: SfpKind,
}

pub use crate::GuestErrors;

/// An 82599 function.
pub struct Ixgbe {
    cfg: IxgbeConfig,
    config: ConfigSpace,
    regs: RegFile<Hook>,
    nvm: Nvm,
    env: DeviceEnv,
    mem: GuestRam,
    bars: [Bar; 3],
    txq: Vec<crate::txframe::TxQueue>,
    /// BAR2 indirect register window (IOADDR/IODATA).
    io: IoWindow,
    /// I2C bus to the SFP+ module.
    i2c: sfp::I2cBus,
    /// MSI-X vector causes (EICR_EX) and masks (EIMS_EX), vectors 0..63.
    vec_cause: u64,
    /// EITR interrupt moderation of the MSI-X vectors.
    moderation: crate::moderation::Moderation,
    vec_mask: u64,
    errors: GuestErrors,
    /// Faults injected through the control path.
    faults: crate::fault::Faults,
    /// Running totals of the statistics registers (control path view).
    totals: crate::stats::Totals,
    /// Link state last reported through EICR.LSC.
    link_reported: bool,
    /// Cable connected (control path can pull it).
    cable: bool,
    /// IEEE 1588 clock and time stamp latches (§7.9). The base period is the
    /// 10 Gb/s one (6.4 ns): the model always links at 10 Gb/s.
    ts: TimeSync,
}

impl std::fmt::Debug for Ixgbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ixgbe")
            .field("mac", &self.cfg.mac)
            .field("sfp", &self.cfg.sfp)
            .field("errors", &self.errors)
            .finish()
    }
}

/// Largest frame the transmit path gathers (a 256 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 256 * 1024 + 256;

impl Ixgbe {
    /// Creates a function in its power-on state.
    pub fn new(cfg: IxgbeConfig, env: DeviceEnv) -> Self {
        let now = env.clock.now_ns();
        let mut d = Ixgbe {
            cfg,
            config: pci::config_space(),
            regs: RegFile::new(TABLE, pci::REGS_SIZE as usize),
            nvm: eeprom::image(cfg.mac),
            env,
            mem: GuestRam::new(),
            bars: pci::bars(),
            txq: (0..NUM_QUEUES)
                .map(|_| crate::txframe::TxQueue::with_max(MAX_TX_FRAME))
                .collect(),
            io: IoWindow::default(),
            i2c: sfp::I2cBus::new(cfg.sfp),
            vec_cause: 0,
            moderation: crate::moderation::Moderation::new(MSIX_VECTORS as usize),
            vec_mask: 0,
            errors: GuestErrors::default(),
            totals: crate::stats::Totals::default(),
            faults: crate::fault::Faults::default(),
            link_reported: false,
            cable: true,
            ts: TimeSync::new(BasePeriod::I82599_10G, now),
        };
        d.totals = crate::stats::Totals::for_file(&d.regs);
        d.device_reset();
        d
    }

    /// Guest error counters.
    pub fn guest_errors(&self) -> GuestErrors {
        self.errors
    }

    /// The NVM image (for tests and the control path).
    pub fn nvm(&self) -> &Nvm {
        &self.nvm
    }

    /// Connects or disconnects the emulated link partner; the guest sees a link
    /// status change interrupt.
    pub fn set_cable(&mut self, up: bool) {
        self.cable = up;
        self.check_link_change();
    }

    /// Software / link reset (CTRL.RST, CTRL.LNK_RST, §4.2.1): registers to
    /// defaults, MAC auto-loaded from the NVM into RAL0/RAH0.
    fn device_reset(&mut self) {
        if self.faults.on_reset() {
            // Injected NVM corruption: one base word changes, the checksum does not.
            let w = self.nvm.word(0x30);
            self.nvm.set_word(0x30, w ^ 0x5a5a);
            log::info!("ixgbe: NVM corrupted (fault injection)");
        }
        self.regs.reset_all();
        self.regs.set_bits(EEC, eeprom::EEC_SIZE << 11);
        let m = eeprom::mac(&self.nvm);
        self.regs
            .poke(RAL, u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs.poke(
            RAL + 4,
            u32::from(u16::from_le_bytes([m[4], m[5]])) | (1 << 31),
        );
        self.vec_cause = 0;
        self.vec_mask = 0;
        self.moderation.reset();
        self.i2c.reset();
        for t in &mut self.txq {
            t.clear();
        }
        self.link_reported = self.link_up();
        // "When the MAC resets, all the hardware bits for timesync are
        // reset" (`ixgbe_ptp_reset`).
        self.ts.reset(self.env.clock.now_ns());
    }

    /// Link is up while a module is plugged and the partner is connected.
    fn link_up(&self) -> bool {
        self.i2c.present() && self.cable
    }

    fn loopback(&self) -> bool {
        self.regs.peek(HLREG0) & hlreg0::LPBK != 0
    }

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

    /// Raises EICR.LSC when the link state differs from what was last reported.
    fn check_link_change(&mut self) {
        let up = self.link_up();
        if up != self.link_reported {
            self.link_reported = up;
            self.raise_other(intr::EICR_LSC);
        }
    }

    fn i2cctl_read(&self) -> u32 {
        let (scl, sda) = self.i2c.lines();
        let mut v = self.regs.peek(I2CCTL) & (I2C_CLK_OUT | I2C_DATA_OUT);
        if scl {
            v |= I2C_CLK_IN;
        }
        if sda {
            v |= I2C_DATA_IN;
        }
        v
    }

    /// Register read with side effects.
    fn register_read(&mut self, offset: u64) -> u32 {
        let Some((id, v)) = self.regs.read(offset) else {
            self.errors.unknown_regs += 1;
            log::debug!("ixgbe: read of unknown register {offset:#x}");
            return 0;
        };
        match self.regs.def(id).hook {
            Some(Hook::Status) => self.status(),
            Some(Hook::Links) => self.links(),
            Some(Hook::Esdp) => {
                // SDP2 is the module-present input on X520 adapters
                // (`ixgbe_check_mac_link_generic`, crosstalk fix).
                if self.i2c.present() {
                    v | ESDP_SDP2
                } else {
                    v & !ESDP_SDP2
                }
            }
            Some(Hook::I2cctl) => self.i2cctl_read(),
            Some(Hook::Swsm) => {
                // Reading SWSM sets SMBI (the driver owns it if it read 0).
                self.regs.set_bits(SWSM, 1);
                v
            }
            Some(Hook::Eicr) => self.eicr_read(),
            Some(Hook::Eics) => self.eicr_value(),
            Some(Hook::Eims) if self.msix_mode() => {
                (v & 0xffff_0000) | (self.vec_mask as u32 & 0xffff)
            }
            Some(Hook::EimsEx) => (self.vec_mask >> (32 * u32::from(id.elem))) as u32,
            Some(Hook::EicsEx) => (self.vec_cause >> (32 * u32::from(id.elem))) as u32,
            Some(Hook::Ts(r)) => self.ts.read(r, self.env.clock.now_ns()),
            _ => v,
        }
    }

    /// Register write with side effects.
    fn register_write(&mut self, offset: u64, val: u32) {
        let Some(w) = self.regs.write(offset, val) else {
            self.errors.unknown_regs += 1;
            log::debug!("ixgbe: write of unknown register {offset:#x} = {val:#x} ignored");
            return;
        };
        let Some(hook) = w.hook else { return };
        let elem = u32::from(w.id.elem);
        // Array rows that cover queues 64..127 start at 0xD000.
        let rx_qi = |off: u64| -> u32 {
            if off >= 0xd000 {
                64 + elem
            } else {
                elem
            }
        };
        match hook {
            Hook::Ctrl => {
                if w.new & (ctrl::RST | ctrl::LNK_RST) != 0 {
                    log::debug!("ixgbe: reset ({:#x})", w.new);
                    self.device_reset();
                    self.check_link_change();
                }
            }
            Hook::Status | Hook::Links | Hook::Esdp => {}
            Hook::I2cctl => {
                self.i2c
                    .drive(w.new & I2C_CLK_OUT != 0, w.new & I2C_DATA_OUT != 0);
            }
            Hook::Eec => {
                let mut e = (w.new & !EEC_GNT) | EEC_PRES | EEC_ARD;
                if e & EEC_REQ != 0 {
                    e |= EEC_GNT;
                }
                self.regs.poke(EEC, e);
            }
            Hook::Eerd => {
                let v = self.nvm.eerd_write(w.raw);
                self.regs.poke(EERD, v);
            }
            Hook::Swsm => {}
            Hook::Msca => {
                // No PHY on the MDIO bus of an SFP+ port: commands complete at
                // once and reads return all ones (`ixgbe_identify_phy_generic`).
                self.regs.poke(MSCA, w.new & !MSCA_MDI_COMMAND);
                if w.new & MSCA_MDI_COMMAND != 0 && w.new & MSCA_OP_READ != 0 {
                    let d = self.regs.peek(MSRWD) & 0xffff;
                    self.regs.poke(MSRWD, 0xffff_0000 | d);
                }
            }
            Hook::Autoc => {
                if w.new & AUTOC_AN_RESTART != 0 {
                    self.regs.clear_bits(AUTOC, AUTOC_AN_RESTART);
                    self.check_link_change();
                }
            }
            Hook::Eicr => self.eicr_write(w.raw),
            Hook::Eics => self.eics_write(w.raw),
            Hook::Eitr | Hook::EitrHi => {
                // Without CNT_WDIS a write restarts the vector's interval counter.
                if w.raw & (1 << 31) == 0 {
                    let base = if hook == Hook::Eitr { 0 } else { 24 };
                    self.moderation.restart(base + usize::from(w.id.elem));
                }
            }
            Hook::Eims => self.eims_write(w.old, w.raw),
            Hook::Eimc => self.eimc_write(w.raw),
            Hook::EicsEx => self.raise_vectors(u64::from(w.raw) << (32 * elem)),
            Hook::EimsEx => {
                self.vec_mask |= u64::from(w.raw) << (32 * elem);
                self.deliver_vectors();
            }
            Hook::EimcEx => self.vec_mask &= !(u64::from(w.raw) << (32 * elem)),
            Hook::Rxctrl => {}
            Hook::Dmatxctl => {
                if w.new & DMATXCTL_TE != 0 && w.old & DMATXCTL_TE == 0 {
                    for qi in 0..NUM_QUEUES {
                        if self.regs.peek(txq_base(qi as u32) + q::DCTL) & QUEUE_ENABLE != 0 {
                            self.tx_doorbell(qi);
                        }
                    }
                }
            }
            Hook::Tdt => self.tx_doorbell(elem as usize),
            Hook::Rdt => {}
            Hook::RxHead => {
                let base = rxq_base(rx_qi(offset));
                if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE != 0 {
                    self.regs.poke(base + q::H, w.old);
                }
            }
            Hook::TxHead => {
                let base = txq_base(elem);
                if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE != 0 {
                    self.regs.poke(base + q::H, w.old);
                }
            }
            Hook::Rxdctl => {
                let base = rxq_base(rx_qi(offset));
                self.regs.clear_bits(base + q::DCTL, QUEUE_SWFLSH);
                if w.new & QUEUE_ENABLE == 0 {
                    // A disabled queue forgets its head.
                    self.regs.poke(base + q::H, 0);
                }
            }
            Hook::Txdctl => {
                let qi = elem as usize;
                let base = txq_base(elem);
                self.regs.clear_bits(base + q::DCTL, QUEUE_SWFLSH);
                if w.new & QUEUE_ENABLE == 0 {
                    self.regs.poke(base + q::H, 0);
                    if let Some(t) = self.txq.get_mut(qi) {
                        t.clear();
                    }
                } else if w.old & QUEUE_ENABLE == 0 {
                    self.tx_doorbell(qi);
                }
            }
            Hook::Fdirctrl => self.regs.set_bits(FDIRCTRL, FDIRCTRL_INIT_DONE),
            Hook::Fdircmd => self.regs.clear_bits(FDIRCMD, 0x3),
            Hook::Ts(r) => self.ts.write(r, w.raw, self.env.clock.now_ns()),
        }
    }
}

impl RegisterWindow for Ixgbe {
    const SIZE: u64 = pci::REGS_SIZE;

    fn reg_read(&mut self, offset: u64) -> u32 {
        self.register_read(offset)
    }

    fn reg_write(&mut self, offset: u64, value: u32) {
        self.register_write(offset, value)
    }

    fn reg_stored(&self, offset: u64) -> Option<u32> {
        self.regs.decode(offset)?;
        Some(self.regs.peek(offset as u32))
    }

    fn unknown_access(&mut self) {
        self.errors.unknown_regs += 1;
    }
}

impl NicFunction for Ixgbe {
    fn model(&self) -> &'static str {
        "ixgbe"
    }

    fn config_read(&mut self, offset: u64, data: &mut [u8]) {
        self.config.read(offset, data);
    }

    fn config_write(&mut self, offset: u64, data: &[u8]) {
        self.config.write(offset, data);
        let devctl = pci::PCIE_CAP + crate::pci::caps::PCIE_DEVCTL;
        if self.config.read_u16(devctl) & crate::pci::caps::PCIE_DEVCTL_FLR != 0 {
            log::info!("ixgbe: function level reset");
            self.reset();
        }
    }

    fn bar_read(&mut self, bar: usize, offset: u64, data: &mut [u8]) {
        match bar {
            0 => bar::mmio_read(self, offset, data),
            2 => {
                let io = self.io;
                io.read(self, offset, data);
            }
            _ => data.fill(0),
        }
    }

    fn bar_write(&mut self, bar: usize, offset: u64, data: &[u8]) {
        match bar {
            0 => bar::mmio_write(self, offset, data),
            2 => {
                let mut io = self.io;
                io.write(self, offset, data);
                self.io = io;
            }
            _ => log::debug!("ixgbe: write to BAR{bar} offset {offset:#x} ignored"),
        }
    }

    fn reset(&mut self) {
        self.config.reset();
        self.device_reset();
        self.totals.clear();
        self.io = IoWindow::default();
    }

    fn set_memory(&mut self, mem: GuestRam) {
        self.mem = mem;
    }

    fn receive(&mut self, frame: &[u8]) {
        if self.link_up() && !self.loopback() {
            self.rx_frame(frame);
        }
    }

    fn receive_at(&mut self, frame: &[u8], sent_ns: u64) {
        self.ts.set_arrival(Some(sent_ns));
        self.receive(frame);
        self.ts.set_arrival(None);
    }

    fn bars(&self) -> &[Bar] {
        &self.bars
    }

    fn msix_vectors(&self) -> u16 {
        MSIX_VECTORS
    }

    fn reg_name(&self, bar: usize, offset: u64) -> String {
        match bar {
            0 => self.regs.name_at(offset & !3),
            2 => match offset {
                0 => "IOADDR".into(),
                4 => format!("IODATA({})", self.regs.name_at(self.io.target::<Self>())),
                _ => format!("IO?{offset:#x}"),
            },
            4 => "MSIX".into(),
            b => format!("BAR{b}?{offset:#x}"),
        }
    }

    fn on_timer(&mut self, _now_ns: u64) {
        self.deliver_vectors();
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.totals.list(&self.regs)
    }

    fn set_link(&mut self, up: bool) {
        self.set_cable(up);
    }

    fn inject(&mut self, fault: crate::Fault) -> Result<(), crate::FaultError> {
        match &fault {
            crate::Fault::CounterPreset(name, v) => {
                if !self.totals.preset(&mut self.regs, name, *v) {
                    return Err(crate::FaultError::UnknownCounter(name.clone()));
                }
            }
            crate::Fault::ClockStep(ns) => {
                // A jump of SYSTIM the driver did not make: its timecounter
                // shows the step on the PHC.
                let now = self.env.clock.now_ns();
                self.ts.clock.step_ns(now, *ns);
            }
            f => self.faults.arm(f, NUM_QUEUES as u16)?,
        }
        log::info!("ixgbe: fault injected: {fault:?}");
        Ok(())
    }

    fn driver_view(&self) -> crate::DriverView {
        let enabled = |base: fn(u32) -> u32| {
            (0..NUM_QUEUES as u32)
                .filter(|q| self.regs.peek(base(*q) + q::DCTL) & QUEUE_ENABLE != 0)
                .map(|q| q as u16)
                .collect()
        };
        crate::DriverView {
            link_up: self.link_up(),
            rx_enabled: self.regs.peek(RXCTRL) & 1 != 0,
            tx_enabled: self.regs.peek(DMATXCTL) & 1 != 0,
            rx_queues: enabled(rxq_base),
            tx_queues: enabled(txq_base),
            interrupts: format!(
                "GPIE={:#x} EIMS={:#x} EIMS_EX0={:#x} EIMS_EX1={:#x}",
                self.regs.peek(GPIE),
                self.regs.peek(EIMS),
                self.regs.peek(EIMS_EX),
                self.regs.peek(EIMS_EX + 4)
            ),
            driver_loaded: self.regs.peek(CTRL_EXT) & (1 << 28) != 0,
        }
    }

    fn set_wire_delay_ns(&mut self, ns: u64) {
        self.ts.set_rx_delay_ns(ns);
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.errors.list()
    }
}

/// Creates an ixgbe function as a boxed [`NicFunction`].
pub fn new_function(cfg: IxgbeConfig, env: DeviceEnv) -> Box<dyn NicFunction> {
    Box::new(Ixgbe::new(cfg, env))
}

#[cfg(test)]
mod tests;
