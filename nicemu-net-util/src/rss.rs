// SPDX-License-Identifier: Apache-2.0
//! Receive side scaling: the Toeplitz hash over the IPv4/IPv6 addresses and
//! TCP/UDP ports a frame carries, for the hash types a device enables
//! (Microsoft RSS specification; 82576 datasheet §7.1.2.8, 82599 §7.1.2.8).

use crate::frame::{parse, IPPROTO_TCP, IPPROTO_UDP};

/// The hash types a device enables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashTypes {
    /// TCP over IPv4.
    pub ipv4_tcp: bool,
    /// IPv4 addresses only.
    pub ipv4: bool,
    /// TCP over IPv6.
    pub ipv6_tcp: bool,
    /// IPv6 addresses only.
    pub ipv6: bool,
    /// UDP over IPv4.
    pub ipv4_udp: bool,
    /// UDP over IPv6.
    pub ipv6_udp: bool,
}

/// Which inputs a frame's hash was computed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashType {
    /// No hash computed.
    None,
    /// IPv4 addresses and TCP ports.
    Ipv4Tcp,
    /// IPv4 addresses.
    Ipv4,
    /// IPv6 addresses and TCP ports.
    Ipv6Tcp,
    /// IPv6 addresses.
    Ipv6,
    /// IPv4 addresses and UDP ports.
    Ipv4Udp,
    /// IPv6 addresses and UDP ports.
    Ipv6Udp,
}

/// Toeplitz hash of `input` with a key of at least `input.len() + 4` bytes
/// (missing key bytes count as 0; a key under 4 bytes hashes to 0).
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let mut result = 0u32;
    if key.len() < 4 {
        return 0;
    }
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    for (next, byte) in (4..).zip(input) {
        let kb = key.get(next).copied().unwrap_or(0);
        for bit in (0..8).rev() {
            if byte & (1 << bit) != 0 {
                result ^= window;
            }
            window = (window << 1) | u32::from((kb >> bit) & 1);
        }
    }
    result
}

/// Computes the RSS hash of a frame with the 40-byte key, over the inputs
/// the first enabled type that matches the frame names (with ports for
/// unfragmented TCP/UDP, else the addresses).
pub fn hash(key: &[u8; 40], types: HashTypes, f: &[u8]) -> (u32, HashType) {
    let Some(p) = parse(f) else {
        return (0, HashType::None);
    };
    let mut input = [0u8; 36];
    let (addr_len, addrs) = if p.ipv4 {
        (8, &f[p.l3 + 12..p.l3 + 20])
    } else {
        (32, &f[p.l3 + 8..p.l3 + 40])
    };
    input[..addr_len].copy_from_slice(addrs);
    let ports =
        p.l4.filter(|l4| f.len() >= l4 + 4)
            .map(|l4| [f[l4], f[l4 + 1], f[l4 + 2], f[l4 + 3]]);
    let (use_ports, ty) = match (p.ipv4, p.proto, ports.is_some()) {
        (true, IPPROTO_TCP, true) if types.ipv4_tcp => (true, HashType::Ipv4Tcp),
        (true, IPPROTO_UDP, true) if types.ipv4_udp => (true, HashType::Ipv4Udp),
        (false, IPPROTO_TCP, true) if types.ipv6_tcp => (true, HashType::Ipv6Tcp),
        (false, IPPROTO_UDP, true) if types.ipv6_udp => (true, HashType::Ipv6Udp),
        (true, ..) if types.ipv4 => (false, HashType::Ipv4),
        (false, ..) if types.ipv6 => (false, HashType::Ipv6),
        _ => return (0, HashType::None),
    };
    let mut n = addr_len;
    if use_ports {
        if let Some(pt) = ports {
            input[n..n + 4].copy_from_slice(&pt);
            n += 4;
        }
    }
    (toeplitz(key, &input[..n]), ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key and verification vectors of the Microsoft RSS specification
    /// ("Verifying the RSS Hash Calculation").
    const MS_KEY: [u8; 40] = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f,
        0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
        0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
    ];

    fn v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 6;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    #[test]
    fn microsoft_verification_vectors_ipv4() {
        let all = HashTypes {
            ipv4_tcp: true,
            ipv4: true,
            ..Default::default()
        };
        for (src, dst, sp, dp, tcp, ip) in [
            (
                [66, 9, 149, 187],
                [161, 142, 100, 80],
                2794,
                1766,
                0x51cc_c178u32,
                0x323e_8fc2u32,
            ),
            (
                [199, 92, 111, 2],
                [65, 69, 140, 83],
                14230,
                4739,
                0xc626_b0ea,
                0xd718_262a,
            ),
            (
                [24, 19, 198, 95],
                [12, 22, 207, 184],
                12898,
                38024,
                0x5c2b_394a,
                0xd2d0_a5de,
            ),
        ] {
            let f = v4(src, dst, sp, dp);
            assert_eq!(hash(&MS_KEY, all, &f), (tcp, HashType::Ipv4Tcp));
            let ip_only = HashTypes {
                ipv4: true,
                ..Default::default()
            };
            assert_eq!(hash(&MS_KEY, ip_only, &f), (ip, HashType::Ipv4));
        }
    }

    #[test]
    fn non_ip_fragments_and_truncated_frames() {
        let t = HashTypes {
            ipv4_tcp: true,
            ipv4: true,
            ipv6_tcp: true,
            ipv6: true,
            ..Default::default()
        };
        assert_eq!(hash(&MS_KEY, t, &[0u8; 60]).1, HashType::None);
        let mut f = v4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
        f[20] = 0x20; // more fragments: hash on addresses only
        assert_eq!(hash(&MS_KEY, t, &f).1, HashType::Ipv4);
        assert_eq!(hash(&MS_KEY, t, &f[..20]).1, HashType::None);
        assert_eq!(toeplitz(&[1, 2], &[3]), 0);
    }
}
