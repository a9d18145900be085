// SPDX-License-Identifier: Apache-2.0
//! `preemptoff`: the longest span with preemption or interrupts off, from the kernel's
//! `preemptirqsoff` tracer (CONFIG_PREEMPT_TRACER + CONFIG_IRQSOFF_TRACER; Debian's kernel
//! has neither, a kernel built with the harness's config fragment has both). Two phases of
//! `preemptoff.secs` each: idle (the baseline: timers, the watchdog's own statistics update
//! every 2 s), then with an `ethtool -S` reader every 0.2 s (igb_get_ethtool_stats →
//! igb_update_stats). `tracing_max_latency` is read after each, with the functions where the
//! longest span started and ended. A kernel without the tracer is skipped, saying so.

use serde_json::json;

use super::{num, Scenario, ScenarioResult, Section, Target, NEED_IFACE};
use crate::params::Params;

/// Preemption-off span scenario.
#[derive(Debug)]
pub struct Preemptoff;

/// Shell for one phase `tag`: reset the maximum, trace for `secs` with `reader` running,
/// print the maximum and the header of the longest span.
fn phase(tag: &str, secs: u64, reader: bool) -> String {
    let load = if reader {
        format!(
            "( e=$(( $(cut -d. -f1 /proc/uptime) + {secs} )); while [ $(cut -d. -f1 /proc/uptime) -lt $e ]; do \
             /usr/sbin/ethtool -S \"$IFACE\" >/dev/null 2>&1; sleep 0.2; done )\n"
        )
    } else {
        format!("sleep {secs}\n")
    };
    format!(
        "echo 0 > $T/tracing_max_latency; echo 1 > $T/tracing_on\n{load}echo 0 > $T/tracing_on\n\
         nicemu_kv {tag}_max_us \"$(cat $T/tracing_max_latency)\"\n\
         nicemu_out {tag}_trace sh -c \"grep -E 'started at|ended at|latency:' $T/trace | head -4\"\n"
    )
}

impl Scenario for Preemptoff {
    fn name(&self) -> &'static str {
        "preemptoff"
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        2 * p.num("preemptoff.secs") as u64 + 20
    }

    fn script(&self, p: &Params) -> String {
        let secs = p.num("preemptoff.secs").max(1.0) as u64;
        format!(
            "{NEED_IFACE}T=/sys/kernel/tracing\n\
             [ -e $T/available_tracers ] || mount -t tracefs nodev $T 2>/dev/null\n\
             if ! grep -qw preemptirqsoff $T/available_tracers 2>/dev/null; then \
             nicemu_kv tracer none; nicemu_kv tracers \"$(cat $T/available_tracers 2>/dev/null)\"; exit 0; fi\n\
             echo 0 > $T/tracing_on; echo preemptirqsoff > $T/current_tracer\n{}{}\
             echo nop > $T/current_tracer\ntrue",
            phase("idle", secs, false),
            phase("reader", secs, true)
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("tracer") == Some("none") {
            r.set_skip(format!(
                "the kernel has no preemptirqsoff tracer (available: {}); use a kernel built \
                 with CONFIG_PREEMPT_TRACER and CONFIG_IRQSOFF_TRACER (e.g. --kernel sid-built)",
                s.get("tracers").filter(|t| !t.is_empty()).unwrap_or("none")
            ));
            return r;
        }
        let (Some(idle), Some(reader)) = (
            s.get("idle_max_us").and_then(num),
            s.get("reader_max_us").and_then(num),
        ) else {
            r.check_failed(
                "tracing_max_latency read",
                "tracing_max_latency was not read",
            );
            return r;
        };
        r.check_passed("tracing_max_latency read");
        r.metric("idle_max_us", json!(idle));
        r.metric("reader_max_us", json!(reader));
        let where_ = |tag: &str| -> Vec<String> {
            s.lines(&format!("{tag}_trace"))
                .map(|l| l.trim_start_matches(['#', ' ']).trim().to_owned())
                .collect()
        };
        r.metric("reader_span", json!(where_("reader")));
        r.metric("idle_span", json!(where_("idle")));
        r.summary = Some(format!(
            "longest preempt/irq-off span {reader:.0} µs with the reader, {idle:.0} µs idle"
        ));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Console, Status};

    fn target() -> Target {
        Target::for_test("igb", None)
    }

    #[test]
    fn maxima_and_span_ends() {
        let c = Console::parse(
            "@@NICEMU-BEGIN preemptoff\n@@NICEMU preemptoff iface=eth0\n\
             @@NICEMU preemptoff idle_max_us=310\n\
             @@NICEMU-OUT preemptoff idle_trace # latency: 310 us, #4/4, CPU#0 | (M:lazy VP:0, KP:0, SP:0 HP:0 #P:2)\n\
             @@NICEMU preemptoff reader_max_us=4521\n\
             @@NICEMU-OUT preemptoff reader_trace #  => started at: igb_update_stats\n\
             @@NICEMU-OUT preemptoff reader_trace #  => ended at:   _raw_spin_unlock\n\
             @@NICEMU-DONE preemptoff rc=0\n",
        );
        let r = Preemptoff.parse(&c.sections["preemptoff"], &target());
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(r.metrics["reader_max_us"], json!(4521.0));
        assert_eq!(
            r.metrics["reader_span"][0],
            "=> started at: igb_update_stats"
        );
        assert!(r
            .summary
            .unwrap()
            .starts_with("longest preempt/irq-off span 4521 µs"));
    }

    #[test]
    fn debian_kernel_without_the_tracer_is_skipped() {
        let c = Console::parse(
            "@@NICEMU-BEGIN preemptoff\n@@NICEMU preemptoff tracer=none\n\
             @@NICEMU preemptoff tracers=function_graph function nop\n@@NICEMU-DONE preemptoff rc=0\n",
        );
        let r = Preemptoff.parse(&c.sections["preemptoff"], &target());
        assert_eq!(r.status, Status::Skip);
        assert!(r
            .reason
            .unwrap()
            .contains("available: function_graph function nop"));
    }

    #[test]
    fn the_phase_script_runs_in_a_real_shell() {
        // The reader loop must end after its seconds (a fake ethtool on PATH is not
        // needed: the path is absolute and its failure is ignored).
        let body = phase("reader", 1, true);
        let script = format!("T=$(mktemp -d); touch $T/trace; nicemu_kv() {{ echo \"$1=$2\"; }}; nicemu_out() {{ shift; \"$@\"; }}; IFACE=none\n{body}");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("reader_max_us="), "{text}");
    }
}
