//! `nicemu-guest`: the guest test harness for nicemu.

mod cli;
mod cmd;
mod error;
mod image;
mod provision;
mod report;
mod run;
mod scenario;
mod vm;

use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    vm::signals::install();
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Provision => match provision::provision() {
            Ok(p) => {
                println!("provision: cache {}", p.cache.display());
                println!("provision: sid root {}", p.sid_root.display());
                match &p.qemu {
                    provision::QemuLauncher::Host(q) => println!("provision: QEMU {}", q.display()),
                    provision::QemuLauncher::Chroot(r) => {
                        println!("provision: QEMU via chroot {}", r.display())
                    }
                }
                0
            }
            Err(e) => fail(&e),
        },
        cli::Command::List => {
            let devs: Vec<&str> = vm::device::DeviceKind::ALL
                .iter()
                .map(|d| d.name())
                .collect();
            println!("devices:   {}", devs.join(", "));
            println!("scenarios: {}", scenario::NAMES.join(", "));
            0
        }
        cli::Command::Run(args) => match run::run(&args) {
            Ok(r) if r.passed() => 0,
            Ok(_) => 1,
            Err(e) => fail(&e),
        },
    };
    std::process::exit(code);
}

fn fail(e: &error::Error) -> i32 {
    eprintln!("nicemu-guest: error: {e}");
    match e {
        error::Error::Interrupted => 130,
        _ => 2,
    }
}
