// SPDX-License-Identifier: Apache-2.0
//! The 82599 NVM image (82599 datasheet §6, "EEPROM map") and the ixgbe
//! checksum rule (`ixgbe_calc_eeprom_checksum_generic`): the words 0x00–0x3E
//! plus, for each pointer word 0x03–0x0E that is neither 0 nor 0xFFFF, the
//! section it points to (length word first, 0/0xFFFF length skipped, then that
//! many words) sum with the checksum word 0x3F to 0xBABA. The firmware pointer
//! 0x0F is not followed.
//!
//! Words and sections the ixgbe driver reads during probe and link set-up:
//! 0x0F firmware module (pass-through patch version, `ixgbe_verify_fw_version_82599`;
//! LESM state, `ixgbe_verify_lesm_fw_enabled_82599`), 0x15/0x16 PBA number,
//! 0x27 alternate SAN MAC block, 0x28 SAN MAC block, 0x2B SFP+ init list
//! (`ixgbe_get_sfp_init_sequence_offsets`), 0x2C device capabilities,
//! 0x2D/0x2E eTrack ID. The MAC address lives in the LAN core 0 section
//! (pointer 0x09) at words 1..=3 and is auto-loaded into RAL0/RAH0 at reset.

use crate::nvm::{Nvm, NVM_SUM};

/// NVM size in words (EEC.SIZE = 4 → 2^(4+6) words).
pub const NVM_WORDS: usize = 1024;
/// EEC.SIZE field value matching [`NVM_WORDS`].
pub const EEC_SIZE: u32 = 4;
/// Checksum word.
pub const CHECKSUM_WORD: usize = 0x3f;

/// Pointer word of the LAN core 0 section (MAC address at +1..+3).
const CORE0_PTR: usize = 0x09;
/// Where the sections start.
const CORE0: u16 = 0x100;
const FW_MODULE: u16 = 0x180;
const FW_PT_PATCH: u16 = 0x190;
const SFP_LIST: u16 = 0x1a0;
const SFP_DATA: u16 = 0x1c0;

/// `ixgbe_sfp_type` values the 82599 init list is keyed by.
const SFP_TYPE_DA_CU_CORE0: u16 = 3;
const SFP_TYPE_DA_CU_CORE1: u16 = 4;
const SFP_TYPE_SRLR_CORE0: u16 = 5;
const SFP_TYPE_SRLR_CORE1: u16 = 6;

/// Builds the image for a port with MAC address `mac`, with a valid checksum.
pub fn image(mac: [u8; 6]) -> Nvm {
    let mut n = Nvm::new(NVM_WORDS, CHECKSUM_WORD);
    for w in 0..0x40 {
        n.set_word(w, 0);
    }
    // Pointers 0x03..=0x0E: all absent except LAN core 0.
    for w in 0x03..=0x0e {
        n.set_word(w, 0xffff);
    }
    n.set_word(CORE0_PTR, CORE0);
    let core0 = usize::from(CORE0);
    n.set_word(core0, 4); // section length
    n.set_mac(core0 + 1, mac);
    n.set_word(core0 + 4, 0x0000);
    // Firmware module: LESM parameters absent, pass-through patch version 6.
    n.set_word(0x0f, FW_MODULE);
    let fw = usize::from(FW_MODULE);
    n.set_word(fw + 2, 0xffff);
    n.set_word(fw + 4, FW_PT_PATCH);
    n.set_word(usize::from(FW_PT_PATCH) + 7, 0x0006);
    // PBA number G18786-000 (legacy two-word form).
    n.set_word(0x15, 0x1878);
    n.set_word(0x16, 0x6000);
    // No (alternate) SAN MAC address, no iSCSI/FCoE blocks.
    n.set_word(0x17, 0xffff);
    n.set_word(0x27, 0xffff);
    n.set_word(0x28, 0xffff);
    n.set_word(0x33, 0xffff);
    // SFP+ init list: (type, data pointer) pairs, 0xFFFF ends it. Every module
    // type shares one data block: a single CORECTL write, then the terminator.
    n.set_word(0x2b, SFP_LIST);
    let list = usize::from(SFP_LIST);
    n.set_word(list, 0x0000);
    let types = [
        SFP_TYPE_DA_CU_CORE0,
        SFP_TYPE_DA_CU_CORE1,
        SFP_TYPE_SRLR_CORE0,
        SFP_TYPE_SRLR_CORE1,
    ];
    for (i, t) in types.iter().enumerate() {
        n.set_word(list + 1 + 2 * i, *t);
        n.set_word(list + 2 + 2 * i, SFP_DATA);
    }
    n.set_word(list + 1 + 2 * types.len(), 0xffff);
    let data = usize::from(SFP_DATA);
    n.set_word(data, 0x0000);
    n.set_word(data + 1, 0x0b00);
    n.set_word(data + 2, 0xffff);
    // Device capabilities: none (the driver checks the SFP+ cage via SDP2).
    n.set_word(0x2c, 0x0000);
    // eTrack ID 0x800003ab.
    n.set_word(0x2d, 0x03ab);
    n.set_word(0x2e, 0x8000);
    for w in [0x30, 0x34, 0x38, 0x3e] {
        n.set_word(w, 0xffff);
    }
    let c = NVM_SUM.wrapping_sub(sum(&n));
    n.set_word(CHECKSUM_WORD, c);
    n
}

