// SPDX-License-Identifier: Apache-2.0
//! Advanced and legacy descriptor layouts shared by igb and ixgbe
//! (82576 datasheet §7.1.5 / §7.2.2, 82599 §7.1.6 / §7.2.3).

use nicemu_net_util::{OffloadError, Tso};

/// TX command: end of packet.
pub const TXD_CMD_EOP: u32 = 1 << 24;
/// TX command: insert FCS.
pub const TXD_CMD_IFCS: u32 = 1 << 25;
/// TX command: report status (write back DD).
pub const TXD_CMD_RS: u32 = 1 << 27;
/// TX command: descriptor extension (advanced format).
pub const TXD_CMD_DEXT: u32 = 1 << 29;
/// TX command: VLAN insertion.
pub const TXD_CMD_VLE: u32 = 1 << 30;
/// TX command: TCP segmentation.
pub const TXD_CMD_TSE: u32 = 1 << 31;
/// TX descriptor type: advanced data.
pub const TXD_DTYP_DATA: u32 = 0x3;
/// TX descriptor type: advanced context.
pub const TXD_DTYP_CTXT: u32 = 0x2;
/// TX write-back status: descriptor done.
pub const TXD_STAT_DD: u32 = 1;

/// RX status: descriptor done.
pub const RXD_STAT_DD: u32 = 1 << 0;
/// RX status: end of packet.
pub const RXD_STAT_EOP: u32 = 1 << 1;
/// RX status: VLAN packet.
pub const RXD_STAT_VP: u32 = 1 << 3;
/// RX status: UDP checksum computed.
pub const RXD_STAT_UDPCS: u32 = 1 << 4;
/// RX status: TCP checksum computed.
pub const RXD_STAT_TCPCS: u32 = 1 << 5;
/// RX status: IPv4 checksum computed.
pub const RXD_STAT_IPCS: u32 = 1 << 6;
/// RX error: TCP/UDP checksum error.
pub const RXD_ERR_L4E: u32 = 1 << 29;
/// RX error: IPv4 checksum error.
pub const RXD_ERR_IPE: u32 = 1 << 30;

/// A transmit descriptor as read from the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxDesc {
    /// Advanced data descriptor.
    Data {
        /// Buffer address.
        addr: u64,
        /// Buffer length.
        len: u16,
        /// Command bits (EOP, IFCS, RS, VLE, TSE…).
        cmd: u32,
        /// Payload length (first descriptor of a packet).
        paylen: u32,
        /// Packet options: IXSM (bit 0), TXSM (bit 1).
        popts: u8,
        /// Context index (82576: bits 6:4 of olinfo).
        idx: u8,
        /// MAC field: time stamp the frame (`ADVTXD_MAC_TSTAMP`, IEEE 1588).
        tstamp: bool,
    },
    /// Advanced context descriptor.
    Context(TxContext),
    /// Legacy descriptor.
    Legacy {
        /// Buffer address.
        addr: u64,
        /// Buffer length.
        len: u16,
        /// Command byte shifted to bits 31:24.
        cmd: u32,
        /// Checksum offset.
        cso: u8,
        /// Checksum start.
        css: u8,
        /// VLAN tag.
        vlan: u16,
    },
}

/// Offload context from an advanced context descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxContext {
    /// IP header length.
    pub iplen: u16,
    /// MAC header length.
    pub maclen: u16,
    /// VLAN tag to insert.
    pub vlan: u16,
    /// TUCMD: bit 0 SNAP, bit 1 IPV4, bits 3:2 L4T (0 UDP, 1 TCP, 2 SCTP).
    pub tucmd: u16,
    /// L4 header length.
    pub l4len: u8,
    /// Maximum segment size.
    pub mss: u16,
    /// Context slot index.
    pub idx: u8,
    /// IPsec SA index of the 82599 (bits 9:0 of the context's second
    /// dword, `fceof_saidx` in `ixgbe_tx_csum`; §7.2.3.2.3).
    pub sa_idx: u16,
    /// IPsec ESP trailer length of the 82599 (bits 8:0 of TYPE_TUCMD:
    /// padding, pad length, next header and ICV, `ixgbe_ipsec_tx`).
    pub esp_len: u16,
}

