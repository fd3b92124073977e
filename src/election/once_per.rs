//! `--once-per`: at most one run of an election starts per window, across
//! all replicas.
//!
//! The crontab case: three replicas fire at midnight, one clock is late, and
//! without this it wins after the first run finished and runs the batch
//! again. The winner of each election writes a marker, only if none exists
//! and only while it still leads, attached to a lease of the window's length
//! that nobody renews: the marker expires by itself, whoever crashed.
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
use crate::election::record;
use crate::election::Disagreement;
use crate::election::Leadership;
use crate::etcd::ids::{LeaseId, Token};
use crate::etcd::kv::Kv;
use crate::etcd::requests::{range_at, whole_seconds};
use crate::etcd::Connection;
use crate::retry::CLEANUP;

/// The key of an election's marker.
pub fn marker_key(election: &str) -> String {
    Beside::OncePer.key(election)
}

/// What the marker holds: who started the window's run, and its token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LastRun {
    #[serde(flatten)]
    pub holder: Holder,
    pub token: Token,
    /// The window's length in seconds, as the run that opened it asked.
    /// Absent from markers of leaderrun 0.1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<u64>,
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
}

/// A marker found in etcd: the run it records and how long its window has
/// left (None if the lease ran out as we looked).
#[derive(Debug, Clone)]
pub struct Marker {
    pub last: LastRun,
    pub left: Option<Duration>,
    /// The marker's lease; [`LeaseId::NONE`] for a marker written by hand, which never
    /// expires.
    pub lease: LeaseId,
}

pub enum Claim {
    /// The window is ours: run.
    Ours,
    /// This window already had its run.
    Taken(Marker),
    /// Our leader key is gone: nothing was written.
    LeadershipLost,
}

/// Claims the current window for our run, atomically with still leading.
///
/// `window_lease` receives the marker's lease as soon as it is granted, so
/// that the caller can give the window back (revoking the lease deletes the
/// marker) if the command never starts, however this call ends, even if it
/// is cancelled half-way. It is None again when the window was not ours.
pub async fn claim(
    connection: &Connection,
    leadership: &Leadership,
    window: Duration,
    holder: &Holder,
    window_lease: &mut Option<LeaseId>,
) -> Result<Claim> {
    let seconds = whole_seconds(window);
    let granted = connection
        .grant("granting the --once-per lease", window)
        .await?
        .id;
    *window_lease = Some(granted);
    let window_lease_id = granted;
    let txn = claim_txn(leadership, holder, seconds, window_lease_id);
    let response = connection.txn("claiming the --once-per window", txn).await;
    // On an error the caller gives the window lease back with the rest.
    let response = response?;
    if response.succeeded() {
        let last = range_at(&response, 0).first();
        let Some(last) = last.and_then(|kv| opened_within(&kv.value, window, crate::clock::wall()))
        else {
            return Ok(Claim::Ours);
        };
        // The caller gives our window lease back, with the marker.
        return Err(Disagreement(format!(
                "--once-per {} disagrees with the window the last run of {} opened, {}: it began {}, within this one, and that window has closed: give every replica the same --once-per",
                humantime::format_duration(window),
                leadership.name,
                humantime::format_duration(Duration::from_secs(
                    last.window_s.unwrap_or_default()
                )),
                last.describe()
            ))
        .into());
    }
    let marker = range_at(&response, 0).first();
    taken(
        connection,
        marker,
        leadership,
        seconds,
        (window_lease_id, window_lease),
    )
    .await
}

/// The transaction that claims the window: our marker, on the window's
/// lease, written only if none exists and only while our key is still
/// ours, and then the last run's start record read; otherwise the marker
/// there read.
fn claim_txn(leadership: &Leadership, holder: &Holder, seconds: i64, lease: LeaseId) -> Txn {
    let key = marker_key(&leadership.name);
    let value = serde_json::to_string(&LastRun {
        holder: holder.clone(),
        token: leadership.token,
        window_s: u64::try_from(seconds).ok(),
    })
    .expect("a struct of strings and numbers serializes");
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
                value,
                Some(PutOptions::new().with_lease(lease.0)),
            ),
            TxnOp::get(Beside::LastStarted.key(&leadership.name), None),
        ])
        .or_else([TxnOp::get(key.as_str(), None)])
}

