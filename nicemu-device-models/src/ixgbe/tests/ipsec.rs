// SPDX-License-Identifier: Apache-2.0
//! The IPsec engine as ixgbe_ipsec.c drives it: SA table loads
//! (`ixgbe_ipsec_set_tx_sa`, `ixgbe_ipsec_set_rx_sa`, `ixgbe_ipsec_set_rx_ip`),
//! `ixgbe_ipsec_start_engine`, an offloaded transmit (`ixgbe_ipsec_tx` +
//! `ixgbe_tx_csum`) and the receive status `ixgbe_ipsec_rx` reads.

use vm_memory::{Bytes, GuestAddress};

use super::super::ipsec::*;
use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Key and salt as `xs->aead->alg_key` carries them (20 bytes), the
/// GCM ESP test vectors' case 2 (draft-mcgrew-gcm-test-01).
fn alg_key() -> Vec<u8> {
    hex("4c80cdefbb5d10da906ac73c3613a634 2e443b68")
}
/// SPI 0x00004321, sequence number 0x87654321, IV 4956ed7e3b244cfe.
const ESP_HEAD: &str = "00004321 87654321 4956ed7e3b244cfe";
/// The payload nicemu_net_util::esp's test encrypts.
const PLAIN: &str = "45000048 699a0000 80114db7 c0a80102 c0a80101 0a9bf156 38d30000 00000000
     00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
     00000000 00000000 01020201";
/// Its ciphertext and ICV, computed with OpenSSL 3.0's AES-128-GCM (an
/// implementation independent of the model's).
const SEALED: &str = "fecf537e 729d5b07 dc30df52 8dd22b76 8d1b9873 6696a6fd 348508fa 13cfac34
     cfa2436f 10fc80a6 15960484 90d13f2e 7cc2177b fd979a10 24c7dfce 84dd50ce
     619d17d6 69ff9533 0ac9abdf a00cc001 fa3e9d12 b33d3365 1bbb9715";
const DST: [u8; 4] = [192, 0, 2, 2];

/// The driver's `u32 key[4]` and salt: the alg_key bytes read as
/// little-endian words (`memcpy(mykey, key_data, 16)` on x86).
fn driver_words(k: &[u8]) -> ([u32; 4], u32) {
    let w = |i: usize| u32::from_le_bytes([k[i], k[i + 1], k[i + 2], k[i + 3]]);
    ([w(0), w(4), w(8), w(12)], w(16))
}

/// `ixgbe_ipsec_set_tx_sa`.
fn set_tx_sa(d: &Ixgbe, idx: u32, key: [u32; 4], salt: u32) {
    for i in 0..4 {
        wr(d, IPSTXKEY + 4 * i, key[3 - i as usize].swap_bytes());
    }
    wr(d, IPSTXSALT, salt.swap_bytes());
    let reg = rd(d, IPSTXIDX) & idx::IPS_EN;
    wr(d, IPSTXIDX, reg | idx << 3 | idx::WRITE);
}

/// `ixgbe_ipsec_set_rx_item`.
fn set_rx_item(d: &Ixgbe, idx: u32, tbl: u32) {
    let reg = rd(d, IPSRXIDX) & idx::IPS_EN;
    wr(d, IPSRXIDX, reg | tbl << 1 | idx << 3 | idx::WRITE);
}

/// `ixgbe_ipsec_set_rx_sa`; `spi` in wire order.
fn set_rx_sa(d: &Ixgbe, idx: u32, spi: [u8; 4], key: [u32; 4], salt: u32, mode: u32, ip: u32) {
    wr(d, IPSRXSPI, u32::from_le_bytes(spi));
    wr(d, IPSRXIPIDX, ip);
    set_rx_item(d, idx, 2);
    for i in 0..4 {
        wr(d, IPSRXKEY + 4 * i, key[3 - i as usize].swap_bytes());
    }
    wr(d, IPSRXSALT, salt.swap_bytes());
    wr(d, IPSRXMOD, mode);
    set_rx_item(d, idx, 3);
}

