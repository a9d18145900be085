// SPDX-License-Identifier: Apache-2.0
//! The 82576 virtual function (igbvf; 82576 datasheet §8.27 "Virtual
//! Function Device Registers", offsets as the igbvf driver's `regs.h` and
//! `mbx.h` use them): device ID 0x10CA, BAR0 16 KiB, BAR3 MSI-X with 3
//! vectors, two queue pairs at the legacy queue offsets (0x2800 / 0x3800,
//! 0x100 apart), statistics at 0x0F10…0x0F50 (32 bits, wrapping), the
//! mailbox buffer at 0x0800 and its register at 0x0C40.

use super::{
    pool_rows, vf_layout, CtlReg, Hook, IntrReg, Reg, Vf, VfMap, VfPart, BAR_SIZE, MSIX_VECTORS,
    PCIE_CAP, POOL_ROWS,
};
use crate::function::{q, Function, Layout, QueueReg};
use crate::igb::regs::SRRCTL_MASK;
use crate::pci::{caps, Bar, BarKind, ConfigSpace, ConfigSpaceBuilder, MsixCap, PcieCap};
use crate::regfile::RegDef;

/// 82576 VF device ID.
pub const DEVICE_82576_VF: u16 = 0x10ca;
/// The VF's register map.
pub const MAP: VfMap = VfMap {
    ctrl: 0x0000,
    link: 0x0008,
    eicr: 0x1580,
    eims: 0x1524,
    eiac: 0x152c,
    eiam: 0x1530,
    eitr0: 0x1680,
    ivar0: 0x1700,
    ivar_misc: 0x1740,
    mailbox: 0x0c40,
    mbmem: 0x0800,
};
/// Queue pairs of the VF's pool.
pub const QUEUES: usize = 2;
/// Receive queue 0's block (queue 1 at +0x100).
pub const RXQ_BASE: u32 = 0x2800;
/// Transmit queue 0's block.
pub const TXQ_BASE: u32 = 0x3800;
/// Distance between queue blocks.
pub const QUEUE_STRIDE: u32 = 0x100;

/// Statistics registers (igbvf `regs.h`).
pub mod stat {
    /// Good packets received.
    pub const VFGPRC: u32 = 0x0f10;
    /// Good packets transmitted.
    pub const VFGPTC: u32 = 0x0f14;
    /// Good octets received.
    pub const VFGORC: u32 = 0x0f18;
    /// Good octets transmitted.
    pub const VFGOTC: u32 = 0x0f34;
    /// Multicast packets received.
    pub const VFMPRC: u32 = 0x0f3c;
}

/// STATUS bits (82576 §8.27.2): full duplex, link up, 1000 Mb/s.
const STATUS_FD: u32 = 1;
const STATUS_LU: u32 = 1 << 1;
const STATUS_SPEED_1000: u32 = 1 << 7;

const fn rxq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, RXQ_BASE + off).array(QUEUES as u32, QUEUE_STRIDE)
}
const fn txq(name: &'static str, off: u32) -> RegDef<Hook> {
    RegDef::new(name, TXQ_BASE + off).array(QUEUES as u32, QUEUE_STRIDE)
}
const fn stat(name: &'static str, off: u32, from: u32) -> RegDef<Hook> {
    RegDef::new(name, off).ro().hook(Hook::Part(Reg::Stat {
        from,
        shift: 0,
        bits: 32,
    }))
}

const OWN: &[RegDef<Hook>] = &[
    RegDef::new("CTRL", MAP.ctrl).hook(Hook::Ctl(CtlReg::Ctrl)),
    RegDef::new("STATUS", MAP.link)
        .ro()
        .hook(Hook::Part(Reg::Link)),
    RegDef::new("FRTIMER", 0x1048).ro(),
    RegDef::new("EICS", 0x1520)
        .wo()
        .hook(Hook::Intr(IntrReg::Eics)),
    RegDef::new("EIMS", MAP.eims)
        .mask(7)
        .hook(Hook::Intr(IntrReg::Eims)),
    RegDef::new("EIMC", 0x1528)
        .wo()
        .hook(Hook::Intr(IntrReg::Eimc)),
    RegDef::new("EIAC", MAP.eiac).mask(7),
    RegDef::new("EIAM", MAP.eiam).mask(7),
    RegDef::new("EICR", MAP.eicr)
        .w1c()
        .mask(7)
        .hook(Hook::Intr(IntrReg::Eicr)),
    RegDef::new("EITR", MAP.eitr0)
        .array(MSIX_VECTORS as u32, 4)
        .mask(0x7fff_fffc)
        .hook(Hook::Intr(IntrReg::Eitr)),
    RegDef::new("IVAR0", MAP.ivar0).mask(0x8383_8383),
    RegDef::new("IVAR_MISC", MAP.ivar_misc).mask(0x83),
    RegDef::new("VMBMEM", MAP.mbmem)
        .array(16, 4)
        .hook(Hook::Part(Reg::MbMem)),
    RegDef::new("V2PMAILBOX", MAP.mailbox)
        .mask(0xff)
        .hook(Hook::Part(Reg::Mailbox)),
    stat("VFGPRC", stat::VFGPRC, super::pool::GPRC),
    stat("VFGPTC", stat::VFGPTC, super::pool::GPTC),
    stat("VFGORC", stat::VFGORC, super::pool::GORCL),
    stat("VFGOTC", stat::VFGOTC, super::pool::GOTCL),
    stat("VFMPRC", stat::VFMPRC, super::pool::MPRC),
    stat("VFGPRLBC", 0x0f40, super::pool::GPRLBC),
    stat("VFGPTLBC", 0x0f44, super::pool::GPTLBC),
    stat("VFGORLBC", 0x0f48, super::pool::GORLBC),
    stat("VFGOTLBC", 0x0f50, super::pool::GOTLBC),
    rxq("RDBAL", 0x00).mask(0xffff_ff80),
    rxq("RDBAH", 0x04),
    rxq("RDLEN", 0x08).mask(0x000f_fff0),
    rxq("SRRCTL", 0x0c).reset(0x0000_0402).mask(SRRCTL_MASK),
    rxq("RDH", q::H)
        .mask(0xffff)
        .hook(Hook::Rxq(QueueReg::Head, 0)),
    rxq("DCA_RXCTRL", 0x14),
    rxq("RDT", q::T).mask(0xffff),
    rxq("RXDCTL", q::DCTL)
        .mask(0x0619_1f1f)
        .hook(Hook::Rxq(QueueReg::Control, 0)),
    txq("TDBAL", 0x00).mask(0xffff_ff80),
    txq("TDBAH", 0x04),
    txq("TDLEN", 0x08).mask(0x000f_fff0),
    txq("TDH", q::H)
        .mask(0xffff)
        .hook(Hook::Txq(QueueReg::Head, 0)),
    txq("DCA_TXCTRL", 0x14),
    txq("TDT", q::T)
        .mask(0xffff)
        .hook(Hook::Txq(QueueReg::Tail, 0)),
    txq("TXDCTL", q::DCTL)
        .mask(0x0639_3f3f)
        .hook(Hook::Txq(QueueReg::Control, 0)),
    txq("TDWBAL", 0x38).mask(0xffff_fffd),
    txq("TDWBAH", 0x3c),
];

