// SPDX-License-Identifier: Apache-2.0
//! The first line of each kind of kernel report: its kind, its title without the parts that
//! vary from one occurrence to the next (addresses, PIDs, CPU numbers, durations), and what
//! the line itself names (the function of `WARNING: … at FUNC`, the file:line of
//! `kernel BUG at FILE:LINE!`).

use super::line::symbol_in;
use super::model::{Frame, Kind};

/// What a report's first line says.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The kind of report.
    pub kind: Kind,
    /// The title ("BUG: sleeping function called from invalid context").
    pub title: String,
    /// The function the line names (the WARN site, KASAN's and KFENCE's accessing function).
    pub func: Option<Frame>,
    /// The source location the line names (`FILE:LINE`, UBSAN's `FILE:LINE:COL`).
    pub location: Option<String>,
    /// A NETDEV WATCHDOG's driver (the report has no call trace).
    pub driver: Option<String>,
}

impl Header {
    fn new(kind: Kind, title: impl Into<String>) -> Self {
        Header {
            kind,
            title: title.into(),
            func: None,
            location: None,
            driver: None,
        }
    }
}

/// lockdep's report titles (`kernel/locking/lockdep.c`), after "WARNING: ".
const LOCKDEP: [&str; 11] = [
    "possible circular locking dependency detected",
    "possible recursive locking detected",
    "inconsistent lock state",
    "possible irq lock inversion dependency detected",
    "bad unlock balance detected!",
    "held lock freed!",
    "lock held when returning to user space!",
    "Nested lock was not taken",
    "bad contention detected!",
    "chain_key collision",
    "lock held at task exit time!",
];

/// The header `msg` (a console message without its timestamp) starts, if any.
pub fn classify(msg: &str) -> Option<Header> {
    let m = msg.trim_end();
    if let Some(rest) = m.strip_prefix("WARNING: ") {
        return Some(warning(rest));
    }
    if let Some(rest) = after_prefix(m, "BUG: ") {
        return Some(bug(rest));
    }
    if let Some(rest) = m.strip_prefix("kernel BUG at ") {
        let mut h = Header::new(Kind::KernelBug, "kernel BUG");
        h.location = Some(rest.trim_end_matches('!').to_owned());
        return Some(h);
    }
    if let Some(rest) = m.strip_prefix("Oops: ") {
        return Some(oops(rest));
    }
    if let Some(rest) = m.strip_prefix("Kernel panic - not syncing: ") {
        return Some(Header::new(
            Kind::Panic,
            format!(
                "Kernel panic - not syncing: {}",
                words_without_numbers(rest)
            ),
        ));
    }
    if let Some(rest) = m.strip_prefix("UBSAN: ") {
        return Some(ubsan(rest));
    }
    other(m)
}

/// Headers that are not `WARNING:`, `BUG:`, `Oops:`, panics or UBSAN.
fn other(m: &str) -> Option<Header> {
    let leak = m.strip_prefix("kmemleak: ").unwrap_or(m);
    if leak.starts_with("unreferenced object ") {
        return Some(Header::new(Kind::Kmemleak, "kmemleak: unreferenced object"));
    }
    if m.starts_with("INFO: task ") && m.contains(" blocked") && m.contains(" for more than ") {
        return Some(Header::new(Kind::HungTask, "INFO: task hung"));
    }
    if let Some(at) = m.find("NETDEV WATCHDOG: ") {
        let mut h = Header::new(
            Kind::NetdevWatchdog,
            "NETDEV WATCHDOG: transmit queue timed out",
        );
        h.driver = watchdog_driver(&m[..at], &m[at..]);
        return Some(h);
    }
    if let Some(rest) = m.strip_prefix("refcount_t: ") {
        return Some(Header::new(
            Kind::Refcount,
            format!("refcount_t: {}", rest.trim_end_matches('.')),
        ));
    }
    for l in ["list_add corruption", "list_del corruption"] {
        if m.starts_with(l) {
            return Some(Header::new(Kind::ListCorruption, l));
        }
    }
    let rcu = m.strip_prefix("rcu: ").unwrap_or(m);
    if rcu.starts_with("INFO: ")
        && (rcu.contains(" detected stalls") || rcu.contains(" self-detected stall"))
    {
        return Some(Header::new(Kind::RcuStall, "INFO: rcu detected stall"));
    }
    if m.contains("Watchdog detected hard LOCKUP on cpu") {
        return Some(Header::new(
            Kind::HardLockup,
            "Watchdog detected hard LOCKUP",
        ));
    }
    if m.starts_with("unregister_netdevice: waiting for ") && m.contains(" to become free") {
        return Some(Header::new(
            Kind::NetdevRefLeak,
            "unregister_netdevice: waiting for dev to become free",
        ));
    }
    if m.starts_with("INFO: trying to register non-static key") {
        return Some(Header::new(
            Kind::Lockdep,
            "INFO: trying to register non-static key",
        ));
    }
    None
}

