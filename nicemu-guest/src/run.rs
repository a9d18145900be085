// SPDX-License-Identifier: Apache-2.0
//! The `run` command: build the matrix, provision, build one image per kernel, boot one
//! guest per (kernel, device) cell, evaluate the scenarios, report.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::build::prepare::{self, KernelImage};
use crate::build::{requests::kernel_requests, KernelRequest};
use crate::cell::{kvm_probe, not_booted, Ctx};
use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::image::guest_kernel::{GuestKernel, KernelSpec};
use crate::matrix::{Cell, Matrix, MatrixFile, Overrides, Shard};
use crate::params::Params;
use crate::report::{self, CellRun, RunReport};
use crate::scenario::{self, Scenario};
use crate::splat::ignore::IgnoreList;
use crate::vm::accel::{self, Accel};
use crate::vm::nicemu_proc;
use crate::vm::run_dir::{self, RunDir};
use nicemu_provision::{self as provision, mounts::BindMounts, QemuLauncher};

/// Host seconds allowed for a boot to reach userspace before the scenarios' own budgets.
const BOOT_BUDGET: u64 = 120;

/// Builds the matrix `args` describe.
pub fn matrix_from_args(args: &RunArgs) -> Result<Matrix> {
    let file = args.matrix.as_deref().map(MatrixFile::read).transpose()?;
    let mut kernels = match (&args.kernel_a, &args.kernel_b) {
        (Some(a), Some(b)) => vec![a.clone(), b.clone()],
        _ => args.kernels.clone(),
    };
    if let Some(tree) = &args.kernel_tree {
        kernels.push(format!("tree:{}", tree.display()));
    }
    if args.build_kernel {
        let names = if kernels.is_empty() {
            vec!["sid".to_owned()]
        } else {
            kernels
        };
        kernels = names
            .into_iter()
            .map(|k| match KernelSpec::from_args(&k, None) {
                Ok(KernelSpec::Sid) | Ok(KernelSpec::Debian(_)) => format!("{k}-built"),
                _ => k,
            })
            .collect();
    }
    let o = Overrides {
        kernels,
        modules: args.modules.clone(),
        devices: args.devices.clone(),
        scenarios: args.scenarios.clone(),
        topology: args.topology,
        params: args.params.clone(),
    };
    Matrix::build(file, &o)
}

/// How much longer a guest of a debug kernel (`sid-debug`: KASAN, lockdep, kmemleak) may
/// take than the default timeout allows (measured under TCG: see the book's Kernel splats
/// chapter).
const DEBUG_SLOWDOWN: u64 = 10;

/// Default per-guest timeout for `scenarios` with `params`.
pub fn default_timeout(scenarios: &[Box<dyn Scenario>], params: &Params) -> u64 {
    let guest: u64 = scenarios.iter().map(|s| s.budget_secs(params)).sum();
    BOOT_BUDGET + 2 * (guest + 20)
}