/// The register table: the VF's rows and its pool's PF-side ones.
pub const TABLE: &[RegDef<Hook>] =
    &crate::regfile::join::<Hook, { OWN.len() + POOL_ROWS }>(OWN, &pool_rows());

/// BAR0 registers, BAR3 MSI-X (table at 0, PBA at 0x2000).
pub const BARS: [Bar; 2] = [
    Bar {
        index: 0,
        size: BAR_SIZE,
        kind: BarKind::Mem32,
    },
    Bar {
        index: 3,
        size: BAR_SIZE,
        kind: BarKind::Mem32,
    },
];

/// Configuration space of a VF: its IDs and BARs, MSI-X and PCIe (with
/// FLR) capabilities, no INTx (82576 §9.7).
pub(super) fn vf_config_space(device: u16, bars: &[Bar], linkcap: u32) -> ConfigSpace {
    let mut b = ConfigSpaceBuilder::new(0x8086, device, 0x01, [0x02, 0x00, 0x00])
        .subsystem(0x8086, 0)
        .no_intx();
    for bar in bars {
        b = b.bar(*bar);
    }
    let (msix, msix_m) = MsixCap {
        vectors: MSIX_VECTORS,
        table_bar: 3,
        table_offset: 0,
        pba_bar: 3,
        pba_offset: 0x2000,
    }
    .body();
    let (pcie, pcie_m) = PcieCap {
        // MPS 512, role-based errors, FLR.
        devcap: 0x2 | (1 << 15) | (1 << 28),
        linkcap,
        linksta: (linkcap & 0x3f0) as u16 | (linkcap & 0xf) as u16,
        devcap2: 0x1f,
    }
    .body();
    b.capability(0x70, caps::id::MSIX, &msix, &msix_m)
        .capability(PCIE_CAP, caps::id::PCIE, &pcie, &pcie_m)
        .build()
}

/// The 82576 VF's part.
#[derive(Debug)]
pub struct I82576Vf;

/// An 82576 VF.
pub type Igbvf = Function<Vf<I82576Vf>>;

impl VfPart for I82576Vf {
    const NAME: &'static str = "igbvf";
    const KIND: super::agent::PfKind = super::agent::PfKind::Igb;
    const LAYOUT: Layout = vf_layout(QUEUES, 0x0c, (0x7f, 0x0f00), false);
    const TABLE: &'static [RegDef<Hook>] = TABLE;
    const MAP: VfMap = MAP;
    /// `E1000_RXD_STAT_TCPCS`/`UDPCS`, `E1000_RXDEXT_STATERR_TCPE` (bit 29)
    /// and `_IPE` (bit 30).
    const CSUM: super::CsumBits = super::CsumBits {
        tcp: crate::desc::RXD_STAT_TCPCS,
        udp: crate::desc::RXD_STAT_UDPCS,
        l4_err: crate::desc::RXD_ERR_L4E,
        ip_err: crate::desc::RXD_ERR_IPE,
    };
    const BARS: &'static [Bar] = &BARS;

    fn config_space() -> ConfigSpace {
        // 2.5 GT/s x4.
        vf_config_space(DEVICE_82576_VF, &BARS, 0x1 | (4 << 4))
    }
    /// STATUS: link up, 1000 Mb/s full duplex (the PF's port).
    fn link_reg(up: bool) -> u32 {
        STATUS_FD | STATUS_SPEED_1000 | if up { STATUS_LU } else { 0 }
    }
    fn eitr_interval_ns(v: u32) -> u64 {
        crate::igb::intr::eitr_interval_ns(v)
    }
    /// The Linux igb PF strips the VLAN tags of every pool
    /// (VMOLR.STRVLAN, `igb_set_vmolr`).
    fn vlan_strip(_: &Igbvf, _: usize) -> bool {
        true
    }
    fn rxq_base(q: usize) -> u32 {
        RXQ_BASE + q as u32 * QUEUE_STRIDE
    }
    fn txq_base(q: usize) -> u32 {
        TXQ_BASE + q as u32 * QUEUE_STRIDE
    }
}
