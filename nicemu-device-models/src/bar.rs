// SPDX-License-Identifier: Apache-2.0
//! BAR access plumbing shared by igb and ixgbe: the memory-mapped register
//! window (BAR0: any width and alignment folded onto 32-bit registers, 64-bit
//! accesses as two dword accesses, low first) and the I/O window (IOADDR at
//! offset 0, IODATA at offset 4; 82576 datasheet §8.1.2, 82599 §8.1.2).

use std::sync::atomic::{AtomicU32, Ordering};

/// A register file as the BAR plumbing sees it. Methods take `&self`: a device
/// keeps its registers in atomics and locks only the state a side effect needs.
pub trait RegisterWindow {
    /// Size of the register window in bytes (a power of two).
    const SIZE: u64;
    /// A 32-bit register read with side effects.
    fn reg_read(&self, offset: u64) -> u32;
    /// A 32-bit register write with side effects.
    fn reg_write(&self, offset: u64, value: u32);
    /// The stored value of the register at `offset`, without side effects;
    /// `None` where no register is.
    fn reg_stored(&self, offset: u64) -> Option<u32>;
    /// Counts an access to an offset with no register.
    fn unknown_access(&self);
}

/// A read from the register BAR; offsets outside it read as 0.
pub fn mmio_read<W: RegisterWindow>(w: &W, offset: u64, data: &mut [u8]) {
    data.fill(0);
    if offset >= W::SIZE {
        return;
    }
    let aligned = offset & !3;
    let lo = w.reg_read(aligned);
    if data.len() == 8 && offset & 7 == 0 {
        let hi = w.reg_read(aligned + 4);
        put_le_value(data, u64::from(lo) | u64::from(hi) << 32);
    } else {
        put_le_value(data, u64::from(lo >> ((offset & 3) * 8)));
    }
}

/// A write to the register BAR; offsets outside it are ignored.
pub fn mmio_write<W: RegisterWindow>(w: &W, offset: u64, data: &[u8]) {
    if offset >= W::SIZE {
        return;
    }
    let aligned = offset & !3;
    match (data.len(), offset & 3) {
        (4, 0) => w.reg_write(aligned, le_value(data) as u32),
        (8, 0) => {
            let v = le_value(data);
            w.reg_write(aligned, v as u32);
            w.reg_write(aligned + 4, (v >> 32) as u32);
        }
        _ => {
            // Sub-dword write: merge into the stored value without read side effects.
            let Some(cur) = w.reg_stored(aligned) else {
                w.unknown_access();
                return;
            };
            let mut b = cur.to_le_bytes();
            let start = (offset & 3) as usize;
            let end = (start + data.len()).min(4);
            b[start..end].copy_from_slice(&data[..end - start]);
            w.reg_write(aligned, u32::from_le_bytes(b));
        }
    }
}

/// The I/O BAR's indirect window: IOADDR selects a register, IODATA accesses it.
#[derive(Debug, Default)]
pub struct IoWindow {
    addr: AtomicU32,
}

impl IoWindow {
    /// The register IODATA reaches.
    pub fn target<W: RegisterWindow>(&self) -> u64 {
        u64::from(self.addr.load(Ordering::Relaxed)) & (W::SIZE - 4)
    }

    /// Back to IOADDR = 0 (function reset).
    pub fn reset(&self) {
        self.addr.store(0, Ordering::Relaxed);
    }

    /// A read from the I/O BAR.
    pub fn read<W: RegisterWindow>(&self, w: &W, offset: u64, data: &mut [u8]) {
        data.fill(0);
        match offset {
            0 => put_le_value(data, u64::from(self.addr.load(Ordering::Relaxed))),
            4 => put_le_value(data, u64::from(w.reg_read(self.target::<W>()))),
            _ => {}
        }
    }

    /// A write to the I/O BAR.
    pub fn write<W: RegisterWindow>(&self, w: &W, offset: u64, data: &[u8]) {
        match offset {
            0 => self.addr.store(le_value(data) as u32, Ordering::Relaxed),
            4 => w.reg_write(self.target::<W>(), le_value(data) as u32),
            _ => {}
        }
    }
}

/// Reads a little-endian value of 1, 2, 4 or 8 bytes.
pub fn le_value(data: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = data.len().min(8);
    b[..n].copy_from_slice(&data[..n]);
    u64::from_le_bytes(b)
}

/// Writes a little-endian value into 1..=8 bytes.
pub fn put_le_value(data: &mut [u8], v: u64) {
    let b = v.to_le_bytes();
    let n = data.len().min(8);
    data[..n].copy_from_slice(&b[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::cell::{Cell, RefCell};

    #[derive(Default)]
    struct Regs {
        v: [Cell<u32>; 4],
        writes: RefCell<Vec<(u64, u32)>>,
        unknown: Cell<u32>,
    }

    impl Regs {
        fn vals(&self) -> [u32; 4] {
            std::array::from_fn(|i| self.v[i].get())
        }
    }

    impl RegisterWindow for Regs {
        const SIZE: u64 = 16;
        fn reg_read(&self, o: u64) -> u32 {
            self.v[(o / 4) as usize].get()
        }
        fn reg_write(&self, o: u64, v: u32) {
            self.writes.borrow_mut().push((o, v));
            self.v[(o / 4) as usize].set(v);
        }
        fn reg_stored(&self, o: u64) -> Option<u32> {
            (o < 12).then(|| self.v[(o / 4) as usize].get())
        }
        fn unknown_access(&self) {
            self.unknown.set(self.unknown.get() + 1);
        }
    }

    #[test]
    fn widths_alignments_and_bounds() {
        let r = Regs::default();
        mmio_write(&r, 0, &0x1122_3344u32.to_le_bytes());
        mmio_write(&r, 4, &0xaabb_ccdd_0000_0001u64.to_le_bytes());
        assert_eq!(r.vals()[..3], [0x1122_3344, 1, 0xaabb_ccdd]);
        mmio_write(&r, 1, &[0xff]);
        assert_eq!(r.v[0].get(), 0x1122_ff44, "byte merged without a read");
        let mut b = [0u8; 2];
        mmio_read(&r, 2, &mut b);
        assert_eq!(b, [0x22, 0x11]);
        let mut q = [0u8; 8];
        mmio_read(&r, 8, &mut q);
        assert_eq!(u64::from_le_bytes(q), 0xaabb_ccdd);
        mmio_write(&r, 13, &[1]);
        assert_eq!(r.unknown.get(), 1);
        mmio_write(&r, 1 << 40, &[1, 2, 3, 4]);
        mmio_read(&r, u64::MAX, &mut b);
        assert_eq!(b, [0, 0]);
        let io = IoWindow::default();
        io.write(&r, 0, &8u32.to_le_bytes());
        io.write(&r, 4, &7u32.to_le_bytes());
        assert_eq!(r.v[2].get(), 7);
        io.write(&r, 0, &0xffff_fffeu32.to_le_bytes());
        let mut d = [0u8; 4];
        io.read(&r, 4, &mut d);
        assert_eq!(u32::from_le_bytes(d), 0, "IOADDR masked into the window");
        io.read(&r, 0, &mut d);
        assert_eq!(u32::from_le_bytes(d), 0xffff_fffe);
    }
}
