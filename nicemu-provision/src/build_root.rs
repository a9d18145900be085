// SPDX-License-Identifier: Apache-2.0
//! Debian build roots for kernels of suites other than sid. A trixie kernel's modules must be
//! built against trixie's `linux-headers-KVER`, whose `linux-kbuild` and compiler (`gcc-14`)
//! are trixie's: installing them into the sid root would drag sid's packages into a mix apt
//! refuses. So trixie gets a root of its own, made like the sid root (mmdebstrap, as root or
//! rootless, default mirror, built in `CACHE/trixie-root.tmp` and renamed when complete); the module
//! build then installs the kernel's headers into it (nicemu-guest's `build::tree::ModuleTree`).

use std::path::PathBuf;
use std::time::Instant;

use super::lock::FileLock;
use crate::error::{Error, Result};

/// What every build root holds before a kernel's headers are added.
const PACKAGES: &[&str] = &["make", "ccache", "kmod", "xz-utils"];
/// Written into a finished root.
const STAMP: &str = "etc/nicemu-build-root.stamp";

/// The suites a build root can be made for (sid has its own root).
const SUITES: &[&str] = &["trixie"];

/// Makes sure `CACHE/SUITE-root` exists and is complete; returns its path.
pub fn ensure(suite: &str) -> Result<PathBuf> {
    if !SUITES.contains(&suite) {
        return Err(Error::Usage(format!(
            "no build root for Debian {suite} (known: {})",
            SUITES.join(", ")
        )));
    }
    let cache = super::cache::cache_dir()?;
    let root = cache.join(format!("{suite}-root"));
    if root.join(STAMP).is_file() {
        return Ok(root);
    }
    let _lock = FileLock::exclusive(&cache.join(format!("{suite}-root.lock")))?;
    if root.join(STAMP).is_file() {
        return Ok(root);
    }
    if super::privilege::current() == super::privilege::Privilege::Rootless {
        super::privilege::check_rootless(true)?;
    }
    let tmp = cache.join(format!("{suite}-root.tmp"));
    for d in [&tmp, &root] {
        if d.exists() {
            println!("provision: removing unfinished {}", d.display());
            std::fs::remove_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
    }
    let started = Instant::now();
    let log = cache.join(format!("mmdebstrap-{suite}.log"));
    super::bootstrap::make_root(suite, PACKAGES, &tmp, &log)?;
    let stamp = tmp.join(STAMP);
    std::fs::write(&stamp, PACKAGES.join("\n")).map_err(|e| Error::io(&stamp, e))?;
    std::fs::rename(&tmp, &root).map_err(|e| Error::io(&root, e))?;
    println!(
        "provision: Debian {suite} build root ready in {:.0} s: {}",
        started.elapsed().as_secs_f64(),
        root.display()
    );
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_suites_get_a_root() {
        let e = ensure("bookworm").unwrap_err().to_string();
        assert!(e.contains("no build root for Debian bookworm"), "{e}");
    }
}
