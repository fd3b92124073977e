//! `leaderrun status`: who leads an election, its token and its queue, read
//! once ([`Report`], printed by [`render`]) or followed ([`watch`]). Reads
//! only: nothing here writes to etcd.

mod all;
mod render;
mod watch;

use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use crate::election::once_per::{self, Marker};
use crate::election::pause::{self, Paused};
use crate::election::record;
use crate::election::{self, Leader};
use crate::etcd::ids::Token;
use crate::etcd::{self, Connection};
use crate::exit::Exit;

/// How often `status` pings etcd: a dead connection breaks a `--watch`
/// within this, and the watch moves to another endpoint.
const PING: Duration = Duration::from_secs(5);

/// How `status` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Prometheus,
}

/// Which elections `status` reads.
pub enum Elections {
    /// Every election whose name starts with the prefix (`--all`).
    All { prefix: String },
    /// One, by its name.
    One(String),
}

/// What `leaderrun status` was asked for.
pub struct Options {
    pub elections: Elections,
    pub format: Format,
    /// Follow the leader instead of reading it once.
    pub watch: bool,
    /// `--max-age`: a freshness check instead of a report.
    pub max_age: Option<Duration>,
    pub etcd: etcd::Options,
}

pub async fn status(options: Options) -> Result<Exit> {
    let connection = etcd::connect(&options.etcd, PING).await?;
    let election = match options.elections {
        Elections::All { prefix } => return all::all(&connection, &prefix, options.format).await,
        Elections::One(election) => election,
    };
    if options.watch {
        return watch::watch(&connection, &election).await;
    }
    if let Some(max_age) = options.max_age {
        return fresh(&connection, &election, max_age).await;
    }
    let report = Report::read(&connection, election.as_bytes()).await?;
    let shown = match options.format {
        Format::Json => render::json(&report),
        Format::Text => render::text(&report),
        Format::Prometheus => all::prometheus(std::slice::from_ref(&report)),
    };
    write_out(shown.as_bytes())?;
    Ok(report.exit())
}

/// An election as `status` shows it.
pub struct Report {
    /// The name as etcd's keys spell it: bytes, not always UTF-8 (shown
    /// with [`election::name::escaped`]).
    pub election: Vec<u8>,
    pub leader: Option<Leader>,
    /// Every runner, the leader first (one, unless --max-running).
    pub runners: Vec<Leader>,
    /// The --max-running the runners were started with.
    pub max_running: usize,
    /// Seconds left on the leader's lease; None if it just expired.
    pub ttl: Option<u64>,
    /// Candidates queued behind the runners, in line order, each with
    /// its place in line (the leader's is 1).
    pub waiting: Vec<(usize, Leader)>,
    /// The open `--once-per` window's marker.
    pub marker: Option<Marker>,
    /// The run records.
    pub records: record::Records,
    /// The election's pause (`leaderrun pause`), if one stands.
    pub paused: Option<Paused>,
}

impl Report {
    /// How many wait behind the runners.
    pub fn waiters(&self) -> usize {
        self.waiting.len()
    }

    /// Whether the election is stuck: a key with no lease leads, or a
    /// `--once-per` marker with no lease keeps every run out. Neither ends
    /// by itself: an operator must remove it.
    pub fn stuck(&self) -> bool {
        self.leader.as_ref().is_some_and(Leader::stale)
            || self.marker.as_ref().is_some_and(once_per::Marker::stuck)
    }

    /// What `status` of this one election exits with: stuck first (it
    /// needs an operator whatever else stands), then paused (an operator
    /// chose it: no run starts), then whether someone leads.
    pub fn exit(&self) -> Exit {
        match (&self.leader, &self.paused) {
            _ if self.stuck() => Exit::Stuck,
            (_, Some(_)) => Exit::Paused,
            (Some(_), None) => Exit::Success,
            (None, None) => Exit::NoLeader,
        }
    }

    /// The line, the `--once-per` marker and the records are read at once;
    /// the leader's lease after, once it is known.
    async fn read(connection: &Connection, election: &[u8]) -> Result<Report> {
        let (snapshot, marker, records, paused) = tokio::join!(
            election::read_leader(connection, election),
            once_per::read(connection, election),
            record::read(connection, election),
            pause::read(connection, election),
        );
        // Their errors in this order, whichever came first: the line's
        // refusal is the one to name.
        let (snapshot, marker, records, paused) = (snapshot?, marker?, records?, paused?);
        let started = records.last_started.as_ref();
        let marker = match marker {
            Some(stored) => Some(once_per::judged(connection, &stored, started).await?),
            None => None,
        };
        let election::Snapshot {
            leader,
            runners,
            waiting,
        } = snapshot;
        let ttl = match &leader {
            Some(leader) => connection
                .time_left(leader.lease)
                .await?
                .map(|left| left.as_secs()),
            None => None,
        };
        Ok(Report {
            election: election.to_vec(),
            waiting,
            max_running: leader.as_ref().map_or(1, election::Leader::slots),
            runners,
            leader,
            ttl,
            marker,
            records,
            paused,
        })
    }

