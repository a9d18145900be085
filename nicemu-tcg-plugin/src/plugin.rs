// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! The plugin: QEMU's entry point, the callbacks, and the counters they share.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use crate::ffi::{self, Api, PluginId, QemuInfo, Tb, U64Entry};
use crate::format::{self, Config, Mark, Symbols, Window, KERNEL_START, MARKER_LEN};
use crate::frames::{Frames, Sleeper, MAX_FRAMES};
use crate::regs::{Reg, Regs};
use crate::window::{between, Snapshot};

/// `qemu_plugin_version`: the plugin API version this plugin is written for (QEMU reads
/// it before calling [`qemu_plugin_install`] and refuses a version it does not offer).
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static qemu_plugin_version: c_int = ffi::API_VERSION;

/// A QEMU handle shared between vCPU threads.
#[derive(Debug, Clone, Copy)]
struct Shared<T>(T);
// SAFETY: scoreboard entries are handles QEMU designed for use from every vCPU thread
// (each vCPU writes only its own slot); the plugin only passes them back to QEMU.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above; no plugin code dereferences them.
unsafe impl<T> Sync for Shared<T> {}

/// The plugin's arguments (`-plugin FILE,out=PATH[,ksyms=PATH][,fn=NAME]…`).
#[derive(Debug)]
struct Args {
    out: String,
    ksyms: Option<String>,
    functions: Vec<String>,
}

/// Longest symbol text the configuration marker may hand over.
const MAX_KSYMS: u64 = 256 << 20;

fn parse_args(args: &[String]) -> Result<Args, String> {
    let (mut out, mut ksyms, mut functions) = (None, None, Vec::new());
    for a in args {
        match a.split_once('=') {
            Some(("out", v)) if !v.is_empty() => out = Some(v.to_owned()),
            Some(("ksyms", v)) if !v.is_empty() => ksyms = Some(v.to_owned()),
            Some(("fn", v)) if !v.is_empty() => functions.push(v.to_owned()),
            _ => {
                return Err(format!(
                    "unknown argument {a:?} (it takes out=PATH, ksyms=PATH and fn=NAME)"
                ))
            }
        }
    }
    if functions.len() > format::MAX_FUNCTIONS {
        return Err(format!(
            "{} fn= arguments; at most {} named functions",
            functions.len(),
            format::MAX_FUNCTIONS
        ));
    }
    Ok(Args {
        out: out.ok_or("out=PATH is missing (the file the counts are written to)")?,
        ksyms,
        functions,
    })
}

/// Kernel translation blocks by (address, instructions), each with its counter.
#[derive(Default)]
struct Blocks {
    index: HashMap<(u64, u32), usize>,
    list: Vec<(u64, u32)>,
    counts: Vec<Shared<U64Entry>>,
}

/// The configured named functions.
struct Named {
    names: Vec<String>,
    entries: HashMap<u64, u8>,
    exclude: Vec<(u64, u64)>,
    timed: Vec<(u64, u64)>,
    timed_entries: std::collections::HashSet<u64>,
    sleep_entries: std::collections::HashSet<u64>,
}

/// One vCPU's activations of named functions and its register reader.
struct Vcpu {
    frames: Frames,
    regs: Option<Regs>,
}

struct OpenWindow {
    id: u8,
    vcpu: u32,
    at: Snapshot,
    named: bool,
}

struct State {
    api: Api,
    id: PluginId,
    args: Args,
    max_vcpus: usize,
    /// User-space instructions per vCPU.
    user: Shared<U64Entry>,
    /// Nonzero while a named function is open on the vCPU.
    active: Shared<U64Entry>,
    blocks: Mutex<Blocks>,
    named: RwLock<Option<Arc<Named>>>,
    /// The translation cache was flushed since the configuration arrived: every block
    /// that runs now carries the named functions' instrumentation.
    named_ready: AtomicBool,
    vcpus: Vec<Mutex<Vcpu>>,
    /// Activations of tasks that blocked inside a named function, until a vCPU runs
    /// their stack again; while there are any, every vCPU's kernel blocks report.
    sleepers: Mutex<Vec<Sleeper>>,
    /// `sleepers.len()`, read without the lock.
    sleeping: AtomicUsize,
    window: Mutex<Option<OpenWindow>>,
    out: Mutex<File>,
    reported: Mutex<Vec<&'static str>>,
}

