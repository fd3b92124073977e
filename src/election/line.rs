//! The line of candidates, in the order they lead: the first candidate in
//! either direction (the leader, or the one just ahead of a key), read page
//! by page at one revision past keys that are not candidates, and the whole
//! line, kept up to date from a watch ([`Line`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{Context, Result};
use etcd_client::{
    EventType, GetOptions, KeyValue, SortOrder, SortTarget, Txn, TxnOp, WatchOptions,
};

use super::name;
use super::{Election, Leader};
use crate::etcd::connection::Refused;
use crate::etcd::requests::{ranges, Range};
use crate::etcd::Connection;
use crate::retry::{self, Backoff};

/// Keys asked for by the read in line order that rides in a transaction:
/// one would do, unless keys of elections nested in ours come first.
pub(super) const FIRST_PAGE: i64 = 8;
/// Keys per read when a line is read on, or read whole.
const PAGE: i64 = 256;

/// Reads keys under the election's prefix in line order (create revision).
pub(super) fn in_line(order: SortOrder, limit: i64) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, order)
        .with_limit(limit)
}

pub(super) fn first_in_line(name: &str) -> TxnOp {
    TxnOp::get(
        name::prefix(name),
        Some(in_line(SortOrder::Ascend, FIRST_PAGE)),
    )
}

impl Election<'_> {
    /// The first `wanted` candidates of the election in `order`, starting
    /// from `page`, the answer to an [`in_line`] read made at `revision`:
    /// ascending, the runners; descending below a key, the candidates just
    /// ahead of it, nearest first. Keys that are not candidates are
    /// skipped, reading on at `revision` if the page runs out.
    ///
    /// Pages after the first are read keys only, and the candidates among
    /// them fetched whole by key ([`with_values`]): the keys skipped may be
    /// the job's own, and large. (Fetched whole, not only their values:
    /// etcd 3.7 leaves the lease out of a keys-only answer.)
    ///
    /// Reads go on from the create revision of the last key seen, inclusive:
    /// keys written by one transaction share a create revision, and a page
    /// may end among them. Those already seen are skipped; a page of nothing
    /// new doubles the next page, so a larger group cannot stall the read.
    pub(super) async fn first_candidates(
        &self,
        mut page: Range,
        revision: i64,
        order: SortOrder,
        wanted: usize,
    ) -> Result<Vec<KeyValue>> {
        let mut found = Vec::new();
        // How many of `found` came with their values: the first page's.
        let mut valued = None;
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
                if boundary != Some(created) {
                    boundary = Some(created);
                    seen_at_boundary.clear();
                }
                seen_at_boundary.insert(kv.key().to_vec());
                if name::is_candidate(self.name, kv.key()) {
                    found.push(kv);
                    if found.len() == wanted {
                        break;
                    }
                }
            }
            let more = boundary.filter(|_| page.more && found.len() < wanted);
            let Some(from) = more else {
                let valued = valued.unwrap_or(found.len());
                let fetched = found.split_off(valued);
                found.extend(with_values(self.connection, fetched, revision).await?);
                return Ok(found);
            };
            valued.get_or_insert(found.len());
            if !fresh {
                limit = limit.saturating_mul(2);
            }
            let options = in_line(order, limit)
                .with_revision(revision)
                .with_keys_only();
            let options = match order {
                SortOrder::Descend => options.with_max_create_revision(from),
                _ => options.with_min_create_revision(from),
            };
            page = self
                .connection
                .get("reading the queue", name::prefix(self.name), Some(options))
                .await?
                .into();
        }
    }
}

/// How many keys' values one transaction fetches at most: etcd refuses a
/// transaction of more than 128 operations by default.
const VALUES_PER_TXN: usize = 64;

