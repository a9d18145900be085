// SPDX-License-Identifier: Apache-2.0
//! `regsweep`: what the emulated device contributes to a statistics update. The harness
//! traces the device's statistics registers (0x4000–0x4fff, 82576 datasheet §8.19) in
//! nicemu while the guest runs `ethtool -S` (igb_get_ethtool_stats → igb_update_stats)
//! `regsweep.reads` times, then reports per sweep the duration from the first to the last
//! statistics read and the gap between consecutive reads — the register-read round trip
//! of this run (guest → QEMU → vfio-user → nicemu and back). `hw_sweep_us` scales the sweep
//! to hardware at `regsweep.hw_read_us` per read (an 82576 read is about 1 µs).
//! Needs host-side actions, so nicemu devices only.

use serde_json::json;

use super::{num, Scenario, ScenarioResult, Section, Target, NEED_IFACE};
use crate::cost::metrics::CostUnit;
use crate::params::Params;

/// Statistics sweep scenario.
#[derive(Debug)]
pub struct Regsweep;

impl Scenario for Regsweep {
    fn name(&self) -> &'static str {
        "regsweep"
    }

    fn needs_host(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        p.num("regsweep.reads") as u64 * 3 + 30
    }

    fn script(&self, p: &Params) -> String {
        format!(
            "{NEED_IFACE}nicemu_kv hw_read_us {}\n\
             nicemu_window_begin sweep\n/usr/sbin/ethtool -S \"$IFACE\" >/dev/null 2>&1\nnicemu_window_end\n\
             nicemu_host tr_on ctl trace DUT on --filter 0x4000-0x4fff --file regsweep.log\n\
             i=0; while [ $i -lt {} ]; do /usr/sbin/ethtool -S \"$IFACE\" >/dev/null 2>&1; sleep 0.3; i=$((i+1)); done\n\
             nicemu_host tr_off ctl trace DUT off\n\
             nicemu_host sw regsweep regsweep.log\ntrue",
            p.num("regsweep.hw_read_us"),
            p.num("regsweep.reads").max(1.0) as u64
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        for tag in ["tr_on", "sw"] {
            if s.get(&format!("host_{tag}_rc")) != Some("0") {
                let out: Vec<&str> = s.lines(&format!("host_{tag}")).collect();
                r.check_failed(
                    &format!("host action {tag}"),
                    format!("host action {tag} failed: {}", out.join(" | ")),
                );
                return r;
            }
            r.check_passed(&format!("host action {tag}"));
        }
        let kv: Vec<(&str, f64)> = s
            .lines("host_sw")
            .filter_map(|l| l.split_once('='))
            .filter_map(|(k, v)| num(v).map(|v| (k, v)))
            .collect();
        let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| *v);
        let (Some(sweep), Some(read), Some(reads)) =
            (get("sweep_us"), get("read_us"), get("reads_per_sweep"))
        else {
            r.check_failed(
                "sweep report",
                "the sweep report lacks sweep_us / read_us / reads_per_sweep",
            );
            return r;
        };
        r.check_passed("sweep report");
        for (k, v) in &kv {
            r.metric(k, json!(v));
        }
        let hw = s.get("hw_read_us").and_then(num).unwrap_or(1.0);
        r.metric("hw_sweep_us", json!(super::round(reads * hw, 1)));
        r.summary = Some(format!(
            "sweep {sweep:.0} µs ({reads:.0} reads), read {read:.1} µs"
        ));
        r
    }

    /// One `ethtool -S` (one statistics sweep, with the tool's own start and exit) in a
    /// window before the traced ones.
    fn cost_unit(&self, window: &str, _r: &ScenarioResult) -> Option<CostUnit> {
        (window == "sweep").then(|| CostUnit {
            path: Vec::new(),
            units: 1.0,
            unit: "sweep",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Console;

    #[test]
    fn parses_the_host_report() {
        let text = "@@NICEMU-BEGIN regsweep\n\
            @@NICEMU regsweep iface=eth0\n\
            @@NICEMU regsweep host_tr_on_rc=0\n\
            @@NICEMU-OUT regsweep host_sw sweeps=12\n\
            @@NICEMU-OUT regsweep host_sw reads_per_sweep=74\n\
            @@NICEMU-OUT regsweep host_sw sweep_us=4810.5\n\
            @@NICEMU-OUT regsweep host_sw sweep_max_us=9000.0\n\
            @@NICEMU-OUT regsweep host_sw read_us=61.20\n\
            @@NICEMU regsweep host_sw_rc=0\n\
            @@NICEMU-DONE regsweep rc=0\n";
        let c = Console::parse(text);
        let t = Target::for_test("igb", None);
        let r = Regsweep.parse(&c.sections["regsweep"], &t);
        assert_eq!(r.status, crate::scenario::Status::Pass, "{r:?}");
        assert_eq!(r.metrics["read_us"], json!(61.2));
        assert_eq!(r.metrics["hw_sweep_us"], json!(74.0));
        assert_eq!(
            r.summary.as_deref(),
            Some("sweep 4810 µs (74 reads), read 61.2 µs")
        );
        let bad = Console::parse(
            "@@NICEMU-BEGIN regsweep\n@@NICEMU regsweep host_tr_on_rc=0\n@@NICEMU-OUT regsweep host_sw no statistics sweep\n@@NICEMU regsweep host_sw_rc=1\n@@NICEMU-DONE regsweep rc=0\n",
        );
        let r = Regsweep.parse(&bad.sections["regsweep"], &t);
        assert_eq!(r.status, crate::scenario::Status::Fail);
        assert!(r.reason.unwrap().contains("no statistics sweep"));
    }
}
