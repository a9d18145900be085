// SPDX-License-Identifier: Apache-2.0
//! One cell of a run: its initramfs (the scenarios' script for its device), nicemu started
//! for its ports, the boot, and the scenarios evaluated from the console into a
//! [`CellRun`]; and the row of a cell that did not boot.

use std::path::Path;
use std::time::Duration;

use crate::build::prepare::{guest_mem_mb, KernelImage};
use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::image::guest_kernel::GuestKernel;
use crate::image::{self, init_script};
use crate::matrix::{Cell, Matrix};
use crate::report::CellRun;
use crate::scenario::{self, setup, Console, Scenario, ScenarioResult, Target};
use crate::vm::accel::{self, Accel};
use crate::vm::device::{DeviceKind, Topology, MAX_VIRTIO_QUEUES, TEST_MAC};
use crate::vm::host::HostActions;
use crate::vm::kernel_log;
use crate::vm::launch::{self, BootSpec, Exit};
use crate::vm::nicemu_args::{nicemu_cell, PortOpts};
use crate::vm::nicemu_proc::NicemuProcess;
use crate::vm::run_dir::RunDir;
use nicemu_provision as provision;

/// Kernel command line for test boots (no IPv6: no stray frames disturb the counters).
/// `no_timer_check`: on a loaded host a TCG guest's timer check can fail and panic the boot
/// ("IO-APIC + timer doesn't work"), seen here at load 10 on 2 cores.
const APPEND: &str = "panic=-1 ipv6.disable=1 no_timer_check";
/// The same with IPv6, for runs with `kselftest` (the selftests open IPv6 sockets and test
/// both address families, as the netdev CI does).
const APPEND_V6: &str = "panic=-1 no_timer_check";

/// What every cell of a run shares: the options, the provisioned QEMU, the matrix, the
/// scenarios, nicemu's binary and the per-guest timeout.
pub(crate) struct Ctx<'a> {
    pub(crate) args: &'a RunArgs,
    pub(crate) prov: &'a provision::Provisioned,
    pub(crate) matrix: &'a Matrix,
    pub(crate) scenarios: &'a [Box<dyn Scenario>],
    pub(crate) nicemu_bin: Option<&'a Path>,
    pub(crate) timeout: Duration,
    /// Counting guest instructions (`--param cost`), when on.
    pub(crate) cost: Option<&'a crate::cost::Setup>,
}

fn spec(ctx: &Ctx, accel: Accel, img: &KernelImage, initrd: String, d: &RunDir) -> BootSpec {
    BootSpec {
        launcher: ctx.prov.qemu.clone(),
        accel,
        smp: ctx.args.guest.smp,
        mem_mb: guest_mem_mb(ctx.args.guest.mem, img.base.len()),
        kernel: img.guest_path.clone(),
        initrd,
        append: format!(
            "{} {}",
            kernel_log::CMDLINE,
            if ctx.matrix.scenarios.iter().any(|s| s == "kselftest") {
                APPEND_V6
            } else {
                APPEND
            }
        ),
        extra: Vec::new(),
        timeout: ctx.timeout,
        serial_log: d.host.join("serial.log"),
        qemu_log: d.host.join("qemu.log"),
        done_marker: init_script::END_MARKER,
        pin: None,
        kernel_log: Some(d.file(kernel_log::FILE)),
    }
}

pub(crate) fn kvm_probe(ctx: &Ctx, img: &KernelImage) -> Result<bool> {
    let pdir = img.kdir.sub("kvm-probe")?;
    let (host, guest) = pdir.file("initrd.cpio");
    image::write_initrd(&img.base, &init_script::render(&img.mod_names, ""), &host)?;
    let mut s = spec(ctx, Accel::Kvm, img, guest, &pdir);
    s.append = format!(
        "{} {APPEND} {}",
        kernel_log::CMDLINE,
        init_script::PROBE_ARG
    );
    s.timeout = accel::PROBE_TIMEOUT;
    s.done_marker = init_script::PROBE_MARKER;
    let out = launch::boot(&s, None)?;
    Ok(Console::parse(&out.console).probe_ok)
}

