// SPDX-License-Identifier: Apache-2.0
//! One nicemu instance inside the fuzzing process, serving the real sockets
//! (an igb function, a virtio-net port, a stream wire and the control
//! socket) from a temporary directory; each input is written to one of
//! them as a client would.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The running instance.
pub struct Instance {
    /// Its directory (sockets).
    pub dir: PathBuf,
    /// Where control-socket files land (emptied after each input).
    pub out: PathBuf,
    _running: nicemu::ports::Running,
}

/// Starts the instance on first use.
pub fn instance() -> &'static Instance {
    static I: OnceLock<Instance> = OnceLock::new();
    I.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nicemu-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let d = dir.display();
        let devices = nicemu::config::parse_devices(&[
            format!("igb,id=igb0,socket={d}/igb0.sock,mac=52:54:00:00:00:01"),
            format!("virtio-net,id=vn0,socket={d}/vn0.sock,queues=2"),
        ])
        .unwrap();
        let wires = [nicemu::config::WireSpec::parse(&format!("stream,path={d}/w.sock")).unwrap()];
        let running = nicemu::ports::start(&devices, &wires, None).unwrap();
        let od = nicemu::outfile::OutputDir::open(&out).unwrap();
        nicemu::control::server::start(&dir.join("ctl.sock"), running.registry.clone(), od)
            .unwrap();
        Instance {
            dir,
            out,
            _running: running,
        }
    })
}

/// Connects to `sock`, writes `data`, closes the write side and reads until
/// the server closes (bounded by timeouts: a server that never answers or
/// never closes shows up as a fuzzer timeout).
pub fn exchange(sock: &Path, data: &[u8]) {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return;
    };
    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.write_all(data);
    let _ = s.shutdown(Shutdown::Write);
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

/// Removes the files inputs made in the output directory.
pub fn clean_out(i: &Instance) {
    for e in std::fs::read_dir(&i.out).into_iter().flatten().flatten() {
        let _ = std::fs::remove_file(e.path());
    }
}
