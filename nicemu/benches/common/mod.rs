// SPDX-License-Identifier: Apache-2.0
//! What the data-path benchmarks share: igb and ixgbe functions on one
//! switch, wired as `nicemu` wires them (direct delivery through a
//! [`PortSlot`], a receive thread per port for what the switch queues), and a
//! minimal driver per queue pair that posts transmit descriptors, refills
//! receive buffers and re-enables its interrupt vector after each batch, the
//! way NAPI does. Descriptors and refills of one batch are written to guest
//! memory in one write each, as a driver's stores to a coherent ring would
//! be, so the figures are the model's cost and not `vm-memory`'s per-call
//! overhead on the driver's side.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nicemu::switch::{PortHandle, PortSlot, Switch};
use nicemu_device_models::testutil::{bus_master, ram};
use nicemu_device_models::{
    igb, ixgbe, DeviceEnv, FrameSink, GuestRam, InterruptSink, MonotonicClock, NicFunction,
    TimerSink,
};
use vm_memory::{Bytes, GuestAddress};

/// Descriptors per ring.
pub const RING: u32 = 256;
/// Frames posted per doorbell (a divisor of [`RING`]).
pub const BATCH: u32 = 32;
/// Guest memory of one queue pair: rings and 2 KiB buffers.
const QUEUE_SPAN: u64 = 2 << 20;
const TX_RING: u64 = 0;
const RX_RING: u64 = 0x1000;
const TX_BUF: u64 = 0x10000;
const RX_BUF: u64 = 0x100000;
const BUF: u64 = 2048;
/// Advanced data descriptor: DEXT | RS | IFCS | EOP | DTYP data.
const TX_CMD: u32 = 0x2b30_0000;

/// Which part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 82576.
    Igb,
    /// 82599.
    Ixgbe,
}

impl Kind {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Igb => "igb",
            Kind::Ixgbe => "ixgbe",
        }
    }

    fn rxq(self, q: u32) -> u32 {
        match self {
            Kind::Igb => 0xc000 + 0x40 * q,
            Kind::Ixgbe => 0x1000 + 0x40 * q,
        }
    }

    fn txq(self, q: u32) -> u32 {
        match self {
            Kind::Igb => 0xe000 + 0x40 * q,
            Kind::Ixgbe => 0x6000 + 0x40 * q,
        }
    }

    /// SRRCTL's place in a receive queue's block.
    fn srrctl(self) -> u32 {
        match self {
            Kind::Igb => 0x0c,
            Kind::Ixgbe => 0x14,
        }
    }

    /// EIMS: writing a vector's bit re-enables it.
    fn eims(self) -> u32 {
        match self {
            Kind::Igb => 0x1524,
            Kind::Ixgbe => 0x0880,
        }
    }

    /// IVAR register and shift of a queue's entry (`igb_assign_vector`,
    /// `ixgbe_set_ivar`).
    fn ivar(self, q: u32, tx: bool) -> (u32, u32) {
        let t = if tx { 8 } else { 0 };
        match self {
            Kind::Igb => (0x1700 + 4 * (q & 7), ((q & 8) << 1) + t),
            Kind::Ixgbe => (0x0900 + 4 * (q >> 1), 16 * (q & 1) + t),
        }
    }
}

/// Counts MSI-X messages.
#[derive(Debug, Default)]
pub struct CountingIrq(pub AtomicU64);

