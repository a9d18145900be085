// SPDX-License-Identifier: Apache-2.0
//! Unit tests that drive the 82599 model the way the ixgbe driver does.

use vm_memory::{Bytes, GuestAddress};

use super::intr::{self, Dir};
use super::*;
use crate::function::Interrupts;
use crate::testutil::{ram, Irq, TestEnv};
use crate::{Delivery, Introspect, NetPort, PciFunction};

const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

fn dev_with(sfp: SfpKind) -> (Ixgbe, TestEnv) {
    let t = TestEnv::new();
    let d = Ixgbe::new(IxgbeConfig { mac: MAC, sfp }, t.env.clone());
    d.set_memory(ram(1 << 20));
    crate::testutil::bus_master(&d);
    (d, t)
}

fn dev() -> (Ixgbe, TestEnv) {
    dev_with(SfpKind::DirectAttach)
}

fn rd(d: &Ixgbe, off: u32) -> u32 {
    let mut b = [0u8; 4];
    d.bar_read(0, u64::from(off), &mut b);
    u32::from_le_bytes(b)
}

fn wr(d: &Ixgbe, off: u32, v: u32) {
    d.bar_write(0, u64::from(off), &v.to_le_bytes());
}

fn nvm_read(d: &mut Ixgbe, word: u32) -> u16 {
    wr(d, EERD, (word << 2) | 1);
    let v = rd(d, EERD);
    assert_ne!(v & 2, 0, "EERD done");
    (v >> 16) as u16
}

/// `ixgbe_calc_eeprom_checksum_generic` through EERD.
fn driver_checksum(d: &mut Ixgbe) -> u16 {
    let mut sum = 0u16;
    for w in 0..0x3f {
        sum = sum.wrapping_add(nvm_read(d, w));
    }
    for p in 0x03..0x0f {
        let ptr = nvm_read(d, p);
        if ptr == 0 || ptr == 0xffff {
            continue;
        }
        let len = nvm_read(d, u32::from(ptr));
        if len == 0 || len == 0xffff {
            continue;
        }
        for w in u32::from(ptr) + 1..=u32::from(ptr) + u32::from(len) {
            sum = sum.wrapping_add(nvm_read(d, w));
        }
    }
    0xbabau16.wrapping_sub(sum)
}

/// The I2C master of `ixgbe_read_i2c_byte_generic`, through I2CCTL.
struct I2c<'a>(&'a mut Ixgbe);

impl I2c<'_> {
    const CLK_OUT: u32 = 2;
    const DATA_IN: u32 = 4;
    const DATA_OUT: u32 = 8;
    fn set(&mut self, clk: bool, data: bool) {
        let v = if clk { Self::CLK_OUT } else { 0 } | if data { Self::DATA_OUT } else { 0 };
        wr(self.0, I2CCTL, v);
    }
    fn cur(&mut self) -> (bool, bool) {
        let v = rd(self.0, I2CCTL);
        (v & Self::CLK_OUT != 0, v & Self::DATA_OUT != 0)
    }
    fn data_in(&mut self) -> bool {
        rd(self.0, I2CCTL) & Self::DATA_IN != 0
    }
    fn start(&mut self) {
        let (clk, _) = self.cur();
        self.set(clk, true);
        self.set(true, true);
        self.set(true, false);
        self.set(false, false);
    }
    fn stop(&mut self) {
        self.set(false, false);
        self.set(true, false);
        self.set(true, true);
    }
    fn out_bit(&mut self, b: bool) {
        self.set(false, b);
        if b {
            assert!(self.data_in(), "data line verifies high");
        }
        self.set(true, b);
        self.set(false, b);
    }
    fn in_bit(&mut self) -> bool {
        self.set(true, true);
        let v = self.data_in();
        self.set(false, true);
        v
    }
    fn out_byte(&mut self, v: u8) -> bool {
        for i in (0..8).rev() {
            self.out_bit(v & (1 << i) != 0);
        }
        self.set(false, true);
        !self.in_bit()
    }
    fn read(&mut self, dev: u8, off: u8) -> Option<u8> {
        self.start();
        if !self.out_byte(dev) || !self.out_byte(off) {
            self.stop();
            return None;
        }
        self.start();
        if !self.out_byte(dev | 1) {
            self.stop();
            return None;
        }
        let v = (0..8).fold(0u8, |acc, _| (acc << 1) | u8::from(self.in_bit()));
        self.out_bit(true);
        self.stop();
        Some(v)
    }
}

