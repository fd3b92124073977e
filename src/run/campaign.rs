//! Campaigning: the work of a run before its command exists, from
//! dialling to a proven win with the guardian started and the `--once-per`
//! window claimed.
//!
//! The campaign's state is the protocol's (`protocol::campaign`, holding
//! [`Etcd`]'s things: the granted lease, our place in line with its
//! watch, the proof): each phase holds what its work needs. The
//! [`Campaigner`] does the work each phase asks for ([`Campaigner::work`]),
//! one step that ends in an event for the protocol, done (with what it
//! gained) or why not, and keeps what the run's lines need to say (who
//! leads, the window's marker, the error behind a setback). It never
//! looks at signals or the user's deadline: the run's loop races the step
//! against them and drops it, which cancels whatever request is in flight.
//! A lease the campaign lets go of goes to the [`Session`], which gives it
//! back.
//!
//! The guardian comes to the campaign already started (see `run`), so that
//! it is ready when our turn comes; the campaign starts it only if that
//! failed, once the win is proven.

use anyhow::Result;

use super::session::Session;
use super::Config;
use crate::clock;
use crate::clock::Now;
use crate::election::holder::{self, Holder};
use crate::election::once_per::{self, Claim, Marker};
use crate::election::pause::{self, PauseSeen, Paused};
use crate::election::{
    Attempt, Candidate, Disagreement, Election, Joined, KeyLoss, Leader, Leadership, OwnKey,
    PlaceLost, Queued, Turn,
};
use crate::error;
use crate::etcd::connection::Failure;
use crate::etcd::ids::{LeaseId, Revision, Token};
use crate::etcd::Connection;
use crate::host::Guard;
use crate::lease::Lease;
use crate::logging;
use crate::retry;
use protocol::campaign::{self, Join, Rules, Work};
use protocol::schedule::LeaseView;
use protocol::stage::{self, ClaimStep, Holds};
use protocol::table::{CampaignEvent, Trouble};

/// What a run's campaign holds: etcd's.
pub struct Etcd;

impl Holds for Etcd {
    type Lease = Lease;
    type Place = InLine;
    type Proof = Leadership;
    type Guard = Guard;
}

/// The protocol's campaign, holding etcd's things.
pub type Campaign = campaign::Campaign<Etcd>;

/// What happened to a campaign, with what its work gained.
pub type Event = CampaignEvent<Etcd>;

/// Our key in line (with --wait), and the watch of it, kept from the
/// queue into the run.
pub struct InLine {
    candidate: Candidate,
    own: OwnKey,
}

/// A new campaign, about to dial.
pub fn start(config: &Config) -> Campaign {
    let rules = Rules {
        wait: config.wait,
        single: config.max_running == 1,
        once_per: config.once_per.is_some(),
        kill_after: config.kill_after,
    };
    Campaign::new(
        rules,
        config
            .wait_timeout
            .map(|timeout| clock::Instant::now() + timeout),
        retry::seed(),
    )
}

/// Does a campaign's work, and keeps what its lines need.
pub struct Campaigner<'a> {
    config: &'a Config,
    connection: &'a Connection,
    /// Who we say we are in this attempt (its start time set as it began).
    holder: Holder,
    /// The guardian, started before the campaign (None if that failed);
    /// it goes to the win as it is claimed.
    guard: Option<Guard>,
    /// Whoever leads, as the last attempt without --wait found them.
    pub held_by: Option<Leader>,
    /// Who led as we last joined the line (--wait), as said.
    pub queued_behind: Option<String>,
    /// Our key's create revision as we last joined the line.
    pub queued_as: Option<Token>,
    /// What the queue watches ahead of us, as it changes (`run::waiting`
    /// reads the line again on it).
    pub watching: tokio::sync::watch::Sender<Option<Vec<u8>>>,
    /// The `--once-per` window's marker, when it already had its run.
    pub window_taken: Option<Marker>,
    /// The election's pause, while one was last found standing.
    pub paused: Option<Paused>,
    /// The pause as the proof of our turn found it (the write that won,
    /// the read that found the turn, a handover written with none
    /// standing), at the proof's revision: the claim then reads nothing.
    pause_seen: Option<PauseSeen>,
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

impl From<stage::Won<Etcd>> for Won {
    fn from(won: stage::Won<Etcd>) -> Won {
        let stage::Won {
            lease,
            place,
            proof,
            guard,
        } = won;
        let own = match place {
            Some(place) => place.own,
            None => OwnKey::of(&proof),
        };
        Won {
            leadership: proof,
            guard,
            own,
            lease,
        }
    }
}

