// SPDX-License-Identifier: Apache-2.0
//! Finding reports in console text, one line at a time (the boot loop feeds lines as QEMU
//! prints them, so a panic is seen while the guest runs).
//!
//! A report starts at its header line ([`super::header::classify`]), or at the
//! `------------[ cut here ]------------` / `=====` line just before one, and ends at its
//! kind's end line (`---[ end trace …]---`, KASAN's and KFENCE's closing `=====`,
//! `---[ end Kernel panic …]---`), or for kinds without one after its call trace, or where
//! the next report starts. A few headers continue the open report instead of starting one:
//! the `Oops:` after `BUG: kernel NULL pointer dereference` or `kernel BUG at`, the
//! `WARNING:` line after a `refcount_t:` or list-corruption message, the `kernel BUG at`
//! after a list-corruption message.
//!
//! Guest output is untrusted: lines are cut at [`super::line::MAX_LINE`] bytes, a report
//! keeps at most [`super::open::MAX_LINES`] lines, a cell at most [`MAX_DISTINCT`] distinct fingerprints
//! (repeats are counted).

use super::culprit;
use super::header::{self, Header};
use super::line::{self, LogLine};
use super::model::{Kind, Splat};
use super::open::{Open, CUT_HERE};
/// Distinct fingerprints kept per console; further ones are counted in [`Scanner::dropped`].
pub const MAX_DISTINCT: usize = 64;
/// The kernel-log marker `/init` writes to `/dev/kmsg` when a part of the run begins
/// (`nicemu-guest: @@NICEMU-BEGIN NAME`).
pub const SECTION_MARKER: &str = "nicemu-guest: @@NICEMU-BEGIN ";

/// The reports of one console, fed line by line.
#[derive(Debug, Default)]
pub struct Scanner {
    open: Option<Open>,
    /// Lines just before a possible header: the `cut here` line, a WARN's message, a
    /// `=====` separator (with their timestamps).
    pending: Vec<(Option<f64>, String)>,
    /// What the guest is doing (from the section markers).
    during: String,
    done: Vec<Splat>,
    /// Reports beyond [`MAX_DISTINCT`] distinct fingerprints, not kept.
    pub dropped: u32,
    /// A `Kernel panic` header was seen.
    panicked: bool,
    /// The panic's `---[ end Kernel panic …]---` line was seen.
    panic_ended: bool,
}

impl Scanner {
    /// A scanner at the start of a boot.
    pub fn new() -> Self {
        Scanner {
            during: "boot".to_owned(),
            ..Scanner::default()
        }
    }

    /// True once the kernel panicked (the guest will not get further).
    pub fn panicked(&self) -> bool {
        self.panicked
    }

    /// True once the panic's last line was printed.
    pub fn panic_ended(&self) -> bool {
        self.panic_ended
    }

    /// Reads one console line.
    pub fn feed(&mut self, raw: &str) {
        let LogLine { secs, msg } = line::split(raw);
        if let Some(at) = msg.find(SECTION_MARKER) {
            let name = msg[at + SECTION_MARKER.len()..].trim();
            self.during = line::clip(name, 64).to_owned();
            self.close(false);
            return;
        }
        if msg.trim() == CUT_HERE {
            if !self.open_continues_at_cut() {
                self.close(false);
                self.pending = vec![(secs, msg.to_owned())];
            }
            return;
        }
        if is_separator(msg) {
            self.separator(secs, msg);
            return;
        }
        if let Some(h) = header::classify(msg) {
            self.header(h, secs, msg);
            return;
        }
        self.body(secs, msg);
    }

    /// A `cut here` line inside a list-corruption report (its `BUG()` follows) belongs to it.
    fn open_continues_at_cut(&mut self) -> bool {
        match self.open.as_mut() {
            Some(o) if o.header.kind == Kind::ListCorruption && o.trace_state == 0 => {
                o.push(CUT_HERE);
                true
            }
            _ => false,
        }
    }

