//! `--once-per`: at most one run of an election starts per window, across
//! all replicas; with `--once-per-attempts N`, up to N runs, each after the
//! last failed, until one succeeds.
//!
//! The crontab case: three replicas fire at midnight, one clock is late, and
//! without this it wins after the first run finished and runs the batch
//! again. The winner of each election writes a marker, only while it still
//! leads, attached to a lease of the window's length that nobody renews:
//! the marker expires by itself, whoever crashed.
//!
//! The marker lists the window's attempts ([`Attempt`]): each run that
//! claims the window adds its own as `claimed`, marks it `running` as its
//! command starts, and writes how it ended as it resigns. What the list
//! leaves of the window is the protocol's to judge
//! (`protocol::window::judge`): a run killed between its claim and its
//! command's start left its attempt `claimed`, and once its key is gone
//! it spent nothing, so the next run may claim the window; with several
//! attempts allowed, only a success spends it. Each write after the claim
//! is made only if the marker still holds what this run last wrote there
//! (a comparison of its value), so a marker that expired, or that another
//! run has written since, is never overwritten.
//!
//! The marker sits beside the election (`<name>.once-per`, [`Beside`]),
//! not under `<name>/`, where etcd's election protocol (and `etcdctl
//! elect`) would count it as a candidate.

use std::time::{Duration, SystemTime};

use anyhow::Result;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use serde::{Deserialize, Serialize};

use crate::election::holder::{printable, Holder};
use crate::election::name::Beside;
use crate::election::pause::raw_shown;
use crate::election::record::{self, Outcome, Record};
use crate::election::Disagreement;
use crate::election::Leadership;
use crate::etcd::ids::{LeaseId, Revision, Token};
use crate::etcd::requests::{range_at, whole_seconds};
use crate::etcd::Connection;
use crate::retry::CLEANUP;
use protocol::window::{self as rules, AttemptState, Verdict};

/// The key of an election's marker.
pub fn marker_key(election: &str) -> String {
    Beside::OncePer.key(election)
}

/// How many of a window's runs are described, the latest.
const SHOWN_ATTEMPTS: usize = 10;

/// The most characters of an attempt's `why` kept in the marker.
const WHY_LIMIT: usize = 200;

/// How many attempts that did not count (their command never started) a
/// marker keeps, the latest: the ones that counted are all kept (at most
/// `--once-per-attempts` of them).
const UNCOUNTED_KEPT: usize = 5;

/// One run's attempt at a window, as the marker lists it. The field
/// names are read by scripts (`status --json`): keep them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Attempt {
    pub token: Token,
    /// Its run's candidate key: while it stands at `token`, the run holds
    /// the election, and an attempt it has not ended is under way.
    pub key: String,
    pub host: String,
    pub pid: u32,
    /// When the run claimed the window (RFC 3339, UTC).
    pub started: String,
    /// `claimed`, `running`, or how the run ended (a run record's outcome).
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What its state does not say of how it ended, in a few words: the
    /// exit code of a failure, why a command could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// An attempt's states before its run ends.
const CLAIMED: &str = "claimed";
const RUNNING: &str = "running";

impl Attempt {
    /// Our run's attempt, as it claims the window (now: not when it
    /// joined the line, which its holder says).
    fn claimed(leadership: &Leadership, holder: &Holder) -> Attempt {
        Attempt {
            token: leadership.token,
            key: leadership.key.clone(),
            host: holder.host.clone(),
            pid: holder.pid,
            started: crate::election::holder::now_rfc3339(),
            state: CLAIMED.to_string(),
            exit_code: None,
            why: None,
        }
    }

    /// Where the attempt stands, for the protocol. A state this version
    /// does not know (a newer one's) is taken as a failed end: it counts,
    /// and spends nothing a success would.
    pub fn state(&self) -> AttemptState {
        match self.state.as_str() {
            CLAIMED => AttemptState::Claimed,
            RUNNING => AttemptState::Running,
            name => AttemptState::Ended(
                Outcome::named(name)
                    .filter(|outcome| *outcome != Outcome::Running)
                    .unwrap_or(Outcome::Failed),
            ),
        }
    }

