// SPDX-License-Identifier: Apache-2.0
//! Unit tests that drive the 82599 model the way the ixgbe driver does: what
//! only the 82599 does (what both parts do alike is `function/tests.rs`).

use vm_memory::{Bytes, GuestAddress};

use super::double::SYSTIML;
use super::intr::{self, Dir};
use super::*;
use crate::function::Interrupts;
use crate::testutil::driver::DriverQueues as _;
use crate::testutil::driver::{
    error_counter, loopback_round_trips, nvm_read, ptp_l2_frame, rd, send, setup_rings, systim, wr,
    DriverPart, MAC, RX_BUFS, RX_RING, TX_BUFS, TX_RING,
};
use crate::testutil::i2c_master::{I2cLines, I2cMaster};
use crate::testutil::{Irq, TestEnv};
use crate::{NetPort, PciFunction};

fn dev_with(sfp: SfpKind) -> (Ixgbe, TestEnv) {
    I82599::dev_with(IxgbeConfig { mac: MAC, sfp })
}

/// `ixgbe_calc_eeprom_checksum_generic` through EERD.
fn driver_checksum(d: &Ixgbe) -> u16 {
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

/// The I2C lines as the driver reaches them: I2CCTL's clock and data bits.
struct I2cCtl<'a>(&'a Ixgbe);

impl I2cCtl<'_> {
    const CLK_OUT: u32 = 2;
    const DATA_IN: u32 = 4;
    const DATA_OUT: u32 = 8;
}

impl I2cLines for I2cCtl<'_> {
    fn drive(&mut self, clk: bool, data: bool) {
        let v = if clk { Self::CLK_OUT } else { 0 } | if data { Self::DATA_OUT } else { 0 };
        wr(self.0, I2CCTL, v);
    }
    fn driven(&mut self) -> (bool, bool) {
        let v = rd(self.0, I2CCTL);
        (v & Self::CLK_OUT != 0, v & Self::DATA_OUT != 0)
    }
    fn sda_in(&mut self) -> bool {
        rd(self.0, I2CCTL) & Self::DATA_IN != 0
    }
}

#[test]
fn probe_sequence_reset_nvm_mac_sfp_link() {
    let (d, _t) = I82599::dev();
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
    let c = driver_checksum(&d);
    assert_eq!(c, nvm_read(&d, 0x3f));
    // verify_fw_version_82599: fw ptr → +4 → +7 > 5.
    let fw = nvm_read(&d, 0x0f);
    let pt = nvm_read(&d, u32::from(fw) + 4);
    assert!(nvm_read(&d, u32::from(pt) + 7) > 5);
    assert_eq!(nvm_read(&d, u32::from(fw) + 2), 0xffff, "no LESM");
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
    let mut i2c = I2cMaster(I2cCtl(&d));
    assert_eq!(i2c.read(0xa0, 0), Some(0x03), "SFP identifier");
    assert_eq!(i2c.read(0xa0, 6), Some(0));
    assert_eq!(i2c.read(0xa0, 3), Some(0));
    assert_eq!(i2c.read(0xa0, 8), Some(0x04), "passive DA");
    assert_eq!(i2c.read(0xa0, 0x25), Some(0x52));
    // SFP init sequence for da_cu_core0 in the NVM.
    let list = nvm_read(&d, 0x2b);
    assert!(list != 0 && list != 0xffff);
    assert_eq!(nvm_read(&d, u32::from(list) + 1), 3);
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
    let (d, _t) = dev_with(SfpKind::None);
    assert_eq!(I2cMaster(I2cCtl(&d)).read(0xa0, 0), None);
    assert_eq!(rd(&d, LINKS) & links::UP, 0);
    assert_eq!(rd(&d, ESDP) & 4, 0);
}

