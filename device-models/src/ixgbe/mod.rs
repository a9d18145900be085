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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::bar::{self, IoWindow, RegisterWindow};
use crate::fault::SharedFaults;
use crate::nvm::Nvm;
use crate::pci::ConfigSpace;
use crate::ptp::{BasePeriod, TimeSync};
use crate::regfile::RegFile;
use crate::stats::Totals;
use crate::sync::lock;
use crate::txframe::TxQueue;
use crate::{Bar, DeviceEnv, DmaMemory, DmaView, ErrorCounters, GuestRam, NicFunction};
use intr::Intr;

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

/// Control-path state of a function: what only register accesses and the
/// control socket touch, never a frame.
struct Ctl {
    config: ConfigSpace,
    nvm: Nvm,
    /// I2C bus to the SFP+ module.
    i2c: sfp::I2cBus,
    /// Link state last reported through EICR.LSC.
    link_reported: bool,
    /// Cable connected (control path can pull it).
    cable: bool,
}

/// An 82599 function.
///
/// Locking (see the crate documentation): registers, counters and guest error
/// counts are atomics; each transmit queue's frame assembly and each receive
/// queue's ring are behind their own lock; the interrupt logic (`Intr`), the
/// time stamp latches and the control state have short locks of their own.
/// The order, for paths that take several: `ctl` → transmit queue → receive
/// queue → (`intr`, `ts`).
pub struct Ixgbe {
    cfg: IxgbeConfig,
    env: DeviceEnv,
    bars: [Bar; 3],
    regs: RegFile<Hook>,
    /// Running totals of the statistics registers (control path view).
    totals: Totals,
    errors: ErrorCounters,
    mem: DmaMemory,
    /// BAR2 indirect register window (IOADDR/IODATA).
    io: IoWindow,
    ctl: Mutex<Ctl>,
    /// Link up (module present and cable connected), for the data path;
    /// updated under `ctl`.
    link: AtomicBool,
    /// Per transmit queue: the frame being gathered and its offload contexts.
    txq: Box<[Mutex<TxQueue>]>,
    /// Per receive queue: held while a frame is placed into the ring.
    rxq: Box<[Mutex<()>]>,
    /// Vector causes/masks and EITR moderation.
    intr: Mutex<Intr>,
    /// Faults injected through the control path.
    faults: SharedFaults,
    /// IEEE 1588 clock and time stamp latches (§7.9). The base period is the
    /// 10 Gb/s one (6.4 ns): the model always links at 10 Gb/s.
    ts: Mutex<TimeSync>,
}

impl std::fmt::Debug for Ixgbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ixgbe")
            .field("mac", &self.cfg.mac)
            .field("sfp", &self.cfg.sfp)
            .field("errors", &self.errors.snapshot())
            .finish()
    }
}

/// Largest frame the transmit path gathers (a 256 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 256 * 1024 + 256;

impl Ixgbe {
    /// Creates a function in its power-on state.
    pub fn new(cfg: IxgbeConfig, env: DeviceEnv) -> Self {
        let now = env.clock.now_ns();
        let regs = RegFile::new(TABLE, pci::REGS_SIZE as usize);
        let d = Ixgbe {
            cfg,
            env,
            bars: pci::bars(),
            totals: Totals::for_file(&regs),
            regs,
            errors: ErrorCounters::default(),
            mem: DmaMemory::default(),
            io: IoWindow::default(),
            ctl: Mutex::new(Ctl {
                config: pci::config_space(),
                nvm: eeprom::image(cfg.mac),
                i2c: sfp::I2cBus::new(cfg.sfp),
                link_reported: false,
                cable: true,
            }),
            link: AtomicBool::new(false),
            txq: (0..NUM_QUEUES)
                .map(|_| Mutex::new(TxQueue::with_max(MAX_TX_FRAME)))
                .collect(),
            rxq: (0..NUM_QUEUES).map(|_| Mutex::new(())).collect(),
            intr: Mutex::new(Intr::new(MSIX_VECTORS as usize)),
            faults: SharedFaults::default(),
            ts: Mutex::new(TimeSync::new(BasePeriod::I82599_10G, now)),
        };
        d.device_reset(&mut d.ctl());
        d
    }

