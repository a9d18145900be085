// SPDX-License-Identifier: Apache-2.0
//! The 82599's inline IPsec engine (datasheet §7.12): its security
//! association tables, written and read through IPSTXIDX / IPSRXIDX, and
//! the ESP transform it applies on transmit and receive. The transform is
//! AES-128-GCM ESP with a 16-byte ICV ([`nicemu_net_util::esp`], RustCrypto's
//! `aes-gcm` crate) — the only one Linux's ixgbe offloads
//! (`ixgbe_ipsec_parse_proto_keys` refuses anything but
//! `rfc4106(gcm(aes))` with a 128-bit key and ICV).
//!
//! Tables (1024 transmit SAs, 1024 receive SAs, 128 receive IP addresses)
//! are loaded the way `ixgbe_ipsec_set_tx_sa`, `ixgbe_ipsec_set_rx_sa` and
//! `ixgbe_ipsec_set_rx_ip` load them: the data registers first, then the
//! index register with WRITE, the entry's index and (receive) the table.
//! READ copies an entry back into the data registers. Both bits
//! self-clear. A device reset leaves the tables (the driver clears them
//! itself: `ixgbe_ipsec_clear_hw_tables`).
//!
//! Byte order, as the driver writes it: IPS?XKEY\[i\] holds key bytes
//! 12-4i..16-4i most significant first, IPS?XSALT the salt bytes the same
//! way; IPSRXSPI and IPSRXIPADDR\[i\] hold the SPI and address bytes in
//! wire order, least significant first; an IPv4 address is IPSRXIPADDR\[3\].
//!
//! Transmit: a frame whose first data descriptor asks for IPsec (POPTS
//! bit 2) under a context with IPSEC_TYPE_ESP and ENCRYPT_EN is encrypted
//! with transmit SA `SA_IDX` of its context: everything between the ESP
//! IV and the ICV, whose 16 bytes (the room the driver left at the end of
//! the IP packet) receive the ICV. A request the engine cannot serve is
//! dropped and counted (`tx_malformed`, and [`IpsecCounters::tx_dropped`]):
//! a frame that is not IPv4/IPv6 with an ESP header next, whose IP length
//! exceeds the frame, too short for header, IV and ICV; an AH or
//! authentication-only ESP request (not modelled: ixgbe never makes one,
//! it refuses AH and non-AEAD SAs). A TCP segmentation frame with ESP is
//! encrypted per segment (`esp_segment`). With the engine off
//! (SECTXCTRL, IPSTXIDX.IPS_EN) frames leave as they are.
//!
//! Receive: an untagged IPv4 (unfragmented) or IPv6 frame whose next header
//! is ESP is looked up by destination address (the IP table) and SPI; a
//! valid SA of the frame's family matches. Then the descriptor reports
//! SECP and the IPsec ESP packet type (what `ixgbe_ipsec_rx` reads), and an
//! SA with DECRYPT has the payload decrypted in place, trailer and ICV left
//! where they are for the stack (`esp_input_done2`). An ICV that does not
//! match sets the error code "authentication failed" and leaves the frame
//! as received; an ESP packet shorter than header, IV and ICV, or an IP
//! length beyond the frame, sets "invalid length". Both codes lie in the
//! frame error bits, so the driver drops such frames
//! (`ixgbe_cleanup_headers`). Frames without a matching SA pass as usual.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use nicemu_net_util::esp::{EspError, EspKey, ESP_ICV_LEN, ESP_PAYLOAD_OFF};
use nicemu_net_util::IPPROTO_UDP;

use super::regs::*;
use super::Ixgbe;
use crate::desc::{TxContext, POPTS_IPSEC, TUCMD_IPSEC_ENCRYPT, TUCMD_IPSEC_ESP, TXD_CMD_TSE};
use crate::function::RxSecurity;
use crate::sync::lock;
use crate::txframe::FrameOpts;

