// SPDX-License-Identifier: Apache-2.0
//! Fuzzes nicemu's vfio-user server over a real igb: the input is a sequence
//! of messages (any command, any payload, posted or not, framing broken on
//! purpose) each sent with descriptors from a menu — eventfds, a blocking
//! eventfd one below its maximum, a full blocking pipe, sealable and
//! unsealable memfds of any size, a regular file. A valid VERSION goes
//! first so that the rest is served. The server must never panic, hang
//! (libFuzzer's -timeout), die of a signal, or leak a descriptor.
#![no_main]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Once};

use nicemu_device_models::igb::{self, IgbConfig};
use nicemu_device_models::{DeviceEnv, FrameSink, MonotonicClock, TimerSink};
use libfuzzer_sys::fuzz_target;
use nicemu::trace::Tracer;
use nicemu::vfio::irq::EventIrq;
use nicemu::vfio::VfioPort;
use vmm_sys_util::sock_ctrl_msg::ScmSocket;

struct Nowhere;
impl FrameSink for Nowhere {
    fn transmit(&self, _frame: &[u8]) {}
}

struct NoTimer;
impl TimerSink for NoTimer {
    fn arm(&self, _deadline_ns: u64) {}
}

/// Commands by the low nibble of a message's first byte; 0 is "raw bytes,
/// no header" (framing attacks), 15 an unknown command.
const COMMANDS: [u16; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 9, 10, 8, 99];

fn eventfd(init: u64, flags: i32) -> OwnedFd {
    // SAFETY: eventfd returns a new fd or -1.
    let fd = unsafe { libc::eventfd(0, flags | libc::EFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: the fd was just created and is ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if init > 0 {
        let b = init.to_le_bytes();
        // SAFETY: 8 bytes from a live buffer to our eventfd.
        unsafe { libc::write(fd.as_raw_fd(), b.as_ptr().cast(), 8) };
    }
    fd
}

fn memfd(size: u64, sealable: bool) -> OwnedFd {
    let flags = libc::MFD_CLOEXEC | if sealable { libc::MFD_ALLOW_SEALING } else { 0 };
    // SAFETY: a NUL-terminated name; the new fd is ours.
    let fd = unsafe { libc::memfd_create(c"fuzz-ram".as_ptr(), flags) };
    assert!(fd >= 0);
    // SAFETY: as above.
    let f = unsafe { File::from_raw_fd(fd) };
    if f.set_len(size).is_ok() {
        fill_descriptors(&f, size);
    }
    f.into()
}

/// Bytes at the start of a memfd laid out as descriptors.
const DESC_AREA: u64 = 0x4_0000;

/// Fills the first [`DESC_AREA`] bytes of `f` with 16-byte descriptors that
/// all point at 2 KiB buffers inside that area (an advanced TX data
/// descriptor of 60 bytes with EOP|RS, also a valid RX read descriptor), so
/// that wherever a fuzzed ring lands in it the device finds work to do.
fn fill_descriptors(f: &File, size: u64) {
    use std::os::unix::fs::FileExt;
    let n = (size.min(DESC_AREA) / 16) as usize;
    let mut b = Vec::with_capacity(n * 16);
    for i in 0..n as u64 {
        b.extend_from_slice(&(0x2_0000 + (i % 64) * 2048).to_le_bytes());
        b.extend_from_slice(&(0x2b30_0000u32 | 60).to_le_bytes());
        b.extend_from_slice(&(60u32 << 14).to_le_bytes());
    }
    let _ = f.write_all_at(&b, 0);
}

/// A full pipe whose write end blocks; the read end goes to `keep`.
fn full_pipe(keep: &mut Vec<OwnedFd>) -> OwnedFd {
    let mut p = [0i32; 2];
    // SAFETY: pipe2 writes two new fds into `p`.
    assert_eq!(
        unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) },
        0
    );
    // SAFETY: both fds are new and ours.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
    let page = [0u8; 4096];
    // SAFETY: writes from a live buffer into our pipe until it is full.
    while unsafe { libc::write(w.as_raw_fd(), page.as_ptr().cast(), page.len()) } > 0 {}
    // SAFETY: back to blocking, on our own fd.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, 0) };
    keep.push(r);
    w
}