fn target(topology: Topology, dev: DeviceKind) -> Target {
    Target {
        module_version: None,
        device: dev.name().to_owned(),
        mac: TEST_MAC.to_owned(),
        driver: dev.driver().to_owned(),
        peer_mac: topology.macs().get(1).map(|m| m.to_string()),
        host_actions: dev.nicemu_kind().is_some(),
        unsupported: scenario::NAMES
            .iter()
            .filter_map(|s| {
                dev.unsupported(s)
                    .map(|why| (s.to_string(), why.to_owned()))
            })
            .collect(),
    }
}

pub(crate) fn not_booted(
    c: &Cell,
    kernel: &str,
    why: &str,
    scenarios: &[Box<dyn Scenario>],
    d: &RunDir,
) -> CellRun {
    CellRun {
        kernel: kernel.to_owned(),
        kernel_label: kernel.to_owned(),
        kernel_release: String::new(),
        device: c.device.name().into(),
        cell: c.index,
        splats: Vec::new(),
        splats_dropped: 0,
        retried: None,
        boot: "not booted".into(),
        secs_to_userspace: None,
        secs_to_result: None,
        wall_secs: 0.0,
        error: Some(why.to_owned()),
        setup: None,
        scenarios: scenarios
            .iter()
            .map(|s| {
                let mut r = ScenarioResult::pass(s.name());
                r.check_failed(crate::scenario::STARTED, "not run (guest not booted)");
                r
            })
            .collect(),
        console_tail: Vec::new(),
        dir: d.host.to_string_lossy().into_owned(),
        side: None,
        round: None,
    }
}

/// Queue pairs of nicemu virtio-net ports (`virtio.queues`, 1 to 16).
fn virtio_queues(ctx: &Ctx) -> usize {
    (ctx.matrix.params.num("virtio.queues") as usize).clamp(1, MAX_VIRTIO_QUEUES)
}

/// Boots one guest for `cell` (starting nicemu for its ports) and evaluates the scenarios.
pub(crate) fn run_cell(
    ctx: &Ctx,
    cell: &Cell,
    accel: Accel,
    img: &KernelImage,
    d: &RunDir,
) -> Result<CellRun> {
    let dev = cell.device;
    let mut t = target(ctx.matrix.topology, dev);
    t.module_version = img
        .built
        .iter()
        .find(|b| b.name == t.driver)
        .map(|b| b.stamp.clone())
        .filter(|s| !s.is_empty());
    let cost = ctx.cost.filter(|_| accel == Accel::Tcg);
    let mut body = scenario::render_body(ctx.scenarios, &t, &ctx.matrix.params);
    if cost.is_some() {
        body.insert_str(0, &crate::cost::prelude(dev.nicemu_kind().is_some()));
    }
    let (initrd_host, initrd_guest) = d.file("initrd.cpio");
    image::write_initrd(
        &img.base,
        &init_script::render(&img.mod_names, &body),
        &initrd_host,
    )?;
    let mut s = spec(ctx, accel, img, initrd_guest, d);
    let (mut nicemu, mut host) = attach_ports(ctx, dev, d, &mut s)?;
    if let Some(c) = cost {
        s.extra.extend(c.qemu_args(d, &img.mod_names));
        s.append = format!("{} {}", s.append, crate::cost::APPEND);
    }
    if ctx.args.guest.pin {
        let plan = crate::vm::pin::PinPlan::new(ctx.args.guest.smp, crate::vm::pin::host_cores());
        s.pin = Some((plan, nicemu.as_ref().map(|n| n.pid())));
    }
    let out = launch::boot(&s, host.as_mut())?;
    let mut nicemu_note = None;
    if let Some(n) = nicemu.as_mut() {
        if let Some(st) = n.exited() {
            nicemu_note = Some(format!("nicemu exited early ({st}): {}", n.log_tail(3)));
        }
        n.stop();
    }
    let console = Console::parse(&out.console);
    let setup_result = setup::parse(console.sections.get(setup::NAME), &t);
    let mut results: Vec<ScenarioResult> = ctx
        .scenarios
        .iter()
        .map(|sc| scenario::evaluate(sc.as_ref(), &console, &t))
        .collect();
    if let Some(c) = cost {
        let ev =
            crate::cost::evaluate(&d.host, &console, ctx.scenarios, &mut results, &c.selection);
        if !ev.notes.is_empty() {
            let notes = ev.notes.join("; ");
            nicemu_note = Some(match nicemu_note {
                Some(n) => format!("{n}; {notes}"),
                None => notes,
            });
        }
    }
    Ok(CellRun {
        kernel: String::new(),
        kernel_label: String::new(),
        kernel_release: String::new(),
        device: dev.name().into(),
        cell: cell.index,
        splats: out.kernel.splats.clone(),
        splats_dropped: out.kernel.splats_dropped,
        retried: None,
        boot: boot_text(&out, &s),
        secs_to_userspace: out.to_userspace.map(round),
        secs_to_result: out.to_done.map(round),
        wall_secs: 0.0,
        error: nicemu_note,
        setup: Some(setup_result),
        scenarios: results,
        console_tail: console_tail(&out, &console, &s),
        dir: d.host.to_string_lossy().into_owned(),
        side: None,
        round: None,
    })
}

