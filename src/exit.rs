//! Exit codes. Every way out of leaderrun maps to one of these, or to the
//! child's own status (its exit code, or 128 + N when signal N ended it).

use std::fmt;
use std::process::ExitStatus;

/// The child ran and exited 0, or `--help`/`--version` was printed.
pub const SUCCESS: i32 = 0;

/// Another replica leads (and `--wait` was not given), or `--wait-timeout`
/// ran out while queued. Same as `EX_TEMPFAIL`; `--conflict-exit-code`
/// changes it (cron users often choose 0, as with `flock -E 0`).
pub const CONFLICT: i32 = 75;

/// Leadership was lost while the child ran (lease revoked or expired, leader
/// key deleted or replaced, or renewals unacknowledged too long); the child's
/// process group was stopped. Same code as `timeout(1)` uses for "timed out".
pub const LEADERSHIP_LOST: i32 = 124;

/// leaderrun's own error: bad usage or configuration, etcd unreachable.
pub const INTERNAL: i32 = 125;

/// The command was found but could not be executed.
pub const NOT_EXECUTABLE: i32 = 126;

/// The command was not found.
pub const NOT_FOUND: i32 = 127;

/// Status offset for a child ended by a signal: 128 + N, as shells report it.
pub const SIGNAL_BASE: i32 = 128;

/// `leaderrun status`: nobody leads the election right now.
pub const NO_LEADER: i32 = 3;

/// An error that carries its own exit code. Anything else that reaches `main`
/// exits with [`INTERNAL`].
#[derive(Debug)]
pub struct CodedError {
    pub code: i32,
    pub message: String,
}

impl CodedError {
    pub fn error(code: i32, message: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(CodedError {
            code,
            message: message.into(),
        })
    }
}

impl fmt::Display for CodedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodedError {}

/// The exit code for an error that reached `main`.
pub fn code_of(err: &anyhow::Error) -> i32 {
    err.downcast_ref::<CodedError>()
        .map_or(INTERNAL, |coded| coded.code)
}

/// The shell's view of a child's status: its code, or 128 + signal.
pub fn from_status(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => SIGNAL_BASE + signal,
        (None, None) => INTERNAL,
    }
}
