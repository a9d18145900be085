// SPDX-License-Identifier: Apache-2.0
//! The configuration space byte array with per-byte write and write-1-to-clear masks.

/// Size of PCI Express configuration space.
pub const CONFIG_SPACE_SIZE: usize = 4096;

const COMMAND: usize = 0x04;
const STATUS: usize = 0x06;
const BAR0: usize = 0x10;
const CAP_PTR: usize = 0x34;
const INTERRUPT_LINE: usize = 0x3c;
const STATUS_CAP_LIST: u16 = 1 << 4;

/// What a BAR decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarKind {
    /// 32-bit memory BAR.
    Mem32,
    /// 64-bit memory BAR (takes two BAR slots).
    Mem64,
    /// I/O BAR.
    Io,
}

/// One base address register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    /// BAR slot (0..=5).
    pub index: usize,
    /// Size in bytes (a power of two).
    pub size: u64,
    /// Address space.
    pub kind: BarKind,
}

/// A device's PCI configuration space.
#[derive(Clone)]
pub struct ConfigSpace {
    bytes: Vec<u8>,
    wmask: Vec<u8>,
    w1c: Vec<u8>,
    reset_image: Vec<u8>,
    bars: Vec<Bar>,
}

impl std::fmt::Debug for ConfigSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigSpace")
            .field("vendor", &format_args!("{:#06x}", self.read_u16(0)))
            .field("device", &format_args!("{:#06x}", self.read_u16(2)))
            .field("bars", &self.bars)
            .finish()
    }
}

/// Builds a [`ConfigSpace`].
#[derive(Debug)]
pub struct ConfigSpaceBuilder {
    cs: ConfigSpace,
    last_cap: Option<usize>,
}

impl ConfigSpaceBuilder {
    /// Starts a type-0 header with IDs, revision and class code (base, sub, prog-if).
    pub fn new(vendor: u16, device: u16, revision: u8, class: [u8; 3]) -> Self {
        let mut cs = ConfigSpace {
            bytes: vec![0; CONFIG_SPACE_SIZE],
            wmask: vec![0; CONFIG_SPACE_SIZE],
            w1c: vec![0; CONFIG_SPACE_SIZE],
            reset_image: Vec::new(),
            bars: Vec::new(),
        };
        cs.put_u16(0x00, vendor);
        cs.put_u16(0x02, device);
        cs.bytes[0x08] = revision;
        cs.bytes[0x09] = class[2];
        cs.bytes[0x0a] = class[1];
        cs.bytes[0x0b] = class[0];
        // Command: I/O, memory, bus master, parity, SERR, INTx disable are writable.
        cs.set_wmask16(COMMAND, 0x0547);
        // Status: error bits are write-1-to-clear.
        cs.w1c[STATUS + 1] = 0xf9;
        cs.bytes[0x0c] = 0x10; // cache line size
        cs.wmask[0x0c] = 0xff;
        cs.wmask[0x0d] = 0xff; // latency timer
        cs.wmask[INTERRUPT_LINE] = 0xff;
        cs.bytes[INTERRUPT_LINE + 1] = 1; // INTA#
        ConfigSpaceBuilder { cs, last_cap: None }
    }

    /// Sets the subsystem vendor and device IDs.
    pub fn subsystem(mut self, vendor: u16, device: u16) -> Self {
        self.cs.put_u16(0x2c, vendor);
        self.cs.put_u16(0x2e, device);
        self
    }

    /// No legacy interrupt: Interrupt Pin 0 (an SR-IOV virtual function,
    /// PCIe SR-IOV spec §3.5.10; 82576 §9.7, 82599 §9.4).
    pub fn no_intx(mut self) -> Self {
        self.cs.bytes[INTERRUPT_LINE + 1] = 0;
        self
    }

    /// Adds a BAR; its low bits carry the type, its writable bits implement sizing.
    pub fn bar(mut self, bar: Bar) -> Self {
        assert!(bar.size.is_power_of_two() && bar.index < 6);
        let off = BAR0 + bar.index * 4;
        let (flags, min) = match bar.kind {
            BarKind::Mem32 => (0u32, 16u64),
            BarKind::Mem64 => (0x4, 16),
            BarKind::Io => (0x1, 4),
        };
        let size = bar.size.max(min);
        let mask = !(size - 1);
        self.cs.put_u32(off, flags);
        self.cs.set_wmask32(off, mask as u32);
        if bar.kind == BarKind::Mem64 {
            self.cs.set_wmask32(off + 4, (mask >> 32) as u32);
        }
        self.cs.bars.push(bar);
        self
    }

    /// Appends a capability with `id` and `body` (bytes after the 2-byte header)
    /// at `offset`, with per-byte writable mask `wmask` over the body.
    pub fn capability(mut self, offset: usize, id: u8, body: &[u8], wmask: &[u8]) -> Self {
        assert!(offset >= 0x40 && offset + 2 + body.len() <= 0x100);
        self.cs.bytes[offset] = id;
        self.cs.bytes[offset + 2..offset + 2 + body.len()].copy_from_slice(body);
        for (i, m) in wmask.iter().enumerate() {
            self.cs.wmask[offset + 2 + i] = *m;
        }
        match self.last_cap {
            None => self.cs.bytes[CAP_PTR] = offset as u8,
            Some(prev) => self.cs.bytes[prev + 1] = offset as u8,
        }
        self.last_cap = Some(offset);
        let st = self.cs.read_u16(STATUS) | STATUS_CAP_LIST;
        self.cs.put_u16(STATUS, st);
        self
    }

