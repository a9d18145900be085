// SPDX-License-Identifier: Apache-2.0
//! The 82576 BAR0 register table (82576 datasheet §8, register summary table 8-2;
//! offsets as used by the Linux igb driver's `e1000_regs.h`).
//!
//! Reset values and writable masks come from the datasheet; where the driver's
//! ethtool register self-test (`reg_test_82576` in `igb_ethtool.c`) needs bits to
//! stick, the mask includes them. Registers with behaviour beyond the generic
//! access kinds carry a [`Hook`].

use crate::ptp::TsReg;
use crate::regfile::RegDef;

/// Interrupt registers with side effects (§7.3, §8.8): their handlers run
/// under the interrupt lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntrReg {
    /// Interrupt cause read (clear rules of §7.3.1.1 / §8.8.1).
    Icr,
    /// Interrupt cause set.
    Ics,
    /// Interrupt mask set.
    Ims,
    /// Interrupt mask clear.
    Imc,
    /// Extended interrupt cause (MSI-X vectors).
    Eicr,
    /// Extended interrupt cause set.
    Eics,
    /// Extended interrupt mask set.
    Eims,
    /// Extended interrupt mask clear.
    Eimc,
    /// Interrupt throttle: CNT_IGNR reads as 0; a write restarts the interval.
    Eitr,
}

/// Control-path registers with side effects: their handlers run under the
/// control lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlReg {
    /// Device control: RST / PHY_RST, set link up.
    Ctrl,
    /// MDI control: PHY register access.
    Mdic,
}

/// Other registers with side effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// Device status: computed from link state.
    Status,
    /// Transmit control: enabling it rings every queue.
    Tctl,
}

/// The hooks of the 82576's registers.
pub type Hook = crate::function::Hook<IntrReg, CtlReg, Reg>;
use crate::function::stats::{shared_counter_rows, SHARED_COUNTERS};
use crate::function::QueueReg;

// ---- offsets (e1000_regs.h) ----
/// Device control.
pub const CTRL: u32 = 0x0000;
/// Device status.
pub const STATUS: u32 = 0x0008;
/// EEPROM/flash control.
pub const EECD: u32 = 0x0010;
/// EEPROM read.
pub const EERD: u32 = 0x0014;
/// Extended device control.
pub const CTRL_EXT: u32 = 0x0018;
/// MDI control.
pub const MDIC: u32 = 0x0020;
/// VLAN ether type.
pub const VET: u32 = 0x0038;
/// Interrupt cause read.
pub const ICR: u32 = 0x00c0;
/// Interrupt cause set.
pub const ICS: u32 = 0x00c8;
/// Interrupt mask set/read.
pub const IMS: u32 = 0x00d0;
/// Interrupt mask clear.
pub const IMC: u32 = 0x00d8;
/// Interrupt acknowledge auto-mask.
pub const IAM: u32 = 0x00e0;
/// Receive control.
pub const RCTL: u32 = 0x0100;
/// Transmit control.
pub const TCTL: u32 = 0x0400;
/// Manageability EEPROM control.
pub const EEMNGCTL: u32 = 0x1010;
/// General purpose interrupt enable.
pub const GPIE: u32 = 0x1514;
/// Extended interrupt cause set.
pub const EICS: u32 = 0x1520;
/// Extended interrupt mask set/read.
pub const EIMS: u32 = 0x1524;
/// Extended interrupt mask clear.
pub const EIMC: u32 = 0x1528;
/// Extended interrupt auto clear.
pub const EIAC: u32 = 0x152c;
/// Extended interrupt auto mask.
pub const EIAM: u32 = 0x1530;
/// Extended interrupt cause read.
pub const EICR: u32 = 0x1580;
/// Interrupt throttle of vector 0 (25 registers, 4 bytes apart).
pub const EITR0: u32 = 0x1680;
/// Interrupt vector allocation (8 registers).
pub const IVAR0: u32 = 0x1700;
/// Interrupt vector allocation for other causes.
pub const IVAR_MISC: u32 = 0x1740;
/// Receive packet buffer size.
pub const RXPBS: u32 = 0x2404;
/// Receive checksum control.
pub const RXCSUM: u32 = 0x5000;
/// Multicast table array.
pub const MTA: u32 = 0x5200;
/// Receive address low (entries 0..15).
pub const RAL: u32 = 0x5400;
/// Receive address high (entries 0..15).
pub const RAH: u32 = 0x5404;
/// Receive address low (entries 16..23).
pub const RAL2: u32 = 0x54e0;
/// VLAN filter table array.
pub const VFTA: u32 = 0x5600;
/// Multiple receive queues command.
pub const MRQC: u32 = 0x5818;
/// Software semaphore.
pub const SWSM: u32 = 0x5b50;
/// Software/firmware synchronisation.
pub const SW_FW_SYNC: u32 = 0x5b5c;
/// Redirection table.
pub const RETA: u32 = 0x5c00;
/// Ethertype queue filters (8).
pub const ETQF: u32 = 0x5cb0;
/// Time sync receive configuration (PTP v1 control / v2 message type).
pub const TSYNCRXCFG: u32 = 0x5f50;
/// System time, low.
pub const SYSTIML: u32 = 0xb600;
/// Time sync interrupt cause.
pub const TSICR: u32 = 0xb66c;
/// Time sync interrupt mask.
pub const TSIM: u32 = 0xb674;
/// RSS random key.
pub const RSSRK: u32 = 0x5c80;

