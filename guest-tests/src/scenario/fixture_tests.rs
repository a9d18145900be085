//! Parser tests on a real capture: QEMU's igb, two ports (peer in netns), sid kernel 7.2,
//! TCG, all scenarios (`tests/fixtures/qemu-igb-netns-all.serial.log`).

use super::*;
use crate::vm::device::{PEER_MAC, TEST_MAC};

const ALL: &str = include_str!("../../tests/fixtures/qemu-igb-netns-all.serial.log");

fn target() -> Target {
    Target {
        mac: TEST_MAC.into(),
        driver: "igb".into(),
        peer_mac: Some(PEER_MAC.into()),
    }
}

fn eval(name: &str, text: &str) -> ScenarioResult {
    let sc = by_name(name).unwrap();
    evaluate(sc.as_ref(), &Console::parse(text), &target())
}

#[test]
fn every_scenario_of_the_capture_passes() {
    let c = Console::parse(ALL);
    let setup = setup::parse(c.sections.get(setup::NAME), &target());
    assert_eq!(setup.status, Status::Pass, "{:?}", setup.reason);
    assert_eq!(setup.metrics["peer_iface"], "eth1");
    for name in NAMES {
        let r = eval(name, ALL);
        assert_eq!(r.status, Status::Pass, "{name}: {:?}", r.reason);
        assert!(r.summary.is_some(), "{name} has no headline");
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
}

#[test]
fn nicemu_igb_capture_passes_stats_channels_qdisc_ptp() {
    let text =
        include_str!("../../tests/fixtures/nicemu-igb-netns-stats-channels-qdisc-ptp.serial.log");
    for name in ["probe", "stats", "channels", "qdisc", "ptp"] {
        let r = eval(name, text);
        assert_eq!(r.status, Status::Pass, "{name}: {:?}", r.reason);
    }
    assert_eq!(eval("stats", text).metrics["checked"], 14);
}
