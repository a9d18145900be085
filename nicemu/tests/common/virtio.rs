// SPDX-License-Identifier: Apache-2.0
//! A virtio-net driver for tests: the `vhost` crate's vhost-user frontend
//! (an implementation independent of nicemu's) and split virtqueues in a
//! shared memfd, laid out and driven as a guest's virtio_net driver does
//! (virtio 1.x §2.7: descriptor table, available ring, used ring). Queue 0
//! receives, queue 1 transmits; VIRTIO_F_VERSION_1 only, so every buffer
//! starts with a 12-byte virtio-net header.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use vhost::vhost_user::Frontend;
use vhost::{VhostBackend, VhostUserMemoryRegionInfo, VringConfigData};
use vm_memory::{Address, Bytes, FileOffset, GuestAddress, GuestMemoryMmap};
use vmm_sys_util::eventfd::EventFd;

use super::memfd;

/// Descriptors per queue.
pub const QSIZE: u16 = 64;
/// virtio-net header with VIRTIO_F_VERSION_1 (`num_buffers` included).
pub const HDR: usize = 12;
/// Receive buffer size.
pub const RX_BUF_LEN: u32 = 2048;

const MEM: u64 = 1 << 20;
/// Where the "guest RAM" sits in the frontend's address space, as QEMU
/// reports it in the memory table (vring addresses are given in it).
const USER_BASE: u64 = 0x7f00_0000_0000;
const VRING_F_WRITE: u16 = 2;
const VERSION_1: u64 = 1 << 32;

/// One split virtqueue: where its parts are and the driver's indices.
struct Queue {
    desc: u64,
    avail: u64,
    used: u64,
    bufs: u64,
    avail_idx: u16,
    used_seen: u16,
}

impl Queue {
    fn new(base: u64, bufs: u64) -> Queue {
        Queue {
            desc: base,
            avail: base + 0x1000,
            used: base + 0x2000,
            bufs,
            avail_idx: 0,
            used_seen: 0,
        }
    }

    fn config(&self) -> VringConfigData {
        VringConfigData {
            queue_max_size: QSIZE,
            queue_size: QSIZE,
            flags: 0,
            desc_table_addr: USER_BASE + self.desc,
            used_ring_addr: USER_BASE + self.used,
            avail_ring_addr: USER_BASE + self.avail,
            log_addr: None,
        }
    }
}

/// A connected virtio-net "guest" driver.
pub struct VirtioNet {
    fe: Frontend,
    mem: GuestMemoryMmap<()>,
    _ram: File,
    kick: [EventFd; 2],
    call: [EventFd; 2],
    rx: Queue,
    tx: Queue,
}

