// SPDX-License-Identifier: Apache-2.0
//! Where the headers of an Ethernet frame are: one 802.1Q / 802.1ad tag
//! skipped, IPv4 (with options) or IPv6 (the fixed header; extension headers
//! are not walked by [`parse`]), the L4 header unless the packet is a
//! fragment; and, for GRO, the upper-layer header behind an IPv6 packet's
//! hop-by-hop, routing and destination options headers ([`ipv6_upper_layer`]).

/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Ethertype of IPv4.
pub const ETH_P_IP: u16 = 0x0800;
/// Ethertype of IPv6.
pub const ETH_P_IPV6: u16 = 0x86dd;
/// Ethertype of an 802.1Q VLAN tag.
pub const ETH_P_8021Q: u16 = 0x8100;
/// Ethertype of an 802.1ad service tag.
pub const ETH_P_8021AD: u16 = 0x88a8;

/// IPv6 next header values of the extension headers [`ipv6_upper_layer`]
/// walks (RFC 8200 §4): hop-by-hop options, routing, destination options.
pub const NEXTHDR_HOP: u8 = 0;
/// Routing header.
pub const NEXTHDR_ROUTING: u8 = 43;
/// Destination options header.
pub const NEXTHDR_DEST: u8 = 60;
/// Most extension headers [`ipv6_upper_layer`] walks: hop-by-hop,
/// destination options, routing, destination options (the chain of RFC 8200
/// §4.1 without fragment, AH and ESP).
pub const MAX_IPV6_EXT_HDRS: usize = 4;
/// Most bytes of extension headers [`ipv6_upper_layer`] walks.
pub const MAX_IPV6_EXT_LEN: usize = 256;

/// Where the L3/L4 headers of a frame are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// Offset of the IP header.
    pub l3: usize,
    /// IPv4 (else IPv6).
    pub ipv4: bool,
    /// L4 protocol (6 TCP, 17 UDP, other).
    pub proto: u8,
    /// Offset of the L4 header, if the packet is not a fragment.
    pub l4: Option<usize>,
}

/// Finds the IP and L4 headers of an Ethernet frame (skipping one VLAN tag);
/// `None` for other ethertypes and truncated or malformed IP headers.
#[inline]
pub fn parse(f: &[u8]) -> Option<Parsed> {
    let mut off = 12;
    let mut et = be16_at(f, off)?;
    if et == ETH_P_8021Q || et == ETH_P_8021AD {
        off += 4;
        et = be16_at(f, off)?;
    }
    let l3 = off + 2;
    match et {
        ETH_P_IP => {
            let vihl = *f.get(l3)?;
            let ihl = usize::from(vihl & 0xf) * 4;
            if vihl >> 4 != 4 || ihl < 20 || f.len() < l3 + ihl {
                return None;
            }
            let frag = u16::from_be_bytes([f[l3 + 6], f[l3 + 7]]) & 0x3fff;
            Some(Parsed {
                l3,
                ipv4: true,
                proto: f[l3 + 9],
                l4: (frag == 0).then_some(l3 + ihl),
            })
        }
        ETH_P_IPV6 => {
            if f.len() < l3 + 40 || f[l3] >> 4 != 6 {
                return None;
            }
            Some(Parsed {
                l3,
                ipv4: false,
                proto: f[l3 + 6],
                l4: Some(l3 + 40),
            })
        }
        _ => None,
    }
}

/// The upper-layer protocol of the IPv6 packet whose header is at `l3`
/// and its offset, behind the extension headers Linux's GRO walks
/// (`ipv6_gro_receive`: hop-by-hop options, first only, routing and
/// destination options — each 8 bytes times its length field plus one,
/// RFC 8200 §4.3-4.6); any other next header ends the walk and is the
/// result (TCP, UDP, but also a fragment header, AH or ESP, which GRO does
/// not look behind). `None` when a header does not lie within `end` (the
/// end of the IP payload by its length) and the frame, or the chain is
/// longer than [`MAX_IPV6_EXT_HDRS`] headers or [`MAX_IPV6_EXT_LEN`] bytes:
/// the frame is untrusted, the work bounded.
pub fn ipv6_upper_layer(f: &[u8], l3: usize, end: usize) -> Option<(u8, usize)> {
    let end = end.min(f.len());
    let first = l3.checked_add(40)?;
    let mut nh = *f.get(l3 + 6)?;
    let mut off = first;
    for i in 0..=MAX_IPV6_EXT_HDRS {
        let walked = match nh {
            NEXTHDR_HOP => i == 0,
            NEXTHDR_ROUTING | NEXTHDR_DEST => true,
            _ => false,
        };
        if !walked {
            return (off <= end).then_some((nh, off));
        }
        if i == MAX_IPV6_EXT_HDRS || off + 2 > end {
            return None;
        }
        nh = f[off];
        off += (usize::from(f[off + 1]) + 1) * 8;
        if off > end || off - first > MAX_IPV6_EXT_LEN {
            return None;
        }
    }
    None
}

/// The big-endian 16-bit value at `at`, if the frame holds it.
#[inline]
fn be16_at(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]))
}

