// SPDX-License-Identifier: Apache-2.0
//! What a part brings to a [`Function`]: the [`Model`] trait, the register
//! map the shared engines read ([`Layout`]), and the small traits of the
//! state a part keeps its own way (its link [`Media`], its interrupt state).

use std::fmt;

use nicemu_net_util::rss::HashType;

use super::hook::{HookOf, RegKind};
use super::stats::FrameCounters;
use super::{Ctl, Dir, Function};
use crate::desc::TxContext;
use crate::moderation::Moderation;
use crate::nvm::Nvm;
use crate::pci::Bar;
use crate::pci::ConfigSpace;
use crate::phy::Phy;
use crate::ptp::BasePeriod;
use crate::regfile::{RegDef, RegId, Written};
use crate::txframe::{FinishSettings, FrameOpts};

/// Where a part keeps what the shared engines read and write, and how large
/// its function is: one register map against the other (82576 datasheet §8,
/// 82599 §8.2).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Size of the register file in bytes: the register BAR and, on an
    /// SR-IOV virtual function, the pool's registers the PF keeps beyond it
    /// (its receive address, filters and counters), which only the model and
    /// the PF agent reach.
    pub regs_size: u64,
    /// Size of the register BAR the guest reaches (BAR0; `regs_size` on a
    /// physical function).
    pub bar_size: u64,
    /// BAR of the register window.
    pub reg_bar: usize,
    /// BAR of the I/O window (IOADDR/IODATA).
    pub io_bar: usize,
    /// BAR of the MSI-X table and PBA.
    pub msix_bar: usize,
    /// MSI-X vectors.
    pub msix_vectors: u16,
    /// Queues of each direction.
    pub queues: usize,
    /// Offset of the PCIe capability (its DEVCTL carries the FLR bit).
    pub pcie_cap: usize,
    /// Largest frame a transmit queue gathers (a TSO payload plus headers).
    pub max_tx_frame: usize,
    /// The base clock of SYSTIM.
    pub base_period: BasePeriod,
    /// EEC / EECD, whose bits 14:11 report the NVM size after reset.
    pub eec: u32,
    /// The NVM size field's value.
    pub nvm_size: u32,
    /// RAL0 (RAH0 follows): the NVM's MAC address after reset.
    pub ral0: u32,
    /// The register whose bits 15:0 hold the VLAN ethertype (VET, VLNCTRL).
    pub vet: u32,
    /// Multicast table array: 128 registers of 32 bits.
    pub mta: u32,
    /// VLAN filter table array: 128 registers of 32 bits.
    pub vfta: u32,
    /// Multiple receive queues command (RSS enable and hash types).
    pub mrqc: u32,
    /// RSS random key: ten registers.
    pub rssrk: u32,
    /// Redirection table: 32 registers of four entries.
    pub reta: u32,
    /// Ethertype queue filters (eight).
    pub etqf: u32,
    /// The ETQF bit that enables a filter.
    pub etqf_enable: u32,
    /// Offset of SRRCTL in a receive queue's block.
    pub srrctl: u32,
    /// SRRCTL's packet buffer size field (1 KiB units; 0 = 2 KiB).
    pub srrctl_bsize: u32,
    /// SRRCTL's header buffer size field (BSIZEHEADER, 64-byte units from
    /// bit 8), where the part's receive engine places a header buffer for
    /// DESCTYPE 101b, "header split, always use the header buffer" (the
    /// 82576 datasheet's "Header Splitting and Replication"); 0 where the model places none (the 82599 models, whose
    /// drivers use one-buffer descriptors only).
    pub srrctl_bsizehdr: u32,
    /// RXDCTL / TXDCTL bits that clear themselves after a write.
    pub dctl_self_clear: u32,
    /// Context descriptors with RS are written back too (82599 §7.2.3.2.3;
    /// the 82576 writes back data descriptors only).
    pub context_dd: bool,
    /// Frames received with a CRC error.
    pub crcerrs: u32,
    /// Frames received shorter than an Ethernet header.
    pub ruc: u32,
    /// Frames received longer than the maximum frame size.
    pub roc: u32,
    /// TCP segmentation contexts transmitted, where the part counts them.
    pub tsctc: Option<u32>,
    /// What counts each received frame.
    pub rx_counters: FrameCounters,
    /// What counts each transmitted frame.
    pub tx_counters: FrameCounters,
}

