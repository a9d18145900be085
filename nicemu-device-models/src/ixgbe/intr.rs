// SPDX-License-Identifier: Apache-2.0
//! Interrupt causes, masks and MSI-X routing of the 82599 (datasheet §7.3).
//!
//! EICR bits 31:16 are the "other" causes (LSC, flow director, ECC, SDPs…),
//! enabled by EIMS bits 31:16. In MSI-X mode (GPIE.Multiple_MSIX) queue causes
//! set the per-vector cause bit named by their IVAR entry (EICR_EX, 64
//! vectors, EICR bits 15:0 mirror vectors 0..15); a vector fires while its
//! EIMS_EX bit is set, then is auto-cleared (EIAC for vectors 0..15, always for
//! the rest) and, with GPIE.EIAME, auto-masked by EIAM_EX. Enabled "other"
//! causes fire the vector named by IVAR_MISC. Without MSI-X every cause is
//! reported through EICR on the function's single interrupt: queue causes set
//! EICR bit `IVAR entry & 15`, reading EICR clears it and auto-masks EIAM bits.

//!
//! Every read-modify-write of causes and masks runs under the function's
//! interrupt lock (holding [`Intr`]); guest accesses to the cause, mask and
//! throttle registers arrive there through this part's [`Interrupts`]
//! implementation.

use super::regs::*;
use super::{Ixgbe, I82599};
pub use crate::function::Dir;
use crate::function::{Interrupts, IntrState};
use crate::moderation::Moderation;
use crate::regfile::{RegId, Written};
use crate::sync::lock;

/// Interrupt state beyond the registers, under the interrupt lock.
#[derive(Debug)]
pub struct Intr {
    /// EITR interrupt moderation of the MSI-X vectors.
    pub moderation: Moderation,
    /// MSI-X vector causes (EICR_EX), vectors 0..63.
    pub vec_cause: u64,
    /// MSI-X vector masks (EIMS_EX), vectors 0..63.
    pub vec_mask: u64,
}

impl Intr {
    /// The reset state for `vectors` MSI-X vectors.
    pub fn new(vectors: usize) -> Self {
        Intr {
            moderation: Moderation::new(vectors),
            vec_cause: 0,
            vec_mask: 0,
        }
    }
}

impl IntrState for Intr {
    fn reset(&mut self) {
        self.moderation.reset();
        self.vec_cause = 0;
        self.vec_mask = 0;
    }
}

/// EICR: flow director table nearly full.
pub const EICR_FLOW_DIR: u32 = 1 << 16;
/// EICR: link status change.
pub const EICR_LSC: u32 = 1 << 20;
/// EICR: any enabled cause active (legacy interrupts).
pub const EICR_OTHER: u32 = 1 << 31;
/// EICR queue cause bits.
pub const EICR_RTX_QUEUE: u32 = 0xffff;

/// GPIE: multiple MSI-X vectors.
pub const GPIE_MSIX_MODE: u32 = 1 << 4;
/// GPIE: other causes are not cleared by reading EICR.
pub const GPIE_OCD: u32 = 1 << 5;
/// GPIE: extended interrupt auto-mask enable.
pub const GPIE_EIAME: u32 = 1 << 30;

const IVAR_VALID: u32 = 0x80;
/// EITR: the write does not restart the interval counter (CNT_WDIS).
const EITR_CNT_WDIS: u32 = 1 << 31;

/// Minimum time between two interrupts of vector `v`: EITR bits 11:3 in
/// units of 0.25 µs with 2 µs granularity (`ixgbe_write_eitr`; the driver's
/// `IXGBE_20K_ITR` 200 = 50 µs; 0 = no moderation).
pub fn eitr_interval_ns(regs: &crate::regfile::RegFile<super::regs::Hook>, v: usize) -> u64 {
    let off = if v < 24 {
        EITR0 + 4 * v as u32
    } else {
        EITR_HI + 4 * (v as u32 - 24)
    };
    u64::from(regs.peek(off) & 0xff8) * 250
}

/// IVAR register and bit shift of a queue's entry on the 82599
/// (`ixgbe_set_ivar`: queue `2n` in bytes 0 (RX) / 1 (TX) of `IVAR[n]`, queue
/// `2n + 1` in bytes 2 / 3).
pub fn ivar_slot(queue: usize, dir: Dir) -> (u32, u32) {
    let q = (queue as u32) & 0x7f;
    let shift = 16 * (q & 1) + if dir == Dir::Tx { 8 } else { 0 };
    (q >> 1, shift)
}

