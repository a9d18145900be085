//! Intel 82576 (igb) Gigabit Ethernet controller, one PCI function.
//!
//! Behaviour follows the 82576 datasheet and what the Linux `igb` driver reads
//! and writes during probe, open, reset, the watchdog and `ethtool -t`. The
//! register file is [`regs::TABLE`]; this module holds the side effects.

mod eeprom;
mod intr;
mod pci;
mod phy;
pub mod regs;
mod rx;
mod stats;
mod tx;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::bar::{self, IoWindow, RegisterWindow};
use crate::fault::SharedFaults;
use crate::moderation::Moderation;
use crate::nvm::Nvm;
use crate::pci::ConfigSpace;
use crate::phy::Phy;
use crate::ptp::{BasePeriod, TimeSync};
use crate::regfile::RegFile;
use crate::stats::Totals;
use crate::sync::lock;
use crate::txframe::TxQueue;
use crate::{Bar, DeviceEnv, DmaMemory, DmaView, ErrorCounters, GuestRam, NicFunction};

pub use eeprom::NVM_WORDS;
pub use pci::{DEVICE_82576, MSIX_VECTORS, VENDOR_INTEL};
/// The 82576's PHY model, for the shared PHY's unit tests.
#[cfg(test)]
pub(crate) use phy::IGP03 as phy_model_for_tests;
use regs::*;

/// CTRL bits (82576 §8.2.1).
pub mod ctrl {
    /// Full duplex.
    pub const FD: u32 = 1 << 0;
    /// GIO master disable.
    pub const GIO_MASTER_DISABLE: u32 = 1 << 2;
    /// Set link up.
    pub const SLU: u32 = 1 << 6;
    /// Device reset (self-clearing).
    pub const RST: u32 = 1 << 26;
    /// VLAN mode enable.
    pub const VME: u32 = 1 << 30;
    /// PHY reset.
    pub const PHY_RST: u32 = 1 << 31;
}

/// STATUS bits (82576 §8.2.2).
pub mod status {
    /// Full duplex.
    pub const FD: u32 = 1 << 0;
    /// Link up.
    pub const LU: u32 = 1 << 1;
    /// Speed 1000 Mb/s.
    pub const SPEED_1000: u32 = 1 << 7;
    /// PHY reset asserted.
    pub const PHYRA: u32 = 1 << 10;
    /// GIO master enable status.
    pub const GIO_MASTER_ENABLE: u32 = 1 << 19;
    /// PF reset done.
    pub const PF_RST_DONE: u32 = 1 << 21;
}

/// EECD bits (82576 §8.2.3).
mod eecd {
    pub const REQ: u32 = 1 << 6;
    pub const GNT: u32 = 1 << 7;
    pub const PRES: u32 = 1 << 8;
    pub const AUTO_RD: u32 = 1 << 9;
}

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

/// RCTL bits (82576 §8.10.1).
pub mod rctl {
    /// Receiver enable.
    pub const EN: u32 = 1 << 1;
    /// Store bad packets.
    pub const SBP: u32 = 1 << 2;
    /// Unicast promiscuous.
    pub const UPE: u32 = 1 << 3;
    /// Multicast promiscuous.
    pub const MPE: u32 = 1 << 4;
    /// Long packet enable.
    pub const LPE: u32 = 1 << 5;
    /// Loopback mode mask.
    pub const LBM_MASK: u32 = 3 << 6;
    /// MAC loopback.
    pub const LBM_MAC: u32 = 1 << 6;
    /// Multicast offset shift.
    pub const MO_SHIFT: u32 = 12;
    /// Broadcast accept.
    pub const BAM: u32 = 1 << 15;
    /// VLAN filter enable.
    pub const VFE: u32 = 1 << 18;
    /// Strip CRC.
    pub const SECRC: u32 = 1 << 26;
}

/// TCTL bits (82576 §8.12.1).
pub mod tctl {
    /// Transmitter enable.
    pub const EN: u32 = 1 << 1;
    /// Pad short packets.
    pub const PSP: u32 = 1 << 3;
}

