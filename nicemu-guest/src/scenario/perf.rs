// SPDX-License-Identifier: Apache-2.0
//! `perf`: where the sending CPU spends its time, the seed 002 evidence. `perf record -a -g
//! -e cpu-clock` (a software clock: no PMU needed under TCG) runs around one netperf test
//! (`perf.test`, default `UDP_STREAM:1`, with `netperf.duration` and `netperf.cpumask`), then
//! `perf report --children --sort symbol` gives each of `perf.symbols` its share of all
//! samples: `children_pct` (the symbol and what it calls, as the seed's call graph shows
//! __netdev_pick_tx at 7.55 %) and `self_pct`. A guest without perf is skipped.

use serde_json::json;

use super::{
    netperf, num, round, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER,
};
use crate::params::Params;

/// perf profile scenario.
#[derive(Debug)]
pub struct Perf;

/// (children %, self %, symbol) of a `perf report --children` line
/// (`     7.55%     0.50%  [k] __netdev_pick_tx`).
pub fn parse_report_line(l: &str) -> Option<(f64, f64, String)> {
    let mut w = l.split_whitespace();
    let children = num(w.next()?.strip_suffix('%')?)?;
    let selfp = num(w.next()?.strip_suffix('%')?)?;
    let _kind = w.next().filter(|k| k.starts_with('['))?;
    Some((children, selfp, w.next()?.to_owned()))
}

fn symbols(p: &Params) -> Vec<String> {
    p.get("perf.symbols")
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
        .collect()
}