/// Canonical receive queue register block: queue `n` at `RXQ_BASE + n * QUEUE_STRIDE`.
pub const RXQ_BASE: u32 = 0xc000;
/// Canonical transmit queue register block.
pub const TXQ_BASE: u32 = 0xe000;
/// Distance between queue blocks.
pub const QUEUE_STRIDE: u32 = 0x40;
/// Number of queues of each direction.
pub const NUM_QUEUES: usize = 16;

/// Offsets within a queue block.
pub mod q {
    /// Descriptor base low.
    pub const BAL: u32 = 0x00;
    /// Descriptor base high.
    pub const BAH: u32 = 0x04;
    /// Ring length in bytes.
    pub const LEN: u32 = 0x08;
    /// Split and replication receive control (RX only).
    pub const SRRCTL: u32 = 0x0c;
    /// Head.
    pub const H: u32 = 0x10;
    /// Tail.
    pub const T: u32 = 0x18;
    /// Queue control.
    pub const DCTL: u32 = 0x28;
    /// Receive queue drop packet count (RX only).
    pub const RQDPC: u32 = 0x30;
    /// Head write-back address low (TX only).
    pub const WBAL: u32 = 0x38;
    /// Head write-back address high (TX only).
    pub const WBAH: u32 = 0x3c;
}

/// SRRCTL's writable bits (82576 datasheet, SRRCTL; the VF's the same):
/// BSIZEPACKET 6:0, BSIZEHEADER 11:8, DESCTYPE 27:25, TIMESTAMP 30,
/// DROP_EN 31.
pub const SRRCTL_MASK: u32 = 0xce00_0f7f;

/// Statistics register offsets used by the data path.
pub mod stat {
    pub use crate::function::stats::stat::*;

    /// Missed packets.
    pub const MPC: u32 = 0x4010;
    /// Receive no buffers.
    pub const RNBC: u32 = 0x40a0;
    /// Total octets transmitted (low).
    pub const TOTL: u32 = 0x40c8;
    /// TCP segmentation contexts transmitted.
    pub const TSCTC: u32 = 0x40f8;
}

const fn rxq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, RXQ_BASE + off).array(NUM_QUEUES as u32, QUEUE_STRIDE)
}
const fn txq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, TXQ_BASE + off).array(NUM_QUEUES as u32, QUEUE_STRIDE)
}
/// Legacy aliases of queues 0..3 at 0x2800 / 0x3800 + n * 0x100.
const fn rxq_legacy(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, 0x2800 + off)
        .array(4, 0x100)
        .alias_of(RXQ_BASE + off, QUEUE_STRIDE)
}
const fn txq_legacy(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, 0x3800 + off)
        .array(4, 0x100)
        .alias_of(TXQ_BASE + off, QUEUE_STRIDE)
}
const fn stat(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, off).rc()
}

