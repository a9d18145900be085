// SPDX-License-Identifier: Apache-2.0
//! The 82599 BAR0 register table (82599 datasheet §8.2, register summary table
//! 8-3; offsets as used by the Linux ixgbe driver's `ixgbe_type.h`).
//!
//! Reset values and writable masks come from the datasheet; where the driver's
//! ethtool register self-test (`reg_test_82599` in `ixgbe_ethtool.c`) needs
//! bits to stick, the mask includes them. Registers with behaviour beyond the
//! generic access kinds carry a [`Hook`].

use crate::ptp::TsReg;
use crate::regfile::RegDef;

/// Interrupt registers with side effects (§7.3, §8.2.3.5): their handlers
/// run under the interrupt lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntrReg {
    /// Extended interrupt cause.
    Eicr,
    /// Extended interrupt cause set.
    Eics,
    /// Extended interrupt mask set / read.
    Eims,
    /// Extended interrupt mask clear.
    Eimc,
    /// Cause set for vectors 0..63 (two registers).
    EicsEx,
    /// Mask set for vectors 0..63.
    EimsEx,
    /// Mask clear for vectors 0..63.
    EimcEx,
    /// Interrupt throttle of vectors 0..23: a write without CNT_WDIS restarts it.
    Eitr,
    /// Interrupt throttle of vectors 24..: likewise.
    EitrHi,
}

/// Control-path registers with side effects: their handlers run under the
/// control lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlReg {
    /// Device control: RST / LNK_RST.
    Ctrl,
    /// Extended SDP control: SDP2 reports the SFP+ cage as full.
    Esdp,
    /// I2C bit-bang control of the SFP+ module (§8.2.3.1.4).
    I2cctl,
    /// Auto negotiation control: AN restart self-clears.
    Autoc,
}

/// Other registers with side effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// Device status: computed.
    Status,
    /// Link status: computed.
    Links,
    /// MDIO command: completes at once; no PHY answers.
    Msca,
    /// DMA transmit control: enabling TE rings every enabled queue.
    Dmatxctl,
    /// Flow director control: init done at once.
    Fdirctrl,
    /// Flow director command: runs at once ([`super::fdir`]).
    Fdircmd,
    /// Flow director free filters: computed.
    Fdirfree,
    /// Flow director longest bucket: computed.
    Fdirlen,
    /// IPsec transmit SA index: WRITE / READ run at once ([`super::ipsec`]).
    Ipstxidx,
    /// IPsec receive SA index: likewise.
    Ipsrxidx,
}

/// The hooks of the 82599's registers.
pub type Hook = crate::function::Hook<IntrReg, CtlReg, Reg>;
use crate::function::stats::{shared_counter_rows, SHARED_COUNTERS};
use crate::function::QueueReg;

