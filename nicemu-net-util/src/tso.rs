// SPDX-License-Identifier: Apache-2.0
//! TCP and UDP segmentation (82576 §7.2.4, 82599 §7.2.4 TSO/USO; virtio-net
//! `VIRTIO_NET_HDR_GSO_TCPV4/6`): one large frame becomes MSS-sized
//! segments with replicated headers and their checksums.

use crate::csum::{ipv4_header_csum, l4_csum, l4_csum_seeded};
use crate::frame::{parse, put16, IPPROTO_TCP, IPPROTO_UDP};
use crate::OffloadError;

/// Smallest MSS a segmentation request may carry. Neither Intel datasheet
/// (82576 §7.2.4, 82599 §7.2.4) states a minimum; this is the smallest MSS
/// Linux's TCP ever sends (`TCP_MIN_SND_MSS`, the floor of
/// `net.ipv4.tcp_min_snd_mss`), so no Linux driver's TSO is refused, while one
/// request can no longer ask for one segment per payload byte (a 256 KiB
/// payload is at most 5462 segments).
pub const MIN_TSO_MSS: u16 = 48;

/// Where a frame's headers are, which L4 protocol it segments and how large
/// its segments may be: what a TSO context descriptor or a virtio-net GSO
/// header describes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tso {
    /// Length of the MAC header (the offset of the IP header).
    pub mac_len: u16,
    /// Length of the IP header.
    pub ip_len: u16,
    /// Length of the L4 header (TCP with its options, or UDP's 8).
    pub l4_len: u8,
    /// Payload bytes per segment.
    pub mss: u16,
    /// [`IPPROTO_TCP`] or [`IPPROTO_UDP`].
    pub proto: u8,
    /// The L4 checksum field holds the partial pseudo-header sum without
    /// the length, which each segment's checksum completes with its own L4
    /// length ([`l4_csum_seeded`]): what the Intel parts do (82576 and 82599
    /// §7.2.4; `igb_tso` / `ixgbe_tso` seed it). So the L4 header may lie
    /// behind tunnel headers (`SKB_GSO_PARTIAL`: MACLEN and IPLEN span the
    /// outer headers up to the inner L4 header). Without it (virtio-net GSO,
    /// whose seed counts the whole frame) the pseudo header is computed from
    /// the IP header at `mac_len`.
    pub seeded: bool,
}

impl Tso {
    /// Offset of the L4 header.
    pub fn l4(&self) -> usize {
        usize::from(self.mac_len) + usize::from(self.ip_len)
    }

    /// Length of all headers (Ethernet to the end of the L4 header).
    pub fn hdr_len(&self) -> usize {
        self.l4() + usize::from(self.l4_len)
    }

    /// The TCP segmentation of a frame whose header lengths are read from
    /// the frame itself (a request's own offsets are not trusted), with
    /// `mss`. Returns it with whether the frame is IPv4.
    pub fn for_frame(frame: &[u8], mss: u16) -> Result<(Tso, bool), OffloadError> {
        let p = parse(frame).ok_or(OffloadError::BadTso)?;
        let l4 = p.l4.ok_or(OffloadError::BadTso)?;
        if p.proto != IPPROTO_TCP || mss == 0 {
            return Err(OffloadError::BadTso);
        }
        let doff =
            usize::from(*frame.get(l4 + 12).ok_or(OffloadError::Truncated(l4 + 13))? >> 4) * 4;
        if doff < 20 || frame.len() < l4 + doff {
            return Err(OffloadError::Truncated(l4 + doff.max(20)));
        }
        let tso = Tso {
            mac_len: p.l3 as u16,
            ip_len: (l4 - p.l3) as u16,
            l4_len: doff as u8,
            mss,
            proto: IPPROTO_TCP,
            seeded: false,
        };
        Ok((tso, p.ipv4))
    }
}

