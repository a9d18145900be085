// SPDX-License-Identifier: Apache-2.0
//! IEEE 1588 time synchronisation unit shared by the 82576 (datasheet §7.9,
//! registers §8.15) and the 82599 (datasheet §7.9, registers §8.2.3.26).
//!
//! Both parts keep a 64-bit system time counter SYSTIM that grows by
//! `TIMINCA.IV` (bits 23:0) every `TIMINCA.IP` (bits 31:24) ticks of a base
//! clock: 16 ns on the 82576, 6.4 ns on the 82599 at 10 Gb/s or without link
//! (64 ns at 1 Gb/s, 640 ns at 100 Mb/s). The drivers never read nanoseconds
//! from it directly; they run a cyclecounter over it:
//!
//! - `igb_ptp_init` (82576): `TIMINCA = 1 << 24 | 16 << 19`, `cc.shift = 19`,
//!   so SYSTIM grows by 2^19 per nanosecond; `igb_ptp_adjfine_82576` rewrites
//!   `TIMINCA.IV = adjust_by_scaled_ppm(16 << 19, scaled_ppm)`.
//! - `ixgbe_ptp_start_cyclecounter` (82599 at 10 Gb/s):
//!   `TIMINCA = 1 << 24 | 0x66666666 >> 7`, `cc.shift = 28 - 7`; at 1 Gb/s
//!   `0x40000000 >> 7` / shift 17, at 100 Mb/s `0x50000000 >> 7` / shift 14
//!   (`ixgbe_ptp_link_speed_adjust`); `ixgbe_ptp_adjfine_82599` rewrites IV.
//!
//! The model does not tick. It keeps a base (host time, counter value) pair and
//! computes `base + elapsed_ns * IV / (IP * period_ns)` in 128-bit arithmetic on
//! every read, re-basing whenever TIMINCA, SYSTIM or TIMADJ is written. So the
//! rate is exact (no accumulated rounding), a frequency change applies from the
//! moment of the write, and the counter wraps at 2^64 like the register pair.
//! The host time comes from the [`crate::Clock`] every device of a process
//! shares, so all PHCs of one nicemu process run off one time base.
//!
//! Register semantics modelled:
//! - reading SYSTIML latches SYSTIMH (the drivers read L then H:
//!   `igb_ptp_read_82576`, `ixgbe_ptp_read_82599`); writing SYSTIML or SYSTIMH
//!   replaces that half of the running counter;
//! - writing TIMADJH adds (bit 31 clear) or subtracts (bit 31 set)
//!   `TIMADJH[30:0] << 32 | TIMADJL` to SYSTIM at once;
//! - TSYNCTXCTL: EN (bit 4) enables transmit stamps; a frame sent from a data
//!   descriptor with `ADVTXD_MAC_TSTAMP` latches SYSTIM into TXSTMPL/H and sets
//!   VALID (bit 0); no further transmit stamp is taken until TXSTMPH is read
//!   (`igb_ptp_tx_work`, `ixgbe_ptp_tx_hwtstamp_work` poll VALID, then read
//!   L and H; their hang handlers read TXSTMPH to unlock);
//! - TSYNCRXCTL: EN (bit 4) and TYPE (bits 3:1) select received frames to
//!   stamp (see [`RxFilter`]); a match latches RXSTMPL/H and RXSATRL/H, sets
//!   VALID and marks the frame's descriptor (status bit 16, TS); the registers
//!   stay locked until RXSTMPH is read (`igb_ptp_rx_rgtstamp`,
//!   `ixgbe_ptp_rx_rgtstamp`, and the `*_ptp_rx_hang` watchdogs).
//!
//! A receive stamp may be taken a configurable number of nanoseconds later than
//! the frame arrived ([`TimeSync::set_rx_delay_ns`]): the wire delay of the
//! emulated network. Frames themselves are not held back; only their receive
//! time stamp is, which is what a path-delay measurement sees.

