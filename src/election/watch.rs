//! Watching a key we hold: its deletion, replacement or overwrite is the
//! loss of leadership. Rides out broken watches and endpoint changes.

use etcd_client::{EventType, WatchOptions};

use super::{judge, KeyLoss, Leadership};
use crate::etcd::Connection;
use crate::retry::{self, Backoff};

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
        let read = connection.get("checking the leader key", key, None).await;
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

/// What a watch covers: one key, or every key under a prefix.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Watched {
    Key,
    Prefix,
}

/// Watches one key from revision `*from`, advancing it past each event seen,
/// until `decide` maps an event to a value. Returns None when the watch broke
/// (error, end, compaction, endpoint change): the caller re-reads and retries.
pub(super) async fn watch_key<T>(
    connection: &Connection,
    key: &[u8],
    from: &mut i64,
    decide: impl FnMut(&etcd_client::Event) -> Option<T>,
) -> Option<T> {
    watch_from(connection, key, Watched::Key, from, decide).await
}

/// [`watch_key`], for a key or a prefix.
pub(super) async fn watch_from<T>(
    connection: &Connection,
    key: &[u8],
    watched: Watched,
    from: &mut i64,
    mut decide: impl FnMut(&etcd_client::Event) -> Option<T>,
) -> Option<T> {
    let mut options = WatchOptions::new().with_start_revision(*from);
    if watched == Watched::Prefix {
        options = options.with_prefix();
    }
    let (mut stream, index) = connection.open_watch(key, options).await?;
    loop {
        match stream.message().await {
            Ok(Some(response)) => {
                if response.canceled() || response.compact_revision() > 0 {
                    // Dial again: a cancelled watch may hold a token that
                    // etcd has forgotten (a restart, with auth on).
                    connection.failed(index);
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
