// SPDX-License-Identifier: Apache-2.0
//! NVM (EEPROM) images and the EERD read protocol shared by igb and ixgbe.
//!
//! Both parts validate the image by summing words `0..=checksum_word` and
//! comparing with 0xBABA (82576 datasheet §6.1, igb `igb_validate_nvm_checksum`;
//! 82599 datasheet §6.2, ixgbe `ixgbe_calc_eeprom_checksum_generic` sums the base
//! words 0x00–0x3E plus the sections pointed to from words 0x03–0x0E).

/// The value every valid image sums to.
pub const NVM_SUM: u16 = 0xBABA;

/// EERD: start a read.
pub const EERD_START: u32 = 1 << 0;
/// EERD: read done.
pub const EERD_DONE: u32 = 1 << 1;
/// EERD: word address shift.
pub const EERD_ADDR_SHIFT: u32 = 2;
/// EERD: data shift.
pub const EERD_DATA_SHIFT: u32 = 16;

/// An NVM image in 16-bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nvm {
    words: Vec<u16>,
    checksum_word: usize,
}

impl Nvm {
    /// An image of `size` words, erased (0xFFFF), whose checksum lives at `checksum_word`.
    pub fn new(size: usize, checksum_word: usize) -> Self {
        assert!(checksum_word < size);
        Nvm {
            words: vec![0xffff; size],
            checksum_word,
        }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True for an empty image.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Reads a word; words beyond the image read as 0xFFFF (erased flash).
    pub fn word(&self, addr: usize) -> u16 {
        self.words.get(addr).copied().unwrap_or(0xffff)
    }

    /// Writes a word; writes beyond the image are ignored.
    pub fn set_word(&mut self, addr: usize, v: u16) {
        if let Some(w) = self.words.get_mut(addr) {
            *w = v;
        }
    }

    /// Stores a MAC address in words 0..=2 of the section starting at `base`,
    /// low byte first as the drivers read it (`igb_read_mac_addr`).
    pub fn set_mac(&mut self, base: usize, mac: [u8; 6]) {
        for i in 0..3 {
            self.set_word(base + i, u16::from_le_bytes([mac[2 * i], mac[2 * i + 1]]));
        }
    }

    /// Sum of words `0..checksum_word` plus the given extra words.
    pub fn sum_base(&self) -> u16 {
        self.words[..self.checksum_word]
            .iter()
            .fold(0u16, |s, w| s.wrapping_add(*w))
    }

    /// Recomputes the checksum word so the base words sum to 0xBABA.
    pub fn fix_checksum(&mut self) {
        let s = self.sum_base();
        self.words[self.checksum_word] = NVM_SUM.wrapping_sub(s);
    }

    /// True when the base words including the checksum sum to 0xBABA.
    pub fn checksum_ok(&self) -> bool {
        self.sum_base().wrapping_add(self.words[self.checksum_word]) == NVM_SUM
    }

    /// Handles a write to EERD and returns the register's new value: when START
    /// is set the read completes at once (DONE plus data), as the datasheet's
    /// polling protocol allows.
    pub fn eerd_write(&self, v: u32) -> u32 {
        if v & EERD_START == 0 {
            return v & !EERD_DONE;
        }
        let addr = ((v >> EERD_ADDR_SHIFT) & 0x3fff) as usize;
        let data = u32::from(self.word(addr));
        (v & 0xfffc) | EERD_DONE | (data << EERD_DATA_SHIFT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_and_mac() {
        let mut n = Nvm::new(64, 0x3f);
        n.set_mac(0, [0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
        assert_eq!(n.word(0), 0x5452);
        assert_eq!(n.word(2), 0x5634);
        assert!(!n.checksum_ok());
        n.fix_checksum();
        assert!(n.checksum_ok());
        let sum = (0..64).fold(0u16, |s, i| s.wrapping_add(n.word(i)));
        assert_eq!(sum, 0xbaba);
        n.set_word(5, 1);
        assert!(!n.checksum_ok());
    }

    #[test]
    fn eerd_protocol() {
        let mut n = Nvm::new(64, 0x3f);
        n.set_word(0x3e, 0xbeef);
        let v = n.eerd_write((0x3e << EERD_ADDR_SHIFT) | EERD_START);
        assert_ne!(v & EERD_DONE, 0);
        assert_eq!(v >> EERD_DATA_SHIFT, 0xbeef);
        // Out-of-image addresses read as erased, never out of bounds.
        let v = n.eerd_write((0x3fff << EERD_ADDR_SHIFT) | EERD_START);
        assert_eq!(v >> EERD_DATA_SHIFT, 0xffff);
        assert_eq!(n.word(usize::MAX), 0xffff);
    }
}