#[test]
fn probe_sequence_reset_nvm_mac_sfp_link() {
    let (mut d, _t) = dev();
    // ixgbe_disable_pcie_master: GIO_DIS, then STATUS.GIO must clear.
    wr(&d, CTRL, ctrl::GIO_DIS);
    assert_eq!(rd(&d, STATUS) & status::GIO, 0);
    // ixgbe_reset_hw_82599: LNK_RST (link down) or RST, polled until clear.
    let v = rd(&d, CTRL) | ctrl::LNK_RST;
    wr(&d, CTRL, v);
    assert_eq!(rd(&d, CTRL) & (ctrl::RST | ctrl::LNK_RST), 0, "self-clears");
    assert_ne!(rd(&d, STATUS) & status::GIO, 0);
    wr(&d, CTRL, ctrl::RST);
    assert_eq!(rd(&d, CTRL) & ctrl::RST, 0);
    // orig_autoc: 10G serial link mode, non-zero (the loopback test needs it).
    let autoc = rd(&d, AUTOC);
    assert_ne!(autoc, 0);
    assert_eq!(autoc & (7 << 13), 3 << 13);
    assert_eq!(rd(&d, AUTOC2) & (3 << 16), 2 << 16, "SFI");
    // ixgbe_init_eeprom_params_generic.
    let eec = rd(&d, EEC);
    assert_ne!(eec & (1 << 8), 0, "PRES");
    assert_ne!(eec & (1 << 9), 0, "ARD");
    assert_eq!(1usize << (((eec >> 11) & 0xf) + 6), NVM_WORDS);
    // ixgbe_validate_eeprom_checksum_generic.
    let c = driver_checksum(&mut d);
    assert_eq!(c, nvm_read(&mut d, 0x3f));
    // verify_fw_version_82599: fw ptr → +4 → +7 > 5.
    let fw = nvm_read(&mut d, 0x0f);
    let pt = nvm_read(&mut d, u32::from(fw) + 4);
    assert!(nvm_read(&mut d, u32::from(pt) + 7) > 5);
    assert_eq!(nvm_read(&mut d, u32::from(fw) + 2), 0xffff, "no LESM");
    // Permanent MAC from RAR0 (legacy 0x5400 and 82599 0xA200 locations).
    let ral = rd(&d, RAL_LEGACY).to_le_bytes();
    let rah = rd(&d, RAL_LEGACY + 4);
    assert_eq!(&ral[..], &MAC[..4]);
    assert_eq!((rah as u16).to_le_bytes(), [MAC[4], MAC[5]]);
    assert_ne!(rah & (1 << 31), 0, "AV");
    assert_eq!(rd(&d, RAL + 4), rah);
    // ixgbe_identify_phy_generic: MDIO commands complete, nobody answers.
    wr(&d, MSCA, (1 << 16) | (3 << 26) | (1 << 30));
    assert_eq!(rd(&d, MSCA) & (1 << 30), 0);
    assert_eq!(rd(&d, MSRWD) >> 16, 0xffff);
    // ixgbe_identify_sfp_module_generic over the bit-banged I2C bus.
    let mut i2c = I2c(&mut d);
    assert_eq!(i2c.read(0xa0, 0), Some(0x03), "SFP identifier");
    assert_eq!(i2c.read(0xa0, 6), Some(0));
    assert_eq!(i2c.read(0xa0, 3), Some(0));
    assert_eq!(i2c.read(0xa0, 8), Some(0x04), "passive DA");
    assert_eq!(i2c.read(0xa0, 0x25), Some(0x52));
    // SFP init sequence for da_cu_core0 in the NVM.
    let list = nvm_read(&mut d, 0x2b);
    assert!(list != 0 && list != 0xffff);
    assert_eq!(nvm_read(&mut d, u32::from(list) + 1), 3);
    // prot_autoc_write / reset_pipeline: AN restart self-clears, AN state != 0.
    wr(&d, AUTOC, autoc ^ (4 << 13) | (1 << 12));
    assert_eq!(rd(&d, AUTOC) & (1 << 12), 0);
    assert_ne!(rd(&d, 0x42b0) & 0x000f_0000, 0, "ANLP1 AN state");
    wr(&d, AUTOC, autoc);
    // ixgbe_check_mac_link_generic: 10G link up, SFP cage full (SDP2).
    let links = rd(&d, LINKS);
    assert_ne!(links & links::UP, 0);
    assert_eq!(links & (3 << 28), links::SPEED_10G);
    assert_ne!(rd(&d, ESDP) & 4, 0);
    // FDIR init and command completion.
    wr(&d, FDIRCTRL, 0x0000_0002);
    assert_ne!(rd(&d, FDIRCTRL) & 8, 0);
    d.bar_write(
        0,
        u64::from(FDIRCMD - 4),
        &0x0000_0001_1234_5678u64.to_le_bytes(),
    );
    assert_eq!(rd(&d, FDIRCMD) & 3, 0);
    // MSI-X table size as the driver reads it at config 0x72.
    let mut b = [0u8; 2];
    d.config_read(0x72, &mut b);
    assert_eq!((u16::from_le_bytes(b) & 0x7ff) + 1, 64);
    d.config_read(0xb2, &mut b);
    assert_eq!(u16::from_le_bytes(b) & 0x3ff, 0x82, "5 GT/s x8");
}

#[test]
fn empty_cage_has_no_link_and_no_i2c_answer() {
    let (mut d, _t) = dev_with(SfpKind::None);
    assert_eq!(I2c(&mut d).read(0xa0, 0), None);
    assert_eq!(rd(&d, LINKS) & links::UP, 0);
    assert_eq!(rd(&d, ESDP) & 4, 0);
}

#[test]
fn semaphores() {
    let (d, _t) = dev();
    assert_eq!(rd(&d, SWSM) & 1, 0, "first read acquires SMBI");
    assert_eq!(rd(&d, SWSM) & 1, 1, "taken");
    let v = rd(&d, SWSM) | 2;
    wr(&d, SWSM, v);
    assert_eq!(rd(&d, SWSM) & 2, 2, "SWESMBI");
    wr(&d, GSSR, 0xffff_ffff);
    assert_eq!(rd(&d, GSSR), 0x41f, "firmware bits stay clear");
    wr(&d, GSSR, 0);
    wr(&d, SWSM, 0);
    assert_eq!(rd(&d, SWSM) & 1, 0);
    wr(&d, EEC, 1 << 6);
    assert_ne!(rd(&d, EEC) & (1 << 7), 0, "grant follows request");
}

