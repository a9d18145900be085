//! Listening sockets of nicemu (vfio-user, vhost-user, control, stream wire).

use std::os::unix::net::UnixListener;
use std::path::Path;

use crate::error::Error;

/// Listens on a new unix socket at `path`. A path that is already taken (a
/// file, a stale socket, even a dangling symlink) is refused rather than
/// removed: it may belong to another running nicemu or QEMU.
pub fn listen(path: &Path) -> Result<UnixListener, Error> {
    if path.symlink_metadata().is_ok() {
        return Err(Error::SocketExists(path.to_path_buf()));
    }
    UnixListener::bind(path).map_err(|source| Error::Listen {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_path_is_refused_and_a_free_one_listens() {
        let dir = std::env::temp_dir().join(format!("nicemu-socket-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let taken = dir.join("taken");
        std::fs::write(&taken, b"").unwrap();
        assert!(matches!(listen(&taken), Err(Error::SocketExists(_))));
        let dangling = dir.join("dangling");
        let _ = std::fs::remove_file(&dangling);
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        assert!(matches!(listen(&dangling), Err(Error::SocketExists(_))));
        let free = dir.join("free.sock");
        let _ = std::fs::remove_file(&free);
        assert!(listen(&free).is_ok());
        assert!(matches!(
            listen(&dir.join("no-such-dir/x.sock")),
            Err(Error::Listen { .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