/// What a claim that did not write makes of `marker`, the marker it
/// found (or none: then our key was not ours): our window lease (its id,
/// and the caller's copy) is given back unless the marker is ours after
/// all.
async fn taken(
    connection: &Connection,
    marker: Option<Kv>,
    leadership: &Leadership,
    seconds: i64,
    (window_lease_id, window_lease): (LeaseId, &mut Option<LeaseId>),
) -> Result<Claim> {
    // A put that went through, but whose answer was lost and the request
    // retried on another endpoint, finds our own marker.
    if marker
        .as_ref()
        .is_some_and(|kv| kv.lease == window_lease_id)
    {
        return Ok(Claim::Ours);
    }
    // Not needed, and left alone it would linger for a whole window.
    connection.revoke(window_lease_id, CLEANUP).await;
    *window_lease = None;
    let Some(marker) = marker else {
        return Ok(Claim::LeadershipLost);
    };
    let marker = read_marker(connection, &marker.value, marker.lease).await;
    agreed(marker, &leadership.name, seconds).map(Claim::Taken)
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
    })
}

/// A window's marker, if its length is the one we ask for. Replicas that
/// disagree on the window would each get the length of whoever fires
/// first: refuse rather than guess.
fn agreed(marker: Marker, election: &str, seconds: i64) -> Result<Marker> {
    match marker.last.window_s {
        Some(theirs) if !protocol::window::agrees(Some(theirs), seconds.unsigned_abs()) => Err(Disagreement(format!(
                "--once-per {} disagrees with the window {election} already has, {} (opened {}): give every replica the same --once-per",
                humantime::format_duration(Duration::from_secs(seconds.unsigned_abs())),
                humantime::format_duration(Duration::from_secs(theirs)),
                marker.last.describe()
            ))
        .into()),
        _ => Ok(marker),
    }
}

/// The marker of an election, if its window is open. The name is bytes,
/// as etcd's keys are (`status --all` finds names that are not UTF-8).
pub async fn current(
    connection: &Connection,
    election: impl AsRef<[u8]>,
) -> Result<Option<Marker>> {
    let key = Beside::OncePer.raw_key(election.as_ref());
    let response = connection
        .get("reading the --once-per marker", key, None)
        .await?;
    match response.kvs.first() {
        Some(kv) => Ok(Some(read_marker(connection, &kv.value, kv.lease).await)),
        None => Ok(None),
    }
}

async fn read_marker(connection: &Connection, value: &[u8], lease: LeaseId) -> Marker {
    let last = serde_json::from_slice(value).unwrap_or_else(|_| LastRun {
        holder: Holder::decode(value),
        token: Token::default(),
        window_s: None,
    });
    let left = match lease {
        LeaseId::NONE => None,
        _ => connection.time_left(lease).await.ok().flatten(),
    };
    Marker { last, left, lease }
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

    #[test]
    fn a_marker_of_another_length_is_refused() {
        let marker = |window_s| Marker {
            last: LastRun {
                holder: Holder::decode(b"x"),
                token: Token(3),
                window_s,
            },
            left: None,
            lease: LeaseId(1),
        };
        assert!(agreed(marker(Some(60)), "j", 60).is_ok());
        assert!(agreed(marker(None), "j", 60).is_ok(), "a 0.1.0 marker");
        assert!(agreed(marker(Some(61)), "j", 60).is_err());
        // A marker written by hand reads as a holder value.
        let last: LastRun = serde_json::from_slice(
            br#"{"host":"h","pid":1,"started":"s","command":"c","token":4}"#,
        )
        .unwrap();
        assert_eq!((last.token, last.window_s), (Token(4), None));
    }
}
