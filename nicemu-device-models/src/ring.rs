// SPDX-License-Identifier: Apache-2.0
//! Descriptor ring geometry and bounded guest-memory access, shared by the
//! transmit and receive engines of igb and ixgbe (82576 §7.1.3 / §7.2.2,
//! 82599 §7.1.9 / §7.2.3: base, length in bytes, head and tail indices).

use vm_memory::{Bytes, GuestAddress, VolatileMemory, WriteVolatile};

use crate::dma::{slice_of, DmaView, GuestRam, GuestSlice};

/// Size of every advanced (and legacy) descriptor.
pub const DESC_SIZE: u64 = 16;

/// Why a ring cannot be processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// Length is zero or smaller than one descriptor.
    #[error("ring length {0} holds no descriptor")]
    Empty(u32),
    /// Tail points beyond the ring.
    #[error("tail {tail} beyond ring of {count} descriptors")]
    TailOutOfRange {
        /// Tail written by the guest.
        tail: u32,
        /// Descriptors in the ring.
        count: u32,
    },
    /// A descriptor or buffer address is outside guest memory.
    #[error("DMA to {0:#x} outside guest memory")]
    BadAddress(u64),
}

/// One ring as programmed by the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Guest physical base address.
    pub base: u64,
    /// Number of descriptors.
    pub count: u32,
    /// Head index (next descriptor the device uses).
    pub head: u32,
    /// Tail index (one past the last descriptor the driver gave).
    pub tail: u32,
}

impl Ring {
    /// Builds a ring from the raw register values, validating length and tail.
    /// A head beyond the ring is wrapped to 0 (the device owns the head).
    #[inline]
    pub fn new(
        bal: u32,
        bah: u32,
        len_bytes: u32,
        head: u32,
        tail: u32,
    ) -> Result<Ring, RingError> {
        let count = len_bytes / DESC_SIZE as u32;
        if count == 0 {
            return Err(RingError::Empty(len_bytes));
        }
        if tail >= count {
            return Err(RingError::TailOutOfRange { tail, count });
        }
        let head = if head >= count { 0 } else { head };
        Ok(Ring {
            base: (u64::from(bah) << 32) | u64::from(bal),
            count,
            head,
            tail,
        })
    }

    /// Builds a ring from a queue register block at `base` (`peek` reads a
    /// register): BAL, BAH, LEN, H and T at 0x00, 0x04, 0x08, 0x10 and 0x18,
    /// the layout of both the 82576 and the 82599 queue blocks.
    pub fn from_block(peek: impl Fn(u32) -> u32, base: u32) -> Result<Ring, RingError> {
        Ring::new(
            peek(base),
            peek(base + 0x04),
            peek(base + 0x08),
            peek(base + 0x10),
            peek(base + 0x18),
        )
    }

    /// Descriptors between head and tail (owned by the device); head and
    /// tail are inside the ring, as [`Ring::new`] makes them (a compare, not
    /// a division).
    #[inline]
    pub fn pending(&self) -> u32 {
        if self.tail >= self.head {
            self.tail - self.head
        } else {
            self.tail + self.count - self.head
        }
    }

    /// Guest address of descriptor `idx`.
    #[inline]
    pub fn desc_addr(&self, idx: u32) -> u64 {
        self.base.wrapping_add(u64::from(idx) * DESC_SIZE)
    }

    /// Advances the head (inside the ring) by one, wrapping.
    #[inline]
    pub fn advance(&mut self) {
        let next = self.head + 1;
        self.head = if next < self.count { next } else { 0 };
    }

    /// Reads the descriptor at the head.
    pub fn read_head(&self, mem: &GuestRam) -> Result<[u8; 16], RingError> {
        read_desc(mem, self.desc_addr(self.head))
    }
}

/// Descriptors fetched from guest memory in one read (a hardware queue's
/// descriptor prefetch: 82576 §7.2.3.4 and 82599 §7.2.3.4.1 fetch descriptors
/// in bursts, not one by one).
pub const DESC_BURST: usize = 32;

/// The descriptors of one burst, read ahead from a ring: a pass reads up to
/// [`DESC_BURST`] device-owned descriptors (from the head towards the tail,
/// not past the end of the ring) in one guest-memory read, and serves the
/// following descriptors from here.
#[derive(Debug)]
pub struct DescCache {
    d: [[u8; 16]; DESC_BURST],
    first: u32,
    len: u32,
}

