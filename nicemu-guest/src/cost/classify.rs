// SPDX-License-Identifier: Apache-2.0
//! Time-driven kernel code ([`nicemu_tcg_plugin::timed`], shared with the plugin, which
//! leaves it out of inclusive counts): counted in buckets of its own, shown, and kept out
//! of the deterministic totals and the verdicts; and compiler suffixes folded into their
//! function.

pub use nicemu_tcg_plugin::timed::{timed, Timed};

/// `name` without the suffixes the compiler appends to copies and parts of a function
/// (`.constprop.0`, `.isra.0`, `.part.0`, `.cold`, `.llvm.123`): one function's costs are
/// reported once, and metric keys (dot-separated paths) stay unambiguous.
pub fn base_name(name: &str) -> &str {
    name.split_once('.').map_or(name, |(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_suffixes_fold_into_the_function() {
        assert_eq!(base_name("skb_tx_hash.isra.0"), "skb_tx_hash");
        assert_eq!(base_name("igb_clean_tx_irq.cold"), "igb_clean_tx_irq");
        assert_eq!(base_name("vfs_read"), "vfs_read");
    }
}
