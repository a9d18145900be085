// SPDX-License-Identifier: Apache-2.0
//! What a splat is: its kind, the frames of its call trace, the ignore-list entry that
//! accepted it, and the splat record reports and results.json carry.

use serde::{Deserialize, Serialize};

/// The kind of a kernel report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `WARNING: FILE:LINE at FUNC…` (`WARN_ON()` and friends).
    Warning,
    /// `BUG: sleeping function called from invalid context` (`might_sleep()` in atomic context).
    SleepInAtomic,
    /// `BUG: scheduling while atomic`.
    SchedulingWhileAtomic,
    /// `BUG: soft lockup - CPU#N stuck for Ns!`.
    SoftLockup,
    /// `Watchdog detected hard LOCKUP on cpu N`.
    HardLockup,
    /// `BUG: kernel NULL pointer dereference` / `BUG: unable to handle page fault`.
    PageFault,
    /// `kernel BUG at FILE:LINE!` (`BUG()` / `BUG_ON()`).
    KernelBug,
    /// `Oops: …` without a preceding `BUG:` line.
    Oops,
    /// `Oops: general protection fault`.
    GeneralProtectionFault,
    /// `Kernel panic - not syncing: …`.
    Panic,
    /// lockdep: circular or recursive locking, inconsistent lock state, bad unlock balance, …
    Lockdep,
    /// lockdep's RCU checker: `WARNING: suspicious RCU usage`.
    SuspiciousRcuUsage,
    /// `BUG: KASAN: …`.
    Kasan,
    /// `UBSAN: …`.
    Ubsan,
    /// `BUG: KFENCE: …`.
    Kfence,
    /// kmemleak's `unreferenced object 0x… (size N)`.
    Kmemleak,
    /// `INFO: task COMM:PID blocked for more than N seconds.`
    HungTask,
    /// `NETDEV WATCHDOG: … transmit queue N timed out`.
    NetdevWatchdog,
    /// `refcount_t: …` (saturation, underflow, use-after-free).
    Refcount,
    /// `list_add corruption` / `list_del corruption` (`CONFIG_DEBUG_LIST`).
    ListCorruption,
    /// `rcu: INFO: rcu_preempt detected stalls` / `self-detected stall`.
    RcuStall,
    /// `unregister_netdevice: waiting for DEV to become free` (a leaked netdev reference).
    NetdevRefLeak,
    /// Any other `BUG: …` line.
    Bug,
}

impl Kind {
    /// Every kind, for `list` and the ignore file's documentation.
    pub const ALL: [Kind; 23] = [
        Kind::Warning,
        Kind::SleepInAtomic,
        Kind::SchedulingWhileAtomic,
        Kind::SoftLockup,
        Kind::HardLockup,
        Kind::PageFault,
        Kind::KernelBug,
        Kind::Oops,
        Kind::GeneralProtectionFault,
        Kind::Panic,
        Kind::Lockdep,
        Kind::SuspiciousRcuUsage,
        Kind::Kasan,
        Kind::Ubsan,
        Kind::Kfence,
        Kind::Kmemleak,
        Kind::HungTask,
        Kind::NetdevWatchdog,
        Kind::Refcount,
        Kind::ListCorruption,
        Kind::RcuStall,
        Kind::NetdevRefLeak,
        Kind::Bug,
    ];

