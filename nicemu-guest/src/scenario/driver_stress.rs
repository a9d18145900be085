// SPDX-License-Identifier: Apache-2.0
//! `driver-stress`: what shakes out a driver's locking and lifetime bugs, so that a debug
//! kernel (`--kernel sid-debug`: lockdep, atomic-sleep checks, KASAN, kmemleak) reports
//! them and the splat watch fails the cell. Under traffic (a ping stream to the peer) and
//! while `driver-stress.readers` processes read every statistics path in a loop —
//! `/proc/net/dev` (`dev_seq_show()` calls `ndo_get_stats64` under `rcu_read_lock()`),
//! `ip -s -s link` (an RTM_GETLINK dump), `ip stats show` (an RTM_GETSTATS dump),
//! `ethtool -S` and the sysfs `statistics/` files of every port — the steps
//! (`driver-stress.steps`, in this order) change the device under them:
//! - `ring`: `ethtool -G` rx/tx 128 and back, twice;
//! - `channels`: `ethtool -L combined 1` and back (drivers with combined channels);
//! - `features`: `ethtool -K` gro/gso/tso/rx checksum and rx VLAN offload off and on;
//! - `coalesce`: `ethtool -C rx-usecs 50` and back;
//! - `updown`: `ip link set down` / `up`, three times;
//! - `xdp`: an XDP program attached and detached twice (`xdp-bench drop`, when in the image);
//! - `faults` (nicemu's devices, host actions): `ctl link DUT down`/`up`, `ctl fault DUT
//!   drop-rx 20`, and `stall-tx` on every TX queue until the driver resets the adapter;
//! - `reload`: `rmmod` of the driver with the traffic running and `insmod` again; both
//!   ports come back under their names, the peer into its namespace, addressed.
//!
//! Every command is bounded by `driver-stress.secs` (`rmmod`, `insmod`: 4 times that; a step
//! by the sum of its commands),
//! and the hung-task detector is set to 30 s so a stuck lock reports before the guest's
//! timeout. PASS when no step timed out, every reader kept reading, and the peer answers
//! pings at the end; a command the driver does not support (`Operation not supported`)
//! is noted, not failed. The kernel's reports are the splat watch's: every splat of the
//! scenario fails the cell with its fingerprint.

use serde_json::json;

use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The driver stress scenario.
#[derive(Debug)]
pub struct DriverStress;

/// All steps, in run order.
pub const STEPS: &[&str] = &[
    "ring", "channels", "features", "coalesce", "updown", "xdp", "faults", "reload",
];

/// Exit codes of a command that `timeout` ended (busybox: 143 for SIGTERM; coreutils: 124).
const TIMED_OUT: &[&str] = &["124", "137", "143"];

/// Exit codes of `timeout -s INT` ending `xdp-bench` as planned (busybox: 130).
const INTERRUPTED: &[&str] = &["0", "124", "130"];

/// Seconds the `faults` step waits for the driver's reset after stalling its TX queues.
const STALL_WAIT: u64 = 45;

