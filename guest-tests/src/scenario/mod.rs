//! Scenarios: each is a guest shell snippet plus a parser that turns the marked console
//! output into a structured result.
//!
//! Console protocol (one line each, found anywhere in a line so console noise before it
//! does not hide it):
//! - `@@NICEMU-BEGIN <scenario>` / `@@NICEMU-DONE <scenario> rc=<n>` bracket a scenario,
//! - `@@NICEMU <scenario> <key>=<value>` is a key/value result,
//! - `@@NICEMU-OUT <scenario> <tag> <text>` is one line of a tool's output,
//! - `@@NICEMU-BOOT`, `@@NICEMU-END` mark userspace start and the end of all scenarios.

pub mod console;
pub mod probe;
pub mod result;
pub mod selftest;

pub use console::{Console, Section};
pub use result::{ScenarioResult, Status};

/// What a scenario runs against: one NIC in the guest.
#[derive(Debug, Clone)]
pub struct Target {
    /// The MAC the device was given (lower case); the guest finds its interface by it.
    pub mac: String,
    /// The Linux driver expected to bind ("igb", "e1000e", "ixgbe").
    pub driver: String,
}

/// One test scenario.
pub trait Scenario {
    /// Short name used on the command line and in markers.
    fn name(&self) -> &'static str;
    /// The guest shell snippet (runs in a subshell with `SCEN`, `MAC`, `DRIVER` set).
    fn script(&self) -> &'static str;
    /// Turns this scenario's console section into a result.
    fn parse(&self, section: &Section, target: &Target) -> ScenarioResult;
}

/// All scenario names, in run order.
pub const NAMES: &[&str] = &["probe", "selftest"];

/// Looks a scenario up by name.
pub fn by_name(name: &str) -> Option<Box<dyn Scenario>> {
    match name {
        "probe" => Some(Box::new(probe::Probe)),
        "selftest" => Some(Box::new(selftest::Selftest)),
        _ => None,
    }
}

/// Renders the `/init` body running `scenarios` against `target`.
pub fn render_body(scenarios: &[Box<dyn Scenario>], target: &Target) -> String {
    let mut s = String::new();
    for sc in scenarios {
        let name = sc.name();
        s.push_str(&format!("echo \"@@NICEMU-BEGIN {name}\"\n"));
        s.push_str(&format!(
            "(\nSCEN={name}; MAC={}; DRIVER={}\nnicemu_kv t_start \"$(nicemu_uptime)\"\n{}\n)\n",
            target.mac,
            target.driver,
            sc.script()
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
            let mut r = scenario.parse(sec, target);
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
