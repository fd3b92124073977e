//! The requests leaderrun makes, each written once: transactions, reads
//! (one range, [`Range`], or a range page by page, [`Pages`]), opening
//! watches (read through [`crate::etcd::watch`]), and granting, revoking
//! and reading leases. Each runs through
//! [`Connection::call`], so each gets failover, the attempt bound and the
//! error wording that go with it. `what` names the request in errors
//! ("etcd at URL refused claiming the --once-per window: ...").

use std::time::Duration;

use anyhow::Result;
use etcd_client::{
    GetOptions, GetResponse, LeaseTimeToLiveOptions, Txn, TxnOpResponse, TxnResponse, WatchOptions,
    WatchStream,
};

use crate::clock;
use crate::etcd::connection::{Endpoint, Slot, MESSAGE_LIMIT};
use crate::etcd::ids::{LeaseId, Revision};
use crate::etcd::kv::Kv;
use crate::etcd::Connection;

/// A granted lease: its id and the TTL etcd granted, which may be longer
/// than the one asked for (etcd raises TTLs below its minimum).
pub struct Granted {
    pub id: LeaseId,
    pub ttl: Duration,
}

/// etcd counts leases in whole seconds: round up, never shorten.
pub fn whole_seconds(length: Duration) -> i64 {
    let seconds = length
        .as_secs()
        .saturating_add(u64::from(length.subsec_nanos() > 0));
    i64::try_from(seconds).unwrap_or(i64::MAX)
}

/// One range read's answer: its keys, whether the range holds more, and
/// the store revision it was read at.
#[derive(Debug, Default)]
pub struct Range {
    pub kvs: Vec<Kv>,
    pub more: bool,
    pub revision: Revision,
}

impl From<GetResponse> for Range {
    fn from(mut response: GetResponse) -> Range {
        Range {
            more: response.more(),
            revision: Revision(response.header().map_or(0, |header| header.revision())),
            kvs: response.take_kvs().into_iter().map(Kv::from).collect(),
        }
    }
}

impl Range {
    /// The first key of the answer, if any: the key, for a read of one.
    pub fn first(self) -> Option<Kv> {
        self.kvs.into_iter().next()
    }
}

/// The answers of a transaction's range reads, in order, each at the
/// transaction's revision.
pub fn ranges(response: &TxnResponse) -> Vec<Range> {
    let revision = revision_of(response);
    response
        .op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(get) => Some(Range {
                revision,
                ..Range::from(get)
            }),
            _ => None,
        })
        .collect()
}

/// The answer of a transaction's range read number `index`, or an empty
/// one.
pub fn range_at(response: &TxnResponse, index: usize) -> Range {
    ranges(response).into_iter().nth(index).unwrap_or_default()
}

/// The keys from `start` up to `end` (every key from `start` on, without
/// one) in key order, keys only, read page by page all at the revision of
/// the first page: so that memory holds a page, not the range.
pub struct Pages<'a> {
    connection: &'a Connection,
    what: &'static str,
    start: Vec<u8>,
    end: Option<Vec<u8>>,
    limit: i64,
    /// The revision every page is read at, once the first is read.
    revision: Option<Revision>,
    done: bool,
}

impl<'a> Pages<'a> {
    pub fn new(
        connection: &'a Connection,
        what: &'static str,
        start: Vec<u8>,
        end: Option<Vec<u8>>,
        limit: i64,
    ) -> Self {
        Pages {
            connection,
            what,
            start,
            end,
            limit,
            revision: None,
            done: false,
        }
    }

    /// The revision the pages are read at (None before the first).
    pub fn revision(&self) -> Option<Revision> {
        self.revision
    }

    /// The next page, or None after the last.
    pub async fn next(&mut self) -> Result<Option<Vec<Kv>>> {
        if self.done {
            return Ok(None);
        }
        let mut options = GetOptions::new().with_keys_only().with_limit(self.limit);
        options = match &self.end {
            Some(end) => options.with_range(end.clone()),
            None => options.with_from_key(),
        };
        if let Some(revision) = self.revision {
            options = options.with_revision(revision.0);
        }
        let page = self
            .connection
            .get(self.what, self.start.clone(), Some(options))
            .await?;
        self.revision.get_or_insert(page.revision);
        match page.kvs.last() {
            Some(last) if page.more => {
                // The next key after the last one read.
                self.start = last.key.clone();
                self.start.push(0);
            }
            _ => self.done = true,
        }
        Ok(Some(page.kvs))
    }
}

/// The store revision a response was read at.
pub fn revision_of(response: &TxnResponse) -> Revision {
    Revision(response.header().map_or(0, |header| header.revision()))
}

impl Connection {
    pub async fn txn(&self, what: &str, txn: Txn) -> Result<TxnResponse> {
        self.call(what, |client| {
            let txn = txn.clone();
            let mut kv = client.kv_client().max_decoding_message_size(MESSAGE_LIMIT);
            async move { kv.txn(txn).await }
        })
        .await
    }

