// SPDX-License-Identifier: Apache-2.0
//! A tolerant reader of the KTAP / TAP 13 test points kselftest programs print
//! (`tools/testing/selftests/net/lib/py/ksft.py`: `ktap_result`, and `kselftest.h`).
//!
//! Written here rather than taken from a crate: the one TAP parser on crates.io
//! (`tap_parser` 0.1) accepts only a document starting with `TAP version 14`, stops at the
//! first line it does not know and rejects the `XFAIL` directive. A test program's output as
//! the guest prints it starts with `TAP version 13` (or `KTAP version 1`), is mixed with
//! Python tracebacks and tool output, and uses `# XFAIL`; every test point must still be
//! found, so lines that are not test points or the plan are skipped, not errors.

use serde::{Deserialize, Serialize};

/// Outcome of one KTAP test point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// `ok N name`.
    Pass,
    /// `not ok N name` (without a SKIP / XFAIL directive).
    Fail,
    /// `ok N name # SKIP reason`.
    Skip,
    /// `ok N name # XFAIL reason`: a failure the test itself expects.
    Xfail,
    /// The harness's `timeout` stopped the program before it printed this point.
    Timeout,
}

impl CaseStatus {
    /// The word used in tables ("PASS", "FAIL", …).
    pub fn word(self) -> &'static str {
        match self {
            CaseStatus::Pass => "PASS",
            CaseStatus::Fail => "FAIL",
            CaseStatus::Skip => "SKIP",
            CaseStatus::Xfail => "XFAIL",
            CaseStatus::Timeout => "TIMEOUT",
        }
    }

    /// Parses [`word`](Self::word)'s output (any case).
    pub fn from_word(w: &str) -> Option<Self> {
        Some(match w.to_ascii_uppercase().as_str() {
            "PASS" => CaseStatus::Pass,
            "FAIL" => CaseStatus::Fail,
            "SKIP" => CaseStatus::Skip,
            "XFAIL" => CaseStatus::Xfail,
            "TIMEOUT" => CaseStatus::Timeout,
            _ => return None,
        })
    }
}

/// One test point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// The number after `ok` / `not ok`.
    pub number: u32,
    /// The description (`ping.test_v4`).
    pub name: String,
    /// What the point says.
    pub status: CaseStatus,
    /// The directive's reason (`# SKIP reason`), if any.
    pub reason: Option<String>,
    /// The last few diagnostic lines (`# …`) printed since the previous point (ksft.py's
    /// `Check|` / `Exception|` lines say why a case failed).
    pub diag: Vec<String>,
}

/// Diagnostic lines kept per point.
const DIAG_LINES: usize = 4;

/// The test points and plan of one program's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// The `1..N` plan, if printed.
    pub plan: Option<u32>,
    /// The test points in order.
    pub points: Vec<Point>,
}

/// Reads every top-level test point and the plan from `lines`. Indented (nested) KTAP and
/// lines of other text are skipped; ANSI colour codes (ksft.py colours results on a tty)
/// are removed first.
pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Document {
    let mut doc = Document::default();
    let mut diag: Vec<String> = Vec::new();
    for raw in lines {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        if let Some(n) = line.strip_prefix("1..") {
            if doc.plan.is_none() {
                doc.plan = n.trim().parse().ok();
            }
        } else if let Some(mut p) = point(line) {
            p.diag = std::mem::take(&mut diag);
            doc.points.push(p);
        } else if let Some(c) = line.strip_prefix('#') {
            let c = c.trim();
            if !c.is_empty() && !c.starts_with("Totals:") {
                if diag.len() == DIAG_LINES {
                    diag.remove(0);
                }
                diag.push(c.to_owned());
            }
        }
    }
    doc
}

