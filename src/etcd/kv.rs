//! etcd's keys and watch events as leaderrun sees them: plain values,
//! converted from etcd-client's types here and nowhere else, so that what
//! a key or an event means (the election's decisions) can be judged, and
//! tested, without a server.

use crate::etcd::ids::{LeaseId, Revision};

/// One key as etcd returned it, at the revision it was read at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kv {
    pub key: Vec<u8>,
    /// The revision that created the key: the same for every later
    /// rewrite, until it is deleted.
    pub create_revision: Revision,
    /// The revision of its last write (of its deletion, in a delete event).
    pub mod_revision: Revision,
    /// The lease it is attached to, or [`LeaseId::NONE`].
    pub lease: LeaseId,
    /// Empty in a keys-only read, and in a delete event.
    pub value: Vec<u8>,
}

impl From<etcd_client::KeyValue> for Kv {
    fn from(kv: etcd_client::KeyValue) -> Kv {
        let (create_revision, mod_revision, lease) = (
            Revision(kv.create_revision()),
            Revision(kv.mod_revision()),
            LeaseId(kv.lease()),
        );
        let (key, value) = kv.into_key_value();
        Kv {
            key,
            create_revision,
            mod_revision,
            lease,
            value,
        }
    }
}

impl From<&etcd_client::KeyValue> for Kv {
    fn from(kv: &etcd_client::KeyValue) -> Kv {
        Kv {
            key: kv.key().to_vec(),
            create_revision: Revision(kv.create_revision()),
            mod_revision: Revision(kv.mod_revision()),
            lease: LeaseId(kv.lease()),
            value: kv.value().to_vec(),
        }
    }
}

#[cfg(test)]
impl Kv {
    /// A key as first written: created (and last written) at `created`.
    pub fn written(key: impl Into<Vec<u8>>, created: i64, lease: i64, value: &[u8]) -> Kv {
        Kv {
            key: key.into(),
            create_revision: Revision(created),
            mod_revision: Revision(created),
            lease: LeaseId(lease),
            value: value.to_vec(),
        }
    }

    /// The same key rewritten at `revision` with `value` (its create
    /// revision unchanged), on `lease`.
    pub fn rewritten(&self, revision: i64, lease: i64, value: &[u8]) -> Kv {
        Kv {
            mod_revision: Revision(revision),
            lease: LeaseId(lease),
            value: value.to_vec(),
            ..self.clone()
        }
    }
}

/// One change a watch reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// The key as written.
    Put(Kv),
    /// The key deleted, at its `mod_revision` (etcd sends no value).
    Delete(Kv),
}

impl WatchEvent {
    /// The key as the event shows it.
    pub fn kv(&self) -> &Kv {
        match self {
            WatchEvent::Put(kv) | WatchEvent::Delete(kv) => kv,
        }
    }

    /// The revision of the change.
    pub fn revision(&self) -> Revision {
        self.kv().mod_revision
    }

    /// The events of a watch response. etcd sends the key with every
    /// event; one without (which etcd never sends) is left out.
    pub fn all_of(events: &[etcd_client::Event]) -> impl Iterator<Item = WatchEvent> + '_ {
        events.iter().filter_map(|event| {
            let kv = Kv::from(event.kv()?);
            Some(match event.event_type() {
                etcd_client::EventType::Put => WatchEvent::Put(kv),
                etcd_client::EventType::Delete => WatchEvent::Delete(kv),
            })
        })
    }
}
