//! Run records: what the last run of an election did, kept in etcd where
//! every replica and `status` can read it ("did last night's batch run,
//! where, and did it succeed?").
//!
//! Three keys beside the election ([`Beside`]), never under `<name>/`
//! (where they would count as candidates), so nothing grows without bound:
//! - `<name>.last-started`: the latest run, written as it starts (outcome
//!   `running`) and again as it ends;
//! - `<name>.last-finished`: the latest run that ended;
//! - `<name>.last-succeeded`: the latest run that succeeded.
//!
//! Every write is fenced by entitlement, not by token (README's "Run
//! records"): with --max-running above 1 runs finish in any order, and a
//! record copied from another cluster carries a token from another
//! numbering. The rule, the same for one runner and for many:
//! - a run still **entitled** (its candidate key still ours, in the same
//!   transaction: created at its token, on its lease) writes
//!   `last-finished` and `last-succeeded` unconditionally: it is the run
//!   that finishes now, so it finished last;
//! - a run no longer entitled (its key gone: lost, revoked, expired) writes
//!   them only where nothing was written since its win was proven (the
//!   key's mod revision at or below the proof's revision): a stale run never
//!   overwrites a newer record;
//! - `last-started` is the run that started last, the one whose win was
//!   proven last (`Record::proven_at`; with one runner, tokens order the
//!   same, and order the records of versions that did not say): a run's
//!   record (its start, or its end) replaces one proven no later than its
//!   own, or one above the store's revision, which no run of this cluster
//!   holds ([`replace_started`]). The start is written only while the run
//!   is entitled.
//!
//! A run that was not lost writes its end records in the transaction that
//! deletes its leader key (the entitlement is that transaction's
//! comparison), with no read: `last-started` there only if it holds our
//! own start record or nothing newer than our win, else by a read and a
//! swap after it. Anything else (the key already gone, or that transaction
//! unanswered) falls back to the unentitled writes, after the lease is
//! revoked.
//!
//! Recording never hurts the run: writes are bounded, and a failed one is
//! logged (with -v), never returned.

use std::time::{Duration, SystemTime};

use anyhow::Result;
use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
use serde::{Deserialize, Serialize};

use tokio::task::JoinHandle;

use crate::clock;
use crate::clock::Now;
use crate::election::holder::Holder;
use crate::election::name::Beside;
use crate::election::{ours, Leadership};
use crate::etcd::ids::{Revision, Token};
use crate::etcd::kv::Kv;
use crate::etcd::requests::{range_at, ranges, revision_of};
use crate::etcd::Connection;
use crate::retry::CLEANUP;

pub use protocol::loss::Outcome;
pub use protocol::records::{keeps_later, Guard, Which};

/// An [`Outcome`] in a record: its name (`Outcome::name`). A name this
/// version does not know (a newer version's) does not decode.
mod outcome_name {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::Outcome;

    pub fn serialize<S: Serializer>(outcome: &Outcome, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(outcome.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Outcome, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Outcome::named(&name).ok_or_else(|| D::Error::custom(format!("unknown outcome {name:?}")))
    }
}

/// One run, as recorded. The field names are read by scripts: keep them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub host: String,
    pub pid: u32,
    pub token: Token,
    pub command: String,
    /// RFC 3339, UTC.
    pub started: String,
    pub finished: Option<String>,
    pub duration_s: Option<f64>,
    pub exit_code: Option<i32>,
    #[serde(with = "outcome_name")]
    pub outcome: Outcome,
    /// The `--once-per` window the run opened, in seconds; absent without
    /// one (and in records of versions before it). A replica with a longer
    /// window reads it once the marker has expired (`once_per`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub once_per_s: Option<u64>,
    /// The revision at which the run's win was proven: what orders the
    /// starts of runs that overlap (--max-running above 1), whose tokens
    /// do not. Absent in records of versions before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proven_at: Option<Revision>,
}

