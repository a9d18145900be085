// SPDX-License-Identifier: Apache-2.0
//! Interrupt causes, masks and MSI-X routing of the 82576 (datasheet §7.3).
//!
//! Legacy causes live in ICR (set by events or ICS, masked by IMS). In MSI-X
//! mode (GPIE.Multiple_MSIX) queue causes set the EICR bit named by their IVAR
//! entry and ICR causes set the EICR bit named by IVAR_MISC; EICR bit *n* fires
//! MSI-X vector *n* while EIMS bit *n* is set, then EIAC auto-clears the cause
//! and, with GPIE.EIAME, EIAM auto-masks the vector. Without Multiple_MSIX every
//! cause is reported through ICR on the function's single interrupt.
//!
//! Every read-modify-write of causes and masks runs under the function's
//! interrupt lock (which also holds the EITR moderation state); functions
//! taking `m: &mut Moderation` expect it held. Guest accesses to the cause,
//! mask and throttle registers arrive there through this part's
//! [`Interrupts`] implementation.

use super::regs::*;
use super::{Igb, I82576};
pub use crate::function::Dir;
use crate::function::Interrupts;
use crate::moderation::Moderation;
use crate::regfile::{RegId, Written};
use crate::sync::lock;

/// ICR: transmit descriptor written back.
pub const ICR_TXDW: u32 = 1 << 0;
/// ICR: link status change.
pub const ICR_LSC: u32 = 1 << 2;
/// ICR: receiver timer interrupt (frame received).
pub const ICR_RXT0: u32 = 1 << 7;
/// ICR: time sync event (TSICR & TSIM).
pub const ICR_TS: u32 = 1 << 19;
/// ICR: interrupt asserted.
pub const ICR_INT_ASSERTED: u32 = 1 << 31;

/// GPIE: non-selective interrupt clear on read.
pub const GPIE_NSICR: u32 = 1 << 0;
/// GPIE: multiple MSI-X vectors.
pub const GPIE_MSIX_MODE: u32 = 1 << 4;
/// GPIE: extended interrupt auto-mask enable.
pub const GPIE_EIAME: u32 = 1 << 30;

/// EITR: the write does not restart the interval counter (CNT_IGNR).
const EITR_CNT_IGNR: u32 = 1 << 31;
/// Vectors with an EITR register (and moderation state).
pub const EITR_VECTORS: usize = 25;

const IVAR_VALID: u32 = 0x80;
const EICR_VECTORS: u32 = 0x01ff_ffff;

impl Interrupts for I82576 {
    fn intr_read(f: &Igb, m: &mut Moderation, r: IntrReg, _: RegId, v: u32) -> u32 {
        match r {
            IntrReg::Icr => f.icr_read(m, v),
            IntrReg::Eitr => v & !EITR_CNT_IGNR,
            _ => v,
        }
    }

    fn intr_write(f: &Igb, m: &mut Moderation, r: IntrReg, w: &Written<Hook>) {
        match r {
            IntrReg::Icr => f.intr_update(m),
            IntrReg::Ics => f.raise_icr_locked(m, w.raw),
            IntrReg::Ims => {
                f.regs.poke(IMS, w.old | w.raw);
                f.intr_update(m);
            }
            IntrReg::Imc => f.regs.clear_bits(IMS, w.raw),
            IntrReg::Eicr => {}
            IntrReg::Eics => f.raise_eicr(m, w.raw & EICR_VECTORS),
            IntrReg::Eims => {
                f.regs.poke(EIMS, (w.old | w.raw) & EICR_VECTORS);
                f.deliver_eicr(m);
            }
            IntrReg::Eimc => f.regs.clear_bits(EIMS, w.raw),
            // Without CNT_IGNR a write restarts the vector's interval counter.
            IntrReg::Eitr if w.raw & EITR_CNT_IGNR == 0 => m.restart(usize::from(w.id.elem)),
            IntrReg::Eitr => {}
        }
    }

    /// Through the queue's IVAR vector in MSI-X mode, else as ICR.RXT0 /
    /// ICR.TXDW.
    fn queue_interrupt(f: &Igb, queue: usize, dir: Dir) {
        if f.msix_mode() {
            let (reg, shift) = ivar_slot(queue, dir);
            let entry = (f.regs.peek(IVAR0 + 4 * reg) >> shift) & 0xff;
            if entry & IVAR_VALID != 0 {
                f.raise_eicr(&mut lock(&f.intr), 1 << (entry & 0x1f));
            }
        } else {
            f.raise_icr(match dir {
                Dir::Rx => ICR_RXT0,
                Dir::Tx => ICR_TXDW,
            });
        }
    }

    fn link_interrupt(f: &Igb) {
        f.raise_icr(ICR_LSC);
    }

    fn deliver_pending(f: &Igb, m: &mut Moderation) {
        f.deliver_eicr(m);
    }

    fn interrupt_summary(f: &Igb) -> String {
        if f.msix_mode() {
            format!(
                "MSI-X EIMS={:#x} IMS={:#x} EITR0={:#x}",
                f.regs.peek(EIMS),
                f.regs.peek(IMS),
                f.regs.peek(EITR0)
            )
        } else {
            format!("single vector IMS={:#x}", f.regs.peek(IMS))
        }
    }
}

