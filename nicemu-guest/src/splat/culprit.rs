// SPDX-License-Identifier: Apache-2.0
//! The culprit of a report and its fingerprint. As the netdev CI (NIPA's
//! `contest/remote/lib/crash.py`) and syzkaller do, the frames that only say how the report
//! was printed or how the code was reached — `dump_stack`, `__warn`, `__might_resched`,
//! lock primitives, allocators, KASAN's and lockdep's own functions, softirq, workqueue and
//! syscall entry — are skipped: the first function after them is the one to blame.
//! Candidates, in order: the function the header names (a WARN's site, KASAN's and KFENCE's
//! accessing function), the `RIP:` of the report's own registers, the reliable frames of its
//! first call trace, then frames outside a call trace (kmemleak's backtrace, ref_tracker).

use super::model::{Frame, Kind, Splat};
use super::open::Open;

/// Generic helpers: exact names, or prefixes when they end in `*`.
const GENERIC: &[&str] = &[
    // printing the report
    "dump_stack",
    "dump_stack_lvl",
    "show_stack",
    "show_regs",
    "__warn",
    "warn_slowpath_fmt",
    "report_bug",
    "report_bug_entry",
    "__report_bug",
    "handle_bug",
    "exc_invalid_op",
    "asm_exc_invalid_op",
    "print_report",
    "print_address_description",
    "print_circular_bug",
    "print_usage_bug",
    "print_deadlock_bug",
    "print_bad_irq_dependency",
    "sched_show_task",
    "nmi_cpu_backtrace",
    "nmi_trigger_cpumask_backtrace",
    "arch_trigger_cpumask_backtrace",
    "panic",
    "nmi_panic",
    "check_panic_on_warn",
    "__schedule_bug",
    // might_sleep() and scheduling
    "__might_resched",
    "__might_sleep",
    "__might_fault",
    "might_fault",
    "__cant_sleep",
    "__cant_migrate",
    "schedule",
    "__schedule",
    "schedule_timeout",
    "schedule_idle",
    "schedule_preempt_disabled",
    "preempt_schedule*",
    "__cond_resched",
    "_cond_resched",
    "schedule_hrtimeout*",
    "usleep_range*",
    "msleep",
    "msleep_interruptible",
    "io_schedule*",
    "__wait_for_common",
    "wait_for_completion*",
    "do_wait_for_common",
    "__synchronize_*",
    "synchronize_rcu*",
    "wait_rcu_gp",
    // locks
    "mutex_lock*",
    "__mutex_lock*",
    "mutex_unlock",
    "__mutex_unlock*",
    "mutex_trylock",
    "down",
    "down_*",
    "__down*",
    "up",
    "up_*",
    "__up*",
    "rwsem_*",
    "__rwsem_*",
    "_raw_spin_*",
    "_raw_read_*",
    "_raw_write_*",
    "__raw_spin_*",
    "queued_spin_*",
    "native_queued_spin_*",
    "queued_read_*",
    "queued_write_*",
    "do_raw_spin_*",
    "rt_mutex_*",
    "__rt_mutex_*",
    "rt_spin_*",
    "rcu_read_lock*",
    "rcu_read_unlock*",
    "__rcu_read_*",
    "local_bh_enable",
    "__local_bh_enable_ip",
    "_local_bh_enable",
    // lockdep and the RCU checker
    "lock_acquire*",
    "lock_release",
    "lock_acquired",
    "lock_contended",
    "__lock_acquire",
    "lock_sync",
    "lockdep_*",
    "__lockdep_*",
    "check_noncircular",
    "check_prev_add",
    "check_prevs_add",
    "validate_chain",
    "mark_lock",
    "mark_usage",
    "mark_lock_irq",
    "valid_state",
    "check_deadlock",
    "check_irq_usage",
    "debug_check_no_locks_*",
    "lockdep_rcu_suspicious",
    "rcu_lockdep_current_cpu_online",
    // sanitizers and allocators
    "kasan_*",
    "__kasan_*",
    "__asan_*",
    "check_region_inline",
    "kfence_*",
    "__kfence_*",
    "ubsan_*",
    "__ubsan_handle_*",
    "handle_overflow",
    "kmemleak_*",
    "stack_depot_*",
    "kmalloc*",
    "__kmalloc*",
    "kmem_cache_*",
    "__kmem_cache_*",
    "kzalloc*",
    "kcalloc*",
    "kvmalloc*",
    "__kvmalloc*",
    "kvzalloc*",
    "krealloc*",
    "kmemdup*",
    "kstrdup*",
    "kfree",
    "kvfree",
    "slab_*",
    "__slab_*",
    "___slab_*",
    "alloc_pages*",
    "__alloc_pages*",
    "__alloc_frozen_pages*",
    "alloc_frozen_pages*",
    "vmalloc*",
    "__vmalloc*",
    "vzalloc*",
    "__alloc_skb",
    "__netdev_alloc_skb",
    "__napi_alloc_skb",
    "napi_alloc_skb",
    "netdev_alloc_skb*",
    "kmalloc_reserve",
    "pcpu_alloc*",
    "__alloc_percpu*",
    // refcount and list checks
    "refcount_*",
    "__refcount_*",
    "__list_add_valid*",
    "__list_del_entry_valid*",
    "__list_valid_slowpath",
    "check_data_corruption",
    // faults and oops handling
    "die",
    "__die",
    "__die_body",
    "die_addr",
    "oops_*",
    "do_trap",
    "do_error_trap",
    "exc_general_protection",
    "asm_exc_general_protection",
    "page_fault_oops",
    "kernelmode_fixup_or_oops",
    "__bad_area_nosemaphore",
    "bad_area_nosemaphore",
    "do_user_addr_fault",
    "do_kern_addr_fault",
    "exc_page_fault",
    "asm_exc_page_fault",
    "make_task_dead",
    "rewind_stack_and_make_dead",
    "do_exit",
    // interrupts, softirq, timers, workqueues, kthreads, idle, syscall entry
    "handle_softirqs",
    "__do_softirq",
    "do_softirq*",
    "__irq_exit_rcu",
    "irq_exit_rcu",
    "irq_exit",
    "run_ksoftirqd",
    "smpboot_thread_fn",
    "common_interrupt",
    "__common_interrupt",
    "asm_common_interrupt",
    "sysvec_*",
    "__sysvec_*",
    "asm_sysvec_*",
    "irqentry_*",
    "handle_irq_event*",
    "handle_edge_irq",
    "handle_fasteoi_irq",
    "__handle_irq_event_percpu",
    "hrtimer_interrupt",
    "__hrtimer_run_queues",
    "watchdog_timer_fn",
    "call_timer_fn",
    "expire_timers",
    "__run_timers",
    "run_timer_*",
    "tmigr_*",
    "rcu_do_batch",
    "rcu_core",
    "rcu_core_si",
    "net_rx_action",
    "__napi_poll*",
    "napi_poll",
    "net_tx_action",
    "process_one_work",
    "worker_thread",
    "kthread",
    "ret_from_fork",
    "ret_from_fork_asm",
    "do_syscall_64",
    "x64_sys_call",
    "entry_SYSCALL_64*",
    "__x64_sys_*",
    "__do_sys_*",
    "__se_sys_*",
    "syscall_exit_*",
    "default_idle*",
    "cpuidle_*",
    "do_idle",
    "cpu_startup_entry",
    "start_secondary",
    "common_startup_64",
    "rest_init",
    "start_kernel",
    "x86_64_start_*",
    "pv_native_safe_halt",
    "native_safe_halt",
    "arch_cpu_idle",
    "acpi_idle_*",
    "do_one_initcall",
];