static STATE: OnceLock<State> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// QEMU's entry point: checks the API and the machine, opens the output, registers the
/// translation and exit callbacks. Returns 0, or -1 after printing why to stderr.
///
/// # Safety
/// Called by QEMU with a valid `info` and `argc` argument strings.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: PluginId,
    info: *const QemuInfo,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    let args: Vec<String> = (0..usize::try_from(argc).unwrap_or(0))
        // SAFETY: QEMU passes `argc` valid C strings in `argv`.
        .map(|i| unsafe { CStr::from_ptr(*argv.add(i)) })
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    // SAFETY: QEMU passes a valid info block, live during this call.
    match install(id, unsafe { info.as_ref() }, &args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("nicemu-tcg-plugin: {e}");
            -1
        }
    }
}

fn check_machine(info: Option<&QemuInfo>) -> Result<usize, String> {
    let info = info.ok_or("QEMU passed no system information")?;
    if !(info.version_min..=info.version_cur).contains(&ffi::API_VERSION) {
        return Err(format!(
            "this QEMU offers plugin API versions {}..={}; nicemu-tcg-plugin is written for \
             version {} (QEMU 11.1): rebuild it for this QEMU's API",
            info.version_min,
            info.version_cur,
            ffi::API_VERSION
        ));
    }
    // SAFETY: QEMU's target name is a C string living as long as QEMU.
    let target = unsafe { info.target_name.as_ref().map(|p| CStr::from_ptr(p)) };
    if target.map(CStr::to_bytes) != Some(b"x86_64") {
        return Err(format!(
            "the guest is {:?}; nicemu-tcg-plugin counts x86_64 guests",
            target.map(CStr::to_string_lossy)
        ));
    }
    if !info.system_emulation {
        return Err("needs full-system emulation (qemu-system-x86_64), not user mode".into());
    }
    Ok(usize::try_from(info.max_vcpus.max(info.smp_vcpus).max(1)).unwrap_or(1))
}

fn install(id: PluginId, info: Option<&QemuInfo>, argv: &[String]) -> Result<(), String> {
    let max_vcpus = check_machine(info)?;
    let api = Api::resolve()?;
    let args = parse_args(argv)?;
    let mut out =
        File::create(&args.out).map_err(|e| format!("cannot create {}: {e}", args.out))?;
    writeln!(out, "H api={} vcpus={max_vcpus}", ffi::API_VERSION)
        .map_err(|e| format!("cannot write {}: {e}", args.out))?;
    // SAFETY: scoreboards of one u64 per vCPU, owned by the plugin for QEMU's lifetime.
    let (user, active) = unsafe {
        (
            U64Entry::whole((api.scoreboard_new)(8)),
            U64Entry::whole((api.scoreboard_new)(8)),
        )
    };
    let state = State {
        api,
        id,
        args,
        max_vcpus,
        user: Shared(user),
        active: Shared(active),
        blocks: Mutex::new(Blocks::default()),
        named: RwLock::new(None),
        named_ready: AtomicBool::new(false),
        vcpus: (0..max_vcpus)
            .map(|_| {
                Mutex::new(Vcpu {
                    frames: Frames::new(0),
                    regs: None,
                })
            })
            .collect(),
        sleepers: Mutex::new(Vec::new()),
        sleeping: AtomicUsize::new(0),
        window: Mutex::new(None),
        out: Mutex::new(out),
        reported: Mutex::new(Vec::new()),
    };
    STATE
        .set(state)
        .map_err(|_| "loaded twice in one QEMU".to_owned())?;
    register(&api, id);
    Ok(())
}

/// Registers the translation and exit callbacks (again after a reset).
fn register(api: &Api, id: PluginId) {
    // SAFETY: plain registrations with callbacks of the version-7 signatures.
    unsafe {
        (api.register_vcpu_tb_trans_cb)(id, on_translate, std::ptr::null_mut());
        (api.register_atexit_cb)(id, on_exit, std::ptr::null_mut());
    }
}