/// POPTS: IPsec offload request (`IXGBE_ADVTXD_POPTS_IPSEC`, 82599 only).
pub const POPTS_IPSEC: u8 = 1 << 2;
/// TUCMD: IPsec type ESP (`IXGBE_ADVTXD_TUCMD_IPSEC_TYPE_ESP`).
pub const TUCMD_IPSEC_ESP: u16 = 1 << 4;
/// TUCMD: ESP encryption (`IXGBE_ADVTXD_TUCMD_IPSEC_ENCRYPT_EN`).
pub const TUCMD_IPSEC_ENCRYPT: u16 = 1 << 5;

impl TxContext {
    /// True if the L3 header is IPv4.
    pub fn ipv4(&self) -> bool {
        self.tucmd & (1 << 1) != 0
    }
    /// Bytes at the end of a frame with options `popts` that are ESP
    /// trailer, not L4 data: the checksum offload stops before them (82599
    /// §7.12.4). 0 without an ESP offload request.
    pub fn esp_trailer(&self, popts: u8) -> usize {
        if popts & POPTS_IPSEC != 0 && self.tucmd & TUCMD_IPSEC_ESP != 0 {
            usize::from(self.esp_len)
        } else {
            0
        }
    }
    /// L4 type: 0 UDP, 1 TCP, 2 SCTP.
    pub fn l4t(&self) -> u16 {
        (self.tucmd >> 2) & 3
    }
    /// IP protocol number of the L4 type (TCP, UDP; 0 for the others, whose
    /// checksums the offload leaves alone).
    pub fn l4_proto(&self) -> u8 {
        match self.l4t() {
            1 => nicemu_net_util::IPPROTO_TCP,
            0 => nicemu_net_util::IPPROTO_UDP,
            _ => 0,
        }
    }
    /// The TCP or UDP segmentation this context describes (82576 §7.2.4,
    /// 82599 §7.2.4); a context naming neither cannot segment.
    pub fn tso(&self) -> Result<Tso, OffloadError> {
        match self.l4_proto() {
            0 => Err(OffloadError::BadTso),
            proto => Ok(Tso {
                mac_len: self.maclen,
                ip_len: self.iplen,
                l4_len: self.l4len,
                mss: self.mss,
                proto,
                seeded: true,
            }),
        }
    }
}

fn dw(d: &[u8; 16], i: usize) -> u32 {
    u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]])
}

/// Decodes a transmit descriptor.
pub fn parse_tx(d: &[u8; 16]) -> TxDesc {
    let addr = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
    let w2 = dw(d, 8);
    let w3 = dw(d, 12);
    if w2 & TXD_CMD_DEXT == 0 {
        return TxDesc::Legacy {
            addr,
            len: w2 as u16,
            cmd: w2 & 0xff00_0000,
            cso: (w2 >> 16) as u8,
            css: (w3 >> 8) as u8,
            vlan: (w3 >> 16) as u16,
        };
    }
    let dtyp = (w2 >> 20) & 0xf;
    if dtyp == TXD_DTYP_CTXT {
        let w0 = dw(d, 0);
        return TxDesc::Context(TxContext {
            iplen: (w0 & 0x1ff) as u16,
            maclen: ((w0 >> 9) & 0x7f) as u16,
            vlan: (w0 >> 16) as u16,
            tucmd: ((w2 >> 9) & 0x7ff) as u16,
            l4len: (w3 >> 8) as u8,
            mss: (w3 >> 16) as u16,
            idx: ((w3 >> 4) & 0x7) as u8,
            sa_idx: (dw(d, 4) & 0x3ff) as u16,
            esp_len: (w2 & 0x1ff) as u16,
        });
    }
    TxDesc::Data {
        addr,
        len: w2 as u16,
        cmd: w2 & 0xff00_0000,
        paylen: w3 >> 14,
        popts: ((w3 >> 8) & 0x3f) as u8,
        idx: ((w3 >> 4) & 0x7) as u8,
        tstamp: w2 & crate::ptp::ADVTXD_MAC_TSTAMP != 0,
    }
}