/// TSYNCTXCTL / TSYNCRXCTL: a time stamp is latched (read only).
pub const TSYNC_VALID: u32 = 1 << 0;
/// TSYNCTXCTL / TSYNCRXCTL: time stamping enabled.
pub const TSYNC_EN: u32 = 1 << 4;
/// TSYNCRXCTL: type field.
pub const TSYNCRXCTL_TYPE_MASK: u32 = 0x0e;
/// TSYNCRXCTL type: L2 (ethertype filter) PTP v2 messages of the configured type.
pub const RX_TYPE_L2_V2: u32 = 0x00;
/// TSYNCRXCTL type: UDP PTP v1 messages of the configured control value.
pub const RX_TYPE_L4_V1: u32 = 0x02;
/// TSYNCRXCTL type: L2 or UDP PTP v2 messages of the configured type.
pub const RX_TYPE_L2_L4_V2: u32 = 0x04;
/// TSYNCRXCTL type: every received frame.
pub const RX_TYPE_ALL: u32 = 0x08;
/// TSYNCRXCTL type: L2 or UDP PTP v2 event messages (Sync, Delay_Req,
/// Pdelay_Req, Pdelay_Resp).
pub const RX_TYPE_EVENT_V2: u32 = 0x0a;
/// Advanced receive descriptor status: the frame's time stamp is in
/// RXSTMPL/H (`E1000_RXDADV_STAT_TS`, `IXGBE_RXDADV_STAT_TS`).
pub const RXD_STAT_TS: u32 = 1 << 16;
/// Advanced transmit data descriptor: time stamp this frame
/// (`E1000_ADVTXD_MAC_TSTAMP`, `IXGBE_ADVTXD_MAC_TSTAMP`).
pub const ADVTXD_MAC_TSTAMP: u32 = 1 << 19;
/// The IEEE 1588 ethertype.
pub const ETH_P_1588: u16 = 0x88f7;
/// UDP port of PTP event messages.
pub const PTP_EVENT_PORT: u16 = 319;

/// Period of the base clock that advances SYSTIM, as a fraction of nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BasePeriod {
    /// Numerator (ns).
    pub num: u64,
    /// Denominator.
    pub den: u64,
}

impl BasePeriod {
    /// 82576: 16 ns (`INCPERIOD_82576`, 62.5 MHz).
    pub const I82576: BasePeriod = BasePeriod { num: 16, den: 1 };
    /// 82599 at 10 Gb/s or without link: 6.4 ns.
    pub const I82599_10G: BasePeriod = BasePeriod { num: 32, den: 5 };
    /// 82599 at 1 Gb/s: 64 ns.
    pub const I82599_1G: BasePeriod = BasePeriod { num: 64, den: 1 };
    /// 82599 at 100 Mb/s: 640 ns.
    pub const I82599_100M: BasePeriod = BasePeriod { num: 640, den: 1 };
}

/// The SYSTIM counter with its TIMINCA rate, TIMADJ and the SYSTIMH latch.
#[derive(Clone, Debug)]
pub struct SysTime {
    period: BasePeriod,
    timinca: u32,
    /// Host time of the base point.
    base_ns: u64,
    /// Counter value at `base_ns`.
    base: u64,
    /// Fraction of a count at `base_ns`, in units of 2^-32 counts (carried
    /// across re-bases so that rate changes never lose time).
    base_frac: u32,
    /// SYSTIMH as latched by the last SYSTIML read.
    hi_latch: u32,
    timadjl: u32,
    timadjh: u32,
}

impl SysTime {
    /// A stopped counter at 0 (TIMINCA 0), as after reset.
    pub fn new(period: BasePeriod, now: u64) -> Self {
        SysTime {
            period,
            timinca: 0,
            base_ns: now,
            base: 0,
            base_frac: 0,
            hi_latch: 0,
            timadjl: 0,
            timadjh: 0,
        }
    }

    /// Back to the reset state at host time `now`.
    pub fn reset(&mut self, now: u64) {
        *self = SysTime::new(self.period, now);
    }

    /// Changes the base clock period (link speed change on the 82599).
    pub fn set_period(&mut self, period: BasePeriod, now: u64) {
        if period != self.period {
            self.rebase(now);
            self.period = period;
        }
    }

    /// Counts (in 2^-32 units) gained since the base point, fraction included.
    fn scaled_since_base(&self, now: u64) -> u128 {
        let ip = u128::from(self.timinca >> 24);
        let iv = u128::from(self.timinca & 0x00ff_ffff);
        let frac = u128::from(self.base_frac);
        if ip == 0 || iv == 0 {
            return frac;
        }
        let elapsed = u128::from(now.saturating_sub(self.base_ns));
        // elapsed < 2^64, iv < 2^24, den <= 5, scale 2^32: below 2^123.
        let num = (elapsed * iv * u128::from(self.period.den)) << 32;
        num / (ip * u128::from(self.period.num)) + frac
    }

    /// The counter at host time `now` (a pure read: no latch, no re-base).
    pub fn value_at(&self, now: u64) -> u64 {
        let inc = self.scaled_since_base(now) >> 32;
        // Truncation is the wrap of the 64-bit SYSTIMH:SYSTIML pair.
        self.base.wrapping_add(inc as u64)
    }

