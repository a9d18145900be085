// SPDX-License-Identifier: Apache-2.0
//! SR-IOV virtual functions: the 82576 VF (igbvf, 8086:10ca) and the 82599
//! VF (ixgbevf, 8086:10ed), each one more [`Model`] of the shared
//! [`Function`] — the same rings, descriptor formats, offloads, moderation
//! and counters as the PF models — with the VF's register map, and nicemu
//! as the host's PF driver behind the mailbox ([`agent`]).
//!
//! What a VF is (82576 datasheet §7.8 "Virtualization", §8.27 VF
//! registers; 82599 §7.10, §8.3): BAR0 16 KiB of registers (control,
//! status / VFLINKS, the MSI-X interrupt block mapped through the VF's
//! IVARs, its pool's queue pairs, statistics that wrap and never clear, the
//! mailbox), BAR3 16 KiB holding an MSI-X table of 3 vectors, a PCIe
//! capability with FLR, no INTx. What the PF programs for the VF's pool —
//! its receive address and filters, VLANs, largest frame, receive and
//! transmit enables — is the agent's state; the register file keeps the
//! pool's PF-side registers (the receive address, the multicast and VLAN
//! tables the shared engines read, the frame counters) beyond the BAR,
//! where only the model reaches them.
//!
//! The VF register maps differ between the parts and are tables ([`igbvf`],
//! [`ixgbevf`]); how a VF behaves is written once, here, over [`VfPart`].

pub mod agent;
pub mod igbvf;
pub mod ixgbevf;
pub mod mailbox;

use std::marker::PhantomData;
use std::sync::Mutex;

use nicemu_net_util::csum::verify_rx;

use crate::desc::RXD_STAT_IPCS;
use crate::function::{
    Control, Ctl, Dir, Function, Interrupts, Layout, MaxFrame, Media, Model, PauseCounters,
    PtpMatch, Receive, RxSecurity, RxStatus, Transmit, TxRoute,
};
use crate::moderation::Moderation;
use crate::nvm::Nvm;
use crate::pci::{Bar, ConfigSpace};
use crate::port::PciFunction;
use crate::regfile::{RegDef, RegId, Written};
use crate::sync::lock;
use crate::txframe::{FinishSettings, FrameOpts};
use agent::{Admin, Agent, LinkMode, PfKind, TraceEntry, TxVerdict};
use mailbox::{Mailbox, MailboxStats, VfEvent, WORDS};

/// Interrupt registers of a VF with side effects (82576 §8.27.3, 82599
/// §8.3.5.2): under the interrupt lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntrReg {
    /// EICR: write 1 to clear.
    Eicr,
    /// EICS: raise causes.
    Eics,
    /// EIMS: unmask.
    Eims,
    /// EIMC: mask.
    Eimc,
    /// EITR: a write restarts the vector's interval.
    Eitr,
}

/// Control registers of a VF with side effects: under the control lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlReg {
    /// CTRL / VFCTRL: RST resets the VF.
    Ctrl,
}

/// Other VF registers with side effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// STATUS / VFLINKS: computed from the link.
    Link,
    /// V2PMAILBOX / VFMAILBOX.
    Mailbox,
    /// VMBMEM / VFMBMEM: written only while the VF holds the buffer.
    MbMem,
    /// A statistics register: bits `shift..shift + bits` of the running
    /// total of the pool's counter at `from` (the VF's counters wrap at
    /// their width and are not cleared by a read).
    Stat {
        /// The pool's counter (its low register).
        from: u32,
        /// First bit of the total the register shows.
        shift: u8,
        /// Its width.
        bits: u8,
    },
}

/// The hooks of a VF's registers.
pub type Hook = crate::function::Hook<IntrReg, CtlReg, Reg>;

/// MSI-X vectors of a VF (82576 §7.8.2.9: three per VF; the 82599 VF's
/// table also has three).
pub const MSIX_VECTORS: u16 = 3;
/// Mask of the EICR bits (one per vector).
const VECTORS: u32 = (1 << MSIX_VECTORS) - 1;
/// IVAR entry valid bit (both parts).
const IVAR_VALID: u32 = 0x80;
/// CTRL.RST / VFCTRL.RST (both parts: bit 26).
pub const CTRL_RST: u32 = 1 << 26;
/// Offset of the PCIe capability in a VF's configuration space.
pub const PCIE_CAP: usize = 0xa0;
/// BAR0 (registers) and BAR3 (MSI-X) size.
pub const BAR_SIZE: u64 = 16 * 1024;
/// The register file: the BAR, then the pool's PF-side registers.
pub const REGS_SIZE: u64 = 32 * 1024;

