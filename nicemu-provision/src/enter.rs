// SPDX-License-Identifier: Apache-2.0
//! Commands run inside the sid root (or a build root): `chroot ROOT PROGRAM` as root (with
//! `/proc` and `/dev` bind-mounted by [`super::mounts::BindMounts`]), and as an ordinary user
//! `bwrap` in a user namespace where the user is uid 0, the root bound at `/` with a fresh
//! `/proc` and a minimal `/dev` (plus `/dev/kvm` when the host has it). Paths inside are the
//! same either way, so callers do not care which (see [`super::privilege`]).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use super::privilege::{self, Privilege};

/// A command that runs, inside `root`, the program and arguments added to it (as this
/// process's privilege allows): `chroot ROOT` or `bwrap … --`.
pub fn in_root(root: impl AsRef<Path>) -> Command {
    in_root_as(privilege::current(), root.as_ref())
}

/// `program` run inside `root`; add arguments to it.
pub fn command(root: &Path, program: impl AsRef<OsStr>) -> Command {
    let mut c = in_root(root);
    c.arg(program);
    c
}

/// [`in_root`] for a given privilege mode.
pub fn in_root_as(mode: Privilege, root: &Path) -> Command {
    match mode {
        Privilege::Root => {
            let mut c = Command::new("chroot");
            c.arg(root);
            c
        }
        Privilege::Rootless => {
            let mut c = Command::new("bwrap");
            c.args(["--unshare-user", "--uid", "0", "--gid", "0"])
                // Capabilities inside the user namespace only (what a root program like
                // virtiofsd or dpkg expects of uid 0); nothing outside it.
                .args(["--cap-add", "ALL"])
                // A pid namespace of its own lets bwrap mount a fresh /proc; bwrap stays its
                // init and every process inside dies with the harness.
                .args(["--unshare-pid", "--die-with-parent"])
                .arg("--bind")
                .arg(root)
                .arg("/")
                .args(["--proc", "/proc", "--dev", "/dev"])
                .args(["--dev-bind-try", "/dev/kvm", "/dev/kvm"])
                .args(["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"])
                .args(["--setenv", "HOME", "/root", "--chdir", "/", "--"]);
            c
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn root_chroots_and_a_user_enters_with_bwrap_as_uid_0() {
        let root = Path::new("/cache/sid-root");
        let mut c = in_root_as(Privilege::Root, root);
        c.args(["qemu-system-x86_64", "--version"]);
        assert_eq!(
            words(&c),
            [
                "chroot",
                "/cache/sid-root",
                "qemu-system-x86_64",
                "--version"
            ]
        );
        let mut c = in_root_as(Privilege::Rootless, root);
        c.args(["qemu-system-x86_64", "--version"]);
        let w = words(&c);
        assert_eq!(w[0], "bwrap");
        let at = |s: &str| w.iter().position(|x| x == s).unwrap();
        assert_eq!(
            &w[at("--uid")..at("--uid") + 4],
            ["--uid", "0", "--gid", "0"]
        );
        assert_eq!(
            &w[at("--bind")..at("--bind") + 3],
            ["--bind", "/cache/sid-root", "/"]
        );
        assert_eq!(&w[at("--")..], ["--", "qemu-system-x86_64", "--version"]);
    }
}
