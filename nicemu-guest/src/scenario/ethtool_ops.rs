// SPDX-License-Identifier: Apache-2.0
//! `ethtool`: every operation of the igb and ixgbe drivers' `ethtool_ops` (igb_ethtool.c,
//! ixgbe_ethtool.c of Linux 7.2), run once against the device under test, each answer
//! checked against what an 82576 or 82599 and its driver give. Settings are read back and
//! put back. `-t` is the `selftest` scenario. The VF drivers (igbvf, ixgbevf) run their own
//! operations ([`VF_STEPS`]). Other drivers: SKIP.
//!
//! Where an expectation comes from is said at each step: a driver constant or function, or
//! what the driver refuses (`-EOPNOTSUPP`), which on nicemu must fail the same way.

use serde_json::json;

use super::{Scenario, ScenarioResult, Section, Status, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The ethtool operations scenario.
#[derive(Debug)]
pub struct EthtoolOps;

/// Per-driver values the script and the checks use.
const SCRIPT_HEAD: &str = r#"E=/usr/sbin/ethtool
NCPU=$(grep -c ^processor /proc/cpuinfo)
nicemu_kv ncpu "$NCPU"
RXD0=; TXD0=
case "$DRIVER" in
igb) RING0=256; USECS0=3; PAUSE0="autoneg on rx on tx on" ;;
ixgbe) RING0=512; USECS0=1; PAUSE0="rx on tx on" ;;
igbvf) RXD0=1024; TXD0=1024; USECS0=3 ;;
ixgbevf) RXD0=512; TXD0=1024; USECS0=1 ;;
*) nicemu_kv driver unsupported; exit 0 ;;
esac
# Each step runs in `sh -c`.
export E NCPU RING0 RXD0 TXD0 USECS0 PAUSE0 IFACE DUT_IP PEER_IP
"#;

/// What a step's answer must be.
#[derive(Clone, Copy)]
enum Want {
    /// Exit status 0, and every line present (normalised: trimmed, inner whitespace runs
    /// made one space; a wanted line ending in `...` matches as a prefix).
    Has(&'static [&'static str]),
    /// Exit status 0 and the lines in this order (other lines between them allowed).
    InOrder(&'static [&'static str]),
    /// Exit status 0, and `check` accepts the output (`ncpu`: the guest's CPU count).
    Check(fn(&[String], u32) -> Result<(), String>),
    /// The driver has no such operation or refuses it on this part: a non-zero exit and
    /// "not supported" in the message.
    Unsupported,
}

/// One operation: the tag its output carries, the command (busy-box `sh -c`), and the
/// answer on igb (82576) and ixgbe (82599).
struct Step {
    tag: &'static str,
    cmd: &'static str,
    igb: Want,
    ixgbe: Want,
}