unsafe extern "C" fn on_translate(tb: *mut Tb, _userdata: *mut c_void) {
    if let Some(s) = STATE.get() {
        // SAFETY: QEMU passes a valid block handle for the duration of the callback.
        unsafe { s.translate(tb) };
    }
}

unsafe extern "C" fn on_exit() {
    if let Some(s) = STATE.get() {
        s.totals();
    }
}

unsafe extern "C" fn on_reset_done() {
    if let Some(s) = STATE.get() {
        register(&s.api, s.id);
        s.named_ready.store(true, Ordering::Release);
    }
}

unsafe extern "C" fn on_marker(vcpu: u32, userdata: *mut c_void) {
    let Some(s) = STATE.get() else { return };
    match Mark::from_id(userdata as usize as u8) {
        // SAFETY: registered with R_REGS, running on `vcpu`'s thread.
        Some(Mark::Config) => unsafe { s.configure(vcpu) },
        Some(Mark::Begin(n)) => s.begin(n, vcpu),
        Some(Mark::End(n)) => s.end(n, vcpu),
        None => {}
    }
}

/// What a kernel block reporting its stack pointer is.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// The entry block of named function `.0`, of `.1` instructions.
    Entry(u8, u32),
    /// The entry block of a time-driven function, of `.0` instructions, that may block
    /// (`.1`).
    Timed(u32, bool),
    /// Any other block, of `.0` instructions, time-driven code or not (`.1`).
    Block(u32, bool),
}

/// The userdata of a time-driven entry block: its instructions, and bit 32 set when the
/// function may block ([`crate::timed::Timed::Wait`]).
fn timed_data(insns: u32, blocks: bool) -> *mut c_void {
    block_data(insns, blocks)
}

/// Userdata of an entry block: function index and the block's instructions.
fn entry_data(f: u8, insns: u32) -> *mut c_void {
    ((usize::from(f) << 32) | insns as usize) as *mut c_void
}

unsafe extern "C" fn on_entry(vcpu: u32, userdata: *mut c_void) {
    let d = userdata as usize;
    if let Some(s) = STATE.get() {
        // SAFETY: registered with R_REGS, running on `vcpu`'s thread.
        unsafe { s.frame_event(vcpu, Event::Entry((d >> 32) as u8, d as u32)) };
    }
}

unsafe extern "C" fn on_timed_entry(vcpu: u32, userdata: *mut c_void) {
    if let Some(s) = STATE.get() {
        let d = userdata as usize;
        // SAFETY: registered with R_REGS, running on `vcpu`'s thread.
        unsafe { s.frame_event(vcpu, Event::Timed(d as u32, d >> 32 != 0)) };
    }
}

/// Userdata of a block reporting while activations are open: its instructions, and
/// bit 32 set when it is time-driven code.
fn block_data(insns: u32, timed: bool) -> *mut c_void {
    ((usize::from(timed) << 32) | insns as usize) as *mut c_void
}

unsafe extern "C" fn on_block(vcpu: u32, userdata: *mut c_void) {
    if let Some(s) = STATE.get() {
        let d = userdata as usize;
        // SAFETY: registered with R_REGS, running on `vcpu`'s thread.
        unsafe { s.frame_event(vcpu, Event::Block(d as u32, d >> 32 != 0)) };
    }
}