    /// "claimed at 2026-11-29T00:00:01Z on web-2 (pid 4242, token 1234),
    /// failed: exited with 1": when its run claimed the window, then how
    /// it stands.
    pub fn describe(&self) -> String {
        let outcome = match self.state() {
            AttemptState::Claimed => None,
            AttemptState::Running => Some("started"),
            AttemptState::Ended(Outcome::Succeeded) => Some("succeeded"),
            AttemptState::Ended(Outcome::NotStarted) => Some("could not start"),
            AttemptState::Ended(Outcome::TimedOut) => Some("timed out"),
            AttemptState::Ended(Outcome::Lost) => Some("lost leadership"),
            AttemptState::Ended(Outcome::Signalled) => Some("signalled"),
            AttemptState::Ended(Outcome::Failed | Outcome::Running) => Some("failed"),
        };
        let why = self.why.as_deref().map(printable);
        let after = match (outcome, why.filter(|why| !why.is_empty())) {
            (None, _) => String::new(),
            (Some(outcome), None) => format!(", {outcome}"),
            (Some(outcome), Some(why)) => format!(", {outcome}: {why}"),
        };
        format!(
            "claimed at {} on {} (pid {}, token {}){after}",
            printable(&self.started),
            printable(&self.host),
            self.pid,
            self.token
        )
    }
}

/// What the marker holds: who started the window's latest run, and its
/// token (what versions before the attempts read), and the attempts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LastRun {
    #[serde(flatten)]
    pub holder: Holder,
    pub token: Token,
    /// The window's length in seconds, as the run that opened it asked.
    /// Absent from markers of leaderrun 0.1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<u64>,
    /// `--once-per-attempts` of the run that opened the window. Absent
    /// from markers of versions before it: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_allowed: Option<u32>,
    /// The window's attempts, in order. Empty in markers of versions
    /// before them: the window had its one run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
}

impl LastRun {
    /// "at 2026-11-29T00:00:01Z on web-2 (pid 4242, token 1234)".
    pub fn describe(&self) -> String {
        let holder = &self.holder;
        format!(
            "at {} on {} (pid {}, token {})",
            printable(&holder.started),
            printable(&holder.host),
            holder.pid,
            self.token
        )
    }

    /// Whether the latest attempt is `leadership`'s, claimed.
    fn claimed_by(&self, leadership: &Leadership) -> bool {
        self.attempts
            .last()
            .is_some_and(|attempt| attempt.token == leadership.token && attempt.state == CLAIMED)
    }

    /// How many attempts the window allows.
    pub fn allowed(&self) -> u32 {
        self.attempts_allowed.unwrap_or(1).max(1)
    }

    /// The marker's value with `ours` added to the attempts, its run the
    /// latest: the attempts that did not count beyond the latest
    /// [`UNCOUNTED_KEPT`] are let go, so the value stays small.
    fn with_attempt(&self, holder: &Holder, ours: Attempt, judged: &[bool]) -> LastRun {
        let mut uncounted = judged.iter().filter(|counted| !**counted).count();
        let mut attempts = Vec::with_capacity(self.attempts.len() + 1);
        for (attempt, counted) in self.attempts.iter().zip(judged) {
            if !counted && uncounted > UNCOUNTED_KEPT - 1 {
                uncounted -= 1;
                continue;
            }
            attempts.push(attempt.clone());
        }
        let token = ours.token;
        attempts.push(ours);
        LastRun {
            holder: holder.clone(),
            token,
            window_s: self.window_s,
            attempts_allowed: self.attempts_allowed,
            attempts,
        }
    }
}

/// A marker found in etcd: the run it records and how long its window has
/// left (None if the lease ran out as we looked).
#[derive(Debug, Clone)]
pub struct Marker {
    /// What leaderrun wrote there; None for a marker another writer made
    /// (`etcdctl put NAME.once-per ...`), of which only [`Marker::raw`] is
    /// known.
    pub last: Option<LastRun>,
    /// Its value as stored.
    pub raw: Vec<u8>,
    pub left: Option<Duration>,
    /// The marker's lease; [`LeaseId::NONE`] for a marker written by hand, which never
    /// expires.
    pub lease: LeaseId,
    /// What its attempts leave of the window, as judged where it was read.
    pub verdict: Verdict,
    /// Whether each attempt counts, as judged with the verdict.
    pub counted: Vec<bool>,
}