const STEPS: &[Step] = &[
    // get_drvinfo, with get_sset_count / get_regs_len / get_eeprom_len / priv flags.
    Step {
        tag: "drvinfo",
        cmd: "$E -i $IFACE",
        igb: Want::InOrder(&[
            "driver: igb",
            "supports-statistics: yes",
            "supports-test: yes",
            "supports-eeprom-access: yes",
            "supports-register-dump: yes",
            "supports-priv-flags: yes",
        ]),
        ixgbe: Want::InOrder(&[
            "driver: ixgbe",
            "supports-statistics: yes",
            "supports-test: yes",
            "supports-eeprom-access: yes",
            "supports-register-dump: yes",
            "supports-priv-flags: yes",
        ]),
    },
    // Offloads (igb_probe / ixgbe_probe feature sets): NETIF_F_NTUPLE only on i350 and
    // later for igb (fixed off on the 82576), changeable on the 82599 (Flow Director).
    Step {
        tag: "features",
        cmd: "$E -k $IFACE",
        igb: Want::Has(&[
            "rx-checksumming: on",
            "tx-checksumming: on",
            "scatter-gather: on",
            "tcp-segmentation-offload: on",
            "tx-udp-segmentation: on",
            "receive-hashing: on",
            "rx-vlan-offload: on",
            "tx-vlan-offload: on",
            "ntuple-filters: off [fixed]",
        ]),
        ixgbe: Want::Has(&[
            "rx-checksumming: on",
            "tx-checksumming: on",
            "scatter-gather: on",
            "tcp-segmentation-offload: on",
            "tx-udp-segmentation: on",
            "receive-hashing: on",
            "rx-vlan-offload: on",
            "tx-vlan-offload: on",
            "ntuple-filters: off",
        ]),
    },
    Step {
        tag: "features_set",
        cmd: "$E -K $IFACE tso off && $E -k $IFACE; r=$?; $E -K $IFACE tso on; exit $r",
        igb: Want::Has(&["tcp-segmentation-offload: off"]),
        ixgbe: Want::Has(&["tcp-segmentation-offload: off"]),
    },
    // get_ringparam: IGB_MAX_RXD/TXD 4096, defaults 256; IXGBE_MAX_RXD/TXD_82599 8192,
    // defaults 512.
    Step {
        tag: "ring",
        cmd: "$E -g $IFACE",
        igb: Want::InOrder(&[
            "Pre-set maximums:",
            "RX: 4096",
            "TX: 4096",
            "Current hardware settings:",
            "RX: 256",
            "TX: 256",
        ]),
        ixgbe: Want::InOrder(&[
            "Pre-set maximums:",
            "RX: 8192",
            "TX: 8192",
            "Current hardware settings:",
            "RX: 512",
            "TX: 512",
        ]),
    },
    Step {
        tag: "ring_set",
        cmd: "$E -G $IFACE rx 1024 tx 1024 && $E -g $IFACE; r=$?; $E -G $IFACE rx $RING0 tx $RING0; exit $r",
        igb: Want::InOrder(&["Current hardware settings:", "RX: 1024", "TX: 1024"]),
        ixgbe: Want::InOrder(&["Current hardware settings:", "RX: 1024", "TX: 1024"]),
    },
    // get_channels: igb_get_max_rss_queues (8 on the 82576), rss_queues = min(8, CPUs);
    // ixgbe_max_channels: min(63 with ATR, CPUs), all of them in use.
    Step {
        tag: "channels",
        cmd: "$E -l $IFACE",
        igb: Want::Check(|l, n| channels(l, 8, n.min(8))),
        ixgbe: Want::Check(|l, n| channels(l, n.min(63), n.min(63))),
    },
    Step {
        tag: "channels_set",
        cmd: "$E -L $IFACE combined 1 && $E -l $IFACE; r=$?; $E -L $IFACE combined $NCPU; exit $r",
        igb: Want::Check(|l, _| channels(l, 8, 1)),
        ixgbe: Want::Check(|l, n| channels(l, n.min(63), 1)),
    },
    // get_coalesce: rx_itr_setting defaults IGB_DEFAULT_ITR 3 / 1 (dynamic), reported as is.
    Step {
        tag: "coalesce",
        cmd: "$E -c $IFACE",
        igb: Want::Has(&["rx-usecs: 3"]),
        ixgbe: Want::Has(&["rx-usecs: 1"]),
    },
    Step {
        tag: "coalesce_set",
        cmd: "$E -C $IFACE rx-usecs 100 && $E -c $IFACE; r=$?; $E -C $IFACE rx-usecs $USECS0; exit $r",
        igb: Want::Has(&["rx-usecs: 100"]),
        ixgbe: Want::Has(&["rx-usecs: 100"]),
    },
    // get_pauseparam: igb resolves flow control by autonegotiation with the partner
    // (both advertise symmetric pause: full); an 82599 SFP+ port at 10G has no flow
    // control autonegotiation (ixgbe_device_supports_autoneg_fc) and uses the
    // requested mode, full by default.
    Step {
        tag: "pause",
        cmd: "$E -a $IFACE",
        igb: Want::InOrder(&["Autonegotiate: on", "RX: on", "TX: on"]),
        ixgbe: Want::InOrder(&["Autonegotiate: off", "RX: on", "TX: on"]),
    },
    Step {
        tag: "pause_set",
        // ixgbe resolves the new mode at the next link up (ixgbe_set_pauseparam resets
        // the port; its watchdog calls fc_enable): read it once the carrier is back.
        cmd: "$E -A $IFACE autoneg off rx off tx off && sleep 0.5 && for i in $(seq 100); do [ \"$(cat /sys/class/net/$IFACE/carrier)\" = 1 ] && break; sleep 0.1; done && sleep 1 && $E -a $IFACE; r=$?; $E -A $IFACE $PAUSE0; exit $r",
        igb: Want::InOrder(&["Autonegotiate: off", "RX: off", "TX: off"]),
        ixgbe: Want::InOrder(&["Autonegotiate: off", "RX: off", "TX: off"]),
    },
    // get_link_ksettings, get_link, get_msglevel (DEFAULT_MSG_ENABLE: drv|probe|link).
    Step {
        tag: "link",
        cmd: "$E $IFACE",
        igb: Want::Has(&[
            "Speed: 1000Mb/s",
            "Duplex: Full",
            "Auto-negotiation: on",
            "Port: Twisted Pair",
            "Current message level: 0x00000007 (7)",
            "Link detected: yes",
        ]),
        ixgbe: Want::Has(&[
            "Speed: 10000Mb/s",
            "Duplex: Full",
            "Current message level: 0x00000007 (7)",
            "Link detected: yes",
        ]),
    },
    Step {
        tag: "msglevel_set",
        cmd: "$E -s $IFACE msglvl 0x1 && $E $IFACE; r=$?; $E -s $IFACE msglvl 0x7; exit $r",
        igb: Want::Has(&["Current message level: 0x00000001 (1)"]),
        ixgbe: Want::Has(&["Current message level: 0x00000001 (1)"]),
    },
    // get_ethtool_stats after a ping of its own: the -G / -L / -A steps before reset the
    // port, and a reset's clear_hw_cntrs discards what the MAC counted since the driver's
    // last 2 s stats update (ixgbe_reset → ixgbe_start_hw), on the hardware as here.
    Step {
        tag: "stats",
        cmd: "n=0; while [ \"$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)\" != 1 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done; \
              /usr/bin/ping -q -c 3 -i 0.2 -W 3 $PEER_IP >/dev/null; $E -S $IFACE",
        igb: Want::Check(|l, _| {
            nonzero(l, &["rx_packets", "tx_packets", "rx_bytes", "tx_bytes"])?;
            present(l, &["rx_queue_0_packets", "tx_queue_0_packets", "rx_crc_errors"])
        }),
        // ixgbe's rx/tx_packets sum its rings, which the -G / -L steps just re-allocated
        // (ixgbe_get_stats64); the MAC's own counters run on.
        ixgbe: Want::Check(|l, _| {
            nonzero(l, &["rx_pkts_nic", "tx_pkts_nic", "rx_bytes_nic", "tx_bytes_nic"])?;
            present(
                l,
                &["rx_packets", "tx_packets", "rx_queue_0_packets", "rx_crc_errors"],
            )
        }),
    },
    // get_ts_info: both parts stamp in hardware and have a PHC.
    Step {
        tag: "tsinfo",
        cmd: "$E -T $IFACE",
        igb: Want::Has(&["hardware-transmit", "hardware-receive", "hardware-raw-clock"]),
        ixgbe: Want::Has(&["hardware-transmit", "hardware-receive", "hardware-raw-clock"]),
    },
    // get_regs: IGB_REGS_LEN 740 / IXGBE_REGS_LEN 1145 words.
    Step {
        tag: "regs",
        cmd: "$E -d $IFACE raw on | wc -c",
        igb: Want::Has(&["2960"]),
        ixgbe: Want::Has(&["4580"]),
    },
    // get_eeprom: the 82576 NVM starts with the MAC address (words 0-2).
    Step {
        tag: "eeprom",
        cmd: "$E -e $IFACE length 16",
        igb: Want::Has(&["0x0000: 52 54 00 12 34 56 ..."]),
        ixgbe: Want::Has(&["0x0000: ..."]),
    },
    // get_module_info: -EOPNOTSUPP for copper igb ports; the 82599's SFP+ module.
    Step {
        tag: "module",
        cmd: "$E -m $IFACE",
        igb: Want::Unsupported,
        ixgbe: Want::Has(&["Identifier: 0x03 (SFP)"]),
    },
    // get_eee: igb only from the i350 on; ixgbe only with IXGBE_FLAG2_EEE_CAPABLE
    // (X550 copper), never on the 82599.
    Step {
        tag: "eee",
        cmd: "$E --show-eee $IFACE",
        igb: Want::Unsupported,
        ixgbe: Want::Unsupported,
    },
    // get_rxfh_fields: TCP hashes on the 4-tuple; UDP on addresses only until set
    // (IGB_FLAG_RSS_FIELD_IPV4_UDP / IXGBE_FLAG2_RSS_FIELD_IPV4_UDP off by default).
    Step {
        tag: "hash_tcp4",
        cmd: "$E -n $IFACE rx-flow-hash tcp4",
        igb: Want::InOrder(&["IP SA", "IP DA", "L4 bytes 0 & 1 [TCP/UDP src port]", "L4 bytes 2 & 3 [TCP/UDP dst port]"]),
        ixgbe: Want::InOrder(&["IP SA", "IP DA", "L4 bytes 0 & 1 [TCP/UDP src port]", "L4 bytes 2 & 3 [TCP/UDP dst port]"]),
    },
    Step {
        tag: "hash_udp4",
        cmd: "$E -n $IFACE rx-flow-hash udp4",
        igb: Want::Check(|l, _| addresses_only(l)),
        ixgbe: Want::Check(|l, _| addresses_only(l)),
    },
    Step {
        tag: "hash_udp4_set",
        cmd: "$E -N $IFACE rx-flow-hash udp4 sdfn && $E -n $IFACE rx-flow-hash udp4; r=$?; $E -N $IFACE rx-flow-hash udp4 sd; exit $r",
        igb: Want::InOrder(&["IP SA", "IP DA", "L4 bytes 0 & 1 [TCP/UDP src port]", "L4 bytes 2 & 3 [TCP/UDP dst port]"]),
        ixgbe: Want::InOrder(&["IP SA", "IP DA", "L4 bytes 0 & 1 [TCP/UDP src port]", "L4 bytes 2 & 3 [TCP/UDP dst port]"]),
    },
    // get_rxfh: 128-entry tables; igb_setup_mrqc fills blocks (j * queues / 128),
    // ixgbe_setup_reta round robin; igb has no get_rxfh_key_size, ixgbe a 40-byte key.
    Step {
        tag: "rxfh",
        cmd: "$E -x $IFACE",
        igb: Want::Check(|l, n| indirection(l, |i| i * n.min(8) / 128, false)),
        ixgbe: Want::Check(|l, n| indirection(l, |i| i % n.min(16), true)),
    },
    Step {
        tag: "rxfh_set",
        cmd: "$E -X $IFACE equal 1 && $E -x $IFACE; r=$?; $E -X $IFACE default; exit $r",
        igb: Want::Check(|l, _| indirection(l, |_| 0, false)),
        ixgbe: Want::Check(|l, _| indirection(l, |_| 0, true)),
    },
    // nway_reset restarts autonegotiation; the link comes back (checked by the script).
    Step {
        tag: "nway",
        cmd: "$E -r $IFACE && sleep 0.2 && for i in $(seq 100); do [ \"$(cat /sys/class/net/$IFACE/carrier)\" = 1 ] && echo carrier back && break; sleep 0.1; done",
        igb: Want::Has(&["carrier back"]),
        ixgbe: Want::Has(&["carrier back"]),
    },
    // set_phys_id: blink the LED for a second.
    Step {
        tag: "identify",
        cmd: "$E -p $IFACE 1 && echo identified",
        igb: Want::Has(&["identified"]),
        ixgbe: Want::Has(&["identified"]),
    },
    // get_priv_flags: igb_priv_flags_strings / ixgbe_priv_flags_strings, off by default.
    Step {
        tag: "priv_flags",
        cmd: "$E --show-priv-flags $IFACE",
        igb: Want::Has(&["legacy-rx: off"]),
        ixgbe: Want::Has(&["legacy-rx: off", "vf-ipsec: off"]),
    },
    Step {
        tag: "priv_flags_set",
        cmd: "$E --set-priv-flags $IFACE legacy-rx on && $E --show-priv-flags $IFACE; r=$?; $E --set-priv-flags $IFACE legacy-rx off; exit $r",
        igb: Want::Has(&["legacy-rx: on"]),
        ixgbe: Want::Has(&["legacy-rx: on"]),
    },
    // Neither driver has get_dump_flag or get_fecparam.
    Step {
        tag: "dump",
        cmd: "$E -w $IFACE",
        igb: Want::Unsupported,
        ixgbe: Want::Unsupported,
    },
    Step {
        tag: "fec",
        cmd: "$E --show-fec $IFACE",
        igb: Want::Unsupported,
        ixgbe: Want::Unsupported,
    },
    // ntuple (set_rxnfc ETHTOOL_SRXCLSRLINS): igb_add_ethtool_nfc_entry refuses without
    // NETIF_F_NTUPLE (82576); ixgbe_add_ethtool_fdir_entry programs a Flow Director
    // perfect filter once ntuple is on.
    Step {
        tag: "ntuple",
        cmd: "$E -K $IFACE ntuple on 2>/dev/null; $E -N $IFACE flow-type tcp4 dst-port 5001 action 1 loc 1 && $E -n $IFACE; r=$?; $E -N $IFACE delete 1 2>/dev/null; $E -K $IFACE ntuple off 2>/dev/null; exit $r",
        igb: Want::Unsupported,
        ixgbe: Want::InOrder(&[
            "Total 1 rules",
            "Filter: 1",
            "Rule Type: TCP over IPv4",
            "Dest port: 5001 mask: 0x0",
            "Action: Direct to queue 1",
        ]),
    },
    // The ntuple rule steers (82599 Flow Director, §7.1.2.7): with RSS spreading nothing
    // (`-X equal 1`), the peer's pings to the DUT arrive on the rule's queue 1, and
    // fdir_match (FDIRMATCH, read by ixgbe_update_stats) counts them.
    Step {
        tag: "ntuple_steer",
        cmd: "w() { for i in $(seq 100); do [ \"$(cat /sys/class/net/$IFACE/carrier)\" = 1 ] && break; sleep 0.1; done; }; \
              q1() { $E -S $IFACE | sed -n \"s/^ *$1: *//p\"; }; \
              $E -K $IFACE ntuple on 2>/dev/null; w; $E -X $IFACE equal 1 && \
              $E -N $IFACE flow-type ip4 src-ip $PEER_IP action 1 loc 2 && \
              a=$(q1 rx_queue_1_packets) && m=$(q1 fdir_match) && \
              /usr/bin/ip netns exec peer /usr/bin/ping -q -c 20 -i 0.02 -W 2 $DUT_IP >/dev/null && \
              echo \"queue1 +$(( $(q1 rx_queue_1_packets) - a ))\" && echo \"fdir_match +$(( $(q1 fdir_match) - m ))\"; \
              r=$?; $E -N $IFACE delete 2 2>/dev/null; $E -X $IFACE default; $E -K $IFACE ntuple off 2>/dev/null; exit $r",
        igb: Want::Unsupported,
        ixgbe: Want::Check(steered),
    },
];

