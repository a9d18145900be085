// SPDX-License-Identifier: Apache-2.0
//! A relay between the frontend's connection and the vhost-user request
//! handler, forwarding every message and its file descriptors unchanged
//! except one: QEMU's virtio-net sends `SET_VRING_ENABLE` when the guest
//! acknowledges its features, before `SET_FEATURES` reaches the backend
//! (it re-sends it after `SET_FEATURES` when the device starts). The
//! `vhost` crate answers such an early message with an error that ends the
//! connection; the relay acknowledges it, holds it back and delivers it right
//! after `SET_FEATURES`, in order.
//!
//! It also tells the backend when a `SET_VRING_CALL` passes, before the
//! handler sees it, so the backend's duplicates of call fds are not used
//! past a replacement (`super::calls`).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use vmm_sys_util::sock_ctrl_msg::ScmSocket;

/// Header of every vhost-user message: request, flags, payload size.
const HDR: usize = 12;
/// Largest payload relayed (the protocol's own limit is 4 KiB).
const MAX_PAYLOAD: usize = 64 * 1024;
/// Most file descriptors one message carries (SET_MEM_TABLE: 8).
const MAX_FDS: usize = 32;

const SET_FEATURES: u32 = 2;
const SET_VRING_CALL: u32 = 13;
const SET_VRING_ENABLE: u32 = 18;
const FLAG_VERSION: u32 = 0x1;
const FLAG_REPLY: u32 = 0x4;
const FLAG_NEED_REPLY: u32 = 0x8;

/// Receives one message; `None` at end of stream or on a malformed header.
fn recv_msg(s: &UnixStream, msg: &mut Vec<u8>, fds: &mut Vec<OwnedFd>) -> Option<()> {
    let mut hdr = [0u8; HDR];
    let mut raw: [RawFd; MAX_FDS] = [-1; MAX_FDS];
    let mut iov = [libc::iovec {
        iov_base: hdr.as_mut_ptr().cast(),
        iov_len: HDR,
    }];
    // SAFETY: the only iovec points at `hdr`, a local buffer of exactly
    // `iov_len` bytes that nothing else borrows during the call.
    let (n, nfds) = unsafe { s.recv_with_fds(&mut iov, &mut raw) }.ok()?;
    fds.clear();
    for &fd in raw.iter().take(nfds) {
        // SAFETY: the kernel installed these descriptors in this process for
        // this message; nothing else owns them.
        fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    if n == 0 {
        return None;
    }
    let mut r = s;
    if n < HDR {
        r.read_exact(&mut hdr[n..]).ok()?;
    }
    let size = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]) as usize;
    if size > MAX_PAYLOAD {
        return None;
    }
    msg.clear();
    msg.extend_from_slice(&hdr);
    msg.resize(HDR + size, 0);
    r.read_exact(&mut msg[HDR..]).ok()?;
    Some(())
}

fn field(msg: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([msg[at], msg[at + 1], msg[at + 2], msg[at + 3]])
}

/// Relays frontend → handler until either side closes; returns when done.
/// Calls `call_changed` before relaying each `SET_VRING_CALL`.
pub fn frontend_to_handler(
    frontend: &UnixStream,
    handler: &UnixStream,
    reply: &Arc<Mutex<UnixStream>>,
    id: &str,
    call_changed: &dyn Fn(),
) {
    let mut msg = Vec::with_capacity(4096);
    let mut fds = Vec::new();
    let mut features_set = false;
    // Early SET_VRING_ENABLE messages (bounded: one per queue and state).
    let mut held: Vec<Vec<u8>> = Vec::new();
    while recv_msg(frontend, &mut msg, &mut fds).is_some() {
        let req = field(&msg, 0);
        let flags = field(&msg, 4);
        if req == SET_VRING_ENABLE && !features_set {
            log::debug!("{id}: SET_VRING_ENABLE before SET_FEATURES held back");
            if held.len() < 1024 {
                let mut m = msg.clone();
                m[4..8].copy_from_slice(&(flags & !FLAG_NEED_REPLY).to_le_bytes());
                held.push(m);
            }
            if flags & FLAG_NEED_REPLY != 0 {
                let mut ack = [0u8; HDR + 8];
                ack[0..4].copy_from_slice(&req.to_le_bytes());
                ack[4..8].copy_from_slice(&(FLAG_VERSION | FLAG_REPLY).to_le_bytes());
                ack[8..12].copy_from_slice(&8u32.to_le_bytes());
                let mut w = reply.lock().unwrap_or_else(|e| e.into_inner());
                if w.write_all(&ack).is_err() {
                    break;
                }
            }
            continue;
        }
        if req == SET_VRING_CALL {
            call_changed();
        }
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        if handler.send_with_fds(&[&msg[..]], &raw).is_err() {
            break;
        }
        if req == SET_FEATURES && !features_set {
            features_set = true;
            let mut h = handler;
            if held.drain(..).any(|m| h.write_all(&m).is_err()) {
                break;
            }
        }
    }
    let _ = handler.shutdown(std::net::Shutdown::Both);
    let _ = frontend.shutdown(std::net::Shutdown::Both);
}

/// Relays handler → frontend (replies carry no descriptors) until either
/// side closes.
pub fn handler_to_frontend(handler: &UnixStream, frontend: &Arc<Mutex<UnixStream>>) {
    let mut buf = [0u8; 4096];
    let mut r = handler;
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut w = frontend.lock().unwrap_or_else(|e| e.into_inner());
                if w.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let f = frontend.lock().unwrap_or_else(|e| e.into_inner());
    let _ = f.shutdown(std::net::Shutdown::Both);
    let _ = handler.shutdown(std::net::Shutdown::Both);
}
