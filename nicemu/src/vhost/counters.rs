// SPDX-License-Identifier: Apache-2.0
//! Per-queue-pair and per-port counters of a virtio-net port.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($(#[$m:meta])* $name:ident / $snap:ident { $($(#[$fm:meta])* $f:ident,)* }) => {
        $(#[$m])*
        #[derive(Debug, Default)]
        pub struct $name {
            $($(#[$fm])* pub $f: AtomicU64,)*
        }

        /// A snapshot of the counters.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
        pub struct $snap {
            $($(#[$fm])* pub $f: u64,)*
        }

        impl $name {
            /// Reads every counter.
            pub fn snapshot(&self) -> $snap {
                $snap { $($f: self.$f.load(Ordering::Relaxed),)* }
            }
        }

        impl $snap {
            /// The counters by name.
            pub fn list(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($f), self.$f),)*]
            }
        }
    };
}

counters!(
    /// Counters of one queue pair (receive queue 2n, transmit queue 2n+1).
    QueueCounters / QueueStats {
        /// Frames written into the receive queue.
        rx_frames,
        /// Bytes of those frames (without the virtio-net header).
        rx_bytes,
        /// Frames delivered as one GSO frame (not segmented).
        rx_gso,
        /// GSO frames built here by receive coalescing (each counts once in
        /// `rx_frames`).
        rx_coalesced,
        /// Segments merged into those frames.
        rx_coalesced_segs,
        /// Times a frame had to wait for receive buffers.
        rx_no_buffers,
        /// Frames dropped: larger than one buffer without mergeable buffers.
        rx_too_big,
        /// Frames dropped because a receive chain was malformed.
        rx_bad_chain,
        /// Transmit chains taken from the guest.
        tx_chains,
        /// Frames sent into the switch.
        tx_frames,
        /// Bytes of those frames.
        tx_bytes,
        /// GSO requests segmented here.
        tx_gso_segmented,
        /// GSO frames passed whole to a port that accepts them.
        tx_gso_passed,
        /// Chains dropped: write-only descriptor in a transmit chain.
        tx_bad_write_only,
        /// Chains dropped: too many descriptors.
        tx_bad_too_long,
        /// Chains dropped: more bytes than a 64 KiB GSO frame.
        tx_bad_too_big,
        /// Chains dropped: buffer outside guest memory.
        tx_bad_address,
        /// Chains dropped: shorter than header + Ethernet header.
        tx_bad_runt,
        /// Frames dropped: a checksum or GSO request that does not fit the frame.
        tx_bad_offload,
    }
);

counters!(
    /// Counters of the whole port.
    PortCounters / PortStats {
        /// Frames from the switch dropped because the link was down.
        rx_link_drops,
        /// Frames the guest sent dropped because the link was down.
        tx_link_drops,
        /// Frames from the switch dropped because no driver was ready.
        rx_not_ready,
        /// Connections accepted.
        connections,
        /// Frames from the switch dropped because their receive queue's
        /// backlog was full (the guest did not give buffers in time).
        rx_backlog_drops,
        /// Used-ring interrupts merged into one still pending at the client
        /// (its call eventfd was full).
        irq_coalesced,
        /// Used-ring interrupts that could not be written (call fd of the
        /// wrong kind, pipe without reader).
        irq_failed,
        /// SET_MEM_TABLE / ADD_MEM_REGION refused: too many regions or bytes,
        /// or a file that does not cover its region or could shrink.
        mem_refused,
    }
);

/// Adds one to a counter.
pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Adds `n` to a counter.
pub fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
