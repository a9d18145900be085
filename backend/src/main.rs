//! `nicemu`: emulated Intel NICs for QEMU. See `nicemu --help`.

use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = nicemu::Cli::parse();
    if let Some(nicemu::Command::Ctl(args)) = &cli.command {
        match nicemu::control::client::run(args) {
            Ok(out) => print!("{out}"),
            Err(e) => {
                eprintln!("nicemu ctl: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if let Err(e) = nicemu::run(cli) {
        eprintln!("nicemu: {e}");
        std::process::exit(2);
    }
}
