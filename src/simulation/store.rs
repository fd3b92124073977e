//! The simulated etcd's state: one linearizable, multi-version key-value
//! store with leases that expire on etcd's own clock, and the history a
//! watch replays. Every request is applied here whole, at one instant of
//! the simulation's clock, as etcd's raft log applies it.
//!
//! What it keeps of etcd (each pinned by a real-etcd test, docs/design.md
//! lists them): revisions counted store-wide, a transaction's writes at one
//! revision; create and mod revisions and versions per key; reads at a
//! past revision until it is compacted, then refused; leases granted in
//! whole seconds, renewed to their full TTL, and revoked with every key they
//! hold in one revision; watches that replay the history from a revision,
//! or are cancelled with the compaction revision when it is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use etcd_client::proto::{
    PbCompare, PbEvent, PbKeyValue, PbRangeRequest, PbRangeResponse, PbResponseHeader,
    PbTargetUnion, PbTxnOpRequest, PbTxnOpResponse, PbTxnRequestOp,
};
use tokio::time::Instant;

/// The smallest lease granted. etcd raises a grant below its own minimum
/// (about 2 s with its default election timeout; less with the suite's),
/// which the world never asks for: its TTLs are 2 s and more.
pub const MIN_TTL: i64 = 1;

/// A key's versions, newest last: each the key as written at a revision,
/// or its deletion (None).
type History = Vec<(i64, Option<PbKeyValue>)>;

/// A lease: its TTL, when it expires on etcd's clock, and its keys.
#[derive(Debug, Clone)]
pub struct Lease {
    pub ttl: i64,
    pub expires: Instant,
    pub keys: BTreeSet<Vec<u8>>,
}

/// Why a request was refused, as etcd words it (a gRPC code and message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    LeaseNotFound,
    Compacted,
    FutureRevision,
    DuplicateKey,
    KeyNotFound,
}

impl Refusal {
    pub fn status(&self) -> tonic::Status {
        match self {
            Refusal::LeaseNotFound => {
                tonic::Status::not_found("etcdserver: requested lease not found")
            }
            Refusal::Compacted => tonic::Status::out_of_range(
                "etcdserver: mvcc: required revision has been compacted",
            ),
            Refusal::FutureRevision => tonic::Status::out_of_range(
                "etcdserver: mvcc: required revision is a future revision",
            ),
            Refusal::KeyNotFound => tonic::Status::invalid_argument("etcdserver: key not found"),
            Refusal::DuplicateKey => {
                tonic::Status::invalid_argument("etcdserver: duplicate key given in txn request")
            }
        }
    }
}

/// A range of keys as etcd's requests give one: a key alone, every key
/// from it (`\0`), or up to an end.
#[derive(Debug, Clone)]
pub struct KeyRange {
    pub key: Vec<u8>,
    pub end: Vec<u8>,
}

impl KeyRange {
    pub fn new(key: Vec<u8>, end: Vec<u8>) -> KeyRange {
        KeyRange { key, end }
    }

    pub fn holds(&self, key: &[u8]) -> bool {
        match self.end.as_slice() {
            [] => key == self.key.as_slice(),
            [0] => key >= self.key.as_slice(),
            end => key >= self.key.as_slice() && key < end,
        }
    }
}

/// The store.
#[derive(Debug)]
pub struct Store {
    pub revision: i64,
    /// Reads and watches from before this revision are refused.
    pub compacted: i64,
    keys: BTreeMap<Vec<u8>, History>,
    pub leases: BTreeMap<i64, Lease>,
    next_lease: i64,
    /// Every change since the compaction, in revision order: what a watch
    /// replays.
    pub events: Vec<PbEvent>,
    /// How much faster etcd's clock runs than the replicas' (a lease of
    /// TTL lasts TTL / rate of the simulation's time).
    pub rate: f64,
    /// The leases whose keys were deleted since the world last looked.
    pub released: Vec<i64>,
    /// Each leased key's end: its create revision (a run's token), and the
    /// revision it was deleted at.
    pub ended: BTreeMap<i64, i64>,
    /// The record writes since the world last looked.
    pub records: Vec<RecordWrite>,
    /// Leased keys deleted by the transaction being applied: the key and
    /// its create revision.
    deleted: Vec<(Vec<u8>, i64)>,
    /// Run records (any of the three) written so far.
    record_puts: u64,
    /// What the store itself saw break, since the world last looked.
    pub findings: Vec<String>,
    /// Tokens whose start was written, and whose success the marker
    /// holds, since the world last looked ([`News`]).
    window_marked: Vec<i64>,
    window_succeeded: Vec<i64>,
    windows_opened: usize,
}

