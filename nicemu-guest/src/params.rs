// SPDX-License-Identifier: Apache-2.0
//! Scenario parameters: `scenario.key=value` pairs from the matrix file and `--param`.
//!
//! Every scenario documents its keys and defaults in [`KNOWN`]; unknown keys are an error so
//! a typo does not silently run the defaults.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Known parameters: (key, default, meaning).
pub const KNOWN: &[(&str, &str, &str)] = &[
    (
        "cost",
        "auto",
        "count guest instructions per unit of work in each scenario's windows with nicemu's TCG plugin: auto = under TCG, 1 = on, 0 = off",
    ),
    (
        "cost.fns",
        "netdev_pick_tx,__dev_queue_xmit,net_tx_action,__qdisc_run,igb:igb_xmit_frame_ring,ixgbe:ixgbe_xmit_frame_ring,igb:igb_update_stats,igb:igb_ptp_rx_rgtstamp",
        "kernel functions (MODULE:NAME for a module's) whose inclusive instructions (with all they call) and calls are counted, up to 64",
    ),
    (
        "cost.calls",
        "__netif_reschedule,wakeup_softirqd,net_tx_action,__qdisc_run,netdev_core_pick_tx,netdev_pick_tx",
        "functions whose calls per unit of work are reported",
    ),
    ("cost.top", "25", "functions per window in the own-instructions table"),
    (
        "cost.noise",
        "0.5",
        "A/B: an instruction-count change smaller than this (%) is noise even when the t test finds it",
    ),
    (
        "cost.top_share",
        "0.5",
        "smallest share (%) of a window's kernel instructions a function in that table has",
    ),
    (
        "cost.ghz",
        "3.0",
        "hardware projection (a model): the CPU clock in GHz (the seed 000 Atom E3930: 1.6)",
    ),
    (
        "cost.ipc",
        "1.0",
        "hardware projection (a model): instructions per cycle of kernel network code",
    ),
    (
        "cost.mmio_read_ns",
        "1000",
        "hardware projection (a model): ns the CPU waits for one register (BAR) read over PCIe",
    ),
    ("ping.count", "1000", "echo requests sent"),
    (
        "ping.interval",
        "0.01",
        "seconds between requests (ping -i)",
    ),
    ("ping.size", "56", "ICMP payload bytes (ping -s)"),
    (
        "ping.max_loss",
        "0",
        "highest packet loss (%) that still passes",
    ),
    (
        "netperf.tests",
        "TCP_STREAM,TCP_RR,UDP_STREAM:64",
        "tests, comma-separated; UDP_STREAM:M / TCP_STREAM:M set the message size (-m M)",
    ),
    ("netperf.duration", "5", "seconds per test (netperf -l)"),
    (
        "netperf.count",
        "0",
        "RR tests: N transactions (netperf -l -N) instead of netperf.duration; 0 = timed (STREAM tests are always timed)",
    ),
    (
        "netperf.warmup",
        "0",
        "seconds of the first test run unmeasured before the tests (0 = none)",
    ),
    (
        "netperf.cpumask",
        "",
        "taskset mask for netperf (e.g. 2 = CPU 1); empty = no pinning",
    ),
    (
        "netperf.pin",
        "1",
        "1 = netperf on CPU 0 with the device's interrupts, netserver on CPU 1 with the peer's (netperf -T 0,1), as on two hosts; 0 = the guest scheduler places them",
    ),
    (
        "netperf.combined",
        "",
        "ethtool -L IFACE combined N before the tests; empty = leave as is",
    ),
    ("cyclictest.loops", "20000", "cyclictest -l"),
    ("cyclictest.interval", "200", "cyclictest -i (µs)"),
    ("cyclictest.priority", "90", "cyclictest -p"),
    ("cyclictest.histogram", "4000", "cyclictest -h (µs buckets)"),
    (
        "cyclictest.threshold",
        "100",
        "latency (µs) whose exceedance share is reported per CPU (above_pct)",
    ),
    (
        "cyclictest.stats_reader",
        "1",
        "1 = run `ethtool -S` / `ip -s link` in a loop meanwhile",
    ),
    ("stats.count", "200", "pings (and broadcast frames) sent"),
    ("stats.size", "100", "ICMP payload bytes"),
    ("channels.pings", "5", "pings after each ethtool -L"),
    (
        "channels.require_xps",
        "0",
        "1 = fail when a tx queue has an empty XPS map (the driver sets none)",
    ),
    ("regsweep.reads", "10", "ethtool -S runs traced (one statistics sweep each)"),
    (
        "regsweep.hw_read_us",
        "1.0",
        "µs per register read on hardware for hw_sweep_us (82576: ~1 µs)",
    ),
    (
        "preemptoff.secs",
        "10",
        "seconds of each preemptirqsoff phase (idle, then with an ethtool -S reader)",
    ),
    (
        "hwstamp.count",
        "1000",
        "PTP event frames sent one at a time (netperf UDP_RR -l -N) and stamped, counted per stamped frame in window `stamp` (0 = none)",
    ),
    (
        "hwstamp.duration",
        "0",
        "seconds of the PTP event frame flood (netperf UDP_STREAM; 0 = none): rates, counted per frame received",
    ),
    ("perf.test", "UDP_STREAM:1", "the netperf test perf record profiles"),
    (
        "perf.symbols",
        "__netdev_pick_tx,__skb_tx_hash,__skb_get_hash",
        "symbols whose share of all samples is reported",
    ),
    ("qdisc.duration", "5", "seconds of UDP load"),
    ("qdisc.size", "64", "UDP message size"),
    ("qdisc.rate", "200mbit", "tbf rate"),
    (
        "qdisc.senders",
        "1",
        "netperf UDP_STREAM senders at once through the one root qdisc; with 2 or more each is pinned (taskset) to a CPU of qdisc.cpus",
    ),
    (
        "qdisc.cpus",
        "",
        "CPUs of the senders in turn, comma-separated (empty: sender i on CPU i modulo the guest's CPUs)",
    ),
    (
        "hostile.secs",
        "60",
        "seconds the hostile guest drives the unbound device's BAR0",
    ),
    (
        "driver-stress.steps",
        "ring,channels,features,coalesce,updown,xdp,faults,reload",
        "driver-stress steps, comma-separated (run in the scenario's order)",
    ),
    (
        "driver-stress.secs",
        "20",
        "seconds each driver-stress command may take before it counts as hung",
    ),
    (
        "driver-stress.readers",
        "3",
        "processes reading every statistics path while driver-stress runs",
    ),
    (
        "faults.cases",
        "stats,capture,crc,link,stall",
        "fault cases to run (nicemu devices only)",
    ),
    (
        "vf-admin.cases",
        "mac,spoof,vlan,link",
        "vf-admin cases to run (nicemu's SR-IOV VFs only)",
    ),
    (
        "vf-reset.cases",
        "flr,pf-reset,vflr,reload",
        "vf-reset cases to run (nicemu's SR-IOV VFs only)",
    ),
    (
        "mq.combined",
        "0",
        "ethtool -L combined N on both ports before the load (0 = the driver's maximum)",
    ),
    ("mq.streams", "8", "parallel netperf TCP_STREAM streams"),
    ("mq.duration", "10", "seconds per stream (netperf -l)"),
    (
        "mq.direction",
        "out",
        "out = every stream TCP_STREAM (DUT to peer); both = every second one TCP_MAERTS",
    ),
    (
        "virtio.queues",
        "2",
        "nicemu-virtio: queue pairs of each virtio-net port (nicemu `queues=N`, QEMU \
         `-netdev vhost-user,queues=N`, `vectors=2N+2`), 1 to 16",
    ),
    (
        "virtio.coalesce",
        "0",
        "nicemu-virtio: 1 = `coalesce=on` on each virtio-net port (receive coalescing: \
         consecutive TCP segments reach the guest as one GSO frame; off by default because \
         the guest cannot switch it off, e.g. for XDP)",
    ),
    (
        "ptp.delay_ns",
        "0",
        "nicemu topologies: `,delay=NS` on both nicemu --device specs (a symmetric wire delay); \
         > 0 = ptp4l's path delay must be within ± 200 ns of it",
    ),
    (
        "rss.duration",
        "1",
        "seconds of netperf TCP_CRR (many flows) and TCP_RR (one flow) per channel count",
    ),
    (
        "kselftest.tests",
        "all",
        "selftests to run, comma-separated: ping.py (= drivers/net:ping.py), hw/csum.py (= drivers/net/hw:csum.py), or full kselftest names; all = every program of drivers/net and drivers/net/hw",
    ),
    (
        "xdp.duration",
        "5",
        "seconds of each xdp-bench mode (drop, pass, tx, redirect) under the peer's xdp-trafficgen flood",
    ),
    (
        "xsk.duration",
        "5",
        "seconds of each nicemu-xsk AF_XDP run (rx_drop, tx_only, l2fwd; copy and zero-copy)",
    ),
    (
        "kselftest.igb_autoneg_ms",
        "200",
        "runs with kselftest: nicemu igb ports' autonegotiation time (`autoneg=MS`; nicemu's \
         default is 1000, a real 82576 takes a second or more): xdp.py's single-buffer cases \
         send one datagram about 0.3 s after an XDP attach renegotiates the link (QEMU's igb, \
         500 ms, survives that by holding the frames its link-down port cannot take), while \
         stats.py's procfs_downup_hammer sees igb's totals go backwards whenever the link \
         comes back between two of its resets; 200 passed both in 5 of 5 runs, 500 lost the \
         datagram, 100 failed the hammer in 2 of 6; 0 = nicemu's default",
    ),
    (
        "kselftest.igb_cable",
        "1",
        "runs with kselftest: 1 = nicemu's two igb ports are cabled to each other (`cable=`: each \
         PHY autonegotiates with the other's advertisement, as back-to-back NICs do; \
         hw/ethtool.sh needs that), 0 = each has the ideal link partner",
    ),
    (
        "kselftest.timeout",
        "300",
        "seconds each selftest program may run at least (then TERM, KILL 10 s later; reported as TIMEOUT); a program gets more when its directory's kselftest `settings` file gives more (drivers/net: 360), and gro.py 1200",
    ),
    (
        "rss.max_combined",
        "0",
        "highest `ethtool -L combined` count tried (0 = the driver's maximum)",
    ),
];

