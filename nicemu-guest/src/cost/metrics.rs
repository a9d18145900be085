// SPDX-License-Identifier: Apache-2.0
//! A window's counts per unit of work, as the `cost` object of the scenario result that
//! owns the window (`netperf.tests.UDP_STREAM:1.cost.kernel`: kernel instructions per
//! message), and which of those metrics are deterministic.
//!
//! ```text
//! cost.unit, cost.units          what one unit is ("msg") and how many the window did
//! cost.kernel, cost.user         instructions per unit outside time-driven code, all vCPUs
//! cost.cpu.N.kernel / .user      the same on vCPU N
//! cost.modules.M                 the kernel's (M = kernel) or module M's own instructions
//! cost.fn.F.incl / .calls        named function F: inclusive instructions, calls
//! cost.fn.F.per_call             its inclusive instructions per call
//! cost.fn.F.share_pct            its inclusive share of the window's kernel instructions
//! cost.fn.F.timed                time-driven code it ran or that interrupted it on its
//!                                stack (left out of .incl): shown, never a verdict
//! cost.calls.F                   calls of function F
//! cost.self.F                    function F's own instructions (the window's top functions)
//! cost.self_cut                  what a function left out of that table ran at most
//! cost.timed.B, cost.timed.total time-driven code per bucket: shown, never a verdict
//! cost.dev.P.bar_reads / …       nicemu's counters of port P (dut, peer): BAR reads and
//!                                writes, interrupts raised, descriptors processed
//!                                (tx_descs, rx_descs), frames sent and received
//! cost.model.ns / cpu_ns / mmio_ns  the hardware projection (a model, see [`Model`])
//! ```

use serde_json::{json, Map, Value};

use super::device::DevCounts;
use super::window::WindowCost;

/// What one unit of a window's work is and how many the window did.
#[derive(Debug, Clone, PartialEq)]
pub struct CostUnit {
    /// Where in the scenario's metrics the `cost` object goes (`["tests", "TCP_RR"]`).
    pub path: Vec<String>,
    /// Units of work done in the window (messages sent, transactions, sweeps).
    pub units: f64,
    /// What a unit is ("msg", "transaction", "sweep", "frame").
    pub unit: &'static str,
}

/// What the per-unit figures include besides the totals.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Named functions (inclusive counts and calls).
    pub named: Vec<String>,
    /// Functions whose calls are reported.
    pub calls: Vec<String>,
    /// Top functions: at least this share of the kernel instructions…
    pub top_share: f64,
    /// …and at most this many.
    pub top: usize,
    /// The hardware projection's assumptions.
    pub model: Model,
}

/// The hardware projection — a model, not a measurement: time per unit of work ≈
/// instructions ÷ (IPC × clock) + register reads × read latency. It assumes every
/// instruction counted runs at one IPC on one clock (no cache misses, no frequency
/// changes, both ports' guest code on one kind of CPU), that a BAR read stalls the CPU
/// for `mmio_read_ns` (a non-posted PCIe read) and that writes (posted) cost nothing
/// beyond their instructions; time-driven code is left out as it is from the counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    /// CPU clock (GHz).
    pub ghz: f64,
    /// Instructions per cycle.
    pub ipc: f64,
    /// One register read (ns).
    pub mmio_read_ns: f64,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            ghz: 3.0,
            ipc: 1.0,
            mmio_read_ns: 1000.0,
        }
    }
}

impl Model {
    /// The projection's formula and assumptions, printed next to its figures.
    pub fn describe(&self) -> String {
        format!(
            "hardware projection (a model, not a measurement): time per unit ≈ instructions ÷ \
             (IPC × clock) + register reads × read latency, assuming IPC {}, {} GHz, {} ns per \
             BAR read, posted writes free, no cache misses, time-driven code left out \
             (--param cost.ipc=…,cost.ghz=…,cost.mmio_read_ns=…)",
            self.ipc, self.ghz, self.mmio_read_ns
        )
    }

    /// ns of CPU time for `insns` instructions.
    pub fn cpu_ns(&self, insns: f64) -> f64 {
        insns / (self.ipc * self.ghz)
    }
}

/// Rounds per-unit figures to 3 significant decimals (counts per unit are exact
/// fractions; more digits are noise in the JSON).
fn per(n: u64, units: f64) -> f64 {
    (n as f64 / units * 1000.0).round() / 1000.0
}

