// SPDX-License-Identifier: Apache-2.0
//! The vhost-user relay between a port's socket and its request handler:
//! only the frontend that connected to the port's socket reaches the
//! handler; no other local process can attach to it first.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::time::Duration;

use common::*;

const GET_FEATURES: u32 = 1;

#[test]
fn the_handler_is_reachable_only_through_the_ports_socket() {
    let n = Nicemu::start(
        "vhost-relay",
        &["--device", "virtio-net,id=vn0,socket={dir}/vn.sock"],
        &["vn.sock"],
    );
    // Give the port's thread time to set everything up.
    std::thread::sleep(Duration::from_millis(300));
    // The old relay listened on a guessable abstract name any local user
    // could connect to before the frontend did.
    let name = format!("nicemu-vhost-{}-vn0", n.child.id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    assert!(
        UnixStream::connect_addr(&addr).is_err(),
        "{name} accepts connections"
    );
    // The frontend is served through the port's socket.
    let mut f = UnixStream::connect(n.path("vn.sock")).unwrap();
    f.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut msg = Vec::new();
    msg.extend_from_slice(&GET_FEATURES.to_le_bytes());
    msg.extend_from_slice(&1u32.to_le_bytes());
    msg.extend_from_slice(&0u32.to_le_bytes());
    f.write_all(&msg).unwrap();
    let mut reply = [0u8; 20];
    f.read_exact(&mut reply).unwrap();
    assert_eq!(
        u32::from_le_bytes(reply[0..4].try_into().unwrap()),
        GET_FEATURES
    );
    assert_eq!(u32::from_le_bytes(reply[8..12].try_into().unwrap()), 8);
    let features = u64::from_le_bytes(reply[12..20].try_into().unwrap());
    assert_ne!(features & (1 << 32), 0, "VIRTIO_F_VERSION_1 offered");
    // No relay socket is left on the file system or in /tmp.
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("nicemu-vhost-{}-", n.child.id()))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Frontends that come and go leave no descriptors behind (found by the
/// soak: one eventfd per queue-pair worker per connection stayed open).
#[test]
fn frontends_coming_and_going_leave_no_descriptors_behind() {
    let n = Nicemu::start(
        "vhost-fds",
        &[
            "--device",
            "virtio-net,id=vn0,socket={dir}/vn.sock,queues=2",
        ],
        &["vn.sock"],
    );
    let visit = || {
        // Between two frontends the backend takes a moment to listen again
        // (a refused connect then): retry as QEMU's `reconnect-ms` does.
        let mut tries = 0;
        let mut f = loop {
            match UnixStream::connect(n.path("vn.sock")) {
                Ok(f) => break f,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("connect after {tries} refusals: {e}"),
            }
        };
        f.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut msg = Vec::new();
        for v in [GET_FEATURES, 1, 0] {
            msg.extend_from_slice(&v.to_le_bytes());
        }
        f.write_all(&msg).unwrap();
        let mut reply = [0u8; 20];
        f.read_exact(&mut reply).unwrap();
    };
    visit();
    std::thread::sleep(Duration::from_millis(500));
    let before = open_fds(n.child.id());
    for _ in 0..20 {
        visit();
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = open_fds(n.child.id());
    assert!(
        after <= before + 1,
        "{before} fds before 20 sessions, {after} after"
    );
}