impl InterruptSink for CountingIrq {
    fn msix(&self, _: u16) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn legacy(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct NoTimer;
impl TimerSink for NoTimer {
    fn arm(&self, _: u64) {}
}

/// One function on the switch, with its guest memory.
pub struct Nic {
    /// The part.
    pub kind: Kind,
    /// The function.
    pub dev: Arc<dyn NicFunction>,
    /// Its guest memory.
    pub mem: GuestRam,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// MSI-X messages it sent.
    pub irq: Arc<CountingIrq>,
    wire: Arc<PortHandle>,
}

impl Nic {
    /// A function of `kind` with `mac` on `sw` and `queues` queue pairs
    /// set up as its driver does after open.
    pub fn attach(sw: &Arc<Switch>, kind: Kind, mac: [u8; 6], queues: u32) -> Nic {
        let slot = Arc::new(PortSlot::default());
        let (port, rx) = sw.attach_direct(Some(slot.clone()));
        let wire = Arc::new(port);
        let irq = Arc::new(CountingIrq::default());
        let env = DeviceEnv {
            irq: irq.clone(),
            wire: wire.clone(),
            clock: Arc::new(MonotonicClock),
            timer: Arc::new(NoTimer),
        };
        let dev = match kind {
            Kind::Igb => igb::new_function(igb::IgbConfig { mac }, env),
            Kind::Ixgbe => ixgbe::new_function(
                ixgbe::IxgbeConfig {
                    mac,
                    sfp: ixgbe::SfpKind::DirectAttach,
                },
                env,
            ),
        };
        slot.set(dev.clone());
        // The port's receive thread, as `nicemu` runs it: what the switch
        // could not hand over directly.
        let rx_dev = dev.clone();
        std::thread::spawn(move || {
            while let Some((frame, sent)) = rx.recv_timed() {
                rx_dev.deliver(&frame, Some(sent), true);
                rx.recycle(frame);
            }
        });
        let mem = ram((QUEUE_SPAN * u64::from(queues.max(1))) as usize);
        dev.set_memory(mem.clone());
        bus_master(&*dev);
        let nic = Nic {
            kind,
            dev,
            mem,
            mac,
            irq,
            wire,
        };
        nic.open(queues);
        nic
    }

    /// Sends a broadcast frame from the function's MAC onto its switch
    /// port, as a driver's first ARP would: the switch learns where the
    /// function is and stops flooding frames for it.
    pub fn announce(&self) {
        self.wire.transmit(&frame([0xff; 6], self.mac, 60, None));
    }

    /// Writes a register.
    pub fn wr(&self, off: u32, v: u32) {
        self.dev.bar_write(0, u64::from(off), &v.to_le_bytes());
    }

    /// Reads a register.
    pub fn rd(&self, off: u32) -> u32 {
        let mut b = [0u8; 4];
        self.dev.bar_read(0, u64::from(off), &mut b);
        u32::from_le_bytes(b)
    }

    fn open(&self, queues: u32) {
        self.enable_msix(queues);
        for q in 0..queues {
            self.setup_tx(q);
            self.setup_rx(q);
        }
        match self.kind {
            // TCTL: EN | PSP; RCTL: EN | BAM | SECRC.
            Kind::Igb => {
                self.wr(0x400, 0x2 | 0x8);
                self.wr(0x100, 0x2 | (1 << 15) | (1 << 26));
            }
            // DMATXCTL.TE; RXCTRL.RXEN; FCTRL.BAM.
            Kind::Ixgbe => {
                self.wr(0x4a80, 1);
                self.wr(0x5080, 1 << 10);
                self.wr(0x3000, 1);
            }
        }
    }

    /// MSI-X with one vector per queue pair, auto-clear and auto-mask (the
    /// driver re-enables a vector after its poll), no moderation.
    fn enable_msix(&self, queues: u32) {
        let vectors = (1u32 << queues) - 1;
        match self.kind {
            Kind::Igb => {
                // GPIE: Multiple_MSIX | EIAME | PBA; EIAC, EIAM.
                self.wr(0x1514, (1 << 4) | (1 << 30) | (1 << 31));
                self.wr(0x152c, vectors);
                self.wr(0x1530, vectors);
            }
            Kind::Ixgbe => {
                // GPIE: Multiple_MSIX | EIAME | PBA_SUPPORT; EIAC, EIAM_EX.
                self.wr(0x0898, (1 << 4) | (1 << 30) | (1 << 31));
                self.wr(0x0810, vectors);
                self.wr(0x0ad0, vectors);
            }
        }
        for q in 0..queues {
            for tx in [false, true] {
                let (reg, shift) = self.kind.ivar(q, tx);
                let v = self.rd(reg) & !(0xff << shift);
                self.wr(reg, v | ((0x80 | q) << shift));
            }
        }
        self.wr(self.kind.eims(), vectors);
    }

    fn setup_tx(&self, q: u32) {
        let b = self.kind.txq(q);
        let base = QUEUE_SPAN * u64::from(q);
        self.wr(b, (base + TX_RING) as u32);
        self.wr(b + 0x04, 0);
        self.wr(b + 0x08, RING * 16);
        self.wr(b + 0x28, 1 << 25);
    }

    fn setup_rx(&self, q: u32) {
        let b = self.kind.rxq(q);
        let base = QUEUE_SPAN * u64::from(q);
        self.wr(b + 0x28, 0);
        self.wr(b, (base + RX_RING) as u32);
        self.wr(b + 0x04, 0);
        self.wr(b + 0x08, RING * 16);
        // SRRCTL: advanced one-buffer descriptors, 2 KiB buffers.
        self.wr(b + self.kind.srrctl(), 0x0200_0002);
        self.wr(b + 0x28, 1 << 25);
        let mut ring = vec![0u8; (RING * 16) as usize];
        for i in 0..u64::from(RING) {
            let at = (i * 16) as usize;
            let buf = base + RX_BUF + i * BUF;
            ring[at..at + 8].copy_from_slice(&buf.to_le_bytes());
        }
        self.mem
            .write_slice(&ring, GuestAddress(base + RX_RING))
            .unwrap();
        self.wr(b + 0x18, RING - 1);
    }

    /// RSS over IPv4 addresses with `key`, redirection table `reta` (one
    /// queue per entry).
    pub fn enable_rss(&self, key: &[u8; 40], reta: &[u8; 128]) {
        for i in 0..10u32 {
            let at = 4 * i as usize;
            let w = u32::from_le_bytes(key[at..at + 4].try_into().unwrap());
            self.wr(0x5c80 + 4 * i, w);
        }
        for i in 0..32u32 {
            let at = 4 * i as usize;
            self.wr(
                0x5c00 + 4 * i,
                u32::from_le_bytes(reta[at..at + 4].try_into().unwrap()),
            );
        }
        // MRQC: RSS (igb 001b, ixgbe 0001b) with the IPv4 hash (bit 17).
        self.wr(0x5818, 1 | (1 << 17));
    }

    /// Receive checksum offload on (igb: RXCSUM.IPOFL | TUOFL, §7.1.6, as
    /// `igb_setup_rctl`'s RXCSUM set-up does; the 82599 always checks).
    pub fn enable_rx_checksums(&self) {
        if self.kind == Kind::Igb {
            self.wr(0x5000, (1 << 8) | (1 << 9));
        }
    }

    /// Good packets received (GPRC), read and cleared.
    pub fn gprc(&self) -> u32 {
        self.rd(0x4074)
    }
}

/// The driver of one queue pair: transmits on `tx`'s queue `q`, refills
/// `rx`'s queue `q` (which the frames reach).
pub struct QueueDriver<'a> {
    tx: &'a Nic,
    rx: &'a Nic,
    q: u32,
    tail: u32,
    rx_tail: u32,
    desc: Vec<u8>,
    refill: Vec<u8>,
}

impl<'a> QueueDriver<'a> {
    /// Fills `tx`'s queue `q` buffers with `frame` and prepares its batches.
    pub fn new(tx: &'a Nic, rx: &'a Nic, q: u32, frame: &[u8]) -> Self {
        let base = QUEUE_SPAN * u64::from(q);
        for i in 0..u64::from(RING) {
            tx.mem
                .write_slice(frame, GuestAddress(base + TX_BUF + i * BUF))
                .unwrap();
        }
        QueueDriver {
            tx,
            rx,
            q,
            tail: 0,
            rx_tail: RING - 1,
            desc: vec![0u8; (BATCH * 16) as usize],
            refill: vec![0u8; (BATCH * 16) as usize],
        }
        .with_len(frame.len())
    }

