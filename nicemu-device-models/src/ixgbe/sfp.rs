// SPDX-License-Identifier: Apache-2.0
//! The SFP+ module in the 82599's cage and the bit-banged I2C bus the driver
//! reaches it through (82599 datasheet §8.2.3.1.4 I2CCTL; SFF-8472 memory map;
//! ixgbe `ixgbe_read_i2c_byte_generic` / `ixgbe_identify_sfp_module_generic`).
//!
//! The driver toggles SCL and SDA through I2CCTL and samples SDA back. The
//! module is an I2C slave at 0xA0 (serial ID, SFF-8472 page A0h) and 0xA2
//! (diagnostics): start / repeated start, address, ACK, byte offset, read with
//! ACK/NACK from the master, stop. SDA is wired-AND of master and slave.

/// Which module sits in the cage (`--device ixgbe,…,sfp=…`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SfpKind {
    /// Passive direct-attach copper cable (SFP+ DA), accepted from any vendor.
    #[default]
    DirectAttach,
    /// 10GBASE-SR optical module (Intel OUI, as Intel's driver requires).
    Sr,
    /// 10GBASE-LR optical module (Intel OUI).
    Lr,
    /// Empty cage: no module answers, no link.
    None,
}

impl SfpKind {
    /// Parses `da`, `sr`, `lr` or `none`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "da" => Some(SfpKind::DirectAttach),
            "sr" => Some(SfpKind::Sr),
            "lr" => Some(SfpKind::Lr),
            "none" => Some(SfpKind::None),
            _ => None,
        }
    }
}

/// SFF-8472 serial ID (page A0h) of a module of `kind`.
pub fn serial_id(kind: SfpKind) -> [u8; 256] {
    let mut m = [0u8; 256];
    m[0] = 0x03; // identifier: SFP/SFP+
    m[1] = 0x04; // extended identifier
    m[2] = match kind {
        SfpKind::DirectAttach => 0x21, // copper pigtail
        _ => 0x07,                     // LC
    };
    // Byte 3: 10G Ethernet compliance (bit 4 SR, bit 5 LR); 6: 1G compliance;
    // 8: SFP+ cable technology (bit 2 passive, bit 3 active).
    match kind {
        SfpKind::DirectAttach => m[8] = 0x04,
        SfpKind::Sr => m[3] = 0x10,
        SfpKind::Lr => m[3] = 0x20,
        SfpKind::None => {}
    }
    m[11] = 0x06; // encoding 64B/66B
    m[12] = 0x67; // nominal rate 10.3 Gb/s in 100 Mb/s units
    let (vendor, oui, pn): (&[u8], [u8; 3], &[u8]) = match kind {
        SfpKind::DirectAttach => (b"NICEMU", [0x52, 0x54, 0x00], b"NICEMU-DA-1M"),
        SfpKind::Sr => (b"Intel Corp", [0x00, 0x1b, 0x21], b"FTLX8571D3BCV-IT"),
        _ => (b"Intel Corp", [0x00, 0x1b, 0x21], b"FTLX1471D3BCV-IT"),
    };
    pad(&mut m[20..36], vendor);
    m[37..40].copy_from_slice(&oui);
    pad(&mut m[40..56], pn);
    pad(&mut m[56..60], b"A");
    if kind == SfpKind::DirectAttach {
        m[60] = 0x01; // passive cable: SFF-8431 appendix E compliant
        m[18] = 1; // length (copper) 1 m
    } else {
        m[18] = 30;
    }
    pad(&mut m[68..84], b"NICEMU00000001");
    pad(&mut m[84..92], b"26112900");
    m[92] = 0x68; // diagnostics implemented, internally calibrated
    m[94] = 0x08; // SFF-8472 rev 12.0
    m[63] = checksum(&m[0..63]);
    m[95] = checksum(&m[64..95]);
    m
}

