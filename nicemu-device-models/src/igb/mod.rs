// SPDX-License-Identifier: Apache-2.0
//! Intel 82576 (igb) Gigabit Ethernet controller, one PCI function.
//!
//! Behaviour follows the 82576 datasheet and what the Linux `igb` driver reads
//! and writes during probe, open, reset, the watchdog and `ethtool -t`. The
//! function itself is the shared [`Function`]; this module is the part: its
//! [`Model`] (register table [`regs::TABLE`] and map, BARs, NVM, PHY, reset),
//! and in their modules its interrupt logic ([`intr`]), control registers
//! (`ctl`), receiver (`rx`) and transmitter (`tx`).

mod ctl;
mod eeprom;
pub mod intr;
mod pci;
mod phy;
pub mod regs;
mod rx;
mod tx;

use std::sync::Arc;

use crate::env::DeviceEnv;
use crate::function::stats::{rx_counters, tx_counters, Split};
use crate::function::{Function, Layout, Model};
use crate::moderation::Moderation;
use crate::nvm::Nvm;
use crate::pci::Bar;
use crate::pci::ConfigSpace;
use crate::phy::Phy;
use crate::port::NicFunction;
use crate::ptp::BasePeriod;
use crate::regfile::RegDef;

pub use crate::errors::GuestErrors;
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
    /// Speed 100 Mb/s.
    pub const SPEED_100: u32 = 1 << 6;
    /// Speed 1000 Mb/s.
    pub const SPEED_1000: u32 = 1 << 7;
    /// PHY reset asserted.
    pub const PHYRA: u32 = 1 << 10;
    /// GIO master enable status.
    pub const GIO_MASTER_ENABLE: u32 = 1 << 19;
    /// PF reset done.
    pub const PF_RST_DONE: u32 = 1 << 21;
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

/// The 82576 as a [`Model`] of [`Function`].
#[derive(Debug)]
pub struct I82576;

/// An 82576 function.
pub type Igb = Function<I82576>;

/// Largest frame the transmit path gathers (a 64 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 64 * 1024 + 256;

impl Model for I82576 {
    const NAME: &'static str = "igb";
    const LAYOUT: Layout = Layout {
        regs_size: pci::BAR0_SIZE,
        bar_size: pci::BAR0_SIZE,
        reg_bar: 0,
        io_bar: 2,
        msix_bar: 3,
        msix_vectors: MSIX_VECTORS,
        queues: NUM_QUEUES,
        pcie_cap: pci::PCIE_CAP,
        max_tx_frame: MAX_TX_FRAME,
        base_period: BasePeriod::I82576,
        eec: EECD,
        nvm_size: eeprom::EECD_SIZE_EX,
        ral0: RAL,
        vet: VET,
        mta: MTA,
        vfta: VFTA,
        mrqc: MRQC,
        rssrk: RSSRK,
        reta: RETA,
        etqf: ETQF,
        etqf_enable: rx::ETQF_FILTER_ENABLE,
        srrctl: q::SRRCTL,
        srrctl_bsize: 0x7f,
        srrctl_bsizehdr: 0x0f00,
        dctl_self_clear: 0,
        context_dd: false,
        crcerrs: stat::CRCERRS,
        ruc: stat::RUC,
        roc: stat::ROC,
        tsctc: Some(stat::TSCTC),
        rx_counters: rx_counters(32),
        tx_counters: tx_counters(32, Some(Split::at(stat::TOTL, 32))),
    };
    const BARS: &'static [Bar] = &pci::BARS;
    const TABLE: &'static [RegDef<Hook>] = TABLE;
    type Config = IgbConfig;
    type IntrReg = IntrReg;
    type CtlReg = CtlReg;
    type Reg = Reg;
    type Intr = Moderation;
    type State = ();
    type Media = Phy;

    fn config_space() -> ConfigSpace {
        pci::config_space()
    }
    fn nvm(cfg: &IgbConfig) -> Nvm {
        eeprom::image(cfg.mac)
    }
    fn nvm_mac(nvm: &Nvm) -> [u8; 6] {
        eeprom::mac(nvm)
    }
    fn media(_: &IgbConfig) -> Phy {
        Phy::new(phy::IGP03)
    }
    fn intr_state() -> Moderation {
        Moderation::new(intr::EITR_VECTORS)
    }
    fn reset_registers(f: &Igb) {
        f.regs.reset_except(|d| matches!(d.name, "RXPBS" | "TXPBS"));
        // Queue 0 is enabled after reset on the 82576.
        f.regs.set_bits(RXQ_BASE + q::DCTL, QUEUE_ENABLE);
        f.regs.set_bits(TXQ_BASE + q::DCTL, QUEUE_ENABLE);
    }
    fn rxq_base(q: usize) -> u32 {
        RXQ_BASE + q as u32 * QUEUE_STRIDE
    }
    fn txq_base(q: usize) -> u32 {
        TXQ_BASE + q as u32 * QUEUE_STRIDE
    }
}

/// Creates an igb function as a shared [`NicFunction`].
pub fn new_function(cfg: IgbConfig, env: DeviceEnv) -> Arc<dyn NicFunction> {
    Arc::new(Igb::new(cfg, env))
}

#[cfg(any(test, feature = "test-utils"))]
pub mod double;
#[cfg(test)]
mod tests;
