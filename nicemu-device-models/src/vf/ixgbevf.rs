// SPDX-License-Identifier: Apache-2.0
//! The 82599 virtual function (ixgbevf; 82599 datasheet §8.3 "Virtual
//! Function Registers", offsets as the ixgbevf driver's `regs.h` uses
//! them): device ID 0x10ED, BAR0 16 KiB, BAR3 MSI-X with 3 vectors, two
//! queue pairs (receive at 0x1000, transmit at 0x2000, 0x40 apart),
//! VFLINKS at 0x0010, the interrupt block at 0x0100, statistics with 36-bit
//! octet counters, the mailbox buffer at 0x0200 and its register at 0x02FC.

use super::{
    igbvf::vf_config_space, pool, pool_rows, vf_layout, CtlReg, Hook, IntrReg, Reg, Vf, VfMap,
    VfPart, BAR_SIZE, MSIX_VECTORS, POOL_ROWS,
};
use crate::function::{q, Function, Layout, QueueReg};
use crate::pci::{Bar, BarKind, ConfigSpace};
use crate::regfile::RegDef;

/// 82599 VF device ID.
pub const DEVICE_82599_VF: u16 = 0x10ed;
/// The VF's register map.
pub const MAP: VfMap = VfMap {
    ctrl: 0x0000,
    link: 0x0010,
    eicr: 0x0100,
    eims: 0x0108,
    eiac: 0x0110,
    eiam: 0x0114,
    eitr0: 0x0820,
    ivar0: 0x0120,
    ivar_misc: 0x0140,
    mailbox: 0x02fc,
    mbmem: 0x0200,
};
/// Queue pairs of the VF's pool.
pub const QUEUES: usize = 2;
/// Receive queue 0's block.
pub const RXQ_BASE: u32 = 0x1000;
/// Transmit queue 0's block.
pub const TXQ_BASE: u32 = 0x2000;
/// Distance between queue blocks.
pub const QUEUE_STRIDE: u32 = 0x40;
/// SRRCTL's offset in a receive queue's block.
pub const SRRCTL: u32 = 0x14;
/// RXDCTL.VME: strip VLAN tags (82599 §8.2.3.8.6).
pub const RXDCTL_VME: u32 = 1 << 30;

/// Statistics registers (ixgbevf `regs.h`).
pub mod stat {
    /// Good packets received.
    pub const VFGPRC: u32 = 0x101c;
    /// Good octets received, low 32 bits (high 4 at +4).
    pub const VFGORC_LSB: u32 = 0x1020;
    /// Multicast packets received.
    pub const VFMPRC: u32 = 0x1034;
    /// Good packets transmitted.
    pub const VFGPTC: u32 = 0x201c;
    /// Good octets transmitted, low 32 bits (high 4 at +4).
    pub const VFGOTC_LSB: u32 = 0x2020;
}

/// VFLINKS bits (82599 §8.3.5.1.3): link up, 10 Gb/s.
const LINKS_UP: u32 = 1 << 30;
const LINKS_SPEED_10G: u32 = 3 << 28;

const fn rxq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, RXQ_BASE + off).array(QUEUES as u32, QUEUE_STRIDE)
}
const fn txq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, TXQ_BASE + off).array(QUEUES as u32, QUEUE_STRIDE)
}
const fn stat(name: &'static str, off: u32, from: u32, shift: u8, bits: u8) -> RegDef<Hook> {
    RegDef::new(name, off)
        .ro()
        .hook(Hook::Part(Reg::Stat { from, shift, bits }))
}

