// SPDX-License-Identifier: Apache-2.0
//! The kernel build tree an out-of-tree module is built against (Documentation/kbuild/
//! modules.rst, "Building external modules": `make -C TREE M=DIR modules`), and the root
//! make runs in:
//! - Debian's `linux-headers-KVER` (+ `linux-kbuild`, and the compiler the kernel's config
//!   names) installed into a Debian build root: the sid root for sid kernels, the trixie
//!   build root ([`nicemu_provision::build_root`]) for trixie's;
//! - the `O=` directory of a whole kernel the harness built ([`super::whole_kernel`]), inside the
//!   sid root, with the compiler that build used.
//!
//! Either way the module's vermagic is the kernel's.

use std::path::{Path, PathBuf};

use super::make;
use crate::error::{Error, Result};

/// A tree modules are built against.
#[derive(Debug, Clone)]
pub struct ModuleTree {
    /// The root make runs in (chroot).
    pub root: PathBuf,
    /// The tree's path inside `root`.
    pub dir: String,
    /// Kernel release the modules are for.
    pub release: String,
    /// What kind of tree, with its make variables.
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Debian's headers package: ccache through Debian's own hook.
    Headers,
    /// A harness-built `O=` tree: the compiler named in its config, through ccache.
    Built {
        /// Compiler program ("gcc-16").
        cc: String,
    },
}

impl ModuleTree {
    /// Debian's build tree of `release`, installed (with make, ccache and the compiler its
    /// config names) into the Debian root `root` if missing.
    pub fn debian(root: &Path, release: &str, config: &str) -> Result<Self> {
        let dir = format!("/usr/src/linux-headers-{release}");
        let mut pkgs = vec![
            format!("linux-headers-{release}"),
            "make".to_owned(),
            "ccache".to_owned(),
        ];
        pkgs.extend(make::compiler_package(config));
        make::ensure_packages(root, &pkgs)?;
        if !root.join(&dir[1..]).join("Makefile").is_file() {
            return Err(Error::Kernel(format!(
                "{dir} has no Makefile after installing linux-headers-{release} into {}",
                root.display()
            )));
        }
        Ok(ModuleTree {
            root: root.to_path_buf(),
            dir,
            release: release.to_owned(),
            kind: Kind::Headers,
        })
    }

    /// The `O=` directory `out` (a host path inside `sid_root`) of a kernel the harness
    /// built for `release`.
    pub fn built(sid_root: &Path, out: &Path, release: &str) -> Result<Self> {
        let inside = out.strip_prefix(sid_root).map_err(|_| {
            Error::Kernel(format!(
                "{} is not inside the sid root {}",
                out.display(),
                sid_root.display()
            ))
        })?;
        let config = std::fs::read_to_string(out.join(".config"))
            .map_err(|e| Error::io(out.join(".config"), e))?;
        let cc = make::compiler_package(&config).unwrap_or_else(|| "gcc".into());
        Ok(ModuleTree {
            root: sid_root.to_path_buf(),
            dir: format!("/{}", inside.display()),
            release: release.to_owned(),
            kind: Kind::Built { cc },
        })
    }

    /// The tree's `.config`.
    pub fn config(&self) -> Result<String> {
        let p = self.root.join(&self.dir[1..]).join(".config");
        std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))
    }

    /// What identifies the tree in a build's cache key (its path: built trees' paths are
    /// keyed by their own content, Debian's by the release).
    pub fn identity(&self) -> String {
        format!("{}:{}", self.root.display(), self.dir)
    }

    /// The shell command that builds the module sources in `m` (a path inside the root).
    /// ccache's base directory is the builds directory, so the same file in another build
    /// directory (another patch's module build, a driver directory) is a cache hit.
    pub fn make_modules(&self, m: &str) -> String {
        let jobs = super::make::jobs();
        match &self.kind {
            Kind::Headers => format!(
                "CCACHE_BASEDIR={} make -C {} M={m} -j{jobs} CCACHE=ccache \
                 DEBIAN_KERNEL_USE_CCACHE=1 modules",
                super::store::BUILDS_IN_ROOT,
                self.dir
            ),
            Kind::Built { cc } => format!(
                "CCACHE_BASEDIR={} make -C {} M={m} -j{jobs} CC='ccache {cc}' HOSTCC={cc} modules",
                super::store::BUILDS_IN_ROOT,
                self.dir
            ),
        }
    }

    /// `ROOT/var/lib/nicemu-builds` and its path inside the root.
    pub fn builds_dir(&self) -> (PathBuf, &'static str) {
        super::store::builds_dir(&self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_tree_is_used_with_its_own_compiler() {
        let root = std::env::temp_dir().join(format!("nicemu-tree-{}", std::process::id()));
        let out = root.join("var/lib/nicemu-builds/kernel-ab/out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join(".config"),
            "CONFIG_CC_VERSION_TEXT=\"gcc-16 (Debian 16.2.0-4) 16.2.0\"\nCONFIG_IGB=m\n",
        )
        .unwrap();
        let t = ModuleTree::built(&root, &out, "7.2.13-nicemu").unwrap();
        assert_eq!(t.dir, "/var/lib/nicemu-builds/kernel-ab/out");
        let cmd = t.make_modules("/var/lib/nicemu-builds/mod-x/src/igb");
        assert!(
            cmd.contains(
                "-C /var/lib/nicemu-builds/kernel-ab/out M=/var/lib/nicemu-builds/mod-x/src/igb"
            ) && cmd.contains("CC='ccache gcc-16'"),
            "{cmd}"
        );
        assert!(t.config().unwrap().contains("CONFIG_IGB=m"));
        ModuleTree::built(&root, Path::new("/elsewhere/out"), "r").unwrap_err();
        let _ = std::fs::remove_dir_all(&root);
    }
}