    fn with_len(mut self, len: usize) -> Self {
        let w2 = (TX_CMD | len as u32).to_le_bytes();
        let w3 = ((len as u32) << 14).to_le_bytes();
        for d in self.desc.chunks_mut(16) {
            d[8..12].copy_from_slice(&w2);
            d[12..16].copy_from_slice(&w3);
        }
        self
    }

    /// One batch: post [`BATCH`] frames and ring the doorbell, refill as
    /// many receive buffers, re-enable the queue pair's vector.
    #[inline(never)]
    pub fn batch(&mut self) {
        self.batch_via(Nic::wr);
    }

    /// [`Self::batch`] with the register writes (the doorbells that start
    /// the model's work) made through `wr`.
    #[inline]
    pub fn batch_via(&mut self, wr: impl Fn(&Nic, u32, u32)) {
        let base = QUEUE_SPAN * u64::from(self.q);
        let tail = u64::from(self.tail);
        for (i, d) in self.desc.chunks_mut(16).enumerate() {
            let buf = base + TX_BUF + (tail + i as u64) * BUF;
            d[0..8].copy_from_slice(&buf.to_le_bytes());
        }
        self.tx
            .mem
            .write_slice(&self.desc, GuestAddress(base + TX_RING + tail * 16))
            .unwrap();
        self.tail = (self.tail + BATCH) % RING;
        wr(self.tx, self.tx.kind.txq(self.q) + 0x18, self.tail);
        // Refill the buffers the batch used: descriptors rx_tail+1.. (the
        // ring keeps one slot empty; batches never wrap, RING % BATCH == 0).
        let first = (self.rx_tail + 1) % RING;
        for (i, d) in self.refill.chunks_mut(16).enumerate() {
            let buf = base + RX_BUF + (u64::from(first) + i as u64) * BUF;
            d[0..8].copy_from_slice(&buf.to_le_bytes());
        }
        self.rx
            .mem
            .write_slice(
                &self.refill,
                GuestAddress(base + RX_RING + u64::from(first) * 16),
            )
            .unwrap();
        self.rx_tail = (self.rx_tail + BATCH) % RING;
        wr(self.rx, self.rx.kind.rxq(self.q) + 0x18, self.rx_tail);
        let v = 1 << self.q;
        wr(self.tx, self.tx.kind.eims(), v);
        if !std::ptr::eq(self.tx, self.rx) {
            wr(self.rx, self.rx.kind.eims(), v);
        }
    }
}

/// A frame from `src` to `dst` of `size` bytes; with `ip`, an IPv4/UDP
/// datagram from 10.0.0.`ip` (checksum fields zero: see [`with_checksums`]).
pub fn frame(dst: [u8; 6], src: [u8; 6], size: usize, ip: Option<u8>) -> Vec<u8> {
    let mut f = vec![0u8; size];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    if let Some(host) = ip {
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((size - 14) as u16).to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, host]);
        f[30..34].copy_from_slice(&[10, 0, 1, 1]);
        f[34..36].copy_from_slice(&5000u16.to_be_bytes());
        f[36..38].copy_from_slice(&5001u16.to_be_bytes());
        f[38..40].copy_from_slice(&((size - 34) as u16).to_be_bytes());
    }
    f
}

/// Waits until `nic` has counted `want` good received frames in all (its
/// receive thread may still hold some); returns the count.
pub fn wait_received(nic: &Nic, want: u64) -> u64 {
    let mut got = 0u64;
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        got += u64::from(nic.gprc());
        if got >= want || Instant::now() > until {
            return got;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// CPU time of `clock` (`libc::CLOCK_THREAD_CPUTIME_ID`,
/// `libc::CLOCK_PROCESS_CPUTIME_ID`) in seconds.
pub fn cpu_secs(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(clock, &raw mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// `f` (an IPv4/UDP datagram of [`frame`]) with its IPv4 header and UDP
/// checksums filled in.
pub fn with_checksums(mut f: Vec<u8>) -> Vec<u8> {
    nicemu_net_util::csum::ipv4_header_csum(&mut f, 14).unwrap();
    nicemu_net_util::csum::l4_csum(&mut f, 14, 34, true, nicemu_net_util::IPPROTO_UDP).unwrap();
    f
}
