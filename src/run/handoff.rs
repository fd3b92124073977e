//! The handoff fast path: the pieces that make a change of leader cost one
//! write and no read, each shadowing a slow path that is correct alone.
//!
//! | piece                           | fast path                                   | slow path (`LEADERRUN_HANDOFF=slow`)      |
//! |---------------------------------|---------------------------------------------|-------------------------------------------|
//! | who is behind us                | looked up while the command runs ([`look_behind`]), or taken as the leader before us passed it on | nobody known: not looked up |
//! | the resignation                 | also rewrites the successor's key: its proof, with no read (`Election::resign_with`) | deletes our key only; the next in line wakes on the deletion and reads |
//! | the waiter                      | takes a handover of its own key as its proof (`election::queue`) | reads the line on every wake            |
//! | the lease after the resignation | left to expire if nothing but our key was on it ([`nothing_attached_since`], the lease's keys) | revoked                   |
//!
//! The switch is read once, with the run's options ([`Handoff`]); a fleet
//! may mix both (a rolling upgrade, or one replica switched for a test):
//! a waiter on the slow path ignores a handover and reads, and a leader on
//! the slow path hands over to nobody.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::clock;
use crate::election::holder::Behind;
use crate::election::{Election, Leadership, Successor};
use crate::etcd::Connection;

/// Whether a run takes the fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    Fast,
    /// Every piece of the fast path off: for tests that show the slow path
    /// alone is correct, and for an operator who suspects it.
    Slow,
}

impl Handoff {
    /// The environment variable that switches the fast path off.
    pub const VARIABLE: &'static str = "LEADERRUN_HANDOFF";

    /// From the variable's value: `slow` switches the fast path off.
    pub fn from_value(value: Option<&std::ffi::OsStr>) -> Handoff {
        match value {
            Some(value) if value == "slow" => Handoff::Slow,
            _ => Handoff::Fast,
        }
    }

    pub fn fast(self) -> bool {
        self == Handoff::Fast
    }
}

/// Whether nothing can have been attached to our lease in a run proven at
/// revision `proven_at` and resigned at `resigned`: true if no write came
/// between. Every write to etcd's keys takes a revision of its own, a key
/// is attached to a lease only by a write, and the command starts after
/// the proof and is dead before the resignation: anything it attached was
/// written at a revision between the two. On an etcd that nothing else
/// writes to (a chain of short runs, above all) that saves the next
/// leader's path a read; anything written in between, by anyone (our own
/// start record too), and the keys are read. It trusts etcd's revisions to
/// go only forward: an etcd restored from a backup under a running replica
/// numbers writes anew (and breaks the election itself: leases and keys go
/// back to the backup's).
pub fn nothing_attached_since(proven_at: i64, resigned: i64) -> bool {
    proven_at > 0 && resigned == proven_at + 1
}

/// How long a resignation waits at most for the look-up of who is behind
/// us. Sent as the command started, it is at most a round trip from its
/// answer, and a resignation with no one to hand over to costs the next in
/// line a whole round trip (its read): waiting is the shorter path. The
/// bound is only for a request that is lost (an endpoint that died under
/// it), not for a slow etcd.
pub const LOOK_BEHIND_WAIT: Duration = Duration::from_millis(100);

/// With one runner, looks up the candidate behind our key in a task of its
/// own, started as the command starts so that it runs beside it, off the
/// next leader's path; the resignation hands over to it if it has answered
/// by then ([`Election::resign_with`]). None on the slow path.
pub fn look_behind(
    handoff: Handoff,
    election: &Election<'_>,
    leadership: &Leadership,
    passed_on: Vec<Behind>,
) -> Option<JoinHandle<Option<Successor>>> {
    if election.slots != 1 || !handoff.fast() {
        return None;
    }
    let connection: Connection = election.connection.clone();
    let name = election.name.to_string();
    let leadership = leadership.clone();
    Some(tokio::spawn(async move {
        let election = Election::new(&connection, &name, 1);
        // Passed on by the leader that handed over to us: no read, and no
        // work for etcd beside our command.
        if let Some(successor) = election.passed_on_to(&leadership, passed_on) {
            return Some(successor);
        }
        match election.successor(&leadership).await {
            Ok(successor) => successor,
            Err(err) => {
                tracing::debug!("looking behind us: {err:#}");
                None
            }
        }
    }))
}

/// The candidate behind us, once the look-up has answered (within
/// [`LOOK_BEHIND_WAIT`]). A command shorter than a round trip (a chain of
/// `sleep 0`) ends before the answer is in. Not wanted (the run lost), it
/// is called off.
pub async fn successor(
    mut lookup: JoinHandle<Option<Successor>>,
    wanted: bool,
) -> Option<Successor> {
    if !wanted {
        lookup.abort();
        return None;
    }
    match clock::timeout(LOOK_BEHIND_WAIT, &mut lookup).await {
        Some(answer) => answer.ok().flatten(),
        None => {
            lookup.abort();
            tracing::debug!("looking behind us: no answer in time; nobody to hand over to");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_can_be_attached_only_when_no_write_came_between() {
        assert!(nothing_attached_since(41, 42));
        // Our own start record, the command's keys, anyone's write.
        assert!(!nothing_attached_since(41, 43));
        // An etcd that numbers anew (restored from a backup).
        assert!(!nothing_attached_since(41, 41));
        assert!(!nothing_attached_since(41, 12));
        // No proof revision known.
        assert!(!nothing_attached_since(0, 1));
    }

    #[test]
    fn only_slow_switches_the_fast_path_off() {
        use std::ffi::OsStr;
        assert_eq!(Handoff::from_value(Some(OsStr::new("slow"))), Handoff::Slow);
        for value in [None, Some(OsStr::new("")), Some(OsStr::new("fast"))] {
            assert_eq!(Handoff::from_value(value), Handoff::Fast, "{value:?}");
        }
    }
}
