// SPDX-License-Identifier: Apache-2.0
//! Intel 82599 (ixgbe) 10 Gigabit Ethernet controller, one SFP+ PCI function
//! (device 8086:10FB, as on the X520 adapters).
//!
//! Behaviour follows the 82599 datasheet and what the Linux `ixgbe` driver
//! reads and writes during probe (`ixgbe_probe`, `ixgbe_reset_hw_82599`,
//! `ixgbe_identify_sfp_module_generic`, `ixgbe_setup_sfp_modules_82599`), open,
//! the watchdog and `ethtool -t`. The function itself is the shared
//! [`Function`]; this module is the part: its [`Model`] (register table
//! [`regs::TABLE`] and map, BARs, NVM, SFP+ cage, reset), and in their
//! modules its interrupt logic ([`intr`]), control registers and SFP+ cage
//! (`ctl`, [`sfp`]), receiver (`rx`, `stats`), transmitter (`tx`) and IPsec
//! engine ([`ipsec`]).

mod ctl;
mod eeprom;
pub mod fdir;
pub mod intr;
pub mod ipsec;
mod pci;
pub mod regs;
pub mod rsc;
mod rx;
pub mod sfp;
mod stats;
mod tx;

use std::sync::Arc;

use crate::env::DeviceEnv;
use crate::function::stats::{rx_counters, tx_counters};
use crate::function::{Function, Layout, Model};
use crate::nvm::Nvm;
use crate::pci::Bar;
use crate::pci::ConfigSpace;
use crate::port::NicFunction;
use crate::ptp::BasePeriod;
use crate::regfile::RegDef;
use intr::Intr;

pub use crate::errors::GuestErrors;
pub use ctl::SfpCage;
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

/// Device configuration chosen by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IxgbeConfig {
    /// Permanent MAC address (stored in the NVM).
    pub mac: [u8; 6],
    /// Module in the SFP+ cage.
    pub sfp: SfpKind,
}

/// What an 82599 function keeps beyond its registers.
#[derive(Debug, Default)]
pub struct State {
    /// The Flow Director's filter table ([`fdir`]).
    pub fdir: fdir::FlowDirector,
    /// The receive side coalescing contexts ([`rsc`]).
    pub rsc: rsc::Rsc,
    /// The IPsec engine's SA tables ([`ipsec`]).
    pub ipsec: ipsec::Ipsec,
}

/// The 82599 as a [`Model`] of [`Function`].
#[derive(Debug)]
pub struct I82599;

/// An 82599 function.
pub type Ixgbe = Function<I82599>;

/// Largest frame the transmit path gathers (a 256 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 256 * 1024 + 256;

impl Model for I82599 {
    const NAME: &'static str = "ixgbe";
    const LAYOUT: Layout = Layout {
        regs_size: pci::REGS_SIZE,
        bar_size: pci::REGS_SIZE,
        reg_bar: 0,
        io_bar: 2,
        msix_bar: 4,
        msix_vectors: MSIX_VECTORS,
        queues: NUM_QUEUES,
        pcie_cap: pci::PCIE_CAP,
        max_tx_frame: MAX_TX_FRAME,
        // The model always links at 10 Gb/s: SYSTIM's 6.4 ns base clock.
        base_period: BasePeriod::I82599_10G,
        eec: EEC,
        nvm_size: eeprom::EEC_SIZE,
        ral0: RAL,
        vet: VLNCTRL,
        mta: MTA,
        vfta: VFTA,
        mrqc: MRQC,
        rssrk: RSSRK,
        reta: RETA,
        etqf: ETQF,
        etqf_enable: rx::ETQF_FILTER_EN,
        srrctl: q::SRRCTL,
        srrctl_bsize: 0x1f,
        srrctl_bsizehdr: 0,
        dctl_self_clear: QUEUE_SWFLSH,
        context_dd: true,
        crcerrs: stat::CRCERRS,
        ruc: stat::RUC,
        roc: stat::ROC,
        tsctc: None,
        rx_counters: rx_counters(4),
        tx_counters: tx_counters(4, None),
    };
    const BARS: &'static [Bar] = &pci::BARS;
    const TABLE: &'static [RegDef<Hook>] = TABLE;
    type Config = IxgbeConfig;
    type IntrReg = IntrReg;
    type CtlReg = CtlReg;
    type Reg = Reg;
    type Intr = Intr;
    type Media = SfpCage;
    type State = State;

    fn config_space() -> ConfigSpace {
        pci::config_space()
    }
    fn nvm(cfg: &IxgbeConfig) -> Nvm {
        eeprom::image(cfg.mac)
    }
    fn nvm_mac(nvm: &Nvm) -> [u8; 6] {
        eeprom::mac(nvm)
    }
    fn media(cfg: &IxgbeConfig) -> SfpCage {
        SfpCage::new(cfg.sfp)
    }
    fn intr_state() -> Intr {
        Intr::new(usize::from(MSIX_VECTORS))
    }
    fn reset_registers(f: &Ixgbe) {
        f.regs.reset_all();
        f.part.fdir.reset();
        f.part.rsc.reset();
    }
    fn rxq_base(q: usize) -> u32 {
        rxq_base(q as u32)
    }
    fn txq_base(q: usize) -> u32 {
        txq_base(q as u32)
    }
}

impl Ixgbe {
    /// The MAC loops transmitted frames back (HLREG0.LPBK).
    pub(super) fn mac_loopback(&self) -> bool {
        self.regs.peek(HLREG0) & hlreg0::LPBK != 0
    }
}

/// Creates an ixgbe function as a shared [`NicFunction`].
pub fn new_function(cfg: IxgbeConfig, env: DeviceEnv) -> Arc<dyn NicFunction> {
    Arc::new(Ixgbe::new(cfg, env))
}

#[cfg(any(test, feature = "test-utils"))]
pub mod double;
#[cfg(test)]
mod tests;
