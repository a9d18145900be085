// SPDX-License-Identifier: Apache-2.0
//! The server against a recording device, over a real unix socket: replies,
//! posted writes, typed errors reaching the client as errnos, read-ahead of
//! bursts, and descriptors reaching the message that carried them.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

use nicemu_vfio_user_server::codec::{self, Header, RegionAccess, HEADER_SIZE};
use nicemu_vfio_user_server::{ConnError, DmaMaps, Endpoint, IrqError, PciDevice, Server};
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_MSIX_IRQ_INDEX,
};
use vmm_sys_util::eventfd::EventFd;
use vmm_sys_util::sock_ctrl_msg::ScmSocket;

/// Records what the server asks of the device. BAR0 is 256 bytes and reads
/// as its offset plus the byte index.
struct Recorder {
    writes: Vec<(u32, u64, Vec<u8>)>,
    resets: usize,
    dma_updates: usize,
    /// (start, count, descriptors) of each SET_IRQS.
    irqs: Vec<(u32, u32, usize)>,
    irq_clears: usize,
}

impl Recorder {
    fn new() -> Self {
        Recorder {
            writes: Vec::new(),
            resets: 0,
            dma_updates: 0,
            irqs: Vec::new(),
            irq_clears: 0,
        }
    }
}

impl PciDevice for Recorder {
    fn config_size(&self) -> u64 {
        256
    }
    fn bar_size(&self, bar: u32) -> u64 {
        if bar == 0 {
            0x100
        } else {
            0
        }
    }
    fn config_read(&mut self, _: u64, data: &mut [u8]) {
        data.fill(0);
    }
    fn config_write(&mut self, _: u64, _: &[u8]) {}
    fn bar_read(&mut self, _: u32, offset: u64, data: &mut [u8]) {
        for (i, b) in data.iter_mut().enumerate() {
            *b = (offset as u8).wrapping_add(i as u8);
        }
    }
    fn bar_write(&mut self, bar: u32, offset: u64, data: &[u8]) {
        self.writes.push((bar, offset, data.to_vec()));
    }
    fn reset(&mut self) {
        self.resets += 1;
    }
    fn set_dma(&mut self, _: DmaMaps) {
        self.dma_updates += 1;
    }
    fn msix_vectors(&self) -> u32 {
        64
    }
    fn set_irqs(
        &mut self,
        _: u32,
        _: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), IrqError> {
        self.irqs.push((start, count, fds.len()));
        Ok(())
    }
    fn clear_irqs(&mut self) {
        self.irq_clears += 1;
    }
}

/// A fresh directory for one test's socket, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "nicemu-vfio-user-server-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn msg(id: u16, command: u16, flags: u32, payload: &[u8]) -> Vec<u8> {
    let mut m = Header {
        message_id: id,
        command,
        message_size: (HEADER_SIZE + payload.len()) as u32,
        flags,
        error: 0,
    }
    .encode()
    .to_vec();
    m.extend_from_slice(payload);
    m
}

fn reply(s: &mut UnixStream) -> (Header, Vec<u8>) {
    let mut h = [0u8; HEADER_SIZE];
    s.read_exact(&mut h).unwrap();
    let h = Header::parse(&h);
    let mut p = vec![0; h.message_size as usize - HEADER_SIZE];
    s.read_exact(&mut p).unwrap();
    (h, p)
}

fn access(offset: u64, count: u32) -> Vec<u8> {
    let mut a = Vec::new();
    RegionAccess {
        offset,
        region: 0,
        count,
    }
    .encode(&mut a);
    a
}

fn posted_write(id: u16, offset: u64, v: u8) -> Vec<u8> {
    let mut w = access(offset, 1);
    w.push(v);
    msg(id, 10, codec::flags::NO_REPLY, &w)
}

