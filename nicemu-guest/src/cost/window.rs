// SPDX-License-Identifier: Apache-2.0
//! One window's counts, named: every kernel block the plugin counted is put in its
//! function (the guest's kallsyms), its module, and a time-driven bucket or the
//! deterministic rest.

use std::collections::BTreeMap;

use nicemu_tcg_plugin::format::{Symbols, Window};

use super::classify::{base_name, timed, Timed};

/// Name of the kernel image in per-module figures.
pub const IMAGE: &str = "kernel";

/// One vCPU's instructions in a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VcpuCost {
    /// User-space instructions.
    pub user: u64,
    /// Kernel instructions outside time-driven code.
    pub kernel: u64,
    /// Kernel instructions in time-driven code.
    pub timed: u64,
}

/// A window's instructions by where they ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowCost {
    /// Per vCPU.
    pub vcpus: Vec<VcpuCost>,
    /// Time-driven instructions per bucket (all vCPUs).
    pub timed: BTreeMap<Timed, u64>,
    /// Deterministic kernel instructions per module ([`IMAGE`] for the kernel image).
    pub modules: BTreeMap<String, u64>,
    /// Deterministic kernel instructions per function (its own, not its callees'),
    /// `MODULE:NAME` for a module's, compiler suffixes folded.
    pub functions: BTreeMap<String, u64>,
    /// Executions of the block at each function's first instruction (its calls), by the
    /// kallsyms name (`MODULE:NAME`).
    pub entries: BTreeMap<String, u64>,
    /// Named functions' inclusive instructions (all vCPUs).
    pub inclusive: BTreeMap<String, u64>,
    /// The named functions were instrumented for the whole window.
    pub named_ready: bool,
    /// Blocks no symbol covers (before the first kernel symbol).
    pub unknown: u64,
}

impl WindowCost {
    /// Sorts window `w`'s blocks by function using `symbols`.
    pub fn new(w: &Window, symbols: &Symbols) -> WindowCost {
        let mut c = WindowCost {
            named_ready: w.named_ready,
            ..WindowCost::default()
        };
        for v in &w.vcpus {
            let mut vc = VcpuCost {
                user: v.user,
                ..VcpuCost::default()
            };
            for b in &v.blocks {
                let insns = u64::from(b.insns) * b.execs;
                let Some((sym, off)) = symbols.lookup(b.vaddr) else {
                    c.unknown += insns;
                    vc.kernel += insns;
                    continue;
                };
                if off == 0 {
                    *c.entries.entry(sym.qualified()).or_default() += b.execs;
                }
                if let Some(t) = timed(&sym.name) {
                    *c.timed.entry(t).or_default() += insns;
                    vc.timed += insns;
                    continue;
                }
                vc.kernel += insns;
                let module = sym.module.as_deref().unwrap_or(IMAGE);
                *c.modules.entry(module.to_owned()).or_default() += insns;
                let name = match &sym.module {
                    Some(m) => format!("{m}:{}", base_name(&sym.name)),
                    None => base_name(&sym.name).to_owned(),
                };
                *c.functions.entry(name).or_default() += insns;
            }
            for (name, n) in &v.inclusive {
                *c.inclusive.entry(name.clone()).or_default() += n;
            }
            c.vcpus.push(vc);
        }
        c
    }

    /// Kernel instructions outside time-driven code, all vCPUs.
    pub fn kernel(&self) -> u64 {
        self.vcpus.iter().map(|v| v.kernel).sum()
    }

    /// User-space instructions, all vCPUs.
    pub fn user(&self) -> u64 {
        self.vcpus.iter().map(|v| v.user).sum()
    }

    /// Time-driven kernel instructions, all vCPUs.
    pub fn timed_total(&self) -> u64 {
        self.timed.values().sum()
    }

    /// Functions holding at least `share` of the deterministic kernel instructions,
    /// largest first, at most `limit`.
    pub fn top(&self, share: f64, limit: usize) -> Vec<(&str, u64)> {
        let floor = (self.kernel() as f64 * share) as u64;
        let mut v: Vec<(&str, u64)> = self
            .functions
            .iter()
            .filter(|(_, n)| **n > 0 && **n >= floor)
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(limit);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nicemu_tcg_plugin::format::{Block, VcpuCounts};

    const KALLSYMS: &str = "ffffffff81000000 T _stext
ffffffff81100000 T __dev_queue_xmit
ffffffff81100800 T native_queued_spin_lock_slowpath
ffffffff81101000 t skb_tx_hash.isra.0
ffffffffc0a00000 t igb_xmit_frame_ring\t[igb]
";

    fn block(vaddr: u64, insns: u32, execs: u64) -> Block {
        Block {
            vaddr,
            insns,
            execs,
        }
    }

    #[test]
    fn blocks_land_in_functions_modules_and_time_driven_buckets() {
        let w = Window {
            id: 1,
            begin_vcpu: 0,
            end_vcpu: 0,
            named_ready: true,
            vcpus: vec![
                VcpuCounts {
                    user: 100,
                    blocks: vec![
                        block(0xffff_ffff_8110_0000, 10, 3), // __dev_queue_xmit entry
                        block(0xffff_ffff_8110_0040, 5, 3),
                        block(0xffff_ffff_8110_0800, 7, 100), // spinning
                        block(0xffff_ffff_8110_1000, 4, 3),   // skb_tx_hash.isra.0
                        block(0xffff_ffff_c0a0_0000, 20, 3),  // igb entry
                    ],
                    inclusive: vec![("__dev_queue_xmit".into(), 200)],
                },
                VcpuCounts {
                    user: 50,
                    blocks: vec![block(0x1000, 2, 1)], // no symbol
                    inclusive: vec![("__dev_queue_xmit".into(), 0)],
                },
            ],
        };
        let c = WindowCost::new(&w, &Symbols::parse(KALLSYMS));
        assert_eq!(c.vcpus[0].kernel, 30 + 15 + 12 + 60);
        assert_eq!(c.vcpus[0].timed, 700);
        assert_eq!((c.kernel(), c.user(), c.timed_total()), (119, 150, 700));
        assert_eq!(c.timed[&Timed::Spin], 700);
        assert_eq!(c.modules["kernel"], 57);
        assert_eq!(c.modules["igb"], 60);
        assert_eq!(c.functions["skb_tx_hash"], 12);
        assert_eq!(c.functions["igb:igb_xmit_frame_ring"], 60);
        assert_eq!(c.entries["__dev_queue_xmit"], 3);
        assert_eq!(c.entries["igb:igb_xmit_frame_ring"], 3);
        assert_eq!(c.entries["native_queued_spin_lock_slowpath"], 100);
        assert_eq!(c.inclusive["__dev_queue_xmit"], 200);
        assert_eq!(c.unknown, 2);
        let top: Vec<&str> = c.top(0.2, 10).into_iter().map(|(n, _)| n).collect();
        assert_eq!(top, ["igb:igb_xmit_frame_ring", "__dev_queue_xmit"]);
    }
}