impl Default for DescCache {
    fn default() -> Self {
        DescCache {
            d: [[0; 16]; DESC_BURST],
            first: 0,
            len: 0,
        }
    }
}

impl DescCache {
    /// Descriptor `idx` of `r` (device-owned: between the head the pass
    /// started from and the tail), from the burst it belongs to. A burst
    /// that is not all in guest memory is read descriptor by descriptor, so
    /// the error is the descriptor's own.
    #[inline]
    pub fn get(&mut self, mem: &GuestRam, r: &Ring, idx: u32) -> Result<[u8; 16], RingError> {
        let at = idx.wrapping_sub(self.first);
        if at < self.len {
            return Ok(self.d[at as usize]);
        }
        self.fetch(mem, r, idx)
    }

    /// [`Self::get`] of a descriptor not read yet: reads its burst.
    #[inline(never)]
    fn fetch(&mut self, mem: &GuestRam, r: &Ring, idx: u32) -> Result<[u8; 16], RingError> {
        let owned = ((r.tail + r.count - idx) % r.count).max(1);
        let n = owned
            .min(r.count - idx.min(r.count - 1))
            .min(DESC_BURST as u32);
        if read_into(
            mem,
            r.desc_addr(idx),
            self.d[..n as usize].as_flattened_mut(),
        )
        .is_ok()
        {
            self.first = idx;
            self.len = n;
            return Ok(self.d[0]);
        }
        self.len = 0;
        read_desc(mem, r.desc_addr(idx))
    }

    /// Forgets what was read (the ring's descriptors may have changed).
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

/// Reads a 16-byte descriptor.
#[inline]
pub fn read_desc(mem: &GuestRam, addr: u64) -> Result<[u8; 16], RingError> {
    let mut d = [0u8; 16];
    read_into(mem, addr, &mut d)?;
    Ok(d)
}

/// Fills `buf` from guest memory at `addr`: through one slice when the
/// range lies in one region, else across regions.
#[inline]
pub fn read_into(mem: &GuestRam, addr: u64, buf: &mut [u8]) -> Result<(), RingError> {
    if let Some(s) = slice_of(mem, addr, buf.len()) {
        s.copy_to(buf);
        return Ok(());
    }
    mem.read_slice(buf, GuestAddress(addr))
        .map_err(|_| RingError::BadAddress(addr))
}

/// Writes a 16-byte advanced receive write-back descriptor so that the dword
/// at offset 12 becomes visible last: it holds the length, which igb and
/// ixgbe poll (`igb_clean_rx_irq`, `ixgbe_clean_rx_irq`: a non-zero length
/// means the write-back is complete) before they read the status at offset 8.
#[inline]
pub fn write_desc(mem: &GuestRam, addr: u64, d: &[u8; 16]) -> Result<(), RingError> {
    if let Some(s) = slice_of(mem, addr, 16) {
        return write_desc_in(&s, d).map_err(|_| RingError::BadAddress(addr));
    }
    mem.write_slice(&d[..12], GuestAddress(addr))
        .map_err(|_| RingError::BadAddress(addr))?;
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    let last = u32::from_le_bytes([d[12], d[13], d[14], d[15]]);
    mem.write_obj(last, GuestAddress(addr.wrapping_add(12)))
        .map_err(|_| RingError::BadAddress(addr))
}

/// [`write_desc`] into `s`, the descriptor's 16 bytes.
#[inline]
fn write_desc_in(s: &GuestSlice<'_>, d: &[u8; 16]) -> Result<(), vm_memory::VolatileMemoryError> {
    s.copy_from(&d[..12]);
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    s.write_slice(&d[12..], 12)
}

/// A ring's descriptors in one memory (what the device reads them from, or
/// writes them back to), found once for a pass over them — a transmit
/// doorbell, a receive batch — instead of once per access: the slice of the
/// region that holds the whole ring. A ring that is not in one region
/// (misprogrammed, or across regions) is reached descriptor by descriptor
/// through the memory, which reports what is outside it.
#[derive(Clone, Copy)]
pub struct RingMem<'a> {
    mem: &'a GuestRam,
    ring: Ring,
    slice: Option<GuestSlice<'a>>,
}

