//! The election, done client-side over KV transactions, with the same key
//! layout as etcd's election API (`<name>/<lease hex>`, lowest create
//! revision leads), so `etcdctl elect` and leaderrun see the same election.
//!
//! Doing it here rather than through the server's `Campaign` RPC avoids its
//! two traps (shared notes): the phantom win, where a candidate whose lease
//! died while queued is told it won, and request timeouts that cut a blocking
//! campaign. Every win here is proven by a transaction on our own key.
//!
//! Only keys `<name>/<lease hex>` are candidates ([`name::is_candidate`]).
//! The keys of an election whose name extends ours (`<name>/sub/<lease>`)
//! share our prefix, so every read in line order skips them, reading on (at
//! the same revision) when a page holds none of ours.

use std::collections::{BTreeMap, HashMap, HashSet};

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
    /// Our key vanished between joining the queue and proving the win.
    Vanished,
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

/// Keys asked for by the read in line order that rides in a transaction:
/// one would do, unless keys of elections nested in ours come first.
const FIRST_PAGE: i64 = 8;
/// Keys per read when a line is read on, or read whole.
const PAGE: i64 = 256;

/// Reads keys under the election's prefix in line order (create revision).
fn in_line(order: SortOrder, limit: i64) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, order)
        .with_limit(limit)
}

fn first_in_line(name: &str) -> TxnOp {
    TxnOp::get(
        name::prefix(name),
        Some(in_line(SortOrder::Ascend, FIRST_PAGE)),
    )
}

/// The key-values of each range read in a transaction, in order.
pub(crate) fn ranges(response: &TxnResponse) -> Vec<Vec<KeyValue>> {
    pages(response).into_iter().map(|page| page.kvs).collect()
}

/// One range read's answer: its keys, and whether the range holds more.
struct Page {
    kvs: Vec<KeyValue>,
    more: bool,
}

fn pages(response: &TxnResponse) -> Vec<Page> {
    response
        .op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(mut get) => Some(Page {
                more: get.more(),
                kvs: get.take_kvs(),
            }),
            _ => None,
        })
        .collect()
}

/// The first candidate of `election` in `order`, starting from `page`, the
/// answer to an [`in_line`] read made at `revision`: ascending, the leader;
/// descending below a key, the candidate just ahead of it. Keys that are not
/// candidates are skipped, reading on at `revision` if the page runs out.
///
/// Reads go on from the create revision of the last key seen, inclusive:
/// keys written by one transaction share a create revision, and a page may
/// end among them. Those already seen are skipped; a page of nothing new
/// doubles the next page, so a larger group cannot stall the read.
async fn first_candidate(
    connection: &Connection,
    election: &str,
    mut page: Page,
    revision: i64,
    order: SortOrder,
) -> Result<Option<KeyValue>> {
    let mut limit = PAGE;
    let mut boundary: Option<i64> = None;
    let mut seen_at_boundary: HashSet<Vec<u8>> = HashSet::new();
    loop {
        let mut fresh = false;
        for kv in page.kvs {
            let created = kv.create_revision();
            if boundary == Some(created) && seen_at_boundary.contains(kv.key()) {
                continue;
            }
            fresh = true;
            if name::is_candidate(election, kv.key()) {
                return Ok(Some(kv));
            }
            if boundary != Some(created) {
                boundary = Some(created);
                seen_at_boundary.clear();
            }
            seen_at_boundary.insert(kv.key().to_vec());
        }
        let Some(from) = boundary.filter(|_| page.more) else {
            return Ok(None);
        };
        if !fresh {
            limit = limit.saturating_mul(2);
        }
        let options = in_line(order, limit).with_revision(revision);
        let options = match order {
            SortOrder::Descend => options.with_max_create_revision(from),
            _ => options.with_min_create_revision(from),
        };
        let prefix = name::prefix(election);
        let mut response = connection
            .call("reading the queue", |mut client| {
                let (prefix, options) = (prefix.clone(), options.clone());
                async move { client.get(prefix, Some(options)).await }
            })
            .await?;
        page = Page {
            more: response.more(),
            kvs: response.take_kvs(),
        };
    }
}