    /// Finishes the builder; the current contents become the reset image.
    pub fn build(mut self) -> ConfigSpace {
        self.cs.reset_image = self.cs.bytes.clone();
        self.cs
    }
}

impl ConfigSpace {
    fn put_u16(&mut self, off: usize, v: u16) {
        self.bytes[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn put_u32(&mut self, off: usize, v: u32) {
        self.bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn set_wmask16(&mut self, off: usize, m: u16) {
        self.wmask[off..off + 2].copy_from_slice(&m.to_le_bytes());
    }
    fn set_wmask32(&mut self, off: usize, m: u32) {
        self.wmask[off..off + 4].copy_from_slice(&m.to_le_bytes());
    }

    /// Reads a little-endian u16 (0 outside the space).
    pub fn read_u16(&self, off: usize) -> u16 {
        let mut b = [0u8; 2];
        self.read(off as u64, &mut b);
        u16::from_le_bytes(b)
    }

    /// Reads a little-endian u32 (0 outside the space).
    pub fn read_u32(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        self.read(off as u64, &mut b);
        u32::from_le_bytes(b)
    }

    /// Guest read of any length; bytes outside the space read as 0.
    pub fn read(&self, off: u64, data: &mut [u8]) {
        for (i, d) in data.iter_mut().enumerate() {
            *d = usize::try_from(off)
                .ok()
                .and_then(|o| o.checked_add(i))
                .and_then(|o| self.bytes.get(o))
                .copied()
                .unwrap_or(0);
        }
    }

    /// Guest write of any length, through the writable and W1C masks; bytes
    /// outside the space are ignored.
    pub fn write(&mut self, off: u64, data: &[u8]) {
        for (i, d) in data.iter().enumerate() {
            let Some(o) = usize::try_from(off).ok().and_then(|o| o.checked_add(i)) else {
                return;
            };
            if o >= CONFIG_SPACE_SIZE {
                return;
            }
            let m = self.wmask[o];
            let c = self.w1c[o];
            self.bytes[o] = ((self.bytes[o] & !m) | (d & m)) & !(d & c);
        }
    }

    /// The BARs this function has.
    pub fn bars(&self) -> &[Bar] {
        &self.bars
    }

    /// PCI command register: bus mastering enabled (DMA allowed).
    pub fn bus_master(&self) -> bool {
        self.read_u16(COMMAND) & 0x4 != 0
    }

    /// PCI command register: INTx disabled.
    pub fn intx_disabled(&self) -> bool {
        self.read_u16(COMMAND) & 0x400 != 0
    }

    /// Reads a byte of a capability register, for devices that act on it.
    pub fn byte(&self, off: usize) -> u8 {
        self.bytes.get(off).copied().unwrap_or(0)
    }

    /// Sets bits in a read-only status field (e.g. PCIe device status).
    pub fn set_u16(&mut self, off: usize, v: u16) {
        self.put_u16(off, v);
    }

    /// Restores the reset image (function-level reset).
    pub fn reset(&mut self) {
        self.bytes.copy_from_slice(&self.reset_image);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs() -> ConfigSpace {
        ConfigSpaceBuilder::new(0x8086, 0x10c9, 1, [2, 0, 0])
            .subsystem(0x8086, 0xa03c)
            .bar(Bar {
                index: 0,
                size: 128 * 1024,
                kind: BarKind::Mem32,
            })
            .bar(Bar {
                index: 2,
                size: 32,
                kind: BarKind::Io,
            })
            .capability(
                0x40,
                0x01,
                &[0x23, 0xc8, 0, 0, 0, 0],
                &[0, 0, 0x03, 0x81, 0, 0],
            )
            .build()
    }

    #[test]
    fn ids_class_and_caps() {
        let c = cs();
        assert_eq!(c.read_u32(0), 0x10c9_8086);
        assert_eq!(c.read_u32(8) >> 8, 0x020000);
        assert_eq!(c.read_u32(0x2c), 0xa03c_8086);
        assert_eq!(c.byte(0x34), 0x40);
        assert_eq!(c.read_u16(6) & 0x10, 0x10);
        assert_eq!(c.byte(0x40), 0x01);
        assert_eq!(c.byte(0x41), 0);
    }

    #[test]
    fn bar_sizing() {
        let mut c = cs();
        c.write(0x10, &u32::MAX.to_le_bytes());
        assert_eq!(c.read_u32(0x10), 0xfffe_0000);
        c.write(0x18, &u32::MAX.to_le_bytes());
        assert_eq!(c.read_u32(0x18), 0xffff_ffe1);
        c.write(0x14, &u32::MAX.to_le_bytes());
        assert_eq!(c.read_u32(0x14), 0, "absent BAR reads 0");
    }

    #[test]
    fn read_only_ids_and_out_of_range() {
        let mut c = cs();
        c.write(0, &[0, 0, 0, 0]);
        assert_eq!(c.read_u16(0), 0x8086);
        let mut b = [0xaa; 8];
        c.read(4092, &mut b);
        assert_eq!(b, [0; 8]);
        c.write(u64::MAX - 1, &[1, 2, 3]);
        c.write(4094, &[1, 2, 3, 4]);
        c.write(4, &0x0006u16.to_le_bytes());
        assert!(c.bus_master());
        c.reset();
        assert!(!c.bus_master());
    }
}
