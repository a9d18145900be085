// SPDX-License-Identifier: Apache-2.0
//! Integration tests of the control socket: two igb functions on one network,
//! driven over vfio-user as a guest driver would, steered and observed with
//! `nicemu ctl`.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use pcap_file::pcap::PcapReader;

const MAC_A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0xa];
const MAC_B: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0xb];

fn frame(dst: [u8; 6], src: [u8; 6], len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![tag; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

fn stats(n: &Nicemu, dev: &str) -> HashMap<String, u64> {
    let out = n.ctl(&["stats", dev, "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (k, v) = (it.next()?, it.next()?);
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn wait_for(mut f: impl FnMut() -> bool) {
    for _ in 0..100 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("condition not reached");
}

#[test]
fn list_stats_capture_faults_link_and_trace() {
    let n = Nicemu::start(
        "ctl",
        &[
            "--device",
            "igb,id=igb0,socket={dir}/a.sock,mac=52:54:00:00:00:0a",
            "--device",
            "igb,id=igb1,socket={dir}/b.sock,mac=52:54:00:00:00:0b",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["a.sock", "b.sock", "ctl.sock"],
    );
    let (mut a, mut b) = (n.client("a.sock"), n.client("b.sock"));
    let mut ram_a = Ram::new(&n.dir, "ram-a", 1 << 20);
    let mut ram_b = Ram::new(&n.dir, "ram-b", 1 << 20);
    ram_a.map(&mut a);
    ram_b.map(&mut b);
    setup_queue0(&mut a, &mut ram_a);
    setup_queue0(&mut b, &mut ram_b);

    let list = n.ctl(&["list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success());
    assert!(
        text.lines().any(|l| l.starts_with("igb0")
            && l.contains("52:54:00:00:00:0a")
            && l.contains(" up ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("igb1") && l.contains("lan0")),
        "{text}"
    );

    // Capture on igb0 while it sends three frames to igb1.
    let pcap = n.path("a.pcap");
    let cap = n.ctl(&["capture", "igb0", pcap.to_str().unwrap()]);
    assert!(
        cap.status.success(),
        "{}",
        String::from_utf8_lossy(&cap.stderr)
    );
    for i in 0..3u32 {
        send(&mut a, &mut ram_a, i, &frame(MAC_B, MAC_A, 100, i as u8));
    }
    wait_for(|| rd(&mut b, 0x2810) == 3);
    let stop = n.ctl(&["capture", "igb0", "stop"]);
    assert!(String::from_utf8_lossy(&stop.stdout).contains("after 3 frames"));
    let mut r = PcapReader::new(std::fs::File::open(&pcap).unwrap()).unwrap();
    let mut got = Vec::new();
    while let Some(p) = r.next_packet() {
        got.push(p.unwrap().data.into_owned());
    }
    assert_eq!(got.len(), 3);
    assert_eq!(got[2], frame(MAC_B, MAC_A, 100, 2));

    // Control stats equal what the guest reads, and do not disturb it.
    let s = stats(&n, "igb1");
    assert_eq!(s["GPRC"], 3);
    assert_eq!(s["GORC"], 3 * 104);
    assert_eq!(
        rd(&mut b, 0x4074),
        3,
        "guest still reads GPRC = 3 after ctl stats"
    );
    assert_eq!(rd(&mut b, 0x4074), 0, "and its own read cleared it");
    assert_eq!(
        stats(&n, "igb1")["GPRC"],
        3,
        "ctl totals are unaffected by guest reads"
    );
    assert_eq!(stats(&n, "igb0")["GPTC"], 3);
    let descs = |dev: &str| {
        let out = n.ctl(&["--json", "stats", dev]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let a = &v["data"]["accesses"];
        (a["tx_descriptors"].as_u64(), a["rx_descriptors"].as_u64())
    };
    assert_eq!(
        descs("igb0"),
        (Some(3), Some(0)),
        "one data descriptor a frame"
    );
    assert_eq!(descs("igb1"), (Some(0), Some(3)));

    // Register accesses: every BAR read and write the client makes is counted, per port.
    let acc = |dev: &str| {
        let out = n.ctl(&["--json", "stats", dev]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let a = &v["data"]["accesses"];
        let g = |k: &str| a[k].as_u64().unwrap_or_else(|| panic!("no {k} in {a}"));
        (g("bar_reads"), g("bar_writes"), g("irqs_raised"))
    };
    let (r0, w0, _) = acc("igb1");
    let other = acc("igb0");
    for _ in 0..3 {
        let _ = rd(&mut b, 0x8);
    }
    wr(&mut b, 0x1508, 0);
    wr(&mut b, 0x150c, 0);
    let (r1, w1, _) = acc("igb1");
    assert_eq!((r1 - r0, w1 - w0), (3, 2), "igb1's reads and writes");
    assert_eq!(acc("igb0"), other, "igb0 saw none of them");
    let text = String::from_utf8_lossy(&n.ctl(&["stats", "igb1"]).stdout).to_string();
    assert!(
        text.contains(&format!(
            "register accesses: bar_reads {r1}, bar_writes {w1}"
        )),
        "{text}"
    );

    // Corrupt two of the next three frames: CRC errors.
    assert!(n
        .ctl(&["fault", "igb1", "corrupt-rx", "2"])
        .status
        .success());
    for i in 3..6u32 {
        send(&mut a, &mut ram_a, i, &frame(MAC_B, MAC_A, 80, 9));
    }
    wait_for(|| stats(&n, "igb1")["CRCERRS"] == 2);
    assert_eq!(rd(&mut b, 0x4000), 2, "CRCERRS as the guest reads it");
    assert_eq!(stats(&n, "igb1")["GPRC"], 4);

    // Link down: STATUS.LU clears, frames to it are not received.
    assert!(n.ctl(&["link", "igb1", "down"]).status.success());
    assert_eq!(rd(&mut b, 0x8) & 2, 0);
    let text = String::from_utf8_lossy(&n.ctl(&["list"]).stdout).to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("igb1") && l.contains(" down ")),
        "{text}"
    );
    assert!(n.ctl(&["link", "igb1", "up"]).status.success());
    // The PHY autonegotiates again (phy::AUTONEG_NS, 1 s) before the link is back.
    let t0 = std::time::Instant::now();
    while rd(&mut b, 0x8) & 2 == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no link 10 s after `link up`"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(750),
        "link back before autonegotiation could be over"
    );

    // Trace with a filter, switched on at run time.
    let tf = n.path("t.log");
    let t = n.ctl(&[
        "trace",
        "igb0",
        "on",
        "--filter",
        "RDT",
        "--file",
        tf.to_str().unwrap(),
    ]);
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    wr(&mut a, 0x2818, 5);
    let _ = rd(&mut a, 0x8);
    assert!(n.ctl(&["trace", "igb0", "off"]).status.success());
    let trace = std::fs::read_to_string(&tf).unwrap();
    assert_eq!(trace.lines().count(), 1, "{trace}");
    assert!(trace.contains("W BAR0+0x02818 RDT[0]"));

    // Counter preset, stall, errors.
    assert!(n
        .ctl(&["fault", "igb1", "counter-preset", "GPRC", "4294967290"])
        .status
        .success());
    assert_eq!(rd(&mut b, 0x4074), 4_294_967_290);
    assert!(n.ctl(&["fault", "igb0", "stall-tx", "0"]).status.success());
    send(&mut a, &mut ram_a, 6, &frame(MAC_B, MAC_A, 60, 1));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(rd(&mut a, 0x3810), 6, "stalled queue did not fetch");
    let bad = n.ctl(&["stats", "nope"]);
    assert_eq!(bad.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&bad.stderr);
    assert!(
        msg.contains("no device 'nope'") && msg.contains("igb0"),
        "{msg}"
    );
    let bad = n.ctl(&["fault", "igb0", "stall-tx", "99"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("queue 99"));
    let json = n.ctl(&["--json", "list"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["data"]["devices"][0]["id"], "igb0");
    let (st, dir) = n.stop();
    assert!(st.success());
    assert!(
        !dir.join("ctl.sock").exists(),
        "control socket removed on exit"
    );
}

#[test]
fn ctl_without_a_running_nicemu_says_what_to_do() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"))
        .args(["ctl", "--control", "/nonexistent/ctl.sock", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is nicemu running with --control"));
}

#[test]
fn ctl_without_a_verb_prints_clap_s_usage_on_several_lines() {
    let ctl = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .arg("ctl")
            .args(args)
            .output()
            .unwrap()
    };
    // Nothing at all: the verbs, as clap lays out its help.
    let out = ctl(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Usage: nicemu ctl"), "{err}");
    assert!(
        err.lines().any(|l| l.trim_start().starts_with("capture")),
        "{err}"
    );
    assert!(err.lines().count() > 5, "{err}");
    assert!(err.lines().all(|l| l.len() < 200), "{err}");
    // A socket but no verb: clap's error and usage, on their own lines.
    let out = ctl(&["--control", "/nonexistent/ctl.sock"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().any(|l| l.starts_with("Usage: nicemu ctl")),
        "{err}"
    );
    assert!(err.lines().count() > 2, "{err}");
}

#[test]
fn plain_file_names_land_in_the_output_directory_wherever_ctl_runs() {
    let n = Nicemu::start(
        "ctl-cwd",
        &[
            "--device",
            "igb,id=igb0,socket={dir}/a.sock,mac=52:54:00:00:00:0a",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["a.sock", "ctl.sock"],
    );
    let elsewhere =
        std::env::temp_dir().join(format!("nicemu-it-elsewhere-{}", std::process::id()));
    std::fs::create_dir_all(&elsewhere).unwrap();
    let ctl = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .current_dir(&elsewhere)
            .arg("ctl")
            .arg("--control")
            .arg(n.path("ctl.sock"))
            .args(args)
            .output()
            .unwrap()
    };
    let ok = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    ok(&ctl(&["capture", "igb0", "x.pcap"]));
    ok(&ctl(&["capture", "igb0", "stop"]));
    assert!(
        n.path("x.pcap").is_file(),
        "the capture is in the output directory"
    );
    ok(&ctl(&["trace", "igb0", "on", "--file", "t.trace"]));
    ok(&ctl(&["trace", "igb0", "off"]));
    assert!(
        n.path("t.trace").is_file(),
        "the trace is in the output directory"
    );
    assert!(!elsewhere.join("x.pcap").exists() && !elsewhere.join("t.trace").exists());
    // A path with a directory still means that path: outside the output directory, refused.
    let sub = ctl(&["capture", "igb0", "./y.pcap"]);
    assert_eq!(sub.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&sub.stderr).contains("not a file in the output directory"));
    let _ = std::fs::remove_dir_all(&elsewhere);
    let (_, dir) = n.stop();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn virtio_ports_in_list_stats_and_link() {
    let n = Nicemu::start(
        "ctl-vn",
        &[
            "--device",
            "virtio-net,id=vn0,socket={dir}/vn.sock,queues=2",
            "--device",
            "igb,id=igb0,socket={dir}/a.sock",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["vn.sock", "a.sock", "ctl.sock"],
    );
    let text = String::from_utf8_lossy(&n.ctl(&["list"]).stdout).to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("vn0") && l.contains("virtio-net") && l.contains(" up ")),
        "{text}"
    );
    assert!(n.ctl(&["link", "vn0", "down"]).status.success());
    let text = String::from_utf8_lossy(&n.ctl(&["list"]).stdout).to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("vn0") && l.contains(" down ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("vn0") && l.contains(" - ") && l.contains("0,1")),
        "no driver connected, two queue pairs: {text}"
    );
    // Counters as for every port: the port's, each pair's, the switch port's.
    let s = n.ctl(&["stats", "vn0", "--all"]);
    let out = String::from_utf8_lossy(&s.stdout);
    assert!(
        out.contains("rx_frames[1]") && out.contains("link_drops") && out.contains("switch port:"),
        "{out}"
    );
    let j = n.ctl(&["--json", "stats", "vn0"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["data"]["queues"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["data"]["connected"], false, "{v}");
    // A capture works on every port, virtio-net ones included.
    let pcap = n.path("vn0.pcap");
    let cap = n.ctl(&["capture", "vn0", pcap.to_str().unwrap()]);
    assert!(
        cap.status.success(),
        "{}",
        String::from_utf8_lossy(&cap.stderr)
    );
    assert!(n.ctl(&["capture", "vn0", "stop"]).status.success());
    let bad = n.ctl(&["trace", "vn0", "on"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no registers"));
    let bad = n.ctl(&["fault", "vn0", "corrupt-rx", "1"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("virtio-net port"));
}

/// Starts nicemu with one igb and a control socket under umask 0.
fn start_umask0(name: &str, extra: &[&str]) -> Nicemu {
    use std::os::unix::process::CommandExt;
    let dir = std::env::temp_dir().join(format!("nicemu-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display().to_string();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"));
    cmd.args(["--device", &format!("igb,id=igb0,socket={d}/a.sock")])
        .args(["--control", &format!("{d}/ctl.sock")])
        .args(extra)
        .stderr(std::process::Stdio::null());
    // SAFETY: umask is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        })
    };
    let child = cmd.spawn().unwrap();
    let n = Nicemu { child, dir };
    wait_for(|| n.path("ctl.sock").exists() && n.path("a.sock").exists());
    n
}

#[test]
fn a_local_user_cannot_make_nicemu_write_files_or_reach_its_sockets() {
    use std::os::unix::fs::PermissionsExt;
    let n = start_umask0("hostile-ctl", &[]);
    for s in ["ctl.sock", "a.sock"] {
        let mode = std::fs::metadata(n.path(s)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{s} is {mode:o} under umask 0");
    }
    // A capture onto a symlink must not write through it.
    let victim = n.path("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = n.path("link.pcap");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let out = n.ctl(&["capture", "igb0", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exists already"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    // An existing file is not truncated.
    let out = n.ctl(&["capture", "igb0", victim.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    // Outside the output directory: refused, nothing created.
    let outside = std::env::temp_dir().join(format!("nicemu-outside-{}.pcap", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let out = n.ctl(&["capture", "igb0", outside.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("output directory"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!outside.exists());
    let tf = n.path("../trace-outside.log");
    let out = n.ctl(&["trace", "igb0", "on", "--file", tf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    // A plain new name inside works.
    let ok = n.ctl(&["capture", "igb0", n.path("ok.pcap").to_str().unwrap()]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn trace_regs_never_overwrites_a_file_or_follows_a_link() {
    let dir = std::env::temp_dir().join(format!("nicemu-it-trace-excl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.join("link.log");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for f in [&victim, &link] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .arg("--device")
            .arg(format!("igb,id=igb0,socket={}/a.sock", dir.display()))
            .arg(format!("--trace-regs={}", f.display()))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", f.display());
        assert!(String::from_utf8_lossy(&out.stderr).contains("exists already"));
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn idle_connections_are_closed_and_capped_so_others_are_served() {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    let n = start_umask0("ctl-conns", &[]);
    let sock = n.path("ctl.sock");
    // Many idle connections: those beyond the cap are answered and closed
    // at once instead of each holding a thread.
    let idle: Vec<UnixStream> = (0..40)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    let mut refused = 0;
    for mut c in idle.iter().skip(16) {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut s = String::new();
        let _ = c.read_to_string(&mut s);
        assert!(s.contains("busy"), "{s:?}");
        refused += 1;
    }
    assert_eq!(refused, 24);
    // The idle ones within the cap are closed by the server after its idle
    // timeout; then a request is served again.
    let t = std::time::Instant::now();
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(first.read(&mut buf).unwrap_or(0), 0, "closed by the server");
    assert!(t.elapsed() < Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(200));
    let out = n.ctl(&["list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_peer_of_another_user_is_refused_even_if_the_socket_was_opened_up() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to connect as another user");
        return;
    }
    let n = start_umask0("ctl-peer", &[]);
    let sock = n.path("ctl.sock");
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&n.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"));
    cmd.args(["ctl", "--control", sock.to_str().unwrap(), "list"]);
    // SAFETY: setgid/setuid are async-signal-safe and touch only the child.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("refused"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn wires_are_listed_and_their_drops_shown() {
    let n = Nicemu::start(
        "ctl-wire",
        &[
            "--device",
            "igb,id=igb0,socket={dir}/a.sock,mac=52:54:00:00:00:0a",
            "--wire",
            "stream,path={dir}/w.sock",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["a.sock", "w.sock", "ctl.sock"],
    );
    let mut a = n.client("a.sock");
    let mut ram_a = Ram::new(&n.dir, "ram-a", 1 << 20);
    ram_a.map(&mut a);
    setup_queue0(&mut a, &mut ram_a);
    // Broadcast with no stream peer connected: dropped at the wire, counted.
    send(&mut a, &mut ram_a, 0, &frame([0xff; 6], MAC_A, 60, 1));
    wait_for(|| stats(&n, "wire0").get("egress_drops") == Some(&1));
    let list = String::from_utf8_lossy(&n.ctl(&["list"]).stdout).to_string();
    assert!(
        list.lines()
            .any(|l| l.starts_with("wire0") && l.contains("wire")),
        "{list}"
    );
    let bad = n.ctl(&["capture", "wire0", "x.pcap"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is a wire"));
}
