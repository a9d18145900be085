// SPDX-License-Identifier: Apache-2.0
//! Root or rootless, and the host features rootless needs.
//!
//! As root, the harness makes the sid root with `mmdebstrap --mode=root` and enters it with
//! `chroot` plus bind mounts of `/proc` and `/dev`. As an ordinary user it makes the root with
//! `mmdebstrap --mode=unshare` (a user namespace mapping the user's subordinate ids; every file
//! then belongs to the user) and enters it with bubblewrap in a user namespace of its own,
//! where the user is uid 0 (`bwrap --unshare-user --uid 0 --gid 0`): no setuid helper, no
//! mount on the host, and a cache the user owns. What each needs:
//!
//! | feature | entering (every run) | creating the root (first run) |
//! |---|---|---|
//! | unprivileged user namespaces (`user.max_user_namespaces` > 0; Debian's older `kernel.unprivileged_userns_clone` = 1; Ubuntu's `kernel.apparmor_restrict_unprivileged_userns` = 0) | yes | yes |
//! | `bwrap` (Debian `bubblewrap`) | yes | – |
//! | `mmdebstrap`, `newuidmap`/`newgidmap` (`uidmap`), a subordinate id range for the user in `/etc/subuid` and `/etc/subgid` | – | yes |

use std::path::Path;
use std::process::{Command, Stdio};

use crate::cmd::{is_root, on_path};
use crate::error::{Error, Result};

/// How the harness reaches inside the sid root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    /// Running as root: chroot and bind mounts.
    Root,
    /// An ordinary user: user namespaces (bubblewrap, mmdebstrap --mode=unshare).
    Rootless,
}

/// The mode of this process (root when the effective uid is 0).
pub fn current() -> Privilege {
    if is_root() {
        Privilege::Root
    } else {
        Privilege::Rootless
    }
}

/// Checks, as an ordinary user, what entering (and with `creating`, making) the sid root
/// needs; the error says what to install or change, or to run as root.
pub fn check_rootless(creating: bool) -> Result<()> {
    if let Some(why) = userns_blocker(Path::new("/proc/sys")) {
        return Err(Error::Prerequisite(format!(
            "{why}; or run nicemu-guest as root"
        )));
    }
    if on_path("bwrap").is_none() {
        return Err(Error::Prerequisite(
            "running rootless needs bubblewrap: apt-get install bubblewrap (as root), or run \
             nicemu-guest as root"
                .into(),
        ));
    }
    userns_works()?;
    if creating {
        check_creating()?;
    }
    Ok(())
}

/// What of `mmdebstrap --mode=unshare` is missing: the tools and the user's subordinate ids.
fn check_creating() -> Result<()> {
    let missing: Vec<&str> = [("mmdebstrap", "mmdebstrap"), ("newuidmap", "uidmap")]
        .iter()
        .filter(|(tool, _)| on_path(tool).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    if !missing.is_empty() {
        return Err(Error::Prerequisite(format!(
            "making the sid root rootless needs mmdebstrap --mode=unshare: apt-get install {} \
             (as root), or run nicemu-guest as root",
            missing.join(" ")
        )));
    }
    let user = user_name();
    for file in ["/etc/subuid", "/etc/subgid"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if !has_range(&text, &user, current_uid()) {
            return Err(Error::Prerequisite(format!(
                "{file} gives {user} no subordinate id range (mmdebstrap --mode=unshare maps \
                 the root's users into one): as root, usermod --add-subuids 100000-165535 \
                 --add-subgids 100000-165535 {user}"
            )));
        }
    }
    Ok(())
}

/// Why unprivileged user namespaces cannot be made, from the knobs under `sys` (/proc/sys).
pub(crate) fn userns_blocker(sys: &Path) -> Option<String> {
    let read = |p: &str| {
        std::fs::read_to_string(sys.join(p))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    if read("user/max_user_namespaces").as_deref() == Some("0") {
        return Some(
            "unprivileged user namespaces are off (user.max_user_namespaces = 0): as root, \
             sysctl -w user.max_user_namespaces=10000"
                .into(),
        );
    }
    if read("kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some(
            "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0): as \
             root, sysctl -w kernel.unprivileged_userns_clone=1"
                .into(),
        );
    }
    if read("kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some(
            "AppArmor restricts unprivileged user namespaces \
             (kernel.apparmor_restrict_unprivileged_userns = 1): as root, sysctl -w \
             kernel.apparmor_restrict_unprivileged_userns=0, or give bwrap and mmdebstrap an \
             AppArmor profile with `userns,`"
                .into(),
        );
    }
    None
}