/// The first page of `response`'s range read number `index`, or an empty
/// one.
fn page_at(response: &TxnResponse, index: usize) -> Page {
    pages(response).into_iter().nth(index).unwrap_or(Page {
        kvs: Vec::new(),
        more: false,
    })
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
    let revision = revision_of(&response);
    let page = page_at(&response, 0);
    if response.succeeded() {
        let kv = page
            .kvs
            .first()
            .context("etcd did not return the key it just wrote")?;
        return Ok(Attempt::Won(Leadership {
            name: election.to_string(),
            key,
            lease,
            token: kv.create_revision(),
            revision,
        }));
    }
    let first = first_candidate(connection, election, page, revision, SortOrder::Ascend).await?;
    if let Some(leader) = first {
        return Ok(Attempt::Lost(Some(Leader::from_kv(&leader))));
    }
    // Only keys of elections nested in ours are under our prefix, and "no
    // candidate" cannot be asked of etcd in one comparison. So join the
    // queue and lead only if first in it, proven as any queued win is;
    // otherwise the caller's lease revoke takes our key out again.
    let (candidate, leader) = enqueue(connection, election, lease, holder).await?;
    if let Some(leader) = leader.filter(|leader| leader.key != candidate.key) {
        return Ok(Attempt::Lost(Some(leader)));
    }
    Ok(
        match prove(connection, election, &candidate, lease, holder).await? {
            Some(leadership) => Attempt::Won(leadership),
            None => Attempt::Vanished,
        },
    )
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
    let revision = revision_of(&response);
    let ours = page_at(&response, 0)
        .kvs
        .into_iter()
        .next()
        .context("etcd did not return the key it just wrote")?;
    let line = page_at(&response, 1);
    let leader = first_candidate(connection, election, line, revision, SortOrder::Ascend).await?;
    Ok((
        Candidate {
            key: key.clone(),
            revision: ours.create_revision(),
        },
        leader.as_ref().map(Leader::from_kv),
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
    let predecessor =
        in_line(SortOrder::Descend, FIRST_PAGE).with_max_create_revision(candidate.revision - 1);
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
        let revision = revision_of(&response);
        let ours = page_at(&response, 0).kvs.into_iter().next();
        if let Some(loss) = judge(ours.as_ref(), candidate.revision, lease_id) {
            return Turn::Lost(PlaceLost::Key(loss));
        }
        let line = page_at(&response, 1);
        let ahead =
            match first_candidate(connection, election, line, revision, SortOrder::Descend).await {
                Ok(ahead) => ahead,
                Err(err) => {
                    tracing::info!("{err:#}; retrying");
                    tokio::select! {
                        _ = backoff.wait() => continue,
                        _ = lease_gone(lease) => continue,
                    }
                }
            };
        backoff.reset();
        let Some(ahead) = ahead else {
            return Turn::Ours;
        };
        let ahead_key = ahead.key().to_vec();
        tracing::debug!(ahead = %String::from_utf8_lossy(&ahead_key), "queued; watching the key ahead");
        let mut from = revision + 1;
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
    let revision = revision_of(&response);
    let line = page_at(&response, 0);
    let first = first_candidate(connection, election, line, revision, SortOrder::Ascend).await?;
    if first.map(|kv| kv.create_revision()) != Some(candidate.revision) {
        return Ok(None);
    }
    Ok(Some(Leadership {
        name: election.to_string(),
        key: candidate.key.clone(),
        lease,
        token: candidate.revision,
        revision,
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
    let options = WatchOptions::new().with_start_revision(*from);
    let (mut stream, index) = open_watch(connection, key, options).await?;
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
                connection.failed(index);
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
    let line = Line::read(connection, election).await?;
    Ok(Snapshot {
        leader: line.leader().cloned(),
        candidates: line.in_order.len() as i64,
        revision: line.revision,
    })
}

/// Every candidate of an election in line order, as read at one revision
/// and then kept up to date from a watch. `status --watch` follows the
/// leader this way: re-reading the leader after each change would miss the
/// leaders that came and went during the read.
pub struct Line {
    election: String,
    /// Candidates by (create revision, key): the first one leads.
    in_order: BTreeMap<(i64, Vec<u8>), Leader>,
    /// Each candidate's create revision, by key.
    created: HashMap<Vec<u8>, i64>,
    /// The revision the line is up to date with.
    revision: i64,
}

/// Who leads, as far as a change of leader goes: the key, its create
/// revision, and whether it has gone stale.
type LeaderIdentity = Option<(String, i64, bool)>;

impl Line {
    /// Reads the whole line, page by page, at one revision.
    pub async fn read(connection: &Connection, election: &str) -> Result<Line> {
        let end = name::prefix_end(election);
        let mut start = name::prefix(election).into_bytes();
        let mut line = Line {
            election: election.to_string(),
            in_order: BTreeMap::new(),
            created: HashMap::new(),
            revision: 0,
        };
        loop {
            let mut options = GetOptions::new().with_range(end.as_str()).with_limit(PAGE);
            if line.revision > 0 {
                options = options.with_revision(line.revision);
            }
            let mut response = connection
                .call("reading the election", |mut client| {
                    let (start, options) = (start.clone(), options.clone());
                    async move { client.get(start, Some(options)).await }
                })
                .await?;
            if line.revision == 0 {
                line.revision = response.header().map_or(0, |header| header.revision());
            }
            let more = response.more();
            let kvs = response.take_kvs();
            if let Some(last) = kvs.last() {
                // The next key after the last one read.
                start = last.key().to_vec();
                start.push(0);
            }
            for kv in &kvs {
                line.put(kv);
            }
            if !more || kvs.is_empty() {
                return Ok(line);
            }
        }
    }

    pub fn leader(&self) -> Option<&Leader> {
        self.in_order.values().next()
    }

    fn leader_identity(&self) -> LeaderIdentity {
        self.leader()
            .map(|leader| (leader.key.clone(), leader.token, leader.stale()))
    }

    fn put(&mut self, kv: &KeyValue) {
        if !name::is_candidate(&self.election, kv.key()) {
            return;
        }
        self.delete(kv.key());
        self.created.insert(kv.key().to_vec(), kv.create_revision());
        self.in_order.insert(
            (kv.create_revision(), kv.key().to_vec()),
            Leader::from_kv(kv),
        );
    }

    fn delete(&mut self, key: &[u8]) {
        if let Some(created) = self.created.remove(key) {
            self.in_order.remove(&(created, key.to_vec()));
        }
    }

    /// Follows the line until `report` returns false, calling it with the
    /// leader now and after every revision at which the leader changed, in
    /// order. A broken watch is opened again from where it stopped, so no
    /// change is missed; only if etcd compacted that history away is the
    /// line read afresh (and what happened in between is lost to it).
    pub async fn follow(
        mut self,
        connection: &Connection,
        mut report: impl FnMut(Option<&Leader>) -> Result<bool>,
    ) -> Result<()> {
        if !report(self.leader())? {
            return Ok(());
        }
        let mut backoff = Backoff::new(retry::WAITING);
        loop {
            let followed = self.watch(connection, &mut report).await?;
            // Every change up to here has been reported.
            let shown = self.leader_identity();
            match followed {
                Followed::Stopped => return Ok(()),
                Followed::Broke => backoff.wait().await,
                Followed::Compacted => loop {
                    match Line::read(connection, &self.election).await {
                        Ok(line) => {
                            self = line;
                            backoff.reset();
                            if self.leader_identity() != shown && !report(self.leader())? {
                                return Ok(());
                            }
                            break;
                        }
                        Err(err) => {
                            tracing::info!("{err:#}; retrying");
                            backoff.wait().await;
                        }
                    }
                },
            }
        }
    }

    /// Applies one watch's events, revision by revision, reporting each
    /// change of leader, until the watch ends or `report` says stop.
    async fn watch(
        &mut self,
        connection: &Connection,
        report: &mut impl FnMut(Option<&Leader>) -> Result<bool>,
    ) -> Result<Followed> {
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(self.revision + 1);
        let prefix = name::prefix(&self.election);
        let Some((mut stream, index)) = open_watch(connection, prefix.as_bytes(), options).await
        else {
            return Ok(Followed::Broke);
        };
        loop {
            let response = match stream.message().await {
                Ok(Some(response)) => response,
                Ok(None) | Err(_) => {
                    connection.failed(index);
                    return Ok(Followed::Broke);
                }
            };
            if response.compact_revision() > 0 {
                return Ok(Followed::Compacted);
            }
            if response.canceled() {
                return Ok(Followed::Broke);
            }
            let mut shown = self.leader_identity();
            let events = response.events();
            for (at, event) in events.iter().enumerate() {
                let Some(kv) = event.kv() else { continue };
                match event.event_type() {
                    EventType::Put => self.put(kv),
                    EventType::Delete => self.delete(kv.key()),
                }
                self.revision = self.revision.max(kv.mod_revision());
                // One transaction's changes share a revision: judge the
                // leader once all of them are in.
                let revision_done = events
                    .get(at + 1)
                    .and_then(|next| next.kv())
                    .is_none_or(|next| next.mod_revision() != kv.mod_revision());
                if revision_done && self.leader_identity() != shown {
                    shown = self.leader_identity();
                    if !report(self.leader())? {
                        return Ok(Followed::Stopped);
                    }
                }
            }
        }
    }
}

/// How following a line's watch ended.
enum Followed {
    /// The reader is gone.
    Stopped,
    /// The watch broke: open it again from the line's revision.
    Broke,
    /// etcd no longer has the history since the line's revision.
    Compacted,
}

/// Opens a watch on the current endpoint within the attempt timeout; None
/// (and the endpoint marked failed) if it could not.
async fn open_watch(
    connection: &Connection,
    key: &[u8],
    options: WatchOptions,
) -> Option<(etcd_client::WatchStream, usize)> {
    let endpoint = connection.current().await.ok()?;
    let mut client = endpoint.client;
    let opened = tokio::time::timeout(
        connection.attempt_timeout(),
        client.watch(key, Some(options)),
    )
    .await;
    match opened {
        Ok(Ok(stream)) => Some((stream, endpoint.index)),
        _ => {
            connection.failed(endpoint.index);
            None
        }
    }
}
