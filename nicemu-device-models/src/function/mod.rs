// SPDX-License-Identifier: Apache-2.0
//! One Intel NIC function, whichever part it is: [`Function<M>`] owns what
//! every 82576 (igb) and 82599 (ixgbe) function has — the register file and its
//! statistics totals, guest error counters, DMA memory, the I/O window, the
//! transmit and receive queues, injected faults, the IEEE 1588 unit, the
//! interrupt state and the control-path state (config space, NVM, the link
//! medium) — and runs what both parts do the same way: register accesses and
//! the locks their side effects need ([`hook`]), reset, link changes, the
//! receive pipeline ([`rx`]) and the transmit doorbell ([`tx`]). A [`Model`]
//! (`igb::I82576`, `ixgbe::I82599`) carries what differs: its register table
//! and map ([`Layout`]), its hooks' side effects, BARs, reset, filters and
//! interrupt logic.
//!
//! Locking (see the crate documentation): registers, counters and guest
//! error counts are atomics; each transmit queue's frame assembly and each
//! receive queue's ring are behind their own lock; the interrupt state, the
//! time stamp latches and the control state have short locks of their own.
//! The order, for paths that take several: `ctl` → transmit queue → receive
//! queue → (`intr`, `ts`). Which lock a register's side effect runs under is
//! named by its [`Hook`], and one step takes it ([`hook`]).

pub mod hook;
mod model;
pub mod rx;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod tx;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::autoneg::{Mode, Speed};
use crate::bar::{self, IoWindow, RegisterWindow};
use crate::batch::{FrameBatch, Frames};
use crate::cable::CableEnd;
use crate::dma::{DmaMemory, DmaView, GuestRam};
use crate::env::DeviceEnv;
use crate::errors::{ErrorCounters, GuestErrors};
use crate::fault::SharedFaults;
use crate::fault::{DriverView, Fault, FaultError};
use crate::moderation::Moderation;
use crate::nvm::Nvm;
use crate::pci::Bar;
use crate::pci::ConfigSpace;
use crate::port::{Delivery, Introspect, NetPort, PciFunction};
use crate::ptp::TimeSync;
use crate::regfile::RegFile;
use crate::stats::Totals;
use crate::sync::lock;
use crate::txframe::TxQueue;

pub use hook::{Hook, HookOf, QueueReg};
pub use model::{
    Control, Interrupts, IntrState, Layout, MaxFrame, Media, Model, Part, PauseCounters, PtpMatch,
    Receive, RxHooks, RxSecurity, RxStatus, Transmit, TxRoute,
};
pub use stats::{FrameCounters, Split};

/// Receive / transmit queue enable bit in RXDCTL/TXDCTL (82576 §8.10.10,
/// 82599 §8.2.3.8.6; the same bit on both parts).
pub const QUEUE_ENABLE: u32 = 1 << 25;

/// Offsets within a queue's register block shared by both parts (the ring
/// itself: base, length, head, tail as [`crate::ring::Ring::from_block`]
/// reads them, and the queue control register).
pub mod q {
    /// Ring length in bytes (16 per descriptor).
    pub const LEN: u32 = 0x08;
    /// Head.
    pub const H: u32 = 0x10;
    /// Tail.
    pub const T: u32 = 0x18;
    /// Queue control (RXDCTL / TXDCTL).
    pub const DCTL: u32 = 0x28;
}

/// CTRL_EXT (0x0018 on both parts) and its DRV_LOAD bit: the driver has taken
/// control of the function (82576 §8.2.3, 82599 §8.2.3.1.3).
const CTRL_EXT: u32 = 0x0018;
const CTRL_EXT_DRV_LOAD: u32 = 1 << 28;

/// Direction of a queue event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Receive.
    Rx,
    /// Transmit.
    Tx,
}

