// SPDX-License-Identifier: Apache-2.0
//! The ESP transform of AES-128-GCM with a 16-byte ICV (RFC 4303 with
//! RFC 4106), the one the 82599's IPsec engine implements (82599 datasheet
//! §7.12) and Linux's ixgbe offloads (`rfc4106(gcm(aes))`, 128-bit ICV,
//! `ixgbe_ipsec_parse_proto_keys`).
//!
//! An ESP packet, from its header on: SPI (4 bytes), sequence number (4),
//! the IV (8), the encrypted payload with its trailer (padding, pad length,
//! next header), then the ICV (16). The nonce is the SA's 4-byte salt
//! followed by the packet's IV; the additional authenticated data is SPI ‖
//! sequence number (no extended sequence numbers: RFC 4106 §5).
//!
//! The cipher is RustCrypto's `aes-gcm` crate (constant-time AES and GHASH,
//! audited and widely used) rather than code of our own: a hand-written GCM
//! would be both slower and easier to get subtly wrong.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce, Tag};

/// ESP header: SPI and sequence number.
pub const ESP_HDR_LEN: usize = 8;
/// The per-packet IV of AES-GCM ESP (RFC 4106 §3.1).
pub const ESP_IV_LEN: usize = 8;
/// The ICV length the 82599 supports (`IXGBE_IPSEC_AUTH_BITS` / 8).
pub const ESP_ICV_LEN: usize = 16;
/// Bytes before the encrypted payload.
pub const ESP_PAYLOAD_OFF: usize = ESP_HDR_LEN + ESP_IV_LEN;

/// An AES-128-GCM security association's keying material.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EspKey {
    /// The 128-bit AES key, in the order of the key's bytes.
    pub key: [u8; 16],
    /// The 4-byte salt that starts every nonce.
    pub salt: [u8; 4],
}

/// Why an ESP packet could not be processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EspError {
    /// Shorter than header, IV and ICV (the length it has).
    #[error("ESP packet of {0} bytes is shorter than its header, IV and ICV")]
    Truncated(usize),
    /// The ICV does not match the packet (tampered, or another key).
    #[error("ESP ICV check failed")]
    AuthFailed,
}

/// An ESP packet split as GCM takes it: the nonce (salt and IV), the AAD
/// (SPI and sequence number), the payload between IV and ICV, and the ICV.
struct EspParts<'a> {
    nonce: [u8; 12],
    aad: &'a [u8],
    payload: &'a mut [u8],
    icv: &'a mut [u8],
}

impl EspKey {
    fn cipher(&self) -> Aes128Gcm {
        Aes128Gcm::new(&self.key.into())
    }

    fn nonce(&self, esp: &[u8]) -> [u8; 12] {
        let mut n = [0u8; 12];
        n[..4].copy_from_slice(&self.salt);
        n[4..].copy_from_slice(&esp[ESP_HDR_LEN..ESP_PAYLOAD_OFF]);
        n
    }