/// The `ethtool_ops` of the VF drivers (igbvf's ethtool.c, ixgbevf's ethtool.c of Linux
/// 7.2), each answer as the driver gives it on an 82576 VF / 82599 VF: what the VF's
/// registers decide (link speed from STATUS / VFLINKS, statistics from the VF's counters,
/// the register dump, reconfigurations that reset the VF through the PF agent) and what
/// the drivers refuse. A step's `igb` answer is igbvf's, its `ixgbe` answer ixgbevf's.
const VF_STEPS: &[Step] = &[
    // get_drvinfo: both report statistics, a self-test and a register dump, no EEPROM
    // (igbvf_get_eeprom_len is 0, ixgbevf has no EEPROM operations).
    Step {
        tag: "vf_drvinfo",
        cmd: "$E -i $IFACE",
        igb: Want::InOrder(&[
            "driver: igbvf",
            "supports-statistics: yes",
            "supports-test: yes",
            "supports-eeprom-access: no",
            "supports-register-dump: yes",
        ]),
        ixgbe: Want::InOrder(&[
            "driver: ixgbevf",
            "supports-statistics: yes",
            "supports-test: yes",
            "supports-eeprom-access: no",
            "supports-register-dump: yes",
        ]),
    },
    // get_link_ksettings: igbvf reads STATUS (LU, SPEED_1000, FD), ixgbevf VFLINKS
    // (UP, 10G); neither autonegotiates.
    Step {
        tag: "vf_link",
        cmd: "$E $IFACE",
        igb: Want::Has(&[
            "Speed: 1000Mb/s",
            "Duplex: Full",
            "Auto-negotiation: off",
            "Link detected: yes",
        ]),
        ixgbe: Want::Has(&[
            "Speed: 10000Mb/s",
            "Duplex: Full",
            "Auto-negotiation: off",
            "Link detected: yes",
        ]),
    },
    Step {
        tag: "vf_features",
        cmd: "$E -k $IFACE",
        igb: Want::Has(&[
            "rx-checksumming: on",
            "tx-checksumming: on",
            "scatter-gather: on",
            "tcp-segmentation-offload: on",
        ]),
        ixgbe: Want::Has(&[
            "rx-checksumming: on",
            "tx-checksumming: on",
            "scatter-gather: on",
            "tcp-segmentation-offload: on",
        ]),
    },
    // get_ringparam: IGBVF_MAX_RXD/TXD 4096, 1024 each from igbvf_probe; IXGBEVF_MAX_RXD/TXD
    // 4096, IXGBEVF_DEFAULT_RXD 512, IXGBEVF_DEFAULT_TXD 1024.
    Step {
        tag: "vf_ring",
        cmd: "$E -g $IFACE",
        igb: Want::InOrder(&[
            "Pre-set maximums:",
            "RX: 4096",
            "TX: 4096",
            "Current hardware settings:",
            "RX: 1024",
            "TX: 1024",
        ]),
        ixgbe: Want::InOrder(&[
            "Pre-set maximums:",
            "RX: 4096",
            "TX: 4096",
            "Current hardware settings:",
            "RX: 512",
            "TX: 1024",
        ]),
    },
    // set_ringparam: the VF goes down and up with the new rings (a VF reset through the
    // mailbox on ixgbevf).
    Step {
        tag: "vf_ring_set",
        cmd: "$E -G $IFACE rx 1024 tx 512 && $E -g $IFACE; r=$?; $E -G $IFACE rx $RXD0 tx $TXD0; exit $r",
        igb: Want::InOrder(&["Current hardware settings:", "RX: 1024", "TX: 512"]),
        ixgbe: Want::InOrder(&["Current hardware settings:", "RX: 1024", "TX: 512"]),
    },
    // get_coalesce: igbvf's requested_itr and ixgbevf's rx_itr_setting start at 3 / 1
    // (dynamic moderation), reported as is; set_coalesce writes the VF's EITR.
    Step {
        tag: "vf_coalesce",
        cmd: "$E -c $IFACE",
        igb: Want::Has(&["rx-usecs: 3"]),
        ixgbe: Want::Has(&["rx-usecs: 1"]),
    },
    Step {
        tag: "vf_coalesce_set",
        cmd: "$E -C $IFACE rx-usecs 100 && $E -c $IFACE; r=$?; $E -C $IFACE rx-usecs $USECS0; exit $r",
        igb: Want::Has(&["rx-usecs: 100"]),
        ixgbe: Want::Has(&["rx-usecs: 100"]),
    },
    Step {
        tag: "vf_msglevel_set",
        cmd: "$E -s $IFACE msglvl 0x1 && $E $IFACE; r=$?; $E -s $IFACE msglvl 0x7; exit $r",
        igb: Want::Has(&["Current message level: 0x00000001 (1)"]),
        ixgbe: Want::Has(&["Current message level: 0x00000001 (1)"]),
    },
    // get_ethtool_stats after a ping: igbvf's counters are the VF's registers (VFGPRC,
    // VFGPTC, VFGORC, VFGOTC, VFMPRC, the loopback counters VFGPRLBC… read by
    // igbvf_update_stats) less the base read at reset; the harness's peer is the other VF
    // of the same adapter, so everything it received and sent went through the VEB: the
    // loopback counts equal the totals. ixgbevf's rx/tx come from its rings, its queue
    // counters per ring.
    Step {
        tag: "vf_stats",
        cmd: "n=0; while [ \"$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)\" != 1 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done; \
              /usr/bin/ping -q -c 3 -i 0.2 -W 3 $PEER_IP >/dev/null; $E -S $IFACE",
        igb: Want::Check(|l, _| {
            nonzero(l, &["rx_packets", "tx_packets", "rx_bytes", "tx_bytes"])?;
            present(l, &["multicast", "tx_restart_queue", "rx_csum_offload_good"])?;
            all_looped_back(l)
        }),
        ixgbe: Want::Check(|l, _| {
            nonzero(l, &["rx_packets", "tx_packets", "rx_bytes", "tx_bytes"])?;
            present(l, &["multicast", "tx_queue_0_packets", "rx_queue_0_packets"])
        }),
    },
    // get_regs: IGBVF_REGS_LEN 8 words, ixgbevf's IXGBE_REGS_LEN 45 words.
    Step {
        tag: "vf_regs",
        cmd: "$E -d $IFACE raw on | wc -c",
        igb: Want::Has(&["32"]),
        ixgbe: Want::Has(&["180"]),
    },
    // No EEPROM, no SFP module, no EEE, no FEC, no dump on a VF.
    Step {
        tag: "vf_eeprom",
        cmd: "$E -e $IFACE length 16",
        igb: Want::Unsupported,
        ixgbe: Want::Unsupported,
    },
    Step {
        tag: "vf_module",
        cmd: "$E -m $IFACE",
        igb: Want::Unsupported,
        ixgbe: Want::Unsupported,
    },
    Step {
        tag: "vf_eee",
        cmd: "$E --show-eee $IFACE",
        igb: Want::Unsupported,
        ixgbe: Want::Unsupported,
    },
    // nway_reset: igbvf_reinit_locked / ixgbevf_reinit_locked, the link comes back.
    Step {
        tag: "vf_nway",
        cmd: "$E -r $IFACE && sleep 0.2 && for i in $(seq 100); do [ \"$(cat /sys/class/net/$IFACE/carrier)\" = 1 ] && echo carrier back && break; sleep 0.1; done",
        igb: Want::Has(&["carrier back"]),
        ixgbe: Want::Has(&["carrier back"]),
    },
];

