//! TCP segmentation (82576 §7.2.4, 82599 §7.2.4 TSO; virtio-net
//! `VIRTIO_NET_HDR_GSO_TCPV4/6`): one large TCP frame becomes MSS-sized
//! segments with replicated headers and their checksums.

use crate::csum::{ipv4_header_csum, l4_csum};
use crate::frame::{parse, put16, IPPROTO_TCP};
use crate::OffloadError;

/// Smallest MSS a segmentation request may carry. Neither Intel datasheet
/// (82576 §7.2.4, 82599 §7.2.4) states a minimum; this is the smallest MSS
/// Linux's TCP ever sends (`TCP_MIN_SND_MSS`, the floor of
/// `net.ipv4.tcp_min_snd_mss`), so no Linux driver's TSO is refused, while one
/// request can no longer ask for one segment per payload byte (a 256 KiB
/// payload is at most 5462 segments).
pub const MIN_TSO_MSS: u16 = 48;

/// Where a TCP frame's headers are and how large its segments may be: what a
/// TSO context descriptor or a virtio-net GSO header describes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tso {
    /// Length of the MAC header (the offset of the IP header).
    pub mac_len: u16,
    /// Length of the IP header.
    pub ip_len: u16,
    /// Length of the TCP header with its options.
    pub tcp_len: u8,
    /// Payload bytes per segment.
    pub mss: u16,
}

impl Tso {
    /// Offset of the TCP header.
    pub fn l4(&self) -> usize {
        usize::from(self.mac_len) + usize::from(self.ip_len)
    }

    /// Length of all headers (Ethernet to TCP options).
    pub fn hdr_len(&self) -> usize {
        self.l4() + usize::from(self.tcp_len)
    }

    /// The segmentation of a TCP frame whose header lengths are read from the
    /// frame itself (a request's own offsets are not trusted), with `mss`.
    /// Returns it with whether the frame is IPv4.
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
            tcp_len: doff as u8,
            mss,
        };
        Ok((tso, p.ipv4))
    }
}

/// Splits a TSO frame into MSS-sized TCP segments (82576 §7.2.4.3): headers
/// are replicated, IPv4 total length / identification / header checksum or the
/// IPv6 payload length are rewritten, the TCP sequence number advances, FIN and
/// PSH stay only on the last segment, CWR only on the first, and every
/// segment's checksums are computed. Each finished segment is passed to `out`
/// (built in `seg`, which is reused). Returns the number of segments.
pub fn segment_tcp(
    frame: &[u8],
    tso: &Tso,
    seg: &mut Vec<u8>,
    mut out: impl FnMut(&[u8]),
) -> Result<usize, OffloadError> {
    let ip = usize::from(tso.mac_len);
    let l4 = tso.l4();
    let hdr = tso.hdr_len();
    let mss = usize::from(tso.mss);
    if tso.mss < MIN_TSO_MSS || tso.tcp_len < 20 {
        return Err(OffloadError::BadTso);
    }
    if frame.len() < hdr || hdr < l4 + 20 {
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
    let payload = &frame[hdr..];
    let seq0 = u32::from_be_bytes([frame[l4 + 4], frame[l4 + 5], frame[l4 + 6], frame[l4 + 7]]);
    let flags0 = frame[l4 + 13];
    let id0 = if ipv4 && frame.len() >= ip + 6 {
        u16::from_be_bytes([frame[ip + 4], frame[ip + 5]])
    } else {
        0
    };
    let nseg = payload.len().div_ceil(mss).max(1);
    for i in 0..nseg {
        let start = i * mss;
        let end = (start + mss).min(payload.len());
        seg.clear();
        seg.extend_from_slice(&frame[..hdr]);
        seg.extend_from_slice(&payload[start..end]);
        let last = i + 1 == nseg;
        // Fits: checked against the longest segment above.
        let ip_len = (seg.len() - ip - ip_fixed) as u16;
        if ipv4 {
            put16(seg, ip + 2, ip_len);
            put16(seg, ip + 4, id0.wrapping_add(i as u16));
            ipv4_header_csum(seg, ip)?;
        } else {
            put16(seg, ip + 4, ip_len);
        }
        let seq = seq0.wrapping_add(start as u32);
        seg[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        let mut fl = flags0;
        if !last {
            fl &= !(0x01 | 0x08); // FIN, PSH
        }
        if i != 0 {
            fl &= !0x80; // CWR
        }
        seg[l4 + 13] = fl;
        l4_csum(seg, ip, l4, ipv4, IPPROTO_TCP)?;
        out(seg);
    }
    Ok(nseg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csum::verify_rx;
    use crate::frame::testframes::tcp4;

    fn tcp4_tso(mss: u16) -> Tso {
        Tso {
            mac_len: 14,
            ip_len: 20,
            tcp_len: 20,
            mss,
        }
    }

    #[test]
    fn segments_carry_sequence_ids_flags_and_valid_checksums() {
        let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let f = tcp4(&payload);
        let mut seg = Vec::new();
        let mut got = Vec::new();
        let n = segment_tcp(&f, &tcp4_tso(1448), &mut seg, |s| got.push(s.to_vec())).unwrap();
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

    #[test]
    fn requests_that_do_not_fit_the_frame_are_errors() {
        let f = tcp4(b"x");
        let mut seg = Vec::new();
        assert_eq!(
            segment_tcp(&f, &tcp4_tso(0), &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
        let mut t = tcp4_tso(100);
        t.mac_len = 127;
        assert!(segment_tcp(&f, &t, &mut seg, |_| {}).is_err());
        // An IPv6-typed frame whose request claims IP length 0: the payload
        // length arithmetic must not underflow (overflow checks are on in
        // tests and fuzzing).
        let mut v6 = tcp4(&[0u8; 30]);
        v6[14] = 0x60;
        let mut t = tcp4_tso(10);
        t.ip_len = 0;
        assert!(segment_tcp(&v6, &t, &mut seg, |_| {}).is_err());
    }

    #[test]
    fn tiny_mss_is_refused_before_any_segment_is_built() {
        let f = tcp4(&vec![0u8; 64 * 1024]);
        let mut n = 0usize;
        let mut seg = Vec::new();
        for mss in [1u16, 8, MIN_TSO_MSS - 1] {
            assert_eq!(
                segment_tcp(&f, &tcp4_tso(mss), &mut seg, |_| n += 1),
                Err(OffloadError::BadTso),
                "MSS {mss}"
            );
        }
        assert_eq!(n, 0, "no segment left for a refused MSS");
        let ok = segment_tcp(&f, &tcp4_tso(MIN_TSO_MSS), &mut seg, |_| n += 1).unwrap();
        assert_eq!(ok, (64 * 1024usize).div_ceil(usize::from(MIN_TSO_MSS)));
    }

    #[test]
    fn a_segment_longer_than_ipv4_can_describe_is_refused() {
        let f = tcp4(&vec![0u8; 70_000]);
        let mut seg = Vec::new();
        assert_eq!(
            segment_tcp(&f, &tcp4_tso(u16::MAX), &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
    }

    #[test]
    fn header_lengths_come_from_the_frame() {
        let f = tcp4(&[0u8; 4000]);
        assert_eq!(Tso::for_frame(&f, 1448), Ok((tcp4_tso(1448), true)));
        assert_eq!(Tso::for_frame(&f, 0), Err(OffloadError::BadTso));
        assert!(Tso::for_frame(&f[..40], 1448).is_err());
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
}
