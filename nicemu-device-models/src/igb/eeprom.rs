// SPDX-License-Identifier: Apache-2.0
//! The 82576 NVM image (82576 datasheet §6.1, "EEPROM map").
//!
//! Words the igb driver reads: 0x00–0x02 MAC address (loaded into RAL0/RAH0 at
//! reset), 0x04 ID LED settings, 0x05 image version, 0x08/0x09 PBA number,
//! 0x0F initialization control 2 (flow control), 0x37 alternate MAC pointer,
//! 0x3F checksum (words 0x00–0x3F sum to 0xBABA), 0x42/0x43 eTrack ID.

use crate::nvm::Nvm;

/// NVM size in words (EECD.SIZE_EX = 2 → 2^(2+6) words).
pub const NVM_WORDS: usize = 256;
/// EECD size field value matching [`NVM_WORDS`].
pub const EECD_SIZE_EX: u32 = 2;
/// Checksum word.
pub const CHECKSUM_WORD: usize = 0x3f;

/// Base image: words 0x03.. as shipped on 82576 adapters (MAC filled in later).
const BASE: [(usize, u16); 40] = [
    (0x03, 0x0d34), // compatibility
    (0x04, 0xffff), // ID LED settings: default
    (0x05, 0x1070), // image version 1.7.0
    (0x06, 0xffff),
    (0x07, 0xffff),
    (0x08, 0xe1d0), // PBA number E1D0-FF
    (0x09, 0xffff),
    (0x0a, 0x002b), // init control 1
    (0x0b, 0xa03c), // subsystem ID
    (0x0c, 0x8086), // subsystem vendor ID
    (0x0d, 0x10c9), // device ID
    (0x0e, 0x8086), // vendor ID
    (0x0f, 0x70c3), // init control 2: full flow control
    (0x10, 0x0004),
    (0x11, 0x10c9),
    (0x12, 0x5c00),
    (0x13, 0x0000),
    (0x14, 0x2880), // init control 3 port B
    (0x15, 0x0014),
    (0x16, 0x4a40),
    (0x17, 0x0060),
    (0x1a, 0x0abe),
    (0x1b, 0x0403),
    (0x1c, 0x0783),
    (0x1d, 0x10a6),
    (0x1e, 0x0001),
    (0x1f, 0x0602),
    (0x20, 0x0004),
    (0x21, 0x0020),
    (0x22, 0x0000),
    (0x23, 0x004a),
    (0x24, 0x2080), // init control 3 port A
    (0x25, 0x00f5),
    (0x26, 0x10ca),
    (0x2e, 0x1000),
    (0x2f, 0xffff),
    (0x37, 0xffff), // no alternate MAC address
    (0x3d, 0x00e0),
    (0x42, 0x0d34), // eTrack ID low
    (0x43, 0x8000), // eTrack ID high
];

/// Builds the image for a port with MAC address `mac`, with a valid checksum.
pub fn image(mac: [u8; 6]) -> Nvm {
    let mut n = Nvm::new(NVM_WORDS, CHECKSUM_WORD);
    for w in 0..0x40 {
        n.set_word(w, 0);
    }
    for (w, v) in BASE {
        n.set_word(w, v);
    }
    for w in [0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3e] {
        n.set_word(w, 0xffff);
    }
    n.set_mac(0, mac);
    n.fix_checksum();
    n
}

/// The MAC address the part loads into RAL0/RAH0 at reset: NVM words 0..2.
pub fn mac(nvm: &Nvm) -> [u8; 6] {
    let mut m = [0u8; 6];
    for i in 0..3 {
        m[2 * i..2 * i + 2].copy_from_slice(&nvm.word(i).to_le_bytes());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_is_valid_and_carries_the_mac() {
        let n = image([0x52, 0x54, 0x00, 0xab, 0xcd, 0xef]);
        assert!(n.checksum_ok());
        let sum = (0..=CHECKSUM_WORD).fold(0u16, |s, i| s.wrapping_add(n.word(i)));
        assert_eq!(sum, 0xbaba);
        assert_eq!(n.word(0), 0x5452);
        assert_eq!(n.word(1), 0xab00);
        assert_eq!(n.word(2), 0xefcd);
        assert_eq!(n.word(0x37), 0xffff);
        assert_eq!(n.len(), NVM_WORDS);
    }
}