/// `ntuple_steer`: the 20 pings arrived on queue 1 and matched the filter.
fn steered(l: &[String], _ncpu: u32) -> Result<(), String> {
    let plus = |name: &str| {
        l.iter().find_map(|x| {
            x.strip_prefix(name)?
                .trim()
                .strip_prefix('+')?
                .parse::<u64>()
                .ok()
        })
    };
    match (plus("queue1"), plus("fdir_match")) {
        (Some(q), Some(m)) if q >= 20 && m >= 20 => Ok(()),
        (q, m) => Err(format!(
            "pings on queue 1: {q:?}, fdir_match: {m:?} (want 20 each)"
        )),
    }
}

/// `ethtool -l`: pre-set maximum and current combined counts.
fn channels(l: &[String], max: u32, cur: u32) -> Result<(), String> {
    let refs: Vec<&str> = l.iter().map(String::as_str).collect();
    match super::channels::parse_ethtool_l(&refs) {
        (Some(m), Some(c)) if (m, c) == (max, cur) => Ok(()),
        (m, c) => Err(format!(
            "combined max {m:?} current {c:?}, want {max} and {cur}"
        )),
    }
}

/// `NAME: N` lines with N > 0.
fn nonzero(l: &[String], names: &[&str]) -> Result<(), String> {
    for n in names {
        let v = stat(l, n).ok_or_else(|| format!("no {n}"))?;
        if v == 0 {
            return Err(format!("{n} is 0"));
        }
    }
    Ok(())
}

