// SPDX-License-Identifier: Apache-2.0
//! Resolving paths inside a foreign root (like `chroot` would), following its symlinks.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Resolves `path` (absolute, as seen inside `root`) to a host path, following symlinks
/// relative to `root`. The result names an existing non-symlink file.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf> {
    let mut pending: Vec<String> = components(path).into_iter().rev().collect();
    let mut current: Vec<String> = Vec::new();
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.as_str() {
            "." => continue,
            ".." => {
                current.pop();
                continue;
            }
            _ => {}
        }
        let mut candidate = root.to_path_buf();
        for p in current.iter().chain(std::iter::once(&c)) {
            candidate.push(p);
        }
        let meta = std::fs::symlink_metadata(&candidate).map_err(|e| Error::io(&candidate, e))?;
        if meta.file_type().is_symlink() {
            hops += 1;
            if hops > 40 {
                return Err(Error::Kernel(format!(
                    "symlink loop at {}",
                    candidate.display()
                )));
            }
            let target = std::fs::read_link(&candidate).map_err(|e| Error::io(&candidate, e))?;
            let t = target.to_string_lossy();
            if t.starts_with('/') {
                current.clear();
            }
            for p in components(&t).into_iter().rev() {
                pending.push(p);
            }
        } else {
            current.push(c);
        }
    }
    let mut out = root.to_path_buf();
    for p in &current {
        out.push(p);
    }
    Ok(out)
}

fn components(p: &str) -> Vec<String> {
    Path::new(p)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_absolute_and_relative_links_inside_root() {
        let dir = std::env::temp_dir().join(format!("nicemu-rootfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("usr/lib")).unwrap();
        std::fs::write(dir.join("usr/lib/libx.so.1.2"), b"x").unwrap();
        std::os::unix::fs::symlink("usr/lib", dir.join("lib")).unwrap();
        std::os::unix::fs::symlink("/lib/libx.so.1.2", dir.join("usr/lib/libx.so.1")).unwrap();
        let got = resolve(&dir, "/lib/libx.so.1").unwrap();
        assert_eq!(got, dir.join("usr/lib/libx.so.1.2"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
