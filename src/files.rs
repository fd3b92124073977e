//! Reading the files the options name (the TLS files, the settings file,
//! the password file): only a regular file, of a bounded size, is read.
//! A FIFO would block a read for ever and `/dev/zero` would fill memory;
//! each is refused in one line that says what the path is. A file that
//! holds a secret is read only if nobody but its owner (this user, or
//! root) can read or write it, as ssh refuses a loose private key.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Whether a file's content is a secret: then its permissions are held
/// to its owner alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secret {
    Yes,
    No,
}

/// The bytes of the regular file at `path`, at most `limit` of them.
/// `what` names it in errors (`--cacert`, `the settings file`).
pub fn read_bounded(what: &str, path: &Path, limit: u64, secret: Secret) -> Result<Vec<u8>> {
    let shown = path.display();
    // Not blocking: opening a FIFO for reading would wait for a writer.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .with_context(|| format!("cannot read {what} {shown}"))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read {what} {shown}"))?;
    let kind = metadata.file_type();
    if !kind.is_file() {
        let is = match () {
            () if kind.is_dir() => "a directory",
            () if kind.is_fifo() => "a FIFO",
            () if kind.is_socket() => "a socket",
            () if kind.is_char_device() => "a character device",
            () if kind.is_block_device() => "a block device",
            () => "not a regular file",
        };
        bail!("{what} {shown} is {is}: give a regular file");
    }
    if metadata.len() > limit {
        bail!(
            "{what} {shown} is {} bytes long: at most {limit}",
            metadata.len()
        );
    }
    if secret == Secret::Yes {
        private(what, path, &metadata)?;
    }
    let mut bytes = Vec::new();
    read_at_most(&mut file, limit, &mut bytes)
        .with_context(|| format!("cannot read {what} {shown}"))?;
    if bytes.len() as u64 > limit {
        bail!("{what} {shown} grew past {limit} bytes as it was read");
    }
    Ok(bytes)
}

/// Reads at most `limit` + 1 bytes: one more tells a file that grew.
fn read_at_most(file: &mut File, limit: u64, bytes: &mut Vec<u8>) -> std::io::Result<()> {
    file.take(limit.saturating_add(1)).read_to_end(bytes)?;
    Ok(())
}

/// A secret's file: owned by this user or root, and neither readable nor
/// writable by its group or others.
fn private(what: &str, path: &Path, metadata: &std::fs::Metadata) -> Result<()> {
    let shown = path.display();
    let mode = metadata.mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "{what} {shown} can be read or written by others than its owner (mode {mode:04o}): chmod 600 {shown}"
        );
    }
    let me = nix::unistd::geteuid().as_raw();
    if metadata.uid() != me && metadata.uid() != 0 {
        bail!(
            "{what} {shown} belongs to user {}, not to this user ({me}) or root",
            metadata.uid()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_a_regular_file_of_a_bounded_size_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_bounded("f", &file, 5, Secret::No).unwrap(), b"hello");
        let long = read_bounded("--cacert", &file, 4, Secret::No).unwrap_err();
        assert!(
            format!("{long}").contains("is 5 bytes long: at most 4"),
            "{long}"
        );
        let zero = read_bounded("--cacert", Path::new("/dev/zero"), 1024, Secret::No).unwrap_err();
        assert_eq!(
            format!("{zero}"),
            "--cacert /dev/zero is a character device: give a regular file"
        );
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let fifo = read_bounded("--cacert", &fifo, 1024, Secret::No).unwrap_err();
        assert!(format!("{fifo}").contains("is a FIFO"), "{fifo}");
        let dir_error = read_bounded("--key", dir.path(), 1024, Secret::No).unwrap_err();
        assert!(
            format!("{dir_error}").contains("is a directory"),
            "{dir_error}"
        );
    }

    #[test]
    fn a_secret_is_read_only_from_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let loose = read_bounded("the password file", &file, 64, Secret::Yes).unwrap_err();
        assert!(
            format!("{loose}").contains("(mode 0640): chmod 600"),
            "{loose}"
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_bounded("the password file", &file, 64, Secret::Yes).unwrap(),
            b"s3cret\n"
        );
    }
}