/// igbvf: the VF loopback counters equal the totals (every frame between two VFs of one
/// adapter).
fn all_looped_back(l: &[String]) -> Result<(), String> {
    for (lb, total) in [
        ("lbrx_packets", "rx_packets"),
        ("lbtx_packets", "tx_packets"),
        ("lbrx_bytes", "rx_bytes"),
        ("lbtx_bytes", "tx_bytes"),
    ] {
        let (a, b) = (stat(l, lb), stat(l, total));
        if a.is_none() || a != b {
            return Err(format!("{lb} {a:?} is not {total} {b:?}"));
        }
    }
    Ok(())
}

/// `NAME: N` lines present.
fn present(l: &[String], names: &[&str]) -> Result<(), String> {
    match names.iter().find(|n| stat(l, n).is_none()) {
        Some(n) => Err(format!("no {n}")),
        None => Ok(()),
    }
}

fn stat(l: &[String], name: &str) -> Option<u64> {
    l.iter()
        .find_map(|x| x.strip_prefix(name)?.strip_prefix(": ")?.parse().ok())
}

/// `-n rx-flow-hash udp4` before any change: the addresses, no port bytes.
fn addresses_only(l: &[String]) -> Result<(), String> {
    if !(has(l, "IP SA") && has(l, "IP DA")) {
        return Err("no IP SA / IP DA".into());
    }
    match l.iter().find(|x| x.starts_with("L4 bytes")) {
        Some(x) => Err(format!("UDP hashes on ports by default: {x}")),
        None => Ok(()),
    }
}