/// The records of an election.
#[derive(Debug, Default)]
pub struct Records {
    pub last_started: Option<Record>,
    pub last_finished: Option<Record>,
    pub last_succeeded: Option<Record>,
}

/// A run in progress: what its records say, and when it started.
pub struct Run {
    record: Record,
    /// On the boot-time clock: a run's duration is not a difference of
    /// wall clocks, which NTP may step while it runs.
    started: clock::Instant,
}

impl Run {
    pub fn new(holder: &Holder, token: Token, proven_at: Revision, once_per_s: Option<u64>) -> Run {
        Run {
            record: Record {
                host: holder.host.clone(),
                pid: holder.pid,
                token,
                command: holder.command.clone(),
                started: humantime::format_rfc3339_seconds(crate::clock::wall()).to_string(),
                finished: None,
                duration_s: None,
                exit_code: None,
                outcome: Outcome::Running,
                once_per_s,
                proven_at: Some(proven_at),
            },
            started: clock::Instant::now(),
        }
    }

    /// The record of the run starting.
    pub fn started(&self) -> Record {
        self.record.clone()
    }

    /// The record of the run ended now, with `outcome` and `exit_code`.
    pub fn ended(&self, outcome: Outcome, exit_code: Option<i32>) -> Record {
        let took = self.started.elapsed();
        Record {
            finished: Some(humantime::format_rfc3339_seconds(crate::clock::wall()).to_string()),
            duration_s: Some((took.as_millis() as f64) / 1000.0),
            exit_code,
            outcome,
            ..self.record.clone()
        }
    }
}

/// The key an election's record is kept under.
fn record_key(which: Which, election: &str) -> String {
    match which {
        Which::Started => Beside::LastStarted,
        Which::Finished => Beside::LastFinished,
        Which::Succeeded => Beside::LastSucceeded,
    }
    .key(election)
}

/// The write of `value` under `key` with `guard`, as an operation of a
/// transaction; None for a guard that needs a read first.
fn guarded_put(key: &str, value: &str, guard: Guard) -> Option<TxnOp> {
    Some(match guard {
        Guard::Always => TxnOp::put(key, value, None),
        Guard::NotWrittenSince(proof) => {
            put_if(key, value, vec![not_written_since(key, Revision(proof))])
        }
        // Our own start record, or one no newer than our proof.
        Guard::NotWrittenSinceOr { proof, ours } => TxnOp::txn(
            Txn::new()
                .when([not_written_since(key, Revision(proof))])
                .and_then([TxnOp::put(key, value, None)])
                .or_else([put_if(
                    key,
                    value,
                    vec![Compare::mod_revision(key, CompareOp::Equal, ours)],
                )]),
        ),
        // Read first: `replace_started`.
        Guard::NoLaterStart => return None,
    })
}

fn encode(record: &Record) -> String {
    serde_json::to_string(record).expect("a struct of strings and numbers")
}

/// Holds if `key` was not written after `revision` (or does not exist).
fn not_written_since(key: &str, revision: Revision) -> Compare {
    Compare::mod_revision(key, CompareOp::Less, revision.0.saturating_add(1))
}

/// A put of `value` under `key` that happens only if `when` holds: a
/// transaction nested in another, so that each key of a record write is
/// judged on its own.
fn put_if(key: &str, value: &str, when: Vec<Compare>) -> TxnOp {
    TxnOp::txn(
        Txn::new()
            .when(when)
            .and_then([TxnOp::put(key, value, None)]),
    )
}