/// The pool's PF-side registers, beyond the VF's BAR (offsets of this
/// model's register file, not of a datasheet).
pub mod pool {
    /// NVM size field holder (the shared reset writes it).
    pub const EEC: u32 = 0x4000;
    /// VLAN ethertype.
    pub const VET: u32 = 0x4004;
    /// Receive address 0 (RAH0 follows).
    pub const RAL0: u32 = 0x4008;
    /// Multiple receive queues command (RSS off).
    pub const MRQC: u32 = 0x4010;
    /// RSS key.
    pub const RSSRK: u32 = 0x4020;
    /// Ethertype filters.
    pub const ETQF: u32 = 0x4060;
    /// Redirection table.
    pub const RETA: u32 = 0x4100;
    /// Multicast table.
    pub const MTA: u32 = 0x4200;
    /// VLAN filter table.
    pub const VFTA: u32 = 0x4400;
    /// CRC errors.
    pub const CRCERRS: u32 = 0x4600;
    /// Undersize frames.
    pub const RUC: u32 = 0x4604;
    /// Oversize frames.
    pub const ROC: u32 = 0x4608;
    /// XON received.
    pub const XONRXC: u32 = 0x460c;
    /// XOFF received.
    pub const XOFFRXC: u32 = 0x4610;
    /// Frames with no receive buffer.
    pub const MPC: u32 = 0x4614;
    /// Frames the VF sent from another MAC address, dropped (anti-spoof).
    pub const SPOOF: u32 = 0x4618;
    /// Good packets received.
    pub const GPRC: u32 = 0x4620;
    /// Total packets received.
    pub const TPR: u32 = 0x4624;
    /// Good octets received (high at +4).
    pub const GORCL: u32 = 0x4628;
    /// Total octets received (high at +4).
    pub const TORL: u32 = 0x4630;
    /// Receive size buckets (six).
    pub const PRC64: u32 = 0x4640;
    /// Broadcasts received.
    pub const BPRC: u32 = 0x4660;
    /// Multicasts received.
    pub const MPRC: u32 = 0x4664;
    /// Good packets transmitted.
    pub const GPTC: u32 = 0x4680;
    /// Total packets transmitted.
    pub const TPT: u32 = 0x4684;
    /// Good octets transmitted (high at +4).
    pub const GOTCL: u32 = 0x4688;
    /// Transmit size buckets (six).
    pub const PTC64: u32 = 0x46a0;
    /// Broadcasts transmitted.
    pub const BPTC: u32 = 0x46c0;
    /// Multicasts transmitted.
    pub const MPTC: u32 = 0x46c4;
    /// Good packets received from another VF of the adapter (VEB).
    pub const GPRLBC: u32 = 0x46d0;
    /// Good packets sent to another VF of the adapter.
    pub const GPTLBC: u32 = 0x46d4;
    /// Good octets received from another VF of the adapter.
    pub const GORLBC: u32 = 0x46d8;
    /// Good octets sent to another VF of the adapter.
    pub const GOTLBC: u32 = 0x46dc;
}

/// Rows of [`pool_rows`].
pub const POOL_ROWS: usize = 37;

/// The register table rows of the pool's PF-side registers ([`pool`]).
pub const fn pool_rows() -> [RegDef<Hook>; POOL_ROWS] {
    use pool::*;
    const fn rc(name: &'static str, off: u32) -> RegDef<Hook> {
        RegDef::new(name, off).rc()
    }
    [
        RegDef::new("PF_EEC", EEC),
        RegDef::new("PF_VET", VET).reset(0x8100),
        RegDef::new("PF_RAL", RAL0),
        RegDef::new("PF_RAH", RAL0 + 4),
        RegDef::new("PF_MRQC", MRQC),
        RegDef::new("PF_RSSRK", RSSRK).array(10, 4),
        RegDef::new("PF_ETQF", ETQF).array(8, 4),
        RegDef::new("PF_RETA", RETA).array(32, 4),
        RegDef::new("PF_MTA", MTA).array(128, 4),
        RegDef::new("PF_VFTA", VFTA).array(128, 4),
        rc("CRCERRS", CRCERRS),
        rc("RUC", RUC),
        rc("ROC", ROC),
        rc("XONRXC", XONRXC),
        rc("XOFFRXC", XOFFRXC),
        rc("MPC", MPC),
        rc("SPOOF_DROPS", SPOOF),
        rc("GPRC", GPRC),
        rc("TPR", TPR),
        rc("GORCL", GORCL),
        rc("GORCH", GORCL + 4),
        rc("TORL", TORL),
        rc("TORH", TORL + 4),
        rc("PRC64", PRC64).array(6, 4),
        rc("BPRC", BPRC),
        rc("MPRC", MPRC),
        rc("GPTC", GPTC),
        rc("TPT", TPT),
        rc("GOTCL", GOTCL),
        rc("GOTCH", GOTCL + 4),
        rc("PTC64", PTC64).array(6, 4),
        rc("BPTC", BPTC),
        rc("MPTC", MPTC),
        // What the adapter's VEB switched between its VFs.
        rc("GPRLBC", GPRLBC),
        rc("GPTLBC", GPTLBC),
        rc("GORLBC", GORLBC),
        rc("GOTLBC", GOTLBC),
    ]
}

