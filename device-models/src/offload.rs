//! Transmit offloads shared by igb and ixgbe: IPv4 header checksum, TCP/UDP
//! checksum over IPv4 and IPv6 (82576 §7.2.5, 82599 §7.2.5) and TCP
//! segmentation (82576 §7.2.4, 82599 §7.2.4), driven by the offload context a
//! driver programs with an advanced context descriptor.
//!
//! All header accesses are bounds-checked against the frame: a context that
//! does not fit the frame makes the frame malformed, never a panic.

use crate::desc::TxContext;

/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Smallest MSS a TSO context may carry. Neither datasheet (82576 §7.2.4,
/// 82599 §7.2.4) states a minimum; this is the smallest MSS Linux's TCP ever
/// sends (`TCP_MIN_SND_MSS`, the floor of `net.ipv4.tcp_min_snd_mss`), so no
/// Linux driver's TSO is refused, while one descriptor can no longer ask
/// for one segment per payload byte (a 256 KiB payload is at most 5462
/// segments).
pub const MIN_TSO_MSS: u16 = 48;

/// Why an offload could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// Header lengths in the context exceed the frame.
    #[error("offload headers ({0} bytes) exceed the frame")]
    Truncated(usize),
    /// TSO with an MSS below [`MIN_TSO_MSS`], segments longer than the IP
    /// length field can describe, or headers that do not describe TCP or UDP.
    #[error("bad segmentation context")]
    BadTso,
}

/// Adds `data` to a 32-bit one's-complement accumulator.
pub fn csum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
        if sum > 0xffff_0000 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [b] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*b) << 8);
    }
    sum
}

