// SPDX-License-Identifier: Apache-2.0
//! The splat watch of a booted cell: the splats its kernel console showed
//! ([`crate::vm::kernel_log`]) are judged against the ignore list and their call traces
//! decoded with the objects of the kernel that booted (the `.ko` files the harness built,
//! the `vmlinux` and modules of a kernel it built; Debian's stock kernel and modules carry
//! no debug info).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::image::guest_kernel::GuestKernel;
use crate::report::{CellRun, IgnoreUse, RunReport};
use crate::splat::decode::{DebugObjects, InRoot};
use crate::splat::ignore::{CellUse, IgnoreList};

/// Judges and decodes the splats of cell `r` of kernel `kern`.
pub fn finish_cell(r: &mut CellRun, kern: &GuestKernel, sid_root: &Path, ignore: &IgnoreList) {
    if r.splats.is_empty() {
        return;
    }
    let objects = debug_objects(kern);
    let wanted = r.splats.iter().any(|s| {
        s.culprit.iter().chain(&s.frames).any(|f| match &f.module {
            Some(m) => objects.modules.contains_key(m),
            None => objects.vmlinux.is_some(),
        })
    });
    if wanted {
        match faddr2line(kern, sid_root) {
            Ok(script) => objects.decode(
                &mut r.splats,
                &InRoot {
                    root: sid_root.to_path_buf(),
                    script,
                },
            ),
            Err(e) => println!("  splats not decoded: {e}"),
        }
    } else {
        objects.decode(&mut r.splats, &NoTool);
    }
    ignore.judge(&r.kernel, &r.device, &mut r.splats);
}

/// A decoder for when no object has debug info (only the notes are set).
struct NoTool;

impl crate::splat::decode::Faddr2line for NoTool {
    fn run(&self, _: &Path, _: &[String]) -> Result<String, String> {
        Err("no debug info".into())
    }
}

/// The objects of `kern` that carry debug info.
pub fn debug_objects(kern: &GuestKernel) -> DebugObjects {
    let mut modules: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut vmlinux = None;
    if let Some(out) = &kern.build_dir {
        vmlinux = Some(out.join("vmlinux")).filter(|v| v.is_file());
        // modules.order lists the built modules ("drivers/net/ethernet/intel/igb/igb.o").
        let order = std::fs::read_to_string(out.join("modules.order")).unwrap_or_default();
        for l in order.lines() {
            let ko = out.join(l.trim()).with_extension("ko");
            if let Some(name) = ko.file_stem().and_then(|n| n.to_str()) {
                if ko.is_file() {
                    modules.insert(name.replace('-', "_"), ko.clone());
                }
            }
        }
    }
    for m in &kern.built_modules {
        modules.insert(m.name.clone(), m.ko.clone());
    }
    let stock = if kern.build_dir.is_some() {
        format!("the {} build has no object for them", kern.release)
    } else {
        format!(
            "Debian's {} ships its image and modules without it",
            kern.release
        )
    };
    DebugObjects {
        vmlinux,
        modules,
        stock,
    }
}

/// The text of `scripts/faddr2line` of `kern`'s source: the harness-built kernel's tree,
/// else the Debian source of its release (one file extracted, cached).
fn faddr2line(kern: &GuestKernel, sid_root: &Path) -> crate::error::Result<String> {
    let path = match crate::build::whole_kernel::source_dir(kern) {
        Ok(src) => src.join("scripts/faddr2line"),
        Err(_) => nicemu_provision::linux_source::ensure(sid_root, &kern.release)?
            .extract(&["scripts/faddr2line"])?
            .join("scripts/faddr2line"),
    };
    std::fs::read_to_string(&path).map_err(|e| crate::error::Error::io(&path, e))
}

/// The ignore list's use in `report`: its unused entries.
pub fn ignore_use(report: &RunReport, ignore: &IgnoreList) -> IgnoreUse {
    IgnoreUse {
        file: ignore.file.clone(),
        unused: ignore.unused(
            report
                .runs
                .iter()
                .filter(|c| c.boot != "not booted")
                .map(|c| CellUse {
                    kernel: &c.kernel,
                    device: &c.device,
                    scenarios: c.scenarios.iter().map(|r| r.scenario.as_str()).collect(),
                    splats: &c.splats,
                }),
        ),
    }
}

/// The A/B attribution of `report`'s splats (cells with a side).
pub fn splat_ab(report: &RunReport) -> crate::splat::ab::SplatAb {
    crate::splat::ab::attribute(
        report
            .runs
            .iter()
            .filter(|c| c.boot != "not booted")
            .filter_map(|c| {
                let side = c.side.as_deref()?;
                Some((side == "A", c.device.as_str(), c.splats.as_slice()))
            }),
    )
}

/// The splat attribution of two runs compared (`compare A.json B.json`): `a`'s cells are
/// side A, `b`'s side B.
pub fn compare_splats(a: &RunReport, b: &RunReport) -> crate::splat::ab::SplatAb {
    let cells = a
        .runs
        .iter()
        .map(|c| (true, c))
        .chain(b.runs.iter().map(|c| (false, c)))
        .filter(|(_, c)| c.boot != "not booted")
        .map(|(is_a, c)| (is_a, c.device.as_str(), c.splats.as_slice()));
    crate::splat::ab::attribute(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};
    use crate::splat::samples::read;

    #[test]
    fn compare_names_what_the_second_run_introduces() {
        let a = report("a", vec![cell("sid", "nicemu-igb", 0.5, 1.0, false)]);
        let mut bc = cell("sid+p", "nicemu-igb", 0.5, 1.0, false);
        bc.splats = crate::splat::scan(&read("warn-igb-xmit.log"));
        let b = report("b", vec![bc]);
        assert_eq!(
            compare_splats(&a, &b).verdict_lines(),
            ["B introduces: WARNING in igb_xmit_frame_ring (igb_main.c:6533), 1 of 1 round"]
        );
        let mut ab = report("ab", vec![a.runs[0].clone(), b.runs[0].clone()]);
        ab.runs[0].side = Some("A".into());
        ab.runs[1].side = Some("B".into());
        assert_eq!(splat_ab(&ab), compare_splats(&a, &b));
    }
}
