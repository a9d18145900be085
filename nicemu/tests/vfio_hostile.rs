// SPDX-License-Identifier: Apache-2.0
//! Hostile vfio-user clients against the `nicemu` binary, over a raw unix
//! socket: every malformed message gets an error reply or ends the
//! connection, nicemu never dies, leaks no descriptors, and the next
//! well-formed client is served.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use common::raw::*;
use common::*;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_BOOL, VFIO_IRQ_SET_DATA_EVENTFD,
    VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX,
};
use vmm_sys_util::eventfd::EventFd;

fn igb(name: &str) -> Nicemu {
    Nicemu::start(
        name,
        &["--device", "igb,id=igb0,socket={dir}/igb0.sock"],
        &["igb0.sock"],
    )
}

/// The device still works for a well-formed client (the crate's client).
fn still_serves(n: &Nicemu) {
    let mut c = n.client("igb0.sock");
    assert_eq!(cfg16(&mut c, 0), 0x8086);
    assert_ne!(rd(&mut c, 0x8) & 2, 0, "STATUS.LU");
}

fn open_fds(n: &Nicemu) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", n.child.id()))
        .unwrap()
        .count()
}

#[test]
fn version_reply_advertises_the_limits() {
    let n = igb("h-version");
    let mut c = Raw::connect(&n);
    let caps = c.version();
    let caps = &caps["capabilities"];
    assert_eq!(caps["max_msg_fds"], 16);
    assert_eq!(caps["max_data_xfer_size"], 65536);
    assert_eq!(caps["pgsizes"], 4096);
    assert!(caps.get("write_multiple").is_none());
    // A second VERSION is refused; the session goes on.
    c.expect_error(VERSION, &[0, 0, 0, 0], libc::EINVAL);
    let r = c.call(GET_INFO, &le32s(&[16, 0, 0, 0]));
    assert!(r.ok());
    assert_eq!(
        r.payload,
        le32s(&[16, 3, 9, 5]),
        "PCI|RESET, 9 regions, 5 irqs"
    );
}

#[test]
fn malformed_version_gets_an_error_then_the_connection_ends() {
    let n = igb("h-badver");
    for (payload, errno) in [
        (&b"\0\0\0\0{\"capabilities\":\0"[..], libc::EINVAL),
        (
            b"\0\0\0\0{\"capabilities\":{\"max_msg_fds\":\"many\"}}\0",
            libc::EINVAL,
        ),
        (b"\0\0\0\0{}", libc::EINVAL),
        (b"\0\0\xff", libc::EINVAL),
        (b"\x07\0\0\0", libc::ENOTSUP),
    ] {
        let mut c = Raw::connect(&n);
        c.expect_error(VERSION, payload, errno);
        c.expect_closed();
    }
    still_serves(&n);
}

#[test]
fn commands_before_version_unknown_and_unsupported_ones() {
    let n = igb("h-cmds");
    let mut c = Raw::connect(&n);
    c.expect_error(
        REGION_READ,
        &access(0, VFIO_PCI_CONFIG_REGION_INDEX, 2),
        libc::EINVAL,
    );
    c.version();
    c.expect_error(99, &[], libc::ENOSYS);
    c.expect_error(15, &[0; 8], libc::ENOSYS); // REGION_WRITE_MULTI, not advertised
    c.expect_error(11, &[0; 16], libc::ENOSYS); // DMA_READ goes server to client
    c.expect_error(GET_REGION_IO_FDS, &le32s(&[16, 0, 0, 0]), libc::ENOTSUP);
    c.expect_error(GET_REGION_IO_FDS, &le32s(&[16, 0, 77, 0]), libc::EINVAL);
    // A reply-type message from the client is not a command.
    let id = c.send(GET_INFO, 1, &le32s(&[16, 0, 0, 0]));
    let r = c.recv();
    assert_eq!((r.id, r.error), (id, libc::EINVAL as u32));
    // Truncated payloads of fixed-size commands.
    c.expect_error(DMA_MAP, &[0; 31], libc::EINVAL);
    c.expect_error(DMA_UNMAP, &[0; 10], libc::EINVAL);
    c.expect_error(GET_INFO, &[], libc::EINVAL);
    c.expect_error(SET_IRQS, &[0; 19], libc::EINVAL);
    c.expect_error(REGION_READ, &[0; 15], libc::EINVAL);
    // The connection is still in order.
    assert_eq!(c.read32(VFIO_PCI_CONFIG_REGION_INDEX, 0), 0x10c9_8086);
}