impl<'a> RingMem<'a> {
    /// The descriptors of `r` (its base and count; head and tail do not
    /// matter) in `mem`.
    #[inline]
    pub fn new(mem: &'a GuestRam, r: &Ring) -> Self {
        let len = r.count as usize * DESC_SIZE as usize;
        RingMem {
            mem,
            ring: *r,
            slice: slice_of(mem, r.base, len),
        }
    }

    /// Whether these are the descriptors of ring `r` (same base and count).
    #[inline]
    pub fn is_for(&self, r: &Ring) -> bool {
        self.ring.base == r.base && self.ring.count == r.count
    }

    /// Descriptor `idx` (`idx < count`) as a slice of 16 bytes.
    #[inline]
    fn at(&self, idx: u32) -> Option<GuestSlice<'a>> {
        let at = idx as usize * DESC_SIZE as usize;
        self.slice?.subslice(at, DESC_SIZE as usize).ok()
    }

    /// Reads descriptor `idx`.
    #[inline(always)]
    pub fn read(&self, idx: u32) -> Result<[u8; 16], RingError> {
        let Some(s) = self.at(idx) else {
            return self.read_apart(idx);
        };
        let word = |at| s.get_ref::<u64>(at).map(|r| r.load());
        let lo = word(0).map_err(|_| self.bad(idx))?;
        let hi = word(8).map_err(|_| self.bad(idx))?;
        let mut d = [0u8; 16];
        // Native order both ways: the bytes are the guest's, unchanged.
        d[..8].copy_from_slice(&lo.to_ne_bytes());
        d[8..].copy_from_slice(&hi.to_ne_bytes());
        Ok(d)
    }

    /// Writes back descriptor `idx` as [`write_desc`] does (its last dword
    /// visible last).
    #[inline(always)]
    pub fn write_back(&self, idx: u32, d: &[u8; 16]) -> Result<(), RingError> {
        let Some(s) = self.at(idx) else {
            return self.write_back_apart(idx, d);
        };
        // Native order: the stores put `d`'s bytes as they are.
        let word = |at: usize| u32::from_ne_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
        let lo = u64::from_ne_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        let bad = |_| self.bad(idx);
        s.get_ref::<u64>(0).map_err(bad)?.store(lo);
        s.get_ref::<u32>(8).map_err(bad)?.store(word(8));
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        s.get_ref::<u32>(12).map_err(bad)?.store(word(12));
        Ok(())
    }

    /// Writes the dword at byte `off` (`off <= 12`) of descriptor `idx` (a
    /// transmit descriptor's status).
    #[inline]
    pub fn write_u32(&self, idx: u32, off: usize, v: u32) -> Result<(), RingError> {
        match self.at(idx) {
            Some(s) => {
                let v = u32::from_ne_bytes(v.to_le_bytes());
                s.get_ref::<u32>(off).map_err(|_| self.bad(idx))?.store(v);
                Ok(())
            }
            None => write_u32(
                self.mem,
                self.ring.desc_addr(idx).wrapping_add(off as u64),
                v,
            ),
        }
    }

    /// [`Self::read`] of a ring that is not in one region.
    #[cold]
    fn read_apart(&self, idx: u32) -> Result<[u8; 16], RingError> {
        read_desc(self.mem, self.ring.desc_addr(idx))
    }

    /// [`Self::write_back`] of a ring that is not in one region.
    #[cold]
    fn write_back_apart(&self, idx: u32, d: &[u8; 16]) -> Result<(), RingError> {
        write_desc(self.mem, self.ring.desc_addr(idx), d)
    }

    /// The error of an access to descriptor `idx`.
    #[cold]
    fn bad(&self, idx: u32) -> RingError {
        RingError::BadAddress(self.ring.desc_addr(idx))
    }
}