/// What a function's port is wired through: the 82576's copper PHY, the
/// 82599's SFP+ cage. Touched only under the control lock.
pub trait Media: Send + fmt::Debug {
    /// The port has link (cable connected, PHY linked, module present).
    fn link_up(&self) -> bool;
    /// Transmitted frames loop back inside the medium (PHY loopback).
    fn loopback(&self) -> bool {
        false
    }
    /// Connects or disconnects the emulated cable.
    fn set_cable(&mut self, up: bool);
    /// Device reset.
    fn reset(&mut self);
    /// True once after a link negotiation started (the function then
    /// schedules [`Self::complete_autoneg`]). Default: the medium negotiates
    /// nothing.
    fn take_autoneg_started(&mut self) -> bool {
        false
    }
    /// A link negotiation is under way.
    fn negotiating(&self) -> bool {
        false
    }
    /// The negotiation under way is done.
    fn complete_autoneg(&mut self) {}
    /// The speed and duplex the link runs at, when the medium resolves one.
    /// Default: none (the part reports its one speed).
    fn link_mode(&self) -> Option<crate::autoneg::Mode> {
        None
    }
    /// Cables the medium to another port's; false when it cannot be
    /// (default: a medium without a twisted-pair PHY).
    fn attach_cable(&mut self, end: crate::cable::CableEnd) -> bool {
        let _ = end;
        false
    }
    /// The cable's other end signals something new (see
    /// [`crate::phy::Phy::partner_changed`]).
    fn partner_changed(&mut self) {}
}

/// The shared copper PHY as a medium: link while the cable is connected, the
/// PHY powered and autonegotiation done; MII loopback.
impl Media for Phy {
    fn link_up(&self) -> bool {
        Phy::link_up(self)
    }
    fn loopback(&self) -> bool {
        Phy::loopback(self)
    }
    fn set_cable(&mut self, up: bool) {
        Phy::set_cable(self, up);
    }
    fn reset(&mut self) {
        Phy::reset(self);
    }
    fn take_autoneg_started(&mut self) -> bool {
        Phy::take_autoneg_started(self)
    }
    fn negotiating(&self) -> bool {
        Phy::negotiating(self)
    }
    fn complete_autoneg(&mut self) {
        Phy::complete_autoneg(self);
    }
    fn link_mode(&self) -> Option<crate::autoneg::Mode> {
        Phy::link_mode(self)
    }
    fn attach_cable(&mut self, end: crate::cable::CableEnd) -> bool {
        Phy::attach_cable(self, end);
        true
    }
    fn partner_changed(&mut self) {
        Phy::partner_changed(self);
    }
}

/// Interrupt state a part keeps beyond its registers, under the interrupt
/// lock.
pub trait IntrState: Send {
    /// Device reset.
    fn reset(&mut self);
}

impl IntrState for Moderation {
    fn reset(&mut self) {
        Moderation::reset(self);
    }
}

/// Which PTP messages a part's receive time stamping selects besides its
/// TSYNCRXCTL type (82576 TSYNCRXCFG, 82599 RXMTRL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtpMatch {
    /// PTP v1 control field value.
    pub v1_ctrl: u8,
    /// PTP v2 message type.
    pub v2_msg: u8,
    /// UDP port of event messages.
    pub udp_port: u16,
}

/// What the last receive descriptor of a frame reports beyond its length,
/// VLAN and packet type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStatus {
    /// Checksum status and error bits (status/error dword).
    pub csum: u32,
    /// The dword after pkt_info: the RSS hash, or 0 where the part puts a
    /// fragment checksum there instead.
    pub hash: u32,
}

/// The longest frame (without FCS) a receiver takes: `plain` bytes, or
/// `tagged` for a frame whose ethertype is `vet` and which is long enough
/// to carry the tag (18 bytes). The 82599 takes a tagged frame four bytes
/// longer than MAXFRS.MFS says; the 82576's limit is the same for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxFrame {
    /// Limit of an untagged frame.
    pub plain: usize,
    /// Limit of a tagged frame.
    pub tagged: usize,
    /// The VLAN ethertype that makes a frame tagged.
    pub vet: u16,
}