// ---- offsets (ixgbe_type.h) ----
/// Device control.
pub const CTRL: u32 = 0x0000;
/// Device status.
pub const STATUS: u32 = 0x0008;
/// Extended device control.
pub const CTRL_EXT: u32 = 0x0018;
/// Extended SDP control.
pub const ESDP: u32 = 0x0020;
/// I2C control (bit-banged SFP+ management interface).
pub const I2CCTL: u32 = 0x0028;
/// Extended interrupt cause read.
pub const EICR: u32 = 0x0800;
/// Extended interrupt cause set.
pub const EICS: u32 = 0x0808;
/// Extended interrupt auto clear.
pub const EIAC: u32 = 0x0810;
/// Interrupt throttle registers 0..23.
pub const EITR0: u32 = 0x0820;
/// Interrupt throttle of vector 24 (vectors 24..127 follow, 4 bytes apart).
pub const EITR_HI: u32 = 0x12300;
/// Extended interrupt mask set/read.
pub const EIMS: u32 = 0x0880;
/// Extended interrupt mask clear.
pub const EIMC: u32 = 0x0888;
/// Extended interrupt auto mask.
pub const EIAM: u32 = 0x0890;
/// General purpose interrupt enable.
pub const GPIE: u32 = 0x0898;
/// Interrupt vector allocation (64 registers, two queues each).
pub const IVAR0: u32 = 0x0900;
/// Vector of the "other" causes.
pub const IVAR_MISC: u32 = 0x0a00;
/// Extended interrupt cause set, vectors 0..63.
pub const EICS_EX: u32 = 0x0a90;
/// Extended interrupt mask set, vectors 0..63.
pub const EIMS_EX: u32 = 0x0aa0;
/// Extended interrupt mask clear, vectors 0..63.
pub const EIMC_EX: u32 = 0x0ab0;
/// Extended interrupt auto mask, vectors 0..63.
pub const EIAM_EX: u32 = 0x0ad0;
/// Receive queue statistic mapping.
pub const RQSMR: u32 = 0x2300;
/// Receive DMA control.
pub const RDRXCTL: u32 = 0x2f00;
/// Receive control.
pub const RXCTRL: u32 = 0x3000;
/// Receive filter control (RSC_DIS, NFS filtering).
pub const RFCTL: u32 = 0x5008;
/// DMA transmit control.
pub const DMATXCTL: u32 = 0x4a80;
/// MAC core control 0.
pub const HLREG0: u32 = 0x4240;
/// MDI single command and address.
pub const MSCA: u32 = 0x425c;
/// MDI single read and write data.
pub const MSRWD: u32 = 0x4260;
/// Max frame size (MFS in bits 31:16).
pub const MAXFRS: u32 = 0x4268;
/// Auto negotiation control.
pub const AUTOC: u32 = 0x42a0;
/// Link status.
pub const LINKS: u32 = 0x42a4;
/// Auto negotiation control 2.
pub const AUTOC2: u32 = 0x42a8;
/// Receive checksum control.
pub const RXCSUM: u32 = 0x5000;
/// Filter control.
pub const FCTRL: u32 = 0x5080;
/// VLAN control.
pub const VLNCTRL: u32 = 0x5088;
/// Multicast control.
pub const MCSTCTRL: u32 = 0x5090;
/// Multicast table array.
pub const MTA: u32 = 0x5200;
/// Multiple receive queues command.
pub const MRQC: u32 = 0x5818;
/// Redirection table.
pub const RETA: u32 = 0x5c00;
/// RSS random key.
pub const RSSRK: u32 = 0x5c80;
/// Transmit queue statistic mapping.
pub const TQSM: u32 = 0x8600;
/// VLAN filter table array.
pub const VFTA: u32 = 0xa000;
/// Receive address low, entries 0..127 (high at +4).
pub const RAL: u32 = 0xa200;
/// Legacy location of receive address entries 0..15.
pub const RAL_LEGACY: u32 = 0x5400;
/// Ethertype queue filters (8).
pub const ETQF: u32 = 0x5128;
/// Receive message type / UDP port of time-stamped PTP messages.
pub const RXMTRL: u32 = 0x5120;
/// Security transmit control (§8.2.3.26).
pub const SECTXCTRL: u32 = 0x8800;
/// Security receive control.
pub const SECRXCTRL: u32 = 0x8d00;
/// IPsec transmit SA index (§8.2.3.27).
pub const IPSTXIDX: u32 = 0x8900;
/// IPsec transmit salt.
pub const IPSTXSALT: u32 = 0x8904;
/// IPsec transmit key, four registers.
pub const IPSTXKEY: u32 = 0x8908;
/// IPsec receive SA index.
pub const IPSRXIDX: u32 = 0x8e00;
/// IPsec receive IP address, four registers.
pub const IPSRXIPADDR: u32 = 0x8e04;
/// IPsec receive SPI.
pub const IPSRXSPI: u32 = 0x8e14;
/// IPsec receive IP table index.
pub const IPSRXIPIDX: u32 = 0x8e18;
/// IPsec receive key, four registers.
pub const IPSRXKEY: u32 = 0x8e1c;
/// IPsec receive salt.
pub const IPSRXSALT: u32 = 0x8e2c;
/// IPsec receive mode.
pub const IPSRXMOD: u32 = 0x8e30;
/// Flow director control.
pub const FDIRCTRL: u32 = 0xee00;
/// Flow director command.
pub const FDIRCMD: u32 = 0xee2c;
/// Flow director IPv6 source address, three words.
pub const FDIRSIPV6: u32 = 0xee0c;
/// Flow director IPv4 source address (IPv6: its last word).
pub const FDIRIPSA: u32 = 0xee18;
/// Flow director IPv4 destination address.
pub const FDIRIPDA: u32 = 0xee1c;
/// Flow director L4 ports (destination in bits 31:16).
pub const FDIRPORT: u32 = 0xee20;
/// Flow director VLAN (bits 15:0) and flexible bytes (bits 31:16).
pub const FDIRVLAN: u32 = 0xee24;
/// Flow director bucket hash and signature / software index.
pub const FDIRHASH: u32 = 0xee28;
/// Flow director free filters and collisions.
pub const FDIRFREE: u32 = 0xee38;
/// Flow director IPv4 destination address mask.
pub const FDIRDIP4M: u32 = 0xee3c;
/// Flow director IPv4 source address mask.
pub const FDIRSIP4M: u32 = 0xee40;
/// Flow director TCP port mask (bit-reversed per port).
pub const FDIRTCPM: u32 = 0xee44;
/// Flow director UDP port mask.
pub const FDIRUDPM: u32 = 0xee48;
/// Flow director longest bucket.
pub const FDIRLEN: u32 = 0xee4c;
/// Flow director filters added / removed.
pub const FDIRUSTAT: u32 = 0xee50;
/// Flow director failed adds / removes.
pub const FDIRFSTAT: u32 = 0xee54;
/// Flow director matched frames.
pub const FDIRMATCH: u32 = 0xee58;
/// Flow director missed frames.
pub const FDIRMISS: u32 = 0xee5c;
/// Flow director bucket hash key.
pub const FDIRHKEY: u32 = 0xee68;
/// Flow director signature hash key.
pub const FDIRSKEY: u32 = 0xee6c;
/// Flow director field masks.
pub const FDIRM: u32 = 0xee70;
/// EEPROM/flash control.
pub const EEC: u32 = 0x10010;
/// EEPROM read.
pub const EERD: u32 = 0x10014;
/// Software semaphore.
pub const SWSM: u32 = 0x10140;
/// Software/firmware synchronisation.
pub const GSSR: u32 = 0x10160;

