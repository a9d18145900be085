// SPDX-License-Identifier: Apache-2.0
//! The Internet checksum (RFC 1071) over IPv4 headers and TCP/UDP segments
//! with their IPv4 or IPv6 pseudo header: computing it for a transmitted frame
//! (82576 §7.2.5, 82599 §7.2.5 checksum offload; virtio-net's
//! `VIRTIO_NET_HDR_F_NEEDS_CSUM`) and verifying it for a received one
//! (82576 §7.1.6, 82599 §7.1.11; virtio-net's `DATA_VALID`).

use crate::frame::{parse, put16, IPPROTO_TCP, IPPROTO_UDP};
use crate::OffloadError;

/// Adds `data` to a 32-bit one's-complement accumulator (RFC 1071: the sum
/// of the big-endian 16-bit words, an odd last byte padded with zero).
///
/// It sums 64-bit big-endian words with end-around carry and folds them,
/// which gives the same sum (RFC 1071 §2: 2^16 ≡ 1 modulo 2^16 − 1, so the
/// word size does not change it) at a fraction of the cost of 16-bit words:
/// the transmit checksum offloads and receive verification sum every byte of
/// every TCP/UDP frame. Like a 16-bit sum it is zero only when `sum` and
/// every byte are zero, so the results are bit for bit the 16-bit loop's.
pub fn csum_add(sum: u32, data: &[u8]) -> u32 {
    let mut acc = u64::from(sum);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        acc = add_end_around(acc, u64::from_be_bytes(b));
    }
    let mut rest = [0u8; 8];
    let tail = words.remainder();
    rest[..tail.len()].copy_from_slice(tail);
    acc = add_end_around(acc, u64::from_be_bytes(rest));
    let folded = (acc >> 32) + (acc & 0xffff_ffff);
    ((folded >> 32) + (folded & 0xffff_ffff)) as u32
}

/// One's-complement addition of 64-bit words: the carry out of the top bit
/// comes back in at the bottom.
fn add_end_around(acc: u64, word: u64) -> u64 {
    let (s, carry) = acc.overflowing_add(word);
    s + u64::from(carry)
}

/// Folds an accumulator to 16 bits and complements it.
pub fn csum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
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

/// The pseudo-header sum of the IPv4 (source and destination addresses) or
/// IPv6 (both addresses) header at `ip`, protocol and L4 length added.
fn pseudo_sum(f: &[u8], ip: usize, ipv4: bool, proto: u8, l4len: usize) -> u32 {
    let sum = if ipv4 {
        csum_add(0, &f[ip + 12..ip + 20])
    } else {
        csum_add(0, &f[ip + 8..ip + 40])
    };
    sum.wrapping_add(u32::from(proto))
        .wrapping_add((l4len as u32) & 0xffff)
        .wrapping_add((l4len as u32) >> 16)
}

/// The partial pseudo-header checksum a sender leaves in the TCP or UDP
/// checksum field for an offload to complete (the folded, uncomplemented
/// sum; Linux's `CHECKSUM_PARTIAL` seed, `tcp_v4_send_check`): of the IPv4
/// or IPv6 header at `ip` with `proto`, and `l4len` unless `None` (the TSO
/// seed the Intel parts expect, without the length).
pub fn pseudo_seed(f: &[u8], ip: usize, ipv4: bool, proto: u8, l4len: Option<usize>) -> u16 {
    !csum_fold(pseudo_sum(f, ip, ipv4, proto, l4len.unwrap_or(0)))
}

/// Computes and stores the TCP or UDP checksum of the L4 segment at `l4`
/// (extending to the end of the frame), with the pseudo header of the IPv4 or
/// IPv6 header at `ip`. Other protocols are left alone.
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
    let sum = pseudo_sum(f, ip, ipv4, proto, f.len() - l4);
    put16(f, csum_off, 0);
    let mut c = csum_fold(csum_add(sum, &f[l4..]));
    if proto == IPPROTO_UDP && c == 0 {
        c = 0xffff;
    }
    put16(f, csum_off, c);
    Ok(())
}

/// Completes the TCP or UDP checksum of the L4 segment at `l4` (to the end
/// of the frame) from the partial pseudo-header sum the sender left in its
/// checksum field, as the Intel parts do: they never read the IP header for
/// it (82598/82599 §7.2.4 "TCP Checksum should be set to the partial
/// pseudo-header checksum", without the length under TSO: `igb_tso` /
/// `ixgbe_tso` take it out with `csum_replace_by_diff`; for a plain checksum
/// offload the stack's `CHECKSUM_PARTIAL` seed includes it). `l4len` adds a
/// segment's L4 length (TSO); `None` adds nothing. So the L4 header may sit
/// behind any headers — a tunnel's inner TCP under `SKB_GSO_PARTIAL`, or an
/// ESP header — and still gets its own pseudo header. Other protocols are
/// left alone; a UDP result of 0 is sent as 0xffff.
pub fn l4_csum_seeded(
    f: &mut [u8],
    l4: usize,
    proto: u8,
    l4len: Option<usize>,
) -> Result<(), OffloadError> {
    let csum_off = match proto {
        IPPROTO_TCP => l4 + 16,
        IPPROTO_UDP => l4 + 6,
        _ => return Ok(()),
    };
    if f.len() < csum_off + 2 {
        return Err(OffloadError::Truncated(csum_off + 2));
    }
    let len = l4len.map_or(0, |n| (n as u32 & 0xffff) + (n as u32 >> 16));
    let mut c = csum_fold(csum_add(len, &f[l4..]));
    if proto == IPPROTO_UDP && c == 0 {
        c = 0xffff;
    }
    put16(f, csum_off, c);
    Ok(())
}

