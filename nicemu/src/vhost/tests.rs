// SPDX-License-Identifier: Apache-2.0
//! Descriptor-chain edge cases over `virtio_queue` mock queues: every guest
//! mistake ends in a defined outcome (drop + reason), never a panic.

use virtio_bindings::bindings::virtio_ring::{
    VRING_DESC_F_INDIRECT, VRING_DESC_F_NEXT, VRING_DESC_F_WRITE,
};
use virtio_queue::desc::{split::Descriptor as SplitDescriptor, RawDescriptor};
use virtio_queue::mock::MockSplitQueue;
use virtio_queue::{Queue, QueueT};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::rx::{write_frame, RxOutcome};
use super::tx::{read_chain, TxChainError, MAX_TX_DESCS};

const W: u16 = VRING_DESC_F_WRITE as u16;
const BUF: u64 = 0x10_0000;

fn mem() -> GuestMemoryMmap<()> {
    GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x40_0000)]).unwrap()
}

/// As [`mem`], over a sealable memfd as QEMU shares guest RAM (what a
/// backend accepts as its memory table).
fn shared_mem() -> GuestMemoryMmap<()> {
    file_mem(nicemu_memfile::testutil::memfd(0x40_0000, true), 0x40_0000)
}

/// Descriptors of chains laid out from table index `first`: each inner slice
/// is one chain of (addr, len, flags) linked with NEXT.
fn chains(first: u16, list: &[&[(u64, u32, u16)]]) -> Vec<RawDescriptor> {
    let mut out = Vec::new();
    let mut idx = first;
    for c in list {
        for (i, &(a, l, f)) in c.iter().enumerate() {
            let last = i + 1 == c.len();
            let flags = if last {
                f
            } else {
                f | VRING_DESC_F_NEXT as u16
            };
            let next = if last { 0 } else { idx + 1 };
            out.push(RawDescriptor::from(SplitDescriptor::new(a, l, flags, next)));
            idx += 1;
        }
    }
    out
}

fn queue_with(m: &GuestMemoryMmap<()>, size: u16, list: &[&[(u64, u32, u16)]]) -> Queue {
    let vq = MockSplitQueue::new(m, size);
    vq.add_desc_chains(&chains(0, list), 0).unwrap();
    vq.create_queue::<Queue>().unwrap()
}

fn pop_read(m: &GuestMemoryMmap<()>, q: &mut Queue, buf: &mut Vec<u8>) -> Result<(), TxChainError> {
    let c = q.pop_descriptor_chain(m).expect("a chain");
    read_chain(c, buf, 12)
}

#[test]
fn tx_reads_split_chain_skipping_zero_length() {
    let m = mem();
    m.write_slice(&[7u8; 12], GuestAddress(BUF)).unwrap();
    m.write_slice(&[9u8; 60], GuestAddress(BUF + 0x1000))
        .unwrap();
    let mut q = queue_with(
        &m,
        16,
        &[&[(BUF, 12, 0), (BUF + 0x800, 0, 0), (BUF + 0x1000, 60, 0)]],
    );
    let mut buf = Vec::with_capacity(1 << 16);
    pop_read(&m, &mut q, &mut buf).unwrap();
    assert_eq!(buf.len(), 72);
    assert_eq!(&buf[..12], &[7u8; 12]);
    assert_eq!(&buf[12..], &[9u8; 60]);
}

#[test]
fn tx_write_only_descriptor_is_dropped() {
    let m = mem();
    let mut q = queue_with(&m, 16, &[&[(BUF, 12, 0), (BUF + 0x1000, 60, W)]]);
    let mut buf = Vec::new();
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::WriteOnly));
}

#[test]
fn tx_chain_too_long_is_dropped() {
    let m = mem();
    let n = MAX_TX_DESCS + 10;
    let descs: Vec<(u64, u32, u16)> = (0..n).map(|i| (BUF + i as u64 * 16, 16, 0)).collect();
    let mut q = queue_with(&m, 256, &[&descs]);
    let mut buf = Vec::new();
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::TooLong));
}

#[test]
fn tx_all_zero_length_or_short_is_runt() {
    let m = mem();
    let mut q = queue_with(
        &m,
        16,
        &[&[(BUF, 0, 0), (BUF, 0, 0)], &[(BUF, 12, 0), (BUF, 13, 0)]],
    );
    let mut buf = Vec::new();
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::Runt));
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::Runt));
}

#[test]
fn tx_outside_memory_and_oversize_are_dropped() {
    let m = mem();
    let mut q = queue_with(&m, 16, &[&[(0x4000_0000, 100, 0)], &[(BUF, 0x3f_0000, 0)]]);
    let mut buf = Vec::new();
    assert_eq!(
        pop_read(&m, &mut q, &mut buf),
        Err(TxChainError::BadAddress)
    );
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::TooBig));
}

