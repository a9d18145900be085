// SPDX-License-Identifier: Apache-2.0
//! `probe`: the expected driver binds, the interface has the expected MAC, and it reaches
//! carrier (LOWER_UP) after `ip link set up`; driver messages in dmesg are collected.
//! `ethtool IFACE` must report `Link detected: yes` and, for igb / ixgbe, the model's
//! speed (`1000Mb/s` / `10000Mb/s`).

use serde_json::json;

use crate::params::Params;

use super::{Scenario, ScenarioResult, Section, Target};

/// Probe/bind/link scenario.
#[derive(Debug)]
pub struct Probe;

/// Words in a driver's dmesg line that count as an error.
const ERROR_WORDS: &[&str] = &[
    "error",
    "fail",
    "timeout",
    "timed out",
    "hang",
    "call trace",
    "bug:",
    "warning:",
];

const SCRIPT: &str = r#"if [ -z "$IFACE" ]; then nicemu_kv iface none; exit 1; fi
nicemu_kv iface "$IFACE"
nicemu_kv module_version "$(cat /sys/module/$DRIVER/version 2>/dev/null || echo none)"
nicemu_kv module_taint "$(cat /sys/module/$DRIVER/taint 2>/dev/null)"
nicemu_out ethtool_i /usr/sbin/ethtool -i "$IFACE"
/usr/bin/ip link set "$IFACE" up
n=0
while [ $n -lt 100 ]; do
    [ "$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)" = 1 ] && break
    sleep 0.1; n=$((n+1))
done
nicemu_kv carrier_wait_ms $((n*100))
nicemu_out link /usr/bin/ip link show "$IFACE"
nicemu_out ethtool /usr/sbin/ethtool "$IFACE"
nicemu_out dmesg sh -c "dmesg | grep -i -e $DRIVER -e $IFACE"
true"#;

impl Scenario for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn script(&self, _p: &Params) -> String {
        SCRIPT.to_owned()
    }

    fn parse(&self, s: &Section, target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let iface = s.get("iface").unwrap_or("none");
        if iface == "none" {
            r.check_failed(
                "interface found",
                format!("no interface with MAC {} appeared", target.mac),
            );
            collect_dmesg(s, target, &mut r);
            return r;
        }
        r.check_passed("interface found");
        r.metric("iface", json!(iface));
        for line in s.lines("ethtool_i") {
            if let Some((k, v)) = line.split_once(':') {
                let key = match k.trim() {
                    "driver" => "driver",
                    "bus-info" => "bus_info",
                    "firmware-version" => "firmware_version",
                    _ => continue,
                };
                r.metric(key, json!(v.trim()));
            }
        }
        match r.metrics.get("driver").and_then(|v| v.as_str()) {
            Some(d) if d == target.driver => r.check_passed("driver bound"),
            Some(d) => r.check_failed(
                "driver bound",
                format!("driver {d} bound, expected {}", target.driver),
            ),
            None => r.check_failed("driver bound", "ethtool -i printed no driver"),
        }
        let link: Vec<&str> = s.lines("link").collect();
        let flags = link
            .first()
            .and_then(|l| l.split_once('<'))
            .and_then(|(_, rest)| rest.split_once('>'))
            .map(|(f, _)| f.to_owned())
            .unwrap_or_default();
        r.metric("link_flags", json!(flags));
        let mac = link
            .iter()
            .find_map(|l| l.trim().strip_prefix("link/ether "))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("");
        r.metric("mac", json!(mac));
        r.check("MAC address", mac.eq_ignore_ascii_case(&target.mac), || {
            format!("MAC is {mac:?}, expected {}", target.mac)
        });
        r.check(
            "carrier up",
            flags.split(',').any(|f| f == "LOWER_UP"),
            || format!("no carrier (LOWER_UP) after 10 s; flags <{flags}>"),
        );
        check_ethtool(s, target, &mut r);
        check_built_module(s, target, &mut r);
        if let Some(ms) = s.get("carrier_wait_ms").and_then(|v| v.parse::<u64>().ok()) {
            r.metric("carrier_wait_ms", json!(ms));
        }
        collect_dmesg(s, target, &mut r);
        if r.status == super::Status::Pass {
            let built = target
                .module_version
                .as_ref()
                .map(|v| format!(" (built {v})"))
                .unwrap_or_default();
            r.summary = Some(format!(
                "{}{built} {}",
                r.metrics
                    .get("driver")
                    .and_then(|v| v.as_str())
                    .unwrap_or(""),
                r.metrics
                    .get("firmware_version")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
            ));
        }
        r
    }
}