impl Marker {
    /// What the marker says, in words: its runs, or that leaderrun did
    /// not write it and what it holds.
    pub fn describe(&self) -> String {
        match &self.last {
            Some(last) if last.attempts.is_empty() => {
                format!("this window's run started {}", last.describe())
            }
            Some(last) => describe_attempts(last, self.verdict),
            None => format!(
                "a marker leaderrun did not write, holding \"{}\"",
                raw_shown(&self.raw)
            ),
        }
    }

    /// The marker's verdict by name, as `status --json` gives it.
    pub fn verdict_name(&self) -> &'static str {
        match self.verdict {
            Verdict::Open { .. } => "open",
            Verdict::UnderWay => "under_way",
            Verdict::Succeeded => "succeeded",
            Verdict::Spent { .. } => "spent",
        }
    }

    /// The conflict line's account of a window that keeps a run out:
    /// "already started in this --once-per window, at ..." for a window of
    /// one attempt, as before attempts; else what its attempts left.
    pub fn why_not(&self) -> String {
        match &self.last {
            Some(last) if last.allowed() == 1 || last.attempts.is_empty() => {
                format!("already started in this --once-per window, {}", last.describe())
            }
            Some(_) => format!("this --once-per window is {}", self.describe()),
            None => format!(
                "has a --once-per marker leaderrun did not write, holding \"{}\", and no run starts while it stands",
                raw_shown(&self.raw)
            ),
        }
    }

    /// Whether the marker keeps every run out for ever: it has no lease,
    /// so its window never closes (`protocol::window::claimable`: no run
    /// claims such a marker, whatever its attempts say).
    pub fn stuck(&self) -> bool {
        self.lease == LeaseId::NONE
    }
}

/// The attempts of a window in words: what they leave of it, then each.
fn describe_attempts(last: &LastRun, verdict: Verdict) -> String {
    let allowed = last.allowed();
    let summary = match verdict {
        Verdict::Open { counted } => {
            format!("open: {counted} of {allowed} attempts used, none succeeded")
        }
        Verdict::UnderWay => "taken: a run is under way".to_string(),
        Verdict::Succeeded => "spent by a success".to_string(),
        Verdict::Spent { .. } if allowed == 1 => "spent: its run started".to_string(),
        Verdict::Spent { counted } => format!("spent: {counted} attempts, none succeeded"),
    };
    // The latest few: a marker written by hand may list thousands.
    let skipped = last.attempts.len().saturating_sub(SHOWN_ATTEMPTS);
    let mut each: Vec<String> = last
        .attempts
        .iter()
        .enumerate()
        .skip(skipped)
        .map(|(at, attempt)| format!("run {}: {}", at + 1, attempt.describe()))
        .collect();
    if skipped > 0 {
        each.insert(0, format!("{skipped} earlier runs not shown"));
    }
    format!("{summary} ({})", each.join("; "))
}

pub enum Claim {
    /// The window is ours: run, and mark it as the run goes.
    Ours(WindowClaim),
    /// This window is spent, or another run's attempt is under way.
    Taken(Marker),
    /// Our leader key is gone: nothing was written.
    LeadershipLost,
}

/// Our attempt at a window, claimed: what the marker holds as our run
/// claimed it, so that each later write of ours is made only over it.
#[derive(Debug, Clone)]
pub struct WindowClaim {
    key: String,
    marker: LastRun,
    /// Our claim opened the window: the marker is on our window lease.
    opened: bool,
}

impl WindowClaim {
    fn with_state(&self, state: &str, exit_code: Option<i32>, why: Option<String>) -> Vec<u8> {
        let mut marker = self.marker.clone();
        if let Some(ours) = marker.attempts.last_mut() {
            ours.state = state.to_string();
            ours.exit_code = exit_code;
            ours.why = why;
        }
        encode(&marker)
    }

    /// Our attempt's state written over `from`, on the marker's lease.
    fn swap(&self, from: &[u8], to: &[u8]) -> Txn {
        Txn::new()
            .when([Compare::value(self.key.as_str(), CompareOp::Equal, from)])
            .and_then([TxnOp::put(
                self.key.as_str(),
                to,
                Some(PutOptions::new().with_ignore_lease()),
            )])
    }