/// Folds an accumulator to 16 bits and complements it.
pub fn csum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn put16(f: &mut [u8], off: usize, v: u16) {
    f[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Recomputes the IPv4 header checksum of the header at `ip` (length from IHL).
pub fn ipv4_header_csum(f: &mut [u8], ip: usize) -> Result<(), OffloadError> {
    let ihl = usize::from(*f.get(ip).ok_or(OffloadError::Truncated(ip + 1))? & 0xf) * 4;
    if ihl < 20 || f.len() < ip + ihl {
        return Err(OffloadError::Truncated(ip + ihl.max(20)));
    }
    put16(f, ip + 10, 0);
    let c = csum_fold(csum_add(0, &f[ip..ip + ihl]));
    put16(f, ip + 10, c);
    Ok(())
}

/// Computes and stores the TCP or UDP checksum of the L4 segment at `l4`
/// (extending to the end of the frame), with the pseudo header of the IPv4 or
/// IPv6 header at `ip`.
pub fn l4_csum(
    f: &mut [u8],
    ip: usize,
    l4: usize,
    ipv4: bool,
    proto: u8,
) -> Result<(), OffloadError> {
    let csum_off = match proto {
        IPPROTO_TCP => l4 + 16,
        IPPROTO_UDP => l4 + 6,
        _ => return Ok(()),
    };
    let need = if ipv4 { ip + 20 } else { ip + 40 };
    if f.len() < need.max(csum_off + 2) || l4 < need {
        return Err(OffloadError::Truncated(need.max(csum_off + 2)));
    }
    let l4len = f.len() - l4;
    let mut sum = if ipv4 {
        csum_add(0, &f[ip + 12..ip + 20])
    } else {
        csum_add(0, &f[ip + 8..ip + 40])
    };
    sum = sum.wrapping_add(u32::from(proto));
    sum = sum
        .wrapping_add((l4len as u32) & 0xffff)
        .wrapping_add((l4len as u32) >> 16);
    put16(f, csum_off, 0);
    sum = csum_add(sum, &f[l4..]);
    let mut c = csum_fold(sum);
    if proto == IPPROTO_UDP && c == 0 {
        c = 0xffff;
    }
    put16(f, csum_off, c);
    Ok(())
}

/// L4 protocol named by a context's TUCMD.L4T.
pub fn ctx_proto(ctx: &TxContext) -> u8 {
    match ctx.l4t() {
        1 => IPPROTO_TCP,
        0 => IPPROTO_UDP,
        _ => 0,
    }
}

/// Applies the checksum offloads requested by a data descriptor's POPTS
/// (IXSM = IPv4 header, TXSM = L4) to a whole frame.
pub fn apply_checksums(
    f: &mut [u8],
    ctx: &TxContext,
    ixsm: bool,
    txsm: bool,
) -> Result<(), OffloadError> {
    let ip = usize::from(ctx.maclen);
    let l4 = ip + usize::from(ctx.iplen);
    if f.len() < l4 {
        return Err(OffloadError::Truncated(l4));
    }
    // The IP version comes from the header itself: drivers set TUCMD.IPV4 for
    // TSO but not always for plain checksum offload (igb_tx_csum).
    let ipv4 = f.get(ip).ok_or(OffloadError::Truncated(ip + 1))? >> 4 == 4;
    if ixsm && ipv4 {
        ipv4_header_csum(f, ip)?;
    }
    if txsm {
        l4_csum(f, ip, l4, ipv4, ctx_proto(ctx))?;
    }
    Ok(())
}

/// Splits a TSO frame into MSS-sized TCP segments (82576 §7.2.4.3): headers
/// are replicated, IPv4 total length / identification / header checksum or the
/// IPv6 payload length are rewritten, the TCP sequence number advances, FIN and
/// PSH stay only on the last segment, CWR only on the first, and every
/// segment's checksums are computed. Each finished segment is passed to `out`
/// (built in `seg`, which is reused). Returns the number of segments.
pub fn segment_tcp(
    frame: &[u8],
    ctx: &TxContext,
    seg: &mut Vec<u8>,
    out: impl FnMut(&[u8]),
) -> Result<usize, OffloadError> {
    if ctx_proto(ctx) != IPPROTO_TCP {
        return Err(OffloadError::BadTso);
    }
    segment(frame, ctx, seg, out)
}

/// Splits a segmentation frame by the context's L4 type (TUCMD.L4T): TCP as
/// [`segment_tcp`] does, UDP into datagrams of MSS payload bytes each, every
/// one with the replicated headers, its own UDP length and checksum and the IP
/// fields rewritten as for TCP (82576 §7.2.4 and 82599 §7.2.4 segment TCP and
/// UDP; `igb_tso` / `ixgbe_tso` program L4T UDP with L4LEN 8 for
/// `SKB_GSO_UDP_L4`). Returns the number of segments.
pub fn segment(
    frame: &[u8],
    ctx: &TxContext,
    seg: &mut Vec<u8>,
    mut out: impl FnMut(&[u8]),
) -> Result<usize, OffloadError> {
    let proto = ctx_proto(ctx);
    let min_l4 = match proto {
        IPPROTO_TCP => 20,
        IPPROTO_UDP => 8,
        _ => return Err(OffloadError::BadTso),
    };
    if ctx.mss < MIN_TSO_MSS || usize::from(ctx.l4len) < min_l4 {
        return Err(OffloadError::BadTso);
    }
    let g = Geometry::of(frame, ctx, min_l4)?;
    let payload = &frame[g.hdr..];
    // TCP: the first segment's sequence number and flags (the header is at
    // least 20 bytes, checked above).
    let tcp = (proto == IPPROTO_TCP).then(|| {
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
        l4_csum(seg, g.ip, l4, g.ipv4, proto)?;
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
    /// Offsets from the context; the headers must fit the frame, the L4
    /// header be at least `min_l4` bytes, and the longest segment fit the IP
    /// length field.
    fn of(frame: &[u8], ctx: &TxContext, min_l4: usize) -> Result<Self, OffloadError> {
        let ip = usize::from(ctx.maclen);
        let l4 = ip + usize::from(ctx.iplen);
        let hdr = l4 + usize::from(ctx.l4len);
        let mss = usize::from(ctx.mss);
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

/// Result of receive checksum verification (82576 §7.1.6, 82599 §7.1.11).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxCsum {
    /// An IPv4 header checksum was checked.
    pub ip_checked: bool,
    /// It was correct.
    pub ip_ok: bool,
    /// A TCP or UDP checksum was checked (protocol in `l4_proto`).
    pub l4_checked: bool,
    /// It was correct.
    pub l4_ok: bool,
    /// 6 for TCP, 17 for UDP.
    pub l4_proto: u8,
}

/// Verifies the IPv4 header and TCP/UDP checksums of a received frame, as the
/// receive checksum offload does. Fragments and other protocols are not checked;
/// a UDP checksum of 0 over IPv4 means "none" and is not checked.
pub fn verify_rx(f: &[u8]) -> RxCsum {
    let mut r = RxCsum::default();
    let Some(p) = crate::rss::parse(f) else {
        return r;
    };
    if p.ipv4 {
        let ihl = usize::from(f[p.l3] & 0xf) * 4;
        r.ip_checked = true;
        r.ip_ok = csum_fold(csum_add(0, &f[p.l3..p.l3 + ihl])) == 0;
    }
    let Some(l4) = p.l4 else { return r };
    let l3_end = if p.ipv4 {
        p.l3 + usize::from(u16::from_be_bytes([f[p.l3 + 2], f[p.l3 + 3]]))
    } else {
        p.l3 + 40 + usize::from(u16::from_be_bytes([f[p.l3 + 4], f[p.l3 + 5]]))
    };
    if l3_end > f.len() || l3_end < l4 {
        return r;
    }
    let (min, csum_off) = match p.proto {
        IPPROTO_TCP => (20, 16),
        IPPROTO_UDP => (8, 6),
        _ => return r,
    };
    if l3_end - l4 < min {
        return r;
    }
    if p.proto == IPPROTO_UDP && p.ipv4 && f[l4 + csum_off] == 0 && f[l4 + csum_off + 1] == 0 {
        return r;
    }
    let seg = &f[l4..l3_end];
    let mut sum = if p.ipv4 {
        csum_add(0, &f[p.l3 + 12..p.l3 + 20])
    } else {
        csum_add(0, &f[p.l3 + 8..p.l3 + 40])
    };
    sum = sum
        .wrapping_add(u32::from(p.proto))
        .wrapping_add(seg.len() as u32);
    r.l4_checked = true;
    r.l4_proto = p.proto;
    r.l4_ok = csum_fold(csum_add(sum, seg)) == 0;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP/IPv4 frame: 14 MAC + 20 IP + 20 TCP + payload.
    fn tcp4(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12] = 0x08;
        f[14] = 0x45;
        put16(&mut f, 16, (40 + payload.len()) as u16);
        put16(&mut f, 18, 0x1000);
        f[22] = 64;
        f[23] = IPPROTO_TCP;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        put16(&mut f, 34, 1234);
        put16(&mut f, 36, 80);
        f[38..42].copy_from_slice(&1000u32.to_be_bytes());
        f[46] = 5 << 4;
        f[47] = 0x18 | 0x01; // PSH|ACK|FIN
        f.extend_from_slice(payload);
        f
    }

    fn ctx_tcp4(mss: u16) -> TxContext {
        TxContext {
            iplen: 20,
            maclen: 14,
            tucmd: 0x2 | 0x4,
            l4len: 20,
            mss,
            ..Default::default()
        }
    }

    fn verify_ipv4(f: &[u8]) {
        assert_eq!(
            csum_fold(csum_add(0, &f[14..34])),
            0,
            "IPv4 header checksum"
        );
        let l4len = f.len() - 34;
        let mut s = csum_add(0, &f[26..34]);
        s += u32::from(IPPROTO_TCP) + l4len as u32;
        assert_eq!(csum_fold(csum_add(s, &f[34..])), 0, "TCP checksum");
    }

    #[test]
    fn checksums_verify() {
        let mut f = tcp4(b"hello, world!");
        apply_checksums(&mut f, &ctx_tcp4(0), true, true).unwrap();
        verify_ipv4(&f);
        // igb_tx_csum does not set TUCMD.IPV4 for plain checksum offload.
        let mut g = tcp4(b"hello, world!");
        let mut c = ctx_tcp4(0);
        c.tucmd = 0x4;
        apply_checksums(&mut g, &c, true, true).unwrap();
        assert_eq!(f, g);
    }

    #[test]
    fn tso_segments() {
        let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let f = tcp4(&payload);
        let mut seg = Vec::new();
        let mut got = Vec::new();
        let n = segment_tcp(&f, &ctx_tcp4(1448), &mut seg, |s| got.push(s.to_vec())).unwrap();
        assert_eq!(n, 3);
        let mut joined = Vec::new();
        for (i, s) in got.iter().enumerate() {
            verify_ipv4(s);
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

    fn udp4(payload: &[u8]) -> Vec<u8> {
        let mut f = tcp4(&[]);
        f.truncate(42);
        f[23] = IPPROTO_UDP;
        f[34..36].copy_from_slice(&4000u16.to_be_bytes());
        f[36..38].copy_from_slice(&5000u16.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn ctx_udp(mss: u16) -> TxContext {
        TxContext {
            tucmd: 0x2, // IPV4, L4T UDP
            l4len: 8,
            ..ctx_tcp4(mss)
        }
    }

    #[test]
    fn uso_splits_into_datagrams_with_their_own_length_and_checksum() {
        // uso.py's v4_partial: 10 full segments of 1400 bytes and one of 500.
        let payload: Vec<u8> = (0..14_500u32).map(|i| (i % 251) as u8).collect();
        let f = udp4(&payload);
        let mut seg = Vec::new();
        let mut got = Vec::new();
        let n = segment(&f, &ctx_udp(1400), &mut seg, |s| got.push(s.to_vec())).unwrap();
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
        // A TCP-only caller refuses the UDP context.
        assert_eq!(
            segment_tcp(&f, &ctx_udp(1400), &mut seg, |_| {}),
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
        let ctx = TxContext {
            iplen: 40,
            tucmd: 0,
            ..ctx_udp(1400)
        };
        let mut seg = Vec::new();
        let mut lens = Vec::new();
        let n = segment(&f, &ctx, &mut seg, |s| {
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
    fn a_udp_context_shorter_than_the_udp_header_is_refused() {
        let f = udp4(&[0u8; 3000]);
        let mut c = ctx_udp(1400);
        c.l4len = 7;
        let mut seg = Vec::new();
        assert_eq!(segment(&f, &c, &mut seg, |_| {}), Err(OffloadError::BadTso));
        c = ctx_udp(MIN_TSO_MSS - 1);
        assert_eq!(segment(&f, &c, &mut seg, |_| {}), Err(OffloadError::BadTso));
    }

    #[test]
    fn rx_verification() {
        let mut f = tcp4(b"payload!");
        apply_checksums(&mut f, &ctx_tcp4(0), true, true).unwrap();
        let r = verify_rx(&f);
        assert!(r.ip_checked && r.ip_ok && r.l4_checked && r.l4_ok);
        assert_eq!(r.l4_proto, IPPROTO_TCP);
        f[60] ^= 1;
        let r = verify_rx(&f);
        assert!(r.ip_ok && r.l4_checked && !r.l4_ok);
        f[24] ^= 1;
        assert!(!verify_rx(&f).ip_ok);
        assert_eq!(verify_rx(&f[..30]), RxCsum::default());
        let mut long = tcp4(b"x");
        long[16] = 0xff; // total length beyond the frame
        assert!(!verify_rx(&long).l4_checked);
    }

    #[test]
    fn hostile_contexts_are_errors() {
        let f = tcp4(b"x");
        let mut seg = Vec::new();
        let mut c = ctx_tcp4(0);
        assert_eq!(
            segment_tcp(&f, &c, &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
        c.mss = 100;
        c.maclen = 127;
        assert!(segment_tcp(&f, &c, &mut seg, |_| {}).is_err());
        let mut short = vec![0u8; 20];
        assert!(apply_checksums(&mut short, &ctx_tcp4(0), true, true).is_err());
        // Found by cargo fuzz: MACLEN at the end of the frame, IPLEN 0.
        let mut c0 = ctx_tcp4(0);
        c0.maclen = 20;
        c0.iplen = 0;
        assert!(apply_checksums(&mut short, &c0, true, true).is_err());
        c = ctx_tcp4(0);
        c.iplen = 511;
        assert!(apply_checksums(&mut short, &c, true, true).is_err());
    }

    #[test]
    fn non_ipv4_tso_with_short_headers_is_an_error_not_an_underflow() {
        // An IPv6-typed frame whose context claims IPLEN 0: the payload
        // length arithmetic must not underflow (overflow checks are on in
        // tests and fuzzing).
        let mut f = tcp4(&[0u8; 30]);
        f[14] = 0x60;
        let mut c = ctx_tcp4(10);
        c.iplen = 0;
        let mut seg = Vec::new();
        assert!(segment_tcp(&f, &c, &mut seg, |_| {}).is_err());
    }

    #[test]
    fn tiny_mss_is_refused_before_any_segment_is_built() {
        let f = tcp4(&vec![0u8; 64 * 1024]);
        let mut n = 0usize;
        let mut seg = Vec::new();
        for mss in [1u16, 8, MIN_TSO_MSS - 1] {
            assert_eq!(
                segment_tcp(&f, &ctx_tcp4(mss), &mut seg, |_| n += 1),
                Err(OffloadError::BadTso),
                "MSS {mss}"
            );
        }
        assert_eq!(n, 0, "no segment left for a refused MSS");
        let ok = segment_tcp(&f, &ctx_tcp4(MIN_TSO_MSS), &mut seg, |_| n += 1).unwrap();
        assert_eq!(ok, (64 * 1024usize).div_ceil(usize::from(MIN_TSO_MSS)));
    }

    #[test]
    fn a_segment_longer_than_ipv4_can_describe_is_refused() {
        let f = tcp4(&vec![0u8; 70_000]);
        let mut seg = Vec::new();
        assert_eq!(
            segment_tcp(&f, &ctx_tcp4(u16::MAX), &mut seg, |_| {}),
            Err(OffloadError::BadTso)
        );
    }
}