#[test]
fn region_access_bounds_and_huge_counts() {
    let n = igb("h-region");
    let mut c = Raw::connect(&n);
    c.version();
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    c.expect_error(REGION_READ, &access(0, bar0, u32::MAX), libc::E2BIG);
    c.expect_error(REGION_READ, &access(0, bar0, 65537), libc::E2BIG);
    c.expect_error(REGION_READ, &access(0x1fffe, bar0, 4), libc::EINVAL);
    c.expect_error(REGION_READ, &access(u64::MAX - 1, bar0, 4), libc::EINVAL);
    c.expect_error(REGION_READ, &access(0, 4, 4), libc::EINVAL); // igb has no BAR4
    c.expect_error(REGION_READ, &access(0, 1000, 4), libc::EINVAL);
    // The largest read allowed is served, within bounded time.
    let r = c.call(REGION_READ, &access(0, bar0, 65536));
    assert!(r.ok());
    assert_eq!(r.payload.len(), 16 + 65536);
    // Writes: count must match the data.
    let mut w = access(0x100, bar0, 8);
    w.extend_from_slice(&[0; 4]);
    c.expect_error(REGION_WRITE, &w, libc::EINVAL);
    let mut w = access(0x100, bar0, 0x7fff_ffff);
    w.extend_from_slice(&[0; 4]);
    c.expect_error(REGION_WRITE, &w, libc::E2BIG);
    let mut w = access(0x100, bar0, 4);
    w.extend_from_slice(&0x0400_8002u32.to_le_bytes());
    let r = c.call(REGION_WRITE, &w);
    assert!(r.ok());
    assert_eq!(
        r.payload,
        access(0x100, bar0, 4),
        "write reply echoes the access"
    );
    assert_eq!(c.read32(bar0, 0x100), 0x0400_8002);
    // Zero-length accesses do nothing.
    assert!(c.call(REGION_READ, &access(0x100, bar0, 0)).ok());
    drop(c);
    still_serves(&n);
}

#[test]
fn posted_writes_get_no_reply_even_when_they_fail() {
    let n = igb("h-posted");
    let mut c = Raw::connect(&n);
    c.version();
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    let mut w = access(0x100, bar0, 4);
    w.extend_from_slice(&0x2u32.to_le_bytes());
    c.send(REGION_WRITE, NO_REPLY, &w);
    let mut bad = access(0x100, 1000, 4);
    bad.extend_from_slice(&0x8u32.to_le_bytes());
    c.send(REGION_WRITE, NO_REPLY, &bad);
    c.send(99, NO_REPLY, &[]);
    // The first reply is the read's, and it sees the posted write.
    assert_eq!(c.read32(bar0, 0x100), 0x2);
}

#[test]
fn oversized_undersized_and_truncated_messages_end_the_connection() {
    let n = igb("h-framing");
    {
        let mut c = Raw::connect(&n);
        c.version();
        c.s.write_all(&header(7, REGION_WRITE, 0xffff_fff0, 0))
            .unwrap();
        let r = c.recv();
        assert_eq!(
            (r.id, r.flags & ERROR, r.error),
            (7, ERROR, libc::E2BIG as u32)
        );
        c.expect_closed();
    }
    {
        // One byte above the limit (REGION_WRITE of 64 KiB + 1).
        let mut c = Raw::connect(&n);
        c.version();
        c.s.write_all(&header(8, REGION_WRITE, 16 + 16 + 65537, 0))
            .unwrap();
        assert_eq!(c.recv().error, libc::E2BIG as u32);
        c.expect_closed();
    }
    {
        let mut c = Raw::connect(&n);
        c.s.write_all(&header(9, VERSION, 8, 0)).unwrap();
        c.expect_closed();
    }
    {
        // Half a header, then gone.
        let mut c = Raw::connect(&n);
        c.s.write_all(&header(1, VERSION, 64, 0)[..10]).unwrap();
    }
    {
        // A header, half its payload, then gone.
        let mut c = Raw::connect(&n);
        c.version();
        let mut m = header(2, REGION_WRITE, 16 + 16 + 4, 0);
        m.extend_from_slice(&access(0x100, 0, 4)[..8]);
        c.s.write_all(&m).unwrap();
    }
    still_serves(&n);
}