/// Stores a big-endian 16-bit value at `off` (the caller checked the bounds).
pub(crate) fn put16(f: &mut [u8], off: usize, v: u16) {
    f[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Frames for the tests of this crate.
#[cfg(test)]
pub(crate) mod testframes {
    use super::*;

    /// A TCP/IPv4 frame: 14 MAC + 20 IP + 20 TCP + payload; checksums zero,
    /// IP id 0x1000, sequence number 1000, flags PSH|ACK|FIN.
    pub fn tcp4(payload: &[u8]) -> Vec<u8> {
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
        f[47] = 0x18 | 0x01;
        f.extend_from_slice(payload);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::testframes::tcp4;
    use super::*;

    #[test]
    fn headers_of_tagged_fragmented_and_truncated_frames() {
        let f = tcp4(b"x");
        let p = parse(&f).unwrap();
        assert_eq!(
            (p.l3, p.ipv4, p.proto, p.l4),
            (14, true, IPPROTO_TCP, Some(34))
        );
        let mut tagged = f[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&f[12..]);
        assert_eq!(parse(&tagged).unwrap().l4, Some(38), "one VLAN tag skipped");
        let mut frag = f.clone();
        frag[20] = 0x20;
        assert_eq!(
            parse(&frag).unwrap().l4,
            None,
            "a fragment has no L4 header"
        );
        assert_eq!(parse(&f[..30]), None);
        assert_eq!(parse(&[0u8; 13]), None);
        let mut bad_ihl = f.clone();
        bad_ihl[14] = 0x44;
        assert_eq!(parse(&bad_ihl), None);
    }

    /// An IPv6 packet (fixed header at 14) whose extension headers are
    /// `chain` (type, length field; 8 bytes each per length unit plus one,
    /// zeros) before 20 bytes of TCP header.
    fn v6(chain: &[(u8, u8)]) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
        f[14] = 0x60;
        f[20] = chain.first().map_or(IPPROTO_TCP, |c| c.0);
        for (i, &(_, len)) in chain.iter().enumerate() {
            let at = f.len();
            f.resize(at + (usize::from(len) + 1) * 8, 0);
            f[at] = chain.get(i + 1).map_or(IPPROTO_TCP, |c| c.0);
            f[at + 1] = len;
        }
        f.resize(f.len() + 20, 0);
        let payload = (f.len() - 54) as u16;
        put16(&mut f, 18, payload);
        f
    }

    fn upper(f: &[u8]) -> Option<(u8, usize)> {
        let end = 54 + usize::from(u16::from_be_bytes([f[18], f[19]]));
        ipv6_upper_layer(f, 14, end)
    }

    #[test]
    fn the_upper_layer_behind_ipv6_extension_headers() {
        assert_eq!(upper(&v6(&[])), Some((IPPROTO_TCP, 54)));
        assert_eq!(upper(&v6(&[(NEXTHDR_DEST, 0)])), Some((IPPROTO_TCP, 62)));
        let chain = [(NEXTHDR_HOP, 0), (NEXTHDR_DEST, 1), (NEXTHDR_ROUTING, 0)];
        assert_eq!(upper(&v6(&chain)), Some((IPPROTO_TCP, 54 + 32)));
        // A fragment header ends the walk: GRO does not look behind it.
        let frag = v6(&[(NEXTHDR_DEST, 0), (44, 0)]);
        assert_eq!(upper(&frag), Some((44, 62)));
        // Hop-by-hop only first.
        assert_eq!(
            upper(&v6(&[(NEXTHDR_DEST, 0), (NEXTHDR_HOP, 0)])),
            Some((0, 62))
        );
        // Bounded: four headers, 256 bytes.
        assert!(upper(&v6(&[(NEXTHDR_DEST, 0); 4])).is_some());
        assert_eq!(upper(&v6(&[(NEXTHDR_DEST, 0); 5])), None);
        assert_eq!(upper(&v6(&[(NEXTHDR_DEST, 31)])), Some((IPPROTO_TCP, 310)));
        assert_eq!(upper(&v6(&[(NEXTHDR_DEST, 32)])), None);
    }

    #[test]
    fn ipv6_extension_headers_past_the_payload_or_frame_are_none() {
        let f = v6(&[(NEXTHDR_DEST, 0), (NEXTHDR_ROUTING, 0)]);
        for cut in 0..f.len() {
            // The frame ends early, the payload length says the whole.
            let r = ipv6_upper_layer(&f[..cut], 14, f.len());
            assert!(r.is_none_or(|(_, l4)| l4 <= cut), "cut at {cut}");
            // The payload length ends early, the frame is whole.
            let r = ipv6_upper_layer(&f, 14, cut);
            assert!(r.is_none_or(|(_, l4)| l4 <= cut), "end at {cut}");
        }
        assert_eq!(ipv6_upper_layer(&f, 14, 62 + 7), None);
        assert_eq!(ipv6_upper_layer(&f, 14, 70), Some((IPPROTO_TCP, 70)));
        for len in 0..=255u8 {
            let mut g = f.clone();
            g[55] = len;
            let r = upper(&g);
            assert!(r.is_none_or(|(_, l4)| l4 <= g.len()), "length {len}");
        }
        assert_eq!(ipv6_upper_layer(&f, usize::MAX - 3, usize::MAX), None);
    }
}