const SCRIPT: &str = r#"echo 30 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
B=$STRESS_SECS
# nicemu_b TAG CMD...: CMD bounded by $B seconds, output tagged, TAG_rc recorded.
nicemu_b() { local tag=$1; shift; nicemu_out "$tag" timeout $B "$@"; }
nicemu_step() { nicemu_kv "step_$1" begin; STEP_T0=$(nicemu_uptime); }
nicemu_step_end() { nicemu_kv "step_$1_secs" "$(awk "BEGIN {print $(nicemu_uptime) - $STEP_T0}")"; nicemu_kv "step_$1" done; }
# Traffic for the whole scenario.
/usr/bin/ping -q -i 0.02 -W 1 $PEER_IP >/dev/null 2>&1 </dev/null &
TRAFFIC=$!
# The readers: every statistics path of every port, until /tmp/stress-stop exists.
rm -f /tmp/stress-stop /tmp/stress-r*
for r in $(seq 1 $STRESS_READERS); do
    (
        n=0; e=0
        while [ ! -e /tmp/stress-stop ]; do
            cat /proc/net/dev >/dev/null 2>&1 || e=$((e+1))
            timeout $B /usr/bin/ip -s -s link show >/dev/null 2>&1 || e=$((e+1))
            timeout $B /usr/bin/ip stats show group link >/dev/null 2>&1
            for d in /sys/class/net/*; do
                i=${d##*/}; [ "$i" = lo ] && continue
                timeout $B /usr/sbin/ethtool -S "$i" >/dev/null 2>&1
                cat $d/statistics/* >/dev/null 2>&1
            done
            n=$((n+1))
            echo "$n $e" > /tmp/stress-r$r
        done
    ) </dev/null >/dev/null 2>&1 &
    READER_PIDS="$READER_PIDS $!"
done
nicemu_kv readers $STRESS_READERS
case "$STEPS" in *" ring "*)
    nicemu_step ring
    g=$(/usr/sbin/ethtool -g "$IFACE" 2>/dev/null)
    rx=$(echo "$g" | awk '/^Current/ {c=1} c && /^RX:/ {print $2; exit}')
    tx=$(echo "$g" | awk '/^Current/ {c=1} c && /^TX:/ {print $2; exit}')
    nicemu_kv ring_current "$rx/$tx"
    for k in 1 2; do
        nicemu_b ring_small$k /usr/sbin/ethtool -G "$IFACE" rx 128 tx 128
        nicemu_carrier "$IFACE" 100
        [ -n "$rx" ] && [ -n "$tx" ] && nicemu_b ring_back$k /usr/sbin/ethtool -G "$IFACE" rx $rx tx $tx
        nicemu_carrier "$IFACE" 100
    done
    nicemu_step_end ring
esac
case "$STEPS" in *" channels "*)
    nicemu_step channels
    cur=$(/usr/sbin/ethtool -l "$IFACE" 2>/dev/null | awk '/^Current/ {p=1} p && /^Combined:/ {print $2}')
    nicemu_kv channels_current "${cur:-none}"
    if [ -n "$cur" ] && [ "$cur" != 0 ] && [ "$cur" != n/a ]; then
        nicemu_b channels_one /usr/sbin/ethtool -L "$IFACE" combined 1
        nicemu_carrier "$IFACE" 100
        nicemu_b channels_back /usr/sbin/ethtool -L "$IFACE" combined $cur
        nicemu_carrier "$IFACE" 100
    fi
    nicemu_step_end channels
esac
case "$STEPS" in *" features "*)
    nicemu_step features
    nicemu_b features_off /usr/sbin/ethtool -K "$IFACE" gro off gso off tso off rx off
    nicemu_b features_on /usr/sbin/ethtool -K "$IFACE" gro on gso on tso on rx on
    nicemu_b vlan_off /usr/sbin/ethtool -K "$IFACE" rxvlan off
    nicemu_b vlan_on /usr/sbin/ethtool -K "$IFACE" rxvlan on
    nicemu_carrier "$IFACE" 100
    nicemu_step_end features
esac
case "$STEPS" in *" coalesce "*)
    nicemu_step coalesce
    cur=$(/usr/sbin/ethtool -c "$IFACE" 2>/dev/null | awk '/^rx-usecs:/ {print $2; exit}')
    nicemu_kv coalesce_current "${cur:-none}"
    nicemu_b coalesce_set /usr/sbin/ethtool -C "$IFACE" rx-usecs 50
    [ -n "$cur" ] && [ "$cur" != n/a ] && nicemu_b coalesce_back /usr/sbin/ethtool -C "$IFACE" rx-usecs $cur
    nicemu_step_end coalesce
esac
case "$STEPS" in *" updown "*)
    nicemu_step updown
    for k in 1 2 3; do
        nicemu_b down$k /usr/bin/ip link set "$IFACE" down
        nicemu_b up$k /usr/bin/ip link set "$IFACE" up
        nicemu_carrier "$IFACE" 100
    done
    nicemu_step_end updown
esac
case "$STEPS" in *" xdp "*)
    nicemu_step xdp
    if command -v xdp-bench >/dev/null; then
        mount -t bpf bpf /sys/fs/bpf 2>/dev/null
        for k in 1 2; do
            # SIGINT after 3 s: xdp-bench detaches its program and exits 0.
            nicemu_out xdp$k timeout -s INT 3 xdp-bench drop "$IFACE" -i 1
            nicemu_carrier "$IFACE" 100
        done
        nicemu_out xdp_left /usr/bin/ip link show "$IFACE"
    else
        nicemu_kv xdp_tool missing
    fi
    nicemu_step_end xdp
esac
case "$STEPS" in *" faults "*)
    nicemu_step faults
    if [ "$HOST_ACTIONS" = 1 ] && [ "$DRIVER" != virtio_net ]; then
        nicemu_host f_down ctl link DUT down
        sleep 1
        nicemu_host f_up ctl link DUT up
        nicemu_carrier "$IFACE" 150
        nicemu_host f_drop ctl fault DUT drop-rx 20
        # The link flap may reset the adapter too (igb's watchdog task, with frames still
        # queued): only a reset after the stall counts.
        sleep 3
        m=$(dmesg | wc -l)
        nq=$(ls -d /sys/class/net/$IFACE/queues/tx-* | wc -l)
        for q in $(seq 0 $((nq - 1))); do nicemu_host f_stall$q ctl fault DUT stall-tx $q; done
        /usr/bin/ping -S 1048576 -l 300 -i 0.05 -W 1 $PEER_IP >/dev/null 2>&1 </dev/null &
        pp=$!
        n=0
        while [ $n -lt STALL_WAIT ]; do
            dmesg | tail -n +$((m + 1)) | grep -q 'Reset adapter' && break
            sleep 1; n=$((n+1))
        done
        nicemu_kv f_reset_wait_s $n
        kill $pp 2>/dev/null; wait $pp 2>/dev/null
        nicemu_carrier "$IFACE" 300
    else
        nicemu_kv faults none
    fi
    nicemu_step_end faults
esac
case "$STEPS" in *" reload "*)
    nicemu_step reload
    ko=/lib/modules/nicemu/$DRIVER.ko
    if [ -f "$ko" ]; then
        # Probing both ports again takes QEMU's igb ~25 s under TCG: 4 bounds each.
        nicemu_out rmmod timeout $((B * 4)) rmmod "$DRIVER"
        nicemu_out insmod timeout $((B * 4)) insmod "$ko"
        new=$(nicemu_iface $MAC 300)
        nicemu_kv reload_iface "${new:-none}"
        if [ -n "$new" ] && [ "$new" != "$IFACE" ]; then /usr/bin/ip link set "$new" name "$IFACE"; fi
        # The peer port: back into its namespace if the reload took it out.
        pnew=$(nicemu_iface $PEER_MAC 30)
        if [ -n "$pnew" ]; then
            [ "$pnew" != "$PEER_IFACE" ] && /usr/bin/ip link set "$pnew" name "$PEER_IFACE"
            /usr/bin/ip link set "$PEER_IFACE" netns peer
            nicemu_peer /usr/bin/ip addr add $PEER_IP/24 dev "$PEER_IFACE"
            nicemu_peer /usr/bin/ip link set "$PEER_IFACE" up
            nicemu_peer /usr/bin/ip neigh replace $DUT_IP lladdr $MAC nud permanent dev "$PEER_IFACE"
            nicemu_kv reload_peer moved
        fi
        /usr/bin/ip addr add $DUT_IP/24 dev "$IFACE" 2>/dev/null
        /usr/bin/ip link set "$IFACE" up
        /usr/bin/ip neigh replace $PEER_IP lladdr $PEER_MAC nud permanent dev "$IFACE"
        nicemu_carrier "$IFACE" 300
    else
        nicemu_kv reload_module none
    fi
    nicemu_step_end reload
esac
touch /tmp/stress-stop
n=0
while [ $n -lt $((B * 10)) ]; do
    alive=0
    for p in $READER_PIDS; do kill -0 $p 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1; n=$((n+1))
done
for p in $READER_PIDS; do kill -9 $p 2>/dev/null; done
for r in $(seq 1 $STRESS_READERS); do nicemu_kv "reader$r" "$(cat /tmp/stress-r$r 2>/dev/null | tr ' ' ,)"; done
kill $TRAFFIC 2>/dev/null; wait $TRAFFIC 2>/dev/null
nicemu_reach 30 final_reach_tries
nicemu_out final_ping timeout 30 /usr/bin/ping -q -c 5 -i 0.2 -W 2 $PEER_IP
true"#;

/// The steps `p` selects, in run order.
pub fn selected(p: &Params) -> Vec<&'static str> {
    let want: Vec<String> = p
        .get("driver-stress.steps")
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    STEPS
        .iter()
        .copied()
        .filter(|s| want.iter().any(|w| w == s))
        .collect()
}

/// The commands each step runs, each bounded by `driver-stress.secs`.
fn commands(step: &str) -> u64 {
    match step {
        "ring" => 4,
        "channels" | "coalesce" => 2,
        "features" => 4,
        "updown" => 6,
        "reload" => 12,
        _ => 2,
    }
}

impl Scenario for DriverStress {
    fn name(&self) -> &'static str {
        "driver-stress"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        let secs = p.num("driver-stress.secs") as u64;
        selected(p)
            .iter()
            .map(|s| match *s {
                // Host actions (up to 30 s each when unanswered), the reset wait.
                "faults" => STALL_WAIT + 25,
                "xdp" => 12,
                // Each command's bound is its worst case; a typical one is ~1 s.
                s => commands(s) * 2 + 3,
            })
            .sum::<u64>()
            + 2 * secs
            + 15
    }

    fn script(&self, p: &Params) -> String {
        let steps = selected(p);
        format!(
            "{NEED_IFACE}{NEED_PEER}STEPS=\" {} \"\nSTRESS_SECS={}\nSTRESS_READERS={}\n\
             nicemu_kv steps \"{}\"\n{}",
            steps.join(" "),
            p.num("driver-stress.secs") as u64,
            p.num("driver-stress.readers") as u64,
            steps.join(","),
            SCRIPT.replace("STALL_WAIT", &STALL_WAIT.to_string())
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        parse(s)
    }
}

/// The commands of a step, by tag prefix.
const TAGS: &[(&str, &[&str])] = &[
    (
        "ring",
        &["ring_small1", "ring_back1", "ring_small2", "ring_back2"],
    ),
    ("channels", &["channels_one", "channels_back"]),
    (
        "features",
        &["features_off", "features_on", "vlan_off", "vlan_on"],
    ),
    ("coalesce", &["coalesce_set", "coalesce_back"]),
    ("updown", &["down1", "up1", "down2", "up2", "down3", "up3"]),
    ("xdp", &["xdp1", "xdp2"]),
    ("faults", &[]),
    ("reload", &["rmmod", "insmod"]),
];

fn parse(s: &Section) -> ScenarioResult {
    let mut r = ScenarioResult::pass("driver-stress");
    let steps: Vec<&str> = s
        .get("steps")
        .unwrap_or_default()
        .split(',')
        .filter(|x| !x.is_empty())
        .collect();
    let mut secs = serde_json::Map::new();
    let mut unsupported = Vec::new();
    for step in &steps {
        let name = format!("{step}: finished");
        match s.get(&format!("step_{step}")) {
            Some("done") => r.check_passed(&name),
            Some(_) => {
                r.check_failed(&name, format!("step {step} did not finish"));
                continue;
            }
            None => {
                r.check_failed(&name, format!("step {step} never started"));
                continue;
            }
        }
        if let Some(t) = s
            .get(&format!("step_{step}_secs"))
            .and_then(|v| v.parse::<f64>().ok())
        {
            secs.insert((*step).to_owned(), json!(t));
        }
        check_commands(s, step, &mut r, &mut unsupported);
    }
    if steps.contains(&"faults") {
        check_faults(s, &mut r);
    }
    if steps.contains(&"reload") {
        r.check(
            "reload: interface back",
            s.get("reload_iface") != Some("none"),
            || "reload: the device under test did not come back after insmod".into(),
        );
    }
    let rounds = check_readers(s, &mut r);
    r.metric("step_secs", serde_json::Value::Object(secs));
    if !unsupported.is_empty() {
        r.metric("unsupported", json!(unsupported));
    }
    r.check(
        "peer answers after the stress",
        !matches!(s.get("final_reach_tries"), Some("none") | None),
        || "the peer does not answer pings after the stress".into(),
    );
    r.summary = Some(format!(
        "{} steps, {rounds} reader rounds{}",
        steps.len(),
        if unsupported.is_empty() {
            String::new()
        } else {
            format!(", {} unsupported", unsupported.len())
        }
    ));
    r
}

/// The exit codes of `step`'s commands: a timeout or an error fails, `Operation not
/// supported` goes to `unsupported`.
fn check_commands(s: &Section, step: &str, r: &mut ScenarioResult, unsupported: &mut Vec<String>) {
    let tags = TAGS
        .iter()
        .find(|(n, _)| *n == step)
        .map(|(_, t)| *t)
        .unwrap_or_default();
    for tag in tags {
        let Some(rc) = s.get(&format!("{tag}_rc")) else {
            continue;
        };
        if step == "xdp" && INTERRUPTED.contains(&rc) {
            continue;
        }
        let out: Vec<&str> = s.lines(tag).collect();
        let name = format!("{step}: {tag}");
        if TIMED_OUT.contains(&rc) {
            r.check_failed(
                &name,
                format!("{step}: {tag} did not finish within its bound (rc {rc})"),
            );
        } else if rc == "0" {
            r.check_passed(&name);
        } else if out.iter().any(|l| l.contains("not supported")) {
            unsupported.push(format!("{step}:{tag}"));
        } else {
            r.check_failed(
                &name,
                format!(
                    "{step}: {tag} failed (rc {rc}): {}",
                    out.last().copied().unwrap_or("no output")
                ),
            );
        }
    }
}

/// The `faults` step: every host action answered 0, the reset came within [`STALL_WAIT`].
fn check_faults(s: &Section, r: &mut ScenarioResult) {
    for (k, v) in
        s.kv.iter()
            .filter(|(k, _)| k.starts_with("f_") && k.ends_with("_ack"))
    {
        let action = k.trim_end_matches("_ack");
        r.check(&format!("faults: {action} answered"), v == "0", || {
            format!("faults: {action} answered {v}")
        });
    }
    if let Some(w) = s.get("f_reset_wait_s").and_then(|v| v.parse::<u64>().ok()) {
        r.metric("stall_reset_wait_s", json!(w));
        r.check("faults: adapter reset", w < STALL_WAIT, || {
            format!(
                "faults: the driver did not reset the adapter within {STALL_WAIT} s of stall-tx"
            )
        });
    }
}

/// The readers' `rounds,errors`: each must have completed a round. Returns the rounds.
fn check_readers(s: &Section, r: &mut ScenarioResult) -> u64 {
    let readers: Vec<(u64, u64)> =
        s.kv.iter()
            .filter(|(k, _)| k.starts_with("reader") && k.as_str() != "readers")
            .filter_map(|(_, v)| {
                let (n, e) = v.split_once(',')?;
                Some((n.parse().ok()?, e.parse().ok()?))
            })
            .collect();
    let want = s
        .get("readers")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    r.check(
        "statistics readers completed rounds",
        !(readers.len() < want || readers.iter().any(|(n, _)| *n == 0)),
        || {
            format!(
                "{} of {want} statistics readers completed a round",
                readers.iter().filter(|(n, _)| *n > 0).count()
            )
        },
    );
    let rounds: u64 = readers.iter().map(|(n, _)| n).sum();
    r.metric("reader_rounds", json!(rounds));
    r.metric(
        "reader_errors",
        json!(readers.iter().map(|(_, e)| e).sum::<u64>()),
    );
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Console;

    fn section(text: &str) -> Section {
        Console::parse(text)
            .sections
            .remove("driver-stress")
            .unwrap()
    }

    const OK: &str = "@@NICEMU-BEGIN driver-stress
@@NICEMU driver-stress iface eth0
@@NICEMU driver-stress steps ring,updown,reload
@@NICEMU driver-stress readers 2
@@NICEMU driver-stress step_ring begin
@@NICEMU driver-stress ring_small1_rc 0
@@NICEMU driver-stress ring_back1_rc 0
@@NICEMU driver-stress step_ring_secs 3.5
@@NICEMU driver-stress step_ring done
@@NICEMU driver-stress step_updown begin
@@NICEMU driver-stress down1_rc 0
@@NICEMU driver-stress up1_rc 0
@@NICEMU driver-stress step_updown done
@@NICEMU driver-stress step_reload begin
@@NICEMU driver-stress rmmod_rc 0
@@NICEMU driver-stress insmod_rc 0
@@NICEMU driver-stress reload_iface eth0
@@NICEMU driver-stress step_reload done
@@NICEMU driver-stress reader1 40,0
@@NICEMU driver-stress reader2 38,0
@@NICEMU driver-stress final_reach_tries 0
@@NICEMU-DONE driver-stress rc=0
";

    #[test]
    fn a_clean_run_passes_with_its_figures() {
        let r = parse(&section(&kv(OK)));
        assert_eq!(r.status, crate::scenario::Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["reader_rounds"], json!(78));
        assert_eq!(r.metrics["step_secs"]["ring"], json!(3.5));
    }

    /// The fixture (written `KEY VALUE` for reading) as the guest prints it: `KEY=VALUE`.
    fn kv(text: &str) -> String {
        text.lines()
            .map(|l| match l.strip_prefix("@@NICEMU driver-stress ") {
                Some(rest) => {
                    let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
                    format!("@@NICEMU driver-stress {k}={v}\n")
                }
                None => format!("{l}\n"),
            })
            .collect()
    }

    #[test]
    fn a_timed_out_command_a_stuck_step_and_a_dead_link_fail() {
        let t = kv(&OK
            .replace("down1_rc 0", "down1_rc 143")
            .replace("step_reload done", "step_reload begin")
            .replace("final_reach_tries 0", "final_reach_tries none"));
        let r = parse(&section(&t));
        assert_eq!(r.status, crate::scenario::Status::Fail);
        let f = r.reason.clone().unwrap_or_default();
        assert!(
            f.contains("updown: down1 did not finish within its bound"),
            "{f}"
        );
        assert!(f.contains("step reload did not finish"), "{f}");
        assert!(f.contains("does not answer pings"), "{f}");
    }

    #[test]
    fn unsupported_operations_are_noted_and_readers_must_read() {
        let t = kv(&OK
            .replace("ring_small1_rc 0", "ring_small1_rc 1")
            .replace("reader2 38,0", "reader2 0,0"))
        .replace(
            "@@NICEMU driver-stress ring_small1_rc=1\n",
            "@@NICEMU-OUT driver-stress ring_small1 netlink error: Operation not supported\n\
                 @@NICEMU driver-stress ring_small1_rc=1\n",
        );
        let r = parse(&section(&t));
        assert_eq!(r.metrics["unsupported"], json!(["ring:ring_small1"]));
        let f = r.reason.clone().unwrap_or_default();
        assert!(f.contains("1 of 2 statistics readers"), "{f}");
        assert!(!f.contains("ring_small1"), "{f}");
    }

    /// A real run: nicemu's ixgbe, two ports (peer in netns), stock sid 7.2.13, TCG.
    #[test]
    fn the_capture_of_a_clean_ixgbe_run_passes() {
        let text = include_str!("../../tests/fixtures/nicemu-ixgbe-driver-stress.serial.log");
        let r = parse(&section(text));
        assert_eq!(r.status, crate::scenario::Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["reader_rounds"], json!(156));
        assert_eq!(r.metrics["reader_errors"], json!(0));
        assert_eq!(
            r.metrics["step_secs"].as_object().unwrap().len(),
            STEPS.len()
        );
        assert!(r.metrics["stall_reset_wait_s"].as_u64().unwrap() < STALL_WAIT);
    }

    #[test]
    fn steps_follow_the_parameter_in_run_order() {
        let mut p = Params::default();
        p.set("driver-stress.steps", "reload,ring").unwrap();
        assert_eq!(selected(&p), ["ring", "reload"]);
        let all = DriverStress.script(&Params::default());
        for s in STEPS {
            assert!(all.contains(&format!("*\" {s} \"*)")), "{s}");
        }
        assert!(!all.contains("STALL_WAIT"));
    }
}
