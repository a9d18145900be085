// SPDX-License-Identifier: Apache-2.0
//! What each scenario parameter accepts, checked before a run starts: a value that does not
//! parse or is out of range is a usage error naming the parameter, the value and what is
//! allowed, instead of a silent fall-back to the default in the middle of a long run.
//!
//! Every key of [`crate::params::KNOWN`] has a rule here (a test checks it, and that every
//! default passes its own rule).

use crate::error::Error;
use crate::params::Params;

/// What one parameter accepts.
#[derive(Debug, Clone, Copy)]
pub enum Allowed {
    /// An integer in `min..=max`.
    Int(i64, i64),
    /// A decimal number in `min..=max`.
    Real(f64, f64),
    /// `0` or `1`.
    Flag,
    /// One of the words.
    OneOf(&'static [&'static str]),
    /// A comma-separated, non-empty subset of the words.
    SubsetOf(&'static [&'static str]),
    /// Empty, or an integer in `min..=max`.
    EmptyOrInt(i64, i64),
    /// A checker with the description of what it accepts.
    Rule(fn(&str) -> bool, &'static str),
}

/// The rule of every known parameter.
pub const RULES: &[(&str, Allowed)] = &[
    ("cost", Allowed::OneOf(&["auto", "1", "0", "on", "off"])),
    (
        "cost.fns",
        Allowed::Rule(kernel_functions, KERNEL_FUNCTIONS),
    ),
    (
        "cost.calls",
        Allowed::Rule(kernel_functions, KERNEL_FUNCTIONS),
    ),
    ("cost.top", Allowed::Int(0, 1000)),
    ("cost.top_share", Allowed::Real(0.0, 100.0)),
    ("cost.noise", Allowed::Real(0.0, 100.0)),
    ("cost.ghz", Allowed::Real(0.1, 10.0)),
    ("cost.ipc", Allowed::Real(0.05, 8.0)),
    ("cost.mmio_read_ns", Allowed::Real(0.0, 100_000.0)),
    ("ping.count", Allowed::Int(1, 1_000_000)),
    ("ping.interval", Allowed::Real(0.001, 60.0)),
    ("ping.size", Allowed::Int(0, 65_507)),
    ("ping.max_loss", Allowed::Real(0.0, 100.0)),
    ("netperf.tests", Allowed::Rule(netperf_tests, NETPERF_TESTS)),
    ("netperf.duration", Allowed::Int(1, 3600)),
    ("netperf.count", Allowed::Int(0, 100_000_000)),
    ("netperf.warmup", Allowed::Int(0, 3600)),
    (
        "netperf.cpumask",
        Allowed::Rule(cpu_mask, "empty, or a hex CPU mask such as 2 or 0x3"),
    ),
    ("netperf.pin", Allowed::Flag),
    ("netperf.combined", Allowed::EmptyOrInt(1, 64)),
    ("cyclictest.loops", Allowed::Int(1, 10_000_000)),
    ("cyclictest.interval", Allowed::Int(10, 1_000_000)),
    ("cyclictest.priority", Allowed::Int(1, 99)),
    ("cyclictest.histogram", Allowed::Int(1, 1_000_000)),
    ("cyclictest.threshold", Allowed::Int(1, 1_000_000)),
    ("cyclictest.stats_reader", Allowed::Flag),
    ("stats.count", Allowed::Int(1, 100_000)),
    ("stats.size", Allowed::Int(0, 65_507)),
    ("channels.pings", Allowed::Int(1, 1000)),
    ("channels.require_xps", Allowed::Flag),
    ("regsweep.reads", Allowed::Int(1, 1000)),
    ("regsweep.hw_read_us", Allowed::Real(0.0, 1000.0)),
    ("preemptoff.secs", Allowed::Int(1, 3600)),
    ("hwstamp.count", Allowed::Int(0, 1_000_000)),
    ("hwstamp.duration", Allowed::Int(0, 3600)),
    ("perf.test", Allowed::Rule(netperf_test, NETPERF_TEST)),
    (
        "perf.symbols",
        Allowed::Rule(symbols, "comma-separated C symbol names"),
    ),
    ("qdisc.duration", Allowed::Int(1, 3600)),
    ("qdisc.size", Allowed::Int(1, 65_507)),
    (
        "qdisc.rate",
        Allowed::Rule(tc_rate, "a tc rate: digits and bit, kbit, mbit or gbit"),
    ),
    ("qdisc.senders", Allowed::Int(1, 64)),
    (
        "qdisc.cpus",
        Allowed::Rule(
            cpu_list,
            "empty, or comma-separated CPU numbers such as 0,1",
        ),
    ),
    ("hostile.secs", Allowed::Int(1, 3600)),
    (
        "faults.cases",
        Allowed::SubsetOf(crate::scenario::faults::CASES),
    ),
    (
        "vf-admin.cases",
        Allowed::SubsetOf(crate::scenario::vf_admin::CASES),
    ),
    (
        "vf-reset.cases",
        Allowed::SubsetOf(crate::scenario::vf_reset::CASES),
    ),
    (
        "driver-stress.steps",
        Allowed::SubsetOf(crate::scenario::driver_stress::STEPS),
    ),
    ("driver-stress.secs", Allowed::Int(2, 600)),
    ("driver-stress.readers", Allowed::Int(1, 16)),
    ("mq.combined", Allowed::Int(0, 64)),
    ("mq.streams", Allowed::Int(1, 64)),
    ("mq.duration", Allowed::Int(1, 600)),
    ("mq.direction", Allowed::OneOf(&["out", "both"])),
    ("virtio.queues", Allowed::Int(1, 16)),
    ("virtio.coalesce", Allowed::Flag),
    ("ptp.delay_ns", Allowed::Int(0, 1_000_000_000)),
    ("rss.duration", Allowed::Int(1, 3600)),
    (
        "kselftest.tests",
        Allowed::Rule(names, "all, or comma-separated selftest names"),
    ),
    ("xdp.duration", Allowed::Int(1, 3600)),
    ("xsk.duration", Allowed::Int(1, 3600)),
    ("kselftest.igb_autoneg_ms", Allowed::Int(0, 10_000)),
    ("kselftest.igb_cable", Allowed::Flag),
    ("kselftest.timeout", Allowed::Int(1, 86_400)),
    ("rss.max_combined", Allowed::Int(0, 64)),
];

