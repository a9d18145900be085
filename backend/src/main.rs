//! `nicemu`: emulated Intel NICs for QEMU. See `nicemu --help`.

use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = nicemu::Cli::parse();
    if let Err(e) = nicemu::run(cli) {
        eprintln!("nicemu: {e}");
        std::process::exit(2);
    }
}