/// Device configuration chosen by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IgbConfig {
    /// Permanent MAC address (stored in the NVM).
    pub mac: [u8; 6],
}

pub use crate::GuestErrors;

/// Control-path state of a function: what only register accesses and the
/// control socket touch, never a frame.
struct Ctl {
    config: ConfigSpace,
    nvm: Nvm,
    phy: Phy,
    /// Link state last reported through ICR.LSC.
    link_reported: bool,
    /// When the PHY's autonegotiation under way completes (device clock).
    autoneg_done_ns: Option<u64>,
}

/// [`Igb::link`] bit: the PHY has link.
const LINK_UP: u8 = 1;
/// [`Igb::link`] bit: the PHY loops transmitted frames back.
const LINK_PHY_LOOPBACK: u8 = 2;

/// An 82576 function.
///
/// Locking (see the crate documentation): registers, counters and guest error
/// counts are atomics; each transmit queue's frame assembly and each receive
/// queue's ring are behind their own lock; the interrupt logic, the time stamp
/// latches and the control state have short locks of their own. The order, for
/// paths that take several: `ctl` → transmit queue → receive queue →
/// (`intr`, `ts`).
pub struct Igb {
    cfg: IgbConfig,
    env: DeviceEnv,
    bars: [Bar; 4],
    regs: RegFile<Hook>,
    /// Running totals of the statistics registers (control path view).
    totals: Totals,
    errors: ErrorCounters,
    mem: DmaMemory,
    /// BAR2 indirect register window (IOADDR/IODATA).
    io: IoWindow,
    ctl: Mutex<Ctl>,
    /// The PHY's link and loopback state for the data path ([`LINK_UP`],
    /// [`LINK_PHY_LOOPBACK`]), updated under `ctl` whenever the PHY changes.
    link: AtomicU8,
    /// Per transmit queue: the frame being gathered and its offload contexts.
    txq: Box<[Mutex<TxQueue>]>,
    /// Per receive queue: held while a frame is placed into the ring.
    rxq: Box<[Mutex<()>]>,
    /// Interrupt cause/mask logic and EITR moderation of the MSI-X vectors.
    intr: Mutex<Moderation>,
    /// Faults injected through the control path.
    faults: SharedFaults,
    /// IEEE 1588 clock and time stamp latches (§7.9).
    ts: Mutex<TimeSync>,
}

impl std::fmt::Debug for Igb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Igb")
            .field("mac", &self.cfg.mac)
            .field("errors", &self.errors.snapshot())
            .finish()
    }
}

/// Largest frame the transmit path gathers (a 64 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 64 * 1024 + 256;