    /// An ESP packet (header to ICV) split as GCM takes it.
    fn parts<'a>(&self, esp: &'a mut [u8]) -> Result<EspParts<'a>, EspError> {
        let len = esp.len();
        if len < ESP_PAYLOAD_OFF + ESP_ICV_LEN {
            return Err(EspError::Truncated(len));
        }
        let nonce = self.nonce(esp);
        let (head, rest) = esp.split_at_mut(ESP_PAYLOAD_OFF);
        let (payload, icv) = rest.split_at_mut(rest.len() - ESP_ICV_LEN);
        Ok(EspParts {
            nonce,
            aad: &head[..ESP_HDR_LEN],
            payload,
            icv,
        })
    }

    /// Encrypts an ESP packet in place: `esp` runs from the ESP header to
    /// the end of the ICV, whose 16 bytes (the room the sender left) are
    /// overwritten with the ICV; everything between the IV and the ICV is
    /// encrypted.
    pub fn seal(&self, esp: &mut [u8]) -> Result<(), EspError> {
        let len = esp.len();
        let p = self.parts(esp)?;
        let tag = self
            .cipher()
            .encrypt_in_place_detached(Nonce::from_slice(&p.nonce), p.aad, p.payload)
            // Only a payload beyond GCM's 64 GiB limit fails; a frame cannot be one.
            .map_err(|_| EspError::Truncated(len))?;
        p.icv.copy_from_slice(&tag);
        Ok(())
    }

    /// Checks the ICV of an ESP packet (header to ICV) and decrypts its
    /// payload in place. On [`EspError::AuthFailed`] the packet is left as
    /// it was.
    pub fn open(&self, esp: &mut [u8]) -> Result<(), EspError> {
        let p = self.parts(esp)?;
        self.cipher()
            .decrypt_in_place_detached(
                Nonce::from_slice(&p.nonce),
                p.aad,
                p.payload,
                Tag::from_slice(p.icv),
            )
            .map_err(|_| EspError::AuthFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The key, salt, SPI, sequence number and IV of the GCM ESP test
    /// vectors' case 2 (draft-mcgrew-gcm-test-01), with an IPv4/UDP packet
    /// as payload; the expected ciphertext and ICV were computed with an
    /// independent implementation, OpenSSL 3.0's AES-128-GCM (Python
    /// `cryptography`'s AESGCM: nonce = salt ‖ IV, AAD = SPI ‖ sequence).
    #[test]
    fn seals_and_opens_the_gcm_esp_test_vector() {
        let key = EspKey {
            key: hex("4c80cdefbb5d10da906ac73c3613a634").try_into().unwrap(),
            salt: hex("2e443b68").try_into().unwrap(),
        };
        let head = hex("00004321 87654321 4956ed7e3b244cfe");
        let plain = hex("45000048 699a0000 80114db7 c0a80102
             c0a80101 0a9bf156 38d30000 00000000
             00000000 00000000 00000000 00000000
             00000000 00000000 00000000 00000000
             00000000 00000000 01020201");
        let expect = hex("fecf537e 729d5b07 dc30df52 8dd22b76
             8d1b9873 6696a6fd 348508fa 13cfac34
             cfa2436f 10fc80a6 15960484 90d13f2e
             7cc2177b fd979a10 24c7dfce 84dd50ce
             619d17d6 69ff9533 0ac9abdf a00cc001
             fa3e9d12 b33d3365 1bbb9715");
        let mut esp = [head.clone(), plain.clone(), vec![0; ESP_ICV_LEN]].concat();
        key.seal(&mut esp).unwrap();
        assert_eq!(
            &esp[..ESP_PAYLOAD_OFF],
            &head[..],
            "header and IV untouched"
        );
        assert_eq!(&esp[ESP_PAYLOAD_OFF..], &expect[..], "ciphertext and ICV");
        key.open(&mut esp).unwrap();
        assert_eq!(&esp[ESP_PAYLOAD_OFF..esp.len() - ESP_ICV_LEN], &plain[..]);
    }

    #[test]
    fn a_tampered_icv_fails_and_leaves_the_packet() {
        let key = EspKey {
            key: [7; 16],
            salt: [1, 2, 3, 4],
        };
        let mut esp = [
            vec![0, 0, 0x10, 0x01, 0, 0, 0, 1],
            vec![9; 8],
            vec![0x55; 40],
        ]
        .concat();
        key.seal(&mut esp).unwrap();
        let n = esp.len();
        esp[n - 1] ^= 1;
        let sent = esp.clone();
        assert_eq!(key.open(&mut esp), Err(EspError::AuthFailed));
        assert_eq!(esp, sent, "nothing decrypted");
        // A changed sequence number (AAD) fails too.
        esp[n - 1] ^= 1;
        esp[7] = 2;
        assert_eq!(key.open(&mut esp), Err(EspError::AuthFailed));
        assert_eq!(key.open(&mut [0u8; 31]), Err(EspError::Truncated(31)));
        assert_eq!(key.seal(&mut [0u8; 3]), Err(EspError::Truncated(3)));
    }
}