impl VirtioNet {
    /// Connects to the port's socket and sets both queues up; every
    /// receive buffer is posted. Errors when the port does not listen (its
    /// link is down) or the handshake fails.
    pub fn connect(sock: &Path) -> Result<VirtioNet, String> {
        fn e(what: &'static str) -> impl Fn(vhost::Error) -> String {
            move |err| format!("{what}: {err}")
        }
        // A stream of our own, so a frontend nicemu does not serve (it
        // serves one at a time) gets an error instead of waiting forever.
        let stream = UnixStream::connect(sock).map_err(|err| format!("connect: {err}"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|err| err.to_string())?;
        let fe = Frontend::from_stream(stream, 4);
        fe.set_owner().map_err(e("SET_OWNER"))?;
        let offered = fe.get_features().map_err(e("GET_FEATURES"))?;
        if offered & VERSION_1 == 0 {
            return Err(format!("features {offered:#x} without VERSION_1"));
        }
        fe.set_features(VERSION_1).map_err(e("SET_FEATURES"))?;
        let ram = memfd("virtio-ram", MEM, true);
        let mem = GuestMemoryMmap::<()>::from_ranges_with_files([(
            GuestAddress(0),
            MEM as usize,
            Some(FileOffset::new(ram.try_clone().unwrap(), 0)),
        )])
        .map_err(|err| format!("mmap: {err}"))?;
        let region = VhostUserMemoryRegionInfo {
            guest_phys_addr: 0,
            memory_size: MEM,
            userspace_addr: USER_BASE,
            mmap_offset: 0,
            mmap_handle: ram.as_raw_fd(),
        };
        fe.set_mem_table(&[region]).map_err(e("SET_MEM_TABLE"))?;
        let new_efd = || EventFd::new(libc::EFD_NONBLOCK).unwrap();
        let mut v = VirtioNet {
            fe,
            mem,
            _ram: ram,
            kick: [new_efd(), new_efd()],
            call: [new_efd(), new_efd()],
            rx: Queue::new(0x1000, 0x10000),
            tx: Queue::new(0x8000, 0x40000),
        };
        for q in 0..2 {
            v.set_up_queue(q).map_err(e("vring set-up"))?;
        }
        // A request with a reply: the handler has taken everything before it.
        v.fe.get_features().map_err(e("GET_FEATURES"))?;
        for i in 0..QSIZE {
            v.post_rx(i);
        }
        v.publish_rx();
        Ok(v)
    }

    /// Connects, retrying for up to `limit` (the port listens again a
    /// moment after its link comes up or its last frontend left; drop the
    /// previous driver first).
    pub fn connect_within(sock: &Path, limit: Duration) -> VirtioNet {
        let t = Instant::now();
        loop {
            match VirtioNet::connect(sock) {
                Ok(v) => return v,
                Err(e) if t.elapsed() > limit => panic!("virtio-net frontend: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn set_up_queue(&mut self, q: usize) -> vhost::Result<()> {
        let cfg = if q == 0 {
            self.rx.config()
        } else {
            self.tx.config()
        };
        self.fe.set_vring_num(q, QSIZE)?;
        self.fe.set_vring_addr(q, &cfg)?;
        self.fe.set_vring_base(q, 0)?;
        self.fe.set_vring_call(q, &self.call[q])?;
        self.fe.set_vring_kick(q, &self.kick[q])
    }

    fn desc(&self, queue: &Queue, i: u16, addr: u64, len: u32, flags: u16) {
        let d = GuestAddress(queue.desc + u64::from(i) * 16);
        let m = &self.mem;
        m.write_obj(addr, d).unwrap();
        m.write_obj(len, d.unchecked_add(8)).unwrap();
        m.write_obj(flags, d.unchecked_add(12)).unwrap();
        m.write_obj(0u16, d.unchecked_add(14)).unwrap();
    }

    /// Puts receive buffer `i` into the available ring (published by
    /// [`Self::publish_rx`]).
    fn post_rx(&mut self, i: u16) {
        let buf = self.rx.bufs + u64::from(i) * u64::from(RX_BUF_LEN);
        self.desc(&self.rx, i, buf, RX_BUF_LEN, VRING_F_WRITE);
        let slot = GuestAddress(self.rx.avail + 4 + u64::from(self.rx.avail_idx % QSIZE) * 2);
        self.mem.write_obj(i, slot).unwrap();
        self.rx.avail_idx = self.rx.avail_idx.wrapping_add(1);
    }

    fn publish_rx(&mut self) {
        let idx = GuestAddress(self.rx.avail + 2);
        self.mem
            .store(self.rx.avail_idx, idx, Ordering::Release)
            .unwrap();
        self.kick[0].write(1).unwrap();
    }

    /// Used-ring entries the device added since the last call, as
    /// (descriptor id, length).
    fn take_used(mem: &GuestMemoryMmap<()>, q: &mut Queue) -> Vec<(u16, u32)> {
        let idx: u16 = mem
            .load(GuestAddress(q.used + 2), Ordering::Acquire)
            .unwrap();
        let mut out = Vec::new();
        while q.used_seen != idx {
            let e = GuestAddress(q.used + 4 + u64::from(q.used_seen % QSIZE) * 8);
            let id: u32 = mem.read_obj(e).unwrap();
            let len: u32 = mem.read_obj(e.unchecked_add(4)).unwrap();
            out.push((id as u16, len));
            q.used_seen = q.used_seen.wrapping_add(1);
        }
        out
    }

    /// Takes every received frame (their lengths without the header; 0 for
    /// a buffer given back empty) and gives the buffers back.
    pub fn harvest_rx(&mut self) -> Vec<usize> {
        let used = Self::take_used(&self.mem, &mut self.rx);
        for &(id, _) in &used {
            self.post_rx(id % QSIZE);
        }
        if !used.is_empty() {
            self.publish_rx();
        }
        used.iter()
            .map(|&(_, len)| (len as usize).saturating_sub(HDR))
            .collect()
    }

    /// The call eventfd of queue `q` (0 receive, 1 transmit): the driver's
    /// side of the description nicemu writes its used-ring signals to.
    pub fn call(&self, q: usize) -> &EventFd {
        &self.call[q]
    }

    /// Transmit chains the device has taken but the driver not yet seen.
    pub fn harvest_tx(&mut self) -> u64 {
        Self::take_used(&self.mem, &mut self.tx).len() as u64
    }

    /// Transmit chains posted and not yet returned used.
    pub fn tx_in_flight(&self) -> u16 {
        self.tx.avail_idx.wrapping_sub(self.tx.used_seen)
    }

    /// Posts `frame` (after a zero header: no offloads) on the transmit
    /// queue and kicks; false when every descriptor is in flight.
    pub fn send(&mut self, frame: &[u8]) -> bool {
        self.post(frame, true)
    }

    /// Posts `frame` like [`Self::send`], kicking only if `kick`.
    pub fn post(&mut self, frame: &[u8], kick: bool) -> bool {
        if self.tx_in_flight() >= QSIZE {
            return false;
        }
        let i = self.tx.avail_idx % QSIZE;
        let buf = self.tx.bufs + u64::from(i) * 0x1000;
        self.mem
            .write_slice(&[0u8; HDR], GuestAddress(buf))
            .unwrap();
        self.mem
            .write_slice(frame, GuestAddress(buf + HDR as u64))
            .unwrap();
        self.desc(&self.tx, i, buf, (HDR + frame.len()) as u32, 0);
        let slot = GuestAddress(self.tx.avail + 4 + u64::from(i) * 2);
        self.mem.write_obj(i, slot).unwrap();
        self.tx.avail_idx = self.tx.avail_idx.wrapping_add(1);
        self.mem
            .store(
                self.tx.avail_idx,
                GuestAddress(self.tx.avail + 2),
                Ordering::Release,
            )
            .unwrap();
        if kick {
            self.kick[1].write(1).unwrap();
        }
        true
    }

    /// Waits until the device took every posted transmit chain, at most
    /// `limit`; returns the chains taken meanwhile.
    pub fn drain_tx(&mut self, limit: Duration) -> u64 {
        let t = Instant::now();
        let mut taken = 0;
        while self.tx_in_flight() > 0 && t.elapsed() < limit {
            taken += self.harvest_tx();
            std::thread::sleep(Duration::from_millis(1));
        }
        taken + self.harvest_tx()
    }
}
