// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! What the plugin shares with the harness: the marker instruction, the configuration
//! file the harness writes, and the output file the plugin writes. Both sides use this
//! module, so the two cannot drift apart.
//!
//! # Marker
//! `nopl 0x4e4943NN(%rax)` (`0f 1f 80 NN 43 49 4e`): a 7-byte no-op whose displacement
//! spells "NIC" and carries the marker id NN. Only the plugin gives it a meaning, and only
//! in user space. Ids: 0 = the configuration is ready, 1..=126 open window NN,
//! 129..=254 close window NN-128.
//!
//! # Configuration marker (id 0)
//! The guest runs it with `rsi` pointing at the text of its `/proc/kallsyms` (after the
//! drivers are loaded) and `rdx` holding its length. The plugin saves the text
//! (`ksyms=PATH`), finds the named functions it was given (`fn=NAME`, `fn=MODULE:NAME`)
//! and the entry code's sections ([`Config`]), and instruments them from then on.
//!
//! # Output file (`out=PATH`, appended at every window's end, totals at exit)
//! ```text
//! H api=7 vcpus=N
//! W id=ID begin_vcpu=V end_vcpu=V named=0|1
//! U VCPU USER_INSNS
//! K VCPU HEXADDR INSNS EXECS      one kernel translation block that ran in the window
//! I VCPU NAME INSNS               a named function's inclusive instructions (NAME+timed: the
//!                                 time-driven code left out of them)
//! E id=ID
//! X MESSAGE                       something the plugin could not do
//! T VCPU USER_INSNS KERNEL_INSNS  whole-run totals, at exit
//! ```

use std::fmt::Write as _;

/// Bytes before the marker id.
pub const MARKER_PREFIX: [u8; 3] = [0x0f, 0x1f, 0x80];
/// Bytes after the marker id ("NIC").
pub const MARKER_SUFFIX: [u8; 3] = [0x43, 0x49, 0x4e];
/// Length of the marker instruction.
pub const MARKER_LEN: usize = 7;
/// Windows one boot can open.
pub const MAX_WINDOWS: u8 = 126;
/// Named functions one configuration can hold (a bit each per vCPU).
pub const MAX_FUNCTIONS: usize = 64;
/// Lowest kernel address on x86-64 (the canonical upper half).
pub const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// The marker instruction for id `id`.
pub fn marker_bytes(id: u8) -> [u8; MARKER_LEN] {
    let [a, b, c] = MARKER_PREFIX;
    let [x, y, z] = MARKER_SUFFIX;
    [a, b, c, id, x, y, z]
}

/// The marker id of instruction bytes `insn`, if they are a marker.
pub fn marker_id(insn: &[u8]) -> Option<u8> {
    (insn.len() == MARKER_LEN && insn[..3] == MARKER_PREFIX && insn[4..] == MARKER_SUFFIX)
        .then(|| insn[3])
}

/// What a marker means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The guest hands over its kernel symbols (`rsi` = text, `rdx` = length).
    Config,
    /// Window N (1..=[`MAX_WINDOWS`]) starts.
    Begin(u8),
    /// Window N ends.
    End(u8),
}

impl Mark {
    /// The marker id.
    pub fn id(self) -> u8 {
        match self {
            Mark::Config => 0,
            Mark::Begin(n) => n,
            Mark::End(n) => n + 128,
        }
    }