    /// Marks our attempt `running`: the command started. Sent as it
    /// starts, bounded; a run killed before it lands left its attempt
    /// `claimed`, and the run after it judges by the start record.
    pub async fn mark_running(self, connection: Connection) {
        let claimed = self.with_state(CLAIMED, None, None);
        let running = self.with_state(RUNNING, None, None);
        let txn = self.swap(&claimed, &running);
        let written = connection.txn("marking the --once-per window's run started", txn);
        match crate::clock::timeout(record::WRITE_BOUND, written).await {
            Some(Ok(_)) => {}
            Some(Err(err)) => tracing::info!("{err:#}"),
            None => {
                tracing::info!("marking the --once-per window's run started: no answer in time")
            }
        }
    }

    /// The write of how our attempt ended, for the transaction that
    /// records the run's end: over our marker as it stands, `running` or
    /// still `claimed` (its mark not landed, or the command never
    /// started).
    pub fn ended(&self, record: &Record, why: Option<&str>) -> TxnOp {
        let why = why
            .map(str::to_string)
            .or_else(|| why_of(record.outcome, record.exit_code))
            .map(|why| shorten(&why));
        let ended = self.with_state(record.outcome.name(), record.exit_code, why);
        let claimed = self.with_state(CLAIMED, None, None);
        let running = self.with_state(RUNNING, None, None);
        let if_claimed = self.swap(&claimed, &ended);
        TxnOp::txn(
            self.swap(&running, &ended)
                .or_else([TxnOp::txn(if_claimed)]),
        )
    }
}

/// What the outcome does not say of a run that ended so: a failure's exit
/// code (the outcome's name says the rest).
fn why_of(outcome: Outcome, exit_code: Option<i32>) -> Option<String> {
    match (outcome, exit_code) {
        (Outcome::Failed, Some(code)) => Some(format!("exited with {code}")),
        _ => None,
    }
}

fn shorten(why: &str) -> String {
    match why.char_indices().nth(WHY_LIMIT) {
        None => why.to_string(),
        Some((at, _)) => format!("{}...", &why[..at]),
    }
}

fn encode(marker: &LastRun) -> Vec<u8> {
    serde_json::to_vec(marker).expect("a struct of strings and numbers serializes")
}

/// What a run asks of a window: its length, and how many attempts it
/// allows if it opens it.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub window: Duration,
    pub attempts: u32,
    /// This replica's --max-running: a window of several attempts takes
    /// one runner at a time.
    pub runners: usize,
}

/// How many times a claim reads and writes again when the marker changed
/// between its read and its write (another writer, or its lease ended).
const CLAIM_TRIES: usize = 3;

/// Claims the current window for our run, atomically with still leading.
///
/// `window_lease` receives the window's lease as soon as it is granted, so
/// that the caller can give the window back (revoking the lease deletes the
/// marker) if the command never starts, however this call ends, even if it
/// is cancelled half-way. It is None again when the window was not ours,
/// or ours in a marker that an earlier attempt opened (whose lease is not
/// ours to revoke: our attempt, left `claimed`, spends nothing).
pub async fn claim(
    connection: &Connection,
    leadership: &Leadership,
    ask: Ask,
    holder: &Holder,
    window_lease: &mut Option<LeaseId>,
) -> Result<Claim> {
    let granted = connection
        .grant("granting the --once-per lease", ask.window)
        .await?
        .id;
    *window_lease = Some(granted);
    for _ in 0..CLAIM_TRIES {
        if let Some(claim) = claim_once(connection, leadership, ask, holder, granted).await? {
            if !matches!(&claim, Claim::Ours(ours) if ours.opened) {
                // Not needed (an earlier attempt's lease holds the marker,
                // or the window was not ours), and left alone it would
                // linger for a whole window.
                connection.revoke(granted, CLEANUP).await;
                *window_lease = None;
            }
            return Ok(claim);
        }
    }
    anyhow::bail!(
        "claiming the --once-per window: its marker changed under each of {CLAIM_TRIES} tries"
    )
}