const NETPERF_TEST: &str = "a netperf test (TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, \
                            UDP_STREAM, UDP_RR), optionally :SIZE (1 to 65507)";
const NETPERF_TESTS: &str = "comma-separated netperf tests (TCP_STREAM, TCP_MAERTS, TCP_RR, \
                             TCP_CRR, UDP_STREAM, UDP_RR), each optionally :SIZE (1 to 65507)";

impl Allowed {
    /// Whether `v` is allowed.
    pub fn accepts(&self, v: &str) -> bool {
        match *self {
            Self::Int(lo, hi) => v.parse::<i64>().is_ok_and(|n| (lo..=hi).contains(&n)),
            Self::Real(lo, hi) => v.parse::<f64>().is_ok_and(|x| x >= lo && x <= hi),
            Self::Flag => v == "0" || v == "1",
            Self::OneOf(words) => words.contains(&v),
            Self::SubsetOf(words) => {
                !v.is_empty() && v.split(',').all(|w| words.contains(&w.trim()))
            }
            Self::EmptyOrInt(lo, hi) => v.is_empty() || Self::Int(lo, hi).accepts(v),
            Self::Rule(f, _) => f(v),
        }
    }

    /// What is allowed, in words.
    pub fn describe(&self) -> String {
        match *self {
            Self::Int(lo, hi) => format!("an integer from {lo} to {hi}"),
            Self::Real(lo, hi) => format!("a number from {lo} to {hi}"),
            Self::Flag => "0 or 1".to_owned(),
            Self::OneOf(words) => format!("one of {}", words.join(", ")),
            Self::SubsetOf(words) => format!("a comma-separated list of {}", words.join(", ")),
            Self::EmptyOrInt(lo, hi) => format!("empty, or an integer from {lo} to {hi}"),
            Self::Rule(_, what) => what.to_owned(),
        }
    }
}

/// The rule of `key`, if it has one.
pub fn rule(key: &str) -> Option<Allowed> {
    RULES.iter().find(|(k, _)| *k == key).map(|(_, a)| *a)
}

/// Checks `key=value`: `Err` is the one-line message for the user.
pub fn check(key: &str, value: &str) -> Result<(), String> {
    match rule(key) {
        Some(a) if !a.accepts(value) => Err(format!(
            "--param {key}={value}: not allowed; {key} takes {}",
            a.describe()
        )),
        _ => Ok(()),
    }
}

fn netperf_test(v: &str) -> bool {
    let (t, m) = match v.trim().split_once(':') {
        Some((t, m)) => (t, Some(m)),
        None => (v.trim(), None),
    };
    let known = crate::scenario::netperf::TESTS.contains(&t.to_ascii_uppercase().as_str());
    known && m.is_none_or(|m| m.parse::<u32>().is_ok_and(|n| (1..=65_507).contains(&n)))
}

fn netperf_tests(v: &str) -> bool {
    !v.trim().is_empty() && v.split(',').all(netperf_test)
}