    /// The meaning of marker id `id` (`None` for the unused ids 127, 128 and 255).
    pub fn from_id(id: u8) -> Option<Mark> {
        match id {
            0 => Some(Mark::Config),
            1..=MAX_WINDOWS => Some(Mark::Begin(id)),
            129..=254 => Some(Mark::End(id - 128)),
            _ => None,
        }
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// A text symbol of the guest kernel (`/proc/kallsyms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Address.
    pub addr: u64,
    /// Name.
    pub name: String,
    /// The module it belongs to (`[igb]` in kallsyms), `None` for the kernel image.
    pub module: Option<String>,
}

impl Symbol {
    /// `NAME` for the kernel image, `MODULE:NAME` for a module's function.
    pub fn qualified(&self) -> String {
        match &self.module {
            Some(m) => format!("{m}:{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The guest kernel's text symbols, sorted by address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbols {
    list: Vec<Symbol>,
}

impl Symbols {
    /// Reads `/proc/kallsyms` text: the text symbols (`t`, `T`, `w`, `W`) of lines
    /// `ADDR TYPE NAME [\t[MODULE]]`; other lines are skipped. Zero addresses (what an
    /// unprivileged reader sees) are skipped too.
    pub fn parse(text: &str) -> Symbols {
        let mut list: Vec<Symbol> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = hex(w.next()?)?;
                let kind = w.next()?;
                let name = w.next()?;
                let module = w
                    .next()
                    .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'));
                (addr != 0 && matches!(kind, "t" | "T" | "w" | "W")).then(|| Symbol {
                    addr,
                    name: name.to_owned(),
                    module: module.map(str::to_owned),
                })
            })
            .collect();
        list.sort_by_key(|s| s.addr);
        Symbols { list }
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The symbol `addr` falls in (the last one at or below it) and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(&Symbol, u64)> {
        let i = self.list.partition_point(|s| s.addr <= addr);
        let s = self.list.get(i.checked_sub(1)?)?;
        Some((s, addr - s.addr))
    }

    /// The address ranges `[start, next symbol)` of the symbols whose bare name `keep`
    /// accepts, adjacent ranges merged, in address order (the last symbol, whose end is
    /// unknown, is left out).
    pub fn ranges(&self, keep: impl Fn(&str) -> bool) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for w in self.list.windows(2) {
            let (s, next) = (&w[0], &w[1]);
            if s.addr == next.addr || !keep(&s.name) {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.1 == s.addr => last.1 = next.addr,
                _ => out.push((s.addr, next.addr)),
            }
        }
        out
    }

    /// Addresses of the symbols whose bare name `keep` accepts, in address order.
    pub fn entries(&self, keep: impl Fn(&str) -> bool) -> Vec<u64> {
        let mut v: Vec<u64> = (self.list.iter())
            .filter(|s| keep(&s.name))
            .map(|s| s.addr)
            .collect();
        v.dedup();
        v
    }

    /// Addresses of the symbols named `name` (`MODULE:NAME` for a module's).
    pub fn addresses(&self, name: &str) -> Vec<u64> {
        let (module, bare) = match name.split_once(':') {
            Some((m, n)) => (Some(m), n),
            None => (None, name),
        };
        self.list
            .iter()
            .filter(|s| s.name == bare && s.module.as_deref() == module)
            .map(|s| s.addr)
            .collect()
    }
}

/// Code sections whose start and end symbols bound ranges never counted into a named
/// function: the entry code of system calls, interrupts and exceptions, which runs on the
/// interrupted task's stack before switching to the interrupt stack. Time-driven
/// functions ([`crate::timed`]) are never counted into one either.
pub const EXCLUDED_SECTIONS: &[&str] = &["entry_text", "irqentry_text", "noinstr_text"];

/// Whether `vaddr` is in one of `ranges` (`[start, end)`, sorted, not overlapping).
pub fn in_ranges(ranges: &[(u64, u64)], vaddr: u64) -> bool {
    let i = ranges.partition_point(|&(a, _)| a <= vaddr);
    i > 0 && vaddr < ranges[i - 1].1
}

/// What the plugin instruments once the guest's symbols are known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Named functions: the name asked for and its entry addresses.
    pub functions: Vec<(String, Vec<u64>)>,
    /// Address ranges `[start, end)` of the entry sections, never counted into a named
    /// function; sorted by start, not overlapping.
    pub exclude: Vec<(u64, u64)>,
    /// Address ranges of time-driven functions ([`crate::timed`]): inside a named
    /// function they count into its time-driven counter ([`TIMED_SUFFIX`]); sorted.
    pub timed: Vec<(u64, u64)>,
    /// Entry points of time-driven functions: called inside a named function or
    /// interrupting it on its stack, they and their callees count as its time, not into
    /// it; a named function entered inside one counts for itself ([`crate::frames`]).
    pub timed_entries: Vec<u64>,
    /// Entry points of blocking functions ([`crate::timed::Timed::Wait`]), a subset of
    /// `timed_entries`: a named function's task that enters one may sleep and wake on
    /// another vCPU ([`crate::frames::Sleeper`]).
    pub sleep_entries: Vec<u64>,
}

/// Suffix of the name under which a named function's time-driven instructions (the
/// time-driven code it ran or that interrupted it on its stack) are written.
pub const TIMED_SUFFIX: &str = "+timed";

fn merged(mut r: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    r.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

impl Config {
    /// Whether kernel address `vaddr` is in an entry section.
    pub fn excluded(&self, vaddr: u64) -> bool {
        in_ranges(&self.exclude, vaddr)
    }

    /// Whether kernel address `vaddr` is in a time-driven function.
    pub fn timed_at(&self, vaddr: u64) -> bool {
        in_ranges(&self.timed, vaddr)
    }

    /// The configuration for functions `names` (at most [`MAX_FUNCTIONS`]) in `symbols`;
    /// also returns the names not found.
    pub fn new(symbols: &Symbols, names: &[String]) -> (Config, Vec<String>) {
        let mut c = Config::default();
        let mut missing = Vec::new();
        for name in names.iter().take(MAX_FUNCTIONS) {
            let addrs = symbols.addresses(name);
            if addrs.is_empty() {
                missing.push(name.clone());
            }
            c.functions.push((name.clone(), addrs));
        }
        let mut exclude = Vec::new();
        for sec in EXCLUDED_SECTIONS {
            let a = symbols.addresses(&format!("__{sec}_start"));
            let b = symbols.addresses(&format!("__{sec}_end"));
            if let (Some(&a), Some(&b)) = (a.first(), b.first()) {
                if a < b {
                    exclude.push((a, b));
                }
            }
        }
        c.exclude = merged(exclude);
        let is_timed = |n: &str| crate::timed::timed(n).is_some();
        c.timed = symbols.ranges(is_timed);
        c.timed_entries = symbols.entries(is_timed);
        c.sleep_entries =
            symbols.entries(|n| crate::timed::timed(n) == Some(crate::timed::Timed::Wait));
        (c, missing)
    }
}

/// One kernel translation block's executions in a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Guest virtual address of its first instruction.
    pub vaddr: u64,
    /// Instructions in the block.
    pub insns: u32,
    /// Times it started in the window.
    pub execs: u64,
}

/// One vCPU's counts in a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VcpuCounts {
    /// User-space instructions.
    pub user: u64,
    /// Kernel translation blocks that ran.
    pub blocks: Vec<Block>,
    /// Named functions' inclusive instructions (the function and everything it called,
    /// on its own stack).
    pub inclusive: Vec<(String, u64)>,
}