/// Writes `record` as `last-started` unless the record there is of a run
/// that started after ours: one with a larger token, since tokens order
/// the starts of one cluster's runs. A token above the store's revision
/// belongs to no run of this cluster (a record copied from another), and
/// is replaced. With `entitled`, only while that leadership's key is still
/// ours. A read, then a compare-and-swap on the key's mod revision (a few
/// times, if someone writes in between); off every leader's path. The
/// revision written at, or None if it was left alone.
async fn replace_started(
    connection: &Connection,
    election: &str,
    record: &Record,
    entitled: Option<&Leadership>,
) -> Result<Option<Revision>> {
    let started = Beside::LastStarted.key(election);
    let value = encode(record);
    for _ in 0..3 {
        let read = Txn::new().and_then([TxnOp::get(started.as_str(), None)]);
        let read = connection.txn("reading the run records", read).await?;
        let store = revision_of(&read);
        let found = range_at(&read, 0).first();
        if started_later(found.as_ref(), record, store) {
            tracing::debug!("a later run's start record is there: left alone");
            return Ok(None);
        }
        let mut when = entitled.map_or_else(Vec::new, |ours_then| {
            ours(&ours_then.key, ours_then.token, ours_then.lease).to_vec()
        });
        let seen = found.map_or(Revision::default(), |kv| kv.mod_revision);
        when.push(Compare::mod_revision(
            started.as_str(),
            CompareOp::Equal,
            seen.0,
        ));
        let swap =
            Txn::new()
                .when(when)
                .and_then([TxnOp::put(started.as_str(), value.as_str(), None)]);
        let response = connection.txn("recording the run", swap).await?;
        if response.succeeded() {
            return Ok(Some(revision_of(&response)));
        }
    }
    Ok(None)
}

/// Whether `found`, the `last-started` record read at store revision
/// `store`, is of a run that started after `ours`: its win proven later
/// (what orders the starts of runs that overlap, with several runners),
/// or, for a record of a version that did not say, a larger token (which
/// orders the starts of one runner's runs); no larger than the store's
/// revision either way (a larger one belongs to no run of this cluster).
fn started_later(found: Option<&Kv>, ours: &Record, store: Revision) -> bool {
    let Some(theirs) = found.and_then(|kv| order_of(&kv.value)) else {
        return false;
    };
    let (theirs, ours) = match (theirs.proven_at, ours.proven_at) {
        (Some(theirs), Some(ours)) => (theirs.0, ours.0),
        _ => (theirs.token.0, ours.token.0),
    };
    keeps_later(Some(theirs), ours, store.0)
}

/// What orders a stored record among starts, read on its own: a record
/// that is not whole to this version (a newer version's outcome, a field
/// it lacks) is still ordered.
#[derive(Deserialize)]
struct Order {
    token: Token,
    #[serde(default)]
    proven_at: Option<Revision>,
}

fn order_of(value: &[u8]) -> Option<Order> {
    serde_json::from_slice(value).ok()
}

pub fn decode(value: &[u8]) -> Option<Record> {
    serde_json::from_slice(value).ok()
}

/// Reads an election's records; a value that is not a record reads as
/// none. The name is bytes, as etcd's keys are (`status --all` finds names
/// that are not UTF-8).
pub async fn read(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Records> {
    let election = election.as_ref();
    let txn = Txn::new().and_then(
        [
            Beside::LastStarted,
            Beside::LastFinished,
            Beside::LastSucceeded,
        ]
        .map(|which| TxnOp::get(which.raw_key(election), None)),
    );
    let response = connection.txn("reading the run records", txn).await?;
    let mut found = ranges(&response)
        .into_iter()
        .map(|range| range.first().and_then(|kv| decode(&kv.value)));
    Ok(Records {
        last_started: found.next().flatten(),
        last_finished: found.next().flatten(),
        last_succeeded: found.next().flatten(),
    })
}

/// How long before `now` (this machine's clock) a record's run finished;
/// None if it has no (readable) end time.
pub fn age(record: &Record, now: SystemTime) -> Option<Age> {
    let finished = humantime::parse_rfc3339(record.finished.as_deref()?).ok()?;
    Some(match now.duration_since(finished) {
        Ok(ago) => Age::Ago(ago),
        Err(ahead) => Age::Ahead(ahead.duration()),
    })
}

/// When a run finished, against this machine's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Age {
    /// This long ago.
    Ago(Duration),
    /// This far in the future: the writer's clock was ahead of ours by at
    /// least this much. Not "just now": a clock a day ahead would keep
    /// its record fresh for a day more.
    Ahead(Duration),
}