/// What the world is to hear of since it last asked: the leases etcd let
/// expire, those whose keys were deleted, the records written, and what
/// the store itself saw break.
#[derive(Debug, Default)]
pub struct News {
    pub expired: Vec<i64>,
    pub released: Vec<i64>,
    pub records: Vec<RecordJudged>,
    pub findings: Vec<String>,
    /// Tokens of runs whose start was written (marked in the `--once-per`
    /// marker, or a start record), and of runs the marker says succeeded.
    pub window_marked: Vec<i64>,
    pub window_succeeded: Vec<i64>,
    /// How many `--once-per` markers were created: windows opened.
    pub windows_opened: usize,
}

/// A run record written, with the runs it names: the token of the run it
/// is of and of the run it replaced, each with the revision its key was
/// deleted at, if it was; and the revision the replaced record was
/// written at.
#[derive(Debug)]
pub struct RecordJudged {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub written: Option<(i64, Option<i64>)>,
    pub over: Option<(i64, Option<i64>)>,
    pub over_written_at: Option<i64>,
}

/// A run record written: its key, its value, and the value it replaced
/// with the revision that one was written at.
#[derive(Debug)]
pub struct RecordWrite {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub replaced: Option<(Vec<u8>, i64)>,
}

impl Store {
    pub fn new(rate: f64) -> Store {
        Store {
            revision: 1,
            compacted: 0,
            keys: BTreeMap::new(),
            leases: BTreeMap::new(),
            next_lease: 0x7a00_0000,
            events: Vec::new(),
            rate,
            released: Vec::new(),
            ended: BTreeMap::new(),
            records: Vec::new(),
            deleted: Vec::new(),
            record_puts: 0,
            findings: Vec::new(),
            window_marked: Vec::new(),
            window_succeeded: Vec::new(),
            windows_opened: 0,
        }
    }

    fn lasting(&self, ttl: i64) -> Duration {
        Duration::from_secs(ttl.max(0) as u64).div_f64(self.rate)
    }

    /// The key as it was at `revision` (None: absent).
    fn at(&self, key: &[u8], revision: i64) -> Option<&PbKeyValue> {
        let history = self.keys.get(key)?;
        history
            .iter()
            .rev()
            .find(|(at, _)| *at <= revision)
            .and_then(|(_, kv)| kv.as_ref())
    }

    /// The keys of `range` at `revision` (0: now), in key order.
    pub fn range(&self, range: &KeyRange, revision: i64) -> Result<Vec<PbKeyValue>, Refusal> {
        let revision = match revision {
            0 => self.revision,
            r if r > self.revision => return Err(Refusal::FutureRevision),
            r if r < self.compacted => return Err(Refusal::Compacted),
            r => r,
        };
        let found = self
            .keys
            .range(range.key.clone()..)
            .take_while(|(key, _)| match range.end.as_slice() {
                [] => key.as_slice() == range.key.as_slice(),
                [0] => true,
                end => key.as_slice() < end,
            })
            .filter_map(|(key, _)| self.at(key, revision).cloned())
            .collect();
        Ok(found)
    }

    /// Everything the world is to hear of since it last asked, with the
    /// leases that just `expired`.
    pub fn take_news(&mut self, expired: Vec<i64>) -> News {
        let records = std::mem::take(&mut self.records)
            .into_iter()
            .map(
                |RecordWrite {
                     key,
                     value,
                     replaced,
                 }| {
                    let ended = |value: &[u8]| {
                        let token = token_of(value)?;
                        Some((token, self.ended.get(&token).copied()))
                    };
                    let written = ended(&value);
                    let over = replaced.as_ref().and_then(|(value, _)| ended(value));
                    RecordJudged {
                        key,
                        value,
                        written,
                        over,
                        over_written_at: replaced.map(|(_, at)| at),
                    }
                },
            )
            .collect();
        News {
            expired,
            released: std::mem::take(&mut self.released),
            records,
            findings: std::mem::take(&mut self.findings),
            window_marked: std::mem::take(&mut self.window_marked),
            window_succeeded: std::mem::take(&mut self.window_succeeded),
            windows_opened: std::mem::take(&mut self.windows_opened),
        }
    }

