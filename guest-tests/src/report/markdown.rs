//! Markdown results table: device × scenario plus key metrics, then failure details.

use super::RunReport;
use crate::scenario::Status;

/// Renders the results table and failure details.
pub fn render(report: &RunReport, scenarios: &[&str]) -> String {
    let mut s = format!(
        "## nicemu-guest results (run {}, kernel {}, accel {})\n\n",
        report.run_id, report.kernel, report.accel
    );
    s.push_str("| device |");
    for sc in scenarios {
        s.push_str(&format!(" {sc} |"));
    }
    s.push_str(" boot→userspace | boot→result |\n|---|");
    for _ in scenarios {
        s.push_str("---|");
    }
    s.push_str("---|---|\n");
    for d in &report.devices {
        s.push_str(&format!("| {} |", d.device));
        for sc in scenarios {
            let cell = d
                .scenarios
                .iter()
                .find(|r| r.scenario == *sc)
                .map(|r| match r.status {
                    Status::Pass => "PASS".to_owned(),
                    st => format!("**{st}**"),
                })
                .unwrap_or_else(|| "—".into());
            s.push_str(&format!(" {cell} |"));
        }
        s.push_str(&format!(
            " {} | {} |\n",
            secs(d.secs_to_userspace),
            match d.secs_to_result {
                Some(_) => secs(d.secs_to_result),
                None => d.boot.clone(),
            }
        ));
    }
    let mut details = String::new();
    for d in &report.devices {
        if let Some(e) = &d.error {
            details.push_str(&format!("- {}: {e}\n", d.device));
        }
        for r in &d.scenarios {
            if r.status != Status::Pass {
                details.push_str(&format!(
                    "- {} / {}: {} — {}\n",
                    d.device,
                    r.scenario,
                    r.status,
                    r.reason.as_deref().unwrap_or("")
                ));
            }
        }
        if !d.console_tail.is_empty() {
            details.push_str(&format!(
                "- {} console ended with ({}, logs in {}):\n",
                d.device, d.boot, d.dir
            ));
            for l in &d.console_tail {
                details.push_str(&format!("    {l}\n"));
            }
        }
    }
    if !details.is_empty() {
        s.push_str("\n### Problems\n\n");
        s.push_str(&details);
    }
    s
}

fn secs(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1} s")).unwrap_or_else(|| "—".into())
}
