// SPDX-License-Identifier: Apache-2.0
//! virtio-net feature bits this backend offers and its device configuration
//! space (virtio 1.2 §5.1.3, §5.1.4).

use vhost::vhost_user::message::VhostUserVirtioFeatures;
use virtio_bindings::bindings::virtio_config::VIRTIO_F_VERSION_1;
use virtio_bindings::bindings::virtio_net::{
    VIRTIO_NET_F_CSUM, VIRTIO_NET_F_CTRL_VQ, VIRTIO_NET_F_GUEST_CSUM, VIRTIO_NET_F_GUEST_ECN,
    VIRTIO_NET_F_GUEST_TSO4, VIRTIO_NET_F_GUEST_TSO6, VIRTIO_NET_F_HOST_ECN,
    VIRTIO_NET_F_HOST_TSO4, VIRTIO_NET_F_HOST_TSO6, VIRTIO_NET_F_MAC, VIRTIO_NET_F_MQ,
    VIRTIO_NET_F_MRG_RXBUF, VIRTIO_NET_F_STATUS, VIRTIO_NET_S_LINK_UP,
};
use virtio_bindings::bindings::virtio_ring::{
    VIRTIO_RING_F_EVENT_IDX, VIRTIO_RING_F_INDIRECT_DESC,
};

/// Bit mask of feature number `f`.
pub const fn bit(f: u32) -> u64 {
    1u64 << f
}

/// Device features offered to the driver for a port with `pairs` queue pairs.
///
/// Checksum and TSO offload in both directions, mergeable receive buffers,
/// MAC and link status in config space, multiqueue when `pairs > 1`
/// (QEMU's virtio-net handles the control queue itself for vhost-user).
pub fn device_features(pairs: u16) -> u64 {
    let mut f = bit(VIRTIO_F_VERSION_1)
        | bit(VIRTIO_RING_F_INDIRECT_DESC)
        | bit(VIRTIO_RING_F_EVENT_IDX)
        | bit(VIRTIO_NET_F_CSUM)
        | bit(VIRTIO_NET_F_GUEST_CSUM)
        | bit(VIRTIO_NET_F_HOST_TSO4)
        | bit(VIRTIO_NET_F_HOST_TSO6)
        | bit(VIRTIO_NET_F_HOST_ECN)
        | bit(VIRTIO_NET_F_GUEST_TSO4)
        | bit(VIRTIO_NET_F_GUEST_TSO6)
        | bit(VIRTIO_NET_F_GUEST_ECN)
        | bit(VIRTIO_NET_F_MRG_RXBUF)
        | bit(VIRTIO_NET_F_MAC)
        | bit(VIRTIO_NET_F_STATUS)
        | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits();
    if pairs > 1 {
        f |= bit(VIRTIO_NET_F_MQ) | bit(VIRTIO_NET_F_CTRL_VQ);
    }
    f
}

/// What the driver accepted, decoded once per negotiation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Negotiated {
    /// Length of the virtio-net header in front of every frame (10 or 12).
    pub hdr_len: usize,
    /// Mergeable receive buffers.
    pub mrg_rxbuf: bool,
    /// The driver accepts partially checksummed / checksum-validated frames.
    pub guest_csum: bool,
    /// The driver accepts TCPv4 GSO frames.
    pub guest_tso4: bool,
    /// The driver accepts TCPv6 GSO frames.
    pub guest_tso6: bool,
    /// The driver accepts GSO frames with the ECN bit (CWR set).
    pub guest_ecn: bool,
}

impl Negotiated {
    /// Decodes acked feature bits.
    pub fn from_features(acked: u64) -> Self {
        let has = |f: u32| acked & bit(f) != 0;
        let mrg = has(VIRTIO_NET_F_MRG_RXBUF);
        let guest_csum = has(VIRTIO_NET_F_GUEST_CSUM);
        Negotiated {
            hdr_len: if has(VIRTIO_F_VERSION_1) || mrg {
                12
            } else {
                10
            },
            mrg_rxbuf: mrg,
            guest_csum,
            guest_tso4: guest_csum && has(VIRTIO_NET_F_GUEST_TSO4),
            guest_tso6: guest_csum && has(VIRTIO_NET_F_GUEST_TSO6),
            guest_ecn: guest_csum && has(VIRTIO_NET_F_GUEST_ECN),
        }
    }
}

/// Size of the configuration space served: `mac[6]`, `status`, `max_virtqueue_pairs`.
pub const CONFIG_LEN: usize = 10;

/// The device configuration space (little-endian fields).
pub fn config_space(mac: [u8; 6], link_up: bool, pairs: u16) -> [u8; CONFIG_LEN] {
    let mut c = [0u8; CONFIG_LEN];
    c[0..6].copy_from_slice(&mac);
    let status = if link_up {
        VIRTIO_NET_S_LINK_UP as u16
    } else {
        0
    };
    c[6..8].copy_from_slice(&status.to_le_bytes());
    c[8..10].copy_from_slice(&pairs.to_le_bytes());
    c
}

/// Bytes `offset..offset + size` of `space`, zero beyond its end (the
/// frontend may read any window; nothing outside is an error).
pub fn config_window(space: &[u8], offset: u32, size: u32) -> Vec<u8> {
    let size = (size as usize).min(256);
    let mut out = vec![0u8; size];
    let start = offset as usize;
    if start < space.len() {
        let n = (space.len() - start).min(size);
        out[..n].copy_from_slice(&space[start..start + n]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_has_mac_status_pairs() {
        let c = config_space([2, 0, 0, 0, 0, 9], true, 4);
        assert_eq!(&c[0..6], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(u16::from_le_bytes([c[6], c[7]]), 1);
        assert_eq!(u16::from_le_bytes([c[8], c[9]]), 4);
        assert_eq!(config_window(&c, 6, 2), vec![1, 0]);
        assert_eq!(config_window(&c, 8, 8), vec![4, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(config_window(&c, 1000, 4), vec![0; 4]);
        let d = config_space([2, 0, 0, 0, 0, 9], false, 1);
        assert_eq!(u16::from_le_bytes([d[6], d[7]]), 0);
    }

    #[test]
    fn negotiated_header_length() {
        assert_eq!(Negotiated::from_features(0).hdr_len, 10);
        assert_eq!(
            Negotiated::from_features(bit(VIRTIO_NET_F_MRG_RXBUF)).hdr_len,
            12
        );
        let n = Negotiated::from_features(device_features(4));
        assert_eq!(n.hdr_len, 12);
        assert!(n.mrg_rxbuf && n.guest_csum && n.guest_tso4 && n.guest_tso6);
        assert_eq!(device_features(1) & bit(VIRTIO_NET_F_MQ), 0);
    }
}
