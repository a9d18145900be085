// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! Counter snapshots at a window's markers and the window they bound.

use crate::format::{Block, VcpuCounts};

/// Every counter at one marker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// vCPUs read.
    pub vcpus: usize,
    /// User-space instructions per vCPU.
    pub user: Vec<u64>,
    /// Executions of each known kernel block, block-major: `execs[block * vcpus + vcpu]`.
    /// Blocks first translated later are absent (zero).
    pub execs: Vec<u64>,
    /// Inclusive instructions per vCPU per named function.
    pub inclusive: Vec<Vec<u64>>,
}

impl Snapshot {
    fn execs(&self, block: usize, vcpu: usize) -> u64 {
        if vcpu >= self.vcpus {
            return 0;
        }
        self.execs
            .get(block * self.vcpus + vcpu)
            .copied()
            .unwrap_or(0)
    }
}

/// The window between snapshots `a` and `b` of blocks `blocks` ((vaddr, instructions) by
/// block index, as at `b`), named functions `names`.
pub fn between(
    a: &Snapshot,
    b: &Snapshot,
    blocks: &[(u64, u32)],
    names: &[String],
) -> Vec<VcpuCounts> {
    (0..b.vcpus)
        .map(|v| {
            let user = b.user[v].saturating_sub(a.user.get(v).copied().unwrap_or(0));
            let blocks = blocks
                .iter()
                .enumerate()
                .filter_map(|(i, &(vaddr, insns))| {
                    let execs = b.execs(i, v).saturating_sub(a.execs(i, v));
                    (execs > 0).then_some(Block {
                        vaddr,
                        insns,
                        execs,
                    })
                })
                .collect();
            let inclusive = names
                .iter()
                .enumerate()
                .map(|(f, name)| {
                    let at = |s: &Snapshot| {
                        s.inclusive
                            .get(v)
                            .and_then(|c| c.get(f))
                            .copied()
                            .unwrap_or(0)
                    };
                    (name.clone(), at(b).saturating_sub(at(a)))
                })
                .collect();
            VcpuCounts {
                user,
                blocks,
                inclusive,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_holds_the_differences_and_blocks_new_since_its_start() {
        let a = Snapshot {
            vcpus: 2,
            user: vec![100, 5],
            execs: vec![10, 0, 3, 3], // block 0: 10 on vCPU 0; block 1: 3 and 3
            inclusive: vec![vec![40], vec![0]],
        };
        let b = Snapshot {
            vcpus: 2,
            user: vec![150, 5],
            execs: vec![12, 0, 3, 4, 0, 9], // block 2 is new, ran 9 times on vCPU 1
            inclusive: vec![vec![70], vec![0]],
        };
        let blocks = [(0xa000, 4), (0xb000, 2), (0xc000, 7)];
        let w = between(&a, &b, &blocks, &["f".to_owned()]);
        assert_eq!(w[0].user, 50);
        assert_eq!(
            w[0].blocks,
            [Block {
                vaddr: 0xa000,
                insns: 4,
                execs: 2
            }]
        );
        assert_eq!(w[0].inclusive, [("f".to_owned(), 30)]);
        assert_eq!(w[1].user, 0);
        assert_eq!(w[1].kernel(), 2 + 63);
        assert_eq!(w[1].inclusive, [("f".to_owned(), 0)]);
    }
}