    /// A `=====…` line: the end of a KASAN or KFENCE report, or the start of one (or of a
    /// lockdep report).
    fn separator(&mut self, secs: Option<f64>, msg: &str) {
        if let Some(o) = self.open.as_mut() {
            if matches!(o.header.kind, Kind::Kasan | Kind::Kfence) && o.lines.len() > 1 {
                o.push(msg);
                self.close_whole();
                return;
            }
        }
        self.close(false);
        self.pending = vec![(secs, msg.to_owned())];
    }

    fn header(&mut self, h: Header, secs: Option<f64>, msg: &str) {
        if let Some(o) = self.open.as_mut() {
            if o.continues_with(&h) {
                o.absorb(h, msg);
                return;
            }
        }
        let pending = std::mem::take(&mut self.pending);
        self.close(false);
        if h.kind == Kind::Panic {
            self.panicked = true;
        }
        let start = pending.first().and_then(|(s, _)| *s).or(secs);
        let mut first: Vec<String> = pending.into_iter().map(|(_, l)| l).collect();
        first.push(msg.to_owned());
        self.open = Some(Open::new(h, first, start, &self.during));
    }

    fn body(&mut self, secs: Option<f64>, msg: &str) {
        if let Some(o) = self.open.as_mut() {
            let t = msg.trim();
            if t.starts_with("---[ end Kernel panic") {
                o.push(msg);
                self.panic_ended = true;
                self.close_whole();
                return;
            }
            if t.starts_with("---[ end trace") && o.header.kind != Kind::Panic {
                o.push(msg);
                self.close_whole();
                return;
            }
            if !o.take(msg) || (o.trace_done && !o.header.kind.has_end_marker()) {
                self.close_whole();
            }
            return;
        }
        if !self.pending.is_empty() {
            // A WARN(cond, fmt)'s message between `cut here` and `WARNING:`; anything longer
            // was no report.
            if self.pending.len() < 4 && !msg.trim().is_empty() {
                self.pending.push((secs, msg.to_owned()));
            } else {
                self.pending.clear();
            }
        }
    }

    /// Ends the open report, whole.
    fn close_whole(&mut self) {
        if let Some(o) = self.open.take() {
            self.finish_report(o, false);
        }
    }

    /// Ends the open report because something else begins (or the console ended): it is
    /// truncated unless `assume_whole` or it is whole without an end line.
    fn close(&mut self, assume_whole: bool) {
        if let Some(o) = self.open.take() {
            let truncated = !assume_whole && !o.whole_without_end();
            self.finish_report(o, truncated);
        }
        self.pending.clear();
    }

    fn finish_report(&mut self, o: Open, truncated: bool) {
        let s = culprit::splat(o, truncated);
        if let Some(prev) = self
            .done
            .iter_mut()
            .find(|p| p.fingerprint == s.fingerprint)
        {
            prev.count += 1;
            return;
        }
        if self.done.len() >= MAX_DISTINCT {
            self.dropped += 1;
            return;
        }
        self.done.push(s);
    }

    /// Reads whole lines out of `text` (a chunk of the console; a line without its newline
    /// yet stays in `partial` for the next chunk), handing each to `seen` too.
    pub fn feed_chunk(&mut self, partial: &mut String, text: &str, mut seen: impl FnMut(&str)) {
        partial.push_str(text);
        while let Some(nl) = partial.find('\n') {
            let l: String = partial.drain(..=nl).collect();
            self.feed(&l);
            seen(&l);
        }
        if partial.len() > 4 * line::MAX_LINE {
            // A line with no end: keep its start only.
            let keep = line::clip(partial, line::MAX_LINE).len();
            partial.truncate(keep);
        }
    }

    /// Ends the console: an open report is kept, marked truncated unless it is whole.
    pub fn finish(mut self) -> Vec<Splat> {
        self.close(false);
        self.done
    }
}

/// A line of `=` only (lockdep's, KASAN's and KFENCE's frames).
fn is_separator(msg: &str) -> bool {
    let t = msg.trim();
    t.len() >= 20 && t.bytes().all(|b| b == b'=')
}

#[cfg(test)]
mod tests {
    use super::super::samples::read;
    use super::super::{scan, Kind};