fn cpu_mask(v: &str) -> bool {
    let hex = v.strip_prefix("0x").unwrap_or(v);
    v.is_empty()
        || (hex.len() <= 16 && !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

fn cpu_list(v: &str) -> bool {
    v.is_empty()
        || v.split(',')
            .all(|c| c.parse::<u32>().is_ok_and(|n| n < 4096) && !c.starts_with('+'))
}

fn symbols(v: &str) -> bool {
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    !v.is_empty() && v.split(',').all(ident)
}

const KERNEL_FUNCTIONS: &str =
    "comma-separated kernel function names, MODULE:NAME for a module's (at most 64)";

/// Kernel function names (`NAME` or `MODULE:NAME`), at most 64 (the plugin's limit).
fn kernel_functions(v: &str) -> bool {
    let names: Vec<&str> = v.split(',').collect();
    names.len() <= nicemu_tcg_plugin::format::MAX_FUNCTIONS
        && names.iter().all(|n| {
            let bare = n
                .split_once(':')
                .map_or(*n, |(m, f)| if m.is_empty() { "" } else { f });
            symbols(bare)
        })
}

fn tc_rate(v: &str) -> bool {
    let digits = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &v[digits.len()..];
    digits.parse::<u64>().is_ok_and(|n| n > 0) && ["bit", "kbit", "mbit", "gbit"].contains(&unit)
}

fn names(v: &str) -> bool {
    let name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/:".contains(c))
    };
    !v.is_empty() && v.split(',').map(str::trim).all(name)
}

/// Checks every value of `params` is shell-safe and what its parameter takes ([`RULES`]):
/// a number in range, a known word.
pub fn validate(params: &Params) -> crate::error::Result<()> {
    for (k, v) in &params.0 {
        check(k, v).map_err(Error::Usage)?;
        let ok = v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ",.:_-/".contains(c));
        if !ok {
            return Err(Error::Usage(format!(
                "parameter {k}={v:?}: only letters, digits and , . : _ - / are allowed"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::KNOWN;

    #[test]
    fn every_known_parameter_has_a_rule_its_default_passes() {
        for (k, d, _) in KNOWN {
            let a = rule(k).unwrap_or_else(|| panic!("{k}: no rule in param_ranges::RULES"));
            assert!(a.accepts(d), "{k}: default {d:?} is not {}", a.describe());
        }
        for (k, _) in RULES {
            assert!(
                KNOWN.iter().any(|(n, _, _)| n == k),
                "{k}: a rule of no parameter"
            );
        }
    }

    #[test]
    fn the_shipped_matrices_parameters_are_in_range() {
        use crate::matrix::{Matrix, MatrixFile, Overrides};
        for (name, text) in [
            ("default.toml", include_str!("../matrix/default.toml")),
            ("ci.toml", include_str!("../matrix/ci.toml")),
            (
                "kselftest-ci.toml",
                include_str!("../matrix/kselftest-ci.toml"),
            ),
        ] {
            let f = MatrixFile::parse(text, name).unwrap();
            Matrix::build(Some(f), &Overrides::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_number_that_does_not_parse_or_is_out_of_range_names_what_is_allowed() {
        let e = check("netperf.duration", "abc").unwrap_err();
        assert_eq!(
            e,
            "--param netperf.duration=abc: not allowed; netperf.duration takes an integer from 1 to 3600"
        );
        assert!(check("netperf.duration", "0").is_err());
        assert!(check("netperf.duration", "3601").is_err());
        assert!(check("netperf.duration", "2.5").is_err());
        check("netperf.duration", "10").unwrap();
        check("ping.interval", "0.2").unwrap();
        assert!(check("ping.interval", "-1").is_err());
        assert!(check("ping.interval", "NaN").is_err());
        assert!(check("netperf.pin", "yes").is_err());
        check("netperf.combined", "").unwrap();
        assert!(check("netperf.combined", "0").is_err());
    }

    #[test]
    fn word_lists_take_only_their_words() {
        check("netperf.tests", "TCP_RR,udp_stream:64").unwrap();
        assert!(check("netperf.tests", "TCP_RR,FOO").is_err());
        assert!(check("netperf.tests", "UDP_STREAM:0").is_err());
        check("faults.cases", "link,crc").unwrap();
        assert!(check("faults.cases", "link,flap").is_err());
        assert!(check("mq.direction", "in").is_err());
        check("netperf.cpumask", "0x3").unwrap();
        assert!(check("netperf.cpumask", "g").is_err());
        check("qdisc.rate", "200mbit").unwrap();
        assert!(check("qdisc.rate", "fast").is_err());
        check("qdisc.cpus", "").unwrap();
        check("qdisc.cpus", "0,2").unwrap();
        assert!(check("qdisc.cpus", "0,,1").is_err());
        assert!(check("qdisc.cpus", "0-1").is_err());
        assert!(check("qdisc.cpus", "+1").is_err());
        assert!(check("qdisc.senders", "0").is_err());
        check("kselftest.tests", "ping.py,hw/rss_ctx.py").unwrap();
        assert!(check("kselftest.tests", "").is_err());
    }

    #[test]
    fn a_value_out_of_its_range_is_refused_with_what_is_allowed() {
        let mut p = Params::default();
        p.set_pair("netperf.duration=abc").unwrap();
        let e = validate(&p).unwrap_err().to_string();
        assert!(e.contains("netperf.duration=abc"), "{e}");
        assert!(e.contains("an integer from 1 to 3600"), "{e}");
        let mut p = Params::default();
        p.set_pair("virtio.queues=17").unwrap();
        assert!(validate(&p).is_err());
        let mut p = Params::default();
        p.set_pair("virtio.queues=16").unwrap();
        validate(&p).unwrap();
    }
}