impl<'a> Campaigner<'a> {
    pub fn new(config: &'a Config, connection: &'a Connection, guard: Option<Guard>) -> Self {
        Campaigner {
            config,
            connection,
            holder: config.holder.clone(),
            guard,
            held_by: None,
            queued_behind: None,
            queued_as: None,
            watching: tokio::sync::watch::Sender::new(None),
            window_taken: None,
            paused: None,
            pause_seen: None,
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

    /// The work a phase asks for, as one event.
    pub async fn work(&mut self, work: Work<'_, Etcd>, session: &mut Session) -> Event {
        let step = match work {
            Work::Dial => Ok(CampaignEvent::Dialled),
            Work::Grant => self.grant(session).await,
            Work::Join { lease, how } => self.join(lease, how).await,
            Work::Wait { lease, place } => self.wait(lease, place).await,
            Work::Prove { lease, place } => self.prove(lease, place).await,
            Work::AwaitResume => self.await_resume(session).await,
            Work::Claim { lease, proof, step } => self.claim(lease, proof, step, session).await,
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

    async fn grant(&mut self, session: &mut Session) -> Result<Event> {
        self.holder = Holder {
            started: holder::now_rfc3339(),
            ..self.config.holder.clone()
        };
        let lease = session.grant(self.config.ttl).await?;
        tracing::debug!(ttl = ?lease.ttl, "granted TTL");
        Ok(CampaignEvent::Granted(lease))
    }

    /// Tried (without --wait): lead now, or learn who does. Enqueued
    /// (with it): join the queue, proven at once if nobody is ahead.
    async fn join(&mut self, lease: &Lease, how: Join) -> Result<Event> {
        let election = self.election();
        if how == Join::Try {
            return Ok(match election.try_acquire(lease.id, &self.holder).await? {
                Attempt::Won(leadership) => {
                    self.pause_seen = Some(PauseSeen {
                        at: leadership.proven_at,
                        paused: None,
                    });
                    CampaignEvent::Proven(leadership)
                }
                Attempt::Paused(paused) => self.found_paused(paused),
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
        } = match election.enqueue(lease.id, &self.holder, None).await? {
            Joined::Queued(queued) => queued,
            Joined::Paused(paused) => return Ok(self.found_paused(paused)),
        };
        // The join's write compared the pause away, at the proof's revision.
        self.pause_seen = proven_at.map(|at| PauseSeen { at, paused: None });
        let own = OwnKey::new(
            &candidate.key,
            candidate.token,
            lease.id,
            Revision::default(),
        );
        Ok(match proven_at {
            Some(revision) => {
                let proof = self.proof(&candidate, lease.id, revision);
                CampaignEvent::FirstInLine(InLine { candidate, own }, proof)
            }
            None => {
                // Said by the wait shown (`waiting`), with -v or on a
                // terminal.
                self.queued_behind = runners.first().map(|leader| leader.describe());
                self.queued_as = Some(candidate.token);
                CampaignEvent::Queued(InLine { candidate, own })
            }
        })
    }

    /// A pause found standing: said by the way out (without --wait) or
    /// by the wait for its end.
    fn found_paused(&mut self, paused: Paused) -> Event {
        self.paused = Some(paused);
        CampaignEvent::Paused
    }

    /// Waits until the election's pause ends, showing it as the wait in
    /// line is shown (`waiting`): what the campaign let go of given back
    /// first (our place in line, with its lease), so that no key of ours
    /// stands in line through the pause.
    async fn await_resume(&mut self, session: &mut Session) -> Result<Event> {
        session.give_back().await;
        let election = &self.config.election;
        let mut shown = super::waiting::PauseShown::new(self.config.wait_shown, election);
        let last = &mut self.paused;
        pause::wait_out(self.connection, election, |paused| {
            shown.seen(paused);
            *last = Some(paused.clone());
        })
        .await?;
        self.paused = None;
        Ok(CampaignEvent::Resumed)
    }

    /// The claim's pause step: as the proof found the pause, if it did
    /// (at its revision); else read now (a handover by an older leader,
    /// which did not compare it).
    async fn check_pause(&mut self, leadership: &Leadership) -> Result<Event> {
        let seen = self
            .pause_seen
            .take()
            .filter(|seen| seen.at == leadership.proven_at);
        let paused = match seen {
            Some(seen) => seen.paused,
            None => pause::read(self.connection, &self.config.election).await?,
        };
        Ok(match paused {
            Some(paused) => self.found_paused(paused),
            None => {
                self.paused = None;
                CampaignEvent::Unpaused
            }
        })
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
    async fn wait(&mut self, lease: &Lease, place: &mut InLine) -> Result<Event> {
        let turn = self
            .election()
            .wait_for_turn(
                self.config.handoff,
                &place.candidate,
                lease.id,
                &mut lease.watch(),
                &mut place.own,
                &self.watching,
            )
            .await;
        Ok(match turn {
            Turn::Ours(revision) => {
                tracing::trace!(revision = revision.0, "proven");
                self.pause_seen = place.own.pause_seen.take();
                CampaignEvent::Proven(self.proof(&place.candidate, lease.id, revision))
            }
            Turn::Gone(lost) => CampaignEvent::PlaceLost(lost),
            Turn::Failed(err) => return Err(err),
        })
    }

    /// With several runners, a waiter's turn is proven again by a
    /// transaction that also rewrites our key, with the time we started:
    /// the waiter behind wakes on that rewrite (see `wait_for_turn`).
    async fn prove(&mut self, lease: &Lease, place: &InLine) -> Result<Event> {
        let holder = Holder {
            started: holder::now_rfc3339(),
            ..self.holder.clone()
        };
        Ok(
            match self
                .election()
                .prove(&place.candidate, lease.id, &holder)
                .await?
            {
                Some((leadership, seen)) => {
                    self.pause_seen = Some(seen);
                    CampaignEvent::Proven(leadership)
                }
                // A phantom win: our key is gone.
                None => key_gone(),
            },
        )
    }

    /// A step of the claim, as the protocol orders them
    /// (`protocol::stage::ClaimStep`): the lease as it stands, for the
    /// re-check; the guardian ready; the --once-per window; the guardian
    /// handed over. The guardian stays here until then: if a signal or a
    /// setback ends the claim, it goes back with the rest
    /// ([`Campaigner::take_guard`]).
    async fn claim(
        &mut self,
        lease: &Lease,
        leadership: &Leadership,
        step: ClaimStep,
        session: &mut Session,
    ) -> Result<Event> {
        Ok(match step {
            ClaimStep::Precheck | ClaimStep::Recheck => {
                let state = lease.state();
                let view = LeaseView {
                    expires: state.expires,
                    gone: state.gone,
                };
                CampaignEvent::LeaseSeen {
                    view,
                    ttl: lease.ttl,
                }
            }
            ClaimStep::Guard => match self.guard.take().map_or_else(Guard::start, Ok) {
                Ok(guard) => {
                    self.guard = Some(guard);
                    CampaignEvent::GuardReady
                }
                Err(err) => {
                    self.error = Some(anyhow::anyhow!("starting the guardian process: {err}"));
                    CampaignEvent::GuardianFailed
                }
            },
            ClaimStep::Pause => self.check_pause(leadership).await?,
            ClaimStep::Window => self.claim_window(leadership, session).await?,
            // "leader" only once nothing can keep the command from
            // starting: a proof refused, or a replica refused by the
            // window, must not seem to have led.
            ClaimStep::Start => match self.guard.take() {
                Some(guard) => {
                    tracing::info!(event = logging::events::LEADER, token = leadership.token.0, key = %leadership.key, "leader");
                    CampaignEvent::Claimed(guard)
                }
                None => {
                    self.error = Some(anyhow::anyhow!("the guardian process is gone"));
                    CampaignEvent::GuardianFailed
                }
            },
        })
    }

    /// The --once-per window: ours, or already had its run.
    async fn claim_window(
        &mut self,
        leadership: &Leadership,
        session: &mut Session,
    ) -> Result<Event> {
        let Some(window) = self.config.once_per else {
            // The protocol asks for a window only with --once-per.
            anyhow::bail!("a --once-per window claimed without --once-per");
        };
        let ask = once_per::Ask {
            window,
            attempts: self.config.once_per_attempts,
            runners: self.config.max_running,
        };
        let claim = once_per::claim(
            self.connection,
            leadership,
            ask,
            &self.holder,
            &mut session.window,
        );
        Ok(match claim.await? {
            Claim::Ours(claim) => {
                if session.window.is_some() {
                    tracing::info!(
                        "this run opens a --once-per {} window",
                        humantime::format_duration(window)
                    );
                }
                session.window_claim = Some(claim);
                super::hooks::stop_if_asked("window-claimed");
                CampaignEvent::WindowClaimed
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
fn key_gone() -> Event {
    CampaignEvent::PlaceLost(PlaceLost::Key(KeyLoss::Deleted))
}

/// What kind of failure an error of the campaign's work is, for the
/// table: every kind of failure the etcd layer raises, matched (a new
/// kind stops the compiler here), and replicas that disagree on a setting
/// that must be the same on all of them, which no retry changes.
fn trouble(err: &anyhow::Error) -> Trouble {
    if error::find::<Disagreement>(err).is_some() {
        return Trouble::Refused;
    }
    match Failure::of(err) {
        Some(Failure::Refused) => Trouble::Refused,
        Some(Failure::Full) => Trouble::Full,
        Some(Failure::Answered | Failure::Unreachable) => Trouble::Outage,
        // Raised outside the etcd layer: a bound of the campaign's own that
        // ran out, or an answer that lacks what it must hold. Ridden out as
        // an outage, as the request it came of would be.
        None => Trouble::Outage,
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

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::loss::PlaceLost;

    #[test]
    fn a_setback_is_told_by_its_error_or_else_by_what_was_lost() {
        let err = anyhow::anyhow!("no endpoint answered").context("joining the queue");
        let outage = CampaignEvent::Etcd(Trouble::Outage);
        assert_eq!(
            describe(&outage, Some(&err)),
            "joining the queue: no endpoint answered"
        );
        let lost = CampaignEvent::PlaceLost(PlaceLost::LeaseGone);
        assert_eq!(describe(&lost, None), PlaceLost::LeaseGone.to_string());
        assert_eq!(describe(&outage, None), "Etcd(Outage)");
    }
}
