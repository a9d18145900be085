// SPDX-License-Identifier: Apache-2.0
//! Receive coalescing of TCP segments, shared by the 82599's receive side
//! coalescing (datasheet §7.11, `nicemu_device_models::ixgbe::rsc`) and virtio-net's
//! receive path (GSO frames for a driver that negotiated
//! `VIRTIO_NET_F_GUEST_TSO4/6`, virtio 1.2 §5.1.6.4).
//!
//! Which received frames may be merged, and how a segment relates to the
//! ones before it: for the 82599's RSC, TCP straight over IPv4 without
//! options or fragmentation, or over IPv6 without extension headers,
//! carrying data, with no TCP flag but ACK and PSH, and good IP and TCP
//! checksums ([`classify`]); the header bytes a later segment must repeat
//! ([`shape`]). [`gro_run`] takes what Linux's GRO takes instead
//! (`ipv6_gro_receive`, `tcp_gro_receive`, `inet_gro_flush`) so that a
//! merged frame is one the receiving stack could have built itself: TCP
//! over IPv6 may also sit behind hop-by-hop, routing and destination options
//! headers ([`crate::frame::ipv6_upper_layer`]) that every segment of a run
//! repeats byte for byte; the same acknowledgement number and window,
//! equal-sized segments but a shorter last one, PSH only on the last, and
//! the IPv4 ID rules (fixed or incrementing, as Linux 7.2's GRO and its
//! gro.c selftest take them).

use std::ops::Range;

use crate::csum::{self, csum_add, csum_fold};
use crate::frame::{ipv6_upper_layer, parse, put16, ETH_P_8021Q, IPPROTO_TCP};

/// TCP flags.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
/// Push: appended, then the context closes.
pub const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// The largest IP + TCP header a context keeps (IPv6 40 + TCP 60).
pub const MAX_HDR: usize = 100;

/// The connection a segment belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKey {
    /// IPv6 (else IPv4 in the first four bytes of the addresses).
    pub ipv6: bool,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Source port, destination port.
    pub ports: [u16; 2],
    /// VLAN tag control of a tagged frame, else 0.
    pub vlan: u16,
}

/// A received TCP segment as coalescing sees it.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    /// Its connection.
    pub key: FlowKey,
    /// Offset of the IP header in the frame.
    pub l3: usize,
    /// IP plus TCP header length.
    pub hdr_len: usize,
    /// IP header length: IPv4's by its IHL, IPv6's 40 plus the extension
    /// headers GRO walks ([`gro_run`]; [`classify`] walks none).
    pub ip_len: usize,
    /// Offset and length of the TCP payload in the frame (by the IP
    /// length: Ethernet padding excluded).
    pub payload: (usize, usize),
    /// Sequence number.
    pub seq: u32,
    /// TCP flags.
    pub flags: u8,
    /// All candidate conditions hold.
    pub candidate: bool,
}

fn be16(f: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([f[o], f[o + 1]])
}

/// Whether the TCP header of an IPv6 packet is looked for behind its
/// extension headers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ipv6Ext {
    /// Only straight after the fixed header (the 82599's RSC): a packet
    /// with extension headers is not TCP.
    None,
    /// Behind hop-by-hop, routing and destination options headers too
    /// (Linux's GRO, [`ipv6_upper_layer`]).
    Walk,
}

/// The segment a frame carries as the 82599's RSC sees it: `None` for
/// frames that are not TCP over IPv4/IPv6 with a whole TCP header (they
/// never touch a context); an IPv6 packet with extension headers is not
/// TCP to it (`next header` not 6).
pub fn classify(frame: &[u8], vet: u16) -> Option<Segment> {
    let mut s = headers(frame, vet, Ipv6Ext::None)?;
    if s.candidate {
        s.candidate = checksums_ok(frame, &s);
    }
    Some(s)
}