/// `-x`: a 128-entry table equal to `want(i)`, and a 40-byte key (`key`) or none.
fn indirection(l: &[String], want: impl Fn(u32) -> u32, key: bool) -> Result<(), String> {
    let mut table = Vec::new();
    for x in l {
        let Some((idx, rest)) = x.split_once(": ") else {
            continue;
        };
        if idx.parse::<u32>().ok() != Some(table.len() as u32) {
            continue;
        }
        let row: Option<Vec<u32>> = rest.split(' ').map(|v| v.parse().ok()).collect();
        table.extend(row.unwrap_or_default());
    }
    if table.len() != 128 {
        return Err(format!("{} indirection entries, want 128", table.len()));
    }
    if let Some(i) = (0..128).find(|&i| table[i as usize] != want(i)) {
        return Err(format!(
            "entry {i} is {}, want {}",
            table[i as usize],
            want(i)
        ));
    }
    let key_at = l.iter().position(|x| x == "RSS hash key:");
    let key_line = key_at.and_then(|i| l.get(i + 1)).map(String::as_str);
    let bytes = key_line.map_or(0, |k| {
        k.split(':')
            .filter(|b| b.len() == 2 && u8::from_str_radix(b, 16).is_ok())
            .count()
    });
    match (key, bytes) {
        (true, 40) | (false, 0) => Ok(()),
        (true, n) => Err(format!("RSS key of {n} bytes, want 40")),
        (false, n) => Err(format!("an RSS key of {n} bytes the driver cannot report")),
    }
}

/// Trims a line, makes each inner whitespace run one space and drops the space ethtool
/// pads names to a column with before a colon (`legacy-rx     : off` is `legacy-rx: off`).
fn normalise(line: &str) -> String {
    line.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" : ", ": ")
}

/// A wanted line matches: equal, or a prefix when it ends in `...`.
fn matches(got: &str, want: &str) -> bool {
    match want.strip_suffix(" ...") {
        Some(prefix) => got.starts_with(prefix),
        None => got == want,
    }
}

fn has(l: &[String], want: &str) -> bool {
    l.iter().any(|x| matches(x, want))
}