/// The parts of [`Layout`] every VF shares: the pool's registers and the
/// counters the shared engines count into. The part gives its queues,
/// SRRCTL's offset and its packet and header buffer size fields
/// ([`Layout::srrctl_bsize`], [`Layout::srrctl_bsizehdr`]).
pub const fn vf_layout(
    queues: usize,
    srrctl: u32,
    (srrctl_bsize, srrctl_bsizehdr): (u32, u32),
    context_dd: bool,
) -> Layout {
    use crate::function::stats::{FrameCounters, Split};
    Layout {
        regs_size: REGS_SIZE,
        bar_size: BAR_SIZE,
        reg_bar: 0,
        // No I/O BAR.
        io_bar: usize::MAX,
        msix_bar: 3,
        msix_vectors: MSIX_VECTORS,
        queues,
        pcie_cap: PCIE_CAP,
        max_tx_frame: crate::igb::MAX_TX_FRAME,
        base_period: crate::ptp::BasePeriod::I82576,
        eec: pool::EEC,
        nvm_size: 0,
        ral0: pool::RAL0,
        vet: pool::VET,
        mta: pool::MTA,
        vfta: pool::VFTA,
        mrqc: pool::MRQC,
        rssrk: pool::RSSRK,
        reta: pool::RETA,
        etqf: pool::ETQF,
        etqf_enable: 1 << 31,
        srrctl,
        srrctl_bsize,
        srrctl_bsizehdr,
        dctl_self_clear: 0,
        context_dd,
        crcerrs: pool::CRCERRS,
        ruc: pool::RUC,
        roc: pool::ROC,
        tsctc: None,
        rx_counters: FrameCounters {
            good: pool::GPRC,
            total: pool::TPR,
            good_octets: Split::at(pool::GORCL, 32),
            total_octets: Some(Split::at(pool::TORL, 32)),
            size64: pool::PRC64,
            broadcast: pool::BPRC,
            multicast: pool::MPRC,
        },
        tx_counters: FrameCounters {
            good: pool::GPTC,
            total: pool::TPT,
            good_octets: Split::at(pool::GOTCL, 32),
            total_octets: None,
            size64: pool::PTC64,
            broadcast: pool::BPTC,
            multicast: pool::MPTC,
        },
    }
}

/// Where a VF part keeps its registers (82576 §8.27, 82599 §8.3.5).
#[derive(Clone, Copy, Debug)]
pub struct VfMap {
    /// CTRL / VFCTRL.
    pub ctrl: u32,
    /// The register reporting the link (STATUS / VFLINKS).
    pub link: u32,
    /// EICR.
    pub eicr: u32,
    /// EIMS.
    pub eims: u32,
    /// EIAC.
    pub eiac: u32,
    /// EIAM.
    pub eiam: u32,
    /// EITR of vector 0 (the others follow, 4 bytes apart).
    pub eitr0: u32,
    /// IVAR of queues 0 and 1.
    pub ivar0: u32,
    /// IVAR_MISC: the "other causes" (mailbox, link) vector in bits 7:0
    /// with its valid bit 7, as both drivers write it
    /// (`igbvf_configure_msix`, `ixgbevf_set_ivar` for direction -1).
    pub ivar_misc: u32,
    /// The mailbox register.
    pub mailbox: u32,
    /// The mailbox buffer.
    pub mbmem: u32,
}

/// Where a part's advanced receive descriptor reports checksums (its
/// status/error dword): the 82576 has TCPCS and UDPCS, L4E at bit 29 and IPE
/// at 30; the 82599 one L4CS, TCPE at bit 30 and IPE at 31 (its bit 29 is
/// USE, a frame error).
#[derive(Debug, Clone, Copy)]
pub struct CsumBits {
    /// TCP checksum computed.
    pub tcp: u32,
    /// UDP checksum computed.
    pub udp: u32,
    /// TCP/UDP checksum error.
    pub l4_err: u32,
    /// IPv4 header checksum error.
    pub ip_err: u32,
}

/// One VF part: its register table and map and what its hardware does its
/// own way. [`Vf<P>`] is the [`Model`].
pub trait VfPart: Send + Sync + Sized + 'static {
    /// Short name, e.g. `igbvf`.
    const NAME: &'static str;
    /// Whose PF answers its mailbox.
    const KIND: PfKind;
    /// Where the shared engines find its registers.
    const LAYOUT: Layout;
    /// Its register table.
    const TABLE: &'static [RegDef<Hook>];
    /// Its register map.
    const MAP: VfMap;
    /// BARs.
    const BARS: &'static [Bar];
    /// Its receive descriptors' checksum status and error bits.
    const CSUM: CsumBits;
    /// The PCI configuration space after reset.
    fn config_space() -> ConfigSpace;
    /// The value of the link register with the link `up`.
    fn link_reg(up: bool) -> u32;
    /// Minimum time between interrupts of a vector with EITR value `v`.
    fn eitr_interval_ns(v: u32) -> u64;
    /// Receive queue `qi` strips VLAN tags.
    fn vlan_strip(f: &Function<Vf<Self>>, qi: usize) -> bool;
    /// Receive queue `q`'s register block.
    fn rxq_base(q: usize) -> u32;
    /// Transmit queue `q`'s register block.
    fn txq_base(q: usize) -> u32;
}

