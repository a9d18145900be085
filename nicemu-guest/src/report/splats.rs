// SPDX-License-Identifier: Apache-2.0
//! The kernel splats of a run, first in every report: what B introduces (A/B), each splat
//! with its cell, fingerprint, location, what the guest was doing and its full text (decoded
//! call trace included), the ignored ones with their entry and reason, the ignore list's
//! unused entries.

use super::escape::esc;
use super::{CellRun, RunReport};
use crate::splat::Splat;

fn all(report: &RunReport) -> impl Iterator<Item = (&CellRun, &Splat)> {
    report
        .runs
        .iter()
        .flat_map(|c| c.splats.iter().map(move |s| (c, s)))
}

fn who(c: &CellRun) -> String {
    let side = match (&c.side, c.round) {
        (Some(s), Some(r)) => format!(" ({s}{r})"),
        (Some(s), None) => format!(" ({s})"),
        _ => String::new(),
    };
    format!("{} / {}{side}", c.kernel, c.device)
}

/// The heading line: "Kernel splats: 2 failing, 1 ignored".
fn heading(report: &RunReport) -> Option<String> {
    let (fail, ignored) = all(report).fold(
        (0, 0),
        |(f, i), (_, s)| {
            if s.fails() {
                (f + 1, i)
            } else {
                (f, i + 1)
            }
        },
    );
    let dropped: u32 = report.runs.iter().map(|c| c.splats_dropped).sum();
    if fail + ignored == 0 && report.splat_ab.is_none() {
        return None;
    }
    let mut h = format!("Kernel splats: {fail} failing, {ignored} ignored");
    if dropped > 0 {
        h.push_str(&format!(", {dropped} more not kept"));
    }
    Some(h)
}

/// The Markdown section (empty when no cell showed a splat and the run is no A/B).
pub fn markdown(report: &RunReport) -> String {
    let Some(h) = heading(report) else {
        return String::new();
    };
    let mut s = format!("### {h}\n\n");
    if let Some(ab) = &report.splat_ab {
        for l in ab.verdict_lines() {
            s.push_str(&format!("**{l}**\n\n"));
        }
    }
    for (c, sp) in all(report) {
        if sp.fails() {
            s.push_str(&format!(
                "- **{}: {}** — {} during {}{}\n",
                who(c),
                sp.headline(),
                sp.kind,
                sp.during,
                repeat(sp)
            ));
        } else {
            s.push_str(&format!(
                "- {}: ignored {} — {}: {}\n",
                who(c),
                sp.headline(),
                sp.ignored.as_ref().map_or("", |i| i.entry.as_str()),
                sp.ignored.as_ref().map_or("", |i| i.reason.as_str())
            ));
        }
        let text = sp.full_text();
        s.push_str(&format!(
            "  <details><summary>report ({} lines)</summary>\n\n  ```\n",
            text.lines().count()
        ));
        for l in text.lines() {
            s.push_str(&format!("  {}\n", l.replace("```", "'''")));
        }
        s.push_str("  ```\n  </details>\n");
    }
    s
}

fn repeat(sp: &Splat) -> String {
    let mut r = String::new();
    if sp.count > 1 {
        r.push_str(&format!(", {}×", sp.count));
    }
    if sp.truncated {
        r.push_str(", truncated (the console ended first)");
    }
    r
}

/// The ignore list's entries unused in the run (for the end of the report).
pub fn unused_markdown(report: &RunReport) -> String {
    match report
        .splat_ignore
        .as_ref()
        .filter(|u| !u.unused.is_empty())
    {
        Some(u) => {
            let mut s = format!("\nUnused entries of the splat ignore list {}:\n", u.file);
            for e in &u.unused {
                s.push_str(&format!("- {e}\n"));
            }
            s
        }
        None => String::new(),
    }
}

/// The results table's cell: failing splats of a cell ("**2**"), or "—".
pub fn table_cell(c: &CellRun) -> String {
    let fail = c.failing_splats().count();
    let ignored = c.splats.len() - fail;
    match (fail, ignored) {
        (0, 0) => "—".to_owned(),
        (0, i) => format!("{i} ignored"),
        (f, _) => format!("**{f} FAIL**"),
    }
}