/// When the harness built the driver, the module that runs must be that build: its
/// `/sys/module/DRIVER/version` is the stamp the harness wrote.
fn check_built_module(s: &Section, target: &Target, r: &mut ScenarioResult) {
    let loaded = s.get("module_version").unwrap_or("none");
    if loaded != "none" {
        r.metric("module_version", json!(loaded));
    }
    if let Some(t) = s.get("module_taint").filter(|t| !t.is_empty()) {
        r.metric("module_taint", json!(t));
    }
    if let Some(want) = &target.module_version {
        r.check("the harness's module loaded", loaded == want, || {
            format!(
                "{} version is {loaded:?}, not the harness's build {want:?}: the stock module ran",
                target.driver
            )
        });
    }
}

/// The `Speed:` ethtool must report for `driver`, if the harness knows it.
pub fn expected_speed(driver: &str) -> Option<&'static str> {
    match driver {
        "igb" | "igbvf" => Some("1000Mb/s"),
        "ixgbe" | "ixgbevf" => Some("10000Mb/s"),
        _ => None,
    }
}

/// Records `ethtool IFACE`'s `Speed:` and `Link detected:`; a wrong speed for the driver,
/// `Link detected: no` or missing lines fail. A section without `ethtool_rc` comes from a
/// guest script older than this check (the script always prints it): not checked.
fn check_ethtool(s: &Section, target: &Target, r: &mut ScenarioResult) {
    if s.get("ethtool_rc").is_none() {
        r.metric("link_detected", json!("not run"));
        return;
    }
    let mut speed = None;
    let mut link = None;
    for line in s.lines("ethtool") {
        if let Some((k, v)) = line.split_once(':') {
            match k.trim() {
                "Speed" => speed = Some(v.trim().to_owned()),
                "Link detected" => link = Some(v.trim().to_owned()),
                _ => {}
            }
        }
    }
    match &speed {
        Some(sp) => {
            r.metric("speed", json!(sp));
            if let Some(want) = expected_speed(&target.driver) {
                r.check("ethtool speed", sp == want, || {
                    format!(
                        "ethtool reports Speed: {sp}, expected {want} for {}",
                        target.driver
                    )
                });
            }
        }
        None => r.check_failed(
            "ethtool speed",
            format!(
                "ethtool {} printed no Speed: line (rc {})",
                s.get("iface").unwrap_or("IFACE"),
                s.get("ethtool_rc").unwrap_or("missing")
            ),
        ),
    }
    match link.as_deref() {
        Some(l) => {
            r.metric("link_detected", json!(l));
            r.check("ethtool link detected", l == "yes", || {
                format!("ethtool reports Link detected: {l}")
            });
        }
        None => r.check_failed(
            "ethtool link detected",
            "ethtool printed no Link detected: line",
        ),
    }
}

/// Records driver dmesg lines; error-looking ones fail the scenario.
/// The kernel's note on loading a module without Debian's signature: expected for a module
/// the harness built (the guest kernel does not enforce signatures), not a driver error.
const UNSIGNED_NOTE: &str = "module verification failed: signature and/or required key missing";