impl VcpuCounts {
    /// Kernel instructions: every block's size times its executions.
    pub fn kernel(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| u64::from(b.insns) * b.execs)
            .sum()
    }
}

/// The counts between one window's markers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// Window id (1..=[`MAX_WINDOWS`]).
    pub id: u8,
    /// vCPU that executed the opening marker.
    pub begin_vcpu: u32,
    /// vCPU that executed the closing marker.
    pub end_vcpu: u32,
    /// The named functions were instrumented for the whole window.
    pub named_ready: bool,
    /// Per vCPU, by index.
    pub vcpus: Vec<VcpuCounts>,
}

impl Window {
    /// Appends this window's records to `s`.
    pub fn render(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "W id={} begin_vcpu={} end_vcpu={} named={}",
            self.id,
            self.begin_vcpu,
            self.end_vcpu,
            u8::from(self.named_ready)
        );
        for (v, c) in self.vcpus.iter().enumerate() {
            let _ = writeln!(s, "U {v} {}", c.user);
            for b in &c.blocks {
                let _ = writeln!(s, "K {v} {:x} {} {}", b.vaddr, b.insns, b.execs);
            }
            for (name, n) in &c.inclusive {
                let _ = writeln!(s, "I {v} {name} {n}");
            }
        }
        let _ = writeln!(s, "E id={}", self.id);
    }
}

