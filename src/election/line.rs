//! The line of candidates, in the order they lead: the first candidate in
//! either direction (the leader, or the one just ahead of a key), read page
//! by page at one revision past keys that are not candidates, and the whole
//! line, kept up to date from a watch ([`Line`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{Context, Result};
use etcd_client::{GetOptions, SortOrder, SortTarget, Txn, TxnOp, WatchOptions};

use super::name;
use super::{Election, Leader};
use crate::etcd::connection::Refused;
use crate::etcd::ids::{Revision, Token};
use crate::etcd::kv::{Kv, WatchEvent};
use crate::etcd::requests::{ranges, Pages, Range};
use crate::etcd::watch::{Received, Watch};
use crate::etcd::Connection;
use crate::retry;

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
    /// from `page`, the answer to an [`in_line`] read: ascending, the
    /// runners; descending below a key, the candidates just ahead of it,
    /// nearest first. Keys that are not candidates are skipped, reading on
    /// at the page's revision if the page runs out ([`LineScan`]).
    ///
    /// Pages after the first are read keys only, and the candidates among
    /// them fetched whole by key ([`with_values`]): the keys skipped may be
    /// the job's own, and large. (Fetched whole, not only their values:
    /// etcd 3.7 leaves the lease out of a keys-only answer.)
    pub(super) async fn first_candidates(
        &self,
        mut page: Range,
        order: SortOrder,
        wanted: usize,
    ) -> Result<Vec<Kv>> {
        let revision = page.revision;
        let mut scan = LineScan::new(self.name.as_bytes(), wanted);
        // How many of those found came with their values: the first page's.
        let mut valued = None;
        let mut limit = PAGE;
        loop {
            let more = page.more;
            let fresh = scan.take(page.kvs);
            let Some(from) = scan.read_on(more) else {
                let mut found = scan.found;
                let valued = valued.unwrap_or(found.len());
                let fetched = found.split_off(valued);
                found.extend(with_values(self.connection, fetched, revision).await?);
                return Ok(found);
            };
            valued.get_or_insert(scan.found.len());
            if !fresh {
                limit = limit.saturating_mul(2);
            }
            let options = in_line(order, limit)
                .with_revision(revision.0)
                .with_keys_only();
            let options = match order {
                SortOrder::Descend => options.with_max_create_revision(from.0),
                _ => options.with_min_create_revision(from.0),
            };
            page = self
                .connection
                .get("reading the queue", name::prefix(self.name), Some(options))
                .await?;
        }
    }
}

/// The candidates found so far by a read of a line in order, page by page.
///
/// Reads go on from the create revision of the last key seen, inclusive:
/// keys written by one transaction share a create revision, and a page
/// may end among them. Those already seen are skipped; a page of nothing
/// new doubles the next page (the caller's), so a larger group cannot
/// stall the read.
struct LineScan<'a> {
    name: &'a [u8],
    wanted: usize,
    found: Vec<Kv>,
    /// The create revision of the last key seen.
    boundary: Option<Revision>,
    /// The keys seen with that create revision.
    seen_at_boundary: HashSet<Vec<u8>>,
}

impl<'a> LineScan<'a> {
    fn new(name: &'a [u8], wanted: usize) -> Self {
        LineScan {
            name,
            wanted,
            found: Vec::new(),
            boundary: None,
            seen_at_boundary: HashSet::new(),
        }
    }

    /// Takes in one page, in line order, up to the last candidate wanted.
    /// Whether it held any key not seen before.
    fn take(&mut self, page: Vec<Kv>) -> bool {
        let mut fresh = false;
        for kv in page {
            let created = kv.create_revision;
            if self.boundary == Some(created) && self.seen_at_boundary.contains(&kv.key) {
                continue;
            }
            fresh = true;
            if self.boundary != Some(created) {
                self.boundary = Some(created);
                self.seen_at_boundary.clear();
            }
            self.seen_at_boundary.insert(kv.key.clone());
            if name::is_candidate(self.name, &kv.key) {
                self.found.push(kv);
                if self.found.len() == self.wanted {
                    break;
                }
            }
        }
        fresh
    }

