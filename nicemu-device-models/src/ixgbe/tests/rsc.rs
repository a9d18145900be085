// SPDX-License-Identifier: Apache-2.0
//! Receive side coalescing as `ixgbe` sets it up (`ixgbe_configure_rscctl`,
//! `ixgbe_configure_rx`, 3 KiB buffers) and reads it back
//! (`ixgbe_clean_rx_irq` / `ixgbe_is_non_eop`: NEXTP where RSCCNT is set, the
//! header of the first buffer).

use vm_memory::{Bytes, GuestAddress};

use super::super::rsc::RSCCTL_RSCEN;
use super::*;

const RING: u64 = 0x10000;
const BUFS: u64 = 0x20000;
const BUF: u64 = 3072;
const N: u32 = 32;
const MAXDESC_16: u32 = 0xc;
/// EITR 200 (`IXGBE_20K_ITR`): 50 µs.
const ITR_NS: u64 = 50_000;

/// Queue 0 as ixgbe configures it with LRO on: 3 KiB buffers, RSCEN and
/// MAXDESC 16, vector 0 with a 50 µs interval, MSI-X.
fn lro_queue(d: &Ixgbe, rscctl: u32) {
    wr(d, GPIE, intr::GPIE_MSIX_MODE | intr::GPIE_OCD);
    wr(d, IVAR0, 0x80);
    wr(d, EITR0, 200);
    wr(d, EIMS_EX, 1);
    let rb = rxq_base(0);
    wr(d, rb + q::BAL, RING as u32);
    wr(d, rb + q::LEN, N * 16);
    wr(d, rb + q::SRRCTL, 0x0200_0003);
    wr(d, rb + q::RSCCTL, rscctl);
    wr(d, rb + q::DCTL, QUEUE_ENABLE);
    for i in 0..N {
        repost(d, i);
    }
    wr(d, rb + q::T, N - 1);
    wr(d, RXCTRL, 1);
}

fn repost(d: &Ixgbe, i: u32) {
    let desc = RING + u64::from(i) * 16;
    d.mem()
        .write_obj(BUFS + u64::from(i) * BUF, GuestAddress(desc))
        .unwrap();
    d.mem().write_obj(0u64, GuestAddress(desc + 8)).unwrap();
}

/// A TCP/IPv4 segment to our MAC with valid checksums.
fn seg(sport: u16, seq: u32, payload: &[u8], flags: u8, ttl: u8) -> Vec<u8> {
    let mut f = vec![0u8; 54];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[16..18].copy_from_slice(&(40 + payload.len() as u16).to_be_bytes());
    f[18..20].copy_from_slice(&seq.to_be_bytes()[2..]);
    f[22] = ttl;
    f[23] = 6;
    f[26..30].copy_from_slice(&[10, 0, 0, 2]);
    f[30..34].copy_from_slice(&[10, 0, 0, 1]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&8000u16.to_be_bytes());
    f[38..42].copy_from_slice(&seq.to_be_bytes());
    f[42..46].copy_from_slice(&seq.wrapping_mul(7).to_be_bytes());
    f[46] = 0x50;
    f[47] = flags;
    f[48..50].copy_from_slice(&0xffffu16.to_be_bytes());
    f.extend_from_slice(payload);
    nicemu_net_util::csum::ipv4_header_csum(&mut f, 14).unwrap();
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&f[26..34]);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    let sum =
        nicemu_net_util::csum::csum_add(nicemu_net_util::csum::csum_add(0, &pseudo), &f[34..]);
    f[50..52].copy_from_slice(&nicemu_net_util::csum::csum_fold(sum).to_be_bytes());
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

/// What `ixgbe_clean_rx_irq` builds from the ring from `ntc` on: each
/// packet's bytes and append count, until a descriptor without DD.
struct Driver {
    ntc: u32,
    held: std::collections::HashMap<u32, (Vec<u8>, u32)>,
}

impl Driver {
    fn new() -> Self {
        Driver {
            ntc: 0,
            held: Default::default(),
        }
    }