/// Writes the record of a run that starts, in a task of its own: the
/// command does not wait for it. Not at once: a command that ends within
/// [`START_DELAY`] gets only its end records, so that a chain of short runs
/// does not load etcd with a write at each change of leader, on the next
/// leader's path. `also` is written then too (the leader key's "since").
/// The task returns the revision the record was written at, if it was.
pub fn start(
    connection: &Connection,
    leadership: &Leadership,
    record: Record,
    also: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<Option<Revision>> {
    let (connection, leadership) = (connection.clone(), leadership.clone());
    crate::host::spawn(async move {
        clock::sleep(START_DELAY).await;
        let record = async {
            let written =
                replace_started(&connection, &leadership.name, &record, Some(&leadership));
            let written = clock::timeout(WRITE_BOUND, written).await;
            match written {
                None => {
                    tracing::info!("recording the run's start: no answer in time");
                    None
                }
                Some(written) => log_failure(written).flatten(),
            }
        };
        tokio::join!(record, also).0
    })
}

fn log_failure<T>(result: Result<T>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(err) => {
            tracing::info!("recording the run: {err:#}");
            None
        }
    }
}

/// A run that has ended, its records still to write: beside the lease
/// revoke, or after it, so that the next leader does not wait for them.
pub struct Ended {
    pub record: Record,
    start: Option<JoinHandle<Option<Revision>>>,
    /// The revision at which the run's win was proven.
    proven_at: Revision,
    /// The revision this run's start record was written at, if it was.
    started_at: Option<Revision>,
    /// The write of the run's end into its `--once-per` attempt, if it
    /// made one (`once_per::WindowClaim::ended`): beside the records.
    window: Option<TxnOp>,
}

impl Ended {
    pub fn new(
        record: Record,
        start: Option<JoinHandle<Option<Revision>>>,
        proven_at: Revision,
        window: Option<TxnOp>,
    ) -> Ended {
        Ended {
            record,
            start,
            proven_at,
            started_at: None,
            window,
        }
    }

    /// The write of our `--once-per` attempt's end, if the run made one:
    /// last, after the records' (whose answers are read by their place).
    fn window_end(&self) -> Option<TxnOp> {
        self.window.clone()
    }

    /// The revision at which the run's win was proven.
    pub fn proven_at(&self) -> Revision {
        self.proven_at
    }

    /// Settles the start record before the end records are written. One
    /// already written gives its revision (the resignation's guard on
    /// `last-started`); one not yet begun is not needed any more. One still
    /// being written:
    /// - `entitled` (the end records go in the resignation, which deletes
    ///   our key): called off, not waited for. It is written only while our
    ///   key is ours ([`replace_started`] and `mark_leading` compare it), so
    ///   it cannot land after the resignation; landed before it, it makes
    ///   the resignation's `last-started` write refuse (written since our
    ///   proof), and our end goes there by a read and a swap after
    ///   (`WriteStarted`). Waited for, it took the way out's whole bound on
    ///   a slow etcd, and the resignation was never sent: no end records,
    ///   and our key left to expire with its lease, a TTL on the next
    ///   leader's path;
    /// - not entitled (a lost run, whose end records go after its lease is
    ///   given back): let finish first (within [`CLEANUP`], else stopped),
    ///   so that it cannot land after them.
    pub async fn settle_start(&mut self, entitled: bool) -> Option<Revision> {
        let Some(mut start) = self.start.take() else {
            return self.started_at;
        };
        let begun = self.record.duration_s.unwrap_or(0.0) >= START_DELAY.as_secs_f64();
        if start.is_finished() || (begun && !entitled) {
            match clock::timeout(CLEANUP, &mut start).await {
                Some(written) => self.started_at = written.ok().flatten(),
                None => {
                    start.abort();
                    tracing::info!("recording the run's start: no answer in time");
                }
            }
        } else {
            start.abort();
        }
        self.started_at
    }