    /// The last recorded start, and where it stands.
    pub fn last_start(&self) -> Option<(&record::Record, StartState)> {
        let records = &self.records;
        let started = records.last_started.as_ref()?;
        let ended = started.outcome != record::Outcome::Running
            || records
                .last_finished
                .as_ref()
                .map(|finished| finished.token)
                == Some(started.token);
        // A start record is "running" until the run's end is written. If
        // nobody holding the election holds its token, its leader is gone
        // without writing that end (killed, or etcd refused the write).
        let holds = |token: Token| {
            self.leader
                .as_ref()
                .is_some_and(|leader| leader.token == token)
                || self.runners.iter().any(|runner| runner.token == token)
        };
        let state = match () {
            () if ended => StartState::Ended,
            () if holds(started.token) => StartState::Running,
            () => StartState::LeaderGone,
        };
        Some((started, state))
    }
}

/// Where the last recorded start stands. Its names are read by scripts
/// (`last_started.state` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartState {
    /// Its leader still holds the election.
    Running,
    /// No end recorded, and nobody holding the election holds its token:
    /// leaderrun was killed, or etcd took no end record.
    LeaderGone,
    /// Its end is recorded.
    Ended,
}

impl StartState {
    pub fn name(self) -> &'static str {
        match self {
            StartState::Running => "running",
            StartState::LeaderGone => "leader_gone",
            StartState::Ended => "ended",
        }
    }
}

/// How far ahead of our clock a success may be dated and still count as
/// just now. Stamps are whole seconds, rounded down, so a writer whose
/// clock agrees with ours never dates one ahead; this absorbs clocks a few
/// seconds apart (NTP not yet settled), not a clock set wrong.
const CLOCK_AHEAD_ALLOWED: Duration = Duration::from_secs(5);

/// How a last success stands against `--max-age`.
#[derive(Debug, PartialEq, Eq)]
enum Freshness {
    Fresh,
    /// Older than --max-age, or of no readable end time.
    Stale,
    /// Dated this far in our future (past [`CLOCK_AHEAD_ALLOWED`]): its
    /// writer's clock is ahead, and the record says nothing of how long
    /// ago it ran. Read as age 0, a clock a day ahead would keep it
    /// "fresh" for a day more than --max-age.
    Ahead(Duration),
}

fn freshness(age: Option<record::Age>, max_age: Duration) -> Freshness {
    match age {
        Some(record::Age::Ago(ago)) if ago <= max_age => Freshness::Fresh,
        Some(record::Age::Ahead(ahead)) if ahead <= CLOCK_AHEAD_ALLOWED => Freshness::Fresh,
        Some(record::Age::Ahead(ahead)) => Freshness::Ahead(ahead),
        _ => Freshness::Stale,
    }
}

/// `status --max-age`: did a run succeed within `max_age`? One line, and
/// the exit code a monitoring check reads.
async fn fresh(connection: &Connection, election: &str, max_age: Duration) -> Result<Exit> {
    let records = record::read(connection, election).await?;
    let election = crate::election::holder::printable(election);
    let within = humantime::format_duration(max_age);
    // A record there that does not say it succeeded (written by hand, or
    // garbled) is no success.
    let (line, code) = match records
        .last_succeeded
        .as_ref()
        .filter(|last| last.outcome == record::Outcome::Succeeded)
        .map(|last| {
            (
                last,
                freshness(record::age(last, std::time::SystemTime::now()), max_age),
            )
        }) {
        Some((last, Freshness::Fresh)) => (
            format!(
                "{election}: fresh: last success: {} (within {within})",
                render::run_line(last)
            ),
            Exit::Success,
        ),
        Some((last, Freshness::Ahead(ahead))) => {
            let ahead = humantime::format_duration(Duration::from_secs(ahead.as_secs()));
            (
                format!(
                    "{election}: stale: last success: {} (dated in the future: the writer's clock is at least {ahead} ahead of this one)",
                    render::run_line(last)
                ),
                Exit::Stale,
            )
        }
        Some((last, Freshness::Stale)) => (
            format!(
                "{election}: stale: last success: {} (more than {within} ago)",
                render::run_line(last)
            ),
            Exit::Stale,
        ),
        None => (
            format!("{election}: stale: no run has succeeded (that etcd remembers)"),
            Exit::Stale,
        ),
    };
    write_out(format!("{line}\n").as_bytes())?;
    Ok(code)
}

/// Writes to stdout in one go; false if the reader went away (a closed
/// pipe), which is how `status | head -1` ends, not an error.
pub fn write_out(bytes: &[u8]) -> Result<bool> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::Age;

    #[test]
    fn a_success_dated_ahead_of_our_clock_is_not_fresh() {
        let hour = Duration::from_secs(3600);
        let day = 24 * hour;
        assert_eq!(freshness(Some(Age::Ago(hour / 2)), hour), Freshness::Fresh);
        assert_eq!(freshness(Some(Age::Ago(hour)), hour), Freshness::Fresh);
        assert_eq!(freshness(Some(Age::Ago(2 * hour)), hour), Freshness::Stale);
        assert_eq!(freshness(None, hour), Freshness::Stale);
        // A day ahead once read as age 0: fresh for a day and an hour.
        assert_eq!(
            freshness(Some(Age::Ahead(day)), hour),
            Freshness::Ahead(day)
        );
        // A clock a little ahead (NTP settling) is not a clock set wrong.
        assert_eq!(
            freshness(Some(Age::Ahead(CLOCK_AHEAD_ALLOWED)), hour),
            Freshness::Fresh
        );
        let past = CLOCK_AHEAD_ALLOWED + Duration::from_secs(1);
        assert_eq!(
            freshness(Some(Age::Ahead(past)), hour),
            Freshness::Ahead(past)
        );
    }
}
