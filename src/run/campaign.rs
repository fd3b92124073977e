//! Campaigning: the state of a run before its command exists, from
//! dialling to a proven win with the guardian started and the `--once-per`
//! window claimed.
//!
//! [`Campaigning`] carries what the campaign has so far: its protocol's
//! state (`protocol::campaign`: the phase, what it has learnt, the pace of
//! its retries), our place in line, the proof once we have it, the
//! guardian, and the watch of our key. Each phase's work
//! ([`Campaigning::work`]) is one step that ends in an event for the
//! protocol: done, or why not. It never looks at signals or the user's
//! deadline: the run's loop races the step against them and drops it,
//! which cancels whatever request is in flight. What the run holds in etcd
//! is in the [`Session`], outside the campaign, so it still knows what to
//! give back.
//!
//! The guardian comes to the campaign already started (see `run`), so that
//! it is ready when our turn comes; the campaign starts it only if that
//! failed, once the win is proven.

use anyhow::Result;

use super::session::Session;
use super::Config;
use crate::child::guard::Guard;
use crate::clock;
use crate::election::holder::{self, Holder};
use crate::election::once_per::{self, Claim, Marker};
use crate::election::{
    Attempt, Candidate, Election, KeyLoss, Leader, Leadership, OwnKey, PlaceLost, Queued, Turn,
};
use crate::error;
use crate::etcd::connection::NoSpace;
use crate::etcd::ids::{LeaseId, Revision};
use crate::etcd::Connection;
use crate::lease::Lease;
use crate::logging;
use crate::protocol::campaign::Campaign;
use crate::protocol::schedule::{KillSchedule, LeaseView, StartVerdict};
use crate::protocol::table::{CampaignEvent, CampaignPhase, Trouble};
use crate::retry;

/// A run before its command exists.
pub struct Campaigning<'a> {
    config: &'a Config,
    connection: &'a Connection,
    /// The protocol's part: the phase, and what decides what comes next.
    pub core: Campaign,
    /// Who we say we are in this attempt (its start time set as it began).
    holder: Holder,
    /// The guardian, started before the campaign (None if that failed).
    guard: Option<Guard>,
    /// Our place in line, once joined (with --wait, or several runners).
    candidate: Option<Candidate>,
    /// The watch of our key, kept from the queue into the run.
    own: Option<OwnKey>,
    /// The proof of our win, once we have it.
    leadership: Option<Leadership>,
    /// Whoever leads, as the last attempt without --wait found them.
    pub held_by: Option<Leader>,
    /// The `--once-per` window's marker, when it already had its run.
    pub window_taken: Option<Marker>,
    /// The error behind the last setback, for the line that says it.
    pub error: Option<anyhow::Error>,
}

/// A proven win, ready to run: what a leading run starts from.
pub struct Won {
    pub leadership: Leadership,
    pub guard: Guard,
    /// The watch of our key: the campaign's if it queued.
    pub own: OwnKey,
    pub lease: Lease,
}

impl<'a> Campaigning<'a> {
    pub fn new(config: &'a Config, connection: &'a Connection, guard: Option<Guard>) -> Self {
        Campaigning {
            config,
            connection,
            core: Campaign::new(
                config.wait,
                config.max_running == 1,
                config
                    .wait_timeout
                    .map(|timeout| clock::Instant::now() + timeout),
                retry::seed(),
            ),
            holder: config.holder.clone(),
            guard,
            candidate: None,
            own: None,
            leadership: None,
            held_by: None,
            window_taken: None,
            error: None,
        }
    }

