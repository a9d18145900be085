// SPDX-License-Identifier: Apache-2.0
//! Register side effects and the locks they run under.
//!
//! A register's [`Hook`] says which state its side effect works on, and so
//! which lock it needs: interrupt causes and masks the interrupt lock, the
//! PHY, NVM and resets the control lock, a queue's head and enable its
//! queue's lock, the IEEE 1588 registers the time sync lock. One step
//! (`Function::register_read`, `Function::register_write`) takes that
//! lock before the register changes and hands the locked state to the
//! handler: a cause the data path raises meanwhile is then either seen by the
//! handler or raised after it, and a frame being placed never sees a queue's
//! head half way. The queue, NVM and time sync hooks behave the same on both
//! parts and are served here; the rest go to the part's [`Model`].

use std::fmt;

use super::{q, Function, Model, Part, QUEUE_ENABLE};
use crate::ptp::TsReg;
use crate::regfile::{RegId, Written};
use crate::sync::lock;
use crate::txframe::TxQueue;

/// A part's register kinds with side effects of one lock class.
pub trait RegKind: Copy + fmt::Debug + PartialEq + Send + Sync + 'static {}

impl<T: Copy + fmt::Debug + PartialEq + Send + Sync + 'static> RegKind for T {}

/// A register of a queue's block with behaviour of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueReg {
    /// Head: owned by the device while the queue runs (a write then is
    /// ignored); the driver initialises it with the queue disabled.
    Head,
    /// Tail: a transmit doorbell.
    Tail,
    /// RXDCTL / TXDCTL: a disabled queue forgets its head (and a transmit
    /// queue its partial frame); enabling a transmit queue rings it.
    Control,
}

/// What a register does beyond its access kind, by the state it works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook<I, C, P> {
    /// A cause, mask or moderation register: the part's handler runs under
    /// the interrupt lock.
    Intr(I),
    /// A control-path register (resets, PHY, SFP+ cage): the part's handler
    /// runs under the control lock.
    Ctl(C),
    /// A register of receive queue `first + element`, under its lock.
    Rxq(QueueReg, u16),
    /// A register of transmit queue `first + element`, under its lock.
    Txq(QueueReg, u16),
    /// An IEEE 1588 register served by [`crate::ptp::TimeSync`].
    Ts(TsReg),
    /// EEC / EECD: the grant follows the request (no firmware competes for
    /// the NVM); present and auto-read done always read as set.
    NvmGrant,
    /// EERD: a read request completes at once (under the control lock,
    /// which guards the NVM).
    NvmRead,
    /// SWSM: reading sets SMBI, the read-to-acquire software semaphore.
    Semaphore,
    /// Another register of the part with side effects needing no lock.
    Part(P),
}

/// The hook type of part `M`'s register table.
pub type HookOf<M> = Hook<<M as Model>::IntrReg, <M as Model>::CtlReg, <M as Model>::Reg>;

/// EEC / EECD bits (82576 §8.2.3, 82599 §8.2.3.2.1: the same on both parts).
mod eec {
    pub const REQ: u32 = 1 << 6;
    pub const GNT: u32 = 1 << 7;
    pub const PRES: u32 = 1 << 8;
    pub const AUTO_RD: u32 = 1 << 9;
}

impl<M: Part> Function<M> {
    /// A guest register read with its side effects.
    pub(crate) fn register_read(&self, offset: u64) -> u32 {
        let Some(id) = self.regs.decode(offset) else {
            self.errors.unknown_reg();
            log::debug!("{}: read of unknown register {offset:#x}", M::NAME);
            return 0;
        };
        let Some(hook) = self.regs.def(id).hook else {
            return self.regs.read_at(id);
        };
        match hook {
            Hook::Intr(r) => {
                let m = &mut *lock(&self.intr);
                M::intr_read(self, m, r, id, self.regs.read_at(id))
            }
            Hook::Ctl(r) => {
                let c = &mut *self.ctl();
                M::ctl_read(self, c, r, self.regs.read_at(id))
            }
            Hook::Ts(r) => self.ts().read(r, self.env.clock.now_ns()),
            Hook::Semaphore => {
                let v = self.regs.read_at(id);
                self.regs.set_bits(self.regs.offset_of(id), 1);
                v
            }
            Hook::Part(r) => M::read(self, r, self.regs.read_at(id)),
            Hook::Rxq(..) | Hook::Txq(..) | Hook::NvmGrant | Hook::NvmRead => self.regs.read_at(id),
        }
    }

