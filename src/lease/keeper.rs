//! The task that keeps a lease alive: the renewals the protocol's keeper
//! state (`protocol::renewal`) has due, over one keep-alive stream (opened
//! with the first), a new stream (on the next endpoint) whenever one breaks
//! or goes quiet, and the local deadline each acknowledgement gives
//! published. When a renewal is due, how long its acknowledgement may take
//! and what deadline it gives are the protocol's; this sends, listens and
//! reports.

use std::time::Duration;

use anyhow::Result;
use etcd_client::{Client, LeaseKeepAliveStream, LeaseKeeper};
use tokio::sync::watch;

use super::LeaseState;
use crate::clock;
use crate::clock::Now;
use crate::etcd::connection::{describe, is_lease_not_found, Endpoint};
use crate::etcd::ids::LeaseId;
use crate::etcd::Connection;
use crate::logging::events;
use crate::retry;
use protocol::renewal::{Acknowledged, Renewals};

/// Renews as the protocol's keeper state (`protocol::renewal::Renewals`)
/// says, and publishes the local deadline each acknowledgement gives. The
/// keep-alive stream of etcd-client never reconnects, so every failure (an
/// error, a closed stream, or a renewal not acknowledged in time) opens a
/// new one, on the next endpoint.
pub(super) async fn keep_alive(
    connection: Connection,
    id: LeaseId,
    ttl: Duration,
    granted_at: clock::Instant,
    publish: watch::Sender<LeaseState>,
) {
    // The grant is as good as a renewal sent when it was (`granted_at`):
    // the first renewal is due as every other is after it, and at once if
    // a slow answer took longer. The stream is opened then, not as the
    // answer comes: opening it sends a renewal, which would be etcd's work
    // beside our first write, on the way to running (a run shorter than a
    // third of the TTL never opens one).
    let mut renewals = Renewals::new(ttl, granted_at);
    let mut backoff = retry::backoff(retry::KEEPING.min(renewals.cadence().renew_every / 2));
    clock::sleep_until(renewals.next_due()).await;
    loop {
        let broken = match renew_on_current(&connection, id, &mut renewals, &publish).await {
            Ok(()) => return,
            Err(err) => err,
        };
        renewals.broke();
        if publish.borrow().gone {
            return;
        }
        tracing::info!("lease keep-alive interrupted: {broken:#}; reconnecting");
        let trouble = format!("{broken:#}");
        // Told only when it says something new: a partition fails every
        // attempt alike, and each telling would wake whoever watches the
        // lease for nothing (and hide a watcher's own deadline behind
        // those wake-ups, which a test of it must not have).
        publish.send_if_modified(|state| {
            let new = state.trouble.as_deref() != Some(trouble.as_str());
            if new {
                state.trouble = Some(trouble.into());
            }
            new
        });
        retry::wait(&mut backoff).await;
    }
}

/// Keeps the lease alive over one stream to the current endpoint. Returns
/// Ok when the lease is gone for good (published), Err when the stream broke.
async fn renew_on_current(
    connection: &Connection,
    id: LeaseId,
    renewals: &mut Renewals,
    publish: &watch::Sender<LeaseState>,
) -> Result<()> {
    let Endpoint { client, index } = connection.current().await?;
    let broken = |err: anyhow::Error| {
        connection.failed(index);
        err
    };
    let ack_timeout = renewals.cadence().ack_timeout;
    // Opening the stream sends the first renewal and waits for its answer:
    // a renewal, bounded as every other. Bounded by an attempt's share of
    // the dial timeout instead (2.5 s of a 6 s TTL, with two endpoints), a
    // first renewal on an endpoint that had gone silent since the grant
    // failed over only after the local deadline had stopped the command. It
    // may have to connect first (after a failure, the next endpoint's
    // connection is made by this request): a sixth of the TTL, 300 ms at
    // least, is a generous time for that too.
    renewals.sent(clock::Instant::now())?;
    let (mut keeper, mut stream) = match open(client, id, ack_timeout).await {
        Opened::Stream(pair) => *pair,
        Opened::LeaseGone => {
            publish.send_modify(|state| state.gone = true);
            return Ok(());
        }
        Opened::Failed(err) => return Err(broken(err)),
    };
    // Opening answers with no TTL of its own: the lease's, as granted.
    let granted = renewals.cadence().ttl;
    if acknowledge(publish, renewals, granted)? {
        return Ok(());
    }
    loop {
        // In a fixed order, not tokio's random one, so that a simulated
        // run replays exactly (`crate::simulation`): an answer that came
        // first (safe to take late: its deadline counts from its send),
        // then the answer's own deadline, then the next renewal.
        tokio::select! {
            biased;
            message = stream.message() => match message {
                Ok(Some(response)) => {
                    let granted = Duration::from_secs(response.ttl().max(0) as u64);
                    if acknowledge(publish, renewals, granted)? {
                        return Ok(());
                    }
                }
                Ok(None) => return Err(broken(anyhow::anyhow!("keep-alive stream ended"))),
                Err(err) => {
                    let err = anyhow::anyhow!(describe(&err)).context("keep-alive stream failed");
                    return Err(broken(err));
                }
            },
            _ = clock::sleep_until_opt(renewals.ack_due()) => {
                let late = humantime::format_duration(ack_timeout);
                return Err(broken(anyhow::anyhow!("renewal not acknowledged within {late}")));
            }
            _ = clock::sleep_until(renewals.next_due()) => {
                renewals.sent(clock::Instant::now())?;
                if keeper.keep_alive().await.is_err() {
                    return Err(broken(anyhow::anyhow!("keep-alive stream closed")));
                }
            }
        }
    }
}