/// Control-path state of a function: what only register accesses and the
/// control socket touch, never a frame.
#[derive(Debug)]
pub struct Ctl<D> {
    /// PCI configuration space.
    pub config: ConfigSpace,
    /// The NVM (EEPROM) image.
    pub nvm: Nvm,
    /// What the port is wired through (PHY, SFP+ cage).
    pub media: D,
    /// Link state last reported through the link status change cause.
    pub link_reported: bool,
    /// When the medium's negotiation under way completes (device clock).
    pub autoneg_done_ns: Option<u64>,
    /// How long a negotiation takes ([`crate::phy::AUTONEG_NS`] unless set
    /// through [`NetPort::set_autoneg_ns`]).
    pub autoneg_ns: u64,
}

/// [`Function::link`] bit: the medium has link.
const LINK_UP: u8 = 1;
/// [`Function::link`] bit: the medium loops transmitted frames back.
const LINK_LOOPBACK: u8 = 2;
/// [`Function::link`] bits: the medium resolved a mode ([`LINK_MODE_SET`])
/// at this speed (0 = 10, 1 = 100, 2 = 1000 Mb/s, shifted by
/// [`LINK_SPEED_SHIFT`]), full duplex ([`LINK_FULL`]).
const LINK_MODE_SET: u8 = 4;
const LINK_SPEED_SHIFT: u8 = 3;
const LINK_FULL: u8 = 32;

/// One PCI function of part `M`. See the module documentation.
pub struct Function<M: Model> {
    pub(crate) cfg: M::Config,
    pub(crate) env: DeviceEnv,
    pub(crate) regs: RegFile<HookOf<M>>,
    /// Running totals of the statistics registers (control path view).
    pub(crate) totals: Totals,
    pub(crate) errors: ErrorCounters,
    pub(crate) mem: DmaMemory,
    /// The I/O BAR's indirect register window (IOADDR/IODATA).
    pub(crate) io: IoWindow,
    pub(crate) ctl: Mutex<Ctl<M::Media>>,
    /// The medium's link and loopback state for the data path
    /// ([`LINK_UP`], [`LINK_LOOPBACK`]), updated under `ctl`.
    link: AtomicU8,
    /// The link came up under `ctl`: the transmit queues it held are to be
    /// rung once `ctl` is released ([`Self::resume_tx`]).
    tx_resume: AtomicBool,
    /// The cable's other end changed its signal: the timer re-reads it
    /// ([`crate::cable`]).
    partner_kicked: Arc<AtomicBool>,
    /// Per transmit queue: the frame being gathered and its offload contexts.
    pub(crate) txq: Box<[Mutex<TxQueue>]>,
    /// Emptied frame batches of finished transmit passes, for reuse.
    tx_batches: Mutex<Vec<FrameBatch>>,
    /// Per receive queue: held while frames are placed into the ring (a
    /// receive batch holds it from one frame for the queue to the next).
    pub(crate) rxq: Box<[Mutex<()>]>,
    /// Interrupt state beyond the registers (EITR moderation, vector causes).
    pub(crate) intr: Mutex<M::Intr>,
    /// Faults injected through the control path.
    pub(crate) faults: SharedFaults,
    /// IEEE 1588 clock and time stamp latches (82576 §7.9, 82599 §7.9).
    pub(crate) ts: Mutex<TimeSync>,
    /// TSYNCRXCTL.EN as `ts` last held it ([`Self::ts_change`]): the receive
    /// path looks here before it takes `ts`'s lock for a frame.
    ts_rx_on: AtomicBool,
    /// The part's own state ([`Model::State`]).
    pub(crate) part: M::State,
    /// Descriptors processed, transmit and receive ([`Introspect::descriptors`]).
    pub(crate) descs: [AtomicU64; 2],
}

impl<M: Model> fmt::Debug for Function<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(M::NAME)
            .field("config", &self.cfg)
            .field("errors", &self.errors.snapshot())
            .finish()
    }
}

