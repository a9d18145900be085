// SPDX-License-Identifier: Apache-2.0
//! A writer for the cpio "newc" format the kernel unpacks as an initramfs.

use std::collections::BTreeSet;
use std::io::{self, Write};

const TRAILER: &str = "TRAILER!!!";
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// Streams newc entries to `W`, creating parent directories on demand.
#[derive(Debug)]
pub struct CpioWriter<W: Write> {
    out: W,
    offset: u64,
    next_ino: u32,
    dirs: BTreeSet<String>,
    names: BTreeSet<String>,
}

impl<W: Write> CpioWriter<W> {
    /// Starts an archive on `out`.
    pub fn new(out: W) -> Self {
        CpioWriter {
            out,
            offset: 0,
            next_ino: 1,
            dirs: BTreeSet::new(),
            names: BTreeSet::new(),
        }
    }

    /// Adds a directory (and its parents).
    pub fn dir(&mut self, path: &str, mode: u32) -> io::Result<()> {
        let p = normalize(path);
        if p.is_empty() || self.dirs.contains(&p) {
            return Ok(());
        }
        self.parents(&p)?;
        self.dirs.insert(p.clone());
        self.entry(&p, S_IFDIR | (mode & 0o7777), 2, (0, 0), &[])
    }

    /// Adds a regular file with `data`.
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        let p = normalize(path);
        self.parents(&p)?;
        self.names.insert(p.clone());
        self.entry(&p, S_IFREG | (mode & 0o7777), 1, (0, 0), data)
    }

    /// Adds a symbolic link pointing at `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        let p = normalize(path);
        self.parents(&p)?;
        self.names.insert(p.clone());
        self.entry(&p, S_IFLNK | 0o777, 1, (0, 0), target.as_bytes())
    }

    /// Adds a character device node.
    pub fn char_dev(&mut self, path: &str, mode: u32, major: u32, minor: u32) -> io::Result<()> {
        let p = normalize(path);
        self.parents(&p)?;
        self.names.insert(p.clone());
        self.entry(&p, S_IFCHR | (mode & 0o7777), 1, (major, minor), &[])
    }

    /// Writes the trailer and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry(TRAILER, 0, 1, (0, 0), &[])?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn parents(&mut self, p: &str) -> io::Result<()> {
        if let Some((parent, _)) = p.rsplit_once('/') {
            if !self.dirs.contains(parent) {
                self.dir(parent, 0o755)?;
            }
        }
        Ok(())
    }

    fn entry(
        &mut self,
        name: &str,
        mode: u32,
        nlink: u32,
        rdev: (u32, u32),
        data: &[u8],
    ) -> io::Result<()> {
        let ino = self.next_ino;
        self.next_ino += 1;
        let namesize = name.len() + 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            ino,
            mode,
            0,
            0,
            nlink,
            0,
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            namesize,
            0
        );
        self.write(header.as_bytes())?;
        self.write(name.as_bytes())?;
        self.write(&[0])?;
        self.pad()?;
        self.write(data)?;
        self.pad()
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.offset += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.offset % 4) as usize) % 4;
        self.write(&[0u8; 3][..n])
    }
}

fn normalize(path: &str) -> String {
    path.trim_start_matches('/')
        .trim_end_matches('/')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_aligned_entries_with_parents_and_trailer() {
        let mut w = CpioWriter::new(Vec::new());
        w.file("/a/b/hello", 0o644, b"hi!").unwrap();
        w.symlink("/a/link", "b/hello").unwrap();
        let out = w.finish().unwrap();
        assert_eq!(out.len() % 4, 0);
        let text = String::from_utf8_lossy(&out);
        // Parent directories come before the file.
        let a = text.find("a\0").unwrap();
        let ab = text.find("a/b\0").unwrap();
        let f = text.find("a/b/hello\0").unwrap();
        assert!(a < ab && ab < f);
        assert!(text.contains("hi!"));
        assert!(text.contains("TRAILER!!!\0"));
        assert!(out.starts_with(b"070701"));
        // Each header begins on a 4-byte boundary.
        for (i, _) in text.match_indices("070701") {
            assert_eq!(i % 4, 0);
        }
    }
}