/// True if `func` (as printed, maybe with a `.cold` / `.constprop.0` suffix) is a generic
/// helper.
pub fn is_generic(func: &str) -> bool {
    let f = base_name(func);
    GENERIC.iter().any(|g| match g.strip_suffix('*') {
        Some(p) => f.starts_with(p),
        None => f == *g,
    })
}

/// `func` without the compiler's clone suffixes (`.cold`, `.constprop.0`, `.isra.0`).
pub fn base_name(func: &str) -> &str {
    func.split('.').next().unwrap_or(func)
}

/// The splat of a finished report.
pub fn splat(o: Open, truncated: bool) -> Splat {
    let h = &o.header;
    let trace = if o.trace.is_empty() {
        &o.loose
    } else {
        &o.trace
    };
    let mut candidates: Vec<&Frame> = Vec::new();
    candidates.extend(h.func.iter());
    candidates.extend(o.rips.first());
    candidates.extend(trace.iter());
    let culprit = candidates.iter().find(|f| !is_generic(&f.func)).copied();
    let (function, module) = match (culprit, &h.driver) {
        (Some(f), _) => (Some(base_name(&f.func).to_owned()), f.module.clone()),
        (None, Some(d)) => (Some(d.clone()), Some(d.clone())),
        (None, None) => (None, None),
    };
    let fingerprint = match &function {
        Some(f) => format!("{} in {f}", h.title),
        None => h.title.clone(),
    };
    // The report's own line is the culprit's when the header names the culprit (a WARN in
    // it), or when it is where the checked code is (UBSAN, the RCU checker).
    let own_line = matches!(h.kind, Kind::Ubsan | Kind::SuspiciousRcuUsage)
        || (h.func.is_some() && culprit.map(|c| &c.func) == h.func.as_ref().map(|f| &f.func));
    let mut text = o.lines.join("\n");
    if o.clipped > 0 {
        text.push_str(&format!("\n[{} more lines not kept]", o.clipped));
    }
    Splat {
        kind: h.kind,
        title: h.title.clone(),
        fingerprint,
        function,
        module,
        culprit: culprit.cloned(),
        location: own_line.then(|| h.location.clone()).flatten(),
        site: h.location.clone(),
        during: o.during.clone(),
        at_secs: o.secs,
        count: 1,
        truncated,
        text,
        frames: trace.iter().take(64).cloned().collect(),
        decode_note: None,
        ignored: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_helpers_and_suffixes() {
        for g in [
            "dump_stack_lvl",
            "__might_resched.cold",
            "__mutex_lock.constprop.0",
            "_raw_spin_lock_irqsave",
            "kasan_report",
            "__kmalloc_cache_noprof",
            "refcount_warn_saturate",
            "__list_del_entry_valid_or_report",
            "entry_SYSCALL_64_after_hwframe",
            "__x64_sys_ioctl",
            "asm_sysvec_apic_timer_interrupt",
        ] {
            assert!(is_generic(g), "{g}");
        }
        for d in [
            "igb_get_stats64",
            "ixgbe_xmit_frame_ring",
            "dev_get_stats",
            "igb_poll",
            "__dev_queue_xmit",
            "downgrade_foo",
        ] {
            assert!(!is_generic(d), "{d}");
        }
        assert_eq!(base_name("print_circular_bug.cold"), "print_circular_bug");
    }
}
