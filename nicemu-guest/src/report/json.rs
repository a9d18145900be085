// SPDX-License-Identifier: Apache-2.0
//! JSON output and input.

use std::path::Path;

use super::{RunReport, SCHEMA};
use crate::error::{Error, Result};

/// Writes `report` as pretty JSON to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
}

/// Reads a results JSON written by `run` or `merge` (of this schema or an older one).
pub fn read(path: &Path) -> Result<RunReport> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse(&text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
}

/// Parses results JSON; a newer schema than this build's is refused.
pub fn parse(text: &str) -> std::result::Result<RunReport, String> {
    let not_results = |e: serde_json::Error| format!("not a nicemu-guest results file: {e}");
    let v: serde_json::Value = serde_json::from_str(text).map_err(not_results)?;
    if let Some(n) = v.get("schema").and_then(|s| s.as_u64()) {
        if n > u64::from(SCHEMA) {
            return Err(format!(
                "results of schema {n}, written by a newer nicemu-guest; this one reads schema {SCHEMA} and older"
            ));
        }
    }
    serde_json::from_value(v).map_err(not_results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};
    use crate::splat::scan;

    const PAGE: &str = include_str!("../../../docs/src/guest/results-schema.md");

    /// The field names of the page's table under `## heading`.
    fn documented(heading: &str) -> Vec<String> {
        let mut on = false;
        let mut v = Vec::new();
        for l in PAGE.lines() {
            if l.starts_with("## ") || l.starts_with("# ") {
                on = l.trim_start_matches('#').trim() == heading;
                continue;
            }
            if on {
                if let Some(f) = l.strip_prefix("| `").and_then(|r| r.split('`').next()) {
                    v.push(f.to_owned());
                }
            }
        }
        v
    }

    fn keys(v: &serde_json::Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    /// A report with every optional field set.
    fn everything() -> RunReport {
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, true);
        c.splats = scan(&crate::splat::samples::read("warn-igb-xmit.log"));
        c.splats_dropped = 1;
        c.error = Some("x".into());
        c.setup = Some(crate::scenario::ScenarioResult::pass("setup"));
        c.console_tail = vec!["x".into()];
        c.side = Some("A".into());
        c.round = Some(1);
        c.scenarios[1].check_failed("TCP_RR result", "TCP_RR: no result");
        let mut r = report("r", vec![c]);
        r.shard = Some("1/2".into());
        r.env = Some(super::super::run_env::RunEnv {
            host_cores: 2,
            nicemu_version: Some("n".into()),
            qemu_version: Some("q".into()),
            pinning: Some("p".into()),
            load_avg: Some(1.0),
            started: Some("2026-12-05T08:10:00Z".into()),
            command: Some("nicemu-guest run".into()),
        });
        r.ab = Some(super::super::ab_record::AbSummary {
            a_label: "a".into(),
            b_label: "b".into(),
            rounds: 1,
            method: "m".into(),
            metrics: Vec::new(),
        });
        r.splat_ab = Some(crate::splat::ab::SplatAb::default());
        r.splat_ignore = Some(super::super::IgnoreUse::default());
        r
    }

    #[test]
    fn the_schema_page_documents_every_field_written() {
        let v = serde_json::to_value(everything()).unwrap();
        assert_eq!(keys(&v), sorted(documented("The run")));
        assert_eq!(keys(&v["env"]), sorted(documented("`env`")));
        assert_eq!(keys(&v["runs"][0]), sorted(documented("A cell (`runs[]`)")));
        let failed = &v["runs"][0]["scenarios"][1];
        assert_eq!(failed["failures"][0], "TCP_RR: no result");
        assert_eq!(
            failed["checks"][0],
            serde_json::json!({"name": "TCP_RR result", "ok": false, "failure": "TCP_RR: no result"})
        );
        let mut sk = keys(failed);
        sk.push("summary".into());
        assert_eq!(
            sorted(sk),
            sorted(documented("A scenario result (`scenarios[]`, `setup`)"))
        );
        assert!(PAGE.starts_with(&format!("# results.json, schema {SCHEMA}\n")));
        assert!(PAGE.contains(&format!(
            "| `schema` | integer | the layout's version ({SCHEMA}) |"
        )));
    }

    #[test]
    fn older_schemas_read_and_newer_ones_are_refused() {
        let old = include_str!("../../tests/fixtures/main-job.results.json");
        let r = parse(old).unwrap();
        assert_eq!(r.schema, 2);
        assert!(r.runs[0]
            .scenarios
            .iter()
            .all(|s| s.failures.is_empty() && s.checks.is_empty()));
        let mut v: serde_json::Value = serde_json::from_str(old).unwrap();
        v["schema"] = serde_json::json!(SCHEMA + 1);
        let e = parse(&v.to_string()).unwrap_err();
        assert_eq!(
            e,
            format!("results of schema {}, written by a newer nicemu-guest; this one reads schema {SCHEMA} and older", SCHEMA + 1)
        );
        assert!(parse("{}")
            .unwrap_err()
            .starts_with("not a nicemu-guest results file: "));
    }
}