impl Igb {
    /// Creates a function in its power-on state.
    pub fn new(cfg: IgbConfig, env: DeviceEnv) -> Self {
        let now = env.clock.now_ns();
        let regs = RegFile::new(TABLE, pci::BAR0_SIZE as usize);
        let d = Igb {
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
                phy: Phy::new(phy::IGP03),
                link_reported: false,
                autoneg_done_ns: None,
            }),
            link: AtomicU8::new(0),
            txq: (0..NUM_QUEUES)
                .map(|_| Mutex::new(TxQueue::with_max(MAX_TX_FRAME)))
                .collect(),
            rxq: (0..NUM_QUEUES).map(|_| Mutex::new(())).collect(),
            intr: Mutex::new(Moderation::new(25)),
            faults: SharedFaults::default(),
            ts: Mutex::new(TimeSync::new(BasePeriod::I82576, now)),
        };
        d.settled_reset(&mut d.ctl());
        d
    }

    /// Reset with the link already negotiated: at power-up the cable has been
    /// in long ago, and a function-level reset (a new vfio-user client) leaves
    /// the port's PHY alone (82576 §4.3: FLR resets the function's registers,
    /// not the link). The driver's own PHY and CTRL.RST writes do restart
    /// autonegotiation.
    fn settled_reset(&self, c: &mut Ctl) {
        self.device_reset(c);
        c.phy.complete_autoneg();
        c.phy.take_autoneg_started();
        c.autoneg_done_ns = None;
        self.sync_link(c);
        c.link_reported = c.phy.link_up();
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

    /// Connects or disconnects the emulated cable; the guest sees a link status
    /// change interrupt. Frames the transmit queues held while the link was
    /// down go out when it is back.
    pub fn set_cable(&self, up: bool) {
        {
            let mut c = self.ctl();
            c.phy.set_cable(up);
            self.check_link_change(&mut c);
        }
        if up {
            (0..NUM_QUEUES).for_each(|q| self.tx_doorbell(q));
        }
    }

    /// Software/device reset (CTRL.RST, §4.3.1): registers to defaults except
    /// the packet buffer sizes, MAC reloaded from the NVM, PHY reset. Every
    /// queue is held meanwhile, so no frame sees a half-reset function.
    fn device_reset(&self, c: &mut Ctl) {
        let mut tx: Vec<_> = self.txq.iter().map(lock).collect();
        let _rx: Vec<_> = self.rxq.iter().map(lock).collect();
        if self.faults.on_reset() {
            // Injected NVM corruption: one word changes, the checksum does not.
            let w = c.nvm.word(0x30);
            c.nvm.set_word(0x30, w ^ 0x5a5a);
            log::info!("igb: NVM corrupted (fault injection)");
        }
        self.regs
            .reset_except(|d| matches!(d.name, "RXPBS" | "TXPBS"));
        let eecd = self.regs.peek(EECD) | (eeprom::EECD_SIZE_EX << 11);
        self.regs.poke(EECD, eecd);
        // RAL0/RAH0 auto-load from NVM words 0..2 with Address Valid.
        let m = nvm_mac(&c.nvm);
        self.regs
            .poke(RAL, u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs
            .poke(RAH, u32::from(u16::from_le_bytes([m[4], m[5]])) | (1 << 31));
        // Queue 0 is enabled after reset on the 82576.
        self.regs.set_bits(RXQ_BASE + q::DCTL, QUEUE_ENABLE);
        self.regs.set_bits(TXQ_BASE + q::DCTL, QUEUE_ENABLE);
        c.phy.reset();
        for t in tx.iter_mut() {
            t.clear();
        }
        self.sync_link(c);
        c.link_reported = c.phy.link_up();
        lock(&self.intr).reset();
        self.ts().reset(self.env.clock.now_ns());
    }

    /// Schedules the end of an autonegotiation the PHY started (a restart
    /// moves it): [`crate::phy::AUTONEG_NS`] from now, on the device timer.
    fn track_autoneg(&self, c: &mut Ctl) {
        if c.phy.take_autoneg_started() {
            let at = self.env.clock.now_ns() + crate::phy::AUTONEG_NS;
            c.autoneg_done_ns = Some(at);
            self.env.timer.arm(at);
        } else if !c.phy.negotiating() {
            c.autoneg_done_ns = None;
        }
    }

    /// Timer: completes a due autonegotiation (link up, ICR.LSC), or re-arms
    /// for it (the transport keeps one deadline, the earliest).
    /// Frames the transmit queues held while the link was down go out once
    /// it is up.
    fn autoneg_timer(&self, now_ns: u64) {
        let came_up = {
            let mut c = self.ctl();
            match c.autoneg_done_ns {
                Some(at) if now_ns >= at => {
                    c.autoneg_done_ns = None;
                    c.phy.complete_autoneg();
                    self.check_link_change(&mut c);
                    self.link_up()
                }
                Some(at) => {
                    self.env.timer.arm(at);
                    false
                }
                None => false,
            }
        };
        if came_up {
            (0..NUM_QUEUES).for_each(|q| self.tx_doorbell(q));
        }
    }

    /// Mirrors the PHY's state into [`Self::link`] for the data path.
    fn sync_link(&self, c: &Ctl) {
        let mut v = 0;
        if c.phy.link_up() {
            v |= LINK_UP;
        }
        if c.phy.loopback() {
            v |= LINK_PHY_LOOPBACK;
        }
        self.link.store(v, Ordering::Release);
    }

    /// The PHY loops transmitted frames back.
    fn phy_loopback(&self) -> bool {
        self.link.load(Ordering::Acquire) & LINK_PHY_LOOPBACK != 0
    }

    fn link_up(&self) -> bool {
        self.link.load(Ordering::Acquire) != 0
    }

    fn status(&self) -> u32 {
        let c = self.regs.peek(CTRL);
        let mut s = status::FD | status::SPEED_1000 | status::PF_RST_DONE;
        if self.link_up() {
            s |= status::LU;
        }
        if c & ctrl::GIO_MASTER_DISABLE == 0 {
            s |= status::GIO_MASTER_ENABLE;
        }
        s
    }

    /// Raises ICR.LSC when the link state differs from what was last reported.
    fn check_link_change(&self, c: &mut Ctl) {
        self.track_autoneg(c);
        self.sync_link(c);
        let up = self.link_up();
        if up != c.link_reported {
            c.link_reported = up;
            self.raise_icr(intr::ICR_LSC);
        }
    }

    fn mdic_write(&self, c: &mut Ctl, v: u32) {
        let reg = ((v >> mdic::REG_SHIFT) & 0x1f) as u8;
        let phy = (v >> mdic::PHY_SHIFT) & 0x1f;
        let mut out = v & !(mdic::READY | mdic::ERROR);
        if phy != mdic::PHY_ADDR {
            out |= mdic::ERROR;
        } else if v & mdic::OP_READ != 0 && v & mdic::OP_WRITE == 0 {
            out = (out & !mdic::DATA) | u32::from(c.phy.read(reg));
        } else if v & mdic::OP_WRITE != 0 && v & mdic::OP_READ == 0 {
            c.phy.write(reg, v as u16);
        } else {
            out |= mdic::ERROR;
        }
        self.regs.poke(MDIC, out | mdic::READY);
        self.check_link_change(c);
    }

    /// Register read with side effects.
    fn register_read(&self, offset: u64) -> u32 {
        // ICR's read side effects run under the interrupt lock, so a cause the
        // data path raises meanwhile is either returned or stays pending.
        let mut intr = self
            .regs
            .decode(offset)
            .filter(|id| self.regs.def(*id).hook == Some(Hook::Icr))
            .map(|_| lock(&self.intr));
        let Some((id, v)) = self.regs.read(offset) else {
            self.errors.unknown_reg();
            log::debug!("igb: read of unknown register {offset:#x}");
            return 0;
        };
        match self.regs.def(id).hook {
            Some(Hook::Status) => self.status(),
            Some(Hook::Icr) => match intr.as_deref_mut() {
                Some(m) => self.icr_read(m, v),
                None => v,
            },
            Some(Hook::Swsm) => {
                // Reading SWSM sets SMBI (read-to-acquire semaphore, §8.19.x).
                self.regs.set_bits(SWSM, 1);
                v
            }
            Some(Hook::Eitr) => v & 0x7fff_ffff,
            Some(Hook::Ts(r)) => self.ts().read(r, self.env.clock.now_ns()),
            _ => v,
        }
    }

    /// Register write with side effects.
    fn register_write(&self, offset: u64, val: u32) {
        // A head or receive-queue enable changes under its queue's lock, so a
        // frame being placed never sees it half way; cause and mask registers
        // change under the interrupt lock, so the data path's causes and
        // auto-masking interleave with them one whole update at a time.
        let hook = self
            .regs
            .decode(offset)
            .map(|id| (id, self.regs.def(id).hook));
        let _queue = match hook {
            Some((id, Some(Hook::RxHead | Hook::Rxdctl))) => {
                Some(lock(&self.rxq[usize::from(id.elem) % NUM_QUEUES]))
            }
            _ => None,
        };
        let mut intr = match hook {
            Some((
                _,
                Some(
                    Hook::Icr
                    | Hook::Ics
                    | Hook::Ims
                    | Hook::Imc
                    | Hook::Eicr
                    | Hook::Eics
                    | Hook::Eims
                    | Hook::Eimc,
                ),
            )) => Some(lock(&self.intr)),
            _ => None,
        };
        let Some(w) = self.regs.write(offset, val) else {
            self.errors.unknown_reg();
            log::debug!("igb: write of unknown register {offset:#x} = {val:#x} ignored");
            return;
        };
        let Some(hook) = w.hook else { return };
        let canon = |base: u32| base + u32::from(w.id.elem) * QUEUE_STRIDE;
        match hook {
            Hook::Ctrl => {
                let mut c = self.ctl();
                if w.new & ctrl::RST != 0 {
                    self.device_reset(&mut c);
                    self.check_link_change(&mut c);
                    return;
                }
                if w.new & ctrl::PHY_RST != 0 {
                    c.phy.reset();
                    self.regs.clear_bits(CTRL, ctrl::PHY_RST);
                }
                self.check_link_change(&mut c);
            }
            Hook::Status => {}
            Hook::Eecd => {
                // Grant follows request: no firmware competes for the NVM.
                let mut e = (w.new & !eecd::GNT) | eecd::PRES | eecd::AUTO_RD;
                if e & eecd::REQ != 0 {
                    e |= eecd::GNT;
                }
                self.regs.poke(EECD, e);
            }
            Hook::Eerd => {
                let v = self.ctl().nvm.eerd_write(w.raw);
                self.regs.poke(EERD, v);
            }
            Hook::Mdic => self.mdic_write(&mut self.ctl(), w.raw),
            Hook::Swsm => {}
            Hook::Icr => {
                if let Some(m) = intr.as_deref_mut() {
                    self.intr_update(m);
                }
            }
            Hook::Ics => {
                if let Some(m) = intr.as_deref_mut() {
                    self.raise_icr_locked(m, w.raw);
                }
            }
            Hook::Ims => {
                self.regs.poke(IMS, w.old | w.raw);
                if let Some(m) = intr.as_deref_mut() {
                    self.intr_update(m);
                }
            }
            Hook::Imc => self.regs.clear_bits(IMS, w.raw),
            Hook::Eicr => {}
            Hook::Eics => {
                if let Some(m) = intr.as_deref_mut() {
                    self.raise_eicr(m, w.raw & 0x01ff_ffff);
                }
            }
            Hook::Eims => {
                self.regs.poke(EIMS, (w.old | w.raw) & 0x01ff_ffff);
                if let Some(m) = intr.as_deref_mut() {
                    self.deliver_eicr(m);
                }
            }
            Hook::Eimc => self.regs.clear_bits(EIMS, w.raw),
            Hook::Rctl => {}
            Hook::Tctl => {
                if w.new & tctl::EN != 0 && w.old & tctl::EN == 0 {
                    for qi in 0..NUM_QUEUES {
                        self.tx_doorbell(qi);
                    }
                }
            }
            Hook::Tdt => self.tx_doorbell(usize::from(w.id.elem)),
            Hook::Rdt => {}
            Hook::RxHead | Hook::TxHead => {
                // Heads are owned by hardware while the queue runs; the driver
                // initialises them with the queue disabled.
                let base = canon(if hook == Hook::RxHead {
                    RXQ_BASE
                } else {
                    TXQ_BASE
                });
                if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE != 0 {
                    self.regs.poke(base + q::H, w.old);
                }
            }
            Hook::Rxdctl => {
                if w.new & QUEUE_ENABLE == 0 {
                    // A disabled queue forgets its head.
                    self.regs.poke(canon(RXQ_BASE) + q::H, 0);
                }
            }
            Hook::Txdctl => {
                let qi = usize::from(w.id.elem);
                if w.new & QUEUE_ENABLE == 0 {
                    let mut t = lock(&self.txq[qi % NUM_QUEUES]);
                    self.regs.poke(canon(TXQ_BASE) + q::H, 0);
                    t.clear();
                } else if w.old & QUEUE_ENABLE == 0 {
                    self.tx_doorbell(qi);
                }
            }
            Hook::Eitr => {
                // Without CNT_IGNR a write restarts the vector's interval counter.
                if w.raw & (1 << 31) == 0 {
                    lock(&self.intr).restart(usize::from(w.id.elem));
                }
            }
            Hook::Ts(r) => self.ts().write(r, w.raw, self.env.clock.now_ns()),
        }
    }
}

impl RegisterWindow for Igb {
    const SIZE: u64 = pci::BAR0_SIZE;

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

impl NicFunction for Igb {
    fn model(&self) -> &'static str {
        "igb"
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
            log::info!("igb: function level reset");
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
            _ => log::debug!("igb: write to BAR{bar} offset {offset:#x} ignored"),
        }
    }

    fn reset(&self) {
        {
            let mut c = self.ctl();
            c.config.reset();
            self.settled_reset(&mut c);
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
        self.rx_frame(frame, None, true);
    }

    fn receive_at(&self, frame: &[u8], sent_ns: u64) {
        self.rx_frame(frame, Some(sent_ns), true);
    }

    fn try_receive_at(&self, frame: &[u8], sent_ns: u64) -> bool {
        self.rx_frame(frame, Some(sent_ns), false)
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
            3 => "MSIX".into(),
            b => format!("BAR{b}?{offset:#x}"),
        }
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
        log::info!("igb: fault injected: {fault:?}");
        Ok(())
    }

    fn driver_view(&self) -> crate::DriverView {
        let enabled = |base: u32| {
            (0..NUM_QUEUES as u32)
                .filter(|q| {
                    self.regs.peek(base + q * QUEUE_STRIDE + regs::q::DCTL) & QUEUE_ENABLE != 0
                })
                .map(|q| q as u16)
                .collect()
        };
        let gpie = self.regs.peek(GPIE);
        let interrupts = if gpie & intr::GPIE_MSIX_MODE != 0 {
            format!(
                "MSI-X EIMS={:#x} IMS={:#x} EITR0={:#x}",
                self.regs.peek(EIMS),
                self.regs.peek(IMS),
                self.regs.peek(EITR0)
            )
        } else {
            format!("single vector IMS={:#x}", self.regs.peek(IMS))
        };
        crate::DriverView {
            link_up: self.link_up(),
            rx_enabled: self.regs.peek(RCTL) & rctl::EN != 0,
            tx_enabled: self.regs.peek(TCTL) & tctl::EN != 0,
            rx_queues: enabled(RXQ_BASE),
            tx_queues: enabled(TXQ_BASE),
            interrupts,
            driver_loaded: self.regs.peek(CTRL_EXT) & (1 << 28) != 0,
        }
    }

    fn set_wire_delay_ns(&self, ns: u64) {
        self.ts().set_rx_delay_ns(ns);
    }

    fn on_timer(&self, now_ns: u64) {
        self.deliver_eicr(&mut lock(&self.intr));
        self.autoneg_timer(now_ns);
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.errors.snapshot().list()
    }
}

/// Creates an igb function as a shared [`NicFunction`].
pub fn new_function(cfg: IgbConfig, env: DeviceEnv) -> std::sync::Arc<dyn NicFunction> {
    std::sync::Arc::new(Igb::new(cfg, env))
}

/// The MAC address in NVM words 0..2.
fn nvm_mac(nvm: &Nvm) -> [u8; 6] {
    let mut m = [0u8; 6];
    for i in 0..3 {
        m[2 * i..2 * i + 2].copy_from_slice(&nvm.word(i).to_le_bytes());
    }
    m
}

#[cfg(test)]
mod tests;
