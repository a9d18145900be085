// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! Inclusive counts of named functions on one vCPU: the function and everything it
//! calls, as `perf report --children` attributes samples.
//!
//! An activation opens when the translation block at a named function's entry point
//! starts, remembering the stack pointer there (it points at the return address). While
//! activations are open, every kernel block reports its stack pointer:
//! - on the activation's stack (less than 16 KiB away: see [`same_stack`]) and above the
//!   remembered pointer: the function has returned (`ret` popped the return address, or a
//!   tail call's callee did), so the activation closes;
//! - on the activation's stack and at or below it: the block belongs to the function or
//!   its callees and counts;
//! - on another stack: an interrupt or exception on its own stack, or another task after
//!   a context switch; it does not count.
//!
//! A time-driven function ([`crate::timed`]) entered on an activation's stack mutes the
//! activations open there (those entered at or above its stack pointer): neither it nor
//! anything it calls counts into them until it returns; those instructions go to their
//! time-driven counters instead (index `functions + f`), shown apart. That is an
//! interrupt taken where the activation runs (on the interrupt stack already, a
//! softirq's nested timer or device interrupt stays there: its handler is not the
//! function's work), or a driver function's `udelay()`. A named function entered inside
//! the time-driven call (deeper on the stack) counts for itself in full: a NAPI poll run
//! by `irq_exit_rcu` is work even while an interrupted activation waits above it.
//!
//! A function open twice (recursion) counts each block once. A function whose task
//! blocks (a contended `mutex_lock`, a preemption: [`crate::timed::Timed::Wait`], muted
//! like any time-driven call) may wake on another vCPU: when its vCPU runs another stack
//! while the blocking call is open, the activations on the sleeping stack leave as a
//! [`Sleeper`], and the first vCPU that runs that stack again takes them up, so the
//! function goes on counting wherever its task resumes.

/// Kernel stacks on x86-64 are 16 KiB (THREAD_SIZE, IRQ_STACK_SIZE).
pub const STACK_BYTES: u64 = 16 * 1024;

/// Open activations kept per vCPU; beyond, the oldest is dropped (and counted).
pub const MAX_FRAMES: usize = 32;

/// Whether stack pointers `a` and `b` are on one stack: less than [`STACK_BYTES`] apart.
///
/// Task stacks are aligned to their 16 KiB and separated by guard pages (vmalloc'd with
/// VMAP_STACK), so pointers on two of them are at least 16 KiB apart. The per-CPU
/// interrupt stack, where softirqs run after an interrupt, is only page-aligned
/// (`map_irq_stack()` vmaps it): it can straddle a 16 KiB boundary, and comparing
/// 16 KiB-aligned blocks instead split it in two — an activation opened above the
/// boundary stopped counting its callees below it, one opened below never saw its
/// return and counted what ran after (igb_ptp_rx_rgtstamp in NAPI: 12–161 instructions
/// a call from boot to boot). The distance rule errs only for a pointer on the
/// interrupt stack and one more than ~12 KiB deep in a task stack next to it.
pub fn same_stack(a: u64, b: u64) -> bool {
    a.abs_diff(b) < STACK_BYTES
}

/// The activations and muted calls of a task that blocked inside a named function,
/// between the vCPU it slept on and the one it wakes on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sleeper {
    /// (function index, stack pointer at its entry), all on one stack.
    open: Vec<(u8, u64)>,
    /// (stack pointer at the entry, blocking) of the time-driven calls running there.
    muted: Vec<(u64, bool)>,
}

impl Sleeper {
    /// Whether `rsp` is on the sleeping task's stack (its task runs again).
    pub fn on_stack(&self, rsp: u64) -> bool {
        self.open.iter().any(|&(_, at)| same_stack(rsp, at))
    }
}

