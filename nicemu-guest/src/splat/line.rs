// SPDX-License-Identifier: Apache-2.0
//! One console line: the kernel's `[ seconds]` timestamp (`CONFIG_PRINTK_TIME`) and caller id
//! (`CONFIG_PRINTK_CALLER`: `[T123]`, `[C1]`) split off the message, and the frames and
//! `RIP:` lines of call traces (`printk_stack_address()`'s `%pS`: `func+0xOFF/0xSIZE [mod]`).

use std::sync::LazyLock;

use regex::Regex;

use super::model::Frame;

/// Longest message kept of one console line; the rest is dropped (a guest may print
/// anything).
pub const MAX_LINE: usize = 1024;

static STAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[\s*(\d{1,9}\.\d{1,9})\](?:\[\s*[CT]\d+\])? ?").expect("valid regex")
});

/// `func+0xoff/0xsize [module buildid]`, with kmemleak's old `[<address>]` prefix or the
/// `?` of an unreliable frame before it.
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:\[<[0-9a-f]+>\]\s*)?(\?\s+)?([A-Za-z0-9_.$]+)\+0x([0-9a-f]+)/0x([0-9a-f]+)(?:\s+\[([A-Za-z0-9_]+)[^\]]*\])?\s*$",
    )
    .expect("valid regex")
});

/// `RIP: 0010:func+0xoff/0xsize [module]` (a kernel-mode instruction pointer).
static RIP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^RIP: [0-9a-f]{4}:([A-Za-z0-9_.$]+)\+0x([0-9a-f]+)/0x([0-9a-f]+)(?:\s+\[([A-Za-z0-9_]+)[^\]]*\])?",
    )
    .expect("valid regex")
});

/// A console line split into timestamp and message.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine<'a> {
    /// The kernel's timestamp in seconds, when the line has one.
    pub secs: Option<f64>,
    /// The message (the whole line without a timestamp), without trailing CR/LF, at most
    /// [`MAX_LINE`] bytes.
    pub msg: &'a str,
}