    /// A guest register write with its side effects.
    pub(crate) fn register_write(&self, offset: u64, val: u32) {
        let Some(id) = self.regs.decode(offset) else {
            self.errors.unknown_reg();
            log::debug!(
                "{}: write of unknown register {offset:#x} = {val:#x} ignored",
                M::NAME
            );
            return;
        };
        let Some(hook) = self.regs.def(id).hook else {
            self.regs.write_at(id, val);
            return;
        };
        match hook {
            Hook::Intr(r) => {
                let m = &mut *lock(&self.intr);
                M::intr_write(self, m, r, &self.regs.write_at(id, val));
            }
            Hook::Ctl(r) => {
                M::ctl_write(self, &mut self.ctl(), r, &self.regs.write_at(id, val));
                // A reset or a PHY write may have brought the link up.
                self.resume_tx();
            }
            Hook::Rxq(r, first) => {
                let qi = usize::from(first + id.elem);
                let _queue = lock(&self.rxq[qi % self.rxq.len()]);
                self.rxq_write(r, qi, &self.regs.write_at(id, val));
            }
            Hook::Txq(r, first) => {
                let qi = usize::from(first + id.elem);
                let t = &mut *lock(&self.txq[qi % self.txq.len()]);
                self.txq_write(t, r, qi, &self.regs.write_at(id, val));
            }
            Hook::Ts(r) => {
                let w = self.regs.write_at(id, val);
                let now = self.env.clock.now_ns();
                self.ts_change(|ts| ts.write(r, w.raw, now));
            }
            Hook::NvmGrant => self.nvm_grant(id, &self.regs.write_at(id, val)),
            Hook::NvmRead => {
                let c = self.ctl();
                let w = self.regs.write_at(id, val);
                self.regs
                    .poke(self.regs.offset_of(id), c.nvm.eerd_write(w.raw));
            }
            Hook::Semaphore => {
                self.regs.write_at(id, val);
            }
            Hook::Part(r) => M::write(self, r, &self.regs.write_at(id, val)),
        }
    }

    /// EEC / EECD written: grant follows request; present and auto-read done.
    fn nvm_grant(&self, id: RegId, w: &Written<super::HookOf<M>>) {
        let mut e = (w.new & !eec::GNT) | eec::PRES | eec::AUTO_RD;
        if e & eec::REQ != 0 {
            e |= eec::GNT;
        }
        self.regs.poke(self.regs.offset_of(id), e);
    }

    /// A receive queue register written (the queue's lock held).
    fn rxq_write(&self, r: QueueReg, qi: usize, w: &Written<super::HookOf<M>>) {
        let base = M::rxq_base(qi);
        match r {
            QueueReg::Head => self.keep_running_head(base, w.old),
            QueueReg::Control => {
                self.regs
                    .clear_bits(base + q::DCTL, M::LAYOUT.dctl_self_clear);
                if w.new & QUEUE_ENABLE == 0 {
                    // A disabled queue forgets its head.
                    self.regs.poke(base + q::H, 0);
                }
            }
            QueueReg::Tail => {}
        }
    }

    /// A transmit queue register written (the queue's lock held).
    fn txq_write(&self, t: &mut TxQueue, r: QueueReg, qi: usize, w: &Written<super::HookOf<M>>) {
        let base = M::txq_base(qi);
        match r {
            QueueReg::Head => self.keep_running_head(base, w.old),
            QueueReg::Tail => self.tx_pass(t, qi),
            QueueReg::Control => {
                self.regs
                    .clear_bits(base + q::DCTL, M::LAYOUT.dctl_self_clear);
                if w.new & QUEUE_ENABLE == 0 {
                    self.regs.poke(base + q::H, 0);
                    t.clear();
                } else if w.old & QUEUE_ENABLE == 0 {
                    self.tx_pass(t, qi);
                }
            }
        }
    }

    /// A head written while its queue runs keeps the value it had.
    fn keep_running_head(&self, base: u32, old: u32) {
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE != 0 {
            self.regs.poke(base + q::H, old);
        }
    }
}
