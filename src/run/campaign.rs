//! Campaigning: every phase before the command exists, from dialling to a
//! proven win with the guardian started and the `--once-per` window
//! claimed.
//!
//! [`Session`] owns what a run holds in etcd: at most one election lease
//! and at most one unspent window lease. Every way out of a run ends with
//! [`Session::give_back`] (after a run, through [`Session::resign`]), so
//! nothing is left behind by forgetting a path: our queue key is deleted on
//! every path (with our lease, revoked, or, after a run, by the
//! resignation itself, the lease then left to expire if nothing else is on
//! it), and a window is given back on every path where the command did not
//! start.
//!
//! The guardian comes to the campaign already started (see `run`), so that
//! it is ready when our turn comes; the campaign starts it only if that
//! failed, once the win is proven.
//!
//! The campaign itself never looks at signals or the user's deadline: the
//! caller races it against them and drops it, which cancels whatever request
//! is in flight. The session is outside the campaign, so it still knows what
//! to give back.

use std::cell::Cell;
use std::time::Duration;

use anyhow::Result;
use etcd_client::TxnResponse;
use tokio::task::JoinHandle;

use super::phase::{decide, Action, Event, Phase, Policy};
use super::schedule::KillSchedule;
use super::Config;
use crate::child::guard::Guard;
use crate::clock;
use crate::election::holder::{self, Behind, Holder};
use crate::election::name;
use crate::election::once_per::{self, Claim, Marker};
use crate::election::record::{self, Ended};
use crate::election::{
    Attempt, Election, KeyLoss, Leader, Leadership, OwnKey, PlaceLost, Queued, Successor, Turn,
};
use crate::etcd::connection::{Connection, NoSpace};
use crate::etcd::requests::revision_of;
use crate::exit;
use crate::lease::Lease;
use crate::logging;
use crate::retry::CLEANUP;
use crate::retry::{self, Backoff};

/// What a run holds in etcd.
pub struct Session {
    connection: Connection,
    lease: Option<Lease>,
    /// A claimed `--once-per` window whose command has not started.
    window: Option<i64>,
    /// Who is behind us, looked up while the command runs
    /// ([`look_behind`]), for the resignation to hand over to.
    successor: Option<JoinHandle<Option<Successor>>>,
    /// The run's watches (of our key, and of what was ahead of it), open
    /// until the session ends: see [`Session::keep_watching`].
    watching: Option<OwnKey>,
}

impl Session {
    pub fn new(connection: Connection) -> Session {
        Session {
            connection,
            lease: None,
            window: None,
            successor: None,
            watching: None,
        }
    }

    /// Keeps the run's watches open until the session ends, after the
    /// resignation. Ending a watch is work for etcd at once: just before
    /// the resignation it would be done beside it, on the next leader's
    /// path. Once leaderrun exits, its connection closes, and they end
    /// with it.
    pub fn keep_watching(&mut self, watches: Option<OwnKey>) {
        self.watching = watches;
    }

    /// The look-up of who is behind us ([`look_behind`]), for the
    /// resignation.
    pub fn expect_successor(&mut self, lookup: Option<JoinHandle<Option<Successor>>>) {
        self.successor = lookup;
    }

    /// The candidate behind us, once the look-up has answered (within
    /// [`LOOK_BEHIND_WAIT`]). A command shorter than a round trip (a chain
    /// of `sleep 0`) ends before the answer is in. Not wanted (the run
    /// lost, several runners), it is called off.
    async fn successor(&mut self, wanted: bool) -> Option<Successor> {
        let mut lookup = self.successor.take()?;
        if !wanted {
            lookup.abort();
            return None;
        }
        match clock::timeout(LOOK_BEHIND_WAIT, &mut lookup).await {
            Some(answer) => answer.ok().flatten(),
            None => {
                lookup.abort();
                tracing::debug!("looking behind us: no answer in time; nobody to hand over to");
                None
            }
        }
    }

    /// The election lease. Only called once we lead, which needs one.
    pub fn lease(&self) -> &Lease {
        self.lease.as_ref().expect("a leader holds a lease")
    }

