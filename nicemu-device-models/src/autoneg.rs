// SPDX-License-Identifier: Apache-2.0
//! What the two ends of a twisted-pair link offer each other, and the mode
//! they resolve to (IEEE 802.3 clause 28 autonegotiation with the 1000BASE-T
//! abilities of clause 40.5, and parallel detection, §28.2.3.1).
//!
//! An end either autonegotiates, advertising a set of [`Abilities`] (its
//! advertisement register 4 and 1000BASE-T control register 9), or has its
//! speed and duplex forced (control register 0 with autonegotiation off).
//! [`resolve`] gives the mode each end of the link runs at, or none when they
//! find no common mode and the link stays down.

/// Link speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Speed {
    /// 10BASE-T.
    Mb10,
    /// 100BASE-TX.
    Mb100,
    /// 1000BASE-T.
    Mb1000,
}

/// A speed and duplex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    /// Speed.
    pub speed: Speed,
    /// Full duplex.
    pub full: bool,
}

/// A set of technology abilities (802.3 Annex 28B.2 and §40.5.1.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Abilities(u8);

/// Priority order of the abilities, highest first (802.3 Annex 28B.3).
const PRIORITY: [Mode; 6] = [
    Mode {
        speed: Speed::Mb1000,
        full: true,
    },
    Mode {
        speed: Speed::Mb1000,
        full: false,
    },
    Mode {
        speed: Speed::Mb100,
        full: true,
    },
    Mode {
        speed: Speed::Mb100,
        full: false,
    },
    Mode {
        speed: Speed::Mb10,
        full: true,
    },
    Mode {
        speed: Speed::Mb10,
        full: false,
    },
];

/// Advertisement register (4) bits: 10BASE-T, 10BASE-T FD, 100BASE-TX,
/// 100BASE-TX FD (802.3 Table 28B-1, selector 00001).
const ANAR_10_HD: u16 = 1 << 5;
const ANAR_10_FD: u16 = 1 << 6;
const ANAR_100_HD: u16 = 1 << 7;
const ANAR_100_FD: u16 = 1 << 8;
/// 1000BASE-T control register (9) bits: 1000BASE-T HD, FD (§40.5.1.1).
const GCR_1000_HD: u16 = 1 << 8;
const GCR_1000_FD: u16 = 1 << 9;
/// 1000BASE-T status register (10) bits: link partner 1000BASE-T HD, FD.
const GSR_LP_1000_HD: u16 = 1 << 10;
const GSR_LP_1000_FD: u16 = 1 << 11;

impl Abilities {
    /// Every mode a 10/100/1000BASE-T PHY has.
    pub const ALL: Abilities = Abilities(0x3f);

    fn bit(m: Mode) -> u8 {
        let i = PRIORITY.iter().position(|p| *p == m).unwrap_or(0);
        1 << i
    }

    /// True when `m` is in the set.
    pub fn has(self, m: Mode) -> bool {
        self.0 & Self::bit(m) != 0
    }

    /// The abilities an end advertises in its advertisement (`anar`) and
    /// 1000BASE-T control (`gcr`) registers.
    pub fn from_registers(anar: u16, gcr: u16) -> Self {
        let pairs = [
            (gcr & GCR_1000_FD, PRIORITY[0]),
            (gcr & GCR_1000_HD, PRIORITY[1]),
            (anar & ANAR_100_FD, PRIORITY[2]),
            (anar & ANAR_100_HD, PRIORITY[3]),
            (anar & ANAR_10_FD, PRIORITY[4]),
            (anar & ANAR_10_HD, PRIORITY[5]),
        ];
        Abilities(
            pairs
                .iter()
                .filter(|(b, _)| *b != 0)
                .fold(0, |a, (_, m)| a | Self::bit(*m)),
        )
    }

    /// The 10/100 ability bits of an advertisement / link partner ability
    /// register (4 or 5).
    pub fn anar_bits(self) -> u16 {
        [
            (PRIORITY[2], ANAR_100_FD),
            (PRIORITY[3], ANAR_100_HD),
            (PRIORITY[4], ANAR_10_FD),
            (PRIORITY[5], ANAR_10_HD),
        ]
        .iter()
        .filter(|(m, _)| self.has(*m))
        .fold(0, |a, (_, b)| a | b)
    }

    /// The link partner 1000BASE-T bits of the 1000BASE-T status register
    /// (10).
    pub fn lp_1000t_bits(self) -> u16 {
        let mut v = 0;
        if self.has(PRIORITY[0]) {
            v |= GSR_LP_1000_FD;
        }
        if self.has(PRIORITY[1]) {
            v |= GSR_LP_1000_HD;
        }
        v
    }

    /// The highest mode both sets hold (802.3 Annex 28B.3), if any.
    pub fn highest_common(self, other: Abilities) -> Option<Mode> {
        PRIORITY
            .iter()
            .copied()
            .find(|m| self.has(*m) && other.has(*m))
    }
}

/// What one end of the link offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// Autonegotiation, advertising these abilities.
    Autoneg(Abilities),
    /// Speed and duplex forced (autonegotiation off).
    Forced(Mode),
}