    /// (sample, kind, fingerprint, location, during)
    const EXPECT: &[(&str, Kind, &str, Option<&str>, &str)] = &[
        (
            "warn-igb-xmit.log",
            Kind::Warning,
            "WARNING in igb_xmit_frame_ring",
            Some("drivers/net/ethernet/intel/igb/igb_main.c:6533"),
            "ping",
        ),
        (
            "warn-6.12-format.log",
            Kind::Warning,
            "WARNING in igb_xmit_frame_ring",
            Some("drivers/net/ethernet/intel/igb/igb_main.c:6302"),
            "boot",
        ),
        (
            "sleep-in-atomic-igb-get-stats64.log",
            Kind::SleepInAtomic,
            "BUG: sleeping function called from invalid context in igb_get_stats64",
            None,
            "driver-stress",
        ),
        (
            "circular-locking.log",
            Kind::Lockdep,
            "WARNING: possible circular locking dependency detected in igb_get_ethtool_stats",
            None,
            "driver-stress",
        ),
        (
            "inconsistent-lock-state.log",
            Kind::Lockdep,
            "WARNING: inconsistent lock state in igb_poll",
            None,
            "boot",
        ),
        (
            "suspicious-rcu.log",
            Kind::SuspiciousRcuUsage,
            "WARNING: suspicious RCU usage in ixgbe_select_queue",
            Some("drivers/net/ethernet/intel/ixgbe/ixgbe_main.c:9408"),
            "boot",
        ),
        (
            "kasan-slab-use-after-free.log",
            Kind::Kasan,
            "BUG: KASAN: slab-use-after-free in igb_clean_tx_irq",
            None,
            "driver-stress",
        ),
        (
            "ubsan-array-index.log",
            Kind::Ubsan,
            "UBSAN: array-index-out-of-bounds in ixgbe_alloc_q_vector",
            Some("drivers/net/ethernet/intel/ixgbe/ixgbe_lib.c:897:20"),
            "boot",
        ),
        (
            "kfence-use-after-free.log",
            Kind::Kfence,
            "BUG: KFENCE: use-after-free read in ixgbe_clean_rx_irq",
            None,
            "boot",
        ),
        (
            "hung-task.log",
            Kind::HungTask,
            "INFO: task hung in igb_get_ethtool_stats",
            None,
            "boot",
        ),
        (
            "netdev-watchdog.log",
            Kind::NetdevWatchdog,
            "NETDEV WATCHDOG: transmit queue timed out in igb",
            None,
            "faults",
        ),
        (
            "refcount-underflow.log",
            Kind::Refcount,
            "refcount_t: underflow; use-after-free in ixgbe_xdp_setup",
            None,
            "boot",
        ),
        (
            "list-del-corruption-oops.log",
            Kind::ListCorruption,
            "list_del corruption in igb_free_q_vector",
            None,
            "boot",
        ),
        (
            "gpf.log",
            Kind::GeneralProtectionFault,
            "Oops: general protection fault in igb_update_stats",
            None,
            "boot",
        ),
        (
            "soft-lockup.log",
            Kind::SoftLockup,
            "BUG: soft lockup in ixgbe_read_reg",
            None,
            "boot",
        ),
        (
            "scheduling-while-atomic.log",
            Kind::SchedulingWhileAtomic,
            "BUG: scheduling while atomic in igb_read_phy_reg_igp",
            None,
            "boot",
        ),
        (
            "rcu-stall.log",
            Kind::RcuStall,
            "INFO: rcu detected stall in igb_rd32",
            None,
            "boot",
        ),
        (
            "netdev-ref-leak.log",
            Kind::NetdevRefLeak,
            "unregister_netdevice: waiting for dev to become free in igb_xdp_setup",
            None,
            "boot",
        ),
    ];

    #[test]
    fn every_sample_is_one_whole_report_with_its_fingerprint() {
        for (name, kind, fp, loc, during) in EXPECT {
            let s = scan(&read(name));
            assert_eq!(s.len(), 1, "{name}: {s:#?}");
            let s = &s[0];
            assert_eq!((s.kind, s.fingerprint.as_str()), (*kind, *fp), "{name}");
            assert_eq!(s.location.as_deref(), *loc, "{name}");
            assert_eq!(s.during, *during, "{name}");
            assert!(!s.truncated, "{name} truncated:\n{}", s.text);
            assert!(s.at_secs.is_some(), "{name}");
            assert!(
                s.text.lines().all(|l| super::line::split(l).secs.is_none()),
                "{name}: timestamps left in the text"
            );
        }
    }

