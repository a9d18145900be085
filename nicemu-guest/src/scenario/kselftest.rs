// SPDX-License-Identifier: Apache-2.0
//! `kselftest`: the kernel's own driver tests (`tools/testing/selftests/drivers/net` and
//! `drivers/net/hw`, installed at `/ksft` in the guest) against the device under test, with
//! the peer port in netns `peer` as `drivers/net/README.rst` describes: `NETIF`,
//! `LOCAL_V4`, `REMOTE_V4`, `LOCAL_V6` / `REMOTE_V6` (fd00:100::1 / ::2; a run with
//! `kselftest` boots with IPv6), `REMOTE_TYPE=netns`, `REMOTE_ARGS=peer`. Each program runs under
//! `timeout`; its KTAP test points become cases, checked against the device kind's
//! expectations file ([`super::expect`]).

use serde_json::{json, Value};

use super::expect::Expectations;
use super::ktap::{self, CaseStatus};
use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The kernel selftests scenario.
#[derive(Debug)]
pub struct Kselftest;

/// Programs in `drivers/net` + `drivers/net/hw` of Linux 7.2 (for the time budget of
/// `kselftest.tests=all`).
const ALL_COUNT: u64 = 47;

/// Exit status of a kselftest program that skipped (`KSFT_SKIP`).
const KSFT_SKIP: i32 = 4;

/// A program that needs longer than its directory's `settings` timeout in a TCG guest.
struct SlowProgram {
    /// Kselftest name (`drivers/net:gro.py`).
    name: &'static str,
    /// Its timeout in seconds.
    timeout: u64,
}

/// The programs whose timeout the harness raises above the kernel's `settings`
/// (drivers/net: 360 s). gro.py: its 318 cases took 438 s on nicemu-ixgbe in a TCG guest,
/// and 892 s with the host at load 24 on 2 cores (2026-12-02) — every LRO case that needs
/// two segments coalesced is tried six times.
const SLOW_PROGRAMS: &[SlowProgram] = &[SlowProgram {
    name: "drivers/net:gro.py",
    timeout: 1200,
}];

/// The `case` arms of the guest's `nicemu_ksft_timeout` for [`SLOW_PROGRAMS`].
fn slow_arms() -> String {
    SLOW_PROGRAMS
        .iter()
        .map(|p| {
            format!(
                "    {}) [ {t} -gt \"$to\" ] && to={t} ;;\n",
                p.name,
                t = p.timeout
            )
        })
        .collect()
}

const SCRIPT: &str = r#"cd /ksft 2>/dev/null || { nicemu_kv ksft missing; exit 1; }
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export NETIF="$IFACE" LOCAL_V4="$DUT_IP" REMOTE_V4="$PEER_IP" REMOTE_TYPE=netns REMOTE_ARGS=peer
# IPv6 too when the kernel has it (runs with kselftest boot without ipv6.disable=1).
if [ -e /proc/sys/net/ipv6 ]; then
    # Tests take the link down and up (queues, ring sizes): keep the addresses then.
    sysctl -qw net.ipv6.conf.all.keep_addr_on_down=1 net.ipv6.conf.default.keep_addr_on_down=1
    nicemu_peer sysctl -qw net.ipv6.conf.all.keep_addr_on_down=1
    sysctl -qw "net.ipv6.conf.$IFACE.keep_addr_on_down=1"
    nicemu_peer sysctl -qw "net.ipv6.conf.$PEER_IFACE.keep_addr_on_down=1"
    /usr/bin/ip -6 addr add fd00:100::1/64 dev "$IFACE" nodad
    nicemu_peer /usr/bin/ip -6 addr add fd00:100::2/64 dev "$PEER_IFACE" nodad
    /usr/bin/ip -6 neigh replace fd00:100::2 lladdr $PEER_MAC nud permanent dev "$IFACE"
    nicemu_peer /usr/bin/ip -6 neigh replace fd00:100::1 lladdr $MAC nud permanent dev "$PEER_IFACE"
    export LOCAL_V6=fd00:100::1 REMOTE_V6=fd00:100::2
    # The netkit programs (hw/nk_*.py, psp.py) put a namespace behind NETIF with an address
    # of this prefix (NetDrvContEnv); the README asks that the peer reach it via the DUT.
    export LOCAL_PREFIX_V6=fd00:101::/64
    nicemu_peer /usr/bin/ip -6 route add "$LOCAL_PREFIX_V6" via fd00:100::1 dev "$PEER_IFACE"
    nicemu_kv ipv6 1