#[test]
fn a_client_stalling_inside_a_message_is_dropped() {
    let n = igb("h-stall");
    let mut c = Raw::connect(&n);
    c.version();
    c.s.write_all(&header(3, REGION_READ, 32, 0)).unwrap();
    c.s.write_all(&[0; 4]).unwrap();
    let t = Instant::now();
    c.expect_closed();
    let waited = t.elapsed();
    assert!(
        (Duration::from_secs(9)..Duration::from_secs(19)).contains(&waited),
        "dropped after the 10 s message deadline, not {waited:?}"
    );
    still_serves(&n);
}

#[test]
fn descriptor_counts_are_enforced_and_nothing_leaks() {
    let n = igb("h-fds");
    let mut c = Raw::connect(&n);
    c.version();
    let baseline = open_fds(&n);
    let evs: Vec<EventFd> = (0..17).map(|_| EventFd::new(0).unwrap()).collect();
    let fds: Vec<RawFd> = evs.iter().map(|e| e.as_raw_fd()).collect();
    let set =
        |flags: u32, index: u32, start: u32, count: u32| le32s(&[20, flags, index, start, count]);
    let trig_fd = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
    let msix = VFIO_PCI_MSIX_IRQ_INDEX;
    // Count not matching the descriptors.
    let r = c.call_fds(SET_IRQS, &set(trig_fd, msix, 0, 3), &fds[..2]);
    assert_eq!(r.error, libc::EINVAL as u32);
    // More descriptors than advertised (17 > max_msg_fds 16).
    let r = c.call_fds(SET_IRQS, &set(trig_fd, msix, 0, 17), &fds);
    assert_eq!(r.error, libc::EINVAL as u32);
    // Descriptors with commands that take none, or too many for DMA_MAP.
    let r = c.call_fds(REGION_READ, &access(0, 0, 4), &fds[..1]);
    assert_eq!(r.error, libc::EINVAL as u32);
    let map = [
        le32s(&[32, 3]),
        0u64.to_le_bytes().to_vec(),
        0u64.to_le_bytes().to_vec(),
        4096u64.to_le_bytes().to_vec(),
    ]
    .concat();
    let r = c.call_fds(DMA_MAP, &map, &fds[..2]);
    assert_eq!(r.error, libc::EINVAL as u32);
    let r = c.call_fds(
        SET_IRQS,
        &set(
            VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_NONE,
            msix,
            0,
            1,
        ),
        &fds[..1],
    );
    assert_eq!(r.error, libc::EINVAL as u32);
    // Unsupported or nonsensical flags, nonexistent index, vectors out of range.
    let mut b = set(
        VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_BOOL,
        msix,
        0,
        2,
    );
    b.extend_from_slice(&[1, 1]);
    c.expect_error(SET_IRQS, &b, libc::ENOTSUP);
    c.expect_error(
        SET_IRQS,
        &set(trig_fd | VFIO_IRQ_SET_DATA_NONE, msix, 0, 0),
        libc::EINVAL,
    );
    c.expect_error(SET_IRQS, &set(0, msix, 0, 0), libc::EINVAL);
    c.expect_error(SET_IRQS, &set(trig_fd, 9, 0, 1), libc::EINVAL);
    let r = c.call_fds(SET_IRQS, &set(trig_fd, msix, 9, 2), &fds[..2]);
    assert_eq!(r.error, libc::EINVAL as u32, "vectors 9..11 of 10");
    // Well-formed: one eventfd per vector of igb's 10, then de-assign them
    // with none.
    let r = c.call_fds(SET_IRQS, &set(trig_fd, msix, 0, 10), &fds[..10]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(open_fds(&n), baseline + 10, "ten eventfds held");
    let r = c.call(SET_IRQS, &set(trig_fd, msix, 0, 10));
    assert!(r.ok(), "{r:?}");
    assert_eq!(
        open_fds(&n),
        baseline,
        "every refused or released descriptor closed"
    );
    drop(c);
    still_serves(&n);
}

#[test]
fn dma_map_errors_and_unmap_all() {
    let n = igb("h-dma");
    let mut c = Raw::connect(&n);
    c.version();
    let ram = Ram::new(&n.dir, "ram", 1 << 20);
    let map = |addr: u64, size: u64| {
        [
            le32s(&[32, 3]),
            0u64.to_le_bytes().to_vec(),
            addr.to_le_bytes().to_vec(),
            size.to_le_bytes().to_vec(),
        ]
        .concat()
    };
    let baseline = open_fds(&n);
    let r = c.call_fds(DMA_MAP, &map(0, 1 << 20), &[ram.0.as_raw_fd()]);
    assert!(r.ok() && r.payload.is_empty(), "{r:?}");
    let r = c.call_fds(DMA_MAP, &map(0x1000, 1 << 20), &[ram.0.as_raw_fd()]);
    assert!(!r.ok(), "overlapping mapping refused");
    assert_eq!(r.error, libc::EEXIST as u32, "overlap answers EEXIST");
    let r = c.call_fds(DMA_MAP, &map(1 << 40, 0), &[ram.0.as_raw_fd()]);
    assert!(!r.ok(), "empty mapping refused");
    assert_eq!(r.error, libc::EINVAL as u32, "empty mapping answers EINVAL");
    let r = c.call_fds(
        DMA_MAP,
        &map(u64::MAX - 0xfff, 1 << 20),
        &[ram.0.as_raw_fd()],
    );
    assert!(!r.ok(), "wrapping mapping refused");
    assert_eq!(
        r.error,
        libc::EINVAL as u32,
        "a wrapping range answers EINVAL"
    );
    // UNMAP_ALL (flag bit 1, address and size 0) drops the mapping; the reply
    // echoes the request.
    let unmap = [
        le32s(&[24, 2]),
        0u64.to_le_bytes().to_vec(),
        0u64.to_le_bytes().to_vec(),
    ]
    .concat();
    let r = c.call(DMA_UNMAP, &unmap);
    assert!(r.ok());
    assert_eq!(r.payload, unmap);
    assert_eq!(open_fds(&n), baseline, "mapping released");
    let r = c.call_fds(DMA_MAP, &map(0x1000, 1 << 20), &[ram.0.as_raw_fd()]);
    assert!(r.ok(), "the range is free again: {r:?}");
}

// ---- issue 14: hostile tenants (DMA mappings, interrupt fds, bus mastering)

fn igb_ctl(name: &str) -> Nicemu {
    Nicemu::start(
        name,
        &[
            "--device",
            "igb,id=igb0,socket={dir}/igb0.sock",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["igb0.sock", "ctl.sock"],
    )
}

/// The guest error and interrupt counters of `ctl --json stats igb0`.
fn ctl_stats(n: &Nicemu) -> std::collections::HashMap<String, u64> {
    let out = n.ctl(&["--json", "stats", "igb0"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errs = v["guest_errors"]
        .as_array()
        .or(v["data"]["guest_errors"].as_array())
        .unwrap_or_else(|| panic!("no guest_errors in {v}"));
    errs.iter()
        .map(|kv| (kv[0].as_str().unwrap().to_string(), kv[1].as_u64().unwrap()))
        .collect()
}

/// nicemu is still running (not killed by a signal).
fn assert_alive(n: &mut Nicemu) {
    std::thread::sleep(Duration::from_millis(200));
    let st = n.child.try_wait().unwrap();
    assert!(st.is_none(), "nicemu died: {st:?}");
}

#[test]
fn version_reply_offers_no_migration_and_advertises_max_dma_maps() {
    let n = igb("h-nomig");
    let mut c = Raw::connect(&n);
    let caps = c.version();
    let caps = &caps["capabilities"];
    assert!(
        caps.get("migration").is_none(),
        "migration is not implemented and was not proposed: {caps}"
    );
    assert!(
        caps["max_dma_maps"].as_u64().is_some_and(|m| m > 0),
        "{caps}"
    );
    // Proposed by the client, it is still not offered.
    drop(c);
    let mut c = Raw::connect(&n);
    let mut p = vec![0, 0, 0, 0];
    p.extend_from_slice(br#"{"capabilities":{"migration":{"pgsize":4096}}}"#);
    p.push(0);
    let r = c.call(VERSION, &p);
    assert!(r.ok());
    let v: serde_json::Value = serde_json::from_slice(&r.payload[4..r.payload.len() - 1]).unwrap();
    assert!(v["capabilities"].get("migration").is_none(), "{v}");
}

#[test]
fn dma_map_beyond_its_file_is_refused_and_nicemu_survives() {
    let mut n = igb("h-sigbus");
    let mut c = Raw::connect(&n);
    c.version();
    let small = memfd("small", 4096, true);
    // 1 GiB over a 4 KiB memfd, then a TX ring beyond the file's end.
    let r = c.call_fds(DMA_MAP, &dma_map(RW, 0, 0, 1 << 30), &[small.as_raw_fd()]);
    c.bus_master(true);
    c.tx_ring(0x10_0000);
    c.wr32(0x3818, 1);
    assert_alive(&mut n);
    assert_eq!(c.read32(VFIO_PCI_CONFIG_REGION_INDEX, 0), 0x10c9_8086);
    assert!(!r.ok(), "a mapping past the file's end is refused");
    assert_eq!(r.error, libc::EINVAL as u32);
    // Offset + size past the end, and an offset that wraps.
    let r = c.call_fds(DMA_MAP, &dma_map(RW, 4096, 0, 4096), &[small.as_raw_fd()]);
    assert_eq!(r.error, libc::EINVAL as u32, "{r:?}");
    let r = c.call_fds(
        DMA_MAP,
        &dma_map(RW, u64::MAX - 4095, 0, 8192),
        &[small.as_raw_fd()],
    );
    assert_eq!(r.error, libc::EINVAL as u32, "{r:?}");
    // Exactly the file: fine.
    let r = c.call_fds(DMA_MAP, &dma_map(RW, 0, 0, 4096), &[small.as_raw_fd()]);
    assert!(r.ok(), "{r:?}");
}

#[test]
fn a_mapped_memfd_cannot_shrink_under_the_device() {
    let mut n = igb("h-shrink");
    let mut c = Raw::connect(&n);
    c.version();
    let ram = memfd("ram", 1 << 20, true);
    let r = c.call_fds(DMA_MAP, &dma_map(RW, 0, 0, 1 << 20), &[ram.as_raw_fd()]);
    assert!(r.ok(), "{r:?}");
    put_tx_frame(&ram, 0x8_0000, 0x9_0000);
    let shrunk = ram.set_len(4096).is_ok();
    c.bus_master(true);
    c.tx_ring(0x8_0000);
    c.wr32(0x3818, 1);
    assert_alive(&mut n);
    assert!(!shrunk, "the mapping sealed the memfd against shrinking");
    assert_eq!(c.read32(VFIO_PCI_BAR0_REGION_INDEX, 0x3810), 1, "TDH");
}

#[test]
fn files_that_could_shrink_are_not_mapped() {
    let n = igb("h-unsealed");
    let mut c = Raw::connect(&n);
    c.version();
    // A memfd made without MFD_ALLOW_SEALING (F_SEAL_SEAL set) and a plain
    // file: either could be truncated under a mapping.
    let unsealable = memfd("nosealing", 1 << 20, false);
    let plain = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(n.path("plain"))
        .unwrap();
    plain.set_len(1 << 20).unwrap();
    for f in [&unsealable, &plain] {
        let r = c.call_fds(DMA_MAP, &dma_map(RW, 0, 0, 1 << 20), &[f.as_raw_fd()]);
        assert_eq!(r.error, libc::EPERM as u32, "{r:?}");
    }
    assert!(
        plain.set_len(4096).is_ok(),
        "the client's file is untouched"
    );
}

#[test]
fn read_only_mappings_are_not_written_by_dma() {
    let n = igb_ctl("h-readonly");
    let mut c = Raw::connect(&n);
    c.version();
    let ram = memfd("ram", 1 << 20, true);
    // The descriptor ring in a read-only mapping: the frame is read and
    // sent, the DD write-back is refused and counted.
    let r = c.call_fds(DMA_MAP, &dma_map(1, 0, 0, 1 << 20), &[ram.as_raw_fd()]);
    assert!(r.ok(), "{r:?}");
    put_tx_frame(&ram, 0x1_0000, 0x2_0000);
    c.bus_master(true);
    c.tx_ring(0x1_0000);
    c.wr32(0x3818, 1);
    assert_eq!(c.read32(VFIO_PCI_BAR0_REGION_INDEX, 0x3810), 1, "TDH");
    assert_eq!(c.read32(VFIO_PCI_BAR0_REGION_INDEX, 0x4080), 1, "GPTC");
    let mut st = [0u8; 4];
    std::os::unix::fs::FileExt::read_exact_at(&ram, &mut st, 0x1_000c).unwrap();
    assert_eq!(st[0] & 1, 0, "no DD written into a read-only mapping");
    assert!(ctl_stats(&n)["dma_errors"] >= 1);
    // A write-only mapping cannot be read: nothing is sent.
    let r = c.call(DMA_UNMAP, &dma_unmap(0, 0, 1 << 20));
    assert!(r.ok(), "{r:?}");
    let r = c.call_fds(DMA_MAP, &dma_map(2, 0, 0, 1 << 20), &[ram.as_raw_fd()]);
    assert!(r.ok(), "{r:?}");
    c.wr32(0x3818, 2);
    assert_eq!(c.read32(VFIO_PCI_BAR0_REGION_INDEX, 0x4080), 0, "GPTC");
}

#[test]
fn dma_mappings_are_capped_in_number_and_size() {
    let n = igb("h-caps");
    let mut c = Raw::connect(&n);
    let caps = c.version();
    let max = caps["capabilities"]["max_dma_maps"]
        .as_u64()
        .unwrap_or(65535);
    let baseline = open_fds(&n);
    let page = memfd("page", 4096, true);
    let mut accepted = 0u64;
    let mut refusal = None;
    for i in 0..5000u64 {
        let r = c.call_fds(DMA_MAP, &dma_map(RW, 0, i << 12, 4096), &[page.as_raw_fd()]);
        if r.ok() {
            accepted += 1;
        } else if refusal.is_none() {
            refusal = Some(r.error);
        }
    }
    let held = open_fds(&n) - baseline;
    assert!(
        held <= 1,
        "{held} descriptors held for one memfd mapped {accepted} times"
    );
    assert!(
        accepted <= max,
        "{accepted} mappings accepted, {max} advertised"
    );
    assert_eq!(refusal, Some(libc::ENOSPC as u32));
    let r = c.call(DMA_UNMAP, &dma_unmap(2, 0, 0));
    assert!(r.ok());
    assert_eq!(open_fds(&n), baseline, "released");
    // Total size: a sparse 512 GiB memfd mapped again and again.
    let big = memfd("big", 1 << 39, true);
    let mut total = 0u64;
    for i in 0..4u64 {
        let r = c.call_fds(
            DMA_MAP,
            &dma_map(RW, 0, i << 39, 1 << 39),
            &[big.as_raw_fd()],
        );
        if !r.ok() {
            assert_eq!(r.error, libc::ENOSPC as u32);
            break;
        }
        total += 1 << 39;
    }
    assert!(total <= 1 << 40, "{total:#x} bytes mapped");
}

#[test]
fn dma_unmap_must_match_a_mapping_exactly() {
    let n = igb("h-unmap");
    let mut c = Raw::connect(&n);
    c.version();
    let ram = memfd("ram", 1 << 20, true);
    let r = c.call_fds(
        DMA_MAP,
        &dma_map(RW, 0, 1 << 20, 1 << 20),
        &[ram.as_raw_fd()],
    );
    assert!(r.ok());
    for (addr, size) in [
        (1 << 20, 4096),
        (1 << 20, 2 << 20),
        (0, 2 << 20),
        (0, 4 << 20),
        ((1 << 20) + 4096, 1 << 20),
    ] {
        let r = c.call(DMA_UNMAP, &dma_unmap(0, addr, size));
        assert_eq!(
            r.error,
            libc::EINVAL as u32,
            "unmap {addr:#x}+{size:#x}: {r:?}"
        );
    }
    // The mapping is intact: DMA through it works.
    put_tx_frame_at(&ram, 1 << 20, 0, 0x8_0000);
    c.bus_master(true);
    c.tx_ring(1 << 20);
    c.wr32(0x3818, 1);
    assert_eq!(c.read32(VFIO_PCI_BAR0_REGION_INDEX, 0x4080), 1, "GPTC");
    let r = c.call(DMA_UNMAP, &dma_unmap(0, 1 << 20, 1 << 20));
    assert!(r.ok(), "{r:?}");
    let r = c.call(DMA_UNMAP, &dma_unmap(0, 1 << 20, 1 << 20));
    assert_eq!(r.error, libc::EINVAL as u32, "already unmapped");
    // A mapping without fd (memory the device cannot reach) unmaps too.
    let r = c.call(DMA_MAP, &dma_map(RW, 0, 1 << 32, 1 << 20));
    assert!(r.ok(), "{r:?}");
    let r = c.call(DMA_UNMAP, &dma_unmap(0, 1 << 32, 1 << 20));
    assert!(r.ok(), "{r:?}");
}

#[test]
fn interrupt_fds_that_would_block_block_nothing() {
    let n = igb_ctl("h-irqfd");
    let mut c = Raw::connect(&n);
    c.version();
    c.s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // A full pipe (blocking) and a blocking eventfd one below its maximum.
    let mut p = [0i32; 2];
    // SAFETY: pipe writes two new fds into `p`.
    assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
    // SAFETY: fcntl on the pipe's write end, which this test owns.
    unsafe { libc::fcntl(p[1], libc::F_SETFL, libc::O_NONBLOCK) };
    // SAFETY: writing from a valid buffer to the pipe.
    while unsafe { libc::write(p[1], [0u8; 4096].as_ptr().cast(), 4096) } > 0 {}
    // SAFETY: as above; back to blocking.
    unsafe { libc::fcntl(p[1], libc::F_SETFL, 0) };
    let full = EventFd::new(0).unwrap();
    full.write(u64::MAX - 1).unwrap();
    let set = |flags: u32, start: u32, count: u32| {
        le32s(&[20, flags, VFIO_PCI_MSIX_IRQ_INDEX, start, count])
    };
    let trig_fd = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
    let r = c.call_fds(SET_IRQS, &set(trig_fd, 0, 2), &[p[1], full.as_raw_fd()]);
    assert!(r.ok(), "{r:?}");
    // Loopback triggers of both vectors, then a read that must be answered.
    let r = c.call(
        SET_IRQS,
        &set(VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_NONE, 0, 2),
    );
    assert!(r.ok(), "{r:?}");
    assert_eq!(c.read32(VFIO_PCI_CONFIG_REGION_INDEX, 0), 0x10c9_8086);
    assert!(
        ctl_stats(&n)["irq_coalesced"] >= 2,
        "EAGAIN counted as coalesced"
    );
    // A regular file is no interrupt fd.
    let file = memfd("notirq", 4096, true);
    let r = c.call_fds(SET_IRQS, &set(trig_fd, 2, 1), &[file.as_raw_fd()]);
    assert_eq!(r.error, libc::EINVAL as u32, "{r:?}");
    // SAFETY: closing the pipe fds this test made.
    unsafe {
        libc::close(p[0]);
        libc::close(p[1]);
    }
}

/// An interrupt a register write raises is written to the client's eventfd
/// before the write's reply: igb's ethtool interrupt self-test
/// (`igb_intr_test`) writes ICS and gives the interrupt 10 ms, and a guest
/// on a loaded host may not get another thread of nicemu scheduled in that
/// time. The function's own server thread writes what a message raised
/// before replying (`EventIrq::serving`), not the signaller thread.
#[test]
fn an_interrupt_a_register_write_raises_is_signalled_before_the_reply() {
    let n = igb_ctl("h-irq-reply");
    let mut c = Raw::connect(&n);
    c.version();
    let ev = EventFd::new(libc::EFD_NONBLOCK).unwrap();
    let set = le32s(&[
        20,
        VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD,
        VFIO_PCI_MSIX_IRQ_INDEX,
        0,
        1,
    ]);
    assert!(c.call_fds(SET_IRQS, &set, &[ev.as_raw_fd()]).ok());
    c.wr32(0x1514, 0xc000_0011); // GPIE: MSI-X mode
    c.wr32(0x152c, 0x1); // EIAC: vector 0's cause clears when it fires
    c.wr32(0x1524, 0x1); // EIMS
    let switches_before = signaller_switches(&n, "irq-igb0");
    for i in 0..200 {
        c.wr32(0x1520, 0x1); // EICS: vector 0
        assert_eq!(
            ev.read().ok(),
            Some(1),
            "write {i}: no interrupt signalled when the reply came"
        );
    }
    // Whether another thread of nicemu won the race to the client is up to
    // the scheduler; that the signaller thread was not woken is not.
    let woken = signaller_switches(&n, "irq-igb0") - switches_before;
    assert!(woken < 20, "the signaller thread was woken {woken} times");
}

/// Context switches so far of nicemu's thread called `name`.
fn signaller_switches(n: &Nicemu, name: &str) -> u64 {
    let tasks = format!("/proc/{}/task", n.child.id());
    for t in std::fs::read_dir(&tasks).unwrap() {
        let dir = t.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap();
        return status
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
    }
    panic!("no thread {name} in {tasks}");
}
