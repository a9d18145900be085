// SPDX-License-Identifier: Apache-2.0
//! The stream wire: a unix socket speaking QEMU's `-netdev stream` framing
//! (each frame preceded by its length as a 32-bit big-endian integer). nicemu
//! listens; a QEMU peer connects with
//! `-netdev stream,id=n0,server=off,addr.type=unix,addr.path=PATH`.
//! One peer at a time; when it goes away the next may connect.

use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use nicemu_device_models::FrameSink;

use crate::error::Error;
use crate::switch::{PortCounters, Switch};

/// Largest frame accepted from a peer (jumbo 9 KiB plus headroom).
pub const MAX_FRAME: usize = 16 * 1024;

/// Reads one length-prefixed frame into `buf`; `Ok(false)` at end of stream.
/// A length of 0 or above [`MAX_FRAME`] is a protocol error.
pub fn read_frame(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let n = u32::from_be_bytes(len) as usize;
    if n == 0 || n > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame length {n} out of range"),
        ));
    }
    buf.resize(n, 0);
    r.read_exact(buf)?;
    Ok(true)
}

/// Writes one length-prefixed frame.
pub fn write_frame(w: &mut impl Write, frame: &[u8]) -> std::io::Result<()> {
    w.write_all(&(frame.len() as u32).to_be_bytes())?;
    w.write_all(frame)
}

/// Binds the socket and starts the accept/forward threads; returns the
/// wire's switch port counters (frames with no peer to take them, or whose
/// write failed, in `egress_drops`).
pub fn start(path: &Path, switch: &Arc<Switch>) -> Result<Arc<PortCounters>, Error> {
    let listener = crate::socket::listen(path)?;
    let (port, rx) = switch.attach();
    let counters = port.counters.clone();
    let drops = port.counters.clone();
    let port = Arc::new(port);
    let peer: Arc<Mutex<Option<BufWriter<UnixStream>>>> = Arc::default();
    let name = path.display().to_string();
    // Switch → peer.
    let out = peer.clone();
    std::thread::Builder::new()
        .name("wire-stream-tx".into())
        .spawn(move || {
            crate::sched::enter_data_path();
            while let Some(frame) = rx.recv() {
                let mut p = out.lock().unwrap_or_else(|e| e.into_inner());
                let sent = match p.as_mut() {
                    Some(w) => {
                        let ok = write_frame(w, &frame).and_then(|()| w.flush()).is_ok();
                        if !ok {
                            *p = None;
                        }
                        ok
                    }
                    None => false,
                };
                drop(p);
                if !sent {
                    drops.egress_drops.fetch_add(1, Ordering::Relaxed);
                }
                rx.recycle(frame);
            }
        })
        .map_err(|source| Error::Wire {
            what: name.clone(),
            source,
        })?;
    // Peer → switch, one peer at a time.
    std::thread::Builder::new()
        .name("wire-stream-rx".into())
        .spawn(move || {
            crate::sched::enter_data_path();
            for conn in listener.incoming() {
                let Ok(s) = conn else { continue };
                log::info!("stream wire {name}: peer connected");
                let Ok(w) = s.try_clone() else { continue };
                *peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(BufWriter::new(w));
                let mut r = BufReader::new(s);
                let mut buf = Vec::with_capacity(MAX_FRAME);
                loop {
                    match read_frame(&mut r, &mut buf) {
                        Ok(true) => port.transmit(&buf),
                        Ok(false) => break,
                        Err(e) => {
                            log::warn!("stream wire {name}: {e}; dropping the peer");
                            break;
                        }
                    }
                }
                *peer.lock().unwrap_or_else(|e| e.into_inner()) = None;
                log::info!("stream wire {name}: peer disconnected");
            }
        })
        .map_err(|source| Error::Wire {
            what: path.display().to_string(),
            source,
        })?;
    Ok(counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trip_and_bad_lengths() {
        let mut b = Vec::new();
        write_frame(&mut b, &[1, 2, 3]).unwrap();
        assert_eq!(b, [0, 0, 0, 3, 1, 2, 3]);
        let mut buf = Vec::new();
        assert!(read_frame(&mut &b[..], &mut buf).unwrap());
        assert_eq!(buf, [1, 2, 3]);
        assert!(!read_frame(&mut &[][..], &mut buf).unwrap());
        read_frame(&mut &[0, 0, 0, 0][..], &mut buf).unwrap_err();
        read_frame(&mut &[0xff, 0, 0, 1][..], &mut buf).unwrap_err();
        assert!(
            read_frame(&mut &[0, 0, 0, 9, 1][..], &mut buf).is_err(),
            "truncated"
        );
    }

    #[test]
    fn peers_exchange_frames_through_the_switch() {
        let dir = std::env::temp_dir().join(format!("nicemu-wire-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sw = Arc::new(Switch::default());
        let (a, b) = (dir.join("a.sock"), dir.join("b.sock"));
        start(&a, &sw).unwrap();
        start(&b, &sw).unwrap();
        assert!(matches!(start(&a, &sw), Err(Error::SocketExists(_))));
        let mut pa = UnixStream::connect(&a).unwrap();
        let mut pb = UnixStream::connect(&b).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut f = vec![0xffu8; 60];
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        write_frame(&mut pa, &f).unwrap();
        let mut got = Vec::new();
        assert!(read_frame(&mut pb, &mut got).unwrap());
        assert_eq!(got, f);
        // A peer sending garbage is dropped; the wire accepts a new one.
        pa.write_all(&[0, 0, 0, 0]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut pa2 = UnixStream::connect(&a).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        write_frame(&mut pa2, &f).unwrap();
        assert!(read_frame(&mut pb, &mut got).unwrap());
        assert_eq!(got, f);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn frames_for_a_wire_without_a_peer_are_counted() {
        let dir = std::env::temp_dir().join(format!("nicemu-wire-np-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sw = Arc::new(Switch::default());
        let c = start(&dir.join("w.sock"), &sw).unwrap();
        let (a, _ra) = sw.attach();
        let mut f = vec![0xffu8; 60];
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        a.transmit(&f);
        a.transmit(&f);
        for _ in 0..100 {
            if c.egress_drops.load(std::sync::atomic::Ordering::Relaxed) == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(c.egress_drops.load(std::sync::atomic::Ordering::Relaxed), 2);
        let _ = std::fs::remove_dir_all(dir);
    }
}
