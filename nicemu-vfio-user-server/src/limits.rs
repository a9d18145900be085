// SPDX-License-Identifier: Apache-2.0
//! The bounds the server holds every client to. The first three are
//! advertised in the VERSION reply (§"VFIO_USER_VERSION", capabilities
//! `max_msg_fds`, `max_data_xfer_size`, `max_dma_maps`).

use std::time::Duration;

use crate::codec::{RegionAccess, HEADER_SIZE};

/// Most file descriptors accepted in one message, advertised as
/// `max_msg_fds` (QEMU's own maximum; it sends MSI-X eventfds in batches of
/// this size). A message carrying more is refused with `EINVAL` and every
/// descriptor it carried is closed.
pub const MAX_MSG_FDS: usize = 16;

/// Largest `count` of REGION_READ/REGION_WRITE, advertised as
/// `max_data_xfer_size`. QEMU reads the whole 4 KiB config space at start;
/// guest accesses are at most 8 bytes.
pub const MAX_DATA_XFER: u32 = 64 * 1024;

// QEMU reads all of config space (4 KiB) in one REGION_READ.
const _: () = assert!(MAX_DATA_XFER >= 4096);

/// Most DMA mappings at once, advertised as `max_dma_maps` (QEMU maps guest
/// RAM in a handful of sections; the BIOS's PAM shadowing adds a few dozen at
/// most).
pub const MAX_DMA_MAPS: usize = 256;

/// Most bytes mapped at once, over all mappings (1 TiB of address space per
/// device).
pub const MAX_DMA_TOTAL: u64 = 1 << 40;

/// Largest message accepted: a REGION_WRITE of [`MAX_DATA_XFER`] bytes (every
/// other command is smaller). A header announcing more gets an `E2BIG` error
/// reply and the connection is closed, since the stream cannot be trusted to
/// resynchronise.
pub const MAX_MSG_SIZE: usize = HEADER_SIZE + RegionAccess::SIZE + MAX_DATA_XFER as usize;

/// How long a client may take to deliver the rest of a message once its first
/// byte arrived. Idle time between messages is not limited.
pub const MSG_DEADLINE: Duration = Duration::from_secs(10);

/// How long a reply may wait for room in the socket (a client that stops
/// reading its replies is dropped after this).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest a server thread polls its socket for the next message after
/// serving one ([`crate::Endpoint::set_poll`]): a spinning thread keeps a
/// core busy, so the window is bounded.
pub const MAX_POLL: Duration = Duration::from_millis(1);

/// `max_data_xfer_size` of a client that does not state one
/// (§"VFIO_USER_VERSION").
pub(crate) const DEFAULT_MAX_XFER: u32 = 1 << 20;