    fn rebase(&mut self, now: u64) {
        let scaled = self.scaled_since_base(now);
        self.base = self.base.wrapping_add((scaled >> 32) as u64);
        self.base_frac = scaled as u32;
        self.base_ns = self.base_ns.max(now);
    }

    /// Guest read of SYSTIML: returns the low half and latches the high half.
    pub fn read_low(&mut self, now: u64) -> u32 {
        let v = self.value_at(now);
        self.hi_latch = (v >> 32) as u32;
        v as u32
    }

    /// Guest read of SYSTIMH: the half latched by the last SYSTIML read.
    pub fn read_high(&self) -> u32 {
        self.hi_latch
    }

    /// Guest write of SYSTIML.
    pub fn write_low(&mut self, now: u64, v: u32) {
        self.rebase(now);
        self.base = (self.base & !0xffff_ffff) | u64::from(v);
        self.base_frac = 0;
    }

    /// Guest write of SYSTIMH.
    pub fn write_high(&mut self, now: u64, v: u32) {
        self.rebase(now);
        self.base = (u64::from(v) << 32) | (self.base & 0xffff_ffff);
        self.base_frac = 0;
    }

    /// TIMINCA as stored.
    pub fn timinca(&self) -> u32 {
        self.timinca
    }

    /// Guest write of TIMINCA: the new rate applies from `now` on.
    pub fn write_timinca(&mut self, now: u64, v: u32) {
        self.rebase(now);
        self.timinca = v;
    }

    /// TIMADJL / TIMADJH as stored.
    pub fn timadj(&self) -> (u32, u32) {
        (self.timadjl, self.timadjh)
    }

    /// Guest write of TIMADJL (takes effect with the TIMADJH write).
    pub fn write_timadjl(&mut self, v: u32) {
        self.timadjl = v;
    }

    /// Steps the counter by `ns` nanoseconds at its current rate (a fault the
    /// control path injects; a stopped counter does not move).
    pub fn step_ns(&mut self, now: u64, ns: i64) {
        self.rebase(now);
        let ip = u128::from(self.timinca >> 24);
        let iv = u128::from(self.timinca & 0x00ff_ffff);
        if ip == 0 || iv == 0 {
            return;
        }
        let counts = u128::from(ns.unsigned_abs()) * iv * u128::from(self.period.den)
            / (ip * u128::from(self.period.num));
        self.base = if ns < 0 {
            self.base.wrapping_sub(counts as u64)
        } else {
            self.base.wrapping_add(counts as u64)
        };
    }

    /// Guest write of TIMADJH: steps SYSTIM by ±(`TIMADJH[30:0]:TIMADJL`).
    pub fn write_timadjh(&mut self, now: u64, v: u32) {
        self.timadjh = v;
        self.rebase(now);
        let amount = (u64::from(v & 0x7fff_ffff) << 32) | u64::from(self.timadjl);
        self.base = if v & (1 << 31) != 0 {
            self.base.wrapping_sub(amount)
        } else {
            self.base.wrapping_add(amount)
        };
    }
}

/// The time-sync registers both devices have; the device maps its offsets to
/// these and hooks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsReg {
    /// System time, low.
    SystimL,
    /// System time, high.
    SystimH,
    /// Increment attributes.
    Timinca,
    /// Time adjustment offset, low.
    TimadjL,
    /// Time adjustment offset, high (applies the adjustment).
    TimadjH,
    /// Transmit time sync control.
    TxCtl,
    /// Transmit time stamp, low.
    TxStmpL,
    /// Transmit time stamp, high (unlocks).
    TxStmpH,
    /// Receive time sync control.
    RxCtl,
    /// Receive time stamp, low.
    RxStmpL,
    /// Receive time stamp, high (unlocks).
    RxStmpH,
    /// Receive time stamp attributes, low (source id bits 31:0).
    RxSatrL,
    /// Receive time stamp attributes, high (source id bits 47:32, sequence id).
    RxSatrH,
}

/// What selects received frames for time stamping, from the device's
/// configuration registers: TSYNCRXCTL, TSYNCRXCFG (82576) or RXMTRL (82599),
/// and the ETQF filters with the 1588 bit.
#[derive(Clone, Copy, Debug)]
pub struct RxFilter<F: Fn(u16) -> bool> {
    /// TSYNCRXCTL.TYPE (bits 3:1, unshifted).
    pub kind: u32,
    /// PTP v1 control field value to match (TSYNCRXCFG / RXMTRL bits 7:0).
    pub v1_ctrl: u8,
    /// PTP v2 messageType to match (TSYNCRXCFG bits 11:8 / RXMTRL bits 15:8).
    pub v2_msg: u8,
    /// UDP destination port of PTP event messages.
    pub udp_port: u16,
    /// True for an ethertype an enabled ETQF filter marks for 1588 stamping.
    pub l2_1588: F,
}