    fn poll(&mut self, d: &Ixgbe) -> Vec<(Vec<u8>, u32)> {
        let mut out = Vec::new();
        for _ in 0..N {
            let desc = RING + u64::from(self.ntc) * 16;
            let st: u32 = d.mem().read_obj(GuestAddress(desc + 8)).unwrap();
            if st & 1 == 0 {
                break;
            }
            let lo: u32 = d.mem().read_obj(GuestAddress(desc)).unwrap();
            let len: u16 = d.mem().read_obj(GuestAddress(desc + 12)).unwrap();
            let mut data = vec![0u8; usize::from(len)];
            let buf = BUFS + u64::from(self.ntc) * BUF;
            d.mem().read_slice(&mut data, GuestAddress(buf)).unwrap();
            let (mut skb, mut append) = self.held.remove(&self.ntc).unwrap_or_default();
            skb.extend_from_slice(&data);
            let mut next = (self.ntc + 1) % N;
            let rsccnt = (lo >> 17) & 0xf;
            if rsccnt != 0 {
                append += rsccnt - 1;
                next = (st >> 4) & 0xffff;
            }
            repost(d, self.ntc);
            self.ntc = (self.ntc + 1) % N;
            if st & 2 == 0 {
                self.held.insert(next, (skb, append));
            } else {
                out.push((skb, append));
            }
        }
        out
    }
}

/// The TCP payload of a delivered packet, by its IPv4 total length.
fn payload(p: &[u8]) -> &[u8] {
    let tot = usize::from(u16::from_be_bytes([p[16], p[17]]));
    &p[54..14 + tot]
}

#[test]
fn in_order_segments_merge_behind_one_header_until_fin() {
    let (d, t) = I82599::dev();
    lro_queue(&d, RSCCTL_RSCEN | MAXDESC_16);
    d.receive(&seg(1500, 100, &[b'a'; 100], ACK, 64));
    d.receive(&seg(1500, 200, &[b'b'; 100], ACK, 64));
    assert!(
        t.irq.take().is_empty(),
        "no write-back while the context is open"
    );
    let mut drv = Driver::new();
    assert!(drv.poll(&d).is_empty(), "nothing done yet");
    d.receive(&seg(1500, 300, &[], ACK | FIN, 64));
    // The close fires vector 0; the FIN's cause waits out the 50 µs interval.
    assert_eq!(t.irq.take(), vec![Irq::Msix(0)]);
    let got = drv.poll(&d);
    assert_eq!(got.len(), 2);
    let (p, append) = &got[0];
    assert_eq!(payload(p).len(), 200);
    assert_eq!(&payload(p)[..100], &[b'a'; 100][..]);
    assert_eq!(&payload(p)[100..], &[b'b'; 100][..]);
    assert_eq!(*append, 1, "two segments in one buffer: RSCCNT 2");
    assert_eq!(
        nicemu_net_util::csum::csum_fold(nicemu_net_util::csum::csum_add(0, &p[14..34])),
        0,
        "IPv4 header checksum updated"
    );
    assert_eq!(
        &p[42..46],
        &200u32.wrapping_mul(7).to_be_bytes(),
        "last ACK number"
    );
    assert_eq!(payload(&got[1].0).len(), 0, "the FIN alone");
    assert_eq!(rd(&d, stat::GPRC), 3, "every segment counts");
}