/// Entries of each SA table (`IXGBE_IPSEC_MAX_SA_COUNT`).
pub const SA_COUNT: usize = 1024;
/// Entries of the receive IP address table (`IXGBE_IPSEC_MAX_RX_IP_COUNT`).
pub const IP_COUNT: usize = 128;

/// IPSTXIDX / IPSRXIDX bits (§8.2.3.27).
pub mod idx {
    /// SA lookup enabled.
    pub const IPS_EN: u32 = 1 << 0;
    /// Receive table select (1 IP, 2 SPI, 3 key).
    pub const TABLE_SHIFT: u32 = 1;
    /// Entry index.
    pub const INDEX_SHIFT: u32 = 3;
    /// Read the entry into the data registers.
    pub const READ: u32 = 1 << 30;
    /// Write the data registers into the entry.
    pub const WRITE: u32 = 1 << 31;
}

/// IPSRXMOD bits (`IXGBE_RXMOD_*`).
pub mod rxmod {
    /// The SA is valid.
    pub const VALID: u32 = 1 << 0;
    /// ESP (else AH).
    pub const PROTO_ESP: u32 = 1 << 2;
    /// Decrypt (else authenticate only).
    pub const DECRYPT: u32 = 1 << 3;
    /// IPv6 SA.
    pub const IPV6: u32 = 1 << 4;
}

/// SECTXCTRL / SECRXCTRL: security block off, data path off.
const SEC_DISABLE: u32 = 0x3;
/// RX status: security processing done (`IXGBE_RXDADV_STAT_SECP`).
pub const RXD_STAT_SECP: u32 = 1 << 17;
/// RX error code: invalid IPsec length (`IXGBE_RXDADV_ERR_IPSEC_INV_LENGTH`).
pub const RXD_ERR_IPSEC_INV_LENGTH: u32 = 0x1000_0000;
/// RX error code: authentication failed (`IXGBE_RXDADV_ERR_IPSEC_AUTH_FAILED`).
pub const RXD_ERR_IPSEC_AUTH_FAILED: u32 = 0x1800_0000;
/// Packet type: IPsec ESP (`IXGBE_RXDADV_PKTTYPE_IPSEC_ESP`).
pub const PTYPE_IPSEC_ESP: u16 = 0x1000;
const IPPROTO_ESP: u8 = 50;
const IPPROTO_IPIP: u8 = 4;
const IPPROTO_IPV6: u8 = 41;

/// A receive SA: the SPI and IP table entry it matches, its key, its mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxSa {
    /// SPI in wire byte order.
    pub spi: [u8; 4],
    /// IP table index.
    pub ip_idx: u32,
    /// Key and salt.
    pub key: EspKey,
    /// IPSRXMOD.
    pub mode: u32,
}

#[derive(Debug)]
struct Tables {
    tx: Vec<EspKey>,
    rx: Vec<RxSa>,
    ip: Vec<[u8; 16]>,
}

impl Default for Tables {
    fn default() -> Self {
        Tables {
            tx: vec![EspKey::default(); SA_COUNT],
            rx: vec![RxSa::default(); SA_COUNT],
            ip: vec![[0; 16]; IP_COUNT],
        }
    }
}

/// What the engine did, for `nicemu ctl` and the tests (the 82599 itself
/// keeps no IPsec counters; the driver counts `tx_ipsec` / `rx_ipsec`).
#[derive(Debug, Default)]
pub struct IpsecCounters {
    /// Frames encrypted on transmit.
    pub tx_encrypted: AtomicU64,
    /// IPsec requests dropped on transmit.
    pub tx_dropped: AtomicU64,
    /// Frames decrypted on receive.
    pub rx_decrypted: AtomicU64,
    /// Frames received with an ICV that did not match.
    pub rx_auth_failed: AtomicU64,
    /// Frames received with an invalid ESP length.
    pub rx_bad_length: AtomicU64,
}

