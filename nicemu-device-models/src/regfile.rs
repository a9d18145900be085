// SPDX-License-Identifier: Apache-2.0
//! Table-driven register files.
//!
//! A device describes its BAR0 register set as a static table of [`RegDef`]s
//! (name, offset, array count/stride, reset value, writable mask, access kind and
//! an optional device-specific hook). [`RegFile`] builds an O(1) offset index from
//! the table, stores the values, applies the generic access semantics and hands
//! the hook back to the device so only special behaviour needs code.
//!
//! This follows the structure of the Intel datasheets' register summaries
//! (82576 datasheet §8.1, 82599 datasheet §8.1): every register has an
//! attribute (RW, RO, RC, RC/W, W1C, WO, SC) and an initial value.
//!
//! Values are atomics: the control path (register accesses from the guest) and
//! the data path of every queue read and update registers without a lock of
//! the whole device. Each access to one register is atomic; a guest write with
//! read-modify-write semantics (masked RW, W1C) and a clear-on-read are single
//! atomic operations, so a cause bit or a count the data path adds at the same
//! moment is never lost.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

/// Generic access semantics of a register (datasheet "attribute" column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read/write through the writable mask.
    Rw,
    /// Read only: writes are ignored.
    Ro,
    /// Clear on read (statistics counters): writes are ignored.
    ClearOnRead,
    /// Write 1 to clear.
    W1c,
    /// Write only: reads return 0.
    WriteOnly,
}

/// One register or register array in a device's table.
#[derive(Clone, Copy, Debug)]
pub struct RegDef<H: Copy + 'static> {
    /// Datasheet mnemonic, used in traces.
    pub name: &'static str,
    /// Byte offset in the BAR of element 0.
    pub offset: u32,
    /// Number of elements (1 for a plain register).
    pub count: u32,
    /// Byte distance between elements.
    pub stride: u32,
    /// Value after reset.
    pub reset: u32,
    /// Bits a write may change (for [`Access::Rw`] and [`Access::W1c`]).
    pub wmask: u32,
    /// Generic access semantics.
    pub access: Access,
    /// Device-specific behaviour, handled by the device after the generic part.
    pub hook: Option<H>,
    /// When set, this row is an alias of another array: element `i` stores its
    /// value at `alias_base + i * alias_stride` (the canonical location).
    pub alias: Option<(u32, u32)>,
}

impl<H: Copy + 'static> RegDef<H> {
    /// A plain read/write register at `offset` with reset value 0 and all bits writable.
    pub const fn new(name: &'static str, offset: u32) -> Self {
        RegDef {
            name,
            offset,
            count: 1,
            stride: 4,
            reset: 0,
            wmask: u32::MAX,
            access: Access::Rw,
            hook: None,
            alias: None,
        }
    }
    /// Makes this row an array of `count` elements `stride` bytes apart.
    pub const fn array(mut self, count: u32, stride: u32) -> Self {
        self.count = count;
        self.stride = stride;
        self
    }
    /// Sets the reset value.
    pub const fn reset(mut self, v: u32) -> Self {
        self.reset = v;
        self
    }
    /// Sets the writable mask.
    pub const fn mask(mut self, m: u32) -> Self {
        self.wmask = m;
        self
    }
    /// Read only.
    pub const fn ro(mut self) -> Self {
        self.access = Access::Ro;
        self.wmask = 0;
        self
    }
    /// Clear on read (statistics).
    pub const fn rc(mut self) -> Self {
        self.access = Access::ClearOnRead;
        self.wmask = 0;
        self
    }
    /// Write 1 to clear.
    pub const fn w1c(mut self) -> Self {
        self.access = Access::W1c;
        self
    }
    /// Write only.
    pub const fn wo(mut self) -> Self {
        self.access = Access::WriteOnly;
        self
    }
    /// Attaches a device-specific hook.
    pub const fn hook(mut self, h: H) -> Self {
        self.hook = Some(h);
        self
    }
    /// Declares this row an alias of the array at `base` with `stride`.
    pub const fn alias_of(mut self, base: u32, stride: u32) -> Self {
        self.alias = Some((base, stride));
        self
    }
}

