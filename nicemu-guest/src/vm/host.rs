// SPDX-License-Identifier: Apache-2.0
//! Host-side actions a guest scenario asks for while it runs.
//!
//! A scenario prints `@@NICEMU-HOST <scenario> <tag> <verb> <args…>` on the serial console;
//! the boot loop (reading the console live) hands the line to [`HostActions::handle`], which
//! runs the action, records its output in the cell's `host-actions.log` and returns
//! - console lines `@@NICEMU-OUT <scenario> host_<tag> <line>` and
//!   `@@NICEMU <scenario> host_<tag>_rc=<n>`, added to the captured console (and to
//!   `serial.log`, prefixed `[host] `) so scenario parsers see the host's view next to the
//!   guest's, and
//! - the acknowledgement `@@NICEMU-ACK <scenario> <tag> rc=<n>` written to the guest's
//!   serial input, which the guest's `nicemu_host` helper waits for (bounded).
//!
//! Verbs:
//! - `ctl ARGS…`: `nicemu ctl --control RUN/ctl.sock ARGS…`. The words `DUT` and `PEER` name
//!   the device under test and the peer port (their nicemu `id=`); a capture or trace file
//!   must be a bare file name and lands in the cell directory.
//! - `pcap FILE`: `tcpdump -nn -e -r CELLDIR/FILE` (FILE a bare name).
//! - `regsweep FILE`: the statistics sweeps of register trace CELLDIR/FILE (see
//!   [`super::register_trace`]), computed here; `regcount FILE`: its reads counted.
//!
//! The guest is the harness's own generated script, but its requests are still checked:
//! only plain words (letters, digits, `._:=,-`), no paths.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Marker of a guest's request line.
pub const REQUEST_MARKER: &str = "@@NICEMU-HOST";
/// Marker of the harness's acknowledgement written to the guest's serial input.
pub const ACK_MARKER: &str = "@@NICEMU-ACK";
/// Name of the control socket in a cell directory.
pub const CONTROL_SOCKET: &str = "ctl.sock";
/// Options of `nicemu ctl` that take a value.
const CTL_VALUE_OPTIONS: &[&str] = &["--file", "--filter", "--count"];
/// Longest time one host action may take before it is killed.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(20);

/// A parsed guest request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The scenario asking.
    pub scenario: String,
    /// The request's tag (unique within the scenario).
    pub tag: String,
    /// What to do.
    pub verb: Verb,
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verb {
    /// `nicemu ctl` with these arguments (placeholders not yet replaced).
    Ctl(Vec<String>),
    /// Decode a capture file of the cell directory with tcpdump.
    Pcap(String),
    /// Summarise the statistics sweeps of a register trace file of the cell directory.
    Regsweep(String),
    /// Count the reads of a register trace file of the cell directory.
    Regcount(String),
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The line lacks scenario, tag or verb.
    #[error("malformed request (expected `{REQUEST_MARKER} SCENARIO TAG VERB ARGS…`)")]
    Malformed,
    /// A word holds characters outside the allowed set.
    #[error("word {0:?} holds characters other than letters, digits and ._:=,-")]
    BadWord(String),
    /// The verb is not `ctl`, `pcap`, `regsweep` or `regcount`.
    #[error("unknown verb {0:?} (known: ctl, pcap, regsweep, regcount)")]
    UnknownVerb(String),
    /// A file name that is not a plain name in the cell directory.
    #[error("file {0:?} must be a plain name (no leading dot)")]
    BadFile(String),
    /// A file argument is missing.
    #[error("{0} needs a file name")]
    MissingFile(&'static str),
}

fn word_ok(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:=,-".contains(c))
}

/// Parses a request line (from the marker on).
pub fn parse_request(line: &str) -> Result<Request, RequestError> {
    let rest = line
        .trim_end_matches(['\r', '\n'])
        .strip_prefix(REQUEST_MARKER)
        .ok_or(RequestError::Malformed)?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [scenario, tag, verb, args @ ..] = words.as_slice() else {
        return Err(RequestError::Malformed);
    };
    for w in &words {
        if !word_ok(w) {
            return Err(RequestError::BadWord((*w).to_owned()));
        }
    }
    let verb = match *verb {
        "ctl" => Verb::Ctl(args.iter().map(|s| (*s).to_owned()).collect()),
        "pcap" => Verb::Pcap(
            args.first()
                .ok_or(RequestError::MissingFile("pcap"))?
                .to_string(),
        ),
        "regsweep" => Verb::Regsweep(
            args.first()
                .ok_or(RequestError::MissingFile("regsweep"))?
                .to_string(),
        ),
        "regcount" => Verb::Regcount(
            args.first()
                .ok_or(RequestError::MissingFile("regcount"))?
                .to_string(),
        ),
        other => return Err(RequestError::UnknownVerb(other.to_owned())),
    };
    Ok(Request {
        scenario: (*scenario).to_owned(),
        tag: (*tag).to_owned(),
        verb,
    })
}

/// What handling one request produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// Lines to add to the captured console (marked, so scenario parsers read them).
    pub console: Vec<String>,
    /// The acknowledgement line for the guest (without newline).
    pub ack: String,
}