    /// The create revision to read on from (inclusive), if the range holds
    /// `more` and fewer candidates than wanted were found.
    fn read_on(&self, more: bool) -> Option<Revision> {
        self.boundary
            .filter(|_| more && self.found.len() < self.wanted)
    }
}

/// How many keys' values one transaction fetches at most: etcd refuses a
/// transaction of more than 128 operations by default.
const VALUES_PER_TXN: usize = 64;

/// `kvs`, read keys only at `revision`, with their values: fetched by key
/// at that revision, in the same order. A key that is gone (compacted
/// past) is an error, as any read at a compacted revision is.
async fn with_values(connection: &Connection, kvs: Vec<Kv>, revision: Revision) -> Result<Vec<Kv>> {
    let mut valued = Vec::with_capacity(kvs.len());
    for chunk in kvs.chunks(VALUES_PER_TXN) {
        let gets = chunk.iter().map(|kv| {
            TxnOp::get(
                kv.key.as_slice(),
                Some(GetOptions::new().with_revision(revision.0)),
            )
        });
        let txn = Txn::new().and_then(gets.collect::<Vec<_>>());
        let response = connection.txn("reading the queue", txn).await?;
        for range in ranges(&response) {
            valued.push(
                range
                    .first()
                    .context("a candidate read at a revision was not there")?,
            );
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
    /// Those that wait, in line order: every candidate but the runners,
    /// each with its place in line (the leader's is 1).
    pub waiting: Vec<(usize, Leader)>,
}

/// Reads the leader of an election, its runners and who waits. The name
/// is bytes, as etcd's keys are: `status --all` finds names that are not
/// UTF-8 (`etcdctl elect` writes any bytes).
pub async fn read_leader(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Snapshot> {
    let line = Line::read(connection, election).await?;
    let slots = line.leader().map_or(1, Leader::slots);
    let runners = runners(line.in_order.values(), slots);
    let waiting = line
        .in_order
        .values()
        .enumerate()
        .filter(|(_, candidate)| !runners.iter().any(|runner| runner.key == candidate.key))
        .map(|(at, candidate)| (at + 1, candidate.clone()))
        .collect();
    Ok(Snapshot {
        leader: line.leader().cloned(),
        runners,
        waiting,
    })
}

/// Those that run, of `line` (candidates in line order) with `slots` as
/// its leader gives them: the first `slots`, but for another tool's
/// candidate behind the first, which waits (etcd's election elects only
/// the first key; leaderrun counts it as one ahead, and runs beside it
/// only if its count allows).
pub fn runners<'a>(line: impl IntoIterator<Item = &'a Leader>, slots: usize) -> Vec<Leader> {
    protocol::line::running(line, slots, |candidate| candidate.other_tool())
        .into_iter()
        .cloned()
        .collect()
}

/// Every candidate of an election in line order, as read at one revision
/// and then kept up to date from a watch. `status --watch` follows the
/// leader this way: re-reading the leader after each change would miss the
/// leaders that came and went during the read.
pub struct Line {
    /// The name as bytes: a lossy copy would read another election.
    election: Vec<u8>,
    /// Candidates by (create revision, key): the first one leads.
    in_order: BTreeMap<(Revision, Vec<u8>), Leader>,
    /// Each candidate's create revision, by key.
    created: HashMap<Vec<u8>, Revision>,
    /// The revision the line is up to date with.
    revision: Revision,
}

/// Who leads, as far as a change of leader goes: the key, its create
/// revision, and whether it has gone stale.
type LeaderIdentity = Option<(String, Token, bool)>;

impl Line {
    /// Reads the whole line, page by page, at one revision.
    pub async fn read(connection: &Connection, election: impl AsRef<[u8]>) -> Result<Line> {
        let election = election.as_ref();
        // Keys only: the values wanted are the candidates', fetched by
        // key; the others' may be the job's own, and large.
        let mut pages = Pages::new(
            connection,
            "reading the election",
            name::raw_prefix(election),
            Some(name::raw_prefix_end(election)),
            PAGE,
        );
        let mut line = Line {
            election: election.to_vec(),
            in_order: BTreeMap::new(),
            created: HashMap::new(),
            revision: Revision::default(),
        };
        while let Some(page) = pages.next().await? {
            line.revision = pages.revision().unwrap_or_default();
            let candidates = page
                .into_iter()
                .filter(|kv| name::is_candidate(election, &kv.key))
                .collect();
            for kv in &with_values(connection, candidates, line.revision).await? {
                line.put(kv);
            }
        }
        Ok(line)
    }

    pub fn leader(&self) -> Option<&Leader> {
        self.in_order.values().next()
    }

    /// The candidates in line order, the leader first.
    pub fn in_line(&self) -> impl Iterator<Item = &Leader> {
        self.in_order.values()
    }

    fn leader_identity(&self) -> LeaderIdentity {
        self.leader()
            .map(|leader| (leader.key.clone(), leader.token, leader.stale()))
    }

    fn put(&mut self, kv: &Kv) {
        if !name::is_candidate(&self.election, &kv.key) {
            return;
        }
        self.delete(&kv.key);
        self.created.insert(kv.key.clone(), kv.create_revision);
        self.in_order
            .insert((kv.create_revision, kv.key.clone()), Leader::from_kv(kv));
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
        let mut backoff = retry::backoff(retry::WAITING);
        loop {
            let followed = self.watch(connection, &mut report).await?;
            // Every change up to here has been reported.
            let shown = self.leader_identity();
            match followed {
                Followed::Stopped => return Ok(()),
                Followed::Broke => retry::wait(&mut backoff).await,
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
                            retry::wait(&mut backoff).await;
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
            .with_start_revision(self.revision.next().0);
        let prefix = name::raw_prefix(&self.election);
        let watched = name::escaped(&self.election).into_owned();
        let Some(mut watch) = Watch::open(connection, &prefix, options).await else {
            tracing::info!("cannot watch {watched}; trying again");
            return Ok(Followed::Broke);
        };
        loop {
            let events = match watch.next().await {
                Received::Events(events) => events,
                Received::Closed => {
                    tracing::info!("the watch of {watched} broke; opening it again");
                    watch.failed();
                    return Ok(Followed::Broke);
                }
                Received::Compacted => return Ok(Followed::Compacted),
                Received::Cancelled(reason) => {
                    watch.failed();
                    // etcd's own words for a refused read: its message is
                    // its API, and no retry will change it.
                    if reason.contains("permission denied") {
                        let reason = format!("etcd refused watching {watched}: {reason}");
                        return Err(anyhow::anyhow!(Refused::new(reason)));
                    }
                    tracing::info!(
                        "etcd cancelled the watch of {watched}: {reason}; opening it again"
                    );
                    return Ok(Followed::Broke);
                }
            };
            if self.apply(&events, report)? == Applied::Stopped {
                return Ok(Followed::Stopped);
            }
        }
    }

    /// Applies one watch response's events, in order, reporting each
    /// change of leader, until `report` says stop.
    fn apply(
        &mut self,
        events: &[WatchEvent],
        report: &mut impl FnMut(Option<&Leader>) -> Result<bool>,
    ) -> Result<Applied> {
        let mut shown = self.leader_identity();
        for (at, event) in events.iter().enumerate() {
            match event {
                WatchEvent::Put(kv) => self.put(kv),
                WatchEvent::Delete(kv) => self.delete(&kv.key),
            }
            self.revision = self.revision.max(event.revision());
            // One transaction's changes share a revision: judge the
            // leader once all of them are in.
            let revision_done = events
                .get(at + 1)
                .is_none_or(|next| next.revision() != event.revision());
            if revision_done && self.leader_identity() != shown {
                shown = self.leader_identity();
                if !report(self.leader())? {
                    return Ok(Applied::Stopped);
                }
            }
        }
        Ok(Applied::All)
    }
}

/// How far a response's events were applied.
#[derive(PartialEq, Eq)]
enum Applied {
    All,
    /// The reader is gone.
    Stopped,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(key: &str, created: i64) -> Kv {
        Kv::written(key, created, 1, b"")
    }

    #[test]
    fn another_tools_candidate_runs_only_as_the_first() {
        let ours = |at: i64| {
            let holder = crate::election::holder::Holder {
                max_running: 3,
                ..crate::election::holder::Holder::decode(b"{}")
            };
            Leader::from_kv(&Kv::written(
                format!("j/{at}"),
                at,
                at,
                holder.encode_on(crate::etcd::ids::LeaseId(at)).as_bytes(),
            ))
        };
        let theirs =
            |at: i64| Leader::from_kv(&Kv::written(format!("j/{at}"), at, at, b"proposal"));
        // `etcdctl elect` behind a leaderrun of 3 waits: etcd's election
        // elects only the first key; the leaderrun behind it runs.
        let line = [ours(1), theirs(2), ours(3), ours(4)];
        let running: Vec<i64> = runners(&line, 3).iter().map(|r| r.token.0).collect();
        assert_eq!(running, [1, 3]);
        // First, it runs, alone.
        let line = [theirs(1), ours(2)];
        let running: Vec<i64> = runners(&line, line[0].slots())
            .iter()
            .map(|r| r.token.0)
            .collect();
        assert_eq!(running, [1]);
    }

    #[test]
    fn a_scan_skips_other_keys_and_stops_at_the_candidates_wanted() {
        let mut scan = LineScan::new(b"j", 2);
        let page = vec![
            key("j/sub/1", 3),
            key("j/1", 4),
            key("j/x", 5),
            key("j/2", 6),
        ];
        assert!(scan.take(page.clone()));
        let found: Vec<&[u8]> = scan.found.iter().map(|kv| kv.key.as_slice()).collect();
        assert_eq!(found, [&b"j/1"[..], b"j/2"]);
        assert_eq!(scan.read_on(true), None, "all wanted were found");
        let mut scan = LineScan::new(b"j", 3);
        scan.take(page);
        assert_eq!(
            scan.read_on(true),
            Some(Revision(6)),
            "on from the last one seen"
        );
        assert_eq!(scan.read_on(false), None, "the range is read whole");
    }

    #[test]
    fn a_page_ending_inside_one_transactions_keys_goes_on_among_them() {
        // Three keys written by one transaction, at revision 5.
        let mut scan = LineScan::new(b"j", 2);
        assert!(scan.take(vec![key("j/a", 4), key("j/job/1", 5), key("j/job/2", 5)]));
        assert_eq!(scan.read_on(true), Some(Revision(5)));
        // The next page starts at 5 again: what was seen is skipped.
        assert!(
            !scan.take(vec![key("j/job/1", 5), key("j/job/2", 5)]),
            "nothing new"
        );
        assert!(scan.take(vec![key("j/job/2", 5), key("j/b", 5), key("j/c", 7)]));
        let found: Vec<&[u8]> = scan.found.iter().map(|kv| kv.key.as_slice()).collect();
        assert_eq!(found, [&b"j/a"[..], b"j/b"]);
    }

    #[test]
    fn the_line_follows_puts_and_deletes_and_reports_each_leader_once() {
        let mut line = Line {
            election: b"j".to_vec(),
            in_order: BTreeMap::new(),
            created: HashMap::new(),
            revision: Revision(4),
        };
        line.put(&key("j/1", 5));
        let mut reports = Vec::new();
        let mut report = |leader: Option<&Leader>| {
            reports.push(leader.map(|leader| leader.token));
            Ok(true)
        };
        // One transaction at revision 7 deletes the leader and writes its
        // successor's handover: reported once, the successor leading.
        let behind = key("j/2", 6);
        let events = [
            WatchEvent::Put(behind.clone()),
            WatchEvent::Delete(Kv {
                mod_revision: Revision(7),
                ..key("j/1", 0)
            }),
            WatchEvent::Put(behind.rewritten(7, 1, b"{}")),
            WatchEvent::Put(key("j/sub/3", 8)),
            WatchEvent::Delete(Kv {
                mod_revision: Revision(9),
                ..key("j/2", 0)
            }),
        ];
        assert!(line.apply(&events, &mut report).unwrap() == Applied::All);
        assert_eq!(reports, [Some(Token(6)), None]);
        assert_eq!(line.revision, Revision(9));
    }
}
