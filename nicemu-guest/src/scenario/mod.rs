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

pub mod channels;
pub mod console;
pub mod counters;
pub mod cpu;
pub mod cyclictest;
pub mod ethtool_ops;
pub mod expect;
pub mod faults;
#[cfg(test)]
mod fixture_tests;
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
pub mod xdp;
pub mod xsk;

pub use console::{Console, Section};
pub use result::{ScenarioResult, Status};

use crate::params::Params;

/// Address of the device under test inside the guest's emulated network.
pub const DUT_IP: &str = "192.168.100.1";
/// Address of the peer (in netns `peer`).
pub const PEER_IP: &str = "192.168.100.2";

/// What a scenario runs against: one NIC in the guest, maybe with a peer.
#[derive(Debug, Clone)]
pub struct Target {
    /// The MAC the device was given (lower case); the guest finds its interface by it.
    pub mac: String,
    /// The Linux driver expected to bind ("igb", "e1000e", "ixgbe").
    pub driver: String,
    /// MAC of the peer port, if the topology has one.
    pub peer_mac: Option<String>,
    /// True when the harness serves host-side actions (`nicemu_host`, a nicemu device
    /// under test with a control socket).
    pub host_actions: bool,
    /// Scenarios that do not apply to the device, with the reason (SKIPped, not run).
    pub unsupported: Vec<(String, String)>,
    /// The `MODULE_VERSION` the harness stamped into the driver it built (`--patch`,
    /// `--driver-dir`); `probe` checks `/sys/module/DRIVER/version` against it.
    pub module_version: Option<String>,
    /// The device kind's name ("nicemu-igb"; empty in parser tests that do not need it).
    pub device: String,
}

#[cfg(test)]
impl Target {
    /// A parser-test target: `driver` with host actions, MAC "x", the peer's "y" if any.
    pub fn for_test(driver: &str, peer_mac: Option<&str>) -> Target {
        Target {
            mac: "x".into(),
            driver: driver.into(),
            peer_mac: peer_mac.map(str::to_owned),
            host_actions: true,
            unsupported: Vec::new(),
            module_version: None,
            device: String::new(),
        }
    }
}

impl Target {
    /// Why `scenario` does not apply to this device, if so.
    pub fn unsupported(&self, scenario: &str) -> Option<&str> {
        self.unsupported
            .iter()
            .find(|(s, _)| s == scenario)
            .map(|(_, why)| why.as_str())
    }
}

/// One test scenario.
pub trait Scenario {
    /// Short name used on the command line and in markers.
    fn name(&self) -> &'static str;
    /// The guest shell snippet (runs in a subshell with `SCEN`, `MAC`, `DRIVER`, `IFACE`,
    /// `PEER_IFACE`, `DUT_IP`, `PEER_IP` set, and `HOST_ACTIONS=1` when `nicemu_host` is served).
    fn script(&self, p: &Params) -> String;
    /// True if the scenario needs a peer on the network.
    fn needs_peer(&self) -> bool {
        false
    }
    /// True if the scenario asks the harness for host-side actions (`nicemu_host`: nicemu
    /// ctl, pcap reading); it is skipped on devices without a control socket.
    fn needs_host(&self) -> bool {
        false
    }
    /// Rough guest seconds the scenario takes under TCG (for the default timeout).
    fn budget_secs(&self, _p: &Params) -> u64 {
        30
    }
    /// Turns this scenario's console section into a result.
    fn parse(&self, section: &Section, target: &Target) -> ScenarioResult;
}

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
    "rss",
    "mq",
    "regsweep",
    "preemptoff",
    "hwstamp",
    "perf",
    "xdp",
    "xsk",
    "kselftest",
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
        s.push_str(&format!("echo \"@@NICEMU-BEGIN {name}\"\n"));
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
        None => ScenarioResult::fail(name, "the guest never started this scenario"),
        Some(sec) if sec.done_rc.is_none() => {
            let mut r = scenario.parse(sec, target);
            r.status = Status::Fail;
            r.reason = Some(format!(
                "the scenario did not finish (guest crashed or timed out){}",
                r.reason.map(|x| format!("; {x}")).unwrap_or_default()
            ));
            r
        }
        Some(sec) => {
            let mut r = if sec.get("iface") == Some("none") {
                ScenarioResult::fail(
                    name,
                    format!("no interface with MAC {} appeared", target.mac),
                )
            } else if scenario.needs_peer() && sec.get("peer") == Some("none") {
                ScenarioResult::fail(
                    name,
                    "the peer is not set up (see the net setup result)".to_owned(),
                )
            } else {
                scenario.parse(sec, target)
            };
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

/// Shell lines every scenario needing the DUT starts with.
pub const NEED_IFACE: &str =
    "if [ -z \"$IFACE\" ]; then nicemu_kv iface none; exit 1; fi\nnicemu_kv iface \"$IFACE\"\n";

/// Shell lines every scenario needing the peer starts with (after [`NEED_IFACE`]).
pub const NEED_PEER: &str =
    "if [ -z \"$PEER_IFACE\" ] || [ \"$PEER_OK\" != 1 ]; then nicemu_kv peer none; exit 1; fi\n";

/// Parses a number that may carry a unit suffix or thousands separators ("1,234", "12ms").
pub fn num(s: &str) -> Option<f64> {
    let t: String = s
        .trim()
        .chars()
        .filter(|c| *c != ',')
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == 'e' || *c == '+')
        .collect();
    t.parse().ok()
}

/// Explains a tool's exit status printed by `nicemu_out` (`TAG_rc`): 124/143 mean the
/// guest-side `timeout` stopped it.
pub fn describe_rc(rc: Option<&str>) -> String {
    match rc {
        Some("124") | Some("143") => "timed out".into(),
        Some("127") => "tool not found in the guest".into(),
        Some(rc) => format!("exit {rc}"),
        None => "not run".into(),
    }
}

/// Rounds to `digits` decimals (for tidy JSON).
pub fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}