pub use crate::function::QUEUE_ENABLE;

/// The register table.
const OWN: &[RegDef<Hook>] = &[
    // General (§8.2)
    RegDef::new("CTRL", CTRL)
        .reset(0x0014_0241)
        .mask(0xfdff_fe7f)
        .hook(Hook::Ctl(CtlReg::Ctrl)),
    RegDef::new("STATUS", STATUS)
        .ro()
        .hook(Hook::Part(Reg::Status)),
    RegDef::new("EECD", EECD)
        .reset((1 << 9) | (1 << 8))
        .mask(0x0000_0047)
        .hook(Hook::NvmGrant),
    RegDef::new("EERD", EERD)
        .mask(0x0000_fffd)
        .hook(Hook::NvmRead),
    RegDef::new("CTRL_EXT", CTRL_EXT).mask(0xff3f_ffff),
    RegDef::new("FLA", 0x001c),
    RegDef::new("MDIC", MDIC)
        .mask(0xbfff_ffff)
        .hook(Hook::Ctl(CtlReg::Mdic)),
    RegDef::new("SCTL", 0x0024),
    RegDef::new("FCAL", 0x0028).reset(0x00c2_8001),
    RegDef::new("FCAH", 0x002c).reset(0x0100).mask(0x0000_ffff),
    RegDef::new("FCT", 0x0030).reset(0x8808).mask(0x0000_ffff),
    RegDef::new("CONNSW", 0x0034),
    RegDef::new("VET", VET).reset(0x8100),
    RegDef::new("ICR", ICR).w1c().hook(Hook::Intr(IntrReg::Icr)),
    RegDef::new("ITR", 0x00c4),
    RegDef::new("ICS", ICS).wo().hook(Hook::Intr(IntrReg::Ics)),
    RegDef::new("IMS", IMS).hook(Hook::Intr(IntrReg::Ims)),
    RegDef::new("IMC", IMC).wo().hook(Hook::Intr(IntrReg::Imc)),
    RegDef::new("IAM", IAM),
    RegDef::new("RCTL", RCTL).mask(0x07ff_fffe),
    RegDef::new("FCTTV", 0x0170).mask(0x0000_ffff),
    RegDef::new("TXCW", 0x0178),
    RegDef::new("RXCW", 0x0180).ro(),
    RegDef::new("TCTL", TCTL)
        .reset(0xa004_10f8)
        .mask(0xffff_fffe)
        .hook(Hook::Part(Reg::Tctl)),
    RegDef::new("TCTL_EXT", 0x0404).reset(0x0004_0042),
    RegDef::new("TIPG", 0x0410)
        .reset(0x0060_2008)
        .mask(0x3fff_ffff),
    RegDef::new("AIT", 0x0458),
    RegDef::new("LEDCTL", 0x0e00).reset(0x0789_0401),
    RegDef::new("PBA", 0x1000).reset(0x0000_0040),
    RegDef::new("PBS", 0x1008),
    RegDef::new("EEMNGCTL", EEMNGCTL).reset(1 << 18).ro(),
    RegDef::new("EEARBC", 0x1024),
    RegDef::new("I2CCMD", 0x1028).reset(1 << 29),
    RegDef::new("I2CPARAMS", 0x102c),
    RegDef::new("WDSTP", 0x1040),
    RegDef::new("WDSWSTS", 0x1044),
    RegDef::new("FRTIMER", 0x1048),
    RegDef::new("TCPTIMER", 0x104c),
    // Interrupts (§8.8)
    RegDef::new("GPIE", GPIE).mask(0xc000_0091),
    RegDef::new("EICS", EICS)
        .wo()
        .hook(Hook::Intr(IntrReg::Eics)),
    RegDef::new("EIMS", EIMS)
        .mask(0x01ff_ffff)
        .hook(Hook::Intr(IntrReg::Eims)),
    RegDef::new("EIMC", EIMC)
        .wo()
        .hook(Hook::Intr(IntrReg::Eimc)),
    RegDef::new("EIAC", EIAC).mask(0x01ff_ffff),
    RegDef::new("EIAM", EIAM).mask(0x01ff_ffff),
    RegDef::new("EICR", EICR)
        .w1c()
        .hook(Hook::Intr(IntrReg::Eicr)),
    RegDef::new("EITR", EITR0)
        .array(25, 4)
        .mask(0x7fff_fffc)
        .hook(Hook::Intr(IntrReg::Eitr)),
    RegDef::new("IVAR", IVAR0).array(8, 4).mask(0x9f9f_9f9f),
    RegDef::new("IVAR_MISC", IVAR_MISC).mask(0x0000_9f9f),
    // Receive (§8.10)
    RegDef::new("FCRTL", 0x2160).mask(0x8000_fff0),
    RegDef::new("FCRTH", 0x2168).mask(0x0000_fff0),
    RegDef::new("RXPBS", RXPBS).reset(0x40).mask(0x7f),
    RegDef::new("RDFH", 0x2410),
    RegDef::new("RDFT", 0x2418),
    RegDef::new("RDFHS", 0x2420),
    RegDef::new("RDFTS", 0x2428),
    RegDef::new("RDFPC", 0x2430),
    rxq("RDBAL", q::BAL).mask(0xffff_ff80),
    rxq("RDBAH", q::BAH),
    rxq("RDLEN", q::LEN).mask(0x000f_fff0),
    rxq("SRRCTL", q::SRRCTL)
        .reset(0x0000_0402)
        .mask(SRRCTL_MASK),
    rxq("RDH", q::H)
        .mask(0x0000_ffff)
        .hook(Hook::Rxq(QueueReg::Head, 0)),
    rxq("RXCTL", 0x14),
    rxq("RDT", q::T).mask(0x0000_ffff),
    rxq("RXDCTL", q::DCTL)
        .reset(0x0001_0000)
        .mask(0x0619_1f1f)
        .hook(Hook::Rxq(QueueReg::Control, 0)),
    rxq("RQDPC", q::RQDPC).rc(),
    rxq_legacy("RDBAL", q::BAL).mask(0xffff_ff80),
    rxq_legacy("RDBAH", q::BAH),
    rxq_legacy("RDLEN", q::LEN).mask(0x000f_fff0),
    rxq_legacy("SRRCTL", q::SRRCTL).mask(SRRCTL_MASK),
    rxq_legacy("RDH", q::H)
        .mask(0x0000_ffff)
        .hook(Hook::Rxq(QueueReg::Head, 0)),
    rxq_legacy("RXCTL", 0x14),
    rxq_legacy("RDT", q::T).mask(0x0000_ffff),
    rxq_legacy("RXDCTL", q::DCTL)
        .mask(0x0619_1f1f)
        .hook(Hook::Rxq(QueueReg::Control, 0)),
    RegDef::new("RXCSUM", RXCSUM)
        .reset(0x0000_0300)
        .mask(0x0000_3bff),
    RegDef::new("RLPML", 0x5004).reset(0x2600).mask(0x3fff),
    RegDef::new("RFCTL", 0x5008),
    RegDef::new("MTA", MTA).array(128, 4),
    RegDef::new("RAL", RAL).array(16, 8),
    RegDef::new("RAH", RAH).array(16, 8).mask(0x83ff_ffff),
    RegDef::new("PSRTYPE", 0x5480).array(8, 4),
    RegDef::new("RAL2", RAL2).array(8, 8),
    RegDef::new("RAH2", RAL2 + 4).array(8, 8).mask(0x83ff_ffff),
    RegDef::new("VFTA", VFTA).array(128, 4),
    RegDef::new("WUC", 0x5800),
    RegDef::new("WUFC", 0x5808),
    RegDef::new("WUS", 0x5810).w1c(),
    RegDef::new("MRQC", MRQC),
    RegDef::new("VT_CTL", 0x581c),
    RegDef::new("MANC", 0x5820),
    RegDef::new("IPAV", 0x5838),
    RegDef::new("MANC2H", 0x5860),
    RegDef::new("RSSIM", 0x5864),
    RegDef::new("RSSIR", 0x5868),
    RegDef::new("VMOLR", 0x5ad0).array(8, 4),
    RegDef::new("GCR", 0x5b00).reset(0x0000_0400),
    RegDef::new("FACTPS", 0x5b30).ro(),
    RegDef::new("SWSM", SWSM).mask(0x3).hook(Hook::Semaphore),
    RegDef::new("FWSM", 0x5b54).ro(),
    RegDef::new("SW_FW_SYNC", SW_FW_SYNC).mask(0x0000_ffff),
    RegDef::new("DCA_CTRL", 0x5b74),
    RegDef::new("RETA", RETA).array(32, 4),
    RegDef::new("RSSRK", RSSRK).array(10, 4),
    RegDef::new("ETQF", ETQF).array(8, 4),
    RegDef::new("VLVF", 0x5d00).array(32, 4),
    // Transmit (§8.12)
    RegDef::new("DTXSWC", 0x3500),
    RegDef::new("DTXCTL", 0x3590),
    RegDef::new("TXPBS", 0x3404).reset(0x28).mask(0x3f),
    RegDef::new("VMVIR", 0x3700).array(8, 4),
    RegDef::new("WVBR", 0x3554).rc(),
    txq("TDBAL", q::BAL).mask(0xffff_ff80),
    txq("TDBAH", q::BAH),
    txq("TDLEN", q::LEN).mask(0x000f_fff0),
    txq("TDH", q::H)
        .mask(0x0000_ffff)
        .hook(Hook::Txq(QueueReg::Head, 0)),
    txq("TXCTL", 0x14),
    txq("TDT", q::T)
        .mask(0x0000_ffff)
        .hook(Hook::Txq(QueueReg::Tail, 0)),
    txq("TXDCTL", q::DCTL)
        .mask(0x0639_3f3f)
        .hook(Hook::Txq(QueueReg::Control, 0)),
    txq("TDWBAL", q::WBAL).mask(0xffff_fffd),
    txq("TDWBAH", q::WBAH),
    txq_legacy("TDBAL", q::BAL).mask(0xffff_ff80),
    txq_legacy("TDBAH", q::BAH),
    txq_legacy("TDLEN", q::LEN).mask(0x000f_fff0),
    txq_legacy("TDH", q::H)
        .mask(0x0000_ffff)
        .hook(Hook::Txq(QueueReg::Head, 0)),
    txq_legacy("TXCTL", 0x14),
    txq_legacy("TDT", q::T)
        .mask(0x0000_ffff)
        .hook(Hook::Txq(QueueReg::Tail, 0)),
    txq_legacy("TXDCTL", q::DCTL)
        .mask(0x0639_3f3f)
        .hook(Hook::Txq(QueueReg::Control, 0)),
    txq_legacy("TDWBAL", q::WBAL).mask(0xffff_fffd),
    txq_legacy("TDWBAH", q::WBAH),
    // Statistics (§8.19): clear on read.
    stat("ALGNERRC", 0x4004),
    stat("SYMERRS", 0x4008),
    stat("RXERRC", 0x400c),
    stat("MPC", stat::MPC),
    stat("SCC", 0x4014),
    stat("ECOL", 0x4018),
    stat("MCC", 0x401c),
    stat("LATECOL", 0x4020),
    stat("COLC", 0x4028),
    stat("CBTMPC", 0x402c),
    stat("DC", 0x4030),
    stat("TNCRS", 0x4034),
    stat("SEC", 0x4038),
    stat("HTDPMC", 0x403c),
    stat("XONRXC", 0x4048),
    stat("XONTXC", 0x404c),
    stat("XOFFRXC", 0x4050),
    stat("XOFFTXC", 0x4054),
    stat("FCRUC", 0x4058),
    stat("RNBC", stat::RNBC),
    stat("MGTPRC", 0x40b4),
    stat("MGTPDC", 0x40b8),
    stat("MGTPTC", 0x40bc),
    stat("TOTL", stat::TOTL),
    stat("TOTH", 0x40cc),
    stat("TSCTC", stat::TSCTC),
    stat("TSCTFC", 0x40fc),
    stat("IAC", 0x4100),
    stat("RPTHC", 0x4104),
    stat("ICRXATC", 0x4108),
    stat("ICTXPTC", 0x410c),
    stat("ICTXATC", 0x4110),
    stat("HGPTC", 0x4118),
    stat("ICTXQMTC", 0x411c),
    stat("ICRXDMTC", 0x4120),
    stat("HTCBDPC", 0x4124),
    stat("HGORCL", 0x4128),
    stat("HGORCH", 0x412c),
    stat("HGOTCL", 0x4130),
    stat("HGOTCH", 0x4134),
    stat("LENERRS", 0x4138),
    stat("SCVPC", 0x4228),
    // Time sync (§8.15, §7.9): SYSTIM and the stamp latches live in
    // `crate::ptp::TimeSync`; the rest is storage.
    RegDef::new("SYSTIML", SYSTIML).hook(Hook::Ts(TsReg::SystimL)),
    RegDef::new("SYSTIMH", 0xb604).hook(Hook::Ts(TsReg::SystimH)),
    RegDef::new("TIMINCA", 0xb608).hook(Hook::Ts(TsReg::Timinca)),
    RegDef::new("TIMADJL", 0xb60c).hook(Hook::Ts(TsReg::TimadjL)),
    RegDef::new("TIMADJH", 0xb610).hook(Hook::Ts(TsReg::TimadjH)),
    RegDef::new("TSYNCTXCTL", 0xb614).hook(Hook::Ts(TsReg::TxCtl)),
    RegDef::new("TXSTMPL", 0xb618)
        .ro()
        .hook(Hook::Ts(TsReg::TxStmpL)),
    RegDef::new("TXSTMPH", 0xb61c)
        .ro()
        .hook(Hook::Ts(TsReg::TxStmpH)),
    RegDef::new("TSYNCRXCTL", 0xb620).hook(Hook::Ts(TsReg::RxCtl)),
    RegDef::new("RXSTMPL", 0xb624)
        .ro()
        .hook(Hook::Ts(TsReg::RxStmpL)),
    RegDef::new("RXSTMPH", 0xb628)
        .ro()
        .hook(Hook::Ts(TsReg::RxStmpH)),
    RegDef::new("RXSATRL", 0xb62c)
        .ro()
        .hook(Hook::Ts(TsReg::RxSatrL)),
    RegDef::new("RXSATRH", 0xb630)
        .ro()
        .hook(Hook::Ts(TsReg::RxSatrH)),
    RegDef::new("TSAUXC", 0xb640),
    RegDef::new("TSICR", TSICR).rc(),
    RegDef::new("TSIM", TSIM),
    RegDef::new("TSYNCRXCFG", TSYNCRXCFG).mask(0x0000_0fff),
    // Two-tuple / L4 filters the driver programs for UDP port 319
    // (`igb_ptp_set_timestamp_mode`): storage.
    RegDef::new("SAQF", 0x5980).array(8, 4),
    RegDef::new("DAQF", 0x59a0).array(8, 4),
    RegDef::new("SPQF", 0x59c0).array(8, 4),
    RegDef::new("FTQF", 0x59e0).array(8, 4),
    RegDef::new("IMIR", 0x5a80).array(8, 4),
    RegDef::new("IMIREXT", 0x5aa0).array(8, 4),
];

/// The register table: the part's own rows and the counters it shares with
/// the other part.
pub const TABLE: &[RegDef<Hook>] =
    &crate::regfile::join::<Hook, { OWN.len() + SHARED_COUNTERS }>(OWN, &shared_counter_rows());
