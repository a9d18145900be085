// SPDX-License-Identifier: Apache-2.0
//! Merging results of several runs (e.g. the shards of one matrix) into one report.

use super::{RunReport, SCHEMA};
use crate::error::{Error, Result};

/// Merges `reports` in order: runs are concatenated (sorted by matrix cell when every
/// input is a shard), scenario lists united, wall times summed.
pub fn merge(reports: &[RunReport]) -> Result<RunReport> {
    let first = reports
        .first()
        .ok_or_else(|| Error::Usage("merge needs at least one results file".into()))?;
    let mut out = first.clone();
    out.schema = SCHEMA;
    out.shard = None;
    out.runs.clear();
    out.wall_secs = 0.0;
    let mut ids: Vec<String> = Vec::new();
    for r in reports {
        if !ids.contains(&r.run_id) {
            ids.push(r.run_id.clone());
        }
        for s in &r.scenarios {
            if !out.scenarios.contains(s) {
                out.scenarios.push(s.clone());
            }
        }
        if r.accel != out.accel && !out.accel.contains(&r.accel) {
            out.accel = format!("{}+{}", out.accel, r.accel);
        }
        out.wall_secs += r.wall_secs;
        out.runs.extend(r.runs.iter().cloned());
    }
    if reports.iter().all(|r| r.shard.is_some()) {
        out.runs.sort_by_key(|c| c.cell);
    }
    out.run_id = ids.join("+");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    #[test]
    fn shards_merge_back_in_cell_order() {
        let mut a = cell("sid", "qemu-igb", 0.5, 600.0, false);
        a.cell = 0;
        let mut b = cell("sid", "nicemu-igb", 0.7, 300.0, false);
        b.cell = 1;
        let mut c = cell("trixie", "qemu-igb", 0.6, 500.0, false);
        c.cell = 2;
        let mut s1 = report("r1", vec![a, c]);
        s1.shard = Some("1/2".into());
        let mut s2 = report("r2", vec![b]);
        s2.shard = Some("2/2".into());
        s2.scenarios.push("stats".into());
        let m = merge(&[s1, s2]).unwrap();
        assert_eq!(m.run_id, "r1+r2");
        let order: Vec<usize> = m.runs.iter().map(|c| c.cell).collect();
        assert_eq!(order, [0, 1, 2]);
        assert_eq!(m.scenarios.last().unwrap(), "stats");
        assert_eq!(m.wall_secs, 200.0);
        assert!(m.shard.is_none());
        merge(&[]).unwrap_err();
    }
}