impl<M: Part> Function<M> {
    /// Creates a function in its power-on state.
    pub fn new(cfg: M::Config, env: DeviceEnv) -> Self {
        let l = M::LAYOUT;
        let now = env.clock.now_ns();
        let regs = RegFile::new(M::TABLE, l.regs_size as usize);
        let f = Function {
            totals: Totals::for_file(&regs),
            descs: [AtomicU64::new(0), AtomicU64::new(0)],
            regs,
            errors: ErrorCounters::default(),
            mem: DmaMemory::default(),
            io: IoWindow::default(),
            ctl: Mutex::new(Ctl {
                config: M::config_space(),
                nvm: M::nvm(&cfg),
                media: M::media(&cfg),
                link_reported: false,
                autoneg_done_ns: None,
                autoneg_ns: crate::phy::AUTONEG_NS,
            }),
            link: AtomicU8::new(0),
            tx_resume: AtomicBool::new(false),
            partner_kicked: Arc::new(AtomicBool::new(false)),
            txq: (0..l.queues)
                .map(|_| Mutex::new(TxQueue::with_max(l.max_tx_frame)))
                .collect(),
            tx_batches: Mutex::new(Vec::new()),
            rxq: (0..l.queues).map(|_| Mutex::new(())).collect(),
            intr: Mutex::new(M::intr_state()),
            faults: SharedFaults::default(),
            ts: Mutex::new(TimeSync::new(l.base_period, now)),
            ts_rx_on: AtomicBool::new(false),
            part: M::State::default(),
            cfg,
            env,
        };
        f.settled_reset(&mut f.ctl());
        f
    }

