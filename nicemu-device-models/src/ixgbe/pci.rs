// SPDX-License-Identifier: Apache-2.0
//! PCI configuration of the 82599 SFP+ function (82599 datasheet §9: device ID
//! 0x10FB; BAR0 512 KiB 64-bit registers, BAR2 32-byte I/O window, BAR4 16 KiB
//! 64-bit MSI-X table (0x0000) and PBA (0x2000) with 64 vectors; capabilities PM
//! 0x40 → MSI 0x50 → MSI-X 0x70 → PCIe 0xA0). The ixgbe driver reads the MSI-X
//! table size at 0x72 (`IXGBE_PCIE_MSIX_82599_CAPS`) and the link status at
//! 0xB2 (`IXGBE_PCI_LINK_STATUS`), so the capability offsets are fixed.

use crate::pci::{
    caps, Bar, BarKind, ConfigSpace, ConfigSpaceBuilder, MsiCap, MsixCap, PcieCap, PmCap,
};

/// Intel's PCI vendor ID.
pub const VENDOR_INTEL: u16 = 0x8086;
/// 82599ES SFP+ device ID.
pub const DEVICE_82599_SFP: u16 = 0x10fb;
/// Subsystem device ID (Ethernet Server Adapter X520-2).
pub const SUBSYSTEM_ID: u16 = 0x0003;
/// BAR0: register space size.
pub const BAR0_SIZE: u64 = 512 * 1024;
/// Size of the implemented register file inside BAR0.
pub const REGS_SIZE: u64 = 128 * 1024;
/// BAR2: I/O window size.
pub const BAR2_SIZE: u64 = 32;
/// BAR4: MSI-X table and PBA.
pub const BAR4_SIZE: u64 = 16 * 1024;
/// MSI-X vectors (table size).
pub const MSIX_VECTORS: u16 = 64;
/// Offset of the MSI-X capability.
pub const MSIX_CAP: usize = 0x70;
/// Offset of the PCIe capability.
pub const PCIE_CAP: usize = 0xa0;

/// The function's BARs.
pub const BARS: [Bar; 3] = [
    Bar {
        index: 0,
        size: BAR0_SIZE,
        kind: BarKind::Mem64,
    },
    Bar {
        index: 2,
        size: BAR2_SIZE,
        kind: BarKind::Io,
    },
    Bar {
        index: 4,
        size: BAR4_SIZE,
        kind: BarKind::Mem64,
    },
];

/// Builds the configuration space.
pub fn config_space() -> ConfigSpace {
    let mut b = ConfigSpaceBuilder::new(VENDOR_INTEL, DEVICE_82599_SFP, 0x01, [0x02, 0x00, 0x00])
        .subsystem(VENDOR_INTEL, SUBSYSTEM_ID);
    for bar in BARS {
        b = b.bar(bar);
    }
    let (pm, pm_m) = PmCap { pmc: 0x4823 }.body();
    let (msi, msi_m) = MsiCap { mmc: 0 }.body();
    let (msix, msix_m) = MsixCap {
        vectors: MSIX_VECTORS,
        table_bar: 4,
        table_offset: 0,
        pba_bar: 4,
        pba_offset: 0x2000,
    }
    .body();
    let (pcie, pcie_m) = PcieCap {
        // MPS 512, L0s/L1 acceptable latency, role-based errors, FLR.
        devcap: 0x2 | (6 << 6) | (6 << 9) | (1 << 15) | (1 << 28),
        // 5 GT/s, x8, ASPM L0s+L1.
        linkcap: 0x2 | (8 << 4) | (3 << 10),
        // 5 GT/s x8, slot clock.
        linksta: 0x2 | (8 << 4) | (1 << 12),
        // Completion timeout ranges A-D supported.
        devcap2: 0x1f,
    }
    .body();
    b.capability(0x40, caps::id::PM, &pm, &pm_m)
        .capability(0x50, caps::id::MSI, &msi, &msi_m)
        .capability(MSIX_CAP, caps::id::MSIX, &msix, &msix_m)
        .capability(PCIE_CAP, caps::id::PCIE, &pcie, &pcie_m)
        .build()
}
