// SPDX-License-Identifier: Apache-2.0
//! A vfio-user client over a raw unix socket that sends whatever it is told
//! to (malformed messages, any descriptors), for the hostile-client tests.

use std::io::{Read, Write};
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use vfio_bindings::bindings::vfio::{VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX};
use vmm_sys_util::sock_ctrl_msg::ScmSocket;

use super::Nicemu;

pub const VERSION: u16 = 1;
pub const DMA_MAP: u16 = 2;
pub const DMA_UNMAP: u16 = 3;
pub const GET_INFO: u16 = 4;
pub const GET_REGION_IO_FDS: u16 = 6;
pub const SET_IRQS: u16 = 8;
pub const REGION_READ: u16 = 9;
pub const REGION_WRITE: u16 = 10;
pub const NO_REPLY: u32 = 1 << 4;
pub const ERROR: u32 = 1 << 5;

/// A reply: header fields and payload.
#[derive(Debug)]
pub struct Reply {
    pub id: u16,
    pub command: u16,
    pub flags: u32,
    pub error: u32,
    pub payload: Vec<u8>,
}

impl Reply {
    pub fn ok(&self) -> bool {
        self.flags & ERROR == 0
    }
}

/// A vfio-user client that sends whatever it is told to.
pub struct Raw {
    pub s: UnixStream,
    next_id: u16,
}

pub fn header(id: u16, command: u16, size: u32, flags: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(16);
    h.extend_from_slice(&id.to_le_bytes());
    h.extend_from_slice(&command.to_le_bytes());
    h.extend_from_slice(&size.to_le_bytes());
    h.extend_from_slice(&flags.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h
}

pub fn le32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn access(offset: u64, region: u32, count: u32) -> Vec<u8> {
    let mut p = offset.to_le_bytes().to_vec();
    p.extend_from_slice(&region.to_le_bytes());
    p.extend_from_slice(&count.to_le_bytes());
    p
}

impl Raw {
    pub fn connect(n: &Nicemu) -> Raw {
        Raw::connect_to(n, "igb0.sock")
    }

    /// Connects to socket `sock` of `n`.
    pub fn connect_to(n: &Nicemu, sock: &str) -> Raw {
        Raw::at(&n.path(sock))
    }

    /// Connects to the vfio-user socket at `path`.
    pub fn at(path: &std::path::Path) -> Raw {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Raw { s, next_id: 0x100 }
    }

    /// Sends a command with `payload` and `fds`; returns its message id.
    pub fn send_fds(&mut self, command: u16, flags: u32, payload: &[u8], fds: &[RawFd]) -> u16 {
        let id = self.next_id;
        self.next_id += 1;
        let mut m = header(id, command, 16 + payload.len() as u32, flags);
        m.extend_from_slice(payload);
        if fds.is_empty() {
            self.s.write_all(&m).unwrap();
        } else {
            let n = self.s.send_with_fds(&[&m[..]], fds).unwrap();
            assert_eq!(n, m.len());
        }
        id
    }

    pub fn send(&mut self, command: u16, flags: u32, payload: &[u8]) -> u16 {
        self.send_fds(command, flags, payload, &[])
    }

    pub fn recv(&mut self) -> Reply {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).expect("a reply header");
        let le32 = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let size = le32(4) as usize;
        assert!((16..=1 << 20).contains(&size), "reply size {size}");
        let mut payload = vec![0; size - 16];
        self.s.read_exact(&mut payload).expect("a reply payload");
        Reply {
            id: u16::from_le_bytes([h[0], h[1]]),
            command: u16::from_le_bytes([h[2], h[3]]),
            flags: le32(8),
            error: le32(12),
            payload,
        }
    }

    /// Sends a command and returns its reply (checked to match).
    pub fn call_fds(&mut self, command: u16, payload: &[u8], fds: &[RawFd]) -> Reply {
        let id = self.send_fds(command, 0, payload, fds);
        let r = self.recv();
        assert_eq!((r.id, r.command), (id, command), "reply matches: {r:?}");
        assert_eq!(r.flags & 0xf, 1, "reply type");
        r
    }

    pub fn call(&mut self, command: u16, payload: &[u8]) -> Reply {
        self.call_fds(command, payload, &[])
    }

    /// Expects an error reply with `errno` and no payload.
    pub fn expect_error(&mut self, command: u16, payload: &[u8], errno: i32) {
        let r = self.call(command, payload);
        assert!(!r.ok(), "command {command} should fail: {r:?}");
        assert_eq!(r.error, errno as u32, "errno of command {command}");
        assert!(r.payload.is_empty(), "error replies are the header alone");
    }

    pub fn version(&mut self) -> serde_json::Value {
        let mut p = vec![0, 0, 0, 0];
        p.extend_from_slice(br#"{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576}}"#);
        p.push(0);
        let r = self.call(VERSION, &p);
        assert!(r.ok(), "{r:?}");
        assert_eq!(&r.payload[..4], &[0, 0, 0, 0], "version 0.0");
        assert_eq!(r.payload.last(), Some(&0), "NUL-terminated");
        serde_json::from_slice(&r.payload[4..r.payload.len() - 1]).unwrap()
    }

    pub fn read32(&mut self, region: u32, offset: u64) -> u32 {
        let r = self.call(REGION_READ, &access(offset, region, 4));
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.payload.len(), 20);
        assert_eq!(&r.payload[..16], &access(offset, region, 4)[..]);
        u32::from_le_bytes(r.payload[16..20].try_into().unwrap())
    }

    /// Expects nicemu to close the connection.
    pub fn expect_closed(&mut self) {
        let mut b = [0u8; 64];
        match self.s.read(&mut b) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("connection should be closed, got {other:?}"),
        }
    }
}