/// Runs the host side of a guest's requests for one cell.
#[derive(Debug)]
pub struct HostActions {
    nicemu: PathBuf,
    control: PathBuf,
    dir: PathBuf,
    names: Vec<(&'static str, String)>,
    log: PathBuf,
    started: Instant,
}

impl HostActions {
    /// Host actions against the nicemu `binary` serving control socket `control`, with
    /// files in the cell directory `dir`; `dut` and `peer` are the nicemu device ids the
    /// words `DUT` and `PEER` stand for.
    pub fn new(binary: &Path, control: &Path, dir: &Path, dut: &str, peer: Option<&str>) -> Self {
        let mut names = vec![("DUT", dut.to_owned())];
        if let Some(p) = peer {
            names.push(("PEER", p.to_owned()));
        }
        HostActions {
            nicemu: binary.to_path_buf(),
            control: control.to_path_buf(),
            dir: dir.to_path_buf(),
            names,
            log: dir.join("host-actions.log"),
            started: Instant::now(),
        }
    }

    /// The `nicemu ctl` arguments for `args`: placeholders replaced, file names placed in
    /// the cell directory. Options are read as `nicemu ctl` reads them (`--opt VALUE` or
    /// `--opt=VALUE`, anywhere), so the file is found however the guest spells it: the
    /// value of `--file`, and `capture`'s second positional word. `--control` is refused
    /// (the harness names the socket).
    pub fn ctl_args(&self, args: &[String]) -> Result<Vec<String>, RequestError> {
        let mut out = vec![
            "ctl".to_owned(),
            "--control".to_owned(),
            self.control.display().to_string(),
        ];
        let mut positional = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (opt, inline) = match a.split_once('=') {
                Some((o, v)) if a.starts_with("--") => (o, Some(v.to_owned())),
                _ => (a.as_str(), None),
            };
            if opt == "--control" {
                return Err(RequestError::BadWord(a.clone()));
            }
            if !opt.starts_with('-') {
                positional.push(out.len());
                out.push(self.replace_name(a));
                continue;
            }
            if !CTL_VALUE_OPTIONS.contains(&opt) {
                out.push(a.clone());
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => it.next().cloned().ok_or(match opt {
                    "--file" => RequestError::MissingFile("--file"),
                    _ => RequestError::Malformed,
                })?,
            };
            if opt == "--file" {
                out.push(opt.to_owned());
                out.push(self.cell_file(&value)?);
            } else if a.contains('=') {
                out.push(a.clone());
            } else {
                out.extend([opt.to_owned(), value]);
            }
        }
        // `capture DEV FILE`: the third positional word, unless it is `stop`.
        let is_capture = positional.first().is_some_and(|&i| out[i] == "capture");
        if let (true, Some(&i)) = (is_capture, positional.get(2)) {
            if out[i] != "stop" {
                out[i] = self.cell_file(&out[i].clone())?;
            }
        }
        Ok(out)
    }

