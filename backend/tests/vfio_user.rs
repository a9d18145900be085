//! Integration tests: start the `nicemu` binary and drive an igb function over
//! a real vfio-user socket with the `vfio_user` crate's client, as QEMU would.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_BAR2_REGION_INDEX, VFIO_PCI_BAR3_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX,
};
use vfio_user::Client;
use vmm_sys_util::eventfd::EventFd;

const MAC: &str = "52:54:00:ab:cd:01";

struct Nicemu {
    child: Child,
    dir: PathBuf,
    sock: PathBuf,
}

impl Nicemu {
    fn start(name: &str) -> Nicemu {
        let dir = std::env::temp_dir().join(format!("nicemu-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("igb0.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_nicemu"))
            .arg("--device")
            .arg(format!("igb,id=igb0,socket={},mac={MAC}", sock.display()))
            .arg(format!("--trace-regs={}", dir.join("trace.log").display()))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while !sock.exists() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "socket never appeared"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nicemu { child, dir, sock }
    }

    fn client(&self) -> Client {
        Client::new(&self.sock).expect("vfio-user client connects")
    }

    fn stop(mut self) -> (std::process::ExitStatus, PathBuf) {
        // SAFETY: sending SIGTERM to our own child process by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
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

fn cfg16(c: &mut Client, off: u64) -> u16 {
    let mut b = [0u8; 2];
    c.region_read(VFIO_PCI_CONFIG_REGION_INDEX, off, &mut b)
        .unwrap();
    u16::from_le_bytes(b)
}

fn cfg8(c: &mut Client, off: u64) -> u8 {
    let mut b = [0u8; 1];
    c.region_read(VFIO_PCI_CONFIG_REGION_INDEX, off, &mut b)
        .unwrap();
    b[0]
}

fn rd(c: &mut Client, off: u64) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(VFIO_PCI_BAR0_REGION_INDEX, off, &mut b)
        .unwrap();
    u32::from_le_bytes(b)
}

fn wr(c: &mut Client, off: u64, v: u32) {
    c.region_write(VFIO_PCI_BAR0_REGION_INDEX, off, &v.to_le_bytes())
        .unwrap();
}

#[test]
fn config_space_ids_and_capabilities() {
    let n = Nicemu::start("cfg");
    let mut c = n.client();
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
    let n = Nicemu::start("bar0");
    {
        let mut c = n.client();
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
    let mut c = n.client();
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

fn ram_file(dir: &Path, size: u64) -> File {
    let p = dir.join("ram");
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    f.set_len(size).unwrap();
    f
}

fn put(f: &mut File, off: u64, data: &[u8]) {
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(off)).unwrap();
    f.write_all(data).unwrap();
}

fn get(f: &mut File, off: u64, len: usize) -> Vec<u8> {
    use std::io::{Seek, SeekFrom};
    let mut v = vec![0u8; len];
    f.seek(SeekFrom::Start(off)).unwrap();
    f.read_exact(&mut v).unwrap();
    v
}

#[test]
fn dma_loopback_and_msix_over_the_socket() {
    let n = Nicemu::start("dma");
    let mut c = n.client();
    let mut ram = ram_file(&n.dir, 1 << 20);
    c.dma_map(0, 0, 1 << 20, ram.as_raw_fd()).unwrap();
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
        put(
            &mut ram,
            0x20000 + i * 16,
            &(0x40000 + i * 2048).to_le_bytes(),
        );
    }
    wr(&mut c, 0x2818, 7);
    // PHY loopback through MDIC (PHY 1, register 0 = 0x4140).
    wr(&mut c, 0x20, (1 << 21) | (1 << 26) | 0x4140);
    assert_ne!(rd(&mut c, 0x20) & (1 << 28), 0);
    let mut frame = vec![0xffu8; 128];
    frame[64..].fill(0x5a);
    put(&mut ram, 0x80000, &frame);
    put(&mut ram, 0x10000, &0x80000u64.to_le_bytes());
    put(&mut ram, 0x10008, &(0x2b30_0000u32 | 128).to_le_bytes());
    put(&mut ram, 0x1000c, &(128u32 << 14).to_le_bytes());
    wr(&mut c, 0x3818, 1);
    // The write was posted; a read orders after it.
    assert_eq!(rd(&mut c, 0x3810), 1, "TDH advanced");
    assert_eq!(get(&mut ram, 0x1000c, 1)[0] & 1, 1, "TX DD written back");
    let wb = get(&mut ram, 0x20000, 16);
    assert_eq!(u16::from_le_bytes([wb[12], wb[13]]), 128, "RX length");
    assert_eq!(wb[8] & 3, 3, "DD|EOP");
    assert_eq!(get(&mut ram, 0x40000, 128), frame);
    assert_eq!(ev.read().unwrap(), 1, "RX vector fired once");
    assert_eq!(rd(&mut c, 0x4074), 1, "GPRC");
    // DMA outside the mapping: the device survives and keeps answering.
    put(&mut ram, 0x10010, &(0xdead_0000_0000u64).to_le_bytes());
    put(&mut ram, 0x10018, &(0x2b30_0000u32 | 64).to_le_bytes());
    wr(&mut c, 0x3818, 2);
    assert_eq!(rd(&mut c, 0x3810), 2);
    assert_ne!(rd(&mut c, 0x8) & 2, 0);
}

#[test]
fn malformed_client_does_not_kill_the_server() {
    let n = Nicemu::start("bad");
    {
        let mut s = UnixStream::connect(&n.sock).unwrap();
        // A VERSION header claiming a large payload, then garbage.
        let mut msg = vec![0u8; 16];
        msg[2..4].copy_from_slice(&1u16.to_le_bytes());
        msg[4..8].copy_from_slice(&64u32.to_le_bytes());
        s.write_all(&msg).unwrap();
        s.write_all(&[0xff; 48]).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    {
        let mut s = UnixStream::connect(&n.sock).unwrap();
        s.write_all(&[1, 2, 3]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut c = n.client();
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