/// The loop [`write_parts`] and [`write_parts_apart`] share, as a macro so
/// that each expands it with its own write inline (a closure parameter cost
/// the one-buffer path 4.9 instructions per frame): bytes `off..off + len`
/// of the concatenation of `parts` go out piece by piece, each piece as
/// `write(at, piece)` (`at` its guest address from `addr` on), stopping at
/// the first error.
macro_rules! write_pieces {
    ($addr:expr, $parts:expr, $off:expr, $len:expr, |$at:ident, $piece:ident| $write:expr) => {{
        let (addr, off, len): (u64, usize, usize) = ($addr, $off, $len);
        let mut done = 0usize;
        let mut pos = 0usize;
        for p in $parts {
            let (ps, pe) = (pos, pos + p.len());
            pos = pe;
            let s = (off + done).max(ps);
            let e = (off + len).min(pe);
            if s >= e {
                continue;
            }
            let $at = addr + done as u64;
            let $piece = &p[s - ps..e - ps];
            $write?;
            done += e - s;
        }
        Ok(())
    }};
}

/// Places a received frame (`parts` concatenated, `total` bytes) into the
/// ring's buffers from its head on, `bufsize` bytes per buffer (one-buffer
/// advanced receive descriptors: 82576 §7.1.5, 82599 §7.1.6), writing back
/// each descriptor with `writeback(last, len)` and advancing `r.head` past
/// every buffer used. The caller checked that enough descriptors are free.
/// Stops at the first descriptor or buffer outside guest memory (descriptors
/// are read from `mem.read`, buffers and write-backs go to `mem.write`;
/// `descs` are the ring's descriptors in those two, [`RxRingMem::new`]).
#[inline]
pub fn place_frame(
    mem: &DmaView,
    descs: &RxRingMem<'_>,
    r: &mut Ring,
    frame: (&[&[u8]; 2], usize),
    bufsize: usize,
    mut writeback: impl FnMut(bool, u16) -> [u8; 16],
) -> Result<(), RingError> {
    let (parts, total) = frame;
    if total > 0 && total <= bufsize {
        // The frame fits one buffer (a 64 B or 1500 B frame in 2 KiB).
        let d = descs.read.read(r.head)?;
        let pkt = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        write_parts(&mem.write, pkt, parts, 0, total)?;
        descs
            .write
            .write_back(r.head, &writeback(true, total as u16))?;
        r.advance();
        return Ok(());
    }
    let mut off = 0usize;
    while off < total {
        let chunk = (total - off).min(bufsize.max(1));
        let d = descs.read.read(r.head)?;
        let pkt = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        write_parts(&mem.write, pkt, parts, off, chunk)?;
        off += chunk;
        descs
            .write
            .write_back(r.head, &writeback(off >= total, chunk as u16))?;
        r.advance();
    }
    Ok(())
}

/// [`place_frame`] for a queue with a header buffer of `hdrsize` bytes
/// (`sizes` is `(hdrsize, bufsize)`): the frame's first `hdrsize` bytes (all
/// of it when shorter) go to the first descriptor's header buffer (its
/// second quadword, `hdr_addr`), the rest to its packet buffer and on to the
/// next descriptors' packet buffers, `bufsize` bytes each; only the first
/// descriptor's header buffer is used (the 82576 datasheet's "Header
/// Splitting and Replication", DESCTYPE 101b). Each
/// descriptor is written back as `writeback(last, pkt_len)` makes it (`pkt_len`
/// the bytes in its packet buffer) with HDR_LEN, the bytes in its header
/// buffer ([`crate::desc::rx_with_header_len`]).
/// Cold: only a driver that asks for header split comes here (igbvf at an
/// MTU above 1504), and the one-buffer path keeps its copies inlined.
#[cold]
#[inline(never)]
pub fn place_frame_with_header(
    mem: &DmaView,
    descs: &RxRingMem<'_>,
    r: &mut Ring,
    frame: (&[&[u8]; 2], usize),
    (hdrsize, bufsize): (usize, usize),
    mut writeback: impl FnMut(bool, u16) -> [u8; 16],
) -> Result<(), RingError> {
    let (parts, total) = frame;
    let quad = |d: &[u8; 16], at: usize| {
        u64::from_le_bytes([
            d[at],
            d[at + 1],
            d[at + 2],
            d[at + 3],
            d[at + 4],
            d[at + 5],
            d[at + 6],
            d[at + 7],
        ])
    };
    let mut off = 0usize;
    let mut first = true;
    loop {
        let d = descs.read.read(r.head)?;
        let mut hdr_len = 0;
        if first {
            hdr_len = total.min(hdrsize);
            write_parts_apart(&mem.write, quad(&d, 8), parts, 0, hdr_len)?;
            off = hdr_len;
            first = false;
        }
        let chunk = (total - off).min(bufsize.max(1));
        if chunk > 0 {
            write_parts_apart(&mem.write, quad(&d, 0), parts, off, chunk)?;
        }
        off += chunk;
        let last = off >= total;
        descs.write.write_back(
            r.head,
            &crate::desc::rx_with_header_len(writeback(last, chunk as u16), hdr_len as u16),
        )?;
        r.advance();
        if last {
            return Ok(());
        }
    }
}