#[test]
fn semaphores() {
    let (d, _t) = I82599::dev();
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
    let (d, _t) = I82599::dev();
    // STATUS toggle test.
    let before = rd(&d, STATUS) & 0x7fff_f30f;
    wr(&d, STATUS, 0x7fff_f30f);
    assert_eq!(rd(&d, STATUS) & 0x7fff_f30f, before);
    let pattern = |d: &Ixgbe, reg: u32, mask: u32, write: u32| {
        for pat in [0x5a5a_5a5au32, 0xa5a5_a5a5, 0, u32::MAX] {
            let before = rd(d, reg);
            wr(d, reg, pat & write);
            assert_eq!(rd(d, reg), pat & write & mask, "reg {reg:#x} pat {pat:#x}");
            wr(d, reg, before);
        }
    };
    pattern(&d, 0x3220, 0x8007_fff0, 0x8007_fff0);
    pattern(&d, 0x3260, 0x8007_fff0, 0x8007_fff0);
    pattern(&d, 0x3008, u32::MAX, u32::MAX);
    pattern(&d, VLNCTRL, 0, 0);
    for i in 0..4 {
        pattern(&d, 0x1000 + 0x40 * i, 0xffff_ff80, 0xffff_ff80);
        pattern(&d, 0x1004 + 0x40 * i, u32::MAX, u32::MAX);
        pattern(&d, 0x1008 + 0x40 * i, 0x000f_ff80, 0x000f_ffff);
    }
    for i in 0..4 {
        wr(&d, 0x1028 + 0x40 * i, QUEUE_ENABLE);
    }
    for i in 0..4 {
        pattern(&d, 0x1018 + 0x40 * i, 0xffff, 0xffff);
    }
    for i in 0..4 {
        wr(&d, 0x1028 + 0x40 * i, 0);
    }
    pattern(&d, 0x3200, u32::MAX, u32::MAX);
    for i in 0..4 {
        pattern(&d, 0x6000 + 0x40 * i, 0xffff_ff80, u32::MAX);
        pattern(&d, 0x6004 + 0x40 * i, u32::MAX, u32::MAX);
        pattern(&d, 0x6008 + 0x40 * i, 0x000f_ff80, 0x000f_ff80);
    }
    wr(&d, RXCTRL, 1);
    assert_eq!(rd(&d, RXCTRL) & 1, 1);
    wr(&d, RXCTRL, 0);
    for i in 0..16 {
        pattern(&d, RAL_LEGACY + 8 * i, u32::MAX, u32::MAX);
        pattern(&d, RAL_LEGACY + 4 + 8 * i, 0x8001_ffff, 0x800c_ffff);
    }
    for i in 0..128 {
        pattern(&d, MTA + 4 * i, u32::MAX, u32::MAX);
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
    // The window's last dword is no register.
    let mut b = [0xffu8; 4];
    d.bar_read(0, 0x7fffc, &mut b);
    assert_eq!(b, [0; 4]);
}

#[test]
fn msix_routing_autoclear_automask_and_other_causes() {
    let (d, t) = I82599::dev();
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
    let (d, t) = I82599::dev();
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

#[test]
fn filters_rss_and_checksum_status() {
    let (d, _t) = I82599::dev();
    setup_rings(&d, 16);
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
fn eitr_moderates_queue_vectors() {
    let (d, t) = I82599::dev();
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
    f.extend_from_slice(&ptp_l2_frame(msg, 0)[14..]);
    f
}

const TSYNCRXCTL: u32 = 0x5188;
const RXSTMPL: u32 = 0x51e8;
const RXSTMPH: u32 = 0x51a4;
const TSYNCTXCTL: u32 = 0x8c00;
const TXSTMPL: u32 = 0x8c04;
const TXSTMPH: u32 = 0x8c08;
const TIMINCA: u32 = 0x8c14;
const TIMADJL: u32 = 0x8c18;
const TIMADJH: u32 = 0x8c1c;
/// `ixgbe_ptp_start_cyclecounter` at 10 Gb/s: IV 0x66666666 >> 7, shift 21.
const TIMINCA_10G: u32 = (1 << 24) | (0x6666_6666 >> 7);

#[test]
fn ptp_clock_rate_frequency_adjust_timadj() {
    let (d, t) = I82599::dev();
    wr(&d, TIMINCA, TIMINCA_10G);
    t.clock.set(3_000_000_000);
    let ns = systim(&d) >> 21;
    assert!(
        ns.abs_diff(3_000_000_000) < 300,
        "{ns}: 0.06 ppm slow at most"
    );
    // ixgbe_ptp_adjfine_82599 for -100000 ppb.
    let base = u64::from(0x6666_6666u32 >> 7);
    let iv = base - base * (100_000 * 65536 / 1000) / (1_000_000 << 16);
    let before = systim(&d);
    wr(&d, TIMINCA, (1 << 24) | iv as u32);
    t.clock.set(5_000_000_000);
    let elapsed = (systim(&d) - before) >> 21;
    let ppb = (elapsed as f64 / 2e9 - 1.0) * 1e9;
    assert!((ppb + 100_000.0).abs() < 150.0, "{ppb} ppb");
    // SYSTIM writes (ixgbe_ptp_reset on X540-style paths) and TIMADJ.
    wr(&d, SYSTIML, 0);
    wr(&d, SYSTIML + 4, 0);
    assert_eq!(systim(&d), 0);
    wr(&d, TIMADJL, 1000);
    wr(&d, TIMADJH, 0);
    assert_eq!(systim(&d), 1000);
    wr(&d, TIMADJL, 10);
    wr(&d, TIMADJH, 1 << 31);
    assert_eq!(systim(&d), 990);
}

#[test]
fn ptp_tx_and_rx_stamps() {
    let (d, t) = I82599::dev();
    let n = 16;
    setup_rings(&d, n);
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
    let f = ptp_l2_frame(0, 0);
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
    let status = |d: &Ixgbe, i: u64| -> u32 {
        d.mem()
            .read_obj(GuestAddress(RX_RING + i * 16 + 8))
            .unwrap()
    };
    t.clock.set(128_000 - 640);
    d.receive(&ptp_l2_frame(0, 0));
    assert_eq!(status(&d, 0) & 0x1_0003, 0x1_0003);
    assert_eq!(rd(&d, TSYNCRXCTL), 0x1b);
    let lo = rd(&d, RXSTMPL);
    let hi = rd(&d, RXSTMPH);
    assert_eq!(
        u64::from(lo) | (u64::from(hi) << 32),
        20_000 * 0xcc_cccc,
        "arrival plus wire delay"
    );
    d.receive(&ptp_udp_frame(1));
    assert_eq!(status(&d, 1) & 0x1_0000, 0x1_0000, "UDP Delay_Req");
    d.receive(&ptp_udp_frame(2));
    assert_eq!(status(&d, 2) & 0x1_0000, 0, "still locked");
    let _ = rd(&d, RXSTMPH);
    d.receive(&ptp_udp_frame(0xb));
    assert_eq!(status(&d, 3) & 0x1_0000, 0, "Announce is no event");
    // Link reset clears the time sync unit.
    wr(&d, CTRL, ctrl::LNK_RST);
    assert_eq!((rd(&d, TSYNCRXCTL), rd(&d, TIMINCA)), (0, 0));
}

mod fdir;
mod ipsec;
mod rsc;

/// The per-queue statistics (QPRC, QPTC, QBTC) count every frame the
/// loopback self-test sends and receives.
#[test]
fn per_queue_counters_count_every_looped_back_frame() {
    let (d, t) = I82599::dev();
    let n = 64;
    setup_rings(&d, n);
    I82599::set_loopback(&d, &t, true);
    loopback_round_trips(&d, &t, n, 200);
    assert_eq!(rd(&d, stat::QPRC), 200);
    assert_eq!(rd(&d, stat::QPTC), 200);
    assert_eq!(rd(&d, stat::QBTC_L), 200 * 1028);
}

/// With the MAC looped back the wire is not listened to: a frame from it
/// counts as `rx_no_link`.
#[test]
fn a_looped_back_mac_does_not_listen_to_the_wire() {
    let (d, t) = I82599::dev();
    setup_rings(&d, 16);
    I82599::set_loopback(&d, &t, true);
    d.receive(&I82599::lbtest_frame());
    assert_eq!(error_counter(&d, "rx_no_link"), 1);
    assert_eq!(rd(&d, stat::GPRC), 0);
    I82599::set_loopback(&d, &t, false);
    d.receive(&I82599::lbtest_frame());
    assert_eq!(rd(&d, stat::GPRC), 1);
}