    #[test]
    fn the_site_a_report_names_is_kept_apart_from_the_culprits_line() {
        let site = |name: &str| scan(&read(name))[0].site.clone();
        assert_eq!(
            site("sleep-in-atomic-igb-get-stats64.log").as_deref(),
            Some("kernel/locking/mutex.c:580")
        );
        assert_eq!(
            site("refcount-underflow.log").as_deref(),
            Some("lib/refcount.c:28")
        );
        assert_eq!(
            site("list-del-corruption-oops.log").as_deref(),
            Some("lib/list_debug.c:56")
        );
        assert_eq!(
            site("warn-igb-xmit.log").as_deref(),
            Some("drivers/net/ethernet/intel/igb/igb_main.c:6533")
        );
    }

    #[test]
    fn report_text_spans_header_to_end_line() {
        let s = &scan(&read("warn-igb-xmit.log"))[0];
        let lines: Vec<&str> = s.text.lines().collect();
        assert_eq!(lines[0], "------------[ cut here ]------------");
        assert!(lines[1].starts_with(
            "WARNING: drivers/net/ethernet/intel/igb/igb_main.c:6533 at igb_xmit_frame_ring"
        ));
        assert_eq!(
            *lines.last().unwrap(),
            "---[ end trace 0000000000000000 ]---"
        );
        assert!(!s.text.contains("NIC Link is Up") && !s.text.contains("@@NICEMU-BEGIN"));
        assert_eq!(s.module.as_deref(), Some("igb"));
        assert_eq!(s.at_secs, Some(12.236517));
        // The reliable frames of the call trace, the '?' ones left out.
        let funcs: Vec<&str> = s.frames.iter().map(|f| f.func.as_str()).collect();
        assert_eq!(
            &funcs[..3],
            ["igb_xmit_frame", "dev_hard_start_xmit", "sch_direct_xmit"]
        );
        let k = &scan(&read("kasan-slab-use-after-free.log"))[0];
        assert!(k.text.starts_with("=====") && k.text.ends_with("====="));
        assert!(k.text.contains("Freed by task 15") && k.text.contains("Memory state around"));
        assert_eq!(k.frames[0].func, "dump_stack_lvl");
        let l = &scan(&read("circular-locking.log"))[0];
        assert!(
            l.text.contains("-> #1 (&adapter->stats64_lock)")
                && l.text.trim_end().ends_with("</TASK>")
        );
    }

    #[test]
    fn an_oops_and_the_panic_after_it_are_two_reports() {
        let mut sc = super::Scanner::new();
        for l in read("null-deref-panic.log").lines() {
            sc.feed(l);
        }
        assert!(sc.panicked() && sc.panic_ended());
        let s = sc.finish();
        let fps: Vec<&str> = s.iter().map(|x| x.fingerprint.as_str()).collect();
        assert_eq!(
            fps,
            [
                "BUG: kernel NULL pointer dereference in igb_clean_rx_irq",
                "Kernel panic - not syncing: Fatal exception in interrupt"
            ]
        );
        assert_eq!((s[0].kind, s[1].kind), (Kind::PageFault, Kind::Panic));
        assert!(s[0].text.contains("Oops: Oops: 0000 [#1] SMP NOPTI"));
        assert!(s.iter().all(|x| !x.truncated && x.during == "ping"));
    }

    #[test]
    fn kmemleak_in_the_log_and_from_debugfs() {
        let s = scan(&read("kmemleak-verbose.log"));
        assert_eq!(s.len(), 1, "{s:#?}");
        assert_eq!(
            s[0].fingerprint,
            "kmemleak: unreferenced object in igb_alloc_q_vector"
        );
        assert_eq!((s[0].count, s[0].during.as_str()), (2, "kmemleak"));
        assert!(!s[0].text.contains("new suspected memory leaks"));
        let s = scan(&read("kmemleak-seq.txt"));
        let fps: Vec<&str> = s.iter().map(|x| x.fingerprint.as_str()).collect();
        assert_eq!(
            fps,
            [
                "kmemleak: unreferenced object in igb_alloc_q_vector",
                "kmemleak: unreferenced object in xdp_rxq_info_reg_mem_model"
            ]
        );
        assert!(s.iter().all(|x| x.at_secs.is_none() && !x.truncated));
    }