/// `rest` after `tag` at the start of `m` or after one `subsystem: ` prefix
/// ("watchdog: BUG: soft lockup").
fn after_prefix<'a>(m: &'a str, tag: &str) -> Option<&'a str> {
    if let Some(r) = m.strip_prefix(tag) {
        return Some(r);
    }
    let (pfx, rest) = m.split_once(": ")?;
    (!pfx.contains(' ') && pfx.len() <= 24)
        .then(|| rest.strip_prefix(tag))
        .flatten()
}

/// `WARNING: …` after the tag: lockdep's reports, the RCU checker, or a WARN.
fn warning(rest: &str) -> Header {
    if LOCKDEP.iter().any(|t| rest.starts_with(t)) {
        return Header::new(Kind::Lockdep, format!("WARNING: {}", rest.trim()));
    }
    if rest.contains("-safe -> ") && rest.contains("-unsafe lock order detected") {
        return Header::new(Kind::Lockdep, format!("WARNING: {}", rest.trim()));
    }
    if rest.ends_with("still has locks held!") {
        return Header::new(Kind::Lockdep, "WARNING: task still has locks held!");
    }
    if rest.starts_with("suspicious RCU usage") {
        return Header::new(Kind::SuspiciousRcuUsage, "WARNING: suspicious RCU usage");
    }
    // Linux ≥ 6.16: "FILE:LINE at FUNC+OFF/SIZE [MOD], CPU#N: COMM/PID" or "at FUNC…".
    // Linux ≤ 6.15: "CPU: N PID: N at FILE:LINE FUNC+OFF/SIZE [MOD]".
    let body = match rest.strip_prefix("CPU: ") {
        Some(r) => r.split_once(" at ").map_or("", |(_, b)| b),
        None => rest,
    };
    let mut h = Header::new(Kind::Warning, "WARNING");
    h.func = symbol_in(body);
    let first = body.split_whitespace().next().unwrap_or("");
    if first.contains(".c:") || first.contains(".h:") || first.contains(".rs:") {
        h.location = Some(first.to_owned());
    }
    if h.func.is_none() && h.location.is_none() {
        h.title = format!("WARNING: {}", words_without_numbers(rest));
    }
    h
}

/// `BUG: …` after the tag.
fn bug(rest: &str) -> Header {
    if let Some(at) = rest.strip_prefix("sleeping function called from invalid context") {
        let mut h = Header::new(
            Kind::SleepInAtomic,
            "BUG: sleeping function called from invalid context",
        );
        h.location = at.trim().strip_prefix("at ").map(str::to_owned);
        return h;
    }
    if rest.starts_with("scheduling while atomic") {
        return Header::new(Kind::SchedulingWhileAtomic, "BUG: scheduling while atomic");
    }
    if rest.starts_with("soft lockup") {
        return Header::new(Kind::SoftLockup, "BUG: soft lockup");
    }
    if rest.starts_with("kernel NULL pointer dereference") {
        return Header::new(Kind::PageFault, "BUG: kernel NULL pointer dereference");
    }
    if rest.starts_with("unable to handle") {
        return Header::new(Kind::PageFault, "BUG: unable to handle page fault");
    }
    for (tag, kind) in [("KASAN: ", Kind::Kasan), ("KFENCE: ", Kind::Kfence)] {
        if let Some(r) = rest.strip_prefix(tag) {
            let (what, func) = match r.split_once(" in ") {
                Some((w, f)) => (w, symbol_in(f)),
                None => (r, None),
            };
            let mut h = Header::new(kind, format!("BUG: {tag}{}", what.trim()));
            h.func = func;
            return h;
        }
    }
    if rest.starts_with("MAX_") && rest.ends_with("too low!") {
        return Header::new(Kind::Lockdep, format!("BUG: {}", rest.trim()));
    }
    Header::new(Kind::Bug, format!("BUG: {}", words_without_numbers(rest)))
}

/// `Oops: …` after the tag.
fn oops(rest: &str) -> Header {
    if rest.starts_with("general protection fault") {
        return Header::new(
            Kind::GeneralProtectionFault,
            "Oops: general protection fault",
        );
    }
    // "invalid opcode: 0000 [#1] SMP NOPTI", "Oops: 0000 [#1] …" (a page fault's).
    let what = rest.split(':').next().unwrap_or("").trim();
    if what.is_empty() || what == "Oops" || what.chars().all(|c| c.is_ascii_hexdigit()) {
        Header::new(Kind::Oops, "Oops")
    } else {
        Header::new(Kind::Oops, format!("Oops: {what}"))
    }
}