/// Parameter values (only overrides; defaults come from [`KNOWN`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params(pub BTreeMap<String, String>);

impl Params {
    /// Sets `key` after checking it is known.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        if !KNOWN.iter().any(|(k, _, _)| *k == key) {
            let keys: Vec<&str> = KNOWN.iter().map(|(k, _, _)| *k).collect();
            return Err(Error::Usage(format!(
                "unknown parameter {key:?} (known: {})",
                keys.join(", ")
            )));
        }
        self.0.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// Parses and sets one `key=value`.
    pub fn set_pair(&mut self, pair: &str) -> Result<()> {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--param {pair:?}: expected KEY=VALUE")))?;
        self.set(k.trim(), v.trim())
    }

    /// The value of `key` (the override, else its default).
    pub fn get(&self, key: &str) -> String {
        if let Some(v) = self.0.get(key) {
            return v.clone();
        }
        KNOWN
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, d, _)| d.to_string())
            .unwrap_or_default()
    }

    /// `key` as a number, falling back to the default when it does not parse.
    pub fn num(&self, key: &str) -> f64 {
        self.get(key).parse().unwrap_or_else(|_| {
            KNOWN
                .iter()
                .find(|(k, _, _)| *k == key)
                .and_then(|(_, d, _)| d.parse().ok())
                .unwrap_or(0.0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_overrides_and_unknown_keys() {
        let mut p = Params::default();
        assert_eq!(p.get("ping.count"), "1000");
        p.set_pair("ping.count = 10").unwrap();
        assert_eq!(p.num("ping.count"), 10.0);
        assert!(p.set_pair("ping.cnt=1").is_err());
        assert!(p.set_pair("nokey").is_err());
        p.set("netperf.cpumask", "2; rm -rf /").unwrap();
        assert!(crate::param_ranges::validate(&p).is_err());
    }
}