/// Everything one run's output file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Plugin API version QEMU ran the plugin with.
    pub api: u32,
    /// vCPUs.
    pub vcpus: u32,
    /// Completed windows, in order.
    pub windows: Vec<Window>,
    /// Whole-run (user, kernel) instructions per vCPU, when QEMU exited normally.
    pub totals: Vec<(u64, u64)>,
    /// What the plugin reported it could not do (and a window cut short by QEMU's end).
    pub errors: Vec<String>,
}

fn field<'a>(w: &[&'a str], key: &str) -> Option<&'a str> {
    w.iter()
        .find_map(|x| x.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

fn num<T: std::str::FromStr>(s: Option<&&str>) -> Option<T> {
    s.and_then(|s| s.parse().ok())
}

/// The vCPU entry `v` of `w`, grown as needed (bounded by the header's vCPU count).
fn vcpu(w: &mut Window, v: usize, vcpus: u32) -> Option<&mut VcpuCounts> {
    if v >= vcpus.max(1) as usize {
        return None;
    }
    if w.vcpus.len() <= v {
        w.vcpus.resize_with(v + 1, VcpuCounts::default);
    }
    w.vcpus.get_mut(v)
}

impl Output {
    /// Parses an output file; a malformed line is an error naming it.
    pub fn parse(text: &str) -> Result<Output, String> {
        let mut o = Output::default();
        let mut open: Option<Window> = None;
        for (n, line) in text.lines().enumerate() {
            let bad = || format!("line {}: cannot read {line:?}", n + 1);
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.first().copied() {
                None => {}
                Some("H") => {
                    o.api = field(&w, "api")
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(bad)?;
                    o.vcpus = field(&w, "vcpus")
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(bad)?;
                }
                Some("W") => {
                    if let Some(prev) = open.take() {
                        o.errors
                            .push(format!("window {} has no end record", prev.id));
                    }
                    let f = |k| field(&w, k).and_then(|s| s.parse::<u32>().ok());
                    open = Some(Window {
                        id: f("id").and_then(|x| u8::try_from(x).ok()).ok_or_else(bad)?,
                        begin_vcpu: f("begin_vcpu").ok_or_else(bad)?,
                        end_vcpu: f("end_vcpu").ok_or_else(bad)?,
                        named_ready: f("named").ok_or_else(bad)? == 1,
                        vcpus: Vec::new(),
                    });
                }
                Some("U" | "K" | "I") => {
                    let win = open.as_mut().ok_or_else(bad)?;
                    let v: usize = num(w.get(1)).ok_or_else(bad)?;
                    let c = vcpu(win, v, o.vcpus).ok_or_else(bad)?;
                    match (w[0], w.len()) {
                        ("U", 3) => c.user = num(w.get(2)).ok_or_else(bad)?,
                        ("K", 5) => c.blocks.push(Block {
                            vaddr: hex(w[2]).ok_or_else(bad)?,
                            insns: num(w.get(3)).ok_or_else(bad)?,
                            execs: num(w.get(4)).ok_or_else(bad)?,
                        }),
                        ("I", 4) => c
                            .inclusive
                            .push((w[2].to_owned(), num(w.get(3)).ok_or_else(bad)?)),
                        _ => return Err(bad()),
                    }
                }
                Some("E") => {
                    let win = open.take().ok_or_else(bad)?;
                    if field(&w, "id").and_then(|s| s.parse::<u8>().ok()) != Some(win.id) {
                        return Err(bad());
                    }
                    o.windows.push(win);
                }
                Some("X") => o.errors.push(line[1..].trim().to_owned()),
                Some("T") if w.len() == 4 => {
                    let v: usize = num(w.get(1)).ok_or_else(bad)?;
                    if v >= o.vcpus as usize {
                        return Err(bad());
                    }
                    o.totals.resize(o.vcpus as usize, (0, 0));
                    o.totals[v] = (
                        num(w.get(2)).ok_or_else(bad)?,
                        num(w.get(3)).ok_or_else(bad)?,
                    );
                }
                _ => return Err(bad()),
            }
        }
        if let Some(w) = open {
            o.errors.push(format!(
                "window {} has no end record (QEMU stopped inside it)",
                w.id
            ));
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_bytes_round_trip_and_nothing_else_is_a_marker() {
        for id in 0..=255u8 {
            assert_eq!(marker_id(&marker_bytes(id)), Some(id));
        }
        // The kernel's own padding NOP `nopl 0x0(%rax)` is not a marker.
        assert_eq!(marker_id(&[0x0f, 0x1f, 0x80, 0, 0, 0, 0]), None);
        assert_eq!(marker_id(&marker_bytes(3)[..6]), None);
    }

    #[test]
    fn marker_ids_split_into_config_begin_and_end() {
        assert_eq!(Mark::from_id(0), Some(Mark::Config));
        assert_eq!(Mark::from_id(1), Some(Mark::Begin(1)));
        assert_eq!(Mark::from_id(126), Some(Mark::Begin(126)));
        assert_eq!(Mark::from_id(129), Some(Mark::End(1)));
        assert_eq!(Mark::from_id(254), Some(Mark::End(126)));
        for unused in [127, 128, 255] {
            assert_eq!(Mark::from_id(unused), None);
        }
        for id in 0..=255u8 {
            if let Some(m) = Mark::from_id(id) {
                assert_eq!(m.id(), id);
            }
        }
    }

    const KALLSYMS: &str = "ffffffff81000000 T _stext
ffffffff81000010 T __entry_text_start
ffffffff8100230b T __entry_text_end
ffffffff81000230 T __irqentry_text_start
ffffffff81001850 T __irqentry_text_end
ffffffff81100000 T delay_tsc
ffffffff81100080 t delay_loop
ffffffff81100100 T __const_udelay
ffffffff81200000 T native_queued_spin_lock_slowpath
ffffffff81200400 T queued_read_lock_slowpath
ffffffff81200800 T irq_exit_rcu
ffffffff81300000 t __mutex_lock.constprop.0
ffffffff818221b0 T vfs_read
ffffffff818221a0 t __pfx_vfs_read
ffffffff82a00000 D jiffies
0000000000000000 T hidden
ffffffffc0a01000 t igb_update_stats\t[igb]
ffffffffc0b01000 t igb_update_stats\t[igbvf]
ffffffffc0a00000 T igb_probe\t[igb]
";

    #[test]
    fn kallsyms_text_symbols_sorted_and_looked_up() {
        let s = Symbols::parse(KALLSYMS);
        assert_eq!(s.len(), 17, "data and zero-address symbols are skipped");
        let (sym, off) = s.lookup(0xffff_ffff_8182_21c4).unwrap();
        assert_eq!((sym.qualified().as_str(), off), ("vfs_read", 0x14));
        let (sym, off) = s.lookup(0xffff_ffff_c0a0_1010).unwrap();
        assert_eq!(
            (sym.qualified().as_str(), off),
            ("igb:igb_update_stats", 0x10)
        );
        assert!(s.lookup(0x1000).is_none());
        assert_eq!(s.addresses("igb:igb_update_stats"), [0xffff_ffff_c0a0_1000]);
        assert_eq!(s.addresses("vfs_read"), [0xffff_ffff_8182_21b0]);
        assert!(
            s.addresses("igb_update_stats").is_empty(),
            "a module's needs its name"
        );
    }

    #[test]
    fn the_config_names_what_it_did_not_find_and_bounds_the_entry_code() {
        let s = Symbols::parse(KALLSYMS);
        let names = [
            "vfs_read".to_owned(),
            "igb:igb_update_stats".into(),
            "nope".into(),
        ];
        let (c, missing) = Config::new(&s, &names);
        assert_eq!(
            c.functions[0],
            ("vfs_read".into(), vec![0xffff_ffff_8182_21b0])
        );
        assert_eq!(c.functions[2], ("nope".into(), vec![]));
        assert_eq!(missing, ["nope"]);
        // The entry sections (overlapping here, merged); the time-driven functions, each
        // run of adjacent ones merged: delay_tsc and delay_loop up to __const_udelay
        // (counted: its own arithmetic is work), the two spin slow paths and irq_exit_rcu
        // up to __pfx_vfs_read. irq_exit_rcu mutes the activations it interrupts (not
        // those of the softirqs it runs: crate::frames).
        assert_eq!(c.exclude, [(0xffff_ffff_8100_0010, 0xffff_ffff_8100_230b)]);
        assert_eq!(
            c.timed,
            [
                (0xffff_ffff_8110_0000, 0xffff_ffff_8110_0100),
                (0xffff_ffff_8120_0000, 0xffff_ffff_8182_21a0),
            ]
        );
        assert_eq!(
            c.timed_entries,
            [
                0xffff_ffff_8110_0000,
                0xffff_ffff_8110_0080,
                0xffff_ffff_8120_0000,
                0xffff_ffff_8120_0400,
                0xffff_ffff_8120_0800,
                0xffff_ffff_8130_0000
            ]
        );
        assert_eq!(
            c.sleep_entries,
            [0xffff_ffff_8130_0000],
            "__mutex_lock may sleep"
        );
        assert!(c.excluded(0xffff_ffff_8100_0230));
        assert!(!c.excluded(0xffff_ffff_8110_0090));
        assert!(c.timed_at(0xffff_ffff_8110_0090));
        assert!(!c.timed_at(0xffff_ffff_8110_0100));
        assert!(!c.timed_at(0xffff_ffff_8182_21b0));
        assert!(!c.excluded(0xffff_ffff_8182_21b0));
        assert!(!c.excluded(0xffff_ffff_8100_0000));
    }

    fn window() -> Window {
        Window {
            id: 7,
            begin_vcpu: 1,
            end_vcpu: 0,
            named_ready: true,
            vcpus: vec![
                VcpuCounts {
                    user: 1234,
                    blocks: vec![
                        Block {
                            vaddr: 0xffff_ffff_8100_0000,
                            insns: 5,
                            execs: 10,
                        },
                        Block {
                            vaddr: 0xffff_ffff_8100_0040,
                            insns: 3,
                            execs: 1,
                        },
                    ],
                    inclusive: vec![("__netdev_pick_tx".into(), 999)],
                },
                VcpuCounts::default(),
            ],
        }
    }

    #[test]
    fn output_round_trips_with_totals_and_errors() {
        let mut s = String::from("H api=7 vcpus=2\n");
        window().render(&mut s);
        s.push_str("X config: cannot read /x\nT 0 10 20\nT 1 30 40\n");
        let o = Output::parse(&s).unwrap();
        assert_eq!((o.api, o.vcpus), (7, 2));
        assert_eq!(o.windows, [window()]);
        assert_eq!(o.windows[0].vcpus[0].kernel(), 53);
        assert_eq!(o.totals, [(10, 20), (30, 40)]);
        assert_eq!(o.errors, ["config: cannot read /x"]);
    }

    #[test]
    fn a_window_cut_short_is_reported_and_bad_lines_are_errors() {
        let mut s = String::from("H api=7 vcpus=2\n");
        window().render(&mut s);
        let cut = s.trim_end().rsplit_once('\n').unwrap().0.to_owned();
        let o = Output::parse(&cut).unwrap();
        assert!(o.windows.is_empty());
        assert!(o.errors[0].contains("window 7 has no end record"));
        Output::parse("H api=7 vcpus=1\nU 0 5\n").unwrap_err(); // U outside a window
        let vcpu_out_of_range = "H api=7 vcpus=1\nW id=1 begin_vcpu=0 end_vcpu=0 named=0\nU 5 1\n";
        Output::parse(vcpu_out_of_range).unwrap_err();
        let wrong_end = "H api=7 vcpus=1\nW id=1 begin_vcpu=0 end_vcpu=0 named=0\nE id=2\n";
        Output::parse(wrong_end).unwrap_err();
    }
}
