//! Receive side scaling shared by igb and ixgbe: the Toeplitz hash over the
//! IPv4/IPv6 addresses and TCP/UDP ports a frame carries, and the hash types
//! MRQC enables (82576 datasheet §7.1.2.8, 82599 §7.1.2.8; Microsoft RSS spec).

/// Hash types selectable in MRQC (bit positions are the device's; the same
/// meaning on 82576 and 82599).
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

impl HashTypes {
    /// Decodes the MRQC field bits 16..=23 (IPV4_TCP 16, IPV4 17, IPV6_TCP_EX 18,
    /// IPV6_EX 19, IPV6 20, IPV6_TCP 21, IPV4_UDP 22, IPV6_UDP 23).
    pub fn from_mrqc(mrqc: u32) -> Self {
        let b = |n: u32| mrqc & (1 << n) != 0;
        HashTypes {
            ipv4_tcp: b(16),
            ipv4: b(17),
            ipv6_tcp: b(21) || b(18),
            ipv6: b(20) || b(19),
            ipv4_udp: b(22),
            ipv6_udp: b(23) || b(24),
        }
    }
}

/// RSS type reported in the advanced RX descriptor (82576 §7.1.5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RssType {
    /// No hash computed.
    None = 0,
    /// TCP/IPv4.
    Ipv4Tcp = 1,
    /// IPv4.
    Ipv4 = 2,
    /// TCP/IPv6.
    Ipv6Tcp = 3,
    /// IPv6.
    Ipv6 = 5,
    /// UDP/IPv4.
    Ipv4Udp = 7,
    /// UDP/IPv6.
    Ipv6Udp = 8,
}

/// Toeplitz hash of `input` with a key of at least `input.len() + 4` bytes.
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

/// Finds the IP and L4 headers of an Ethernet frame (skipping one VLAN tag).
/// IPv6 extension headers other than none are not walked (hash on addresses).
pub fn parse(f: &[u8]) -> Option<Parsed> {
    let mut off = 12;
    let mut et = u16::from_be_bytes([*f.get(off)?, *f.get(off + 1)?]);
    if et == 0x8100 || et == 0x88a8 {
        off += 4;
        et = u16::from_be_bytes([*f.get(off)?, *f.get(off + 1)?]);
    }
    let l3 = off + 2;
    match et {
        0x0800 => {
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
        0x86dd => {
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

/// Computes the RSS hash of a frame as the device would, with the 40-byte key.
pub fn hash(key: &[u8; 40], types: HashTypes, f: &[u8]) -> (u32, RssType) {
    let Some(p) = parse(f) else {
        return (0, RssType::None);
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
        (true, 6, true) if types.ipv4_tcp => (true, RssType::Ipv4Tcp),
        (true, 17, true) if types.ipv4_udp => (true, RssType::Ipv4Udp),
        (false, 6, true) if types.ipv6_tcp => (true, RssType::Ipv6Tcp),
        (false, 17, true) if types.ipv6_udp => (true, RssType::Ipv6Udp),
        (true, ..) if types.ipv4 => (false, RssType::Ipv4),
        (false, ..) if types.ipv6 => (false, RssType::Ipv6),
        _ => return (0, RssType::None),
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

/// Hash of a frame with the key held in ten RSSRK registers (`rssrk(i)`
/// reads register i), for the hash types MRQC enables.
pub fn hash_with_regs(rssrk: impl Fn(u32) -> u32, mrqc: u32, f: &[u8]) -> (u32, RssType) {
    let mut key = [0u8; 40];
    for i in 0..10u32 {
        let at = 4 * i as usize;
        key[at..at + 4].copy_from_slice(&rssrk(i).to_le_bytes());
    }
    hash(&key, HashTypes::from_mrqc(mrqc), f)
}

/// Queue of a hashed frame: the 128-entry redirection table (RETA) holds one
/// byte per entry, four per register (`reta(i)` reads register i); the low
/// four bits of entry `hash[6:0]` name the queue. Unhashed frames go to 0.
pub fn reta_queue(reta: impl Fn(u32) -> u32, hash: u32, ty: RssType) -> usize {
    if ty == RssType::None {
        return 0;
    }
    let idx = hash & 0x7f;
    ((reta(idx >> 2) >> (8 * (idx & 3))) & 0xf) as usize
}

/// Packet type bits of the advanced RX write-back's pkt_info (82576 §7.1.5.2,
/// 82599 §7.1.6.2: IPv4 0x10, IPv6 0x40, TCP 0x100, UDP 0x200).
pub fn packet_type(f: &[u8]) -> u16 {
    let Some(p) = parse(f) else { return 0 };
    let l3 = if p.ipv4 { 0x0010 } else { 0x0040 };
    l3 | match p.proto {
        6 => 0x0100,
        17 => 0x0200,
        _ => 0,
    }
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
            assert_eq!(hash(&MS_KEY, all, &f), (tcp, RssType::Ipv4Tcp));
            let ip_only = HashTypes {
                ipv4: true,
                ..Default::default()
            };
            assert_eq!(hash(&MS_KEY, ip_only, &f), (ip, RssType::Ipv4));
        }
    }

    #[test]
    fn non_ip_fragments_and_truncated_frames() {
        let t = HashTypes::from_mrqc(0x0033_0000);
        assert_eq!(hash(&MS_KEY, t, &[0u8; 60]).1, RssType::None);
        let mut f = v4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
        f[20] = 0x20; // more fragments: hash on addresses only
        assert_eq!(hash(&MS_KEY, t, &f).1, RssType::Ipv4);
        assert_eq!(hash(&MS_KEY, t, &f[..20]).1, RssType::None);
        assert_eq!(toeplitz(&[1, 2], &[3]), 0);
    }
}