/// Checks one step's output `l` and exit status against `want`.
fn check(want: Want, rc: Option<i32>, l: &[String], ncpu: u32) -> Result<(), String> {
    let text = || l.join(" / ");
    if let Want::Unsupported = want {
        let said = l.iter().any(|x| x.contains("not supported"));
        return match rc {
            Some(0) => Err(format!("succeeded: {}", text())),
            _ if said => Ok(()),
            _ => Err(format!("failed without \"not supported\": {}", text())),
        };
    }
    if rc != Some(0) {
        return Err(format!("exit {rc:?}: {}", text()));
    }
    match want {
        Want::Has(lines) => match lines.iter().find(|w| !has(l, w)) {
            Some(w) => Err(format!("no \"{w}\"")),
            None => Ok(()),
        },
        Want::InOrder(lines) => {
            let mut it = l.iter();
            match lines.iter().find(|w| !it.any(|x| matches(x, w))) {
                Some(w) => Err(format!("no \"{w}\" (in order)")),
                None => Ok(()),
            }
        }
        Want::Check(f) => f(l, ncpu),
        Want::Unsupported => unreachable!("handled above"),
    }
}

impl Scenario for EthtoolOps {
    fn name(&self) -> &'static str {
        "ethtool"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn script(&self, _p: &Params) -> String {
        let mut s = format!("{NEED_IFACE}{NEED_PEER}{SCRIPT_HEAD}");
        for (drivers, steps) in [("igb|ixgbe", STEPS), ("igbvf|ixgbevf", VF_STEPS)] {
            s.push_str(&format!("case \"$DRIVER\" in {drivers})\n"));
            for st in steps {
                s.push_str(&format!("nicemu_out {} sh -c '{}'\n", st.tag, st.cmd));
                // Steps that reconfigure the port take the link down a while.
                s.push_str("nicemu_carrier \"$IFACE\" 150\n");
            }
            s.push_str(";;\nesac\n");
        }
        s.push_str("true");
        s
    }

    fn budget_secs(&self, _p: &Params) -> u64 {
        // Each reconfiguration waits out the PHY's autonegotiation (1 s on nicemu).
        90
    }