/// Writes an indirect table of `descs` at `at`; returns the descriptor
/// pointing to it.
fn indirect(m: &GuestMemoryMmap<()>, at: u64, descs: &[(u64, u32, u16)]) -> (u64, u32, u16) {
    let table = chains(0, &[descs]);
    for (i, d) in table.iter().enumerate() {
        m.write_obj(*d, GuestAddress(at + 16 * i as u64)).unwrap();
    }
    (at, 16 * descs.len() as u32, VRING_DESC_F_INDIRECT as u16)
}

#[test]
fn tx_indirect_table_is_followed_and_nested_indirect_stops() {
    let m = mem();
    m.write_slice(&[5u8; 80], GuestAddress(BUF)).unwrap();
    let good = indirect(&m, 0x20_0000, &[(BUF, 12, 0), (BUF + 12, 68, 0)]);
    let inner = indirect(&m, 0x21_0000, &[(BUF, 80, 0)]);
    let nested = indirect(&m, 0x22_0000, &[inner]);
    let misaligned = (0x20_0000, 17, VRING_DESC_F_INDIRECT as u16);
    let mut q = queue_with(&m, 16, &[&[good], &[nested], &[misaligned]]);
    let mut buf = Vec::new();
    pop_read(&m, &mut q, &mut buf).unwrap();
    assert_eq!(buf.len(), 80);
    // An indirect descriptor inside an indirect table ends the chain.
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::Runt));
    assert_eq!(pop_read(&m, &mut q, &mut buf), Err(TxChainError::Runt));
}

fn used(m: &GuestMemoryMmap<()>, q: &Queue, i: u16) -> (u32, u32) {
    let base = q.used_ring() + 4 + 8 * u64::from(i);
    (
        m.read_obj::<u32>(GuestAddress(base)).unwrap(),
        m.read_obj::<u32>(GuestAddress(base + 4)).unwrap(),
    )
}

fn used_idx(m: &GuestMemoryMmap<()>, q: &Queue) -> u16 {
    m.read_obj::<u16>(GuestAddress(q.used_ring() + 2)).unwrap()
}

#[test]
fn rx_mergeable_spans_chains_and_counts_buffers() {
    let m = mem();
    let mut q = queue_with(
        &m,
        16,
        &[
            &[(BUF, 8, W), (BUF + 0x100, 32, W)],
            &[(BUF + 0x1000, 40, W)],
            &[(BUF + 0x2000, 100, W)],
        ],
    );
    let frame: Vec<u8> = (0..60u8).collect();
    let mut hdr = [0u8; 12];
    let mut scratch = Vec::new();
    let o = write_frame(&mut q, &m, &mut hdr, &frame, true, &mut scratch);
    assert_eq!(o, RxOutcome::Delivered { buffers: 2 });
    assert_eq!(used_idx(&m, &q), 2);
    assert_eq!(used(&m, &q, 0), (0, 40));
    assert_eq!(used(&m, &q, 1), (2, 32));
    // num_buffers sits at bytes 10..12 of the header, which straddles the
    // first two descriptors.
    let mut h = [0u8; 4];
    m.read_slice(&mut h, GuestAddress(BUF + 0x100)).unwrap();
    assert_eq!(u16::from_le_bytes([h[2], h[3]]), 2);
    let mut got = [0u8; 28];
    m.read_slice(&mut got, GuestAddress(BUF + 0x104)).unwrap();
    assert_eq!(&got[..], &frame[..28]);
}

#[test]
fn rx_without_buffers_rolls_back() {
    let m = mem();
    let mut q = queue_with(&m, 16, &[&[(BUF, 20, W)]]);
    let frame = [1u8; 60];
    let mut hdr = [0u8; 12];
    let mut scratch = Vec::new();
    let o = write_frame(&mut q, &m, &mut hdr, &frame, true, &mut scratch);
    assert_eq!(o, RxOutcome::NoBuffers);
    assert_eq!(q.next_avail(), 0, "the popped chain is offered again");
    assert_eq!(used_idx(&m, &q), 0);
}

#[test]
fn rx_too_small_without_mergeable_keeps_buffer() {
    let m = mem();
    let mut q = queue_with(&m, 16, &[&[(BUF, 20, W)]]);
    let mut hdr = [0u8; 12];
    let mut scratch = Vec::new();
    let o = write_frame(&mut q, &m, &mut hdr, &[1u8; 60], false, &mut scratch);
    assert_eq!(o, RxOutcome::TooBig);
    assert_eq!(q.next_avail(), 0);
    let o = write_frame(&mut q, &m, &mut hdr[..10], &[1u8; 10], false, &mut scratch);
    assert_eq!(o, RxOutcome::Delivered { buffers: 1 });
}