/// Tries a user namespace with bwrap, the way the harness enters the root.
fn userns_works() -> Result<()> {
    let out = Command::new("bwrap")
        .args(["--unshare-user", "--uid", "0", "--gid", "0"])
        .args(["--ro-bind", "/", "/", "true"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("bwrap", e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error::Prerequisite(format!(
        "bwrap cannot make a user namespace here ({}): enable unprivileged user namespaces, \
         or run nicemu-guest as root",
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// True if a `/etc/subuid`-style `text` has a range for `user` (by name or uid).
pub(crate) fn has_range(text: &str, user: &str, uid: u32) -> bool {
    let uid = uid.to_string();
    text.lines().any(|l| {
        let mut f = l.split(':');
        let who = f.next().unwrap_or("");
        let count = f.nth(1).and_then(|c| c.trim().parse::<u64>().ok());
        (who == user || who == uid) && count.is_some_and(|c| c >= 65536)
    })
}

fn current_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).and_then(|u| u.parse().ok()))
        })
        .unwrap_or(u32::MAX)
}

/// This user's name from /etc/passwd (else `$USER`, else the uid).
fn user_name() -> String {
    let uid = current_uid().to_string();
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|p| {
            p.lines()
                .map(|l| l.split(':').collect::<Vec<_>>())
                .find(|f| f.len() > 2 && f[2] == uid)
                .map(|f| f[0].to_owned())
        })
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(tag: &str, set: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nicemu-knobs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (p, v) in set {
            let f = dir.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, format!("{v}\n")).unwrap();
        }
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn each_knob_that_blocks_user_namespaces_is_named_with_its_fix() {
        let cases = [
            (
                "user/max_user_namespaces",
                "0",
                "sysctl -w user.max_user_namespaces=",
            ),
            (
                "kernel/unprivileged_userns_clone",
                "0",
                "kernel.unprivileged_userns_clone=1",
            ),
            (
                "kernel/apparmor_restrict_unprivileged_userns",
                "1",
                "kernel.apparmor_restrict_unprivileged_userns=0",
            ),
        ];
        for (knob, v, fix) in cases {
            let dir = knobs("block", &[(knob, v)]);
            let why = userns_blocker(&dir).expect(knob);
            assert!(why.contains(fix), "{why}");
            let _ = std::fs::remove_dir_all(&dir);
        }
        let open = knobs(
            "open",
            &[
                ("user/max_user_namespaces", "96368"),
                ("kernel/unprivileged_userns_clone", "1"),
                ("kernel/apparmor_restrict_unprivileged_userns", "0"),
            ],
        );
        assert_eq!(userns_blocker(&open), None);
        let _ = std::fs::remove_dir_all(&open);
    }

    #[test]
    fn a_subordinate_range_is_found_by_name_or_uid_and_must_be_large_enough() {
        let text = "alice:100000:65536\n1001:200000:65536\nbob:300000:1000\n";
        assert!(has_range(text, "alice", 1000));
        assert!(has_range(text, "carol", 1001));
        assert!(!has_range(text, "bob", 1002), "too small for a Debian root");
        assert!(!has_range(text, "dave", 1003));
    }
}