/// The ixgbe checksum sum: base words 0x00–0x3E plus the pointed-to sections.
pub fn sum(n: &Nvm) -> u16 {
    let mut s = (0..CHECKSUM_WORD).fold(0u16, |s, w| s.wrapping_add(n.word(w)));
    for p in 0x03..0x0f {
        let ptr = n.word(p);
        if ptr == 0 || ptr == 0xffff {
            continue;
        }
        let len = n.word(usize::from(ptr));
        if len == 0 || len == 0xffff {
            continue;
        }
        for w in usize::from(ptr) + 1..=usize::from(ptr) + usize::from(len) {
            s = s.wrapping_add(n.word(w));
        }
    }
    s
}

/// True when the image passes `ixgbe_validate_eeprom_checksum_generic`.
#[cfg(test)]
pub fn checksum_ok(n: &Nvm) -> bool {
    sum(n).wrapping_add(n.word(CHECKSUM_WORD)) == NVM_SUM
}

/// The MAC address the hardware loads into RAL0/RAH0 at reset.
pub fn mac(n: &Nvm) -> [u8; 6] {
    let base = match n.word(CORE0_PTR) {
        0 | 0xffff => return [0; 6],
        p => usize::from(p) + 1,
    };
    let mut m = [0u8; 6];
    for i in 0..3 {
        m[2 * i..2 * i + 2].copy_from_slice(&n.word(base + i).to_le_bytes());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

    #[test]
    fn image_checksum_follows_pointers() {
        let mut n = image(MAC);
        assert!(checksum_ok(&n));
        assert_eq!(mac(&n), MAC);
        // A word inside a pointed-to section counts ...
        n.set_word(usize::from(CORE0) + 4, 1);
        assert!(!checksum_ok(&n));
        n.set_word(usize::from(CORE0) + 4, 0);
        // ... a word outside every section does not.
        n.set_word(0x300, 0x1234);
        assert!(checksum_ok(&n));
        // The firmware section (pointer 0x0F) is not summed.
        n.set_word(usize::from(FW_PT_PATCH) + 7, 7);
        assert!(checksum_ok(&n));
        // The base image alone would not sum to 0xBABA.
        let base = (0..=CHECKSUM_WORD).fold(0u16, |s, w| s.wrapping_add(n.word(w)));
        assert_ne!(base, NVM_SUM);
    }

    #[test]
    fn sfp_init_list_has_every_82599_type() {
        let n = image(MAC);
        let mut off = usize::from(n.word(0x2b)) + 1;
        let mut found = Vec::new();
        while n.word(off) != 0xffff {
            found.push(n.word(off));
            let data = usize::from(n.word(off + 1));
            assert_eq!(n.word(data + 2), 0xffff, "data block terminated");
            off += 2;
        }
        assert_eq!(found, vec![3, 4, 5, 6]);
    }
}