/// The engine's tables and counters.
#[derive(Debug, Default)]
pub struct Ipsec {
    tables: Mutex<Tables>,
    /// What the engine did.
    pub counters: IpsecCounters,
}

impl Ipsec {
    /// Transmit SA `i`'s key material.
    pub fn tx_sa(&self, i: usize) -> Option<EspKey> {
        lock(&self.tables).tx.get(i).copied()
    }
    /// Receive SA `i`.
    pub fn rx_sa(&self, i: usize) -> Option<RxSa> {
        lock(&self.tables).rx.get(i).copied()
    }
    /// Receive IP table entry `i` (an IPv4 address in bytes 12..16).
    pub fn rx_ip(&self, i: usize) -> Option<[u8; 16]> {
        lock(&self.tables).ip.get(i).copied()
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Where an ESP packet lies in a frame: its start and end.
struct EspAt {
    start: usize,
    end: usize,
    ipv4: bool,
}

/// Finds the ESP packet of an untagged frame: IPv4 (any header length, not
/// a fragment) or IPv6 (ESP right after the fixed header). `Err` where the
/// frame is ESP but its IP length exceeds it.
fn find_esp(f: &[u8]) -> Option<Result<EspAt, ()>> {
    let et = u16::from_be_bytes([*f.get(12)?, *f.get(13)?]);
    let ip = 14;
    let (hl, total, proto, ipv4) = match et {
        0x0800 => {
            let ihl = usize::from(f.get(ip)? & 0xf) * 4;
            let frag = u16::from_be_bytes([*f.get(ip + 6)?, *f.get(ip + 7)?]) & 0x3fff;
            if f.get(ip)? >> 4 != 4 || ihl < 20 || frag != 0 {
                return None;
            }
            let total = usize::from(u16::from_be_bytes([f[ip + 2], f[ip + 3]]));
            (ihl, total, *f.get(ip + 9)?, true)
        }
        0x86dd => {
            let pl = usize::from(u16::from_be_bytes([*f.get(ip + 4)?, *f.get(ip + 5)?]));
            (40, 40 + pl, *f.get(ip + 6)?, false)
        }
        _ => return None,
    };
    if proto != IPPROTO_ESP || f.len() < ip + hl {
        return None;
    }
    if total < hl || ip + total > f.len() {
        return Some(Err(()));
    }
    Some(Ok(EspAt {
        start: ip + hl,
        end: ip + total,
        ipv4,
    }))
}

/// Key material from a key register block and its salt register.
fn key_from(regs: impl Fn(u32) -> u32, key: u32, salt: u32) -> EspKey {
    let mut k = EspKey::default();
    for i in 0..4 {
        let at = 12 - 4 * i;
        k.key[at..at + 4].copy_from_slice(&regs(key + 4 * i as u32).to_be_bytes());
    }
    k.salt = regs(salt).to_be_bytes();
    k
}

/// Encrypts a frame (or segment `seg` of a TSO frame) for `key`; why not
/// where the request cannot be served.
fn ipsec_seal(
    key: &EspKey,
    o: &FrameOpts,
    ctx: &TxContext,
    seg: usize,
    frame: &mut Vec<u8>,
) -> Result<(), &'static str> {
    let esp_encrypt = TUCMD_IPSEC_ESP | TUCMD_IPSEC_ENCRYPT;
    if ctx.tucmd & esp_encrypt != esp_encrypt {
        return Err("AH or authentication-only ESP (not modelled)");
    }
    let Some(Ok(mut at)) = find_esp(frame) else {
        return Err("no IPv4/IPv6 ESP packet in the frame");
    };
    if o.cmd & TXD_CMD_TSE != 0 {
        at = esp_segment(frame, at, ctx, seg)?;
    }
    key.seal(&mut frame[at.start..at.end])
        .map_err(|_| "ESP packet shorter than header, IV and ICV")
}

/// Segment `seg` of a TSO frame with ESP: the stack leaves the trailer out
/// (`esp_xmit` with GSO) and reserves one sequence number per segment, so
/// the engine gives segment `seg` sequence number and IV those of the
/// frame plus `seg`, appends padding to four bytes, pad length, next header
/// ([`esp_next_header`]) and ICV room, and grows the IP length to match.
/// The IV increment is nicemu's choice (GCM needs a nonce per packet); the
/// datasheet text on it was not at hand.
fn esp_segment(
    frame: &mut Vec<u8>,
    at: EspAt,
    ctx: &TxContext,
    seg: usize,
) -> Result<EspAt, &'static str> {
    if at.end != frame.len() || at.end < at.start + ESP_PAYLOAD_OFF {
        return Err("TSO segment without room for the ESP header and IV");
    }
    let add = |b: &mut [u8], by: u64| {
        let v = b
            .iter()
            .fold(0u64, |a, &x| a << 8 | u64::from(x))
            .wrapping_add(by);
        let n = b.len();
        b.copy_from_slice(&v.to_be_bytes()[8 - n..]);
    };
    add(&mut frame[at.start + 4..at.start + 8], seg as u64);
    add(
        &mut frame[at.start + 8..at.start + ESP_PAYLOAD_OFF],
        seg as u64,
    );
    let payload = at.end - at.start - ESP_PAYLOAD_OFF;
    let pad = (4 - (payload + 2) % 4) % 4;
    frame.extend((1..=pad).map(|p| p as u8));
    let next = esp_next_header(frame, at.start + ESP_PAYLOAD_OFF, ctx);
    frame.extend_from_slice(&[pad as u8, next]);
    frame.resize(frame.len() + ESP_ICV_LEN, 0);
    let ip = 14;
    let grown = frame.len() - at.end;
    let (len_at, base) = if at.ipv4 { (ip + 2, 0) } else { (ip + 4, 40) };
    let len = frame.len() - ip - base;
    let len = u16::try_from(len).map_err(|_| "TSO segment too long for its IP length")?;
    frame[len_at..len_at + 2].copy_from_slice(&len.to_be_bytes());
    if at.ipv4 {
        nicemu_net_util::csum::ipv4_header_csum(frame, ip).map_err(|_| "IPv4 header")?;
    }
    Ok(EspAt {
        end: at.end + grown,
        ..at
    })
}