/// A VF as a [`Model`] of [`Function`].
#[derive(Debug)]
pub struct Vf<P>(PhantomData<P>);

/// A VF's configuration: which VF of its adapter it is, and the host's
/// settings for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VfConfig {
    /// VF number within its adapter.
    pub vf: u8,
    /// The host's settings (`ip link set PF vf N …`).
    pub admin: Admin,
}

/// A VF's link: the adapter's (the PF port's cable) under the host's link
/// state setting.
#[derive(Clone, Copy, Debug)]
pub struct VfLink {
    cable: bool,
    mode: LinkMode,
}

impl VfLink {
    /// The host's link state setting.
    pub fn set_mode(&mut self, mode: LinkMode) {
        self.mode = mode;
    }
}

impl Media for VfLink {
    fn link_up(&self) -> bool {
        match self.mode {
            LinkMode::Auto => self.cable,
            LinkMode::Enable => true,
            LinkMode::Disable => false,
        }
    }
    fn set_cable(&mut self, up: bool) {
        self.cable = up;
    }
    fn reset(&mut self) {}
}

/// What a VF keeps beyond its registers: the mailbox and nicemu's PF
/// agent's state of it, under one short lock (taken after the control and
/// queue locks, before none).
#[derive(Debug, Default)]
pub struct VfState {
    core: Mutex<Option<Core>>,
}

#[derive(Debug)]
struct Core {
    mbx: Mailbox,
    agent: Agent,
    /// Mailbox faults: the next requests refused (NACK) or dropped.
    faults: MbxFaults,
}

/// Mailbox faults injected from the host side (`nicemu ctl fault DEV
/// mbx-nack N`, `mbx-drop N`).
#[derive(Clone, Copy, Debug, Default)]
struct MbxFaults {
    nack: u32,
    drop: u32,
}

impl Core {
    fn new(kind: PfKind, admin: Admin) -> Self {
        Core {
            mbx: Mailbox::default(),
            agent: Agent::new(kind, admin),
            faults: MbxFaults::default(),
        }
    }
}

/// What the host's side (`nicemu ctl`) does to a VF, object-safe so the
/// control path holds any VF part alike.
pub trait VfControl: Send + Sync {
    /// The VF's number in its adapter.
    fn vf_index(&self) -> u8;
    /// The host's settings.
    fn admin(&self) -> Admin;
    /// Changes the host's settings (`ip link set PF vf N …`).
    fn set_admin(&self, admin: Admin);
    /// The VF's MAC address as the agent has it (all zero: none yet).
    fn vf_mac(&self) -> [u8; 6];
    /// The last mailbox messages, oldest first.
    fn mailbox_trace(&self) -> Vec<TraceEntry>;
    /// Mailbox counters and the agent's refusals.
    fn mailbox_stats(&self) -> (MailboxStats, u64);
    /// The agent's view of the VF (filters, mode, API).
    fn agent(&self) -> Agent;
    /// The PF resets.
    fn pf_reset(&self);
    /// A function level reset from the host's side (VFLR), the config
    /// header restored by the host afterwards.
    fn vflr(&self);
    /// The PF refuses (NACK) the VF's next `n` messages.
    fn mbx_nack(&self, n: u32);
    /// The PF ignores the VF's next `n` messages: no PFACK, no reply.
    fn mbx_drop(&self, n: u32);
    /// Counts `frames` frames of `octets` octets (FCS included) the
    /// adapter's VEB switched between this VF and another of its VFs:
    /// sent by this VF (`sent`) or received (the VF loopback counters,
    /// VFGPTLBC/VFGOTLBC and VFGPRLBC/VFGORLBC on the 82576).
    fn count_loopback(&self, sent: bool, frames: u32, octets: u64);
}

impl<P: VfPart> Model for Vf<P> {
    const NAME: &'static str = P::NAME;
    const LAYOUT: Layout = P::LAYOUT;
    const BARS: &'static [Bar] = P::BARS;
    const TABLE: &'static [RegDef<Hook>] = P::TABLE;
    type Config = VfConfig;
    type IntrReg = IntrReg;
    type CtlReg = CtlReg;
    type Reg = Reg;
    type Intr = Moderation;
    type Media = VfLink;
    type State = VfState;