    #[test]
    fn a_console_ending_mid_report_keeps_it_marked_truncated() {
        let s = scan(&read("truncated-warn.log"));
        assert_eq!(s.len(), 1);
        assert!(s[0].truncated);
        assert_eq!(s[0].fingerprint, "WARNING in igb_xmit_frame_ring");
        assert!(s[0]
            .full_text()
            .contains("the console ended before the end of this report"));
        // Cut inside the sleeping-function report: before its call trace ended.
        let text = read("sleep-in-atomic-igb-get-stats64.log");
        let cut: String = text.lines().take(20).map(|l| format!("{l}\n")).collect();
        let s = scan(&cut);
        assert!(s[0].truncated && s[0].kind == Kind::SleepInAtomic);
    }

    #[test]
    fn all_samples_in_one_console_and_repeats_counted() {
        let mut all = String::new();
        for (name, ..) in EXPECT {
            all.push_str(&read(name));
        }
        all.push_str(&read("warn-igb-xmit.log"));
        let s = scan(&all);
        assert_eq!(
            s.len(),
            EXPECT.len() - 1,
            "{:#?}",
            s.iter().map(|x| &x.fingerprint).collect::<Vec<_>>()
        );
        let warn = s
            .iter()
            .find(|x| x.fingerprint == "WARNING in igb_xmit_frame_ring")
            .unwrap();
        assert_eq!(warn.count, 3);
        assert!(
            s.iter().all(|x| !x.truncated),
            "{:#?}",
            s.iter()
                .filter(|x| x.truncated)
                .map(|x| &x.fingerprint)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn noise_is_not_a_report_and_memory_is_bounded() {
        let quiet = "[    1.0] igb 0000:01:00.0: added PHC on eth0\n\
                     [    1.1] ------------[ cut here ]------------\n\
                     [    1.2] a\n[    1.3] b\n[    1.4] c\n[    1.5] d\n[    1.6] e\n\
                     [    2.0] ==================================================\n\
                     @@NICEMU-OUT probe dmesg [ 5.0] igb: eth0 NIC Link is Up\n";
        assert!(scan(quiet).is_empty());
        // A guest printing one endless report, then many distinct ones.
        let mut sc = super::Scanner::new();
        sc.feed("[ 1.0] BUG: scheduling while atomic: x/1/0x2");
        sc.feed("[ 1.0] Call Trace:");
        for i in 0..10_000 {
            sc.feed(&format!("[ 1.1]  f{i}+0x1/0x2"));
        }
        for i in 0..(super::MAX_DISTINCT + 10) {
            sc.feed(&format!("[ 2.0] BUG: something{} broke", "x".repeat(i)));
        }
        let dropped = sc.dropped;
        let s = sc.finish();
        assert_eq!(s.len(), super::MAX_DISTINCT);
        assert!(dropped >= 10);
        assert!(s[0].text.lines().count() <= super::super::open::MAX_LINES + 1);
        assert!(s[0].text.ends_with("more lines not kept]"));
    }

    #[test]
    fn chunks_split_anywhere_give_the_same_reports() {
        let text = read("circular-locking.log") + &read("netdev-watchdog.log");
        let whole = scan(&text);
        for step in [1, 7, 100, 4096] {
            let mut sc = super::Scanner::new();
            let mut partial = String::new();
            let b = text.as_bytes();
            let mut i = 0;
            while i < b.len() {
                let mut j = (i + step).min(b.len());
                while !text.is_char_boundary(j) {
                    j += 1;
                }
                sc.feed_chunk(&mut partial, &text[i..j], |_| {});
                i = j;
            }
            assert_eq!(sc.finish(), whole, "step {step}");
        }
    }
}