/// The `cost` object of window `w` over `units` units, with the device side `dev` of the
/// same window (per port).
pub fn per_unit(
    w: &WindowCost,
    u: &CostUnit,
    sel: &Selection,
    dev: &std::collections::BTreeMap<&'static str, DevCounts>,
) -> Value {
    let units = u.units.max(1.0);
    let cpu: Map<String, Value> = (w.vcpus.iter().enumerate())
        .map(|(i, v)| {
            let o = json!({"kernel": per(v.kernel, units), "user": per(v.user, units)});
            (i.to_string(), o)
        })
        .collect();
    let modules: Map<String, Value> = (w.modules.iter())
        .map(|(m, n)| (m.clone(), json!(per(*n, units))))
        .collect();
    let named: Map<String, Value> = (sel.named.iter())
        .filter_map(|f| {
            let incl = *w.inclusive.get(f)?;
            let calls = w.entries.get(f).copied().unwrap_or(0);
            let mut o = json!({"incl": per(incl, units), "calls": per(calls, units)});
            if calls > 0 {
                o["per_call"] = json!(per(incl, calls as f64));
            }
            if w.kernel() > 0 {
                o["share_pct"] = json!(per(incl * 100, w.kernel() as f64));
            }
            let timed = format!("{f}{}", nicemu_tcg_plugin::format::TIMED_SUFFIX);
            if let Some(t) = w.inclusive.get(&timed) {
                o["timed"] = json!(per(*t, units));
            }
            Some((f.clone(), o))
        })
        .collect();
    let calls: Map<String, Value> = (sel.calls.iter())
        .map(|f| {
            (
                f.clone(),
                json!(per(w.entries.get(f).copied().unwrap_or(0), units)),
            )
        })
        .collect();
    let listed = w.top(sel.top_share, sel.top);
    let cut = self_cut(w, sel, &listed);
    let top: Map<String, Value> = (listed.into_iter())
        .map(|(f, n)| (f.to_owned(), json!(per(n, units))))
        .collect();
    let mut timed: Map<String, Value> = (w.timed.iter())
        .map(|(t, n)| (t.key().to_owned(), json!(per(*n, units))))
        .collect();
    timed.insert("total".into(), json!(per(w.timed_total(), units)));
    let mut o = json!({
        "unit": u.unit,
        "units": u.units,
        "kernel": per(w.kernel(), units),
        "user": per(w.user(), units),
        "cpu": cpu,
        "modules": modules,
        "self": top,
        "self_cut": per(cut, units),
        "timed": timed,
    });
    if !named.is_empty() {
        o["fn"] = Value::Object(named);
    }
    if !calls.is_empty() {
        o["calls"] = Value::Object(calls);
    }
    device_and_model(&mut o, w, units, sel.model, dev);
    o
}

/// Adds the device side (`dev.PORT.*` per unit) and the hardware projection (`model.*`)
/// to the `cost` object `o`.
fn device_and_model(
    o: &mut Value,
    w: &WindowCost,
    units: f64,
    m: Model,
    dev: &std::collections::BTreeMap<&'static str, DevCounts>,
) {
    let mut reads = 0;
    if !dev.is_empty() {
        let d: Map<String, Value> = (dev.iter())
            .map(|(port, c)| {
                reads += c.bar_reads;
                let v = json!({
                    "bar_reads": per(c.bar_reads, units),
                    "bar_writes": per(c.bar_writes, units),
                    "irqs": per(c.irqs, units),
                    "tx_frames": per(c.tx_frames, units),
                    "rx_frames": per(c.rx_frames, units),
                    "tx_descs": per(c.tx_descs, units),
                    "rx_descs": per(c.rx_descs, units),
                });
                ((*port).to_owned(), v)
            })
            .collect();
        o["dev"] = Value::Object(d);
    }
    let cpu_ns = m.cpu_ns((w.kernel() + w.user()) as f64) / units;
    let mmio_ns = reads as f64 * m.mmio_read_ns / units;
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    o["model"] = json!({
        "cpu_ns": r(cpu_ns),
        "mmio_ns": r(mmio_ns),
        "ns": r(cpu_ns + mmio_ns),
    });
}

