//! A fleet-wide pause of an election (`leaderrun pause` and `resume`): a
//! key beside the election, `<name>.paused` ([`Beside::Paused`]), whose
//! presence keeps every run of the election from starting.
//!
//! A run never starts while the key stands: the transaction that writes
//! its key compares that the pause key does not exist (so a pause found
//! as a run joins writes nothing, and no replica seems to lead), and a
//! waiter whose turn comes reads it before its claim. A pause never stops
//! a command that already runs. `--for` attaches the key to a lease of
//! that length that nobody renews, so a forgotten pause ends by itself;
//! without it the key stays until `resume` deletes it.
//!
//! The value says who paused, why, since and until when, in JSON; any
//! other value (a key written by hand) still pauses, and is shown as the
//! bytes it holds, escaped.

use std::time::Duration;

use anyhow::{Context, Result};
use etcd_client::{Compare, CompareOp, DeleteOptions, PutOptions, Txn, TxnOp, WatchOptions};
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::election::holder::{now_rfc3339, printable};
use crate::election::name::Beside;
use crate::etcd::connection::Failure;
use crate::etcd::ids::{LeaseId, Revision};
use crate::etcd::kv::{Kv, WatchEvent};
use crate::etcd::requests::range_at;
use crate::etcd::watch::{Received, Watch};
use crate::etcd::Connection;
use crate::retry::CLEANUP;

/// The longest reason a pause keeps, in characters: a line on a terminal
/// or two, not a document.
pub const REASON_LIMIT: usize = 200;

/// The most characters of a pause's who, where and when that are shown.
const FIELD_SHOWN: usize = 64;

/// `text` made [`printable`], cut after `limit` characters of it, with
/// how long it was in all.
fn shown(text: &str, limit: usize) -> String {
    cut(text, limit, text.len())
}

/// [`shown`] of `text`, which stands for `bytes` bytes in all.
fn cut(text: &str, limit: usize, bytes: usize) -> String {
    match text.char_indices().nth(limit) {
        None => printable(text).into_owned(),
        Some((at, _)) => format!("{}... ({bytes} bytes in all)", printable(&text[..at])),
    }
}

/// A value another writer put under one of leaderrun's keys, shown:
/// escaped where it is not text, cut to a bounded length.
pub fn raw_shown(raw: &[u8]) -> String {
    cut(
        &crate::election::name::escaped(raw),
        REASON_LIMIT,
        raw.len(),
    )
}

/// The key of an election's pause.
pub fn pause_key(election: &str) -> String {
    Beside::Paused.key(election)
}

/// What `leaderrun pause` writes under the key.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pause {
    /// The host `pause` ran on.
    pub host: String,
    /// The user it ran as.
    pub user: String,
    /// When it was paused (RFC 3339, UTC, the pausing host's clock).
    pub since: String,
    /// When the pause ends by itself (`--for`), by the pausing host's
    /// clock; absent: until `resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Why (`--reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Pause {
    /// A pause by this process's user on this host, now.
    pub fn by_us(reason: Option<String>) -> Pause {
        let host = nix::unistd::gethostname()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "unknown".into());
        let uid = nix::unistd::Uid::effective();
        let user = match nix::unistd::User::from_uid(uid) {
            Ok(Some(user)) => user.name,
            _ => format!("uid {uid}"),
        };
        Pause {
            host,
            user,
            since: now_rfc3339(),
            until: None,
            reason,
        }
    }
}

/// A pause found in etcd.
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    /// What it says, or the raw bytes of a value leaderrun did not write.
    pub value: Result<Pause, Vec<u8>>,
    /// Its lease (`--for`), or [`LeaseId::NONE`]: until resumed.
    pub lease: LeaseId,
    /// The revision of its last write.
    pub written_at: Revision,
}

impl Paused {
    pub fn of(kv: &Kv) -> Paused {
        Paused {
            value: serde_json::from_slice(&kv.value).map_err(|_| kv.value.clone()),
            lease: kv.lease,
            written_at: kv.mod_revision,
        }
    }

    /// "jobs/nightly is paused by alice on ops-1 since …": the line every
    /// reader of a pause says it in.
    pub fn line_for(&self, election: &str) -> String {
        format!("{} is paused {}", printable(election), self.describe())
    }

