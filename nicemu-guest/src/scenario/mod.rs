// SPDX-License-Identifier: Apache-2.0
//! Scenarios: each is a guest shell snippet plus a parser that turns the marked console
//! output into a structured result.
//!
//! Console protocol (one line each, found anywhere in a line so console noise before it
//! does not hide it):
//! - `@@NICEMU-BEGIN <scenario>` / `@@NICEMU-DONE <scenario> rc=<n>` bracket a scenario,
//! - `@@NICEMU <scenario> <key>=<value>` is a key/value result,
//! - `@@NICEMU-OUT <scenario> <tag> <text>` is one line of a tool's output,
//! - `@@NICEMU-BOOT`, `@@NICEMU-END` mark userspace start and the end of all scenarios.
//!
//! Before the scenarios the `net` setup (see [`setup`]) finds the device under test
//! (`$IFACE`) and, with a peer, moves the peer port (`$PEER_IFACE`) into network namespace
//! `peer`, addresses both ends and starts `netserver` there.

pub mod cases;
pub mod channels;
pub mod console;
pub mod contract;
pub mod counters;
pub mod cpu;
pub mod cyclictest;
pub mod driver_stress;
pub mod ethtool_ops;
pub mod expect;
pub mod faults;
#[cfg(test)]
pub(crate) mod fixture_tests;
pub mod hostile;
pub mod hwstamp;
pub mod kselftest;
pub mod ktap;
pub mod mq;
pub mod netperf;
pub mod perf;
pub mod ping;
pub mod preemptoff;
pub mod probe;
pub mod ptp;
pub mod qdisc;
pub mod regsweep;
pub mod result;
pub mod rss;
pub mod selftest;
pub mod setup;
pub mod target;
pub mod values;
pub mod vf_admin;
pub mod vf_reset;
pub mod xdp;
pub mod xsk;

pub use console::{Console, Section};
pub use contract::{Scenario, NEED_IFACE, NEED_PEER};
pub use result::{ScenarioResult, Status, FINISHED, STARTED};
pub use target::{Target, DUT_IP, PEER_IP};
pub use values::{describe_rc, num, round};

use crate::params::Params;

/// All scenario names, in run order.
pub const NAMES: &[&str] = &[
    "probe",
    "selftest",
    "ethtool",
    "ping",
    "netperf",
    "cyclictest",
    "stats",
    "channels",
    "qdisc",
    "ptp",
    "faults",
    "vf-admin",
    "rss",
    "mq",
    "regsweep",
    "preemptoff",
    "hwstamp",
    "perf",
    "xdp",
    "xsk",
    "kselftest",
    // Late: resets the VF and reloads its driver.
    "vf-reset",
    // Late: its `reload` step unloads and reloads the driver.
    "driver-stress",
    // Last: it leaves the device unbound from its driver.
    "hostile",
];

/// Looks a scenario up by name.
pub fn by_name(name: &str) -> Option<Box<dyn Scenario>> {
    Some(match name {
        "probe" => Box::new(probe::Probe),
        "selftest" => Box::new(selftest::Selftest),
        "ping" => Box::new(ping::Ping),
        "netperf" => Box::new(netperf::Netperf),
        "cyclictest" => Box::new(cyclictest::Cyclictest),
        "stats" => Box::new(counters::Stats),
        "channels" => Box::new(channels::Channels),
        "qdisc" => Box::new(qdisc::Qdisc),
        "ptp" => Box::new(ptp::Ptp),
        "faults" => Box::new(faults::Faults),
        "rss" => Box::new(rss::Rss),
        "mq" => Box::new(mq::Mq),
        "hostile" => Box::new(hostile::Hostile),
        "kselftest" => Box::new(kselftest::Kselftest),
        "ethtool" => Box::new(ethtool_ops::EthtoolOps),
        "xdp" => Box::new(xdp::Xdp),
        "xsk" => Box::new(xsk::Xsk),
        "regsweep" => Box::new(regsweep::Regsweep),
        "preemptoff" => Box::new(preemptoff::Preemptoff),
        "hwstamp" => Box::new(hwstamp::Hwstamp),
        "perf" => Box::new(perf::Perf),
        "driver-stress" => Box::new(driver_stress::DriverStress),
        "vf-admin" => Box::new(vf_admin::VfAdmin),
        "vf-reset" => Box::new(vf_reset::VfReset),
        _ => return None,
    })
}

/// Renders the `/init` body: the network setup, then `scenarios` against `target`.
pub fn render_body(scenarios: &[Box<dyn Scenario>], target: &Target, p: &Params) -> String {
    let mut s = setup::render(target);
    for sc in scenarios {
        let name = sc.name();
        if (sc.needs_peer() && target.peer_mac.is_none())
            || (sc.needs_host() && !target.host_actions)
            || target.unsupported(name).is_some()
        {
            continue;
        }
        s.push_str(&format!("nicemu_begin {name}\n"));
        s.push_str(&format!(
            "(\nSCEN={name}\nnicemu_kv t_start \"$(nicemu_uptime)\"\n{}\n)\n",
            sc.script(p)
        ));
        s.push_str(&format!(
            "nicemu_rc=$?; echo \"@@NICEMU-DONE {name} rc=$nicemu_rc uptime=$(nicemu_uptime)\"\n"
        ));
    }
    s
}

/// Parses `scenario`'s section of `console`; a missing or unfinished section is a failure.
pub fn evaluate(scenario: &dyn Scenario, console: &Console, target: &Target) -> ScenarioResult {
    let name = scenario.name();
    if let Some(why) = target.unsupported(name) {
        return ScenarioResult::skip(name, why);
    }
    if scenario.needs_peer() && target.peer_mac.is_none() {
        return ScenarioResult::skip(name, "needs a peer; the topology has none");
    }
    if scenario.needs_host() && !target.host_actions {
        return ScenarioResult::skip(
            name,
            format!(
                "needs host-side actions through nicemu's control socket; the {} device \
                 under test is QEMU's own (no control socket)",
                target.driver
            ),
        );
    }
    match console.sections.get(name) {
        None => {
            let mut r = ScenarioResult::pass(name);
            r.check_failed(STARTED, "the guest never started this scenario");
            r
        }
        Some(sec) if sec.done_rc.is_none() => {
            let mut r = scenario.parse(sec, target);
            r.fail_first(
                FINISHED,
                "the scenario did not finish (guest crashed or timed out)",
            );
            r
        }
        Some(sec) => {
            let mut r = ScenarioResult::pass(name);
            if sec.get("iface") == Some("none") {
                r.check_failed(
                    "interface found",
                    format!("no interface with MAC {} appeared", target.mac),
                );
            } else if scenario.needs_peer() && sec.get("peer") == Some("none") {
                r.check_failed(
                    "peer set up",
                    "the peer is not set up (see the net setup result)",
                );
            } else {
                r = scenario.parse(sec, target);
            }
            r.passed_first(FINISHED);
            if let (Some(a), Some(b)) = (sec.uptime("t_start"), sec.done_uptime) {
                r.metric(
                    "guest_secs",
                    serde_json::json!(((b - a) * 100.0).round() / 100.0),
                );
            }
            r
        }
    }
}
