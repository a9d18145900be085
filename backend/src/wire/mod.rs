//! Wires: switch ports that leave the process — a QEMU `-netdev stream`
//! compatible unix socket (so QEMU's own NICs can be peers) and a tap device.

pub mod stream;
pub mod tap;

use std::sync::Arc;

use crate::config::{WireKind, WireSpec};
use crate::error::Error;
use crate::switch::Switch;

/// Starts a wire on its network's switch. Returns the socket path to remove on
/// exit, if any.
pub fn start(spec: &WireSpec, switch: &Arc<Switch>) -> Result<Option<std::path::PathBuf>, Error> {
    match &spec.kind {
        WireKind::Stream { path } => {
            stream::start(path, switch)?;
            Ok(Some(path.clone()))
        }
        WireKind::Tap { ifname } => {
            tap::start(ifname, switch)?;
            Ok(None)
        }
    }
}
