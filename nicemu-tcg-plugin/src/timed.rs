// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! Time-driven kernel code: functions whose instructions in a window depend on how long
//! the window lasted or on how the vCPUs interleaved, not on the work done in it. The
//! plugin leaves their blocks out of named functions' inclusive counts (a busy-wait
//! inside a driver function is time, not work), and the harness counts them in buckets
//! of their own, shown and kept out of the deterministic totals and the verdicts.
//!
//! By name, per translation block (a block is in exactly one function, so nothing is
//! counted twice): spin-lock and delay busy-waits (a vCPU waiting for another, or for
//! the clock, which under TCG runs at the host's mercy), timer and tick code, RCU's
//! grace-period machinery, interrupt and IPI entry, the random number generator's mixing
//! and reseeding, idle, the scheduler's periodic load balancing, and blocking: a task that
//! sleeps on a contended mutex or rwsem, or gives up its CPU, runs the slow path and the
//! context switch as often as the other vCPU happened to hold the lock.

/// A bucket of time-driven code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timed {
    /// Spin-lock and similar busy-wait slow paths.
    Spin,
    /// Timers, ticks, clock events and timekeeping.
    Timer,
    /// RCU callbacks and grace periods.
    Rcu,
    /// Interrupt and IPI entry and exit.
    Irq,
    /// The random number generator's mixing and reseeding.
    Rng,
    /// Idle loops.
    Idle,
    /// Periodic scheduler work (load balancing, load averages).
    Sched,
    /// Blocking: sleeping-lock slow paths and the context switch (`__schedule`), whose
    /// count depends on whether another task held the lock (e.g. a `mutex_lock` in
    /// `igb_update_stats` contending with the watchdog's sweep).
    Wait,
}

impl Timed {
    /// The metric key of the bucket.
    pub fn key(self) -> &'static str {
        match self {
            Timed::Spin => "spin",
            Timed::Timer => "timer",
            Timed::Rcu => "rcu",
            Timed::Irq => "irq",
            Timed::Rng => "rng",
            Timed::Idle => "idle",
            Timed::Sched => "sched",
            Timed::Wait => "wait",
        }
    }
}

/// (bucket, name prefixes); a name matches when it starts with one.
const PREFIXES: &[(Timed, &[&str])] = &[
    (
        Timed::Spin,
        &[
            "native_queued_spin_lock_slowpath",
            "queued_spin_lock_slowpath",
            "__pv_queued_spin_lock_slowpath",
            "pv_wait",
            "pv_kick",
            "queued_read_lock_slowpath",
            "queued_write_lock_slowpath",
            "osq_lock",
            "mutex_spin_on_owner",
            "rwsem_spin_on_owner",
            "rwsem_optimistic_spin",
            "lock_timer_base",
            "__cpu_relax",
            "csd_lock_wait",
            // Waits for a timer callback running on another CPU (its retry loop):
            // 297 000 own instructions in one hwstamp-lock A/A window, ~0 in the others.
            "timer_delete_sync",
            "__timer_delete_sync",
            "del_timer_wait_running",
            // udelay()/ndelay() busy-wait on the TSC (or halt) until the time has passed:
            // under TCG the loop runs as often as the host lets it. igb's PHY reads in
            // igb_update_stats (MDIC polled after udelay(50)) spend their time here.
            "delay_tsc",
            "delay_loop",
            "delay_halt",
            // The clocksource watchdog's cross-CPU skew check: two CPUs bounce a sequence
            // count, each spinning (cpu_relax) for the other's step; 2–165 own instructions
            // per frame of a fixed-count hwstamp window, with the host's scheduling.
            "watchdog_check_skew",
            "watchdog_wait_seq",
        ],
    ),
    (
        Timed::Timer,
        &[
            "hrtimer_",
            "__hrtimer_",
            "tick_",
            "__tick_",
            "update_process_times",
            "update_wall_time",
            "timekeeping_",
            "clockevents_",
            "lapic_next_",
            "run_timer_softirq",
            "__run_timers",
            "run_timer_base",
            "__run_timer_base",
            "call_timer_fn",
            "timer_expire_remote",
            "do_timer",
            "account_process_tick",
            "sched_tick",
            "scheduler_tick",
            "task_tick_",
            "sched_clock_tick",
            // The clocksource watchdog (a timer every 0.5 s) and what only timer and tick
            // code calls: the hrtimer interrupt's clock read, the timer wheel's and the
            // hrtimer queues' searches for the next expiry when a CPU goes idle.
            "clocksource_watchdog",
            "__watchdog_check_cpu_skew",
            "ktime_get_update_offsets_now",
            "__get_next_timer_interrupt",
            "get_next_timer_interrupt",
            "fetch_next_timer_interrupt",
            "timerqueue_",
        ],
    ),
    (
        Timed::Rcu,
        &[
            "rcu_core",
            "rcu_do_batch",
            "rcu_gp_",
            "rcu_sched_clock_irq",
            "rcu_pending",
            "rcu_report_",
            "rcu_accelerate_",
            "rcu_advance_",
            "rcu_segcblist_",
            "rcu_exp_",
            "invoke_rcu_core",
            "note_gp_changes",
            "__note_gp_changes",
            "rcu_check_quiescent_state",
            "force_qs_rnp",
            "rcu_implicit_dynticks_qs",
            "rcu_watching_",
            "rcu_nocb_",
        ],
    ),
    (
        Timed::Irq,
        &[
            "asm_sysvec_",
            "sysvec_",
            "__sysvec_",
            "asm_common_interrupt",
            "common_interrupt",
            "__common_interrupt",
            "irqentry_",
            "irq_enter",
            "irq_exit",
            "__irq_exit_rcu",
            "handle_irq_event",
            "handle_edge_irq",
            "handle_fasteoi_irq",
            "generic_handle_",
            "flush_smp_call_function_queue",
            "__flush_smp_call_function_queue",
            "generic_smp_call_function_",
            "native_apic_",
            "x2apic_",
            "lapic_",
            "apic_",
            "__x2apic_",
            "native_send_call_func_",
            "irq_work_",
        ],
    ),
    (
        Timed::Rng,
        &[
            "add_interrupt_randomness",
            "mix_interrupt_randomness",
            "fast_mix",
            "crng_",
            "blake2s_",
            "chacha_",
            "_credit_init_bits",
            "extract_entropy",
            "mix_pool_bytes",
            "_mix_pool_bytes",
            "add_timer_randomness",
            "entropy_timer",
        ],
    ),
    (
        Timed::Idle,
        &[
            "default_idle",
            "do_idle",
            "cpuidle_",
            "arch_cpu_idle",
            "native_safe_halt",
            "pv_native_safe_halt",
            "cpu_startup_entry",
            "acpi_idle",
            "intel_idle",
            "poll_idle",
            "cpu_idle_poll",
            "schedule_idle",
            "mwait_idle",
            "call_cpuidle",
            "rcu_idle_",
        ],
    ),
    (
        Timed::Sched,
        &[
            "sched_balance_",
            "load_balance",
            "rebalance_domains",
            "run_rebalance_domains",
            "update_blocked_averages",
            "__update_blocked_",
            "trigger_load_balance",
            "nohz_",
            "kick_ilb",
            "psi_avgs_work",
            "calc_global_load",
            "update_load_avg_blocked",
        ],
    ),
    (
        Timed::Wait,
        &[
            "__schedule",
            "preempt_schedule",
            "schedule_timeout",
            "schedule_hrtimeout",
            "io_schedule_timeout",
            "__mutex_lock",
            "__mutex_unlock_slowpath",
            "__ww_mutex_lock",
            "rwsem_down_",
            "rwsem_wake",
            "rt_mutex_slowlock",
            "__rt_mutex_slowlock",
            "rt_mutex_slowunlock",
            "rtlock_slowlock",
        ],
    ),
];