    fn ctl(&self) -> MutexGuard<'_, Ctl> {
        lock(&self.ctl)
    }

    fn ts(&self) -> MutexGuard<'_, TimeSync> {
        lock(&self.ts)
    }

    /// Guest error counters.
    pub fn guest_errors(&self) -> GuestErrors {
        self.errors.snapshot()
    }

    /// The NVM image (for tests and the control path).
    pub fn nvm(&self) -> Nvm {
        self.ctl().nvm.clone()
    }

    /// The guest memory the function currently reaches (for tests).
    pub fn mem(&self) -> GuestRam {
        self.mem.view().read.clone()
    }

    /// Connects or disconnects the emulated link partner; the guest sees a link
    /// status change interrupt. Frames the transmit queues held while the
    /// link was down go out when it is back.
    pub fn set_cable(&self, up: bool) {
        {
            let mut c = self.ctl();
            c.cable = up;
            self.check_link_change(&mut c);
        }
        if up {
            (0..NUM_QUEUES).for_each(|q| self.tx_doorbell(q));
        }
    }

    /// Software / link reset (CTRL.RST, CTRL.LNK_RST, §4.2.1): registers to
    /// defaults, MAC auto-loaded from the NVM into RAL0/RAH0. Every queue is
    /// held meanwhile, so no frame sees a half-reset function.
    fn device_reset(&self, c: &mut Ctl) {
        let mut tx: Vec<_> = self.txq.iter().map(lock).collect();
        let _rx: Vec<_> = self.rxq.iter().map(lock).collect();
        if self.faults.on_reset() {
            // Injected NVM corruption: one base word changes, the checksum does not.
            let w = c.nvm.word(0x30);
            c.nvm.set_word(0x30, w ^ 0x5a5a);
            log::info!("ixgbe: NVM corrupted (fault injection)");
        }
        self.regs.reset_all();
        self.regs.set_bits(EEC, eeprom::EEC_SIZE << 11);
        let m = eeprom::mac(&c.nvm);
        self.regs
            .poke(RAL, u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs.poke(
            RAL + 4,
            u32::from(u16::from_le_bytes([m[4], m[5]])) | (1 << 31),
        );
        lock(&self.intr).reset();
        c.i2c.reset();
        for t in tx.iter_mut() {
            t.clear();
        }
        self.sync_link(c);
        c.link_reported = self.link_up();
        // "When the MAC resets, all the hardware bits for timesync are
        // reset" (`ixgbe_ptp_reset`).
        self.ts().reset(self.env.clock.now_ns());
    }

    /// Link is up while a module is plugged and the partner is connected;
    /// mirrored into [`Self::link`] for the data path.
    fn sync_link(&self, c: &Ctl) {
        self.link
            .store(c.i2c.present() && c.cable, Ordering::Release);
    }

    fn link_up(&self) -> bool {
        self.link.load(Ordering::Acquire)
    }

    /// A frame from the wire: dropped (consumed, counted as `rx_no_link`)
    /// without link or while the MAC loops back, else [`Self::rx_frame`].
    fn wire_rx(&self, frame: &[u8], sent: Option<u64>, wait: bool) -> bool {
        if !self.link_up() || self.loopback() {
            self.errors.rx_no_link();
            return true;
        }
        self.rx_frame(frame, sent, wait)
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
    fn check_link_change(&self, c: &mut Ctl) {
        self.sync_link(c);
        let up = self.link_up();
        if up != c.link_reported {
            c.link_reported = up;
            self.raise_other(intr::EICR_LSC);
        }
    }

    fn i2cctl_read(&self) -> u32 {
        let (scl, sda) = self.ctl().i2c.lines();
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
    fn register_read(&self, offset: u64) -> u32 {
        // Interrupt registers are read under the interrupt lock: a cause the
        // data path raises meanwhile is either returned or stays pending.
        let mut intr = match self.regs.decode(offset).map(|id| self.regs.def(id).hook) {
            Some(Some(Hook::Eicr | Hook::Eics | Hook::Eims | Hook::EimsEx | Hook::EicsEx)) => {
                Some(lock(&self.intr))
            }
            _ => None,
        };
        let Some((id, v)) = self.regs.read(offset) else {
            self.errors.unknown_reg();
            log::debug!("ixgbe: read of unknown register {offset:#x}");
            return 0;
        };
        match self.regs.def(id).hook {
            Some(Hook::Status) => self.status(),
            Some(Hook::Links) => self.links(),
            Some(Hook::Esdp) => {
                // SDP2 is the module-present input on X520 adapters
                // (`ixgbe_check_mac_link_generic`, crosstalk fix).
                if self.ctl().i2c.present() {
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
            Some(Hook::Ts(r)) => self.ts().read(r, self.env.clock.now_ns()),
            hook => match (hook, intr.as_deref_mut()) {
                (Some(Hook::Eicr), Some(m)) => self.eicr_read(m),
                (Some(Hook::Eics), Some(m)) => self.eicr_value(m),
                (Some(Hook::Eims), Some(m)) if self.msix_mode() => {
                    (v & 0xffff_0000) | (m.vec_mask as u32 & 0xffff)
                }
                (Some(Hook::EimsEx), Some(m)) => (m.vec_mask >> (32 * u32::from(id.elem))) as u32,
                (Some(Hook::EicsEx), Some(m)) => (m.vec_cause >> (32 * u32::from(id.elem))) as u32,
                _ => v,
            },
        }
    }

    /// Register write with side effects.
    fn register_write(&self, offset: u64, val: u32) {
        // A head or receive-queue enable changes under its queue's lock, so a
        // frame being placed never sees it half way; cause and mask registers
        // change under the interrupt lock.
        let hook = self
            .regs
            .decode(offset)
            .map(|id| (id, self.regs.def(id).hook));
        let _queue = match hook {
            Some((id, Some(Hook::RxHead | Hook::Rxdctl))) => {
                let qi = usize::from(id.elem) + if offset >= 0xd000 { 64 } else { 0 };
                Some(lock(&self.rxq[qi % NUM_QUEUES]))
            }
            _ => None,
        };
        let mut intr = match hook {
            Some((
                _,
                Some(
                    Hook::Eicr
                    | Hook::Eics
                    | Hook::Eims
                    | Hook::Eimc
                    | Hook::EicsEx
                    | Hook::EimsEx
                    | Hook::EimcEx
                    | Hook::Eitr
                    | Hook::EitrHi,
                ),
            )) => Some(lock(&self.intr)),
            _ => None,
        };
        let Some(w) = self.regs.write(offset, val) else {
            self.errors.unknown_reg();
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
                    let mut c = self.ctl();
                    self.device_reset(&mut c);
                    self.check_link_change(&mut c);
                }
            }
            Hook::Status | Hook::Links | Hook::Esdp => {}
            Hook::I2cctl => {
                self.ctl()
                    .i2c
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
                let v = self.ctl().nvm.eerd_write(w.raw);
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
                    self.check_link_change(&mut self.ctl());
                }
            }
            Hook::Eicr
            | Hook::Eics
            | Hook::Eitr
            | Hook::EitrHi
            | Hook::Eims
            | Hook::Eimc
            | Hook::EicsEx
            | Hook::EimsEx
            | Hook::EimcEx => {
                if let Some(m) = intr.as_deref_mut() {
                    self.intr_write(m, hook, &w);
                }
            }
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
                    let mut t = lock(&self.txq[qi % NUM_QUEUES]);
                    self.regs.poke(base + q::H, 0);
                    t.clear();
                } else if w.old & QUEUE_ENABLE == 0 {
                    self.tx_doorbell(qi);
                }
            }
            Hook::Fdirctrl => self.regs.set_bits(FDIRCTRL, FDIRCTRL_INIT_DONE),
            Hook::Fdircmd => self.regs.clear_bits(FDIRCMD, 0x3),
            Hook::Ts(r) => self.ts().write(r, w.raw, self.env.clock.now_ns()),
        }
    }

    /// Side effects of a write to a cause, mask or moderation register (the
    /// interrupt lock held).
    fn intr_write(&self, m: &mut Intr, hook: Hook, w: &crate::regfile::Written<Hook>) {
        let elem = u32::from(w.id.elem);
        match hook {
            Hook::Eicr => self.eicr_write(m, w.raw),
            Hook::Eics => self.eics_write(m, w.raw),
            // Without CNT_WDIS a write restarts the vector's interval counter.
            Hook::Eitr | Hook::EitrHi if w.raw & (1 << 31) == 0 => {
                let base = if hook == Hook::Eitr { 0 } else { 24 };
                m.moderation.restart(base + usize::from(w.id.elem));
            }
            Hook::Eims => self.eims_write(m, w.old, w.raw),
            Hook::Eimc => self.eimc_write(m, w.raw),
            Hook::EicsEx => self.raise_vectors(m, u64::from(w.raw) << (32 * elem)),
            Hook::EimsEx => {
                m.vec_mask |= u64::from(w.raw) << (32 * elem);
                self.deliver_vectors(m);
            }
            Hook::EimcEx => m.vec_mask &= !(u64::from(w.raw) << (32 * elem)),
            _ => {}
        }
    }
}