/// The guest's network ports: nicemu started for a nicemu device (its QEMU
/// arguments into `s`, and the host actions its guest may ask for), else
/// QEMU's own device.
fn attach_ports(
    ctx: &Ctx,
    dev: DeviceKind,
    d: &RunDir,
    s: &mut BootSpec,
) -> Result<(Option<NicemuProcess>, Option<HostActions>)> {
    let topo = ctx.matrix.topology;
    if let (Some(kind), Some(bin)) = (dev.nicemu_kind(), ctx.nicemu_bin) {
        let c = nicemu_cell(
            bin,
            kind,
            topo,
            dev,
            d,
            PortOpts::of(&ctx.matrix.params, &ctx.matrix.scenarios),
            virtio_queues(ctx),
        );
        let log = d.host.join("nicemu.log");
        println!("  nicemu {} (log {})", c.args.join(" "), log.display());
        let nicemu = NicemuProcess::start(bin, &c.args, &c.sockets, &log)?;
        s.extra = c.qemu;
        return Ok((Some(nicemu), Some(c.host)));
    }
    s.extra = dev.qemu_args(
        &d.guest.to_string_lossy(),
        &[],
        topo.macs(),
        virtio_queues(ctx),
    );
    Ok((None, None))
}

/// How the boot ended, in a word or a sentence.
fn boot_text(out: &launch::BootOutcome, s: &BootSpec) -> String {
    match (&out.exit, out.to_done) {
        (_, Some(_)) => "ok".to_owned(),
        (_, None) if out.kernel.panicked => "kernel panic".to_owned(),
        (Exit::TimedOut, None) => format!("timeout after {} s", s.timeout.as_secs()),
        (Exit::Exited(code), None) => format!(
            "qemu exited ({}) before the end marker",
            code.map(|c| c.to_string())
                .unwrap_or_else(|| "signal".into())
        ),
    }
}

/// The console's last lines for a broken boot (scenario failures carry their
/// own reasons), with QEMU's last log lines when the guest never reached
/// userspace.
fn console_tail(out: &launch::BootOutcome, console: &Console, s: &BootSpec) -> Vec<String> {
    if out.to_done.is_some() {
        return Vec::new();
    }
    let mut tail = out.tail(15);
    if console.boot_uptime.is_none() || out.kernel.panicked {
        let k = &out.kernel.tail;
        tail.extend(
            k[k.len().saturating_sub(15)..]
                .iter()
                .map(|l| format!("kernel: {l}")),
        );
    }
    if console.boot_uptime.is_none() {
        let qlog = std::fs::read_to_string(&s.qemu_log).unwrap_or_default();
        let last: Vec<String> = qlog
            .lines()
            .rev()
            .take(5)
            .map(|l| format!("qemu: {l}"))
            .collect();
        tail.extend(last.into_iter().rev());
    }
    tail
}

