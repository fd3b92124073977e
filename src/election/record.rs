//! Run records: what the last run of an election did, kept in etcd where
//! every replica and `status` can read it ("did last night's batch run,
//! where, and did it succeed?").
//!
//! Three keys beside the election, never under `<name>/` (where they would
//! count as candidates), so nothing grows without bound:
//! - `<name>.last-started`: the latest run, written as it starts (outcome
//!   `running`) and again as it ends;
//! - `<name>.last-finished`: the latest run that ended;
//! - `<name>.last-succeeded`: the latest run that succeeded.
//!
//! Every write is fenced by the run's token, the project's own idea: it
//! replaces only a record with a token no larger than ours, compared and
//! swapped on the key's mod revision. A stale leader can never overwrite a
//! newer leader's record; a run that lost leadership still records that it
//! was lost, as long as nobody newer has written since. A run that was not
//! lost skips the read: its records replace what has not changed since its
//! win was proven, which then held no newer token ([`Ended::unchanged_swap`]),
//! in the transaction that deletes its leader key. Anything else falls back
//! to the read.
//!
//! Recording never hurts the run: writes are bounded, and a failed one is
//! logged (with -v), never returned.

use std::time::{Duration, SystemTime};

use anyhow::Result;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use serde::{Deserialize, Serialize};

use tokio::task::JoinHandle;

use crate::clock;
use crate::election::holder::Holder;
use crate::etcd::requests::{ranges, revision_of};
use crate::etcd::Connection;
use crate::retry::CLEANUP;

/// How a run ended, from a fixed set that scripts may rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Running,
    Succeeded,
    Failed,
    Signalled,
    Lost,
    TimedOut,
    NotStarted,
}

/// One run, as recorded. The field names are read by scripts: keep them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub host: String,
    pub pid: u32,
    pub token: i64,
    pub command: String,
    /// RFC 3339, UTC.
    pub started: String,
    pub finished: Option<String>,
    pub duration_s: Option<f64>,
    pub exit_code: Option<i32>,
    pub outcome: Outcome,
}

/// The records of an election.
#[derive(Debug, Default)]
pub struct Records {
    pub last_started: Option<Record>,
    pub last_finished: Option<Record>,
    pub last_succeeded: Option<Record>,
}

pub fn key(election: &str, which: &str) -> String {
    format!("{election}.{which}")
}

const STARTED: &str = "last-started";
const FINISHED: &str = "last-finished";
const SUCCEEDED: &str = "last-succeeded";

/// A run in progress: what its records say, and when it started.
pub struct Run {
    record: Record,
    started: SystemTime,
}

impl Run {
    pub fn new(holder: &Holder, token: i64) -> Run {
        let started = SystemTime::now();
        Run {
            record: Record {
                host: holder.host.clone(),
                pid: holder.pid,
                token,
                command: holder.command.clone(),
                started: humantime::format_rfc3339_seconds(started).to_string(),
                finished: None,
                duration_s: None,
                exit_code: None,
                outcome: Outcome::Running,
            },
            started,
        }
    }

    /// The record of the run starting.
    pub fn started(&self) -> Record {
        self.record.clone()
    }

    /// The record of the run ended now, with `outcome` and `exit_code`.
    pub fn ended(&self, outcome: Outcome, exit_code: Option<i32>) -> Record {
        let now = SystemTime::now();
        let took = now.duration_since(self.started).unwrap_or_default();
        Record {
            finished: Some(humantime::format_rfc3339_seconds(now).to_string()),
            duration_s: Some((took.as_millis() as f64) / 1000.0),
            exit_code,
            outcome,
            ..self.record.clone()
        }
    }
}

/// Writes the record of a run that starts; the revision it was written
/// at, if it was.
pub async fn write_started(
    connection: &Connection,
    election: &str,
    record: &Record,
) -> Option<i64> {
    log_failure(fenced_put(connection, &[key(election, STARTED)], record).await).flatten()
}

/// Writes the records of a run that ended.
pub async fn write_ended(connection: &Connection, election: &str, record: &Record) {
    log_failure(fenced_put(connection, &end_keys(election, record), record).await);
}