    /// The end records' writes of `plan` (the protocol's, `end_plan`),
    /// each judged on its own, for the transaction that deletes our key,
    /// whose comparison is the entitlement (see the module's rule).
    /// `last-started` first: a record written there since our win (a run
    /// proven before us whose start record landed late) is left to
    /// [`Ended::write_started`], which reads it first.
    pub fn writes(&self, election: &str, plan: &[(Which, Guard)]) -> Vec<TxnOp> {
        let value = encode(&self.record);
        plan.iter()
            .filter_map(|(which, guard)| guarded_put(&record_key(*which, election), &value, *guard))
            .chain(self.window_end())
            .collect()
    }

    /// Whether the resignation that carried [`Ended::writes`] wrote our end
    /// into `last-started`: its answer holds the delete's response, then
    /// the writes' in order, `last-started`'s first.
    pub fn wrote_started(&self, resigned: &TxnResponse) -> bool {
        fn succeeded(response: &TxnResponse) -> bool {
            response.succeeded()
                || response.op_responses().into_iter().any(|op| match op {
                    TxnOpResponse::Txn(inner) => succeeded(&inner),
                    _ => false,
                })
        }
        match resigned.op_responses().into_iter().nth(1) {
            Some(TxnOpResponse::Txn(started)) => succeeded(&started),
            _ => false,
        }
    }

    /// Writes our end into `last-started` unless a run that started after
    /// ours is recorded there ([`replace_started`]), bounded.
    pub async fn write_started(&self, connection: &Connection, election: &str) {
        let written = replace_started(connection, election, &self.record, None);
        match clock::timeout(CLEANUP, written).await {
            Some(written) => {
                log_failure(written);
            }
            None => tracing::info!("recording the run's end: no answer within {CLEANUP:?}"),
        }
    }

    /// Writes the end records of a run no longer entitled (its key given
    /// back), as `plan` (the protocol's, `end_plan`) says: `last-finished`
    /// and `last-succeeded` only where nothing was written since our win,
    /// `last-started` unless a later start is there; bounded as a whole.
    pub async fn write_unentitled(
        &self,
        connection: &Connection,
        election: &str,
        plan: Vec<(Which, Guard)>,
    ) {
        let value = encode(&self.record);
        // last-started by write_started, below.
        let guarded = plan
            .into_iter()
            .filter(|(which, _)| *which != Which::Started)
            .filter_map(|(which, guard)| guarded_put(&record_key(which, election), &value, guard))
            .chain(self.window_end())
            .collect::<Vec<_>>();
        let txn = Txn::new().and_then(guarded);
        let finished = async {
            log_failure(connection.txn("recording the run's end", txn).await);
        };
        let both = async { tokio::join!(finished, self.write_started(connection, election)) };
        if clock::timeout(CLEANUP, both).await.is_none() {
            tracing::info!("recording the run's end: no answer within {CLEANUP:?}");
        }
    }
}

/// The bound on writing a start record, which runs beside the command.
pub const WRITE_BOUND: Duration = Duration::from_secs(5);

