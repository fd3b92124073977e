//! What a run holds in etcd, and giving it back.
//!
//! [`Session`] owns at most one election lease and at most one unspent
//! `--once-per` window lease. Every way out of a run ends with
//! [`Session::give_back`] (after a run, through [`Session::resign`]), so
//! nothing is left behind by forgetting a path: our queue key is deleted on
//! every path (with our lease, revoked, or, after a run, by the resignation
//! itself, the lease then left to expire if nothing else is on it), and a
//! window is given back on every path where the command did not start.

use std::time::Duration;

use anyhow::Result;
use etcd_client::TxnResponse;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clock;
use crate::election::handoff::Handoff;
use crate::election::name;
use crate::election::record::{self, Ended};
use crate::election::{Election, OwnKey, Successor};
use crate::etcd::ids::{LeaseId, Revision};
use crate::etcd::requests::revision_of;
use crate::etcd::Connection;
use crate::lease::Lease;
use crate::retry::CLEANUP;

/// What a run holds in etcd.
pub struct Session {
    connection: Connection,
    /// The election lease, when no state holds it: one the campaign let
    /// go of, or a leading run's, given back here to resign (the campaign
    /// and the leading run hold theirs in their states).
    lease: Option<Lease>,
    /// A claimed `--once-per` window whose command has not started.
    pub window: Option<LeaseId>,
    /// Who is behind us, looked up while the command runs, for the
    /// resignation to hand over to (`handoff`).
    successor: Option<JoinHandle<Option<Successor>>>,
    /// The run's watches (of our key, and of what was ahead of it), open
    /// until the session ends: see [`Session::after_run`].
    watching: Option<OwnKey>,
    handoff: Handoff,
}

/// What a resignation with the run's records did.
#[derive(Default)]
struct Resigned {
    /// Our key deleted, with the records, in one transaction.
    written: bool,
    /// The start record holds a run that wrote after our win.
    started_behind: bool,
    /// Nothing but our key was attached to the lease: it is left to expire.
    bare: bool,
}

impl Session {
    pub fn new(connection: Connection, handoff: Handoff) -> Session {
        Session {
            connection,
            handoff,
            lease: None,
            window: None,
            successor: None,
            watching: None,
        }
    }

    /// A lease the campaign let go of (it starts again, or ends): given
    /// back with the rest, before the next one is granted.
    pub fn hold(&mut self, lease: Lease) {
        self.lease = Some(lease);
    }

    /// A leading run's lease back, with the run's watches and the look-up
    /// of who is behind it, to resign with. The command started: its
    /// window stays used up.
    pub fn after_run(
        &mut self,
        lease: Lease,
        watches: OwnKey,
        successor: Option<JoinHandle<Option<Successor>>>,
        started: bool,
    ) {
        self.lease = Some(lease);
        // Ending a watch is work for etcd at once: just before the
        // resignation it would be done beside it, on the next leader's
        // path. Once leaderrun exits, its connection closes, and they end
        // with it.
        self.watching = Some(watches);
        self.successor = successor;
        if started {
            self.window = None;
        }
    }

    /// A new lease, after giving back whatever was held: the campaign's
    /// until it lets go of it, or wins and runs with it.
    pub async fn grant(&mut self, ttl: Duration) -> Result<Lease> {
        self.give_back().await;
        Lease::grant(&self.connection, ttl).await
    }

    /// Revokes what is held: the lease (deleting our candidate key, so the
    /// next in line takes over at once) and an unspent window (deleting its
    /// marker). Best effort, each within [`CLEANUP`]: what is left expires
    /// by itself.
    pub async fn give_back(&mut self) {
        let lease = self.lease.take().map(|lease| lease.revoke(CLEANUP));
        let window = self
            .window
            .take()
            .map(|id| self.connection.revoke(id, CLEANUP));
        tokio::join!(
            async {
                if let Some(revoke) = lease {
                    revoke.await;
                }
            },
            async {
                if let Some(revoke) = window {
                    revoke.await;
                }
            }
        );
    }