#[test]
fn contexts_end_with_the_queue_interval_psh_and_a_gap() {
    let (d, t) = I82599::dev();
    lro_queue(&d, RSCCTL_RSCEN | MAXDESC_16);
    let mut drv = Driver::new();
    t.clock.set(1_000);
    d.receive(&seg(1500, 0, &[1; 100], ACK, 64));
    assert_eq!(t.timer.take(), vec![1_000 + ITR_NS]);
    t.clock.set(1_000 + ITR_NS);
    d.on_timer(1_000 + ITR_NS);
    assert_eq!(t.irq.take(), vec![Irq::Msix(0)], "aged out on the timer");
    assert_eq!(
        drv.poll(&d)
            .iter()
            .map(|(p, _)| payload(p).len())
            .collect::<Vec<_>>(),
        vec![100]
    );
    // PSH is appended, then closes; the next segment opens a new context.
    d.receive(&seg(1500, 100, &[2; 100], ACK, 64));
    d.receive(&seg(1500, 200, &[3; 100], ACK | PSH, 64));
    d.receive(&seg(1500, 300, &[4; 100], ACK, 64));
    // A gap in the sequence closes, and so does another TTL.
    d.receive(&seg(1500, 500, &[5; 100], ACK, 64));
    d.receive(&seg(1500, 600, &[6; 100], ACK, 63));
    d.receive(&seg(1500, 700, &[7; 100], ACK | FIN, 63));
    let sizes: Vec<usize> = drv.poll(&d).iter().map(|(p, _)| payload(p).len()).collect();
    assert_eq!(
        sizes,
        vec![200, 100, 100, 100, 100],
        "the FIN segment alone"
    );
}

#[test]
fn a_long_run_spans_buffers_linked_by_nextp_around_other_flows() {
    let (d, _t) = I82599::dev();
    lro_queue(&d, RSCCTL_RSCEN | MAXDESC_16);
    let mut drv = Driver::new();
    let data: Vec<u8> = (0..1448u32 * 6).map(|i| (i % 251) as u8).collect();
    for (k, chunk) in data.chunks(1448).enumerate() {
        d.receive(&seg(1500, 1448 * k as u32, chunk, ACK, 64));
        // Another connection's segment lands between (it stays alone: PSH).
        d.receive(&seg(1501, 10 * k as u32, &[9; 10], ACK | PSH, 64));
    }
    d.receive(&seg(1500, 1448 * 6, &[], ACK | FIN, 64));
    let got = drv.poll(&d);
    let big: Vec<_> = got.iter().filter(|(p, _)| payload(p).len() > 100).collect();
    assert_eq!(big.len(), 1);
    assert_eq!(
        payload(&big[0].0),
        &data[..],
        "every byte in order across buffers"
    );
    assert!(big[0].1 >= 2, "append count from RSCCNT");
    assert_eq!(
        got.iter().filter(|(p, _)| payload(p).len() == 10).count(),
        6
    );
}

#[test]
fn maxdesc_and_disabled_coalescing_place_segments_alone() {
    let (d, _t) = I82599::dev();
    // MAXDESC 1: one 3 KiB buffer per context.
    lro_queue(&d, RSCCTL_RSCEN);
    let mut drv = Driver::new();
    for k in 0..3u32 {
        d.receive(&seg(1500, 1448 * k, &[k as u8; 1448], ACK, 64));
    }
    d.receive(&seg(1500, 1448 * 3, &[], ACK | FIN, 64));
    let sizes: Vec<usize> = drv.poll(&d).iter().map(|(p, _)| payload(p).len()).collect();
    assert_eq!(
        sizes,
        vec![1448 * 2, 1448, 0],
        "the third does not fit the buffer"
    );
    // RFCTL.RSC_DIS: coalescing off on every queue.
    wr(&d, RFCTL, 1 << 5);
    d.receive(&seg(1600, 0, &[1; 100], ACK, 64));
    d.receive(&seg(1600, 100, &[1; 100], ACK, 64));
    let sizes: Vec<usize> = drv.poll(&d).iter().map(|(p, _)| payload(p).len()).collect();
    assert_eq!(sizes, vec![100, 100]);
}

