//! What a run holds in etcd, and giving it back.
//!
//! [`Session`] owns at most one election lease and at most one claimed
//! `--once-per` window lease. Every way out of a run goes through
//! [`Session::leave`], which does what the protocol's way out
//! (`protocol::resign`) asks and feeds back what etcd answered, so nothing
//! is left behind by forgetting a path and nothing is decided here: our
//! queue key is deleted on every path (with our lease, revoked, or, after a
//! run, by the resignation itself, the lease then left to expire if nothing
//! else is on it), and a window is given back on every path where the
//! command did not start.

use std::time::Duration;

use anyhow::Result;
use etcd_client::TxnResponse;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clock;
use crate::election::handoff::Handoff;
use crate::election::name;
use crate::election::once_per::WindowClaim;
use crate::election::record::Ended;
use crate::election::{Election, OwnKey, Successor};
use crate::etcd::ids::LeaseId;
use crate::etcd::requests::revision_of;
use crate::etcd::Connection;
use crate::lease::Lease;
use crate::retry::CLEANUP;
use protocol::records::{Guard, Which};
use protocol::resign::{Effect, Fed, LeaseEnd, Leaving, Resignation, Resigned};

/// What a run holds in etcd.
pub struct Session {
    connection: Connection,
    /// The election lease, when no state holds it: one the campaign let
    /// go of, or a leading run's, given back here to resign (the campaign
    /// and the leading run hold theirs in their states).
    lease: Option<Lease>,
    /// A claimed `--once-per` window (the way out gives it back if its
    /// command never started: the protocol's rule).
    pub window: Option<LeaseId>,
    /// Our attempt at the `--once-per` window, claimed: it goes to the
    /// command's run, which marks it as it goes.
    pub window_claim: Option<WindowClaim>,
    /// The command started.
    started: bool,
    /// Who is behind us, looked up while the command runs, for the
    /// resignation to hand over to (`handoff`).
    successor: Option<JoinHandle<Option<Successor>>>,
    /// The run's watches (of our key, and of what was ahead of it), open
    /// until the session ends: see [`Session::after_run`].
    watching: Option<OwnKey>,
    handoff: Handoff,
}

