// SPDX-License-Identifier: Apache-2.0
//! Guest memory files a client hands a device server (vfio-user DMA_MAP, vhost-user
//! SET_MEM_TABLE): before one is mapped, its size must cover the mapping and
//! must not be able to shrink while mapped. A mapped page past a file's end
//! is SIGBUS on first touch, and a signal ends every port of the process.
//!
//! The rule: the file must carry `F_SEAL_SHRINK` (memfd_create(2),
//! fcntl(2) "File Sealing"), or take it now. QEMU's `memory-backend-memfd`
//! seals its memfds so by default (`seal=on`); a memfd made without
//! `MFD_ALLOW_SEALING`, or any other kind of file, is refused: nothing stops
//! its owner truncating it under the mapping.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Why a file cannot back guest memory.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MemFileError {
    /// Offset + size past the file's end (or wrapping).
    #[error("{offset:#x}+{size:#x} is past the end of its {file_size:#x}-byte file")]
    PastEof {
        /// File offset of the mapping.
        offset: u64,
        /// Size of the mapping.
        size: u64,
        /// Size of the file.
        file_size: u64,
    },
    /// The file could shrink under the mapping.
    #[error("the file could shrink while mapped (not a memfd that has or takes F_SEAL_SHRINK; use memory-backend-memfd with seal=on)")]
    MayShrink,
    /// fstat failed.
    #[error("cannot stat the file: {0}")]
    Stat(String),
}

impl MemFileError {
    /// The errno a client is answered with.
    pub fn errno(&self) -> i32 {
        match self {
            MemFileError::MayShrink => libc::EPERM,
            _ => libc::EINVAL,
        }
    }
}

/// Seals `f` against shrinking (unless it is already) and checks that
/// `offset..offset + size` lies inside it. After `Ok`, the range stays
/// inside the file for as long as the file exists.
pub fn pin_range(f: &File, offset: u64, size: u64) -> Result<(), MemFileError> {
    seal_shrink(f)?;
    // Only now, with shrinking impossible, is the size worth checking.
    let file_size = f
        .metadata()
        .map_err(|e| MemFileError::Stat(e.to_string()))?
        .len();
    match offset.checked_add(size) {
        Some(end) if end <= file_size => Ok(()),
        _ => Err(MemFileError::PastEof {
            offset,
            size,
            file_size,
        }),
    }
}

/// Makes sure `f` carries F_SEAL_SHRINK.
fn seal_shrink(f: &File) -> Result<(), MemFileError> {
    let fd = f.as_raw_fd();
    // SAFETY: F_GET_SEALS takes no argument and only reads the fd's seals.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    if seals < 0 {
        // Not a memfd (EINVAL): no seals exist for it.
        return Err(MemFileError::MayShrink);
    }
    if seals & libc::F_SEAL_SHRINK != 0 {
        return Ok(());
    }
    // SAFETY: F_ADD_SEALS with an integer argument changes only the seals of
    // the file behind `fd`; it fails with EPERM under F_SEAL_SEAL.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } < 0 {
        return Err(MemFileError::MayShrink);
    }
    Ok(())
}

/// Memory files for tests (feature `test-utils`).
#[cfg(any(test, feature = "test-utils"))]
pub mod testutil {
    use std::fs::File;

    /// A memfd of `size` bytes; `sealable` as `MFD_ALLOW_SEALING`.
    ///
    /// # Panics
    /// When the memfd cannot be made (a test cannot go on without it).
    #[allow(clippy::unwrap_used)]
    pub fn memfd(size: u64, sealable: bool) -> File {
        let flags = libc::MFD_CLOEXEC | if sealable { libc::MFD_ALLOW_SEALING } else { 0 };
        // SAFETY: a NUL-terminated name; the new fd is ours.
        let fd = unsafe { libc::memfd_create(c"nicemu-test".as_ptr(), flags) };
        assert!(fd >= 0);
        // SAFETY: `fd` was just created and nothing else owns it.
        let f = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        f.set_len(size).unwrap();
        f
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::memfd;
    use super::*;

    #[test]
    fn ranges_are_checked_and_the_file_sealed() {
        let f = memfd(8192, true);
        assert_eq!(pin_range(&f, 0, 8192), Ok(()));
        assert!(f.set_len(4096).is_err(), "sealed against shrinking");
        assert!(f.set_len(1 << 20).is_ok(), "growing is fine");
        assert_eq!(
            pin_range(&f, 4096, 1 << 20).unwrap_err().errno(),
            libc::EINVAL
        );
        assert!(matches!(
            pin_range(&f, u64::MAX, 2),
            Err(MemFileError::PastEof { .. })
        ));
        let unsealable = memfd(8192, false);
        assert_eq!(
            pin_range(&unsealable, 0, 4096),
            Err(MemFileError::MayShrink)
        );
        let plain = std::fs::File::open("/proc/self/exe").unwrap();
        assert_eq!(pin_range(&plain, 0, 1), Err(MemFileError::MayShrink));
    }
}