fi
# Each of the device's interrupts on one CPU, round robin (what irqbalance or Intel's
# set_irq_affinity script leave on a test host): toeplitz.py maps queues to the CPU
# of their IRQ and fails on a multi-CPU affinity; irq.py moves an IRQ to CPUs 0-1, or
# to 0 and 2 when it is on 0-1 already (EOVERFLOW with two vCPUs). Again before each
# program: reconfigurations (ethtool -L, down/up) request new IRQs at the default.
nicemu_pin_irqs() {
    d=/sys/class/net/$IFACE/device
    [ -d "$d/msi_irqs" ] || d=$d/..
    n=$(grep -c ^processor /proc/cpuinfo); i=0
    for irq in $(ls "$d/msi_irqs" 2>/dev/null); do
        echo $((i % n)) > /proc/irq/$irq/smp_affinity_list 2>/dev/null
        i=$((i + 1))
    done
}
# A program's timeout, as run_kselftest.sh takes it from its directory's `settings`
# (timeout=0 there means none; here kselftest.timeout bounds it), never below
# kselftest.timeout, raised for the programs of SLOW_PROGRAMS.
nicemu_ksft_timeout() {
    to=$KSFT_TIMEOUT
    s=$(sed -n 's/^timeout=\([0-9]*\)$/\1/p' "/ksft/${1%%:*}/settings" 2>/dev/null | tail -n 1)
    [ "${s:-0}" -gt "$to" ] && to=$s
    case "$1" in
@SLOW@    esac
    echo "$to"
}
# How run_kselftest.sh (kselftest/runner.sh) starts a program: ./NAME, or, when the file is
# not executable, the interpreter of its #! line, with the runner's warning.
nicemu_ksft_command() {
    if [ -x "$1" ]; then echo "./$1"; return; fi
    first=$(head -n 1 "$1")
    case "$first" in
    '#!'*) echo "${first#??} ./$1" ;;
    *) echo "./$1" ;;
    esac
}
export PYTHONUNBUFFERED=1
# netpoll_basic.py configures netconsole through configfs.
mount -t configfs configfs /sys/kernel/config 2>/dev/null
# bpftrace (netpoll_basic.py) checks its kprobes against tracefs' available_filter_functions.
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
[ "$KSFT_TESTS" = all ] && KSFT_TESTS=$(cat /ksft/kselftest-list.txt)
# Forwarding-style programs (net/forwarding/lib.sh without DRIVER_TEST_CONFORMANT) take
# their ports as arguments (NETIFS p1 p2) and want both cabled back to back in this
# namespace: the peer port comes home for them and goes back to netns peer after.
nicemu_forwarding() {
    f="/ksft/${1%%:*}/${1#*:}"
    case "$f" in *.sh) ;; *) return 1 ;; esac
    grep -q 'net/forwarding/lib.sh' "$f" && ! grep -q 'DRIVER_TEST_CONFORMANT:=yes' "$f"
}
nicemu_wait_carrier() {
    n=0
    while [ $n -lt 100 ]; do
        [ "$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)" = 1 ] &&
            [ "$($1 cat /sys/class/net/$PEER_IFACE/carrier 2>/dev/null)" = 1 ] && break
        sleep 0.1; n=$((n+1))
    done
    echo $((n*100))
}
nicemu_peer_home() {
    /usr/bin/ip -n peer link set "$PEER_IFACE" netns 1
    /usr/bin/ip addr flush dev "$IFACE" scope global
    /usr/bin/ip neigh flush dev "$IFACE"
    /usr/bin/ip link set "$PEER_IFACE" up
    nicemu_kv "carrier_ms:$1" "$(nicemu_wait_carrier)"
}
nicemu_peer_back() {
    /usr/bin/ip addr flush dev "$IFACE" scope global
    /usr/bin/ip link set "$PEER_IFACE" netns peer
    /usr/bin/ip link set "$IFACE" up
    nicemu_peer /usr/bin/ip link set "$PEER_IFACE" up
    /usr/bin/ip addr add $DUT_IP/24 dev "$IFACE"
    nicemu_peer /usr/bin/ip addr add $PEER_IP/24 dev "$PEER_IFACE"
    /usr/bin/ip neigh replace $PEER_IP lladdr $PEER_MAC nud permanent dev "$IFACE"
    nicemu_peer /usr/bin/ip neigh replace $DUT_IP lladdr $MAC nud permanent dev "$PEER_IFACE"
    if [ -n "$LOCAL_V6" ]; then
        nicemu_peer sysctl -qw "net.ipv6.conf.$PEER_IFACE.keep_addr_on_down=1"
        /usr/bin/ip -6 addr add $LOCAL_V6/64 dev "$IFACE" nodad
        nicemu_peer /usr/bin/ip -6 addr add $REMOTE_V6/64 dev "$PEER_IFACE" nodad
        /usr/bin/ip -6 neigh replace $REMOTE_V6 lladdr $PEER_MAC nud permanent dev "$IFACE"
        nicemu_peer /usr/bin/ip -6 neigh replace $LOCAL_V6 lladdr $MAC nud permanent dev "$PEER_IFACE"
        # Moving the port between namespaces dropped the peer's route to the netkit prefix.
        nicemu_peer /usr/bin/ip -6 route replace "$LOCAL_PREFIX_V6" via $LOCAL_V6 dev "$PEER_IFACE"
    fi
    nicemu_kv "back_carrier_ms:$1" "$(nicemu_wait_carrier nicemu_peer)"
    # The carrier may still read 1 before the reopened ports renegotiate: the path is
    # back when the peer answers.
    n=0
    while [ $n -lt 20 ] && ! /usr/bin/ping -c 1 -W 1 "$PEER_IP" >/dev/null 2>&1; do
        n=$((n+1))
    done
    nicemu_kv "back_ping_tries:$1" $n
}
for t in $KSFT_TESTS; do
    if ! grep -qxF "$t" /ksft/kselftest-list.txt; then nicemu_kv "rc:$t" missing; continue; fi
    ports=
    if nicemu_forwarding "$t"; then ports="$IFACE $PEER_IFACE"; nicemu_peer_home "$t"; fi
    nicemu_pin_irqs
    to=$(nicemu_ksft_timeout "$t")
    nicemu_kv "timeout:$t" "$to"
    dmesg_at=$(dmesg | wc -l)
    nicemu_kv "start:$t" "$(nicemu_uptime)"
    ( cd "/ksft/${t%%:*}" && run=$(nicemu_ksft_command "${t#*:}") &&
      { [ -x "${t#*:}" ] || printf '# Warning: file %s is not executable (run as: %s)\n' "${t#*:}" "$run"; } &&
      /usr/bin/timeout -k 10 "$to" $run $ports </dev/null 2>&1
      echo $? > /tmp/ksft.rc ) | sed "s|^|@@NICEMU-OUT $SCEN t:$t |"
    nicemu_kv "rc:$t" "$(cat /tmp/ksft.rc)"
    nicemu_kv "end:$t" "$(nicemu_uptime)"
    [ -n "$ports" ] && nicemu_peer_back "$t"
    # The kernel's link messages while the program ran (what its resets did to the link,
    # when: against start/end above).
    nicemu_kv "links:$t" "$(dmesg | tail -n +$((dmesg_at + 1)) | grep -E 'Link is (Up|Down)' |
        head -n 40 | tr '\n' ';')"