#[test]
fn rx_read_only_or_zero_capacity_chain_is_returned_empty() {
    let m = mem();
    let mut q = queue_with(
        &m,
        16,
        &[
            &[(BUF, 100, W), (BUF + 0x100, 100, 0)],
            &[(BUF, 0, W)],
            &[(0x4000_0000, 100, W)],
            &[(BUF, 100, W)],
        ],
    );
    let mut hdr = [0u8; 12];
    let mut scratch = Vec::new();
    for _ in 0..3 {
        let o = write_frame(&mut q, &m, &mut hdr, &[1u8; 60], true, &mut scratch);
        assert_eq!(o, RxOutcome::BadChain);
    }
    assert_eq!(used_idx(&m, &q), 3);
    assert_eq!(used(&m, &q, 0), (0, 0));
    assert_eq!(used(&m, &q, 1), (2, 0));
    let o = write_frame(&mut q, &m, &mut hdr, &[1u8; 60], true, &mut scratch);
    assert_eq!(o, RxOutcome::Delivered { buffers: 1 });
}

#[test]
fn rx_indirect_chain_is_written() {
    let m = mem();
    let ind = indirect(&m, 0x20_0000, &[(BUF, 12, W), (BUF + 0x100, 100, W)]);
    let mut q = queue_with(&m, 16, &[&[ind]]);
    let mut hdr = [0u8; 12];
    let mut scratch = Vec::new();
    let o = write_frame(&mut q, &m, &mut hdr, &[3u8; 64], true, &mut scratch);
    assert_eq!(o, RxOutcome::Delivered { buffers: 1 });
    let mut got = [0u8; 64];
    m.read_slice(&mut got, GuestAddress(BUF + 0x100)).unwrap();
    assert_eq!(got, [3u8; 64]);
    assert_eq!(used(&m, &q, 0), (0, 76));
}

#[test]
fn rx_chain_longer_than_limit_is_dropped() {
    let m = mem();
    let n = super::rx::MAX_RX_DESCS + 5;
    let descs: Vec<(u64, u32, u16)> = (0..n).map(|i| (BUF + i as u64 * 8, 1, W)).collect();
    let mut q = queue_with(&m, 256, &[&descs]);
    let mut hdr = [0u8; 12];
    let mut scratch = Vec::new();
    // A frame needing all of them: the chain is malformed (too long).
    let o = write_frame(&mut q, &m, &mut hdr, &[0u8; 200], true, &mut scratch);
    assert_eq!(o, RxOutcome::BadChain);
}

mod backend_rx {
    //! The receive path of a whole [`NetBackend`] over mock queues.

    use std::sync::Arc;

    use vhost_user_backend::{VhostUserBackend, VringT};
    use virtio_queue::mock::MockSplitQueue;
    use vm_memory::{GuestAddress, GuestMemoryAtomic, GuestMemoryMmap};
    use vmm_sys_util::epoll::EventSet;

    use super::super::backend::NetBackend;
    use super::super::backlog::Backlog;
    use super::super::config::device_features;
    use super::super::port::Vring;
    use super::super::rx::flow_hash;
    use super::super::tx::GsoPeers;
    use super::{chains, shared_mem, W};
    use nicemu_device_models::{Delivery, Frames};

    struct Nowhere;
    impl nicemu_device_models::FrameSink for Nowhere {
        fn transmit(&self, _frame: &[u8]) {}
    }

