// SPDX-License-Identifier: Apache-2.0
//! Frames that travel together: a transmit pass hands the wire its finished
//! frames as one [`FrameBatch`], so what is done once per frame on the way
//! (the switch's MAC table, the receiving queue's lock, its ring and DMA
//! view, its interrupt) is done once per batch.
//!
//! A batch owns one buffer per frame. Frames enter it by swapping buffers
//! with the transmit queue that assembled them ([`FrameBatch::push`]), so a
//! frame is not copied on its way in, and the buffers are reused batch
//! after batch: nothing is allocated per frame once a batch has been full.

/// Most frames in one batch.
pub const BATCH_FRAMES: usize = 64;
/// Bytes of frames in one batch after which it is handed on (the frame
/// that crosses it is the last).
pub const BATCH_BYTES: usize = 256 * 1024;
/// Capacity a frame buffer keeps when its batch is emptied; larger buffers
/// (jumbo frames, a TSO source) are given back, so the memory a batch holds
/// between uses stays at most [`BATCH_FRAMES`] × this.
pub const KEEP_CAPACITY: usize = 16 * 1024;

/// Frames to deliver: one, or the frames of a batch (or part of them).
#[derive(Clone, Copy, Debug)]
pub enum Frames<'a> {
    /// A single frame.
    One(&'a [u8]),
    /// Frames of a batch, in order.
    Many(&'a [Vec<u8>]),
}

impl<'a> Frames<'a> {
    /// Number of frames.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Frames::One(_) => 1,
            Frames::Many(v) => v.len(),
        }
    }

    /// True when there is no frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frame `i` (`i < len`).
    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        match self {
            Frames::One(f) => f,
            Frames::Many(v) => &v[i],
        }
    }

    /// The frames from `i` on (`i <= len`).
    #[inline]
    pub fn from(&self, i: usize) -> Frames<'a> {
        match self {
            Frames::One(_) if i == 0 => *self,
            Frames::One(_) => Frames::Many(&[]),
            Frames::Many(v) => Frames::Many(&v[i..]),
        }
    }

    /// Frames `i..j` (`i <= j <= len`).
    #[inline]
    pub fn range(&self, i: usize, j: usize) -> Frames<'a> {
        match self {
            Frames::One(_) if (i, j) == (0, 1) => *self,
            Frames::One(_) => Frames::Many(&[]),
            Frames::Many(v) => Frames::Many(&v[i..j]),
        }
    }

    /// The frames in order (a batch's frames straight from its slice: no
    /// test of which kind of `Frames` per frame).
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + use<'a> {
        let (one, many): (Option<&'a [u8]>, &'a [Vec<u8>]) = match *self {
            Frames::One(f) => (Some(f), &[]),
            Frames::Many(v) => (None, v),
        };
        one.into_iter().chain(many.iter().map(Vec::as_slice))
    }
}

/// Finished frames on their way to the wire, and when they left the MAC.
#[derive(Debug, Default)]
pub struct FrameBatch {
    bufs: Vec<Vec<u8>>,
    len: usize,
    bytes: usize,
    sent_ns: Option<u64>,
}

impl FrameBatch {
    /// The frames.
    #[inline]
    pub fn frames(&self) -> Frames<'_> {
        Frames::Many(&self.bufs[..self.len])
    }

    /// Number of frames.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the batch holds no frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The batch is to be handed on before another frame joins it.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len >= BATCH_FRAMES || self.bytes >= BATCH_BYTES
    }

    /// When the frames left the MAC: the first call for a batch reads
    /// `now` (one instant for every frame of the batch: their IEEE 1588
    /// transmit stamps and their departure on the wire agree).
    #[inline]
    pub fn sent_ns(&mut self, now: impl FnOnce() -> u64) -> u64 {
        *self.sent_ns.get_or_insert_with(now)
    }

    /// When the frames left the MAC (0 for a batch that never asked
    /// [`Self::sent_ns`]).
    #[inline]
    pub fn sent(&self) -> u64 {
        self.sent_ns.unwrap_or(0)
    }

    /// Adds the frame in `buf` to the batch (which must not be full) and
    /// leaves an empty buffer in its place: the two buffers change owners,
    /// the frame's bytes are not copied.
    /// Inline, with the batch's first use of a slot out of line: a pass
    /// pays a swap per frame, not a call.
    #[inline]
    pub fn push(&mut self, buf: &mut Vec<u8>) {
        let slot = match self.bufs.get_mut(self.len) {
            Some(slot) => slot,
            None => self.new_slot(),
        };
        std::mem::swap(slot, buf);
        buf.clear();
        self.bytes += slot.len();
        self.len += 1;
    }

    /// A buffer slot for the next frame, where the batch never held that
    /// many frames before.
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self) -> &mut Vec<u8> {
        self.bufs.resize_with(self.len + 1, Vec::new);
        &mut self.bufs[self.len]
    }

    /// Adds a copy of `frame` (which must not be full).
    pub fn push_copy(&mut self, frame: &[u8]) {
        if self.bufs.len() == self.len {
            self.bufs.push(Vec::new());
        }
        let slot = &mut self.bufs[self.len];
        slot.clear();
        slot.extend_from_slice(frame);
        self.bytes += frame.len();
        self.len += 1;
    }

    /// Empties the batch for reuse; buffers larger than
    /// [`KEEP_CAPACITY`] are given back.
    pub fn clear(&mut self) {
        for b in &mut self.bufs[..self.len] {
            b.clear();
            if b.capacity() > KEEP_CAPACITY {
                *b = Vec::new();
            }
        }
        self.len = 0;
        self.bytes = 0;
        self.sent_ns = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_swap_in_and_buffers_are_reused() {
        let mut b = FrameBatch::default();
        let mut buf = vec![1u8; 60];
        b.push(&mut buf);
        assert!(buf.is_empty());
        buf.extend_from_slice(&[2u8; 70]);
        b.push(&mut buf);
        b.push_copy(&[3u8; 80]);
        assert_eq!(b.len(), 3);
        let f = b.frames();
        assert_eq!(
            f.iter().map(|x| (x[0], x.len())).collect::<Vec<_>>(),
            vec![(1, 60), (2, 70), (3, 80)]
        );
        assert_eq!(f.from(1).len(), 2);
        assert_eq!(f.range(1, 2).get(0)[0], 2);
        assert_eq!(b.sent_ns(|| 7), 7);
        assert_eq!(b.sent_ns(|| 9), 7, "one instant per batch");
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.sent_ns(|| 9), 9);
        let one = Frames::One(&[5u8; 14]);
        assert_eq!((one.len(), one.get(0).len()), (1, 14));
        assert!(one.from(1).is_empty());
    }

    #[test]
    fn a_batch_is_bounded_in_frames_and_bytes() {
        let mut b = FrameBatch::default();
        while !b.is_full() {
            b.push_copy(&[0u8; 60]);
        }
        assert_eq!(b.len(), BATCH_FRAMES);
        b.clear();
        let mut big = vec![0u8; 64 * 1024];
        while !b.is_full() {
            b.push(&mut big);
            big.resize(64 * 1024, 0);
        }
        assert_eq!(b.len(), BATCH_BYTES / (64 * 1024));
        b.clear();
        assert!(
            b.bufs.iter().all(|x| x.capacity() <= KEEP_CAPACITY),
            "large buffers are not kept"
        );
    }
}