#[test]
fn register_self_test_table() {
    let (mut d, _t) = dev();
    // STATUS toggle test.
    let before = rd(&d, STATUS) & 0x7fff_f30f;
    wr(&d, STATUS, 0x7fff_f30f);
    assert_eq!(rd(&d, STATUS) & 0x7fff_f30f, before);
    let pattern = |d: &mut Ixgbe, reg: u32, mask: u32, write: u32| {
        for pat in [0x5a5a_5a5au32, 0xa5a5_a5a5, 0, u32::MAX] {
            let before = rd(d, reg);
            wr(d, reg, pat & write);
            assert_eq!(rd(d, reg), pat & write & mask, "reg {reg:#x} pat {pat:#x}");
            wr(d, reg, before);
        }
    };
    pattern(&mut d, 0x3220, 0x8007_fff0, 0x8007_fff0);
    pattern(&mut d, 0x3260, 0x8007_fff0, 0x8007_fff0);
    pattern(&mut d, 0x3008, u32::MAX, u32::MAX);
    pattern(&mut d, VLNCTRL, 0, 0);
    for i in 0..4 {
        pattern(&mut d, 0x1000 + 0x40 * i, 0xffff_ff80, 0xffff_ff80);
        pattern(&mut d, 0x1004 + 0x40 * i, u32::MAX, u32::MAX);
        pattern(&mut d, 0x1008 + 0x40 * i, 0x000f_ff80, 0x000f_ffff);
    }
    for i in 0..4 {
        wr(&d, 0x1028 + 0x40 * i, QUEUE_ENABLE);
    }
    for i in 0..4 {
        pattern(&mut d, 0x1018 + 0x40 * i, 0xffff, 0xffff);
    }
    for i in 0..4 {
        wr(&d, 0x1028 + 0x40 * i, 0);
    }
    pattern(&mut d, 0x3200, u32::MAX, u32::MAX);
    for i in 0..4 {
        pattern(&mut d, 0x6000 + 0x40 * i, 0xffff_ff80, u32::MAX);
        pattern(&mut d, 0x6004 + 0x40 * i, u32::MAX, u32::MAX);
        pattern(&mut d, 0x6008 + 0x40 * i, 0x000f_ff80, 0x000f_ff80);
    }
    wr(&d, RXCTRL, 1);
    assert_eq!(rd(&d, RXCTRL) & 1, 1);
    wr(&d, RXCTRL, 0);
    for i in 0..16 {
        pattern(&mut d, RAL_LEGACY + 8 * i, u32::MAX, u32::MAX);
        pattern(&mut d, RAL_LEGACY + 4 + 8 * i, 0x8001_ffff, 0x800c_ffff);
    }
    for i in 0..128 {
        pattern(&mut d, MTA + 4 * i, u32::MAX, u32::MAX);
    }
    // SRRCTL 0..15 are the same registers at 0x2100 and in the queue blocks.
    wr(&d, 0x2100 + 4 * 3, 0x0200_0003);
    assert_eq!(rd(&d, rxq_base(3) + q::SRRCTL), 0x0200_0003);
    // Queue enable bits read back at once (the driver polls them); flush self-clears.
    wr(
        &d,
        txq_base(5) + q::DCTL,
        QUEUE_ENABLE | QUEUE_SWFLSH | 0x20,
    );
    assert_eq!(rd(&d, txq_base(5) + q::DCTL), QUEUE_ENABLE | 0x20);
    wr(&d, rxq_base(70) + q::DCTL, QUEUE_ENABLE);
    assert_eq!(rd(&d, 0xd000 + 6 * 0x40 + q::DCTL), QUEUE_ENABLE);
    // Statistics clear on read; the octet counters are 36 bits.
    d.stat_add(stat::GPRC, 3);
    assert_eq!(rd(&d, stat::GPRC), 3);
    assert_eq!(rd(&d, stat::GPRC), 0);
    // Unknown, misaligned and out-of-range offsets.
    assert_eq!(rd(&d, 0x0004), 0);
    wr(&d, 0x1ff00, 5);
    let mut b = [0xffu8; 4];
    d.bar_read(0, 1 << 40, &mut b);
    assert_eq!(b, [0; 4]);
    d.bar_read(0, 0x7fffc, &mut b);
    assert_eq!(b, [0; 4]);
    d.bar_write(0, u64::MAX - 3, &[1, 2, 3, 4]);
    assert!(d.guest_errors().unknown_regs >= 2);
}

#[test]
fn msix_routing_autoclear_automask_and_other_causes() {
    let (d, t) = dev();
    // ixgbe_setup_gpie + ixgbe_configure_msix for 2 queue vectors + other.
    wr(&d, GPIE, 0x10 | 0x20 | (1 << 30) | (1 << 31));
    wr(&d, EIAM_EX, u32::MAX);
    wr(&d, EIAM_EX + 4, u32::MAX);
    wr(&d, IVAR0, 0x8080); // queue 0: rx -> 0, tx -> 0
    wr(&d, IVAR0 + 4 * 20, 0x8181_0000); // queue 41 -> vector 1
    wr(&d, IVAR_MISC, 0x8200);
    wr(&d, EIAC, 0x4000_ffff);
    // ixgbe_irq_enable: other causes in EIMS, queues in EIMS_EX.
    wr(&d, EIMS, intr::EICR_LSC | (1 << 31));
    wr(&d, EIMS_EX, u32::MAX);
    wr(&d, EIMS_EX + 4, u32::MAX);
    assert!(t.irq.take().is_empty());
    I82599::queue_interrupt(&d, 0, Dir::Rx);
    I82599::queue_interrupt(&d, 41, Dir::Tx);
    assert_eq!(t.irq.take(), vec![Irq::Msix(0), Irq::Msix(1)]);
    I82599::queue_interrupt(&d, 0, Dir::Rx);
    assert!(t.irq.take().is_empty(), "auto-masked until re-enabled");
    wr(&d, EIMS_EX, 1);
    assert_eq!(
        t.irq.take(),
        vec![Irq::Msix(0)],
        "pending cause fires on unmask"
    );
    assert_eq!(rd(&d, EIMS_EX) & 3, 0, "both auto-masked again");
    // Watchdog: EICS_EX rearms queue vectors.
    wr(&d, EIMS_EX, 3);
    wr(&d, EICS_EX, 3);
    assert_eq!(t.irq.take(), vec![Irq::Msix(0), Irq::Msix(1)]);
    // Link change: the other vector fires; ixgbe_msix_other reads EICS, clears EICR.
    d.set_link(false);
    assert_eq!(t.irq.take(), vec![Irq::Msix(2)]);
    assert_eq!(rd(&d, LINKS) & links::UP, 0);
    let eicr = rd(&d, EICS) & 0xffff_0000;
    assert_ne!(eicr & intr::EICR_LSC, 0);
    wr(&d, EICR, eicr);
    assert_eq!(rd(&d, EICS) & intr::EICR_LSC, 0);
    d.set_link(true);
    assert_eq!(t.irq.take(), vec![Irq::Msix(2)]);
    wr(&d, EIMC, intr::EICR_LSC);
    wr(&d, EICR, u32::MAX);
    d.set_link(false);
    assert!(t.irq.take().is_empty(), "LSC masked");
    assert_eq!(intr::ivar_slot(41, Dir::Tx), (20, 24));
    assert_eq!(intr::ivar_slot(2, Dir::Rx), (1, 0));
}