    /// An Ethernet/IPv4/TCP frame of flow `port` (source port).
    fn tcp_frame(port: u16) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[0..6].copy_from_slice(&[0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0x12, 0x34, 0x57]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&50u16.to_be_bytes());
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[192, 168, 100, 2]);
        f[30..34].copy_from_slice(&[192, 168, 100, 1]);
        f[34..36].copy_from_slice(&port.to_be_bytes());
        f[36..38].copy_from_slice(&12865u16.to_be_bytes());
        f[46] = 0x50;
        f
    }

    /// A vring over a mock split queue at `base` holding `bufs` writable
    /// 2 KiB receive buffers, enabled and ready.
    fn rx_vring(m: &GuestMemoryMmap<()>, base: u64, bufs: u16) -> Vring {
        let vq = MockSplitQueue::create(m, GuestAddress(base), 64);
        let list: Vec<Vec<(u64, u32, u16)>> = (0..u64::from(bufs))
            .map(|i| vec![(base + 0x10_000 + i * 0x800, 0x800, W)])
            .collect();
        let refs: Vec<&[(u64, u32, u16)]> = list.iter().map(|c| c.as_slice()).collect();
        vq.add_desc_chains(&chains(0, &refs), 0).unwrap();
        let v = Vring::new(GuestMemoryAtomic::new(m.clone()), 256).unwrap();
        v.set_queue_size(64);
        v.set_queue_info(vq.desc_table_addr().0, vq.avail_addr().0, vq.used_addr().0)
            .unwrap();
        v.set_queue_ready(true);
        v.set_enabled(true);
        v
    }

    fn two_pair_backend(m: &GuestMemoryMmap<()>) -> Arc<NetBackend> {
        let b = Arc::new(NetBackend::new(
            "vn0".into(),
            [0x52, 0x54, 0, 0x12, 0x34, 0x56],
            2,
            Box::new(Nowhere),
            Arc::new(GsoPeers::default()),
        ));
        b.acked_features(device_features(2));
        b.update_memory(GuestMemoryAtomic::new(m.clone())).unwrap();
        b
    }

    /// A [`two_pair_backend`] whose pair 0 has `rx_bufs` receive buffers and
    /// an empty transmit ring, both handed over by a kick of pair 0.
    fn pair0_kicked(m: &GuestMemoryMmap<()>, rx_bufs: u16) -> (Arc<NetBackend>, Vring, Vring) {
        let b = two_pair_backend(m);
        let rx0 = rx_vring(m, 0x100_000, rx_bufs);
        let tx = rx_vring(m, 0x300_000, 0);
        b.handle_event(0, EventSet::IN, &[rx0.clone(), tx.clone()], 0)
            .unwrap();
        (b, rx0, tx)
    }

    /// Frames of `n` flows that hash to queue `q` of 2.
    fn flows_to(q: u32, n: usize) -> Vec<Vec<u8>> {
        (1000u16..)
            .map(tcp_frame)
            .filter(|f| flow_hash(f) % 2 == q)
            .take(n)
            .collect()
    }

    /// The source ports of [`flows_to`]'s flows.
    fn ports_to(q: u32, n: usize) -> Vec<u16> {
        flows_to(q, n)
            .iter()
            .map(|f| u16::from_be_bytes([f[34], f[35]]))
            .collect()
    }

    /// A queue without receive buffers holds up only its own frames: frames
    /// for the other queue behind them in the backlog are delivered, the
    /// stuck ones keep their order and go out when buffers arrive, and the
    /// direct path does not overtake them meanwhile.
    #[test]
    fn a_queue_without_buffers_holds_up_only_its_own_flows() {
        let m: GuestMemoryMmap<()> = shared_mem();
        let b = two_pair_backend(&m);
        let rx0 = rx_vring(&m, 0x100_000, 16);
        let rx1 = rx_vring(&m, 0x200_000, 0);
        let tx = rx_vring(&m, 0x300_000, 0);
        b.handle_event(0, EventSet::IN, &[rx0.clone(), tx.clone()], 0)
            .unwrap();
        b.handle_event(0, EventSet::IN, &[rx1.clone(), tx.clone()], 1)
            .unwrap();
        let (to0, to1) = (flows_to(0, 3), flows_to(1, 3));
        let bl = Backlog::new(2);
        // Queue 1 first, then queue 0, as the switch queued them.
        bl.push(&b, &to1[0]);
        bl.push(&b, &to1[1]);
        bl.push(&b, &to0[0]);
        bl.push(&b, &to0[1]);
        assert!(bl.pump(&b));
        assert_eq!(b.counters[0].snapshot().rx_frames, 2);
        assert_eq!(b.counters[1].snapshot().rx_frames, 0);
        assert_eq!(bl.len(), 2);
        // Nothing moves while queue 1 has no buffers.
        assert!(!bl.pump(&b));
        // The direct path: queue 0 is free, queue 1's frames wait in order.
        assert_eq!(b.deliver(&to0[2], true), Delivery::Done);
        assert_eq!(b.deliver(&to1[2], true), Delivery::Busy);
        assert_eq!(b.counters[0].snapshot().rx_frames, 3);
        // The guest gives queue 1 buffers (its rings rebuilt in the same
        // guest memory with 16; the port's vring reads them) and kicks: the
        // waiting frames go out, oldest first.
        let _ = rx_vring(&m, 0x200_000, 16);
        b.handle_event(0, EventSet::IN, &[rx1.clone(), tx.clone()], 1)
            .unwrap();
        assert!(bl.pump(&b));
        assert!(bl.is_empty());
        assert_eq!(b.counters[1].snapshot().rx_frames, 2);
        assert_eq!(b.port_counters.snapshot().rx_backlog_drops, 0);
        assert_eq!(b.deliver(&to1[2], true), Delivery::Done);
    }

    /// `ctl stats` counters of a virtio-net port are totals across
    /// reconnects (the issue suspected they went backwards; they do not).
    #[test]
    fn counters_are_totals_across_a_reconnect() {
        let m: GuestMemoryMmap<()> = shared_mem();
        let (b, _rx0, _tx) = pair0_kicked(&m, 16);
        b.connected
            .store(true, std::sync::atomic::Ordering::Release);
        assert_eq!(b.deliver(&flows_to(0, 1)[0], false), Delivery::Done);
        assert_eq!(b.counters[0].snapshot().rx_frames, 1);
        let before = (b.counters[0].snapshot(), b.port_counters.snapshot());
        b.disconnected();
        let after = (b.counters[0].snapshot(), b.port_counters.snapshot());
        assert_eq!(before, after);
    }

    /// A frame a virtio-net sender passed with its GSO request (the trailer
    /// the switch carries) reaches a driver that takes no GSO as MSS-sized
    /// segments, each counted; a request that does not fit its frame is
    /// dropped as a bad chain; a driver that takes TCPv4 GSO gets the frame
    /// whole with the request in its header.
    #[test]
    fn passed_gso_frames_are_segmented_for_the_receiver() {
        use super::super::offload::{push_trailer, tso_request, NetHdr};
        use virtio_bindings::bindings::virtio_net::VIRTIO_NET_HDR_GSO_TCPV4;
        use vm_memory::Bytes;
        let m: GuestMemoryMmap<()> = shared_mem();
        let (b, _rx0, _tx) = pair0_kicked(&m, 16);
        let hdr = NetHdr {
            flags: 0,
            gso_type: VIRTIO_NET_HDR_GSO_TCPV4 as u8,
            hdr_len: 54,
            gso_size: 1000,
            csum_start: 34,
            csum_offset: 16,
        };
        let flow = flows_to(0, 1)[0].clone();
        let mut big = flow[..54].to_vec();
        big.resize(54 + 2500, 0x5a);
        big[16..18].copy_from_slice(&(40u16 + 2500).to_be_bytes());
        let req = tso_request(&hdr, &big).unwrap();
        let mut passed = big.clone();
        push_trailer(&mut passed, &req, b.token());
        assert_eq!(b.deliver(&passed, false), Delivery::Done);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_gso, c.rx_bad_chain), (3, 0, 0));
        assert_eq!(c.rx_bytes, 3 * 54 + 2500);
        // The trailer on a frame cut inside its TCP header.
        let mut bad = flow[..40].to_vec();
        push_trailer(&mut bad, &req, b.token());
        assert_eq!(b.deliver(&bad, false), Delivery::Done);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_bad_chain), (3, 1));
        b.set_accept(super::super::offload::accept::TCP4);
        assert_eq!(b.deliver(&passed, false), Delivery::Done);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_gso), (4, 1));
        assert_eq!(c.rx_bytes, 3 * 54 + 2500 + big.len() as u64);
        // The header written in front of it (12 bytes, after the three
        // segments' 2 KiB buffers) carries the request.
        let mut h = [0u8; 12];
        m.read_slice(&mut h, GuestAddress(0x100_000 + 0x10_000 + 3 * 0x800))
            .unwrap();
        let got = NetHdr::parse(&h).unwrap();
        assert_eq!((got.gso_type, got.gso_size), (hdr.gso_type, 1000));
    }

    /// One flow, one queue: TCP ports choose among queues, but the bytes
    /// after an IP-in-IP packet's outer header are its inner header (whose
    /// length changes with the payload), not ports: every packet of a
    /// tunnel goes to one queue whatever its size.
    #[test]
    fn ipip_packets_of_one_tunnel_hash_alike() {
        let ipip = |payload: usize| {
            let mut f = tcp_frame(1000);
            f[23] = 4;
            let inner = tcp_frame(1000)[14..54].to_vec();
            f.truncate(34);
            f.extend_from_slice(&inner);
            f.resize(f.len() + payload, 0);
            let inner_len = (40 + payload) as u16;
            f[36..38].copy_from_slice(&inner_len.to_be_bytes());
            f[16..18].copy_from_slice(&(20 + inner_len).to_be_bytes());
            f
        };
        let h = flow_hash(&ipip(100));
        for payload in [0, 1, 50, 1000] {
            assert_eq!(flow_hash(&ipip(payload)), h, "inner payload {payload}");
        }
        let ports: std::collections::HashSet<u32> =
            (1000u16..1032).map(|p| flow_hash(&tcp_frame(p))).collect();
        assert!(ports.len() > 1, "TCP ports still spread flows");
    }

    /// `n` consecutive TCP segments of `len` payload bytes of flow `port`
    /// (IPv4, DF, incrementing IDs), checksums right.
    fn segments(port: u16, n: usize, len: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut f = tcp_frame(port)[..54].to_vec();
                f.extend((0..len).map(|k| (i * len + k) as u8));
                f[16..18].copy_from_slice(&((40 + len) as u16).to_be_bytes());
                f[18..20].copy_from_slice(&(i as u16).to_be_bytes());
                f[20] = 0x40;
                f[38..42].copy_from_slice(&((i * len) as u32).to_be_bytes());
                f[47] = 0x10;
                nicemu_net_util::csum::ipv4_header_csum(&mut f, 14).unwrap();
                nicemu_net_util::csum::l4_csum(&mut f, 14, 34, true, 6).unwrap();
                f
            })
            .collect()
    }

    /// Consecutive segments of one connection given together reach a
    /// driver that took TCPv4 GSO as one frame: the header asks for GSO at
    /// the segments' size with a partial checksum from the TCP header, the
    /// frame holds every payload; a driver without GSO receive, or
    /// segments of different connections, get the frames as they came.
    #[test]
    fn segments_given_together_are_coalesced_for_a_gso_driver() {
        use super::super::offload::NetHdr;
        use virtio_bindings::bindings::virtio_net::{
            VIRTIO_NET_F_GUEST_TSO4, VIRTIO_NET_F_GUEST_TSO6, VIRTIO_NET_HDR_F_NEEDS_CSUM,
            VIRTIO_NET_HDR_GSO_TCPV4,
        };
        let m: GuestMemoryMmap<()> = shared_mem();
        let (b, _rx0, _tx) = pair0_kicked(&m, 16);
        b.set_coalesce(true);
        let port = ports_to(0, 1)[0];
        let segs = segments(port, 3, 1000);
        assert_eq!(b.deliver_batch(Frames::Many(&segs), false), 3);
        let c = b.counters[0].snapshot();
        assert_eq!(
            (c.rx_frames, c.rx_coalesced, c.rx_coalesced_segs),
            (1, 1, 3)
        );
        let len = 54 + 3000;
        assert_eq!(c.rx_bytes, len as u64);
        // Header and frame in the first buffers (2 KiB each, mergeable).
        let mut got = first_rx_buffers(&m, 12 + len);
        let h = NetHdr::parse(&got).unwrap();
        assert_eq!(h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM as u8);
        assert_eq!(h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4 as u8);
        assert_eq!(
            (h.gso_size, h.hdr_len, h.csum_start, h.csum_offset),
            (1000, 54, 34, 16)
        );
        assert_eq!(u16::from_le_bytes([got[10], got[11]]), 2, "num_buffers");
        let frame = &mut got[12..];
        assert_eq!(
            u16::from_be_bytes([frame[16], frame[17]]) as usize,
            40 + 3000
        );
        assert_eq!(
            &frame[54..],
            &(0..3000).map(|k| k as u8).collect::<Vec<_>>()[..]
        );
        nicemu_net_util::csum::complete_partial(frame, 34, 16).unwrap();
        assert!(nicemu_net_util::csum::verify_rx(frame).l4_ok);

        // Two connections interleaved: nothing merges.
        let other = ports_to(0, 2)[1];
        let o = segments(other, 2, 1000);
        let mixed = vec![segs[0].clone(), o[0].clone(), segs[1].clone(), o[1].clone()];
        assert_eq!(b.deliver_batch(Frames::Many(&mixed), false), 4);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_coalesced), (5, 1));

        // A driver without TCPv4 GSO receive gets each segment.
        let no_tso =
            device_features(2) & !(1 << VIRTIO_NET_F_GUEST_TSO4) & !(1 << VIRTIO_NET_F_GUEST_TSO6);
        b.acked_features(no_tso);
        b.update_memory(GuestMemoryAtomic::new(m.clone())).unwrap();
        assert_eq!(b.deliver_batch(Frames::Many(&segs), false), 3);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_coalesced), (8, 1));
    }

    /// A port coalesces only when asked (`coalesce=on`): by default every
    /// segment reaches the driver as it came, which the driver can always
    /// take (it cannot tell the port when it stops taking GSO frames).
    #[test]
    fn a_port_coalesces_only_when_asked() {
        let m: GuestMemoryMmap<()> = shared_mem();
        let (b, _rx0, _tx) = pair0_kicked(&m, 16);
        let segs = segments(ports_to(0, 1)[0], 3, 1000);
        assert_eq!(b.deliver_batch(Frames::Many(&segs), false), 3);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_coalesced), (3, 0), "off by default");
        b.set_coalesce(true);
        assert_eq!(b.deliver_batch(Frames::Many(&segs), false), 3);
        let c = b.counters[0].snapshot();
        assert_eq!((c.rx_frames, c.rx_coalesced), (4, 1));
    }

    /// The first `len` bytes the port wrote into pair 0's receive buffers
    /// (2 KiB each from 0x110000, mergeable): virtio-net header and frame.
    fn first_rx_buffers(m: &GuestMemoryMmap<()>, len: usize) -> Vec<u8> {
        use vm_memory::Bytes;
        let mut got = vec![0u8; len];
        let mut at = 0;
        for i in 0.. {
            if at == len {
                break;
            }
            let n = (len - at).min(0x800);
            m.read_slice(&mut got[at..at + n], GuestAddress(0x110_000 + i * 0x800))
                .unwrap();
            at += n;
        }
        got
    }

    /// `n` consecutive TCP/IPv6 segments of `len` payload bytes behind a
    /// Destination Options header of six zero bytes (gro.c's
    /// ip_v6ext_same), of a flow that goes to queue 0 of 2, checksums right.
    fn segments_behind_dstopts(n: usize, len: usize) -> Vec<Vec<u8>> {
        let build = |src: u8, i: usize| {
            let mut f = vec![0u8; 82];
            f[0..6].copy_from_slice(&[0x52, 0x54, 0, 0x12, 0x34, 0x56]);
            f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0x12, 0x34, 0x57]);
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            f[14] = 0x60;
            f[18..20].copy_from_slice(&((8 + 20 + len) as u16).to_be_bytes());
            f[20] = 60;
            f[21] = 64;
            f[22] = 0xfd;
            f[37] = src;
            f[38] = 0xfd;
            f[53] = 1;
            f[54] = 6;
            f[62..64].copy_from_slice(&1000u16.to_be_bytes());
            f[64..66].copy_from_slice(&12865u16.to_be_bytes());
            f[66..70].copy_from_slice(&((i * len) as u32).to_be_bytes());
            f[74] = 0x50;
            f[75] = 0x10;
            f[76..78].copy_from_slice(&500u16.to_be_bytes());
            f.extend((0..len).map(|k| (i * len + k) as u8));
            nicemu_net_util::csum::l4_csum(&mut f, 14, 62, false, 6).unwrap();
            f
        };
        let src = (2u8..)
            .find(|&s| flow_hash(&build(s, 0)).is_multiple_of(2))
            .unwrap();
        (0..n).map(|i| build(src, i)).collect()
    }

    /// Segments behind identical IPv6 extension headers merge as Linux's
    /// GRO merges them (`ipv6_gro_receive`): the header asks for TCPv6 GSO
    /// with the partial checksum from the TCP header behind the extension
    /// header, `hdr_len` covering it, and the IPv6 payload length counts it.
    #[test]
    fn segments_behind_ipv6_extension_headers_are_coalesced() {
        use super::super::offload::NetHdr;
        use virtio_bindings::bindings::virtio_net::{
            VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_TCPV6,
        };
        let m: GuestMemoryMmap<()> = shared_mem();
        let (b, _rx0, _tx) = pair0_kicked(&m, 16);
        b.set_coalesce(true);
        let segs = segments_behind_dstopts(3, 1000);
        assert_eq!(b.deliver_batch(Frames::Many(&segs), false), 3);
        let c = b.counters[0].snapshot();
        assert_eq!(
            (c.rx_frames, c.rx_coalesced, c.rx_coalesced_segs),
            (1, 1, 3)
        );
        let len = 82 + 3000;
        assert_eq!(c.rx_bytes, len as u64);
        let mut got = first_rx_buffers(&m, 12 + len);
        let h = NetHdr::parse(&got).unwrap();
        assert_eq!(h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM as u8);
        assert_eq!(h.gso_type, VIRTIO_NET_HDR_GSO_TCPV6 as u8);
        assert_eq!(
            (h.gso_size, h.hdr_len, h.csum_start, h.csum_offset),
            (1000, 82, 62, 16)
        );
        let frame = &mut got[12..];
        assert_eq!(&frame[54..62], &segs[0][54..62], "the extension header");
        assert_eq!(
            u16::from_be_bytes([frame[18], frame[19]]) as usize,
            8 + 20 + 3000
        );
        assert_eq!(
            &frame[82..],
            &(0..3000).map(|k| k as u8).collect::<Vec<_>>()[..]
        );
        nicemu_net_util::csum::complete_partial(frame, 62, 16).unwrap();
        assert!(nicemu_net_util::csum::l4_csum_ok(
            frame,
            14,
            false,
            6,
            62..len
        ));
    }

    /// Segments that waited in the backlog together (no receive buffers)
    /// are coalesced when buffers come.
    #[test]
    fn segments_waiting_in_the_backlog_are_coalesced() {
        let m: GuestMemoryMmap<()> = shared_mem();
        let (b, _rx0, tx) = pair0_kicked(&m, 0);
        b.set_coalesce(true);
        let port = ports_to(0, 1)[0];
        let segs = segments(port, 4, 500);
        let backlog = Backlog::new(2);
        for s in &segs {
            backlog.push(&b, s);
        }
        assert!(!backlog.pump(&b), "no buffers yet");
        assert_eq!(backlog.len(), 4);
        let rx0 = rx_vring(&m, 0x100_000, 16);
        b.handle_event(0, EventSet::IN, &[rx0, tx], 0).unwrap();
        assert!(backlog.pump(&b));
        assert!(backlog.is_empty());
        let c = b.counters[0].snapshot();
        assert_eq!(
            (c.rx_frames, c.rx_coalesced, c.rx_coalesced_segs),
            (1, 1, 4)
        );
        assert_eq!(
            b.rx.pending[0].load(std::sync::atomic::Ordering::Acquire),
            0
        );
    }

    /// Frames waiting for buffers are bounded in bytes as well as frames:
    /// 64 KiB frames (GSO-passed segments) fill a FIFO long before 512 of
    /// them (32 MiB) are held.
    #[test]
    fn the_backlog_is_bounded_in_bytes() {
        let m: GuestMemoryMmap<()> = shared_mem();
        let b = two_pair_backend(&m);
        let bl = Backlog::new(2);
        let mut big = tcp_frame(1000);
        big.resize(64 * 1024, 0);
        for _ in 0..super::super::backlog::PER_QUEUE {
            bl.push(&b, &big);
        }
        let held = bl.len() * big.len();
        assert!(
            held <= super::super::backlog::PER_QUEUE_BYTES,
            "{held} bytes held"
        );
        assert_eq!(
            b.port_counters.snapshot().rx_backlog_drops as usize,
            super::super::backlog::PER_QUEUE - bl.len()
        );
    }

    /// A receive queue the driver disabled after kicking it (fewer combined
    /// channels) must not swallow the frames of the flows hashed to it: they
    /// go to a queue still in use. (Before the fix the first such frame was
    /// dropped as `rx_not_ready`.)
    #[test]
    fn frames_for_a_disabled_queue_go_to_an_enabled_one() {
        let m: GuestMemoryMmap<()> = shared_mem();
        let b = Arc::new(NetBackend::new(
            "vn0".into(),
            [0x52, 0x54, 0, 0x12, 0x34, 0x56],
            2,
            Box::new(Nowhere),
            Arc::new(GsoPeers::default()),
        ));
        b.acked_features(device_features(2));
        b.update_memory(GuestMemoryAtomic::new(m.clone())).unwrap();
        let rx0 = rx_vring(&m, 0x100_000, 16);
        let rx1 = rx_vring(&m, 0x200_000, 16);
        let tx = rx_vring(&m, 0x300_000, 0);
        // Both receive queues kicked: both in use.
        b.handle_event(0, EventSet::IN, &[rx0.clone(), tx.clone()], 0)
            .unwrap();
        b.handle_event(0, EventSet::IN, &[rx1.clone(), tx.clone()], 1)
            .unwrap();
        // Flows that hash to queue 1 while two queues are in use.
        let frames: Vec<Vec<u8>> = (1000u16..)
            .map(tcp_frame)
            .filter(|f| flow_hash(f) % 2 == 1)
            .take(4)
            .collect();
        assert_eq!(b.deliver(&frames[0], false), Delivery::Done);
        assert_eq!(b.counters[1].snapshot().rx_frames, 1);
        // The driver turns queue 1 off.
        rx1.set_enabled(false);
        for f in &frames[1..] {
            assert_eq!(b.deliver(f, true), Delivery::Done);
        }
        assert_eq!(b.port_counters.snapshot().rx_not_ready, 0);
        assert_eq!(b.counters[0].snapshot().rx_frames, 3);
        assert_eq!(b.counters[1].snapshot().rx_frames, 1);
        assert_eq!(rx0.queue_used_idx().unwrap(), 3);
        // With no queue left, a frame is dropped and counted, not stuck.
        rx0.set_enabled(false);
        assert_eq!(b.deliver(&frames[1], false), Delivery::Done);
        assert_eq!(b.port_counters.snapshot().rx_not_ready, 1);
    }
}

