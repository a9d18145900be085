// SPDX-License-Identifier: Apache-2.0
//! The virtio-net header (virtio 1.2 §5.1.6) and the offloads it asks for:
//! checksum completion, TCP segmentation (through the shared
//! `nicemu_net_util` helpers), and the in-process GSO trailer that lets
//! a large TCP segment cross the switch intact to a virtio-net port whose
//! driver accepts it.

use nicemu_net_util::{csum, OffloadError, Tso};
use virtio_bindings::bindings::virtio_net::{
    VIRTIO_NET_HDR_F_DATA_VALID, VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_ECN,
    VIRTIO_NET_HDR_GSO_NONE, VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6,
};

/// Largest header a driver can negotiate (with `num_buffers`).
pub const MAX_HDR_LEN: usize = 12;

/// The fields of `struct virtio_net_hdr` (little-endian in guest memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetHdr {
    /// `VIRTIO_NET_HDR_F_*`.
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*` (with the ECN bit).
    pub gso_type: u8,
    /// Length of the headers to replicate per segment.
    pub hdr_len: u16,
    /// Segment payload size.
    pub gso_size: u16,
    /// Where checksumming starts.
    pub csum_start: u16,
    /// Where the checksum goes, from `csum_start`.
    pub csum_offset: u16,
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl NetHdr {
    /// Decodes the first 10 bytes of `b` (`None` if shorter).
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < 10 {
            return None;
        }
        Some(NetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le16(b, 2),
            gso_size: le16(b, 4),
            csum_start: le16(b, 6),
            csum_offset: le16(b, 8),
        })
    }

    /// Encodes into `out` (10 or 12 bytes; `num_buffers` goes in bytes 10..12).
    pub fn write(&self, out: &mut [u8], num_buffers: u16) {
        if out.len() < 10 {
            return;
        }
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        if out.len() >= 12 {
            out[10..12].copy_from_slice(&num_buffers.to_le_bytes());
        }
    }

    /// The GSO kind without the ECN bit.
    pub fn gso_kind(&self) -> u8 {
        self.gso_type & !(VIRTIO_NET_HDR_GSO_ECN as u8)
    }
}

/// GSO kinds a receiving driver accepts (bit set per kind).
pub mod accept {
    /// TCP over IPv4.
    pub const TCP4: u8 = 1;
    /// TCP over IPv6.
    pub const TCP6: u8 = 2;
}

/// The `accept` bit a GSO kind needs, or 0 for kinds never passed on.
pub fn accept_bit(gso_kind: u8) -> u8 {
    match u32::from(gso_kind) {
        VIRTIO_NET_HDR_GSO_TCPV4 => accept::TCP4,
        VIRTIO_NET_HDR_GSO_TCPV6 => accept::TCP6,
        _ => 0,
    }
}

/// A validated TCP segmentation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GsoRequest {
    /// Where the headers are and the MSS, for `nicemu_net_util::tso::segment`.
    pub tso: Tso,
    /// GSO kind (TCPv4/TCPv6, ECN bit kept in `gso_type`).
    pub gso_type: u8,
}

/// Validates a GSO request against the frame itself (the header's offsets
/// are the guest's word; the frame's headers decide).
pub fn tso_request(hdr: &NetHdr, frame: &[u8]) -> Result<GsoRequest, OffloadError> {
    let want_v4 = match u32::from(hdr.gso_kind()) {
        VIRTIO_NET_HDR_GSO_TCPV4 => true,
        VIRTIO_NET_HDR_GSO_TCPV6 => false,
        _ => return Err(OffloadError::BadTso),
    };
    let (tso, ipv4) = Tso::for_frame(frame, hdr.gso_size)?;
    if ipv4 != want_v4 {
        return Err(OffloadError::BadTso);
    }
    Ok(GsoRequest {
        tso,
        gso_type: hdr.gso_type,
    })
}

/// Completes a partial checksum: the 16-bit one's-complement sum from
/// `csum_start` to the end of the frame is stored at `csum_start + csum_offset`.
pub fn complete_csum(hdr: &NetHdr, frame: &mut [u8]) -> Result<(), OffloadError> {
    csum::complete_partial(
        frame,
        usize::from(hdr.csum_start),
        usize::from(hdr.csum_offset),
    )
}

/// The receive header for a plain frame: DATA_VALID when the driver takes
/// checksum offload and the frame's IP/TCP/UDP checksums verify.
pub fn rx_hdr_plain(frame: &[u8], guest_csum: bool) -> NetHdr {
    let mut h = NetHdr::default();
    if guest_csum {
        let r = csum::verify_rx(frame);
        if r.l4_checked && r.l4_ok && (!r.ip_checked || r.ip_ok) {
            h.flags = VIRTIO_NET_HDR_F_DATA_VALID as u8;
        }
    }
    h
}

/// Length of the GSO trailer appended to a frame that crosses the switch
/// unsegmented: gso_type, 0, gso_size, csum_start, csum_offset, hdr_len,
/// 0, 0, token (u64), little-endian.
pub const TRAILER_LEN: usize = 20;

/// A token no guest can guess, marking frames that carry a GSO trailer.
pub fn process_token() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static TOKEN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOKEN.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::process::id().into());
        h.finish() | 1
    })
}

/// Appends the GSO trailer describing `tso` to `buf` (which ends with the frame).
pub fn push_trailer(buf: &mut Vec<u8>, req: &GsoRequest, token: u64) {
    let tso = &req.tso;
    let l4 = tso.l4() as u16;
    let mut t = [0u8; TRAILER_LEN];
    t[0] = req.gso_type;
    t[2..4].copy_from_slice(&tso.mss.to_le_bytes());
    t[4..6].copy_from_slice(&l4.to_le_bytes());
    t[6..8].copy_from_slice(&16u16.to_le_bytes());
    t[8..10].copy_from_slice(&(tso.hdr_len() as u16).to_le_bytes());
    t[12..20].copy_from_slice(&token.to_le_bytes());
    buf.extend_from_slice(&t);
}

/// Splits a frame from the switch into the frame and, when it carries this
/// process's GSO trailer, the receive header describing it.
pub fn split_trailer(f: &[u8], token: u64) -> (&[u8], Option<NetHdr>) {
    if f.len() < 14 + TRAILER_LEN {
        return (f, None);
    }
    let (frame, t) = f.split_at(f.len() - TRAILER_LEN);
    if t[12..20] != token.to_le_bytes() {
        return (f, None);
    }
    let h = NetHdr {
        flags: VIRTIO_NET_HDR_F_NEEDS_CSUM as u8,
        gso_type: t[0],
        gso_size: le16(t, 2),
        csum_start: le16(t, 4),
        csum_offset: le16(t, 6),
        hdr_len: le16(t, 8),
    };
    (frame, Some(h))
}

/// True if `hdr` asks for no GSO.
pub fn is_plain(hdr: &NetHdr) -> bool {
    u32::from(hdr.gso_kind()) == VIRTIO_NET_HDR_GSO_NONE
}

/// True if `hdr` asks for checksum completion.
pub fn needs_csum(hdr: &NetHdr) -> bool {
    u32::from(hdr.flags) & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 + TCP frame with `payload` bytes, checksums zero.
    pub(crate) fn tcp4(payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12] = 0x08;
        f[14] = 0x45;
        let tot = (40 + payload) as u16;
        f[16..18].copy_from_slice(&tot.to_be_bytes());
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&1234u16.to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        f[46] = 5 << 4;
        f[47] = 0x18;
        for (i, b) in f[54..].iter_mut().enumerate() {
            *b = i as u8;
        }
        f
    }

    #[test]
    fn header_round_trip() {
        let h = NetHdr {
            flags: 1,
            gso_type: 1,
            hdr_len: 54,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let mut b = [0u8; 12];
        h.write(&mut b, 3);
        assert_eq!(NetHdr::parse(&b), Some(h));
        assert_eq!(le16(&b, 10), 3);
        assert_eq!(NetHdr::parse(&b[..9]), None);
    }

    #[test]
    fn tso_segments_verify() {
        let f = tcp4(4000);
        let h = NetHdr {
            flags: 1,
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4 as u8,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
            hdr_len: 54,
        };
        let t = tso_request(&h, &f).unwrap();
        assert_eq!(t.tso.hdr_len(), 54);
        let mut seg = Vec::new();
        let mut n = 0;
        nicemu_net_util::tso::segment(&f, &t.tso, &mut seg, |s| {
            let r = csum::verify_rx(s);
            assert!(r.ip_ok && r.l4_ok);
            n += 1;
        })
        .unwrap();
        assert_eq!(n, 3);
        // Wrong IP version for the GSO kind, zero MSS, truncated headers.
        let v6 = NetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV6 as u8,
            ..h
        };
        tso_request(&v6, &f).unwrap_err();
        tso_request(&NetHdr { gso_size: 0, ..h }, &f).unwrap_err();
        tso_request(&h, &f[..40]).unwrap_err();
    }

    #[test]
    fn csum_completion_and_bounds() {
        let mut f = tcp4(100);
        csum::ipv4_header_csum(&mut f, 14).unwrap();
        let h = NetHdr {
            flags: 1,
            csum_start: 34,
            csum_offset: 16,
            ..NetHdr::default()
        };
        // The guest leaves the pseudo-header sum in the field.
        let mut pseudo = csum::csum_add(0, &f[26..34]);
        pseudo = pseudo.wrapping_add(6).wrapping_add(120);
        let p = !csum::csum_fold(pseudo);
        f[50..52].copy_from_slice(&p.to_be_bytes());
        complete_csum(&h, &mut f).unwrap();
        assert!(csum::verify_rx(&f).l4_ok);
        let bad = NetHdr {
            csum_start: 60000,
            ..h
        };
        assert!(complete_csum(&bad, &mut f).is_err());
        let bad = NetHdr {
            csum_offset: 60000,
            ..h
        };
        assert!(complete_csum(&bad, &mut f).is_err());
    }

    #[test]
    fn trailer_round_trip_needs_token() {
        let f = tcp4(3000);
        let h = NetHdr {
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4 as u8,
            gso_size: 1000,
            ..NetHdr::default()
        };
        let t = tso_request(&h, &f).unwrap();
        let mut buf = f.clone();
        push_trailer(&mut buf, &t, 0x1234);
        let (frame, meta) = split_trailer(&buf, 0x1234);
        assert_eq!(frame, &f[..]);
        let m = meta.unwrap();
        assert_eq!(
            (m.gso_size, m.csum_start, m.csum_offset, m.hdr_len),
            (1000, 34, 16, 54)
        );
        let (frame, meta) = split_trailer(&buf, 0x9999);
        assert_eq!(frame.len(), buf.len());
        assert!(meta.is_none());
    }
}