/// [`classify`] without the checksums: `candidate` holds every condition
/// but the good IP and TCP checksums. `ext` says where an IPv6 packet's TCP
/// header may be.
fn headers(frame: &[u8], vet: u16, ext: Ipv6Ext) -> Option<Segment> {
    let p = parse(frame)?;
    let mut l4 = p.l4?;
    let mut key = FlowKey {
        ipv6: !p.ipv4,
        src: [0; 16],
        dst: [0; 16],
        ports: [0; 2],
        vlan: 0,
    };
    if be16(frame, 12) == vet {
        key.vlan = be16(frame, 14);
    }
    let mut proto = p.proto;
    let l3_end = if p.ipv4 {
        key.src[..4].copy_from_slice(&frame[p.l3 + 12..p.l3 + 16]);
        key.dst[..4].copy_from_slice(&frame[p.l3 + 16..p.l3 + 20]);
        p.l3 + usize::from(be16(frame, p.l3 + 2))
    } else {
        key.src.copy_from_slice(&frame[p.l3 + 8..p.l3 + 24]);
        key.dst.copy_from_slice(&frame[p.l3 + 24..p.l3 + 40]);
        let end = p.l3 + 40 + usize::from(be16(frame, p.l3 + 4));
        if ext == Ipv6Ext::Walk && proto != IPPROTO_TCP {
            (proto, l4) = ipv6_upper_layer(frame, p.l3, end)?;
        }
        end
    };
    if proto != IPPROTO_TCP {
        return None;
    }
    let ip_len = l4 - p.l3;
    if frame.len() < l4 + 20 || l3_end > frame.len() {
        return None;
    }
    let doff = usize::from(frame[l4 + 12] >> 4) * 4;
    if doff < 20 || l4 + doff > l3_end {
        return None;
    }
    key.ports = [be16(frame, l4), be16(frame, l4 + 2)];
    let flags = frame[l4 + 13];
    let data = l3_end - (l4 + doff);
    let candidate = ip_len == if p.ipv4 { 20 } else { 40 }
        && data > 0
        && flags & ACK != 0
        && flags & (FIN | SYN | RST | URG | ECE | CWR) == 0;
    Some(Segment {
        key,
        l3: p.l3,
        hdr_len: ip_len + doff,
        ip_len,
        payload: (l4 + doff, data),
        seq: u32::from_be_bytes([frame[l4 + 4], frame[l4 + 5], frame[l4 + 6], frame[l4 + 7]]),
        flags,
        candidate,
    })
}

/// The IP and TCP header bytes a context keeps and a later segment must
/// repeat, with the fields coalescing rewrites or that change from segment
/// to segment zeroed: IPv4 total length, ID and checksum, IPv6 payload
/// length, TCP sequence and acknowledgement numbers, PSH, window, checksum
/// and urgent pointer.
pub fn shape(frame: &[u8], s: &Segment) -> [u8; MAX_HDR] {
    let mut h = [0u8; MAX_HDR];
    let n = s.hdr_len.min(MAX_HDR);
    h[..n].copy_from_slice(&frame[s.l3..s.l3 + n]);
    let t = s.ip_len;
    for r in varying_fields(s.key.ipv6, t) {
        h[r.start.min(n)..r.end.min(n)].fill(0);
    }
    if t + 13 < n {
        h[t + 13] &= !PSH;
    }
    h
}

/// The ranges of a segment's headers, from the IP header, that [`shape`]
/// zeroes (PSH aside), in order: IPv4 total length and ID (IPv6 payload
/// length; then an empty range) and IPv4 header checksum, TCP sequence and
/// acknowledgement numbers, TCP window, checksum and urgent pointer. `tcp`
/// is the offset of the TCP header.
fn varying_fields(ipv6: bool, tcp: usize) -> [Range<usize>; 4] {
    let (a, b) = if ipv6 { (4..6, 6..6) } else { (2..6, 10..12) };
    [a, b, tcp + 4..tcp + 12, tcp + 14..tcp + 20]
}

/// Segment `b` repeats the headers of segment `a` as [`shape`] compares
/// them, at any length: the IP header (IPv6 extension headers included)
/// and the TCP header with its options, but for the [`varying_fields`] and
/// PSH.
fn same_shape(a: &[u8], sa: &Segment, b: &[u8], sb: &Segment) -> bool {
    if sa.hdr_len != sb.hdr_len || sa.ip_len != sb.ip_len || sa.key.ipv6 != sb.key.ipv6 {
        return false;
    }
    let (ha, hb) = (&a[sa.l3..sa.payload.0], &b[sb.l3..sb.payload.0]);
    let t = sa.ip_len;
    let [v0, v1, v2, v3] = varying_fields(sa.key.ipv6, t);
    let mut at = 0;
    for skip in [v0, v1, v2, t + 13..t + 14, v3] {
        if ha[at..skip.start] != hb[at..skip.start] {
            return false;
        }
        at = skip.end;
    }
    ha[at..] == hb[at..] && (ha[t + 13] ^ hb[t + 13]) & !PSH == 0
}

/// Largest IP datagram a merged frame may be (the IPv4 total length field;
/// Linux's `GRO_LEGACY_MAX_SIZE` is the same 64 KiB).
pub const MAX_MERGED_IP: usize = 65535;

/// The first frames of a batch that merge into one TCP segment by GRO's
/// rules ([`gro_run`]), and where the merged frame's headers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroRun {
    /// Frames merged (at least 2).
    pub count: usize,
    /// Payload bytes of the first segment: every other one but the last
    /// carries as many, the last at most as many (the GSO size).
    pub mss: u16,
    /// TCP over IPv6 (else IPv4).
    pub ipv6: bool,
    /// Offset of the IP header.
    pub l3: usize,
    /// Offset of the TCP header.
    pub l4: usize,
    /// Offset of the payload: the length of the headers a segment repeats.
    pub hdr_len: usize,
    /// Length of the merged frame.
    pub len: usize,
    /// Every segment has CWR (a run's segments agree on it): the merged
    /// segment needs ECN segmentation (virtio-net `VIRTIO_NET_HDR_GSO_ECN`,
    /// Linux `SKB_GSO_TCP_ECN`).
    pub cwr: bool,
}

