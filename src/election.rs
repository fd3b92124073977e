//! The election, done client-side over KV transactions, with the same key
//! layout as etcd's election API (`<name>/<lease hex>`, lowest create
//! revision leads), so `etcdctl elect` and leaderrun see the same election.
//!
//! Doing it here rather than through the server's `Campaign` RPC avoids its
//! two traps (shared notes): the phantom win, where a candidate whose lease
//! died while queued is told it won, and request timeouts that cut a blocking
//! campaign. Every win here is proven by a transaction on our own key.

use std::time::Duration;

use anyhow::{Context, Result};
use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, KeyValue, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, TxnResponse, WatchOptions,
};
use tokio::sync::watch;

use crate::connection::Connection;
use crate::holder::{printable, Holder};
use crate::lease::LeaseState;
use crate::name;
use crate::retry::{self, Backoff};

/// Proof that we lead: our key existed, first in line, with this create
/// revision, at `revision`.
#[derive(Debug, Clone)]
pub struct Leadership {
    pub name: String,
    pub key: String,
    /// The lease our key is attached to.
    pub lease: i64,
    /// The key's create revision: the fencing token.
    pub token: i64,
    /// The store revision at which ownership was proven; watch from after it.
    pub revision: i64,
}

/// Whoever leads, as read from their key.
#[derive(Debug, Clone)]
pub struct Leader {
    pub key: String,
    pub token: i64,
    pub lease: i64,
    pub holder: Holder,
}

impl Leader {
    fn from_kv(kv: &KeyValue) -> Self {
        Leader {
            key: String::from_utf8_lossy(kv.key()).into_owned(),
            token: kv.create_revision(),
            lease: kv.lease(),
            holder: Holder::decode(kv.value()),
        }
    }

    /// "pid 4242 on web-2 since 2026-11-29T07:00:00Z (token 42)".
    pub fn describe(&self) -> String {
        if self.stale() {
            let key = printable(&self.key);
            return format!(
                "a stale key with no lease, {key}, which never expires (remove it with: etcdctl del '{key}')"
            );
        }
        format!("{} (token {})", self.holder.describe(), self.token)
    }

    /// A key with no lease (written by hand, or overwritten by a plain
    /// `put`): nothing will ever remove it, and it blocks the election.
    pub fn stale(&self) -> bool {
        self.lease == 0
    }
}

pub enum Attempt {
    Won(Leadership),
    /// Someone else leads; None if they left between our two reads.
    Lost(Option<Leader>),
}

/// A place in the queue.
pub struct Candidate {
    pub key: String,
    pub revision: i64,
}

pub enum Turn {
    Ours,
    /// Our place is gone while we queued: start again.
    Lost(PlaceLost),
}

/// Why a place in the queue is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceLost {
    /// etcd said our lease is gone (revoked, or expired while we waited).
    LeaseGone,
    /// Our key is not there any more, or not ours.
    Key(KeyLoss),
}

/// What happened to a key we hold, as seen by reading or watching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLoss {
    Deleted,
    /// Another key of the same name, created later.
    Replaced,
    /// Same create revision, but written by someone else: a plain `put`
    /// keeps the create revision and drops (or changes) the lease.
    Overwritten,
}

impl std::fmt::Display for KeyLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyLoss::Deleted => "the leader key was deleted",
            KeyLoss::Replaced => "the leader key was replaced",
            KeyLoss::Overwritten => "the leader key was overwritten by another writer",
        })
    }
}

impl std::fmt::Display for PlaceLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlaceLost::LeaseGone => f.write_str("etcd says our lease is gone"),
            PlaceLost::Key(_) => f.write_str("our key disappeared while queued"),
        }
    }
}

/// What a key we hold has become, judged from its latest version (None:
/// deleted): still ours, or lost and how.
fn judge(kv: Option<&KeyValue>, token: i64, lease: i64) -> Option<KeyLoss> {
    match kv {
        None => Some(KeyLoss::Deleted),
        Some(kv) if kv.create_revision() != token => Some(KeyLoss::Replaced),
        Some(kv) if kv.lease() != lease => Some(KeyLoss::Overwritten),
        Some(_) => None,
    }
}