fn pad(dst: &mut [u8], s: &[u8]) {
    dst.fill(b' ');
    let n = s.len().min(dst.len());
    dst[..n].copy_from_slice(&s[..n]);
}

fn checksum(b: &[u8]) -> u8 {
    b.iter().fold(0u8, |s, x| s.wrapping_add(*x))
}

/// State of the slave's protocol engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a start condition.
    Idle,
    /// Receiving 8 bits from the master (address or data).
    Rx,
    /// Driving ACK during the ninth clock; then go on to `next`.
    Ack { to_tx: bool },
    /// Sending a byte, MSB first.
    Tx,
    /// Ninth clock of a read: the master ACKs (more) or NACKs (done).
    MasterAck,
}

/// A bit-banged I2C bus with one SFP+ module (two slave addresses) on it.
#[derive(Clone, Debug)]
pub struct I2cBus {
    scl: bool,
    sda_master: bool,
    sda_slave: bool,
    phase: Phase,
    bits: u8,
    shift: u8,
    /// Bytes received since the start condition (0 = address byte).
    nbytes: u8,
    /// Addressed page (0 = A0h, 1 = A2h) and byte offset.
    page: usize,
    offset: u8,
    pages: Option<Box<[[u8; 256]; 2]>>,
}

impl I2cBus {
    /// A bus with a module of `kind` (or an empty cage).
    pub fn new(kind: SfpKind) -> Self {
        let pages = (kind != SfpKind::None).then(|| Box::new([serial_id(kind), [0u8; 256]]));
        I2cBus {
            scl: true,
            sda_master: true,
            sda_slave: true,
            phase: Phase::Idle,
            bits: 0,
            shift: 0,
            nbytes: 0,
            page: 0,
            offset: 0,
            pages,
        }
    }

    /// True when a module is plugged in.
    pub fn present(&self) -> bool {
        self.pages.is_some()
    }

    /// Bus idle state after a device reset.
    pub fn reset(&mut self) {
        self.scl = true;
        self.sda_master = true;
        self.sda_slave = true;
        self.phase = Phase::Idle;
    }

    /// Line levels as the master reads them: (SCL, SDA).
    pub fn lines(&self) -> (bool, bool) {
        (self.scl, self.sda_master && self.sda_slave)
    }

    /// The master drives SCL and SDA (I2CCTL write).
    pub fn drive(&mut self, scl: bool, sda: bool) {
        let (old_scl, old_sda) = (self.scl, self.sda_master);
        self.scl = scl;
        self.sda_master = sda;
        if old_scl && scl && old_sda != sda {
            if !sda {
                // Start (or repeated start): SDA falls while SCL is high.
                self.phase = Phase::Rx;
                self.bits = 0;
                self.shift = 0;
                self.nbytes = 0;
                self.sda_slave = true;
            } else {
                // Stop.
                self.phase = Phase::Idle;
                self.sda_slave = true;
            }
            return;
        }
        if !old_scl && scl {
            self.rising();
        } else if old_scl && !scl {
            self.falling();
        }
    }

    fn rising(&mut self) {
        let sda = self.sda_master && self.sda_slave;
        match self.phase {
            Phase::Rx if self.bits < 8 => {
                self.shift = (self.shift << 1) | u8::from(sda);
                self.bits += 1;
            }
            Phase::MasterAck => {
                // Remember the master's answer in `bits`: 0 = ACK, 1 = NACK.
                self.bits = u8::from(sda);
            }
            _ => {}
        }
    }

