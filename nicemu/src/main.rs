// SPDX-License-Identifier: Apache-2.0
//! `nicemu`: emulated Intel NICs for QEMU. See `nicemu --help`.
// The length rule is for non-test code (tests read best as one scenario).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use clap::Parser as _;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = match nicemu::Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        // `nicemu ctl` without a verb: clap's usage (or help) as clap lays it out, exit 2.
        Err(e) if missing_verb(e.kind()) => e.exit(),
        Err(e) => {
            eprintln!("nicemu: {}", one_line(&e.to_string()));
            std::process::exit(2);
        }
    };
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

/// A command given without its subcommand, which clap answers with a usage or help text
/// that reads only as the lines it is laid out in.
fn missing_verb(kind: clap::error::ErrorKind) -> bool {
    use clap::error::ErrorKind;
    matches!(
        kind,
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    )
}

/// A clap error on one line: "error: " and the "--help" hint dropped, the rest
/// (what was wrong, the possible values) joined.
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}