impl State {
    /// Instruments one new translation block.
    ///
    /// # Safety
    /// `tb` is the block QEMU is translating.
    unsafe fn translate(&self, tb: *mut Tb) {
        let api = &self.api;
        // SAFETY: queries and registrations on the block being translated.
        unsafe {
            let n = (api.tb_n_insns)(tb);
            let vaddr = (api.tb_vaddr)(tb);
            let Ok(insns) = u32::try_from(n) else { return };
            if insns == 0 {
                return;
            }
            if vaddr < KERNEL_START {
                (api.register_vcpu_tb_exec_inline_per_vcpu)(
                    tb,
                    ffi::INLINE_ADD_U64,
                    self.user.0,
                    u64::from(insns),
                );
                self.find_markers(tb, n);
                return;
            }
            let counter = self.counter(vaddr, insns);
            (api.register_vcpu_tb_exec_inline_per_vcpu)(tb, ffi::INLINE_ADD_U64, counter, 1);
            let named = self.named.read().unwrap_or_else(|e| e.into_inner()).clone();
            let Some(named) = named else { return };
            if let Some(&f) = named.entries.get(&vaddr) {
                let ud = entry_data(f, insns);
                (api.register_vcpu_tb_exec_cb)(tb, on_entry, ffi::CB_R_REGS, ud);
            } else if named.timed_entries.contains(&vaddr) {
                (api.register_vcpu_tb_exec_cond_cb)(
                    tb,
                    on_timed_entry,
                    ffi::CB_R_REGS,
                    ffi::COND_NE,
                    self.active.0,
                    0,
                    timed_data(insns, named.sleep_entries.contains(&vaddr)),
                );
            } else if !format::in_ranges(&named.exclude, vaddr) {
                let timed = format::in_ranges(&named.timed, vaddr);
                let ud = block_data(insns, timed);
                (api.register_vcpu_tb_exec_cond_cb)(
                    tb,
                    on_block,
                    ffi::CB_R_REGS,
                    ffi::COND_NE,
                    self.active.0,
                    0,
                    ud,
                );
            }
        }
    }

    /// Registers the marker callback on each marker instruction of a user block.
    ///
    /// # Safety
    /// `tb` is the block QEMU is translating, with `n` instructions.
    unsafe fn find_markers(&self, tb: *mut Tb, n: usize) {
        let api = &self.api;
        for i in 0..n {
            let mut bytes = [0u8; MARKER_LEN];
            // SAFETY: instruction `i` of the block; its bytes are copied into `bytes`.
            let id = unsafe {
                let insn = (api.tb_get_insn)(tb, i);
                if (api.insn_size)(insn) != MARKER_LEN {
                    continue;
                }
                let got = (api.insn_data)(insn, bytes.as_mut_ptr().cast(), MARKER_LEN);
                if got != MARKER_LEN {
                    continue;
                }
                match format::marker_id(&bytes) {
                    Some(id) => (insn, id),
                    None => continue,
                }
            };
            let ud = usize::from(id.1) as *mut c_void;
            // SAFETY: registers the marker callback on that instruction.
            unsafe { (api.register_vcpu_insn_exec_cb)(id.0, on_marker, ffi::CB_R_REGS, ud) };
        }
    }

    /// The execution counter of kernel block (vaddr, insns), made on first sight.
    fn counter(&self, vaddr: u64, insns: u32) -> U64Entry {
        let mut b = lock(&self.blocks);
        if let Some(&i) = b.index.get(&(vaddr, insns)) {
            return b.counts[i].0;
        }
        // SAFETY: a new scoreboard of one u64 per vCPU, kept for QEMU's lifetime.
        let e = U64Entry::whole(unsafe { (self.api.scoreboard_new)(8) });
        let i = b.list.len();
        b.index.insert((vaddr, insns), i);
        b.list.push((vaddr, insns));
        b.counts.push(Shared(e));
        e
    }