    /// "by alice on ops-1 since 2026-12-07T10:00:00Z until
    /// 2026-12-07T11:00:00Z: deploy freeze", every value escaped and cut
    /// to a bounded length (a key written by hand may hold anything, of
    /// any size: the line goes to a terminal, a log, systemd).
    pub fn describe(&self) -> String {
        match &self.value {
            Ok(pause) => {
                let until = match &pause.until {
                    Some(until) => format!("until {}", shown(until, FIELD_SHOWN)),
                    None => "until resumed".to_string(),
                };
                let reason = match &pause.reason {
                    Some(reason) => format!(": {}", shown(reason, REASON_LIMIT)),
                    None => " (no reason given)".to_string(),
                };
                format!(
                    "by {} on {} since {} {until}{reason}",
                    shown(&pause.user, FIELD_SHOWN),
                    shown(&pause.host, FIELD_SHOWN),
                    shown(&pause.since, FIELD_SHOWN),
                )
            }
            Err(raw) => {
                let until = match self.lease {
                    LeaseId::NONE => "until resumed",
                    _ => "until its lease ends",
                };
                format!(
                    "by a key leaderrun did not write, holding \"{}\", {until}",
                    raw_shown(raw)
                )
            }
        }
    }
}

/// The election's pause as the proof of a turn found it, at the proof's
/// revision: the read that found the turn read it too, or the handover
/// that gave it was written only with no pause standing (`None`).
#[derive(Debug, Clone, PartialEq)]
pub struct PauseSeen {
    pub at: Revision,
    pub paused: Option<Paused>,
}

