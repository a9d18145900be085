// SPDX-License-Identifier: Apache-2.0
//! Expectations of the `kselftest` scenario: per device kind, every selftest case that does
//! not PASS, with what it gives instead and why (the hardware lacks the feature, with the
//! datasheet section; or the guest setup). Kept in `nicemu-guest/kselftest/DEVICE.toml`:
//! ```toml
//! [cases."ping.test_v6"]
//! status = "SKIP"              # or alternatives: "PASS|FAIL" for a case known to vary
//! why = "the harness boots with ipv6.disable=1"
//! ```
//! A case not listed must PASS.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ktap::CaseStatus;
use crate::error::{Error, Result};

/// One expectation.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// The status (or `|`-separated statuses) the case gives.
    pub status: String,
    /// Why: what the hardware (datasheet section) or the setup lacks.
    pub why: String,
}

/// The expectations of one device kind.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// Case name (`ping.test_v6`, or a program `drivers/net/hw:ethtool.sh`) → expectation.
    #[serde(default)]
    pub cases: BTreeMap<String, Expectation>,
}

/// The expectation files in the repository, by device kind.
const FILES: &[(&str, &str)] = &[
    (
        "nicemu-igb",
        include_str!("../../kselftest/nicemu-igb.toml"),
    ),
    (
        "nicemu-ixgbe",
        include_str!("../../kselftest/nicemu-ixgbe.toml"),
    ),
    ("qemu-igb", include_str!("../../kselftest/qemu-igb.toml")),
    (
        "nicemu-virtio",
        include_str!("../../kselftest/nicemu-virtio.toml"),
    ),
    (
        "nicemu-igbvf",
        include_str!("../../kselftest/nicemu-igbvf.toml"),
    ),
    (
        "nicemu-ixgbevf",
        include_str!("../../kselftest/nicemu-ixgbevf.toml"),
    ),
];

impl Expectations {
    /// Parses one file's text (a bad file is a clear error naming the problem).
    pub fn parse(name: &str, text: &str) -> Result<Self> {
        let e: Expectations = toml::from_str(text)
            .map_err(|e| Error::Usage(format!("kselftest expectations {name}: {e}")))?;
        for (case, x) in &e.cases {
            if x.why.trim().is_empty() {
                return Err(Error::Usage(format!(
                    "kselftest expectations {name}: case {case} has no reason"
                )));
            }
            if x.statuses().is_empty() || x.status.split('|').count() != x.statuses().len() {
                return Err(Error::Usage(format!(
                    "kselftest expectations {name}: case {case}: bad status {:?} (PASS, FAIL, \
                     SKIP, XFAIL, TIMEOUT, or several joined by |)",
                    x.status
                )));
            }
        }
        Ok(e)
    }

    /// The repository's expectations for `device` (none for a kind without a file).
    pub fn for_device(device: &str) -> Option<Result<Self>> {
        FILES
            .iter()
            .find(|(d, _)| *d == device)
            .map(|(d, text)| Self::parse(d, text))
    }

    /// Checks a case's result: `None` when it is what the file says (or PASS and unlisted),
    /// else the deviation in words.
    pub fn check(&self, case: &str, got: CaseStatus) -> Option<String> {
        match self.cases.get(case) {
            None if got == CaseStatus::Pass => None,
            None => Some(format!("{case}: {} (not in the expectations)", got.word())),
            Some(x) if x.statuses().contains(&got) => None,
            Some(x) => Some(format!(
                "{case}: {} where the expectations say {} ({})",
                got.word(),
                x.status,
                x.why
            )),
        }
    }
}

impl Expectation {
    /// The statuses this expectation allows.
    pub fn statuses(&self) -> Vec<CaseStatus> {
        self.status
            .split('|')
            .filter_map(|w| CaseStatus::from_word(w.trim()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_the_repo_parses_with_reasons() {
        for (d, text) in FILES {
            let e = Expectations::parse(d, text).unwrap();
            for (case, x) in &e.cases {
                assert!(x.why.len() > 20, "{d}: {case}: reason too short");
            }
        }
    }

    #[test]
    fn unlisted_must_pass_and_listed_must_match() {
        let e = Expectations::parse(
            "t",
            "[cases.\"ping.test_v6\"]\nstatus = \"SKIP\"\nwhy = \"no IPv6 in the guest\"\n\
             [cases.\"rss.flaky\"]\nstatus = \"PASS|FAIL\"\nwhy = \"varies\"\n",
        )
        .unwrap();
        assert_eq!(e.check("ping.test_v4", CaseStatus::Pass), None);
        assert!(e
            .check("ping.test_v4", CaseStatus::Skip)
            .unwrap()
            .contains("not in the expectations"));
        assert_eq!(e.check("ping.test_v6", CaseStatus::Skip), None);
        let now_passes = e.check("ping.test_v6", CaseStatus::Pass).unwrap();
        assert!(now_passes.contains("say SKIP"), "{now_passes}");
        assert_eq!(e.check("rss.flaky", CaseStatus::Fail), None);
        assert!(e.check("rss.flaky", CaseStatus::Timeout).is_some());
    }

    #[test]
    fn bad_files_are_errors() {
        for bad in [
            "[cases.x]\nstatus = \"SKIP\"\nwhy = \"\"\n",
            "[cases.x]\nstatus = \"MAYBE\"\nwhy = \"because\"\n",
            "[cases.x]\nstatus = \"SKIP|NOPE\"\nwhy = \"because\"\n",
            "[cases.x]\nstatus = \"SKIP\"\n",
            "[cases.x]\nstatus = \"SKIP\"\nwhy = \"b\"\nextra = 1\n",
        ] {
            assert!(Expectations::parse("t", bad).is_err(), "{bad}");
        }
    }
}