    fn config_space() -> ConfigSpace {
        P::config_space()
    }
    /// A VF has no NVM of its own; the image only carries the MAC address
    /// the shared reset loads into the pool's receive address.
    fn nvm(cfg: &VfConfig) -> Nvm {
        let mut n = Nvm::new(64, 0x3f);
        n.set_mac(0, cfg.admin.mac.unwrap_or([0; 6]));
        n
    }
    fn nvm_mac(nvm: &Nvm) -> [u8; 6] {
        let w = [nvm.word(0), nvm.word(1), nvm.word(2)];
        let [a, b] = w[0].to_le_bytes();
        let [c, d] = w[1].to_le_bytes();
        let [e, g] = w[2].to_le_bytes();
        [a, b, c, d, e, g]
    }
    fn media(cfg: &VfConfig) -> VfLink {
        VfLink {
            cable: true,
            mode: cfg.admin.link,
        }
    }
    fn intr_state() -> Moderation {
        Moderation::new(usize::from(MSIX_VECTORS))
    }
    /// VF reset (CTRL.RST, FLR; 82576 §4.3.3, 82599 §4.2.2): the VF's
    /// registers to their defaults, the mailbox free with reset done (RSTD:
    /// the agent finished its part at once), and the VF not clear to send
    /// until its VF_RESET message.
    fn reset_registers(f: &Function<Self>) {
        f.regs.reset_all();
        let mut core = lock(&f.part.core);
        match core.as_mut() {
            Some(c) => {
                c.mbx.vf_reset();
                c.agent.vf_reset();
                // The MAC the VF set survives its reset (the PF keeps it).
                f.sync_ral(c.agent.mac);
            }
            None => {
                *core = Some(Core::new(P::KIND, f.cfg.admin));
            }
        }
        f.regs.poke(P::MAP.mailbox, mailbox::bits::RSTD);
    }
    fn rxq_base(q: usize) -> u32 {
        P::rxq_base(q)
    }
    fn txq_base(q: usize) -> u32 {
        P::txq_base(q)
    }
}

impl<P: VfPart> Function<Vf<P>> {
    /// Runs `f` on the mailbox and agent state.
    fn with_core<R>(&self, f: impl FnOnce(&mut Mailbox, &mut Agent) -> R) -> R {
        let mut g = lock(&self.part.core);
        let c = g.get_or_insert_with(|| Core::new(P::KIND, self.cfg.admin));
        f(&mut c.mbx, &mut c.agent)
    }

    /// Runs `f` on the mailbox faults.
    fn with_faults<R>(&self, f: impl FnOnce(&mut MbxFaults) -> R) -> R {
        let mut g = lock(&self.part.core);
        let c = g.get_or_insert_with(|| Core::new(P::KIND, self.cfg.admin));
        f(&mut c.faults)
    }

    /// Puts the VF's MAC address into the pool's receive address (with
    /// Address Valid unless it is all zero), where the VEB reads it.
    fn sync_ral(&self, mac: [u8; 6]) {
        let av = if mac == [0; 6] { 0 } else { 1 << 31 };
        self.regs.poke(
            pool::RAL0,
            u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
        );
        self.regs.poke(
            pool::RAL0 + 4,
            u32::from(u16::from_le_bytes([mac[4], mac[5]])) | av,
        );
    }

    /// Mirrors the mailbox buffer into the VMBMEM registers.
    fn mirror_mem(&self, m: &Mailbox) {
        for i in 0..WORDS {
            self.regs.poke(P::MAP.mbmem + 4 * i as u32, m.mem_read(i));
        }
        self.regs.poke(P::MAP.mailbox, m.peek());
    }

    /// The VF wrote its mailbox register: a message for the PF is served
    /// by the agent and answered; a PF message that waited for the buffer
    /// is posted. The VF's "other causes" vector signals a PF message.
    fn mailbox_write(&self, v: u32) {
        let mut g = lock(&self.part.core);
        let c = g.get_or_insert_with(|| Core::new(P::KIND, self.cfg.admin));
        let (m, a, faults) = (&mut c.mbx, &mut c.agent, &mut c.faults);
        let notify = {
            let (ev, posted) = m.vf_write(v);
            let replied = match ev {
                VfEvent::Request(_) if faults.drop > 0 => {
                    faults.drop -= 1;
                    log::info!("{}: mailbox request dropped (fault injection)", P::NAME);
                    false
                }
                VfEvent::Request(words) if faults.nack > 0 => {
                    faults.nack -= 1;
                    let reply = a.refuse(&words);
                    m.pf_reply(&reply);
                    true
                }
                VfEvent::Request(words) => {
                    let reply = a.handle(&words);
                    m.pf_reply(&reply);
                    self.sync_ral(a.mac);
                    true
                }
                VfEvent::None => false,
            };
            let nacked = v & mailbox::bits::ACK != 0
                && a.on_vf_ack(self.env.clock.now_ns())
                    .is_some_and(|nack| m.pf_send(nack));
            self.mirror_mem(m);
            posted || replied || nacked
        };
        drop(g);
        if notify {
            self.raise_misc();
        }
    }

