//! `ptp`: `ethtool -T` timestamping capabilities and the PTP hardware clock through
//! `phc_ctl`: get, set, get (≈ set value), adj +10 s, get (≈ +10 s), freq set and read back.
//! A device without a PHC is skipped.

use serde_json::json;

use super::{num, Scenario, ScenarioResult, Section, Target, NEED_IFACE};
use crate::params::Params;

/// PTP clock scenario.
#[derive(Debug)]
pub struct Ptp;

/// Clock value the scenario sets (seconds).
const SET_TO: f64 = 1_000_000.0;

/// Parsed `ethtool -T`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timestamping {
    /// Capability words ("hardware-transmit", …).
    pub capabilities: Vec<String>,
    /// PHC index, if any.
    pub phc: Option<u32>,
    /// Hardware transmit modes ("off", "on").
    pub tx_modes: Vec<String>,
    /// Hardware receive filters.
    pub rx_filters: Vec<String>,
}

/// Parses `ethtool -T` output (old "(SOF_…)" and new "PTP Hardware Clock:" forms).
pub fn parse_ethtool_t(lines: &[&str]) -> Timestamping {
    let mut t = Timestamping::default();
    let mut section = "";
    for l in lines {
        let s = l.trim();
        if s.starts_with("Capabilities:") {
            section = "cap";
        } else if s.starts_with("Hardware Transmit Timestamp Modes:") {
            section = "tx";
        } else if s.starts_with("Hardware Receive Filter Modes:") {
            section = "rx";
        } else if let Some(v) = s
            .strip_prefix("PTP Hardware Clock:")
            .or_else(|| s.strip_prefix("Hardware timestamp provider index:"))
        {
            t.phc = v.trim().parse().ok();
            section = "";
        } else if s.ends_with(':') || s.is_empty() {
            section = "";
        } else {
            let word = s.split_whitespace().next().unwrap_or("").to_owned();
            match section {
                "cap" => t.capabilities.push(word),
                "tx" => t.tx_modes.push(word),
                "rx" => t.rx_filters.push(word),
                _ => {}
            }
        }
    }
    t
}

/// The clock value in a `phc_ctl … get` line ("clock time is 1000000.001 or …").
pub fn clock_time(lines: &[&str]) -> Option<f64> {
    lines.iter().find_map(|l| {
        let pos = l.find("clock time is ")?;
        num(&l[pos + 14..])
    })
}

/// The ppb in "clock frequency offset is 1000.000000ppb".
pub fn freq_ppb(lines: &[&str]) -> Option<f64> {
    lines.iter().find_map(|l| {
        let pos = l.find("frequency offset is ")?;
        num(&l[pos + 20..])
    })
}

const SCRIPT: &str = r#"nicemu_out ts /usr/sbin/ethtool -T "$IFACE"
phc=$(/usr/sbin/ethtool -T "$IFACE" 2>/dev/null | awk -F': *' '/PTP Hardware Clock:|provider index:/ {print $2}')
if [ -z "$phc" ] || [ "$phc" = none ] || [ ! -e /dev/ptp$phc ]; then nicemu_kv phc none; exit 0; fi
nicemu_kv phc $phc
PHC=/dev/ptp$phc
[ -x /usr/sbin/phc_ctl ] || { nicemu_kv phc_ctl missing; exit 0; }
nicemu_out get0 /usr/sbin/phc_ctl $PHC get
nicemu_out set /usr/sbin/phc_ctl $PHC set SET_TO
nicemu_out get1 /usr/sbin/phc_ctl $PHC get
nicemu_out adj /usr/sbin/phc_ctl $PHC adj 10
nicemu_out get2 /usr/sbin/phc_ctl $PHC get
nicemu_out freqset /usr/sbin/phc_ctl $PHC freq 5000
nicemu_out freqget /usr/sbin/phc_ctl $PHC freq
/usr/sbin/phc_ctl $PHC freq 0 >/dev/null 2>&1
true"#;

impl Scenario for Ptp {
    fn name(&self) -> &'static str {
        "ptp"
    }

    fn script(&self, _p: &Params) -> String {
        format!(
            "{NEED_IFACE}{}",
            SCRIPT.replace("SET_TO", &format!("{SET_TO:.1}"))
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let ts = parse_ethtool_t(&s.lines("ts").collect::<Vec<_>>());
        r.metric("capabilities", json!(ts.capabilities));
        r.metric("tx_modes", json!(ts.tx_modes));
        r.metric("rx_filters", json!(ts.rx_filters));
        if s.get("phc") == Some("none") || ts.phc.is_none() {
            r.set_skip("no PTP hardware clock (ethtool -T)");
            return r;
        }
        if s.get("phc_ctl") == Some("missing") {
            r.set_skip("phc_ctl is not in the guest image (linuxptp)");
            return r;
        }
        r.metric("phc", json!(ts.phc));
        for cap in [
            "hardware-transmit",
            "hardware-receive",
            "hardware-raw-clock",
        ] {
            if !ts.capabilities.iter().any(|c| c == cap) {
                r.add_failure(format!("ethtool -T lacks {cap}"));
            }
        }
        for step in ["get0", "set", "get1", "adj", "get2", "freqset", "freqget"] {
            if s.get(&format!("{step}_rc")) != Some("0") {
                let out: Vec<&str> = s.lines(step).collect();
                r.add_failure(format!("phc_ctl {step} failed: {}", out.join(" ")));
            }
        }
        let get = |tag: &str| clock_time(&s.lines(tag).collect::<Vec<_>>());
        let (t1, t2) = (get("get1"), get("get2"));
        if let Some(t0) = get("get0") {
            r.metric("time_before_set", json!(t0));
        }
        match t1 {
            Some(t) if (t - SET_TO).abs() < 5.0 => r.metric("after_set", json!(t)),
            Some(t) => r.add_failure(format!("clock reads {t} after set {SET_TO}")),
            None => r.add_failure("no clock time after set"),
        }
        match (t1, t2) {
            (Some(a), Some(b)) if (b - a - 10.0).abs() < 5.0 => {
                r.metric("after_adj_10s", json!(b - a))
            }
            (Some(a), Some(b)) => {
                r.add_failure(format!("adj 10 moved the clock by {:.3} s", b - a))
            }
            _ => {}
        }
        match freq_ppb(&s.lines("freqget").collect::<Vec<_>>()) {
            Some(f) if (f - 5000.0).abs() < 100.0 => r.metric("freq_ppb", json!(f)),
            Some(f) => r.add_failure(format!("freq reads {f} ppb after setting 5000")),
            None => r.add_failure("phc_ctl freq printed no frequency"),
        }
        r.summary = Some(format!("PHC {}", ts.phc.unwrap_or(0)));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phc_ctl_lines() {
        let g = ["phc_ctl[12.3]: clock time is 1000000.004612045 or Mon Jan 12 13:46:40 1970"];
        assert!((clock_time(&g).unwrap() - 1_000_000.004_6).abs() < 1e-3);
        let f = ["phc_ctl[12.3]: clock frequency offset is 5000.000000ppb"];
        assert_eq!(freq_ppb(&f), Some(5000.0));
    }
}