/// Receive queue `n` register block (queues 0..63 at 0x1000, 64..127 at 0xD000).
pub const fn rxq_base(n: u32) -> u32 {
    if n < 64 {
        0x1000 + n * 0x40
    } else {
        0xd000 + (n - 64) * 0x40
    }
}

/// Transmit queue `n` register block.
pub const fn txq_base(n: u32) -> u32 {
    0x6000 + n * 0x40
}

/// Number of queues of each direction.
pub const NUM_QUEUES: usize = 128;
/// Number of MSI-X vectors (and EICR_EX bits).
pub const NUM_VECTORS: u32 = 64;

/// Offsets within a queue block.
pub mod q {
    /// Descriptor base low.
    pub const BAL: u32 = 0x00;
    /// Descriptor base high.
    pub const BAH: u32 = 0x04;
    /// Ring length in bytes.
    pub const LEN: u32 = 0x08;
    /// DCA control.
    pub const DCA: u32 = 0x0c;
    /// Head.
    pub const H: u32 = 0x10;
    /// Split and replication receive control (RX only).
    pub const SRRCTL: u32 = 0x14;
    /// Tail.
    pub const T: u32 = 0x18;
    /// Queue control.
    pub const DCTL: u32 = 0x28;
    /// RSC control (RX only).
    pub const RSCCTL: u32 = 0x2c;
    /// Head write-back address low (TX only).
    pub const WBAL: u32 = 0x38;
    /// Head write-back address high (TX only).
    pub const WBAH: u32 = 0x3c;
}

pub use crate::function::QUEUE_ENABLE;
/// Software flush bit in RXDCTL/TXDCTL (self-clearing).
pub const QUEUE_SWFLSH: u32 = 1 << 26;
/// RXDCTL: strip VLAN tags of this queue.
pub const RXDCTL_VME: u32 = 1 << 30;

/// Statistics register offsets used by the data path (§8.2.3.23).
pub mod stat {
    pub use crate::function::stats::stat::*;

    /// Missed packets, per packet buffer (8).
    pub const MPC: u32 = 0x3fa0;
    /// Receive no buffers, per packet buffer (8).
    pub const RNBC: u32 = 0x3fc0;
    /// Per-statistics-queue packets received (16, stride 0x40).
    pub const QPRC: u32 = 0x1030;
    /// Per-statistics-queue bytes received, low (high at +4).
    pub const QBRC_L: u32 = 0x1034;
    /// Per-statistics-queue receive drops.
    pub const QPRDC: u32 = 0x1430;
    /// Per-statistics-queue packets transmitted (16, stride 0x40).
    pub const QPTC: u32 = 0x6030;
    /// Per-statistics-queue bytes transmitted, low (16, stride 8; high at +4).
    pub const QBTC_L: u32 = 0x8700;
}

const fn rxq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, 0x1000 + off).array(64, 0x40)
}
const fn rxq_hi(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, 0xd000 + off).array(64, 0x40)
}
const fn txq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, 0x6000 + off).array(NUM_QUEUES as u32, 0x40)
}
const fn stat(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, off).rc()
}
const fn stats(name: &'static str, off: u32, n: u32, stride: u32) -> RegDef<Hook> {
    RegDef::new(name, off).array(n, stride).rc()
}

