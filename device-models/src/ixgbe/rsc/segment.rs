// SPDX-License-Identifier: Apache-2.0
//! Which received frames receive side coalescing may merge, and how a
//! segment relates to an open context (the candidate rules of
//! [`super`]): TCP straight over IPv4 without options or fragmentation, or
//! over IPv6 without extension headers, carrying data, with no TCP flag but
//! ACK and PSH, and good IP and TCP checksums.

use net_util::csum::verify_rx;
use net_util::frame::{parse, IPPROTO_TCP};

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
    /// IP header length (20 for IPv4 here, 40 for IPv6).
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

/// The segment a frame carries: `None` for frames that are not TCP over
/// IPv4/IPv6 with a whole TCP header (they never touch a context).
pub fn classify(frame: &[u8], vet: u16) -> Option<Segment> {
    let p = parse(frame)?;
    if p.proto != IPPROTO_TCP {
        return None;
    }
    let l4 = p.l4?;
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
    let (ip_len, l3_end) = if p.ipv4 {
        key.src[..4].copy_from_slice(&frame[p.l3 + 12..p.l3 + 16]);
        key.dst[..4].copy_from_slice(&frame[p.l3 + 16..p.l3 + 20]);
        (l4 - p.l3, p.l3 + usize::from(be16(frame, p.l3 + 2)))
    } else {
        key.src.copy_from_slice(&frame[p.l3 + 8..p.l3 + 24]);
        key.dst.copy_from_slice(&frame[p.l3 + 24..p.l3 + 40]);
        (40, p.l3 + 40 + usize::from(be16(frame, p.l3 + 4)))
    };
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
    let csum = verify_rx(frame);
    let candidate = ip_len == if p.ipv4 { 20 } else { 40 }
        && data > 0
        && flags & ACK != 0
        && flags & (FIN | SYN | RST | URG | ECE | CWR) == 0
        && csum.l4_checked
        && csum.l4_ok
        && (!p.ipv4 || csum.ip_ok);
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
    let zero = |h: &mut [u8; MAX_HDR], r: std::ops::Range<usize>| {
        h[r.start.min(n)..r.end.min(n)].fill(0);
    };
    if s.key.ipv6 {
        zero(&mut h, 4..6);
    } else {
        zero(&mut h, 2..6);
        zero(&mut h, 10..12);
    }
    let t = s.ip_len;
    zero(&mut h, t + 4..t + 12);
    if t + 13 < n {
        h[t + 13] &= !PSH;
    }
    zero(&mut h, t + 14..t + 20);
    h
}
