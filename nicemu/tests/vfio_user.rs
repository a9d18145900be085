// SPDX-License-Identifier: Apache-2.0
//! Integration tests: start the `nicemu` binary and drive an igb function over
//! a real vfio-user socket with the `vfio_user` crate's client, as QEMU would.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

use common::*;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_BAR2_REGION_INDEX, VFIO_PCI_BAR3_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX,
};
use vmm_sys_util::eventfd::EventFd;

const MAC: &str = "52:54:00:ab:cd:01";

fn igb(name: &str) -> Nicemu {
    let dev = format!("igb,id=igb0,socket={{dir}}/igb0.sock,mac={MAC}");
    Nicemu::start(
        name,
        &["--device", &dev, "--trace-regs={dir}/trace.log"],
        &["igb0.sock"],
    )
}

#[test]
fn config_space_ids_and_capabilities() {
    let n = igb("cfg");
    let mut c = n.client("igb0.sock");
    assert_eq!(c.region(VFIO_PCI_CONFIG_REGION_INDEX).unwrap().size, 4096);
    assert_eq!(
        c.region(VFIO_PCI_BAR0_REGION_INDEX).unwrap().size,
        128 * 1024
    );
    assert_eq!(c.region(VFIO_PCI_BAR2_REGION_INDEX).unwrap().size, 32);
    assert_eq!(
        c.region(VFIO_PCI_BAR3_REGION_INDEX).unwrap().size,
        16 * 1024
    );
    assert_eq!(cfg16(&mut c, 0), 0x8086);
    assert_eq!(cfg16(&mut c, 2), 0x10c9);
    assert_eq!(
        [cfg8(&mut c, 0xb), cfg8(&mut c, 0xa), cfg8(&mut c, 9)],
        [2, 0, 0]
    );
    assert_eq!(cfg16(&mut c, 0x2c), 0x8086, "subsystem vendor");
    assert_ne!(cfg16(&mut c, 0x2e), 0, "subsystem id");
    assert_eq!(cfg16(&mut c, 0x10) & 1, 0, "BAR0 is memory");
    assert_eq!(cfg16(&mut c, 0x18) & 1, 1, "BAR2 is I/O");
    // Walk the capability list.
    let mut caps = Vec::new();
    let mut p = cfg8(&mut c, 0x34);
    while p != 0 && caps.len() < 8 {
        caps.push((cfg8(&mut c, u64::from(p)), p));
        p = cfg8(&mut c, u64::from(p) + 1);
    }
    let ids: Vec<u8> = caps.iter().map(|c| c.0).collect();
    assert_eq!(ids, vec![0x01, 0x05, 0x11, 0x10], "PM, MSI, MSI-X, PCIe");
    let msix = u64::from(caps[2].1);
    assert_eq!(cfg16(&mut c, msix + 2) & 0x7ff, 9, "10 MSI-X vectors");
    let mut t = [0u8; 4];
    c.region_read(VFIO_PCI_CONFIG_REGION_INDEX, msix + 4, &mut t)
        .unwrap();
    assert_eq!(u32::from_le_bytes(t) & 7, 3, "table in BAR3");
    let pcie = u64::from(caps[3].1);
    assert_eq!(
        cfg16(&mut c, pcie + 2) & 0xf,
        2,
        "PCIe capability version 2"
    );
    // A whole-config read works too.
    let mut all = vec![0u8; 256];
    c.region_read(VFIO_PCI_CONFIG_REGION_INDEX, 0, &mut all)
        .unwrap();
    assert_eq!(&all[0..4], &[0x86, 0x80, 0xc9, 0x10]);
}

