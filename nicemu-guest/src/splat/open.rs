// SPDX-License-Identifier: Apache-2.0
//! A report being read: its lines (at most [`MAX_LINES`]), the frames and `RIP:` lines the
//! culprit is taken from, where its call trace is, and which lines and headers belong to it.

use super::header::Header;
use super::line;
use super::model::{Frame, Kind};

/// Lines of text kept per report (the state machine still follows the rest).
pub const MAX_LINES: usize = 400;
/// The kernel's marker before a `WARN()`/`BUG()` report.
pub const CUT_HERE: &str = "------------[ cut here ]------------";

/// A report being read.
#[derive(Debug, Clone)]
pub struct Open {
    /// The header (kind and title may change when a continuation header arrives).
    pub header: Header,
    /// Lines so far (messages without timestamps).
    pub lines: Vec<String>,
    /// Lines beyond [`MAX_LINES`] not kept.
    pub clipped: usize,
    /// Guest seconds of the first line.
    pub secs: Option<f64>,
    /// The section the report started in.
    pub during: String,
    /// Kernel-mode `RIP:` lines' functions, in order.
    pub rips: Vec<Frame>,
    /// Reliable frames of the first `Call Trace:` block.
    pub trace: Vec<Frame>,
    /// Reliable frames outside any `Call Trace:` block (kmemleak, KFENCE, ref_tracker).
    pub loose: Vec<Frame>,
    /// 0: no `Call Trace:` yet; 1: in the first one; 2: after it.
    pub(super) trace_state: u8,
    /// In a call trace now (frames, stack markers, registers).
    pub(super) in_trace: bool,
    /// A call trace has ended.
    pub(super) trace_done: bool,
}

impl Open {
    pub(super) fn new(header: Header, first: Vec<String>, secs: Option<f64>, during: &str) -> Self {
        Open {
            header,
            lines: first,
            clipped: 0,
            secs,
            during: during.to_owned(),
            rips: Vec::new(),
            trace: Vec::new(),
            loose: Vec::new(),
            trace_state: 0,
            in_trace: false,
            trace_done: false,
        }
    }

    pub(super) fn push(&mut self, msg: &str) {
        if self.lines.len() < MAX_LINES {
            self.lines.push(msg.to_owned());
        } else {
            self.clipped += 1;
        }
    }

    /// True if the report is whole without an end line: its call trace ended, or its kind
    /// has no trace (a NETDEV WATCHDOG line) or lists frames without one (kmemleak).
    pub(super) fn whole_without_end(&self) -> bool {
        match self.header.kind {
            Kind::NetdevWatchdog | Kind::NetdevRefLeak => true,
            Kind::Kmemleak => !self.loose.is_empty(),
            k => !k.has_end_marker() && self.trace_done,
        }
    }

    /// Takes a body line; returns false when the line is not part of the report (which then
    /// ends, whole).
    pub(super) fn take(&mut self, msg: &str) -> bool {
        let kind = self.header.kind;
        if matches!(kind, Kind::Kmemleak | Kind::NetdevRefLeak) {
            return self.take_indented(msg);
        }
        if kind == Kind::NetdevWatchdog {
            return false;
        }
        let t = msg.trim();
        if t == "Call Trace:" {
            self.in_trace = true;
            self.trace_state = self.trace_state.max(1);
            self.push(msg);
            return true;
        }
        if self.in_trace {
            if line::trace_line(msg) {
                self.note_frame(msg);
                self.push(msg);
                if t == "</TASK>" {
                    self.end_trace();
                }
                return true;
            }
            self.end_trace();
            if !kind.has_end_marker() {
                return false;
            }
        }
        if let Some(r) = line::rip(msg) {
            if self.trace_state == 0 {
                self.rips.push(r);
            }
        } else if let Some((f, true)) = line::frame(msg) {
            self.loose.push(f);
        }
        if kind == Kind::SuspiciousRcuUsage && self.header.location.is_none() {
            // "FILE:LINE suspicious rcu_dereference_check() usage!"
            if let Some(first) = t.split_whitespace().next().filter(|w| w.contains(".c:")) {
                self.header.location = Some(first.to_owned());
            }
        }
        self.push(msg);
        true
    }

    /// kmemleak and ref_tracker blocks: indented lines (the `comm`, hex dump and backtrace
    /// of kmemleak; ref_tracker's frames), and ref_tracker's own lines.
    pub(super) fn take_indented(&mut self, msg: &str) -> bool {
        let m = msg.strip_prefix("kmemleak: ").unwrap_or(msg);
        if !(m.starts_with(' ') || m.is_empty() || m.starts_with("ref_tracker: ")) {
            return false;
        }
        if let Some((f, true)) = line::frame(m) {
            self.loose.push(f);
        }
        self.push(msg);
        true
    }

    /// A frame of a call trace (a `RIP:` line inside one is an interrupted context, not
    /// the report's own instruction pointer).
    pub(super) fn note_frame(&mut self, msg: &str) {
        if line::rip(msg).is_some() {
            return;
        }
        if let Some((f, reliable)) = line::frame(msg) {
            if reliable && self.trace_state == 1 {
                self.trace.push(f);
            }
        }
    }

    pub(super) fn end_trace(&mut self) {
        self.in_trace = false;
        self.trace_done = true;
        if self.trace_state == 1 {
            self.trace_state = 2;
        }
    }

    /// True while a header of `next`'s kind continues this report rather than starting one.
    pub(super) fn continues_with(&self, next: &Header) -> bool {
        if self.trace_state != 0 && next.kind != Kind::NetdevRefLeak {
            return false;
        }
        match (self.header.kind, next.kind) {
            (Kind::PageFault | Kind::KernelBug, Kind::Oops | Kind::GeneralProtectionFault) => true,
            (Kind::ListCorruption, Kind::KernelBug | Kind::Oops | Kind::Warning) => true,
            (Kind::Refcount, Kind::Warning) => true,
            // The kernel repeats the line every 10 s while the reference is held.
            (Kind::NetdevRefLeak, Kind::NetdevRefLeak) => true,
            _ => false,
        }
    }

    /// Takes a continuation header's line (and what it names).
    pub(super) fn absorb(&mut self, next: Header, msg: &str) {
        if self.header.func.is_none() {
            self.header.func = next.func;
        }
        if self.header.location.is_none() {
            self.header.location = next.location;
        }
        self.push(msg);
    }
}