impl MaxFrame {
    /// One limit for every frame.
    pub fn any(max: usize) -> MaxFrame {
        MaxFrame {
            plain: max,
            tagged: max,
            vet: 0,
        }
    }

    /// `frame` is longer than the receiver takes.
    #[inline]
    pub fn exceeded_by(&self, frame: &[u8]) -> bool {
        frame.len() > self.plain
            && (frame.len() > self.tagged
                || frame.len() < 18
                || u16::from_be_bytes([frame[12], frame[13]]) != self.vet)
    }
}

/// What a part's security engine (the 82599's IPsec, §7.12.5) reports in
/// a received frame's descriptor beyond the other status bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxSecurity {
    /// Status and error bits (SECP, the IPsec error code).
    pub status: u32,
    /// Packet type bits (IPsec ESP / AH).
    pub ptype: u16,
}

/// Which of a part's own receive steps may act on the frames of a batch
/// ([`Receive::rx_hooks`]): a step that is off is not asked per frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxHooks {
    /// [`Receive::steer`] may choose a queue (the 82599's Flow Director is
    /// initialised).
    pub steer: bool,
    /// [`Receive::rx_security`] may take frames (the 82599's IPsec receive
    /// engine is on).
    pub security: bool,
}

/// Where a finished transmit frame goes (the pass that fetched it found the
/// link up or a loopback: see [`Transmit::tx_link`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxRoute {
    /// Back into the function's own receiver (PHY or MAC loopback).
    Loopback,
    /// Onto the wire.
    Wire,
}

/// One Intel NIC part: what [`Function`] needs to know of it to exist —
/// its register table and map, BARs, configuration, the types of its
/// state, what it looks like after reset. What the part does is in
/// [`Interrupts`], [`Control`], [`Receive`] and [`Transmit`], each
/// implemented in the part's module of that name; [`Part`] is all of them.
pub trait Model: Sized + Send + Sync + 'static {
    /// Short name, e.g. `igb`.
    const NAME: &'static str;
    /// Where the shared engines find the part's registers.
    const LAYOUT: Layout;
    /// The function's BARs.
    const BARS: &'static [Bar];
    /// The register table.
    const TABLE: &'static [RegDef<HookOf<Self>>];
    /// Configuration chosen by the user (MAC address, module…).
    type Config: Copy + fmt::Debug + Send + Sync + 'static;
    /// Registers whose side effects run under the interrupt lock.
    type IntrReg: RegKind;
    /// Registers whose side effects run under the control lock.
    type CtlReg: RegKind;
    /// Registers whose side effects need no lock of their own.
    type Reg: RegKind;
    /// Interrupt state beyond the registers.
    type Intr: IntrState;
    /// The link medium.
    type Media: Media;
    /// What else the part keeps beyond its registers (the 82599's Flow
    /// Director table and receive side coalescing contexts), each piece
    /// behind its own lock.
    type State: Default + Send + Sync + 'static;

    /// The PCI configuration space after reset.
    fn config_space() -> ConfigSpace;
    /// The NVM image for `cfg`.
    fn nvm(cfg: &Self::Config) -> Nvm;
    /// The MAC address the part loads from the NVM at reset.
    fn nvm_mac(nvm: &Nvm) -> [u8; 6];
    /// The link medium for `cfg`.
    fn media(cfg: &Self::Config) -> Self::Media;
    /// The interrupt state after reset.
    fn intr_state() -> Self::Intr;
    /// Puts the registers to what the part's reset leaves (the function then
    /// loads the NVM size and the MAC address).
    fn reset_registers(f: &Function<Self>);
    /// Canonical register block of receive queue `q`.
    fn rxq_base(q: usize) -> u32;
    /// Register block of transmit queue `q`.
    fn txq_base(q: usize) -> u32;
}