fn le32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn le64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn serves_a_client_against_a_device() {
    let dir = TempDir::new("serve");
    let path = dir.0.join("s.sock");
    let mut server = Server::new(
        UnixListener::bind(&path).unwrap(),
        Endpoint::new("t", Recorder::new()),
    );
    let t = std::thread::spawn(move || {
        let first = server.serve_one();
        let second = server.serve_one();
        (first, second, server)
    });
    let mut c = UnixStream::connect(&path).unwrap();
    c.write_all(&msg(1, 1, 0, b"\0\0\0\0")).unwrap();
    let (h, p) = reply(&mut c);
    assert_eq!((h.message_id, h.flags), (1, codec::flags::REPLY));
    assert!(p.ends_with(b"}\0"));
    // Posted writes, one of them outside BAR0, then a read that orders
    // after them.
    let mut w = access(8, 2);
    w.extend_from_slice(&[0xaa, 0xbb]);
    c.write_all(&msg(2, 10, codec::flags::NO_REPLY, &w))
        .unwrap();
    let mut bad = access(0xff, 2);
    bad.extend_from_slice(&[1, 2]);
    c.write_all(&msg(3, 10, codec::flags::NO_REPLY, &bad))
        .unwrap();
    c.write_all(&msg(4, 9, 0, &access(0x10, 3))).unwrap();
    let (h, p) = reply(&mut c);
    assert_eq!(h.message_id, 4, "no reply to the posted writes");
    assert_eq!(&p[16..], &[0x10, 0x11, 0x12]);
    // A DMA_MAP without a file (memory the device cannot reach) is taken;
    // the same range again is refused with the DMA table's EEXIST.
    let map = [le32s(&[32, 0]), le64s(&[0, 0x1000, 0x1000])].concat();
    c.write_all(&msg(5, 2, 0, &map)).unwrap();
    assert_eq!(reply(&mut c).0.flags, codec::flags::REPLY);
    c.write_all(&msg(6, 2, 0, &map)).unwrap();
    let (h, p) = reply(&mut c);
    assert_eq!(
        (h.message_id, h.flags & codec::flags::ERROR, h.error),
        (6, codec::flags::ERROR, libc::EEXIST as u32)
    );
    assert!(p.is_empty());
    c.write_all(&msg(7, 13, 0, &[])).unwrap();
    assert_eq!(reply(&mut c).0.flags, codec::flags::REPLY);
    drop(c);
    // A second client leaves in the middle of a message.
    let mut c = UnixStream::connect(&path).unwrap();
    c.write_all(&msg(1, 1, 0, b"\0\0\0\0")[..18]).unwrap();
    drop(c);
    let (first, second, server) = t.join().unwrap();
    assert!(first.is_ok(), "{first:?}");
    assert!(
        matches!(second, Err(ConnError::Truncated { got: 18, want: 20 })),
        "{second:?}"
    );
    let dev = server.endpoint().device();
    assert_eq!(dev.writes, vec![(0, 8, vec![0xaa, 0xbb])]);
    assert_eq!((dev.resets, dev.dma_updates, dev.irq_clears), (1, 1, 0));
}

/// SET_IRQS of MSI-X vectors `start..start + count`, posted.
fn set_irqs(start: u32, count: u32, data: u32) -> Vec<u8> {
    let flags = data | VFIO_IRQ_SET_ACTION_TRIGGER;
    let p = le32s(&[20, flags, VFIO_PCI_MSIX_IRQ_INDEX, start, count]);
    msg(2, 8, codec::flags::NO_REPLY, &p)
}

#[test]
fn bursts_are_served_and_descriptors_reach_their_message() {
    bursts_served(Duration::ZERO);
}

/// The same with the server polling between messages (non-blocking
/// receives): every message and descriptor lands as when it blocks.
#[test]
fn bursts_are_served_and_descriptors_reach_their_message_when_polling() {
    bursts_served(Duration::from_micros(200));
}