    /// The command started: its window stays used up.
    pub fn spend_window(&mut self) {
        self.window = None;
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
    /// read either. If nothing
    /// but our key is attached to the lease, it is not revoked but left to
    /// expire, keyless, within its TTL, so that etcd's work on the next
    /// leader's path is that one write (as a lock's release is). A lease the
    /// command attached keys to (`LEADERRUN_LEASE`) is revoked at once,
    /// taking them with it. Which it is, the lease's keys say, read beside
    /// the resignation; or, when it hands over to someone, after it, and
    /// only if etcd saw a write between our win and the resignation
    /// ([`nothing_attached_since`]).
    ///
    /// Otherwise (the run lost, the transaction refused or unanswered), the
    /// lease is revoked first and the records written after, as a run no
    /// longer entitled: only over records not written since our win.
    ///
    /// `answered` is told once the request the next leader waits on has
    /// its answer (or none came within its bound); at once if nobody is
    /// known to be behind us.
    pub async fn resign(
        &mut self,
        mut ended: Ended,
        election: &Election<'_>,
        answered: &tokio::sync::Notify,
    ) {
        ended.settle_start().await;
        let at_once = ended.record.outcome != record::Outcome::Lost;
        let mut written = false;
        let mut started_behind = false;
        let successor = self.successor(at_once).await;
        if successor.is_none() {
            // Nobody known behind us waits on this resignation: the
            // guardian's exit goes beside it, not after it.
            answered.notify_one();
        }
        if let Some(lease) = self.lease.as_ref().filter(|_| at_once) {
            let key = name::candidate_key(election.name, lease.id);
            let records = ended.writes(election.name);
            let ours = (key.as_str(), ended.record.token, lease.id);
            let resigned = async {
                let response = election
                    .resign_with(ours, records, successor.as_ref())
                    .await?;
                // Its revision, and whether the start record took our end.
                let written = |response: TxnResponse| {
                    (revision_of(&response), ended.wrote_started(&response))
                };
                anyhow::Ok(response.map(written))
            };
            let resigned = clock::timeout(CLEANUP, resigned);
            let attached = clock::timeout(CLEANUP, self.connection.lease_keys(lease.id));
            // With someone handed over to, the read of the lease's keys
            // waits until it is on its way: beside the resignation it would
            // be etcd's work on its path. It is not made at all if the
            // resignation shows that nothing can have been attached. With
            // nobody, it goes beside, and the run ends a round trip sooner.
            let (resigned, attached, nothing_attached) = match &successor {
                Some(_) => {
                    let resigned = resigned.await;
                    let revision = match &resigned {
                        Some(Ok(Some((revision, _)))) => Some(*revision),
                        _ => None,
                    };
                    let nothing_attached = revision.is_some_and(|revision| {
                        nothing_attached_since(ended.proven_at(), revision)
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
            answered.notify_one();
            started_behind = matches!(resigned, Some(Ok(Some((_, false)))));
            written = match resigned {
                Some(Ok(revision)) => revision.is_some(),
                Some(Err(err)) => {
                    tracing::info!("resigning: {err:#}");
                    false
                }
                None => {
                    tracing::info!("resigning: no answer within {CLEANUP:?}");
                    false
                }
            };
            tracing::trace!(written, "resigned with the run's records");
            if let Some(next) = successor.filter(|_| written) {
                tracing::debug!(
                    event = logging::events::HANDED_OVER,
                    to = %next.key,
                    "handed over (if it is still there)"
                );
            }
            let bare = written
                && (nothing_attached
                    || match attached {
                        Some(Ok(Some(keys))) => {
                            keys.iter().all(|attached| *attached == key.as_bytes())
                        }
                        Some(Ok(None)) => true,
                        _ => false,
                    });
            tracing::trace!(bare, nothing_attached, "the lease's keys known");
            if bare {
                // Dropped, it is renewed no more.
                self.lease = None;
            }
        }
        self.give_back().await;
        answered.notify_one();
        if !written {
            ended.write(&self.connection, election.name).await;
        } else if started_behind {
            // The start record holds a run that wrote after our win: ours
            // replaces it if that run started before ours. Off the next
            // leader's path, after the resignation.
            ended.write_started(&self.connection, election.name).await;
        }
    }

    async fn grant(&mut self, ttl: Duration) -> Result<&Lease> {
        self.give_back().await;
        let lease = Lease::grant(&self.connection, ttl).await?;
        Ok(self.lease.insert(lease))
    }
}

/// Whether nothing can have been attached to our lease in a run proven at
/// revision `proven_at` and resigned at `resigned`: true if no write came
/// between. Every write to etcd's keys takes a revision of its own, a key
/// is attached to a lease only by a write, and the command starts after
/// the proof and is dead before the resignation: anything it attached was
/// written at a revision between the two. On an etcd that nothing else
/// writes to (a chain of short runs, above all) that saves the next
/// leader's path a read; anything written in between, by anyone (our own
/// start record too), and the keys are read. It trusts etcd's revisions to
/// go only forward: an etcd restored from a backup under a running replica
/// numbers writes anew (and breaks the election itself: leases and keys go
/// back to the backup's).
fn nothing_attached_since(proven_at: i64, resigned: i64) -> bool {
    proven_at > 0 && resigned == proven_at + 1
}

/// How long a resignation waits at most for the look-up of who is behind
/// us. Sent as the command started, it is at most a round trip from its
/// answer, and a resignation with no one to hand over to costs the next in
/// line a whole round trip (its read): waiting is the shorter path. The
/// bound is only for a request that is lost (an endpoint that died under
/// it), not for a slow etcd.
const LOOK_BEHIND_WAIT: Duration = Duration::from_millis(100);

/// With one runner, looks up the candidate behind our key in a task of its
/// own, started as the command starts so that it runs beside it, off the
/// next leader's path; the resignation hands over to it if it has answered
/// by then ([`Election::resign_with`]).
pub fn look_behind(
    connection: &Connection,
    election: &str,
    slots: usize,
    leadership: &Leadership,
    passed_on: Vec<Behind>,
) -> Option<JoinHandle<Option<Successor>>> {
    if slots != 1 {
        return None;
    }
    let (connection, election) = (connection.clone(), election.to_string());
    let leadership = leadership.clone();
    Some(tokio::spawn(async move {
        let election = Election::new(&connection, &election, 1);
        // Passed on by the leader that handed over to us: no read, and no
        // work for etcd beside our command.
        if let Some(successor) = election.passed_on_to(&leadership, passed_on) {
            return Some(successor);
        }
        match election.successor(&leadership).await {
            Ok(successor) => successor,
            Err(err) => {
                tracing::debug!("looking behind us: {err:#}");
                None
            }
        }
    }))
}

/// How a campaign ended, short of a signal or the user's deadline.
pub enum Outcome {
    /// We lead, proven, with the guardian ready and the window (if any)
    /// claimed; and the watch of our key, if we queued.
    Won(Leadership, Guard, Option<OwnKey>),
    /// Someone else leads (without --wait).
    Held(Option<Leader>),
    /// This `--once-per` window already had its run.
    WindowTaken(Marker),
    /// leaderrun's own failure.
    Failed(anyhow::Error),
}

/// One pass from granting a lease to a proven win, or why it stopped.
enum Step {
    Done(Outcome),
    /// An event for [`decide`], with the error behind it, if any.
    Event(Event, Option<anyhow::Error>),
}

impl From<anyhow::Error> for Step {
    fn from(err: anyhow::Error) -> Step {
        let refused = exit::is_final(&err);
        Step::Event(Event::Etcd { refused }, Some(err))
    }
}

pub struct Campaign<'a> {
    config: &'a Config,
    connection: &'a Connection,
    phase: &'a Cell<Phase>,
    queued_before: bool,
    /// Set once the campaign has had its first look at the queue (and found
    /// someone ahead), or an attempt failed: --wait-timeout may end the wait
    /// from then on, so that `--wait-timeout 0` tries once, as `flock -w 0`.
    looked: tokio::sync::watch::Sender<bool>,
    /// The guardian, started before the campaign.
    guard: Option<Guard>,
    /// The watch of our key, kept from the queue into the run.
    own: Option<OwnKey>,
}

impl<'a> Campaign<'a> {
    pub fn new(
        config: &'a Config,
        connection: &'a Connection,
        phase: &'a Cell<Phase>,
        guard: Option<Guard>,
    ) -> Self {
        Campaign {
            config,
            connection,
            phase,
            queued_before: false,
            looked: tokio::sync::watch::Sender::new(false),
            guard,
            own: None,
        }
    }

    /// Resolves once the campaign has looked at the queue at least once.
    pub fn has_looked(&self) -> impl std::future::Future<Output = ()> + 'static {
        let mut looked = self.looked.subscribe();
        async move {
            let _ = looked.wait_for(|looked| *looked).await;
        }
    }

    /// The guardian, unless a win has taken it.
    pub fn take_guard(&mut self) -> Option<Guard> {
        self.guard.take()
    }

    pub fn policy(&self) -> Policy {
        Policy {
            wait: self.config.wait,
            queued_before: self.queued_before,
        }
    }

    /// Campaigns until we lead or must not: each setback goes through
    /// [`decide`].
    pub async fn run(&mut self, session: &mut Session) -> Outcome {
        let mut backoff = Backoff::new(retry::WAITING);
        let mut warned_full = false;
        loop {
            let (event, error) = match self.attempt(session).await {
                Step::Done(outcome) => return outcome,
                Step::Event(event, error) => (event, error),
            };
            self.looked.send_replace(true);
            let phase = self.phase.get();
            match decide(phase, &event, self.policy()) {
                Action::CampaignAgain => {
                    tracing::info!(
                        event = logging::events::CAMPAIGNING_AGAIN,
                        "{}; campaigning again",
                        describe(&event, error.as_ref())
                    );
                }
                Action::Retry => {
                    tracing::info!("{}; retrying", describe(&event, error.as_ref()));
                    // A full etcd refuses until an operator acts: a queued
                    // replica rides it out, but says so once, without -v,
                    // rather than retrying in silence for hours.
                    let full = error
                        .as_ref()
                        .is_some_and(|err| err.chain().any(|cause| cause.is::<NoSpace>()));
                    if full && !warned_full {
                        warned_full = true;
                        logging::say(
                            logging::Level::Warn,
                            "etcd's database is full (its NOSPACE alarm is raised): waiting until an operator frees space (compact, defragment, then etcdctl alarm disarm)",
                        );
                    }
                    backoff.wait().await;
                }
                Action::GiveUp => return Outcome::Held(None),
                action => {
                    let err = error.unwrap_or_else(|| {
                        anyhow::anyhow!("{event:?} in {phase:?} led to {action:?}")
                    });
                    return Outcome::Failed(err);
                }
            }
            self.phase.set(Phase::Granting);
        }
    }

    async fn attempt(&mut self, session: &mut Session) -> Step {
        let config = self.config;
        let holder = Holder {
            started: holder::now_rfc3339(),
            ..config.holder.clone()
        };
        let lease = match session.grant(config.ttl).await {
            Ok(lease) => lease,
            Err(err) => return err.into(),
        };
        tracing::debug!(ttl = ?lease.ttl, "granted TTL");
        self.phase.set(Phase::Joining);
        let won = if config.wait {
            self.queue(lease, &holder).await
        } else {
            self.try_once(lease.id, &holder).await
        };
        let leadership = match won {
            Ok(leadership) => leadership,
            Err(step) => return step,
        };
        if config.once_per.is_some() {
            tracing::debug!(
                token = leadership.token,
                "elected; claiming the --once-per window"
            );
        }
        self.phase.set(Phase::Claiming);
        self.claim(session, leadership, &holder).await
    }

    fn election(&self) -> Election<'a> {
        Election::new(
            self.connection,
            &self.config.election,
            self.config.max_running,
        )
    }

    /// Without --wait: lead now, or learn who does.
    async fn try_once(&self, lease: i64, holder: &Holder) -> Result<Leadership, Step> {
        let election = self.election();
        match election.try_acquire(lease, holder).await {
            Ok(Attempt::Won(leadership)) => Ok(leadership),
            Ok(Attempt::Lost(leader)) => Err(Step::Done(Outcome::Held(leader))),
            Ok(Attempt::Vanished) => Err(key_gone()),
            Err(err) => Err(err.into()),
        }
    }

    /// With --wait: join the queue, wait for our turn, prove the win.
    async fn queue(&mut self, lease: &Lease, holder: &Holder) -> Result<Leadership, Step> {
        let election = self.election();
        let queued = election.enqueue(lease.id, holder, None).await?;
        let Queued {
            candidate,
            runners,
            proven_at,
        } = queued;
        self.queued_before = true;
        if proven_at.is_none() {
            if let Some(leader) = runners.first() {
                tracing::info!("waiting: {} leads", leader.describe());
            }
            self.looked.send_replace(true);
        }
        self.phase.set(Phase::Waiting);
        let own = self
            .own
            .insert(OwnKey::new(&candidate.key, candidate.revision, lease.id, 0));
        let proven_at = match proven_at {
            Some(revision) => revision,
            None => {
                let turn = election
                    .wait_for_turn(&candidate, lease.id, &mut lease.watch(), own)
                    .await;
                match turn {
                    Turn::Ours(revision) => {
                        tracing::trace!(revision, "proven");
                        revision
                    }
                    Turn::Lost(lost) => return Err(Step::Event(Event::PlaceLost(lost), None)),
                    Turn::Failed(err) => return Err(err.into()),
                }
            }
        };
        self.phase.set(Phase::Proving);
        if self.config.max_running == 1 {
            // The read that found our turn is the proof: our key, with its
            // create revision and our lease, and nothing ahead of it, at one
            // revision. Proving again would cost the next leader a round
            // trip. Only with more runners must the proof also write: the
            // waiter behind wakes on that rewrite (see `wait_for_turn`).
            return Ok(Leadership {
                name: self.config.election.clone(),
                key: candidate.key,
                lease: lease.id,
                token: candidate.revision,
                revision: proven_at,
            });
        }
        let holder = Holder {
            started: holder::now_rfc3339(),
            ..holder.clone()
        };
        match election.prove(&candidate, lease.id, &holder).await? {
            Some(leadership) => Ok(leadership),
            // A phantom win: our key is gone.
            None => Err(key_gone()),
        }
    }

    /// Starts the guardian (unless it is ready, as it almost always is), then
    /// claims the window: in that order, so that a guardian that cannot
    /// start never uses up a window.
    async fn claim(
        &mut self,
        session: &mut Session,
        leadership: Leadership,
        holder: &Holder,
    ) -> Step {
        // A proof says we were first at its revision; it is good for running
        // only while our lease is sure to be alive. A waiter stopped or
        // starved past its lease's local deadline can learn of its turn
        // only on waking (a handover, above all, may be old news by then):
        // its key may be gone and the next one running. It must not start
        // a command it would have to kill at once.
        let lease = session.lease();
        let schedule = KillSchedule::new(lease.ttl, self.config.kill_after);
        let state = lease.state();
        if state.gone {
            return Step::Event(Event::PlaceLost(PlaceLost::LeaseGone), None);
        }
        if schedule.must_stop(state.expires) {
            return Step::Event(Event::PlaceLost(PlaceLost::Unsure), None);
        }
        let guard = match self.guard.take().map_or_else(Guard::start, Ok) {
            Ok(guard) => guard,
            Err(err) => {
                let err = anyhow::anyhow!("starting the guardian process: {err}");
                return Step::Done(Outcome::Failed(err));
            }
        };
        // "leader" only once nothing can keep the command from starting: a
        // proof refused above, or a replica refused by the window, must not
        // seem to have led.
        let Some(window) = self.config.once_per else {
            tracing::info!(
                event = logging::events::LEADER,
                token = leadership.token,
                key = %leadership.key,
                "leader"
            );
            return Step::Done(Outcome::Won(leadership, guard, self.own.take()));
        };
        let claim = once_per::claim(
            self.connection,
            &leadership,
            window,
            holder,
            &mut session.window,
        )
        .await;
        match claim {
            Ok(Claim::Ours) => {
                tracing::info!(
                    event = logging::events::LEADER,
                    token = leadership.token,
                    key = %leadership.key,
                    "leader"
                );
                tracing::info!(
                    "this run opens a --once-per {} window",
                    humantime::format_duration(window)
                );
                Step::Done(Outcome::Won(leadership, guard, self.own.take()))
            }
            // The guardian was told no group: it is kept for the next
            // attempt, or dropped with the campaign, which ends it.
            Ok(Claim::Taken(marker)) => {
                self.guard = Some(guard);
                Step::Done(Outcome::WindowTaken(marker))
            }
            Ok(Claim::LeadershipLost) => {
                self.guard = Some(guard);
                Step::Event(Event::PlaceLost(PlaceLost::Key(KeyLoss::Deleted)), None)
            }
            Err(err) => {
                self.guard = Some(guard);
                err.into()
            }
        }
    }
}

/// Our key vanished on the way to leading.
fn key_gone() -> Step {
    Step::Event(Event::PlaceLost(PlaceLost::Key(KeyLoss::Deleted)), None)
}

fn describe(event: &Event, error: Option<&anyhow::Error>) -> String {
    match (event, error) {
        (_, Some(err)) => format!("{err:#}"),
        (Event::PlaceLost(lost), None) => lost.to_string(),
        (event, None) => format!("{event:?}"),
    }
}