/// `ixgbe_ipsec_set_rx_ip` of an IPv4 address (`ipaddr[3]`).
fn set_rx_ip4(d: &Ixgbe, idx: u32, a: [u8; 4]) {
    for i in 0..3 {
        wr(d, IPSRXIPADDR + 4 * i, 0);
    }
    wr(d, IPSRXIPADDR + 12, u32::from_le_bytes(a));
    set_rx_item(d, idx, 1);
}

/// `ixgbe_ipsec_start_engine`'s enables.
fn start_engine(d: &Ixgbe) {
    wr(d, SECRXCTRL, 0);
    wr(d, SECTXCTRL, 4);
    wr(d, IPSTXIDX, idx::IPS_EN);
    wr(d, IPSRXIDX, idx::IPS_EN);
}

/// An Ethernet + IPv4 (protocol ESP) frame to DST around an ESP packet.
fn esp_frame(esp: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
    f[12] = 0x08;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((20 + esp.len()) as u16).to_be_bytes());
    f[22] = 64;
    f[23] = 50;
    f[26..30].copy_from_slice(&[192, 0, 2, 1]);
    f[30..34].copy_from_slice(&DST);
    nicemu_net_util::csum::ipv4_header_csum(&mut f, 14).unwrap();
    f.extend_from_slice(esp);
    f
}

/// The plaintext frame the driver hands over: ESP header and IV, payload,
/// 16 bytes of ICV room.
fn clear_frame() -> Vec<u8> {
    esp_frame(&[hex(ESP_HEAD), hex(PLAIN), vec![0; 16]].concat())
}

fn sealed_frame() -> Vec<u8> {
    esp_frame(&[hex(ESP_HEAD), hex(SEALED)].concat())
}

/// `ixgbe_tx_csum` without a checksum (the IPsec context alone) and one
/// data descriptor with POPTS.IPSEC, at ring slots `slot` and `slot + 1`.
fn send_ipsec(d: &Ixgbe, slot: u32, sa: u32, tucmd: u32, frame: &[u8]) {
    let ctx = TX_RING + u64::from(slot) * 16;
    let mem = d.mem();
    mem.write_obj(14u32 << 9, GuestAddress(ctx)).unwrap();
    mem.write_obj(sa, GuestAddress(ctx + 4)).unwrap();
    let esp_len = 16 + 2;
    let w2 = (1u32 << 29) | (2 << 20) | (tucmd << 9) | esp_len;
    mem.write_obj(w2, GuestAddress(ctx + 8)).unwrap();
    mem.write_obj(0u32, GuestAddress(ctx + 12)).unwrap();
    let buf = TX_BUFS + u64::from(slot) * 2048;
    mem.write_slice(frame, GuestAddress(buf)).unwrap();
    let desc = ctx + 16;
    mem.write_obj(buf, GuestAddress(desc)).unwrap();
    let cmd = 0x2b30_0000u32 | frame.len() as u32;
    mem.write_obj(cmd, GuestAddress(desc + 8)).unwrap();
    let olinfo = (frame.len() as u32) << 14 | 0x400;
    mem.write_obj(olinfo, GuestAddress(desc + 12)).unwrap();
    wr(d, txq_base(0) + q::T, slot + 2);
}

/// TUCMD of `ixgbe_ipsec_tx` for IPv4 ESP: IPSEC_TYPE_ESP | ENCRYPT_EN |
/// L4T_TCP | IPV4.
const TUCMD_ESP: u32 = 0x10 | 0x20 | 0x4 | 0x2;