    pub fn connection(&self) -> &'a Connection {
        self.connection
    }

    /// The guardian back, for a run that ends before its command.
    pub fn take_guard(&mut self) -> Option<Guard> {
        self.guard.take()
    }

    /// The win, once Claiming has claimed it: the lease moves from the
    /// session into the leading run, which holds it until it resigns.
    pub fn won(&mut self, session: &mut Session) -> Option<Won> {
        let leadership = self.leadership.take()?;
        let guard = self.guard.take()?;
        let lease = session.take_lease()?;
        let own = self.own.take().unwrap_or_else(|| OwnKey::of(&leadership));
        Some(Won {
            leadership,
            guard,
            own,
            lease,
        })
    }

    /// Back to the start, with a new lease: our place and proof are gone.
    pub fn again(&mut self) {
        self.candidate = None;
        self.own = None;
        self.leadership = None;
    }

    /// The work of the current phase, as one event.
    pub async fn work(&mut self, session: &mut Session) -> CampaignEvent {
        let step = match self.core.phase() {
            CampaignPhase::Dialling => Ok(CampaignEvent::Dialled),
            CampaignPhase::Granting => self.grant(session).await,
            CampaignPhase::Joining => self.join(session).await,
            CampaignPhase::Waiting => self.wait(session).await,
            CampaignPhase::Proving => self.prove(session).await,
            CampaignPhase::Claiming => self.claim(session).await,
        };
        step.unwrap_or_else(|err| {
            let event = CampaignEvent::Etcd(trouble(&err));
            self.error = Some(err);
            event
        })
    }

    fn election(&self) -> Election<'a> {
        Election::new(
            self.connection,
            &self.config.election,
            self.config.max_running,
        )
    }

    async fn grant(&mut self, session: &mut Session) -> Result<CampaignEvent> {
        self.holder = Holder {
            started: holder::now_rfc3339(),
            ..self.config.holder.clone()
        };
        let lease = session.grant(self.config.ttl).await?;
        tracing::debug!(ttl = ?lease.ttl, "granted TTL");
        Ok(CampaignEvent::Granted)
    }

    /// Without --wait: lead now, or learn who does. With it: join the
    /// queue, proven at once if nobody is ahead.
    async fn join(&mut self, session: &mut Session) -> Result<CampaignEvent> {
        let lease = session.lease().map(|lease| lease.id).unwrap_or_default();
        let election = self.election();
        if !self.config.wait {
            return Ok(match election.try_acquire(lease, &self.holder).await? {
                Attempt::Won(leadership) => {
                    self.leadership = Some(leadership);
                    CampaignEvent::Proven
                }
                Attempt::Held(leader) => {
                    self.held_by = leader;
                    CampaignEvent::Held
                }
                Attempt::Vanished => key_gone(),
            });
        }
        let Queued {
            candidate,
            runners,
            proven_at,
        } = election.enqueue(lease, &self.holder, None).await?;
        self.own = Some(OwnKey::new(
            &candidate.key,
            candidate.token,
            lease,
            Revision::default(),
        ));
        let event = match proven_at {
            Some(revision) => {
                self.leadership = Some(self.proof(&candidate, lease, revision));
                CampaignEvent::Proven
            }
            None => {
                if let Some(leader) = runners.first() {
                    tracing::info!("waiting: {} leads", leader.describe());
                }
                CampaignEvent::Queued
            }
        };
        self.candidate = Some(candidate);
        Ok(event)
    }

    /// The proof a read gave: our key, with its create revision and our
    /// lease, among the first --max-running in line, at `revision`.
    fn proof(&self, candidate: &Candidate, lease: LeaseId, revision: Revision) -> Leadership {
        Leadership {
            name: self.config.election.clone(),
            key: candidate.key.clone(),
            lease,
            token: candidate.token,
            proven_at: revision,
        }
    }

    /// Waits for our turn in line.
    async fn wait(&mut self, session: &mut Session) -> Result<CampaignEvent> {
        let (Some(candidate), Some(lease)) = (&self.candidate, session.lease()) else {
            return Ok(key_gone());
        };
        let own = self.own.get_or_insert_with(|| {
            OwnKey::new(
                &candidate.key,
                candidate.token,
                lease.id,
                Revision::default(),
            )
        });
        let election = Election::new(
            self.connection,
            &self.config.election,
            self.config.max_running,
        );
        let turn = election
            .wait_for_turn(
                self.config.handoff,
                candidate,
                lease.id,
                &mut lease.watch(),
                own,
            )
            .await;
        Ok(match turn {
            Turn::Ours(revision) => {
                tracing::trace!(revision = revision.0, "proven");
                let leadership = self.proof(candidate, lease.id, revision);
                self.leadership = Some(leadership);
                CampaignEvent::Proven
            }
            Turn::Gone(lost) => CampaignEvent::PlaceLost(lost),
            Turn::Failed(err) => return Err(err),
        })
    }

    /// With several runners, a waiter's turn is proven again by a
    /// transaction that also rewrites our key, with the time we started:
    /// the waiter behind wakes on that rewrite (see `wait_for_turn`).
    async fn prove(&mut self, session: &mut Session) -> Result<CampaignEvent> {
        let (Some(candidate), Some(lease)) = (&self.candidate, session.lease()) else {
            return Ok(key_gone());
        };
        let holder = Holder {
            started: holder::now_rfc3339(),
            ..self.holder.clone()
        };
        Ok(
            match self.election().prove(candidate, lease.id, &holder).await? {
                Some(leadership) => {
                    self.leadership = Some(leadership);
                    CampaignEvent::Proven
                }
                // A phantom win: our key is gone.
                None => key_gone(),
            },
        )
    }

    /// Starts the guardian (unless it is ready, as it almost always is), then
    /// claims the window: in that order, so that a guardian that cannot
    /// start never uses up a window.
    async fn claim(&mut self, session: &mut Session) -> Result<CampaignEvent> {
        let (Some(leadership), Some(lease)) = (&self.leadership, session.lease()) else {
            return Ok(key_gone());
        };
        // A proof says we were first at its revision; it is good for running
        // only while our lease is sure to be alive. A waiter stopped or
        // starved past its lease's local deadline can learn of its turn
        // only on waking (a handover, above all, may be old news by then):
        // its key may be gone and the next one running. It must not start
        // a command it would have to kill at once.
        let schedule = KillSchedule::new(lease.ttl, self.config.kill_after);
        let state = lease.state();
        let view = LeaseView {
            expires: state.expires,
            gone: state.gone,
        };
        match schedule.may_start(view, clock::Instant::now()) {
            StartVerdict::Sure => {}
            StartVerdict::LeaseGone => return Ok(CampaignEvent::PlaceLost(PlaceLost::LeaseGone)),
            StartVerdict::Unsure => return Ok(CampaignEvent::PlaceLost(PlaceLost::Unsure)),
        }
        match self.guard.take().map_or_else(Guard::start, Ok) {
            Ok(guard) => self.guard = Some(guard),
            Err(err) => {
                self.error = Some(anyhow::anyhow!("starting the guardian process: {err}"));
                return Ok(CampaignEvent::GuardianFailed);
            }
        }
        // "leader" only once nothing can keep the command from starting: a
        // proof refused above, or a replica refused by the window, must not
        // seem to have led.
        let Some(window) = self.config.once_per else {
            tracing::info!(event = logging::events::LEADER, token = leadership.token.0, key = %leadership.key, "leader");
            return Ok(CampaignEvent::Claimed);
        };
        let claim = once_per::claim(
            self.connection,
            leadership,
            window,
            &self.holder,
            &mut session.window,
        );
        Ok(match claim.await? {
            Claim::Ours => {
                tracing::info!(event = logging::events::LEADER, token = leadership.token.0, key = %leadership.key, "leader");
                tracing::info!(
                    "this run opens a --once-per {} window",
                    humantime::format_duration(window)
                );
                CampaignEvent::Claimed
            }
            Claim::Taken(marker) => {
                self.window_taken = Some(marker);
                CampaignEvent::WindowTaken
            }
            Claim::LeadershipLost => key_gone(),
        })
    }
}

/// Our key vanished on the way to leading.
fn key_gone() -> CampaignEvent {
    CampaignEvent::PlaceLost(PlaceLost::Key(KeyLoss::Deleted))
}

/// What kind of failure an etcd error is, for the table.
fn trouble(err: &anyhow::Error) -> Trouble {
    if error::is_final(err) {
        Trouble::Refused
    } else if error::find::<NoSpace>(err).is_some() {
        Trouble::Full
    } else {
        Trouble::Outage
    }
}

/// The line for a setback the campaign rides out or starts again from.
pub fn describe(event: &CampaignEvent, error: Option<&anyhow::Error>) -> String {
    match (event, error) {
        (_, Some(err)) => format!("{err:#}"),
        (CampaignEvent::PlaceLost(lost), None) => lost.to_string(),
        (event, None) => format!("{event:?}"),
    }
}
