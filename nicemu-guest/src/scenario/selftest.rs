// SPDX-License-Identifier: Apache-2.0
//! `selftest`: `ethtool -t IFACE offline` reports PASS and every sub-test 0.

use std::collections::BTreeMap;

use serde_json::json;

use crate::params::Params;

use super::{Scenario, ScenarioResult, Section, Status, Target};

/// Offline ethtool self-test scenario.
#[derive(Debug)]
pub struct Selftest;

const SCRIPT: &str = r#"if [ -z "$IFACE" ]; then nicemu_kv iface none; exit 1; fi
nicemu_kv iface "$IFACE"
/usr/bin/ip link set "$IFACE" up
nicemu_out test /usr/sbin/ethtool -t "$IFACE" offline
nicemu_carrier "$IFACE" 100
true"#;

impl Scenario for Selftest {
    fn name(&self) -> &'static str {
        "selftest"
    }

    fn script(&self, _p: &Params) -> String {
        SCRIPT.to_owned()
    }

    fn budget_secs(&self, _p: &Params) -> u64 {
        25
    }

    fn parse(&self, s: &Section, target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("iface").unwrap_or("none") == "none" {
            r.check_failed(
                "interface found",
                format!("no interface with MAC {} appeared", target.mac),
            );
            return r;
        }
        let lines: Vec<&str> = s.lines("test").collect();
        let verdict = lines
            .iter()
            .find_map(|l| l.trim().strip_prefix("The test result is "))
            .map(str::trim);
        let mut subtests = BTreeMap::new();
        let mut in_extra = false;
        for l in &lines {
            if l.trim().starts_with("The test extra info:") {
                in_extra = true;
                continue;
            }
            if !in_extra {
                continue;
            }
            if let Some((name, value)) = l.trim().rsplit_once(char::is_whitespace) {
                if let Ok(v) = value.trim().parse::<i64>() {
                    let name: Vec<&str> = name.split_whitespace().collect();
                    subtests.insert(name.join(" "), v);
                }
            }
        }
        r.metric("result", json!(verdict.unwrap_or("none")));
        r.metric("subtests", json!(subtests));
        match verdict {
            Some("PASS") => r.check_passed("ethtool -t verdict PASS"),
            Some(v) => r.check_failed("ethtool -t verdict PASS", format!("ethtool -t says {v}")),
            None => {
                let text = lines.join(" ");
                if text.contains("Operation not supported") {
                    r.status = Status::Skip;
                    r.reason = Some("driver has no self-test".into());
                    return r;
                }
                r.check_failed(
                    "ethtool -t verdict PASS",
                    format!("no test verdict from ethtool -t: {text}"),
                );
            }
        }
        let bad: Vec<String> = subtests
            .iter()
            .filter(|(_, v)| **v != 0)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !subtests.is_empty() {
            r.check("every sub-test 0", bad.is_empty(), || {
                format!("sub-tests failed: {}", bad.join(", "))
            });
        } else if r.status == Status::Pass {
            r.check_failed("every sub-test 0", "no sub-test results printed");
        }
        if r.status == Status::Pass {
            r.summary = Some(format!("{} sub-tests", subtests.len()));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{evaluate, Console};

    const QEMU_IGB: &str = include_str!("../../tests/fixtures/qemu-igb-probe-selftest.serial.log");

    fn igb() -> Target {
        Target {
            module_version: None,
            mac: "52:54:00:12:34:56".into(),
            driver: "igb".into(),
            peer_mac: None,
            host_actions: false,
            unsupported: Vec::new(),
            device: String::new(),
        }
    }

    #[test]
    fn qemu_igb_capture_passes_with_five_subtests() {
        let r = evaluate(&Selftest, &Console::parse(QEMU_IGB), &igb());
        assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
        let sub = r.metrics["subtests"].as_object().unwrap();
        assert_eq!(sub.len(), 5);
        assert_eq!(sub["Register test (offline)"], 0);
        assert_eq!(sub["Link test (on/offline)"], 0);
        assert!(r.metrics["guest_secs"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn qemu_e1000e_capture_fails_with_subtest_values() {
        let text = include_str!("../../tests/fixtures/qemu-e1000e-probe-selftest.serial.log");
        let mut t = igb();
        t.driver = "e1000e".into();
        let r = evaluate(&Selftest, &Console::parse(text), &t);
        assert_eq!(r.status, Status::Fail);
        let sub = r.metrics["subtests"].as_object().unwrap();
        assert_eq!(sub["Register test (offline)"], 376);
        assert_eq!(sub["Eeprom test (offline)"], 0);
        assert!(r.reason.unwrap().contains("Loopback test (offline)=13"));
    }

    #[test]
    fn failing_subtest_fails() {
        let text = QEMU_IGB
            .replace("The test result is PASS", "The test result is FAIL")
            .replace(
                "Loopback test  (offline)\t 0",
                "Loopback test  (offline)\t 13",
            );
        let r = evaluate(&Selftest, &Console::parse(&text), &igb());
        assert_eq!(r.status, Status::Fail);
        let reason = r.reason.unwrap();
        assert!(reason.contains("FAIL") && reason.contains("Loopback test (offline)=13"));
    }

    #[test]
    fn unfinished_section_fails() {
        let cut = QEMU_IGB.split("@@NICEMU-DONE selftest").next().unwrap();
        let r = evaluate(&Selftest, &Console::parse(cut), &igb());
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("did not finish"));
    }
}