done
true"#;

/// Full kselftest names (`drivers/net:ping.py`) of `list` ("all" stays as is). Short
/// forms: `ping.py` is `drivers/net:ping.py`, `hw/csum.py` is `drivers/net/hw:csum.py`.
pub fn test_names(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|t| {
            if t == "all" || t.contains(':') {
                t.to_owned()
            } else if let Some(p) = t.strip_prefix("hw/") {
                format!("drivers/net/hw:{p}")
            } else {
                format!("drivers/net:{t}")
            }
        })
        .collect()
}

impl Scenario for Kselftest {
    fn name(&self) -> &'static str {
        "kselftest"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn script(&self, p: &Params) -> String {
        let tests = test_names(&p.get("kselftest.tests"));
        format!(
            "{NEED_IFACE}{NEED_PEER}KSFT_TESTS='{}'\nKSFT_TIMEOUT={}\n\
             nicemu_kv igb_autoneg_ms {}\nnicemu_kv igb_cable {}\n{}",
            tests.join(" ").replace('\'', ""),
            p.num("kselftest.timeout").max(1.0) as u64,
            p.num("kselftest.igb_autoneg_ms").clamp(0.0, 10_000.0) as u64,
            u8::from(p.num("kselftest.igb_cable") != 0.0),
            SCRIPT.replace("@SLOW@", &slow_arms())
        )
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        let tests = test_names(&p.get("kselftest.tests"));
        let n = if tests.iter().any(|t| t == "all") {
            ALL_COUNT
        } else {
            tests.len() as u64
        };
        // Most programs end (or skip) long before their timeout; the slow ones do not.
        let typical = (p.num("kselftest.timeout").max(1.0) as u64).min(120);
        let all = tests.iter().any(|t| t == "all");
        let slow: u64 = SLOW_PROGRAMS
            .iter()
            .filter(|s| all || tests.iter().any(|t| t == s.name))
            .map(|s| s.timeout.saturating_sub(typical))
            .sum();
        n * typical + slow
    }