/// Time-driven functions matched by their whole name (a prefix would take in e.g.
/// `schedule_work`, which queues work and returns: the work itself).
const EXACT: &[(Timed, &[&str])] = &[(
    Timed::Wait,
    &["schedule", "schedule_preempt_disabled", "io_schedule"],
)];

/// The time-driven bucket of function `name` (a bare kernel symbol, a compiler suffix such
/// as `.cold` or `.isra.0` ignored for whole-name matches), if it is one.
pub fn timed(name: &str) -> Option<Timed> {
    let base = name.split('.').next().unwrap_or(name);
    PREFIXES
        .iter()
        .find(|(_, ps)| ps.iter().any(|p| name.starts_with(p)))
        .or_else(|| EXACT.iter().find(|(_, ns)| ns.contains(&base)))
        .map(|(t, _)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_driven_code_by_name_and_the_data_path_is_not() {
        assert_eq!(timed("native_queued_spin_lock_slowpath"), Some(Timed::Spin));
        assert_eq!(timed("timer_delete_sync"), Some(Timed::Spin));
        assert_eq!(timed("delay_tsc"), Some(Timed::Spin));
        assert_eq!(timed("delay_halt_tpause"), Some(Timed::Spin));
        assert_eq!(timed("hrtimer_interrupt"), Some(Timed::Timer));
        assert_eq!(timed("rcu_core_si"), Some(Timed::Rcu));
        assert_eq!(timed("asm_sysvec_apic_timer_interrupt"), Some(Timed::Irq));
        assert_eq!(timed("blake2s_compress_generic"), Some(Timed::Rng));
        assert_eq!(timed("pv_native_safe_halt"), Some(Timed::Idle));
        assert_eq!(timed("sched_balance_rq"), Some(Timed::Sched));
        assert_eq!(timed("__schedule"), Some(Timed::Wait));
        assert_eq!(timed("schedule"), Some(Timed::Wait));
        assert_eq!(timed("schedule.cold"), Some(Timed::Wait));
        assert_eq!(timed("__mutex_lock.constprop.0"), Some(Timed::Wait));
        assert_eq!(timed("rwsem_down_write_slowpath"), Some(Timed::Wait));
        assert_eq!(timed("watchdog_check_skew_remote"), Some(Timed::Spin));
        assert_eq!(timed("ktime_get_update_offsets_now"), Some(Timed::Timer));
        assert_eq!(timed("timerqueue_linked_add"), Some(Timed::Timer));
        assert_eq!(timed("__common_interrupt"), Some(Timed::Irq));
        assert_eq!(timed("irq_exit_rcu"), Some(Timed::Irq));
        for path in [
            "__netdev_pick_tx",
            "__dev_queue_xmit",
            "net_tx_action",
            "__rcu_read_lock",
            "_raw_spin_lock",
            "do_syscall_64",
            "igb_xmit_frame_ring",
            "__const_udelay", // a call's own arithmetic; the wait is in delay_tsc
            "delayed_work_timer_fn",
            "schedule_work", // queues work and returns
            "schedule_delayed_work_on",
            "mutex_lock", // the uncontended fast path is the caller's work
            "mutex_unlock",
            "down_read",
            "ktime_get", // sockets, the scheduler and timers alike read the clock
            "watchdog",  // a kthread's name, not the clocksource watchdog
        ] {
            assert_eq!(timed(path), None, "{path}");
        }
    }
}