#[test]
fn legacy_interrupt_self_test() {
    // ixgbe_intr_test with MSI: EIMS/EICS bits 0..9.
    let (d, t) = dev();
    wr(&d, EIMC, u32::MAX);
    for i in 0..10 {
        let mask = 1u32 << i;
        wr(&d, EIMC, !mask & 0x7fff);
        wr(&d, EICS, !mask & 0x7fff);
        assert!(t.irq.take().is_empty(), "masked bits do not fire");
        wr(&d, EIMS, mask);
        wr(&d, EICS, mask);
        assert_eq!(t.irq.take(), vec![Irq::Legacy]);
        assert_ne!(rd(&d, EICR) & mask, 0, "handler sees the cause");
        assert_eq!(rd(&d, EICR) & 0x7fff, 0, "cleared by the read");
        wr(&d, EIMC, !mask & 0x7fff);
        wr(&d, EICS, !mask & 0x7fff);
        assert!(t.irq.take().is_empty());
    }
}

const TX_RING: u64 = 0x10000;
const RX_RING: u64 = 0x20000;
const RX_BUFS: u64 = 0x40000;
const TX_BUFS: u64 = 0x80000;

/// Sets up TX and RX queue 0 as `ixgbe_setup_desc_rings` does.
fn setup_rings(d: &mut Ixgbe, n: u32) {
    let v = rd(d, DMATXCTL) | 1;
    wr(d, DMATXCTL, v);
    let tb = txq_base(0);
    wr(d, tb + q::DCTL, 0);
    wr(d, tb + q::BAL, TX_RING as u32);
    wr(d, tb + q::BAH, 0);
    wr(d, tb + q::LEN, n * 16);
    wr(d, tb + q::H, 0);
    wr(d, tb + q::T, 0);
    wr(d, tb + q::DCTL, QUEUE_ENABLE | (1 << 16) | (1 << 8) | 32);
    assert_ne!(rd(d, tb + q::DCTL) & QUEUE_ENABLE, 0);
    wr(d, RXCTRL, 0);
    let rb = rxq_base(0);
    wr(d, rb + q::DCTL, 0);
    assert_eq!(rd(d, rb + q::DCTL) & QUEUE_ENABLE, 0);
    wr(d, rb + q::BAL, RX_RING as u32);
    wr(d, rb + q::BAH, 0);
    wr(d, rb + q::LEN, n * 16);
    wr(d, rb + q::H, 0);
    wr(d, rb + q::T, 0);
    wr(d, 0x2100, 0x0200_0002); // SRRCTL: adv one buffer, 2 KiB
    wr(d, rb + q::DCTL, QUEUE_ENABLE);
    assert_ne!(rd(d, rb + q::DCTL) & QUEUE_ENABLE, 0);
    for i in 0..n {
        post_rx(d, i);
    }
    wr(d, rb + q::T, n - 1);
    wr(d, RXCTRL, 1 | 2);
}

fn post_rx(d: &Ixgbe, i: u32) {
    let desc = RX_RING + u64::from(i) * 16;
    d.mem()
        .write_obj(RX_BUFS + u64::from(i) * 2048, GuestAddress(desc))
        .unwrap();
    d.mem().write_obj(0u64, GuestAddress(desc + 8)).unwrap();
}

fn send(d: &Ixgbe, idx: u32, n: u32, frame: &[u8]) {
    let buf = TX_BUFS + u64::from(idx) * 2048;
    d.mem().write_slice(frame, GuestAddress(buf)).unwrap();
    let desc = TX_RING + u64::from(idx) * 16;
    d.mem().write_obj(buf, GuestAddress(desc)).unwrap();
    // DEXT | RS | IFCS | EOP | DTYP data, PAYLEN.
    let cmd = 0x2b30_0000u32 | frame.len() as u32;
    d.mem().write_obj(cmd, GuestAddress(desc + 8)).unwrap();
    d.mem()
        .write_obj((frame.len() as u32) << 14, GuestAddress(desc + 12))
        .unwrap();
    wr(d, txq_base(0) + q::T, (idx + 1) % n);
}

/// `ixgbe_create_lbtest_frame` with 1024 bytes.
fn lbtest_frame() -> Vec<u8> {
    let mut f = vec![0xffu8; 1024];
    f[512..512 + 255].fill(0xaa);
    f[512 + 10] = 0xbe;
    f[512 + 12] = 0xaf;
    f
}

#[test]
fn mac_loopback_self_test() {
    let (mut d, t) = dev();
    let n = 64;
    setup_rings(&mut d, n);
    // ixgbe_setup_loopback_test.
    let v = rd(&d, HLREG0) | hlreg0::LPBK;
    wr(&d, HLREG0, v);
    let v = rd(&d, FCTRL) | fctrl::BAM | fctrl::SBP | fctrl::MPE;
    wr(&d, FCTRL, v);
    wr(&d, AUTOC, regs::AUTOC_RESET | 1);
    let f = lbtest_frame();
    for i in 0..200u32 {
        let slot = i % n;
        send(&d, slot, n, &f);
        let rxd = RX_RING + u64::from(slot) * 16;
        let st: u32 = d.mem().read_obj(GuestAddress(rxd + 8)).unwrap();
        assert_eq!(st & 3, 3, "frame {i}: DD|EOP");
        let len: u16 = d.mem().read_obj(GuestAddress(rxd + 12)).unwrap();
        assert_eq!(len, 1024);
        let mut got = vec![0u8; 1024];
        d.mem()
            .read_slice(&mut got, GuestAddress(RX_BUFS + u64::from(slot) * 2048))
            .unwrap();
        assert_eq!(got[3], 0xff);
        assert_eq!(got[512 + 10], 0xbe);
        assert_eq!(got[512 + 12], 0xaf);
        let txst: u32 = d
            .mem()
            .read_obj(GuestAddress(TX_RING + u64::from(slot) * 16 + 12))
            .unwrap();
        assert_eq!(txst & 1, 1, "TX DD");
        post_rx(&d, slot);
        wr(&d, rxq_base(0) + q::T, slot);
    }
    assert!(t.wire.take().is_empty(), "loopback frames stay inside");
    assert_eq!(rd(&d, stat::GPRC), 200);
    assert_eq!(rd(&d, stat::BPRC), 200);
    assert_eq!(rd(&d, stat::GPTC), 200);
    assert_eq!(rd(&d, stat::GORCL), 200 * 1028);
    assert_eq!(rd(&d, stat::GORCL + 4), 0);
    assert_eq!(rd(&d, stat::PRC64 + 4 * 5), 200, "PRC1522 bucket");
    assert_eq!(rd(&d, stat::QPRC), 200);
    assert_eq!(rd(&d, stat::QPTC), 200);
    assert_eq!(rd(&d, stat::QBTC_L), 200 * 1028);
    // Without loopback the frame goes to the wire.
    let v = rd(&d, HLREG0) & !hlreg0::LPBK;
    wr(&d, HLREG0, v);
    send(&d, 200 % n, n, &f);
    assert_eq!(t.wire.take().len(), 1);
}

