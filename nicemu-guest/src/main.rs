// SPDX-License-Identifier: Apache-2.0
//! `nicemu-guest`: the guest test harness for nicemu.
// The length rule is for non-test code (tests read best as one scenario).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod build;
mod cell;
#[cfg(test)]
mod ci_templates_tests;
mod cli;
mod cost;
#[cfg(test)]
mod docs_tests;
mod error;
mod experiment;
mod image;
mod matrix;
mod param_ranges;
mod params;
mod preflight;
mod qemu_args;
mod report;
mod run;
mod scan_log;
mod scenario;
mod splat;
mod stats;
mod vm;
mod vng;
mod watch;

use clap::Parser;
use nicemu_provision::{self as provision, signals};

use crate::error::{Error, Result};

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    signals::install();
    let cli = cli::Cli::parse();
    let code = match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => fail(&e),
    };
    std::process::exit(code);
}

/// Runs one subcommand; returns the exit code.
fn dispatch(cmd: cli::Command) -> Result<i32> {
    match cmd {
        cli::Command::Provision(args) => provision_cmd(&args),
        cli::Command::List => {
            list();
            Ok(0)
        }
        cli::Command::QemuArgs(args) => {
            let nicemu = vm::nicemu_proc::find_binary(args.nicemu.as_deref())
                .unwrap_or_else(|_| std::path::PathBuf::from("nicemu"));
            let (n, q) = qemu_args::vectors(&args, &nicemu)?;
            print!("{}", qemu_args::render(args.format, &nicemu, &n, &q));
            Ok(0)
        }
        cli::Command::Source(args) => source(&args),
        cli::Command::Vng(args) => vng::run(&args),
        cli::Command::ScanLog(args) => scan_log::run(&args),
        cli::Command::Run(args) => {
            let r = run::run(&args)?;
            let gate = cost_gate(&r, &args.cost_limits)?;
            Ok(i32::from(!r.passed() || !gate))
        }
        cli::Command::CostCheck(args) => cost_check(&args),
        cli::Command::Merge(args) => {
            let reports = args
                .files
                .iter()
                .map(|f| report::json::read(f))
                .collect::<Result<Vec<_>>>()?;
            let m = report::merge::merge(&reports)?;
            report::outputs::write(&m, None, &args.out)?;
            println!("{}", report::markdown::render(&m));
            Ok(i32::from(!m.passed()))
        }
        cli::Command::Compare(args) => compare(&args),
        cli::Command::Experiment(x) => run_experiment(&x),
        cli::Command::Report(args) => {
            let r = report::json::read(&args.file)?;
            report::outputs::write(&r, None, &args.out)?;
            match args.format {
                cli::TextFormat::Markdown => println!("{}", report::markdown::render(&r)),
                cli::TextFormat::Text => print!("{}", report::text::report(&r)),
            }
            Ok(0)
        }
    }
}

/// `provision`: the cache, the sid root, QEMU and the kernels asked for.
fn provision_cmd(args: &cli::ProvisionArgs) -> Result<i32> {
    let p = provision::provision()?;
    println!("provision: cache {}", p.cache.display());
    println!("provision: sid root {}", p.sid_root.display());
    println!("provision: QEMU {}", p.qemu);
    for k in &args.kernels {
        let spec = image::guest_kernel::KernelSpec::from_args(k, None)?;
        let g = image::guest_kernel::resolve(&spec, &p.sid_root)?;
        println!("provision: kernel {}: {}", g.name, g.image.display());
    }
    Ok(0)
}

/// `list`: devices, kernels, scenarios, topologies, experiments, parameters.
fn list() {
    let devs: Vec<&str> = vm::device::DeviceKind::ALL
        .iter()
        .map(|d| d.name())
        .collect();
    println!("devices:   {}", devs.join(", "));
    println!(
        "kernels:   {} (or tree:DIR, or --kernel BZIMAGE --modules DIR)",
        image::guest_kernel::NAMES.join(", ")
    );
    println!("scenarios: {}", scenario::NAMES.join(", "));
    let topos: Vec<&str> = vm::device::Topology::ALL.iter().map(|t| t.name()).collect();
    println!("topology:  {} (netns is the default)", topos.join(", "));
    println!("experiments (nicemu-guest experiment NAME [--rounds N] [--aa]):");
    for n in experiment::names() {
        if let Ok(e) = experiment::by_name(n) {
            println!("  {n:<16} seed {}: {}", e.seed, e.summary);
        }
    }
    let kinds: Vec<&str> = splat::Kind::ALL.iter().map(|k| k.name()).collect();
    println!(
        "kernel splat kinds (a splat fails its cell unless {} accepts it): {}",
        splat::ignore::BUILTIN_NAME,
        kinds.join(", ")
    );
    println!("parameters (--param KEY=VALUE or [params] in a matrix file):");
    for (k, d, m) in params::KNOWN {
        println!("  {k:<26} {:<34} {m}", format!("[{d}]"));
    }
}