/// A claim's try: the window opened by our marker on our `granted` lease
/// if no marker stands; else the marker read with the last run's start
/// record, judged, and our attempt added to it if the window is open.
/// None: the marker changed between its read and our write.
async fn claim_once(
    connection: &Connection,
    leadership: &Leadership,
    ask: Ask,
    holder: &Holder,
    granted: LeaseId,
) -> Result<Option<Claim>> {
    let seconds = whole_seconds(ask.window);
    let ours = Attempt::claimed(leadership, holder);
    let opening = LastRun {
        holder: holder.clone(),
        token: leadership.token,
        window_s: u64::try_from(seconds).ok(),
        attempts_allowed: Some(ask.attempts),
        attempts: vec![ours.clone()],
    };
    let txn = open_txn(leadership, &opening, granted);
    let response = connection
        .txn("claiming the --once-per window", txn)
        .await?;
    let key = marker_key(&leadership.name);
    let opened = |marker| {
        Some(Claim::Ours(WindowClaim {
            key: key.clone(),
            marker,
            opened: true,
        }))
    };
    if response.succeeded() {
        other_window(&range_at(&response, 0), ask.window, &leadership.name)?;
        return Ok(opened(opening));
    }
    let last_started = range_at(&response, 1).first();
    let Some(marker) = range_at(&response, 0).first() else {
        return Ok(Some(Claim::LeadershipLost));
    };
    // A put that went through, but whose answer was lost and the request
    // retried on another endpoint, finds our own marker.
    if marker.lease == granted {
        return Ok(opened(opening));
    }
    let started = last_started.and_then(|kv| record::decode(&kv.value));
    let found = read_marker(connection, &marker.value, marker.lease, started.as_ref()).await?;
    let found = agreed(found, &leadership.name, seconds)?;
    one_runner(&found, ask.runners, &leadership.name)?;
    // Our own attempt, added by a write whose answer was lost and tried
    // again: it is ours to go on with, not another run's under way.
    if let Some(last) = found
        .last
        .as_ref()
        .filter(|last| last.claimed_by(leadership))
    {
        let claim = WindowClaim {
            key,
            marker: last.clone(),
            opened: false,
        };
        return Ok(Some(Claim::Ours(claim)));
    }
    let last = found.last.as_ref();
    let Some(last) = last.filter(|_| rules::claimable(found.verdict, !found.stuck())) else {
        return Ok(Some(Claim::Taken(found)));
    };
    let next = last.with_attempt(holder, ours, &found.counted);
    add_attempt(connection, leadership, next, marker.mod_revision).await
}

/// Our attempt added to a marker an earlier attempt opened (`next`, the
/// marker with it), written only over the marker as it was read (its
/// `read` revision) and only while we lead.
async fn add_attempt(
    connection: &Connection,
    leadership: &Leadership,
    next: LastRun,
    read: Revision,
) -> Result<Option<Claim>> {
    let key = marker_key(&leadership.name);
    let txn = Txn::new()
        .when([
            Compare::mod_revision(key.as_str(), CompareOp::Equal, read.0),
            Compare::create_revision(
                leadership.key.as_str(),
                CompareOp::Equal,
                leadership.token.0,
            ),
        ])
        .and_then([TxnOp::put(
            key.as_str(),
            encode(&next),
            Some(PutOptions::new().with_ignore_lease()),
        )]);
    let response = connection
        .txn("claiming the --once-per window", txn)
        .await?;
    if !response.succeeded() {
        return Ok(None);
    }
    tracing::info!(
        "this run makes attempt {} at the --once-per window ({} allowed)",
        next.attempts.len(),
        next.allowed()
    );
    let claim = WindowClaim {
        key,
        marker: next,
        opened: false,
    };
    Ok(Some(Claim::Ours(claim)))
}

/// Refuses a window opened by our claim if the last run's start record
/// (`last_started`, read with it) shows a window of another length still
/// open ([`opened_within`]); the caller gives our window lease back, with
/// the marker.
fn other_window(
    last_started: &crate::etcd::requests::Range,
    window: Duration,
    election: &str,
) -> Result<()> {
    let last = last_started.kvs.first();
    let Some(last) = last.and_then(|kv| opened_within(&kv.value, window, crate::clock::wall()))
    else {
        return Ok(());
    };
    Err(Disagreement(format!(
        "--once-per {} disagrees with the window the last run of {election} opened, {}: it began {}, within this one, and that window has closed: give every replica the same --once-per",
        humantime::format_duration(window),
        humantime::format_duration(Duration::from_secs(last.window_s.unwrap_or_default())),
        last.describe()
    ))
    .into())
}