/// PCI COMMAND.BME clear (the driver's remove path, or a hostile guest):
/// the 82599 as a bus master does no DMA, so a doorbell fetches no
/// descriptor and a frame from the wire is not written (issue 14 item 10).
#[test]
fn without_bus_mastering_there_is_no_dma() {
    let (mut d, t) = dev();
    setup_rings(&mut d, 16);
    wr(&d, FCTRL, fctrl::BAM);
    d.config_write(4, &0x0002u16.to_le_bytes());
    send(&d, 0, 16, &lbtest_frame());
    assert!(t.wire.take().is_empty(), "no descriptor fetched");
    assert_eq!(rd(&d, txq_base(0) + q::H), 0, "TDH stays");
    let txst: u32 = d.mem().read_obj(GuestAddress(TX_RING + 12)).unwrap();
    assert_eq!(txst & 1, 0, "no DD written");
    d.receive(&lbtest_frame());
    let st: u32 = d.mem().read_obj(GuestAddress(RX_RING + 8)).unwrap();
    assert_eq!(st & 1, 0, "no receive write-back");
    assert_eq!(rd(&d, rxq_base(0) + q::H), 0, "RDH stays");
    assert_eq!(d.guest_errors().dma_blocked, 2);
    assert_eq!(d.guest_errors().dma_errors, 0);
    // Back on: the pending descriptor goes out at the next doorbell.
    crate::testutil::bus_master(&d);
    wr(&d, txq_base(0) + q::T, 1);
    assert_eq!(t.wire.take().len(), 1);
    // A function reset clears COMMAND, and with it bus mastering.
    d.reset();
    let mut cmd = [0u8; 2];
    d.config_read(4, &mut cmd);
    assert_eq!(u16::from_le_bytes(cmd) & 0x4, 0, "BME clear after reset");
}

#[test]
fn full_rx_ring_counts_missed_packets() {
    let (mut d, _t) = dev();
    setup_rings(&mut d, 8);
    wr(&d, FCTRL, fctrl::BAM);
    for _ in 0..10 {
        d.receive(&lbtest_frame());
    }
    // The driver computes gprc = GPRC - MPC.
    let gprc = rd(&d, stat::GPRC);
    let mpc = rd(&d, stat::MPC);
    assert_eq!((gprc - mpc, mpc), (7, 3), "seven buffers posted");
    assert_eq!(rd(&d, stat::RNBC), 3);
    assert_eq!(rd(&d, stat::QPRDC), 3);
}

#[test]
fn a_busy_receive_queue_holds_up_neither_transmit_nor_control() {
    let (mut d, t) = dev();
    setup_rings(&mut d, 16);
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&MAC);
    let gprc = |d: &Ixgbe| {
        d.counters()
            .into_iter()
            .find(|(n, _)| n == "GPRC")
            .unwrap()
            .1
    };
    let guard = d.rxq[0].lock().unwrap();
    assert!(
        !(d.deliver(&f, Some(0), false) == Delivery::Done),
        "queue 0 busy: refused"
    );
    assert_eq!(gprc(&d), 0, "refused without side effects");
    // Transmit and register accesses go on meanwhile.
    send(&d, 0, 16, &lbtest_frame());
    assert_eq!(t.wire.take().len(), 1);
    assert_eq!(rd(&d, txq_base(0) + q::H), 1);
    drop(guard);
    assert!((d.deliver(&f, Some(0), false) == Delivery::Done));
    assert_eq!(gprc(&d), 1);
    assert_eq!(rd(&d, rxq_base(0) + q::H), 1);
}

#[test]
fn filters_rss_and_checksum_status() {
    let (mut d, _t) = dev();
    setup_rings(&mut d, 16);
    wr(&d, FCTRL, 0);
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0xff; 6]);
    d.receive(&f);
    assert_eq!(rd(&d, stat::GPRC), 0, "broadcast needs BAM");
    f[..6].copy_from_slice(&MAC);
    d.receive(&f);
    f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 1]);
    d.receive(&f);
    assert_eq!(rd(&d, stat::GPRC), 1, "own MAC only");
    // Multicast 01:00:5e:00:00:01, MO = 0: hash 0x10, needs MCSTCTRL.MFE.
    f[..6].copy_from_slice(&[0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]);
    wr(&d, MTA, 1 << 0x10);
    d.receive(&f);
    assert_eq!(rd(&d, stat::MPRC), 0);
    wr(&d, MCSTCTRL, 1 << 2);
    d.receive(&f);
    assert_eq!(rd(&d, stat::MPRC), 1);
    // A UDP/IPv4 frame with a good checksum, RSS over 4 queues (all to queue 0 here).
    let mut u = vec![0u8; 14 + 20 + 8 + 4];
    u[..6].copy_from_slice(&MAC);
    u[12] = 0x08;
    u[14] = 0x45;
    u[16..18].copy_from_slice(&(20u16 + 8 + 4).to_be_bytes());
    u[22] = 64;
    u[23] = 17;
    u[26..30].copy_from_slice(&[10, 0, 0, 1]);
    u[30..34].copy_from_slice(&[10, 0, 0, 2]);
    u[34..36].copy_from_slice(&1000u16.to_be_bytes());
    u[36..38].copy_from_slice(&2000u16.to_be_bytes());
    u[38..40].copy_from_slice(&12u16.to_be_bytes());
    nicemu_net_util::csum::ipv4_header_csum(&mut u, 14).unwrap();
    nicemu_net_util::csum::l4_csum(&mut u, 14, 34, true, 17).unwrap();
    wr(&d, MRQC, 1 | (1 << 17) | (1 << 22));
    for i in 0..10 {
        wr(&d, RSSRK + 4 * i, 0x6d5a_56da ^ i);
    }
    let head = rd(&d, rxq_base(0) + q::H);
    d.receive(&u);
    let rxd = RX_RING + u64::from(head) * 16;
    let st: u32 = d.mem().read_obj(GuestAddress(rxd + 8)).unwrap();
    assert_eq!(st & 0x63, 0x63, "DD|EOP|L4CS|IPCS");
    assert_eq!(st & 0xc000_0000, 0, "no checksum errors");
    let info: u32 = d.mem().read_obj(GuestAddress(rxd)).unwrap();
    assert_eq!(info & 0xf, 7, "RSS type UDP/IPv4");
    assert_eq!(info & 0x210, 0x210, "packet type IPv4 UDP");
    let hash: u32 = d.mem().read_obj(GuestAddress(rxd + 4)).unwrap();
    assert_ne!(hash, 0);
}