    /// Sends the PF's control message (link change, PF reset done).
    fn ping(&self) {
        let posted = self.with_core(|m, a| {
            let msg = a.control_msg();
            let p = m.pf_send(msg);
            self.mirror_mem(m);
            p
        });
        if posted {
            self.raise_misc();
        }
    }

    /// Raises the cause IVAR_MISC routes the VF's other causes (mailbox,
    /// link) to.
    fn raise_misc(&self) {
        let e = self.regs.peek(P::MAP.ivar_misc) & 0xff;
        if e & IVAR_VALID != 0 {
            self.raise_eicr(&mut lock(&self.intr), 1 << (e & 0x7f));
        }
    }

    /// Adds EICR causes and fires the unmasked ones.
    fn raise_eicr(&self, m: &mut Moderation, bits: u32) {
        self.regs.set_bits(P::MAP.eicr, bits & VECTORS);
        self.deliver(m);
    }

    /// Fires every EICR cause whose vector is unmasked and whose EITR
    /// interval passed: EIAC clears the causes fired, EIAM masks their
    /// vectors (82576 §7.8.2.9, 82599 §7.3.1.x for the VF's block).
    fn deliver(&self, m: &mut Moderation) {
        let map = P::MAP;
        let ready = self.regs.peek(map.eicr) & self.regs.peek(map.eims) & VECTORS;
        if ready == 0 {
            return;
        }
        let regs = &self.regs;
        let fire = self.moderate(m, u64::from(ready), |v| {
            P::eitr_interval_ns(regs.peek(map.eitr0 + 4 * v as u32))
        }) as u32;
        if fire == 0 {
            return;
        }
        self.regs
            .clear_bits(map.eicr, fire & self.regs.peek(map.eiac));
        self.regs
            .clear_bits(map.eims, fire & self.regs.peek(map.eiam));
        self.signal_vectors(u64::from(fire));
    }
}

impl<P: VfPart> VfControl for Function<Vf<P>> {
    fn vf_index(&self) -> u8 {
        self.cfg.vf
    }

    fn admin(&self) -> Admin {
        self.with_core(|_, a| a.admin)
    }

    /// A new MAC address becomes the VF's at once (its driver learns it at
    /// its next reset); a link state change reaches the VF as a link change.
    /// Other settings (trust, spoof checking, VLAN, link) leave the MAC the
    /// VF uses alone: a trusted VF that changed its address keeps it, as
    /// `ip link set PF vf N trust off` leaves it on the Linux PFs.
    fn set_admin(&self, admin: Admin) {
        self.with_core(|_, a| {
            if let Some(mac) = admin.mac.filter(|_| admin.mac != a.admin.mac) {
                a.mac = mac;
            }
            a.admin = admin;
            self.sync_ral(a.mac);
        });
        let mut c = self.ctl();
        c.media.set_mode(admin.link);
        self.check_link_change(&mut c);
    }

    /// Read from the pool's receive address, without the agent's lock (the
    /// VEB looks it up per frame).
    fn vf_mac(&self) -> [u8; 6] {
        let lo = self.regs.peek(pool::RAL0).to_le_bytes();
        let hi = self.regs.peek(pool::RAL0 + 4).to_le_bytes();
        [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]
    }

    fn mailbox_trace(&self) -> Vec<TraceEntry> {
        self.with_core(|_, a| a.trace())
    }

    fn mailbox_stats(&self) -> (MailboxStats, u64) {
        self.with_core(|m, a| (m.stats(), a.nacks))
    }

    fn agent(&self) -> Agent {
        self.with_core(|_, a| a.clone())
    }

    /// The VF sees RSTI, loses clear to send, and, when the PF is back,
    /// RSTD and a control message without CTS, as after the Linux PF's
    /// reset.
    fn pf_reset(&self) {
        self.with_core(|m, a| {
            m.pf_reset();
            a.vf_reset();
            m.pf_reset_done();
            self.mirror_mem(m);
        });
        self.ping();
    }

    /// The host resets the VF the way Linux's `pci_reset_function` does
    /// (`pci_dev_save_and_disable`, the FLR, `pci_dev_restore`): the
    /// type 0 header is saved, the FLR resets the function (its registers,
    /// the mailbox's reset done, COMMAND cleared: no bus mastering, as on
    /// the hardware), then the host writes the header back, dword 15 down to
    /// 1 as `pci_restore_config_space` does, so memory space and bus
    /// mastering are on again and the VF's driver recovers by its own reset.
    fn vflr(&self) {
        log::info!("{}: VFLR from the host", P::NAME);
        let mut header = [0u8; 64];
        self.config_read(0, &mut header);
        PciFunction::reset(self);
        for dw in (1..16).rev() {
            let mut now = [0u8; 4];
            self.config_read(4 * dw as u64, &mut now);
            let saved = &header[4 * dw..4 * dw + 4];
            if now != saved {
                self.config_write(4 * dw as u64, saved);
            }
        }
    }

