// SPDX-License-Identifier: Apache-2.0
//! Builders for the capability structures of the NIC functions.
//!
//! Bodies exclude the 2-byte (id, next) header; each builder returns the body and
//! its per-byte writable mask for [`super::ConfigSpaceBuilder::capability`].

/// Capability IDs (PCI Local Bus spec, appendix H).
pub mod id {
    /// Power management.
    pub const PM: u8 = 0x01;
    /// Message signalled interrupts.
    pub const MSI: u8 = 0x05;
    /// PCI Express.
    pub const PCIE: u8 = 0x10;
    /// MSI-X.
    pub const MSIX: u8 = 0x11;
}

/// Power management capability (PCI PM spec 1.2 §3.2; 82576 datasheet §9.5.1).
#[derive(Clone, Copy, Debug)]
pub struct PmCap {
    /// Power management capabilities (PMC) word.
    pub pmc: u16,
}

impl PmCap {
    /// Body and writable mask: PMCSR power state (bits 1:0) and PME_En (bit 8).
    pub fn body(&self) -> (Vec<u8>, Vec<u8>) {
        let mut b = vec![0u8; 6];
        b[0..2].copy_from_slice(&self.pmc.to_le_bytes());
        b[2] = 0x08; // PMCSR: No_Soft_Reset
        let mut m = vec![0u8; 6];
        m[2] = 0x03;
        m[3] = 0x01;
        (b, m)
    }
}

/// MSI capability with 64-bit address and per-vector masking (82576 §9.5.2).
#[derive(Clone, Copy, Debug)]
pub struct MsiCap {
    /// log2 of the number of vectors requested (Multiple Message Capable).
    pub mmc: u8,
}

impl MsiCap {
    /// Body and writable mask.
    pub fn body(&self) -> (Vec<u8>, Vec<u8>) {
        // control, addr lo, addr hi, data, reserved, mask, pending
        let mut b = vec![0u8; 22];
        let ctrl: u16 = (1 << 8) | (1 << 7) | (u16::from(self.mmc & 7) << 1);
        b[0..2].copy_from_slice(&ctrl.to_le_bytes());
        let mut m = vec![0u8; 22];
        m[0] = 0x71; // enable + multiple message enable
        m[2..6].copy_from_slice(&0xffff_fffcu32.to_le_bytes());
        m[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
        m[10..12].copy_from_slice(&u16::MAX.to_le_bytes());
        m[14..18].copy_from_slice(&u32::MAX.to_le_bytes());
        (b, m)
    }
}

/// MSI-X capability (PCI 3.0 §6.8.2; 82576 §9.5.3).
#[derive(Clone, Copy, Debug)]
pub struct MsixCap {
    /// Number of table entries.
    pub vectors: u16,
    /// BAR holding the table.
    pub table_bar: u8,
    /// Offset of the table in that BAR.
    pub table_offset: u32,
    /// BAR holding the pending bit array.
    pub pba_bar: u8,
    /// Offset of the PBA in that BAR.
    pub pba_offset: u32,
}

impl MsixCap {
    /// Body and writable mask: enable (bit 15) and function mask (bit 14).
    pub fn body(&self) -> (Vec<u8>, Vec<u8>) {
        let mut b = vec![0u8; 10];
        b[0..2].copy_from_slice(&(self.vectors.saturating_sub(1) & 0x7ff).to_le_bytes());
        b[2..6].copy_from_slice(&(self.table_offset | u32::from(self.table_bar)).to_le_bytes());
        b[6..10].copy_from_slice(&(self.pba_offset | u32::from(self.pba_bar)).to_le_bytes());
        let mut m = vec![0u8; 10];
        m[1] = 0xc0;
        (b, m)
    }
}

/// PCI Express capability, version 2, endpoint (PCIe base spec 2.0 §7.8; 82576 §9.5.4).
#[derive(Clone, Copy, Debug)]
pub struct PcieCap {
    /// Device capabilities register.
    pub devcap: u32,
    /// Link capabilities register.
    pub linkcap: u32,
    /// Link status register (negotiated speed/width).
    pub linksta: u16,
    /// Device capabilities 2 register.
    pub devcap2: u32,
}

/// Offset of Device Control within the PCIe capability (from the capability start).
pub const PCIE_DEVCTL: usize = 0x08;
/// Initiate Function Level Reset bit in Device Control.
pub const PCIE_DEVCTL_FLR: u16 = 1 << 15;

impl PcieCap {
    /// Body and writable mask. Offsets below are from the capability start;
    /// the body starts 2 bytes in (after id and next pointer).
    pub fn body(&self) -> (Vec<u8>, Vec<u8>) {
        fn put(buf: &mut [u8], cap_off: usize, bytes: &[u8]) {
            buf[cap_off - 2..cap_off - 2 + bytes.len()].copy_from_slice(bytes);
        }
        let mut b = vec![0u8; 0x3a];
        put(&mut b, 0x02, &0x0002u16.to_le_bytes()); // version 2, endpoint
        put(&mut b, 0x04, &self.devcap.to_le_bytes());
        put(&mut b, PCIE_DEVCTL, &0x2810u16.to_le_bytes()); // MRRS 512, relaxed ordering
        put(&mut b, 0x0c, &self.linkcap.to_le_bytes());
        put(&mut b, 0x12, &self.linksta.to_le_bytes());
        put(&mut b, 0x24, &self.devcap2.to_le_bytes());
        let mut m = vec![0u8; 0x3a];
        put(&mut m, PCIE_DEVCTL, &0xffffu16.to_le_bytes()); // incl. FLR, cleared by the device
        put(&mut m, 0x10, &0x01c3u16.to_le_bytes()); // linkctl: ASPM, RCB, common clock, ext sync
        put(&mut m, 0x28, &0x061fu16.to_le_bytes()); // devctl2: completion timeout, LTR, OBFF
        (b, m)
    }
}