#[test]
fn hostile_rings_do_not_crash_or_hang() {
    let (mut d, _t) = dev();
    setup_rings(&mut d, 8);
    let tb = txq_base(0);
    // Tail beyond the ring.
    wr(&d, tb + q::T, 200);
    assert!(d.guest_errors().ring_errors >= 1);
    // Descriptor ring outside guest memory.
    wr(&d, tb + q::DCTL, 0);
    wr(&d, tb + q::BAL, 0xffff_ff80);
    wr(&d, tb + q::BAH, 0xffff_ffff);
    wr(&d, tb + q::H, 0);
    wr(&d, tb + q::DCTL, QUEUE_ENABLE);
    wr(&d, tb + q::T, 7);
    assert!(d.guest_errors().dma_errors >= 7);
    assert_eq!(
        rd(&d, tb + q::H),
        7,
        "head advanced past the bad descriptors"
    );
    // Buffers outside RAM, huge lengths, no EOP: dropped and counted.
    wr(&d, tb + q::DCTL, 0);
    wr(&d, tb + q::BAL, TX_RING as u32);
    wr(&d, tb + q::BAH, 0);
    wr(&d, tb + q::H, 0);
    wr(&d, tb + q::T, 0);
    wr(&d, tb + q::DCTL, QUEUE_ENABLE);
    for i in 0..8u64 {
        let desc = TX_RING + i * 16;
        d.mem()
            .write_obj(0xffff_0000_0000u64, GuestAddress(desc))
            .unwrap();
        let cmd = 0x2b30_0000u32 | 0xffff;
        d.mem().write_obj(cmd, GuestAddress(desc + 8)).unwrap();
    }
    wr(&d, tb + q::T, 7);
    assert!(d.guest_errors().tx_malformed >= 1);
    // TSO with a hostile context: MSS 0, header lengths beyond the frame.
    let mut ctx = [0u8; 16];
    ctx[0..4].copy_from_slice(&((127u32 << 9) | 511).to_le_bytes());
    ctx[8..12].copy_from_slice(&(0x2020_0000u32 | (0x6 << 9)).to_le_bytes());
    d.mem().write_slice(&ctx, GuestAddress(TX_RING)).unwrap();
    let desc = TX_RING + 16;
    d.mem().write_obj(TX_BUFS, GuestAddress(desc)).unwrap();
    d.mem()
        .write_obj(0xab30_0000u32 | 100, GuestAddress(desc + 8))
        .unwrap();
    d.mem()
        .write_obj(100u32 << 14, GuestAddress(desc + 12))
        .unwrap();
    wr(&d, tb + q::DCTL, 0);
    wr(&d, tb + q::H, 0);
    wr(&d, tb + q::T, 0);
    wr(&d, tb + q::DCTL, QUEUE_ENABLE);
    wr(&d, tb + q::T, 2);
    // A one-descriptor ring (16 bytes) with tail 0 does nothing.
    wr(&d, tb + q::DCTL, 0);
    wr(&d, tb + q::LEN, 16);
    wr(&d, tb + q::H, 0);
    wr(&d, tb + q::DCTL, QUEUE_ENABLE);
    wr(&d, tb + q::T, 0);
    // RX with a zero-length ring and buffers outside RAM.
    let rb = rxq_base(0);
    wr(&d, FCTRL, fctrl::BAM);
    wr(&d, rb + q::LEN, 0);
    d.receive(&lbtest_frame());
    wr(&d, rb + q::DCTL, 0);
    wr(&d, rb + q::LEN, 128);
    wr(&d, rb + q::BAL, RX_RING as u32);
    wr(&d, rb + q::H, 0);
    wr(&d, rb + q::DCTL, QUEUE_ENABLE);
    for i in 0..8u64 {
        d.mem()
            .write_obj(u64::MAX - 100, GuestAddress(RX_RING + i * 16))
            .unwrap();
    }
    wr(&d, rb + q::T, 7);
    d.receive(&lbtest_frame());
    d.receive(&[0u8; 3]);
    d.receive(&vec![0xffu8; 20000]);
    assert!(d.guest_errors().dma_errors >= 8);
    // Queue registers of every queue and I/O window extremes.
    for qi in [63u32, 64, 127] {
        wr(&d, rxq_base(qi) + q::DCTL, QUEUE_ENABLE);
        wr(&d, txq_base(qi) + q::DCTL, QUEUE_ENABLE);
        wr(&d, txq_base(qi) + q::T, 5);
    }
    d.bar_write(2, 0, &u32::MAX.to_le_bytes());
    d.bar_write(2, 4, &u32::MAX.to_le_bytes());
    let mut b = [0u8; 4];
    d.bar_read(2, 4, &mut b);
    // The device still answers.
    assert_ne!(rd(&d, LINKS) & links::UP, 0);
}