/// Joins a part's own register rows and rows it shares with other parts into
/// one table, at compile time (`N` is the sum of their lengths; `own` is not
/// empty).
pub const fn join<H: Copy + 'static, const N: usize>(
    own: &[RegDef<H>],
    shared: &[RegDef<H>],
) -> [RegDef<H>; N] {
    assert!(own.len() + shared.len() == N, "N is not the joined length");
    let mut out = [own[0]; N];
    let mut i = 0;
    while i < own.len() {
        out[i] = own[i];
        i += 1;
    }
    let mut j = 0;
    while j < shared.len() {
        out[own.len() + j] = shared[j];
        j += 1;
    }
    out
}

/// A decoded register access: which table row, which element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegId {
    /// Index of the row in the device table.
    pub def: u16,
    /// Array element.
    pub elem: u16,
}

const NO_REG: u32 = u32::MAX;

/// Values and decoding of one device's register table.
pub struct RegFile<H: Copy + 'static> {
    defs: &'static [RegDef<H>],
    /// Per dword of the BAR: packed (def << 16 | elem), or `NO_REG`.
    index: Vec<u32>,
    /// Per dword of the BAR: the current value (at the canonical location).
    vals: Vec<AtomicU32>,
}

impl<H: Copy + 'static> fmt::Debug for RegFile<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegFile")
            .field("registers", &self.defs.len())
            .field("size", &(self.vals.len() * 4))
            .finish()
    }
}

/// Result of a register write after the generic semantics were applied.
#[derive(Clone, Copy, Debug)]
pub struct Written<H> {
    /// Which register.
    pub id: RegId,
    /// Its hook, if any.
    pub hook: Option<H>,
    /// Value before the write.
    pub old: u32,
    /// Value the guest wrote (unmasked).
    pub raw: u32,
    /// Value now stored.
    pub new: u32,
}