/// The keys a run's end is written under.
fn end_keys(election: &str, record: &Record) -> Vec<String> {
    let mut keys = vec![key(election, STARTED), key(election, FINISHED)];
    if record.outcome == Outcome::Succeeded {
        keys.push(key(election, SUCCEEDED));
    }
    keys
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

/// Writes `record` under each of `keys` whose record there has a token no
/// larger than ours: one read of them all, then one compare-and-swap on
/// their mod revisions (a few times if someone writes in between). Two
/// round trips, whatever the number of keys. The revision written at, or
/// None if newer records were left alone.
async fn fenced_put(
    connection: &Connection,
    keys: &[String],
    record: &Record,
) -> Result<Option<i64>> {
    let value = serde_json::to_string(record).expect("a struct of strings and numbers");
    let reads: Vec<TxnOp> = keys
        .iter()
        .map(|key| TxnOp::get(key.as_str(), None))
        .collect();
    for _ in 0..3 {
        let current = connection
            .txn(
                "reading the run records",
                Txn::new().and_then(reads.clone()),
            )
            .await?;
        let mut compares = Vec::new();
        let mut puts = Vec::new();
        for (key, range) in keys.iter().zip(ranges(&current)) {
            let found = range.kvs.first();
            let theirs = found.and_then(|kv| token_of(kv.value()));
            if theirs.is_some_and(|theirs| theirs > record.token) {
                tracing::debug!(key, "a newer run's record is there: left alone");
                continue;
            }
            let revision = found.map_or(0, |kv| kv.mod_revision());
            compares.push(Compare::mod_revision(
                key.as_str(),
                CompareOp::Equal,
                revision,
            ));
            puts.push(TxnOp::put(key.as_str(), value.as_str(), None));
        }
        if puts.is_empty() {
            return Ok(None);
        }
        let swap = Txn::new().when(compares).and_then(puts);
        let response = connection.txn("writing the run records", swap).await?;
        if response.succeeded() {
            return Ok(Some(revision_of(&response)));
        }
    }
    anyhow::bail!("the run records kept changing under us")
}

fn decode(value: &[u8]) -> Option<Record> {
    serde_json::from_slice(value).ok()
}

/// The token of a stored record, read on its own: a record that is not
/// whole to this version (a newer version's outcome, a field it lacks) is
/// still fenced by its token.
fn token_of(value: &[u8]) -> Option<i64> {
    #[derive(Deserialize)]
    struct Token {
        token: i64,
    }
    serde_json::from_slice::<Token>(value)
        .ok()
        .map(|found| found.token)
}

/// Reads an election's records; a value that is not a record reads as
/// none. The name is bytes, as etcd's keys are (`status --all` finds names
/// that are not UTF-8).
pub async fn read(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Records> {
    let raw_key = |which: &str| [election.as_ref(), b".", which.as_bytes()].concat();
    let txn = Txn::new().and_then([
        TxnOp::get(raw_key(STARTED), None),
        TxnOp::get(raw_key(FINISHED), None),
        TxnOp::get(raw_key(SUCCEEDED), None),
    ]);
    let response = connection.txn("reading the run records", txn).await?;
    let mut found = ranges(&response)
        .into_iter()
        .map(|range| range.kvs.first().and_then(|kv| decode(kv.value())));
    Ok(Records {
        last_started: found.next().flatten(),
        last_finished: found.next().flatten(),
        last_succeeded: found.next().flatten(),
    })
}

/// How long ago a record's run finished, by this machine's clock; None
/// if it has no (readable) end time.
pub fn age(record: &Record) -> Option<Age> {
    let finished = humantime::parse_rfc3339(record.finished.as_deref()?).ok()?;
    Some(match SystemTime::now().duration_since(finished) {
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
    election: &str,
    record: Record,
    also: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<Option<i64>> {
    let (connection, election) = (connection.clone(), election.to_string());
    tokio::spawn(async move {
        clock::sleep(START_DELAY).await;
        let record = async {
            let written = write_started(&connection, &election, &record);
            let written = clock::timeout(WRITE_BOUND, written).await;
            if written.is_none() {
                tracing::info!("recording the run's start: no answer in time");
            }
            written.flatten()
        };
        tokio::join!(record, also).0
    })
}

/// A run that has ended, its records still to write: beside the lease
/// revoke, or after it, so that the next leader does not wait for them.
pub struct Ended {
    pub record: Record,
    start: Option<JoinHandle<Option<i64>>>,
    /// The revision at which the run's win was proven.
    proven_at: i64,
    /// The revision this run's start record was written at, if it was.
    started_at: Option<i64>,
}

impl Ended {
    pub fn new(record: Record, start: Option<JoinHandle<Option<i64>>>, proven_at: i64) -> Ended {
        Ended {
            record,
            start,
            proven_at,
            started_at: None,
        }
    }

    /// The revision at which the run's win was proven.
    pub fn proven_at(&self) -> i64 {
        self.proven_at
    }

    /// Settles the start record before the end records are written: one
    /// being written is let finish first (within [`CLEANUP`], else stopped),
    /// so that it cannot land after them; one not yet begun is not needed
    /// any more.
    pub async fn settle_start(&mut self) {
        let Some(mut start) = self.start.take() else {
            return;
        };
        if start.is_finished() || self.record.duration_s.unwrap_or(0.0) >= START_DELAY.as_secs_f64()
        {
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
    }

    /// With one runner, the end records as one compare-and-swap with no
    /// read first: the comparisons that hold if none of them changed since
    /// the win was proven (but for this run's own start record), and the
    /// writes. At that revision no record could hold a newer token than
    /// ours: a candidate created after ours runs only once ours is gone. So
    /// a record unchanged since holds none either. If one changed (a stale
    /// leader's late write, say), the swap fails, and the caller writes
    /// them fenced by token ([`Ended::write`]).
    pub fn unchanged_swap(&self, election: &str) -> (Vec<Compare>, Vec<TxnOp>) {
        let value = serde_json::to_string(&self.record).expect("a struct of strings and numbers");
        let keys = end_keys(election, &self.record);
        let started = key(election, STARTED);
        let compares = keys
            .iter()
            .map(|key| match self.started_at {
                Some(ours) if *key == started => {
                    Compare::mod_revision(key.as_str(), CompareOp::Equal, ours)
                }
                _ => Compare::mod_revision(key.as_str(), CompareOp::Less, self.proven_at + 1),
            })
            .collect();
        let puts = keys
            .iter()
            .map(|key| TxnOp::put(key.as_str(), value.as_str(), None))
            .collect();
        (compares, puts)
    }

    /// Writes the end records (the start record among them), fenced and
    /// bounded.
    pub async fn write(mut self, connection: &Connection, election: &str) {
        self.settle_start().await;
        let written = clock::timeout(CLEANUP, write_ended(connection, election, &self.record));
        if written.await.is_none() {
            tracing::info!("recording the run's end: no answer within {CLEANUP:?}");
        }
    }
}

/// The bound on writing a start record, which runs beside the command.
pub const WRITE_BOUND: Duration = Duration::from_secs(5);

/// How long a command runs before its start is recorded.
const START_DELAY: Duration = Duration::from_secs(1);