#[test]
fn sa_tables_load_and_read_back_as_the_driver_writes_them() {
    let (d, _t) = I82599::dev();
    let k = alg_key();
    let (key, salt) = driver_words(&k);
    set_tx_sa(&d, 1023, key, salt);
    let sa = d.part.ipsec.tx_sa(1023).unwrap();
    assert_eq!(sa.key[..], k[..16], "the key in alg_key's byte order");
    assert_eq!(sa.salt[..], k[16..]);
    assert_eq!(
        rd(&d, IPSTXIDX) & (idx::WRITE | idx::READ),
        0,
        "self-clearing"
    );
    // READ of another entry loads it (all zero) into the data registers,
    // READ of 1023 brings the key back.
    wr(&d, IPSTXIDX, 7 << 3 | idx::READ);
    assert_eq!(rd(&d, IPSTXKEY), 0);
    wr(&d, IPSTXIDX, 1023 << 3 | idx::READ);
    assert_eq!(rd(&d, IPSTXKEY), key[3].swap_bytes());
    assert_eq!(rd(&d, IPSTXSALT), salt.swap_bytes());

    set_rx_ip4(&d, 127, DST);
    let mode = rxmod::VALID | rxmod::PROTO_ESP | rxmod::DECRYPT;
    set_rx_sa(&d, 4, [0, 0, 0x43, 0x21], key, salt, mode, 127);
    let rx = d.part.ipsec.rx_sa(4).unwrap();
    assert_eq!(rx.spi, [0, 0, 0x43, 0x21]);
    assert_eq!((rx.ip_idx, rx.mode), (127, mode));
    assert_eq!(rx.key, sa);
    let ip = d.part.ipsec.rx_ip(127).unwrap();
    assert_eq!(ip[12..], DST, "IPv4 in the last word");
    // An IP table index beyond 128 entries reaches nothing.
    set_rx_ip4(&d, 200, [1, 2, 3, 4]);
    assert!((0..IP_COUNT).all(|i| d.part.ipsec.rx_ip(i).unwrap()[12..] != [1, 2, 3, 4]));
    wr(&d, IPSRXIDX, 1 << 1 | 127 << 3 | idx::READ);
    assert_eq!(rd(&d, IPSRXIPADDR + 12), u32::from_le_bytes(DST));
}

#[test]
fn an_offloaded_frame_leaves_encrypted_as_software_esp() {
    let (d, t) = I82599::dev();
    setup_rings(&d, 16);
    let (key, salt) = driver_words(&alg_key());
    set_tx_sa(&d, 5, key, salt);
    // Engine off: the frame leaves as it is.
    send_ipsec(&d, 0, 5, TUCMD_ESP, &clear_frame());
    assert_eq!(t.wire.take(), vec![clear_frame()]);
    start_engine(&d);
    send_ipsec(&d, 2, 5, TUCMD_ESP, &clear_frame());
    let out = t.wire.take();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0], sealed_frame(), "byte for byte the software ESP");
    let c = &d.part.ipsec.counters;
    assert_eq!(c.tx_encrypted.load(std::sync::atomic::Ordering::Relaxed), 1);
    // Authentication-only ESP is not modelled: dropped and counted.
    send_ipsec(&d, 4, 5, TUCMD_ESP & !0x20, &clear_frame());
    assert!(t.wire.take().is_empty());
    assert_eq!(error_counter(&d, "tx_malformed"), 1);
    // A frame too short for header, IV and ICV.
    send_ipsec(&d, 6, 5, TUCMD_ESP, &esp_frame(&[0; 20]));
    assert!(t.wire.take().is_empty());
    assert_eq!(error_counter(&d, "tx_malformed"), 2);
    assert_eq!(rd(&d, txq_base(0) + q::H), 8, "every descriptor done");
}

/// Status dword, pkt_info and the buffer of the receive descriptor at `head`.
fn rx_result(d: &Ixgbe, head: u32, len: usize) -> (u32, u32, Vec<u8>) {
    let rxd = RX_RING + u64::from(head) * 16;
    let st: u32 = d.mem().read_obj(GuestAddress(rxd + 8)).unwrap();
    let info: u32 = d.mem().read_obj(GuestAddress(rxd)).unwrap();
    let mut buf = vec![0u8; len];
    let at = RX_BUFS + u64::from(head) * 2048;
    d.mem().read_slice(&mut buf, GuestAddress(at)).unwrap();
    (st, info, buf)
}