    fn parse(&self, s: &Section, target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("ksft") == Some("missing") {
            r.check_failed(
                "selftests in the image",
                "the guest image has no /ksft (selftests not packed)",
            );
            return r;
        }
        r.check_passed("selftests in the image");
        let mut cases: Vec<Case> = Vec::new();
        let mut programs: Vec<Value> = Vec::new();
        for (k, rc) in &s.kv {
            let Some(prog) = k.strip_prefix("rc:") else {
                continue;
            };
            let secs = match (
                s.uptime(&format!("start:{prog}")),
                s.uptime(&format!("end:{prog}")),
            ) {
                (Some(a), Some(b)) => Some(super::round(b - a, 1)),
                _ => None,
            };
            programs.push(json!({"program": prog, "rc": rc, "secs": secs}));
            let lines: Vec<&str> = s.lines(&format!("t:{prog}")).collect();
            let timeout = s.get(&format!("timeout:{prog}"));
            cases.extend(program_cases(prog, rc, &lines, timeout));
        }
        // A program the guest started but never finished (guest timeout or crash).
        for (k, _) in &s.kv {
            if let Some(prog) = k.strip_prefix("start:") {
                if s.get(&format!("rc:{prog}")).is_none() {
                    let lines: Vec<&str> = s.lines(&format!("t:{prog}")).collect();
                    cases.extend(program_cases(prog, "unfinished", &lines, None));
                }
            }
        }
        r.check("a selftest ran", !cases.is_empty(), || {
            "no selftest ran".into()
        });
        judge(&mut r, &cases, target);
        report_autoneg(&mut r, s, target);
        r.metric("programs", json!(programs));
        r.metric(
            "cases",
            Value::Array(cases.iter().map(Case::to_json).collect()),
        );
        r
    }
}