/// Runs everything `args` asks for; returns the report (its `passed()` decides the exit code).
pub fn run(args: &RunArgs) -> Result<RunReport> {
    let started = Instant::now();
    let limits = crate::cost::gate::Limit::parse_all(&args.cost_limits).map_err(Error::Usage)?;
    let started_date = report::run_env::now_rfc3339();
    let plan = Plan::new(args)?;
    crate::preflight::check_paths(args, &plan.matrix)?;
    let nicemu_bin = nicemu_binary(args, &plan)?;
    let plugin = crate::cost::plugin_for(&plan.matrix.params, args.guest.accel)?;
    if !limits.is_empty() && plugin.is_none() {
        return Err(Error::Usage(
            "--cost-limit needs instruction counts: run under TCG (--accel tcg) with --param cost=auto or 1"
                .into(),
        ));
    }
    let prov = provision::provision()?;
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
    let mut report = plan.empty_report(args, &id, &dir);
    let cost = plugin
        .map(|so| crate::cost::Setup::new(&so, &plan.matrix.params, &dir))
        .transpose()?;
    let ctx = Ctx {
        args,
        prov: &prov,
        matrix: &plan.matrix,
        scenarios: &plan.scenarios,
        nicemu_bin: nicemu_bin.as_deref(),
        timeout: Duration::from_secs(plan.timeout),
        cost: cost.as_ref(),
    };
    let rounds = rounds_of(args)?;
    let tags = kernel_tags(plan.requests.len(), plan.is_ab(args, rounds));
    let prepared = prepare::kernels(
        &plan.requests,
        &plan.matrix.scenarios,
        &plan.matrix.params,
        &prov.sid_root,
        &dir,
        &tags,
    )?;
    Rounds::new(&ctx, &plan, &dir, rounds).run(&prepared, &mut report)?;
    if !args.keep_images {
        run_dir::remove_images(&dir.host);
    }
    report.wall_secs = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    report.env = Some(report::run_env::RunEnv {
        started: Some(started_date),
        ..report::run_env::measure(&prov, nicemu_bin.as_deref(), args.guest.pin, args.guest.smp)
    });
    if plan.is_ab(args, rounds) && rounds > 1 {
        report.ab = Some(report::ab::summarise(&report, rounds, &args.main_metrics));
    }
    if plan.is_ab(args, rounds) {
        report.splat_ab = Some(crate::watch::splat_ab(&report));
    }
    report.splat_ignore = Some(crate::watch::ignore_use(&report, &plan.ignore));
    report::outputs::write(&report, Some(&dir.host), &args.out)?;
    report::terminal::reports(&report, ab_kernels(args, &plan));
    print!(
        "\n{}",
        report::terminal::locations(&report, &dir.host, &args.out)
    );
    Ok(report)
}

/// What one `run` covers: the matrix, the kernels it asks for, the cells of
/// this shard, the scenarios and the per-guest timeout.
struct Plan {
    matrix: Matrix,
    requests: Vec<KernelRequest>,
    cells: Vec<Cell>,
    shard: Option<Shard>,
    scenarios: Vec<Box<dyn Scenario>>,
    /// Seconds per guest.
    timeout: u64,
    /// The kernel splats that do not fail a cell.
    ignore: IgnoreList,
}

impl Plan {
    /// The plan of `args`, announced on one line.
    fn new(args: &RunArgs) -> Result<Plan> {
        let matrix = matrix_from_args(args)?;
        let requests = kernel_requests(args, &matrix)?;
        let all = matrix.cells();
        let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
        let cells = match shard {
            Some(s) => s.select(&all),
            None => all.clone(),
        };
        let scenarios: Vec<Box<dyn Scenario>> = matrix
            .scenarios
            .iter()
            .filter_map(|s| scenario::by_name(s))
            .collect();
        let debug = requests
            .iter()
            .any(|r| matches!(r.spec, KernelSpec::Debug(_)));
        let timeout = args.guest.timeout.unwrap_or_else(|| {
            let t = default_timeout(&scenarios, &matrix.params);
            if debug {
                t * DEBUG_SLOWDOWN
            } else {
                t
            }
        });

        let ignore = match &args.guest.splat_ignore {
            Some(p) => IgnoreList::read(p).map_err(Error::Usage)?,
            None => IgnoreList::builtin(),
        };
        println!(
            "matrix: {} kernel(s) × {} device(s) = {} cell(s){}; scenarios {}; peer {}; timeout {} s per guest; splat ignore list {}",
            matrix.kernels.len(),
            matrix.devices.len(),
            all.len(),
            shard
                .map(|s| format!(", shard {s} runs {}", cells.len()))
                .unwrap_or_default(),
            matrix.scenarios.join(","),
            matrix.topology.name(),
            timeout,
            ignore.describe()
        );
        Ok(Plan {
            matrix,
            requests,
            cells,
            shard,
            scenarios,
            timeout,
            ignore,
        })
    }