/// What a function left out of a window's `self` table ran at most: the table keeps the
/// functions with at least `top_share` of the kernel's instructions, at most `top` of them,
/// so one it does not list ran fewer instructions than the share's floor, or no more than
/// the last one listed when the table was full. Reported as `cost.self_cut` so that an
/// A/B does not read a function missing from one side's table as one that did not run.
fn self_cut(w: &WindowCost, sel: &Selection, listed: &[(&str, u64)]) -> u64 {
    let floor = (w.kernel() as f64 * sel.top_share) as u64;
    match listed.last() {
        Some(&(_, last)) if listed.len() == sel.top => floor.max(last),
        _ => floor,
    }
}

/// True for a flattened metric key holding a deterministic instruction count per unit
/// (under a `cost` segment, not the time-driven buckets, a named function's time-driven
/// part nor the unit count): these are judged by
/// [`crate::stats::verdict::compare_counts`].
pub fn is_count(key: &str) -> bool {
    let segs: Vec<&str> = key.split('.').collect();
    match segs.iter().position(|s| *s == "cost") {
        Some(i) => {
            let fn_timed = segs.get(i + 1) == Some(&"fn") && segs.last() == Some(&"timed");
            !fn_timed
                && !matches!(
                    segs.get(i + 1),
                    None | Some(&"timed" | &"units" | &"unit" | &"self_cut")
                )
        }
        None => false,
    }
}

/// Puts `cost` at `path` (creating objects on the way) in `metrics`.
pub fn insert(
    metrics: &mut std::collections::BTreeMap<String, Value>,
    path: &[String],
    cost: Value,
) {
    let Some((first, rest)) = path.split_first() else {
        metrics.insert("cost".into(), cost);
        return;
    };
    let mut v = metrics.remove(first).unwrap_or(Value::Null);
    set_at(&mut v, rest, cost);
    metrics.insert(first.clone(), v);
}