/// [`write_parts`] for the header-split path: through [`GuestRam`]'s own
/// copy, so the one-buffer path's inlined copies stay as they are.
#[cold]
fn write_parts_apart(
    mem: &GuestRam,
    addr: u64,
    parts: &[&[u8]; 2],
    off: usize,
    len: usize,
) -> Result<(), RingError> {
    write_pieces!(addr, parts, off, len, |at, piece| mem
        .write_slice(piece, GuestAddress(at))
        .map_err(|_| RingError::BadAddress(at)))
}

/// A receive ring's descriptors where the device reads them and where it
/// writes them back ([`RingMem`] of a [`DmaView`]'s two memories).
#[derive(Clone, Copy)]
pub struct RxRingMem<'a> {
    /// Where descriptors are read.
    pub read: RingMem<'a>,
    /// Where they are written back.
    pub write: RingMem<'a>,
}

impl<'a> RxRingMem<'a> {
    /// The descriptors of `r` in `mem`.
    #[inline]
    pub fn new(mem: &'a DmaView, r: &Ring) -> Self {
        RxRingMem {
            read: RingMem::new(&mem.read, r),
            write: RingMem::new(&mem.write, r),
        }
    }

    /// Whether these are ring `r`'s descriptors (in the view they were
    /// found in).
    #[inline]
    pub fn is_for(&self, r: &Ring) -> bool {
        self.read.is_for(r)
    }
}

/// Receive buffers of `bufsize` bytes (not 0) that `len` bytes fill: one for
/// a frame that fits one buffer without a division.
#[inline]
pub fn buffers_for(len: usize, bufsize: usize) -> u32 {
    if len != 0 && len <= bufsize {
        1
    } else {
        len.div_ceil(bufsize) as u32
    }
}

/// Writes one little-endian dword.
#[inline]
pub fn write_u32(mem: &GuestRam, addr: u64, v: u32) -> Result<(), RingError> {
    write_buf(mem, addr, &v.to_le_bytes())
}

/// Copies `len` bytes of guest memory at `addr` onto the end of `out`
/// (appended as they are copied, where they lie in one region: the bytes
/// are not zeroed first).
#[inline]
pub fn read_buf(mem: &GuestRam, addr: u64, len: usize, out: &mut Vec<u8>) -> Result<(), RingError> {
    let start = out.len();
    if let Some(s) = slice_of(mem, addr, len) {
        // A Vec takes a whole slice in one write.
        if matches!(out.write_volatile(&s), Ok(n) if n == len) {
            return Ok(());
        }
        out.truncate(start);
        return Err(RingError::BadAddress(addr));
    }
    out.resize(start + len, 0);
    read_into(mem, addr, &mut out[start..]).inspect_err(|_| out.truncate(start))
}

/// Copies `data` into guest memory at `addr`.
#[inline]
pub fn write_buf(mem: &GuestRam, addr: u64, data: &[u8]) -> Result<(), RingError> {
    if let Some(s) = slice_of(mem, addr, data.len()) {
        s.copy_from(data);
        return Ok(());
    }
    mem.write_slice(data, GuestAddress(addr))
        .map_err(|_| RingError::BadAddress(addr))
}

