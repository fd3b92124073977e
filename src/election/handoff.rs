//! The handoff fast path: the pieces that make a change of leader cost one
//! write and no read, each shadowing a slow path that is correct alone.
//!
//! | piece                           | fast path                                   | slow path (`LEADERRUN_HANDOFF=slow`)      |
//! |---------------------------------|---------------------------------------------|-------------------------------------------|
//! | who is behind us                | looked up while the command runs ([`look_behind`]), or taken as the leader before us passed it on | nobody known: not looked up |
//! | the resignation                 | also rewrites the successor's key: its proof, with no read (`Election::resign_with`) | deletes our key only; the next in line wakes on the deletion and reads |
//! | the waiter                      | takes a handover of its own key as its proof (`election::queue`) | reads the line on every wake            |
//! | the lease after the resignation | left to expire if nothing but our key was on it (`protocol::resign::nothing_attached_since`, the lease's keys) | revoked                   |
//!
//! Here: the switch, who is behind us and what is passed on, and when a
//! lease may be left to expire. The handover's write is in the
//! resignation (`Election::resign_with`), its reading in the waiter's
//! watch (`election::queue`, `watch`), its value in `holder`.
//!
//! The switch is read once, with the run's options ([`Handoff`]); a fleet
//! may mix both (a rolling upgrade, or one replica switched for a test):
//! a waiter on the slow path ignores a handover and reads, and a leader on
//! the slow path hands over to nobody.

use std::time::Duration;

use anyhow::Result;
use etcd_client::SortOrder;
use tokio::task::JoinHandle;

use super::holder::{Behind, Holder, Proclaimed};
use super::{line, name, Election, Leadership};
use crate::clock;
use crate::etcd::ids::{LeaseId, Token};
use crate::etcd::kv::Kv;
use crate::etcd::Connection;
use crate::logging::events;

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
    Some(crate::host::spawn(async move {
        let election = Election::new(&connection, &name, 1);
        // Passed on by the leader that handed over to us: no read, and no
        // work for etcd beside our command.
        if let Some(successor) = election.passed_on_to(&leadership, passed_on) {
            return looked_behind(Some(successor), false);
        }
        match election.successor(&leadership).await {
            Ok(successor) => looked_behind(successor, true),
            Err(err) => {
                tracing::debug!("looking behind us: {err:#}");
                None
            }
        }
    }))
}

/// Says who is behind us (nobody: an empty key), and whether it was
/// `read` or passed on: the moment from which a resignation hands over to
/// it.
fn looked_behind(successor: Option<Successor>, read: bool) -> Option<Successor> {
    let key = successor
        .as_ref()
        .map_or("", |successor| successor.key.as_str());
    tracing::debug!(
        event = events::LOOKED_BEHIND,
        successor = key,
        read,
        "behind us"
    );
    successor
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

/// The candidate just behind a leader, and the value that hands over to it.
#[derive(Debug, Clone)]
pub struct Successor {
    pub key: String,
    pub token: Token,
    pub lease: LeaseId,
    /// Its value, saying who handed over to it, and passing on who is
    /// behind it.
    pub value: Vec<u8>,
}

/// How many candidates behind the successor a leader passes on at most,
/// so that that many leaders after it hand over with no read of who is
/// behind them (one read every few changes of leader, not one each).
const PASSED_ON: usize = 3;

/// The most the values passed on may hold, in bytes: a handover is the
/// next leader's wait, and a value holds a command line of up to 4 KiB.
const PASSED_ON_BYTES: usize = 2048;

impl Successor {
    /// The first of `line` (candidates behind a leader with `token`, in
    /// line order), handed over to with the rest passed on, as many as
    /// [`PASSED_ON`] and [`PASSED_ON_BYTES`] allow. None if `line` is
    /// empty.
    pub fn first_of(mut line: Vec<Behind>, token: Token) -> Option<Successor> {
        if line.is_empty() {
            return None;
        }
        let first = line.remove(0);
        let mut bytes = 0;
        let passed: Vec<Behind> = line
            .into_iter()
            .take(PASSED_ON)
            .take_while(|behind| {
                bytes += behind.key.len() + behind.value.to_string().len();
                bytes <= PASSED_ON_BYTES
            })
            .collect();
        Some(Successor {
            value: Holder::handed_over(&first.value, token, &passed)?,
            key: first.key,
            token: first.token,
            lease: first.lease,
        })
    }
}

impl Election<'_> {
    /// The candidate just behind our key, as read now: the one a
    /// resignation hands over to. None if nobody is behind, or the one
    /// behind is not a leaderrun of one runner (another tool's candidate
    /// watches only the key ahead of it).
    pub async fn successor(&self, leadership: &Leadership) -> Result<Option<Successor>> {
        let behind = line::in_line(SortOrder::Ascend, line::FIRST_PAGE)
            .with_min_create_revision(leadership.token.revision().next().0)
            .with_serializable();
        let page = self
            .connection
            .get("reading the queue", name::prefix(self.name), Some(behind))
            .await?;
        let next = self
            .first_candidates(page, SortOrder::Ascend, 1 + PASSED_ON)
            .await?;
        // The one just behind, if it takes a handover (the protocol's
        // rule), then the leaderruns of one runner behind it, up to the
        // first that is not, passed on.
        let takes = |kv: &&Kv| Proclaimed::read(&kv.value).max_running() == Some(1);
        let Some(first) = protocol::line::successor(next.iter(), takes) else {
            return Ok(None);
        };
        let passed_on = next.iter().skip(1).take_while(takes);
        let line = std::iter::once(first)
            .chain(passed_on)
            .map_while(Behind::read)
            .collect();
        Ok(Successor::first_of(line, leadership.token))
    }

    /// The candidate behind us as the leader that handed over to us passed
    /// it on ([`Holder::handover`]), with those behind it: taken on trust
    /// only as far as it names candidates of this election created after
    /// our key. None if nothing usable was passed on: a read is needed.
    pub fn passed_on_to(&self, leadership: &Leadership, line: Vec<Behind>) -> Option<Successor> {
        let line = in_line_after(self.name, leadership.token, line);
        Successor::first_of(line, leadership.token)
    }
}