    fn falling(&mut self) {
        match self.phase {
            Phase::Rx if self.bits == 8 => {
                let byte = self.shift;
                let ack = self.accept(byte);
                self.nbytes = self.nbytes.saturating_add(1);
                if ack {
                    self.sda_slave = false;
                    self.phase = Phase::Ack {
                        to_tx: self.nbytes == 1 && byte & 1 == 1,
                    };
                } else {
                    self.phase = Phase::Idle;
                    self.sda_slave = true;
                }
            }
            Phase::Ack { to_tx } => {
                if to_tx {
                    self.load_byte();
                } else {
                    self.sda_slave = true;
                    self.phase = Phase::Rx;
                    self.bits = 0;
                    self.shift = 0;
                }
            }
            Phase::Tx => {
                self.bits += 1;
                if self.bits < 8 {
                    self.sda_slave = self.shift & (0x80 >> self.bits) != 0;
                } else {
                    self.sda_slave = true;
                    self.phase = Phase::MasterAck;
                }
            }
            Phase::MasterAck => {
                if self.bits == 0 {
                    self.load_byte();
                } else {
                    self.phase = Phase::Idle;
                    self.sda_slave = true;
                }
            }
            _ => {}
        }
    }

    /// Handles a received byte; returns whether the slave ACKs it.
    fn accept(&mut self, byte: u8) -> bool {
        if self.nbytes == 0 {
            let page = match byte & 0xfe {
                0xa0 => 0,
                0xa2 => 1,
                _ => return false,
            };
            self.page = page;
            self.pages.is_some()
        } else if self.nbytes == 1 {
            self.offset = byte;
            true
        } else {
            // Writes to the module's memory are accepted and ignored (read-only ID).
            self.offset = self.offset.wrapping_add(1);
            true
        }
    }

    /// Starts sending the byte at the current offset (MSB driven now).
    fn load_byte(&mut self) {
        let b = self
            .pages
            .as_ref()
            .map(|p| p[self.page][usize::from(self.offset)])
            .unwrap_or(0xff);
        self.offset = self.offset.wrapping_add(1);
        self.shift = b;
        self.bits = 0;
        self.phase = Phase::Tx;
        self.sda_slave = b & 0x80 != 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::i2c_master::{I2cLines, I2cMaster};

    /// The module's own bus, as the master sees it.
    struct Bus<'a>(&'a mut I2cBus, bool, bool);

    impl I2cLines for Bus<'_> {
        fn drive(&mut self, scl: bool, sda: bool) {
            (self.1, self.2) = (scl, sda);
            self.0.drive(scl, sda);
        }
        fn driven(&mut self) -> (bool, bool) {
            (self.1, self.2)
        }
        fn sda_in(&mut self) -> bool {
            self.0.lines().1
        }
    }

    #[test]
    fn reads_the_serial_id_like_the_driver() {
        let mut bus = I2cBus::new(SfpKind::DirectAttach);
        let mut m = I2cMaster(Bus(&mut bus, true, true));
        assert_eq!(m.read(0xa0, 0), Some(0x03));
        assert_eq!(m.read(0xa0, 8), Some(0x04), "passive DA cable");
        assert_eq!(m.read(0xa0, 3), Some(0));
        assert_eq!(m.read(0xa0, 0x25), Some(0x52));
        assert_eq!(m.read(0xa0, 0x27), Some(0x00));
        assert_eq!(m.read(0xa4, 0), None, "nobody at 0xA4");
        assert_eq!(m.read(0xa0, 12), Some(0x67), "bus recovers after a NACK");
    }

    #[test]
    fn empty_cage_never_acks() {
        let mut bus = I2cBus::new(SfpKind::None);
        let mut m = I2cMaster(Bus(&mut bus, true, true));
        assert_eq!(m.read(0xa0, 0), None);
        assert!(!bus.present());
    }

    #[test]
    fn checksums_and_kinds() {
        let sr = serial_id(SfpKind::Sr);
        assert_eq!(sr[3], 0x10);
        assert_eq!(&sr[37..40], &[0x00, 0x1b, 0x21]);
        assert_eq!(sr[63], checksum(&sr[..63]));
        assert_eq!(SfpKind::parse("lr"), Some(SfpKind::Lr));
        assert_eq!(SfpKind::parse("x"), None);
    }
}
