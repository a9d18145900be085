// SPDX-License-Identifier: Apache-2.0
//! Parser tests on a real capture: QEMU's igb, two ports (peer in netns), sid kernel 7.2,
//! TCG, all scenarios (`tests/fixtures/qemu-igb-netns-all.serial.log`).

use super::*;
use crate::vm::device::{PEER_MAC, TEST_MAC};

const ALL: &str = include_str!("../../tests/fixtures/qemu-igb-netns-all.serial.log");

fn target() -> Target {
    Target {
        module_version: None,
        mac: TEST_MAC.into(),
        driver: "igb".into(),
        peer_mac: Some(PEER_MAC.into()),
        host_actions: true,
        unsupported: Vec::new(),
        device: String::new(),
    }
}

fn eval(name: &str, text: &str) -> ScenarioResult {
    let sc = by_name(name).unwrap();
    evaluate(sc.as_ref(), &Console::parse(text), &target())
}

/// A cell of the capture's network setup and its probe, ping, netperf and cyclictest
/// results, as `run` evaluates them.
pub(crate) fn capture_cell() -> crate::report::CellRun {
    let c = Console::parse(ALL);
    let mut cell = crate::report::testdata::cell("sid", "qemu-igb", 0.0, 0.0, false);
    cell.setup = Some(setup::parse(c.sections.get(setup::NAME), &target()));
    cell.scenarios = ["probe", "ping", "netperf", "cyclictest"]
        .iter()
        .map(|n| eval(n, ALL))
        .collect();
    cell
}

#[test]
fn every_scenario_of_the_capture_passes() {
    let c = Console::parse(ALL);
    let setup = setup::parse(c.sections.get(setup::NAME), &target());
    assert_eq!(setup.status, Status::Pass, "{:?}", setup.reason);
    assert_eq!(setup.metrics["peer_iface"], "eth1");
    // The capture predates `faults`, `rss` and `mq` (they have their own captures below) and the
    // `ptp` rate check and ptp4l runs (without them `ptp` fails: see `ptp_needs_the_rate_check`);
    // `regsweep` needs nicemu's register trace (its parser test is in regsweep.rs); `ethtool`
    // has its own capture (ethtool_ops.rs), `xsk` too (xsk.rs), `driver-stress` too
    // (driver_stress.rs); `vf-admin` and `vf-reset` need nicemu's SR-IOV VFs (their parser
    // tests are in vf_admin.rs and vf_reset.rs).
    for name in NAMES.iter().filter(|n| {
        ![
            "faults",
            "rss",
            "ptp",
            "mq",
            "regsweep",
            "preemptoff",
            "hwstamp",
            "perf",
            "hostile",
            "kselftest",
            "ethtool",
            "xdp",
            "xsk",
            "driver-stress",
            "vf-admin",
            "vf-reset",
        ]
        .contains(n)
    }) {
        let r = eval(name, ALL);
        assert_eq!(r.status, Status::Pass, "{name}: {:?}", r.reason);
        assert!(r.summary.is_some(), "{name} has no headline");
        // Each check it made is named and held; the harness's own comes first.
        assert_eq!(
            r.checks.first().map(|c| c.name.as_str()),
            Some(FINISHED),
            "{name}"
        );
        assert!(
            r.checks.iter().all(|c| c.ok && c.failure.is_none()),
            "{name}"
        );
    }
}

#[test]
fn ping_and_netperf_numbers() {
    let p = eval("ping", ALL);
    assert_eq!(p.metrics["transmitted"], 1000);
    assert_eq!(p.metrics["loss_pct"], 0.0);
    assert!(p.metrics["rtt_avg_ms"].as_f64().unwrap() > 0.0);
    let n = eval("netperf", ALL);
    let t = &n.metrics["tests"];
    assert_eq!(t["TCP_STREAM"]["throughput"], 165.57);
    assert_eq!(t["TCP_STREAM"]["units"], "10^6bits/s");
    assert_eq!(t["TCP_RR"]["units"], "Trans/s");
    assert_eq!(t["UDP_STREAM:64"]["msgs_per_s_received"], 8204.0);
    assert!(n.summary.unwrap().contains("TCP_STREAM 166 Mbit/s"));
}