/// A part's interrupt logic (82576 §7.3, 82599 §7.3): its cause, mask and
/// moderation registers, under the interrupt lock with the state it guards.
pub trait Interrupts: Model {
    /// Value a guest reads from an interrupt register (`v` as stored, read
    /// with its generic semantics).
    fn intr_read(
        f: &Function<Self>,
        m: &mut Self::Intr,
        r: Self::IntrReg,
        id: RegId,
        v: u32,
    ) -> u32;
    /// Side effects of a guest write to an interrupt register.
    fn intr_write(
        f: &Function<Self>,
        m: &mut Self::Intr,
        r: Self::IntrReg,
        w: &Written<HookOf<Self>>,
    );
    /// Signals a queue event (frame received, descriptors written back).
    fn queue_interrupt(f: &Function<Self>, qi: usize, dir: Dir);
    /// Raises the link status change cause.
    fn link_interrupt(f: &Function<Self>);
    /// Fires what moderation held back (the timer armed for it ran).
    fn deliver_pending(f: &Function<Self>, m: &mut Self::Intr);
    /// The interrupt mode and masks, as `nicemu ctl list` shows them.
    fn interrupt_summary(f: &Function<Self>) -> String;
}

/// A part's control registers: resets, status, the link medium's interface
/// (PHY, SFP+ cage), the MAC's enables.
pub trait Control: Model {
    /// Value a guest reads from a control-path register (the control lock
    /// held).
    fn ctl_read(f: &Function<Self>, c: &mut Ctl<Self::Media>, r: Self::CtlReg, v: u32) -> u32;
    /// Side effects of a guest write to a control-path register.
    fn ctl_write(
        f: &Function<Self>,
        c: &mut Ctl<Self::Media>,
        r: Self::CtlReg,
        w: &Written<HookOf<Self>>,
    );
    /// Value a guest reads from another register with a hook.
    fn read(f: &Function<Self>, r: Self::Reg, v: u32) -> u32;
    /// Side effects of a guest write to another register with a hook.
    fn write(f: &Function<Self>, r: Self::Reg, w: &Written<HookOf<Self>>);
    /// Receiver and transmitter enabled, as `nicemu ctl list` shows them.
    fn mac_enabled(f: &Function<Self>) -> (bool, bool);
}

/// Statistics registers of received PAUSE frames ([`Receive::PAUSE_RX`]).
#[derive(Debug, Clone, Copy)]
pub struct PauseCounters {
    /// XON frames: a pause time of 0.
    pub xon: u32,
    /// XOFF frames: a non-zero pause time.
    pub xoff: u32,
}