/// The ESP trailer's next header for a TSO segment whose ESP payload
/// starts at `payload` (and runs to the end of `seg`, no trailer yet).
///
/// Where the context's L4 header is the ESP payload (MACLEN + IPLEN ends at
/// the IV: plain TCP in ESP, `ixgbe_tso` with IPLEN over the IP header, ESP
/// header and IV) it is the context's L4 type. Under `SKB_GSO_PARTIAL` the
/// driver's IPLEN runs on through a tunnel to the inner L4 header, and the
/// L4 type (TCP; `ixgbe_ipsec_tx` sets L4T_TCP for every ESP frame) is not
/// what the ESP payload starts with: nothing the driver gives tells the
/// engine (it never reads `xo->proto`), and the datasheet text on the TSO
/// trailer was not at hand, so this is nicemu's reading: the header the
/// payload starts with, recognised by its length field covering exactly the
/// rest of the segment — UDP (VXLAN, GENEVE: `SKB_GSO_UDP_TUNNEL`), IPv4 or
/// IPv6 (`SKB_GSO_IPXIP4/6`). Anything else keeps the L4 type.
fn esp_next_header(seg: &[u8], payload: usize, ctx: &TxContext) -> u8 {
    let l4 = usize::from(ctx.maclen) + usize::from(ctx.iplen);
    let Some(p) = seg.get(payload..).filter(|p| l4 > payload && p.len() >= 20) else {
        return ctx.l4_proto();
    };
    let be16 = |at: usize| usize::from(u16::from_be_bytes([p[at], p[at + 1]]));
    if be16(4) == p.len() {
        return IPPROTO_UDP;
    }
    match p[0] >> 4 {
        4 if be16(2) == p.len() => IPPROTO_IPIP,
        6 if p.len() >= 40 && be16(4) + 40 == p.len() => IPPROTO_IPV6,
        _ => ctx.l4_proto(),
    }
}

