//! The lease: granted once, kept alive by a task of its own, and watched by a
//! local deadline that does not depend on hearing from etcd.
//!
//! The deadline is the send time of the latest acknowledged keep-alive plus
//! the TTL etcd granted. The server started its own countdown no earlier than
//! that send (and only ever extends leases, on a raft leader change), so the
//! lease cannot expire on the server before the deadline. Measured on
//! [`clock::Instant`], a monotonic clock that also counts suspend.

use std::collections::VecDeque;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock;
use crate::etcd::connection::{describe, is_lease_not_found, Connection};
use crate::etcd::requests::Granted;
use crate::retry::{self, Backoff};

/// What the keep-alive task has learnt, published to whoever depends on it.
#[derive(Debug, Clone)]
pub struct LeaseState {
    /// The lease cannot expire on the server before this instant.
    pub expires: clock::Instant,
    /// Set once etcd said the lease is gone (revoked or expired).
    pub gone: bool,
}

pub struct Lease {
    pub id: i64,
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
        });
        let keeper = tokio::spawn(keep_alive(connection.clone(), id, ttl, publish));
        tracing::debug!(lease = format!("{id:x}"), ttl = ?ttl, "lease granted");
        Ok(Lease {
            id,
            ttl,
            state,
            keeper,
            connection: connection.clone(),
        })
    }

    /// A receiver that sees every change of the lease's state.
    pub fn watch(&self) -> watch::Receiver<LeaseState> {
        self.state.clone()
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

/// Renews every third of the TTL. The keep-alive stream of etcd-client never
/// reconnects, so every failure (an error, a closed stream, or a renewal not
/// acknowledged in time) opens a new one, on the next endpoint.
async fn keep_alive(
    connection: Connection,
    id: i64,
    ttl: Duration,
    publish: watch::Sender<LeaseState>,
) {
    let interval = ttl / 3;
    // A healthy etcd answers a renewal in milliseconds; waiting this long
    // before trying another endpoint leaves time to fail over well within
    // the TTL.
    let ack_timeout = (ttl / 6).max(Duration::from_millis(300));
    let mut backoff = Backoff::new(retry::KEEPING.min(interval / 2));
    loop {
        let broken =
            match renew_on_current(&connection, id, ttl, interval, ack_timeout, &publish).await {
                Ok(()) => return,
                Err(err) => err,
            };
        if publish.borrow().gone {
            return;
        }
        tracing::info!("lease keep-alive interrupted: {broken:#}; reconnecting");
        backoff.wait().await;
    }
}

/// Keeps the lease alive over one stream to the current endpoint. Returns
/// Ok when the lease is gone for good (published), Err when the stream broke.
async fn renew_on_current(
    connection: &Connection,
    id: i64,
    ttl: Duration,
    interval: Duration,
    ack_timeout: Duration,
    publish: &watch::Sender<LeaseState>,
) -> Result<()> {
    let endpoint = connection.current().await?;
    let index = endpoint.index;
    let mut client = endpoint.client;
    let acknowledge = |sent: clock::Instant, granted: i64| {
        let expires = sent + Duration::from_secs(granted.max(0) as u64);
        publish.send_modify(|state| {
            if expires > state.expires {
                state.expires = expires;
            }
        });
    };
    let gone = || {
        publish.send_modify(|state| state.gone = true);
    };

    // Opening the stream sends the first renewal and waits for its answer.
    let sent = clock::Instant::now();
    let opened = clock::timeout(
        ack_timeout.max(connection.attempt_timeout()),
        client.lease_keep_alive(id),
    )
    .await;
    let (mut keeper, mut stream) = match opened {
        Some(Ok(pair)) => pair,
        Some(Err(err)) if is_lease_not_found(&err) => {
            gone();
            return Ok(());
        }
        Some(Err(err)) => {
            connection.failed(index);
            return Err(anyhow::anyhow!(describe(&err))).context("opening the keep-alive stream");
        }
        None => {
            connection.failed(index);
            anyhow::bail!("opening the keep-alive stream timed out");
        }
    };
    acknowledge(sent, ttl.as_secs() as i64);

    // Send times of renewals not yet acknowledged: answers come in order.
    let mut unacknowledged: VecDeque<clock::Instant> = VecDeque::new();
    let mut next_renewal = clock::Instant::now() + interval;
    loop {
        let ack_due = unacknowledged.front().map(|sent| *sent + ack_timeout);
        tokio::select! {
            _ = clock::sleep_until(next_renewal) => {
                unacknowledged.push_back(clock::Instant::now());
                if keeper.keep_alive().await.is_err() {
                    connection.failed(index);
                    anyhow::bail!("keep-alive stream closed");
                }
                next_renewal = clock::Instant::now() + interval;
            }
            _ = clock::sleep_until_opt(ack_due) => {
                connection.failed(index);
                anyhow::bail!(
                    "renewal not acknowledged within {}",
                    humantime::format_duration(ack_timeout)
                );
            }
            message = stream.message() => match message {
                Ok(Some(response)) => {
                    let Some(sent) = unacknowledged.pop_front() else { continue };
                    if response.ttl() <= 0 {
                        gone();
                        return Ok(());
                    }
                    acknowledge(sent, response.ttl());
                }
                Ok(None) => {
                    connection.failed(index);
                    anyhow::bail!("keep-alive stream ended");
                }
                Err(err) => {
                    connection.failed(index);
                    return Err(anyhow::anyhow!(describe(&err))).context("keep-alive stream failed");
                }
            }
        }
    }
}