/// One vCPU's open activations and its inclusive counters.
#[derive(Debug, Clone)]
pub struct Frames {
    /// (function index, stack pointer at its entry).
    open: Vec<(u8, u64)>,
    /// Stack pointers at the entries of time-driven calls still running inside
    /// activations (while one is open on a block's stack, the block does not count),
    /// and whether the call may block ([`crate::timed::Timed::Wait`]).
    muted: Vec<(u64, bool)>,
    /// Named functions.
    functions: usize,
    /// Instructions counted per function index (cumulative), then the time-driven
    /// instructions inside each (`functions + f`).
    pub inclusive: Vec<u64>,
    /// Activations dropped because [`MAX_FRAMES`] were open.
    pub dropped: u64,
}

impl Frames {
    /// No activation open; `functions` counters (and as many time-driven ones) at zero.
    pub fn new(functions: usize) -> Frames {
        Frames {
            open: Vec::with_capacity(MAX_FRAMES),
            muted: Vec::with_capacity(MAX_FRAMES),
            functions,
            inclusive: vec![0; 2 * functions],
            dropped: 0,
        }
    }

    /// Closes the activations on `rsp`'s stack that `rsp` is above (they returned).
    /// Time-driven calls that returned are unmuted; with no activation left, all are.
    fn close_returned(&mut self, rsp: u64) {
        self.open
            .retain(|&(_, at)| !(same_stack(rsp, at) && rsp > at));
        if self.open.is_empty() {
            self.muted.clear();
        } else {
            self.muted
                .retain(|&(at, _)| !(same_stack(rsp, at) && rsp > at));
        }
    }

    /// Adds `insns` to every function open on `rsp`'s stack, once each: to its
    /// time-driven counter when the block is (`timed`) or when a time-driven call it made
    /// or that interrupted it is running there (after [`Self::close_returned`], a muted
    /// call on the same stack is at or above `rsp`: the block is inside it; it mutes the
    /// activations entered at or above its own entry, not those entered inside it).
    fn count(&mut self, rsp: u64, insns: u32, timed: bool) {
        let deepest_mute = (self.muted.iter())
            .filter(|&&(at, _)| same_stack(rsp, at))
            .map(|&(at, _)| at)
            .min();
        let (mut work, mut time) = (0u64, 0u64);
        for &(f, at) in &self.open {
            if same_stack(rsp, at) {
                if timed || deepest_mute.is_some_and(|m| m <= at) {
                    time |= 1 << f;
                } else {
                    work |= 1 << f;
                }
            }
        }
        // A function open twice (recursion) counts once, as work if any of its
        // activations does.
        time &= !work;
        for (base, mut mask) in [(0, work), (self.functions, time)] {
            while mask != 0 {
                let f = mask.trailing_zeros() as usize;
                if let Some(c) = self.inclusive.get_mut(base + f) {
                    *c += u64::from(insns);
                }
                mask &= mask - 1;
            }
        }
    }

    /// A kernel block of `insns` instructions, in a time-driven function or not
    /// (`timed`), starts with stack pointer `rsp`. Returns whether activations are still
    /// open (blocks need to keep reporting).
    pub fn block(&mut self, rsp: u64, insns: u32, timed: bool) -> bool {
        self.close_returned(rsp);
        self.count(rsp, insns, timed);
        !self.open.is_empty()
    }

    /// Named function `f` (index below 64) is entered by a block of `insns` instructions
    /// with stack pointer `rsp`.
    pub fn entry(&mut self, f: u8, rsp: u64, insns: u32) {
        self.close_returned(rsp);
        if self.open.len() == MAX_FRAMES {
            self.open.remove(0);
            self.dropped += 1;
        }
        self.open.push((f & 63, rsp));
        self.count(rsp, insns, false);
    }

    /// A time-driven function's entry block of `insns` instructions starts with stack
    /// pointer `rsp` while activations are open: it and its callees count as time. A
    /// blocking one (`blocks`) may put the task to sleep. Returns whether activations are
    /// still open.
    pub fn timed_entry(&mut self, rsp: u64, insns: u32, blocks: bool) -> bool {
        self.close_returned(rsp);
        if !self.open.is_empty() {
            if self.muted.len() == MAX_FRAMES {
                self.muted.remove(0);
                self.dropped += 1;
            }
            self.muted.push((rsp, blocks));
            self.count(rsp, insns, true);
        }
        !self.open.is_empty()
    }