#[test]
fn stats_deltas_are_exact_and_double_counting_is_caught() {
    let r = eval("stats", ALL);
    assert_eq!(r.metrics["checked"], 14);
    assert_eq!(r.metrics["deltas"]["dut_ip"]["tx_bytes"]["delta"], 56800);
    // A second reading that grew without traffic is a failure.
    let bad = ALL.replacen(
        "b_dut_ethtool      rx_packets: ",
        "b_dut_ethtool      rx_packets: 9",
        1,
    );
    let r = eval("stats", &bad);
    assert_eq!(r.status, Status::Fail);
    assert!(r.reason.unwrap().contains("without traffic"));
}

#[test]
fn channels_qdisc_ptp_details() {
    let c = eval("channels", ALL);
    assert_eq!(c.metrics["max_combined"], 8);
    assert_eq!(c.metrics["counts"].as_object().unwrap().len(), 8);
    assert_eq!(c.metrics["counts"]["3"]["tx_queues"], 3);
    let q = eval("qdisc", ALL);
    for level in ["prio", "tbf", "fq_codel"] {
        assert!(
            q.metrics["levels"][level]["packets"].as_u64().unwrap() > 1000,
            "{level}"
        );
    }
    assert!(q.metrics["pps"].as_f64().unwrap() > 1000.0);
    let p = eval("ptp", ALL);
    assert_eq!(p.metrics["phc"], 0);
    assert_eq!(p.metrics["freq_ppb"], 5000.0);
    assert!(p.metrics["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "hardware-raw-clock"));
}

#[test]
fn skips_and_missing_peer() {
    let mut t = target();
    t.peer_mac = None;
    let r = evaluate(&ping::Ping, &Console::parse(ALL), &t);
    assert_eq!(r.status, Status::Skip);
    let no_phc = ALL
        .replace(
            "Hardware timestamp provider index: 0",
            "Hardware timestamp provider index: none",
        )
        .replace("@@NICEMU ptp phc=0", "@@NICEMU ptp phc=none");
    assert_eq!(eval("ptp", &no_phc).status, Status::Skip);
    let no_peer = "@@NICEMU-BEGIN ping\n@@NICEMU ping iface=eth0\n@@NICEMU ping peer=none\n@@NICEMU-DONE ping rc=1\n";
    let r = eval("ping", no_peer);
    assert_eq!(r.status, Status::Fail);
    assert!(r.reason.unwrap().contains("peer is not set up"));
}

#[test]
fn netperf_timeout_aborts_the_rest() {
    let text = "@@NICEMU-BEGIN netperf\n@@NICEMU netperf iface=eth0\n@@NICEMU netperf test0=TCP_STREAM\n\
                @@NICEMU netperf np0_rc=143\n@@NICEMU netperf aborted=0\n@@NICEMU netperf test1=TCP_RR\n\
                @@NICEMU-DONE netperf rc=0\n";
    let r = eval("netperf", text);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("TCP_STREAM: no result (timed out)"),
        "{reason}"
    );
    assert!(reason.contains("TCP_RR: not run"), "{reason}");
    let checks: Vec<(&str, bool)> = r.checks.iter().map(|c| (c.name.as_str(), c.ok)).collect();
    assert_eq!(
        checks,
        [
            (FINISHED, true),
            ("TCP_STREAM result", false),
            ("TCP_RR result", false)
        ]
    );
}

#[test]
fn failed_checks_are_named_and_the_others_still_pass() {
    let mut t = target();
    t.driver = "e1000e".into();
    let r = evaluate(&probe::Probe, &Console::parse(ALL), &t);
    let failed: Vec<(&str, Option<&str>)> = r
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| (c.name.as_str(), c.failure.as_deref()))
        .collect();
    assert_eq!(
        failed,
        [("driver bound", Some("driver igb bound, expected e1000e"))]
    );
    assert!(r.checks.iter().any(|c| c.name == "carrier up" && c.ok));
    assert_eq!(r.failures, ["driver igb bound, expected e1000e"]);
    let unfinished = ALL.replace("@@NICEMU-DONE ping ", "@@NICEMU-GONE ping ");
    let r = eval("ping", &unfinished);
    assert_eq!(
        (r.checks[0].name.as_str(), r.checks[0].ok),
        (FINISHED, false)
    );
    let r = eval("ping", "");
    assert_eq!((r.checks.len(), r.checks[0].name.as_str()), (1, STARTED));
}