impl Ixgbe {
    fn ipsec_key_from_regs(&self, key: u32, salt: u32) -> EspKey {
        key_from(|r| self.regs.peek(r), key, salt)
    }

    fn ipsec_key_to_regs(&self, k: &EspKey, key: u32, salt: u32) {
        for i in 0..4 {
            let at = 12 - 4 * i;
            let b = [k.key[at], k.key[at + 1], k.key[at + 2], k.key[at + 3]];
            self.regs.poke(key + 4 * i as u32, u32::from_be_bytes(b));
        }
        self.regs.poke(salt, u32::from_be_bytes(k.salt));
    }

    /// A write of IPSTXIDX: WRITE stores IPSTXKEY/IPSTXSALT into the
    /// transmit SA of the index, READ loads it back (§7.12.4.1).
    pub(super) fn ipsec_tx_index(&self, v: u32) {
        let i = ((v >> idx::INDEX_SHIFT) & 0x3ff) as usize;
        if v & idx::WRITE != 0 {
            let k = self.ipsec_key_from_regs(IPSTXKEY, IPSTXSALT);
            lock(&self.part.ipsec.tables).tx[i] = k;
        }
        if v & idx::READ != 0 {
            let k = lock(&self.part.ipsec.tables).tx[i];
            self.ipsec_key_to_regs(&k, IPSTXKEY, IPSTXSALT);
        }
        self.regs.poke(IPSTXIDX, v & !(idx::READ | idx::WRITE));
    }

    /// A write of IPSRXIDX: WRITE stores the data registers into the
    /// selected table's entry, READ loads them back (§7.12.5.1). An index
    /// beyond the IP table's 128 entries reaches nothing.
    pub(super) fn ipsec_rx_index(&self, v: u32) {
        let i = ((v >> idx::INDEX_SHIFT) & 0x3ff) as usize;
        let table = (v >> idx::TABLE_SHIFT) & 3;
        if v & idx::WRITE != 0 {
            self.ipsec_rx_store(table, i);
        }
        if v & idx::READ != 0 {
            self.ipsec_rx_load(table, i);
        }
        self.regs.poke(IPSRXIDX, v & !(idx::READ | idx::WRITE));
    }

    fn ipsec_rx_store(&self, table: u32, i: usize) {
        let key = self.ipsec_key_from_regs(IPSRXKEY, IPSRXSALT);
        let mut ip = [0u8; 16];
        for (w, b) in ip.chunks_exact_mut(4).enumerate() {
            b.copy_from_slice(&self.regs.peek(IPSRXIPADDR + 4 * w as u32).to_le_bytes());
        }
        let mut t = lock(&self.part.ipsec.tables);
        match table {
            1 => {
                if let Some(e) = t.ip.get_mut(i) {
                    *e = ip;
                }
            }
            2 => {
                t.rx[i].spi = self.regs.peek(IPSRXSPI).to_le_bytes();
                t.rx[i].ip_idx = self.regs.peek(IPSRXIPIDX);
            }
            3 => {
                t.rx[i].key = key;
                t.rx[i].mode = self.regs.peek(IPSRXMOD);
            }
            _ => {}
        }
    }

    fn ipsec_rx_load(&self, table: u32, i: usize) {
        let t = lock(&self.part.ipsec.tables);
        let sa = t.rx[i];
        match table {
            1 => {
                if let Some(ip) = t.ip.get(i) {
                    for (w, b) in ip.chunks_exact(4).enumerate() {
                        let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                        self.regs.poke(IPSRXIPADDR + 4 * w as u32, v);
                    }
                }
            }
            2 => {
                self.regs.poke(IPSRXSPI, u32::from_le_bytes(sa.spi));
                self.regs.poke(IPSRXIPIDX, sa.ip_idx);
            }
            3 => {
                self.ipsec_key_to_regs(&sa.key, IPSRXKEY, IPSRXSALT);
                self.regs.poke(IPSRXMOD, sa.mode);
            }
            _ => {}
        }
    }