/// The transaction that opens a window: our marker, on the window's
/// lease, written only if none exists and only while our key is still
/// ours, and then the last run's start record read; otherwise the marker
/// there read, with the last run's start record.
fn open_txn(leadership: &Leadership, opening: &LastRun, lease: LeaseId) -> Txn {
    let key = marker_key(&leadership.name);
    let last_started = Beside::LastStarted.key(&leadership.name);
    Txn::new()
        .when([
            Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
            Compare::create_revision(
                leadership.key.as_str(),
                CompareOp::Equal,
                leadership.token.0,
            ),
        ])
        .and_then([
            TxnOp::put(
                key.as_str(),
                encode(opening),
                Some(PutOptions::new().with_lease(lease.0)),
            ),
            TxnOp::get(last_started.as_str(), None),
        ])
        .or_else([
            TxnOp::get(key.as_str(), None),
            TxnOp::get(last_started.as_str(), None),
        ])
}

/// An attempt as the protocol judges it: its state, whether its run
/// still holds its key (read only for an attempt not ended), whether the
/// start record says its command started.
async fn view_of(
    connection: &Connection,
    attempt: &Attempt,
    started: Option<&Record>,
) -> Result<rules::Attempt> {
    let state = attempt.state();
    let run_gone = match state {
        AttemptState::Ended(_) => true,
        AttemptState::Claimed | AttemptState::Running => !holds(connection, attempt).await?,
    };
    Ok(rules::Attempt {
        state,
        run_gone,
        start_recorded: start_recorded(attempt, started),
    })
}

/// Whether the attempt's run still holds its candidate key.
async fn holds(connection: &Connection, attempt: &Attempt) -> Result<bool> {
    let key = connection
        .get(
            "reading a --once-per attempt's key",
            attempt.key.as_str(),
            None,
        )
        .await?
        .first();
    Ok(key.is_some_and(|kv| kv.create_revision == Revision(attempt.token.0)))
}

/// Whether the run records say the attempt's command started.
fn start_recorded(attempt: &Attempt, started: Option<&Record>) -> bool {
    started.is_some_and(|record| {
        record.token == attempt.token && record.outcome != Outcome::NotStarted
    })
}

/// The last run, with the window it opened, from its
/// `last-started` record, if that window was another length than ours and
/// the run began less than `window` ago by our clock. The marker of a
/// replica with a shorter --once-per expires first, and a replica with a
/// longer one then ran the job again in silence; the opposite order is
/// refused, both windows named ([`agreed`]), and so is this. A run with no
/// --once-per opened no window and counts for none. This compares wall
/// clocks (the record's writer's and ours), which the marker's lease does
/// not: README's --once-per asks for a window longer than the clocks' skew.
/// `now` is our clock's time.
fn opened_within(value: &[u8], window: Duration, now: SystemTime) -> Option<LastRun> {
    let last = record::decode(value)?;
    let ours = whole_seconds(window).unsigned_abs();
    let age = humantime::parse_rfc3339(&last.started)
        .ok()
        .map(|began| now.duration_since(began).unwrap_or_default());
    let theirs =
        protocol::window::other_window_open(last.outcome, last.once_per_s, age, ours, window)?;
    let holder = Holder {
        host: last.host,
        pid: last.pid,
        started: last.started,
        command: last.command,
        max_running: 1,
    };
    Some(LastRun {
        holder,
        token: last.token,
        window_s: Some(theirs),
        attempts_allowed: None,
        attempts: Vec::new(),
    })
}

/// Refuses a replica of several runners a window that allows several
/// attempts (another replica opened it with --once-per-attempts), as the
/// protocol rules (`window::runners_fit`).
fn one_runner(marker: &Marker, runners: usize, election: &str) -> Result<()> {
    let allowed = marker.last.as_ref().map_or(1, LastRun::allowed);
    if !rules::runners_fit(allowed, runners) {
        return Err(Disagreement(format!(
            "the --once-per window of {election} allows {allowed} attempts, one runner at a time, and this replica runs with --max-running {runners}: give every replica the same options"
        ))
        .into());
    }
    Ok(())
}