#[test]
fn eitr_moderates_queue_vectors() {
    let (d, t) = dev();
    wr(&d, GPIE, 0x10 | (1 << 30));
    wr(&d, EIAM_EX, u32::MAX);
    wr(&d, EIAC, 0x4000_ffff);
    wr(&d, EITR0 + 4, 200 | (1 << 31)); // vector 1: 50 µs, CNT_WDIS
    wr(&d, EITR_HI + 4 * 6, 200); // vector 30: 50 µs
    t.clock.set(1_000_000);
    wr(&d, EIMS_EX, 1 << 1);
    wr(&d, EICS_EX, 1 << 1);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1)]);
    t.clock.set(1_020_000);
    wr(&d, EIMS_EX, 1 << 1);
    wr(&d, EICS_EX, 1 << 1);
    assert!(t.irq.take().is_empty(), "within 50 µs of the last");
    assert_eq!(t.timer.take(), vec![1_050_000]);
    t.clock.set(1_050_000);
    d.on_timer(1_050_000);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1)]);
    assert_eq!(
        intr::eitr_interval_ns(&d.regs, 30),
        50_000,
        "EITR of vectors above 23"
    );
}

/// A PTP v2 message over Ethernet (ptp4l -2) to 01:1b:19:00:00:00.
fn ptp_l2_frame(msg: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 44];
    f[..6].copy_from_slice(&[0x01, 0x1b, 0x19, 0, 0, 0]);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x88f7u16.to_be_bytes());
    f[14] = msg;
    f[15] = 2;
    f
}

/// A PTP v2 message over UDP/IPv4 to port 319 (ptp4l -4).
fn ptp_udp_frame(msg: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8];
    f[..6].copy_from_slice(&[0x01, 0x00, 0x5e, 0x00, 0x01, 0x81]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[14 + 8] = 1;
    f[14 + 9] = 17;
    f[34..36].copy_from_slice(&319u16.to_be_bytes());
    f[36..38].copy_from_slice(&319u16.to_be_bytes());
    f.extend_from_slice(&ptp_l2_frame(msg)[14..]);
    f
}

const TSYNCRXCTL: u32 = 0x5188;
const RXSTMPL: u32 = 0x51e8;
const RXSTMPH: u32 = 0x51a4;
const TSYNCTXCTL: u32 = 0x8c00;
const TXSTMPL: u32 = 0x8c04;
const TXSTMPH: u32 = 0x8c08;
const SYSTIML: u32 = 0x8c0c;
const SYSTIMH: u32 = 0x8c10;
const TIMINCA: u32 = 0x8c14;
const TIMADJL: u32 = 0x8c18;
const TIMADJH: u32 = 0x8c1c;
/// `ixgbe_ptp_start_cyclecounter` at 10 Gb/s: IV 0x66666666 >> 7, shift 21.
const TIMINCA_10G: u32 = (1 << 24) | (0x6666_6666 >> 7);

/// `ixgbe_ptp_read_82599`: SYSTIML then SYSTIMH.
fn systim(d: &mut Ixgbe) -> u64 {
    let lo = rd(d, SYSTIML);
    u64::from(lo) | (u64::from(rd(d, SYSTIMH)) << 32)
}

#[test]
fn ptp_clock_rate_frequency_adjust_timadj() {
    let (mut d, t) = dev();
    wr(&d, TIMINCA, TIMINCA_10G);
    t.clock.set(3_000_000_000);
    let ns = systim(&mut d) >> 21;
    assert!(
        ns.abs_diff(3_000_000_000) < 300,
        "{ns}: 0.06 ppm slow at most"
    );
    // ixgbe_ptp_adjfine_82599 for -100000 ppb.
    let base = u64::from(0x6666_6666u32 >> 7);
    let iv = base - base * (100_000 * 65536 / 1000) / (1_000_000 << 16);
    let before = systim(&mut d);
    wr(&d, TIMINCA, (1 << 24) | iv as u32);
    t.clock.set(5_000_000_000);
    let elapsed = (systim(&mut d) - before) >> 21;
    let ppb = (elapsed as f64 / 2e9 - 1.0) * 1e9;
    assert!((ppb + 100_000.0).abs() < 150.0, "{ppb} ppb");
    // SYSTIM writes (ixgbe_ptp_reset on X540-style paths) and TIMADJ.
    wr(&d, SYSTIML, 0);
    wr(&d, SYSTIMH, 0);
    assert_eq!(systim(&mut d), 0);
    wr(&d, TIMADJL, 1000);
    wr(&d, TIMADJH, 0);
    assert_eq!(systim(&mut d), 1000);
    wr(&d, TIMADJL, 10);
    wr(&d, TIMADJH, 1 << 31);
    assert_eq!(systim(&mut d), 990);
}