#[test]
fn bar0_registers_reset_and_reconnect() {
    let n = igb("bar0");
    {
        let mut c = n.client("igb0.sock");
        assert_ne!(rd(&mut c, 0x8) & 2, 0, "STATUS.LU");
        // NVM through EERD: words 0..0x3f sum to 0xBABA, MAC in words 0..2.
        let mut sum = 0u16;
        for w in 0..0x40u32 {
            wr(&mut c, 0x14, (w << 2) | 1);
            let v = rd(&mut c, 0x14);
            assert_ne!(v & 2, 0);
            sum = sum.wrapping_add((v >> 16) as u16);
        }
        assert_eq!(sum, 0xbaba);
        assert_eq!(
            rd(&mut c, 0x5400),
            0xab00_5452,
            "RAL0 from the configured MAC"
        );
        // Registers keep writable bits; CTRL.RST self-clears and resets them.
        wr(&mut c, 0x100, 0x0400_8002);
        assert_eq!(rd(&mut c, 0x100), 0x0400_8002);
        let ctrl = rd(&mut c, 0x0);
        wr(&mut c, 0x0, ctrl | (1 << 26));
        assert_eq!(rd(&mut c, 0x0) & (1 << 26), 0);
        assert_eq!(rd(&mut c, 0x100), 0);
        // Unknown and out-of-range offsets read 0.
        assert_eq!(rd(&mut c, 0x4), 0);
        let mut b = [0xffu8; 4];
        c.region_read(VFIO_PCI_BAR0_REGION_INDEX, 0x1fffc, &mut b)
            .unwrap();
        // vfio-user DEVICE_RESET.
        wr(&mut c, 0x100, 0x2);
        c.reset().unwrap();
        assert_eq!(rd(&mut c, 0x100), 0);
        // I/O BAR window reaches the same registers.
        c.region_write(VFIO_PCI_BAR2_REGION_INDEX, 0, &0x8u32.to_le_bytes())
            .unwrap();
        let mut st = [0u8; 4];
        c.region_read(VFIO_PCI_BAR2_REGION_INDEX, 4, &mut st)
            .unwrap();
        assert_ne!(u32::from_le_bytes(st) & 2, 0);
        wr(&mut c, 0x100, 0x2);
        c.shutdown().unwrap();
    }
    // The next client finds a freshly reset device.
    std::thread::sleep(Duration::from_millis(100));
    let mut c = n.client("igb0.sock");
    assert_eq!(rd(&mut c, 0x100), 0, "reset on disconnect");
    drop(c);
    let (st, dir) = n.stop();
    assert!(st.success(), "clean exit on SIGTERM: {st:?}");
    assert!(!dir.join("igb0.sock").exists(), "socket removed on exit");
    let trace = std::fs::read_to_string(dir.join("trace.log")).unwrap();
    assert!(
        trace.lines().any(|l| l.contains(" R BAR0+0x00008 STATUS")),
        "decoded trace"
    );
    assert!(trace.lines().any(|l| l.contains(" W BAR0+0x00100 RCTL")));
    assert!(trace.lines().any(|l| l.contains("RAL[0]")));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn dma_loopback_and_msix_over_the_socket() {
    let n = igb("dma");
    let mut c = n.client("igb0.sock");
    let mut ram = Ram::new(&n.dir, "ram", 1 << 20);
    ram.map(&mut c);
    bus_master(&mut c);
    let ev = EventFd::new(libc::EFD_NONBLOCK).unwrap();
    c.set_irqs(
        VFIO_PCI_MSIX_IRQ_INDEX,
        VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD,
        0,
        2,
        &[ev.as_raw_fd(), ev.as_raw_fd()],
    )
    .unwrap();
    // MSI-X mode, queue 0 RX on vector 1.
    wr(&mut c, 0x1514, 0xc000_0011);
    wr(&mut c, 0x1700, 0x0000_0081);
    wr(&mut c, 0x1524, 0x2);
    // Rings: TX at 0x10000, RX at 0x20000 (8 descriptors), RX buffers at 0x40000.
    wr(&mut c, 0x3800, 0x10000);
    wr(&mut c, 0x3808, 8 * 16);
    wr(&mut c, 0x3828, 1 << 25);
    wr(&mut c, 0x400, 0x2 | 0x8);
    wr(&mut c, 0x2800, 0x20000);
    wr(&mut c, 0x2808, 8 * 16);
    wr(&mut c, 0x280c, 0x0200_0402);
    wr(&mut c, 0x2828, 1 << 25);
    wr(&mut c, 0x100, 0x2 | (1 << 15) | (1 << 26));
    for i in 0..8u64 {
        ram.put(0x20000 + i * 16, &(0x40000 + i * 2048).to_le_bytes());
    }
    wr(&mut c, 0x2818, 7);
    // PHY loopback through MDIC (PHY 1, register 0 = 0x4140).
    wr(&mut c, 0x20, (1 << 21) | (1 << 26) | 0x4140);
    assert_ne!(rd(&mut c, 0x20) & (1 << 28), 0);
    let mut frame = vec![0xffu8; 128];
    frame[64..].fill(0x5a);
    ram.put(0x80000, &frame);
    ram.put(0x10000, &0x80000u64.to_le_bytes());
    ram.put(0x10008, &(0x2b30_0000u32 | 128).to_le_bytes());
    ram.put(0x1000c, &(128u32 << 14).to_le_bytes());
    wr(&mut c, 0x3818, 1);
    // The write was posted; a read orders after it.
    assert_eq!(rd(&mut c, 0x3810), 1, "TDH advanced");
    assert_eq!(ram.get(0x1000c, 1)[0] & 1, 1, "TX DD written back");
    let wb = ram.get(0x20000, 16);
    assert_eq!(u16::from_le_bytes([wb[12], wb[13]]), 128, "RX length");
    assert_eq!(wb[8] & 3, 3, "DD|EOP");
    assert_eq!(ram.get(0x40000, 128), frame);
    // The port's signaller thread writes the eventfd: wait for it.
    let mut pfd = libc::pollfd {
        fd: ev.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&raw mut pfd, 1, 5000) };
    assert_eq!(ready, 1, "RX vector fired");
    assert_eq!(ev.read().unwrap(), 1, "RX vector fired once");
    assert_eq!(rd(&mut c, 0x4074), 1, "GPRC");
    // DMA outside the mapping: the device survives and keeps answering.
    ram.put(0x10010, &(0xdead_0000_0000u64).to_le_bytes());
    ram.put(0x10018, &(0x2b30_0000u32 | 64).to_le_bytes());
    wr(&mut c, 0x3818, 2);
    assert_eq!(rd(&mut c, 0x3810), 2);
    assert_ne!(rd(&mut c, 0x8) & 2, 0);
}