    /// Whether an activation is open.
    pub fn any_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// The vCPU runs a block on `rsp`'s stack: the activations on other stacks where a
    /// blocking call is open belong to a task that went to sleep; they leave, one
    /// [`Sleeper`] per stack, for whichever vCPU runs that stack next ([`Self::wake`]).
    pub fn sleepers(&mut self, rsp: u64) -> Vec<Sleeper> {
        let mut out = Vec::new();
        while let Some(&(at, _)) = self
            .muted
            .iter()
            .find(|&&(at, blocks)| blocks && !same_stack(rsp, at))
        {
            let mut s = Sleeper::default();
            self.open.retain(|&o| {
                let here = same_stack(o.1, at);
                if here {
                    s.open.push(o);
                }
                !here
            });
            self.muted.retain(|&m| {
                let here = same_stack(m.0, at);
                if here {
                    s.muted.push(m);
                }
                !here
            });
            if !s.open.is_empty() {
                out.push(s);
            }
        }
        out
    }

    /// A sleeping task's activations resume on this vCPU (its stack runs here now).
    pub fn wake(&mut self, s: Sleeper) {
        for o in s.open {
            if self.open.len() == MAX_FRAMES {
                self.open.remove(0);
                self.dropped += 1;
            }
            self.open.push(o);
        }
        for m in s.muted {
            if self.muted.len() == MAX_FRAMES {
                self.muted.remove(0);
                self.dropped += 1;
            }
            self.muted.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK: u64 = 0xffff_c900_0001_0000; // a 16 KiB-aligned kernel stack
    const IRQ: u64 = 0xffff_fe00_0000_4000; // the CPU's interrupt stack

    #[test]
    fn a_call_counts_its_callees_until_it_returns() {
        let mut f = Frames::new(2);
        let sp = TASK + 0x3f00;
        f.entry(0, sp, 4); // F's entry block
        assert!(f.block(sp - 0x40, 10, false)); // a callee, deeper
        assert!(f.block(sp - 8, 3, false)); // back in F
        assert!(!f.block(sp + 8, 7, false)); // the caller, after F's ret
        assert_eq!(f.inclusive, [17, 0, 0, 0]);
        assert!(!f.any_open());
    }

    #[test]
    fn interrupts_and_other_tasks_do_not_count() {
        let mut f = Frames::new(1);
        let sp = TASK + 0x3f00;
        f.entry(0, sp, 4);
        assert!(f.block(IRQ + 0x3000, 50, false)); // interrupt handler on the IRQ stack
        assert!(f.block(TASK + 0x10_0000 + 0x100, 80, false)); // another task's stack
        assert!(f.block(sp - 0x20, 6, false)); // F again
        assert!(!f.block(sp + 8, 1, false));
        assert_eq!(f.inclusive, [10, 0]);
    }

    #[test]
    fn a_named_function_inside_an_interrupt_counts_only_for_itself() {
        let mut f = Frames::new(2);
        let sp = TASK + 0x3f00;
        f.entry(0, sp, 4); // F on the task stack
        f.entry(1, IRQ + 0x3f00, 5); // G entered in an interrupt, on the IRQ stack
        assert!(f.block(IRQ + 0x3e00, 20, false));
        assert!(f.block(IRQ + 0x3f08, 2, false)); // G returned
        assert!(f.block(sp - 0x10, 3, false));
        assert!(!f.block(sp + 8, 1, false));
        assert_eq!(f.inclusive, [7, 25, 0, 0]);
    }

    #[test]
    fn recursion_counts_each_block_once_and_a_tail_call_stays_inside() {
        let mut f = Frames::new(1);
        let sp = TASK + 0x3f00;
        f.entry(0, sp, 2);
        f.entry(0, sp - 0x80, 2); // F calls F
        assert!(f.block(sp - 0x100, 10, false));
        assert!(f.block(sp - 0x78, 1, false)); // inner returned, outer still open
        f.entry(0, sp, 3); // F tail-calls (jmp) itself at the same stack pointer
        assert!(!f.block(sp + 8, 1, false));
        assert_eq!(f.inclusive, [18, 0]);
    }

    #[test]
    fn a_time_driven_call_and_its_callees_count_as_time_until_it_returns() {
        let mut f = Frames::new(1);
        let sp = IRQ + 0x3f00; // F in a softirq on the interrupt stack
        f.entry(0, sp, 4);
        assert!(f.block(sp - 0x10, 6, false));
        // A timer interrupt nested on the same stack: its entry (time-driven) and the
        // tick work it calls, two frames deeper, count as time.
        assert!(f.timed_entry(sp - 0x100, 9, false));
        assert!(f.block(sp - 0x180, 500, false));
        assert!(f.block(sp - 0x108, 7, true)); // back in the timed entry code
        assert!(f.block(sp - 0x20, 3, false)); // returned into F: counts again
                                               // udelay() called by F: __const_udelay is work, delay_tsc's wait is time.
        assert!(f.block(sp - 0x28, 4, false));
        assert!(f.block(sp - 0x30, 1000, true));
        assert!(f.block(sp - 0x18, 2, false));
        assert!(!f.block(sp + 8, 1, false));
        assert_eq!(f.inclusive, [19, 1516]);
        // With no activation open, a time-driven call is not remembered.
        assert!(!f.timed_entry(sp - 0x100, 9, false));
        f.entry(0, sp - 0x80, 5);
        assert_eq!(f.inclusive, [24, 1516]);
    }

    /// igb_ptp_rx_rgtstamp (F) in a NAPI poll on the interrupt stack; a device interrupt
    /// nested there (`__common_interrupt`, time-driven, then igb_msix_ring and
    /// `__napi_schedule`: not time-driven by name) is not F's work.
    #[test]
    fn a_device_interrupt_nested_on_the_activation_stack_is_time() {
        let mut f = Frames::new(1);
        let sp = IRQ + 0x3e00;
        f.entry(0, sp, 4);
        assert!(f.block(sp - 0x20, 10, false));
        assert!(f.timed_entry(sp - 0x200, 6, false)); // __common_interrupt
        assert!(f.block(sp - 0x240, 30, false)); // the device's handler
        assert!(f.block(sp - 0x208, 2, true)); // back in the entry code
        assert!(f.block(sp - 0x28, 3, false)); // returned into F
        assert!(!f.block(sp + 8, 1, false));
        assert_eq!(f.inclusive, [17, 38]);
    }

    /// F open on a task stack is interrupted; the interrupt's exit (`irq_exit_rcu`,
    /// time-driven) runs softirqs on the interrupt stack, where NAPI enters G: G counts
    /// in full, and a timer interrupt nested in G (deeper) is G's time.
    #[test]
    fn a_function_entered_inside_a_time_driven_call_counts_for_itself() {
        let mut f = Frames::new(2);
        let task = TASK + 0x3f00;
        f.entry(0, task, 4); // F
        let irq = IRQ + 0x3f00;
        assert!(f.timed_entry(irq, 5, false)); // irq_exit_rcu → softirqs
        assert!(f.block(irq - 0x40, 7, false)); // net_rx_action, igb_poll: nobody's
        f.entry(1, irq - 0x100, 3); // G
        assert!(f.block(irq - 0x140, 20, false)); // G's callee
        assert!(f.timed_entry(irq - 0x300, 4, false)); // a nested timer interrupt
        assert!(f.block(irq - 0x340, 50, false));
        assert!(f.block(irq - 0x120, 2, false)); // back in G
        assert!(f.block(irq - 0xf8, 1, false)); // G returned
        assert!(f.block(irq + 0x10, 1, false)); // irq_exit_rcu returned
        assert!(f.block(task - 0x10, 6, false)); // F resumes
        assert!(!f.block(task + 8, 1, false));
        assert_eq!(f.inclusive, [10, 25, 0, 54]);
    }

    #[test]
    fn an_interrupt_stack_across_a_16k_boundary_is_one_stack() {
        // A page-aligned interrupt stack [base, base + 16 KiB) with a 16 KiB boundary
        // 4 KiB below its top.
        let base = IRQ + 0x1_0000 - 0x3000;
        let top = base + STACK_BYTES;
        let mut f = Frames::new(1);
        f.entry(0, top - 0x800, 4); // above the boundary
        assert!(f.block(top - 0x1800, 10, false)); // a callee below it: counts
        assert!(!f.block(top - 0x700, 1, false)); // returned
        f.entry(0, top - 0x1200, 4); // below the boundary
        assert!(!f.block(top - 0x800, 2, false)); // the caller above it: returned
        assert!(!f.block(top - 0x1400, 100, false)); // later work, not F's
        assert_eq!(f.inclusive, [18, 0]);
        assert!(same_stack(top - 8, base + 8));
        assert!(!same_stack(TASK + 0x3f00, TASK + 0x8000 + 0x3f00));
    }

    /// F takes a contended mutex: `__mutex_lock` (blocking) sleeps, the vCPU runs other
    /// tasks; `run` resumes the task on `wake_on`'s vCPU and F finishes there.
    fn sleep_in_f(wake_on_other: bool) -> (Frames, Frames) {
        let (mut a, mut b) = (Frames::new(1), Frames::new(1));
        let sp = TASK + 0x3f00;
        let other = TASK + 0x10_0000 + 0x100;
        a.entry(0, sp, 4);
        assert!(a.block(sp - 0x20, 10, false)); // F's work before the lock
        assert!(a.timed_entry(sp - 0x40, 3, true)); // __mutex_lock
        assert!(a.block(sp - 0x80, 30, false)); // __schedule, muted
                                                // The vCPU switches to another task: F's task sleeps.
        assert!(a.sleepers(sp - 0x90).is_empty(), "still its own stack");
        let sleeping = a.sleepers(other);
        assert_eq!(sleeping.len(), 1);
        assert!(!a.any_open() && sleeping[0].on_stack(sp - 0x80));
        assert!(!a.block(other, 500, false), "another task's work");
        let v = if wake_on_other { &mut b } else { &mut a };
        v.wake(sleeping.into_iter().next().unwrap());
        assert!(v.block(sp - 0x80, 20, false)); // finish_task_switch: still muted
        assert!(v.block(sp - 0x38, 5, false)); // __mutex_lock returned: F's work again
        assert!(!v.block(sp + 8, 1, false)); // F returned
        (a, b)
    }

    #[test]
    fn a_function_that_sleeps_counts_the_same_wherever_its_task_wakes() {
        let (a, b) = sleep_in_f(false);
        assert_eq!(a.inclusive, [19, 53]);
        assert_eq!(b.inclusive, [0, 0]);
        let (a, b) = sleep_in_f(true);
        let sum: Vec<u64> = (a.inclusive.iter().zip(&b.inclusive))
            .map(|(x, y)| x + y)
            .collect();
        assert_eq!(sum, [19, 53], "the same counts, split between the vCPUs");
        assert_eq!((a.inclusive[0], b.inclusive[0]), (14, 5));
        // An interrupt while a non-blocking time-driven call runs is no sleep.
        let mut f = Frames::new(1);
        f.entry(0, TASK + 0x3f00, 1);
        assert!(f.timed_entry(TASK + 0x3e00, 1, false));
        assert!(f.sleepers(IRQ + 0x3000).is_empty());
        assert!(f.any_open());
    }

    #[test]
    fn too_many_open_activations_drop_the_oldest() {
        let mut f = Frames::new(1);
        for i in 0..=MAX_FRAMES as u64 {
            f.entry(0, TASK + 0x3f00 - i * 16, 1);
        }
        assert_eq!(f.dropped, 1);
        assert!(f.any_open());
    }
}
