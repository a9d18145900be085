// SPDX-License-Identifier: Apache-2.0
//! Command-line interface.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::vm::accel::Accel;
use crate::vm::device::Topology;

/// Guest test harness for nicemu: provisions QEMU + guest kernels, boots guests on
/// emulated NICs, runs driver scenarios and reports (Markdown, JSON, HTML, JUnit).
#[derive(Debug, Parser)]
#[command(name = "nicemu-guest", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Provision QEMU, the sid root, guest kernels and tools (cached, idempotent).
    Provision(ProvisionArgs),
    /// Run a matrix (kernels × devices, scenarios in each guest) and print the table.
    Run(Box<RunArgs>),
    /// Merge results JSON files (e.g. shards) into one report.
    Merge(MergeArgs),
    /// Print two runs side by side with deltas (A/B).
    Compare(CompareArgs),
    /// Re-render a results JSON as Markdown, HTML and/or JUnit.
    Report(ReportArgs),
    /// Run a shipped seed experiment: stock (A) against patched (B) over interleaved
    /// rounds, with verdicts (see `list` and nicemu-guest/experiments/).
    Experiment(Box<ExperimentArgs>),
    /// List devices, kernels, scenarios and scenario parameters.
    List,
    /// Print the nicemu command and the QEMU arguments for a device set, for any launcher
    /// (vng --qemu-opts, libvirt's <qemu:commandline>, a shell script).
    QemuArgs(QemuArgsArgs),
    /// Run virtme-ng (`vng -r …`/`vng -b …`, the arguments after `--`) inside the sid root on
    /// nicemu's emulated NICs: nicemu started for the device set, the QEMU options added,
    /// nicemu stopped when vng exits.
    Vng(VngArgs),
    /// Fetch the exact Debian source of a guest kernel and extract parts of it (to write a
    /// patch against); prints the tree root.
    Source(SourceArgs),
    /// The cost gate on two results files (A then B; or one file of an A/B run): exit 1 when
    /// B's median instructions per unit of work grow past a limit.
    CostCheck(CostCheckArgs),
    /// Find kernel splats (WARN, BUG, lockdep, KASAN, kmemleak, …) in a console log: a cell's
    /// kernel.log, a vng or QEMU serial log, dmesg output. Exit 1 if one is not ignored.
    ScanLog(ScanLogArgs),
}

/// Options of `cost-check`.
#[derive(Debug, Args)]
pub struct CostCheckArgs {
    /// Results JSON of A (the baseline) and of B; or one results file of an A/B run.
    #[arg(required = true, num_args = 1..=2)]
    pub files: Vec<PathBuf>,
    /// METRIC=+N%: the largest growth of B over A allowed, METRIC a SCENARIO.KEY pattern
    /// over the `cost` counts (`*` = one segment), e.g. `netperf.tests.*.cost.modules.igb=+1%`
    /// (repeatable, comma-separated lists allowed).
    #[arg(long = "limit", required = true, value_name = "METRIC=+N%")]
    pub limits: Vec<String>,
}