/// Completes a partial checksum (Linux `CHECKSUM_PARTIAL`, virtio-net
/// `NEEDS_CSUM`): the one's-complement sum from `start` to the end of the
/// frame, which covers the pseudo-header sum the sender left in the field, is
/// stored at `start + offset` (0 sent as 0xffff).
pub fn complete_partial(frame: &mut [u8], start: usize, offset: usize) -> Result<(), OffloadError> {
    let at = start.saturating_add(offset);
    if start >= frame.len() || at.saturating_add(2) > frame.len() {
        return Err(OffloadError::Truncated(at.saturating_add(2)));
    }
    let mut c = csum_fold(csum_add(0, &frame[start..]));
    if c == 0 {
        c = 0xffff;
    }
    put16(frame, at, c);
    Ok(())
}

/// Result of receive checksum verification.
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

/// Verifies the IPv4 header and TCP/UDP checksums of a received frame, as a
/// receive checksum offload does. Fragments and other protocols are not
/// checked; a UDP checksum of 0 over IPv4 means "none" and is not checked.
pub fn verify_rx(f: &[u8]) -> RxCsum {
    let mut r = RxCsum::default();
    let Some(p) = parse(f) else {
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
    r.l4_checked = true;
    r.l4_proto = p.proto;
    r.l4_ok = l4_csum_ok(f, p.l3, p.ipv4, p.proto, l4..l3_end);
    r
}

/// Whether the TCP or UDP segment `f[seg]` sums to zero with the pseudo
/// header of the IPv4 or IPv6 header at `ip` (its length the segment's:
/// RFC 8200 §8.1, IPv6 extension headers between the two are not part of
/// it). `false` when the frame does not hold both headers and the segment.
pub fn l4_csum_ok(f: &[u8], ip: usize, ipv4: bool, proto: u8, seg: std::ops::Range<usize>) -> bool {
    let need = ip + if ipv4 { 20 } else { 40 };
    if f.len() < need || seg.start < need || seg.start > seg.end || seg.end > f.len() {
        return false;
    }
    let sum = pseudo_sum(f, ip, ipv4, proto, seg.len());
    csum_fold(csum_add(sum, &f[seg])) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::testframes::tcp4;

    /// RFC 1071's sum as written: 16-bit big-endian words, an odd last byte
    /// padded, each carry folded back at once (the seed's first).
    fn sum16(seed: u32, data: &[u8]) -> u16 {
        let mut sum = seed;
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        for w in data.chunks(2) {
            let word = u32::from(w[0]) << 8 | u32::from(w.get(1).copied().unwrap_or(0));
            sum = sum.wrapping_add(word);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
        }
        sum as u16
    }

    #[test]
    fn the_wide_sum_is_rfc_1071s_sum_bit_for_bit() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let random: Vec<u8> = (0..2100).map(|_| next() as u8).collect();
        let inputs = [random, vec![0; 2100], vec![0xff; 2100]];
        for data in &inputs {
            for len in (0..80).chain([1447, 1448, 1449, 2048, 2100]) {
                for start in 0..3 {
                    let d = &data[start..start + len.min(data.len() - start)];
                    let seeds = [0, 1, 0xffff, 0x1_0000, 0xffff_0000, 0xffff_ffff];
                    for seed in seeds.into_iter().chain([next() as u32]) {
                        let wide = csum_add(seed, d);
                        let reference = sum16(seed, d);
                        // Same value, and zero exactly when the reference is:
                        // complete_partial and the UDP rule depend on it.
                        assert_eq!(!csum_fold(wide), reference, "len {len} seed {seed:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn computed_checksums_verify_and_corruption_is_seen() {
        let mut f = tcp4(b"payload!");
        ipv4_header_csum(&mut f, 14).unwrap();
        l4_csum(&mut f, 14, 34, true, IPPROTO_TCP).unwrap();
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
    fn short_frames_are_errors() {
        let mut short = [0u8; 20];
        assert!(ipv4_header_csum(&mut short, 20).is_err());
        assert!(l4_csum(&mut short, 14, 34, true, IPPROTO_TCP).is_err());
        assert_eq!(l4_csum(&mut short, 14, 34, true, 1), Ok(()), "not TCP/UDP");
    }

    #[test]
    fn a_partial_checksum_is_completed_within_bounds() {
        let mut f = tcp4(&[7u8; 100]);
        ipv4_header_csum(&mut f, 14).unwrap();
        // The sender leaves the pseudo-header sum in the field.
        let pseudo = pseudo_sum(&f, 14, true, IPPROTO_TCP, f.len() - 34);
        let p = !csum_fold(pseudo);
        f[50..52].copy_from_slice(&p.to_be_bytes());
        complete_partial(&mut f, 34, 16).unwrap();
        assert!(verify_rx(&f).l4_ok);
        assert!(complete_partial(&mut f, 60000, 16).is_err());
        assert!(complete_partial(&mut f, 34, 60000).is_err());
        assert!(complete_partial(&mut f, usize::MAX / 2, usize::MAX / 2).is_err());
    }
}
