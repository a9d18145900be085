// SPDX-License-Identifier: Apache-2.0
//! Guest instructions as the ruler: under TCG, nicemu's QEMU plugin
//! ([`nicemu_tcg_plugin`]) counts what the guest executes inside *windows* that scenarios
//! open around their measured work (`nicemu_window_begin NAME` … `nicemu_window_end` in
//! the guest, which run `/bin/nicemu-mark`). After the boot the counts are named with the
//! guest's own kallsyms (handed to the plugin once the drivers are loaded), sorted into
//! functions, modules and time-driven buckets, and divided by the units of work the
//! scenario did in the window ([`Scenario::cost_unit`]): kernel instructions per message,
//! a named function's inclusive instructions per transaction, calls per packet.
//!
//! Counting is on by default under TCG (`--param cost=auto`), off with `--param cost=0`.
//! Guests counted boot with `nokaslr` (the kernel at its link address, so symbols and
//! blocks agree across boots) and `cryptomgr.notests` (no self-tests running into the
//! first window).

pub mod classify;
pub mod device;
pub mod gate;
pub mod metrics;
pub mod plugin;
pub mod window;

use std::path::PathBuf;

use nicemu_tcg_plugin::format::{Output, Symbols};

use crate::error::{Error, Result};
use crate::params::Params;
use crate::scenario::{Console, Scenario, ScenarioResult};
use crate::vm::accel::Accel;
use crate::vm::run_dir::RunDir;
use metrics::Selection;
use window::WindowCost;

/// Kernel command-line words of a counted boot.
pub const APPEND: &str = "nokaslr cryptomgr.notests";
/// The vCPU model of a counted boot: QEMU's default (qemu64) with RDRAND, which TCG
/// emulates, so the kernel's random number generator is ready at boot. Without it the
/// guest gathers entropy for minutes: `try_to_generate_entropy` spins through
/// `schedule()` and timers while a reader waits, measured here at ~9 200 time-driven
/// instructions (and ~5 000 in `__schedule`) per message of a UDP_STREAM window.
pub const CPU: &str = "qemu64,+rdrand";
/// The plugin's copy in the run directory (QEMU may run chrooted: it loads it from there).
pub const PLUGIN_IN_RUN: &str = "nicemu-tcg-plugin.so";
/// The plugin's output in a cell directory.
pub const OUT_FILE: &str = "cost.txt";
/// The guest's kallsyms in a cell directory, as the plugin saved them.
pub const KSYMS_FILE: &str = "kallsyms.txt";

/// Shell run once the drivers are loaded: hands the kernel's symbols to the plugin (the
/// configuration marker) and turns the window helpers on.
pub const PRELUDE: &str = "NICEMU_COST=1\n\
/bin/nicemu-mark 0 < /proc/kallsyms\n\
echo \"@@NICEMU init cost_ksyms_rc=$?\"\n";

/// [`PRELUDE`], and for a nicemu device the device side of every window
/// ([`device`]: nicemu's counters read at the window's edges).
pub fn prelude(nicemu_device: bool) -> String {
    let mut s = PRELUDE.to_owned();
    if nicemu_device {
        s.push_str("NICEMU_DEVSTATS=1\n");
    }
    s
}

/// A run's counting: the plugin in the run directory and what to report.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The plugin as QEMU sees it.
    plugin: String,
    /// Named functions, calls and the top table.
    pub selection: Selection,
}

