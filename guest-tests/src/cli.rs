//! Command-line interface.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::vm::accel::Accel;

/// Guest test harness for nicemu: provisions QEMU + a guest kernel, boots guests on
/// emulated NICs, runs scenarios and reports.
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
    /// Provision QEMU, the sid root, the guest kernel and tools (cached, idempotent).
    Provision,
    /// Boot one guest per device, run the scenarios, print a results table.
    Run(RunArgs),
    /// List devices and scenarios.
    List,
}

/// Options of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Device under test: qemu-igb, qemu-e1000e, nicemu-igb, nicemu-ixgbe (repeatable,
    /// comma-separated lists allowed). One guest is booted per device, in order.
    #[arg(long = "device", required = true, value_delimiter = ',')]
    pub devices: Vec<String>,
    /// Scenarios to run in each guest (comma-separated): probe, selftest.
    #[arg(
        long = "scenario",
        value_delimiter = ',',
        default_value = "probe,selftest"
    )]
    pub scenarios: Vec<String>,
    /// Guest kernel: "sid" (the sid root's) or a bzImage path (with --modules).
    #[arg(long, default_value = "sid")]
    pub kernel: String,
    /// Modules directory (lib/modules/KVER) for --kernel PATH.
    #[arg(long)]
    pub modules: Option<PathBuf>,
    /// Acceleration: auto tries a short KVM boot and falls back to TCG.
    #[arg(long, value_enum, default_value = "auto")]
    pub accel: Accel,
    /// Guest vCPUs.
    #[arg(long, default_value_t = 2)]
    pub smp: u32,
    /// Guest RAM in MiB.
    #[arg(long, default_value_t = 1024)]
    pub mem: u32,
    /// Per-guest timeout in seconds (boot + all scenarios).
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Also write the JSON results here (they always go to the run directory).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep the kernel and initramfs copies in the run directory (removed by default;
    /// logs and results are always kept).
    #[arg(long)]
    pub keep_images: bool,
    /// nicemu binary (default: next to nicemu-guest, else on PATH).
    #[arg(long)]
    pub nicemu: Option<PathBuf>,
}