impl Interrupts for I82599 {
    /// The vector causes and masks live in [`Intr`].
    fn intr_read(f: &Ixgbe, m: &mut Intr, r: IntrReg, id: RegId, v: u32) -> u32 {
        let half = 32 * u32::from(id.elem);
        match r {
            IntrReg::Eicr => f.eicr_read(m),
            IntrReg::Eics => f.eicr_value(m),
            IntrReg::Eims if f.msix_mode() => (v & 0xffff_0000) | (m.vec_mask as u32 & 0xffff),
            IntrReg::EimsEx => (m.vec_mask >> half) as u32,
            IntrReg::EicsEx => (m.vec_cause >> half) as u32,
            _ => v,
        }
    }

    fn intr_write(f: &Ixgbe, m: &mut Intr, r: IntrReg, w: &Written<Hook>) {
        let half = 32 * u32::from(w.id.elem);
        match r {
            IntrReg::Eicr => f.eicr_write(m, w.raw),
            IntrReg::Eics => f.eics_write(m, w.raw),
            // Without CNT_WDIS a write restarts the vector's interval counter.
            IntrReg::Eitr | IntrReg::EitrHi if w.raw & EITR_CNT_WDIS == 0 => {
                let base = if r == IntrReg::Eitr { 0 } else { 24 };
                m.moderation.restart(base + usize::from(w.id.elem));
            }
            IntrReg::Eitr | IntrReg::EitrHi => {}
            IntrReg::Eims => f.eims_write(m, w.old, w.raw),
            IntrReg::Eimc => f.eimc_write(m, w.raw),
            IntrReg::EicsEx => f.raise_vectors(m, u64::from(w.raw) << half),
            IntrReg::EimsEx => {
                m.vec_mask |= u64::from(w.raw) << half;
                f.deliver_vectors(m);
            }
            IntrReg::EimcEx => m.vec_mask &= !(u64::from(w.raw) << half),
        }
    }

    /// Through the queue's IVAR entry.
    fn queue_interrupt(f: &Ixgbe, queue: usize, dir: Dir) {
        let (reg, shift) = ivar_slot(queue, dir);
        let entry = (f.regs.peek(IVAR0 + 4 * reg) >> shift) & 0xff;
        if entry & IVAR_VALID == 0 {
            return;
        }
        let m = &mut *lock(&f.intr);
        if f.msix_mode() {
            f.raise_vectors(m, 1u64 << (entry & 0x3f));
        } else {
            f.regs.set_bits(EICR, 1 << (entry & 0xf));
            f.legacy_update(m);
        }
    }

    fn link_interrupt(f: &Ixgbe) {
        f.raise_other(EICR_LSC);
    }

    fn deliver_pending(f: &Ixgbe, m: &mut Intr) {
        f.deliver_vectors(m);
    }

    fn interrupt_summary(f: &Ixgbe) -> String {
        format!(
            "GPIE={:#x} EIMS={:#x} EIMS_EX0={:#x} EIMS_EX1={:#x}",
            f.regs.peek(GPIE),
            f.regs.peek(EIMS),
            f.regs.peek(EIMS_EX),
            f.regs.peek(EIMS_EX + 4)
        )
    }
}

impl Ixgbe {
    pub(super) fn msix_mode(&self) -> bool {
        self.regs.peek(GPIE) & GPIE_MSIX_MODE != 0
    }

    /// EICR as read: other causes plus the queue causes.
    pub(super) fn eicr_value(&self, m: &Intr) -> u32 {
        let e = self.regs.peek(EICR);
        if self.msix_mode() {
            (e & 0xffff_0000) | (m.vec_cause as u32 & EICR_RTX_QUEUE)
        } else {
            e
        }
    }

    /// Guest read of EICR (§8.2.3.5.1): clear on read; in MSI-X mode with
    /// GPIE.OCD only the queue bits clear.
    pub(super) fn eicr_read(&self, m: &mut Intr) -> u32 {
        let v = self.eicr_value(m);
        if self.msix_mode() {
            m.vec_cause &= !u64::from(EICR_RTX_QUEUE);
            if self.regs.peek(GPIE) & GPIE_OCD == 0 {
                self.regs.poke(EICR, 0);
            }
        } else {
            self.regs.poke(EICR, 0);
            let eiam = self.regs.peek(EIAM);
            self.regs.clear_bits(EIMS, eiam);
        }
        v
    }

    /// Guest write of EICR: write 1 to clear (the generic W1C already cleared
    /// the stored bits; queue bits also clear their vectors).
    pub(super) fn eicr_write(&self, m: &mut Intr, v: u32) {
        if self.msix_mode() {
            m.vec_cause &= !u64::from(v & EICR_RTX_QUEUE);
        }
    }