fn bursts_served(poll: Duration) {
    let dir = TempDir::new(&format!("burst{}", poll.as_micros()));
    let path = dir.0.join("s.sock");
    let mut endpoint = Endpoint::new("t", Recorder::new());
    endpoint.set_poll(poll);
    let mut server = Server::new(UnixListener::bind(&path).unwrap(), endpoint);
    let t = std::thread::spawn(move || {
        let r = server.serve_one();
        (r, server)
    });
    let mut c = UnixStream::connect(&path).unwrap();
    c.write_all(&msg(1, 1, 0, b"\0\0\0\0")).unwrap();
    reply(&mut c);
    // Posted writes around SET_IRQS messages with and without descriptors,
    // sent without waiting, so that one receive may hold several messages
    // (and the descriptors of the last one).
    let evs: Vec<EventFd> = (0..3)
        .map(|_| EventFd::new(libc::EFD_NONBLOCK).unwrap())
        .collect();
    let raw: Vec<RawFd> = evs.iter().map(|e| e.as_raw_fd()).collect();
    let rounds = 40u32;
    for i in 0..rounds {
        c.write_all(&posted_write(3, 1, i as u8)).unwrap();
        let assign = set_irqs(i, 3, VFIO_IRQ_SET_DATA_EVENTFD);
        c.send_with_fds(&[&assign[..]], &raw).unwrap();
        c.write_all(&posted_write(4, 2, i as u8)).unwrap();
        c.write_all(&set_irqs(i, 2, VFIO_IRQ_SET_DATA_EVENTFD))
            .unwrap();
    }
    // A burst larger than the receive buffer: messages straddle its end.
    let burst: Vec<u8> = (0..3000u32)
        .flat_map(|i| posted_write(5, 3, i as u8))
        .collect();
    c.write_all(&burst).unwrap();
    // A header alone, then its payload.
    let m = msg(6, 9, 0, &access(0x10, 1));
    c.write_all(&m[..HEADER_SIZE]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    c.write_all(&m[HEADER_SIZE..]).unwrap();
    let (h, p) = reply(&mut c);
    assert_eq!(
        (h.message_id, p.len()),
        (6, 17),
        "only the read is answered"
    );
    drop(c);
    let (r, server) = t.join().unwrap();
    assert!(r.is_ok(), "{r:?}");
    let dev = server.endpoint().device();
    let want: Vec<(u32, u32, usize)> = (0..rounds).flat_map(|i| [(i, 3, 3), (i, 2, 0)]).collect();
    assert_eq!(dev.irqs, want, "each SET_IRQS got its own descriptors");
    assert_eq!(dev.writes.len(), 2 * rounds as usize + 3000);
    assert!(dev
        .writes
        .iter()
        .skip(2 * rounds as usize)
        .enumerate()
        .all(|(i, w)| *w == (0, 3, vec![i as u8])));
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// A polling server spins for at most its window after a message, then
/// blocks: an idle client costs it (almost) no CPU time. A window longer
/// than `MAX_POLL` is cut to it.
#[test]
fn polling_is_bounded_then_the_server_blocks() {
    let dir = TempDir::new("poll");
    let path = dir.0.join("s.sock");
    let mut endpoint = Endpoint::new("t", Recorder::new());
    endpoint.set_poll(Duration::from_secs(10));
    let mut server = Server::new(UnixListener::bind(&path).unwrap(), endpoint);
    let t = std::thread::spawn(move || {
        let r = server.serve_one();
        (r, thread_cpu())
    });
    let mut c = UnixStream::connect(&path).unwrap();
    c.write_all(&msg(1, 1, 0, b"\0\0\0\0")).unwrap();
    reply(&mut c);
    for i in 0..5 {
        c.write_all(&msg(2, 9, 0, &access(0x10, 1))).unwrap();
        assert_eq!(reply(&mut c).1.len(), 17, "read {i} answered while polling");
        // Idle far longer than the window.
        std::thread::sleep(Duration::from_millis(150));
    }
    drop(c);
    let (r, cpu) = t.join().unwrap();
    assert!(r.is_ok(), "{r:?}");
    // 6 windows of at most MAX_POLL (1 ms) each, plus serving; spinning
    // through the 750 ms of idle time would cost hundreds of ms.
    assert!(
        cpu < Duration::from_millis(60),
        "server thread used {cpu:?} of CPU for 6 messages"
    );
}
