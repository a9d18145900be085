// SPDX-License-Identifier: Apache-2.0
//! The Flow Director driven as `ixgbe` drives it: ATR signature filters
//! (`ixgbe_fdir_add_signature_filter_82599`) and ethtool ntuple perfect
//! filters (`ixgbe_fdir_set_input_mask_82599`,
//! `ixgbe_fdir_write_perfect_filter_82599`,
//! `ixgbe_fdir_erase_perfect_filter_82599`), frames steered to their queue.

use vm_memory::{Bytes, GuestAddress};

use super::super::fdir::{cmd, ctrl};
use super::*;

const HKEY: u32 = 0x3dad_14e2;
const SKEY: u32 = 0x174d_3614;
const RINGS: u64 = 0x10000;
const BUFS: u64 = 0x40000;
const N: u32 = 8;

/// Receive queues 0..4 with `N` posted 2 KiB buffers each, receiver on,
/// unicast to our MAC accepted.
fn rx_queues(d: &Ixgbe) {
    for qi in 0..4u32 {
        let rb = rxq_base(qi);
        let ring = RINGS + u64::from(qi) * 0x1000;
        wr(d, rb + q::BAL, ring as u32);
        wr(d, rb + q::LEN, N * 16);
        wr(d, rb + q::SRRCTL, 0x0200_0002);
        wr(d, rb + q::DCTL, QUEUE_ENABLE);
        for i in 0..N {
            let buf = BUFS + (u64::from(qi) * u64::from(N) + u64::from(i)) * 2048;
            d.mem()
                .write_obj(buf, GuestAddress(ring + u64::from(i) * 16))
                .unwrap();
            d.mem()
                .write_obj(0u64, GuestAddress(ring + u64::from(i) * 16 + 8))
                .unwrap();
        }
        wr(d, rb + q::T, N - 1);
    }
    wr(d, RXCTRL, 1);
}

/// Frames placed in each of queues 0..4 (their heads).
fn heads(d: &Ixgbe) -> [u32; 4] {
    [0, 1, 2, 3].map(|qi| rd(d, rxq_base(qi) + q::H))
}

/// A TCP or UDP / IPv4 frame to our MAC.
fn l4_frame(proto: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[16..18].copy_from_slice(&50u16.to_be_bytes());
    f[22] = 64;
    f[23] = proto;
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f[46] = 0x50;
    f
}

/// `ixgbe_atr_compute_sig_hash_82599` as the driver computes it: key bits
/// shared by both keys go to a common hash, the rest to their own.
fn driver_sig_hash(flow_vm_vlan: u32, common: u32) -> u32 {
    let both = HKEY & SKEY;
    let mut hi = common;
    let mut lo = hi.rotate_left(16);
    hi ^= flow_vm_vlan ^ (flow_vm_vlan >> 16);
    let (mut c, mut b, mut s) = (0u32, 0u32, 0u32);
    for n in 0..16 {
        if n == 1 {
            lo ^= flow_vm_vlan ^ (flow_vm_vlan << 16);
        }
        for (word, bit) in [(lo, n), (hi, n + 16)] {
            if both & (1 << bit) != 0 {
                c ^= word >> n;
            } else if HKEY & (1 << bit) != 0 {
                b ^= word >> n;
            } else if SKEY & (1 << bit) != 0 {
                s ^= word << (16 - n);
            }
        }
    }
    b ^= c;
    s ^= c << 16;
    (s & (0x7fff << 16)) | (b & 0x7fff)
}