/// Value of AUTOC after reset as loaded from the NVM of an SFP+ adapter:
/// link mode select 10G serial (SFI), 10G parallel PMA KX4, restart AN clear.
pub const AUTOC_RESET: u32 = (3 << 13) | (1 << 7) | 0x0000_0004;
/// Value of AUTOC2 after reset: 10G serial PMA/PMD = SFI.
pub const AUTOC2_RESET: u32 = 2 << 16;

/// The register table.
const OWN: &[RegDef<Hook>] = &[
    // General (§8.2.3.1)
    RegDef::new("CTRL", CTRL)
        .mask(0x0400_000c)
        .hook(Hook::Ctl(CtlReg::Ctrl)),
    RegDef::new("STATUS", STATUS)
        .ro()
        .hook(Hook::Part(Reg::Status)),
    RegDef::new("CTRL_EXT", CTRL_EXT).mask(0x1007_4000),
    RegDef::new("ESDP", ESDP).hook(Hook::Ctl(CtlReg::Esdp)),
    RegDef::new("I2CCTL", I2CCTL)
        .reset(0xf)
        .mask(0xa)
        .hook(Hook::Ctl(CtlReg::I2cctl)),
    RegDef::new("TSSDP", 0x003c),
    RegDef::new("FRTIMER", 0x0048),
    RegDef::new("TCPTIMER", 0x004c),
    RegDef::new("LEDCTL", 0x0200).reset(0x0008_4e00),
    RegDef::new("CORESPARE", 0x0600),
    RegDef::new("PFMBICR", 0x0710).array(4, 4).w1c(),
    RegDef::new("PFMBIMR", 0x0720).array(4, 4),
    // Interrupts (§8.2.3.5)
    RegDef::new("EICR", EICR)
        .w1c()
        .hook(Hook::Intr(IntrReg::Eicr)),
    RegDef::new("EICS", EICS).hook(Hook::Intr(IntrReg::Eics)),
    RegDef::new("EIAC", EIAC).mask(0x4000_ffff),
    RegDef::new("EITR", EITR0)
        .array(24, 4)
        .mask(0x8fff_fff8)
        .hook(Hook::Intr(IntrReg::Eitr)),
    RegDef::new("EIMS", EIMS).hook(Hook::Intr(IntrReg::Eims)),
    RegDef::new("EIMC", EIMC)
        .wo()
        .hook(Hook::Intr(IntrReg::Eimc)),
    RegDef::new("EIAM", EIAM),
    RegDef::new("EITRSEL", 0x0894),
    RegDef::new("GPIE", GPIE).mask(0xc000_fff7),
    RegDef::new("IVAR", IVAR0).array(64, 4).mask(0xbfbf_bfbf),
    RegDef::new("IVAR_MISC", IVAR_MISC).mask(0x0000_bfbf),
    RegDef::new("EICS_EX", EICS_EX)
        .array(2, 4)
        .hook(Hook::Intr(IntrReg::EicsEx)),
    RegDef::new("EIMS_EX", EIMS_EX)
        .array(2, 4)
        .hook(Hook::Intr(IntrReg::EimsEx)),
    RegDef::new("EIMC_EX", EIMC_EX)
        .array(2, 4)
        .wo()
        .hook(Hook::Intr(IntrReg::EimcEx)),
    RegDef::new("EIAM_EX", EIAM_EX).array(2, 4),
    RegDef::new("EITR_HI", EITR_HI)
        .array(104, 4)
        .mask(0x8fff_fff8)
        .hook(Hook::Intr(IntrReg::EitrHi)),
    // Receive queues (§8.2.3.8)
    rxq("RDBAL", q::BAL).mask(0xffff_ff80),
    rxq("RDBAH", q::BAH),
    rxq("RDLEN", q::LEN).mask(0x000f_ff80),
    rxq("DCA_RXCTRL", q::DCA).reset(0x2200),
    rxq("RDH", q::H)
        .mask(0xffff)
        .hook(Hook::Rxq(QueueReg::Head, 0)),
    rxq("SRRCTL", q::SRRCTL)
        .reset(0x0000_0402)
        .mask(0x1e40_3f1f),
    rxq("RDT", q::T).mask(0xffff),
    rxq("RXDCTL", q::DCTL)
        .mask(0x4600_bfff)
        .hook(Hook::Rxq(QueueReg::Control, 0)),
    rxq("RSCCTL", q::RSCCTL).mask(0xf),
    rxq_hi("RDBAL", q::BAL).mask(0xffff_ff80),
    rxq_hi("RDBAH", q::BAH),
    rxq_hi("RDLEN", q::LEN).mask(0x000f_ff80),
    rxq_hi("DCA_RXCTRL", q::DCA).reset(0x2200),
    rxq_hi("RDH", q::H)
        .mask(0xffff)
        .hook(Hook::Rxq(QueueReg::Head, 64)),
    rxq_hi("SRRCTL", q::SRRCTL)
        .reset(0x0000_0402)
        .mask(0x1e40_3f1f),
    rxq_hi("RDT", q::T).mask(0xffff),
    rxq_hi("RXDCTL", q::DCTL)
        .mask(0x4600_bfff)
        .hook(Hook::Rxq(QueueReg::Control, 64)),
    rxq_hi("RSCCTL", q::RSCCTL).mask(0xf),
    RegDef::new("SRRCTL", 0x2100)
        .array(16, 4)
        .mask(0x1e40_3f1f)
        .alias_of(0x1000 + q::SRRCTL, 0x40),
    RegDef::new("DCA_RXCTRL", 0x2200)
        .array(16, 4)
        .alias_of(0x1000 + q::DCA, 0x40),
    RegDef::new("RQSMR", RQSMR).array(32, 4).mask(0x0f0f_0f0f),
    RegDef::new("RDRXCTL", RDRXCTL)
        .reset(0x0000_0088)
        .mask(0xffff_fff7),
    RegDef::new("RDDCC", 0x2f20),
    RegDef::new("RXCTRL", RXCTRL).mask(0x3),
    RegDef::new("PFCTOP", 0x3008).reset(0x0000_8808),
    RegDef::new("RTRUP2TC", 0x3020),
    RegDef::new("RSCDBU", 0x3028),
    RegDef::new("FCTTV", 0x3200).array(4, 4),
    RegDef::new("FCRTL", 0x3220).array(8, 4).mask(0x8007_fff0),
    RegDef::new("FCRTH", 0x3260).array(8, 4).mask(0x8007_fff0),
    RegDef::new("FCRTV", 0x32a0).mask(0xffff),
    RegDef::new("RXPBSIZE", 0x3c00)
        .array(8, 4)
        .reset(0x0008_0000),
    RegDef::new("RTRPT4C", 0x2140).array(8, 4),
    RegDef::new("RTRPCS", 0x2430),
    RegDef::new("FCCFG", 0x3d00),
    RegDef::new("DROPEN", 0x3d04),
    // MAC (§8.2.3.22)
    RegDef::new("PCS1GLCTL", 0x4208),
    RegDef::new("PCS1GLSTA", 0x420c).ro(),
    RegDef::new("PCS1GANA", 0x4218).reset(0x0000_0020),
    RegDef::new("HLREG0", HLREG0).reset(0x0000_2403),
    RegDef::new("HLREG1", 0x4244).ro(),
    RegDef::new("PAP", 0x4248),
    RegDef::new("MACA", 0x424c),
    RegDef::new("MSCA", MSCA).hook(Hook::Part(Reg::Msca)),
    RegDef::new("MSRWD", MSRWD).mask(0xffff),
    RegDef::new("MAXFRS", MAXFRS)
        .reset(0x05f2_0000)
        .mask(0xffff_0000),
    RegDef::new("MFLCN", 0x4294).reset(0x2),
    RegDef::new("MACS", 0x429c),
    RegDef::new("AUTOC", AUTOC)
        .reset(AUTOC_RESET)
        .hook(Hook::Ctl(CtlReg::Autoc)),
    RegDef::new("LINKS", LINKS)
        .ro()
        .hook(Hook::Part(Reg::Links)),
    RegDef::new("AUTOC2", AUTOC2).reset(AUTOC2_RESET),
    RegDef::new("AUTOC3", 0x42ac),
    RegDef::new("ANLP1", 0x42b0).reset(0x0003_0000).ro(),
    RegDef::new("ANLP2", 0x42b4).ro(),
    RegDef::new("MMNGC", 0x42d0).ro(),
    RegDef::new("MACC", 0x4330),
    RegDef::new("RTTDCS", 0x4900),
    RegDef::new("RTTDQSEL", 0x4904),
    RegDef::new("RTTDT1C", 0x4908),
    RegDef::new("RTTBCNRC", 0x4984),
    RegDef::new("RTTDT2C", 0x4910).array(8, 4),
    RegDef::new("TXPBTHRESH", 0x4950).array(8, 4),
    RegDef::new("DMATXCTL", DMATXCTL)
        .reset(0x8100_0000)
        .mask(0xffff_007b)
        .hook(Hook::Part(Reg::Dmatxctl)),
    RegDef::new("DTXTCPFLGL", 0x4a88),
    RegDef::new("DTXTCPFLGH", 0x4a8c),
    // Receive filters (§8.2.3.7)
    RegDef::new("RXCSUM", RXCSUM).mask(0x3000),
    RegDef::new("RFCTL", RFCTL),
    RegDef::new("MAVTV", 0x5010).array(8, 4),
    RegDef::new("FCTRL", FCTRL).mask(0x0000_f702),
    RegDef::new("VLNCTRL", VLNCTRL)
        .reset(0x8100)
        .mask(0x7000_ffff),
    RegDef::new("MCSTCTRL", MCSTCTRL).mask(0x7),
    RegDef::new("ETQF", ETQF).array(8, 4),
    RegDef::new("RXMTRL", RXMTRL),
    RegDef::new("TSYNCRXCTL", 0x5188).hook(Hook::Ts(TsReg::RxCtl)),
    RegDef::new("RXSATRL", 0x51a0)
        .ro()
        .hook(Hook::Ts(TsReg::RxSatrL)),
    RegDef::new("RXSTMPH", 0x51a4)
        .ro()
        .hook(Hook::Ts(TsReg::RxStmpH)),
    RegDef::new("RXSATRH", 0x51a8)
        .ro()
        .hook(Hook::Ts(TsReg::RxSatrH)),
    RegDef::new("RXSTMPL", 0x51e8)
        .ro()
        .hook(Hook::Ts(TsReg::RxStmpL)),
    RegDef::new("VMTXSW", 0x5180).array(2, 4),
    RegDef::new("VT_CTL", 0x51b0),
    RegDef::new("VFRE", 0x51e0).array(2, 4),
    RegDef::new("MTA", MTA).array(128, 4),
    RegDef::new("RAL", RAL_LEGACY).array(16, 8).alias_of(RAL, 8),
    RegDef::new("RAH", RAL_LEGACY + 4)
        .array(16, 8)
        .mask(0x8000_ffff)
        .alias_of(RAL + 4, 8),
    RegDef::new("PSRTYPE", 0x5480)
        .array(16, 4)
        .alias_of(0xea00, 4),
    RegDef::new("WUC", 0x5800),
    RegDef::new("WUFC", 0x5808),
    RegDef::new("WUS", 0x5810).w1c(),
    RegDef::new("MRQC", MRQC),
    RegDef::new("VMD_CTL", 0x581c),
    RegDef::new("MANC", 0x5820),
    RegDef::new("MANC2H", 0x5860),
    RegDef::new("RETA", RETA).array(32, 4),
    RegDef::new("RSSRK", RSSRK).array(10, 4),
    RegDef::new("VFTA", VFTA).array(128, 4),
    RegDef::new("RAL", RAL).array(128, 8),
    RegDef::new("RAH", RAL + 4).array(128, 8).mask(0x8000_ffff),
    RegDef::new("MPSAR_LO", 0xa600).array(128, 8),
    RegDef::new("MPSAR_HI", 0xa604).array(128, 8),
    RegDef::new("FTQF", 0xe600).array(128, 4),
    RegDef::new("SAQF", 0xe000).array(128, 4),
    RegDef::new("DAQF", 0xe200).array(128, 4),
    RegDef::new("SDPQF", 0xe400).array(128, 4),
    RegDef::new("L34T_IMIR", 0xe800).array(128, 4),
    RegDef::new("PSRTYPE", 0xea00).array(64, 4),
    RegDef::new("ETQS", 0xec00).array(8, 4),
    RegDef::new("SYNQF", 0xec30),
    RegDef::new("RQTC", 0xec70),
    RegDef::new("MRQC2", 0xec80),
    RegDef::new("FDIRCTRL", FDIRCTRL).hook(Hook::Part(Reg::Fdirctrl)),
    RegDef::new("FDIRSIPV6", FDIRSIPV6).array(3, 4),
    RegDef::new("FDIRIPSA", FDIRIPSA),
    RegDef::new("FDIRIPDA", FDIRIPDA),
    RegDef::new("FDIRPORT", FDIRPORT),
    RegDef::new("FDIRVLAN", FDIRVLAN),
    RegDef::new("FDIRHASH", FDIRHASH),
    RegDef::new("FDIRCMD", FDIRCMD).hook(Hook::Part(Reg::Fdircmd)),
    RegDef::new("FDIRFREE", FDIRFREE).hook(Hook::Part(Reg::Fdirfree)),
    RegDef::new("FDIRDIP4M", FDIRDIP4M),
    RegDef::new("FDIRSIP4M", FDIRSIP4M),
    RegDef::new("FDIRTCPM", FDIRTCPM),
    RegDef::new("FDIRUDPM", FDIRUDPM),
    RegDef::new("FDIRLEN", FDIRLEN)
        .ro()
        .hook(Hook::Part(Reg::Fdirlen)),
    RegDef::new("FDIRUSTAT", FDIRUSTAT).rc(),
    RegDef::new("FDIRFSTAT", FDIRFSTAT).rc(),
    RegDef::new("FDIRMATCH", FDIRMATCH).rc(),
    RegDef::new("FDIRMISS", FDIRMISS).rc(),
    RegDef::new("FDIRHKEY", FDIRHKEY),
    RegDef::new("FDIRSKEY", FDIRSKEY),
    RegDef::new("FDIRM", FDIRM),
    RegDef::new("FDIRIP6M", 0xee74),
    RegDef::new("VMOLR", 0xf000).array(64, 4),
    RegDef::new("VLVF", 0xf100).array(64, 4),
    RegDef::new("VLVFB", 0xf200).array(128, 4),
    RegDef::new("UTA", 0xf400).array(128, 4),
    // Transmit (§8.2.3.9)
    txq("TDBAL", q::BAL).mask(0xffff_ff80),
    txq("TDBAH", q::BAH),
    txq("TDLEN", q::LEN).mask(0x000f_ff80),
    txq("DCA_TXCTRL", q::DCA).reset(0x2200),
    txq("TDH", q::H)
        .mask(0xffff)
        .hook(Hook::Txq(QueueReg::Head, 0)),
    txq("TDT", q::T)
        .mask(0xffff)
        .hook(Hook::Txq(QueueReg::Tail, 0)),
    txq("TXDCTL", q::DCTL)
        .mask(0x0600_7f7f)
        .hook(Hook::Txq(QueueReg::Control, 0)),
    txq("TDWBAL", q::WBAL).mask(0xffff_fffd),
    txq("TDWBAH", q::WBAH),
    RegDef::new("VMVIR", 0x8000).array(64, 4),
    RegDef::new("VFTE", 0x8110).array(2, 4),
    RegDef::new("MTQC", 0x8120),
    RegDef::new("PFVFSPOOF", 0x8200).array(8, 4),
    RegDef::new("PFDTXGSWC", 0x8220),
    RegDef::new("TQSM", TQSM).array(32, 4).mask(0x0f0f_0f0f),
    RegDef::new("SECTXCTRL", SECTXCTRL),
    RegDef::new("SECTXSTAT", 0x8804).reset(1).ro(),
    RegDef::new("SECTXBUFFAF", 0x8808).reset(0x250),
    RegDef::new("SECTXMINIFG", 0x8810).reset(0x0000_1001),
    RegDef::new("IPSTXIDX", IPSTXIDX)
        .mask(0xc000_1ff9)
        .hook(Hook::Part(Reg::Ipstxidx)),
    RegDef::new("IPSTXSALT", IPSTXSALT),
    RegDef::new("IPSTXKEY", IPSTXKEY).array(4, 4),
    // Time sync (§8.2.3.26, §7.9): SYSTIM and the stamp latches live in
    // `crate::ptp::TimeSync`.
    RegDef::new("TSYNCTXCTL", 0x8c00).hook(Hook::Ts(TsReg::TxCtl)),
    RegDef::new("TXSTMPL", 0x8c04)
        .ro()
        .hook(Hook::Ts(TsReg::TxStmpL)),
    RegDef::new("TXSTMPH", 0x8c08)
        .ro()
        .hook(Hook::Ts(TsReg::TxStmpH)),
    RegDef::new("SYSTIML", 0x8c0c).hook(Hook::Ts(TsReg::SystimL)),
    RegDef::new("SYSTIMH", 0x8c10).hook(Hook::Ts(TsReg::SystimH)),
    RegDef::new("TIMINCA", 0x8c14).hook(Hook::Ts(TsReg::Timinca)),
    RegDef::new("TIMADJL", 0x8c18).hook(Hook::Ts(TsReg::TimadjL)),
    RegDef::new("TIMADJH", 0x8c1c).hook(Hook::Ts(TsReg::TimadjH)),
    RegDef::new("TSAUXC", 0x8c20),
    RegDef::new("TRGTTIML0", 0x8c24).array(4, 4),
    RegDef::new("FREQOUT", 0x8c34).array(2, 4),
    RegDef::new("AUXSTMP", 0x8c3c).array(4, 4).ro(),
    RegDef::new("SECRXCTRL", SECRXCTRL),
    RegDef::new("IPSRXIDX", IPSRXIDX)
        .mask(0xc000_1fff)
        .hook(Hook::Part(Reg::Ipsrxidx)),
    RegDef::new("IPSRXIPADDR", IPSRXIPADDR).array(4, 4),
    RegDef::new("IPSRXSPI", IPSRXSPI),
    RegDef::new("IPSRXIPIDX", IPSRXIPIDX),
    RegDef::new("IPSRXKEY", IPSRXKEY).array(4, 4),
    RegDef::new("IPSRXSALT", IPSRXSALT),
    RegDef::new("IPSRXMOD", IPSRXMOD),
    RegDef::new("SECRXSTAT", 0x8d04).reset(1).ro(),
    RegDef::new("RTTUP2TC", 0xc800),
    RegDef::new("TIPG", 0xcb00).reset(0x0000_0008),
    RegDef::new("TXPBSIZE", 0xcc00)
        .array(8, 4)
        .reset(0x0002_8000),
    RegDef::new("RTTPCS", 0xcd00),
    RegDef::new("RTTPT2C", 0xcd20).array(8, 4),
    RegDef::new("MNGTXMAP", 0xcd10),
    // Statistics (§8.2.3.23): clear on read.
    stat("ILLERRC", 0x4004),
    stat("ERRBC", 0x4008),
    stat("MSPDC", 0x4010),
    stat("MLFC", 0x4034),
    stat("MRFC", 0x4038),
    stats("PXONTXC", 0x3f00, 8, 4),
    stats("PXOFFTXC", 0x3f20, 8, 4),
    stat("LXONTXC", 0x3f60),
    stat("LXOFFTXC", 0x3f68),
    stats("MPC", stat::MPC, 8, 4),
    stats("RNBC", stat::RNBC, 8, 4),
    stats("PXONRXCNT", 0x4140, 8, 4),
    stats("PXOFFRXCNT", 0x4160, 8, 4),
    stat("LXONRXCNT", 0x41a4),
    stat("LXOFFRXCNT", 0x41a8),
    stats("PXON2OFFCNT", 0x3240, 8, 4),
    stat("MNGPRC", 0x40b4),
    stat("MNGPDC", 0x40b8),
    stat("XEC", 0x4120),
    stats("QPRC", stat::QPRC, 16, 0x40),
    stats("QBRC_L", stat::QBRC_L, 16, 0x40),
    stats("QBRC_H", stat::QBRC_L + 4, 16, 0x40),
    stats("QPRDC", stat::QPRDC, 16, 0x40),
    stats("QPTC", stat::QPTC, 16, 0x40),
    stats("QBTC_L", stat::QBTC_L, 16, 8),
    stats("QBTC_H", stat::QBTC_L + 4, 16, 8),
    stat("SSVPC", 0x8780),
    stat("FCOEPTC", 0x8784),
    stat("FCOEDWTC", 0x8788),
    stat("FCCRC", 0x5118),
    stat("FCOERPDC", 0x241c),
    stat("FCLAST", 0x2424),
    stat("FCOEPRC", 0x2428),
    stat("FCOEDWRC", 0x242c),
    stat("MNGPTC", 0xcf90),
    // NVM, semaphores, PCIe (§8.2.3.2, §8.2.3.3)
    RegDef::new("EEC", EEC)
        .reset(0x0000_0300)
        .mask(0x0000_0040)
        .hook(Hook::NvmGrant),
    RegDef::new("EERD", EERD).mask(0xfffd).hook(Hook::NvmRead),
    RegDef::new("EEWR", 0x10018),
    RegDef::new("FLA", 0x1001c),
    RegDef::new("EEMNGCTL", 0x10110).reset(1 << 18).ro(),
    RegDef::new("GRC", 0x10200),
    RegDef::new("SWSM", SWSM).mask(0x3).hook(Hook::Semaphore),
    // FW_VAL (bit 15) set, no external error, no pass-through mode (`ixgbe_check_fw_error`).
    RegDef::new("FWSM", 0x10148).reset(0x8000).ro(),
    RegDef::new("FACTPS", 0x10150).ro(),
    RegDef::new("GSSR", GSSR).mask(0x0000_041f),
    RegDef::new("GCR", 0x11000),
    RegDef::new("GCR_EXT", 0x11050),
    RegDef::new("MREVID", 0x11064).ro(),
    RegDef::new("DCA_ID", 0x11070).ro(),
    RegDef::new("DCA_CTRL", 0x11074).reset(1),
    RegDef::new("PBACL", 0x11068),
    RegDef::new("CIAA", 0x11088),
    RegDef::new("CIAD", 0x1108c),
    RegDef::new("BARCTRL", 0x110f4),
    RegDef::new("CORECTL", 0x14f00),
    RegDef::new("PFMBMEM", 0x13000).array(1024, 4),
];

/// The register table: the part's own rows and the counters it shares with
/// the other part.
pub const TABLE: &[RegDef<Hook>] =
    &crate::regfile::join::<Hook, { OWN.len() + SHARED_COUNTERS }>(OWN, &shared_counter_rows());