/// The awaited renewal was acknowledged with `granted`: publishes the
/// local deadline the keeper's state gives (counted from the renewal's
/// send), or that the lease is gone (true).
fn acknowledge(
    publish: &watch::Sender<LeaseState>,
    renewals: &mut Renewals,
    granted: Duration,
) -> Result<bool> {
    match renewals.acknowledged(granted, clock::Instant::now())? {
        Acknowledged::Gone => {
            publish.send_modify(|state| state.gone = true);
            Ok(true)
        }
        Acknowledged::Until { expires, sent } => {
            tracing::debug!(
                event = events::RENEWED,
                granted = granted.as_secs(),
                sent_ago_ms = sent.elapsed().as_millis() as u64,
                "lease renewal acknowledged"
            );
            publish.send_modify(|state| {
                state.expires = expires;
                state.trouble = None;
            });
            Ok(false)
        }
    }
}

/// How opening a keep-alive stream went.
enum Opened {
    Stream(Box<(LeaseKeeper, LeaseKeepAliveStream)>),
    /// etcd says the lease does not exist.
    LeaseGone,
    Failed(anyhow::Error),
}

/// Opens a keep-alive stream, which sends the first renewal, within `bound`.
/// Not an async fn: the client (kilobytes) goes onto the heap with the
/// request, and the keeper's future holds a pointer to them, not both.
fn open(client: Client, id: LeaseId, bound: Duration) -> impl std::future::Future<Output = Opened> {
    let opening = clock::timeout(bound, async move {
        let mut client = client;
        client.lease_keep_alive(id.0).await
    });
    async move {
        match opening.await {
            Some(Ok(pair)) => Opened::Stream(Box::new(pair)),
            Some(Err(err)) if is_lease_not_found(&err) => Opened::LeaseGone,
            Some(Err(err)) => {
                let err = anyhow::anyhow!(describe(&err)).context("opening the keep-alive stream");
                Opened::Failed(err)
            }
            None => Opened::Failed(anyhow::anyhow!("opening the keep-alive stream timed out")),
        }
    }
}

#[cfg(test)]
mod tests {
    //! How an opening's answer is taken, against the simulated etcd
    //! (`crate::simulation`) and the real etcd-client over it; what the
    //! simulated etcd answers an opening, `tests/facts/etcd.rs` pins
    //! against real ones.

    use super::*;
    use crate::simulation::network::Network;
    use crate::simulation::with_one_member;

    const BOUND: Duration = Duration::from_secs(1);

    /// What an opening gave, as a test can compare it.
    fn seen(opened: Opened) -> String {
        match opened {
            Opened::Stream(_) => "a stream".into(),
            Opened::LeaseGone => "the lease gone".into(),
            Opened::Failed(err) => format!("failed: {err:#}"),
        }
    }

    /// What opening a keep-alive stream gives for a lease granted by the
    /// simulated etcd, after `then` (given the client, the network and the
    /// lease) has had its way.
    fn opening_after(then: impl AsyncFnOnce(&mut Client, &Network, i64)) -> String {
        with_one_member(async |mut client, network| {
            let lease = client.lease_grant(3, None).await.expect("granted").id();
            then(&mut client, &network, lease).await;
            seen(open(client, LeaseId(lease), BOUND).await)
        })
    }

    #[test]
    fn an_opening_for_a_live_lease_gives_its_stream() {
        assert_eq!(opening_after(async |_, _, _| {}), "a stream");
    }

    /// etcd answers the first renewal of a lease it let go of with a TTL
    /// of 0, which etcd-client turns into a refusal: the lease is gone,
    /// not a stream to try again on another member.
    #[test]
    fn an_opening_for_a_lease_etcd_let_go_of_finds_it_gone() {
        let opened = opening_after(async |client, _, lease| {
            client.lease_revoke(lease).await.expect("revoked");
        });
        assert_eq!(opened, "the lease gone");
    }

    /// Any other refusal (here a member down; in a cluster without quorum,
    /// "no leader") says nothing of the lease: a failure, tried again, and
    /// the local deadline decides. Taken for the lease gone, it ended a
    /// leadership that a member coming back would have kept, and said
    /// etcd had let go of a lease it still held.
    #[test]
    fn an_opening_refused_otherwise_is_a_failure_not_the_lease_gone() {
        let opened = opening_after(async |_, network, _| {
            network.member_down(0, Duration::from_secs(10));
        });
        assert!(
            opened.starts_with("failed: opening the keep-alive stream: ")
                && !opened.contains("timed out"),
            "{opened}"
        );
    }
}
