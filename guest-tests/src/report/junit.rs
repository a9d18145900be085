//! JUnit XML for CI systems: one test suite per (kernel, device), one test case per scenario.

use std::path::Path;

use super::RunReport;
use crate::error::{Error, Result};
use crate::scenario::Status;

/// Escapes text for XML attributes and content.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Renders the report as JUnit XML.
pub fn render(report: &RunReport) -> String {
    let (_, fail, skip) = report.counts();
    let total: usize = report.runs.iter().map(|r| r.scenarios.len()).sum();
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nicemu-guest\" tests=\"{total}\" failures=\"{fail}\" skipped=\"{skip}\" time=\"{:.1}\">\n",
        report.wall_secs
    );
    for c in &report.runs {
        let f = c
            .scenarios
            .iter()
            .filter(|r| r.status == Status::Fail)
            .count();
        let k = c
            .scenarios
            .iter()
            .filter(|r| r.status == Status::Skip)
            .count();
        let class = format!("nicemu.{}.{}", c.kernel, c.device);
        s.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\" skipped=\"{k}\" time=\"{:.1}\">\n",
            esc(&format!("{} / {}", c.kernel_label, c.device)),
            c.scenarios.len(),
            c.wall_secs
        ));
        for r in &c.scenarios {
            let t = r
                .metrics
                .get("guest_secs")
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0);
            s.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{t:.2}\"",
                esc(&class),
                esc(&r.scenario)
            ));
            let reason = esc(r.reason.as_deref().unwrap_or(""));
            match r.status {
                Status::Pass => s.push_str(" />\n"),
                Status::Skip => s.push_str(&format!(
                    ">\n      <skipped message=\"{reason}\" />\n    </testcase>\n"
                )),
                Status::Fail => {
                    let tail = esc(&c.console_tail.join("\n"));
                    s.push_str(&format!(
                        ">\n      <failure message=\"{reason}\">{reason}\n{tail}\nlogs: {}</failure>\n    </testcase>\n",
                        esc(&c.dir)
                    ));
                }
            }
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// Writes the JUnit XML to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    std::fs::write(path, render(report)).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    #[test]
    fn suites_cases_failures_and_escaping() {
        let mut c = cell("sid", "qemu-igb", 0.5, 600.0, true);
        c.scenarios[0].set_skip("needs <peer> & more");
        let x = render(&report("r", vec![c]));
        assert!(
            x.contains(
                "<testsuites name=\"nicemu-guest\" tests=\"3\" failures=\"1\" skipped=\"1\""
            ),
            "{x}"
        );
        assert!(x.contains("<testcase classname=\"nicemu.sid.qemu-igb\" name=\"netperf\""));
        assert!(x.contains("<failure message=\"TCP_RR: no result\">"));
        assert!(x.contains("<skipped message=\"needs &lt;peer&gt; &amp; more\" />"));
        assert_eq!(x.matches("<testcase").count(), 3);
    }
}