#[test]
fn non_candidates_are_never_merged() {
    let (d, _t) = I82599::dev();
    lro_queue(&d, RSCCTL_RSCEN | MAXDESC_16);
    let mut drv = Driver::new();
    // A bad TCP checksum, pure ACKs, URG.
    let mut bad = seg(1500, 0, &[1; 100], ACK, 64);
    bad[60] ^= 0xff;
    d.receive(&bad);
    d.receive(&seg(1500, 0, &[], ACK, 64));
    d.receive(&seg(1500, 0, &[], ACK, 64));
    d.receive(&seg(1500, 0, &[1; 100], ACK | 0x20, 64));
    d.receive(&seg(1500, 100, &[1; 100], ACK | 0x20, 64));
    let sizes: Vec<usize> = drv.poll(&d).iter().map(|(p, _)| payload(p).len()).collect();
    assert_eq!(sizes, vec![100, 0, 0, 100, 100]);
}

/// A TCP/IPv6 segment to our MAC with a valid checksum, straight over the
/// fixed header or, with `dstopts`, behind a Destination Options header of
/// six zero bytes (gro.c's ip_v6ext_same).
fn seg6(sport: u16, seq: u32, payload: &[u8], flags: u8, dstopts: bool) -> Vec<u8> {
    let ext = if dstopts { 8 } else { 0 };
    let l4 = 54 + ext;
    let mut f = vec![0u8; l4 + 20];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    f[14] = 0x60;
    f[18..20].copy_from_slice(&((ext + 20 + payload.len()) as u16).to_be_bytes());
    f[20] = if dstopts { 60 } else { 6 };
    f[21] = 64;
    f[22] = 0xfd;
    f[37] = 2;
    f[38] = 0xfd;
    f[53] = 1;
    if dstopts {
        f[54] = 6;
    }
    f[l4..l4 + 2].copy_from_slice(&sport.to_be_bytes());
    f[l4 + 2..l4 + 4].copy_from_slice(&8000u16.to_be_bytes());
    f[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
    f[l4 + 12] = 0x50;
    f[l4 + 13] = flags;
    f[l4 + 14..l4 + 16].copy_from_slice(&0xffffu16.to_be_bytes());
    f.extend_from_slice(payload);
    nicemu_net_util::csum::l4_csum(&mut f, 14, l4, false, 6).unwrap();
    f
}

/// The TCP payload of a delivered IPv6 packet, by its payload length,
/// behind a Destination Options header if it has one.
fn payload6(p: &[u8]) -> &[u8] {
    let l4 = if p[20] == 60 { 62 } else { 54 };
    let end = 54 + usize::from(u16::from_be_bytes([p[18], p[19]]));
    &p[l4 + 20..end]
}

/// The 82599 coalesces TCP straight over IPv6, and an IPv6 packet with an
/// extension header is not an RSC candidate: it is placed alone, though
/// Linux's GRO (and virtio-net's coalescing, `nicemu_net_util::coalesce::gro_run`)
/// would merge it.
#[test]
fn ipv6_segments_merge_but_not_behind_an_extension_header() {
    let (d, _t) = I82599::dev();
    lro_queue(&d, RSCCTL_RSCEN | MAXDESC_16);
    let mut drv = Driver::new();
    d.receive(&seg6(1500, 0, &[1; 100], ACK, false));
    d.receive(&seg6(1500, 100, &[2; 100], ACK, false));
    d.receive(&seg6(1500, 200, &[], ACK | FIN, false));
    let got = drv.poll(&d);
    let sizes: Vec<usize> = got.iter().map(|(p, _)| payload6(p).len()).collect();
    assert_eq!(sizes, vec![200, 0], "straight over IPv6: merged");
    assert_eq!(u16::from_be_bytes([got[0].0[18], got[0].0[19]]), 220);
    d.receive(&seg6(1600, 0, &[1; 100], ACK, true));
    d.receive(&seg6(1600, 100, &[2; 100], ACK, true));
    d.receive(&seg6(1600, 200, &[], ACK | FIN, true));
    let got = drv.poll(&d);
    let sizes: Vec<usize> = got.iter().map(|(p, _)| payload6(p).len()).collect();
    assert_eq!(
        sizes,
        vec![100, 100, 0],
        "behind Destination Options: alone"
    );
    assert_eq!(got.iter().map(|(_, a)| *a).sum::<u32>(), 0);
}