fn first_in_line(name: &str) -> TxnOp {
    TxnOp::get(
        name::prefix(name),
        Some(
            GetOptions::new()
                .with_prefix()
                .with_sort(SortTarget::Create, SortOrder::Ascend)
                .with_limit(1),
        ),
    )
}

/// The key-values of each range read in a transaction, in order.
pub(crate) fn ranges(response: &TxnResponse) -> Vec<Vec<KeyValue>> {
    response
        .op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(mut get) => Some(get.take_kvs()),
            _ => None,
        })
        .collect()
}

fn revision_of(response: &TxnResponse) -> i64 {
    response.header().map_or(0, |header| header.revision())
}

/// Takes leadership if, and only if, nobody leads or queues: in one
/// transaction, our key is written only when no key exists under the
/// election. Otherwise nothing is written and the leader is read.
pub async fn try_acquire(
    connection: &Connection,
    election: &str,
    lease: i64,
    holder: &Holder,
) -> Result<Attempt> {
    let key = name::candidate_key(election, lease);
    let value = holder.encode();
    let txn = Txn::new()
        .when([Compare::create_revision(name::prefix(election), CompareOp::Equal, 0).with_prefix()])
        .and_then([
            TxnOp::put(
                key.as_str(),
                value.as_str(),
                Some(etcd_client::PutOptions::new().with_lease(lease)),
            ),
            TxnOp::get(key.as_str(), None),
        ])
        .or_else([first_in_line(election)]);
    let response = connection
        .call("campaigning", |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
        .await?;
    let kvs = ranges(&response);
    let first = kvs.first().and_then(|kvs| kvs.first());
    if response.succeeded() {
        let kv = first.context("etcd did not return the key it just wrote")?;
        return Ok(Attempt::Won(Leadership {
            name: election.to_string(),
            key,
            lease,
            token: kv.create_revision(),
            revision: revision_of(&response),
        }));
    }
    Ok(Attempt::Lost(first.map(Leader::from_kv)))
}

/// Joins the queue: writes our key (if absent) and reads the leader.
pub async fn enqueue(
    connection: &Connection,
    election: &str,
    lease: i64,
    holder: &Holder,
) -> Result<(Candidate, Option<Leader>)> {
    let key = name::candidate_key(election, lease);
    let value = holder.encode();
    let txn = Txn::new()
        .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
        .and_then([
            TxnOp::put(
                key.as_str(),
                value.as_str(),
                Some(etcd_client::PutOptions::new().with_lease(lease)),
            ),
            TxnOp::get(key.as_str(), None),
            first_in_line(election),
        ])
        .or_else([TxnOp::get(key.as_str(), None), first_in_line(election)]);
    let response = connection
        .call("joining the queue", |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
        .await?;
    let kvs = ranges(&response);
    let ours = kvs
        .first()
        .and_then(|kvs| kvs.first())
        .context("etcd did not return the key it just wrote")?;
    let leader = kvs.get(1).and_then(|kvs| kvs.first()).map(Leader::from_kv);
    Ok((
        Candidate {
            key: key.clone(),
            revision: ours.create_revision(),
        },
        leader,
    ))
}

/// Waits until every key ahead of ours is gone, watching only the one just
/// ahead (no herd, no polling). Returns when it is our turn, or when our key
/// disappeared (lease lost) so the caller must start again.
pub async fn wait_for_turn(
    connection: &Connection,
    election: &str,
    candidate: &Candidate,
    lease_id: i64,
    lease: &mut watch::Receiver<LeaseState>,
) -> Turn {
    let predecessor = GetOptions::new()
        .with_prefix()
        .with_max_create_revision(candidate.revision - 1)
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(1);
    let txn = Txn::new().and_then([
        TxnOp::get(candidate.key.as_str(), None),
        TxnOp::get(name::prefix(election), Some(predecessor)),
    ]);
    let mut backoff = Backoff::new(retry::KEEPING);
    let mut broken_watches = Backoff::new(retry::KEEPING);
    loop {
        if lease.borrow().gone {
            return Turn::Lost(PlaceLost::LeaseGone);
        }
        let response = connection
            .call("reading the queue", |mut client| {
                let txn = txn.clone();
                async move { client.txn(txn).await }
            })
            .await;
        let response = match response {
            Ok(response) => response,
            Err(err) => {
                // Keep queueing through an outage: our lease decides whether
                // our place survives it.
                tracing::info!("{err:#}; retrying");
                tokio::select! {
                    _ = backoff.wait() => continue,
                    _ = lease_gone(lease) => continue,
                }
            }
        };
        backoff.reset();
        let kvs = ranges(&response);
        let ours = kvs.first().and_then(|kvs| kvs.first());
        if let Some(loss) = judge(ours, candidate.revision, lease_id) {
            return Turn::Lost(PlaceLost::Key(loss));
        }
        let Some(ahead) = kvs.get(1).and_then(|kvs| kvs.first()) else {
            return Turn::Ours;
        };
        let ahead_key = ahead.key().to_vec();
        tracing::debug!(ahead = %String::from_utf8_lossy(&ahead_key), "queued; watching the key ahead");
        let mut from = revision_of(&response) + 1;
        let moved = tokio::select! {
            seen = watch_key(connection, &ahead_key, &mut from, |event| {
                (event.event_type() == EventType::Delete).then_some(())
            }) => seen.is_some(),
            _ = lease_gone(lease) => true,
        };
        if moved {
            broken_watches.reset();
        } else {
            broken_watches.wait().await;
        }
    }
}

/// Resolves once the lease is gone. Renewals change the lease's state too,
/// and must not wake a waiter: it would re-read the queue every renewal.
async fn lease_gone(lease: &mut watch::Receiver<LeaseState>) {
    loop {
        if lease.borrow_and_update().gone {
            return;
        }
        if lease.changed().await.is_err() {
            // The keeper ended without saying why: treat the lease as lost.
            return;
        }
    }
}

/// Proves that we lead before anything runs: our key still exists with our
/// create revision and our lease (which therefore is alive), and it is first
/// in line. Rewrites its value with the time we became leader. None means the
/// "win" was a phantom: the key is gone.
pub async fn prove(
    connection: &Connection,
    election: &str,
    candidate: &Candidate,
    lease: i64,
    holder: &Holder,
) -> Result<Option<Leadership>> {
    let value = holder.encode();
    let key = candidate.key.as_str();
    let txn = Txn::new()
        .when([
            Compare::create_revision(key, CompareOp::Equal, candidate.revision),
            Compare::lease(key, CompareOp::Equal, lease),
        ])
        .and_then([
            TxnOp::put(
                key,
                value.as_str(),
                Some(etcd_client::PutOptions::new().with_lease(lease)),
            ),
            first_in_line(election),
        ]);
    let response = connection
        .call("proving leadership", |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
        .await?;
    if !response.succeeded() {
        return Ok(None);
    }
    let first = ranges(&response).into_iter().flatten().next();
    if first.map(|kv| kv.create_revision()) != Some(candidate.revision) {
        return Ok(None);
    }
    Ok(Some(Leadership {
        name: election.to_string(),
        key: candidate.key.clone(),
        lease,
        token: candidate.revision,
        revision: revision_of(&response),
    }))
}

/// Resolves when our key is deleted, replaced or overwritten, which means
/// leadership is lost. Survives broken watches and endpoint changes by
/// re-reading the key and watching again from where it stopped.
pub async fn watch_for_loss(connection: &Connection, leadership: &Leadership) -> KeyLoss {
    let key = leadership.key.as_bytes();
    let (token, lease) = (leadership.token, leadership.lease);
    let mut from = leadership.revision + 1;
    let mut backoff = Backoff::new(retry::KEEPING);
    loop {
        let lost = watch_key(connection, key, &mut from, |event| {
            match event.event_type() {
                EventType::Delete => Some(KeyLoss::Deleted),
                EventType::Put => judge(event.kv(), token, lease),
            }
        })
        .await;
        if let Some(loss) = lost {
            return loss;
        }
        // The watch broke: make sure nothing was missed, then watch again.
        let read = connection
            .call("checking the leader key", |mut client| async move {
                client.get(key, None).await
            })
            .await;
        match read {
            Ok(response) => {
                if let Some(loss) = judge(response.kvs().first(), token, lease) {
                    return loss;
                }
                from = response
                    .header()
                    .map_or(from, |header| header.revision() + 1);
            }
            // Unreachable etcd is the lease deadline's business, not ours.
            Err(err) => tracing::debug!("{err:#}"),
        }
        backoff.wait().await;
    }
}

/// Watches one key from revision `*from`, advancing it past each event seen,
/// until `decide` maps an event to a value. Returns None when the watch broke
/// (error, end, compaction, endpoint change): the caller re-reads and retries.
async fn watch_key<T>(
    connection: &Connection,
    key: &[u8],
    from: &mut i64,
    mut decide: impl FnMut(&etcd_client::Event) -> Option<T>,
) -> Option<T> {
    let endpoint = connection.current().await.ok()?;
    let mut client = endpoint.client;
    let options = WatchOptions::new().with_start_revision(*from);
    let opened = tokio::time::timeout(
        connection.attempt_timeout(),
        client.watch(key, Some(options)),
    )
    .await;
    let mut stream = match opened {
        Ok(Ok(stream)) => stream,
        _ => {
            connection.failed(endpoint.index);
            return None;
        }
    };
    loop {
        match stream.message().await {
            Ok(Some(response)) => {
                if response.canceled() || response.compact_revision() > 0 {
                    return None;
                }
                for event in response.events() {
                    if let Some(kv) = event.kv() {
                        *from = (*from).max(kv.mod_revision() + 1);
                    }
                    if let Some(value) = decide(event) {
                        return Some(value);
                    }
                }
            }
            Ok(None) | Err(_) => {
                connection.failed(endpoint.index);
                return None;
            }
        }
    }
}

/// An election as read at one revision.
pub struct Snapshot {
    pub leader: Option<Leader>,
    /// Candidates, the leader included.
    pub candidates: i64,
    pub revision: i64,
}

/// Reads the leader of an election and the number of candidates.
pub async fn read_leader(connection: &Connection, election: &str) -> Result<Snapshot> {
    let txn = Txn::new().and_then([
        first_in_line(election),
        TxnOp::get(
            name::prefix(election),
            Some(GetOptions::new().with_prefix().with_count_only()),
        ),
    ]);
    let response = connection
        .call("reading the election", |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
        .await?;
    let ops = response.op_responses();
    let leader = match ops.first() {
        Some(TxnOpResponse::Get(get)) => get.kvs().first().map(Leader::from_kv),
        _ => None,
    };
    let candidates = match ops.get(1) {
        Some(TxnOpResponse::Get(get)) => get.count(),
        _ => 0,
    };
    Ok(Snapshot {
        leader,
        candidates,
        revision: revision_of(&response),
    })
}

/// Resolves at the first change under the election after `revision`, or when
/// the watch breaks (the caller re-reads either way).
pub async fn next_change(connection: &Connection, election: &str, revision: i64) {
    let Ok(endpoint) = connection.current().await else {
        tokio::time::sleep(Duration::from_millis(500)).await;
        return;
    };
    let mut client = endpoint.client;
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(revision + 1);
    let opened = tokio::time::timeout(
        connection.attempt_timeout(),
        client.watch(name::prefix(election), Some(options)),
    )
    .await;
    if let Ok(Ok(mut stream)) = opened {
        loop {
            match stream.message().await {
                Ok(Some(response)) if response.events().is_empty() && !response.canceled() => {
                    continue
                }
                Ok(Some(_)) => return,
                Ok(None) | Err(_) => break,
            }
        }
    }
    connection.failed(endpoint.index);
    tokio::time::sleep(Duration::from_millis(500)).await;
}