/// DMA_MAP payload: `flags` (bit 0 read, bit 1 write), file offset, address, size.
pub fn dma_map(flags: u32, offset: u64, addr: u64, size: u64) -> Vec<u8> {
    [
        le32s(&[32, flags]),
        offset.to_le_bytes().to_vec(),
        addr.to_le_bytes().to_vec(),
        size.to_le_bytes().to_vec(),
    ]
    .concat()
}

pub fn dma_unmap(flags: u32, addr: u64, size: u64) -> Vec<u8> {
    [
        le32s(&[24, flags]),
        addr.to_le_bytes().to_vec(),
        size.to_le_bytes().to_vec(),
    ]
    .concat()
}

pub const RW: u32 = 3;

impl Raw {
    pub fn write(&mut self, region: u32, offset: u64, v: &[u8]) {
        let mut p = access(offset, region, v.len() as u32);
        p.extend_from_slice(v);
        let r = self.call(REGION_WRITE, &p);
        assert!(r.ok(), "{r:?}");
    }

    pub fn wr32(&mut self, offset: u64, v: u32) {
        self.write(VFIO_PCI_BAR0_REGION_INDEX, offset, &v.to_le_bytes());
    }

    /// PCI COMMAND with memory space and bus master enable (`bme`).
    pub fn bus_master(&mut self, bme: bool) {
        let cmd: u16 = if bme { 0x6 } else { 0x2 };
        self.write(VFIO_PCI_CONFIG_REGION_INDEX, 4, &cmd.to_le_bytes());
    }

    /// Transmit queue 0: a ring of 8 descriptors at `ring`, TCTL.EN.
    pub fn tx_ring(&mut self, ring: u64) {
        self.wr32(0x3800, ring as u32);
        self.wr32(0x3804, (ring >> 32) as u32);
        self.wr32(0x3808, 8 * 16);
        self.wr32(0x3828, 1 << 25);
        self.wr32(0x400, 0x2 | 0x8);
    }
}

/// One 60-byte broadcast frame in descriptor 0 of a ring at file offset
/// `ring` (buffer at file offset `buf`) of `mem`, which is mapped at guest
/// address 0; RS asks for DD.
pub fn put_tx_frame(mem: &std::fs::File, ring: u64, buf: u64) {
    put_tx_frame_at(mem, 0, ring, buf)
}

/// As [`put_tx_frame`] for `mem` mapped at guest address `base`.
pub fn put_tx_frame_at(mem: &std::fs::File, base: u64, ring: u64, buf: u64) {
    use std::os::unix::fs::FileExt;
    mem.write_all_at(&[0xff; 60], buf).unwrap();
    mem.write_all_at(&(base + buf).to_le_bytes(), ring).unwrap();
    mem.write_all_at(&(0x2b30_0000u32 | 60).to_le_bytes(), ring + 8)
        .unwrap();
    mem.write_all_at(&(60u32 << 14).to_le_bytes(), ring + 12)
        .unwrap();
}