    fn parse(&self, s: &Section, target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let (igb, steps) = match target.driver.as_str() {
            "igb" => (true, STEPS),
            "ixgbe" => (false, STEPS),
            "igbvf" => (true, VF_STEPS),
            "ixgbevf" => (false, VF_STEPS),
            d => {
                r.status = Status::Skip;
                r.reason = Some(format!("no ethtool expectations for {d}"));
                return r;
            }
        };
        let ncpu: u32 = s.get("ncpu").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut results = serde_json::Map::new();
        for st in steps {
            let rc = s
                .get(&format!("{}_rc", st.tag))
                .and_then(|v| v.parse::<i32>().ok());
            let lines: Vec<String> = s.lines(st.tag).map(normalise).collect();
            let want = if igb { st.igb } else { st.ixgbe };
            let res = if rc.is_none() && lines.is_empty() {
                Err("did not run".to_owned())
            } else {
                check(want, rc, &lines, ncpu)
            };
            results.insert(st.tag.into(), json!(res.as_ref().err()));
            match res {
                Ok(()) => r.check_passed(st.tag),
                Err(e) => r.check_failed(st.tag, format!("{}: {e}", st.tag)),
            }
        }
        r.metric("steps", serde_json::Value::Object(results));
        if r.status == Status::Pass {
            r.summary = Some(format!("{} operations as on the hardware", steps.len()));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(normalise).collect()
    }

    #[test]
    fn in_order_and_prefix_matching() {
        let g = lines("Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t4096\nRX Mini:\tn/a\nTX:\t\t4096\nCurrent hardware settings:\nRX:\t\t256\nTX:\t\t256\n");
        let igb_ring = STEPS.iter().find(|s| s.tag == "ring").unwrap().igb;
        assert_eq!(check(igb_ring, Some(0), &g, 2), Ok(()));
        let ixgbe_ring = STEPS.iter().find(|s| s.tag == "ring").unwrap().ixgbe;
        assert!(check(ixgbe_ring, Some(0), &g, 2).is_err());
        assert!(
            check(igb_ring, Some(1), &g, 2).is_err(),
            "exit status counts"
        );
        let e = lines("Offset\t\tValues\n------\t\t------\n0x0000:\t\t52 54 00 12 34 56 20 0d");
        let want = Want::Has(&["0x0000: 52 54 00 12 34 56 ..."]);
        assert_eq!(check(want, Some(0), &e, 2), Ok(()));
        let other = lines("0x0000:\t\t52 54 00 12 34 57 20 0d");
        assert!(check(want, Some(0), &other, 2).is_err());
    }

    #[test]
    fn unsupported_needs_a_failure_that_says_so() {
        let said = lines("Cannot get EEE settings: Operation not supported");
        assert_eq!(check(Want::Unsupported, Some(75), &said, 2), Ok(()));
        assert!(check(Want::Unsupported, Some(0), &said, 2).is_err());
        let other = lines("Cannot get EEE settings: No such device");
        assert!(check(Want::Unsupported, Some(1), &other, 2).is_err());
    }

    /// `ethtool -x` output for a table `f(i)` and a key line.
    fn x_output(f: impl Fn(u32) -> u32, key: &str) -> Vec<String> {
        let mut x = String::from("RX flow hash indirection table for eth0 with 2 RX ring(s):\n");
        for row in 0..16u32 {
            x.push_str(&format!("{:5}: ", row * 8));
            for i in row * 8..row * 8 + 8 {
                x.push_str(&format!(" {:5}", f(i)));
            }
            x.push('\n');
        }
        x.push_str(&format!(
            "RSS hash key:\n{key}\nRSS hash function:\n    toeplitz: on\n"
        ));
        lines(&x)
    }

    #[test]
    fn indirection_tables_follow_each_drivers_fill() {
        let none = "Operation not supported";
        let key = ["6d"; 40].join(":");
        let rxfh = STEPS.iter().find(|s| s.tag == "rxfh").unwrap();
        let blocks = x_output(|i| i * 2 / 128, none);
        assert_eq!(check(rxfh.igb, Some(0), &blocks, 2), Ok(()));
        // ixgbe fills round robin and has a key: this table fails on both counts.
        assert!(check(rxfh.ixgbe, Some(0), &blocks, 2).is_err());
        let round_robin = x_output(|i| i % 2, &key);
        assert_eq!(check(rxfh.ixgbe, Some(0), &round_robin, 2), Ok(()));
        let keyed_blocks = x_output(|i| i * 2 / 128, &key);
        let e = check(rxfh.igb, Some(0), &keyed_blocks, 2).unwrap_err();
        assert!(e.contains("cannot report"), "{e}");
        let equal = STEPS.iter().find(|s| s.tag == "rxfh_set").unwrap();
        assert_eq!(
            check(equal.ixgbe, Some(0), &x_output(|_| 0, &key), 2),
            Ok(())
        );
        assert!(check(equal.ixgbe, Some(0), &round_robin, 2).is_err());
    }

    #[test]
    fn ntuple_steering_wants_every_ping_on_the_rules_queue() {
        assert_eq!(steered(&lines("queue1 +20\nfdir_match +21\n"), 2), Ok(()));
        let e = steered(&lines("queue1 +0\nfdir_match +0\n"), 2).unwrap_err();
        assert!(e.contains("Some(0)"), "{e}");
        assert!(steered(&lines("rx_queue_1_packets: 20\n"), 2).is_err());
    }

    #[test]
    fn channels_and_statistics_checks() {
        let l = lines("Channel parameters for eth0:\nPre-set maximums:\nRX:\t\tn/a\nCombined:\t8\nCurrent hardware settings:\nCombined:\t2\n");
        assert_eq!(channels(&l, 8, 2), Ok(()));
        assert!(channels(&l, 8, 1).is_err());
        let s = lines("NIC statistics:\n     rx_packets: 12\n     tx_packets: 0\n");
        assert_eq!(nonzero(&s, &["rx_packets"]), Ok(()));
        assert_eq!(nonzero(&s, &["tx_packets"]), Err("tx_packets is 0".into()));
        assert!(present(&s, &["rx_crc_errors"]).is_err());
    }

    #[test]
    fn script_runs_every_step_and_other_drivers_skip() {
        let s = EthtoolOps.script(&Params::default());
        for st in STEPS.iter().chain(VF_STEPS) {
            assert!(
                s.contains(&format!("nicemu_out {} sh -c", st.tag)),
                "{}",
                st.tag
            );
            assert!(!st.cmd.contains('\''), "{}: quotes break sh -c '…'", st.tag);
        }
        let c = super::super::Console::parse(
            "@@NICEMU-BEGIN ethtool\n@@NICEMU ethtool driver=unsupported\n@@NICEMU-DONE ethtool rc=0\n",
        );
        let r = super::super::evaluate(&EthtoolOps, &c, &Target::for_test("virtio_net", Some("y")));
        assert_eq!(r.status, Status::Skip);
        // igb with nothing printed: every step "did not run".
        let r = super::super::evaluate(&EthtoolOps, &c, &Target::for_test("igb", Some("y")));
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("drvinfo: did not run"));
    }
}

#[cfg(test)]
mod capture_tests {
    use super::*;
    use crate::scenario::{evaluate, Console, Status};

    /// Real runs (sid 7.2.13, TCG, 2 vCPUs): the `ethtool` and `xdp` sections.
    const IGB: &str = include_str!("../../tests/fixtures/nicemu-igb-ethtool-xdp.serial.log");
    const IXGBE: &str = include_str!("../../tests/fixtures/nicemu-ixgbe-ethtool-xdp.serial.log");

    #[test]
    fn nicemu_answers_every_operation_as_the_hardware_does() {
        for (text, driver) in [(IGB, "igb"), (IXGBE, "ixgbe")] {
            let r = evaluate(
                &EthtoolOps,
                &Console::parse(text),
                &Target::for_test(driver, Some("y")),
            );
            assert_eq!(r.status, Status::Pass, "{driver}: {:?}", r.reason);
            // The other driver's answers differ (ring maxima, key, module, ntuple…).
            let other = if driver == "igb" { "ixgbe" } else { "igb" };
            let r = evaluate(
                &EthtoolOps,
                &Console::parse(text),
                &Target::for_test(other, Some("y")),
            );
            assert_eq!(r.status, Status::Fail, "{driver} capture read as {other}");
        }
    }

    #[test]
    fn xdp_bench_rates_of_the_captures() {
        for text in [IGB, IXGBE] {
            let r = evaluate(
                &super::super::xdp::Xdp,
                &Console::parse(text),
                &Target::for_test("igb", Some("y")),
            );
            assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
            for m in ["drop", "pass", "tx", "redirect"] {
                assert!(r.metrics[m]["rx_pps"].as_f64().unwrap() > 1000.0, "{m}");
            }
            assert!(r.metrics["redirect"]["xmit_pps"].as_f64().unwrap() > 1000.0);
        }
    }
}