impl<H: Copy + 'static> RegFile<H> {
    /// Builds the register file for a BAR of `size` bytes from `defs`.
    ///
    /// Panics if the table is inconsistent (overlapping rows or rows outside
    /// the BAR): that is a programming error in a static table, caught by the
    /// device's unit tests, never triggered by a guest.
    pub fn new(defs: &'static [RegDef<H>], size: usize) -> Self {
        let dwords = size / 4;
        let mut index = vec![NO_REG; dwords];
        for (d, def) in defs.iter().enumerate() {
            for e in 0..def.count {
                let off = (def.offset + e * def.stride) as usize;
                assert!(
                    off.is_multiple_of(4) && off / 4 < dwords,
                    "{} outside BAR",
                    def.name
                );
                assert!(
                    index[off / 4] == NO_REG,
                    "{}[{e}] at {off:#x} overlaps another register",
                    def.name
                );
                index[off / 4] = ((d as u32) << 16) | e;
            }
        }
        let rf = RegFile {
            defs,
            index,
            vals: (0..dwords).map(|_| AtomicU32::new(0)).collect(),
        };
        rf.reset_all();
        rf
    }

    /// The table this file was built from.
    pub fn defs(&self) -> &'static [RegDef<H>] {
        self.defs
    }

    /// Puts every register back to its reset value.
    pub fn reset_all(&self) {
        self.vals.iter().for_each(|v| v.store(0, Ordering::Relaxed));
        self.reset_except(|_| false);
    }

    /// Resets every register except those for which `keep` returns true.
    pub fn reset_except(&self, keep: impl Fn(&RegDef<H>) -> bool) {
        for def in self.defs {
            if keep(def) {
                continue;
            }
            for e in 0..def.count {
                let c = Self::canonical(def, e);
                self.vals[c].store(def.reset, Ordering::Relaxed);
            }
        }
    }

    fn canonical(def: &RegDef<H>, elem: u32) -> usize {
        let off = match def.alias {
            Some((base, stride)) => base + elem * stride,
            None => def.offset + elem * def.stride,
        };
        off as usize / 4
    }

    /// Decodes a byte offset into a register, if one is there.
    pub fn decode(&self, offset: u64) -> Option<RegId> {
        if !offset.is_multiple_of(4) {
            return None;
        }
        let packed = *self.index.get(usize::try_from(offset / 4).ok()?)?;
        (packed != NO_REG).then_some(RegId {
            def: (packed >> 16) as u16,
            elem: packed as u16,
        })
    }

    /// The table row of a decoded register.
    pub fn def(&self, id: RegId) -> &'static RegDef<H> {
        &self.defs[id.def as usize]
    }

    /// Human-readable name of the register at `offset`, e.g. `RDBAL[2]`.
    pub fn name_at(&self, offset: u64) -> String {
        match self.decode(offset) {
            Some(id) => {
                let def = self.def(id);
                if def.count > 1 {
                    format!("{}[{}]", def.name, id.elem)
                } else {
                    def.name.to_string()
                }
            }
            None => format!("?{offset:#07x}"),
        }
    }

    /// Reads the raw stored value at a canonical offset (no side effects).
    /// Offsets outside the BAR read as 0.
    pub fn peek(&self, offset: u32) -> u32 {
        self.vals
            .get(offset as usize / 4)
            .map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// Stores a value at a canonical offset (no side effects, no mask).
    pub fn poke(&self, offset: u32, v: u32) {
        if let Some(slot) = self.vals.get(offset as usize / 4) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    /// Sets bits at a canonical offset (atomically).
    pub fn set_bits(&self, offset: u32, bits: u32) {
        if let Some(slot) = self.vals.get(offset as usize / 4) {
            slot.fetch_or(bits, Ordering::Relaxed);
        }
    }

    /// Clears bits at a canonical offset (atomically).
    pub fn clear_bits(&self, offset: u32, bits: u32) {
        if let Some(slot) = self.vals.get(offset as usize / 4) {
            slot.fetch_and(!bits, Ordering::Relaxed);
        }
    }

    /// Takes the value at a canonical offset and leaves 0 (atomically).
    pub fn take(&self, offset: u32) -> u32 {
        self.vals
            .get(offset as usize / 4)
            .map_or(0, |v| v.swap(0, Ordering::Relaxed))
    }

    /// Replaces the value at a canonical offset with `f(old)` in one atomic
    /// step and returns the old value.
    pub fn update(&self, offset: u32, f: impl Fn(u32) -> u32) -> u32 {
        match self.vals.get(offset as usize / 4) {
            Some(slot) => slot
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(f(v)))
                .unwrap_or_else(|v| v),
            None => 0,
        }
    }

    /// Guest read with generic semantics. Returns the decoded register and the
    /// value; `None` for offsets with no register (the caller reads 0).
    pub fn read(&self, offset: u64) -> Option<(RegId, u32)> {
        let id = self.decode(offset)?;
        Some((id, self.read_at(id)))
    }

    /// Guest read of a decoded register with generic semantics.
    pub fn read_at(&self, id: RegId) -> u32 {
        let def = self.def(id);
        let slot = &self.vals[Self::canonical(def, u32::from(id.elem))];
        match def.access {
            Access::WriteOnly => 0,
            Access::ClearOnRead => slot.swap(0, Ordering::Relaxed),
            _ => slot.load(Ordering::Relaxed),
        }
    }

    /// Guest write with generic semantics. `None` for offsets with no register.
    pub fn write(&self, offset: u64, raw: u32) -> Option<Written<H>> {
        let id = self.decode(offset)?;
        Some(self.write_at(id, raw))
    }

    /// Guest write of a decoded register with generic semantics.
    pub fn write_at(&self, id: RegId, raw: u32) -> Written<H> {
        let def = self.def(id);
        let slot = &self.vals[Self::canonical(def, u32::from(id.elem))];
        let apply = |old: u32| match def.access {
            Access::Rw | Access::WriteOnly => (old & !def.wmask) | (raw & def.wmask),
            Access::W1c => old & !(raw & def.wmask),
            Access::Ro | Access::ClearOnRead => old,
        };
        let old = slot
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(apply(v)))
            .unwrap_or_else(|v| v);
        let new = apply(old);
        Written {
            id,
            hook: def.hook,
            old,
            raw,
            new,
        }
    }

    /// The canonical offset of a decoded register (where [`Self::peek`] and
    /// [`Self::poke`] reach it).
    pub fn offset_of(&self, id: RegId) -> u32 {
        (Self::canonical(self.def(id), u32::from(id.elem)) * 4) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Hk {
        Doorbell,
    }

    static TABLE: &[RegDef<Hk>] = &[
        RegDef::new("CTRL", 0x0).reset(0x40).mask(0x0000_00ff),
        RegDef::new("STATUS", 0x8).reset(0x83).ro(),
        RegDef::new("CNT", 0x10).rc(),
        RegDef::new("CAUSE", 0x14).w1c(),
        RegDef::new("KEY", 0x18).wo(),
        RegDef::new("Q", 0x100).array(4, 0x40).hook(Hk::Doorbell),
        RegDef::new("QLEGACY", 0x20)
            .array(2, 4)
            .alias_of(0x100, 0x40),
    ];

    #[test]
    fn reset_values_and_masks() {
        let rf = RegFile::new(TABLE, 0x200);
        assert_eq!(rf.read(0x0).unwrap().1, 0x40);
        rf.write(0x0, 0xffff_ffff);
        assert_eq!(rf.read(0x0).unwrap().1, 0xff);
        rf.write(0x8, 0);
        assert_eq!(rf.read(0x8).unwrap().1, 0x83);
    }

    #[test]
    fn clear_on_read_and_w1c_and_write_only() {
        let rf = RegFile::new(TABLE, 0x200);
        rf.poke(0x10, 7);
        assert_eq!(rf.read(0x10).unwrap().1, 7);
        assert_eq!(rf.read(0x10).unwrap().1, 0);
        rf.poke(0x14, 0b1111);
        rf.write(0x14, 0b0101);
        assert_eq!(rf.read(0x14).unwrap().1, 0b1010);
        rf.write(0x18, 0x1234);
        assert_eq!(rf.read(0x18).unwrap().1, 0);
        assert_eq!(rf.peek(0x18), 0x1234);
    }

    #[test]
    fn arrays_aliases_and_names() {
        let rf = RegFile::new(TABLE, 0x200);
        let w = rf.write(0x140, 5).unwrap();
        assert_eq!(w.hook, Some(Hk::Doorbell));
        assert_eq!(w.id.elem, 1);
        assert_eq!(rf.read(0x24).unwrap().1, 5, "legacy alias reads queue 1");
        rf.write(0x20, 9);
        assert_eq!(rf.peek(0x100), 9);
        assert_eq!(rf.name_at(0x140), "Q[1]");
        assert_eq!(rf.name_at(0x24), "QLEGACY[1]");
        assert_eq!(rf.name_at(0x30), "?0x00030");
        let legacy = rf.decode(0x24).unwrap();
        assert_eq!(rf.offset_of(legacy), 0x140, "an alias's canonical place");
    }

    #[test]
    fn unknown_misaligned_and_out_of_range_offsets() {
        let rf = RegFile::new(TABLE, 0x200);
        assert!(rf.read(0x2).is_none());
        assert!(rf.read(0x1_0000_0000).is_none());
        assert!(rf.write(0x1fc, 1).is_none());
        assert!(rf.write(u64::MAX, 1).is_none());
        assert_eq!(rf.peek(0xffff_fff0), 0);
    }
}