/// The descriptors of menu entry `sel`; `size` sizes memfds (in pages).
fn menu(sel: u8, size: u32, keep: &mut Vec<OwnedFd>) -> Vec<OwnedFd> {
    match sel {
        1 => vec![eventfd(0, libc::EFD_NONBLOCK)],
        2 => vec![eventfd(u64::MAX - 1, 0)],
        3 => vec![full_pipe(keep)],
        4 => vec![memfd(u64::from(size) << 12, true)],
        5 => vec![memfd(u64::from(size) << 12, false)],
        6 => (0..10).map(|_| eventfd(0, libc::EFD_NONBLOCK)).collect(),
        7 => vec![File::open("/proc/self/exe").unwrap().into()],
        _ => vec![],
    }
}

fn message(id: u16, command: u16, flags: u32, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(16 + payload.len());
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&command.to_le_bytes());
    m.extend_from_slice(&(16 + payload.len() as u32).to_le_bytes());
    m.extend_from_slice(&flags.to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(payload);
    m
}

/// Sends the messages the input describes; stops at the first send error
/// (the server closed the connection).
fn send_all(c: &UnixStream, mut data: &[u8], keep: &mut Vec<OwnedFd>) {
    let version = message(
        0,
        1,
        0,
        b"\0\0\0\0{\"capabilities\":{\"max_msg_fds\":16}}\0",
    );
    if (&*c).write_all(&version).is_err() {
        return;
    }
    let mut id = 1u16;
    while data.len() >= 2 {
        let (head, len) = (data[0], usize::from(data[1]));
        data = &data[2..];
        let sel = head >> 5;
        let mut size = 0u32;
        if matches!(sel, 4 | 5) && data.len() >= 4 {
            size = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
            data = &data[4..];
        }
        let payload = &data[..len.min(data.len())];
        data = &data[payload.len()..];
        let command = COMMANDS[usize::from(head & 0xf)];
        let posted = if head & 0x10 != 0 { 1 << 4 } else { 0 };
        let bytes = if command == 0 {
            payload.to_vec()
        } else {
            message(id, command, posted, payload)
        };
        id = id.wrapping_add(1);
        let fds = menu(sel, size, keep);
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        let sent = if raw.is_empty() || bytes.is_empty() {
            (&*c).write_all(&bytes).is_ok()
        } else {
            c.send_with_fds(&[&bytes[..]], &raw)
                .is_ok_and(|n| n == bytes.len())
        };
        if !sent {
            return;
        }
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fuzz_target!(|data: &[u8]| {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // libFuzzer's main does not ignore SIGPIPE as Rust's does; nicemu
        // runs with it ignored, and a closed connection must be EPIPE here.
        // SAFETY: setting a signal disposition to SIG_IGN.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    });
    let before = open_fds();
    {
        let irq = Arc::new(EventIrq::new("fuzz", igb::MSIX_VECTORS).expect("signaller thread"));
        let env = DeviceEnv {
            irq: irq.clone(),
            wire: Arc::new(Nowhere),
            clock: Arc::new(MonotonicClock),
            timer: Arc::new(NoTimer),
        };
        let dev = igb::new_function(
            IgbConfig {
                mac: [0x52, 0x54, 0, 0, 0, 1],
            },
            env,
        );
        let mut port = VfioPort::new("fuzz".into(), dev, irq, Arc::new(Tracer::disabled()));
        let (client, srv) = UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let _ = port.serve_stream(srv);
            port.disconnect();
        });
        let mut replies = client.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while matches!(replies.read(&mut buf), Ok(n) if n > 0) {}
        });
        let mut keep = Vec::new();
        send_all(&client, data, &mut keep);
        let _ = client.shutdown(std::net::Shutdown::Write);
        server.join().expect("the server thread panicked");
        drop(client);
        reader.join().unwrap();
    }
    assert_eq!(open_fds(), before, "descriptors leaked");
});