/// On nicemu's igb: the autonegotiation time its ports ran with (`autoneg=MS`, set from
/// `kselftest.igb_autoneg_ms`; 0 = nicemu's default, 1000) and whether they were cabled to
/// each other (`kselftest.igb_cable`), as metrics and in the summary.
fn report_autoneg(r: &mut ScenarioResult, s: &Section, target: &Target) {
    if target.device != "nicemu-igb" {
        return;
    }
    let ms = match s.get("igb_autoneg_ms").and_then(|v| v.parse::<u64>().ok()) {
        Some(0) => crate::vm::device::NICEMU_AUTONEG_MS,
        Some(ms) => ms,
        None => return,
    };
    let cabled = s.get("igb_cable") == Some("1");
    r.metric("igb_autoneg_ms", json!(ms));
    r.metric("igb_cable", json!(cabled));
    if let Some(sum) = &mut r.summary {
        sum.push_str(&format!(
            " (igb autonegotiation {ms} ms{})",
            if cabled { ", ports cabled" } else { "" }
        ));
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// KTAP name (`ping.test_v4`), or the program (`drivers/net/hw:ethtool.sh`) when it
    /// printed no test point.
    pub name: String,
    /// The program it belongs to.
    pub program: String,
    /// Outcome.
    pub status: CaseStatus,
    /// Skip reason, failure diagnostics, or the timeout.
    pub reason: Option<String>,
}

impl Case {
    fn to_json(&self) -> Value {
        json!({
            "case": self.name,
            "program": self.program,
            "status": self.status.word(),
            "reason": self.reason,
        })
    }
}

/// The cases of one program from its output `lines` and exit status `rc` (a number,
/// `missing` when the image has no such test, `unfinished` when it never ended) and the
/// timeout it ran under (seconds, as the guest printed it).
pub fn program_cases(prog: &str, rc: &str, lines: &[&str], timeout: Option<&str>) -> Vec<Case> {
    let doc = ktap::parse(lines.iter().copied());
    let rc_num: Option<i32> = rc.parse().ok();
    // GNU timeout: 124 after TERM, 137 when -k had to KILL.
    let timed_out = matches!(rc_num, Some(124) | Some(137)) || rc == "unfinished";
    let mut cases: Vec<Case> = doc
        .points
        .iter()
        .map(|p| Case {
            name: p.name.clone(),
            program: prog.to_owned(),
            status: p.status,
            reason: p.reason.clone().or_else(|| {
                (p.status == CaseStatus::Fail && !p.diag.is_empty()).then(|| p.diag.join(" / "))
            }),
        })
        .collect();
    let reached_plan = doc.plan.is_some_and(|n| doc.points.len() as u32 >= n);
    if timed_out && !reached_plan {
        cases.push(Case {
            name: prog.to_owned(),
            program: prog.to_owned(),
            status: CaseStatus::Timeout,
            reason: Some(if rc == "unfinished" {
                "the program never finished (the guest stopped)".into()
            } else {
                format!(
                    "stopped by its timeout ({} s) after {} of {} cases",
                    timeout.unwrap_or("?"),
                    doc.points.len(),
                    doc.plan.map_or("?".into(), |n| n.to_string())
                )
            }),
        });
    } else if doc.points.is_empty() {
        cases.push(whole_program(prog, rc, rc_num, lines));
    }
    cases
}

/// A program without test points: its exit status is the result (kselftest's convention:
/// 0 pass, 4 skip, else fail).
fn whole_program(prog: &str, rc: &str, rc_num: Option<i32>, lines: &[&str]) -> Case {
    let last: Vec<&str> = lines
        .iter()
        .rev()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    let tail = last.into_iter().rev().collect::<Vec<_>>().join(" / ");
    let (status, reason) = match rc_num {
        Some(0) => (CaseStatus::Pass, None),
        Some(KSFT_SKIP) => (CaseStatus::Skip, Some(tail)),
        Some(n) => (CaseStatus::Fail, Some(format!("exit {n}: {tail}"))),
        None if rc == "missing" => (
            CaseStatus::Fail,
            Some("no such test in the guest's kselftest-list.txt".to_owned()),
        ),
        None => (
            CaseStatus::Fail,
            Some(format!("exit status {rc:?}: {tail}")),
        ),
    };
    Case {
        name: prog.to_owned(),
        program: prog.to_owned(),
        status,
        reason,
    }
}

/// Sets the status, summary and counts from `cases` and the device's expectations.
fn judge(r: &mut ScenarioResult, cases: &[Case], target: &Target) {
    let count = |st: CaseStatus| cases.iter().filter(|c| c.status == st).count();
    let (pass, fail, skip, xfail, timeout) = (
        count(CaseStatus::Pass),
        count(CaseStatus::Fail),
        count(CaseStatus::Skip),
        count(CaseStatus::Xfail),
        count(CaseStatus::Timeout),
    );
    r.metric(
        "counts",
        json!({"pass": pass, "fail": fail, "skip": skip, "xfail": xfail, "timeout": timeout}),
    );
    let deviations: Vec<String> = match Expectations::for_device(&target.device) {
        Some(Ok(e)) => cases
            .iter()
            .filter_map(|c| e.check(&c.name, c.status))
            .collect(),
        Some(Err(e)) => vec![e.to_string()],
        // No expectations for this kind: every failure and timeout counts.
        None => cases
            .iter()
            .filter(|c| matches!(c.status, CaseStatus::Fail | CaseStatus::Timeout))
            .map(|c| format!("{}: {}", c.name, c.status.word()))
            .collect(),
    };
    r.metric("deviations", json!(deviations));
    r.summary = Some(format!(
        "{pass} pass, {skip} skip, {} fail{}",
        fail + timeout,
        if xfail > 0 {
            format!(", {xfail} xfail")
        } else {
            String::new()
        }
    ));
    // The full list is in the `deviations` metric and the case table (kselftest.tap).
    r.check(
        "every case as the expectations say",
        deviations.is_empty(),
        || {
            let shown: Vec<&str> = deviations.iter().take(5).map(String::as_str).collect();
            format!(
                "{} case(s) differ from the expectations: {}{}",
                deviations.len(),
                shown.join("; "),
                if deviations.len() > shown.len() {
                    format!("; and {} more", deviations.len() - shown.len())
                } else {
                    String::new()
                }
            )
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real run of all 47 programs (nicemu's igb, sid 7.2.13, TCG, 2 vCPUs): the kselftest
    /// section's marker lines of the serial log, without the tracebacks' frame lines.
    const IGB: &str = include_str!("../../tests/fixtures/nicemu-igb-kselftest.serial.log");

    fn target(device: &str) -> Target {
        Target {
            mac: crate::vm::device::TEST_MAC.into(),
            driver: "igb".into(),
            peer_mac: Some(crate::vm::device::PEER_MAC.into()),
            host_actions: true,
            unsupported: Vec::new(),
            device: device.into(),
            module_version: None,
        }
    }

    /// The cases of the capture that nicemu-igb.toml does not account for: the capture
    /// predates the image's pppoe module (PPPoE GRO) and cls_flower/act_skbedit (with
    /// them reconfig_tx_stall runs and reports XFAIL instead of skipping), ctr and 8021q
    /// (macsec's software SA and VLAN now work), LOCAL_PREFIX_V6 with cls_bpf (the netkit
    /// programs now print their own cases), running xdp_metadata.py by its interpreter, and the
    /// forwarding-style programs getting both ports (they failed there, they skip now).
    const IGB_OPEN: &[&str] = &[
        "macsec.test_vlan.software",
        "drivers/net/hw:nk_devmem.py",
        "drivers/net/hw:nk_netns.py",
        "drivers/net/hw:nk_qlease.py",
        "drivers/net/hw:userns_devmem.py",
        "drivers/net/hw:xdp_metadata.py",
        "drivers/net/hw:ethtool_mm.sh",
        "drivers/net/hw:hw_stats_l3.sh",
        "drivers/net/hw:hw_stats_l3_gre.sh",
        "drivers/net/hw:loopback.sh",
        "gro.test.sw_pppoev4_data_same",
        "gro.test.sw_pppoev4_data_lrg_sml",
        "gro.test.sw_pppoev4_data_lrg_1byte",
        "gro.test.sw_pppoev4_data_burst",
        "gro.test.sw_pppoev6_data_same",
        "gro.test.sw_pppoev6_data_lrg_sml",
        "gro.test.sw_pppoev6_data_lrg_1byte",
        "gro.test.sw_pppoev6_data_burst",
        "ring_reconfig.reconfig_tx_stall",
    ];

    #[test]
    fn the_igb_capture_is_what_its_expectations_file_says_but_the_open_cases() {
        let c = super::super::Console::parse(IGB);
        let r = super::super::evaluate(&Kselftest, &c, &target("nicemu-igb"));
        let cases = r.metrics["cases"].as_array().unwrap();
        assert!(cases.len() > 100, "{}", cases.len());
        let ping = cases
            .iter()
            .find(|c| c["case"] == "ping.test_default_v4")
            .unwrap();
        assert_eq!(ping["status"], "PASS");
        let mut got: Vec<&str> = r.metrics["deviations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().split(": ").next().unwrap())
            .collect();
        got.sort_unstable();
        let mut want = IGB_OPEN.to_vec();
        want.sort_unstable();
        assert_eq!(got, want);
        assert!(r.summary.unwrap().contains(" pass, "));
    }

    #[test]
    fn a_case_that_changes_is_a_deviation() {
        let broken = IGB.replace("ok 1 ping.test_default_v4", "not ok 1 ping.test_default_v4");
        let c = super::super::Console::parse(&broken);
        let r = super::super::evaluate(&Kselftest, &c, &target("nicemu-igb"));
        assert_eq!(r.status, super::super::Status::Fail);
        let d = r.metrics["deviations"].as_array().unwrap();
        assert_eq!(d.len(), IGB_OPEN.len() + 1, "{d:?}");
        assert!(d.iter().any(|x| x
            .as_str()
            .unwrap()
            .starts_with("ping.test_default_v4: FAIL")));
        let checks: Vec<(&str, bool)> = r.checks.iter().map(|c| (c.name.as_str(), c.ok)).collect();
        assert_eq!(
            checks,
            [
                (super::super::FINISHED, true),
                ("selftests in the image", true),
                ("a selftest ran", true),
                ("every case as the expectations say", false)
            ]
        );
        // Without an expectations file, expected failures count as failures.
        let r = super::super::evaluate(
            &Kselftest,
            &super::super::Console::parse(IGB),
            &target("qemu-e1000e"),
        );
        assert_eq!(r.status, super::super::Status::Fail);
    }

    #[test]
    fn slow_programs_get_their_timeout_in_the_script_and_the_budget() {
        let mut p = Params::default();
        p.set("kselftest.tests", "ping.py").unwrap();
        let ping_only = Kselftest.budget_secs(&p);
        assert!(!Kselftest.script(&p).contains("@SLOW@"));
        p.set("kselftest.tests", "gro.py").unwrap();
        let script = Kselftest.script(&p);
        assert!(
            script.contains("drivers/net:gro.py) [ 1200 -gt \"$to\" ] && to=1200 ;;"),
            "{script}"
        );
        assert_eq!(Kselftest.budget_secs(&p), 1200);
        assert_eq!(ping_only, 120);
        p.set("kselftest.tests", "all").unwrap();
        assert_eq!(Kselftest.budget_secs(&p), ALL_COUNT * 120 + 1080);
    }

    #[test]
    fn the_igb_link_settings_of_the_run_are_in_the_summary_on_nicemu_igb_only() {
        let log = "@@NICEMU-BEGIN kselftest\n\
                   @@NICEMU kselftest igb_autoneg_ms=500\n\
                   @@NICEMU kselftest igb_cable=1\n\
                   @@NICEMU kselftest start:drivers/net:ping.py=1.00\n\
                   @@NICEMU-OUT kselftest t:drivers/net:ping.py TAP version 13\n\
                   @@NICEMU-OUT kselftest t:drivers/net:ping.py 1..1\n\
                   @@NICEMU-OUT kselftest t:drivers/net:ping.py ok 1 ping.test_default_v4\n\
                   @@NICEMU kselftest rc:drivers/net:ping.py=0\n\
                   @@NICEMU kselftest end:drivers/net:ping.py=2.00\n\
                   @@NICEMU-DONE kselftest rc=0 uptime=2.10\n";
        let c = super::super::Console::parse(log);
        let r = super::super::evaluate(&Kselftest, &c, &target("nicemu-igb"));
        assert_eq!(r.metrics["igb_autoneg_ms"], 500);
        assert_eq!(r.metrics["igb_cable"], true);
        assert!(r
            .summary
            .as_deref()
            .unwrap()
            .ends_with("(igb autonegotiation 500 ms, ports cabled)"));
        let default = log.replace("igb_autoneg_ms=500", "igb_autoneg_ms=0");
        let r = super::super::evaluate(
            &Kselftest,
            &super::super::Console::parse(&default),
            &target("nicemu-igb"),
        );
        assert_eq!(r.metrics["igb_autoneg_ms"], 1000, "0 is nicemu's default");
        let r = super::super::evaluate(
            &Kselftest,
            &super::super::Console::parse(log),
            &target("nicemu-ixgbe"),
        );
        assert!(!r.metrics.contains_key("igb_autoneg_ms"));
        assert!(!r.summary.unwrap().contains("autonegotiation"));
    }

    #[test]
    fn short_names_expand_to_kselftest_names() {
        assert_eq!(
            test_names("ping.py, hw/csum.py,drivers/net/hw:ethtool.sh,all"),
            [
                "drivers/net:ping.py",
                "drivers/net/hw:csum.py",
                "drivers/net/hw:ethtool.sh",
                "all"
            ]
        );
    }

    #[test]
    fn timeout_after_some_points_keeps_them_and_adds_a_timeout_case() {
        let lines = ["TAP version 13", "1..3", "ok 1 stats.check_pause"];
        let c = program_cases("drivers/net:stats.py", "124", &lines, Some("360"));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].status, CaseStatus::Pass);
        assert_eq!(c[1].status, CaseStatus::Timeout);
        assert!(c[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("(360 s) after 1 of 3"));
    }

    #[test]
    fn programs_without_points_use_the_exit_status() {
        let skip = program_cases(
            "drivers/net/hw:ethtool.sh",
            "4",
            &["SKIP: need 2 netifs", ""],
            None,
        );
        assert_eq!(skip[0].status, CaseStatus::Skip);
        assert_eq!(skip[0].reason.as_deref(), Some("SKIP: need 2 netifs"));
        let fail = program_cases("x:y.sh", "1", &["boom"], None);
        assert_eq!(fail[0].status, CaseStatus::Fail);
        assert_eq!(fail[0].reason.as_deref(), Some("exit 1: boom"));
        assert_eq!(
            program_cases("x:y.sh", "0", &[], None)[0].status,
            CaseStatus::Pass
        );
        let missing = program_cases("x:nope.py", "missing", &[], None);
        assert_eq!(missing[0].status, CaseStatus::Fail);
        let unfinished = program_cases("x:z.py", "unfinished", &["TAP version 13", "1..2"], None);
        assert_eq!(unfinished[0].status, CaseStatus::Timeout);
    }

    #[test]
    fn failed_point_carries_its_diagnostics() {
        let lines = [
            "TAP version 13",
            "1..1",
            "# Check| At /ksft/drivers/net/stats.py, line 40",
            "# Check failed 0 != 5",
            "not ok 1 stats.pkt_byte_sum",
        ];
        let c = program_cases("drivers/net:stats.py", "1", &lines, None);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].reason.as_deref(),
            Some("Check| At /ksft/drivers/net/stats.py, line 40 / Check failed 0 != 5")
        );
    }
}