/// A guest memory of one region over `file` (`size` bytes from offset 0).
fn file_mem(file: std::fs::File, size: usize) -> GuestMemoryMmap<()> {
    use vm_memory::mmap::MmapRegion;
    use vm_memory::{FileOffset, GuestRegionMmap};
    let r = MmapRegion::from_file(FileOffset::new(file, 0), size).unwrap();
    GuestMemoryMmap::from_regions(vec![GuestRegionMmap::new(r, GuestAddress(0)).unwrap()]).unwrap()
}

#[test]
fn memory_tables_that_could_sigbus_are_refused() {
    use super::memory::{check_memory, MAX_MEM_REGIONS};
    use nicemu_memfile::testutil::memfd;
    // A region larger than its file, a file that could shrink, a good one.
    assert!(check_memory(&file_mem(memfd(4096, true), 1 << 20)).is_err());
    assert!(check_memory(&file_mem(memfd(1 << 20, false), 1 << 20)).is_err());
    let f = memfd(1 << 20, true);
    assert_eq!(
        check_memory(&file_mem(f.try_clone().unwrap(), 1 << 20)),
        Ok(())
    );
    assert!(f.set_len(4096).is_err(), "sealed while mapped");
    // Anonymous memory has no file to check; too many regions.
    assert!(check_memory(&mem()).is_err());
    let many: Vec<(GuestAddress, usize)> = (0..=MAX_MEM_REGIONS as u64)
        .map(|i| (GuestAddress(i << 20), 4096))
        .collect();
    assert!(check_memory(&GuestMemoryMmap::from_ranges(&many).unwrap())
        .unwrap_err()
        .contains("regions"));
}