    #[inline]
    fn ipsec_tx_on(&self) -> bool {
        self.regs.peek(SECTXCTRL) & SEC_DISABLE == 0 && self.regs.peek(IPSTXIDX) & idx::IPS_EN != 0
    }

    #[inline]
    pub(super) fn ipsec_rx_on(&self) -> bool {
        self.regs.peek(SECRXCTRL) & SEC_DISABLE == 0 && self.regs.peek(IPSRXIDX) & idx::IPS_EN != 0
    }

    /// The transmit side of the engine for one finished frame, or segment
    /// `seg` of a TCP segmentation (see the module doc); false drops it.
    /// Inline: most frames ask for no IPsec, and they pay a test, not a call.
    #[inline]
    pub(super) fn ipsec_tx(
        &self,
        o: &FrameOpts,
        ctx: &TxContext,
        seg: usize,
        frame: &mut Vec<u8>,
    ) -> bool {
        if o.popts & POPTS_IPSEC == 0 || !self.ipsec_tx_on() {
            return true;
        }
        self.ipsec_seal_frame(o, ctx, seg, frame)
    }

    /// [`Self::ipsec_tx`] of a frame that asks for IPsec with the engine on.
    #[inline(never)]
    fn ipsec_seal_frame(
        &self,
        o: &FrameOpts,
        ctx: &TxContext,
        seg: usize,
        frame: &mut Vec<u8>,
    ) -> bool {
        let c = &self.part.ipsec.counters;
        let key = lock(&self.part.ipsec.tables).tx[usize::from(ctx.sa_idx) % SA_COUNT];
        match ipsec_seal(&key, o, ctx, seg, frame) {
            Ok(()) => {
                bump(&c.tx_encrypted);
                true
            }
            Err(why) => {
                bump(&c.tx_dropped);
                self.errors.tx_malformed();
                log::debug!("ixgbe: IPsec transmit request dropped: {why}");
                false
            }
        }
    }

    /// The receive SA matching an ESP packet's destination and SPI.
    fn ipsec_rx_lookup(&self, f: &[u8], at: &EspAt) -> Option<RxSa> {
        let mut dst = [0u8; 16];
        if at.ipv4 {
            dst[12..].copy_from_slice(&f[14 + 16..14 + 20]);
        } else {
            dst.copy_from_slice(&f[14 + 24..14 + 40]);
        }
        let spi = f.get(at.start..at.start + 4)?;
        let family = if at.ipv4 { 0 } else { rxmod::IPV6 };
        let t = lock(&self.part.ipsec.tables);
        t.rx.iter()
            .find(|sa| {
                sa.mode & (rxmod::VALID | rxmod::IPV6) == rxmod::VALID | family
                    && sa.spi == spi
                    && t.ip.get(sa.ip_idx as usize) == Some(&dst)
            })
            .copied()
    }

    /// The receive side of the engine for one frame (see the module doc).
    /// Inline: while the engine is off a frame pays a test, not a call.
    #[inline]
    pub(super) fn ipsec_rx(&self, f: &[u8]) -> Option<(RxSecurity, Option<Vec<u8>>)> {
        if !self.ipsec_rx_on() {
            return None;
        }
        self.ipsec_open_frame(f)
    }

