// SPDX-License-Identifier: Apache-2.0
//! Parsing the guest's serial console into per-scenario sections.

use std::collections::BTreeMap;

/// Everything the guest printed with markers.
#[derive(Debug, Default, Clone)]
pub struct Console {
    /// Guest uptime (s) when `/init` started, if it did.
    pub boot_uptime: Option<f64>,
    /// Guest uptime (s) at `@@NICEMU-END`, if reached.
    pub end_uptime: Option<f64>,
    /// True if the probe-boot marker was seen.
    pub probe_ok: bool,
    /// Sections by scenario name (`init` holds `/init`'s own key/values).
    pub sections: BTreeMap<String, Section>,
}

/// One scenario's marked lines.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Section {
    /// `key=value` results in order.
    pub kv: Vec<(String, String)>,
    /// Tagged tool output lines in order: (tag, text).
    pub out: Vec<(String, String)>,
    /// Exit status from `@@NICEMU-DONE`, if the scenario finished.
    pub done_rc: Option<i32>,
    /// Guest uptime at `@@NICEMU-DONE`, if printed.
    pub done_uptime: Option<f64>,
}

impl Section {
    /// The last value printed for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.kv
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `key`'s value as seconds of uptime.
    pub fn uptime(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse().ok()
    }

    /// Output lines with `tag`.
    pub fn lines<'a>(&'a self, tag: &str) -> impl Iterator<Item = &'a str> + 'a {
        let tag = tag.to_owned();
        self.out
            .iter()
            .filter(move |(t, _)| *t == tag)
            .map(|(_, l)| l.as_str())
    }
}

impl Console {
    /// Parses serial console text (CR/LF tolerant).
    pub fn parse(text: &str) -> Self {
        let mut c = Console::default();
        for raw in text.lines() {
            let line = raw.trim_end_matches('\r');
            let Some(pos) = line.find("@@NICEMU") else {
                continue;
            };
            c.line(&line[pos..]);
        }
        c
    }

    fn line(&mut self, line: &str) {
        let (marker, rest) = line.split_once(' ').unwrap_or((line, ""));
        match marker {
            "@@NICEMU-BOOT" => self.boot_uptime = kv_value(rest, "uptime"),
            "@@NICEMU-END" => self.end_uptime = kv_value(rest, "uptime").or(Some(0.0)),
            "@@NICEMU-PROBE-OK" => self.probe_ok = true,
            "@@NICEMU-BEGIN" => {
                self.sections.entry(rest.trim().to_owned()).or_default();
            }
            "@@NICEMU-DONE" => {
                let mut it = rest.split_whitespace();
                if let Some(name) = it.next() {
                    let sec = self.sections.entry(name.to_owned()).or_default();
                    for kv in it {
                        match kv.split_once('=') {
                            Some(("rc", v)) => sec.done_rc = v.parse().ok(),
                            Some(("uptime", v)) => sec.done_uptime = v.parse().ok(),
                            _ => {}
                        }
                    }
                    if sec.done_rc.is_none() {
                        sec.done_rc = Some(-1);
                    }
                }
            }
            "@@NICEMU" => {
                let Some((name, kv)) = rest.split_once(' ') else {
                    return;
                };
                let Some((k, v)) = kv.split_once('=') else {
                    return;
                };
                self.sections
                    .entry(name.to_owned())
                    .or_default()
                    .kv
                    .push((k.to_owned(), v.to_owned()));
            }
            "@@NICEMU-OUT" => {
                let mut parts = rest.splitn(3, ' ');
                let (Some(name), Some(tag)) = (parts.next(), parts.next()) else {
                    return;
                };
                let text = parts.next().unwrap_or("");
                self.sections
                    .entry(name.to_owned())
                    .or_default()
                    .out
                    .push((tag.to_owned(), text.to_owned()));
            }
            _ => {}
        }
    }
}

fn kv_value(rest: &str, key: &str) -> Option<f64> {
    rest.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sections_and_tolerates_noise() {
        let text = "junk\r\n@@NICEMU-BOOT uptime=3.50\r\n@@NICEMU-BEGIN probe\r\n\
                    [ 1.0] noise @@NICEMU probe iface=eth0\r\n\
                    @@NICEMU-OUT probe ethtool_i driver: igb\r\n\
                    @@NICEMU-DONE probe rc=0 uptime=4.25\r\n@@NICEMU-END uptime=5.00\r\n";
        let c = Console::parse(text);
        assert_eq!(c.boot_uptime, Some(3.5));
        assert_eq!(c.end_uptime, Some(5.0));
        let p = &c.sections["probe"];
        assert_eq!(p.get("iface"), Some("eth0"));
        assert_eq!(p.lines("ethtool_i").collect::<Vec<_>>(), ["driver: igb"]);
        assert_eq!(p.done_rc, Some(0));
        assert_eq!(p.done_uptime, Some(4.25));
    }
}