/// A segment GRO may merge, checksums aside: TCP over IPv4 without options
/// or fragmentation, or over IPv6, straight or behind the extension headers
/// [`headers`] walks (`ipv6_gro_receive`; a fragment, AH or ESP header ends
/// the walk at something other than TCP), carrying data, ACK set, none of
/// FIN, SYN, RST, URG. ECE and CWR may be set as long as a run's segments
/// agree on them (`tcp_gro_receive` of Linux 7.2, whose gro.c expects two
/// CWR segments to merge with each other but not with their neighbours).
fn gro_eligible(s: &Segment) -> bool {
    (s.key.ipv6 || s.ip_len == 20)
        && s.payload.1 > 0
        && s.flags & ACK != 0
        && s.flags & (FIN | SYN | RST | URG) == 0
}

/// The segment's IP header (IPv4) and TCP checksums are right: the TCP
/// segment's with the pseudo header of its IP header, wherever
/// [`headers`] found it.
fn checksums_ok(frame: &[u8], s: &Segment) -> bool {
    let l4 = s.l3 + s.ip_len;
    let ip_ok = s.key.ipv6 || csum_fold(csum_add(0, &frame[s.l3..l4])) == 0;
    let tcp = l4..s.payload.0 + s.payload.1;
    ip_ok && csum::l4_csum_ok(frame, s.l3, !s.key.ipv6, IPPROTO_TCP, tcp)
}

/// [`headers`] as GRO takes them: IPv6 extension headers walked.
fn gro_headers(frame: &[u8]) -> Option<Segment> {
    headers(frame, ETH_P_8021Q, Ipv6Ext::Walk)
}

/// The TCP acknowledgement number, data offset, flags and window of a
/// segment (bytes 8..16 of its header) with PSH cleared.
fn ack_and_window(frame: &[u8], s: &Segment) -> [u8; 8] {
    let l4 = s.l3 + s.ip_len;
    let mut b = [0u8; 8];
    b.copy_from_slice(&frame[l4 + 8..l4 + 16]);
    b[5] &= !PSH;
    b
}

/// How the IPv4 IDs of a run go: decided by the second segment, fixed when
/// its ID is the first's, else incrementing (`inet_gro_flush` of Linux 7.2,
/// whose gro.c expects both with DF set or clear).
#[derive(Clone, Copy, PartialEq, Eq)]
enum IdRule {
    Undecided,
    Fixed,
    Incrementing,
}

/// The IPv4 ID of the segment's header.
fn ipv4_id(frame: &[u8], s: &Segment) -> u16 {
    be16(frame, s.l3 + 4)
}

/// How many of `frames`, from the first, merge into one segment the way
/// Linux's GRO merges them (`tcp_gro_receive`, `inet_gro_flush`,
/// `ipv6_gro_receive`), or `None` when fewer than two do.
///
/// The first frame opens the run when it is a segment GRO may merge
/// (`gro_eligible`, good checksums) without an 802.1Q tag and without
/// PSH. Each next frame continues it when it is such a segment of the same
/// connection that carries the next sequence number, repeats the first
/// one's [`shape`] (so TTL/hop limit, TOS/traffic class with its ECN bits,
/// DF, flow label, every IPv6 extension header byte for byte, the TCP
/// flags but PSH and every TCP option, timestamps included, are equal;
/// `ipv6_gro_receive` compares the whole network header), and its acknowledgement number and window, carries
/// at most as many payload bytes as the first, keeps the merged datagram
/// within [`MAX_MERGED_IP`], and, over IPv4, has the ID the run's rule
/// gives: the first's when the second segment repeated it (a fixed ID),
/// else the first's plus its place in the run. A continuing segment that is shorter than the first or
/// carries PSH is the last. Only what is given is looked at: nothing waits
/// for more frames.
pub fn gro_run<'a>(frames: impl IntoIterator<Item = &'a [u8]>) -> Option<GroRun> {
    let mut it = frames.into_iter();
    let first = it.next()?;
    let s0 = gro_headers(first)?;
    if !gro_eligible(&s0) || s0.key.vlan != 0 || s0.flags & PSH != 0 {
        return None;
    }
    let mss = u16::try_from(s0.payload.1).ok()?;
    // The second frame is looked at before any checksum is summed: most
    // batches do not continue their first frame's connection.
    let mut rest = it.peekable();
    let second = gro_headers(rest.peek()?)?;
    if second.key != s0.key || second.seq != s0.seq.wrapping_add(u32::from(mss)) {
        return None;
    }
    if !checksums_ok(first, &s0) {
        return None;
    }
    let tail0 = ack_and_window(first, &s0);
    let id0 = ipv4_id(first, &s0);
    let mut rule = IdRule::Undecided;
    let mut count = 1usize;
    let mut ip_len = s0.payload.0 - s0.l3 + s0.payload.1;
    let mut next_seq = s0.seq.wrapping_add(u32::from(mss));
    for f in rest {
        let Some(s) = gro_headers(f) else {
            break;
        };
        let len = s.payload.1;
        if !gro_eligible(&s)
            || s.key != s0.key
            || s.seq != next_seq
            || len > usize::from(mss)
            || ip_len + len > MAX_MERGED_IP
            || !same_shape(first, &s0, f, &s)
            || ack_and_window(f, &s) != tail0
            || !checksums_ok(f, &s)
        {
            break;
        }
        if !s0.key.ipv6 {
            let step = ipv4_id(f, &s).wrapping_sub(id0);
            if rule == IdRule::Undecided {
                rule = if step == 0 {
                    IdRule::Fixed
                } else {
                    IdRule::Incrementing
                };
            }
            let want = match rule {
                IdRule::Fixed => 0,
                _ => count as u16,
            };
            if step != want {
                break;
            }
        }
        count += 1;
        ip_len += len;
        next_seq = next_seq.wrapping_add(len as u32);
        if len < usize::from(mss) || s.flags & PSH != 0 {
            break;
        }
    }
    (count >= 2).then_some(GroRun {
        count,
        mss,
        ipv6: s0.key.ipv6,
        l3: s0.l3,
        l4: s0.l3 + s0.ip_len,
        hdr_len: s0.payload.0,
        len: s0.l3 + ip_len,
        cwr: s0.flags & CWR != 0,
    })
}