/// A window's marker, if its length is the one we ask for. Replicas that
/// disagree on the window would each get the length of whoever fires
/// first: refuse rather than guess.
fn agreed(marker: Marker, election: &str, seconds: i64) -> Result<Marker> {
    let theirs = marker.last.as_ref().and_then(|last| last.window_s);
    match theirs {
        Some(theirs) if !protocol::window::agrees(Some(theirs), seconds.unsigned_abs()) => {
            let opened = marker
                .last
                .as_ref()
                .map(LastRun::describe)
                .unwrap_or_default();
            Err(Disagreement(format!(
                "--once-per {} disagrees with the window {election} already has, {} (opened {opened}): give every replica the same --once-per",
                humantime::format_duration(Duration::from_secs(seconds.unsigned_abs())),
                humantime::format_duration(Duration::from_secs(theirs)),
            ))
            .into())
        }
        _ => Ok(marker),
    }
}

/// The marker of an election as stored, if one stands: read beside the
/// other keys `status` reads, then [`judged`]. The name is bytes, as
/// etcd's keys are (`status --all` finds names that are not UTF-8).
pub async fn read(
    connection: &Connection,
    election: impl AsRef<[u8]>,
) -> Result<Option<crate::etcd::kv::Kv>> {
    let key = Beside::OncePer.raw_key(election.as_ref());
    let response = connection
        .get("reading the --once-per marker", key, None)
        .await?;
    Ok(response.first())
}

/// A marker as [`read`], judged with the last start record (which tells
/// an attempt killed as its command started from one that never started).
pub async fn judged(
    connection: &Connection,
    stored: &crate::etcd::kv::Kv,
    started: Option<&Record>,
) -> Result<Marker> {
    read_marker(connection, &stored.value, stored.lease, started).await
}

/// A marker's value decoded and judged, with what its lease has left.
async fn read_marker(
    connection: &Connection,
    value: &[u8],
    lease: LeaseId,
    started: Option<&Record>,
) -> Result<Marker> {
    let last = decode(value);
    let mut views = Vec::new();
    for attempt in last.iter().flat_map(|last| &last.attempts) {
        views.push(view_of(connection, attempt, started).await?);
    }
    let verdict = match &last {
        // Another writer's marker, or one of a version before attempts: a
        // window that had its run.
        None => Verdict::Spent { counted: 1 },
        Some(last) if last.attempts.is_empty() => Verdict::Spent { counted: 1 },
        Some(last) => rules::judge(&views, last.allowed()),
    };
    let left = match lease {
        LeaseId::NONE => None,
        _ => connection.time_left(lease).await.ok().flatten(),
    };
    Ok(Marker {
        last,
        raw: value.to_vec(),
        left,
        lease,
        verdict,
        counted: views.into_iter().map(rules::counts).collect(),
    })
}

