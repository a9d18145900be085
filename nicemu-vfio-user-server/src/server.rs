// SPDX-License-Identifier: Apache-2.0
//! A listening vfio-user socket: accepts one client at a time and serves it
//! against its [`Endpoint`]; after each client the device is reset and the
//! next one accepted.

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::Duration;

use crate::device::PciDevice;
use crate::endpoint::Endpoint;
use crate::error::ConnError;

/// How long the accept loop pauses after `accept` failed (e.g. `EMFILE`),
/// so that it does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// The vfio-user server of one device.
#[derive(Debug)]
pub struct Server<D> {
    listener: UnixListener,
    /// The socket's path, for log lines.
    path: Option<PathBuf>,
    endpoint: Endpoint<D>,
}

impl<D: PciDevice> Server<D> {
    /// Serves `endpoint` on `listener` (a bound, listening unix socket: who
    /// may connect is the caller's choice of path and mode).
    pub fn new(listener: UnixListener, endpoint: Endpoint<D>) -> Self {
        let path = listener
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(PathBuf::from));
        Server {
            listener,
            path,
            endpoint,
        }
    }

    /// The endpoint served.
    pub fn endpoint(&self) -> &Endpoint<D> {
        &self.endpoint
    }

    /// Accepts one client and serves it until it goes away. `Ok` when the
    /// client closed the connection between messages. The client's DMA
    /// mappings and eventfds stay until [`Endpoint::disconnect`].
    pub fn serve_one(&mut self) -> Result<(), ConnError> {
        let (stream, _) = self.listener.accept().map_err(ConnError::Accept)?;
        log::info!("{}: vfio-user client connected", self.endpoint.id());
        self.endpoint.serve(stream)
    }

    /// Serves clients one after the other, for ever. When a client goes away
    /// (VM shut down, QEMU killed, malformed stream) — or serving it panics,
    /// which is caught and contained to the connection — the device forgets
    /// it and is reset, and the next client is accepted.
    pub fn run(mut self) -> ! {
        let id = self.endpoint.id().to_owned();
        loop {
            match &self.path {
                Some(p) => log::info!("{id}: waiting for a vfio-user client on {}", p.display()),
                None => log::info!("{id}: waiting for a vfio-user client"),
            }
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.serve_one()));
            match r {
                Ok(Ok(())) => log::info!("{id}: client disconnected"),
                Ok(Err(e @ ConnError::Accept(_))) => {
                    // No client was served; do not spin on e.g. EMFILE.
                    log::warn!("{id}: {e}");
                    std::thread::sleep(ACCEPT_RETRY);
                    continue;
                }
                Ok(Err(e)) => log::warn!("{id}: client connection dropped: {e}"),
                Err(_) => {
                    log::error!("{id}: panic while serving the client; connection dropped")
                }
            }
            self.endpoint.disconnect();
        }
    }
}