fn collect_dmesg(s: &Section, target: &Target, r: &mut ScenarioResult) {
    let lines: Vec<&str> = s.lines("dmesg").collect();
    let built = target.module_version.is_some();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !(built && l.contains(UNSIGNED_NOTE)))
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            ERROR_WORDS.iter().any(|w| l.contains(w))
        })
        .collect();
    r.metric("dmesg_lines", json!(lines.len()));
    if !r.check("no driver errors in dmesg", errors.is_empty(), || {
        format!("{} driver error line(s) in dmesg", errors.len())
    }) {
        r.metric("dmesg_errors", json!(errors));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{evaluate, Console, Status};

    const QEMU_IGB: &str = include_str!("../../tests/fixtures/qemu-igb-probe-selftest.serial.log");

    fn target(driver: &str) -> Target {
        Target {
            mac: "52:54:00:12:34:56".into(),
            driver: driver.into(),
            peer_mac: None,
            host_actions: false,
            unsupported: Vec::new(),
            module_version: None,
            device: String::new(),
        }
    }

    #[test]
    fn a_built_driver_must_be_the_one_that_ran() {
        let mut t = target("igb");
        t.module_version = Some("nicemu-0123456789ab".into());
        let sec = |v: &str| Section {
            kv: vec![("module_version".into(), v.into())],
            ..Section::default()
        };
        let mut r = ScenarioResult::pass("probe");
        check_built_module(&sec("nicemu-0123456789ab"), &t, &mut r);
        assert_eq!(r.status, crate::scenario::Status::Pass);
        assert_eq!(r.metrics["module_version"], "nicemu-0123456789ab");
        let note = Section {
            out: vec![(
                "dmesg".into(),
                format!("[ 8.9] igb: {UNSIGNED_NOTE} - tainting kernel"),
            )],
            ..Section::default()
        };
        let mut r = ScenarioResult::pass("probe");
        collect_dmesg(&note, &t, &mut r);
        assert_eq!(r.status, crate::scenario::Status::Pass);
        collect_dmesg(&note, &target("igb"), &mut r);
        assert_eq!(
            r.status,
            crate::scenario::Status::Fail,
            "stock modules are signed"
        );
        let mut r = ScenarioResult::pass("probe");
        check_built_module(&sec("none"), &t, &mut r);
        assert_eq!(r.status, crate::scenario::Status::Fail);
        assert!(r.reason.unwrap().contains("the stock module ran"));
    }

    #[test]
    fn qemu_igb_capture_passes() {
        let r = evaluate(&Probe, &Console::parse(QEMU_IGB), &target("igb"));
        assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["driver"], "igb");
        assert_eq!(r.metrics["iface"], "eth0");
        assert_eq!(r.metrics["mac"], "52:54:00:12:34:56");
        assert_eq!(r.metrics["dmesg_lines"], 8);
        assert!(r.metrics["link_flags"]
            .as_str()
            .unwrap()
            .contains("LOWER_UP"));
    }

    /// nicemu igb and ixgbe (sid 7.2, TCG): `ethtool IFACE` with the models' speeds.
    #[test]
    fn nicemu_captures_report_speed_and_link() {
        for (text, driver, speed) in [
            (
                include_str!("../../tests/fixtures/nicemu-igb-probe.serial.log"),
                "igb",
                "1000Mb/s",
            ),
            (
                include_str!("../../tests/fixtures/nicemu-ixgbe-probe.serial.log"),
                "ixgbe",
                "10000Mb/s",
            ),
        ] {
            let r = evaluate(&Probe, &Console::parse(text), &target(driver));
            assert_eq!(r.status, Status::Pass, "{driver}: {:?}", r.reason);
            assert_eq!(r.metrics["speed"], speed);
            assert_eq!(r.metrics["link_detected"], "yes");
            let wrong = if driver == "igb" { "ixgbe" } else { "igb" };
            let r = evaluate(&Probe, &Console::parse(text), &target(wrong));
            assert!(r.reason.unwrap().contains("ethtool reports Speed"));
        }
    }

    #[test]
    fn wrong_driver_and_no_carrier_fail() {
        let text = QEMU_IGB.replace("UP,LOWER_UP>", "UP>");
        let r = evaluate(&Probe, &Console::parse(&text), &target("e1000e"));
        assert_eq!(r.status, Status::Fail);
        let reason = r.reason.unwrap();
        assert!(reason.contains("expected e1000e"), "{reason}");
        assert!(reason.contains("LOWER_UP"), "{reason}");
    }

    #[test]
    fn driver_errors_in_dmesg_fail() {
        let text = QEMU_IGB.replace(
            "PBA No: 1040FF-0FF",
            "Hardware Error: the NVM checksum is not valid",
        );
        let r = evaluate(&Probe, &Console::parse(&text), &target("igb"));
        assert_eq!(r.status, Status::Fail);
        assert_eq!(r.metrics["dmesg_errors"].as_array().unwrap().len(), 1);
    }

    /// The QEMU capture with `ethtool IFACE` lines of the given speed / link added.
    fn with_ethtool(speed: &str, link: &str) -> String {
        QEMU_IGB.replace(
            "@@NICEMU-DONE probe",
            &format!(
                "@@NICEMU-OUT probe ethtool Settings for eth0:\n\
                 @@NICEMU-OUT probe ethtool \tSpeed: {speed}\n\
                 @@NICEMU-OUT probe ethtool \tDuplex: Full\n\
                 @@NICEMU-OUT probe ethtool \tLink detected: {link}\n\
                 @@NICEMU probe ethtool_rc=0\n@@NICEMU-DONE probe"
            ),
        )
    }

    #[test]
    fn ethtool_speed_and_link_are_checked() {
        let r = evaluate(
            &Probe,
            &Console::parse(&with_ethtool("1000Mb/s", "yes")),
            &target("igb"),
        );
        assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["speed"], "1000Mb/s");
        assert_eq!(r.metrics["link_detected"], "yes");

        let r = evaluate(
            &Probe,
            &Console::parse(&with_ethtool("1000Mb/s", "yes")),
            &target("ixgbe"),
        );
        let reason = r.reason.unwrap();
        assert!(reason.contains("expected 10000Mb/s"), "{reason}");

        let r = evaluate(
            &Probe,
            &Console::parse(&with_ethtool("1000Mb/s", "no")),
            &target("igb"),
        );
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("Link detected: no"));

        let text = QEMU_IGB.replace(
            "@@NICEMU-DONE probe",
            "@@NICEMU probe ethtool_rc=1\n@@NICEMU-DONE probe",
        );
        let r = evaluate(&Probe, &Console::parse(&text), &target("igb"));
        assert!(r.reason.unwrap().contains("no Speed: line (rc 1)"));
    }

    #[test]
    fn missing_interface_fails() {
        let text = "@@NICEMU-BEGIN probe\n@@NICEMU probe iface=none\n@@NICEMU-DONE probe rc=1\n";
        let r = evaluate(&Probe, &Console::parse(text), &target("igb"));
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("no interface"));
    }
}