#[test]
fn ptp_tx_and_rx_stamps() {
    let (mut d, t) = dev();
    let n = 16;
    setup_rings(&mut d, n);
    let v = rd(&d, FCTRL) | fctrl::MPE;
    wr(&d, FCTRL, v);
    wr(&d, TIMINCA, TIMINCA_10G);
    d.set_wire_delay_ns(640);
    // ixgbe_ptp_set_timestamp_mode for HWTSTAMP_TX_ON / PTP_V2_EVENT.
    wr(&d, 0x5128 + 12, 0xc000_0000 | 0x88f7);
    wr(&d, TSYNCTXCTL, 0x10);
    wr(&d, TSYNCRXCTL, 0x10 | 0x0a);
    wr(&d, 0x5120, 319 << 16);
    // Transmit with ADVTXD_MAC_TSTAMP.
    t.clock.set(64_000);
    let f = ptp_l2_frame(0);
    send(&d, 0, n, &f);
    assert_eq!(rd(&d, TSYNCTXCTL), 0x10, "no stamp without MAC_TSTAMP");
    let (desc, buf) = (TX_RING + 16, TX_BUFS + 2048);
    d.mem().write_slice(&f, GuestAddress(buf)).unwrap();
    d.mem().write_obj(buf, GuestAddress(desc)).unwrap();
    d.mem()
        .write_obj(0x2b38_0000u32 | f.len() as u32, GuestAddress(desc + 8))
        .unwrap();
    d.mem()
        .write_obj((f.len() as u32) << 14, GuestAddress(desc + 12))
        .unwrap();
    wr(&d, txq_base(0) + q::T, 2);
    assert_eq!(t.wire.take().len(), 2);
    assert_eq!(rd(&d, TSYNCTXCTL), 0x11);
    let lo = rd(&d, TXSTMPL);
    let hi = rd(&d, TXSTMPH);
    let cycles = u64::from(lo) | (u64::from(hi) << 32);
    assert_eq!(
        cycles,
        10_000 * 0xcc_cccc,
        "64 us = 10000 periods of 6.4 ns"
    );
    assert_eq!(rd(&d, TSYNCTXCTL), 0x10, "TXSTMPH unlocks");
    // Receive: L2 and UDP event messages.
    let status = |d: &mut Ixgbe, i: u64| -> u32 {
        d.mem()
            .read_obj(GuestAddress(RX_RING + i * 16 + 8))
            .unwrap()
    };
    t.clock.set(128_000 - 640);
    d.receive(&ptp_l2_frame(0));
    assert_eq!(status(&mut d, 0) & 0x1_0003, 0x1_0003);
    assert_eq!(rd(&d, TSYNCRXCTL), 0x1b);
    let lo = rd(&d, RXSTMPL);
    let hi = rd(&d, RXSTMPH);
    assert_eq!(
        u64::from(lo) | (u64::from(hi) << 32),
        20_000 * 0xcc_cccc,
        "arrival plus wire delay"
    );
    d.receive(&ptp_udp_frame(1));
    assert_eq!(status(&mut d, 1) & 0x1_0000, 0x1_0000, "UDP Delay_Req");
    d.receive(&ptp_udp_frame(2));
    assert_eq!(status(&mut d, 2) & 0x1_0000, 0, "still locked");
    let _ = rd(&d, RXSTMPH);
    d.receive(&ptp_udp_frame(0xb));
    assert_eq!(status(&mut d, 3) & 0x1_0000, 0, "Announce is no event");
    // Link reset clears the time sync unit.
    wr(&d, CTRL, ctrl::LNK_RST);
    assert_eq!((rd(&d, TSYNCRXCTL), rd(&d, TIMINCA)), (0, 0));
}

/// `ctl stats` totals are monotonic across a function reset (see the igb test).
#[test]
fn control_totals_survive_a_function_reset() {
    let (mut d, _t) = dev();
    setup_rings(&mut d, 16);
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&MAC);
    d.receive(&f);
    let total = |d: &Ixgbe| {
        d.counters()
            .into_iter()
            .find(|(n, _)| n == "GPRC")
            .unwrap()
            .1
    };
    assert_eq!(total(&d), 1);
    PciFunction::reset(&d);
    assert_eq!(total(&d), 1);
}

/// A nicemu counter by name (`ctl stats`' guest_errors list); 0 when absent.
fn nicemu_counter(d: &Ixgbe, name: &str) -> u64 {
    Introspect::error_counters(d)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |c| c.1)
}

/// As on the igb: without link the 82599 stops transmit DMA
/// (`ixgbe_watchdog_flush_tx`: "We've lost link, so the controller stops
/// DMA") and sends the held frame when the link is back; frames from the
/// wire that cannot arrive (no link, MAC loopback), that reach a disabled
/// receiver (no statistics register counts those: "only increments if
/// receives are enabled") or that the filters reject are counted by nicemu.
#[test]
fn no_link_holds_transmits_and_every_frame_not_received_is_counted() {
    let (mut d, t) = dev();
    setup_rings(&mut d, 16);
    wr(&d, FCTRL, fctrl::BAM);
    d.set_cable(false);
    send(&d, 0, 16, &lbtest_frame());
    assert!(t.wire.take().is_empty(), "nothing on the wire without link");
    assert_eq!(rd(&d, txq_base(0) + q::H), 0, "TDH stays");
    assert_eq!(rd(&d, stat::GPTC), 0);
    d.receive(&lbtest_frame());
    assert_eq!(nicemu_counter(&d, "rx_no_link"), 1);
    d.set_cable(true);
    assert_eq!(t.wire.take().len(), 1, "the held frame leaves at link up");
    assert_eq!(rd(&d, txq_base(0) + q::H), 1);
    assert_eq!(rd(&d, stat::GPTC), 1);
    // The MAC looped back: the wire is not listened to.
    let v = rd(&d, HLREG0) | hlreg0::LPBK;
    wr(&d, HLREG0, v);
    d.receive(&lbtest_frame());
    assert_eq!(nicemu_counter(&d, "rx_no_link"), 2);
    let v = rd(&d, HLREG0) & !hlreg0::LPBK;
    wr(&d, HLREG0, v);
    // Receiver disabled.
    wr(&d, RXCTRL, 0);
    d.receive(&lbtest_frame());
    assert_eq!(nicemu_counter(&d, "rx_disabled"), 1);
    // Enabled, addressed to another station.
    wr(&d, RXCTRL, 1);
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 1]);
    d.receive(&f);
    assert_eq!(nicemu_counter(&d, "rx_filtered"), 1);
    assert_eq!(rd(&d, stat::GPRC) + rd(&d, stat::MPC), 0);
}

mod fdir;
mod ipsec;
mod rsc;

#[test]
fn pause_frames_are_counted_as_lxon_lxoff_and_not_posted() {
    let (mut d, _t) = dev();
    setup_rings(&mut d, 16);
    wr(&d, FCTRL, fctrl::BAM);
    let pause = |quanta: u16| {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0x01, 0x80, 0xc2, 0, 0, 1]);
        f[12..14].copy_from_slice(&0x8808u16.to_be_bytes());
        f[14..16].copy_from_slice(&1u16.to_be_bytes());
        f[16..18].copy_from_slice(&quanta.to_be_bytes());
        f
    };
    d.receive(&pause(0x100));
    d.receive(&pause(0));
    d.receive(&pause(0));
    assert_eq!(rd(&d, 0x41a8), 1, "LXOFFRXCNT");
    assert_eq!(rd(&d, 0x41a4), 2, "LXONRXCNT");
    assert_eq!(
        rd(&d, stat::GPRC),
        0,
        "flow control frames are not good packets"
    );
    assert_eq!(rd(&d, rxq_base(0) + q::H), 0, "RDH: nothing posted");
    d.receive(&lbtest_frame());
    assert_eq!(rd(&d, stat::GPRC), 1, "the receiver takes other frames");
}