fn list(p: &Params, key: &str) -> Vec<String> {
    p.get(key)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether a run counts, per `--param cost` (`auto`: unless `accel` is KVM), and then
/// the plugin to load (found, or built, before anything of the run is created).
pub fn plugin_for(p: &Params, accel: Accel) -> Result<Option<PathBuf>> {
    let on = match p.get("cost").as_str() {
        "0" | "off" => false,
        "1" | "on" => true,
        "auto" => accel != Accel::Kvm,
        other => {
            return Err(Error::Usage(format!(
                "--param cost={other}: expected auto, 1 or 0"
            )))
        }
    };
    if on {
        plugin::find().map(Some)
    } else {
        Ok(None)
    }
}

impl Setup {
    /// The run's counting with plugin `so`, copied into the run directory `dir`.
    pub fn new(so: &std::path::Path, p: &Params, dir: &RunDir) -> Result<Setup> {
        let (host, guest) = dir.file(PLUGIN_IN_RUN);
        std::fs::copy(so, &host).map_err(|e| Error::io(&host, e))?;
        Ok(Setup {
            plugin: guest,
            selection: Selection {
                named: list(p, "cost.fns"),
                calls: list(p, "cost.calls"),
                top_share: p.num("cost.top_share") / 100.0,
                top: p.num("cost.top").max(0.0) as usize,
                model: metrics::Model {
                    ghz: p.num("cost.ghz"),
                    ipc: p.num("cost.ipc"),
                    mmio_read_ns: p.num("cost.mmio_read_ns"),
                },
            },
        })
    }

    /// QEMU's `-plugin` argument for a cell in `d` whose guest loads `modules`: named
    /// functions of modules it does not load are left out.
    pub fn qemu_args(&self, d: &RunDir, modules: &[String]) -> Vec<String> {
        let (_, out) = d.file(OUT_FILE);
        let (_, ksyms) = d.file(KSYMS_FILE);
        let mut arg = format!("{},out={out},ksyms={ksyms}", self.plugin);
        for f in &self.selection.named {
            let loaded = match f.split_once(':') {
                Some((m, _)) => modules.iter().any(|x| x == m),
                None => true,
            };
            if loaded {
                arg.push_str(&format!(",fn={f}"));
            }
        }
        vec!["-cpu".into(), CPU.into(), "-plugin".into(), arg]
    }
}

/// What counting found in one cell, besides the metrics it added.
#[derive(Debug, Default)]
pub struct Evaluated {
    /// Windows found and attached to their scenario.
    pub windows: usize,
    /// What went wrong (plugin errors, windows without a unit, missing files).
    pub notes: Vec<String>,
}

/// Reads the plugin's output and the guest's symbols in cell directory `host_dir`, and
/// puts every window's per-unit figures into the result of the scenario that opened it.
pub fn evaluate(
    host_dir: &std::path::Path,
    console: &Console,
    scenarios: &[Box<dyn Scenario>],
    results: &mut [ScenarioResult],
    sel: &Selection,
) -> Evaluated {
    let mut ev = Evaluated::default();
    let read = |name: &str| -> std::result::Result<String, String> {
        let p: PathBuf = host_dir.join(name);
        std::fs::read_to_string(&p).map_err(|e| format!("cost: cannot read {}: {e}", p.display()))
    };
    let out = match read(OUT_FILE)
        .and_then(|t| Output::parse(&t).map_err(|e| format!("cost: {OUT_FILE}: {e}")))
    {
        Ok(o) => o,
        Err(e) => {
            ev.notes.push(e);
            return ev;
        }
    };
    ev.notes
        .extend(out.errors.iter().map(|e| format!("cost: plugin: {e}")));
    let symbols = match read(KSYMS_FILE) {
        Ok(t) => Symbols::parse(&t),
        Err(e) => {
            if !out.windows.is_empty() {
                ev.notes.push(e);
            }
            Symbols::default()
        }
    };
    for w in &out.windows {
        let Some((scen, name)) = owner(console, w.id) else {
            ev.notes
                .push(format!("cost: window {} has no owner on the console", w.id));
            continue;
        };
        let (Some(sc), Some(r)) = (
            scenarios.iter().find(|s| s.name() == scen),
            results.iter_mut().find(|r| r.scenario == scen),
        ) else {
            continue;
        };
        let Some(unit) = sc.cost_unit(&name, r) else {
            ev.notes.push(format!(
                "cost: {scen} window {name}: no units of work to divide by"
            ));
            continue;
        };
        let wc = WindowCost::new(w, &symbols);
        if !wc.named_ready && !sel.named.is_empty() {
            ev.notes.push(format!(
                "cost: {scen} window {name} began before the named functions were instrumented"
            ));
        }
        let dev = console
            .sections
            .get(&scen)
            .map(|s| device::window(s, w.id))
            .unwrap_or_default();
        metrics::insert(
            &mut r.metrics,
            &unit.path,
            metrics::per_unit(&wc, &unit, sel, &dev),
        );
        ev.windows += 1;
    }
    ev
}

/// The (scenario, window name) that opened window `id`: its `window_NAME=ID` line.
fn owner(console: &Console, id: u8) -> Option<(String, String)> {
    let want = id.to_string();
    console.sections.iter().find_map(|(scen, sec)| {
        sec.kv.iter().find_map(|(k, v)| {
            let name = k.strip_prefix("window_")?;
            (*v == want).then(|| (scen.clone(), name.to_owned()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_found_by_their_console_line() {
        let c = Console::parse(
            "@@NICEMU-BEGIN netperf\n@@NICEMU netperf window_UDP_STREAM:1=3\n\
             @@NICEMU-DONE netperf rc=0\n",
        );
        assert_eq!(
            owner(&c, 3),
            Some(("netperf".into(), "UDP_STREAM:1".into()))
        );
        assert_eq!(owner(&c, 4), None);
    }

    /// Every window a scenario opens is closed again, and the measured scenarios of the
    /// seed experiments (netperf, ping, regsweep, hwstamp, qdisc) open one.
    #[test]
    fn scenario_windows_open_and_close_in_pairs() {
        let p = Params::default();
        for name in crate::scenario::NAMES {
            let sc = crate::scenario::by_name(name).unwrap();
            let s = sc.script(&p);
            let (b, e) = (
                s.matches("nicemu_window_begin ").count(),
                s.matches("nicemu_window_end").count(),
            );
            assert_eq!(b, e, "{name}: {s}");
            let measured = ["netperf", "ping", "regsweep", "hwstamp", "qdisc"];
            assert_eq!(b > 0, measured.contains(name), "{name}");
        }
    }

    #[test]
    fn the_plugin_argument_names_files_and_loaded_modules_functions() {
        let s = Setup {
            plugin: "/run/p.so".into(),
            selection: Selection {
                named: vec!["__netdev_pick_tx".into(), "igb:igb_update_stats".into()],
                ..Selection::default()
            },
        };
        let d = RunDir::at("/h/c", "/g/c");
        let a = s.qemu_args(&d, &["igb".into()]);
        assert_eq!(
            a,
            [
                "-cpu",
                CPU,
                "-plugin",
                "/run/p.so,out=/g/c/cost.txt,ksyms=/g/c/kallsyms.txt,fn=__netdev_pick_tx,fn=igb:igb_update_stats"
            ]
        );
        let a = s.qemu_args(&d, &["ixgbe".into()]);
        assert!(!a[3].contains("igb_update_stats"), "{}", a[3]);
    }
}
