// SPDX-License-Identifier: Apache-2.0
//! Scenarios made of named cases (`faults`, `vf-admin`, `vf-reset`): which cases a
//! `SCENARIO.cases` parameter selects, the verdict over the cases the guest ran, and the
//! check that a host action a case asked for (`nicemu_host TAG ctl …`) succeeded.

use serde_json::json;

use super::{ScenarioResult, Section};

/// The cases of `all` named in the comma-separated `want` (a `SCENARIO.cases` value), in
/// `all`'s order.
pub fn selected(all: &[&'static str], want: &str) -> Vec<&'static str> {
    all.iter()
        .copied()
        .filter(|c| want.split(',').any(|w| w.trim() == *c))
        .collect()
}

/// Judges each case of `all` the guest started (its `case_NAME` line) with `check`, after
/// the named check "CASE: ran"; a case passes when `check` added no failure. A case the guest announced (its `cases` line) but
/// never started fails as "not run"; announcing none fails with `none()`. Records
/// `passed_cases` and the "N/M cases ok" summary.
pub fn judge(
    s: &Section,
    all: &[&'static str],
    r: &mut ScenarioResult,
    mut check: impl FnMut(&str, &mut ScenarioResult),
    none: impl FnOnce() -> String,
) {
    let mut ok = Vec::new();
    for case in all {
        if s.get(&format!("case_{case}")).is_none() {
            continue;
        }
        r.check_passed(&format!("{case}: ran"));
        let before = r.reason.clone();
        check(case, r);
        if r.reason == before {
            ok.push(*case);
        }
    }
    let asked: Vec<&str> = s
        .get("cases")
        .map(|c| c.split(',').filter(|x| !x.is_empty()).collect())
        .unwrap_or_default();
    for case in &asked {
        if s.get(&format!("case_{case}")).is_none() {
            r.check_failed(&format!("{case}: ran"), format!("{case}: not run"));
        }
    }
    r.check("a case applies", !asked.is_empty(), none);
    r.metric("passed_cases", json!(ok));
    r.summary = Some(format!("{}/{} cases ok", ok.len(), asked.len()));
}

/// Records the check "CASE: host action TAG": fails with "CASE: host action TAG failed (…)"
/// unless the host action `tag` exited 0 (and
/// the guest saw it); the last two lines it printed say why. Returns whether it succeeded.
pub fn host_ok(s: &Section, tag: &str, case: &str, r: &mut ScenarioResult) -> bool {
    let rc = s.get(&format!("host_{tag}_rc"));
    let name = format!("{case}: host action {tag}");
    if rc == Some("0") {
        r.check_passed(&name);
        return true;
    }
    let out: Vec<&str> = s.lines(&format!("host_{tag}")).collect();
    let what = match rc {
        None => "the harness never ran it".to_owned(),
        Some(rc) => format!(
            "exit {rc}: {}",
            out[out.len().saturating_sub(2)..].join(" | ")
        ),
    };
    r.check_failed(&name, format!("{case}: host action {tag} failed ({what})"));
    false
}
