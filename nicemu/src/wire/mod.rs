// SPDX-License-Identifier: Apache-2.0
//! Wires: switch ports that leave the process — a QEMU `-netdev stream`
//! compatible unix socket (so QEMU's own NICs can be peers) and a tap device.

pub mod stream;
pub mod tap;

use std::sync::Arc;

use crate::config::{WireKind, WireSpec};
use crate::error::Error;
use crate::switch::{PortCounters, Switch};

/// A started wire.
#[derive(Debug)]
pub struct Started {
    /// The socket to remove on exit, if any.
    pub socket: Option<std::path::PathBuf>,
    /// Its switch port counters.
    pub counters: Arc<PortCounters>,
}

/// Starts a wire on its network's switch.
pub fn start(spec: &WireSpec, switch: &Arc<Switch>) -> Result<Started, Error> {
    Ok(match &spec.kind {
        WireKind::Stream { path } => Started {
            counters: stream::start(path, switch)?,
            socket: Some(path.clone()),
        },
        WireKind::Tap { ifname } => Started {
            counters: tap::start(ifname, switch)?,
            socket: None,
        },
    })
}