/// Splits a segmentation frame by its L4 protocol (82576 §7.2.4 and 82599
/// §7.2.4 segment TCP and UDP): headers are replicated, IPv4 total length /
/// identification / header checksum or the IPv6 payload length are
/// rewritten; TCP's sequence number advances, FIN and PSH stay only on the
/// last segment and CWR only on the first; UDP's datagrams of `mss` payload
/// bytes each get their own UDP length (`igb_tso` / `ixgbe_tso` program L4T
/// UDP with L4LEN 8 for `SKB_GSO_UDP_L4`); every segment's checksums are
/// computed. Each finished segment is passed to `out` in `seg`, which is
/// reused: `out` may also take the segment's buffer by swapping it for
/// another one, in which the next segment is then built (so segments can be
/// handed on without a copy). Returns the number of segments.
pub fn segment(
    frame: &[u8],
    tso: &Tso,
    seg: &mut Vec<u8>,
    mut out: impl FnMut(&mut Vec<u8>),
) -> Result<usize, OffloadError> {
    let min_l4 = match tso.proto {
        IPPROTO_TCP => 20,
        IPPROTO_UDP => 8,
        _ => return Err(OffloadError::BadTso),
    };
    if tso.mss < MIN_TSO_MSS || usize::from(tso.l4_len) < min_l4 {
        return Err(OffloadError::BadTso);
    }
    let g = Geometry::of(frame, tso, min_l4)?;
    let payload = &frame[g.hdr..];
    // TCP: the first segment's sequence number and flags (the header is at
    // least 20 bytes, checked above).
    let tcp = (tso.proto == IPPROTO_TCP).then(|| {
        let l4 = g.l4;
        let seq = [frame[l4 + 4], frame[l4 + 5], frame[l4 + 6], frame[l4 + 7]];
        (u32::from_be_bytes(seq), frame[l4 + 13])
    });
    let id0 = if g.ipv4 {
        u16::from_be_bytes([frame[g.ip + 4], frame[g.ip + 5]])
    } else {
        0
    };
    let nseg = payload.len().div_ceil(g.mss).max(1);
    for i in 0..nseg {
        let start = i * g.mss;
        let end = (start + g.mss).min(payload.len());
        seg.clear();
        seg.extend_from_slice(&frame[..g.hdr]);
        seg.extend_from_slice(&payload[start..end]);
        g.rewrite_ip(seg, id0.wrapping_add(i as u16))?;
        let l4 = g.l4;
        if let Some((seq0, flags0)) = tcp {
            let seq = seq0.wrapping_add(start as u32);
            seg[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            seg[l4 + 13] = tcp_segment_flags(flags0, i == 0, i + 1 == nseg);
        } else {
            // Fits: no longer than the IP length checked in `Geometry::of`.
            let udp_len = (seg.len() - l4) as u16;
            put16(seg, l4 + 4, udp_len);
        }
        if tso.seeded {
            let l4len = seg.len() - l4;
            l4_csum_seeded(seg, l4, tso.proto, Some(l4len))?;
        } else {
            l4_csum(seg, g.ip, l4, g.ipv4, tso.proto)?;
        }
        out(seg);
    }
    Ok(nseg)
}

/// FIN and PSH stay only on the last segment, CWR only on the first.
fn tcp_segment_flags(flags: u8, first: bool, last: bool) -> u8 {
    let mut fl = flags;
    if !last {
        fl &= !(0x01 | 0x08); // FIN, PSH
    }
    if !first {
        fl &= !0x80; // CWR
    }
    fl
}

/// Header offsets of a segmentation frame, checked against the frame.
struct Geometry {
    ip: usize,
    l4: usize,
    hdr: usize,
    mss: usize,
    ipv4: bool,
}

impl Geometry {
    /// Offsets from the request; the headers must fit the frame, the L4
    /// header be at least `min_l4` bytes, and the longest segment fit the IP
    /// length field.
    fn of(frame: &[u8], tso: &Tso, min_l4: usize) -> Result<Self, OffloadError> {
        let ip = usize::from(tso.mac_len);
        let l4 = tso.l4();
        let hdr = tso.hdr_len();
        let mss = usize::from(tso.mss);
        if frame.len() < hdr || hdr < l4 + min_l4 {
            return Err(OffloadError::Truncated(hdr));
        }
        let ipv4 = frame[ip] >> 4 == 4;
        // IPv4 total length / IPv6 payload length of the longest segment.
        let ip_fixed = if ipv4 { 0 } else { 40 };
        if l4 < ip + if ipv4 { 20 } else { 40 } {
            return Err(OffloadError::Truncated(ip + 40));
        }
        let longest = hdr - ip - ip_fixed + mss.min(frame.len() - hdr);
        if longest > usize::from(u16::MAX) {
            return Err(OffloadError::BadTso);
        }
        Ok(Geometry {
            ip,
            l4,
            hdr,
            mss,
            ipv4,
        })
    }

    /// Rewrites a segment's IPv4 total length, identification and header
    /// checksum, or its IPv6 payload length.
    fn rewrite_ip(&self, seg: &mut [u8], id: u16) -> Result<(), OffloadError> {
        // Fits: checked against the longest segment in `of`.
        let len = seg.len() - self.ip;
        if self.ipv4 {
            put16(seg, self.ip + 2, len as u16);
            put16(seg, self.ip + 4, id);
            ipv4_header_csum(seg, self.ip)
        } else {
            put16(seg, self.ip + 4, (len - 40) as u16);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csum::{csum_add, csum_fold, verify_rx};
    use crate::frame::testframes::tcp4;

    fn tcp4_tso(mss: u16) -> Tso {
        Tso {
            mac_len: 14,
            ip_len: 20,
            l4_len: 20,
            mss,
            proto: IPPROTO_TCP,
            seeded: false,
        }
    }

    #[test]
    fn segments_carry_sequence_ids_flags_and_valid_checksums() {
        let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let f = tcp4(&payload);
        let mut seg = Vec::new();
        let mut got = Vec::new();
        let n = segment(&f, &tcp4_tso(1448), &mut seg, |s| got.push(s.to_vec())).unwrap();
        assert_eq!(n, 3);
        let mut joined = Vec::new();
        for (i, s) in got.iter().enumerate() {
            let r = verify_rx(s);
            assert!(r.ip_ok && r.l4_checked && r.l4_ok, "segment {i}");
            let seq = u32::from_be_bytes(s[38..42].try_into().unwrap());
            assert_eq!(seq, 1000 + 1448 * i as u32);
            assert_eq!(s[47] & 0x01 != 0, i == 2, "FIN only on the last");
            assert_eq!(u16::from_be_bytes([s[18], s[19]]), 0x1000 + i as u16);
            joined.extend_from_slice(&s[54..]);
        }
        assert_eq!(joined, payload);
        assert_eq!(got[0].len(), 54 + 1448);
        assert_eq!(got[2].len(), 54 + 3000 - 2 * 1448);
    }

    /// The Intel parts complete the seed the driver left (`ixgbe_tso`: the
    /// pseudo header without length) and never read the IP header for it:
    /// right for a plain frame, and for one whose TCP header lies behind
    /// headers the IP header at `mac_len` does not describe (a tunnel's
    /// inner TCP under GSO_PARTIAL).
    #[test]
    fn seeded_segments_complete_the_drivers_pseudo_header_sum() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 3) as u8).collect();
        let mut f = tcp4(&payload);
        let seed = crate::csum::pseudo_seed(&f, 14, true, IPPROTO_TCP, None);
        f[50..52].copy_from_slice(&seed.to_be_bytes());
        let t = Tso {
            seeded: true,
            ..tcp4_tso(1448)
        };
        let mut seg = Vec::new();
        let mut n = 0;
        segment(&f, &t, &mut seg, |s| {
            let r = verify_rx(s);
            assert!(r.ip_ok && r.l4_checked && r.l4_ok, "segment {n}");
            n += 1;
        })
        .unwrap();
        assert_eq!(n, 3);
        // The seed of other addresses (an inner header's) is what counts,
        // not the IP header in front.
        let mut other = [0u8; 20];
        other[0] = 0x45;
        other[12..20].copy_from_slice(&[198, 51, 100, 1, 198, 51, 100, 2]);
        let inner = crate::csum::pseudo_seed(&other, 0, true, IPPROTO_TCP, None);
        f[50..52].copy_from_slice(&inner.to_be_bytes());
        segment(&f, &t, &mut seg, |s| {
            assert!(!verify_rx(s).l4_ok, "checksummed for the seed's addresses");
            let len = s.len() - 34;
            let ph = crate::csum::pseudo_seed(&other, 0, true, IPPROTO_TCP, Some(len));
            assert_eq!(csum_fold(csum_add(u32::from(ph), &s[34..])), 0);
        })
        .unwrap();
    }

    #[test]
    fn segments_can_be_taken_by_swapping_buffers() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let f = tcp4(&payload);
        let mut seg = Vec::new();
        let mut copied = Vec::new();
        segment(&f, &tcp4_tso(1000), &mut seg, |s| copied.push(s.to_vec())).unwrap();
        let mut taken: Vec<Vec<u8>> = Vec::new();
        segment(&f, &tcp4_tso(1000), &mut seg, |s| {
            let mut mine = Vec::with_capacity(16);
            std::mem::swap(&mut mine, s);
            taken.push(mine);
        })
        .unwrap();
        assert_eq!(taken, copied, "each segment whole in its own buffer");
    }

    #[test]
    fn requests_that_do_not_fit_the_frame_are_errors() {
        let f = tcp4(b"x");
        let mut seg = Vec::new();
        assert_eq!(
            segment(&f, &tcp4_tso(0), &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
        let mut t = tcp4_tso(100);
        t.mac_len = 127;
        segment(&f, &t, &mut seg, |_| {}).unwrap_err();
        // An IPv6-typed frame whose request claims IP length 0: the payload
        // length arithmetic must not underflow (overflow checks are on in
        // tests and fuzzing).
        let mut v6 = tcp4(&[0u8; 30]);
        v6[14] = 0x60;
        let mut t = tcp4_tso(10);
        t.ip_len = 0;
        segment(&v6, &t, &mut seg, |_| {}).unwrap_err();
    }

    #[test]
    fn tiny_mss_is_refused_before_any_segment_is_built() {
        let f = tcp4(&vec![0u8; 64 * 1024]);
        let mut n = 0usize;
        let mut seg = Vec::new();
        for mss in [1u16, 8, MIN_TSO_MSS - 1] {
            assert_eq!(
                segment(&f, &tcp4_tso(mss), &mut seg, |_| n += 1),
                Err(OffloadError::BadTso),
                "MSS {mss}"
            );
        }
        assert_eq!(n, 0, "no segment left for a refused MSS");
        let ok = segment(&f, &tcp4_tso(MIN_TSO_MSS), &mut seg, |_| n += 1).unwrap();
        assert_eq!(ok, (64 * 1024usize).div_ceil(usize::from(MIN_TSO_MSS)));
    }

    #[test]
    fn a_segment_longer_than_ipv4_can_describe_is_refused() {
        let f = tcp4(&vec![0u8; 70_000]);
        let mut seg = Vec::new();
        assert_eq!(
            segment(&f, &tcp4_tso(u16::MAX), &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
    }

    #[test]
    fn header_lengths_come_from_the_frame() {
        let f = tcp4(&[0u8; 4000]);
        assert_eq!(Tso::for_frame(&f, 1448), Ok((tcp4_tso(1448), true)));
        assert_eq!(Tso::for_frame(&f, 0), Err(OffloadError::BadTso));
        Tso::for_frame(&f[..40], 1448).unwrap_err();
        let mut udp = f.clone();
        udp[23] = 17;
        assert_eq!(Tso::for_frame(&udp, 1448), Err(OffloadError::BadTso));
        let mut long_doff = f[..60].to_vec();
        long_doff[46] = 15 << 4;
        assert_eq!(
            Tso::for_frame(&long_doff, 1448),
            Err(OffloadError::Truncated(94))
        );
    }

    fn udp4(payload: &[u8]) -> Vec<u8> {
        let mut f = tcp4(&[]);
        f.truncate(42);
        f[23] = IPPROTO_UDP;
        f[34..36].copy_from_slice(&4000u16.to_be_bytes());
        f[36..38].copy_from_slice(&5000u16.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn udp_tso(mss: u16) -> Tso {
        Tso {
            l4_len: 8,
            proto: IPPROTO_UDP,
            ..tcp4_tso(mss)
        }
    }

    #[test]
    fn uso_splits_into_datagrams_with_their_own_length_and_checksum() {
        // uso.py's v4_partial: 10 full segments of 1400 bytes and one of 500.
        let payload: Vec<u8> = (0..14_500u32).map(|i| (i % 251) as u8).collect();
        let f = udp4(&payload);
        let mut seg = Vec::new();
        let mut got = Vec::new();
        let n = segment(&f, &udp_tso(1400), &mut seg, |s| got.push(s.to_vec())).unwrap();
        assert_eq!(n, 11);
        let mut joined = Vec::new();
        for (i, s) in got.iter().enumerate() {
            assert_eq!(
                csum_fold(csum_add(0, &s[14..34])),
                0,
                "IPv4 header checksum"
            );
            assert_eq!(u16::from_be_bytes([s[16], s[17]]) as usize, s.len() - 14);
            assert_eq!(u16::from_be_bytes([s[18], s[19]]), 0x1000 + i as u16);
            let udp_len = u16::from_be_bytes([s[38], s[39]]) as usize;
            assert_eq!(udp_len, s.len() - 34);
            let mut sum = csum_add(0, &s[26..34]);
            sum += u32::from(IPPROTO_UDP) + udp_len as u32;
            assert_eq!(csum_fold(csum_add(sum, &s[34..])), 0, "UDP checksum");
            assert_eq!(&s[34..38], &f[34..38], "ports replicated");
            joined.extend_from_slice(&s[42..]);
        }
        assert_eq!(joined, payload);
        assert_eq!(got[10].len(), 42 + 500);
        // Neither TCP nor UDP: nothing to segment.
        let other = Tso {
            proto: 132,
            ..udp_tso(1400)
        };
        assert_eq!(
            segment(&f, &other, &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
    }

    #[test]
    fn uso_over_ipv6_rewrites_the_payload_length() {
        let mut f = vec![0u8; 14 + 40 + 8];
        f[12] = 0x86;
        f[13] = 0xdd;
        f[14] = 0x60;
        f[20] = IPPROTO_UDP;
        f[22..54]
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        f.extend_from_slice(&[7u8; 7000]);
        let t = Tso {
            ip_len: 40,
            ..udp_tso(1400)
        };
        let mut seg = Vec::new();
        let mut lens = Vec::new();
        let n = segment(&f, &t, &mut seg, |s| {
            let plen = u16::from_be_bytes([s[18], s[19]]) as usize;
            assert_eq!(plen, s.len() - 54);
            assert_eq!(u16::from_be_bytes([s[58], s[59]]) as usize, plen);
            let mut sum = csum_add(0, &s[22..54]);
            sum += u32::from(IPPROTO_UDP) + plen as u32;
            assert_eq!(csum_fold(csum_add(sum, &s[54..])), 0, "UDP checksum");
            lens.push(s.len());
        })
        .unwrap();
        assert_eq!(n, 5, "uso.py's v6_exact: 5 × 1400");
        assert!(lens.iter().all(|&l| l == 62 + 1400), "{lens:?}");
    }

    #[test]
    fn a_udp_request_shorter_than_the_udp_header_is_refused() {
        let f = udp4(&[0u8; 3000]);
        let mut t = udp_tso(1400);
        t.l4_len = 7;
        let mut seg = Vec::new();
        assert_eq!(segment(&f, &t, &mut seg, |_| {}), Err(OffloadError::BadTso));
        t = udp_tso(MIN_TSO_MSS - 1);
        assert_eq!(segment(&f, &t, &mut seg, |_| {}), Err(OffloadError::BadTso));
    }
}