    /// [`Self::ipsec_rx`] with the engine on.
    #[inline(never)]
    fn ipsec_open_frame(&self, f: &[u8]) -> Option<(RxSecurity, Option<Vec<u8>>)> {
        let c = &self.part.ipsec.counters;
        let at = find_esp(f)?;
        let mut sec = RxSecurity {
            status: RXD_STAT_SECP,
            ptype: PTYPE_IPSEC_ESP,
        };
        let at = match at {
            Ok(at) => at,
            Err(()) => {
                // Nothing to look the SA up by but a header that lies.
                bump(&c.rx_bad_length);
                sec.status |= RXD_ERR_IPSEC_INV_LENGTH;
                return Some((sec, None));
            }
        };
        let sa = self.ipsec_rx_lookup(f, &at)?;
        let wanted = rxmod::PROTO_ESP | rxmod::DECRYPT;
        if sa.mode & wanted != wanted {
            return Some((sec, None));
        }
        if at.end - at.start < ESP_PAYLOAD_OFF + ESP_ICV_LEN {
            bump(&c.rx_bad_length);
            sec.status |= RXD_ERR_IPSEC_INV_LENGTH;
            return Some((sec, None));
        }
        let mut clear = f.to_vec();
        match sa.key.open(&mut clear[at.start..at.end]) {
            Ok(()) => {
                bump(&c.rx_decrypted);
                Some((sec, Some(clear)))
            }
            Err(EspError::AuthFailed | EspError::Truncated(_)) => {
                bump(&c.rx_auth_failed);
                sec.status |= RXD_ERR_IPSEC_AUTH_FAILED;
                Some((sec, None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context as `ixgbe_tso` leaves it for ESP (L4T TCP) with IPLEN
    /// `iplen` after a 14-byte MAC header.
    fn esp_ctx(iplen: u16) -> TxContext {
        TxContext {
            maclen: 14,
            iplen,
            tucmd: TUCMD_IPSEC_ESP | TUCMD_IPSEC_ENCRYPT | 0x4,
            ..Default::default()
        }
    }

    /// A segment: MAC, IPv4 (20), ESP header and IV (16), then `payload`.
    fn seg(payload: &[u8]) -> (Vec<u8>, usize) {
        let mut f = vec![0u8; 14 + 20 + ESP_PAYLOAD_OFF];
        f.extend_from_slice(payload);
        (f, 14 + 20 + ESP_PAYLOAD_OFF)
    }

    #[test]
    fn next_header_is_the_l4_type_unless_a_tunnel_starts_the_payload() {
        // Plain TCP in ESP: IPLEN ends at the IV, the payload is the TCP header.
        let mut tcp = vec![0u8; 60];
        tcp[4..6].copy_from_slice(&60u16.to_be_bytes()); // looks like a UDP length
        let (f, at) = seg(&tcp);
        assert_eq!(esp_next_header(&f, at, &esp_ctx(36)), 6, "L4 type");
        // VXLAN: IPLEN runs on; a UDP header whose length covers the rest.
        let ctx = esp_ctx(36 + 8 + 8 + 14 + 20);
        assert_eq!(esp_next_header(&f, at, &ctx), 17);
        // IPIP / IPv6-in-IP: an IP header whose length covers the rest.
        let mut v4 = vec![0u8; 60];
        v4[0] = 0x45;
        v4[2..4].copy_from_slice(&60u16.to_be_bytes());
        let (f, at) = seg(&v4);
        assert_eq!(esp_next_header(&f, at, &esp_ctx(36 + 20)), 4);
        let mut v6 = vec![0u8; 80];
        v6[0] = 0x60;
        v6[4..6].copy_from_slice(&40u16.to_be_bytes());
        let (f, at) = seg(&v6);
        assert_eq!(esp_next_header(&f, at, &esp_ctx(36 + 40)), 41);
        // Nothing recognisable (GRE, a short or lying header): the L4 type.
        let (f, at) = seg(&[0u8; 60]);
        assert_eq!(esp_next_header(&f, at, &esp_ctx(36 + 4 + 20)), 6);
        let (f, at) = seg(&[0x45u8; 10]);
        assert_eq!(esp_next_header(&f, at, &esp_ctx(36 + 20)), 6);
    }
}