/// What leaderrun wrote in a marker; None for another writer's value,
/// which names no host or token (leaderrun's always do).
fn decode(value: &[u8]) -> Option<LastRun> {
    let value: serde_json::Value = serde_json::from_slice(value).ok()?;
    let written_by_us = ["host", "pid", "started", "token"]
        .iter()
        .all(|field| value.get(field).is_some());
    written_by_us
        .then(|| serde_json::from_value(value).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::record::{Outcome, Record};

    fn record(started: &str, once_per_s: Option<u64>, outcome: Outcome) -> Vec<u8> {
        let record = Record {
            host: "web-2".into(),
            pid: 42,
            token: Token(7),
            command: "true".into(),
            started: started.into(),
            finished: None,
            duration_s: None,
            exit_code: None,
            outcome,
            once_per_s,
            proven_at: None,
        };
        serde_json::to_vec(&record).unwrap()
    }

    #[test]
    fn a_shorter_window_opened_within_ours_is_found() {
        let now = humantime::parse_rfc3339("2026-11-29T12:00:00Z").unwrap();
        let hour = Duration::from_secs(3600);
        let ten_minutes_ago = "2026-11-29T11:50:00Z";
        let found = opened_within(
            &record(ten_minutes_ago, Some(60), Outcome::Succeeded),
            hour,
            now,
        )
        .expect("a 60 s window, opened 10 minutes ago, within our hour");
        assert_eq!((found.token, found.window_s), (Token(7), Some(60)));
        assert_eq!(found.holder.host, "web-2");
        // The same window as ours: the marker says all there is.
        let same = record(ten_minutes_ago, Some(3600), Outcome::Succeeded);
        assert!(opened_within(&same, hour, now).is_none());
        // Before our window began, no window, a run that never started, or
        // not a record: nothing.
        let before = record("2026-11-29T10:59:59Z", Some(60), Outcome::Succeeded);
        assert!(opened_within(&before, hour, now).is_none());
        let none = record(ten_minutes_ago, None, Outcome::Succeeded);
        assert!(opened_within(&none, hour, now).is_none());
        let not_started = record(ten_minutes_ago, Some(60), Outcome::NotStarted);
        assert!(opened_within(&not_started, hour, now).is_none());
        assert!(opened_within(b"garbage", hour, now).is_none());
    }

    fn marker(window_s: Option<u64>) -> Marker {
        Marker {
            last: Some(LastRun {
                holder: Holder::decode(b"x"),
                token: Token(3),
                window_s,
                attempts_allowed: None,
                attempts: Vec::new(),
            }),
            raw: Vec::new(),
            left: None,
            lease: LeaseId(1),
            verdict: Verdict::Spent { counted: 1 },
            counted: Vec::new(),
        }
    }

    #[test]
    fn a_marker_of_another_length_is_refused() {
        assert!(agreed(marker(Some(60)), "j", 60).is_ok());
        assert!(agreed(marker(None), "j", 60).is_ok(), "a 0.1.0 marker");
        assert!(agreed(marker(Some(61)), "j", 60).is_err());
        let last =
            decode(br#"{"host":"h","pid":1,"started":"s","command":"c","token":4}"#).unwrap();
        assert_eq!(
            (last.token, last.window_s, last.allowed()),
            (Token(4), None, 1)
        );
    }

    #[test]
    fn a_marker_another_writer_made_claims_no_run() {
        for raw in [&b"maintenance"[..], b"{\"host\":\"h\"}", b"\xff\xfe", b"42"] {
            assert!(decode(raw).is_none(), "{raw:?}");
        }
        let mut found = marker(None);
        found.last = None;
        found.raw = b"maintenance\x1b[2J".to_vec();
        found.lease = LeaseId::NONE;
        assert_eq!(
            found.describe(),
            "a marker leaderrun did not write, holding \"maintenance\\u{1b}[2J\""
        );
        assert!(found.stuck(), "no lease: it never closes");
    }

    fn attempt(state: &str, token: i64) -> Attempt {
        Attempt {
            token: Token(token),
            key: format!("j/{token:x}"),
            host: "web-1".into(),
            pid: 10,
            started: "2026-11-29T00:00:00Z".into(),
            state: state.into(),
            exit_code: None,
            why: None,
        }
    }

    #[test]
    fn an_attempt_added_keeps_every_counted_one_and_the_latest_uncounted() {
        let holder = Holder::decode(b"x");
        let mut last = marker(Some(60)).last.unwrap();
        last.attempts_allowed = Some(3);
        let mut counted = Vec::new();
        for token in 1..=9 {
            last.attempts.push(attempt("claimed", token));
            counted.push(token == 4);
        }
        let next = last.with_attempt(&holder, attempt("claimed", 20), &counted);
        let tokens: Vec<i64> = next.attempts.iter().map(|a| a.token.0).collect();
        assert_eq!(tokens, [4, 6, 7, 8, 9, 20]);
        assert_eq!((next.token, next.attempts_allowed), (Token(20), Some(3)));
    }

    #[test]
    fn an_attempt_of_a_newer_state_counts_as_failed() {
        assert_eq!(attempt("claimed", 1).state(), AttemptState::Claimed);
        assert_eq!(attempt("running", 1).state(), AttemptState::Running);
        assert_eq!(
            attempt("succeeded", 1).state(),
            AttemptState::Ended(Outcome::Succeeded)
        );
        assert_eq!(
            attempt("paused_forever", 1).state(),
            AttemptState::Ended(Outcome::Failed)
        );
        let mut failed = attempt("failed", 2);
        failed.why = Some("exited with 1".into());
        assert_eq!(
            failed.describe(),
            "claimed at 2026-11-29T00:00:00Z on web-1 (pid 10, token 2), failed: exited with 1"
        );
        let mut not_started = attempt("not_started", 3);
        not_started.why = Some("No such file or directory".into());
        assert!(
            not_started
                .describe()
                .ends_with("(pid 10, token 3), could not start: No such file or directory"),
            "{}",
            not_started.describe()
        );
    }
}