impl Igb {
    fn msix_mode(&self) -> bool {
        self.regs.peek(GPIE) & GPIE_MSIX_MODE != 0
    }

    /// Adds causes to ICR and signals them if enabled.
    pub(super) fn raise_icr(&self, causes: u32) {
        self.raise_icr_locked(&mut lock(&self.intr), causes);
    }

    /// [`Self::raise_icr`] with the interrupt lock held.
    pub(super) fn raise_icr_locked(&self, m: &mut Moderation, causes: u32) {
        let causes = causes & !ICR_INT_ASSERTED;
        if causes == 0 {
            return;
        }
        self.regs.set_bits(ICR, causes);
        self.intr_update(m);
    }

    /// Re-evaluates ICR against IMS after a cause or mask change.
    pub(super) fn intr_update(&self, m: &mut Moderation) {
        let icr = self.regs.peek(ICR);
        let pending = icr & self.regs.peek(IMS) & !ICR_INT_ASSERTED;
        if pending == 0 {
            return;
        }
        if self.msix_mode() {
            let misc = self.regs.peek(IVAR_MISC) >> 8;
            if misc & IVAR_VALID != 0 {
                self.regs.set_bits(ICR, ICR_INT_ASSERTED);
                self.raise_eicr(m, 1 << (misc & 0x1f));
            }
        } else if icr & ICR_INT_ASSERTED == 0 {
            self.regs.set_bits(ICR, ICR_INT_ASSERTED);
            self.env.irq.legacy();
        }
    }

    /// Guest read of ICR (§8.8.1): returns the causes and clears them when
    /// GPIE.NSICR is set, when no cause is enabled, or when an interrupt was
    /// asserted; clearing also auto-masks IAM bits and clears the "other" EICR bit.
    fn icr_read(&self, _m: &mut Moderation, icr: u32) -> u32 {
        let ims = self.regs.peek(IMS);
        let nsicr = self.regs.peek(GPIE) & GPIE_NSICR != 0;
        let asserted = icr & ICR_INT_ASSERTED != 0;
        if nsicr || ims == 0 || asserted {
            self.regs.poke(ICR, 0);
            if nsicr || asserted {
                let iam = self.regs.peek(IAM);
                self.regs.clear_bits(IMS, iam);
            }
            if self.msix_mode() {
                let misc = self.regs.peek(IVAR_MISC) >> 8;
                if misc & IVAR_VALID != 0 {
                    self.regs.clear_bits(EICR, 1 << (misc & 0x1f));
                }
            }
        }
        icr
    }

    /// Adds extended causes (MSI-X vectors) and delivers the unmasked ones.
    pub(super) fn raise_eicr(&self, m: &mut Moderation, bits: u32) {
        if !self.msix_mode() {
            // Without Multiple_MSIX, EICS reaches the driver as an RX cause.
            if bits != 0 {
                self.raise_icr_locked(m, ICR_RXT0);
            }
            return;
        }
        self.regs.set_bits(EICR, bits & EICR_VECTORS);
        self.deliver_eicr(m);
    }

    /// Fires every EICR cause whose vector is unmasked (§7.3.4.2), applying
    /// EIAC auto-clear and EIAM auto-mask. A vector whose EITR interval has not
    /// elapsed since its last interrupt stays pending and a timer is armed for
    /// the end of the interval (§7.3.4.1, interrupt moderation).
    pub(super) fn deliver_eicr(&self, m: &mut Moderation) {
        if !self.msix_mode() {
            return;
        }
        let ready = self.regs.peek(EICR) & self.regs.peek(EIMS) & EICR_VECTORS;
        if ready == 0 {
            return;
        }
        let regs = &self.regs;
        let fire = self.moderate(m, u64::from(ready), |v| {
            eitr_interval_ns(regs.peek(EITR0 + 4 * v as u32))
        }) as u32;
        if fire == 0 {
            return;
        }
        let eiac = self.regs.peek(EIAC);
        self.regs.clear_bits(EICR, fire & eiac);
        if self.regs.peek(GPIE) & GPIE_EIAME != 0 {
            let eiam = self.regs.peek(EIAM);
            self.regs.clear_bits(EIMS, fire & eiam);
        }
        self.signal_vectors(u64::from(fire));
    }
}

/// Minimum time between two interrupts of a vector: EITR bits 14:2 in
/// microseconds (the driver's `IGB_20K_ITR` 196 = 49 µs; 0 = no moderation).
pub fn eitr_interval_ns(eitr: u32) -> u64 {
    u64::from((eitr >> 2) & 0x1fff) * 1000
}

/// IVAR register index and bit shift of a queue's entry on the 82576
/// (`igb_assign_vector`: column-major, RX in bytes 0/2, TX in bytes 1/3).
pub fn ivar_slot(queue: usize, dir: Dir) -> (u32, u32) {
    let q = queue as u32 & 0xf;
    let base = (q & 8) << 1;
    let shift = match dir {
        Dir::Rx => base,
        Dir::Tx => base + 8,
    };
    (q & 7, shift)
}