    fn replace_name(&self, a: &str) -> String {
        self.names
            .iter()
            .find(|(k, _)| *k == a)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| a.to_owned())
    }

    /// A bare file name as a path in the cell directory.
    fn cell_file(&self, name: &str) -> Result<String, RequestError> {
        if name.is_empty() || name.starts_with('.') || name.contains('/') {
            return Err(RequestError::BadFile(name.to_owned()));
        }
        Ok(self.dir.join(name).display().to_string())
    }

    /// Handles one request line (from the marker on).
    pub fn handle(&mut self, line: &str) -> Handled {
        let req = parse_request(line);
        let (scen, tag) = match &req {
            Ok(r) => (r.scenario.clone(), r.tag.clone()),
            Err(_) => {
                let w: Vec<&str> = line.split_whitespace().collect();
                (
                    w.get(1).copied().unwrap_or("unknown").to_owned(),
                    w.get(2).copied().unwrap_or("unknown").to_owned(),
                )
            }
        };
        let (cmdline, rc, text) = match req {
            Err(e) => (String::new(), -2, format!("refused: {e}")),
            Ok(Request {
                verb: v @ (Verb::Regsweep(_) | Verb::Regcount(_)),
                ..
            }) => self.trace_report(&v),
            Ok(r) => match self.command(&r.verb) {
                Err(e) => (String::new(), -2, format!("refused: {e}")),
                Ok(mut cmd) => {
                    let shown = nicemu_provision::cmd::display(&cmd);
                    let (rc, text) = run_bounded(&mut cmd, ACTION_TIMEOUT);
                    (shown, rc, text)
                }
            },
        };
        self.write_log(&scen, &tag, &cmdline, rc, &text);
        // `ctl --json` pretty-prints; one compact line keeps the console (and fixtures) small.
        let text = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => v.to_string(),
            Err(_) => text,
        };
        let mut console: Vec<String> = text
            .lines()
            .map(|l| format!("@@NICEMU-OUT {scen} host_{tag} {}", l.trim_end()))
            .collect();
        console.push(format!("@@NICEMU {scen} host_{tag}_rc={rc}"));
        Handled {
            console,
            ack: format!("{ACK_MARKER} {scen} {tag} rc={rc}"),
        }
    }

    fn command(&self, verb: &Verb) -> Result<Command, RequestError> {
        match verb {
            Verb::Ctl(args) => {
                let mut c = Command::new(&self.nicemu);
                c.args(self.ctl_args(args)?);
                Ok(c)
            }
            Verb::Regsweep(_) | Verb::Regcount(_) => Err(RequestError::UnknownVerb(
                "regsweep/regcount run in-process".into(),
            )),
            Verb::Pcap(file) => {
                if file.starts_with('.') {
                    return Err(RequestError::BadFile(file.clone()));
                }
                let mut c = Command::new(tcpdump_binary());
                c.args(["-nn", "-e", "-r"]).arg(self.dir.join(file));
                Ok(c)
            }
        }
    }

    /// `regsweep` / `regcount` of a trace file in the cell directory: (what ran, rc, text).
    fn trace_report(&self, verb: &Verb) -> (String, i32, String) {
        type Report = fn(&Path) -> Result<String, String>;
        let (name, f, report): (&str, &String, Report) = match verb {
            Verb::Regsweep(f) => ("regsweep", f, super::register_trace::report),
            Verb::Regcount(f) => ("regcount", f, super::register_trace::count_report),
            _ => return (String::new(), -2, "refused: not a trace report".into()),
        };
        if f.starts_with('.') {
            return (
                String::new(),
                -2,
                format!("refused: {}", RequestError::BadFile(f.clone())),
            );
        }
        match report(&self.dir.join(f)) {
            Ok(text) => (format!("{name} {f}"), 0, text),
            Err(e) => (format!("{name} {f}"), 1, e),
        }
    }

    fn write_log(&self, scen: &str, tag: &str, cmdline: &str, rc: i32, text: &str) {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log);
        if let Ok(mut f) = f {
            let _ = writeln!(
                f,
                "[{:8.3}] {scen} {tag}: {cmdline}\n  exit {rc}",
                self.started.elapsed().as_secs_f64()
            );
            for l in text.lines() {
                let _ = writeln!(f, "  | {l}");
            }
        }
    }
}