/// Where the PTP header of a frame is and how it came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtpFrame {
    /// Offset of the PTP header in the frame.
    pub offset: usize,
    /// Carried over UDP (else directly over Ethernet).
    pub udp: bool,
}

/// Finds a PTP message in a frame: after an ethertype the filter marks for
/// 1588 (one VLAN tag skipped), or in a UDP datagram to `udp_port` over IPv4 or
/// IPv6 (82576 §7.9.2.3, 82599 §7.9.1.1).
pub fn find_ptp<F: Fn(u16) -> bool>(frame: &[u8], f: &RxFilter<F>) -> Option<PtpFrame> {
    let mut off = 12;
    let mut et = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    if et == 0x8100 || et == 0x88a8 {
        off += 4;
        et = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    }
    if (f.l2_1588)(et) {
        return Some(PtpFrame {
            offset: off + 2,
            udp: false,
        });
    }
    let p = nicemu_net_util::parse(frame)?;
    let l4 = p.l4?;
    if p.proto != 17 {
        return None;
    }
    let port = u16::from_be_bytes([*frame.get(l4 + 2)?, *frame.get(l4 + 3)?]);
    (port == f.udp_port).then_some(PtpFrame {
        offset: l4 + 8,
        udp: true,
    })
}

/// Decides whether a received frame is time stamped under `f` (TSYNCRXCTL.TYPE
/// table of 82576 §8.15.x / 82599 §8.2.3.26.x). Peer-delay messages are always
/// stamped when v2 messages are (the note in `ixgbe_ptp_set_timestamp_mode`).
pub fn rx_selects<F: Fn(u16) -> bool>(frame: &[u8], f: &RxFilter<F>) -> Option<PtpFrame> {
    if f.kind == RX_TYPE_ALL {
        return Some(PtpFrame {
            offset: frame.len(),
            udp: false,
        });
    }
    let p = find_ptp(frame, f)?;
    let h = frame.get(p.offset..)?;
    let v2 = h.len() >= 34 && h[1] & 0x0f == 2;
    let v1 = h.len() >= 33 && h[0] == 0 && h[1] == 1;
    let msg = h.first().map(|b| b & 0x0f).unwrap_or(0xff);
    let v2_type = v2 && (msg == f.v2_msg || msg == 2 || msg == 3);
    let ok = match f.kind {
        RX_TYPE_L2_V2 => !p.udp && v2_type,
        RX_TYPE_L4_V1 => p.udp && v1 && h[32] == f.v1_ctrl,
        RX_TYPE_L2_L4_V2 => v2_type,
        RX_TYPE_EVENT_V2 => v2 && msg < 4,
        _ => false,
    };
    ok.then_some(p)
}

/// The time-sync unit of one function: SYSTIM plus the transmit and receive
/// time stamp latches.
#[derive(Clone, Debug)]
pub struct TimeSync {
    /// The system time counter.
    pub clock: SysTime,
    txctl: u32,
    tx_valid: bool,
    tx_stamp: u64,
    rxctl: u32,
    rx_valid: bool,
    rx_stamp: u64,
    rx_attr: (u32, u32),
    /// Wire delay added to receive stamps (host setting, kept across resets).
    rx_delay_ns: u64,
}

impl TimeSync {
    /// A unit in its reset state.
    pub fn new(period: BasePeriod, now: u64) -> Self {
        TimeSync {
            clock: SysTime::new(period, now),
            txctl: 0,
            tx_valid: false,
            tx_stamp: 0,
            rxctl: 0,
            rx_valid: false,
            rx_stamp: 0,
            rx_attr: (0, 0),
            rx_delay_ns: 0,
        }
    }

    /// Device reset: every time-sync register to its initial value; the
    /// configured wire delay stays.
    pub fn reset(&mut self, now: u64) {
        let d = self.rx_delay_ns;
        *self = TimeSync::new(self.clock.period, now);
        self.rx_delay_ns = d;
    }

    /// Sets the wire delay: receive stamps are taken `ns` after arrival.
    pub fn set_rx_delay_ns(&mut self, ns: u64) {
        self.rx_delay_ns = ns;
    }

    /// The configured wire delay.
    pub fn rx_delay_ns(&self) -> u64 {
        self.rx_delay_ns
    }

    /// TSYNCRXCTL as stored (VALID included).
    pub fn rxctl(&self) -> u32 {
        self.rxctl | u32::from(self.rx_valid)
    }

