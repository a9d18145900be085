// SPDX-License-Identifier: Apache-2.0
//! Interrupt signalling both transports share: an igb/ixgbe function's
//! vectors (the eventfds of vfio-user SET_IRQS) and a virtio-net port's vring
//! call fds are written the same way.
//! [`eventfd`] checks and writes one fd; a port's [`signaller`] decides which
//! thread writes it, so that no thread serving another client waits for it.

pub mod eventfd;
pub mod signaller;