/// What a part's receiver does its own way.
pub trait Receive: Model {
    /// A frame from the wire reaches the MAC (else it is dropped and counted
    /// as `rx_no_link`). Default: always.
    fn wire_rx(f: &Function<Self>) -> bool {
        let _ = f;
        true
    }
    /// The receiver has the link any frame needs, looped back or not (else
    /// `rx_no_link`). Default: always.
    fn rx_link(f: &Function<Self>) -> bool {
        let _ = f;
        true
    }
    /// The receiver is enabled (else the frame is dropped and counted as
    /// `rx_disabled`: the statistics registers only count with receives
    /// enabled).
    fn rx_enabled(f: &Function<Self>) -> bool;
    /// MRQC enables RSS hashing.
    fn rss_enabled(mrqc: u32) -> bool;
    /// Longest frames (without FCS) the receiver takes, read once per
    /// receive batch.
    fn max_frame(f: &Function<Self>) -> MaxFrame;
    /// The address and VLAN filters pass the frame.
    fn rx_accept(f: &Function<Self>, frame: &[u8]) -> bool;
    /// The PTP messages receive time stamping selects.
    fn ptp_match(f: &Function<Self>) -> PtpMatch;
    /// Receive queue `qi` strips VLAN tags into the descriptor.
    fn vlan_strip(f: &Function<Self>, qi: usize) -> bool;
    /// Checksum status and the hash dword of a frame's descriptor (`ptype`
    /// its packet type, 0 for non-IP).
    fn rx_status(f: &Function<Self>, frame: &[u8], ptype: u16, hash: u32) -> RxStatus;
    /// Counts `frames` frames of `octets` octets received on queue `qi`
    /// beyond the frame counters (per-queue statistics).
    fn count_rx_queue(f: &Function<Self>, qi: usize, frames: u32, octets: u64) {
        let _ = (f, qi, frames, octets);
    }
    /// Counts a frame queue `qi` had no buffer (or no ring) for.
    fn count_rx_miss(f: &Function<Self>, qi: usize);
    /// Statistics registers counting received IEEE 802.3 PAUSE frames: XON
    /// (pause time 0) and XOFF (82576: XONRXC / XOFFRXC in its statistics
    /// registers; 82599: LXONRXCNT / LXOFFRXCNT, datasheet §8.2.3.23).
    const PAUSE_RX: PauseCounters;
    /// Places a frame that passed the filters into receive queue `qi` its
    /// own way (its receive lock held) and returns true, or returns false
    /// for the shared placement (one frame per descriptor chain). Default:
    /// false.
    fn rx_place(
        f: &Function<Self>,
        qi: usize,
        frame: &[u8],
        hash: u32,
        ty: HashType,
        ts: bool,
    ) -> bool {
        let _ = (f, qi, frame, hash, ty, ts);
        false
    }
    /// The part places some frames its own way ([`Self::rx_place`] is its
    /// own): else the shared placement takes every frame without asking.
    const RX_PLACE: bool = false;
    /// Whether [`Self::rx_place`] may take frames for queue `qi`, asked once
    /// per run of a batch's frames to that queue (the batch reaches the
    /// queue at one instant). Default: yes.
    fn rx_place_on(f: &Function<Self>, qi: usize) -> bool {
        let _ = (f, qi);
        true
    }
    /// Which of the part's own receive steps ([`Self::steer`],
    /// [`Self::rx_security`]) may act on the frames of a batch, read once
    /// per batch. Default: both (asked per frame).
    fn rx_hooks(f: &Function<Self>) -> RxHooks {
        let _ = f;
        RxHooks {
            steer: true,
            security: true,
        }
    }
    /// The device timer ran: receive state that ages (the 82599's
    /// coalescing contexts) moves on. Default: nothing.
    fn rx_timer(f: &Function<Self>, now_ns: u64) {
        let _ = (f, now_ns);
    }
    /// The part's security engine takes the frame (it matched a receive
    /// SA): what the descriptor reports, and the frame to place instead of
    /// the received one when the engine decrypted it. `None` for a frame
    /// the engine leaves alone (placed as usual, RSC included). Default:
    /// no engine.
    fn rx_security(f: &Function<Self>, frame: &[u8]) -> Option<(RxSecurity, Option<Vec<u8>>)> {
        let _ = (f, frame);
        None
    }
    /// A receive queue chosen for the frame before RSS (the 82599's Flow
    /// Director, §7.1.2.7), or `None` for the RSS queue. Default: none.
    fn steer(f: &Function<Self>, frame: &[u8]) -> Option<usize> {
        let _ = (f, frame);
        None
    }
}

/// What a part's transmitter does its own way.
pub trait Transmit: Model {
    /// The transmitter is enabled.
    fn tx_enabled(f: &Function<Self>) -> bool;
    /// The MAC can send: link, or a loopback. Without, the part stops
    /// transmit DMA ("We've lost link, so the controller stops DMA",
    /// `igb_watchdog_task`, `ixgbe_watchdog_flush_tx`): a doorbell fetches
    /// nothing, and held frames go out when the link returns.
    fn tx_link(f: &Function<Self>) -> bool;
    /// How a gathered frame is finished (VLAN ethertype, padding).
    fn tx_settings(f: &Function<Self>) -> FinishSettings;
    /// A transmit time stamp was latched.
    fn tx_stamped(f: &Function<Self>) {
        let _ = f;
    }
    /// The part's security engine transforms a finished frame (or TSO
    /// segment number `seg`, from 0) whose first descriptor had options
    /// `o`, under offload context `ctx` (the 82599's IPsec encryption,
    /// §7.12.4); false drops the frame (the part counted why). Default: no
    /// engine, the frame goes out as it is.
    fn tx_security(
        f: &Function<Self>,
        (o, ctx): (&FrameOpts, &TxContext),
        seg: usize,
        frame: &mut Vec<u8>,
    ) -> bool {
        let _ = (f, o, ctx, seg, frame);
        true
    }
    /// Where finished frames go.
    fn tx_route(f: &Function<Self>) -> TxRoute;
    /// Counts `frames` frames of `octets` octets sent from queue `qi`
    /// beyond the frame counters.
    fn count_tx_queue(f: &Function<Self>, qi: usize, frames: u32, octets: u64) {
        let _ = (f, qi, frames, octets);
    }
}

/// A whole part: what a [`Function`] of it runs.
pub trait Part: Interrupts + Control + Receive + Transmit {}

impl<T: Interrupts + Control + Receive + Transmit> Part for T {}