#[test]
fn atr_signature_filters_steer_their_flow_and_count() {
    let (d, _t) = I82599::dev();
    rx_queues(&d);
    // ixgbe_init_fdir_signature_82599 with PBALLOC 64K.
    wr(&d, FDIRHKEY, HKEY);
    wr(&d, FDIRSKEY, SKEY);
    wr(&d, FDIRCTRL, 1 | (6 << 16) | (0xa << 24) | (4 << 28));
    assert_ne!(rd(&d, FDIRCTRL) & ctrl::INIT_DONE, 0);
    assert_eq!(rd(&d, FDIRFREE) & 0xffff, 8190, "8K-2 signature filters");
    // ixgbe_atr for a segment 10.0.0.1:80 -> 10.0.0.2:1234 sent on queue 2:
    // the receiver's view is 10.0.0.2:1234 -> 10.0.0.1:80.
    let common_port = (1234u32 ^ 0x0800) << 16 | 80;
    let common =
        u32::from_be_bytes([10, 0, 0, 1]) ^ u32::from_be_bytes([10, 0, 0, 2]) ^ common_port;
    let flow = 2u32 << 16; // TCPv4, no VLAN
    let fdircmd = cmd::ADD | cmd::FILTER_UPDATE | (1 << 11) | cmd::QUEUE_EN | (2 << 5) | (2 << 16);
    let hashcmd = u64::from(fdircmd) << 32 | u64::from(driver_sig_hash(flow, common));
    d.bar_write(0, u64::from(FDIRHASH), &hashcmd.to_le_bytes());
    assert_eq!(rd(&d, FDIRCMD) & cmd::CMD, 0, "command complete");
    assert_eq!(rd(&d, FDIRFREE) & 0xffff, 8189);
    assert_eq!(rd(&d, FDIRUSTAT), 1, "one add");
    let f = l4_frame(6, [10, 0, 0, 2], [10, 0, 0, 1], 1234, 80);
    d.receive(&f);
    d.receive(&f);
    assert_eq!(heads(&d), [0, 0, 2, 0], "ATR flow on queue 2");
    let other = l4_frame(6, [10, 0, 0, 2], [10, 0, 0, 1], 1235, 80);
    d.receive(&other);
    assert_eq!(heads(&d), [1, 0, 2, 0], "other flows: RSS (off: queue 0)");
    assert_eq!((rd(&d, FDIRMATCH), rd(&d, FDIRMISS)), (2, 1));
    assert_eq!(
        (rd(&d, FDIRMATCH), rd(&d, FDIRMISS)),
        (0, 0),
        "clear on read"
    );
    // ixgbe_reinit_fdir_tables_82599: CLEARHT, FDIRCTRL again: empty table.
    let c = rd(&d, FDIRCTRL) & !ctrl::INIT_DONE;
    wr(&d, FDIRFREE, 0);
    wr(&d, FDIRCMD, rd(&d, FDIRCMD) | cmd::CLEARHT);
    wr(&d, FDIRCMD, rd(&d, FDIRCMD) & !cmd::CLEARHT);
    wr(&d, FDIRHASH, 0);
    wr(&d, FDIRCTRL, c);
    assert_ne!(rd(&d, FDIRCTRL) & ctrl::INIT_DONE, 0);
    d.receive(&f);
    assert_eq!(heads(&d), [2, 0, 2, 0], "filter gone");
    assert_eq!(rd(&d, FDIRFREE) & 0xffff, 8190);
}

/// `ixgbe_fdir_set_input_mask_82599` for `flow-type tcp4 dst-port P`.
fn mask_dst_port(d: &Ixgbe) {
    // VLAN, pool and flex masked, IPv6 destination masked.
    wr(d, FDIRM, 0x20 | 0x4 | 0x1 | 0x2 | 0x10);
    // ~bitrev(dst mask 0xffff << 16 | src mask 0): source ignored.
    wr(d, FDIRTCPM, 0x0000_ffff);
    wr(d, FDIRUDPM, 0x0000_ffff);
    wr(d, FDIRSIP4M, u32::MAX);
    wr(d, FDIRDIP4M, u32::MAX);
}

/// The masked input's bucket hash as `ixgbe_atr_compute_perfect_hash_82599`
/// computes it for a TCPv4 destination-port rule.
fn perfect_bucket(dport: u16) -> u32 {
    driver_sig_hash(2 << 16, u32::from(dport)) & 0x1fff
}

/// `ixgbe_fdir_write_perfect_filter_82599` for a TCPv4 destination port.
fn write_perfect(d: &Ixgbe, soft_id: u32, dport: u16, queue: u32) {
    for i in 0..3 {
        wr(d, FDIRSIPV6 + 4 * i, 0);
    }
    wr(d, FDIRIPSA, 0);
    wr(d, FDIRIPDA, 0);
    wr(d, FDIRPORT, u32::from(dport) << 16);
    wr(d, FDIRVLAN, 0);
    wr(d, FDIRHASH, perfect_bucket(dport) | soft_id << 16);
    let mut c = cmd::ADD | cmd::FILTER_UPDATE | (1 << 11) | cmd::QUEUE_EN | (2 << 5) | queue << 16;
    if queue == 127 {
        c |= cmd::DROP;
    }
    wr(d, FDIRCMD, c);
    assert_eq!(rd(d, FDIRCMD) & cmd::CMD, 0);
}

