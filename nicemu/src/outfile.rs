// SPDX-License-Identifier: Apache-2.0
//! Files nicemu writes (pcap captures, register traces). A local user of the
//! control socket names them, and nicemu may run as root, so every output
//! file is created new: an existing file is never truncated and a symlink is
//! never followed (`O_CREAT | O_EXCL | O_NOFOLLOW`). Files named over the
//! control socket must, in addition, be plain names inside the output
//! directory (`--output-dir`, by default the control socket's directory);
//! they are created relative to a descriptor of that directory, so renaming
//! directories meanwhile cannot move them elsewhere.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Mode of the files nicemu creates (before the umask).
const FILE_MODE: u32 = 0o640;

/// Why an output file could not be created.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The name is not a plain file name inside the output directory.
    #[error("{path}: not a file in the output directory {dir} (give a plain file name, or start nicemu with --output-dir)")]
    Outside {
        /// The name asked for.
        path: String,
        /// The output directory.
        dir: String,
    },
    /// The file exists already (or is a symlink): it is not overwritten.
    #[error(
        "{0}: exists already; nicemu does not overwrite files (remove it or pick another name)"
    )]
    Exists(String),
    /// Any other failure to create it.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

fn create_error(path: &Path, source: std::io::Error) -> OutputError {
    // ELOOP: the name is a symlink (O_NOFOLLOW).
    if source.kind() == std::io::ErrorKind::AlreadyExists
        || source.raw_os_error() == Some(libc::ELOOP)
    {
        OutputError::Exists(path.display().to_string())
    } else {
        OutputError::Create {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Creates `path` as a new file for writing; refuses an existing file or a
/// symlink (dangling or not).
pub fn create_new(path: &Path) -> Result<File, OutputError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| create_error(path, e))
}

/// The directory files named over the control socket are created in.
#[derive(Debug)]
pub struct OutputDir {
    dir: PathBuf,
    fd: OwnedFd,
}

impl OutputDir {
    /// Opens `dir` (which must exist) as the output directory.
    pub fn open(dir: &Path) -> std::io::Result<OutputDir> {
        let dir = dir.canonicalize()?;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(&dir)?;
        Ok(OutputDir {
            dir,
            fd: OwnedFd::from(f),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The file name `requested` stands for: a plain name, or an absolute
    /// path whose directory is the output directory.
    fn name_of<'a>(&self, requested: &'a Path) -> Option<&'a std::ffi::OsStr> {
        let name = requested.file_name()?;
        let parent = requested.parent().filter(|p| !p.as_os_str().is_empty());
        let plain = |p: &Path| {
            let mut c = p.components();
            matches!(c.next(), Some(Component::Normal(_))) && c.next().is_none()
        };
        if !plain(Path::new(name)) {
            return None;
        }
        match parent {
            None => Some(name),
            Some(p) if p.is_absolute() => {
                (p == self.dir || p.canonicalize().ok()? == self.dir).then_some(name)
            }
            Some(_) => None,
        }
    }

    /// Creates `requested` new in the output directory; returns the file and
    /// its full path.
    pub fn create(&self, requested: &Path) -> Result<(File, PathBuf), OutputError> {
        let outside = || OutputError::Outside {
            path: requested.display().to_string(),
            dir: self.dir.display().to_string(),
        };
        let name = self.name_of(requested).ok_or_else(outside)?;
        let full = self.dir.join(name);
        let c = CString::new(name.as_bytes()).map_err(|_| outside())?;
        // SAFETY: `c` is a NUL-terminated name, `self.fd` an open directory
        // descriptor owned by `self`; openat only reads them.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                FILE_MODE,
            )
        };
        if fd < 0 {
            return Err(create_error(&full, std::io::Error::last_os_error()));
        }
        // SAFETY: openat just returned this descriptor; nothing else owns it.
        let f = unsafe { File::from_raw_fd(fd) };
        Ok((f, full))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nicemu-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn symlinks_and_existing_files_are_never_written_through() {
        let d = tmp("excl");
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let link = d.join("link.pcap");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(matches!(create_new(&link), Err(OutputError::Exists(_))));
        assert!(matches!(create_new(&victim), Err(OutputError::Exists(_))));
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nowhere"), &dangling).unwrap();
        assert!(matches!(create_new(&dangling), Err(OutputError::Exists(_))));
        assert!(
            !d.join("nowhere").exists(),
            "a dangling link is not followed"
        );
        let out = OutputDir::open(&d).unwrap();
        assert!(matches!(
            out.create(Path::new("link.pcap")),
            Err(OutputError::Exists(_))
        ));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        create_new(&d.join("fresh")).unwrap();
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn only_plain_names_in_the_output_directory_are_accepted() {
        let d = tmp("dir");
        let out = OutputDir::open(&d).unwrap();
        for bad in ["/etc/passwd", "../x.pcap", "sub/x.pcap", "..", "/", ""] {
            assert!(
                matches!(out.create(Path::new(bad)), Err(OutputError::Outside { .. })),
                "{bad}"
            );
        }
        let (_, p) = out.create(Path::new("a.pcap")).unwrap();
        assert_eq!(p, d.canonicalize().unwrap().join("a.pcap"));
        let abs = d.join("b.pcap");
        assert!(out.create(&abs).is_ok(), "an absolute path inside it");
        let dotted = d.join("sub").join("..").join("c.pcap");
        assert!(matches!(
            out.create(&dotted),
            Err(OutputError::Outside { .. })
        ));
        let _ = std::fs::remove_dir_all(d);
    }
}
