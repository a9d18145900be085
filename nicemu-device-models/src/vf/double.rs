// SPDX-License-Identifier: Apache-2.0
//! What the driver double ([`crate::testutil::driver`]) does the igbvf and
//! ixgbevf drivers' way on a VF: queue set-up at the VF's offsets and the
//! mailbox exchanges (`e1000_write_posted_mbx` / `e1000_read_posted_mbx`,
//! `ixgbevf_write_mbx` / `ixgbevf_poll_mbx` in their legacy form: take VFU,
//! write, REQ alone lets go; wait for PFACK and PFSTS; take VFU, read, ACK).
#![allow(
    clippy::unwrap_used,
    reason = "test doubles: a set-up that fails panics"
)]

use super::agent::{msgtype, op, Admin};
use super::mailbox::bits;
use super::{Vf, VfConfig, VfPart, CTRL_RST};
use crate::function::{Function, QUEUE_ENABLE};
use crate::testutil::driver::{rd, wr, DriverQueues};

impl<P: VfPart> DriverQueues for Vf<P> {
    const RAM: usize = 1 << 20;
    /// `igbvf_configure_tx` / `ixgbevf_configure_tx_ring`: enable, WTHRESH 1.
    const TXDCTL: u32 = QUEUE_ENABLE | (1 << 16);
    const RXDCTL: u32 = QUEUE_ENABLE;
    /// Advanced one-buffer descriptors, 2 KiB buffers.
    const SRRCTL: u32 = 0x0200_0002;

    fn test_config(mac: [u8; 6]) -> VfConfig {
        VfConfig {
            vf: 0,
            admin: Admin {
                mac: Some(mac),
                ..Admin::default()
            },
        }
    }

    /// Nothing: the PF enables a VF's transmit at its VF_RESET message.
    fn enable_tx(_: &Function<Self>) {}

    /// Nothing: the PF enables a VF's receive at its VF_RESET message.
    fn set_rx_enabled(_: &Function<Self>, _: bool) {}
}

/// Sends `msg` to the PF and returns its reply's first `n` words, as the
/// VF drivers' posted write and read do. Panics when the PF does not
/// acknowledge or answer.
pub fn mbx_call<P: VfPart>(d: &Function<Vf<P>>, msg: &[u32], n: usize) -> Vec<u32> {
    let m = P::MAP;
    wr(d, m.mailbox, bits::VFU);
    assert_ne!(rd(d, m.mailbox) & bits::VFU, 0, "VFU granted");
    for (i, w) in msg.iter().enumerate() {
        wr(d, m.mbmem + 4 * i as u32, *w);
    }
    wr(d, m.mailbox, bits::REQ);
    let st = rd(d, m.mailbox);
    assert_eq!(st & (bits::PFACK | bits::PFSTS), bits::PFACK | bits::PFSTS);
    mbx_read(d, n)
}

/// Reads `n` words of the PF's message and acknowledges it.
pub fn mbx_read<P: VfPart>(d: &Function<Vf<P>>, n: usize) -> Vec<u32> {
    let m = P::MAP;
    wr(d, m.mailbox, bits::VFU);
    let out = (0..n).map(|i| rd(d, m.mbmem + 4 * i as u32)).collect();
    wr(d, m.mailbox, bits::ACK);
    out
}

/// The VF drivers' reset (`e1000_reset_hw_vf`, `ixgbevf_reset_hw_vf`):
/// CTRL.RST, wait for the PF's reset done, VF_RESET; the reply's words
/// (word 0: RESET with ACK or NACK, then the MAC address).
pub fn reset_handshake<P: VfPart>(d: &Function<Vf<P>>) -> Vec<u32> {
    wr(d, P::MAP.ctrl, CTRL_RST);
    assert_ne!(
        rd(d, P::MAP.mailbox) & (bits::RSTD | bits::RSTI),
        0,
        "reset done"
    );
    mbx_call(d, &[op::RESET], 4)
}

/// The MAC address of a VF_RESET reply.
pub fn reply_mac(r: &[u32]) -> [u8; 6] {
    let a = r[1].to_le_bytes();
    let b = r[2].to_le_bytes();
    [a[0], a[1], a[2], a[3], b[0], b[1]]
}

/// Whether a reply is an ACK with CTS.
pub fn acked(w0: u32) -> bool {
    w0 & (msgtype::ACK | msgtype::CTS) == msgtype::ACK | msgtype::CTS
}