/// The HTML section (empty when no cell showed a splat and the run is no A/B).
pub fn html(report: &RunReport) -> String {
    let Some(h) = heading(report) else {
        return String::new();
    };
    let mut s = format!("<h2>{}</h2>\n", esc(&h));
    if let Some(ab) = &report.splat_ab {
        for l in ab.verdict_lines() {
            s.push_str(&format!("<p><b>{}</b></p>\n", esc(&l)));
        }
    }
    for (c, sp) in all(report) {
        let (class, what) = match &sp.ignored {
            None => (
                "FAIL",
                format!("{} during {}{}", sp.kind, sp.during, repeat(sp)),
            ),
            Some(i) => ("SKIP", format!("ignored by {}: {}", i.entry, i.reason)),
        };
        s.push_str(&format!(
            "<details class=\"{class}\"><summary><b>{}: {}</b> — {}</summary>\n<pre>{}</pre>\n<p>console: {}/kernel.log</p></details>\n",
            esc(&who(c)),
            esc(&sp.headline()),
            esc(&what),
            esc(&sp.full_text()),
            esc(&c.dir)
        ));
    }
    if let Some(u) = report
        .splat_ignore
        .as_ref()
        .filter(|u| !u.unused.is_empty())
    {
        s.push_str(&format!(
            "<p>Unused entries of the splat ignore list {}:</p><ul>{}</ul>\n",
            esc(&u.file),
            u.unused
                .iter()
                .map(|e| format!("<li>{}</li>", esc(e)))
                .collect::<String>()
        ));
    }
    s
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};
    use crate::splat::samples::read;
    use crate::splat::scan;

    /// A report with a failing WARN on nicemu-igb and an ignored watchdog on qemu-igb.
    pub fn with_splats() -> RunReport {
        let mut a = cell("sid", "nicemu-igb", 0.5, 600.0, false);
        a.splats = scan(&read("warn-igb-xmit.log"));
        let mut b = cell("sid", "qemu-igb", 0.5, 600.0, false);
        b.splats = scan(&read("netdev-watchdog.log"));
        b.splats[0].ignored = Some(crate::splat::model::Ignored {
            entry: "ignore.toml:3".into(),
            reason: "on purpose".into(),
        });
        let mut r = report("r", vec![a, b]);
        r.splat_ignore = Some(crate::report::IgnoreUse {
            file: "ignore.toml".into(),
            unused: vec!["ignore.toml:9 (stale)".into()],
        });
        r
    }

    #[test]
    fn markdown_lists_failing_and_ignored_splats_with_their_text() {
        let r = with_splats();
        assert!(!r.passed());
        assert_eq!(
            r.counts().1,
            1,
            "the WARN (the ignored watchdog is no failure)"
        );
        let md = markdown(&r);
        assert!(
            md.starts_with("### Kernel splats: 1 failing, 1 ignored\n"),
            "{md}"
        );
        assert!(md.contains("- **sid / nicemu-igb: WARNING in igb_xmit_frame_ring (igb_main.c:6533)** — warning during ping\n"), "{md}");
        assert!(md.contains("- sid / qemu-igb: ignored NETDEV WATCHDOG: transmit queue timed out in igb — ignore.toml:3: on purpose"), "{md}");
        assert!(md.contains("  WARNING: drivers/net/ethernet/intel/igb/igb_main.c:6533 at igb_xmit_frame_ring+0x3b/0x990 [igb], CPU#0: ping/412\n"));
        assert!(unused_markdown(&r).contains("- ignore.toml:9 (stale)"));
        assert!(crate::report::markdown::render(&r).contains("- ignore.toml:9 (stale)"));
        assert_eq!(table_cell(&r.runs[0]), "**1 FAIL**");
        assert_eq!(table_cell(&r.runs[1]), "1 ignored");
        let h = html(&r);
        assert!(h.contains("<details class=\"FAIL\"><summary><b>sid / nicemu-igb: WARNING in igb_xmit_frame_ring (igb_main.c:6533)</b>"), "{h}");
        assert!(h.contains("ignored by ignore.toml:3: on purpose"));
        // No splats, no section.
        let clean = report("r", vec![cell("sid", "qemu-igb", 0.5, 1.0, false)]);
        assert_eq!(markdown(&clean), "");
        assert_eq!(html(&clean), "");
        assert!(clean.passed());
    }
}