/// Boots `cell` in `dir/name` ([`run_cell`]; one that could not boot is [`not_booted`]);
/// a boot that [`crashed_before_userspace`] is booted once more, in `dir/name-2`.
pub(crate) fn boot_in(
    ctx: &Ctx,
    cell: &Cell,
    accel: Accel,
    (kern, img): (&GuestKernel, &KernelImage),
    dir: &RunDir,
    name: &str,
) -> Result<CellRun> {
    let boot = |d: &RunDir| match run_cell(ctx, cell, accel, img, d) {
        Err(Error::Interrupted) => Err(Error::Interrupted),
        Err(e) => Ok(not_booted(
            cell,
            &kern.name,
            &e.to_string(),
            ctx.scenarios,
            d,
        )),
        Ok(r) => Ok(r),
    };
    let first = dir.sub(name)?;
    let r = boot(&first)?;
    let Some(why) = crashed_before_userspace(&r, kern) else {
        return Ok(r);
    };
    println!("  {}: {why}; booting it once more", cell.device);
    let mut r = boot(&dir.sub(&format!("{name}-2"))?)?;
    r.retried = Some(format!("{why} (its logs: {})", first.host.display()));
    Ok(r)
}

/// Why a cell's boot is worth one more try: it crashed before userspace (every splat during
/// `boot`, `/init` never reached) on a kernel as provisioned. Nothing under test had run
/// then (modules, patched or not, load from `/init`; scenarios run after), so the crash is
/// the emulator's: one seen here was `Oops: int3 in ktime_get_update_offsets_now` while the
/// kernel patched its text on the other vCPU (TCG's cross-modifying code, 1 boot in ~220).
/// A kernel the harness built (`build_dir`) is not retried: its change may be the cause.
pub(crate) fn crashed_before_userspace(r: &CellRun, kern: &GuestKernel) -> Option<String> {
    let crashed = kern.build_dir.is_none()
        && r.error.is_none()
        && r.secs_to_userspace.is_none()
        && !r.splats.is_empty()
        && r.splats.iter().all(|s| s.during == "boot");
    crashed.then(|| {
        let what: Vec<&str> = r.splats.iter().map(|s| s.fingerprint.as_str()).collect();
        format!(
            "the first boot crashed before userspace: {}",
            what.join("; ")
        )
    })
}

fn round(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata;

    fn kernel(built: bool) -> GuestKernel {
        GuestKernel {
            name: "sid+p".into(),
            label: "sid 7.2.13".into(),
            image: "/vmlinuz".into(),
            modules_dir: "/lib/modules/7.2.13".into(),
            release: "7.2.13".into(),
            built_modules: Vec::new(),
            build_log: None,
            build_dir: built.then(|| "/out".into()),
        }
    }

    /// A real boot (CI, run 1796516569-12833): `Oops: int3` in timekeeping 5.3 s into the
    /// boot, before `/init` loaded the patched igb.
    #[test]
    fn a_crash_before_userspace_on_a_provisioned_kernel_is_booted_again_only() {
        let log = include_str!("../tests/fixtures/boot-int3-oops.kernel.log");
        let mut r = testdata::cell("sid+p", "nicemu-igb", 0.1, 1.0, false);
        r.secs_to_userspace = None;
        r.splats = crate::splat::scan(log);
        assert!(!r.splats.is_empty());
        let why = crashed_before_userspace(&r, &kernel(false)).unwrap();
        assert!(why.contains("int3"), "{why}");
        assert_eq!(
            crashed_before_userspace(&r, &kernel(true)),
            None,
            "built kernel"
        );
        let mut user = r.clone();
        user.secs_to_userspace = Some(20.0);
        assert_eq!(
            crashed_before_userspace(&user, &kernel(false)),
            None,
            "after /init"
        );
        let mut later = r.clone();
        later.splats[0].during = "ping".into();
        assert_eq!(
            crashed_before_userspace(&later, &kernel(false)),
            None,
            "in a scenario"
        );
        r.splats.clear();
        assert_eq!(
            crashed_before_userspace(&r, &kernel(false)),
            None,
            "no crash: a hang"
        );
    }
}