    /// TSYNCTXCTL as stored (VALID included).
    pub fn txctl(&self) -> u32 {
        self.txctl | u32::from(self.tx_valid)
    }

    /// Receive stamping is enabled.
    pub fn rx_enabled(&self) -> bool {
        self.rxctl & TSYNC_EN != 0
    }

    /// Guest read of a time-sync register.
    pub fn read(&mut self, reg: TsReg, now: u64) -> u32 {
        match reg {
            TsReg::SystimL => self.clock.read_low(now),
            TsReg::SystimH => self.clock.read_high(),
            TsReg::Timinca => self.clock.timinca(),
            TsReg::TimadjL => self.clock.timadj().0,
            TsReg::TimadjH => self.clock.timadj().1,
            TsReg::TxCtl => self.txctl(),
            TsReg::TxStmpL => self.tx_stamp as u32,
            TsReg::TxStmpH => {
                self.tx_valid = false;
                (self.tx_stamp >> 32) as u32
            }
            TsReg::RxCtl => self.rxctl(),
            TsReg::RxStmpL => self.rx_stamp as u32,
            TsReg::RxStmpH => {
                self.rx_valid = false;
                (self.rx_stamp >> 32) as u32
            }
            TsReg::RxSatrL => self.rx_attr.0,
            TsReg::RxSatrH => self.rx_attr.1,
        }
    }

    /// Guest write of a time-sync register (stamps and VALID are read only).
    pub fn write(&mut self, reg: TsReg, v: u32, now: u64) {
        match reg {
            TsReg::SystimL => self.clock.write_low(now, v),
            TsReg::SystimH => self.clock.write_high(now, v),
            TsReg::Timinca => self.clock.write_timinca(now, v),
            TsReg::TimadjL => self.clock.write_timadjl(v),
            TsReg::TimadjH => self.clock.write_timadjh(now, v),
            TsReg::TxCtl => self.txctl = v & !TSYNC_VALID,
            TsReg::RxCtl => self.rxctl = v & !TSYNC_VALID,
            TsReg::TxStmpL
            | TsReg::TxStmpH
            | TsReg::RxStmpL
            | TsReg::RxStmpH
            | TsReg::RxSatrL
            | TsReg::RxSatrH => {}
        }
    }

    /// A frame asking for a transmit stamp leaves the MAC at `now`: latches
    /// SYSTIM if transmit stamping is enabled and the latch is free. Returns
    /// true if a stamp was taken.
    pub fn tx_stamp(&mut self, now: u64) -> bool {
        if self.txctl & TSYNC_EN == 0 || self.tx_valid {
            return false;
        }
        self.tx_stamp = self.clock.value_at(now);
        self.tx_valid = true;
        true
    }