/// Options of `scan-log`.
#[derive(Debug, Args)]
pub struct ScanLogArgs {
    /// The log to scan.
    pub file: PathBuf,
    /// Ignore list (default: nicemu-guest/splats/ignore.toml, built in).
    #[arg(long = "splat-ignore")]
    pub ignore: Option<PathBuf>,
    /// Kernel name for the ignore list's `kernels` (entries naming kernels apply only then).
    #[arg(long, default_value = "")]
    pub kernel: String,
    /// Device kind for the ignore list's `devices` (entries naming devices apply only then).
    #[arg(long, default_value = "")]
    pub device: String,
    /// vmlinux with debug info: kernel frames are decoded to file:line with it.
    #[arg(long)]
    pub vmlinux: Option<PathBuf>,
    /// A module with debug info (NAME.ko): its frames are decoded with it (repeatable).
    #[arg(long = "module")]
    pub modules: Vec<PathBuf>,
    /// The kernel's scripts/faddr2line (default: the one of --vmlinux's tree).
    #[arg(long)]
    pub faddr2line: Option<PathBuf>,
    /// Write the splats as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Options of `qemu-args`.
#[derive(Debug, Args)]
pub struct QemuArgsArgs {
    /// Device under test: nicemu-igb, nicemu-ixgbe, nicemu-virtio (or a qemu-* model).
    #[arg(long)]
    pub device: String,
    /// Peer placement (netns: a second port; single: one port; mixed: igb0 + ixgbe1).
    #[arg(long, value_enum, default_value = "single")]
    pub topology: Topology,
    /// Directory for the sockets, as both nicemu and QEMU see it.
    #[arg(long, default_value = "/tmp/nicemu")]
    pub dir: PathBuf,
    /// Guest RAM in MiB (the shared memory backend vfio-user and vhost-user need).
    #[arg(long, default_value_t = 1024)]
    pub mem: u32,
    /// nicemu binary to name in the printed command (default: next to nicemu-guest).
    #[arg(long)]
    pub nicemu: Option<PathBuf>,
    /// Output: shell (two commented lines), nicemu (its argv, one per line), qemu (QEMU's
    /// argv, one per line), vng (a `vng --qemu-opts` value).
    #[arg(long, value_enum, default_value = "shell")]
    pub format: QemuArgsFormat,
}

/// Options of `vng`.
#[derive(Debug, Args)]
pub struct VngArgs {
    /// Device under test: nicemu-igb, nicemu-ixgbe or nicemu-virtio.
    #[arg(long, default_value = "nicemu-igb")]
    pub device: String,
    /// Ports: single (one), netns (two on one switch), mixed (igb0 + ixgbe1).
    #[arg(long, value_enum, default_value = "single")]
    pub topology: Topology,
    /// Guest RAM in MiB when vng's arguments give no --memory.
    #[arg(long, default_value_t = 1024)]
    pub mem: u32,
    /// Acceleration: auto (KVM only where it runs stock guests), kvm or tcg (--disable-kvm).
    #[arg(long, value_enum, default_value = "auto")]
    pub accel: Accel,
    /// nicemu binary (default: next to nicemu-guest, else on PATH).
    #[arg(long)]
    pub nicemu: Option<PathBuf>,
    /// vng's own arguments, after `--` (e.g. -- -r /boot/vmlinuz-… -e 'ip -br link').
    #[arg(last = true, required = true)]
    pub vng_args: Vec<String>,
}

/// Output forms of `qemu-args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QemuArgsFormat {
    /// Comments plus a nicemu command line and a QEMU argument line, shell-quoted.
    Shell,
    /// nicemu's arguments, one per line.
    Nicemu,
    /// QEMU's arguments, one per line.
    Qemu,
    /// One shell-quoted string for `vng --qemu-opts`.
    Vng,
}

/// Options of `source`.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// The Debian kernel whose source to fetch (sid, trixie, trixie-rt).
    #[arg(long, default_value = "sid")]
    pub kernel: String,
    /// Paths inside the tree to extract (e.g. drivers/net/ethernet/intel/igb); none: all.
    pub paths: Vec<String>,
}

/// Options of `provision`.
#[derive(Debug, Args)]
pub struct ProvisionArgs {
    /// Also fetch these named kernels (trixie, trixie-rt).
    #[arg(long = "kernel", value_delimiter = ',')]
    pub kernels: Vec<String>,
}