    fn mbx_nack(&self, n: u32) {
        self.with_faults(|f| f.nack = n);
    }

    fn mbx_drop(&self, n: u32) {
        self.with_faults(|f| f.drop = n);
    }

    fn count_loopback(&self, sent: bool, frames: u32, octets: u64) {
        let (p, o) = if sent {
            (pool::GPTLBC, pool::GOTLBC)
        } else {
            (pool::GPRLBC, pool::GORLBC)
        };
        self.stat_add(p, frames);
        self.totals.count(&self.regs, o, octets);
    }
}

impl<P: VfPart> Interrupts for Vf<P> {
    fn intr_read(_: &Function<Self>, _: &mut Moderation, _: IntrReg, _: RegId, v: u32) -> u32 {
        v
    }

    fn intr_write(f: &Function<Self>, m: &mut Moderation, r: IntrReg, w: &Written<Hook>) {
        let map = P::MAP;
        match r {
            IntrReg::Eicr => {}
            IntrReg::Eics => f.raise_eicr(m, w.raw),
            IntrReg::Eims => {
                f.regs.poke(map.eims, (w.old | w.raw) & VECTORS);
                f.deliver(m);
            }
            IntrReg::Eimc => f.regs.clear_bits(map.eims, w.raw),
            IntrReg::Eitr => m.restart(usize::from(w.id.elem)),
        }
    }

    /// Through the queue's IVAR entry (queue `q` in IVAR `q / 2`, receive
    /// in byte `2 (q % 2)`, transmit in the byte after: `igbvf_assign_vector`,
    /// `ixgbevf_set_ivar`).
    fn queue_interrupt(f: &Function<Self>, qi: usize, dir: Dir) {
        let q = qi as u32;
        let shift = 16 * (q & 1) + if dir == Dir::Tx { 8 } else { 0 };
        let e = (f.regs.peek(P::MAP.ivar0 + 4 * (q >> 1)) >> shift) & 0xff;
        if e & IVAR_VALID != 0 {
            f.raise_eicr(&mut lock(&f.intr), 1 << (e & 0x7f));
        }
    }

    /// A link change: the PF tells the VF (`igb_ping_all_vfs`,
    /// `ixgbe_ping_all_vfs` on a link change), which raises the VF's other
    /// causes vector.
    fn link_interrupt(f: &Function<Self>) {
        f.ping();
    }

    fn deliver_pending(f: &Function<Self>, m: &mut Moderation) {
        f.deliver(m);
    }

    fn interrupt_summary(f: &Function<Self>) -> String {
        format!(
            "MSI-X EIMS={:#x} EICR={:#x}",
            f.regs.peek(P::MAP.eims),
            f.regs.peek(P::MAP.eicr)
        )
    }
}

impl<P: VfPart> Control for Vf<P> {
    fn ctl_read(_: &Function<Self>, _: &mut Ctl<VfLink>, _: CtlReg, v: u32) -> u32 {
        v
    }

    fn ctl_write(f: &Function<Self>, c: &mut Ctl<VfLink>, r: CtlReg, w: &Written<Hook>) {
        match r {
            CtlReg::Ctrl => {
                if w.raw & CTRL_RST != 0 {
                    log::debug!("{}: VF reset", P::NAME);
                    f.software_reset(c);
                }
            }
        }
    }

    fn read(f: &Function<Self>, r: Reg, v: u32) -> u32 {
        match r {
            Reg::Link => P::link_reg(f.link_up()),
            Reg::Mailbox => {
                let v = f.with_core(|m, _| m.vf_read());
                f.regs.poke(P::MAP.mailbox, v & !mailbox::bits::R2C);
                v
            }
            Reg::MbMem => v,
            Reg::Stat { from, shift, bits } => {
                let t = f.totals.total_at(&f.regs, from).unwrap_or(0) >> shift;
                let mask = if bits >= 32 {
                    u32::MAX
                } else {
                    (1 << bits) - 1
                };
                t as u32 & mask
            }
        }
    }

    fn write(f: &Function<Self>, r: Reg, w: &Written<Hook>) {
        match r {
            Reg::Mailbox => f.mailbox_write(w.raw),
            Reg::MbMem => {
                let i = usize::from(w.id.elem);
                if !f.with_core(|m, _| m.mem_write(i, w.raw)) {
                    f.regs.poke(P::MAP.mbmem + 4 * i as u32, w.old);
                    f.errors.unknown_reg();
                }
            }
            Reg::Link | Reg::Stat { .. } => {}
        }
    }

    fn mac_enabled(f: &Function<Self>) -> (bool, bool) {
        let on = f.with_core(|_, a| a.enabled);
        (on, on)
    }
}