#[test]
fn nicemu_igb_capture_passes_stats_channels_qdisc_ptp() {
    let text =
        include_str!("../../tests/fixtures/nicemu-igb-netns-stats-channels-qdisc-ptp.serial.log");
    for name in ["probe", "stats", "channels", "qdisc"] {
        let r = eval(name, text);
        assert_eq!(r.status, Status::Pass, "{name}: {:?}", r.reason);
    }
    assert_eq!(eval("stats", text).metrics["checked"], 14);
}

/// A capture from before the rate check (get/set/adj/freq only, which a stopped clock
/// passed) no longer passes.
#[test]
fn ptp_needs_the_rate_check() {
    let text =
        include_str!("../../tests/fixtures/nicemu-igb-netns-stats-channels-qdisc-ptp.serial.log");
    let r = eval("ptp", text);
    assert_eq!(r.status, Status::Fail);
    assert!(r.reason.unwrap().contains("gave no two offsets"));
}

const IGB_PTP: &str = include_str!("../../tests/fixtures/nicemu-igb-ptp.serial.log");

#[test]
fn nicemu_igb_ptp_capture_rate_and_ptp4l() {
    let r = eval_as("ptp", IGB_PTP, "igb", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    for who in ["dut", "peer"] {
        let rate = r.metrics[&format!("{who}_rate_ppm")].as_f64().unwrap();
        assert!((rate - 100.0).abs() < 2.0, "{who} {rate}");
        let d0 = r.metrics[&format!("{who}_drift_ppm_0")].as_f64().unwrap();
        assert!(d0.abs() < 3.0, "{who} {d0}");
    }
    for tr in ["ptp4l_l2", "ptp4l_udpv4"] {
        assert_eq!(r.metrics[tr]["locked"], true, "{tr}");
        assert!(r.metrics[tr]["rms_ns"].as_f64().unwrap() < 1000.0, "{tr}");
    }
    // A clock that ignores `freq`: both offsets of every step equal.
    let stopped = IGB_PTP
        .lines()
        .map(|l| match l.find("offset from CLOCK_REALTIME is ") {
            Some(p) => format!("{}offset from CLOCK_REALTIME is 5ns", &l[..p]),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let r = eval_as("ptp", &stopped, "igb", true);
    assert_eq!(r.status, Status::Fail);
    assert!(r.reason.unwrap().contains("changed the rate by 0.00 ppm"));
    // No rms lines: a failure on nicemu, informational on QEMU's device.
    let unlocked: String = IGB_PTP
        .lines()
        .filter(|l| !l.contains(" rms "))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = eval_as("ptp", &unlocked, "igb", true);
    assert_eq!(r.status, Status::Fail);
    assert!(r.reason.unwrap().contains("no rms line"));
    let r = eval_as("ptp", &unlocked, "igb", false);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    assert!(r.metrics["ptp4l_skipped"]
        .as_str()
        .unwrap()
        .contains("issue 6"));
}

/// Topology `mixed` (nicemu igb0 device under test, ixgbe1 peer), `ptp.delay_ns=50000`,
/// sid 7.2, TCG: ping and ptp.
#[test]
fn nicemu_mixed_capture_path_delay() {
    let text = include_str!("../../tests/fixtures/nicemu-mixed-ping-ptp-delay50000.serial.log");
    assert_eq!(eval_as("ping", text, "igb", true).status, Status::Pass);
    let r = eval_as("ptp", text, "igb", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    assert_eq!(r.metrics["delay_expected_ns"], 50000.0);
    for tr in ["ptp4l_l2", "ptp4l_udpv4"] {
        let d = r.metrics[tr]["delay_ns"].as_f64().unwrap();
        assert!((d - 50000.0).abs() <= 200.0, "{tr} {d}");
    }
    // The same run judged against another delay fails.
    let other = text.replace("ptp delay_ns=50000", "ptp delay_ns=60000");
    let r = eval_as("ptp", &other, "igb", true);
    assert!(r.reason.unwrap().contains("want 60000 ± 200 ns"));
}

#[test]
fn ptp_delay_ns_checks_the_path_delay() {
    // This capture ran without a wire delay: ptp4l's path delay is 0 ns.
    let with = |ns: u32| {
        IGB_PTP.replace(
            "@@NICEMU ptp iface=eth0",
            &format!("@@NICEMU ptp iface=eth0\n@@NICEMU ptp delay_ns={ns}"),
        )
    };
    let r = eval_as("ptp", &with(150), "igb", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    assert_eq!(r.metrics["delay_expected_ns"], 150.0);
    let r = eval_as("ptp", &with(50000), "igb", true);
    assert_eq!(r.status, Status::Fail);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("ptp4l L2: path delay 0 ns, want 50000 ± 200 ns"),
        "{reason}"
    );
    assert!(reason.contains("ptp4l UDPv4: path delay 0 ns"), "{reason}");
}

const IGB_FAULTS: &str = include_str!("../../tests/fixtures/nicemu-igb-faults-rss.serial.log");
const IXGBE_FAULTS: &str = include_str!("../../tests/fixtures/nicemu-ixgbe-faults-rss.serial.log");

fn eval_as(name: &str, text: &str, driver: &str, host_actions: bool) -> ScenarioResult {
    let mut t = target();
    t.driver = driver.into();
    t.host_actions = host_actions;
    let sc = by_name(name).unwrap();
    evaluate(sc.as_ref(), &Console::parse(text), &t)
}

#[test]
fn nicemu_igb_faults_capture_passes_every_case() {
    let r = eval_as("faults", IGB_FAULTS, "igb", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    let m = &r.metrics;
    assert_eq!(m["passed_cases"].as_array().unwrap().len(), 5);
    assert_eq!(m["crc_errors_delta"], 10);
    assert_eq!(m["capture_echo"]["requests"], 5);
    assert_eq!(m["capture_echo"]["replies"], 5);
    assert_eq!(m["stats_compared"]["rx_packets/GPRC"]["ctl"], 40);
    assert_eq!(m["stats_compared"]["rx_packets/GPRC"]["ethtool"], 40);
    assert_eq!(m["stats_compared"]["tx_multicast/MPTC"]["ctl"], 10);
    assert!(m["stall_hang_log"]
        .as_str()
        .unwrap()
        .contains("Detected Tx Unit Hang"));
    assert!(m["link_down_log"]
        .as_str()
        .unwrap()
        .contains("Link is Down"));
}

#[test]
fn nicemu_igb_faults_failures_are_caught() {
    let crc = IGB_FAULTS.replacen(
        "crc_b      rx_crc_errors: 10",
        "crc_b      rx_crc_errors: 9",
        1,
    );
    let r = eval_as("faults", &crc, "igb", true);
    assert_eq!(r.status, Status::Fail);
    assert!(r
        .reason
        .unwrap()
        .contains("rx_crc_errors +9 (expected +10)"));
    let no_reset = IGB_FAULTS.replace("eth0: Reset adapter", "eth0: nothing");
    let r = eval_as("faults", &no_reset, "igb", true);
    assert!(r.reason.unwrap().contains("did not reset the adapter"));
    let disturbed = IGB_FAULTS.replacen("st_b2      rx_packets: 43", "st_b2      rx_packets: 0", 1);
    let r = eval_as("faults", &disturbed, "igb", true);
    assert!(r
        .reason
        .unwrap()
        .contains("reading nicemu ctl stats changed what the guest read next"));
    let carrier = IGB_FAULTS.replace("down_carrier=0", "down_carrier=1");
    let r = eval_as("faults", &carrier, "igb", true);
    assert!(r.reason.unwrap().contains("carrier stayed on"));
    // QEMU's devices have no control socket: skipped, not failed.
    let r = eval_as("faults", IGB_FAULTS, "igb", false);
    assert_eq!(r.status, Status::Skip);
}

#[test]
fn nicemu_ixgbe_faults_capture_passes_with_ixgbe_names() {
    let r = eval_as("faults", IXGBE_FAULTS, "ixgbe", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    let m = &r.metrics;
    // ixgbe's rx_bytes are the rings' (no FCS); the register is rx_bytes_nic.
    assert!(m["stats_compared"].get("rx_bytes/GORC").is_none());
    assert_eq!(m["stats_compared"]["rx_bytes_nic/GORC"]["ctl"], 4960);
    assert!(m["stall_hang_log"].as_str().unwrap().contains("tx hang"));
}

#[test]
fn rss_spreads_many_flows_and_keeps_one_flow_on_one_queue() {
    let r = eval_as("rss", IGB_FAULTS, "igb", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    let counts = r.metrics["counts"].as_object().unwrap();
    assert_eq!(counts.len(), 8);
    assert_eq!(counts["8"]["many_per_queue"].as_array().unwrap().len(), 8);
    assert_eq!(counts["8"]["one_flow_queue"], 2);
    // Per channel count: ethtool -L, the queue counters, two netperf results, the spread,
    // no stray packets, one flow on one queue; then that a count was tried.
    assert_eq!(r.checks.len(), 1 + 8 * 7 + 1);
    assert!(r.checks.iter().all(|c| c.ok));
    assert!(r
        .checks
        .iter()
        .any(|c| c.name == "combined 8: one flow on one queue"));
    let r = eval_as("rss", IXGBE_FAULTS, "ixgbe", true);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    assert_eq!(r.metrics["counts"].as_object().unwrap().len(), 2);
    let q = include_str!("../../tests/fixtures/qemu-igb-rss.serial.log");
    let r = eval_as("rss", q, "igb", false);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    // One flow split over two queues, and an active queue left idle, are failures.
    let split = IGB_FAULTS.replacen(
        "c8      rx_queue_2_packets: 843",
        "c8      rx_queue_2_packets: 400",
        1,
    );
    let split = split.replacen(
        "c8      rx_queue_3_packets: 85",
        "c8      rx_queue_3_packets: 528",
        1,
    );
    let r = eval_as("rss", &split, "igb", true);
    assert!(r.reason.unwrap().contains("combined 8: one flow spread"));
    let idle = IGB_FAULTS.replacen(
        "b8      rx_queue_5_packets: 76",
        "b8      rx_queue_5_packets: 0",
        1,
    );
    let r = eval_as("rss", &idle, "igb", true);
    assert!(r.reason.unwrap().contains("left active queue(s) [5]"));
    // On QEMU's own igb (no nicemu control socket) the same is information.
    let r = eval_as("rss", &idle, "igb", false);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    assert!(r.metrics["spread_informational"]
        .as_str()
        .unwrap()
        .contains("left active queue(s) [5]"));
}

#[test]
fn nicemu_igb_ci_matrix_capture_passes_every_scenario() {
    // The ci.toml scenarios on nicemu-igb after netperf's bulk traffic: the stall case
    // still sees the hang (its 300-frame preload fills the stalled ring).
    let text = include_str!("../../tests/fixtures/nicemu-igb-ci.serial.log");
    for name in [
        "probe", "selftest", "ping", "stats", "netperf", "faults", "rss",
    ] {
        let r = eval_as(name, text, "igb", true);
        assert_eq!(r.status, Status::Pass, "{name}: {:?}", r.reason);
    }
    let f = eval_as("faults", text, "igb", true);
    assert!(f.metrics["stall_hang_log"]
        .as_str()
        .unwrap()
        .contains("Detected Tx Unit Hang"));
}

/// nicemu's virtio-net (vhost-user, 2 queue pairs), sid 7.2, TCG: probe, ping and netperf
/// pass; selftest and stats are SKIPped for the device.
#[test]
fn nicemu_virtio_capture() {
    let text = include_str!("../../tests/fixtures/nicemu-virtio-probe-ping-netperf.serial.log");
    let mut t = target();
    t.driver = "virtio_net".into();
    t.unsupported = NAMES
        .iter()
        .filter_map(|s| {
            crate::vm::device::DeviceKind::NicemuVirtio
                .unsupported(s)
                .map(|w| (s.to_string(), w.to_owned()))
        })
        .collect();
    let c = Console::parse(text);
    for name in ["probe", "ping", "netperf"] {
        let r = evaluate(by_name(name).unwrap().as_ref(), &c, &t);
        assert_eq!(r.status, Status::Pass, "{name}: {:?}", r.reason);
    }
    for name in ["selftest", "stats"] {
        let r = evaluate(by_name(name).unwrap().as_ref(), &c, &t);
        assert_eq!(r.status, Status::Skip, "{name}");
        assert!(r.reason.unwrap().contains("virtio"), "{name}");
    }
}

const VIRTIO_Q4: &str =
    include_str!("../../tests/fixtures/nicemu-virtio-q4-faults-link-mq.serial.log");

/// nicemu's virtio-net with 4 queue pairs (`virtio.queues=4`), sid 7.2, TCG: `faults` with
/// its `link` case (down: carrier 0, NO-CARRIER, `carrier_down_count` 1 → 2; up: carrier,
/// 5/5 pings) and `mq` (combined 4, 16 TCP_STREAM streams of 10 s) pass.
#[test]
fn nicemu_virtio_link_and_four_queue_pairs() {
    let f = eval_as("faults", VIRTIO_Q4, "virtio_net", true);
    assert_eq!(f.status, Status::Pass, "{:?}", f.reason);
    assert_eq!(f.metrics["link_carrier_downs"], 1);
    assert_eq!(f.metrics["passed_cases"], serde_json::json!(["link"]));
    let m = eval_as("mq", VIRTIO_Q4, "virtio_net", true);
    assert_eq!(m.status, Status::Pass, "{:?}", m.reason);
    assert_eq!(m.metrics["combined"], 4);
    assert_eq!(m.metrics["stream_mbps"].as_array().unwrap().len(), 16);
    assert_eq!(
        m.metrics["guest_rx_queue_deltas"],
        serde_json::json!([1455, 1564, 847, 1283])
    );
    assert_eq!(m.metrics["guest_tx_queue_counter"], "txQ_kicks");
    // A link down the guest did not see, and a receive queue that got no interrupt, fail.
    let stuck = VIRTIO_Q4
        .replace("down_carrier=0", "down_carrier=1")
        .replace("down_count_b=2", "down_count_b=1");
    let f = eval_as("faults", &stuck, "virtio_net", true);
    let why = f.reason.unwrap();
    assert!(why.contains("carrier stayed on"), "{why}");
    assert!(why.contains("carrier_down_count did not grow"), "{why}");
    let idle = VIRTIO_Q4.replace(
        "mq ib   29:        847          1",
        "mq ib   29:          0          1",
    );
    let m = eval_as("mq", &idle, "virtio_net", true);
    let why = m.reason.unwrap();
    assert!(why.contains("guest rx queues [2] moved nothing"), "{why}");
}

/// nicemu's igb, sid 7.2, TCG: the hostile guest drove the unbound DUT's BAR0 for 60 s
/// (`hostile` PASS); with its evidence removed the same capture fails.
#[test]
fn nicemu_igb_hostile_capture() {
    let text = include_str!("../../tests/fixtures/nicemu-igb-hostile.serial.log");
    let r = eval("hostile", text);
    assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
    assert_eq!(r.metrics["steps"], 376);
    assert_eq!(r.metrics["dma_blocked"], 36);
    assert_eq!(r.metrics["ring_errors"], 123);
    assert_eq!(r.metrics["peer_tx"], 116);
    assert!(r.metrics["peer_switch_tx"].as_u64().unwrap() >= 116);
    let no_carrier = text.replace("peer_carrier=1", "peer_carrier=0");
    assert_eq!(eval("hostile", &no_carrier).status, Status::Fail);
    let no_peer_frames = text.replace("peer_tx=116", "peer_tx=3");
    assert_eq!(eval("hostile", &no_peer_frames).status, Status::Fail);
    // nicemu's counters not grown: the "after" reading equals the "before" one.
    let e0 = text
        .lines()
        .find(|l| l.contains("host_e0 {"))
        .unwrap()
        .split("host_e0 ")
        .nth(1)
        .unwrap();
    let unchanged: String = text
        .lines()
        .map(|l| match l.split_once("host_e1 {") {
            Some((head, _)) => format!("{head}host_e1 {e0}"),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let r = eval("hostile", &unchanged);
    assert_eq!(r.status, Status::Fail);
    assert!(r.reason.unwrap().contains("no guest error counter"));
}

#[test]
fn every_scenario_script_is_valid_sh() {
    for name in NAMES {
        let script = by_name(name)
            .unwrap()
            .script(&crate::params::Params::default());
        let out = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Real passing runs of nicemu's own scenarios that name every check, as
/// `(scenario, capture, driver)`.
const OWN_RUNS: &[(&str, &str, &str)] = &[
    ("faults", IGB_FAULTS, "igb"),
    ("faults", IXGBE_FAULTS, "ixgbe"),
    ("faults", VIRTIO_Q4, "virtio_net"),
    (
        "driver-stress",
        include_str!("../../tests/fixtures/nicemu-ixgbe-driver-stress.serial.log"),
        "ixgbe",
    ),
    (
        "hostile",
        include_str!("../../tests/fixtures/nicemu-igb-hostile.serial.log"),
        "igb",
    ),
    (
        "vf-reset",
        include_str!("../../tests/fixtures/nicemu-igbvf-vf-reset.serial.log"),
        "igbvf",
    ),
    (
        "vf-reset",
        include_str!("../../tests/fixtures/nicemu-ixgbevf-vf-reset.serial.log"),
        "ixgbevf",
    ),
    ("mq", VIRTIO_Q4, "virtio_net"),
    ("mq", IGB_MQ, "igb"),
    ("ptp", IGB_PTP, "igb"),
    (
        "ptp",
        include_str!("../../tests/fixtures/nicemu-mixed-ping-ptp-delay50000.serial.log"),
        "igb",
    ),
    ("vf-admin", VF_ADMIN_IGBVF, "igbvf"),
    ("vf-admin", VF_ADMIN_IXGBEVF, "ixgbevf"),
];

/// nicemu's igb, sid 7.2.13, TCG: `mq` with 8 queue pairs, 4 TCP_STREAM streams of 3 s
/// (`mq.streams=4 mq.duration=3`, run 1796515271-19532): the guest's `rx_queue_Q_packets` and
/// `tx_queue_Q_packets` grew on every pair.
const IGB_MQ: &str = include_str!("../../tests/fixtures/nicemu-igb-mq.serial.log");

const VF_ADMIN_IGBVF: &str =
    include_str!("../../tests/fixtures/nicemu-igbvf-ethtool-vf-admin.serial.log");
const VF_ADMIN_IXGBEVF: &str =
    include_str!("../../tests/fixtures/nicemu-ixgbevf-ethtool-vf-admin.serial.log");

/// The checks of `mq`, `ptp` and `vf-admin` that a bent value of a real capture fails are
/// points of their own, named for what was checked, with what was seen as their failure.
#[test]
fn mq_ptp_vf_admin_name_the_check_a_bent_value_fails() {
    let stopped: String = IGB_PTP
        .lines()
        .map(|l| match l.find("offset from CLOCK_REALTIME is ") {
            Some(p) => format!("{}offset from CLOCK_REALTIME is 5ns\n", &l[..p]),
            None => format!("{l}\n"),
        })
        .collect();
    let cases: Vec<(&str, String, &str, &str, &str)> = vec![
        (
            "mq",
            VIRTIO_Q4.replace(
                "mq ib   29:        847          1",
                "mq ib   29:          0          1",
            ),
            "virtio_net",
            "guest rx queues: every active one moved",
            "guest rx queues [2] moved nothing",
        ),
        (
            "mq",
            IGB_MQ.replace(
                "@@NICEMU-OUT mq b      tx_queue_3_packets: 175",
                "@@NICEMU-OUT mq b      tx_queue_3_packets: 0",
            ),
            "igb",
            "guest tx queues: every active one moved",
            "guest tx queues [3] moved nothing",
        ),
        (
            "mq",
            VIRTIO_Q4.replace("@@NICEMU mq pset_rc=0", "@@NICEMU mq pset_rc=1"),
            "virtio_net",
            "ethtool -L combined on the peer",
            "ethtool -L combined 4 on the peer failed",
        ),
        (
            "ptp",
            stopped,
            "igb",
            "dut PHC: freq ±100000 ppb changes the rate by 100 ppm",
            "changed the rate by 0.00 ppm",
        ),
        (
            "ptp",
            IGB_PTP.replace("@@NICEMU ptp adj_rc=0", "@@NICEMU ptp adj_rc=2"),
            "igb",
            "phc_ctl adj",
            "phc_ctl adj failed",
        ),
        (
            "ptp",
            IGB_PTP
                .lines()
                .filter(|l| !l.contains(" rms "))
                .map(|l| format!("{l}\n"))
                .collect(),
            "igb",
            "ptp4l UDPv4: slave rms under 1000 ns",
            "ptp4l UDPv4: slave printed no rms line",
        ),
        (
            "vf-admin",
            VF_ADMIN_IGBVF.replace("ln_dis_carrier=0", "ln_dis_carrier=1"),
            "igbvf",
            "link: disabled, carrier off",
            "carrier stayed on after `state disable`",
        ),
        (
            "vf-admin",
            VF_ADMIN_IXGBEVF.replace("\"trust\":false", "\"trust\":true"),
            "ixgbevf",
            "mac: trust off at the end",
            "does not show trust off",
        ),
    ];
    for (name, text, driver, point, seen) in cases {
        let r = eval_as(name, &text, driver, true);
        assert_eq!(r.status, Status::Fail, "{name} {point}");
        let failed: Vec<(&str, &str)> = r
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| (c.name.as_str(), c.failure.as_deref().unwrap_or("")))
            .collect();
        assert!(
            failed.iter().any(|(n, f)| *n == point && f.contains(seen)),
            "{name}: no failed point {point:?} ({seen:?}) in {failed:?}"
        );
        // The same check passes, by the same name, on the capture as it was.
        let good = OWN_RUNS
            .iter()
            .find(|(n, _, d)| *n == name && *d == driver)
            .unwrap();
        let r = eval_as(name, good.1, driver, true);
        assert!(
            r.checks.iter().any(|c| c.name == point && c.ok),
            "{name}: {point:?} not among the passed points"
        );
    }
}

/// A passing run of each of nicemu's own scenarios shows its checks as named, passed
/// points (scenarios.tap's points), not only the harness's "ran to the end"; a case
/// scenario's points name their case.
#[test]
fn nicemu_scenarios_name_the_checks_that_pass() {
    for (name, text, driver) in OWN_RUNS {
        let r = eval_as(name, text, driver, true);
        assert_eq!(r.status, Status::Pass, "{name} {driver}: {:?}", r.reason);
        let own: Vec<&str> = r
            .checks
            .iter()
            .map(|c| c.name.as_str())
            .filter(|n| *n != FINISHED)
            .collect();
        assert!(own.len() >= 3, "{name} {driver}: {own:?}");
        assert!(r.checks.iter().all(|c| c.ok), "{name} {driver}");
        for case in r
            .metrics
            .get("passed_cases")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            let case = case.as_str().unwrap();
            assert!(
                own.iter().any(|n| n.starts_with(&format!("{case}: "))),
                "{name} {driver}: no point of case {case} in {own:?}"
            );
        }
    }
}

/// A failing run of nicemu's own scenarios names each failure: no test point is named by
/// its failure message only.
#[test]
fn nicemu_scenarios_name_the_checks_that_fail() {
    let mut seen = 0;
    for (name, text, driver) in OWN_RUNS {
        // Every counter, carrier, count and exit status the guest printed read as another.
        for (from, to) in [
            ("=0\n", "=7\n"),
            ("=1\n", "=0\n"),
            ("_rc=0", "_rc=1"),
            (": 10\n", ": 9\n"),
            ("rc=0 ", "rc=3 "),
        ] {
            let bent = text.replace(from, to);
            if bent == *text {
                continue;
            }
            let r = eval_as(name, &bent, driver, true);
            if r.status != Status::Fail {
                continue;
            }
            seen += 1;
            let unnamed: Vec<String> = r
                .points()
                .into_iter()
                .filter(|(n, f)| f.as_deref() == Some(n.as_str()))
                .map(|(n, _)| n)
                .collect();
            assert!(
                unnamed.is_empty(),
                "{name} {driver} with {from:?} as {to:?}: unnamed {unnamed:?}"
            );
        }
    }
    assert!(seen >= 5, "{seen}");
}