/// Where to write the renderings (in addition to the run directory).
#[derive(Debug, Args, Default, Clone)]
pub struct Outputs {
    /// Write the results JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the HTML report here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

/// Options of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    // The doc comment is --help text (clap); [params] is the TOML table.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Matrix TOML file (kernels, devices, scenarios, topology, [params]); flags override
    /// it. Without it and without --device the shipped matrix/default.toml is used.
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// Devices under test: qemu-igb, qemu-e1000e, nicemu-igb, nicemu-ixgbe,
    /// nicemu-virtio, qemu-virtio (repeatable,
    /// comma-separated lists allowed). One guest is booted per kernel and device.
    #[arg(long = "device", value_delimiter = ',')]
    pub devices: Vec<String>,
    /// Scenarios to run in each guest (comma-separated; see `list`).
    #[arg(long = "scenario", value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// Guest kernels: sid, trixie, trixie-rt; sid-built, trixie-built, trixie-rt-built (the
    /// whole kernel built from that kernel's Debian source with the repo's config fragment,
    /// e.g. for the latency tracers); sid-debug (the same with nicemu-guest/kernel/debug.config:
    /// lockdep, KASAN, kmemleak, …); tree:DIR (a kernel tree built out of tree); or a
    /// bzImage path (with --modules). Repeatable / comma-separated.
    #[arg(long = "kernel", value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Modules directory (lib/modules/KVER) for a bzImage --kernel.
    #[arg(long)]
    pub modules: Option<PathBuf>,
    /// A patch (`-p1` unified diff) applied to every kernel's exact Debian source, in order
    /// (repeatable). Changes only inside module directories build those modules against the
    /// kernel's own build tree and boot the stock kernel with them; anything else builds the
    /// whole kernel; Documentation/ only boots the stock kernel.
    #[arg(long = "patch")]
    pub patches: Vec<PathBuf>,
    /// A/B: patches for kernel A only (repeatable).
    #[arg(long = "patch-a", requires = "kernel_a")]
    pub patches_a: Vec<PathBuf>,
    /// A/B: patches for kernel B only (repeatable).
    #[arg(long = "patch-b", requires = "kernel_b")]
    pub patches_b: Vec<PathBuf>,
    /// A driver's source directory (e.g. an edited copy of igb/) built against every
    /// kernel's build tree; its modules replace the stock ones (repeatable). Never written to.
    #[arg(long = "driver-dir")]
    pub driver_dirs: Vec<PathBuf>,
    /// A/B: a driver directory for kernel A only.
    #[arg(long = "driver-dir-a", requires = "kernel_a")]
    pub driver_dirs_a: Vec<PathBuf>,
    /// A/B: a driver directory for kernel B only.
    #[arg(long = "driver-dir-b", requires = "kernel_b")]
    pub driver_dirs_b: Vec<PathBuf>,
    /// A kernel tree (e.g. a Linux git checkout) to build out of tree in the cache and boot;
    /// the same as --kernel tree:DIR. DIR is never written to; rebuilds are incremental.
    #[arg(long)]
    pub kernel_tree: Option<PathBuf>,
    /// A full kernel config for every kernel the harness builds (sid → built whole; a
    /// --kernel-tree's own .config is used without it); what the scenarios need and it
    /// lacks is added and named.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// A config fragment merged (as merge_config.sh does) into every built kernel's config,
    /// in order (repeatable); options the final config lacks are warned about.
    #[arg(long = "config-fragment")]
    pub config_fragments: Vec<PathBuf>,
    /// Build every named Debian kernel whole from its source (sid → sid-built), even without
    /// a patch.
    #[arg(long)]
    pub build_kernel: bool,
    /// A/B run: kernel A (with --kernel-b); prints the comparison at the end.
    #[arg(long, requires = "kernel_b", conflicts_with = "kernels")]
    pub kernel_a: Option<String>,
    /// A/B run: kernel B.
    #[arg(long, requires = "kernel_a")]
    pub kernel_b: Option<String>,
    /// Scenario parameter KEY=VALUE (repeatable; see `list`).
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// A/B rounds: boot A, B, A, B … N times each (each a fresh boot) and print per
    /// metric median, min–max, B vs A and a Mann–Whitney verdict with a bootstrap CI.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Headline metrics of the A/B table as SCENARIO.KEY patterns (`*` = one segment,
    /// e.g. `cyclictest.threads.*.p99`); default: every metric.
    #[arg(long = "main-metric", value_delimiter = ',')]
    pub main_metrics: Vec<String>,
    /// A/B cost gate: fail (exit 1) when B's median instructions per unit of work grow past
    /// the limit, e.g. `netperf.tests.*.cost.modules.igb=+1%` (SCENARIO.KEY patterns over the
    /// `cost` counts; repeatable, comma-separated lists allowed).
    #[arg(long = "cost-limit", value_name = "METRIC=+N%", requires = "kernel_b")]
    pub cost_limits: Vec<String>,
    /// Peer placement: netns (a second port of the same kind in a network namespace),
    /// single (no peer), interop-igb / interop-e1000e (nicemu device under test, QEMU's
    /// igb / e1000e as the peer, joined through nicemu's stream wire), mixed (nicemu-igb
    /// device under test igb0, nicemu ixgbe port ixgbe1 as the peer, one nicemu process).
    #[arg(long, value_enum)]
    pub topology: Option<Topology>,
    /// Run only shard K of N (cells round robin), e.g. --shard 2/4.
    #[arg(long)]
    pub shard: Option<String>,
    /// How each guest boots.
    #[command(flatten)]
    pub guest: GuestArgs,
    /// Renderings to write besides the run directory's results.json/report.html/junit.xml.
    #[command(flatten)]
    pub out: Outputs,
    /// Keep the kernel and initramfs copies in the run directory.
    #[arg(long)]
    pub keep_images: bool,
}

