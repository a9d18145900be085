//! Intel 82599 (ixgbe) 10 Gigabit Ethernet controller, one SFP+ PCI function
//! (device 8086:10FB, as on the X520 adapters).
//!
//! Behaviour follows the 82599 datasheet and what the Linux `ixgbe` driver
//! reads and writes during probe (`ixgbe_probe`, `ixgbe_reset_hw_82599`,
//! `ixgbe_identify_sfp_module_generic`, `ixgbe_setup_sfp_modules_82599`), open,
//! the watchdog and `ethtool -t`. The function itself is the shared
//! [`Function`]; this module is the part: its register table
//! ([`regs::TABLE`]) and map, its interrupt logic ([`intr`]), control
//! registers and SFP+ cage ([`ctl`], [`sfp`]), receive filters ([`rx`]),
//! transmit settings ([`tx`]) and counters ([`stats`]).

mod ctl;
mod eeprom;
pub mod intr;
mod pci;
pub mod regs;
mod rx;
pub mod sfp;
mod stats;
mod tx;

use std::sync::Arc;

use crate::function::{Ctl, Dir, Function, Layout, Model, PtpMatch, RxStatus, TxRoute};
use crate::nvm::Nvm;
use crate::pci::ConfigSpace;
use crate::ptp::BasePeriod;
use crate::regfile::{RegDef, RegId, Written};
use crate::txframe::FinishSettings;
use crate::{Bar, DeviceEnv, NicFunction};
use intr::Intr;

pub use crate::GuestErrors;
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

/// RXCTRL: receive enable.
const RXCTRL_RXEN: u32 = 1 << 0;
/// DMATXCTL: transmit enable.
const DMATXCTL_TE: u32 = 1 << 0;

/// Device configuration chosen by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IxgbeConfig {
    /// Permanent MAC address (stored in the NVM).
    pub mac: [u8; 6],
    /// Module in the SFP+ cage.
    pub sfp: SfpKind,
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
        mrqc: MRQC,
        rssrk: RSSRK,
        reta: RETA,
        etqf: ETQF,
        etqf_enable: rx::ETQF_FILTER_EN,
        srrctl: q::SRRCTL,
        srrctl_bsize: 0x1f,
        dctl_self_clear: QUEUE_SWFLSH,
        context_dd: true,
        crcerrs: stat::CRCERRS,
        ruc: stat::RUC,
        roc: stat::ROC,
        tsctc: None,
        rx_counters: stats::RX,
        tx_counters: stats::TX,
    };
    const BARS: &'static [Bar] = &pci::BARS;
    const TABLE: &'static [RegDef<Hook>] = TABLE;
    type Config = IxgbeConfig;
    type IntrReg = IntrReg;
    type CtlReg = CtlReg;
    type Reg = Reg;
    type Intr = Intr;
    type Media = SfpCage;

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
    }
    fn rxq_base(q: usize) -> u32 {
        rxq_base(q as u32)
    }
    fn txq_base(q: usize) -> u32 {
        txq_base(q as u32)
    }

    fn intr_read(f: &Ixgbe, m: &mut Intr, r: IntrReg, id: RegId, v: u32) -> u32 {
        f.on_intr_read(m, r, id, v)
    }
    fn intr_write(f: &Ixgbe, m: &mut Intr, r: IntrReg, w: &Written<Hook>) {
        f.on_intr_write(m, r, w);
    }
    fn ctl_read(f: &Ixgbe, c: &mut Ctl<SfpCage>, r: CtlReg, v: u32) -> u32 {
        f.on_ctl_read(c, r, v)
    }
    fn ctl_write(f: &Ixgbe, c: &mut Ctl<SfpCage>, r: CtlReg, w: &Written<Hook>) {
        f.on_ctl_write(c, r, w);
    }
    fn read(f: &Ixgbe, r: Reg, v: u32) -> u32 {
        f.on_read(r, v)
    }
    fn write(f: &Ixgbe, r: Reg, w: &Written<Hook>) {
        f.on_write(r, w);
    }

    fn queue_interrupt(f: &Ixgbe, qi: usize, dir: Dir) {
        f.queue_cause(qi, dir);
    }
    fn link_interrupt(f: &Ixgbe) {
        f.raise_other(intr::EICR_LSC);
    }
    fn deliver_pending(f: &Ixgbe, m: &mut Intr) {
        f.deliver_vectors(m);
    }

    fn rx_enabled(f: &Ixgbe) -> bool {
        f.regs.peek(RXCTRL) & RXCTRL_RXEN != 0
    }
    fn wire_rx(f: &Ixgbe) -> bool {
        // Without link, or while the MAC loops back, frames from the wire
        // are dropped.
        f.link_up() && !f.mac_loopback()
    }
    fn rss_enabled(mrqc: u32) -> bool {
        matches!(mrqc & 0xf, 1..=5)
    }
    fn max_frame(f: &Ixgbe, frame: &[u8]) -> usize {
        f.max_frame(frame)
    }
    fn rx_accept(f: &Ixgbe, frame: &[u8]) -> bool {
        f.rx_accept(frame)
    }
    fn ptp_match(f: &Ixgbe) -> PtpMatch {
        f.ptp_match()
    }
    fn vlan_strip(f: &Ixgbe, qi: usize) -> bool {
        f.regs.peek(rxq_base(qi as u32) + q::DCTL) & RXDCTL_VME != 0
    }
    fn rx_status(_: &Ixgbe, frame: &[u8], ptype: u16, hash: u32) -> RxStatus {
        rx::status(frame, ptype, hash)
    }
    fn count_rx_queue(f: &Ixgbe, qi: usize, octets: u64) {
        f.count_rx_queue(qi, octets);
    }
    fn count_rx_miss(f: &Ixgbe, qi: usize) {
        f.count_rx_miss(qi);
    }

    fn tx_enabled(f: &Ixgbe) -> bool {
        f.regs.peek(DMATXCTL) & DMATXCTL_TE != 0
    }
    fn tx_settings(f: &Ixgbe) -> FinishSettings {
        f.tx_settings()
    }
    fn tx_route(f: &Ixgbe) -> TxRoute {
        if f.mac_loopback() {
            TxRoute::Loopback
        } else if f.link_up() {
            TxRoute::Wire
        } else {
            TxRoute::Nowhere
        }
    }
    fn count_tx_queue(f: &Ixgbe, qi: usize, octets: u64) {
        f.count_tx_queue(qi, octets);
    }

    fn mac_enabled(f: &Ixgbe) -> (bool, bool) {
        (Self::rx_enabled(f), Self::tx_enabled(f))
    }
    fn interrupt_summary(f: &Ixgbe) -> String {
        format!(
            "GPIE={:#x} EIMS={:#x} EIMS_EX0={:#x} EIMS_EX1={:#x}",
            f.regs.peek(GPIE),
            f.regs.peek(EIMS),
            f.regs.peek(EIMS_EX),
            f.regs.peek(EIMS_EX + 4)
        )
    }
}

impl Ixgbe {
    /// The MAC loops transmitted frames back (HLREG0.LPBK).
    fn mac_loopback(&self) -> bool {
        self.regs.peek(HLREG0) & hlreg0::LPBK != 0
    }
}

/// Creates an ixgbe function as a shared [`NicFunction`].
pub fn new_function(cfg: IxgbeConfig, env: DeviceEnv) -> Arc<dyn NicFunction> {
    Arc::new(Ixgbe::new(cfg, env))
}

#[cfg(test)]
mod tests;