    /// The name used in JSON and in the ignore file ("sleep-in-atomic").
    pub fn name(self) -> &'static str {
        match self {
            Kind::Warning => "warning",
            Kind::SleepInAtomic => "sleep-in-atomic",
            Kind::SchedulingWhileAtomic => "scheduling-while-atomic",
            Kind::SoftLockup => "soft-lockup",
            Kind::HardLockup => "hard-lockup",
            Kind::PageFault => "page-fault",
            Kind::KernelBug => "kernel-bug",
            Kind::Oops => "oops",
            Kind::GeneralProtectionFault => "general-protection-fault",
            Kind::Panic => "panic",
            Kind::Lockdep => "lockdep",
            Kind::SuspiciousRcuUsage => "suspicious-rcu-usage",
            Kind::Kasan => "kasan",
            Kind::Ubsan => "ubsan",
            Kind::Kfence => "kfence",
            Kind::Kmemleak => "kmemleak",
            Kind::HungTask => "hung-task",
            Kind::NetdevWatchdog => "netdev-watchdog",
            Kind::Refcount => "refcount",
            Kind::ListCorruption => "list-corruption",
            Kind::RcuStall => "rcu-stall",
            Kind::NetdevRefLeak => "netdev-ref-leak",
            Kind::Bug => "bug",
        }
    }

    /// True if the kernel prints an end line for this kind (`---[ end trace …]---`, the
    /// closing `=====` of KASAN and KFENCE, `---[ end Kernel panic …]---`); without it the
    /// report ends with its call trace.
    pub fn has_end_marker(self) -> bool {
        matches!(
            self,
            Kind::Warning
                | Kind::PageFault
                | Kind::KernelBug
                | Kind::Oops
                | Kind::GeneralProtectionFault
                | Kind::Panic
                | Kind::Kasan
                | Kind::Ubsan
                | Kind::Kfence
                | Kind::Refcount
                | Kind::ListCorruption
        )
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One frame of a call trace: `func+0xOFF/0xSIZE [module]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Symbol as printed ("igb_xmit_frame", "__might_resched.cold").
    pub func: String,
    /// Offset into the symbol.
    pub offset: u64,
    /// The symbol's size.
    pub size: u64,
    /// Module the symbol is in (`None`: the kernel image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Source lines of the address as `faddr2line` gives them, innermost inlined function
    /// first, the frame's own function last ("igb_get_stats64 at drivers/net/…/igb_main.c:6692");
    /// empty when not decoded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub location: Vec<String>,
}

impl Frame {
    /// `func+0xoff/0xsize`, the form `faddr2line` takes.
    pub fn symbol(&self) -> String {
        format!("{}+{:#x}/{:#x}", self.func, self.offset, self.size)
    }

    /// The frame's own source line ("drivers/net/…/igb_main.c:6692"), when decoded.
    pub fn line(&self) -> Option<&str> {
        let last = self.location.last()?;
        Some(last.rsplit_once(" at ").map_or(last.as_str(), |(_, l)| l))
    }

    /// The frame as the kernel prints it, with its decoded lines when known.
    pub fn display(&self) -> String {
        let mut s = self.symbol();
        if let Some(m) = &self.module {
            s.push_str(&format!(" [{m}]"));
        }
        if let Some(l) = self.line() {
            s.push_str(&format!(" at {l}"));
        }
        for inl in self.location.iter().rev().skip(1) {
            s.push_str(&format!("; inlined: {inl}"));
        }
        s
    }
}

/// An ignore-list entry that accepted a splat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignored {
    /// `FILE:LINE` of the entry.
    pub entry: String,
    /// The entry's reason.
    pub reason: String,
}

/// One kernel report found on a guest's console.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Splat {
    /// What kind of report.
    pub kind: Kind,
    /// The report's headline without the varying parts ("BUG: sleeping function called
    /// from invalid context", "WARNING", "BUG: KASAN: slab-use-after-free").
    pub title: String,
    /// Title and culprit: "WARNING in igb_xmit_frame_ring"; equal fingerprints are the same
    /// problem across rounds and kernels.
    pub fingerprint: String,
    /// The culprit: the first function of the report that is not a generic helper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The culprit's module (`None`: the kernel image or unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The culprit's frame (`func+0xOFF/0xSIZE`), decoded where possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<Frame>,
    /// The culprit's source line: its frame decoded, or the line the report names when that
    /// is in the culprit (a WARN's own site, UBSAN's, the RCU checker's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The source line the report names ("kernel BUG at lib/list_debug.c:56", the
    /// might_sleep() site "kernel/locking/mutex.c:580"), which may be a generic helper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// What the guest was doing: "boot", "modules", "net" (setup), a scenario name, "end".
    pub during: String,
    /// Guest seconds (the kernel's timestamp) of the report's first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_secs: Option<f64>,
    /// How often this fingerprint was reported in the cell (the text is the first one's).
    pub count: u32,
    /// The console ended (or another report began) before this report's end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The report as printed (timestamps removed), at most 400 lines (`open::MAX_LINES`).
    pub text: String,
    /// The call trace the culprit was taken from (reliable frames), decoded where possible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<Frame>,
    /// What decoding could and could not do for this report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_note: Option<String>,
    /// Set when an ignore-list entry accepts this splat (then it does not fail the cell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<Ignored>,
}

impl Splat {
    /// "WARNING in igb_xmit_frame_ring (igb_main.c:6533)": the fingerprint with the file
    /// name and line of its location.
    pub fn headline(&self) -> String {
        match &self.location {
            Some(l) => format!("{} ({})", self.fingerprint, short_location(l)),
            None => self.fingerprint.clone(),
        }
    }

    /// One line: "FAIL WARNING in igb_xmit_frame_ring (igb_main.c:6533): warning during ping,
    /// at 12.2 s" (with the count when repeated, the ignore entry when ignored).
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} {}: {} during {}",
            if self.fails() { "FAIL" } else { "IGNORED" },
            self.headline(),
            self.kind,
            self.during
        );
        if let Some(t) = self.at_secs {
            s.push_str(&format!(", at {t:.1} s"));
        }
        if self.count > 1 {
            s.push_str(&format!(", {}×", self.count));
        }
        if self.truncated {
            s.push_str(", truncated");
        }
        if let Some(i) = &self.ignored {
            s.push_str(&format!(" — ignored by {}: {}", i.entry, i.reason));
        }
        s
    }

    /// True if this splat fails its cell (not accepted by the ignore list).
    pub fn fails(&self) -> bool {
        self.ignored.is_none()
    }

    /// The text followed by the decoded call trace, for logs and JUnit's system-out.
    pub fn full_text(&self) -> String {
        let mut s = self.text.clone();
        if self.truncated {
            s.push_str("\n[the console ended before the end of this report]");
        }
        if let Some(c) = self.culprit.as_ref().filter(|c| !c.location.is_empty()) {
            s.push_str(&format!("\n\nculprit: {}", c.display()));
        }
        if self.frames.iter().any(|f| !f.location.is_empty()) {
            s.push_str("\n\ndecoded call trace:\n");
            for f in &self.frames {
                s.push_str(&format!("  {}\n", f.display()));
            }
        }
        if let Some(n) = &self.decode_note {
            s.push_str(&format!("\n{n}\n"));
        }
        s
    }
}

/// "igb_main.c:6533" from "drivers/net/ethernet/intel/igb/igb_main.c:6533".
pub fn short_location(l: &str) -> &str {
    l.rsplit('/').next().unwrap_or(l)
}