#[test]
fn a_received_esp_frame_is_decrypted_in_place_or_flagged() {
    let (d, _t) = I82599::dev();
    setup_rings(&d, 16);
    let (key, salt) = driver_words(&alg_key());
    set_rx_ip4(&d, 0, DST);
    let mode = rxmod::VALID | rxmod::PROTO_ESP | rxmod::DECRYPT;
    set_rx_sa(&d, 9, [0, 0, 0x43, 0x21], key, salt, mode, 0);
    start_engine(&d);
    let sealed = sealed_frame();
    let n = sealed.len();
    d.receive(&sealed);
    let (st, info, buf) = rx_result(&d, 0, n);
    assert_ne!(st & RXD_STAT_SECP, 0, "SECP");
    assert_eq!(st & 0x1800_0000, 0, "no IPsec error");
    assert_eq!(info & 0x1010, 0x1010, "packet type IPv4 | IPSEC_ESP");
    let mut want = clear_frame();
    want[n - 16..].copy_from_slice(&sealed[n - 16..]);
    assert_eq!(
        buf, want,
        "payload decrypted; headers, IV and ICV as received"
    );

    // A tampered ICV: authentication failed, the frame as received.
    let mut bad = sealed.clone();
    bad[n - 1] ^= 0x80;
    d.receive(&bad);
    let (st, _, buf) = rx_result(&d, 1, n);
    assert_eq!(
        st & (RXD_STAT_SECP | 0x1800_0000),
        RXD_STAT_SECP | RXD_ERR_IPSEC_AUTH_FAILED
    );
    assert_eq!(buf, bad);
    // An IP length beyond the frame: invalid length.
    let mut long = sealed.clone();
    long[16..18].copy_from_slice(&2000u16.to_be_bytes());
    d.receive(&long);
    let (st, _, _) = rx_result(&d, 2, n);
    assert_eq!(st & 0x1800_0000, RXD_ERR_IPSEC_INV_LENGTH);

    // Another SPI, or the SA marked IPv6: no SA matches, no SECP.
    let mut other = sealed.clone();
    other[34 + 3] = 0x22;
    d.receive(&other);
    let (st, info, buf) = rx_result(&d, 3, n);
    assert_eq!((st & RXD_STAT_SECP, info & 0x1000), (0, 0));
    assert_eq!(buf, other);
    set_rx_sa(&d, 9, [0, 0, 0x43, 0x21], key, salt, mode | rxmod::IPV6, 0);
    d.receive(&sealed);
    let (st, _, buf) = rx_result(&d, 4, n);
    assert_eq!(st & RXD_STAT_SECP, 0);
    assert_eq!(buf, sealed);
    let c = &d.part.ipsec.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        (
            get(&c.rx_decrypted),
            get(&c.rx_auth_failed),
            get(&c.rx_bad_length)
        ),
        (1, 1, 1)
    );
}

/// `ixgbe_tso` for a GSO frame with ESP (`esp_xmit` left the trailer out):
/// context with IPLEN over the IP header, ESP header and IV, MSS 1000,
/// SA 3; data descriptor with TSE and POPTS IXSM | TXSM | IPSEC.
fn send_esp_tso(d: &Ixgbe, frame: &[u8], paylen: u32) {
    let mem = d.mem();
    let ctx = TX_RING;
    mem.write_obj((14u32 << 9) | 36, GuestAddress(ctx)).unwrap();
    mem.write_obj(3u32, GuestAddress(ctx + 4)).unwrap();
    let w2 = (1u32 << 29) | (2 << 20) | (TUCMD_ESP << 9);
    mem.write_obj(w2, GuestAddress(ctx + 8)).unwrap();
    mem.write_obj((1000u32 << 16) | (20 << 8), GuestAddress(ctx + 12))
        .unwrap();
    mem.write_slice(frame, GuestAddress(TX_BUFS)).unwrap();
    let desc = ctx + 16;
    mem.write_obj(TX_BUFS, GuestAddress(desc)).unwrap();
    let cmd = 0x2b30_0000u32 | (1 << 31) | frame.len() as u32;
    mem.write_obj(cmd, GuestAddress(desc + 8)).unwrap();
    mem.write_obj(paylen << 14 | 0x700, GuestAddress(desc + 12))
        .unwrap();
    wr(d, txq_base(0) + q::T, 2);
}