/// `UBSAN: REASON in FILE:LINE:COL`.
fn ubsan(rest: &str) -> Header {
    let (reason, loc) = match rest.split_once(" in ") {
        Some((r, l)) => (r.trim(), Some(l.trim().to_owned())),
        None => (rest.trim(), None),
    };
    let mut h = Header::new(Kind::Ubsan, format!("UBSAN: {reason}"));
    h.location = loc;
    h
}

/// The driver of a NETDEV WATCHDOG line: netdev_crit()'s "DRIVER BUS-ID IFACE: " prefix
/// (Linux ≥ 6.8), or the older "NETDEV WATCHDOG: IFACE (DRIVER): …".
fn watchdog_driver(prefix: &str, rest: &str) -> Option<String> {
    if let Some(d) = prefix.split_whitespace().next() {
        return Some(d.to_owned());
    }
    let open = rest.find(" (")?;
    let close = rest[open..].find("):")?;
    Some(rest[open + 2..open + close].to_owned())
}

/// The words of `s` that hold no digit (PIDs, addresses, CPU numbers, durations), and
/// without the trailing punctuation of a sentence.
fn words_without_numbers(s: &str) -> String {
    s.split_whitespace()
        .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(['.', ':', ','])
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(msg: &str) -> Header {
        classify(msg).unwrap_or_else(|| panic!("no header: {msg}"))
    }

    #[test]
    fn warnings_old_and_new() {
        let w = h("WARNING: drivers/net/ethernet/intel/igb/igb_main.c:6533 at igb_xmit_frame_ring+0x3b/0x990 [igb], CPU#0: ping/412");
        assert_eq!((w.kind, w.title.as_str()), (Kind::Warning, "WARNING"));
        assert_eq!(
            w.location.as_deref(),
            Some("drivers/net/ethernet/intel/igb/igb_main.c:6533")
        );
        let f = w.func.unwrap();
        assert_eq!(
            (f.func.as_str(), f.module.as_deref()),
            ("igb_xmit_frame_ring", Some("igb"))
        );
        let w = h("WARNING: CPU: 1 PID: 0 at drivers/net/ethernet/intel/igb/igb_main.c:6302 igb_xmit_frame_ring+0x3b/0x9c0 [igb]");
        assert_eq!(
            w.location.as_deref(),
            Some("drivers/net/ethernet/intel/igb/igb_main.c:6302")
        );
        assert_eq!(w.func.unwrap().func, "igb_xmit_frame_ring");
        let w = h("WARNING: at foo_bar+0x1/0x10, CPU#1: kworker/1:0/15");
        assert_eq!(
            (w.func.unwrap().func.as_str(), w.location),
            ("foo_bar", None)
        );
        let w = h("WARNING: stack recursion on stack type 4");
        assert_eq!(w.title, "WARNING: stack recursion on stack type");
    }

    #[test]
    fn lockdep_and_rcu_titles() {
        let l = h("WARNING: possible circular locking dependency detected");
        assert_eq!(
            (l.kind, l.title.as_str()),
            (
                Kind::Lockdep,
                "WARNING: possible circular locking dependency detected"
            )
        );
        assert_eq!(h("WARNING: inconsistent lock state").kind, Kind::Lockdep);
        assert_eq!(
            h("WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected").kind,
            Kind::Lockdep
        );
        assert_eq!(
            h("WARNING: ip/688 still has locks held!").title,
            "WARNING: task still has locks held!"
        );
        assert_eq!(h("BUG: MAX_LOCKDEP_KEYS too low!").kind, Kind::Lockdep);
        assert_eq!(
            h("WARNING: suspicious RCU usage").kind,
            Kind::SuspiciousRcuUsage
        );
    }

    #[test]
    fn bugs() {
        let s =
            h("BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580");
        assert_eq!(s.kind, Kind::SleepInAtomic);
        assert_eq!(s.location.as_deref(), Some("kernel/locking/mutex.c:580"));
        assert_eq!(
            h("BUG: scheduling while atomic: ethtool/690/0x00000002").title,
            "BUG: scheduling while atomic"
        );
        assert_eq!(
            h("watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [kworker/0:1:14]").kind,
            Kind::SoftLockup
        );
        assert_eq!(
            h("BUG: kernel NULL pointer dereference, address: 0000000000000008").kind,
            Kind::PageFault
        );
        assert_eq!(
            h("BUG: unable to handle page fault for address: ffffc90000a3c000").title,
            "BUG: unable to handle page fault"
        );
        let k = h("BUG: KASAN: slab-use-after-free in igb_clean_tx_irq+0x1b2c/0x1d40 [igb]");
        assert_eq!(
            (k.kind, k.title.as_str()),
            (Kind::Kasan, "BUG: KASAN: slab-use-after-free")
        );
        assert_eq!(k.func.unwrap().module.as_deref(), Some("igb"));
        let k = h("BUG: KFENCE: use-after-free read in ixgbe_clean_rx_irq+0x8e1/0xbd0 [ixgbe]");
        assert_eq!(
            (k.kind, k.title.as_str()),
            (Kind::Kfence, "BUG: KFENCE: use-after-free read")
        );
        assert_eq!(
            h("BUG: Bad page state in process ip  pfn:0a6c3").title,
            "BUG: Bad page state in process ip"
        );
        let b = h("kernel BUG at lib/list_debug.c:56!");
        assert_eq!(
            (b.kind, b.location.as_deref()),
            (Kind::KernelBug, Some("lib/list_debug.c:56"))
        );
    }

    #[test]
    fn oopses_panics_and_the_rest() {
        assert_eq!(h("Oops: general protection fault, probably for non-canonical address 0xdead000000000122: 0000 [#1] SMP NOPTI").kind, Kind::GeneralProtectionFault);
        assert_eq!(
            h("Oops: invalid opcode: 0000 [#1] SMP NOPTI").title,
            "Oops: invalid opcode"
        );
        assert_eq!(h("Oops: Oops: 0000 [#1] SMP NOPTI").title, "Oops");
        assert_eq!(
            h("Kernel panic - not syncing: Fatal exception in interrupt").title,
            "Kernel panic - not syncing: Fatal exception in interrupt"
        );
        assert_eq!(
            h("Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009").title,
            "Kernel panic - not syncing: Attempted to kill init!"
        );
        let u = h("UBSAN: array-index-out-of-bounds in drivers/net/ethernet/intel/ixgbe/ixgbe_lib.c:897:20");
        assert_eq!(u.title, "UBSAN: array-index-out-of-bounds");
        assert_eq!(
            u.location.as_deref(),
            Some("drivers/net/ethernet/intel/ixgbe/ixgbe_lib.c:897:20")
        );
        assert_eq!(
            h("kmemleak: unreferenced object 0xffff88800b3f5800 (size 1024):").kind,
            Kind::Kmemleak
        );
        assert_eq!(
            h("unreferenced object (percpu) 0x0000607f (size 8):").kind,
            Kind::Kmemleak
        );
        assert_eq!(
            h("INFO: task ethtool:702 blocked for more than 122 seconds.").kind,
            Kind::HungTask
        );
        assert_eq!(
            h("INFO: task kworker/0:1:9 blocked in I/O wait for more than 120 seconds.").kind,
            Kind::HungTask
        );
        assert!(classify(
            "INFO: task ethtool:702 is blocked on a mutex likely owned by task kworker/0:2:88."
        )
        .is_none());
        let w = h(
            "igb 0000:01:00.0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5120 ms",
        );
        assert_eq!(
            (w.kind, w.driver.as_deref()),
            (Kind::NetdevWatchdog, Some("igb"))
        );
        let w = h("NETDEV WATCHDOG: eth0 (ixgbe): transmit queue 2 timed out 5376 ms");
        assert_eq!(w.driver.as_deref(), Some("ixgbe"));
        assert_eq!(
            h("refcount_t: underflow; use-after-free.").title,
            "refcount_t: underflow; use-after-free"
        );
        assert_eq!(
            h("list_del corruption, ffff88800b7c2e40->next is LIST_POISON1 (dead000000000100)")
                .title,
            "list_del corruption"
        );
        assert_eq!(
            h("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:").kind,
            Kind::RcuStall
        );
        assert_eq!(
            h("rcu: INFO: rcu_sched self-detected stall on CPU").kind,
            Kind::RcuStall
        );
        assert_eq!(
            h("unregister_netdevice: waiting for eth0 to become free. Usage count = 2").kind,
            Kind::NetdevRefLeak
        );
        for quiet in [
            "igb 0000:01:00.0 eth0: Reset adapter",
            "in_atomic(): 0, irqs_disabled(): 0",
            "Call Trace:",
            "kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
        ] {
            assert!(classify(quiet).is_none(), "{quiet}");
        }
    }
}