/// Splits `raw` at the first kernel timestamp (anything before it, e.g. the end of a
/// userspace line the kernel's line interrupted, is dropped).
pub fn split(raw: &str) -> LogLine<'_> {
    let raw = raw.trim_end_matches(['\r', '\n']);
    let (secs, msg) = match STAMP.captures(raw) {
        Some(c) => {
            let whole = c.get(0).map_or(0..0, |m| m.range());
            (c[1].parse().ok(), &raw[whole.end..])
        }
        None => (None, raw),
    };
    LogLine {
        secs,
        msg: clip(msg, MAX_LINE),
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
pub fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A call-trace frame line; `.1` is false for an unreliable (`?`) frame.
pub fn frame(msg: &str) -> Option<(Frame, bool)> {
    let c = FRAME.captures(msg)?;
    Some((
        Frame {
            func: c[2].to_owned(),
            offset: u64::from_str_radix(&c[3], 16).ok()?,
            size: u64::from_str_radix(&c[4], 16).ok()?,
            module: c.get(5).map(|m| m.as_str().to_owned()),
            location: Vec::new(),
        },
        c.get(1).is_none(),
    ))
}

/// The function of a kernel-mode `RIP:` line.
pub fn rip(msg: &str) -> Option<Frame> {
    let c = RIP.captures(msg.trim_start())?;
    Some(Frame {
        func: c[1].to_owned(),
        offset: u64::from_str_radix(&c[2], 16).ok()?,
        size: u64::from_str_radix(&c[3], 16).ok()?,
        module: c.get(4).map(|m| m.as_str().to_owned()),
        location: Vec::new(),
    })
}

/// `func+0xoff/0xsize [mod]` anywhere in `s` (a header's "at FUNC…" / "in FUNC…").
pub fn symbol_in(s: &str) -> Option<Frame> {
    s.split(|c: char| c.is_whitespace() || c == ',')
        .enumerate()
        .find_map(|(i, word)| {
            let (f, _) = frame(word)?;
            let module = s
                .split(|c: char| c.is_whitespace() || c == ',')
                .nth(i + 1)
                .and_then(|w| w.strip_prefix('['))
                .map(|w| w.trim_end_matches(']').to_owned());
            Some(Frame { module, ..f })
        })
}

/// True for the lines a call trace is made of besides frames: the stack markers
/// (`<IRQ>`, `</TASK>`, …), registers of an entry frame, `Code:`, and the
/// `Modules linked in:` line.
pub fn trace_line(msg: &str) -> bool {
    let t = msg.trim();
    if frame(t).is_some() {
        return true;
    }
    if t.starts_with('<') && t.ends_with('>') && t.len() <= 16 {
        return true;
    }
    const REGS: [&str; 15] = [
        "RIP:",
        "Code:",
        "RSP:",
        "RAX:",
        "RDX:",
        "RBP:",
        "R10:",
        "R13:",
        "FS:",
        "CS:",
        "CR2:",
        "DR0:",
        "DR3:",
        "PKRU:",
        "Modules linked in:",
    ];
    REGS.iter().any(|r| t.starts_with(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_caller_ids_are_split_off() {
        let l = split("[   12.236598] WARNING: at foo\r\n");
        assert_eq!(l.secs, Some(12.236598));
        assert_eq!(l.msg, "WARNING: at foo");
        let l = split("[ 1081.418714][    C3] irq 4: nobody cared");
        assert_eq!((l.secs, l.msg), (Some(1081.418714), "irq 4: nobody cared"));
        // The end of a userspace line the kernel's line interrupted.
        let l = split("@@NICEMU-OUT probe eth[    5.1] BUG: x");
        assert_eq!((l.secs, l.msg), (Some(5.1), "BUG: x"));
        let l = split("unreferenced object 0xffff8880 (size 8):");
        assert_eq!(
            (l.secs, l.msg),
            (None, "unreferenced object 0xffff8880 (size 8):")
        );
        let long = format!("[    1.0] {}", "é".repeat(MAX_LINE));
        assert!(split(&long).msg.len() <= MAX_LINE);
    }

    #[test]
    fn frames_rip_and_symbols() {
        let (f, reliable) = frame(" igb_xmit_frame+0x47/0x70 [igb]").unwrap();
        assert!(reliable);
        assert_eq!(
            (f.func.as_str(), f.offset, f.size, f.module.as_deref()),
            ("igb_xmit_frame", 0x47, 0x70, Some("igb"))
        );
        let (f, reliable) = frame(" ? __warn.cold+0xb7/0x14f").unwrap();
        assert!(!reliable);
        assert_eq!((f.func.as_str(), f.module), ("__warn.cold", None));
        let (f, _) = frame("    [<ffffffffb2131db6>] kmalloc_trace_noprof+0x236/0x290").unwrap();
        assert_eq!(f.func, "kmalloc_trace_noprof");
        let (f, _) = frame("  foo+0x1/0x2 [igb 0123456789abcdef]").unwrap();
        assert_eq!(f.module.as_deref(), Some("igb"));
        // lockdep's held-lock lines are not frames.
        assert!(frame(
            " #0: ffff888006c1a0c8 (&p->lock){+.+.}-{4:4}, at: seq_read_iter+0x5a/0x4a0"
        )
        .is_none());
        let r = rip("RIP: 0010:igb_xmit_frame_ring+0x3b/0x990 [igb]").unwrap();
        assert_eq!(
            (r.func.as_str(), r.module.as_deref()),
            ("igb_xmit_frame_ring", Some("igb"))
        );
        assert!(rip("RIP: 0033:0x7f2c6a6ea4b7").is_none());
        let s = symbol_in("drivers/x.c:1 at igb_xmit_frame_ring+0x3b/0x990 [igb], CPU#0: ping/412")
            .unwrap();
        assert_eq!(
            (s.func.as_str(), s.module.as_deref()),
            ("igb_xmit_frame_ring", Some("igb"))
        );
        let s = symbol_in("lib/refcount.c:28 at refcount_warn_saturate+0xbe/0x110, CPU#1: ip/655")
            .unwrap();
        assert_eq!(
            (s.func.as_str(), s.module),
            ("refcount_warn_saturate", None)
        );
    }

    #[test]
    fn trace_lines() {
        for l in [
            " <IRQ>",
            " </TASK>",
            "RIP: 0033:0x7f",
            "RAX: 0",
            "Code: 48 89",
            " dev_get_stats+0x102/0x5a0",
        ] {
            assert!(trace_line(l), "{l}");
        }
        for l in [
            "irq event stamp: 118922",
            "Allocated by task 702 on cpu 1 at 98.221304s:",
            "",
        ] {
            assert!(!trace_line(l), "{l}");
        }
    }
}
