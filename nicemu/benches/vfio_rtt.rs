// SPDX-License-Identifier: Apache-2.0
//! vfio-user register access cost through nicemu's server, without QEMU: a
//! client on the same machine reads STATUS and writes RDT in a loop, against
//! the raw AF_UNIX round trip of the same machine (an echo thread answering
//! a message of the same size). (In a TCG guest add QEMU's share; see README.)
//!
//! Run: `cargo bench -p nicemu --bench vfio_rtt`; `POLL_US=N` sets the
//! server's `--poll-us` (the raw echo thread then polls as long, too);
//! `PIN=1` keeps the server (and echo) thread on CPU 1 and the client on
//! CPU 0, so a polling server does not take the client's core.
//! Prints the median, p90 and p99 of 20 000 round trips each.
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nicemu::trace::Tracer;
use nicemu::vfio::{irq::EventIrq, SharedDevice, VfioPort};
use nicemu_device_models::igb::{self, IgbConfig};
use nicemu_device_models::testutil::RecordingWire;
use nicemu_device_models::{DeviceEnv, MonotonicClock, TimerSink};
use vfio_bindings::bindings::vfio::VFIO_PCI_BAR0_REGION_INDEX;
use vfio_user::Client;

struct NoTimer;
impl TimerSink for NoTimer {
    fn arm(&self, _: u64) {}
}

const N: usize = 20_000;
/// A REGION_READ of 4 bytes: header and access; its reply adds the data.
const REQUEST: usize = 32;
const REPLY: usize = 36;

/// Median, p90 and p99 of `t`, in µs.
fn quantiles(mut t: Vec<Duration>) -> String {
    t.sort_unstable();
    let q = |p: f64| t[((t.len() as f64 * p) as usize).min(t.len() - 1)].as_secs_f64() * 1e6;
    format!(
        "median {:5.1} µs  p90 {:5.1}  p99 {:6.1}",
        q(0.5),
        q(0.9),
        q(0.99)
    )
}

/// Times `op` `N` times.
fn timed(mut op: impl FnMut(usize)) -> Vec<Duration> {
    (0..N)
        .map(|i| {
            let t = Instant::now();
            op(i);
            t.elapsed()
        })
        .collect()
}

/// With `PIN=1`, moves the calling thread (and the threads it starts from
/// now on) to CPU `cpu`.
fn pin(cpu: usize) {
    if std::env::var_os("PIN").is_none_or(|v| v != "1") {
        return;
    }
    // SAFETY: cpu_set_t is plain data for which all-zero is the empty set;
    // CPU_SET writes within it; sched_setaffinity reads `size_of` bytes.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set);
    }
}

/// Whether `s` holds data (or an end or error) to read, without waiting.
fn readable(s: &UnixStream) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: recv writes at most 1 byte into `b`, which outlives the call;
    // MSG_PEEK leaves the data queued.
    let n = unsafe {
        libc::recv(
            s.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n != -1 || std::io::Error::last_os_error().kind() != ErrorKind::WouldBlock
}

/// The raw round trip: a thread echoes a `REPLY`-byte answer to each
/// `REQUEST`-byte message, reading like the server (polling for `poll`
/// after each message, then blocking).
fn raw_round_trips(poll: Duration) -> Vec<Duration> {
    let (mut c, s) = UnixStream::pair().unwrap();
    pin(1);
    let echo = std::thread::spawn(move || {
        let mut s = s;
        let mut req = [0u8; REQUEST];
        let reply = [0u8; REPLY];
        loop {
            let t = Instant::now();
            while t.elapsed() < poll && !readable(&s) {
                std::hint::spin_loop();
            }
            if s.read_exact(&mut req).is_err() {
                return;
            }
            s.write_all(&reply).unwrap();
        }
    });
    pin(0);
    let mut reply = [0u8; REPLY];
    let t = timed(|_| {
        c.write_all(&[0u8; REQUEST]).unwrap();
        c.read_exact(&mut reply).unwrap();
    });
    drop(c);
    echo.join().unwrap();
    t
}

fn main() {
    let poll_us: u64 = std::env::var("POLL_US")
        .ok()
        .map_or(0, |v| nicemu::poll::parse_poll_us(&v).unwrap());
    nicemu::poll::set(poll_us);
    let dir = std::env::temp_dir().join(format!("nicemu-rtt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("igb.sock");
    let irq = Arc::new(EventIrq::new("igb0", igb::MSIX_VECTORS).unwrap());
    let env = DeviceEnv {
        irq: irq.clone(),
        wire: Arc::new(RecordingWire::default()),
        clock: Arc::new(MonotonicClock),
        timer: Arc::new(NoTimer),
    };
    let dev: SharedDevice = igb::new_function(
        IgbConfig {
            mac: [2, 0, 0, 0, 0, 1],
        },
        env,
    );
    pin(1);
    VfioPort::new("igb0".into(), dev, irq, Arc::new(Tracer::disabled()))
        .serve(&sock)
        .unwrap();
    pin(0);
    let mut c = Client::new(&sock).unwrap();
    let mut b = [0u8; 4];
    let read = timed(|_| {
        c.region_read(VFIO_PCI_BAR0_REGION_INDEX, 0x8, &mut b)
            .unwrap();
    });
    // The crate's client waits for a reply to writes, so this is a round
    // trip too (QEMU posts them and does not wait).
    let write = timed(|i| {
        c.region_write(
            VFIO_PCI_BAR0_REGION_INDEX,
            0x2818,
            &(i as u32 & 0xf).to_le_bytes(),
        )
        .unwrap();
    });
    let raw = raw_round_trips(Duration::from_micros(poll_us));
    let pinned = if std::env::var_os("PIN").is_some_and(|v| v == "1") {
        ", server on CPU 1, client on CPU 0"
    } else {
        ""
    };
    println!("poll-us {poll_us}{pinned}, {N} round trips each:");
    println!(
        "  raw AF_UNIX round trip ({REQUEST} B → {REPLY} B):  {}",
        quantiles(raw)
    );
    println!(
        "  vfio-user BAR0 read (STATUS), client to nicemu: {}",
        quantiles(read)
    );
    println!(
        "  vfio-user BAR0 write (RDT), client to nicemu:   {}",
        quantiles(write)
    );
    let _ = std::fs::remove_dir_all(dir);
}
