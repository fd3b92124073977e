//! Which exit code an error and a finished command get: the run's side of
//! the exit codes, whose numbers and meanings are data in the protocol
//! (`protocol::exit`: the one table `--help`, the man pages and README
//! show). The modes return codes, and `main` turns them into the
//! process's status.

use std::process::ExitStatus;

pub use protocol::exit::{status_rows, Exit, Status, SIGNAL_BASE, TABLE, WHOSE_CODE};

use crate::child::SpawnError;
use crate::error;

/// The shell's view of how the command ended.
pub fn status_of(status: ExitStatus) -> Status {
    use std::os::unix::process::ExitStatusExt;
    Status {
        code: from_status(status),
        signalled: status.signal().is_some(),
    }
}

/// The exit for an error: the one place that chooses it. A command that
/// cannot be run has a shell's code; every other error is leaderrun's own
/// failure, a refusal by etcd or a disagreement among replicas included.
pub fn exit_of(err: &anyhow::Error) -> Exit {
    match error::find::<SpawnError>(err) {
        Some(SpawnError::NotFound(_)) => Exit::NotFound,
        Some(SpawnError::NotExecutable(_)) => Exit::NotExecutable,
        Some(SpawnError::Spawn { error, .. }) => spawn_failed(error),
        None => Exit::Internal,
    }
}

/// The exit code for an error that reached `main` ([`exit_of`]).
pub fn code_of(err: &anyhow::Error) -> i32 {
    exit_of(err).code()
}

/// As a shell says: a program it cannot find is 127, one it cannot exec
/// is 126, an argument list too long for the kernel included.
fn spawn_failed(err: &std::io::Error) -> Exit {
    match err.kind() {
        std::io::ErrorKind::NotFound => Exit::NotFound,
        std::io::ErrorKind::PermissionDenied => Exit::NotExecutable,
        _ if matches!(
            err.raw_os_error(),
            Some(nix::libc::ENOEXEC | nix::libc::E2BIG)
        ) =>
        {
            Exit::NotExecutable
        }
        _ => Exit::Internal,
    }
}

/// The shell's view of a child's status: its code, or 128 + signal.
pub fn from_status(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => SIGNAL_BASE + signal,
        (None, None) => Exit::Internal.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;
    use std::path::PathBuf;

    /// A command that cannot run has a shell's code, however deep in the
    /// chain; any other error is leaderrun's own failure.
    #[test]
    fn an_error_gets_its_code_here() {
        let spawn = |error: std::io::Error| SpawnError::Spawn {
            program: PathBuf::from("job"),
            error,
        };
        let cases = [
            (SpawnError::NotFound(PathBuf::from("job")), 127),
            (SpawnError::NotExecutable(PathBuf::from("job")), 126),
            (spawn(std::io::ErrorKind::NotFound.into()), 127),
            (spawn(std::io::ErrorKind::PermissionDenied.into()), 126),
            (
                spawn(std::io::Error::from_raw_os_error(nix::libc::E2BIG)),
                126,
            ),
            (spawn(std::io::ErrorKind::OutOfMemory.into()), 125),
        ];
        for (err, code) in cases {
            let shown = err.to_string();
            let err = Err::<(), _>(err)
                .context("running the command")
                .unwrap_err();
            assert_eq!(code_of(&err), code, "{shown}");
        }
        let disagreement = anyhow::Error::new(crate::election::Disagreement("x".into()));
        assert_eq!(code_of(&disagreement), 125);
        assert_eq!(code_of(&anyhow::anyhow!("etcd unreachable")), 125);
    }

    /// The table shows every code leaderrun chooses, and no other.
    #[test]
    fn the_table_covers_every_code() {
        let all = [
            Exit::Success,
            Exit::NoLeader,
            Exit::Stuck,
            Exit::Stale,
            Exit::Conflict,
            Exit::LeadershipLost,
            Exit::TimedOut,
            Exit::Internal,
            Exit::NotExecutable,
            Exit::NotFound,
            Exit::Paused,
        ];
        for exit in all.into_iter().filter(|exit| *exit != Exit::Success) {
            let code = exit.code().to_string();
            assert!(
                TABLE.iter().any(|row| row.code == code),
                "{exit:?} ({code}) is not in the table"
            );
        }
        let numbered = TABLE.iter().filter(|row| row.code.parse::<i32>().is_ok());
        assert_eq!(numbered.count(), all.len() - 1);
    }

    /// leaderrun-status(1) lists every code `status` exits with, once.
    #[test]
    fn the_status_page_lists_every_code_status_gives() {
        let shown: Vec<String> = status_rows().iter().map(|row| row.0.to_string()).collect();
        let status = [
            Exit::Success,
            Exit::NoLeader,
            Exit::Stuck,
            Exit::Paused,
            Exit::Stale,
            Exit::Internal,
        ];
        let codes: Vec<String> = status.iter().map(|exit| exit.code().to_string()).collect();
        let mut sorted = shown.clone();
        sorted.sort();
        let mut expected = codes.clone();
        expected.sort();
        assert_eq!(sorted, expected, "{shown:?}");
        assert!(status_rows()
            .iter()
            .all(|row| !row.1.starts_with("leaderrun")));
    }
}