/// tcpdump on PATH or in /usr/sbin (root's PATH may lack sbin).
pub fn tcpdump_binary() -> PathBuf {
    nicemu_provision::cmd::on_path("tcpdump")
        .or_else(|| {
            let p = PathBuf::from("/usr/sbin/tcpdump");
            nicemu_provision::cmd::is_executable(&p).then_some(p)
        })
        .unwrap_or_else(|| PathBuf::from("tcpdump"))
}

/// Makes sure the host has tcpdump (the capture check's reader): installs Debian's
/// package with apt-get when missing (idempotent; needs root). Returns what happened.
pub fn ensure_tcpdump() -> Result<String, String> {
    let found = tcpdump_binary();
    if found.is_absolute() {
        return Ok(format!("tcpdump: {}", found.display()));
    }
    if !nicemu_provision::cmd::is_root() {
        return Err(
            "tcpdump is missing and installing it needs root (apt-get install tcpdump)".into(),
        );
    }
    let install = |update: bool| -> Result<(), String> {
        if update {
            nicemu_provision::cmd::output_ok(Command::new("apt-get").args(["update", "-qq"]))
                .map_err(|e| e.to_string())?;
        }
        nicemu_provision::cmd::output_ok(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-qq", "--no-install-recommends", "tcpdump"]),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    install(false).or_else(|_| install(true))?;
    let found = tcpdump_binary();
    if found.is_absolute() {
        Ok(format!("tcpdump: installed {}", found.display()))
    } else {
        Err("apt-get install tcpdump succeeded but no tcpdump binary was found".into())
    }
}

/// Runs `cmd` with a time limit; returns (exit code, stdout followed by stderr). A command
/// that cannot start gives 127, one killed for the time limit 124, one killed by a signal -1.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> (i32, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (127, format!("cannot start: {e}")),
    };
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(out)) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            (out.status.code().unwrap_or(-1), text)
        }
        Ok(Err(e)) => (-1, format!("wait failed: {e}")),
        Err(_) => {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
            (124, format!("killed after {} s", limit.as_secs()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions() -> HostActions {
        HostActions::new(
            Path::new("/bin/nicemu"),
            Path::new("/run/c/ctl.sock"),
            Path::new("/run/c"),
            "igb0",
            Some("igb1"),
        )
    }

    #[test]
    fn requests_parse_and_bad_words_are_refused() {
        let r = parse_request("@@NICEMU-HOST faults link_down ctl link DUT down\r").unwrap();
        assert_eq!(r.scenario, "faults");
        assert_eq!(r.tag, "link_down");
        assert_eq!(
            r.verb,
            Verb::Ctl(vec!["link".into(), "DUT".into(), "down".into()])
        );
        let r = parse_request("@@NICEMU-HOST faults rd pcap cap.pcap").unwrap();
        assert_eq!(r.verb, Verb::Pcap("cap.pcap".into()));
        assert_eq!(
            parse_request("@@NICEMU-HOST faults t ctl capture DUT /etc/x"),
            Err(RequestError::BadWord("/etc/x".into()))
        );
        assert_eq!(
            parse_request("@@NICEMU-HOST faults t rm x"),
            Err(RequestError::UnknownVerb("rm".into()))
        );
        assert_eq!(
            parse_request("@@NICEMU-HOST faults"),
            Err(RequestError::Malformed)
        );
    }

    #[test]
    fn ctl_args_replace_devices_and_place_files() {
        let a = actions();
        let w = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            a.ctl_args(&w("--json stats DUT")).unwrap(),
            w("ctl --control /run/c/ctl.sock --json stats igb0")
        );
        assert_eq!(
            a.ctl_args(&w("capture DUT cap.pcap")).unwrap(),
            w("ctl --control /run/c/ctl.sock capture igb0 /run/c/cap.pcap")
        );
        assert_eq!(
            a.ctl_args(&w("capture PEER stop")).unwrap(),
            w("ctl --control /run/c/ctl.sock capture igb1 stop")
        );
        assert_eq!(
            a.ctl_args(&w("trace DUT on --file t.log")).unwrap(),
            w("ctl --control /run/c/ctl.sock trace igb0 on --file /run/c/t.log")
        );
        a.ctl_args(&w("trace DUT on --file")).unwrap_err();
    }

    #[test]
    fn a_guest_cannot_name_a_host_file_however_it_spells_the_option() {
        let a = actions();
        let w = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        // `--file=NAME` as one word lands in the cell directory too.
        assert_eq!(
            a.ctl_args(&w("trace DUT on --file=t.log")).unwrap(),
            w("ctl --control /run/c/ctl.sock trace igb0 on --file /run/c/t.log")
        );
        assert_eq!(
            a.ctl_args(&w("trace DUT on --file=.bashrc")),
            Err(RequestError::BadFile(".bashrc".into()))
        );
        // An option before the device does not shift which word is the file.
        assert_eq!(
            a.ctl_args(&w("capture --count 3 DUT x.pcap")).unwrap(),
            w("ctl --control /run/c/ctl.sock capture --count 3 igb0 /run/c/x.pcap")
        );
        assert_eq!(
            a.ctl_args(&w("capture --count=3 DUT x.pcap")).unwrap(),
            w("ctl --control /run/c/ctl.sock capture --count=3 igb0 /run/c/x.pcap")
        );
        // The control socket is the harness's choice.
        a.ctl_args(&w("--control=x list")).unwrap_err();
        a.ctl_args(&w("--control x list")).unwrap_err();
    }

    #[test]
    fn handling_reports_output_rc_and_ack() {
        let dir = std::env::temp_dir().join(format!("nicemu-host-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // `echo` stands in for nicemu: the output is the ctl argument list.
        let mut a = HostActions::new(
            Path::new("/bin/echo"),
            &dir.join("ctl.sock"),
            &dir,
            "ixgbe0",
            None,
        );
        let h = a.handle("@@NICEMU-HOST faults l1 ctl link DUT down");
        assert_eq!(h.ack, "@@NICEMU-ACK faults l1 rc=0");
        assert!(h.console[0].starts_with("@@NICEMU-OUT faults host_l1 ctl --control "));
        assert!(h.console[0].ends_with("link ixgbe0 down"));
        assert_eq!(h.console.last().unwrap(), "@@NICEMU faults host_l1_rc=0");
        let h = a.handle("@@NICEMU-HOST faults l2 ctl link PEER down");
        assert!(h.console[0].ends_with("link PEER down"), "{:?}", h.console);
        let h = a.handle("@@NICEMU-HOST faults bad ctl capture DUT ../x");
        assert_eq!(h.ack, "@@NICEMU-ACK faults bad rc=-2");
        let h = a.handle("@@NICEMU-HOST faults bad ctl capture DUT ..");
        assert_eq!(h.ack, "@@NICEMU-ACK faults bad rc=-2");
        let h = a.handle("@@NICEMU-HOST faults bad ctl link DUT $(reboot)");
        assert_eq!(h.ack, "@@NICEMU-ACK faults bad rc=-2");
        let log = std::fs::read_to_string(dir.join("host-actions.log")).unwrap();
        assert!(log.contains("refused"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
