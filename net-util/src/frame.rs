// SPDX-License-Identifier: Apache-2.0
//! Where the headers of an Ethernet frame are: one 802.1Q / 802.1ad tag
//! skipped, IPv4 (with options) or IPv6 (the fixed header; extension headers
//! are not walked), the L4 header unless the packet is a fragment.

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
}
