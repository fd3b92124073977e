//! Exit codes as data: every way out of leaderrun is one [`Exit`], or the
//! command's own status (its exit code, or 128 + N when signal N ended it).
//! The codes are a contract with scripts: add, never renumber.
//!
//! [`TABLE`] is the one text of what each code means; `--help`, the man
//! pages and README's table are all made from it (README's is checked by a
//! test). Every number is given here, and only here: an [`Exit`]'s by
//! [`Exit::code`], a run's [`Code`] (what the run's table decides) by
//! [`Code::value`]. Which error gets which code is the run's (its `exit`).

use crate::signal::Signal;

/// The exit codes leaderrun chooses itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// The command ran and exited 0 (its own status passes through);
    /// `--help` or `--version` was printed; `status`: someone leads.
    Success,
    /// `status`: nobody leads the election right now.
    NoLeader,
    /// `status`: a key with no lease leads (written by hand, or
    /// overwritten by a plain put): it never expires, and nobody will run
    /// until it is removed. Not 0: a monitor that reads the code must not
    /// see a stuck election as a led one.
    Stuck,
    /// `status --max-age`: no run has succeeded within the age given (or
    /// ever). Nagios's CRITICAL, so the check plugs in as it is.
    Stale,
    /// Another replica leads (without `--wait`), the election is paused
    /// (`leaderrun pause`), `--wait-timeout` ran out, or the `--once-per`
    /// window already had its run. `EX_TEMPFAIL`;
    /// `--conflict-exit-code` changes it (cron users often choose 0, as
    /// with `flock -E 0`).
    Conflict,
    /// Leadership was lost while the command ran; its whole job was
    /// stopped. The code `timeout(1)` uses for "timed out".
    LeadershipLost,
    /// The command ran past `--timeout`; its whole job was stopped.
    /// One below `LeadershipLost`, and not `timeout(1)`'s 124, so that a
    /// script can tell a hung job from a lost leadership.
    TimedOut,
    /// leaderrun's own failure: usage, configuration, etcd unreachable or
    /// refusing.
    Internal,
    /// The command was found but could not be executed.
    NotExecutable,
    /// The command was not found.
    NotFound,
    /// `status`: the election is paused (`leaderrun pause`): no run
    /// starts until it is resumed or its `--for` ends.
    Paused,
}

impl Exit {
    pub const fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::NoLeader => 3,
            Exit::Stuck => 4,
            Exit::Stale => 2,
            Exit::Conflict => 75,
            Exit::TimedOut => 123,
            Exit::LeadershipLost => 124,
            Exit::Internal => 125,
            Exit::NotExecutable => 126,
            Exit::NotFound => 127,
            Exit::Paused => 5,
        }
    }
}

/// Status offset for a child ended by a signal: 128 + N, as shells report
/// it; also leaderrun's own status when signal N ended it before the
/// command started.
pub const SIGNAL_BASE: i32 = 128;

/// The code a run exits with: what the run's table (`protocol::table`) decides,
/// given its number here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// The command's own status.
    Command(Status),
    /// --conflict-exit-code (75 unless changed).
    Conflict,
    /// A signal ended the campaign: 128 + N, nothing ran.
    Signalled(Signal),
    /// One of leaderrun's own.
    Own(Exit),
}

impl Code {
    /// The number, with `conflict` for --conflict-exit-code.
    pub fn value(self, conflict: i32) -> i32 {
        match self {
            Code::Command(status) => status.code,
            Code::Conflict => conflict,
            Code::Signalled(signal) => SIGNAL_BASE + signal.number(),
            Code::Own(exit) => exit.code(),
        }
    }
}

/// The shell's view of how the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    /// Its exit code, or 128 + N when signal N ended it.
    pub code: i32,
    /// Ended by a signal.
    pub signalled: bool,
}

/// One row of the exit status table: the code as shown, and its meaning.
pub struct Row {
    pub code: &'static str,
    pub meaning: &'static str,
}

/// What each exit status means, in the order shown everywhere.
pub const TABLE: [Row; 12] = [
    Row {
        code: "N",
        meaning: "the command's own exit status, or 128+N if signal N ended it",
    },
    Row {
        code: "75",
        meaning: "another replica leads (without --wait), the election is paused, --wait-timeout ran out, or this --once-per window already had its run; --conflict-exit-code changes it",
    },
    Row {
        code: "123",
        meaning: "the command ran past --timeout; its whole job was stopped",
    },
    Row {
        code: "124",
        meaning: "leadership was lost while the command ran; its whole job (its process group and every descendant) was stopped",
    },
    Row {
        code: "125",
        meaning: "leaderrun itself failed: usage, configuration, etcd unreachable or refusing (TLS, authentication, permissions)",
    },
    Row {
        code: "126",
        meaning: "the command was found but could not be executed",
    },
    Row {
        code: "127",
        meaning: "the command was not found",
    },
    Row {
        code: "128+N",
        meaning: "leaderrun got signal N before the command started: while dialling, queued or proving its win (nothing ran)",
    },
    Row {
        code: "3",
        meaning: "leaderrun status: nobody leads (--all exits 0 once every election is read)",
    },
    Row {
        code: "2",
        meaning: "leaderrun status --max-age: no success within that age, or ever, or one dated in the future (Nagios's CRITICAL)",
    },
    Row {
        code: "4",
        meaning: "leaderrun status: stuck: a key or --once-per marker with no lease blocks every run until removed (status names the etcdctl del)",
    },
    Row {
        code: "5",
        meaning: "leaderrun status: paused (leaderrun pause), whoever leads; 4 comes first",
    },
];

/// What `leaderrun status` exits with when all is well: 0 means for it
/// what no row of [`TABLE`] says.
pub const STATUS_SUCCESS: Row = Row {
    code: "0",
    meaning: "someone leads (or --watch ended)",
};

/// leaderrun-status(1)'s exit codes, from [`TABLE`]: [`STATUS_SUCCESS`],
/// the rows of `leaderrun status` (their meaning without the command's
/// name, which the page is about), then 125, which it shares with a run,
/// said of `status`: each as its code and meaning.
pub fn status_rows() -> Vec<(&'static str, String)> {
    let own = TABLE.iter().filter_map(|row| {
        let meaning = row.meaning.strip_prefix("leaderrun status")?;
        // "leaderrun status --max-age: ..." keeps its option.
        let meaning = match meaning.strip_prefix(": ") {
            Some(meaning) => meaning.to_string(),
            None => format!("with{meaning}"),
        };
        Some((row.code, meaning))
    });
    let failed = TABLE.iter().filter(|row| row.code == "125").map(|row| {
        (
            row.code,
            row.meaning.replacen("leaderrun itself", "status itself", 1),
        )
    });
    std::iter::once((STATUS_SUCCESS.code, STATUS_SUCCESS.meaning.to_string()))
        .chain(own)
        .chain(failed)
        .collect()
}

/// How a script tells leaderrun's own 75, 124 and 125 from the command's.
pub const WHOSE_CODE: &str = "leaderrun's own 75 (with -v, or when stderr is a terminal), 123, 124, 125, 126 and 127 each come with a line on stderr that starts with 'leaderrun: '; the command's own codes do not.";