#[test]
fn ntuple_perfect_filters_steer_drop_and_erase() {
    let (d, _t) = I82599::dev();
    rx_queues(&d);
    // ixgbe_init_fdir_perfect_82599: drop queue 127.
    wr(&d, FDIRHKEY, HKEY);
    wr(&d, FDIRSKEY, SKEY);
    wr(
        &d,
        FDIRCTRL,
        1 | ctrl::PERFECT_MATCH | (127 << 8) | (6 << 16) | (0xa << 24) | (4 << 28),
    );
    assert_eq!(rd(&d, FDIRFREE) & 0xffff, 2046, "2K-2 perfect filters");
    mask_dst_port(&d);
    write_perfect(&d, 5, 8000, 3);
    write_perfect(&d, 6, 9000, 127);
    // Any source matches the destination-port rule.
    d.receive(&l4_frame(6, [10, 0, 0, 9], [10, 0, 0, 1], 40000, 8000));
    d.receive(&l4_frame(6, [10, 0, 0, 8], [10, 0, 0, 1], 40001, 8000));
    assert_eq!(heads(&d), [0, 0, 0, 2], "both on queue 3");
    // UDP to the same port is another flow type.
    d.receive(&l4_frame(17, [10, 0, 0, 9], [10, 0, 0, 1], 40000, 8000));
    assert_eq!(heads(&d), [1, 0, 0, 2]);
    // The drop rule: the frame reaches no queue and is counted missed.
    d.receive(&l4_frame(6, [10, 0, 0, 9], [10, 0, 0, 1], 40000, 9000));
    assert_eq!(heads(&d), [1, 0, 0, 2]);
    assert_eq!((rd(&d, FDIRMATCH), rd(&d, FDIRMISS)), (3, 1));
    // ixgbe_fdir_erase_perfect_filter_82599: query, then remove.
    wr(&d, FDIRHASH, perfect_bucket(8000) | 5 << 16);
    wr(&d, FDIRCMD, cmd::QUERY);
    assert_ne!(rd(&d, FDIRCMD) & cmd::FILTER_VALID, 0, "filter found");
    wr(&d, FDIRHASH, perfect_bucket(8000) | 5 << 16);
    wr(&d, FDIRCMD, cmd::REMOVE);
    wr(&d, FDIRCMD, cmd::QUERY);
    assert_eq!(rd(&d, FDIRCMD) & cmd::FILTER_VALID, 0, "gone");
    d.receive(&l4_frame(6, [10, 0, 0, 9], [10, 0, 0, 1], 40000, 8000));
    assert_eq!(heads(&d), [2, 0, 0, 2], "back to RSS");
    assert_eq!(rd(&d, FDIRUSTAT), 2 | 1 << 16, "two adds, one remove");
    wr(&d, FDIRCMD, cmd::REMOVE);
    assert_eq!(rd(&d, FDIRFSTAT), 1 << 8, "a failed remove");
    assert_eq!(rd(&d, FDIRFREE) & 0xffff, 2045);
}

#[test]
fn a_full_table_refuses_adds_and_raises_the_flow_director_cause() {
    let (d, t) = I82599::dev();
    // MSI-X: other causes on vector 1.
    wr(&d, GPIE, intr::GPIE_MSIX_MODE | intr::GPIE_OCD);
    wr(&d, IVAR_MISC, 0x8100);
    wr(&d, EIMS, intr::EICR_FLOW_DIR);
    // Signature filters, PBALLOC 64K: 8190 filters; the cause at 64 left.
    wr(&d, FDIRCTRL, 1 | (4 << 28));
    let add = |id: u32| {
        wr(&d, FDIRHASH, (id & 0x7fff) | (id >> 15) << 16);
        wr(&d, FDIRCMD, cmd::ADD | cmd::QUEUE_EN);
    };
    for id in 0..8190 - 65 {
        add(id);
    }
    assert!(t.irq.take().is_empty());
    add(8190 - 65);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1)], "64 filters left");
    for id in 8190 - 64..8190 {
        add(id);
    }
    assert_eq!(rd(&d, FDIRFREE) & 0xffff, 0);
    add(9000);
    assert_eq!(rd(&d, FDIRFSTAT) & 0xff, 1, "a failed add");
    // The same identity again without FILTER_UPDATE: a collision.
    wr(&d, FDIRHASH, 3);
    wr(&d, FDIRCMD, cmd::ADD);
    assert_ne!(rd(&d, FDIRCMD) & cmd::COLLISION, 0);
    assert_eq!(rd(&d, FDIRFREE) >> 16, 1);
    // A device reset forgets the table.
    wr(&d, CTRL, super::super::ctrl::RST);
    wr(&d, FDIRCTRL, 1);
    assert_eq!(rd(&d, FDIRFREE), 8190);
}

#[test]
fn flow_director_off_leaves_frames_to_rss() {
    let (d, _t) = I82599::dev();
    rx_queues(&d);
    wr(&d, FDIRCMD, cmd::ADD | cmd::QUEUE_EN | (2 << 16));
    d.receive(&l4_frame(6, [10, 0, 0, 2], [10, 0, 0, 1], 1, 2));
    assert_eq!(heads(&d), [1, 0, 0, 0]);
    assert_eq!(
        (rd(&d, FDIRMATCH), rd(&d, FDIRMISS)),
        (0, 0),
        "nothing counted"
    );
}