/// `source`: extracts the guest kernel's source (the paths asked for) and
/// prints where.
fn source(args: &cli::SourceArgs) -> Result<i32> {
    let p = provision::provision()?;
    let spec = image::guest_kernel::KernelSpec::from_args(&args.kernel, None)?;
    let k = image::guest_kernel::resolve(&spec, &p.sid_root)?;
    let src = provision::linux_source::ensure(&p.sid_root, &k.release)?;
    let paths: Vec<&str> = args.paths.iter().map(String::as_str).collect();
    println!("{}", src.extract(&paths)?.display());
    Ok(0)
}

/// `compare`: two reports, or the two kernels of one, side by side.
fn compare(args: &cli::CompareArgs) -> Result<i32> {
    let (a, b) = match args.files.as_slice() {
        [one] => {
            let r = report::json::read(one)?;
            let k = r.kernels();
            if k.len() != 2 {
                return Err(Error::Usage(format!(
                    "{} holds {} kernel(s) ({}); give two files or a file with exactly two kernels",
                    one.display(),
                    k.len(),
                    k.join(", ")
                )));
            }
            (r.only_kernel(&k[0]), r.only_kernel(&k[1]))
        }
        [a, b] => (report::json::read(a)?, report::json::read(b)?),
        _ => return Err(Error::Usage("compare takes one or two files".into())),
    };
    for l in watch::compare_splats(&a, &b).verdict_lines() {
        println!("{l}");
    }
    let select = report::metric_select::Select::from_args(&args.metrics, args.all);
    match args.format {
        cli::TextFormat::Markdown => println!("{}", report::compare::render(&a, &b, &select)),
        cli::TextFormat::Text => print!("{}", report::text::compare(&a, &b, &select)),
    }
    Ok(0)
}

/// `experiment NAME`: prints the README with `--readme`, else runs A against B.
fn run_experiment(x: &cli::ExperimentArgs) -> Result<i32> {
    let e = experiment::by_name(&x.name)?;
    if x.readme {
        println!("{}", experiment::readme(&e.name).unwrap_or_default());
        return Ok(0);
    }
    let (args, patch) = e.run_args(x)?;
    println!(
        "experiment {} (seed {}): {}; {}, {} round(s) per side",
        e.name,
        e.seed,
        e.summary,
        match &patch {
            Some(p) => format!(
                "B = {} + {}",
                args.kernel_b.as_deref().unwrap_or(""),
                p.display()
            ),
            None => "A/A (both sides unpatched)".into(),
        },
        args.rounds
    );
    let r = run::run(&args)?;
    let gate = cost_gate(&r, &args.cost_limits)?;
    Ok(i32::from(!r.passed() || !gate))
}

/// The cost gate of a finished A/B run (true when no limit was given).
fn cost_gate(r: &report::RunReport, limits: &[String]) -> Result<bool> {
    if limits.is_empty() {
        return Ok(true);
    }
    let limits = cost::gate::Limit::parse_all(limits).map_err(Error::Usage)?;
    cost::gate::after_run(r, &limits)
}

/// `cost-check`: the gate on one or two results files; exit 1 when a limit is breached.
fn cost_check(args: &cli::CostCheckArgs) -> Result<i32> {
    let limits = cost::gate::Limit::parse_all(&args.limits).map_err(Error::Usage)?;
    let (a, b) = match args.files.as_slice() {
        [one] => cost::gate::sides(&report::json::read(one)?)
            .map_err(|e| Error::Usage(format!("{}: {e}", one.display())))?,
        [a, b] => {
            let all = |r: &report::RunReport| cost::gate::counts(r.runs.iter());
            (all(&report::json::read(a)?), all(&report::json::read(b)?))
        }
        _ => {
            return Err(Error::Usage(
                "cost-check takes one or two results files".into(),
            ))
        }
    };
    let checks = cost::gate::check(&a, &b, &limits).map_err(Error::Usage)?;
    print!("{}", cost::gate::render(&checks));
    Ok(i32::from(checks.iter().any(|c| c.breached())))
}

fn fail(e: &Error) -> i32 {
    eprintln!("nicemu-guest: error: {e}");
    match e {
        Error::Interrupted => 130,
        _ => 2,
    }
}