/// Status of one buffer of a received frame (advanced one-buffer write-back):
/// DD and `every` (e.g. VP) on each buffer; EOP and `last_bits` (checksum
/// status and errors, the IEEE 1588 TS bit) on the frame's last buffer.
pub fn rx_status(last: bool, every: u32, last_bits: u32) -> u32 {
    let st = RXD_STAT_DD | every;
    if last {
        st | RXD_STAT_EOP | last_bits
    } else {
        st
    }
}

/// Builds an advanced receive write-back descriptor.
pub fn rx_writeback(pkt_info: u16, rss: u32, status_error: u32, len: u16, vlan: u16) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..2].copy_from_slice(&pkt_info.to_le_bytes());
    d[4..8].copy_from_slice(&rss.to_le_bytes());
    d[8..12].copy_from_slice(&status_error.to_le_bytes());
    d[12..14].copy_from_slice(&len.to_le_bytes());
    d[14..16].copy_from_slice(&vlan.to_le_bytes());
    d
}

/// An advanced receive write-back `d` with the header length `hdr_len`
/// (HDR_LEN, dword 0 bits 30:21; SPH, bit 31, clear: the header was not
/// split but the header buffer holds the frame's first `hdr_len` bytes:
/// the 82576 datasheet's advanced receive write-back format and "Header
/// Splitting and Replication").
pub fn rx_with_header_len(mut d: [u8; 16], hdr_len: u16) -> [u8; 16] {
    let info = (hdr_len & 0x3ff) << 5;
    d[2..4].copy_from_slice(&info.to_le_bytes());
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_test_descriptor() {
        // igb_run_loopback_test: one descriptor, DEXT|RS|IFCS|EOP|DTYP_DATA|256, PAYLEN 256.
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&0x1234_5000u64.to_le_bytes());
        d[8..12].copy_from_slice(&0x2b30_0100u32.to_le_bytes());
        d[12..16].copy_from_slice(&0x0040_0000u32.to_le_bytes());
        match parse_tx(&d) {
            TxDesc::Data {
                addr,
                len,
                cmd,
                paylen,
                ..
            } => {
                assert_eq!(addr, 0x1234_5000);
                assert_eq!(len, 256);
                assert_eq!(paylen, 256);
                assert_ne!(cmd & TXD_CMD_EOP, 0);
                assert_ne!(cmd & TXD_CMD_RS, 0);
                assert_eq!(cmd & TXD_CMD_TSE, 0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn context_descriptor() {
        let mut d = [0u8; 16];
        // MACLEN 14, IPLEN 20, TUCMD IPV4|TCP, MSS 1448, L4LEN 32
        d[0..4].copy_from_slice(&((14u32 << 9) | 20).to_le_bytes());
        let w2 = TXD_CMD_DEXT | (TXD_DTYP_CTXT << 20) | ((0x2 | 0x4) << 9);
        d[8..12].copy_from_slice(&w2.to_le_bytes());
        d[12..16].copy_from_slice(&((1448u32 << 16) | (32 << 8)).to_le_bytes());
        let TxDesc::Context(c) = parse_tx(&d) else {
            panic!()
        };
        assert_eq!((c.maclen, c.iplen, c.mss, c.l4len), (14, 20, 1448, 32));
        assert!(c.ipv4());
        assert_eq!(c.l4t(), 1);
        let t = c.tso().unwrap();
        assert_eq!((t.l4(), t.hdr_len(), t.mss), (34, 66, 1448));
        let udp = TxContext { tucmd: 0x2, ..c };
        assert_eq!(udp.l4_proto(), nicemu_net_util::IPPROTO_UDP);
        assert_eq!(udp.tso().map(|t| t.proto), Ok(nicemu_net_util::IPPROTO_UDP));
        let sctp = TxContext {
            tucmd: 0x2 | 0x8,
            ..c
        };
        assert_eq!(sctp.tso(), Err(OffloadError::BadTso), "TCP and UDP only");
    }
}
