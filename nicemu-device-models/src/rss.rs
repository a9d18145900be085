// SPDX-License-Identifier: Apache-2.0
//! Receive side scaling as the 82576 and the 82599 program it (82576
//! datasheet §7.1.2.8, 82599 §7.1.2.8): the hash types MRQC enables, the key
//! in ten RSSRK registers, the 128-entry redirection table RETA, and how the
//! advanced receive descriptor reports the hash. The Toeplitz hash itself is
//! [`nicemu_net_util::rss`].

use nicemu_net_util::rss::{hash, HashType, HashTypes};

/// Decodes the hash types of MRQC bits 16..=24 (IPV4_TCP 16, IPV4 17,
/// IPV6_TCP_EX 18, IPV6_EX 19, IPV6 20, IPV6_TCP 21, IPV4_UDP 22, IPV6_UDP 23,
/// IPV6_UDP_EX 24; the same meaning on the 82576 and the 82599).
pub fn hash_types(mrqc: u32) -> HashTypes {
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

/// Hash of a frame with the key held in ten RSSRK registers (`rssrk(i)`
/// reads register i), for the hash types MRQC enables.
pub fn hash_with_regs(rssrk: impl Fn(u32) -> u32, mrqc: u32, f: &[u8]) -> (u32, HashType) {
    let mut key = [0u8; 40];
    for i in 0..10u32 {
        let at = 4 * i as usize;
        key[at..at + 4].copy_from_slice(&rssrk(i).to_le_bytes());
    }
    hash(&key, hash_types(mrqc), f)
}

/// Queue of a hashed frame: the 128-entry redirection table (RETA) holds one
/// byte per entry, four per register (`reta(i)` reads register i); the low
/// four bits of entry `hash[6:0]` name the queue. Unhashed frames go to 0.
pub fn reta_queue(reta: impl Fn(u32) -> u32, hash: u32, ty: HashType) -> usize {
    if ty == HashType::None {
        return 0;
    }
    let idx = hash & 0x7f;
    ((reta(idx >> 2) >> (8 * (idx & 3))) & 0xf) as usize
}

/// The RSS type field of the advanced receive write-back's pkt_info
/// (82576 §7.1.5.2, 82599 §7.1.6.2).
#[inline]
pub fn descriptor_type(ty: HashType) -> u16 {
    match ty {
        HashType::None => 0,
        HashType::Ipv4Tcp => 1,
        HashType::Ipv4 => 2,
        HashType::Ipv6Tcp => 3,
        HashType::Ipv6 => 5,
        HashType::Ipv4Udp => 7,
        HashType::Ipv6Udp => 8,
    }
}

/// Packet type bits of the advanced RX write-back's pkt_info (82576 §7.1.5.2,
/// 82599 §7.1.6.2: IPv4 0x10, IPv6 0x40, TCP 0x100, UDP 0x200).
#[inline]
pub fn packet_type(f: &[u8]) -> u16 {
    let Some(p) = nicemu_net_util::parse(f) else {
        return 0;
    };
    let l3 = if p.ipv4 { 0x0010 } else { 0x0040 };
    l3 | match p.proto {
        nicemu_net_util::IPPROTO_TCP => 0x0100,
        nicemu_net_util::IPPROTO_UDP => 0x0200,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mrqc_bits_name_the_hash_types() {
        // igb_setup_mrqc: IPV4, IPV4_TCP, IPV6, IPV6_TCP (+ UDP with the flag).
        let t = hash_types(0x0033_0000);
        assert!(t.ipv4 && t.ipv4_tcp && t.ipv6 && t.ipv6_tcp);
        assert!(!t.ipv4_udp && !t.ipv6_udp);
        let ex = hash_types((1 << 18) | (1 << 19) | (1 << 24));
        assert!(ex.ipv6_tcp && ex.ipv6 && ex.ipv6_udp, "the _EX bits");
        assert_eq!(hash_types(0), HashTypes::default());
    }

    #[test]
    fn redirection_table_entries_and_descriptor_codes() {
        // Entry 5 (register 1, byte 1) names queue 3; the high nibble is not the queue.
        let reta = |i: u32| if i == 1 { 0x0000_f300 } else { 0 };
        assert_eq!(reta_queue(reta, 0x85, HashType::Ipv4Tcp), 3);
        assert_eq!(reta_queue(reta, 0x85, HashType::None), 0, "unhashed");
        assert_eq!(descriptor_type(HashType::Ipv6Udp), 8);
        let mut f = vec![0u8; 54];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 17;
        assert_eq!(packet_type(&f), 0x0210);
        assert_eq!(packet_type(&[0u8; 20]), 0);
    }
}