    /// Whether a lease exists (and has not expired: `expire` runs first).
    pub fn lease_alive(&self, id: i64) -> bool {
        self.leases.contains_key(&id)
    }

    pub fn grant(&mut self, ttl: i64, now: Instant) -> (i64, i64) {
        let ttl = ttl.max(MIN_TTL);
        self.next_lease += 1 + (self.revision % 7);
        let id = self.next_lease;
        let expires = now + self.lasting(ttl);
        let keys = BTreeSet::new();
        self.leases.insert(id, Lease { ttl, expires, keys });
        (id, ttl)
    }

    /// Renews a lease to its full TTL: its TTL, or None if it is gone.
    pub fn renew(&mut self, id: i64, now: Instant) -> Option<i64> {
        let lasting = self.lasting(self.leases.get(&id)?.ttl);
        let lease = self.leases.get_mut(&id)?;
        lease.expires = now + lasting;
        Some(lease.ttl)
    }

    /// Seconds a lease has left (rounded down, as etcd does), or None.
    pub fn time_left(&self, id: i64, now: Instant) -> Option<(i64, i64, Vec<Vec<u8>>)> {
        let lease = self.leases.get(&id)?;
        let left = lease
            .expires
            .saturating_duration_since(now)
            .mul_f64(self.rate);
        let keys = lease.keys.iter().cloned().collect();
        Some((left.as_secs() as i64, lease.ttl, keys))
    }

    /// etcd elected a new raft leader: every lease runs its full TTL anew
    /// (etcd's lessor renews them all as the new leader takes over, so
    /// expiry only ever comes later than a holder counts).
    pub fn leader_changed(&mut self, now: Instant) {
        let ids: Vec<i64> = self.leases.keys().copied().collect();
        for id in ids {
            self.renew(id, now);
        }
    }

    /// Revokes a lease and deletes its keys, in one revision. False if it
    /// was not there.
    pub fn revoke(&mut self, id: i64) -> bool {
        let Some(lease) = self.leases.remove(&id) else {
            return false;
        };
        if lease.keys.is_empty() {
            return true;
        }
        self.revision += 1;
        for key in lease.keys {
            self.delete_key(&key);
        }
        true
    }

    /// The leases whose time is up on etcd's clock, revoked: their ids.
    pub fn expire(&mut self, now: Instant) -> Vec<i64> {
        let due: Vec<i64> = self
            .leases
            .iter()
            .filter(|(_, lease)| lease.expires <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in &due {
            self.revoke(*id);
        }
        due
    }

    /// When the next lease expires, if any does.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.leases.values().map(|lease| lease.expires).min()
    }

    /// Compacts the history up to `revision`.
    pub fn compact(&mut self, revision: i64) {
        let revision = revision.min(self.revision);
        if revision <= self.compacted {
            return;
        }
        self.compacted = revision;
        self.keys.retain(|_, history| {
            let keep_from = history
                .iter()
                .rposition(|(at, _)| *at <= revision)
                .unwrap_or(0);
            history.drain(..keep_from);
            !matches!(history.as_slice(), [(at, None)] if *at <= revision)
        });
        self.events.retain(|event| {
            event
                .kv
                .as_ref()
                .is_some_and(|kv| kv.mod_revision >= revision)
        });
    }

    /// Deletes a key at the current revision (the caller moved it on).
    fn delete_key(&mut self, key: &[u8]) -> Option<PbKeyValue> {
        let previous = self.at(key, self.revision).cloned()?;
        if previous.lease != 0 {
            if let Some(lease) = self.leases.get_mut(&previous.lease) {
                lease.keys.remove(key);
            }
            self.released.push(previous.lease);
            self.ended.insert(previous.create_revision, self.revision);
            self.deleted.push((key.to_vec(), previous.create_revision));
        }
        let revision = self.revision;
        self.keys
            .entry(key.to_vec())
            .or_default()
            .push((revision, None));
        self.events.push(PbEvent {
            r#type: 1,
            kv: Some(PbKeyValue {
                key: key.to_vec(),
                mod_revision: revision,
                ..Default::default()
            }),
            prev_kv: Some(previous.clone()),
        });
        Some(previous)
    }