/// Parses `ok N desc [# DIRECTIVE reason]` / `not ok N …`.
fn point(line: &str) -> Option<Point> {
    let (ok, rest) = if let Some(r) = line.strip_prefix("not ok ") {
        (false, r)
    } else {
        (true, line.strip_prefix("ok ")?)
    };
    let (num, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let number: u32 = num.parse().ok()?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let (desc, directive) = match rest.split_once(" # ") {
        Some((d, dir)) => (d, Some(dir.trim())),
        None => match rest.strip_prefix("# ") {
            Some(dir) => ("", Some(dir.trim())),
            None => (rest, None),
        },
    };
    let (status, reason) = match directive.map(directive_kind) {
        Some((Some(kind), reason)) => (kind, reason),
        _ if ok => (CaseStatus::Pass, None),
        _ => (CaseStatus::Fail, None),
    };
    Some(Point {
        number,
        name: desc.trim().to_owned(),
        status,
        reason,
        diag: Vec::new(),
    })
}

/// `SKIP reason` / `XFAIL reason` → kind and reason; other comments are no directive.
fn directive_kind(d: &str) -> (Option<CaseStatus>, Option<String>) {
    let (word, reason) = d.split_once(char::is_whitespace).unwrap_or((d, ""));
    let kind = match word.to_ascii_uppercase().as_str() {
        "SKIP" => Some(CaseStatus::Skip),
        "XFAIL" => Some(CaseStatus::Xfail),
        _ => None,
    };
    let reason = reason.trim();
    (kind, (!reason.is_empty()).then(|| reason.to_owned()))
}

/// Removes ANSI CSI sequences (`ESC [ … letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\u{1b}' && it.peek() == Some(&'[') {
            it.next();
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ksft_py_output_with_noise_gives_every_point() {
        let text = "TAP version 13\n1..4\n\
                    # Exception| Traceback (most recent call last):\n\
                    # Exception|   File \"x.py\", line 3\n\
                    ok 1 ping.test_v4\n\
                    ok 2 ping.test_v6 # SKIP Test requires IPv6 connectivity\n\
                    not ok 3 ping.test_tcp\n\
                    [   12.5] igb 0000:01:00.0 eth0: Reset adapter\n\
                    \u{1b}[33mok 4 ping.test_xdp_generic # XFAIL driver lacks it\u{1b}[0m\n\
                    # Totals: pass:1 fail:1 xfail:1 xpass:0 skip:1 error:0\n";
        let d = parse(text.lines());
        assert_eq!(d.plan, Some(4));
        assert_eq!(d.points[0].diag.len(), 2);
        assert!(d.points[0].diag[1].starts_with("Exception|   File"));
        assert!(d.points[1].diag.is_empty());
        let got: Vec<(u32, &str, CaseStatus, Option<&str>)> = d
            .points
            .iter()
            .map(|p| (p.number, p.name.as_str(), p.status, p.reason.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "ping.test_v4", CaseStatus::Pass, None),
                (
                    2,
                    "ping.test_v6",
                    CaseStatus::Skip,
                    Some("Test requires IPv6 connectivity")
                ),
                (3, "ping.test_tcp", CaseStatus::Fail, None),
                (
                    4,
                    "ping.test_xdp_generic",
                    CaseStatus::Xfail,
                    Some("driver lacks it")
                ),
            ]
        );
    }

    #[test]
    fn nested_points_comments_and_garbage_are_not_points() {
        let text = "  ok 1 nested\n# ok 2 commented\nokay 3\nok x name\nnot ok\n\
                    ok 5 - dashed # TODO later\n";
        let d = parse(text.lines());
        assert_eq!(d.plan, None);
        assert_eq!(d.points.len(), 1);
        assert_eq!(d.points[0].name, "dashed");
        // TODO is no SKIP/XFAIL: the point's own ok/not ok decides.
        assert_eq!(d.points[0].status, CaseStatus::Pass);
    }

    #[test]
    fn skip_without_reason_and_status_words_round_trip() {
        let d = parse(["ok 1 t # SKIP", "not ok 2 u # SKIP why"]);
        assert_eq!(d.points[0].status, CaseStatus::Skip);
        assert_eq!(d.points[0].reason, None);
        assert_eq!(d.points[1].status, CaseStatus::Skip);
        for s in [
            CaseStatus::Pass,
            CaseStatus::Fail,
            CaseStatus::Skip,
            CaseStatus::Xfail,
            CaseStatus::Timeout,
        ] {
            assert_eq!(CaseStatus::from_word(s.word()), Some(s));
        }
        assert_eq!(CaseStatus::from_word("maybe"), None);
    }
}
