//! The model's etcd: one linearizable key-value store with revisions (every
//! request is one atomic step, a transaction's writes share one revision),
//! leases whose TTL runs on the model's clock, and the ghost facts the
//! properties need (when each run's key stopped being its own).
//!
//! Only what leaderrun's rules read is kept: a key's create and mod
//! revisions, its lease and what its value says (whose candidate, or which
//! run a record is of). Watches are not kept as streams: a replica that
//! watches reads the key's latest version when it wakes, which is what a
//! watch delivering events in revision order amounts to for `judge`, and
//! what a watch cancelled by compaction does (it reads again).

use std::collections::BTreeMap;

use crate::election::record::Outcome;
use protocol::line::judge_version;
use protocol::records::{keeps_later, Guard, Which};

/// A key of the election: a candidate's (by its lease) or a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Candidate(i64),
    Started,
    Finished,
    Succeeded,
}

impl Key {
    pub fn of(which: Which) -> Key {
        match which {
            Which::Started => Key::Started,
            Which::Finished => Key::Finished,
            Which::Succeeded => Key::Succeeded,
        }
    }
}

/// What a value says, as far as the rules read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Value {
    /// A candidate key, written by replica `.0` (or by another writer).
    Candidate(Option<u8>),
    /// A replica's candidate key, rewritten by the leader that resigned
    /// to it (the fast path): at the key's mod revision.
    HandedOver,
    /// A run record: the run's token, outcome, and the revision its win
    /// was proven at (what orders starts).
    Record {
        token: i64,
        outcome: Outcome,
        proven: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version {
    pub value: Value,
    pub create: i64,
    pub modified: i64,
    pub lease: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Etcd {
    pub revision: i64,
    pub keys: BTreeMap<Key, Version>,
    /// Live leases and when each expires on the server (ms).
    pub leases: BTreeMap<i64, u32>,
    pub next_lease: i64,
    /// Every replica is cut off (no quorum, or the cluster is down).
    pub down: bool,
    /// Ghost: leases that expired by their TTL (not revoked).
    pub expired: Vec<i64>,
    /// Ghost: the revision at which each run's key (by token) stopped
    /// being its own: deleted, replaced, overwritten, or its lease gone.
    pub ended: BTreeMap<i64, i64>,
    /// The `--once-per` window's marker: the replica whose claim wrote it
    /// (on a lease as long as the window, which outlasts what the model
    /// explores: only giving the window back deletes it).
    pub window: Option<u8>,
}

impl Etcd {
    pub fn new() -> Etcd {
        Etcd {
            revision: 1,
            keys: BTreeMap::new(),
            leases: BTreeMap::new(),
            next_lease: 1,
            down: false,
            expired: Vec::new(),
            ended: BTreeMap::new(),
            window: None,
        }
    }

    pub fn grant(&mut self, now: u32, ttl: u32) -> i64 {
        let id = self.next_lease;
        self.next_lease += 1;
        self.leases.insert(id, now + ttl);
        id
    }

    /// A keep-alive: false if the lease is gone.
    pub fn renew(&mut self, id: i64, now: u32, ttl: u32) -> bool {
        match self.leases.get_mut(&id) {
            Some(expiry) => {
                *expiry = now + ttl;
                true
            }
            None => false,
        }
    }

    /// Revokes (or expires) a lease: its keys go, in one revision.
    pub fn revoke(&mut self, id: i64) {
        if self.leases.remove(&id).is_none() {
            return;
        }
        let attached: Vec<Key> = self
            .keys
            .iter()
            .filter(|(_, version)| version.lease == id)
            .map(|(key, _)| *key)
            .collect();
        if attached.is_empty() {
            return;
        }
        let revision = self.revision + 1;
        for key in attached {
            self.delete_at(key, revision);
        }
        self.revision = revision;
    }

    /// The first lease due to expire by `now`.
    pub fn due(&self, now: u32) -> Option<i64> {
        self.leases
            .iter()
            .find(|(_, expiry)| **expiry <= now)
            .map(|(id, _)| *id)
    }

    pub fn version(&self, key: Key) -> Option<(i64, i64)> {
        self.keys.get(&key).map(|found| (found.create, found.lease))
    }

    /// Candidates ahead of the key created at `token`, in line order.
    pub fn ahead_of(&self, token: i64) -> usize {
        self.keys
            .iter()
            .filter(|(key, found)| matches!(key, Key::Candidate(_)) && found.create < token)
            .count()
    }

    /// A put at `revision` (the caller's transaction's), keeping a key's
    /// create revision.
    pub fn put_at(&mut self, key: Key, value: Value, lease: i64, revision: i64) {
        let create = match self.keys.get(&key).copied() {
            Some(old) => {
                if matches!(key, Key::Candidate(_)) && lease != old.lease {
                    self.end(old.create, revision);
                }
                old.create
            }
            None => revision,
        };
        let version = Version {
            value,
            create,
            modified: revision,
            lease,
        };
        self.keys.insert(key, version);
    }

    pub fn delete_at(&mut self, key: Key, revision: i64) {
        if let Some(old) = self.keys.remove(&key) {
            if matches!(key, Key::Candidate(_)) {
                self.end(old.create, revision);
            }
        }
    }

    fn end(&mut self, token: i64, revision: i64) {
        self.ended.entry(token).or_insert(revision);
    }

    /// Whether the key created at `token` on `lease` is still ours.
    pub fn ours(&self, key: Key, token: i64, lease: i64) -> bool {
        judge_version(self.version(key), token, lease).is_none()
    }

    /// One record write with its guard, at `revision`: whether it was made.
    /// [`Guard::NoLaterStart`] is the read-and-swap, atomic here as its
    /// compare-and-swap on the mod revision makes it.
    pub fn record(&mut self, which: Which, guard: Guard, value: Value, revision: i64) -> bool {
        let key = Key::of(which);
        let found = self.keys.get(&key).copied();
        let modified = found.map_or(0, |found| found.modified);
        let write = match guard {
            Guard::Always => true,
            Guard::NotWrittenSince(proof) => modified <= proof,
            Guard::NotWrittenSinceOr { proof, ours } => modified <= proof || modified == ours,
            Guard::NoLaterStart => {
                let theirs = found.and_then(|found| match found.value {
                    Value::Record { proven, .. } => Some(proven),
                    Value::Candidate(_) | Value::HandedOver => None,
                });
                let Value::Record { proven, .. } = value else {
                    return false;
                };
                !keeps_later(theirs, proven, self.revision)
            }
        };
        if write {
            self.put_at(key, value, 0, revision);
        }
        write
    }
}