#[test]
fn malformed_client_does_not_kill_the_server() {
    let n = igb("bad");
    {
        let mut s = UnixStream::connect(n.path("igb0.sock")).unwrap();
        // A VERSION header claiming a large payload, then garbage.
        let mut msg = vec![0u8; 16];
        msg[2..4].copy_from_slice(&1u16.to_le_bytes());
        msg[4..8].copy_from_slice(&64u32.to_le_bytes());
        s.write_all(&msg).unwrap();
        s.write_all(&[0xff; 48]).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    {
        let mut s = UnixStream::connect(n.path("igb0.sock")).unwrap();
        s.write_all(&[1, 2, 3]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut c = n.client("igb0.sock");
    assert_eq!(
        cfg16(&mut c, 0),
        0x8086,
        "a well-formed client is served afterwards"
    );
}

#[test]
fn cli_errors_are_one_line_with_exit_code_2() {
    let dir = std::env::temp_dir().join(format!("nicemu-it-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let taken = dir.join("taken.sock");
    std::fs::write(&taken, b"").unwrap();
    for args in [
        vec![
            "--device".to_string(),
            format!("igb,id=a,socket={}", taken.display()),
        ],
        vec!["--device".to_string(), "igb,id=a".to_string()],
        vec!["--device".to_string(), "nic,id=a,socket=/x".to_string()],
        vec!["--sched".to_string(), "fast".to_string()],
        vec![],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("nicemu: "), "{err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Scheduling policy of each named thread of a running nicemu
/// (`/proc/PID/task/TID/sched`, "policy : N"), waiting up to 5 s for `name`.
fn thread_policies(pid: u32, name: &str) -> Vec<(String, u32)> {
    let t = std::time::Instant::now();
    loop {
        let mut v = Vec::new();
        for e in std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .flatten()
        {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            let sched = std::fs::read_to_string(e.path().join("sched")).unwrap_or_default();
            let policy = sched
                .lines()
                .find(|l| l.starts_with("policy"))
                .and_then(|l| l.rsplit(':').next())
                .and_then(|p| p.trim().parse().ok())
                .unwrap_or(u32::MAX);
            v.push((comm.trim().to_string(), policy));
        }
        if v.iter().any(|(c, _)| c == name) || t.elapsed() > Duration::from_secs(5) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn data_path_threads_run_sched_batch_and_timers_normal() {
    const SCHED_OTHER: u32 = 0;
    const SCHED_BATCH: u32 = 3;
    let dev = format!("igb,id=igb0,socket={{dir}}/igb0.sock,mac={MAC}");
    for (args, vfio_policy) in [
        (vec![], SCHED_BATCH),
        (vec!["--sched", "normal"], SCHED_OTHER),
    ] {
        let mut all = vec!["--device", dev.as_str()];
        all.extend(args.iter().copied());
        let n = Nicemu::start("sched", &all, &["igb0.sock"]);
        // Threads set their policy as they start: wait (bounded) until the data-path
        // threads show the expected one, then check all of them.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let threads = loop {
            let t = thread_policies(n.child.id(), "vfio-igb0");
            let settled = ["vfio-igb0", "rx-igb0"]
                .iter()
                .all(|name| t.iter().any(|(c, p)| c == name && *p == vfio_policy));
            if settled || std::time::Instant::now() > deadline {
                break t;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let policy = |name: &str| {
            threads
                .iter()
                .find(|(c, _)| c == name)
                .unwrap_or_else(|| panic!("no thread {name} in {threads:?}"))
                .1
        };
        assert_eq!(policy("vfio-igb0"), vfio_policy, "{args:?}: {threads:?}");
        assert_eq!(policy("rx-igb0"), vfio_policy, "{args:?}: {threads:?}");
        assert_eq!(policy("timer-igb0"), SCHED_OTHER, "{args:?}: {threads:?}");
    }
}