    /// A frame arrived at `now` (or at its departure time `sent`, when the
    /// transport knows it and it is earlier — a queued frame is stamped when it
    /// left its sender, not when it was delivered): latches its receive stamp (SYSTIM at
    /// the arrival plus the wire delay) if receive stamping is enabled, the filter selects
    /// it and the latch is free. Returns true if the frame was stamped (its
    /// descriptor then carries [`RXD_STAT_TS`]).
    pub fn rx_stamp<F: Fn(u16) -> bool>(
        &mut self,
        now: u64,
        sent: Option<u64>,
        frame: &[u8],
        filter: &RxFilter<F>,
    ) -> bool {
        if self.rxctl & TSYNC_EN == 0 || self.rx_valid {
            return false;
        }
        let Some(p) = rx_selects(frame, filter) else {
            return false;
        };
        let at = sent.map_or(now, |a| a.min(now));
        self.rx_stamp = self.clock.value_at(at.saturating_add(self.rx_delay_ns));
        self.rx_valid = true;
        // RXSATRL: source id bits 31:0; RXSATRH: source id bits 47:32 and the
        // sequence id in bits 31:16 (PTP header bytes 22..28 and 30..32).
        let b = |i: usize| u32::from(frame.get(p.offset + i).copied().unwrap_or(0));
        self.rx_attr = (
            (b(24) << 24) | (b(25) << 16) | (b(26) << 8) | b(27),
            (b(22) << 8) | b(23) | (b(30) << 24) | (b(31) << 16),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// igb_ptp_init: TIMINCA for the 82576.
    const IGB_TIMINCA: u32 = (1 << 24) | (16 << 19);
    /// ixgbe_ptp_start_cyclecounter at 10 Gb/s.
    const IXGBE_TIMINCA: u32 = (1 << 24) | (0x6666_6666 >> 7);

    /// The driver's cyclecounter: ns = cycles >> shift (mult 1).
    fn ns(cycles: u64, shift: u32) -> f64 {
        cycles as f64 / f64::from(1u32 << shift)
    }

    /// adjust_by_scaled_ppm(base, ppb) as the drivers compute it.
    fn adjusted(base: u64, ppb: i64) -> u64 {
        let scaled_ppm = ppb * 65536 / 1000;
        let diff = base * scaled_ppm.unsigned_abs() / (1_000_000 << 16);
        if ppb < 0 {
            base - diff
        } else {
            base + diff
        }
    }

    #[test]
    fn igb_nominal_rate_is_one_ns_per_ns() {
        let mut c = SysTime::new(BasePeriod::I82576, 1000);
        assert_eq!(c.value_at(5000), 0, "stopped until TIMINCA is written");
        c.write_timinca(1000, IGB_TIMINCA);
        let s = 3_000_000_000u64;
        assert_eq!(c.value_at(1000 + s), s << 19);
        assert_eq!(ns(c.value_at(1000 + s), 19), s as f64);
    }

    #[test]
    fn ixgbe_nominal_rate_at_each_link_speed() {
        let s = 10_000_000_000u64;
        for (period, incval, shift) in [
            (BasePeriod::I82599_10G, 0x6666_6666u32, 28u32),
            (BasePeriod::I82599_1G, 0x4000_0000, 24),
            (BasePeriod::I82599_100M, 0x5000_0000, 21),
        ] {
            let mut c = SysTime::new(period, 0);
            c.write_timinca(0, (1 << 24) | (incval >> 7));
            let got = ns(c.value_at(s), shift - 7);
            // IV loses its 7 low bits: at 10G the nominal rate is 0.06 ppm slow.
            assert!(
                (got - s as f64).abs() / (s as f64) < 1e-7,
                "{period:?}: {got}"
            );
        }
    }

    #[test]
    fn frequency_adjust_changes_rate_from_the_write_on() {
        for (period, timinca, shift) in [
            (BasePeriod::I82576, IGB_TIMINCA, 19u32),
            (BasePeriod::I82599_10G, IXGBE_TIMINCA, 21),
        ] {
            let mut c = SysTime::new(period, 0);
            c.write_timinca(0, timinca);
            let t1 = 1_000_000_000u64;
            let before = c.value_at(t1);
            for ppb in [100_000i64, -100_000, 100_000_000, 5_000] {
                let iv = adjusted(u64::from(timinca & 0xff_ffff), ppb);
                let mut c2 = c.clone();
                c2.write_timinca(t1, (1 << 24) | iv as u32);
                assert_eq!(c2.value_at(t1), before, "no step at the rate change");
                let d = 2_000_000_000u64;
                let measured = ns(c2.value_at(t1 + d) - before, shift);
                let nominal = ns(c.value_at(t1 + d) - before, shift);
                let ppb_got = (measured / nominal - 1.0) * 1e9;
                // Resolution: 1/IV (0.12 ppb on igb, 75 ppb on ixgbe).
                let tol = 1e9 / f64::from(timinca & 0xff_ffff) + 1.0;
                assert!((ppb_got - ppb as f64).abs() < tol, "{ppb}: {ppb_got}");
            }
        }
    }

    #[test]
    fn no_drift_across_many_rebases() {
        for (period, timinca) in [
            (BasePeriod::I82576, IGB_TIMINCA),
            (BasePeriod::I82599_10G, IXGBE_TIMINCA),
            (BasePeriod::I82599_10G, (3 << 24) | 0x12_3457),
        ] {
            let mut a = SysTime::new(period, 0);
            a.write_timinca(0, timinca);
            let b = a.clone();
            for i in 1..10_000u64 {
                a.write_timinca(i * 1_000_003, timinca);
            }
            let end = 20_000_000_000;
            let (va, vb) = (a.value_at(end), b.value_at(end));
            assert!(va.abs_diff(vb) <= 1, "{timinca:#x}: {va} vs {vb}");
        }
    }

    #[test]
    fn low_read_latches_high_and_writes_replace_halves() {
        let mut c = SysTime::new(BasePeriod::I82576, 0);
        c.write_high(0, 0x1234);
        c.write_low(0, 0xffff_fff0);
        assert_eq!(c.value_at(10), 0x1234_ffff_fff0, "stopped: no advance");
        c.write_timinca(0, IGB_TIMINCA);
        // Time moves between the two reads: H still matches the L read.
        let lo = c.read_low(0);
        assert_eq!((lo, c.read_high()), (0xffff_fff0, 0x1234));
        let lo2 = c.read_low(100);
        let hi2 = c.read_high();
        let v = (u64::from(hi2) << 32) | u64::from(lo2);
        assert_eq!(v, 0x1234_ffff_fff0 + (100 << 19));
        assert_eq!(hi2, 0x1235, "carry into the latched half");
    }

    #[test]
    fn timadj_steps_both_ways_and_wraps() {
        let mut c = SysTime::new(BasePeriod::I82599_10G, 0);
        c.write_timadjl(5);
        c.write_timadjh(0, 1);
        assert_eq!(c.value_at(0), (1 << 32) | 5);
        c.write_timadjl(6);
        c.write_timadjh(0, (1 << 31) | 1);
        assert_eq!(c.value_at(0), u64::MAX, "subtract past zero wraps");
        assert_eq!(c.timadj(), (6, (1 << 31) | 1));
        // Running counter wraps at 2^64.
        c.write_timinca(0, IXGBE_TIMINCA);
        assert_eq!(c.value_at(32), 0xcc_cccc * 5 - 1);
    }

    #[test]
    fn fault_step_in_nanoseconds() {
        let mut c = SysTime::new(BasePeriod::I82576, 0);
        c.step_ns(0, 5);
        assert_eq!(c.value_at(0), 0, "stopped");
        c.write_timinca(0, IGB_TIMINCA);
        c.step_ns(100, 1_000_000_000);
        assert_eq!(c.value_at(100), (1_000_000_100u64) << 19);
        c.step_ns(100, -2_000_000_000);
        assert_eq!(c.value_at(100).cast_signed() >> 19, -999_999_900);
        c.step_ns(100, i64::MIN);
    }

    #[test]
    fn zero_increment_fields_stop_the_clock_without_panicking() {
        let mut c = SysTime::new(BasePeriod::I82576, 0);
        for v in [0, 0xff00_0000, 0x00ff_ffff, 0x0100_0000] {
            c.write_timinca(10, v);
            assert_eq!(c.value_at(u64::MAX), c.value_at(10));
        }
        c.write_timinca(0, u32::MAX);
        let _ = c.value_at(u64::MAX);
        c.write_timinca(u64::MAX, 1);
        let _ = c.value_at(0);
    }

    fn l2_sync(msg: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 44];
        f[0..6].copy_from_slice(&[0x01, 0x1b, 0x19, 0, 0, 0]);
        f[12..14].copy_from_slice(&ETH_P_1588.to_be_bytes());
        f[14] = msg;
        f[15] = 2;
        f[14 + 22..14 + 28].copy_from_slice(&[1, 2, 3, 4, 5, 6]);
        f[14 + 30..14 + 32].copy_from_slice(&[0xab, 0xcd]);
        f
    }

    fn udp(port: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[14 + 9] = 17;
        f[34 + 2..34 + 4].copy_from_slice(&port.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn filter(kind: u32) -> RxFilter<fn(u16) -> bool> {
        RxFilter {
            kind,
            v1_ctrl: 0,
            v2_msg: 0,
            udp_port: PTP_EVENT_PORT,
            l2_1588: |et| et == ETH_P_1588,
        }
    }

    #[test]
    fn rx_filter_types() {
        let sync = l2_sync(0);
        let follow_up = l2_sync(8);
        let pdelay = l2_sync(2);
        let udp_sync = udp(319, &sync[14..]);
        let udp_other = udp(320, &sync[14..]);
        let mut v1 = vec![0u8; 44];
        v1[1] = 1;
        let udp_v1 = udp(319, &v1);
        let ev = filter(RX_TYPE_EVENT_V2);
        assert!(rx_selects(&sync, &ev).is_some());
        assert!(rx_selects(&pdelay, &ev).is_some());
        assert!(rx_selects(&follow_up, &ev).is_none(), "general message");
        assert_eq!(
            rx_selects(&udp_sync, &ev),
            Some(PtpFrame {
                offset: 42,
                udp: true
            })
        );
        assert!(rx_selects(&udp_other, &ev).is_none(), "not the event port");
        assert!(rx_selects(&udp_v1, &ev).is_none());
        let l2 = filter(RX_TYPE_L2_V2);
        assert!(rx_selects(&sync, &l2).is_some());
        assert!(rx_selects(&udp_sync, &l2).is_none());
        let mut dreq = filter(RX_TYPE_L2_L4_V2);
        dreq.v2_msg = 1;
        assert!(rx_selects(&sync, &dreq).is_none(), "Sync is not Delay_Req");
        assert!(rx_selects(&l2_sync(1), &dreq).is_some());
        assert!(rx_selects(&udp(319, &l2_sync(1)[14..]), &dreq).is_some());
        let l4v1 = filter(RX_TYPE_L4_V1);
        assert!(rx_selects(&udp_v1, &l4v1).is_some());
        assert!(rx_selects(&udp_sync, &l4v1).is_none());
        assert!(rx_selects(&[0u8; 3], &filter(RX_TYPE_ALL)).is_some());
        assert!(rx_selects(&sync, &filter(0x06)).is_none(), "reserved type");
        let mut no_etqf = filter(RX_TYPE_EVENT_V2);
        no_etqf.l2_1588 = |_| false;
        assert!(rx_selects(&sync, &no_etqf).is_none(), "ETQF not set up");
        for n in 0..sync.len() {
            let _ = rx_selects(&sync[..n], &ev);
            let _ = rx_selects(&udp_sync[..n.min(udp_sync.len())], &ev);
        }
    }

    #[test]
    fn tx_latch_holds_until_high_read() {
        let mut t = TimeSync::new(BasePeriod::I82576, 0);
        t.write(TsReg::Timinca, IGB_TIMINCA, 0);
        assert!(!t.tx_stamp(10), "disabled");
        t.write(TsReg::TxCtl, TSYNC_EN | TSYNC_VALID, 0);
        assert_eq!(t.read(TsReg::TxCtl, 0), TSYNC_EN, "VALID is read only");
        assert!(t.tx_stamp(100));
        assert!(!t.tx_stamp(200), "locked");
        assert_eq!(t.read(TsReg::TxCtl, 300), TSYNC_EN | TSYNC_VALID);
        assert_eq!(t.read(TsReg::TxStmpL, 300), (100u64 << 19) as u32);
        assert_eq!(
            t.read(TsReg::TxCtl, 300) & TSYNC_VALID,
            1,
            "L does not unlock"
        );
        assert_eq!(t.read(TsReg::TxStmpH, 300), 0);
        assert_eq!(t.read(TsReg::TxCtl, 300) & TSYNC_VALID, 0, "H unlocks");
        assert!(t.tx_stamp(400));
        assert_eq!(t.read(TsReg::TxStmpL, 500), (400u64 << 19) as u32);
    }

    #[test]
    fn rx_latch_delay_attributes_and_unlock() {
        let mut t = TimeSync::new(BasePeriod::I82576, 0);
        t.write(TsReg::Timinca, IGB_TIMINCA, 0);
        t.set_rx_delay_ns(1000);
        let f = filter(RX_TYPE_EVENT_V2);
        let sync = l2_sync(0);
        assert!(!t.rx_stamp(10, None, &sync, &f), "disabled");
        t.write(TsReg::RxCtl, TSYNC_EN | RX_TYPE_EVENT_V2, 0);
        assert!(!t.rx_stamp(10, None, &l2_sync(8), &f), "not selected");
        assert!(t.rx_stamp(5000, None, &sync, &f));
        assert!(!t.rx_stamp(6000, None, &sync, &f), "locked");
        assert_eq!(
            t.read(TsReg::RxCtl, 0),
            TSYNC_EN | RX_TYPE_EVENT_V2 | TSYNC_VALID
        );
        assert_eq!(t.read(TsReg::RxSatrL, 0), 0x0304_0506);
        assert_eq!(t.read(TsReg::RxSatrH, 0), 0xabcd_0102);
        let lo = t.read(TsReg::RxStmpL, 0);
        let hi = t.read(TsReg::RxStmpH, 0);
        assert_eq!(
            (u64::from(hi) << 32) | u64::from(lo),
            6000 << 19,
            "arrival + delay"
        );
        assert_eq!(t.rxctl() & TSYNC_VALID, 0, "RXSTMPH unlocks");
        assert!(t.rx_stamp(7000, None, &sync, &f));
        // A queued frame is stamped at its departure, not at its delivery.
        let _ = t.read(TsReg::RxStmpH, 0);
        assert!(t.rx_stamp(9000, Some(7500), &sync, &f));
        assert_eq!(t.read(TsReg::RxStmpL, 0), (8500u64 << 19) as u32);
        let _ = t.read(TsReg::RxStmpH, 0);
        assert!(
            t.rx_stamp(9000, Some(u64::MAX), &sync, &f),
            "a future departure is clamped"
        );
        assert_eq!(t.read(TsReg::RxStmpL, 0), (10_000u64 << 19) as u32);
        // Reset keeps the wire delay, clears the rest.
        t.reset(8000);
        assert_eq!((t.rxctl(), t.txctl(), t.rx_delay_ns()), (0, 0, 1000));
        assert_eq!(t.read(TsReg::SystimL, 9000), 0);
    }
}