/// The election's pause, if one stands. The name is bytes (`status`
/// reads elections whose names are not UTF-8).
pub async fn read(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Option<Paused>> {
    let key = Beside::Paused.raw_key(election.as_ref());
    let range = connection
        .get("reading the election's pause", key, None)
        .await?;
    Ok(range.first().as_ref().map(Paused::of))
}

/// The compare a run's first write makes: no pause stands.
pub fn none_stands(election: &str) -> Compare {
    Compare::version(pause_key(election), CompareOp::Equal, 0)
}

/// The read beside it, in the branch taken when a compare failed: what
/// the pause says, if it was the one.
pub fn get(election: &str) -> TxnOp {
    TxnOp::get(pause_key(election), None)
}

/// Pauses the election: the key written with `pause`, on a lease of
/// `length` (granted now; its TTL as etcd granted it sets `until`), or
/// with none. The pause it replaced, if one stood.
pub async fn set(
    connection: &Connection,
    election: &str,
    mut pause: Pause,
    length: Option<Duration>,
) -> Result<(Pause, Option<Paused>)> {
    let mut options = PutOptions::new().with_prev_key();
    if let Some(length) = length {
        let granted = connection
            .grant("granting the pause's lease", length)
            .await?;
        pause.until =
            Some(humantime::format_rfc3339_seconds(clock::wall() + granted.ttl).to_string());
        options = options.with_lease(granted.id.0);
    }
    let value = serde_json::to_string(&pause).context("encoding the pause")?;
    let txn = Txn::new().and_then([TxnOp::put(pause_key(election), value, Some(options))]);
    let response = connection.txn("pausing the election", txn).await?;
    let replaced = response
        .op_responses()
        .into_iter()
        .find_map(|op| match op {
            etcd_client::TxnOpResponse::Put(put) => put.prev_key().map(Kv::from),
            _ => None,
        })
        .map(|kv| Paused::of(&kv));
    if let Some(old) = replaced.as_ref().filter(|old| old.lease != LeaseId::NONE) {
        // Its key is on our lease now (or on none): the old lease holds
        // nothing, and would only wait out its TTL.
        connection.revoke(old.lease, CLEANUP).await;
    }
    Ok((pause, replaced))
}

/// Resumes the election: the key deleted (its lease revoked, if it had
/// one). The pause it ended, if one stood.
pub async fn clear(connection: &Connection, election: &str) -> Result<Option<Paused>> {
    let txn = Txn::new().and_then([TxnOp::delete(
        pause_key(election),
        Some(DeleteOptions::new().with_prev_key()),
    )]);
    let response = connection.txn("resuming the election", txn).await?;
    let ended = response.op_responses().into_iter().find_map(|op| match op {
        etcd_client::TxnOpResponse::Delete(delete) => delete
            .prev_kvs()
            .first()
            .map(|kv| Paused::of(&Kv::from(kv))),
        _ => None,
    });
    if let Some(old) = ended.as_ref().filter(|old| old.lease != LeaseId::NONE) {
        connection.revoke(old.lease, CLEANUP).await;
    }
    Ok(ended)
}

/// What a join's transaction said of the pause: the pause, if its
/// compare ([`none_stands`]) failed and the read beside it ([`get`], at
/// `at` in the responses) found one.
pub fn found(response: &etcd_client::TxnResponse, at: usize) -> Option<Paused> {
    if response.succeeded() {
        return None;
    }
    range_at(response, at).first().as_ref().map(Paused::of)
}

/// Waits until no pause of the election stands ([`follow`]ed until it
/// says there is none): calls `seen` with each pause found, so that the
/// wait can be shown. Only a refusal (a permission, the credentials) ends
/// it with an error.
pub async fn wait_out(
    connection: &Connection,
    election: &str,
    mut seen: impl FnMut(&Paused),
) -> Result<()> {
    follow(connection, election, |paused| {
        Ok(match paused {
            Some(paused) => {
                seen(paused);
                true
            }
            None => false,
        })
    })
    .await
}

/// Follows the election's pause (`status --watch`, and a run waiting one
/// out): `report` is told the pause as first read (None: there is none),
/// then each change (a pause written or replaced, or ended), until it
/// says to stop (false).
/// A watch that fails is opened again from a new read, after a second;
/// only a refusal ends it with an error.
pub async fn follow(
    connection: &Connection,
    election: &str,
    mut report: impl FnMut(Option<&Paused>) -> Result<bool>,
) -> Result<()> {
    let key = pause_key(election);
    // What was last said: None before the first read; then the revision
    // of the pause said, or None for none.
    let mut said: Option<Option<Revision>> = None;
    let mut tell = |paused: Option<&Paused>| {
        let state = paused.map(|paused| paused.written_at);
        if said == Some(state) {
            return Ok(true);
        }
        said = Some(state);
        report(paused)
    };
    loop {
        let range = match connection
            .get("reading the election's pause", key.as_str(), None)
            .await
        {
            Ok(range) => range,
            Err(err) if Failure::of(&err) == Some(Failure::Refused) => return Err(err),
            Err(err) => {
                tracing::debug!("{err:#}; reading the pause again in a second");
                clock::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let at = range.revision;
        let now = range.first().as_ref().map(Paused::of);
        if !tell(now.as_ref())? {
            return Ok(());
        }
        let options = WatchOptions::new().with_start_revision(at.0 + 1);
        let Some(mut watch) = Watch::open(connection, key.as_bytes(), options).await else {
            clock::sleep(Duration::from_secs(1)).await;
            continue;
        };
        while let Received::Events(events) = watch.next().await {
            for event in events {
                let paused = match &event {
                    WatchEvent::Put(kv) => Some(Paused::of(kv)),
                    WatchEvent::Delete(_) => None,
                };
                if !tell(paused.as_ref())? {
                    return Ok(());
                }
            }
        }
        watch.failed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_is_described_with_every_value_escaped() {
        let pause = Pause {
            host: "ops-1".into(),
            user: "alice".into(),
            since: "2026-12-07T10:00:00Z".into(),
            until: Some("2026-12-07T11:00:00Z".into()),
            reason: Some("freeze\u{1b}[2J\nnow".into()),
        };
        let kv = Kv::written(
            "j.paused",
            5,
            0x2a,
            serde_json::to_string(&pause).unwrap().as_bytes(),
        );
        assert_eq!(
            Paused::of(&kv).describe(),
            "by alice on ops-1 since 2026-12-07T10:00:00Z until 2026-12-07T11:00:00Z: freeze\\u{1b}[2J\\nnow"
        );
        let by_hand = Kv::written("j.paused", 5, 0, b"maintenance\x07\xff");
        assert_eq!(
            Paused::of(&by_hand).describe(),
            "by a key leaderrun did not write, holding \"maintenance\\u{7}\\xff\", until resumed"
        );
        let huge = Kv::written("j.paused", 5, 0, "x".repeat(1 << 20).as_bytes());
        let said = Paused::of(&huge).describe();
        assert!(
            said.ends_with("... (1048576 bytes in all)\", until resumed"),
            "{said}"
        );
        assert!(said.len() < 400, "{said}");
        let bare = Pause {
            until: None,
            reason: None,
            ..pause
        };
        let kv = Kv::written(
            "j.paused",
            5,
            0,
            serde_json::to_string(&bare).unwrap().as_bytes(),
        );
        assert_eq!(
            Paused::of(&kv).describe(),
            "by alice on ops-1 since 2026-12-07T10:00:00Z until resumed (no reason given)"
        );
    }
}