/// `kvs`, read keys only at `revision`, with their values: fetched by key
/// at that revision, in the same order. A key that is gone (compacted
/// past) is an error, as any read at a compacted revision is.
async fn with_values(
    connection: &Connection,
    kvs: Vec<KeyValue>,
    revision: i64,
) -> Result<Vec<KeyValue>> {
    let mut valued = Vec::with_capacity(kvs.len());
    for chunk in kvs.chunks(VALUES_PER_TXN) {
        let gets = chunk
            .iter()
            .map(|kv| TxnOp::get(kv.key(), Some(GetOptions::new().with_revision(revision))));
        let txn = Txn::new().and_then(gets.collect::<Vec<_>>());
        let response = connection.txn("reading the queue", txn).await?;
        for range in ranges(&response) {
            let kv = range.kvs.into_iter().next();
            valued.push(kv.context("a candidate read at a revision was not there")?);
        }
    }
    Ok(valued)
}

/// An election as read at one revision.
pub struct Snapshot {
    pub leader: Option<Leader>,
    /// Those that run: the first --max-running candidates (as the first
    /// says), the leader first.
    pub runners: Vec<Leader>,
    /// Candidates, the runners included.
    pub candidates: i64,
}

/// Reads the leader of an election and the number of candidates. The name
/// is bytes, as etcd's keys are: `status --all` finds names that are not
/// UTF-8 (`etcdctl elect` writes any bytes).
pub async fn read_leader(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Snapshot> {
    let line = Line::read(connection, election).await?;
    let slots = line
        .leader()
        .map_or(1, |leader| leader.holder.max_running.max(1));
    Ok(Snapshot {
        leader: line.leader().cloned(),
        runners: line.in_order.values().take(slots).cloned().collect(),
        candidates: line.in_order.len() as i64,
    })
}

/// Every candidate of an election in line order, as read at one revision
/// and then kept up to date from a watch. `status --watch` follows the
/// leader this way: re-reading the leader after each change would miss the
/// leaders that came and went during the read.
pub struct Line {
    /// The name as bytes: a lossy copy would read another election.
    election: Vec<u8>,
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
    pub async fn read(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Line> {
        let election = election.as_ref();
        let end = name::raw_prefix_end(election);
        let mut start = name::raw_prefix(election);
        let mut line = Line {
            election: election.to_vec(),
            in_order: BTreeMap::new(),
            created: HashMap::new(),
            revision: 0,
        };
        loop {
            // Keys only: the values wanted are the candidates', fetched by
            // key; the others' may be the job's own, and large.
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(PAGE)
                .with_keys_only();
            if line.revision > 0 {
                options = options.with_revision(line.revision);
            }
            let mut response = connection
                .get("reading the election", start.clone(), Some(options))
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
            let candidates = kvs
                .iter()
                .filter(|kv| name::is_candidate(election, kv.key()))
                .cloned()
                .collect();
            for kv in &with_values(connection, candidates, line.revision).await? {
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
        let prefix = name::raw_prefix(&self.election);
        let watched = name::escaped(&self.election).into_owned();
        let Some((mut stream, index)) = connection.open_watch(&prefix, options).await else {
            tracing::info!("cannot watch {watched}; trying again");
            return Ok(Followed::Broke);
        };
        loop {
            let response = match stream.message().await {
                Ok(Some(response)) => response,
                Ok(None) | Err(_) => {
                    tracing::info!("the watch of {watched} broke; opening it again");
                    connection.failed(index);
                    return Ok(Followed::Broke);
                }
            };
            if response.compact_revision() > 0 {
                return Ok(Followed::Compacted);
            }
            if response.canceled() {
                connection.failed(index);
                let reason = response.cancel_reason();
                // etcd's own words for a refused read: its message is its
                // API, and no retry will change it.
                if reason.contains("permission denied") {
                    let reason = format!("etcd refused watching {watched}: {reason}");
                    return Err(anyhow::anyhow!(Refused::new(reason)));
                }
                tracing::info!("etcd cancelled the watch of {watched}: {reason}; opening it again");
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