    /// A named function's entry block, a time-driven function's entry or any other
    /// kernel block while one is open runs on `vcpu`: the activations follow its stack
    /// pointer.
    ///
    /// # Safety
    /// Called from a callback registered with R_REGS, on `vcpu`'s thread.
    unsafe fn frame_event(&self, vcpu: u32, ev: Event) {
        let Some(m) = self.vcpus.get(vcpu as usize) else {
            return;
        };
        let mut v = lock(m);
        // SAFETY: the caller's contract (R_REGS, on `vcpu`'s thread).
        let Some(rsp) = (unsafe { self.read_reg(&mut v, Reg::Rsp) }) else {
            return;
        };
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            self.wake_on(&mut v.frames, rsp);
        }
        match ev {
            Event::Entry(f, insns) => v.frames.entry(f, rsp, insns),
            Event::Timed(insns, blocks) => {
                v.frames.timed_entry(rsp, insns, blocks);
            }
            Event::Block(insns, timed) => {
                v.frames.block(rsp, insns, timed);
            }
        }
        let slept = v.frames.sleepers(rsp);
        if !slept.is_empty() {
            v.frames.dropped += self.put_to_sleep(slept);
        }
        let open = v.frames.any_open();
        // SAFETY: writes this vCPU's own slot of the plugin's scoreboard.
        unsafe { (self.api.u64_set)(self.active.0, vcpu, u64::from(open)) };
        // A sleeper parked by another vCPU between the check above and this write must
        // still find this vCPU reporting (that vCPU sets every flag after counting it).
        fence(Ordering::SeqCst);
        if !open && self.sleeping.load(Ordering::SeqCst) > 0 {
            // SAFETY: as above.
            unsafe { (self.api.u64_set)(self.active.0, vcpu, 1) };
        }
    }

    /// The sleepers whose stack `rsp` is on resume in `frames` (their task runs here).
    fn wake_on(&self, frames: &mut Frames, rsp: u64) {
        let mut s = lock(&self.sleepers);
        let mut i = 0;
        while i < s.len() {
            if s[i].on_stack(rsp) {
                frames.wake(s.remove(i));
            } else {
                i += 1;
            }
        }
        self.sleeping.store(s.len(), Ordering::SeqCst);
    }

    /// Parks tasks that blocked inside named functions until a vCPU runs their stack
    /// again, and makes every vCPU's kernel blocks report meanwhile. Returns the sleepers
    /// dropped because [`MAX_FRAMES`] were parked.
    fn put_to_sleep(&self, slept: Vec<Sleeper>) -> u64 {
        let mut s = lock(&self.sleepers);
        s.extend(slept);
        let dropped = s.len().saturating_sub(MAX_FRAMES);
        s.drain(..dropped);
        self.sleeping.store(s.len(), Ordering::SeqCst);
        drop(s);
        for other in 0..self.max_vcpus {
            // SAFETY: a slot of the plugin's scoreboard; the vCPU reads it inline and, at
            // worst, reports one block later.
            unsafe { (self.api.u64_set)(self.active.0, other as u32, 1) };
        }
        dropped as u64
    }

    /// Register `r` of the vCPU whose state `v` is (its reader found on first use);
    /// failures are reported once.
    ///
    /// # Safety
    /// Called from a callback registered with R_REGS, on that vCPU's thread.
    unsafe fn read_reg(&self, v: &mut Vcpu, r: Reg) -> Option<u64> {
        if v.regs.is_none() {
            // SAFETY: in a vCPU context with registers readable (the caller's contract).
            match unsafe { Regs::find(&self.api) } {
                Ok(regs) => v.regs = Some(regs),
                Err(e) => {
                    self.report_once("registers", &e);
                    return None;
                }
            }
        }
        // SAFETY: as above, on the vCPU the reader was found on.
        let val = v
            .regs
            .as_ref()
            .and_then(|g| unsafe { g.read(&self.api, r) });
        if val.is_none() {
            self.report_once("register", "reading a register failed");
        }
        val
    }

    /// The kallsyms text the configuration marker points at (`rsi`, `rdx` bytes).
    ///
    /// # Safety
    /// Called from the marker callback (R_REGS) on `vcpu`'s thread.
    unsafe fn marker_text(&self, vcpu: u32) -> Result<String, String> {
        let m = self.vcpus.get(vcpu as usize).ok_or("vCPU out of range")?;
        let mut v = lock(m);
        // SAFETY: the caller's contract.
        let (addr, len) = unsafe {
            (
                self.read_reg(&mut v, Reg::Rsi),
                self.read_reg(&mut v, Reg::Rdx),
            )
        };
        let (addr, len) = addr.zip(len).ok_or("cannot read rsi/rdx at the marker")?;
        if len == 0 || len > MAX_KSYMS {
            return Err(format!(
                "the configuration marker handed over {len} bytes of symbols \
                 (expected /proc/kallsyms on its standard input, at most {MAX_KSYMS})"
            ));
        }
        let regs = v.regs.as_ref().ok_or("no register reader")?;
        // SAFETY: the caller's contract; `len` is bounded above.
        let bytes = unsafe { regs.memory(&self.api, addr, len as usize) }
            .ok_or_else(|| format!("cannot read {len} bytes of guest memory at {addr:#x}"))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The configuration marker: takes the guest's kallsyms, saves it for symbolisation,
    /// finds the named functions and flushes the translation cache (a plugin reset) so
    /// blocks translated before get their instrumentation.
    ///
    /// # Safety
    /// Called from the marker callback (R_REGS) on `vcpu`'s thread.
    unsafe fn configure(&self, vcpu: u32) {
        // SAFETY: the caller's contract.
        let text = match unsafe { self.marker_text(vcpu) } {
            Ok(t) => t,
            Err(e) => return self.error(&format!("configuration: {e}")),
        };
        if let Some(p) = &self.args.ksyms {
            if let Err(e) = std::fs::write(p, &text) {
                self.error(&format!("configuration: cannot write {p}: {e}"));
            }
        }
        let symbols = Symbols::parse(&text);
        let (cfg, missing) = Config::new(&symbols, &self.args.functions);
        for m in missing {
            self.error(&format!(
                "named function {m} is not in the guest's kallsyms"
            ));
        }
        self.install_config(cfg);
    }

    fn install_config(&self, cfg: Config) {
        let mut named = self.named.write().unwrap_or_else(|e| e.into_inner());
        if named.is_some() {
            return self.error("a second configuration marker; the first configuration stays");
        }
        for m in &self.vcpus {
            lock(m).frames = Frames::new(cfg.functions.len());
        }
        lock(&self.sleepers).clear();
        self.sleeping.store(0, Ordering::SeqCst);
        let mut entries = HashMap::new();
        for (i, (_, addrs)) in cfg.functions.iter().enumerate() {
            for a in addrs {
                entries.insert(*a, u8::try_from(i).unwrap_or(u8::MAX));
            }
        }
        *named = Some(Arc::new(Named {
            // The inclusive counters, then the time-driven ones ([`Frames`]' layout).
            names: (cfg.functions.iter().map(|(n, _)| n.clone()))
                .chain((cfg.functions.iter()).map(|(n, _)| format!("{n}{}", format::TIMED_SUFFIX)))
                .collect(),
            entries,
            exclude: cfg.exclude,
            timed: cfg.timed,
            timed_entries: cfg.timed_entries.into_iter().collect(),
            sleep_entries: cfg.sleep_entries.into_iter().collect(),
        }));
        drop(named);
        // SAFETY: asks QEMU to flush and unregister; `on_reset_done` registers again.
        unsafe { (self.api.reset)(self.id, on_reset_done, std::ptr::null_mut()) };
    }

    fn vcpus_now(&self) -> usize {
        // SAFETY: a plain query.
        let n = unsafe { (self.api.num_vcpus)() };
        usize::try_from(n).unwrap_or(0).clamp(1, self.max_vcpus)
    }

    /// Every counter now.
    fn snapshot(&self) -> Snapshot {
        let vcpus = self.vcpus_now();
        let get = |e: U64Entry, v: usize| {
            // SAFETY: reads slot `v` (below the vCPU count) of a plugin scoreboard.
            unsafe { (self.api.u64_get)(e, v as u32) }
        };
        let user = (0..vcpus).map(|v| get(self.user.0, v)).collect();
        let execs = lock(&self.blocks)
            .counts
            .iter()
            .flat_map(|c| (0..vcpus).map(move |v| get(c.0, v)))
            .collect();
        let inclusive = (self.vcpus.iter().take(vcpus))
            .map(|m| lock(m).frames.inclusive.clone())
            .collect();
        Snapshot {
            vcpus,
            user,
            execs,
            inclusive,
        }
    }

    fn begin(&self, id: u8, vcpu: u32) {
        let at = self.snapshot();
        let named = self.named_ready.load(Ordering::Acquire);
        let previous = lock(&self.window).replace(OpenWindow {
            id,
            vcpu,
            at,
            named,
        });
        if let Some(p) = previous {
            self.error(&format!(
                "window {id} opened while window {} was open; {} is discarded",
                p.id, p.id
            ));
        }
    }

    fn end(&self, id: u8, vcpu: u32) {
        let at = self.snapshot();
        let open = lock(&self.window).take();
        let Some(o) = open.filter(|o| o.id == id) else {
            return self.error(&format!("window {id} closed but not open"));
        };
        let blocks = lock(&self.blocks).list.clone();
        let names = (self
            .named
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref())
        .map(|n| n.names.clone())
        .unwrap_or_default();
        let w = Window {
            id,
            begin_vcpu: o.vcpu,
            end_vcpu: vcpu,
            named_ready: o.named && self.named_ready.load(Ordering::Acquire),
            vcpus: between(&o.at, &at, &blocks, &names),
        };
        let mut s = String::new();
        w.render(&mut s);
        self.write(&s);
    }

    /// Whole-run totals per vCPU, at QEMU's exit.
    fn totals(&self) {
        let s = self.snapshot();
        let blocks = lock(&self.blocks).list.clone();
        let mut text = String::new();
        for v in 0..s.vcpus {
            let kernel: u64 = (blocks.iter().enumerate())
                .map(|(i, &(_, n))| {
                    u64::from(n) * s.execs.get(i * s.vcpus + v).copied().unwrap_or(0)
                })
                .sum();
            text.push_str(&format!("T {v} {} {kernel}\n", s.user[v]));
        }
        self.write(&text);
    }

    fn write(&self, text: &str) {
        let mut f = lock(&self.out);
        if f.write_all(text.as_bytes())
            .and_then(|_| f.flush())
            .is_err()
        {
            drop(f);
            self.report_once("write", "cannot write the output file");
        }
    }

    fn error(&self, msg: &str) {
        self.write(&format!("X {msg}\n"));
    }

    /// Reports a recurring failure once (to the output file and QEMU's log).
    fn report_once(&self, key: &'static str, msg: &str) {
        let mut seen = lock(&self.reported);
        if seen.contains(&key) {
            return;
        }
        seen.push(key);
        drop(seen);
        let _ = writeln!(lock(&self.out), "X {msg}");
        if let Ok(c) = std::ffi::CString::new(format!("nicemu-tcg-plugin: {msg}\n")) {
            // SAFETY: a NUL-terminated message for QEMU's log.
            unsafe { (self.api.outs)(c.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_what_is_missing_or_unknown() {
        let a = parse_args(&[
            "out=/o".into(),
            "ksyms=/k".into(),
            "fn=vfs_read".into(),
            "fn=igb:igb_update_stats".into(),
        ])
        .unwrap();
        assert_eq!((a.out.as_str(), a.ksyms.as_deref()), ("/o", Some("/k")));
        assert_eq!(a.functions, ["vfs_read", "igb:igb_update_stats"]);
        let many: Vec<String> = (0..65)
            .map(|i| format!("fn=f{i}"))
            .chain(["out=/o".into()])
            .collect();
        assert!(parse_args(&many).unwrap_err().contains("at most 64"));
        assert!(parse_args(&[]).unwrap_err().contains("out=PATH is missing"));
        assert!(parse_args(&["out=/o".into(), "inline=on".into()])
            .unwrap_err()
            .contains("unknown argument \"inline=on\""));
    }

    #[test]
    fn the_machine_check_refuses_other_apis_and_guests() {
        let info = |min, cur, target: &'static CStr, system| QemuInfo {
            target_name: target.as_ptr(),
            version_min: min,
            version_cur: cur,
            system_emulation: system,
            smp_vcpus: 2,
            max_vcpus: 2,
        };
        assert_eq!(check_machine(Some(&info(7, 7, c"x86_64", true))), Ok(2));
        let e = check_machine(Some(&info(8, 9, c"x86_64", true))).unwrap_err();
        assert!(e.contains("API versions 8..=9"), "{e}");
        check_machine(Some(&info(7, 7, c"aarch64", true))).unwrap_err();
        check_machine(Some(&info(7, 7, c"x86_64", false))).unwrap_err();
        check_machine(None).unwrap_err();
    }

    #[test]
    fn entry_userdata_carries_the_function_and_the_block_size() {
        let d = entry_data(5, 17) as usize;
        assert_eq!(((d >> 32) as u8, d as u32), (5, 17));
    }
}