    pub async fn get(
        &self,
        what: &str,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<Range> {
        let key = key.into();
        let response = self
            .call(what, |client| {
                let (key, options) = (key.clone(), options.clone());
                let mut kv = client.kv_client().max_decoding_message_size(MESSAGE_LIMIT);
                async move { kv.get(key, options).await }
            })
            .await?;
        Ok(response.into())
    }

    /// Grants a lease of `length`, rounded up to whole seconds.
    pub async fn grant(&self, what: &str, length: Duration) -> Result<Granted> {
        let seconds = whole_seconds(length);
        let granted = self
            .call(what, |mut client| async move {
                client.lease_grant(seconds, None).await
            })
            .await?;
        Ok(Granted {
            id: LeaseId(granted.id()),
            ttl: Duration::from_secs(granted.ttl().max(1) as u64),
        })
    }

    /// Revokes a lease, which deletes every key attached to it. Best effort
    /// and bounded by `limit`: a lease that is not revoked expires by itself
    /// within its TTL, so failure only costs that wait, and is logged.
    pub async fn revoke(&self, id: LeaseId, limit: Duration) {
        let revoke = self.call("revoking a lease", |mut client| async move {
            client.lease_revoke(id.0).await
        });
        match clock::timeout(limit, revoke).await {
            Some(Ok(_)) => tracing::debug!(lease = format!("{id:x}"), "lease revoked"),
            Some(Err(err)) => tracing::info!("{err:#} (it expires by itself within its TTL)"),
            None => tracing::info!(
                "revoking lease {id:x}: no answer within {} (it expires by itself within its TTL)",
                humantime::format_duration(limit)
            ),
        }
    }

    /// What a lease has left on the server, or None if it is gone.
    pub async fn time_left(&self, id: LeaseId) -> Result<Option<Duration>> {
        let response = self
            .call("reading a lease", |mut client| async move {
                client.lease_time_to_live(id.0, None).await
            })
            .await?;
        // etcd answers -1 for a lease that has expired or never was.
        Ok(u64::try_from(response.ttl()).ok().map(Duration::from_secs))
    }

    /// The keys attached to a lease, or None if the lease is gone.
    pub async fn lease_keys(&self, id: LeaseId) -> Result<Option<Vec<Vec<u8>>>> {
        let response = self
            .call("reading a lease", |mut client| async move {
                let options = LeaseTimeToLiveOptions::new().with_keys();
                client.lease_time_to_live(id.0, Some(options)).await
            })
            .await?;
        Ok((response.ttl() >= 0).then(|| response.keys().to_vec()))
    }

    /// Opens a watch on the current endpoint within the attempt timeout.
    /// None, with the endpoint marked failed, if it could not: the caller
    /// retries, on the next endpoint.
    pub async fn open_watch(
        &self,
        key: &[u8],
        options: WatchOptions,
    ) -> Option<(WatchStream, Slot)> {
        let Endpoint { client, index } = self.current().await.ok()?;
        // With the client it borrows, which goes onto the heap with it.
        let open = async move {
            let mut watches = client
                .watch_client()
                .max_decoding_message_size(MESSAGE_LIMIT);
            watches.watch(key, Some(options)).await
        };
        match self.within_attempt(open).await {
            Ok(Ok(stream)) => Some((stream, index)),
            _ => {
                self.failed(index);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_lengths_round_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_secs(15)), 15);
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::MAX), i64::MAX);
    }

    /// A request's future holds pointers to the client and the request in
    /// flight (each kilobytes), not them: every future that waits on etcd
    /// holds one of these, and a campaign's holds dozens, nested. Inline,
    /// the whole run was a 120 KB future, written to fresh pages of stack
    /// and heap as leaderrun started (page faults, before running).
    #[test]
    fn requests_are_small_futures() {
        let connection = Connection::new(crate::etcd::connection::Settings {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            discovery: None,
            dial_timeout: Duration::from_secs(1),
            ping_interval: Duration::from_secs(1),
            credentials: Default::default(),
        });
        let sizes = [
            (
                "txn",
                std::mem::size_of_val(&connection.txn("", Txn::new())),
            ),
            ("get", std::mem::size_of_val(&connection.get("", "k", None))),
            (
                "grant",
                std::mem::size_of_val(&connection.grant("", Duration::ZERO)),
            ),
            (
                "lease_keys",
                std::mem::size_of_val(&connection.lease_keys(LeaseId(1))),
            ),
            (
                "watch",
                std::mem::size_of_val(&connection.open_watch(b"k", WatchOptions::new())),
            ),
            ("current", std::mem::size_of_val(&connection.current())),
        ];
        for (request, size) in sizes {
            assert!(size < 1024, "{request}: a future of {size} bytes");
        }
    }
}