fn set_at(v: &mut Value, path: &[String], cost: Value) {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    if let Value::Object(o) = v {
        match path.split_first() {
            None => {
                o.insert("cost".into(), cost);
            }
            Some((p, rest)) => set_at(o.entry(p.clone()).or_insert(Value::Null), rest, cost),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::classify::Timed;
    use crate::cost::window::VcpuCost;

    fn window() -> WindowCost {
        let mut w = WindowCost {
            vcpus: vec![
                VcpuCost {
                    user: 1000,
                    kernel: 30_000,
                    timed: 500,
                },
                VcpuCost {
                    user: 0,
                    kernel: 10_000,
                    timed: 0,
                },
            ],
            named_ready: true,
            ..WindowCost::default()
        };
        w.timed.insert(Timed::Spin, 500);
        w.modules.insert("kernel".into(), 36_000);
        w.modules.insert("igb".into(), 4_000);
        w.functions.insert("__dev_queue_xmit".into(), 20_000);
        w.functions.insert("igb:igb_xmit_frame_ring".into(), 4_000);
        w.functions.insert("rare".into(), 10);
        w.entries.insert("__netif_reschedule".into(), 5);
        w.entries.insert("__netdev_pick_tx".into(), 100);
        w.inclusive.insert("__netdev_pick_tx".into(), 7_000);
        w.inclusive.insert("__netdev_pick_tx+timed".into(), 300);
        w
    }

    #[test]
    fn figures_are_per_unit_with_named_functions_calls_and_top() {
        let sel = Selection {
            named: vec!["__netdev_pick_tx".into(), "not_counted".into()],
            calls: vec!["__netif_reschedule".into(), "wakeup_softirqd".into()],
            top_share: 0.01,
            top: 10,
            model: Model {
                ghz: 2.0,
                ipc: 1.0,
                mmio_read_ns: 1000.0,
            },
        };
        let u = CostUnit {
            path: vec![],
            units: 100.0,
            unit: "msg",
        };
        let mut dev = std::collections::BTreeMap::new();
        dev.insert(
            "dut",
            DevCounts {
                bar_reads: 50,
                bar_writes: 300,
                irqs: 20,
                tx_frames: 100,
                rx_frames: 0,
                tx_descs: 200,
                rx_descs: 0,
            },
        );
        let c = per_unit(&window(), &u, &sel, &dev);
        assert_eq!(c["unit"], "msg");
        assert_eq!(c["kernel"], 400.0);
        assert_eq!(c["user"], 10.0);
        assert_eq!(c["cpu"]["1"]["kernel"], 100.0);
        assert_eq!(c["modules"]["igb"], 40.0);
        assert_eq!(c["fn"]["__netdev_pick_tx"]["incl"], 70.0);
        assert_eq!(c["fn"]["__netdev_pick_tx"]["calls"], 1.0);
        assert_eq!(c["fn"]["__netdev_pick_tx"]["per_call"], 70.0);
        assert_eq!(c["fn"]["__netdev_pick_tx"]["share_pct"], 17.5);
        assert_eq!(c["fn"]["__netdev_pick_tx"]["timed"], 3.0);
        assert!(c["fn"].get("not_counted").is_none());
        assert_eq!(c["calls"]["__netif_reschedule"], 0.05);
        assert_eq!(c["calls"]["wakeup_softirqd"], 0.0);
        assert_eq!(c["self"]["__dev_queue_xmit"], 200.0);
        assert!(c["self"].get("rare").is_none(), "below 1 %");
        assert_eq!(
            c["self_cut"], 4.0,
            "1 % of the window's 40 000 kernel instructions"
        );
        assert_eq!(c["timed"]["spin"], 5.0);
        assert_eq!(c["timed"]["total"], 5.0);
        assert_eq!(c["dev"]["dut"]["bar_reads"], 0.5);
        assert_eq!(c["dev"]["dut"]["bar_writes"], 3.0);
        assert_eq!(c["dev"]["dut"]["irqs"], 0.2);
        assert_eq!(c["dev"]["dut"]["tx_descs"], 2.0);
        // 410 instructions per msg at IPC 1 × 2 GHz, 0.5 reads × 1 µs.
        assert_eq!(c["model"]["cpu_ns"], 205.0);
        assert_eq!(c["model"]["mmio_ns"], 500.0);
        assert_eq!(c["model"]["ns"], 705.0);
        assert!(c.get("fn").is_some());
        let c = per_unit(&window(), &u, &sel, &std::collections::BTreeMap::new());
        assert!(c.get("dev").is_none());
        assert_eq!(c["model"]["mmio_ns"], 0.0);
    }

    #[test]
    fn the_model_states_its_assumptions() {
        let d = Model::default().describe();
        for w in [
            "a model",
            "IPC 1",
            "3 GHz",
            "1000 ns per",
            "cost.mmio_read_ns",
        ] {
            assert!(d.contains(w), "{w}: {d}");
        }
    }

    #[test]
    fn count_metrics_are_the_cost_figures_but_time_driven_and_unit_counts() {
        assert!(is_count("tests.UDP_STREAM:1.cost.kernel"));
        assert!(is_count("cost.fn.__netdev_pick_tx.incl"));
        assert!(is_count("sweep.cost.self.igb:igb_update_stats"));
        assert!(!is_count("tests.UDP_STREAM:1.cost.timed.spin"));
        assert!(!is_count("sweep.cost.fn.igb:igb_update_stats.timed"));
        assert!(is_count("sweep.cost.fn.igb:igb_update_stats.per_call"));
        assert!(!is_count("tests.UDP_STREAM:1.cost.units"));
        assert!(!is_count("tests.UDP_STREAM:1.msgs_per_s_sent"));
        assert!(!is_count("cost"));
    }

    #[test]
    fn the_cost_object_goes_where_the_scenario_keeps_the_work() {
        let mut m = std::collections::BTreeMap::new();
        m.insert("tests".to_owned(), json!({"TCP_RR": {"throughput": 5}}));
        insert(
            &mut m,
            &["tests".into(), "TCP_RR".into()],
            json!({"kernel": 1}),
        );
        assert_eq!(m["tests"]["TCP_RR"]["throughput"], 5);
        assert_eq!(m["tests"]["TCP_RR"]["cost"]["kernel"], 1);
        insert(&mut m, &[], json!({"kernel": 2}));
        assert_eq!(m["cost"]["kernel"], 2);
        insert(&mut m, &["sweep".into()], json!({"kernel": 3}));
        assert_eq!(m["sweep"]["cost"]["kernel"], 3);
    }
}