/// Writes bytes `off..off + len` of the concatenation of `parts` at `addr`
/// (a frame whose VLAN tag was stripped is two parts, spread over buffers).
#[inline]
pub fn write_parts(
    mem: &GuestRam,
    addr: u64,
    parts: &[&[u8]; 2],
    off: usize,
    len: usize,
) -> Result<(), RingError> {
    if parts[1].is_empty() {
        let end = (off + len).min(parts[0].len());
        return write_buf(mem, addr, &parts[0][off.min(end)..end]);
    }
    write_pieces!(addr, parts, off, len, |at, piece| write_buf(mem, at, piece))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ram() -> GuestRam {
        GuestRam::from_ranges(&[(GuestAddress(0), 0x10000)]).unwrap()
    }

    #[test]
    fn geometry() {
        let r = Ring::new(0x1000, 0, 256 * 16, 0, 255).unwrap();
        assert_eq!(r.count, 256);
        assert_eq!(r.pending(), 255);
        assert_eq!(r.desc_addr(2), 0x1020);
        let r = Ring::new(0, 0, 4 * 16, 3, 1).unwrap();
        assert_eq!(r.pending(), 2);
        assert_eq!(Ring::new(0, 0, 8, 0, 0), Err(RingError::Empty(8)));
        assert_eq!(
            Ring::new(0, 0, 64, 0, 4),
            Err(RingError::TailOutOfRange { tail: 4, count: 4 })
        );
        assert_eq!(Ring::new(0, 1, 64, 9, 0).unwrap().head, 0);
    }

    #[test]
    fn a_frame_spans_buffers_and_each_descriptor_is_written_back() {
        let m = ram();
        // Three descriptors at 0x1000 pointing at buffers 0x4000, 0x5000, 0x6000.
        for i in 0..3u64 {
            m.write_obj(0x4000 + 0x1000 * i, GuestAddress(0x1000 + 16 * i))
                .unwrap();
        }
        let mut r = Ring::new(0x1000, 0, 4 * 16, 0, 3).unwrap();
        let frame: Vec<u8> = (0..250u8).collect();
        let mut wbs = Vec::new();
        let view = DmaView::read_write(m.clone());
        let descs = RxRingMem::new(&view, &r);
        place_frame(
            &view,
            &descs,
            &mut r,
            (&[&frame[..14], &frame[14..]], 250),
            100,
            |last, len| {
                wbs.push((last, len));
                let mut d = [0u8; 16];
                d[12..14].copy_from_slice(&len.to_le_bytes());
                d
            },
        )
        .unwrap();
        assert_eq!(wbs, vec![(false, 100), (false, 100), (true, 50)]);
        assert_eq!(r.head, 3);
        let mut got = vec![0u8; 50];
        m.read_slice(&mut got, GuestAddress(0x6000)).unwrap();
        assert_eq!(got, frame[200..]);
        let len: u16 = m.read_obj(GuestAddress(0x1000 + 16 * 2 + 12)).unwrap();
        assert_eq!(len, 50);
        // A buffer outside guest memory stops the placement with an error.
        m.write_obj(0xffff_0000u64, GuestAddress(0x1030)).unwrap();
        let mut r = Ring::new(0x1000, 0, 4 * 16, 3, 2).unwrap();
        let descs = RxRingMem::new(&view, &r);
        let placed = place_frame(&view, &descs, &mut r, (&[&frame, &[]], 10), 100, |_, _| {
            [0; 16]
        });
        assert!(placed.is_err());
        assert_eq!(r.head, 3, "nothing consumed");
    }

    #[test]
    fn memory_the_device_may_only_read_is_not_written() {
        let m = ram();
        m.write_obj(0x4000u64, GuestAddress(0x1000)).unwrap();
        // Descriptors readable, nothing writable (a read-only mapping).
        let view = DmaView {
            read: m.clone(),
            write: GuestRam::new(),
        };
        let mut r = Ring::new(0x1000, 0, 4 * 16, 0, 3).unwrap();
        let descs = RxRingMem::new(&view, &r);
        let frame: (&[&[u8]; 2], usize) = (&[&[9u8; 60], &[]], 60);
        let placed = place_frame(&view, &descs, &mut r, frame, 2048, |_, _| [1; 16]);
        assert_eq!(placed, Err(RingError::BadAddress(0x4000)));
        let mut b = [0u8; 60];
        m.read_slice(&mut b, GuestAddress(0x4000)).unwrap();
        assert_eq!(b, [0; 60], "buffer untouched");
        assert_eq!(read_desc(&m, 0x1000).unwrap()[8..], [0; 8], "no write-back");
    }

    /// A ring's descriptors reached through one slice read and write what
    /// access by address does; a ring running off the end of guest memory
    /// still reaches the descriptors inside it, and the others are errors.
    #[test]
    fn ring_memory_accesses_the_descriptors_of_its_ring() {
        let m = ram();
        for (base, count) in [(0x1000u32, 8u32), (0xffd0, 8)] {
            let r = Ring::new(base, 0, count * 16, 0, 1).unwrap();
            let rm = RingMem::new(&m, &r);
            assert!(rm.is_for(&r));
            let d: [u8; 16] = std::array::from_fn(|i| i as u8 + 1);
            rm.write_back(1, &d).unwrap();
            assert_eq!(read_desc(&m, r.desc_addr(1)).unwrap(), d);
            assert_eq!(rm.read(1).unwrap(), d);
            rm.write_u32(1, 12, 0xa1b2_c3d4).unwrap();
            let dd: u32 = m.read_obj(GuestAddress(r.desc_addr(1) + 12)).unwrap();
            assert_eq!(dd, 0xa1b2_c3d4, "little-endian in guest memory");
            assert_eq!(rm.read(1).unwrap()[..12], d[..12]);
        }
        let r = Ring::new(0xffd0, 0, 8 * 16, 0, 1).unwrap();
        let rm = RingMem::new(&m, &r);
        assert_eq!(rm.read(3), Err(RingError::BadAddress(0x10000)));
        assert_eq!(
            rm.write_back(4, &[0; 16]),
            Err(RingError::BadAddress(0x10010))
        );
        assert!(rm.write_u32(5, 12, 1).is_err());
        assert!(!rm.is_for(&Ring::new(0x1000, 0, 8 * 16, 0, 1).unwrap()));
    }

    #[test]
    fn descriptors_come_in_bursts_up_to_the_tail() {
        let m = ram();
        for i in 0..8u64 {
            m.write_obj(0x100 + i, GuestAddress(0x1000 + 16 * i))
                .unwrap();
        }
        let r = Ring::new(0x1000, 0, 8 * 16, 2, 6).unwrap();
        let mut c = DescCache::default();
        assert_eq!(c.get(&m, &r, 2).unwrap()[0], 0x02);
        // Descriptors 3..5 came with the first read; 6 and 7 are the
        // driver's and were not read.
        m.write_obj(0xffu64, GuestAddress(0x1000 + 16 * 3)).unwrap();
        assert_eq!(c.get(&m, &r, 3).unwrap()[0], 0x03, "from the burst");
        assert_eq!(c.get(&m, &r, 5).unwrap()[0], 0x05);
        c.clear();
        assert_eq!(c.get(&m, &r, 3).unwrap()[0], 0xff, "read again");
        // A ring running off the end of guest memory: the descriptors
        // inside it are still read, the others are errors of their own.
        let r = Ring::new(0xffd0, 0, 8 * 16, 0, 7).unwrap();
        let mut c = DescCache::default();
        c.get(&m, &r, 0).unwrap();
        c.get(&m, &r, 2).unwrap();
        assert_eq!(c.get(&m, &r, 3), Err(RingError::BadAddress(0x10000)));
    }

    #[test]
    fn access_outside_ram_is_an_error_not_a_crash() {
        let m = ram();
        read_desc(&m, 0xfff8).unwrap_err();
        read_desc(&m, u64::MAX - 4).unwrap_err();
        assert!(write_desc(&m, 0x10000, &[0; 16]).is_err());
        let mut v = vec![1];
        assert!(read_buf(&m, 0xff00, 0x1000, &mut v).is_err());
        assert_eq!(v, vec![1]);
        write_desc(&m, 0x100, &[7; 16]).unwrap();
        write_parts(&m, 0x200, &[&[1, 2, 3], &[4, 5]], 2, 3).unwrap();
        let mut b = [0u8; 3];
        m.read_slice(&mut b, GuestAddress(0x200)).unwrap();
        assert_eq!(b, [3, 4, 5]);
        assert!(write_parts(&m, 0xffff, &[&[1, 2, 3], &[]], 0, 3).is_err());
        assert_eq!(read_desc(&m, 0x100).unwrap(), [7; 16]);
    }
}