impl Offer {
    /// The link partner of a port connected to a switch or NIC that
    /// autonegotiates everything a 10/100/1000BASE-T port can do.
    pub const IDEAL_PARTNER: Offer = Offer::Autoneg(Abilities::ALL);
}

/// The mode `local` runs at against `partner`, or `None` when the link
/// cannot come up:
/// - both autonegotiate: the highest common ability (Annex 28B.3), none
///   when they share none;
/// - one end forced: the autonegotiating end detects a 10BASE-T or
///   100BASE-TX partner by its link signalling and runs at that speed, half
///   duplex (parallel detection, §28.2.3.1; the forced end keeps its own
///   duplex). 1000BASE-T has no parallel detection: it needs
///   autonegotiation on both ends (§40.5.1);
/// - both forced: link when the speeds agree (each end keeps its own
///   duplex), none otherwise.
pub fn resolve(local: Offer, partner: Offer) -> Option<Mode> {
    let detectable = |m: Mode| m.speed != Speed::Mb1000;
    match (local, partner) {
        (Offer::Autoneg(a), Offer::Autoneg(b)) => a.highest_common(b),
        (Offer::Autoneg(_), Offer::Forced(p)) => detectable(p).then_some(Mode {
            speed: p.speed,
            full: false,
        }),
        (Offer::Forced(l), Offer::Autoneg(_)) => detectable(l).then_some(l),
        (Offer::Forced(l), Offer::Forced(p)) => (l.speed == p.speed && detectable(l)).then_some(l),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn m(speed: Speed, full: bool) -> Mode {
        Mode { speed, full }
    }

    #[test]
    fn register_bits_round_trip() {
        // igb's default advertisement: 10/100 HD+FD and 1000 FD.
        let a = Abilities::from_registers(0x01e1, 0x0200);
        assert!(a.has(m(Speed::Mb1000, true)) && !a.has(m(Speed::Mb1000, false)));
        assert!(a.has(m(Speed::Mb10, false)));
        assert_eq!(a.anar_bits(), 0x01e0);
        assert_eq!(a.lp_1000t_bits(), GSR_LP_1000_FD);
        assert_eq!(Abilities::ALL.lp_1000t_bits(), 0x0c00);
        assert_eq!(Abilities::from_registers(0, 0), Abilities::default());
    }

    #[test]
    fn autonegotiation_picks_the_highest_common_ability() {
        let igb = Offer::Autoneg(Abilities::from_registers(0x01e1, 0x0200));
        assert_eq!(
            resolve(igb, Offer::IDEAL_PARTNER),
            Some(m(Speed::Mb1000, true))
        );
        // ethtool -s advertise 0x00f (10/100 only) on one end.
        let slow = Offer::Autoneg(Abilities::from_registers(0x01e1, 0));
        assert_eq!(resolve(igb, slow), Some(m(Speed::Mb100, true)));
        assert_eq!(resolve(slow, igb), Some(m(Speed::Mb100, true)));
        // 100 HD only against 100 FD + 10 HD: 10 HD is the only common one.
        let a = Offer::Autoneg(Abilities::from_registers(ANAR_100_HD | ANAR_10_HD, 0));
        let b = Offer::Autoneg(Abilities::from_registers(ANAR_100_FD | ANAR_10_HD, 0));
        assert_eq!(resolve(a, b), Some(m(Speed::Mb10, false)));
    }

    #[test]
    fn no_common_ability_is_no_link() {
        let only_10 = Offer::Autoneg(Abilities::from_registers(ANAR_10_FD, 0));
        let only_100 = Offer::Autoneg(Abilities::from_registers(ANAR_100_FD, 0));
        assert_eq!(resolve(only_10, only_100), None);
        assert_eq!(resolve(only_100, only_10), None);
        let nothing = Offer::Autoneg(Abilities::default());
        assert_eq!(resolve(nothing, Offer::IDEAL_PARTNER), None);
    }

    #[test]
    fn forced_ends_link_at_equal_speeds_only() {
        let f = |s, full| Offer::Forced(m(s, full));
        assert_eq!(
            resolve(f(Speed::Mb100, true), f(Speed::Mb100, true)),
            Some(m(Speed::Mb100, true))
        );
        // A duplex mismatch still has link (each end keeps its duplex).
        assert_eq!(
            resolve(f(Speed::Mb10, false), f(Speed::Mb10, true)),
            Some(m(Speed::Mb10, false))
        );
        assert_eq!(resolve(f(Speed::Mb10, true), f(Speed::Mb100, true)), None);
        assert_eq!(
            resolve(f(Speed::Mb1000, true), f(Speed::Mb1000, true)),
            None
        );
    }

    #[test]
    fn parallel_detection_links_a_forced_10_or_100_partner_half_duplex() {
        let forced = Offer::Forced(m(Speed::Mb100, true));
        assert_eq!(
            resolve(Offer::IDEAL_PARTNER, forced),
            Some(m(Speed::Mb100, false))
        );
        assert_eq!(
            resolve(forced, Offer::IDEAL_PARTNER),
            Some(m(Speed::Mb100, true))
        );
        let gig = Offer::Forced(m(Speed::Mb1000, true));
        assert_eq!(resolve(Offer::IDEAL_PARTNER, gig), None);
        assert_eq!(resolve(gig, Offer::IDEAL_PARTNER), None);
    }
}
