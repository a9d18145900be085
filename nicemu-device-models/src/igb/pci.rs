// SPDX-License-Identifier: Apache-2.0
//! PCI configuration of the 82576 function (82576 datasheet §9: device ID 0x10C9,
//! BAR0 128 KiB registers, BAR1 flash, BAR2 32-byte I/O window, BAR3 MSI-X with
//! 10 vectors, capabilities PM → MSI → MSI-X → PCIe).

use crate::pci::{
    caps, Bar, BarKind, ConfigSpace, ConfigSpaceBuilder, MsiCap, MsixCap, PcieCap, PmCap,
};

/// Intel's PCI vendor ID.
pub const VENDOR_INTEL: u16 = 0x8086;
/// 82576 copper device ID.
pub const DEVICE_82576: u16 = 0x10c9;
/// Subsystem device ID (Gigabit ET Dual Port Server Adapter).
pub const SUBSYSTEM_ID: u16 = 0xa03c;
/// BAR0: register file size.
pub const BAR0_SIZE: u64 = 128 * 1024;
/// BAR1: flash window size.
pub const BAR1_SIZE: u64 = 128 * 1024;
/// BAR2: I/O window size.
pub const BAR2_SIZE: u64 = 32;
/// BAR3: MSI-X table and PBA.
pub const BAR3_SIZE: u64 = 16 * 1024;
/// MSI-X vectors (table size).
pub const MSIX_VECTORS: u16 = 10;
/// Offset of the PCIe capability.
pub const PCIE_CAP: usize = 0xa0;

/// The function's BARs.
pub const BARS: [Bar; 4] = [
    Bar {
        index: 0,
        size: BAR0_SIZE,
        kind: BarKind::Mem32,
    },
    Bar {
        index: 1,
        size: BAR1_SIZE,
        kind: BarKind::Mem32,
    },
    Bar {
        index: 2,
        size: BAR2_SIZE,
        kind: BarKind::Io,
    },
    Bar {
        index: 3,
        size: BAR3_SIZE,
        kind: BarKind::Mem32,
    },
];

/// Builds the configuration space.
pub fn config_space() -> ConfigSpace {
    let mut b = ConfigSpaceBuilder::new(VENDOR_INTEL, DEVICE_82576, 0x01, [0x02, 0x00, 0x00])
        .subsystem(VENDOR_INTEL, SUBSYSTEM_ID);
    for bar in BARS {
        b = b.bar(bar);
    }
    let (pm, pm_m) = PmCap { pmc: 0xc823 }.body();
    let (msi, msi_m) = MsiCap { mmc: 0 }.body();
    let (msix, msix_m) = MsixCap {
        vectors: MSIX_VECTORS,
        table_bar: 3,
        table_offset: 0,
        pba_bar: 3,
        pba_offset: 0x2000,
    }
    .body();
    let (pcie, pcie_m) = PcieCap {
        // MPS 512, L0s/L1 acceptable latency, role-based errors, FLR.
        devcap: 0x2 | (6 << 6) | (6 << 9) | (1 << 15) | (1 << 28),
        // 2.5 GT/s, x4, ASPM L0s+L1, port 0.
        linkcap: 0x1 | (4 << 4) | (3 << 10),
        // 2.5 GT/s x4, slot clock.
        linksta: 0x1 | (4 << 4) | (1 << 12),
        // Completion timeout ranges A-D supported.
        devcap2: 0x1f,
    }
    .body();
    b.capability(0x40, caps::id::PM, &pm, &pm_m)
        .capability(0x50, caps::id::MSI, &msi, &msi_m)
        .capability(0x70, caps::id::MSIX, &msix, &msix_m)
        .capability(PCIE_CAP, caps::id::PCIE, &pcie, &pcie_m)
        .build()
}