#[test]
fn a_tso_frame_with_esp_leaves_as_esp_segments_software_esp_accepts() {
    let (d, t) = I82599::dev();
    setup_rings(&d, 16);
    let (key, salt) = driver_words(&alg_key());
    set_tx_sa(&d, 3, key, salt);
    start_engine(&d);
    let payload: Vec<u8> = (0..2500u32).map(|i| (i * 7) as u8).collect();
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&5001u16.to_be_bytes());
    tcp[2..4].copy_from_slice(&40000u16.to_be_bytes());
    tcp[4..8].copy_from_slice(&100u32.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x18; // ACK | PSH
    let esp = [hex(ESP_HEAD), tcp, payload.clone()].concat();
    send_esp_tso(&d, &esp_frame(&esp), payload.len() as u32);
    let out = t.wire.take();
    assert_eq!(out.len(), 3, "2500 bytes at MSS 1000");
    let sa = nicemu_net_util::esp::EspKey {
        key: alg_key()[..16].try_into().unwrap(),
        salt: alg_key()[16..].try_into().unwrap(),
    };
    let mut got = Vec::new();
    for (i, f) in out.iter().enumerate() {
        let mut f = f.clone();
        assert_eq!(
            usize::from(u16::from_be_bytes([f[16], f[17]])),
            f.len() - 14,
            "IP length"
        );
        let r = nicemu_net_util::csum::verify_rx(&f);
        assert!(r.ip_checked && r.ip_ok, "IPv4 header checksum");
        let seq = u32::from_be_bytes([f[38], f[39], f[40], f[41]]);
        assert_eq!(
            seq,
            0x8765_4321 + i as u32,
            "one sequence number per segment"
        );
        let n = f.len();
        sa.open(&mut f[34..])
            .expect("software ESP accepts the segment");
        let (pad, next) = (usize::from(f[n - 18]), f[n - 17]);
        assert_eq!(next, 6, "next header TCP");
        assert_eq!(
            (n - 16 - 50) % 4,
            0,
            "payload and trailer padded to four bytes"
        );
        let tcp_end = n - 18 - pad;
        let tseq = u32::from_be_bytes([f[54], f[55], f[56], f[57]]);
        assert_eq!(tseq, 100 + 1000 * i as u32);
        assert!((1..=pad).all(|p| f[tcp_end + p - 1] == p as u8));
        got.extend_from_slice(&f[70..tcp_end]);
    }
    assert_eq!(got, payload);
}

/// The outer and inner IP versions of `ipsec_vxlan.py`'s four cases.
#[derive(Clone, Copy, Debug)]
struct Vxlan {
    outer_v4: bool,
    inner_v4: bool,
}

const VXLAN_MSS: usize = 1000;
const VXLAN_SEGS: usize = 3;