    /// Guest write of EICS: sets causes as if the events happened.
    pub(super) fn eics_write(&self, m: &mut Intr, v: u32) {
        self.regs.poke(EICS, 0);
        let other = v & 0x7fff_0000;
        if other != 0 {
            self.raise_other_locked(m, other);
        }
        let queues = v & EICR_RTX_QUEUE;
        if queues != 0 {
            if self.msix_mode() {
                self.raise_vectors(m, u64::from(queues));
            } else {
                self.regs.set_bits(EICR, queues);
                self.legacy_update(m);
            }
        }
    }

    /// Guest write of EIMS: enables causes; pending enabled causes fire.
    pub(super) fn eims_write(&self, m: &mut Intr, old: u32, v: u32) {
        self.regs.poke(EIMS, (old | v) & 0xffff_0000);
        if self.msix_mode() {
            m.vec_mask |= u64::from(v & EICR_RTX_QUEUE);
            self.deliver_vectors(m);
            self.other_update(m);
        } else {
            self.regs.set_bits(EIMS, v & EICR_RTX_QUEUE);
            self.legacy_update(m);
        }
    }

    /// Guest write of EIMC: disables causes.
    pub(super) fn eimc_write(&self, m: &mut Intr, v: u32) {
        self.regs.clear_bits(EIMS, v);
        if self.msix_mode() {
            m.vec_mask &= !u64::from(v & EICR_RTX_QUEUE);
        }
    }

    /// Raises "other" causes (bits 30:16).
    pub(super) fn raise_other(&self, causes: u32) {
        self.raise_other_locked(&mut lock(&self.intr), causes);
    }

    /// [`Self::raise_other`] with the interrupt lock held.
    pub(super) fn raise_other_locked(&self, m: &mut Intr, causes: u32) {
        self.regs.set_bits(EICR, causes & 0x7fff_0000);
        if self.msix_mode() {
            self.other_update(m);
        } else {
            self.legacy_update(m);
        }
    }

    /// MSI-X: fires the IVAR_MISC vector while enabled other causes are pending.
    fn other_update(&self, _m: &mut Intr) {
        let pending = self.regs.peek(EICR) & self.regs.peek(EIMS) & 0x7fff_0000;
        if pending == 0 {
            return;
        }
        let misc = (self.regs.peek(IVAR_MISC) >> 8) & 0xff;
        if misc & IVAR_VALID == 0 {
            return;
        }
        if self.regs.peek(GPIE) & GPIE_EIAME != 0 {
            let eiam = self.regs.peek(EIAM);
            self.regs.clear_bits(EIMS, pending & eiam);
        }
        self.env.irq.msix((misc & 0x3f) as u16);
    }

    /// Legacy / MSI: asserts the single interrupt while enabled causes are pending.
    pub(super) fn legacy_update(&self, _m: &mut Intr) {
        let e = self.regs.peek(EICR);
        // One message per assertion: further causes wait for the EICR read.
        if e & self.regs.peek(EIMS) & 0x7fff_ffff != 0 && e & EICR_OTHER == 0 {
            self.regs.set_bits(EICR, EICR_OTHER);
            self.env.irq.legacy();
        }
    }

    /// MSI-X: adds vector causes and delivers the unmasked ones.
    pub(super) fn raise_vectors(&self, m: &mut Intr, bits: u64) {
        if !self.msix_mode() {
            if bits != 0 {
                self.regs.set_bits(EICR, bits as u32 & EICR_RTX_QUEUE);
                self.legacy_update(m);
            }
            return;
        }
        m.vec_cause |= bits;
        self.deliver_vectors(m);
    }

    /// Fires every vector whose cause is set and mask is open (§7.3.4).
    pub(super) fn deliver_vectors(&self, m: &mut Intr) {
        if !self.msix_mode() {
            return;
        }
        let ready = m.vec_cause & m.vec_mask;
        if ready == 0 {
            return;
        }
        let regs = &self.regs;
        let fire = self.moderate(&mut m.moderation, ready, |v| eitr_interval_ns(regs, v));
        if fire == 0 {
            return;
        }
        let eiac = u64::from(self.regs.peek(EIAC) & EICR_RTX_QUEUE) | !0xffffu64;
        m.vec_cause &= !(fire & eiac);
        if self.regs.peek(GPIE) & GPIE_EIAME != 0 {
            let eiam =
                u64::from(self.regs.peek(EIAM_EX)) | (u64::from(self.regs.peek(EIAM_EX + 4)) << 32);
            m.vec_mask &= !(fire & eiam);
        }
        self.signal_vectors(fire);
    }
}
