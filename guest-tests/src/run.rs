//! The `run` command: provision, build images, boot one guest per device, evaluate
//! scenarios, report.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::image::{self, init_script, kernel, modules};
use crate::provision::{self, mounts::BindMounts, QemuLauncher};
use crate::report::{self, DeviceRun, RunReport};
use crate::scenario::{self, Console, Scenario, ScenarioResult, Target};
use crate::vm::accel::{self, Accel};
use crate::vm::device::{DeviceKind, TEST_MAC};
use crate::vm::launch::{self, BootSpec, Exit};
use crate::vm::nicemu_proc::{self, NicemuProcess};
use crate::vm::run_dir::{self, RunDir};

/// Kernel command line for test boots.
const APPEND: &str = "console=ttyS0 quiet panic=-1";

/// Runs everything `args` asks for; returns the report (its `passed()` decides the exit code).
pub fn run(args: &RunArgs) -> Result<RunReport> {
    let devices = args
        .devices
        .iter()
        .map(|d| DeviceKind::parse(d.trim()))
        .collect::<Result<Vec<_>>>()?;
    let scenarios = args
        .scenarios
        .iter()
        .map(|s| {
            scenario::by_name(s.trim()).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown scenario {s:?} (known: {})",
                    scenario::NAMES.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let kspec = kernel::KernelSpec::from_args(&args.kernel, args.modules.as_deref())?;
    let nicemu_bin = if devices.iter().any(|d| d.nicemu_kind().is_some()) {
        Some(nicemu_proc::find_binary(args.nicemu.as_deref())?)
    } else {
        None
    };

    let prov = provision::provision()?;
    let kern = kernel::resolve(&kspec, &prov.sid_root)?;
    println!("kernel: {}", kern.label);
    let mods = modules::collect(&kern.modules_dir, modules::DRIVERS)?;
    let mod_names: Vec<String> = mods.iter().map(|m| m.name.clone()).collect();

    let chroot = match &prov.qemu {
        QemuLauncher::Chroot(root) => Some(root.clone()),
        QemuLauncher::Host(_) => None,
    };
    let _mounts = match &chroot {
        Some(root) => Some(BindMounts::new(root)?),
        None => None,
    };
    let id = run_dir::new_id();
    let dir = RunDir::create(&prov.cache, chroot.as_deref(), &id)?;
    println!("run {id}: {}", dir.host.display());

    let (kernel_host, kernel_guest) = dir.file("vmlinuz");
    std::fs::copy(&kern.image, &kernel_host).map_err(|e| Error::io(&kernel_host, e))?;
    println!("image: packing busybox, tools and {} modules", mods.len());
    let base = image::base_archive(&prov.sid_root, &mods)?;

    let spec_for = |accel: Accel, initrd: String, dev_dir: &RunDir| BootSpec {
        launcher: prov.qemu.clone(),
        accel,
        smp: args.smp,
        mem_mb: args.mem,
        kernel: kernel_guest.clone(),
        initrd,
        append: APPEND.to_owned(),
        extra: Vec::new(),
        timeout: Duration::from_secs(args.timeout),
        serial_log: dev_dir.host.join("serial.log"),
        qemu_log: dev_dir.host.join("qemu.log"),
        done_marker: init_script::END_MARKER,
    };

    let accel = accel::resolve(args.accel, || {
        let pdir = dir.sub("kvm-probe")?;
        let (host, guest) = pdir.file("initrd.cpio");
        let init = init_script::render(&mod_names, "");
        image::write_initrd(&base, &init, &host)?;
        let mut spec = spec_for(Accel::Kvm, guest, &pdir);
        spec.append = format!("{APPEND} {}", init_script::PROBE_ARG);
        spec.timeout = accel::PROBE_TIMEOUT;
        spec.done_marker = init_script::PROBE_MARKER;
        let out = launch::boot(&spec)?;
        Ok(Console::parse(&out.console).probe_ok)
    })?;

    let mut report = RunReport {
        run_id: id.clone(),
        run_dir: dir.host.to_string_lossy().into_owned(),
        kernel: kern.label.clone(),
        kernel_release: kern.release.clone(),
        accel: accel.qemu_name().to_owned(),
        devices: Vec::new(),
    };
    for (i, dev) in devices.iter().enumerate() {
        let ddir = dir.sub(&format!("{}-{}", i + 1, dev.name()))?;
        println!(
            "[{}/{}] {dev}: booting ({}, timeout {} s)",
            i + 1,
            devices.len(),
            accel.qemu_name(),
            args.timeout
        );
        let target = Target {
            mac: TEST_MAC.to_owned(),
            driver: dev.driver().to_owned(),
        };
        let init = init_script::render(&mod_names, &scenario::render_body(&scenarios, &target));
        let (initrd_host, initrd_guest) = ddir.file("initrd.cpio");
        image::write_initrd(&base, &init, &initrd_host)?;
        let mut spec = spec_for(accel, initrd_guest, &ddir);
        let run = boot_device(
            *dev,
            &mut spec,
            &ddir,
            nicemu_bin.as_ref(),
            &scenarios,
            &target,
        );
        let run = match run {
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            Err(e) => DeviceRun {
                device: dev.name().into(),
                boot: "not booted".into(),
                error: Some(e.to_string()),
                secs_to_userspace: None,
                secs_to_result: None,
                scenarios: scenarios
                    .iter()
                    .map(|s| ScenarioResult::fail(s.name(), "not run (guest not booted)"))
                    .collect(),
                console_tail: Vec::new(),
                dir: ddir.host.to_string_lossy().into_owned(),
            },
            Ok(r) => r,
        };
        for r in run.scenarios.iter().filter(|_| run.error.is_none()) {
            println!(
                "[{}/{}] {dev}: {} {}{}",
                i + 1,
                devices.len(),
                r.scenario,
                r.status,
                r.reason
                    .as_ref()
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default()
            );
        }
        if let Some(e) = &run.error {
            println!("[{}/{}] {dev}: {e}", i + 1, devices.len());
        }
        report.devices.push(run);
    }
    if !args.keep_images {
        remove_images(&dir.host);
    }
    let json_path = dir.host.join("results.json");
    report::json::write(&report, &json_path)?;
    if let Some(p) = &args.json {
        report::json::write(&report, p)?;
    }
    let names: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
    println!("\n{}", report::markdown::render(&report, &names));
    println!("results: {}", json_path.display());
    Ok(report)
}

/// Boots one guest for `dev` and evaluates the scenarios from its console.
fn boot_device(
    dev: DeviceKind,
    spec: &mut BootSpec,
    ddir: &RunDir,
    nicemu_bin: Option<&PathBuf>,
    scenarios: &[Box<dyn Scenario>],
    target: &Target,
) -> Result<DeviceRun> {
    let guest_dir = ddir.guest.to_string_lossy().into_owned();
    let mut nicemu = None;
    let socket = match (dev.nicemu_kind(), nicemu_bin) {
        (Some(kind), Some(bin)) => {
            let (sock_host, sock_guest) = ddir.file(&format!("{kind}0.sock"));
            let spec_arg = format!(
                "{kind},id={kind}0,socket={},mac={TEST_MAC}",
                sock_host.display()
            );
            let log = ddir.host.join("nicemu.log");
            println!(
                "  starting nicemu --device {spec_arg} (log {})",
                log.display()
            );
            nicemu = Some(NicemuProcess::start(bin, &spec_arg, &sock_host, &log)?);
            Some(sock_guest)
        }
        _ => None,
    };
    spec.extra = dev.qemu_args(&guest_dir, socket.as_deref());
    let out = launch::boot(spec)?;
    let mut nicemu_note = None;
    if let Some(n) = nicemu.as_mut() {
        if let Some(st) = n.exited() {
            nicemu_note = Some(format!("nicemu exited early ({st}): {}", n.log_tail(3)));
        }
        n.stop();
    }
    let console = Console::parse(&out.console);
    let results: Vec<ScenarioResult> = scenarios
        .iter()
        .map(|s| scenario::evaluate(s.as_ref(), &console, target))
        .collect();
    let boot = match (&out.exit, out.to_done) {
        (_, Some(_)) => "ok".to_owned(),
        (Exit::TimedOut, None) => format!("timeout after {} s", spec.timeout.as_secs()),
        (Exit::Exited(code), None) => format!(
            "qemu exited ({}) before the end marker",
            code.map(|c| c.to_string())
                .unwrap_or_else(|| "signal".into())
        ),
    };
    // Scenario failures carry their own reasons; the console tail is for broken boots.
    let failed = out.to_done.is_none();
    let mut tail = if failed { out.tail(15) } else { Vec::new() };
    if failed && console.boot_uptime.is_none() {
        let qlog = std::fs::read_to_string(&spec.qemu_log).unwrap_or_default();
        tail.extend(
            qlog.lines()
                .rev()
                .take(5)
                .map(|l| format!("qemu: {l}"))
                .collect::<Vec<_>>()
                .into_iter()
                .rev(),
        );
    }
    Ok(DeviceRun {
        device: dev.name().into(),
        boot,
        error: nicemu_note,
        secs_to_userspace: out.to_userspace.map(round),
        secs_to_result: out.to_done.map(round),
        scenarios: results,
        console_tail: tail,
        dir: ddir.host.to_string_lossy().into_owned(),
    })
}

fn round(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Removes the large per-run copies (kernel, initramfs) and leftover sockets, keeping logs.
fn remove_images(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            remove_images(&p);
        } else if name == "vmlinuz"
            || name == "initrd.cpio"
            || std::os::unix::fs::FileTypeExt::is_socket(&ft)
        {
            let _ = std::fs::remove_file(&p);
        }
    }
}
