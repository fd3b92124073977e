//! Waiting in the queue: watching only the candidate just ahead (no herd,
//! no polling) until it is our turn, or our place is lost.

use anyhow::Result;
use etcd_client::{EventType, SortOrder, Txn, TxnOp};
use tokio::sync::watch;

use super::line::{in_line, FIRST_PAGE};
use super::watch::watch_key;
use super::{judge, name, Candidate, Election, KeyLoss, PlaceLost, Turn};
use crate::etcd::requests::{range_at, revision_of};
use crate::lease::LeaseState;
use crate::retry::{self, Backoff};

impl Election<'_> {
    /// Waits until every key ahead of ours is gone, watching only the one just
    /// ahead (no herd, no polling). Returns when it is our turn, or when our key
    /// disappeared (lease lost) so the caller must start again.
    pub async fn wait_for_turn(
        &self,
        candidate: &Candidate,
        lease_id: i64,
        lease: &mut watch::Receiver<LeaseState>,
    ) -> Turn {
        let mut backoff = Backoff::new(retry::KEEPING);
        let mut broken_watches = Backoff::new(retry::KEEPING);
        loop {
            if lease.borrow().gone {
                return Turn::Lost(PlaceLost::LeaseGone);
            }
            let (ahead, revision) = match self.look_ahead(candidate, lease_id).await {
                Ok(Ahead::Lost(loss)) => return Turn::Lost(PlaceLost::Key(loss)),
                Ok(Ahead::Nobody) => return Turn::Ours,
                Ok(Ahead::Key(key, revision)) => (key, revision),
                Err(err) => {
                    // Keep queueing through an outage: our lease decides
                    // whether our place survives it.
                    tracing::info!("{err:#}; retrying");
                    tokio::select! {
                        _ = backoff.wait() => continue,
                        _ = lease_gone(lease) => continue,
                    }
                }
            };
            backoff.reset();
            tracing::debug!(ahead = %String::from_utf8_lossy(&ahead), "queued; watching the key ahead");
            let mut from = revision + 1;
            let moved = tokio::select! {
                seen = watch_key(self.connection, &ahead, &mut from, |event| {
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

    /// Reads, at one revision, our key and the candidate just ahead of it.
    async fn look_ahead(&self, candidate: &Candidate, lease_id: i64) -> Result<Ahead> {
        let predecessor = in_line(SortOrder::Descend, FIRST_PAGE)
            .with_max_create_revision(candidate.revision - 1);
        let txn = Txn::new().and_then([
            TxnOp::get(candidate.key.as_str(), None),
            TxnOp::get(name::prefix(self.name), Some(predecessor)),
        ]);
        let response = self.connection.txn("reading the queue", txn).await?;
        let revision = revision_of(&response);
        let ours = range_at(&response, 0).kvs.into_iter().next();
        if let Some(loss) = judge(ours.as_ref(), candidate.revision, lease_id) {
            return Ok(Ahead::Lost(loss));
        }
        let line = range_at(&response, 1);
        let ahead = self
            .first_candidate(line, revision, SortOrder::Descend)
            .await?;
        Ok(match ahead {
            Some(kv) => Ahead::Key(kv.key().to_vec(), revision),
            None => Ahead::Nobody,
        })
    }
}

/// What is ahead of our key in the queue.
enum Ahead {
    /// Our own key is gone, or not ours any more.
    Lost(KeyLoss),
    /// Nothing: our turn.
    Nobody,
    /// This candidate's key, as read at this revision.
    Key(Vec<u8>, i64),
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