/// The TCP payload of a segment of a run (by its IP length: Ethernet
/// padding excluded).
fn run_payload<'a>(frame: &'a [u8], run: &GroRun) -> &'a [u8] {
    let end = if run.ipv6 {
        run.l3 + 40 + usize::from(be16(frame, run.l3 + 4))
    } else {
        run.l3 + usize::from(be16(frame, run.l3 + 2))
    };
    &frame[run.hdr_len.min(end)..end.min(frame.len())]
}

/// Builds into `out` the frame a [`GroRun`] of `frames` merges into: the
/// first segment's headers, every segment's payload in order, the IP length
/// (and IPv4 header checksum) of the whole, PSH if the last segment had it,
/// and in the TCP checksum field the pseudo-header sum a partially
/// checksummed frame carries (Linux `tcp_gro_complete`; virtio-net
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM` with `csum_start` the TCP header and
/// `csum_offset` 16). `frames` must be the frames [`gro_run`] was given.
pub fn merge_run<'a>(frames: impl IntoIterator<Item = &'a [u8]>, run: &GroRun, out: &mut Vec<u8>) {
    out.clear();
    out.reserve(run.len);
    let mut psh = false;
    for (i, f) in frames.into_iter().take(run.count).enumerate() {
        if i == 0 {
            out.extend_from_slice(&f[..run.hdr_len]);
        }
        out.extend_from_slice(run_payload(f, run));
        psh = f[run.l4 + 13] & PSH != 0;
    }
    let ip_total = out.len() - run.l3;
    if run.ipv6 {
        put16(out, run.l3 + 4, (ip_total - 40) as u16);
    } else {
        put16(out, run.l3 + 2, ip_total as u16);
        let _ = csum::ipv4_header_csum(out, run.l3);
    }
    if psh {
        out[run.l4 + 13] |= PSH;
    }
    let seed = csum::pseudo_seed(
        out,
        run.l3,
        !run.ipv6,
        IPPROTO_TCP,
        Some(out.len() - run.l4),
    );
    put16(out, run.l4 + 16, seed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csum::{complete_partial, l4_csum, verify_rx};

    /// One segment of the test connection: IPv4 (DF set, `id`) or IPv6
    /// behind the extension headers `ext` (type and the bytes after its
    /// next header and length fields), TCP with a 12-byte timestamp option
    /// (`tsval`), `len` payload bytes that continue the byte pattern at
    /// `seq`, flags ACK plus `flags`, good checksums.
    #[derive(Clone, Copy)]
    struct Seg {
        v6: bool,
        seq: u32,
        len: usize,
        id: u16,
        df: bool,
        flags: u8,
        ack: u32,
        window: u16,
        ttl: u8,
        tsval: u32,
        ext: Chain,
    }

    impl Seg {
        fn v4(seq: u32, len: usize, id: u16) -> Seg {
            Seg {
                v6: false,
                seq,
                len,
                id,
                df: true,
                flags: 0,
                ack: 7,
                window: 500,
                ttl: 64,
                tsval: 1,
                ext: &[],
            }
        }

        fn v6(seq: u32, len: usize) -> Seg {
            Seg {
                v6: true,
                ..Seg::v4(seq, len, 0)
            }
        }

        fn frame(&self) -> Vec<u8> {
            let ext_len: usize = self.ext.iter().map(|(_, b)| 2 + b.len()).sum();
            let (l3, ip) = (14, if self.v6 { 40 + ext_len } else { 20 });
            let l4 = l3 + ip;
            let mut f = vec![0u8; l4 + 32 + self.len];
            f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
            if self.v6 {
                f[12..14].copy_from_slice(&[0x86, 0xdd]);
                f[l3] = 0x60;
                put16(&mut f, l3 + 4, (ext_len + 32 + self.len) as u16);
                f[l3 + 6] = self.ext.first().map_or(IPPROTO_TCP, |e| e.0);
                let mut at = l3 + 40;
                for (i, (_, body)) in self.ext.iter().enumerate() {
                    f[at] = self.ext.get(i + 1).map_or(IPPROTO_TCP, |e| e.0);
                    f[at + 1] = ((2 + body.len()) / 8 - 1) as u8;
                    f[at + 2..at + 2 + body.len()].copy_from_slice(body);
                    at += 2 + body.len();
                }
                f[l3 + 7] = self.ttl;
                f[l3 + 8] = 0xfd;
                f[l3 + 23] = 1;
                f[l3 + 24] = 0xfd;
                f[l3 + 39] = 2;
            } else {
                f[12..14].copy_from_slice(&[0x08, 0x00]);
                f[l3] = 0x45;
                put16(&mut f, l3 + 2, (ip + 32 + self.len) as u16);
                put16(&mut f, l3 + 4, self.id);
                f[l3 + 6] = if self.df { 0x40 } else { 0 };
                f[l3 + 8] = self.ttl;
                f[l3 + 9] = IPPROTO_TCP;
                f[l3 + 12..l3 + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
                csum::ipv4_header_csum(&mut f, l3).unwrap();
            }
            put16(&mut f, l4, 4000);
            put16(&mut f, l4 + 2, 8000);
            f[l4 + 4..l4 + 8].copy_from_slice(&self.seq.to_be_bytes());
            f[l4 + 8..l4 + 12].copy_from_slice(&self.ack.to_be_bytes());
            f[l4 + 12] = 8 << 4;
            f[l4 + 13] = ACK | self.flags;
            put16(&mut f, l4 + 14, self.window);
            // NOP, NOP, timestamp (kind 8, length 10).
            f[l4 + 20..l4 + 24].copy_from_slice(&[1, 1, 8, 10]);
            f[l4 + 24..l4 + 28].copy_from_slice(&self.tsval.to_be_bytes());
            for (i, b) in f[l4 + 32..].iter_mut().enumerate() {
                *b = (self.seq as usize + i) as u8;
            }
            l4_csum(&mut f, l3, l4, !self.v6, IPPROTO_TCP).unwrap();
            f
        }
    }

    /// A run of same-size IPv4 segments with incrementing IDs.
    fn run4(sizes: &[usize]) -> Vec<Vec<u8>> {
        let mut seq = 1000u32;
        sizes
            .iter()
            .enumerate()
            .map(|(i, &len)| {
                let f = Seg::v4(seq, len, 100 + i as u16).frame();
                seq += len as u32;
                f
            })
            .collect()
    }

    fn run_of(frames: &[Vec<u8>]) -> Option<GroRun> {
        gro_run(frames.iter().map(Vec::as_slice))
    }

    fn count_of(frames: &[Vec<u8>]) -> usize {
        run_of(frames).map_or(1, |r| r.count)
    }

    #[test]
    fn equal_segments_merge_into_one_valid_frame() {
        let frames = run4(&[1000, 1000, 1000, 600]);
        let run = run_of(&frames).unwrap();
        assert_eq!((run.count, run.mss, run.ipv6), (4, 1000, false));
        assert_eq!((run.l3, run.l4, run.hdr_len), (14, 34, 66));
        let mut out = Vec::new();
        merge_run(frames.iter().map(Vec::as_slice), &run, &mut out);
        assert_eq!(out.len(), run.len);
        assert_eq!(out.len(), 66 + 3600);
        // The headers are the first segment's, with the whole length.
        assert_eq!(&out[..16], &frames[0][..16]);
        assert_eq!(u16::from_be_bytes([out[16], out[17]]), 20 + 32 + 3600);
        assert_eq!(&out[34..50], &frames[0][34..50]);
        // The payload is every segment's in order (the pattern continues).
        for (i, b) in out[66..].iter().enumerate() {
            assert_eq!(*b, (1000 + i) as u8, "payload byte {i}");
        }
        // The IPv4 header checksum is right; completing the partial TCP
        // checksum gives a frame that verifies.
        let r = verify_rx(&out);
        assert!(r.ip_checked && r.ip_ok);
        complete_partial(&mut out, run.l4, 16).unwrap();
        let r = verify_rx(&out);
        assert!(r.l4_checked && r.l4_ok);
    }

    #[test]
    fn a_shorter_segment_ends_the_run_and_a_longer_one_is_not_merged() {
        assert_eq!(count_of(&run4(&[1000, 1000, 500, 1000])), 3);
        assert_eq!(count_of(&run4(&[500, 1000])), 1);
        assert_eq!(count_of(&run4(&[1000, 1001])), 1);
        assert_eq!(count_of(&run4(&[1000])), 1);
        assert!(run_of(&[]).is_none());
    }

    #[test]
    fn psh_is_merged_last_and_never_opens_a_run() {
        let mut s = Seg::v4(1000, 100, 1);
        let a = s.frame();
        s.seq += 100;
        s.id += 1;
        s.flags = PSH;
        let b = s.frame();
        s.seq += 100;
        s.id += 1;
        s.flags = 0;
        let c = s.frame();
        let frames = vec![a, b.clone(), c.clone()];
        let run = run_of(&frames).unwrap();
        assert_eq!(run.count, 2);
        let mut out = Vec::new();
        merge_run(frames.iter().map(Vec::as_slice), &run, &mut out);
        assert_ne!(out[34 + 13] & PSH, 0, "the merged segment carries PSH");
        assert_eq!(count_of(&[b, c]), 1);
    }

    #[test]
    fn other_flags_and_pure_acks_are_not_merged() {
        for flag in [SYN, RST, URG, FIN, CWR, ECE] {
            let mut s = Seg::v4(1000, 100, 1);
            let a = s.frame();
            s.seq += 100;
            s.id += 1;
            s.flags = flag;
            assert_eq!(count_of(&[a.clone(), s.frame()]), 1, "flag {flag:#x}");
            assert_eq!(count_of(&[s.frame(), a]), 1, "flag {flag:#x} first");
        }
        assert_eq!(count_of(&run4(&[0, 0, 0])), 1);
    }

    /// gro.c's flags_cwr: a CWR segment ends the run before it, CWR
    /// segments merge with each other, and the next one without CWR
    /// starts anew.
    #[test]
    fn cwr_segments_merge_only_with_each_other() {
        let frames: Vec<Vec<u8>> = (0..5u32)
            .map(|i| {
                let mut s = Seg::v4(1000 + 100 * i, 100, i as u16);
                if i == 1 || i == 2 {
                    s.flags = CWR;
                }
                s.frame()
            })
            .collect();
        assert_eq!(count_of(&frames), 1);
        let run = run_of(&frames[1..]).unwrap();
        assert_eq!((run.count, run.cwr), (2, true));
        let run = run_of(&frames[3..]).unwrap();
        assert_eq!((run.count, run.cwr), (2, false));
    }

    #[test]
    fn differing_headers_or_a_gap_stop_the_run() {
        type Change = fn(&mut Seg);
        let changes: [(&str, Change); 6] = [
            ("ack", |s| s.ack += 1),
            ("window", |s| s.window += 1),
            ("ttl", |s| s.ttl -= 1),
            ("timestamp", |s| s.tsval += 1),
            ("sequence gap", |s| s.seq += 1),
            ("DF", |s| s.df = false),
        ];
        for (what, change) in changes {
            let mut s = Seg::v4(1000, 100, 1);
            let a = s.frame();
            s.seq += 100;
            s.id += 1;
            change(&mut s);
            assert_eq!(count_of(&[a, s.frame()]), 1, "{what}");
        }
        // A bad TCP checksum on either segment.
        let mut frames = run4(&[100, 100]);
        let last = frames[1].len() - 1;
        frames[1][last] ^= 1;
        assert_eq!(count_of(&frames), 1);
        frames.swap(0, 1);
        assert_eq!(count_of(&frames), 1);
        // Another connection's segment between two of this one.
        let mut frames = run4(&[100, 100]);
        let mut other = Seg::v4(5000, 100, 9).frame();
        put16(&mut other, 34, 4001);
        l4_csum(&mut other, 14, 34, true, IPPROTO_TCP).unwrap();
        frames.insert(1, other);
        assert_eq!(count_of(&frames), 1);
    }

    /// IPv4 IDs as `inet_gro_flush` takes them (gro.c's ip_id_* cases).
    #[test]
    fn ipv4_id_rules() {
        let ids = |df: bool, ids: &[u16]| {
            let frames: Vec<Vec<u8>> = ids
                .iter()
                .enumerate()
                .map(|(i, &id)| {
                    Seg {
                        df,
                        ..Seg::v4(1000 + 100 * i as u32, 100, id)
                    }
                    .frame()
                })
                .collect();
            count_of(&frames)
        };
        assert_eq!(ids(false, &[5, 6, 7, 8]), 4, "DF clear, incrementing");
        assert_eq!(ids(false, &[5, 5, 5]), 3, "DF clear, fixed");
        assert_eq!(
            ids(false, &[5, 6, 6]),
            2,
            "DF clear, incrementing then fixed"
        );
        assert_eq!(ids(false, &[5, 7]), 1, "DF clear, a jump");
        assert_eq!(ids(true, &[5, 6, 7]), 3, "DF set, incrementing");
        assert_eq!(ids(true, &[5, 5, 5]), 3, "DF set, fixed");
        assert_eq!(ids(true, &[5, 6, 6]), 2, "DF set, incrementing then fixed");
        assert_eq!(ids(true, &[5, 5, 6]), 2, "DF set, fixed then incrementing");
        assert_eq!(ids(false, &[0xffff, 0, 1]), 3, "the ID wraps");
    }

    #[test]
    fn ipv6_segments_merge_unless_the_flow_label_differs() {
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|i| Seg::v6(1 + 1200 * i, 1200).frame())
            .collect();
        let run = run_of(&frames).unwrap();
        assert_eq!(
            (run.count, run.ipv6, run.l4, run.hdr_len),
            (3, true, 54, 86)
        );
        let mut out = Vec::new();
        merge_run(frames.iter().map(Vec::as_slice), &run, &mut out);
        assert_eq!(
            usize::from(u16::from_be_bytes([out[18], out[19]])),
            32 + 3600
        );
        complete_partial(&mut out, run.l4, 16).unwrap();
        assert!(verify_rx(&out).l4_ok);
        let mut other = frames[1].clone();
        other[15] = 0x01;
        assert_eq!(count_of(&[frames[0].clone(), other]), 1);
    }

    #[test]
    fn a_merged_datagram_stays_within_64_kib() {
        let frames = run4(&[1448; 60]);
        let run = run_of(&frames).unwrap();
        assert_eq!(run.count, (MAX_MERGED_IP - 52) / 1448);
        assert!(run.len - run.l3 <= MAX_MERGED_IP);
    }

    /// Cutting the second frame, then both, anywhere leaves nothing to merge.
    fn assert_no_truncation_merges(frames: &[Vec<u8>]) {
        for cut in 0..frames[1].len() {
            let mut f = frames.to_vec();
            f[1].truncate(cut);
            assert_eq!(count_of(&f), 1, "second cut at {cut}");
            f[0].truncate(cut);
            assert_eq!(count_of(&f), 1, "both cut at {cut}");
        }
    }

    #[test]
    fn truncated_and_padded_frames_are_safe() {
        let frames = run4(&[100, 100, 100]);
        assert_no_truncation_merges(&frames);
        // Ethernet padding after the IP datagram is not payload.
        let mut f = frames.clone();
        for x in &mut f {
            x.extend_from_slice(&[0xee; 6]);
        }
        let run = run_of(&f).unwrap();
        let mut out = Vec::new();
        merge_run(f.iter().map(Vec::as_slice), &run, &mut out);
        assert_eq!(out.len(), 66 + 300);
        for (i, b) in out[66..].iter().enumerate() {
            assert_eq!(*b, (1000 + i) as u8, "payload byte {i}");
        }
    }

    use crate::frame::{NEXTHDR_DEST, NEXTHDR_HOP, NEXTHDR_ROUTING};

    /// gro.c's ip_v6ext_same: a Destination Options header of six zero
    /// bytes (PadN).
    const DST0: (u8, &[u8]) = (NEXTHDR_DEST, &[0; 6]);
    /// ip_v6ext_diff's second segment: the same header with 0x11 bytes.
    const DST1: (u8, &[u8]) = (NEXTHDR_DEST, &[0x11; 6]);
    /// A hop-by-hop options header of the same size and content as DST0.
    const HOP0: (u8, &[u8]) = (NEXTHDR_HOP, &[0; 6]);
    /// A longer destination options header that starts like DST0.
    const DST_LONG: (u8, &[u8]) = (NEXTHDR_DEST, &[0; 14]);

    /// Extension headers: each one's type and the bytes after its next
    /// header and length fields.
    type Chain = &'static [(u8, &'static [u8])];

    /// IPv6 segments of `len` bytes each behind the extension headers `ext`
    /// (one list per segment), in sequence.
    fn run6(len: usize, exts: &[Chain]) -> Vec<Vec<u8>> {
        exts.iter()
            .enumerate()
            .map(|(i, &ext)| {
                Seg {
                    ext,
                    ..Seg::v6(1 + (len * i) as u32, len)
                }
                .frame()
            })
            .collect()
    }

    /// The merged frame is the one segment the sender could have sent: the
    /// first segment's headers, extension headers included, the IPv6
    /// payload length covering them, and a partial TCP checksum whose
    /// pseudo header counts the TCP segment only (RFC 8200 §8.1), from a
    /// `csum_start` at the TCP header behind them.
    #[test]
    fn segments_behind_identical_extension_headers_merge() {
        let frames = run6(100, &[&[DST0], &[DST0], &[DST0]]);
        let run = run_of(&frames).unwrap();
        assert_eq!(
            (run.count, run.ipv6, run.mss, run.l3, run.l4, run.hdr_len),
            (3, true, 100, 14, 62, 94)
        );
        let mut out = Vec::new();
        merge_run(frames.iter().map(Vec::as_slice), &run, &mut out);
        assert_eq!(out.len(), run.len);
        assert_eq!(
            usize::from(u16::from_be_bytes([out[18], out[19]])),
            8 + 32 + 300
        );
        assert_eq!(&out[54..62], &frames[0][54..62], "the header is kept");
        let seed = u16::from_be_bytes([out[62 + 16], out[62 + 17]]);
        assert_eq!(
            seed,
            csum::pseudo_seed(&out, 14, false, IPPROTO_TCP, Some(32 + 300))
        );
        complete_partial(&mut out, run.l4, 16).unwrap();
        let whole = Seg {
            ext: &[DST0],
            ..Seg::v6(1, 300)
        }
        .frame();
        assert_eq!(out, whole, "the merged frame is the whole segment");
        // Two headers, as RFC 8200 §4.1 orders them, and a routing header.
        let chain: &[(u8, &[u8])] = &[
            (NEXTHDR_HOP, &[1, 4, 0, 0, 0, 0]),
            (NEXTHDR_DEST, &[0; 14]),
            (NEXTHDR_ROUTING, &[4, 0, 0, 0, 0, 0]),
            DST0,
        ];
        let run = run_of(&run6(100, &[chain, chain])).unwrap();
        assert_eq!((run.count, run.l4), (2, 14 + 40 + 40));
    }

    /// `ipv6_gro_receive` merges only packets whose network headers,
    /// extension headers included, are the same (gro.c's ip_v6ext_diff).
    #[test]
    fn different_extension_headers_do_not_merge() {
        let pairs: [(&str, Chain, Chain); 5] = [
            ("content", &[DST0], &[DST1]),
            ("type", &[DST0], &[HOP0]),
            ("one more", &[DST0], &[DST0, DST0]),
            ("none first", &[], &[DST0]),
            ("none second", &[DST0], &[]),
        ];
        for (what, a, b) in pairs {
            assert_eq!(count_of(&run6(100, &[a, b])), 1, "{what}");
        }
        // A longer header with the same first bytes.
        assert_eq!(count_of(&run6(100, &[&[DST0], &[DST_LONG]])), 1);
        // Each merges with its own kind.
        assert_eq!(count_of(&run6(100, &[&[DST1], &[DST1]])), 2);
        assert_eq!(count_of(&run6(100, &[&[HOP0], &[HOP0]])), 2);
    }

    /// What GRO does not look behind, and chains it does not walk, leave
    /// the segment alone: a fragment header (gro.c's ip_frag6), AH or ESP
    /// after the walked headers, hop-by-hop other than first, and chains
    /// longer than the walk's bound.
    #[test]
    fn fragments_and_unwalked_chains_are_not_merged() {
        for other in [44u8, 50, 51] {
            let ext: &[(u8, &[u8])] = match other {
                44 => &[DST0, (44, &[0; 6])],
                50 => &[DST0, (50, &[0; 6])],
                _ => &[DST0, (51, &[0; 6])],
            };
            assert_eq!(count_of(&run6(100, &[ext, ext])), 1, "next header {other}");
        }
        let late_hop: &[(u8, &[u8])] = &[DST0, (NEXTHDR_HOP, &[0; 6])];
        assert_eq!(count_of(&run6(100, &[late_hop, late_hop])), 1);
        let five: &[(u8, &[u8])] = &[DST0; 5];
        assert_eq!(count_of(&run6(100, &[five, five])), 1, "five headers");
        let four: &[(u8, &[u8])] = &[DST0; 4];
        assert_eq!(count_of(&run6(100, &[four, four])), 2, "four headers");
        // 256 bytes of extension headers are walked, 264 are not.
        let big: &[(u8, &[u8])] = &[(NEXTHDR_DEST, &[0; 254])];
        assert_eq!(count_of(&run6(100, &[big, big])), 2, "256 bytes");
        let over: &[(u8, &[u8])] = &[(NEXTHDR_DEST, &[0; 262])];
        assert_eq!(count_of(&run6(100, &[over, over])), 1, "264 bytes");
    }

    /// A length field that runs past the IP payload or the frame, and
    /// frames cut anywhere, are not candidates (and nothing reads outside
    /// the frame).
    #[test]
    fn malformed_and_truncated_extension_headers_are_not_candidates() {
        let frames = run6(100, &[&[DST0], &[DST0]]);
        assert_eq!(count_of(&frames), 2);
        for len in 0..=255u8 {
            let mut f = frames.clone();
            f[1][54 + 1] = len;
            let want = if len == 0 { 2 } else { 1 };
            assert_eq!(count_of(&f), want, "second's length field {len}");
            f[0][54 + 1] = len;
            let want = if len == 0 { 2 } else { 1 };
            assert_eq!(count_of(&f), want, "both length fields {len}");
        }
        // A payload length that ends inside the extension header.
        let mut f = frames.clone();
        put16(&mut f[1], 18, 4);
        assert_eq!(count_of(&f), 1);
        assert_no_truncation_merges(&frames);
        // A bad TCP checksum behind the header.
        let mut f = frames.clone();
        let last = f[1].len() - 1;
        f[1][last] ^= 1;
        assert_eq!(count_of(&f), 1);
    }

    /// The 82599's RSC keeps its rule: an IPv6 packet with extension
    /// headers is not TCP to it ([`classify`]), while GRO merges it.
    #[test]
    fn rsc_does_not_look_behind_extension_headers() {
        let frames = run6(100, &[&[DST0], &[DST0]]);
        assert!(classify(&frames[0], ETH_P_8021Q).is_none());
        assert_eq!(count_of(&frames), 2);
        let plain = Seg::v6(1, 100).frame();
        let s = classify(&plain, ETH_P_8021Q).unwrap();
        assert!(s.candidate && s.ip_len == 40);
    }
}