    /// The control state, locked.
    pub(crate) fn ctl(&self) -> MutexGuard<'_, Ctl<M::Media>> {
        lock(&self.ctl)
    }

    /// The IEEE 1588 unit, locked.
    pub(crate) fn ts(&self) -> MutexGuard<'_, TimeSync> {
        lock(&self.ts)
    }

    /// Changes the IEEE 1588 unit's settings with `f` (a TSYNCRXCTL write,
    /// a reset) and notes whether receive time stamping is on
    /// ([`Self::rx_stamping`]).
    pub(crate) fn ts_change(&self, f: impl FnOnce(&mut TimeSync)) {
        let mut ts = self.ts();
        f(&mut ts);
        self.ts_rx_on.store(ts.rx_enabled(), Ordering::Release);
    }

    /// Receive time stamping may be on (TSYNCRXCTL.EN): read without the
    /// unit's lock, so a frame does not take it while stamping is off.
    #[inline]
    pub(crate) fn rx_stamping(&self) -> bool {
        self.ts_rx_on.load(Ordering::Acquire)
    }

    /// The configuration the function was created with.
    pub fn config(&self) -> &M::Config {
        &self.cfg
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

    /// Connects or disconnects the emulated cable; the guest sees a link
    /// status change interrupt (once a negotiation the medium needs is over).
    pub fn set_cable(&self, up: bool) {
        {
            let mut c = self.ctl();
            c.media.set_cable(up);
            self.check_link_change(&mut c);
        }
        self.resume_tx();
    }

    /// Software / device reset (CTRL.RST; 82576 §4.3.1, 82599 §4.2.1):
    /// registers to the part's defaults ([`Model::reset_registers`]), the NVM
    /// size and the MAC address (NVM → RAL0/RAH0 with Address Valid) loaded,
    /// the medium reset, partial frames, interrupt state and time sync
    /// cleared. Every queue is held meanwhile, so no frame sees a half-reset
    /// function.
    pub(crate) fn device_reset(&self, c: &mut Ctl<M::Media>) {
        let mut tx: Vec<_> = self.txq.iter().map(lock).collect();
        let _rx: Vec<_> = self.rxq.iter().map(lock).collect();
        if self.faults.on_reset() {
            // Injected NVM corruption: one word changes, the checksum does not.
            let w = c.nvm.word(0x30);
            c.nvm.set_word(0x30, w ^ 0x5a5a);
            log::info!("{}: NVM corrupted (fault injection)", M::NAME);
        }
        let l = M::LAYOUT;
        M::reset_registers(self);
        self.regs.set_bits(l.eec, l.nvm_size << 11);
        let m = M::nvm_mac(&c.nvm);
        self.regs
            .poke(l.ral0, u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        self.regs.poke(
            l.ral0 + 4,
            u32::from(u16::from_le_bytes([m[4], m[5]])) | (1 << 31),
        );
        c.media.reset();
        for t in tx.iter_mut() {
            t.clear();
        }
        self.sync_link(c);
        c.link_reported = self.link_up();
        lock(&self.intr).reset();
        let now = self.env.clock.now_ns();
        self.ts_change(|ts| ts.reset(now));
    }

    /// Reset with the link already negotiated: at power-up the cable has been
    /// in long ago, and a function-level reset (a new vfio-user client)
    /// leaves the port's PHY alone (82576 §4.3: FLR resets the function's
    /// registers, not the link). The driver's own PHY and CTRL.RST writes do
    /// restart autonegotiation.
    fn settled_reset(&self, c: &mut Ctl<M::Media>) {
        self.device_reset(c);
        c.media.complete_autoneg();
        c.media.take_autoneg_started();
        c.autoneg_done_ns = None;
        self.sync_link(c);
        c.link_reported = self.link_up();
    }

    /// A software reset from a register write: the device reset, then the
    /// link change it may report.
    pub(crate) fn software_reset(&self, c: &mut Ctl<M::Media>) {
        self.device_reset(c);
        self.check_link_change(c);
    }

    /// Mirrors the medium's state into [`Self::link`] for the data path.
    fn sync_link(&self, c: &Ctl<M::Media>) {
        let mut v = 0;
        if c.media.link_up() {
            v |= LINK_UP;
        }
        if c.media.loopback() {
            v |= LINK_LOOPBACK;
        }
        if let Some(m) = c.media.link_mode() {
            let speed = match m.speed {
                Speed::Mb10 => 0,
                Speed::Mb100 => 1,
                Speed::Mb1000 => 2,
            };
            v |= LINK_MODE_SET | (speed << LINK_SPEED_SHIFT);
            if m.full {
                v |= LINK_FULL;
            }
        }
        self.link.store(v, Ordering::Release);
    }

    /// The speed and duplex the medium's link runs at, when it resolved one
    /// (a PHY that autonegotiated or was forced; see [`Media::link_mode`]).
    pub(crate) fn link_mode(&self) -> Option<Mode> {
        let v = self.link.load(Ordering::Acquire);
        if v & LINK_MODE_SET == 0 {
            return None;
        }
        let speed = match (v >> LINK_SPEED_SHIFT) & 3 {
            0 => Speed::Mb10,
            1 => Speed::Mb100,
            _ => Speed::Mb1000,
        };
        Some(Mode {
            speed,
            full: v & LINK_FULL != 0,
        })
    }

    /// The link as the driver sees it: the medium has link or loops back.
    pub(crate) fn link_up(&self) -> bool {
        self.link.load(Ordering::Acquire) & (LINK_UP | LINK_LOOPBACK) != 0
    }

    /// The medium loops transmitted frames back (PHY loopback).
    pub(crate) fn media_loopback(&self) -> bool {
        self.link.load(Ordering::Acquire) & LINK_LOOPBACK != 0
    }

    /// Raises the link status change cause when the link differs from what
    /// was last reported; a link that came up has the transmit queues it
    /// held rung once `ctl` is released ([`Self::resume_tx`]).
    pub(crate) fn check_link_change(&self, c: &mut Ctl<M::Media>) {
        self.track_autoneg(c);
        self.sync_link(c);
        let up = self.link_up();
        if up != c.link_reported {
            c.link_reported = up;
            M::link_interrupt(self);
            if up {
                self.tx_resume.store(true, Ordering::Release);
            }
        }
    }

    /// Rings every transmit queue if the link came up since the last call:
    /// the frames held while it was down go out (called with `ctl`
    /// released, after whatever may have brought the link up).
    pub(crate) fn resume_tx(&self) {
        if self.tx_resume.swap(false, Ordering::AcqRel) {
            self.tx_doorbell_all();
        }
    }

    /// Schedules the end of a negotiation the medium started (a restart
    /// moves it): [`Ctl::autoneg_ns`] from now, on the device timer.
    fn track_autoneg(&self, c: &mut Ctl<M::Media>) {
        if c.media.take_autoneg_started() {
            let at = self.env.clock.now_ns() + c.autoneg_ns;
            c.autoneg_done_ns = Some(at);
            self.env.timer.arm(at);
        } else if !c.media.negotiating() {
            c.autoneg_done_ns = None;
        }
    }

    /// Timer: completes a due negotiation (link up, the link status change
    /// cause), or re-arms for it (the transport keeps one deadline, the
    /// earliest).
    fn autoneg_timer(&self, now_ns: u64) {
        if self.partner_kicked.swap(false, Ordering::AcqRel) {
            let mut c = self.ctl();
            c.media.partner_changed();
            self.check_link_change(&mut c);
        }
        {
            let mut c = self.ctl();
            match c.autoneg_done_ns {
                Some(at) if now_ns >= at => {
                    c.autoneg_done_ns = None;
                    c.media.complete_autoneg();
                    self.check_link_change(&mut c);
                }
                Some(at) => self.env.timer.arm(at),
                None => {}
            }
        }
        self.resume_tx();
    }

    /// The vectors of `ready` whose EITR interval has passed (82576
    /// §7.3.4.1, 82599 §7.3.2.1): they start a new interval, and a timer is
    /// armed for the earliest vector held back.
    pub(crate) fn moderate(
        &self,
        m: &mut Moderation,
        ready: u64,
        interval_ns: impl Fn(usize) -> u64,
    ) -> u64 {
        let clock = &self.env.clock;
        m.gate_at(
            ready,
            || clock.now_ns(),
            interval_ns,
            self.env.timer.as_ref(),
        )
    }

    /// Sends the MSI-X message of every vector in `fire` (bit n: vector n).
    pub(crate) fn signal_vectors(&self, fire: u64) {
        let mut f = fire;
        while f != 0 {
            let v = f.trailing_zeros();
            f &= f - 1;
            self.env.irq.msix(v as u16);
        }
    }

    /// Queues `0..n` whose register block at `base(q)` has the enable bit set.
    fn enabled_queues(&self, base: fn(usize) -> u32) -> Vec<u16> {
        (0..M::LAYOUT.queues)
            .filter(|&q| self.regs.peek(base(q) + q::DCTL) & QUEUE_ENABLE != 0)
            .map(|q| q as u16)
            .collect()
    }
}

impl<M: Part> RegisterWindow for Function<M> {
    const SIZE: u64 = M::LAYOUT.bar_size;

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

impl<M: Part> PciFunction for Function<M> {
    fn config_read(&self, offset: u64, data: &mut [u8]) {
        self.ctl().config.read(offset, data);
    }

    fn config_write(&self, offset: u64, data: &[u8]) {
        let (flr, bme) = {
            let mut c = self.ctl();
            c.config.write(offset, data);
            let devctl = M::LAYOUT.pcie_cap + crate::pci::caps::PCIE_DEVCTL;
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
            log::info!("{}: function level reset", M::NAME);
            self.reset();
        }
    }

    fn bar_read(&self, bar: usize, offset: u64, data: &mut [u8]) {
        let l = M::LAYOUT;
        if bar == l.reg_bar {
            bar::mmio_read(self, offset, data);
        } else if bar == l.io_bar {
            self.io.read(self, offset, data);
        } else {
            data.fill(0);
        }
    }

    fn bar_write(&self, bar: usize, offset: u64, data: &[u8]) {
        let l = M::LAYOUT;
        if bar == l.reg_bar {
            bar::mmio_write(self, offset, data);
        } else if bar == l.io_bar {
            self.io.write(self, offset, data);
        } else {
            log::debug!("{}: write to BAR{bar} offset {offset:#x} ignored", M::NAME);
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

    fn bars(&self) -> &[Bar] {
        M::BARS
    }

    fn msix_vectors(&self) -> u16 {
        M::LAYOUT.msix_vectors
    }

    fn reg_name(&self, bar: usize, offset: u64) -> String {
        let l = M::LAYOUT;
        if bar == l.reg_bar {
            self.regs.name_at(offset & !3)
        } else if bar == l.io_bar {
            match offset {
                0 => "IOADDR".into(),
                4 => format!("IODATA({})", self.regs.name_at(self.io.target::<Self>())),
                _ => format!("IO?{offset:#x}"),
            }
        } else if bar == l.msix_bar {
            "MSIX".into()
        } else {
            format!("BAR{bar}?{offset:#x}")
        }
    }

    fn on_timer(&self, now_ns: u64) {
        M::rx_timer(self, now_ns);
        M::deliver_pending(self, &mut lock(&self.intr));
        self.autoneg_timer(now_ns);
    }
}

impl<M: Part> NetPort for Function<M> {
    fn deliver(&self, frame: &[u8], sent_ns: Option<u64>, wait: bool) -> Delivery {
        if self.receive_from_wire(frame, sent_ns, wait) {
            Delivery::Done
        } else {
            Delivery::Busy
        }
    }

    fn deliver_batch(&self, frames: Frames<'_>, sent_ns: Option<u64>, wait: bool) -> usize {
        self.receive_batch_from_wire(frames, sent_ns, wait)
    }

    fn set_link(&self, up: bool) {
        self.set_cable(up);
    }

    fn link_up(&self) -> bool {
        Function::link_up(self)
    }

    fn set_wire_delay_ns(&self, ns: u64) {
        self.ts().set_rx_delay_ns(ns);
    }

    fn set_autoneg_ns(&self, ns: u64) {
        self.ctl().autoneg_ns = ns;
    }

    fn attach_cable(&self, end: CableEnd) -> bool {
        let kicked = self.partner_kicked.clone();
        let (timer, clock) = (self.env.timer.clone(), self.env.clock.clone());
        end.set_kick(Arc::new(move || {
            kicked.store(true, Ordering::Release);
            timer.arm(clock.now_ns());
        }));
        let mut c = self.ctl();
        if !c.media.attach_cable(end) {
            return false;
        }
        self.check_link_change(&mut c);
        true
    }
}

impl<M: Part> Introspect for Function<M> {
    fn model(&self) -> &'static str {
        M::NAME
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.totals.list(&self.regs)
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.errors.snapshot().list()
    }

    fn descriptors(&self) -> (u64, u64) {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        (l(&self.descs[0]), l(&self.descs[1]))
    }

    fn driver_view(&self) -> DriverView {
        let (rx_enabled, tx_enabled) = M::mac_enabled(self);
        DriverView {
            link_up: Function::link_up(self),
            rx_enabled,
            tx_enabled,
            rx_queues: self.enabled_queues(M::rxq_base),
            tx_queues: self.enabled_queues(M::txq_base),
            interrupts: M::interrupt_summary(self),
            driver_loaded: self.regs.peek(CTRL_EXT) & CTRL_EXT_DRV_LOAD != 0,
        }
    }

    fn inject(&self, fault: Fault) -> Result<(), FaultError> {
        match &fault {
            Fault::CounterPreset(name, v) => {
                if !self.totals.preset(&self.regs, name, *v) {
                    return Err(FaultError::UnknownCounter(name.clone()));
                }
            }
            Fault::ClockStep(ns) => {
                // A jump of SYSTIM the driver did not make: its timecounter
                // shows the step on the PHC.
                let now = self.env.clock.now_ns();
                self.ts().clock.step_ns(now, *ns);
            }
            f => self.faults.arm(f, M::LAYOUT.queues as u16)?,
        }
        log::info!("{}: fault injected: {fault:?}", M::NAME);
        Ok(())
    }
}