    /// Two kernels compared side by side (A/B).
    fn is_ab(&self, args: &RunArgs, rounds: u32) -> bool {
        self.matrix.kernels.len() == 2 && (args.kernel_a.is_some() || rounds > 1)
    }

    /// The report before any cell ran.
    fn empty_report(&self, args: &RunArgs, id: &str, dir: &RunDir) -> RunReport {
        RunReport {
            schema: report::SCHEMA,
            run_id: id.to_owned(),
            run_dir: dir.host.to_string_lossy().into_owned(),
            accel: String::new(),
            topology: self.matrix.topology.name().to_owned(),
            smp: args.guest.smp,
            mem_mb: args.guest.mem,
            scenarios: self.matrix.scenarios.clone(),
            params: self.matrix.params.clone(),
            shard: self.shard.map(|s| s.to_string()),
            wall_secs: 0.0,
            runs: Vec::new(),
            env: None,
            ab: None,
            splat_ab: None,
            splat_ignore: None,
        }
    }
}

/// nicemu's binary when a cell needs it (and, for the `faults` scenario,
/// the host's tcpdump its capture check decodes with).
fn nicemu_binary(args: &RunArgs, plan: &Plan) -> Result<Option<PathBuf>> {
    if !plan.cells.iter().any(|c| c.device.nicemu_kind().is_some()) {
        return Ok(None);
    }
    let bin = nicemu_proc::find_binary(args.guest.nicemu.as_deref())?;
    if plan.matrix.scenarios.iter().any(|s| s == "faults") {
        match crate::vm::host::ensure_tcpdump() {
            Ok(m) => println!("{m}"),
            Err(e) => println!("warning: {e}; the faults capture check will fail"),
        }
    }
    Ok(Some(bin))
}

/// The rounds of a run: every cell of every kernel, booted once per round,
/// with the progress counter and the accelerator resolved at the first boot.
struct Rounds<'a> {
    ctx: &'a Ctx<'a>,
    plan: &'a Plan,
    dir: &'a RunDir,
    rounds: u32,
    ab: bool,
    total: usize,
    done: usize,
    accel: Option<Accel>,
}

impl<'a> Rounds<'a> {
    fn new(ctx: &'a Ctx<'a>, plan: &'a Plan, dir: &'a RunDir, rounds: u32) -> Self {
        Rounds {
            ctx,
            plan,
            dir,
            rounds,
            ab: plan.is_ab(ctx.args, rounds),
            total: plan.cells.len() * rounds as usize,
            done: 0,
            accel: None,
        }
    }

