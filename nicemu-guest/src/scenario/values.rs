// SPDX-License-Identifier: Apache-2.0
//! Reading values the guest printed: numbers with units or separators, a tool's exit
//! status, rounding for tidy JSON.

/// Parses a number that may carry a unit suffix or thousands separators ("1,234", "12ms").
pub fn num(s: &str) -> Option<f64> {
    let t: String = s
        .trim()
        .chars()
        .filter(|c| *c != ',')
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == 'e' || *c == '+')
        .collect();
    t.parse().ok()
}

/// Explains a tool's exit status printed by `nicemu_out` (`TAG_rc`): 124/143 mean the
/// guest-side `timeout` stopped it.
pub fn describe_rc(rc: Option<&str>) -> String {
    match rc {
        Some("124") | Some("143") => "timed out".into(),
        Some("127") => "tool not found in the guest".into(),
        Some(rc) => format!("exit {rc}"),
        None => "not run".into(),
    }
}

/// Rounds to `digits` decimals (for tidy JSON).
pub fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}