/// An IPv4 or IPv6 header of `next` carrying `len` bytes of payload, from
/// `src` to `dst` (the last byte of each address).
fn ip_header(v4: bool, next: u8, len: usize, src: u8, dst: u8) -> Vec<u8> {
    if v4 {
        let mut h = vec![0u8; 20];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&((20 + len) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        h[6] = 0x40; // DF
        h[8] = 64;
        h[9] = next;
        h[12..16].copy_from_slice(&[192, 168, 100, src]);
        h[16..20].copy_from_slice(&[192, 168, 100, dst]);
        let c = nicemu_net_util::csum::csum_fold(nicemu_net_util::csum::csum_add(0, &h));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    } else {
        let mut h = vec![0u8; 40];
        h[0] = 0x60;
        h[4..6].copy_from_slice(&(len as u16).to_be_bytes());
        h[6] = next;
        h[7] = 64;
        h[8..10].copy_from_slice(&[0xfd, 0]);
        h[23] = src;
        h[24..26].copy_from_slice(&[0xfd, 0]);
        h[39] = dst;
        h
    }
}

/// The frame `ixgbe_tso` hands over for a `SKB_GSO_PARTIAL` TCP send
/// through VXLAN (UDP port 4789, no UDP checksum: `noudpcsum` /
/// `udp6zerocsumtx`) inside transport-mode ESP (`esp_xmit` with GSO: ESP
/// header and IV, no trailer), as the stack and the driver leave it: the
/// outer and inner headers sized for one MSS segment (`skb_segment` with
/// GSO_PARTIAL, `__skb_udp_tunnel_segment`, `inet_gso_segment`), the outer
/// IPv4 total length zero and its checksum the complement of the sum from
/// its end to the inner TCP header, or the outer IPv6 payload length zero;
/// the inner TCP checksum the inner pseudo-header sum without length
/// (`csum_replace_by_diff`). Returns it with its payload and IPLEN.
fn vxlan_esp_tso_frame(v: Vxlan) -> (Vec<u8>, Vec<u8>, usize) {
    use nicemu_net_util::csum::{csum_add, csum_fold, pseudo_seed};
    let payload: Vec<u8> = (0..VXLAN_SEGS * VXLAN_MSS)
        .map(|i| (i * 13 + 1) as u8)
        .collect();
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&5201u16.to_be_bytes());
    tcp[2..4].copy_from_slice(&40000u16.to_be_bytes());
    tcp[4..8].copy_from_slice(&7000u32.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x18; // ACK | PSH
    tcp[14..16].copy_from_slice(&512u16.to_be_bytes());
    let seg_tcp = 20 + VXLAN_MSS;
    let inner_ip = ip_header(v.inner_v4, 6, seg_tcp, 1, 2);
    let mut inner_eth = vec![0u8; 14];
    inner_eth[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    inner_eth[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    inner_eth[12..14].copy_from_slice(&if v.inner_v4 { [8, 0] } else { [0x86, 0xdd] });
    let vxlan = [8u8, 0, 0, 0, 0, 0, 100, 0];
    let udp_len = 8 + 8 + 14 + inner_ip.len() + seg_tcp;
    let mut udp = vec![0u8; 8];
    udp[0..2].copy_from_slice(&50000u16.to_be_bytes());
    udp[2..4].copy_from_slice(&4789u16.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    let esp = hex(ESP_HEAD);
    let tunnel = [esp, udp, vxlan.to_vec(), inner_eth, inner_ip.clone()].concat();
    // The inner TCP checksum: the inner pseudo header, no length.
    let seed = pseudo_seed(&inner_ip, 0, v.inner_v4, 6, None);
    tcp[16..18].copy_from_slice(&seed.to_be_bytes());
    let mut outer = ip_header(v.outer_v4, 50, 0, 1, 2);
    if v.outer_v4 {
        outer[2..4].fill(0);
        let c = csum_fold(csum_add(0, &tunnel));
        outer[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let iplen = outer.len() + tunnel.len();
    let mut f = vec![0u8; 14];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
    f[12..14].copy_from_slice(&if v.outer_v4 { [8, 0] } else { [0x86, 0xdd] });
    let f = [f, outer, tunnel, tcp, payload.clone()].concat();
    (f, payload, iplen)
}

/// `ixgbe_tso` + `ixgbe_ipsec_tx` for `vxlan_esp_tso_frame`: context with
/// MACLEN 14, IPLEN up to the inner TCP header, L4LEN 20, TUCMD ESP |
/// ENCRYPT | L4T TCP (| IPV4 for an IPv4 outer header), SA 3; one data
/// descriptor with TSE and POPTS IXSM | TXSM | IPSEC.
fn send_vxlan_esp_tso(d: &Ixgbe, v: Vxlan, frame: &[u8], iplen: usize) {
    let mem = d.mem();
    let ctx = TX_RING;
    mem.write_obj((14u32 << 9) | iplen as u32, GuestAddress(ctx))
        .unwrap();
    mem.write_obj(3u32, GuestAddress(ctx + 4)).unwrap();
    let tucmd = if v.outer_v4 {
        TUCMD_ESP
    } else {
        TUCMD_ESP & !0x2
    };
    let w2 = (1u32 << 29) | (2 << 20) | (tucmd << 9);
    mem.write_obj(w2, GuestAddress(ctx + 8)).unwrap();
    let w3 = ((VXLAN_MSS as u32) << 16) | (20 << 8);
    mem.write_obj(w3, GuestAddress(ctx + 12)).unwrap();
    mem.write_slice(frame, GuestAddress(TX_BUFS)).unwrap();
    let desc = ctx + 16;
    mem.write_obj(TX_BUFS, GuestAddress(desc)).unwrap();
    let cmd = 0x2b30_0000u32 | (1 << 31) | frame.len() as u32;
    mem.write_obj(cmd, GuestAddress(desc + 8)).unwrap();
    let paylen = (frame.len() - 14 - iplen - 20) as u32;
    mem.write_obj(paylen << 14 | 0x700, GuestAddress(desc + 12))
        .unwrap();
    wr(d, txq_base(0) + q::T, 2);
}

/// Checks one segment as the peer's software ESP and stack take it: outer
/// IP length and header checksum, ESP ICV and trailer (next header UDP),
/// the VXLAN UDP length, the inner IP length and the inner TCP checksum
/// with the inner pseudo header. Returns the TCP sequence number and payload.
fn open_vxlan_segment(v: Vxlan, sa: &nicemu_net_util::esp::EspKey, f: &[u8]) -> (u32, Vec<u8>) {
    use nicemu_net_util::csum::{csum_add, csum_fold, pseudo_seed};
    let mut f = f.to_vec();
    let n = f.len();
    let esp = if v.outer_v4 {
        let r = nicemu_net_util::csum::verify_rx(&f);
        assert!(r.ip_checked && r.ip_ok, "outer IPv4 header checksum");
        let len = usize::from(u16::from_be_bytes([f[16], f[17]]));
        assert_eq!(len, n - 14, "outer IPv4 total length");
        34
    } else {
        let len = usize::from(u16::from_be_bytes([f[18], f[19]]));
        assert_eq!(len, n - 54, "outer IPv6 payload length");
        54
    };
    sa.open(&mut f[esp..])
        .expect("the peer's software ESP accepts the segment");
    let (pad, next) = (usize::from(f[n - 18]), f[n - 17]);
    assert_eq!(next, 17, "ESP next header: UDP (VXLAN), not the L4 type");
    let end = n - 18 - pad;
    assert!((1..=pad).all(|p| f[end + p - 1] == p as u8), "padding");
    let udp = esp + 16;
    assert_eq!(
        usize::from(u16::from_be_bytes([f[udp + 4], f[udp + 5]])),
        end - udp,
        "UDP length"
    );
    let inner = udp + 8 + 8 + 14;
    let ihl = if v.inner_v4 { 20 } else { 40 };
    let tcp = inner + ihl;
    if v.inner_v4 {
        assert_eq!(csum_fold(csum_add(0, &f[inner..tcp])), 0, "inner IPv4 csum");
        assert_eq!(
            usize::from(u16::from_be_bytes([f[inner + 2], f[inner + 3]])),
            end - inner
        );
    } else {
        assert_eq!(
            usize::from(u16::from_be_bytes([f[inner + 4], f[inner + 5]])),
            end - tcp
        );
    }
    let ph = pseudo_seed(&f, inner, v.inner_v4, 6, Some(end - tcp));
    let sum = csum_add(u32::from(ph), &f[tcp..end]);
    assert_eq!(csum_fold(sum), 0, "inner TCP checksum, inner pseudo header");
    let seq = u32::from_be_bytes([f[tcp + 4], f[tcp + 5], f[tcp + 6], f[tcp + 7]]);
    (seq, f[tcp + 20..end].to_vec())
}

/// `ipsec_vxlan.py`: a TCP bulk send through VXLAN in offloaded ESP leaves
/// as ESP segments the peer's software ESP decrypts and whose inner TCP it
/// accepts, for all four outer/inner IP version pairs.
#[test]
fn a_vxlan_tso_frame_in_esp_leaves_as_segments_the_peer_accepts() {
    let sa = nicemu_net_util::esp::EspKey {
        key: alg_key()[..16].try_into().unwrap(),
        salt: alg_key()[16..].try_into().unwrap(),
    };
    for (outer_v4, inner_v4) in [(true, true), (true, false), (false, true), (false, false)] {
        let v = Vxlan { outer_v4, inner_v4 };
        let (d, t) = I82599::dev();
        setup_rings(&d, 16);
        let (key, salt) = driver_words(&alg_key());
        set_tx_sa(&d, 3, key, salt);
        start_engine(&d);
        let (frame, payload, iplen) = vxlan_esp_tso_frame(v);
        send_vxlan_esp_tso(&d, v, &frame, iplen);
        let out = t.wire.take();
        assert_eq!(out.len(), VXLAN_SEGS, "{v:?}");
        let mut got = Vec::new();
        for (i, f) in out.iter().enumerate() {
            let (seq, data) = open_vxlan_segment(v, &sa, f);
            assert_eq!(seq, 7000 + (i * VXLAN_MSS) as u32, "{v:?}");
            got.extend_from_slice(&data);
        }
        assert_eq!(got, payload, "{v:?}");
        assert_eq!(error_counter(&d, "tx_malformed"), 0, "{v:?}");
    }
}