/// How long a command runs before its start is recorded.
const START_DELAY: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::records::end_plan;

    fn started(token: i64, proven_at: Option<i64>) -> Kv {
        let mut value = serde_json::json!({"token": token, "outcome": "some_newer_outcome"});
        if let Some(proven_at) = proven_at {
            value["proven_at"] = proven_at.into();
        }
        Kv::written("j.last-started", 5, 0, value.to_string().as_bytes())
    }

    fn ours(token: i64, proven_at: Option<i64>) -> Record {
        let holder = Holder::decode(b"x");
        let mut record = Run::new(&holder, Token(token), Revision(0), None).started();
        record.proven_at = proven_at.map(Revision);
        record
    }

    #[test]
    fn only_a_later_start_of_this_cluster_is_left_alone() {
        // Records of a version that did not say their proof: by token.
        // Ours is token 10; the store is at revision 100.
        let later = |found: Option<&Kv>, ours: &Record| started_later(found, ours, Revision(100));
        let old = ours(10, None);
        assert!(later(Some(&started(20, None)), &old), "a later run");
        assert!(!later(Some(&started(10, None)), &old), "our own");
        assert!(!later(Some(&started(5, None)), &old), "an earlier run");
        // A token above the store's revision is another cluster's.
        assert!(!later(Some(&started(101, None)), &old));
        assert!(!later(None, &old), "nothing there");
        let garbled = Kv::written("j.last-started", 5, 0, b"not a record");
        assert!(!later(Some(&garbled), &old));
    }

    #[test]
    fn with_several_runners_the_later_proof_is_the_later_start() {
        // Ours: token 10, proven at 40. Theirs stood ahead of us in line
        // (a smaller token) and proved its turn after us: it started later.
        let ours = ours(10, Some(40));
        let later = |found: Kv| started_later(Some(&found), &ours, Revision(100));
        assert!(
            later(started(6, Some(50))),
            "ahead in line, proven after us"
        );
        assert!(
            !later(started(12, Some(30))),
            "behind in line, proven before us"
        );
        assert!(!later(started(6, Some(101))), "another cluster's proof");
        // Theirs of a version that did not say: by token.
        assert!(later(started(12, None)));
        assert!(!later(started(6, None)));
    }

    #[test]
    fn ages_count_from_now_and_say_when_a_clock_is_ahead() {
        let now = humantime::parse_rfc3339("2026-11-29T12:00:00Z").unwrap();
        let holder = Holder::decode(b"x");
        let mut record = Run::new(&holder, Token(1), Revision(1), None).started();
        assert_eq!(age(&record, now), None, "not finished");
        record.finished = Some("2026-11-29T11:00:00Z".into());
        assert_eq!(age(&record, now), Some(Age::Ago(Duration::from_secs(3600))));
        record.finished = Some("2026-11-29T12:00:05Z".into());
        assert_eq!(age(&record, now), Some(Age::Ahead(Duration::from_secs(5))));
        record.finished = Some("yesterday".into());
        assert_eq!(age(&record, now), None);
    }

    #[test]
    fn a_runs_end_goes_to_last_succeeded_only_if_it_succeeded() {
        let holder = Holder::decode(b"x");
        let run = Run::new(&holder, Token(7), Revision(7), Some(60));
        let keys = |outcome, entitled| {
            end_plan(outcome, entitled, 5, None)
                .into_iter()
                .map(|(which, guard)| (record_key(which, "j"), guard))
                .collect::<Vec<_>>()
        };
        let started = |guard| ("j.last-started".to_string(), guard);
        let finished = |guard| ("j.last-finished".to_string(), guard);
        let succeeded = |guard| ("j.last-succeeded".to_string(), guard);
        assert_eq!(
            keys(Outcome::Succeeded, true),
            [
                started(Guard::NotWrittenSince(5)),
                finished(Guard::Always),
                succeeded(Guard::Always)
            ]
        );
        assert_eq!(
            keys(Outcome::Failed, false),
            [
                started(Guard::NoLaterStart),
                finished(Guard::NotWrittenSince(5))
            ]
        );
        assert_eq!(keys(Outcome::Lost, false).len(), 2);
        let _ = &run;
        let ended = run.ended(Outcome::Succeeded, Some(0));
        assert_eq!(decode(encode(&ended).as_bytes()).unwrap().token, Token(7));
        // A record of a newer version is still ordered by its token.
        assert_eq!(
            order_of(br#"{"token": 9, "outcome": "new"}"#).map(|order| order.token),
            Some(Token(9))
        );
        assert!(decode(br#"{"token": 9, "outcome": "new"}"#).is_none());
    }
}