    /// Puts a key at the current revision (the caller moved it on).
    fn put_key(&mut self, key: &[u8], value: Vec<u8>, lease: i64) -> Option<PbKeyValue> {
        let revision = self.revision;
        let previous = self.at(key, revision).cloned();
        if let Some(old) = previous.as_ref().filter(|old| old.lease != 0) {
            if let Some(held) = self.leases.get_mut(&old.lease) {
                held.keys.remove(key);
            }
        }
        if lease != 0 {
            if let Some(held) = self.leases.get_mut(&lease) {
                held.keys.insert(key.to_vec());
            }
        }
        let kv = PbKeyValue {
            key: key.to_vec(),
            create_revision: previous
                .as_ref()
                .map_or(revision, |old| old.create_revision),
            mod_revision: revision,
            version: previous.as_ref().map_or(1, |old| old.version + 1),
            value,
            lease,
        };
        if [&b".last-started"[..], b".last-finished", b".last-succeeded"]
            .iter()
            .any(|which| key.ends_with(which))
        {
            self.record_puts += 1;
        }
        self.note_start(key, &kv.value);
        if key.ends_with(b".once-per") && previous.is_none() {
            self.windows_opened += 1;
        }
        if key.ends_with(b".last-finished") || key.ends_with(b".last-succeeded") {
            self.records.push(RecordWrite {
                key: key.to_vec(),
                value: kv.value.clone(),
                replaced: previous
                    .as_ref()
                    .map(|old| (old.value.clone(), old.mod_revision)),
            });
        }
        self.keys
            .entry(key.to_vec())
            .or_default()
            .push((revision, Some(kv.clone())));
        self.events.push(PbEvent {
            r#type: 0,
            kv: Some(kv),
            prev_kv: previous.clone(),
        });
        previous
    }

    /// A write that says a run's command started (its attempt in the
    /// `--once-per` marker marked started or ended, or its start record),
    /// or that it succeeded, noted for the ledger.
    fn note_start(&mut self, key: &[u8], value: &[u8]) {
        if key.ends_with(b".last-started") {
            if field_of(value, "outcome").and_then(|outcome| outcome.as_str().map(str::to_owned))
                != Some("not_started".into())
            {
                self.window_marked.extend(token_of(value));
            }
            return;
        }
        if !key.ends_with(b".once-per") {
            return;
        }
        let attempts = field_of(value, "attempts");
        for attempt in attempts
            .as_ref()
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
        {
            let token = attempt.get("token").and_then(serde_json::Value::as_i64);
            let state = attempt.get("state").and_then(serde_json::Value::as_str);
            match (token, state) {
                (Some(_), Some("claimed" | "not_started")) | (None, _) | (_, None) => {}
                (Some(token), Some(state)) => {
                    self.window_marked.push(token);
                    if state == "succeeded" {
                        self.window_succeeded.push(token);
                    }
                }
            }
        }
    }

    /// Whether a transaction's comparisons hold.
    fn holds(&self, compare: &PbCompare) -> bool {
        let range = KeyRange::new(compare.key.clone(), compare.range_end.clone());
        let found = self.range(&range, 0).unwrap_or_default();
        let absent = PbKeyValue::default();
        let targets: Vec<&PbKeyValue> = if found.is_empty() {
            vec![&absent]
        } else {
            found.iter().collect()
        };
        targets.into_iter().all(|kv| {
            use std::cmp::Ordering;
            let ordering = match &compare.target_union {
                Some(PbTargetUnion::Version(v)) => kv.version.cmp(v),
                Some(PbTargetUnion::CreateRevision(v)) => kv.create_revision.cmp(v),
                Some(PbTargetUnion::ModRevision(v)) => kv.mod_revision.cmp(v),
                Some(PbTargetUnion::Value(v)) => {
                    if found.is_empty() {
                        return false;
                    }
                    kv.value.as_slice().cmp(v.as_slice())
                }
                Some(PbTargetUnion::Lease(v)) => kv.lease.cmp(v),
                None => return false,
            };
            match compare.result {
                0 => ordering == Ordering::Equal,
                1 => ordering == Ordering::Greater,
                2 => ordering == Ordering::Less,
                _ => ordering != Ordering::Equal,
            }
        })
    }