impl RegisterWindow for Ixgbe {
    const SIZE: u64 = pci::REGS_SIZE;

    fn reg_read(&self, offset: u64) -> u32 {
        self.register_read(offset)
    }

    fn reg_write(&self, offset: u64, value: u32) {
        self.register_write(offset, value)
    }

    fn reg_stored(&self, offset: u64) -> Option<u32> {
        self.regs.decode(offset)?;
        Some(self.regs.peek(offset as u32))
    }

    fn unknown_access(&self) {
        self.errors.unknown_reg();
    }
}

impl NicFunction for Ixgbe {
    fn model(&self) -> &'static str {
        "ixgbe"
    }

    fn config_read(&self, offset: u64, data: &mut [u8]) {
        self.ctl().config.read(offset, data);
    }

    fn config_write(&self, offset: u64, data: &[u8]) {
        let (flr, bme) = {
            let mut c = self.ctl();
            c.config.write(offset, data);
            let devctl = pci::PCIE_CAP + crate::pci::caps::PCIE_DEVCTL;
            (
                c.config.read_u16(devctl) & crate::pci::caps::PCIE_DEVCTL_FLR != 0,
                c.config.bus_master(),
            )
        };
        // Outside the control lock: turning bus mastering off waits for DMA
        // in flight, which may need that lock to finish.
        if bme != self.mem.bus_master() {
            self.mem.set_bus_master(bme);
        }
        if flr {
            log::info!("ixgbe: function level reset");
            self.reset();
        }
    }

    fn bar_read(&self, bar: usize, offset: u64, data: &mut [u8]) {
        match bar {
            0 => bar::mmio_read(self, offset, data),
            2 => self.io.read(self, offset, data),
            _ => data.fill(0),
        }
    }

    fn bar_write(&self, bar: usize, offset: u64, data: &[u8]) {
        match bar {
            0 => bar::mmio_write(self, offset, data),
            2 => self.io.write(self, offset, data),
            _ => log::debug!("ixgbe: write to BAR{bar} offset {offset:#x} ignored"),
        }
    }

    fn reset(&self) {
        {
            let mut c = self.ctl();
            c.config.reset();
            self.device_reset(&mut c);
            // The control totals (`ctl stats`) run for the life of the
            // process: a reset clears the guest's registers, not them.
            self.io.reset();
        }
        // PCI COMMAND is 0 after a function reset: no bus mastering.
        self.mem.set_bus_master(false);
    }

    fn set_dma(&self, view: DmaView) {
        self.mem.set_view(view);
    }

    fn receive(&self, frame: &[u8]) {
        self.wire_rx(frame, None, true);
    }

    fn receive_at(&self, frame: &[u8], sent_ns: u64) {
        self.wire_rx(frame, Some(sent_ns), true);
    }

    fn try_receive_at(&self, frame: &[u8], sent_ns: u64) -> bool {
        self.wire_rx(frame, Some(sent_ns), false)
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

    fn on_timer(&self, _now_ns: u64) {
        self.deliver_vectors(&mut lock(&self.intr));
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.totals.list(&self.regs)
    }

    fn set_link(&self, up: bool) {
        self.set_cable(up);
    }

    fn inject(&self, fault: crate::Fault) -> Result<(), crate::FaultError> {
        match &fault {
            crate::Fault::CounterPreset(name, v) => {
                if !self.totals.preset(&self.regs, name, *v) {
                    return Err(crate::FaultError::UnknownCounter(name.clone()));
                }
            }
            crate::Fault::ClockStep(ns) => {
                // A jump of SYSTIM the driver did not make: its timecounter
                // shows the step on the PHC.
                let now = self.env.clock.now_ns();
                self.ts().clock.step_ns(now, *ns);
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

    fn set_wire_delay_ns(&self, ns: u64) {
        self.ts().set_rx_delay_ns(ns);
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.errors.snapshot().list()
    }
}

/// Creates an ixgbe function as a shared [`NicFunction`].
pub fn new_function(cfg: IxgbeConfig, env: DeviceEnv) -> std::sync::Arc<dyn NicFunction> {
    std::sync::Arc::new(Ixgbe::new(cfg, env))
}

#[cfg(test)]
mod tests;
