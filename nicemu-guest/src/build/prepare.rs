// SPDX-License-Identifier: Apache-2.0
//! Kernel preparation: every kernel of a run made ready to boot once, before the rounds boot
//! it again and again: resolved (and built, [`super::resolve`]), its modules — the harness's
//! builds in place of the stock ones — packed with busybox and the tools into the base
//! initramfs (for `kselftest`, with the selftests of the kernel's own source, python3 and
//! their tools), the bzImage copied where QEMU sees it; and the guest RAM that initramfs
//! needs.

use nicemu_provision as provision;
use std::path::Path;

use super::KernelRequest;
use crate::error::{Error, Result};
use crate::image::guest_kernel::{BuiltModule, GuestKernel};
use crate::image::kselftest_archive::OptionalTool;
use crate::image::{self, modules};
use crate::params::Params;
use crate::scenario;
use crate::vm::run_dir::{self, RunDir};

/// Every kernel of `requests` prepared (built) once, before the rounds boot it again and
/// again, in `dir` under `kernel-TAG…` (`tags`, one per kernel). A patch that does not apply,
/// a failed build or a bad tree ends the run (exit 2); any other failure is the kernel's
/// cells' result. `scenarios` and `params`: the run's, for the selftests a `kselftest` run
/// packs and the tools an `xsk` run needs.
pub(crate) fn kernels(
    requests: &[KernelRequest],
    scenarios: &[String],
    params: &Params,
    sid_root: &Path,
    dir: &RunDir,
    tags: &[String],
) -> Result<Vec<Result<(GuestKernel, KernelImage)>>> {
    let with_ksft = scenarios.iter().any(|s| s == "kselftest").then(|| {
        let tests = scenario::kselftest::test_names(&params.get("kselftest.tests"));
        image::kselftest_archive::optional_tools(&tests)
    });
    let mut prepared = Vec::new();
    if scenarios.iter().any(|s| s == "xsk") {
        provision::xsk::ensure(sid_root)?;
    }
    for (kreq, tag) in requests.iter().zip(tags) {
        prepared.push(
            match kernel(kreq, sid_root, dir, tag, with_ksft.as_deref()) {
                Err(e @ (Error::Interrupted | Error::Build(_) | Error::Usage(_))) => return Err(e),
                p => p,
            },
        );
    }
    Ok(prepared)
}

/// One kernel ready to boot: the packed base archive, its module names, its directory in
/// the run and the path QEMU sees for the bzImage, plus the modules the harness built.
pub(crate) struct KernelImage {
    pub(crate) base: Vec<u8>,
    pub(crate) mod_names: Vec<String>,
    pub(crate) kdir: RunDir,
    pub(crate) guest_path: String,
    pub(crate) built: Vec<BuiltModule>,
}

/// Resolves (and builds) a kernel, packs its modules — the harness's builds in place of the
/// stock ones — with the tools (and, for `kselftest`, the selftests of that kernel's own
/// source with python3 and their tools, `with_ksft` naming the optional ones), copies the
/// bzImage where QEMU sees it.
fn kernel(
    req: &KernelRequest,
    sid_root: &Path,
    dir: &RunDir,
    tag: &str,
    with_ksft: Option<&[OptionalTool]>,
) -> Result<(GuestKernel, KernelImage)> {
    let kdir = dir.sub(&format!("kernel-{tag}{}", run_dir::sanitize(&req.name())))?;
    let kern = super::resolve(req, sid_root, &kdir.host)?;
    println!("kernel {}: {}", kern.name, kern.label);
    if let Some(log) = &kern.build_log {
        println!("kernel {}: build log {}", kern.name, log.display());
    }
    let mut wanted: Vec<&str> = modules::DRIVERS.to_vec();
    if with_ksft.is_some() {
        wanted.extend_from_slice(image::kselftest_archive::MODULES);
    }
    let mut mods = modules::collect(&kern.modules_dir, &wanted)?;
    for b in &kern.built_modules {
        match mods.iter_mut().find(|m| m.name == b.name) {
            Some(m) => m.data = std::fs::read(&b.ko).map_err(|e| Error::io(&b.ko, e))?,
            None => println!(
                "kernel {}: built module {} is not one the guest loads; not used",
                kern.name, b.name
            ),
        }
    }
    let names: Vec<String> = mods.iter().map(|m| m.name.clone()).collect();
    let (host, guest) = kdir.file("vmlinuz");
    std::fs::copy(&kern.image, &host).map_err(|e| Error::io(&host, e))?;
    println!("image: packing busybox, tools and {} modules", mods.len());
    let mut base = image::base_archive(sid_root, &mods)?;
    if let Some(optional) = with_ksft {
        provision::kselftest_build::install_missing(
            sid_root,
            provision::kselftest_build::GUEST_PACKAGES,
        )?;
        let packages: Vec<&str> = optional.iter().map(|o| o.package).collect();
        provision::kselftest_build::install_missing(sid_root, &packages)?;
        let ksft = provision::kselftest_build::ensure(sid_root, &kern.release)?;
        let extra = image::kselftest_archive::archive(sid_root, &ksft.install(), optional)?;
        println!(
            "image: kselftest of Linux {} with python3 and tools ({} MiB)",
            ksft.version,
            extra.len() >> 20
        );
        base.extend_from_slice(&extra);
    }
    let mem = guest_mem_mb(0, base.len());
    if mem > 1024 {
        println!(
            "image: the initramfs is {} MiB: guests get at least {mem} MiB of RAM",
            base.len() >> 20
        );
    }
    let built = kern.built_modules.clone();
    Ok((
        kern,
        KernelImage {
            base,
            mod_names: names,
            kdir,
            guest_path: guest,
            built,
        },
    ))
}

/// Guest RAM (MiB) for an initramfs of `initrd_bytes`: while the kernel unpacks it, the
/// archive and its files are in memory at once (Documentation/filesystems/
/// ramfs-rootfs-initramfs.rst), so twice the archive plus 768 MiB for the kernel and the
/// scenarios, in 256 MiB steps; `asked` (`--mem`) when that is more. A 1 GiB guest fails
/// "Initramfs unpacking failed: write error" with the ~330 MiB kselftest archive that
/// carries bpftrace.
pub fn guest_mem_mb(asked: u32, initrd_bytes: usize) -> u32 {
    let mib = u32::try_from(initrd_bytes >> 20).unwrap_or(u32::MAX / 4);
    asked.max((2 * mib + 768).next_multiple_of(256))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_ram_grows_with_a_large_initramfs_only() {
        // The usual kselftest image (~90 MiB) keeps --mem's 1 GiB default.
        assert_eq!(guest_mem_mb(1024, 90 << 20), 1024);
        // With bpftrace (~360 MiB): 2 × 360 + 768 = 1488, rounded up to 1536.
        assert_eq!(guest_mem_mb(1024, 360 << 20), 1536);
        // A larger --mem stays.
        assert_eq!(guest_mem_mb(4096, 360 << 20), 4096);
    }
}