    /// Gives everything back after a run, with or then its records.
    ///
    /// With the run not lost, one transaction deletes our key and writes
    /// the end records, as a run still entitled to them (the record rule in
    /// `election::record`): one write, which the next in line wakes on with
    /// our records already in place, so that its own end records need no
    /// read either. If nothing but our key is attached to the lease, it is
    /// not revoked but left to expire, keyless, within its TTL, so that
    /// etcd's work on the next leader's path is that one write (as a lock's
    /// release is). A lease the command attached keys to (`LEADERRUN_LEASE`)
    /// is revoked at once, taking them with it.
    ///
    /// Otherwise (the run lost, the transaction refused or unanswered), the
    /// lease is revoked first and the records written after, as a run no
    /// longer entitled: only over records not written since our win.
    ///
    /// `answered` is told once the request the next leader waits on has
    /// its answer (or none came within its bound); at once if nobody is
    /// known to be behind us.
    pub async fn resign(&mut self, mut ended: Ended, election: &Election<'_>, answered: &Notify) {
        ended.settle_start().await;
        let entitled = ended.record.outcome != record::Outcome::Lost;
        let successor = self.successor(entitled).await;
        if successor.is_none() {
            // Nobody known behind us waits on this resignation: the
            // guardian's exit goes beside it, not after it.
            answered.notify_one();
        }
        let resigned = match self.lease.as_ref().filter(|_| entitled) {
            Some(lease) => {
                let resigned = self.with_records(lease, &ended, election, successor.as_ref());
                resigned.await
            }
            None => Resigned::default(),
        };
        answered.notify_one();
        if resigned.bare {
            // Dropped, it is renewed no more.
            self.lease = None;
        }
        self.give_back().await;
        answered.notify_one();
        if !resigned.written {
            ended.write(&self.connection, election.name).await;
        } else if resigned.started_behind {
            // The start record holds a run that wrote after our win: ours
            // replaces it if that run started before ours. Off the next
            // leader's path, after the resignation.
            ended.write_started(&self.connection, election.name).await;
        }
    }

    /// The resignation's transaction (our key deleted, the records
    /// written, a handover to `successor`), and whether the lease is left
    /// with nothing attached. Which it is, the lease's keys say, read beside
    /// the resignation; or, when it hands over to someone, after it, and
    /// only if etcd saw a write between our win and the resignation
    /// (`handoff::nothing_attached_since`).
    async fn with_records(
        &self,
        lease: &Lease,
        ended: &Ended,
        election: &Election<'_>,
        successor: Option<&Successor>,
    ) -> Resigned {
        let key = name::candidate_key(election.name, lease.id);
        let ours = (key.as_str(), ended.record.token, lease.id);
        let resigned = async {
            let response = election
                .resign_with(ours, ended.writes(election.name), successor)
                .await?;
            // Its revision, and whether the start record took our end.
            let written =
                |response: TxnResponse| (revision_of(&response), ended.wrote_started(&response));
            anyhow::Ok(response.map(written))
        };
        let resigned = clock::timeout(CLEANUP, resigned);
        let attached = clock::timeout(CLEANUP, self.connection.lease_keys(lease.id));
        // With someone handed over to, the read of the lease's keys waits
        // until it is on its way: beside the resignation it would be etcd's
        // work on its path. It is not made at all if the resignation shows
        // that nothing can have been attached. With nobody, it goes beside,
        // and the run ends a round trip sooner.
        let (resigned, attached, nothing_attached) = match successor {
            Some(_) => {
                let resigned = resigned.await;
                let revision = match &resigned {
                    Some(Ok(Some((revision, _)))) => Some(*revision),
                    _ => None,
                };
                let nothing_attached = revision.is_some_and(|revision| {
                    crate::election::handoff::nothing_attached_since(
                        ended.proven_at().0,
                        revision.0,
                    )
                });
                let read = revision.is_some() && !nothing_attached;
                let attached = if read { attached.await } else { None };
                (resigned, attached, nothing_attached)
            }
            None => {
                let (resigned, attached) = tokio::join!(resigned, attached);
                (resigned, attached, false)
            }
        };
        let outcome = Resigned {
            started_behind: matches!(resigned, Some(Ok(Some((_, false))))),
            written: written(resigned),
            bare: false,
        };
        tracing::trace!(written = outcome.written, "resigned with the run's records");
        if let Some(next) = successor.filter(|_| outcome.written) {
            tracing::debug!(
                event = crate::logging::events::HANDED_OVER,
                to = %next.key,
                "handed over (if it is still there)"
            );
        }
        let alone = |keys: &[Vec<u8>]| keys.iter().all(|attached| *attached == key.as_bytes());
        // The slow path revokes, always.
        let bare = outcome.written
            && self.handoff.fast()
            && (nothing_attached
                || match attached {
                    Some(Ok(Some(keys))) => alone(&keys),
                    Some(Ok(None)) => true,
                    _ => false,
                });
        tracing::trace!(bare, nothing_attached, "the lease's keys known");
        Resigned { bare, ..outcome }
    }

    /// The candidate behind us, once the look-up has answered (within
    /// `handoff::LOOK_BEHIND_WAIT`). Not wanted (the run lost, several
    /// runners), it is called off.
    async fn successor(&mut self, wanted: bool) -> Option<Successor> {
        let lookup = self.successor.take()?;
        crate::election::handoff::successor(lookup, wanted).await
    }
}

/// Whether the resignation was written, saying why not if it was not.
fn written(resigned: Option<Result<Option<(Revision, bool)>>>) -> bool {
    match resigned {
        Some(Ok(revision)) => revision.is_some(),
        Some(Err(err)) => {
            tracing::info!("resigning: {err:#}");
            false
        }
        None => {
            tracing::info!("resigning: no answer within {CLEANUP:?}");
            false
        }
    }
}