/// The start of `line` that names leaderruns' candidates of election
/// `name`, each created after the one before it, the first after `token`.
fn in_line_after(name: &str, token: Token, line: Vec<Behind>) -> Vec<Behind> {
    let mut last = token;
    line.into_iter()
        .take_while(|behind| {
            let in_line = name::is_candidate(name, behind.key.as_bytes())
                && behind.token > last
                && behind.is_leaderruns();
            last = behind.token;
            in_line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::kv::Kv;

    fn behind(key: &str, token: i64, command: &str) -> Behind {
        let value = serde_json::json!({
            "host": "h", "pid": 1, "started": "s", "command": command, "lease": token
        });
        Behind::read(&Kv::written(
            key,
            token,
            token,
            value.to_string().as_bytes(),
        ))
        .unwrap()
    }

    #[test]
    fn a_successor_is_passed_on_as_much_of_the_line_as_fits() {
        let line: Vec<Behind> = (1..=6)
            .map(|at| behind(&format!("j/{at}"), 10 + at, "true"))
            .collect();
        let next = Successor::first_of(line.clone(), Token(10)).unwrap();
        assert_eq!((next.key.as_str(), next.token), ("j/1", Token(11)));
        assert_eq!(
            Holder::handover(&next.value).unwrap().passed_on,
            line[1..=PASSED_ON]
        );
        // A long command line stops what is passed on, in order.
        let mut long = line.clone();
        long[2] = behind("j/3", 13, &"x".repeat(PASSED_ON_BYTES));
        let next = Successor::first_of(long, Token(10)).unwrap();
        assert_eq!(Holder::handover(&next.value).unwrap().passed_on, line[1..2]);
        assert!(Successor::first_of(Vec::new(), Token(10)).is_none());
    }

    fn line_of_three() -> Vec<Behind> {
        vec![
            behind("j/1", 11, "a"),
            behind("j/2", 12, "b"),
            behind("j/3", 13, "c"),
        ]
    }

    #[test]
    fn only_candidates_of_this_election_in_line_order_are_taken_on_trust() {
        let line = vec![
            behind("j/1", 11, "a"),
            behind("j/2", 12, "b"),
            behind("other/3", 13, "c"),
        ];
        assert_eq!(
            in_line_after("j", Token(10), line.clone()).len(),
            2,
            "another election's key ends it"
        );
        assert!(
            in_line_after("j", Token(11), line).is_empty(),
            "not behind us"
        );
        // A list passed on by a leader of an older version may name
        // another tool's candidate: it ends what is taken on trust.
        let mut foreign = line_of_three();
        foreign[1].value["lease"] = 99.into();
        assert_eq!(in_line_after("j", Token(10), foreign).len(), 1);
        let backwards = vec![behind("j/1", 12, "a"), behind("j/2", 11, "b")];
        assert_eq!(
            in_line_after("j", Token(10), backwards).len(),
            1,
            "out of order ends it"
        );
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
