//! The lease: granted once, kept alive by a task of its own, and watched by a
//! local deadline that does not depend on hearing from etcd.
//!
//! The deadline is the send time of the grant, or of the latest acknowledged
//! keep-alive, plus the TTL etcd granted. The server started its own
//! countdown no earlier than that send (and only ever extends leases, on a
//! raft leader change), so the lease cannot expire on the server before the
//! deadline. Measured on [`clock::Instant`], a monotonic clock that also
//! counts suspend.
//!
//! This folder owns one lease's life: granting it, renewing it (`keeper.rs`)
//! and revoking it. It publishes what it learns ([`LeaseState`]) and decides
//! nothing: when a renewal is due, how long its answer may take and what
//! deadline it gives are `protocol::renewal`'s, and what a lost lease
//! means is `protocol::table`'s.

use std::time::Duration;

use anyhow::Result;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod keeper;

use crate::clock;
use crate::clock::Now;
use crate::etcd::ids::LeaseId;
use crate::etcd::requests::Granted;
use crate::etcd::Connection;

/// What the keep-alive task has learnt, published to whoever depends on it.
#[derive(Debug, Clone)]
pub struct LeaseState {
    /// The lease cannot expire on the server before this instant.
    pub expires: clock::Instant,
    /// Set once etcd said the lease is gone (revoked or expired).
    pub gone: bool,
    /// Why renewing failed last, if it has failed since the latest
    /// acknowledgement: named when leadership is lost for want of one.
    pub trouble: Option<std::sync::Arc<str>>,
}

pub struct Lease {
    pub id: LeaseId,
    /// The TTL etcd granted, which may be longer than the one asked for.
    pub ttl: Duration,
    state: watch::Receiver<LeaseState>,
    keeper: JoinHandle<()>,
    connection: Connection,
}

impl Lease {
    pub async fn grant(connection: &Connection, ttl: Duration) -> Result<Lease> {
        let sent = clock::Instant::now();
        let Granted { id, ttl } = connection.grant("granting a lease", ttl).await?;
        let (publish, state) = watch::channel(LeaseState {
            expires: sent + ttl,
            gone: false,
            trouble: None,
        });
        let keeper = crate::host::spawn(keeper::keep_alive(
            connection.clone(),
            id,
            ttl,
            sent,
            publish,
        ));
        tracing::debug!(lease = format!("{id:x}"), ttl = ?ttl, "lease granted");
        Ok(Lease {
            id,
            ttl,
            state,
            keeper,
            connection: connection.clone(),
        })
    }

    /// A receiver that sees every change of the lease's state from now
    /// on. The state as it is now counts as seen: a clone of a receiver
    /// keeps the version it was cloned from, and this one's never moves,
    /// so a plain clone saw every renewal since the grant as news at once,
    /// and a stop's grace, which waits for the next renewal, spun a core
    /// until SIGKILL.
    pub fn watch(&self) -> watch::Receiver<LeaseState> {
        let mut state = self.state.clone();
        state.mark_unchanged();
        state
    }

    pub fn state(&self) -> LeaseState {
        self.state.borrow().clone()
    }

    /// Stops renewing and revokes the lease, which deletes every key attached
    /// to it: our candidate key goes, and the next in line takes over now
    /// rather than after the TTL. Best effort, within `limit`.
    pub async fn revoke(self, limit: Duration) {
        self.keeper.abort();
        if self.state.borrow().gone {
            return;
        }
        self.connection.revoke(self.id, limit).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}