/// The ethertype of a VLAN tag.
const TPID: u16 = 0x8100;

/// The VLAN ID of a tagged frame.
fn vlan_of(frame: &[u8]) -> Option<u16> {
    (frame.len() >= 16 && u16::from_be_bytes([frame[12], frame[13]]) == TPID)
        .then(|| u16::from_be_bytes([frame[14], frame[15]]) & 0xfff)
}

impl<P: VfPart> Receive for Vf<P> {
    fn rx_link(f: &Function<Self>) -> bool {
        f.link_up()
    }

    /// The PF enabled the pool's receive (after the VF's reset message).
    fn rx_enabled(f: &Function<Self>) -> bool {
        f.with_core(|_, a| a.enabled)
    }

    fn rss_enabled(_: u32) -> bool {
        false
    }

    /// The largest frame the VF asked for (SET_LPE), a tagged standard
    /// frame by default.
    fn max_frame(f: &Function<Self>) -> MaxFrame {
        MaxFrame::any(f.with_core(|_, a| a.max_frame as usize).max(64))
    }

    /// The pool's filters as the agent set them.
    fn rx_accept(f: &Function<Self>, frame: &[u8]) -> bool {
        f.with_core(|_, a| a.accepts_vlan(vlan_of(frame)) && a.accepts_dst(&frame[..6]))
    }

    fn ptp_match(_: &Function<Self>) -> PtpMatch {
        PtpMatch {
            v1_ctrl: 0,
            v2_msg: 0,
            udp_port: 0,
        }
    }

    fn vlan_strip(f: &Function<Self>, qi: usize) -> bool {
        P::vlan_strip(f, qi)
    }

    /// IP and L4 checksum status in the part's own bits (the PF enables
    /// receive checksum offload for every pool).
    fn rx_status(_: &Function<Self>, frame: &[u8], ptype: u16, _: u32) -> RxStatus {
        let mut st = 0;
        let b = P::CSUM;
        if ptype != 0 {
            let c = verify_rx(frame);
            if c.ip_checked {
                st |= RXD_STAT_IPCS;
                if !c.ip_ok {
                    st |= b.ip_err;
                }
            }
            if c.l4_checked {
                st |= if c.l4_proto == nicemu_net_util::IPPROTO_TCP {
                    b.tcp
                } else {
                    b.udp
                };
                if !c.l4_ok {
                    st |= b.l4_err;
                }
            }
        }
        RxStatus { csum: st, hash: 0 }
    }

    /// Under a port VLAN the PF strips its tag before the frame reaches
    /// the VF's queue (82576 VMOLR.STRVLAN, 82599 VMVIR).
    fn rx_security(f: &Function<Self>, frame: &[u8]) -> Option<(RxSecurity, Option<Vec<u8>>)> {
        f.with_core(|_, a| a.admin.vlan)?;
        vlan_of(frame)?;
        let mut stripped = Vec::with_capacity(frame.len() - 4);
        stripped.extend_from_slice(&frame[..12]);
        stripped.extend_from_slice(&frame[16..]);
        Some((RxSecurity::default(), Some(stripped)))
    }

    const PAUSE_RX: PauseCounters = PauseCounters {
        xon: pool::XONRXC,
        xoff: pool::XOFFRXC,
    };

    fn count_rx_miss(f: &Function<Self>, _: usize) {
        f.stat_add(pool::MPC, 1);
    }
}

impl<P: VfPart> Transmit for Vf<P> {
    /// The PF enabled the pool's transmit (after the VF's reset message).
    fn tx_enabled(f: &Function<Self>) -> bool {
        f.with_core(|_, a| a.enabled)
    }

    fn tx_link(f: &Function<Self>) -> bool {
        f.link_up()
    }

    fn tx_settings(_: &Function<Self>) -> FinishSettings {
        FinishSettings {
            tpid: TPID,
            pad: true,
        }
    }

    /// The PF's transmit policy ([`Agent::tx_verdict`]): anti-spoofing
    /// drops and counts (`SPOOF_DROPS`), a port VLAN's tag is inserted.
    fn tx_security(
        f: &Function<Self>,
        _: (&FrameOpts, &crate::desc::TxContext),
        _: usize,
        frame: &mut Vec<u8>,
    ) -> bool {
        match f.with_core(|_, a| a.tx_verdict(frame)) {
            TxVerdict::Pass => true,
            TxVerdict::Tag(tci) => {
                let [hi, lo] = tci.to_be_bytes();
                frame.splice(12..12, [0x81, 0x00, hi, lo]);
                true
            }
            TxVerdict::Spoofed => {
                f.stat_add(pool::SPOOF, 1);
                false
            }
        }
    }

    fn tx_route(_: &Function<Self>) -> TxRoute {
        TxRoute::Wire
    }
}

#[cfg(any(test, feature = "test-utils"))]
pub mod double;
#[cfg(test)]
mod tests;