    /// Applies a transaction: whether its comparisons held, and each
    /// operation's answer.
    pub fn txn(
        &mut self,
        compare: &[PbCompare],
        success: &[PbTxnRequestOp],
        failure: &[PbTxnRequestOp],
    ) -> Result<(bool, Vec<PbTxnOpResponse>), Refusal> {
        let succeeded = compare.iter().all(|compare| self.holds(compare));
        let ops = if succeeded { success } else { failure };
        self.check_ops(ops)?;
        let writes = ops.iter().any(writes);
        if writes {
            self.revision += 1;
        }
        self.deleted.clear();
        let records_before = self.record_puts;
        let mut answers = Vec::with_capacity(ops.len());
        for op in ops {
            answers.push(self.apply(op)?);
        }
        if succeeded && self.record_puts > records_before {
            self.judge_resignation(compare);
            self.judge_unconditioned(compare, ops);
        }
        Ok((succeeded, answers))
    }

    /// A `last-finished` written as the entitled resignation writes it
    /// (a put of its own, on no comparison of that record) is rightful only
    /// while the run's key is still its own: a run whose key went before
    /// this revision claims an end that may not be the last (a run that
    /// came after it may have finished since).
    fn judge_unconditioned(&mut self, compare: &[PbCompare], ops: &[PbTxnRequestOp]) {
        for op in ops {
            let Some(PbTxnOpRequest::RequestPut(put)) = &op.request else {
                continue;
            };
            let guarded = compare.iter().any(|compare| compare.key == put.key);
            if guarded || !put.key.ends_with(b".last-finished") {
                continue;
            }
            let Some(token) = token_of(&put.value) else {
                continue;
            };
            if let Some(ended) = self
                .ended
                .get(&token)
                .filter(|ended| **ended < self.revision)
            {
                self.findings.push(format!(
                    "revision {}: token {token}'s run wrote last-finished as entitled, though its key went at revision {ended}",
                    self.revision
                ));
            }
        }
    }

    /// A transaction that deleted a run's key, on the comparison that it
    /// is still that run's (created at its token), and wrote records: the
    /// entitled resignation, which writes `last-finished` unconditionally
    /// (`protocol::records::end_plan`). After it, the record is that run's.
    fn judge_resignation(&mut self, compare: &[PbCompare]) {
        let entitled = self.deleted.iter().find(|(key, created)| {
            compare.iter().any(|compare| {
                compare.key == *key
                    && compare.result == 0
                    && compare.target_union == Some(PbTargetUnion::CreateRevision(*created))
            })
        });
        let Some((key, token)) = entitled.cloned() else {
            return;
        };
        let Some(slash) = key.iter().position(|byte| *byte == b'/') else {
            return;
        };
        let mut finished = key[..slash].to_vec();
        finished.extend_from_slice(b".last-finished");
        let recorded = self
            .at(&finished, self.revision)
            .and_then(|kv| token_of(&kv.value));
        if recorded != Some(token) {
            self.findings.push(format!(
                "revision {}: token {token}'s run resigned entitled, yet last-finished holds {recorded:?}",
                self.revision
            ));
        }
    }

    /// Refuses what etcd refuses before applying: a lease that is not
    /// there, a key written twice.
    fn check_ops(&self, ops: &[PbTxnRequestOp]) -> Result<(), Refusal> {
        let mut put = BTreeSet::new();
        for op in ops {
            if let Some(PbTxnOpRequest::RequestPut(request)) = &op.request {
                if request.lease != 0 && !self.lease_alive(request.lease) {
                    return Err(Refusal::LeaseNotFound);
                }
                if !put.insert(request.key.clone()) {
                    return Err(Refusal::DuplicateKey);
                }
            }
        }
        Ok(())
    }

    fn put_request(
        &mut self,
        request: &etcd_client::proto::PbPutRequest,
    ) -> Result<PbTxnOpResponse, Refusal> {
        let value = request.value.clone();
        // etcd's ignore_lease: the key keeps its lease; a key that is not
        // there is refused (etcd: "key not found").
        let lease = match request.ignore_lease {
            false => request.lease,
            true => match self.at(&request.key, self.revision) {
                Some(kv) => kv.lease,
                None => return Err(Refusal::KeyNotFound),
            },
        };
        let previous = self.put_key(&request.key, value, lease);
        Ok(PbTxnOpResponse::ResponsePut(
            etcd_client::proto::PbPutResponse {
                header: None,
                prev_kv: previous.filter(|_| request.prev_kv),
            },
        ))
    }