impl Scenario for Perf {
    fn name(&self) -> &'static str {
        "perf"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        p.num("netperf.duration") as u64 * 3 + 60
    }

    fn script(&self, p: &Params) -> String {
        let d = p.num("netperf.duration").max(1.0) as u64;
        let test = netperf::parse_tests(&p.get("perf.test"))
            .into_iter()
            .next()
            .unwrap_or_else(|| netperf::parse_tests("UDP_STREAM:1").remove(0));
        let m = test.size.map(|m| format!("-m {m} ")).unwrap_or_default();
        let mask = p.get("netperf.cpumask");
        let pin = if mask.is_empty() {
            String::new()
        } else {
            format!("/usr/bin/taskset {mask} ")
        };
        let pattern = symbols(p).join("|");
        format!(
            "{NEED_IFACE}{NEED_PEER}[ -x /usr/bin/perf ] || {{ nicemu_kv perf none; exit 0; }}\n\
             nicemu_kv test {}\nnicemu_kv symbols {}\n\
             nicemu_out rec timeout {} env HOME=/tmp /usr/bin/perf record -q -a -g -e cpu-clock -F 499 -o /tmp/perf.data -- \
             {pin}/usr/bin/netperf -H $PEER_IP -t {} -l {d} -P 0 -- {m}-k ELAPSED_TIME,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS\n\
             nicemu_out rep sh -c \"HOME=/tmp /usr/bin/perf report -i /tmp/perf.data --stdio --children --sort symbol \
             --percent-limit 0.01 -g none 2>/dev/null | grep -E ' ({pattern})( |\\$)'\"\n\
             nicemu_out top sh -c \"HOME=/tmp /usr/bin/perf report -i /tmp/perf.data --stdio --children --sort symbol \
             -g none 2>&1 | grep -v '^#' | grep -v '^ *\\$' | head -12\"\n\
             nicemu_kv samples \"$(HOME=/tmp /usr/bin/perf report -i /tmp/perf.data --stdio 2>/dev/null | sed -n 's/^# Samples: *\\([0-9.KM]*\\).*/\\1/p' | head -1)\"\n\
             rm -f /tmp/perf.data\ntrue",
            test.label(),
            symbols(p).join(","),
            d + 120,
            test.test,
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("perf") == Some("none") {
            r.set_skip("perf is not in the guest image (install linux-perf in the sid root)");
            return r;
        }
        let kv = netperf::parse_keyval(&s.lines("rec").collect::<Vec<_>>());
        let secs = kv.get("ELAPSED_TIME").and_then(|v| num(v)).unwrap_or(0.0);
        let sent = kv
            .get("LOCAL_SEND_CALLS")
            .and_then(|v| num(v))
            .unwrap_or(0.0);
        if !r.check("netperf result under perf", secs > 0.0, || {
            format!(
                "netperf under perf printed no result ({})",
                super::describe_rc(s.get("rec_rc"))
            )
        }) {
            return r;
        }
        r.metric("msgs_per_s_sent", json!(round(sent / secs, 1)));
        let top: Vec<&str> = s.lines("top").collect();
        if !r.check(
            "perf report samples",
            top.iter().any(|l| parse_report_line(l).is_some()),
            || format!("perf report listed no samples: {}", top.join(" | ")),
        ) {
            return r;
        }
        r.metric(
            "top",
            json!(top.iter().map(|l| l.trim()).collect::<Vec<_>>()),
        );
        let mut share = serde_json::Map::new();
        for (children, selfp, sym) in s.lines("rep").filter_map(parse_report_line) {
            share.insert(sym, json!({"children_pct": children, "self_pct": selfp}));
        }
        // A listed symbol perf did not report (under 0.01 %) had no share worth a line.
        for sym in s
            .get("symbols")
            .unwrap_or("")
            .split(',')
            .filter(|x| !x.is_empty())
        {
            share
                .entry(sym.to_owned())
                .or_insert(json!({"children_pct": 0.0, "self_pct": 0.0}));
        }
        let head = share
            .iter()
            .next()
            .and_then(|(k, v)| v["children_pct"].as_f64().map(|c| format!("{k} {c:.2} %")))
            .unwrap_or_else(|| "no listed symbol sampled".into());
        r.metric("share", serde_json::Value::Object(share));
        r.summary = Some(format!("{head}, {:.0} msg/s under perf", sent / secs));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Console, Status};

    #[test]
    fn report_lines_and_shares() {
        assert_eq!(
            parse_report_line("     7.55%     0.50%  [k] __netdev_pick_tx"),
            Some((7.55, 0.5, "__netdev_pick_tx".into()))
        );
        assert_eq!(parse_report_line("# Overhead"), None);
        let c = Console::parse(
            "@@NICEMU-BEGIN perf\n@@NICEMU perf test=UDP_STREAM:1\n\
             @@NICEMU-OUT perf rec ELAPSED_TIME=10.00\n@@NICEMU-OUT perf rec LOCAL_SEND_CALLS=120000\n\
             @@NICEMU perf symbols=__netdev_pick_tx,__skb_get_hash,skb_tx_hash\n\
             @@NICEMU-OUT perf rep      6.92%     0.31%  [k] __netdev_pick_tx                -      -\n\
             @@NICEMU-OUT perf top     40.10%     0.00%  [k] cpu_idle\n\
             @@NICEMU-OUT perf rep      5.94%     1.02%  [k] __skb_get_hash\n@@NICEMU-DONE perf rc=0\n",
        );
        let t = Target::for_test("ixgbe", Some("y"));
        let r = Perf.parse(&c.sections["perf"], &t);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(
            r.metrics["share"]["__netdev_pick_tx"]["children_pct"],
            json!(6.92)
        );
        assert_eq!(r.metrics["msgs_per_s_sent"], json!(12000.0));
        assert_eq!(
            r.metrics["share"]["skb_tx_hash"]["children_pct"],
            json!(0.0)
        );
        let empty = Console::parse(
            "@@NICEMU-BEGIN perf\n@@NICEMU-OUT perf rec ELAPSED_TIME=10.00\n\
             @@NICEMU-OUT perf top Error: no samples\n@@NICEMU-DONE perf rc=0\n",
        );
        let r = Perf.parse(&empty.sections["perf"], &t);
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("Error: no samples"));
    }

    #[test]
    fn the_report_grep_matches_lines_with_trailing_columns() {
        // perf 7.2's `--children -g none` lines end in "-      -" columns.
        let script = Perf.script(&Params::default());
        let line = script.lines().find(|l| l.contains("grep -E ' (")).unwrap();
        let pat = &line[line.find("grep -E '").unwrap() + 9..];
        let pat = pat[..pat.find('\'').unwrap()].replace("\\$", "$");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '  6.92%%  0.31%%  [k] __netdev_pick_tx   -   -\\n  1%%  1%%  [k] __netdev_pick_tx_x\\n' | grep -E '{pat}'"
            ))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), 1, "{pat}: {text}");
        assert_eq!(
            parse_report_line(text.lines().next().unwrap()).unwrap().2,
            "__netdev_pick_tx"
        );
    }

    #[test]
    fn symbol_list_refuses_shell_characters() {
        let mut p = Params::default();
        p.set("perf.symbols", "__netdev_pick_tx,$(reboot),skb_tx_hash")
            .unwrap();
        assert_eq!(symbols(&p), ["__netdev_pick_tx", "skb_tx_hash"]);
    }
}
