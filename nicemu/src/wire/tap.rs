// SPDX-License-Identifier: Apache-2.0
//! The tap wire: a Linux tap interface (`/dev/net/tun`, IFF_TAP | IFF_NO_PI)
//! joined to a switch, so the host or other programs see the emulated network.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use nicemu_device_models::FrameSink;

use crate::error::Error;
use crate::switch::{PortCounters, Switch};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens (or creates) tap interface `ifname`.
pub fn open(ifname: &str) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TAP | IFF_NO_PI,
        _pad: [0; 22],
    };
    for (d, s) in req
        .name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = libc::c_char::from_ne_bytes([s]);
    }
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`; `IfReq` has its
    // layout (16-byte name, flags, padding to 40 bytes) and lives across the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), TUNSETIFF, &raw mut req) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}

/// Opens the tap and starts its forwarding threads; returns the wire's
/// switch port counters (failed writes to the tap in `egress_drops`).
pub fn start(ifname: &str, switch: &Arc<Switch>) -> Result<Arc<PortCounters>, Error> {
    let err = |source| Error::Wire {
        what: format!("tap {ifname}"),
        source,
    };
    let tap = open(ifname).map_err(err)?;
    let mut tap_w = tap.try_clone().map_err(err)?;
    let (port, rx) = switch.attach();
    let counters = port.counters.clone();
    let drops = port.counters.clone();
    std::thread::Builder::new()
        .name(format!("tap-tx-{ifname}"))
        .spawn(move || {
            crate::sched::enter_data_path();
            while let Some(frame) = rx.recv() {
                if let Err(e) = tap_w.write_all(&frame) {
                    drops
                        .egress_drops
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    log::debug!("tap write: {e}");
                }
                rx.recycle(frame);
            }
        })
        .map_err(err)?;
    let name = ifname.to_string();
    let mut tap_r = tap;
    std::thread::Builder::new()
        .name(format!("tap-rx-{ifname}"))
        .spawn(move || {
            crate::sched::enter_data_path();
            let mut buf = vec![0u8; 65536];
            loop {
                match tap_r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => port.transmit(&buf[..n]),
                    Err(e) => {
                        log::warn!("tap {name}: {e}; wire stopped");
                        break;
                    }
                }
            }
        })
        .map_err(err)?;
    Ok(counters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// A tap whose interface is down refuses writes (EIO): frames the
    /// switch hands the wire are counted as `egress_drops`, not lost
    /// silently. Needs CAP_NET_ADMIN (as nicemu's tap wire does); without
    /// /dev/net/tun or the capability it says so and checks nothing.
    #[test]
    fn frames_a_down_tap_refuses_are_counted() {
        let name = format!("nmt{}", std::process::id() % 100_000);
        if let Err(e) = open(&name) {
            eprintln!("tap test skipped: cannot create tap {name}: {e}");
            return;
        }
        let sw = Arc::new(Switch::default());
        let c = start(&name, &sw).unwrap();
        let (a, _ra) = sw.attach();
        let mut f = vec![0xffu8; 60];
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        a.transmit(&f);
        a.transmit(&f);
        for _ in 0..200 {
            if c.egress_drops.load(Ordering::Relaxed) == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(c.egress_drops.load(Ordering::Relaxed), 2);
    }
}