    fn apply(&mut self, op: &PbTxnRequestOp) -> Result<PbTxnOpResponse, Refusal> {
        Ok(match &op.request {
            Some(PbTxnOpRequest::RequestRange(request)) => {
                PbTxnOpResponse::ResponseRange(range_answer(self, request)?)
            }
            Some(PbTxnOpRequest::RequestPut(request)) => self.put_request(request)?,
            Some(PbTxnOpRequest::RequestDeleteRange(request)) => {
                let range = KeyRange::new(request.key.clone(), request.range_end.clone());
                let keys: Vec<Vec<u8>> = self
                    .range(&range, 0)?
                    .into_iter()
                    .map(|kv| kv.key)
                    .collect();
                let mut previous = Vec::new();
                for key in &keys {
                    previous.extend(self.delete_key(key));
                }
                PbTxnOpResponse::ResponseDeleteRange(etcd_client::proto::PbDeleteResponse {
                    header: None,
                    deleted: keys.len() as i64,
                    prev_kvs: if request.prev_kv {
                        previous
                    } else {
                        Vec::new()
                    },
                })
            }
            Some(PbTxnOpRequest::RequestTxn(request)) => {
                let succeeded = request.compare.iter().all(|compare| self.holds(compare));
                let ops = if succeeded {
                    &request.success
                } else {
                    &request.failure
                };
                let mut responses = Vec::new();
                for op in ops {
                    responses.push(etcd_client::proto::PbResponseOp {
                        response: Some(self.apply(op)?),
                    });
                }
                PbTxnOpResponse::ResponseTxn(etcd_client::proto::PbTxnResponse {
                    header: None,
                    succeeded,
                    responses,
                })
            }
            None => return Err(Refusal::DuplicateKey),
        })
    }
}

/// Whether an operation writes (and so the transaction takes a revision).
fn writes(op: &PbTxnRequestOp) -> bool {
    match &op.request {
        Some(PbTxnOpRequest::RequestPut(_) | PbTxnOpRequest::RequestDeleteRange(_)) => true,
        Some(PbTxnOpRequest::RequestTxn(txn)) => {
            txn.success.iter().any(writes) || txn.failure.iter().any(writes)
        }
        _ => false,
    }
}

/// The header of an answer: the store's revision now.
pub fn header(store: &Store) -> Option<PbResponseHeader> {
    Some(PbResponseHeader {
        cluster_id: 1,
        member_id: 1,
        revision: store.revision,
        raft_term: 2,
    })
}

/// A range request's answer, as etcd gives it.
pub fn range_answer(store: &Store, request: &PbRangeRequest) -> Result<PbRangeResponse, Refusal> {
    let range = KeyRange::new(request.key.clone(), request.range_end.clone());
    let mut kvs = store.range(&range, request.revision)?;
    kvs.retain(|kv| {
        (request.min_mod_revision == 0 || kv.mod_revision >= request.min_mod_revision)
            && (request.max_mod_revision == 0 || kv.mod_revision <= request.max_mod_revision)
            && (request.min_create_revision == 0
                || kv.create_revision >= request.min_create_revision)
            && (request.max_create_revision == 0
                || kv.create_revision <= request.max_create_revision)
    });
    // Sort targets: key, version, create, mod, value; orders: none,
    // ascending, descending. etcd sorts by key ascending when none is asked.
    let target = request.sort_target;
    if request.sort_order != 0 || target != 0 {
        kvs.sort_by(|a, b| match target {
            1 => a.version.cmp(&b.version),
            2 => a.create_revision.cmp(&b.create_revision),
            3 => a.mod_revision.cmp(&b.mod_revision),
            4 => a.value.cmp(&b.value),
            _ => a.key.cmp(&b.key),
        });
        if request.sort_order == 2 {
            kvs.reverse();
        }
    }
    let count = kvs.len() as i64;
    let limit = usize::try_from(request.limit).unwrap_or(0);
    let more = limit > 0 && kvs.len() > limit;
    if more {
        kvs.truncate(limit);
    }
    if request.keys_only {
        kvs.iter_mut().for_each(|kv| kv.value.clear());
    }
    if request.count_only {
        kvs.clear();
    }
    Ok(PbRangeResponse {
        header: header(store),
        kvs,
        more,
        count,
    })
}

/// The token a run record's value names.
pub fn token_of(value: &[u8]) -> Option<i64> {
    field_of(value, "token")?.as_i64()
}

/// A field of a run record's JSON.
pub fn field_of(value: &[u8], name: &str) -> Option<serde_json::Value> {
    let mut record: serde_json::Value = serde_json::from_slice(value).ok()?;
    Some(record.get_mut(name)?.take())
}