/// How each guest boots: options `run` and `experiment` share.
#[derive(Debug, Args, Clone)]
pub struct GuestArgs {
    /// Acceleration: auto tries a short KVM boot and falls back to TCG.
    #[arg(long, value_enum, default_value = "auto")]
    pub accel: Accel,
    /// Guest vCPUs.
    #[arg(long, default_value_t = 2)]
    pub smp: u32,
    /// Pin vCPU i to host core i (mod cores) and nicemu's threads to the next core.
    #[arg(long)]
    pub pin: bool,
    /// Guest RAM in MiB.
    #[arg(long, default_value_t = 1024)]
    pub mem: u32,
    /// Per-guest timeout in seconds (boot + all scenarios); default from the scenarios.
    #[arg(long)]
    pub timeout: Option<u64>,
    /// nicemu binary (default: next to nicemu-guest, else on PATH).
    #[arg(long)]
    pub nicemu: Option<PathBuf>,
    /// Kernel splats that do not fail a cell (default: nicemu-guest/splats/ignore.toml,
    /// built in).
    #[arg(long = "splat-ignore")]
    pub splat_ignore: Option<PathBuf>,
}

/// Options of `experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// Experiment name (see `list`).
    pub name: String,
    /// Rounds per side (default: the experiment's; at least 4 to reach 5 %).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Device under test instead of the experiment's.
    #[arg(long)]
    pub device: Option<String>,
    /// Base kernel of both sides instead of the experiment's (sid, sid-built, …).
    #[arg(long)]
    pub kernel: Option<String>,
    /// A/A: both sides unpatched (checks that the statistics do not cry wolf).
    #[arg(long, conflicts_with = "patch")]
    pub aa: bool,
    /// The B side's patch instead of the shipped one.
    #[arg(long)]
    pub patch: Option<PathBuf>,
    /// Scenario parameter KEY=VALUE on top of the experiment's (repeatable).
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// Print the experiment's README and exit.
    #[arg(long)]
    pub readme: bool,
    /// Cost gate as `run --cost-limit` (e.g. `netperf.tests.*.cost.kernel=+1%`).
    #[arg(long = "cost-limit", value_name = "METRIC=+N%")]
    pub cost_limits: Vec<String>,
    /// How each guest boots (the same options as `run`'s).
    #[command(flatten)]
    pub guest: GuestArgs,
    /// Renderings to write besides the run directory's.
    #[command(flatten)]
    pub out: Outputs,
}

/// Options of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results JSON files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Outputs (the merged JSON with --json).
    #[command(flatten)]
    pub out: Outputs,
}

/// Options of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results of A, then of B; or one file holding exactly two kernels.
    #[arg(required = true, num_args = 1..=2)]
    pub files: Vec<PathBuf>,
    /// Show the metrics matching GLOB (`SCENARIO.KEY`, `*` any characters, e.g.
    /// `netperf.*`, `*.p99`); repeatable. Default: each scenario's headline metrics.
    #[arg(long = "metric", value_name = "GLOB")]
    pub metrics: Vec<String>,
    /// Show every metric (internal latency rows included).
    #[arg(long)]
    pub all: bool,
    /// markdown (tables), or text: at most 75 columns, verdicts first, a Tested-on block.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: TextFormat,
}

/// How `report` and `compare` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TextFormat {
    /// Markdown tables.
    Markdown,
    /// Plain text of at most 75 columns for a mail or cover letter.
    Text,
}

/// Options of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results JSON file.
    pub file: PathBuf,
    /// markdown (tables), or text: at most 75 columns, verdicts first, a Tested-on block.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: TextFormat,
    /// Outputs.
    #[command(flatten)]
    pub out: Outputs,
}
