// SPDX-License-Identifier: Apache-2.0
//! What every scenario provides (the [`Scenario`] trait: a guest shell snippet and the
//! parser of its console section), and the shell lines its snippet starts with.

use super::console::Section;
use super::result::ScenarioResult;
use super::target::Target;
use crate::params::Params;

/// One test scenario.
pub trait Scenario {
    /// Short name used on the command line and in markers.
    fn name(&self) -> &'static str;
    /// The guest shell snippet (runs in a subshell with `SCEN`, `MAC`, `DRIVER`, `IFACE`,
    /// `PEER_IFACE`, `DUT_IP`, `PEER_IP` set, and `HOST_ACTIONS=1` when `nicemu_host` is served).
    fn script(&self, p: &Params) -> String;
    /// True if the scenario needs a peer on the network.
    fn needs_peer(&self) -> bool {
        false
    }
    /// True if the scenario asks the harness for host-side actions (`nicemu_host`: nicemu
    /// ctl, pcap reading); it is skipped on devices without a control socket.
    fn needs_host(&self) -> bool {
        false
    }
    /// Rough guest seconds the scenario takes under TCG (for the default timeout).
    fn budget_secs(&self, _p: &Params) -> u64 {
        30
    }
    /// Turns this scenario's console section into a result.
    fn parse(&self, section: &Section, target: &Target) -> ScenarioResult;
    /// The units of work done in counting window `window` (`nicemu_window_begin WINDOW`)
    /// as this scenario's result `r` tells them, and where its cost figures go; `None`
    /// when the scenario opens no such window (see [`crate::cost`]).
    fn cost_unit(
        &self,
        _window: &str,
        _r: &ScenarioResult,
    ) -> Option<crate::cost::metrics::CostUnit> {
        None
    }
}

/// Shell lines every scenario needing the DUT starts with.
pub const NEED_IFACE: &str =
    "if [ -z \"$IFACE\" ]; then nicemu_kv iface none; exit 1; fi\nnicemu_kv iface \"$IFACE\"\n";

/// Shell lines every scenario needing the peer starts with (after [`NEED_IFACE`]).
pub const NEED_PEER: &str =
    "if [ -z \"$PEER_IFACE\" ] || [ \"$PEER_OK\" != 1 ]; then nicemu_kv peer none; exit 1; fi\n";