    /// Boots every cell in every round into `report`.
    fn run(
        &mut self,
        prepared: &[Result<(GuestKernel, KernelImage)>],
        report: &mut RunReport,
    ) -> Result<()> {
        for round in 1..=self.rounds {
            for (ki, kreq) in self.plan.requests.iter().enumerate() {
                let kcells: Vec<&Cell> =
                    self.plan.cells.iter().filter(|c| c.kernel == ki).collect();
                if kcells.is_empty() {
                    continue;
                }
                let side = self.ab.then(|| side_name(ki).to_owned());
                match &prepared[ki] {
                    Ok((kern, img)) => {
                        for c in kcells {
                            let r = self.boot_cell(round, side.clone(), kern, img, c, report)?;
                            report.runs.push(r);
                        }
                    }
                    Err(e) => {
                        println!("kernel {}: {e}", kreq.name());
                        for c in kcells {
                            self.done += 1;
                            let why = e.to_string();
                            let mut r =
                                not_booted(c, &kreq.name(), &why, self.ctx.scenarios, self.dir);
                            r.side = side.clone();
                            r.round = (self.rounds > 1).then_some(round);
                            report.runs.push(r);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Boots one cell of kernel `kern` in `round` (on `side` of an A/B).
    fn boot_cell(
        &mut self,
        round: u32,
        side: Option<String>,
        kern: &GuestKernel,
        img: &KernelImage,
        c: &Cell,
        report: &mut RunReport,
    ) -> Result<CellRun> {
        let a = match self.accel {
            Some(a) => a,
            None => {
                let a = accel::resolve(self.ctx.args.guest.accel, || kvm_probe(self.ctx, img))?;
                report.accel = a.qemu_name().to_owned();
                self.accel = Some(a);
                a
            }
        };
        self.done += 1;
        let name = self.cell_dir_name(round, side.as_deref(), kern, c);
        println!(
            "[{}/{}] {}{} / {}: booting ({}, timeout {} s)",
            self.done,
            self.total,
            kern.name,
            side.as_ref()
                .map(|sd| format!(" ({sd}, round {round}/{})", self.rounds))
                .unwrap_or_default(),
            c.device,
            a.qemu_name(),
            self.plan.timeout
        );
        let t0 = Instant::now();
        let mut r = crate::cell::boot_in(self.ctx, c, a, (kern, img), self.dir, &name)?;
        r.kernel = kern.name.clone();
        r.kernel_label = kern.label.clone();
        r.kernel_release = kern.release.clone();
        r.side = side;
        r.round = (self.rounds > 1).then_some(round);
        crate::watch::finish_cell(&mut r, kern, &self.ctx.prov.sid_root, &self.plan.ignore);
        r.wall_secs = (t0.elapsed().as_secs_f64() * 10.0).round() / 10.0;
        report::terminal::cell(self.done, self.total, &r);
        Ok(r)
    }

    /// A cell's directory: A/B cells are named by side and round, not by the
    /// (patched) kernel's long name: the sockets inside must stay under the
    /// unix socket path limit.
    fn cell_dir_name(
        &self,
        round: u32,
        side: Option<&str>,
        kern: &GuestKernel,
        c: &Cell,
    ) -> String {
        match side {
            Some(sd) if self.rounds > 1 => {
                format!("{}-{sd}{round}-{}", c.index + 1, c.device.name())
            }
            Some(sd) => format!("{}-{sd}-{}", c.index + 1, c.device.name()),
            None => format!(
                "{}-{}-{}",
                c.index + 1,
                run_dir::cell_kernel_name(&kern.name),
                c.device.name()
            ),
        }
    }
}

/// The kernels of an A/B run (`--kernel-a/-b`) by their names in the report.
fn ab_kernels(args: &RunArgs, plan: &Plan) -> Option<(String, String)> {
    let (a, b) = (args.kernel_a.as_ref()?, args.kernel_b.as_ref()?);
    let name = |i: usize, or: &String| {
        plan.requests
            .get(i)
            .map_or_else(|| or.clone(), |k| k.name())
    };
    Some((name(0, a), name(1, b)))
}

/// `--rounds`: at least 1; more only with two kernels (A/B).
fn rounds_of(args: &RunArgs) -> Result<u32> {
    match args.rounds {
        0 => Err(Error::Usage("--rounds must be at least 1".into())),
        n if n > 1 && args.kernel_a.is_none() && args.kernels.len() != 2 => Err(Error::Usage(
            "--rounds N > 1 needs two kernels: --kernel-a A --kernel-b B".into(),
        )),
        n => Ok(n),
    }
}

/// The tag of each kernel's directory: "a-" and "b-" in an A/B run, else none.
fn kernel_tags(kernels: usize, ab: bool) -> Vec<String> {
    (0..kernels)
        .map(|ki| {
            if ab {
                side_name(ki).to_ascii_lowercase() + "-"
            } else {
                String::new()
            }
        })
        .collect()
}

/// "A" for the first kernel of an A/B run, "B" for the second.
fn side_name(kernel_index: usize) -> &'static str {
    if kernel_index == 0 {
        "A"
    } else {
        "B"
    }
}