const OWN: &[RegDef<Hook>] = &[
    RegDef::new("VFCTRL", MAP.ctrl).hook(Hook::Ctl(CtlReg::Ctrl)),
    RegDef::new("VFSTATUS", 0x0008).ro(),
    RegDef::new("VFLINKS", MAP.link)
        .ro()
        .hook(Hook::Part(Reg::Link)),
    RegDef::new("VFFRTIMER", 0x0048).ro(),
    RegDef::new("VTEICR", MAP.eicr)
        .w1c()
        .mask(7)
        .hook(Hook::Intr(IntrReg::Eicr)),
    RegDef::new("VTEICS", 0x0104)
        .wo()
        .hook(Hook::Intr(IntrReg::Eics)),
    RegDef::new("VTEIMS", MAP.eims)
        .mask(7)
        .hook(Hook::Intr(IntrReg::Eims)),
    RegDef::new("VTEIMC", 0x010c)
        .wo()
        .hook(Hook::Intr(IntrReg::Eimc)),
    RegDef::new("VTEIAC", MAP.eiac).mask(7),
    RegDef::new("VTEIAM", MAP.eiam).mask(7),
    RegDef::new("VTIVAR", MAP.ivar0).mask(0x8383_8383),
    RegDef::new("VTIVAR_MISC", MAP.ivar_misc).mask(0x83),
    RegDef::new("VTRSCINT", 0x0180).array(2, 4),
    RegDef::new("VFMBMEM", MAP.mbmem)
        .array(16, 4)
        .hook(Hook::Part(Reg::MbMem)),
    RegDef::new("VFMAILBOX", MAP.mailbox)
        .mask(0xff)
        .hook(Hook::Part(Reg::Mailbox)),
    RegDef::new("VFPSRTYPE", 0x0300),
    RegDef::new("VTEITR", MAP.eitr0)
        .array(MSIX_VECTORS as u32, 4)
        .mask(0x8fff_fff8)
        .hook(Hook::Intr(IntrReg::Eitr)),
    stat("VFGPRC", stat::VFGPRC, pool::GPRC, 0, 32),
    stat("VFGORC_LSB", stat::VFGORC_LSB, pool::GORCL, 0, 32),
    stat("VFGORC_MSB", stat::VFGORC_LSB + 4, pool::GORCL, 32, 4),
    stat("VFMPRC", stat::VFMPRC, pool::MPRC, 0, 32),
    stat("VFGPTC", stat::VFGPTC, pool::GPTC, 0, 32),
    stat("VFGOTC_LSB", stat::VFGOTC_LSB, pool::GOTCL, 0, 32),
    stat("VFGOTC_MSB", stat::VFGOTC_LSB + 4, pool::GOTCL, 32, 4),
    rxq("VFRDBAL", 0x00).mask(0xffff_ff80),
    rxq("VFRDBAH", 0x04),
    rxq("VFRDLEN", 0x08).mask(0x000f_ff80),
    rxq("VFDCA_RXCTRL", 0x0c),
    rxq("VFRDH", q::H)
        .mask(0xffff)
        .hook(Hook::Rxq(QueueReg::Head, 0)),
    rxq("VFSRRCTL", SRRCTL).reset(0x0000_0402).mask(0x1640_3f1f),
    rxq("VFRDT", q::T).mask(0xffff),
    rxq("VFRXDCTL", q::DCTL)
        .mask(0x4200_0000 | 0x3f7f_7f7f)
        .hook(Hook::Rxq(QueueReg::Control, 0)),
    rxq("VFRSCCTL", 0x2c),
    txq("VFTDBAL", 0x00).mask(0xffff_ff80),
    txq("VFTDBAH", 0x04),
    txq("VFTDLEN", 0x08).mask(0x000f_ff80),
    txq("VFDCA_TXCTRL", 0x0c),
    txq("VFTDH", q::H)
        .mask(0xffff)
        .hook(Hook::Txq(QueueReg::Head, 0)),
    txq("VFTDT", q::T)
        .mask(0xffff)
        .hook(Hook::Txq(QueueReg::Tail, 0)),
    txq("VFTXDCTL", q::DCTL)
        .mask(0x0600_7f7f)
        .hook(Hook::Txq(QueueReg::Control, 0)),
    txq("VFTDWBAL", 0x38).mask(0xffff_fffd),
    txq("VFTDWBAH", 0x3c),
];

/// The register table: the VF's rows and its pool's PF-side ones.
pub const TABLE: &[RegDef<Hook>] =
    &crate::regfile::join::<Hook, { OWN.len() + POOL_ROWS }>(OWN, &pool_rows());

/// BAR0 registers, BAR3 MSI-X (64-bit BARs as the 82599's VFs have).
pub const BARS: [Bar; 2] = [
    Bar {
        index: 0,
        size: BAR_SIZE,
        kind: BarKind::Mem64,
    },
    Bar {
        index: 3,
        size: BAR_SIZE,
        kind: BarKind::Mem64,
    },
];

/// The 82599 VF's part.
#[derive(Debug)]
pub struct I82599Vf;

/// An 82599 VF.
pub type Ixgbevf = Function<Vf<I82599Vf>>;

impl VfPart for I82599Vf {
    const NAME: &'static str = "ixgbevf";
    const KIND: super::agent::PfKind = super::agent::PfKind::Ixgbe;
    const LAYOUT: Layout = vf_layout(QUEUES, SRRCTL, (0x1f, 0), true);
    const TABLE: &'static [RegDef<Hook>] = TABLE;
    const MAP: VfMap = MAP;
    /// `IXGBE_RXD_STAT_L4CS` (bit 5) for TCP and UDP, `IXGBE_RXDADV_ERR_TCPE`
    /// (bit 30) and `_IPE` (bit 31), as the 82599 PF's descriptors.
    const CSUM: super::CsumBits = super::CsumBits {
        tcp: 1 << 5,
        udp: 1 << 5,
        l4_err: 1 << 30,
        ip_err: 1 << 31,
    };
    const BARS: &'static [Bar] = &BARS;

    fn config_space() -> ConfigSpace {
        // 5 GT/s x8.
        vf_config_space(DEVICE_82599_VF, &BARS, 0x2 | (8 << 4))
    }
    /// VFLINKS: link up at 10 Gb/s (the PF's port).
    fn link_reg(up: bool) -> u32 {
        LINKS_SPEED_10G | if up { LINKS_UP } else { 0 }
    }
    /// VTEITR interval: bits 11:3 in 2 µs units (as the PF's EITR).
    fn eitr_interval_ns(v: u32) -> u64 {
        u64::from(v & 0xff8) * 250
    }
    /// VFRXDCTL.VME of the queue (`ixgbevf_set_rx_vlan` …).
    fn vlan_strip(f: &Ixgbevf, qi: usize) -> bool {
        f.regs.peek(Self::rxq_base(qi) + q::DCTL) & RXDCTL_VME != 0
    }
    fn rxq_base(q: usize) -> u32 {
        RXQ_BASE + q as u32 * QUEUE_STRIDE
    }
    fn txq_base(q: usize) -> u32 {
        TXQ_BASE + q as u32 * QUEUE_STRIDE
    }
}
