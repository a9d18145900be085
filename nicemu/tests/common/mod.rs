// SPDX-License-Identifier: Apache-2.0
//! Helpers shared by the integration tests: start nicemu, talk vfio-user,
//! shared "guest RAM" files, ring set-up the way the igb driver does it.
#![allow(dead_code)]

pub mod account;
pub mod nic;
pub mod raw;
pub mod virtio;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use vfio_bindings::bindings::vfio::{VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX};
use vfio_user::Client;

/// A running nicemu.
pub struct Nicemu {
    pub child: Child,
    pub dir: PathBuf,
}

impl Nicemu {
    /// Starts nicemu with `args`; `{dir}` in an argument is replaced by a
    /// fresh temporary directory. Waits for `wait_for` (relative to dir).
    pub fn start(name: &str, args: &[&str], wait_for: &[&str]) -> Nicemu {
        let dir = std::env::temp_dir().join(format!("nicemu-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display().to_string();
        let child = Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .args(args.iter().map(|a| a.replace("{dir}", &d)))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        for w in wait_for {
            while !dir.join(w).exists() {
                assert!(t.elapsed() < Duration::from_secs(10), "{w} never appeared");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Nicemu { child, dir }
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }

    pub fn client(&self, sock: &str) -> Client {
        Client::new(&self.dir.join(sock)).expect("vfio-user client connects")
    }

    /// Runs `nicemu ctl --control DIR/ctl.sock ARGS…`.
    pub fn ctl(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .arg("ctl")
            .arg("--control")
            .arg(self.dir.join("ctl.sock"))
            .args(args)
            .output()
            .unwrap()
    }

    pub fn stop(mut self) -> (std::process::ExitStatus, PathBuf) {
        // SAFETY: sending SIGTERM to our own child process by its pid.
        unsafe {
            libc::kill(
                libc::pid_t::try_from(self.child.id()).unwrap(),
                libc::SIGTERM,
            )
        };
        let st = self.child.wait().unwrap();
        (st, self.dir.clone())
    }
}

impl Drop for Nicemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn cfg16(c: &mut Client, off: u64) -> u16 {
    let mut b = [0u8; 2];
    c.region_read(VFIO_PCI_CONFIG_REGION_INDEX, off, &mut b)
        .unwrap();
    u16::from_le_bytes(b)
}

pub fn cfg8(c: &mut Client, off: u64) -> u8 {
    let mut b = [0u8; 1];
    c.region_read(VFIO_PCI_CONFIG_REGION_INDEX, off, &mut b)
        .unwrap();
    b[0]
}

pub fn rd(c: &mut Client, off: u64) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(VFIO_PCI_BAR0_REGION_INDEX, off, &mut b)
        .unwrap();
    u32::from_le_bytes(b)
}

pub fn wr(c: &mut Client, off: u64, v: u32) {
    c.region_write(VFIO_PCI_BAR0_REGION_INDEX, off, &v.to_le_bytes())
        .unwrap();
}

/// A memfd of `size` bytes, as QEMU's memory-backend-memfd makes guest RAM
/// (`sealable`: created with MFD_ALLOW_SEALING, as QEMU does by default).
pub fn memfd(name: &str, size: u64, sealable: bool) -> File {
    let name = std::ffi::CString::new(name).unwrap();
    let flags = libc::MFD_CLOEXEC | if sealable { libc::MFD_ALLOW_SEALING } else { 0 };
    // SAFETY: memfd_create with a NUL-terminated name; the new fd is ours.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` was just created and nothing else owns it.
    let f = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    f.set_len(size).unwrap();
    f
}

/// A memfd standing in for guest RAM, shared with nicemu through DMA_MAP.
pub struct Ram(pub File);

impl Ram {
    /// `size` bytes of sealable memfd (`name` labels it in /proc; `_dir` is
    /// kept for callers that place run files there).
    pub fn new(_dir: &Path, name: &str, size: u64) -> Ram {
        Ram(memfd(name, size, true))
    }

    pub fn map(&self, c: &mut Client) {
        let size = self.0.metadata().unwrap().len();
        c.dma_map(0, 0, size, self.0.as_raw_fd()).unwrap();
    }

    pub fn put(&mut self, off: u64, data: &[u8]) {
        self.0.seek(SeekFrom::Start(off)).unwrap();
        self.0.write_all(data).unwrap();
    }

    pub fn get(&mut self, off: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.0.seek(SeekFrom::Start(off)).unwrap();
        self.0.read_exact(&mut v).unwrap();
        v
    }
}

pub const TX_RING: u64 = 0x10000;
pub const RX_RING: u64 = 0x20000;
pub const RX_BUF: u64 = 0x40000;
pub const TX_BUF: u64 = 0x80000;

/// PCI COMMAND: memory space and bus mastering on, as `pci_enable_device_mem`
/// and `pci_set_master` in the igb/ixgbe probe leave it.
pub fn bus_master(c: &mut Client) {
    c.region_write(VFIO_PCI_CONFIG_REGION_INDEX, 4, &0x0006u16.to_le_bytes())
        .unwrap();
}

/// Queue 0 rings of 8 descriptors, receiver and transmitter on, as the igb
/// driver's open path leaves them; link up (CTRL.SLU).
pub fn setup_queue0(c: &mut Client, ram: &mut Ram) {
    bus_master(c);
    wr(c, 0x3800, TX_RING as u32);
    wr(c, 0x3808, 8 * 16);
    wr(c, 0x3828, 1 << 25);
    wr(c, 0x400, 0x2 | 0x8);
    wr(c, 0x2800, RX_RING as u32);
    wr(c, 0x2808, 8 * 16);
    wr(c, 0x280c, 0x0200_0402);
    wr(c, 0x2828, 1 << 25);
    wr(c, 0x100, 0x2 | (1 << 15) | (1 << 26));
    for i in 0..8u64 {
        ram.put(RX_RING + i * 16, &(RX_BUF + i * 2048).to_le_bytes());
    }
    wr(c, 0x2818, 7);
    let ctrl = rd(c, 0);
    wr(c, 0, ctrl | 0x40);
}

/// Transmits `frame` from descriptor `idx` of queue 0 and moves the tail.
pub fn send(c: &mut Client, ram: &mut Ram, idx: u32, frame: &[u8]) {
    let buf = TX_BUF + u64::from(idx) * 2048;
    ram.put(buf, frame);
    let d = TX_RING + u64::from(idx) * 16;
    ram.put(d, &buf.to_le_bytes());
    ram.put(d + 8, &(0x2b30_0000u32 | frame.len() as u32).to_le_bytes());
    ram.put(d + 12, &((frame.len() as u32) << 14).to_le_bytes());
    wr(c, 0x3818, (idx + 1) % 8);
}