impl Session {
    pub fn new(connection: Connection, handoff: Handoff) -> Session {
        Session {
            connection,
            handoff,
            lease: None,
            window: None,
            window_claim: None,
            started: false,
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
    /// of who is behind it, to resign with, and whether its command
    /// started.
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
        self.started = started;
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
        // An attempt claimed in a marker an earlier run opened stays
        // `claimed`, which spends nothing once our key is gone.
        self.window_claim = None;
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

    /// The way out: what the protocol's resignation (`protocol::resign`)
    /// asks, done with etcd, until it is over: the entitled resignation
    /// with the run's records (and a handover), the lease left bare or
    /// revoked, an unspent window given back, the records written as a
    /// run no longer entitled. `ended` is the run's, None for a campaign
    /// that ran nothing. `answered` is told whenever the protocol says the
    /// request the next leader waits on is answered (or nobody waits).
    pub async fn leave(
        &mut self,
        ended: Option<Ended>,
        election: &Election<'_>,
        answered: &Notify,
    ) {
        let leaving = Leaving {
            outcome: ended.as_ref().map(|ended| ended.record.outcome),
            started: self.started,
            lease: self.lease.is_some(),
            window: self.window.is_some(),
            fast: self.handoff.fast(),
            proven_at: ended.as_ref().map_or(0, |ended| ended.proven_at().0),
        };
        let mut way = Resignation::new(leaving);
        let mut effect = way.start();
        let mut performing = Performing {
            ended,
            successor: None,
            entitled: way.entitled(),
        };
        loop {
            let fed = match effect {
                Effect::Done => return,
                Effect::Answered => {
                    answered.notify_one();
                    Fed::Done
                }
                effect => self.perform(effect, &mut performing, election).await,
            };
            effect = match way.fed(fed) {
                Ok(next) => next,
                Err(unexpected) => {
                    // A defect of this driver: the lease and window go back
                    // as on any way out, and the error is said.
                    tracing::error!("{unexpected}");
                    debug_assert!(false, "{unexpected}");
                    self.give_back().await;
                    return;
                }
            };
        }
    }

    /// One effect of the way out, done, and what came of it.
    async fn perform(
        &mut self,
        effect: Effect,
        performing: &mut Performing,
        election: &Election<'_>,
    ) -> Fed {
        let Performing {
            ended,
            successor,
            entitled,
        } = performing;
        match (effect, ended.as_mut()) {
            (Effect::SettleStart, Some(ended)) => {
                Fed::StartSettled(ended.settle_start(*entitled).await.map(|at| at.0))
            }
            (Effect::FindSuccessor { wanted }, _) => {
                *successor = self.successor(wanted).await;
                Fed::Successor(successor.is_some())
            }
            (
                Effect::Resign {
                    while_ours,
                    writes,
                    hand_over,
                    read_attached,
                },
                Some(ended),
            ) => {
                let to = successor.as_ref().filter(|_| hand_over);
                let resign = Resign {
                    while_ours,
                    writes: &writes,
                    successor: to,
                    read_attached,
                };
                Fed::Resigned(self.resign(resign, ended, election).await)
            }
            (Effect::ReadAttached, _) => Fed::Attached(self.read_attached(election).await),
            (Effect::GiveBack { lease, window }, _) => {
                self.give_back_as(lease, window).await;
                Fed::Done
            }
            (Effect::WriteUnentitled { writes }, Some(ended)) => {
                ended
                    .write_unentitled(&self.connection, election.name, writes)
                    .await;
                Fed::Done
            }
            (Effect::WriteStarted, Some(ended)) => {
                ended.write_started(&self.connection, election.name).await;
                Fed::Done
            }
            // Asked of a way out with no run's records: the protocol's
            // defect, answered as not done (the next effect it gives is
            // then an error, or gives back).
            (
                Effect::SettleStart
                | Effect::Resign { .. }
                | Effect::WriteUnentitled { .. }
                | Effect::WriteStarted,
                None,
            ) => Fed::Done,
            (Effect::Answered | Effect::Done, _) => Fed::Done,
        }
    }

    /// The resignation's transaction (our key deleted, the records
    /// written, a handover to `successor`), with the read of the lease's
    /// keys beside it if asked.
    async fn resign(
        &self,
        resign: Resign<'_>,
        ended: &Ended,
        election: &Election<'_>,
    ) -> Option<Resigned> {
        let lease = self.lease.as_ref()?;
        let key = name::candidate_key(election.name, lease.id);
        let ours = (key.as_str(), ended.record.token, lease.id);
        let writes = ended.writes(election.name, resign.writes);
        let transaction = async {
            let response = election
                .resign_with(ours, resign.while_ours, writes, resign.successor)
                .await?;
            // Its revision, and whether the start record took our end.
            let written =
                |response: TxnResponse| (revision_of(&response), ended.wrote_started(&response));
            anyhow::Ok(response.map(written))
        };
        let transaction = clock::timeout(CLEANUP, transaction);
        let (answer, alone) = match resign.read_attached {
            true => tokio::join!(transaction, self.alone(&key, lease.id)),
            false => (transaction.await, None),
        };
        let answer = match answer {
            Some(Ok(answer)) => answer,
            Some(Err(err)) => {
                tracing::info!("resigning: {err:#}");
                return None;
            }
            None => {
                tracing::info!("resigning: no answer within {CLEANUP:?}");
                return None;
            }
        };
        tracing::trace!(
            written = answer.is_some(),
            "resigned with the run's records"
        );
        if let Some(next) = resign.successor.filter(|_| answer.is_some()) {
            tracing::debug!(
                event = crate::logging::events::HANDED_OVER,
                to = %next.key,
                "handed over (if it is still there)"
            );
        }
        Some(Resigned {
            written: answer.map(|(revision, _)| revision.0),
            started_behind: answer.is_some_and(|(_, started)| !started),
            alone,
        })
    }

    /// Whether our key is the only key attached to our lease.
    async fn read_attached(&self, election: &Election<'_>) -> Option<bool> {
        let lease = self.lease.as_ref()?;
        let key = name::candidate_key(election.name, lease.id);
        self.alone(&key, lease.id).await
    }

    /// Whether `key` is the only key attached to lease `id` (a lease
    /// gone has none), read within [`CLEANUP`]; None with no answer.
    async fn alone(&self, key: &str, id: LeaseId) -> Option<bool> {
        match clock::timeout(CLEANUP, self.connection.lease_keys(id)).await {
            Some(Ok(Some(keys))) => Some(keys.iter().all(|attached| *attached == key.as_bytes())),
            Some(Ok(None)) => Some(true),
            Some(Err(_)) | None => None,
        }
    }

    /// Gives back as the way out says: the lease revoked or left bare (it
    /// is dropped, and renewed no more), the window revoked.
    async fn give_back_as(&mut self, lease: LeaseEnd, window: bool) {
        match lease {
            LeaseEnd::LeaveBare => self.lease = None,
            LeaseEnd::Revoke | LeaseEnd::None => {}
        }
        if !window {
            self.window = None;
        }
        self.give_back().await;
    }

    /// The candidate behind us, once the look-up has answered (within
    /// `handoff::LOOK_BEHIND_WAIT`). Not wanted (the run lost, several
    /// runners), it is called off.
    async fn successor(&mut self, wanted: bool) -> Option<Successor> {
        let lookup = self.successor.take()?;
        crate::election::handoff::successor(lookup, wanted).await
    }
}

/// What the way out carries between its effects.
struct Performing {
    /// The run's records, if a run ended.
    ended: Option<Ended>,
    /// Who is behind us, if found.
    successor: Option<Successor>,
    /// The way out asks for the entitled resignation
    /// (`Resignation::entitled`): a start record still being written is
    /// not waited for ([`Ended::settle_start`]).
    entitled: bool,
}

/// The resignation's transaction, as the protocol asked for it.
struct Resign<'a> {
    while_ours: bool,
    writes: &'a [(Which, Guard)],
    successor: Option<&'a Successor>,
    read_attached: bool,
}
