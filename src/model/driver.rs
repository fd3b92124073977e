//! A replica's side of the world: the work of each campaign phase as one
//! atomic request to the model's etcd, turned into the production
//! [`CampaignEvent`]; what each decision of the production campaign asks
//! (`protocol::campaign`: a lease let go of, the command to start, the
//! run over) done in the world; and what each step of a leading run's
//! production states says (`protocol::lead`: a signal to pass on,
//! --kill-signal, SIGKILL, the resignation) done to the modelled job.
//!
//! The requests are those of the slow path (`LEADERRUN_HANDOFF=slow`):
//! a waiter learns of its turn by reading the line, never by a handover.

use super::etcd::{Key, Value};
use std::time::Duration;

use super::world::{
    at, ms, Held, Job, Led, Modelled, Proc, Proof, Say, World, C, KILL_AFTER, NOW, TTL,
};
use crate::election::record::Outcome;
use crate::election::{KeyLoss, PlaceLost};
use crate::exit::Exit;
use protocol::campaign::{self, Decision, Join, Work};
use protocol::lead::{Running, RunningStep, StoppingStep};
use protocol::line::{among_first, judge_version};
use protocol::records::{Guard, Which};
use protocol::renewal::Renewals;
use protocol::resign::{Effect, Fed, LeaseEnd, Leaving, Resignation, Resigned};
use protocol::stage::{ClaimStep, Won};
use protocol::stop::{LeaseView, Next};
use protocol::table::{self, CampaignEvent, Phase, StoppingEvent, Trouble};
const SIGTERM: protocol::signal::Signal = protocol::signal::Signal::SIGTERM;

const CONFLICT: i32 = 75;

/// The work a campaign asks for, with the ids of what it works on (read
/// from what the production campaign holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Dial,
    Grant,
    Join {
        how: Join,
        lease: i64,
    },
    Wait {
        lease: i64,
        token: i64,
    },
    Prove {
        lease: i64,
        token: i64,
    },
    Claim {
        step: ClaimStep,
        lease: i64,
        proof: Proof,
    },
}

impl World {
    /// The work replica `r`'s campaign asks for, and what came of it.
    pub(super) fn work(&mut self, r: usize, mut say: Say) -> CampaignEvent<Modelled> {
        let asked = match self.replicas[r].campaign.0.work() {
            Work::Dial => Asked::Dial,
            Work::Grant => Asked::Grant,
            Work::Join { how, lease } => Asked::Join { how, lease: *lease },
            Work::Wait { lease, place } => Asked::Wait {
                lease: *lease,
                token: *place,
            },
            Work::Prove { lease, place } => Asked::Prove {
                lease: *lease,
                token: *place,
            },
            Work::Claim { step, lease, proof } => Asked::Claim {
                step,
                lease: *lease,
                proof: *proof,
            },
            // The model's etcd is never paused (`leaderrun pause` is an
            // operator's, and the table's own tests walk it).
            Work::AwaitResume => unreachable!("replica {r} awaits a pause the model never makes"),
        };
        let needs_etcd = match asked {
            Asked::Claim { step, .. } => step == ClaimStep::Window,
            Asked::Dial
            | Asked::Grant
            | Asked::Join { .. }
            | Asked::Wait { .. }
            | Asked::Prove { .. } => true,
        };
        if let Some(trouble) = self.request_trouble(r).filter(|_| needs_etcd) {
            return CampaignEvent::Etcd(trouble);
        }
        let reads_the_line = matches!(asked, Asked::Wait { .. } | Asked::Prove { .. });
        if reads_the_line && std::mem::take(&mut self.replicas[r].compacted) {
            say!(say, "replica {r}'s read of the line meets the compaction");
            return CampaignEvent::Etcd(Trouble::Outage);
        }
        match asked {
            Asked::Dial => CampaignEvent::Dialled,
            Asked::Grant => {
                let id = self.etcd.grant(self.now, TTL);
                let replica = &mut self.replicas[r];
                replica.lease = Some(Held {
                    id,
                    renewals: Renewals::new(ms(replica.timed(TTL)), at(self.now)),
                    gone: false,
                });
                replica.lost_seen = false;
                say!(say, "replica {r} is granted lease {id}");
                CampaignEvent::Granted(id)
            }
            Asked::Join { how, lease } => self.join(r, how, lease, say),
            Asked::Wait { lease, token } => self.look(r, lease, token),
            Asked::Prove { lease, token } => self.prove(r, lease, token),
            Asked::Claim { step, lease, proof } => self.claim(r, step, lease, proof),
        }
    }

    fn ids(&self, r: usize) -> (Key, i64, i64) {
        let replica = &self.replicas[r];
        let held = replica.lease.expect("a lease by now");
        (
            Key::Candidate(held.id),
            replica.token.expect("a won run's token"),
            held.id,
        )
    }

    /// Writes our key if absent, and reads the line, in one transaction
    /// (tried: the run's transaction writes only if a slot is free, which
    /// the model's atomic step gives alike, its key left to its lease).
    fn join(&mut self, r: usize, how: Join, lease: i64, mut say: Say) -> CampaignEvent<Modelled> {
        let key = Key::Candidate(lease);
        if !self.etcd.leases.contains_key(&lease) {
            // etcd refuses a put on a lease it does not know ("requested
            // lease not found"): an error like any other to the run.
            return CampaignEvent::Etcd(Trouble::Outage);
        }
        if self.etcd.version(key).is_none() {
            let revision = self.etcd.revision + 1;
            self.etcd
                .put_at(key, Value::Candidate(Some(r as u8)), lease, revision);
            self.etcd.revision = revision;
        }
        let (token, _) = self.etcd.version(key).expect("just written");
        say!(say, "replica {r} is in line with token {token}");
        let intact = judge_version(self.etcd.version(key), token, lease).is_none();
        let proven = intact && among_first(self.etcd.ahead_of(token), self.slots);
        let proof = Proof {
            token,
            at: self.etcd.revision,
        };
        match (how, proven) {
            (Join::Enqueue, true) => CampaignEvent::FirstInLine(token, proof),
            (Join::Enqueue, false) => CampaignEvent::Queued(token),
            (Join::Try, true) => CampaignEvent::Proven(proof),
            (Join::Try, false) => CampaignEvent::Held,
        }
    }

    /// A waiter woken: its key and the line ahead, read at one revision;
    /// or, on the fast path, its own key's watch showing the handover to
    /// it, which proves its turn at the handover's revision with no read.
    fn look(&mut self, r: usize, lease: i64, token: i64) -> CampaignEvent<Modelled> {
        let key = Key::Candidate(lease);
        if let Some(loss) = judge_version(self.etcd.version(key), token, lease) {
            return CampaignEvent::PlaceLost(PlaceLost::Key(loss));
        }
        let at = self.handed_over(r).unwrap_or(self.etcd.revision);
        CampaignEvent::Proven(Proof { token, at })
    }

    /// With several runners: the proof's transaction rewrites our key.
    fn prove(&mut self, r: usize, lease: i64, token: i64) -> CampaignEvent<Modelled> {
        let key = Key::Candidate(lease);
        if let Some(loss) = judge_version(self.etcd.version(key), token, lease) {
            return CampaignEvent::PlaceLost(PlaceLost::Key(loss));
        }
        let revision = self.etcd.revision + 1;
        self.etcd
            .put_at(key, Value::Candidate(Some(r as u8)), lease, revision);
        self.etcd.revision = revision;
        if !among_first(self.etcd.ahead_of(token), self.slots) {
            return CampaignEvent::PlaceLost(PlaceLost::Key(KeyLoss::Deleted));
        }
        CampaignEvent::Proven(Proof {
            token,
            at: revision,
        })
    }

    /// A step of the claim, as the production campaign orders them.
    fn claim(
        &mut self,
        r: usize,
        step: ClaimStep,
        lease: i64,
        proof: Proof,
    ) -> CampaignEvent<Modelled> {
        let held = self.replicas[r].lease.expect("a lease's keeper by now");
        assert_eq!(
            held.id, lease,
            "replica {r} claims on a lease it does not keep"
        );
        match step {
            ClaimStep::Precheck | ClaimStep::Recheck => CampaignEvent::LeaseSeen {
                view: held.view(),
                ttl: ms(TTL),
            },
            // The run's guardian is started before the campaign; only if
            // that failed is it started again here, and may fail again.
            ClaimStep::Guard if self.replicas[r].guardian_fails => CampaignEvent::GuardianFailed,
            ClaimStep::Guard => CampaignEvent::GuardReady,
            // The join's write found no pause: no read at the claim.
            ClaimStep::Pause => CampaignEvent::Unpaused,
            ClaimStep::Window => self.claim_window(r, lease, proof.token),
            ClaimStep::Start => CampaignEvent::Claimed(()),
        }
    }

    /// The window's marker written, in one transaction with our key still
    /// ours, if no marker is there; else the marker read.
    fn claim_window(&mut self, r: usize, lease: i64, token: i64) -> CampaignEvent<Modelled> {
        if let Some(trouble) = self.request_trouble(r) {
            return CampaignEvent::Etcd(trouble);
        }
        let key = Key::Candidate(lease);
        if let Some(loss) = judge_version(self.etcd.version(key), token, lease) {
            return CampaignEvent::PlaceLost(PlaceLost::Key(loss));
        }
        if self.etcd.window.is_some() {
            return CampaignEvent::WindowTaken;
        }
        self.etcd.window = Some(r as u8);
        self.replicas[r].window = true;
        CampaignEvent::WindowClaimed
    }

    /// Does what the campaign's decision asks in the world: a lease let
    /// go of given back, the command started, or the run ended (what it
    /// holds given back, as every way out does). A campaign that started
    /// its command or ended keeps its last state, which no later step
    /// reads.
    pub(super) fn follow_decision(&mut self, r: usize, decision: Decision<Modelled>, mut say: Say) {
        match decision.next {
            campaign::Next::Campaign(next) => {
                if let Some(released) = decision.released {
                    let kept = self.replicas[r].lease.map(|held| held.id);
                    assert_eq!(
                        kept,
                        Some(released),
                        "replica {r} lets go of a lease it does not keep"
                    );
                    self.give_back(r);
                    let replica = &mut self.replicas[r];
                    replica.lease = None;
                    replica.token = None;
                    replica.proven_at = None;
                }
                // A backoff is time the clock gives anyway.
                self.replicas[r].campaign = C(next);
                self.follow_campaign(r);
            }
            campaign::Next::Start(won) if self.replicas[r].spawn_fails => {
                self.won(r, &won);
                // Nothing ran: the run resigns with a record saying so.
                say!(say, "replica {r}'s command cannot be spawned");
                let code = table::spawn_failed(Exit::NotFound);
                // Its win comes after every start before it: its record
                // (not started) is the latest in last-started's order.
                self.rank_start(r);
                let replica = &mut self.replicas[r];
                replica.ending = Some((code.value(CONFLICT), code.outcome()));
                replica.phase.0 = Phase::Resigning;
            }
            campaign::Next::Start(won) => {
                self.won(r, &won);
                // The instant --timeout ends is the model's to choose (any
                // moment while the command runs): only whether it counts
                // is the run's.
                let replica = &mut self.replicas[r];
                let timeout = replica.timeout.then_some(Duration::ZERO);
                let running = Running::new(ms(TTL), ms(KILL_AFTER), SIGTERM, timeout, at(NOW));
                replica.led = Led::Running(running);
                replica.phase.0 = Phase::Running;
                self.spawn(r, say);
            }
            campaign::Next::Exit(code) => {
                self.leave(r, None, say);
                self.replicas[r].proc = Proc::Done(code.value(CONFLICT));
            }
        }
    }

    /// A win, as the production campaign hands it over: the run goes on
    /// with its token and its proof's revision, on the lease its keeper
    /// keeps.
    fn won(&mut self, r: usize, won: &Won<Modelled>) {
        let replica = &mut self.replicas[r];
        let kept = replica.lease.map(|held| held.id);
        assert_eq!(
            kept,
            Some(won.lease),
            "replica {r} won on a lease it does not keep"
        );
        replica.token = Some(won.proof.token);
        replica.proven_at = Some(won.proof.at);
    }

    /// The replica's phase, as its campaign moved it.
    fn follow_campaign(&mut self, r: usize) {
        let replica = &mut self.replicas[r];
        replica.phase.0 = replica.campaign.0.phase().into();
    }

    /// Does what a step of a run whose command runs says.
    pub(super) fn do_running(&mut self, r: usize, step: RunningStep, say: Say) {
        match step {
            RunningStep::Forward(core, _) => {
                self.replicas[r].led = Led::Running(core);
                self.terminate(r);
            }
            // Job control is the terminal's: no part of the model.
            RunningStep::FollowStop(core, _) => self.replicas[r].led = Led::Running(core),
            RunningStep::Stop(core) => {
                let replica = &mut self.replicas[r];
                replica.led = Led::Stopping(core);
                replica.phase.0 = Phase::Stopping;
                self.carry_out_stop(r, say);
            }
        }
    }

    /// Does what a step of a run stopping its job says.
    pub(super) fn do_stopping(&mut self, r: usize, step: StoppingStep, mut say: Say) {
        match step {
            StoppingStep::Forward(core, _) | StoppingStep::KillSignal(core, _) => {
                self.replicas[r].led = Led::Stopping(core);
                self.terminate(r);
            }
            StoppingStep::GraceCut(core, ..) => self.replicas[r].led = Led::Stopping(core),
            StoppingStep::GraceOver(core, _) => {
                self.replicas[r].led = Led::Stopping(core);
                self.carry_out_stop(r, say);
            }
            StoppingStep::Kill(core) => {
                say!(say, "replica {r} sends SIGKILL to the job");
                let replica = &mut self.replicas[r];
                replica.led = Led::Stopping(core);
                if replica.runs() {
                    replica.job = Job::Ended(137, true);
                }
            }
            StoppingStep::Resign(resigning) => {
                // The stop is over: what it held is no part of the state.
                let code = resigning.code;
                let replica = &mut self.replicas[r];
                replica.ending = Some((code.value(CONFLICT), code.outcome()));
                replica.led = Led::Not;
                replica.phase.0 = Phase::Resigning;
            }
        }
    }

    /// The lease as replica `r`'s kill sequence sees it.
    pub(super) fn lease_view(&self, r: usize) -> LeaseView {
        let held = self.replicas[r].lease.expect("a leader holds a lease");
        held.view()
    }

    /// What comes next of replica `r`'s kill sequence (see [`Stop::next`]):
    /// anything of its job not waited for yet counts as left.
    pub(super) fn stop_next(&self, r: usize) -> Option<Next> {
        let replica = &self.replicas[r];
        let left = !matches!(replica.job, Job::Reaped | Job::None);
        let Led::Stopping(core) = replica.led else {
            return None;
        };
        Some(core.next(at(self.now), self.lease_view(r), left))
    }

    /// The steps of the kill sequence due now (the signals), as the run
    /// takes them: each handed to the production stop, and what it says
    /// done. What it waits
    /// for (the job gone, the grace over) is news of the world's, whose
    /// event is the stop's too.
    fn carry_out_stop(&mut self, r: usize, mut say: Say) {
        loop {
            let event = match self.stop_next(r).expect("a stop under way") {
                Next::Event(event @ (StoppingEvent::KillSignalDue(_) | StoppingEvent::KillDue)) => {
                    event
                }
                Next::Event(_) | Next::Await { .. } => return,
            };
            let Led::Stopping(core) = self.replicas[r].led else {
                unreachable!("a stop under way")
            };
            let step = core.handle(&event, at(self.now), self.lease_view(r));
            say!(say, "replica {r} in Stopping: {event:?} -> {step:?}");
            self.do_stopping(r, step, say.as_deref_mut());
        }
    }

    fn terminate(&mut self, r: usize) {
        if let Job::Running { term } = &mut self.replicas[r].job {
            *term = true;
        }
    }

    fn spawn(&mut self, r: usize, mut say: Say) {
        let token = self.replicas[r].token.expect("a proven key");
        say!(say, "replica {r} spawns its command (token {token})");
        if self.once_per {
            self.window_runs += 1;
        }
        let replica = &mut self.replicas[r];
        replica.job = Job::Running { term: false };
        replica.ran = true;
        if self.rank_start(r) && self.slots == 1 {
            self.token_went_back |= token <= self.max_started;
            self.max_started = self.max_started.max(token);
        }
    }

    /// Gives a win that reached its start (its command spawned, or its
    /// spawn failed: its record says not started) its place in the order
    /// of starts, and says whether it has one. A run whose key another
    /// writer took between its proof and now cannot know yet (the robbed
    /// exception, for fencing to cover): with one runner, tokens and the
    /// records order starts by proof, and its start is out of that order
    /// (0: not ranked). The second long run found the failed spawn's way
    /// ranked such a run still.
    fn rank_start(&mut self, r: usize) -> bool {
        let replica = &mut self.replicas[r];
        if self.slots == 1 && replica.robbed {
            replica.started = 0;
            return false;
        }
        self.starts += 1;
        replica.started = self.starts;
        true
    }

    /// Gives back the lease, and a window claimed but not spent, if etcd
    /// can be reached: best effort (out of reach, an unspent window stays
    /// claimed until its lease, as long as the window, expires).
    fn give_back(&mut self, r: usize) {
        if self.request_trouble(r).is_some() {
            return;
        }
        if let Some(held) = self.replicas[r].lease {
            self.etcd.revoke(held.id);
        }
        self.give_back_window(r);
    }

    fn give_back_window(&mut self, r: usize) {
        if std::mem::take(&mut self.replicas[r].window) {
            self.etcd.window = None;
        }
    }

    /// The way out of replica `r`'s run: the production way out
    /// (`protocol::resign`) asks, and each effect is done in the world,
    /// atomically, best effort (out of reach, each fails as the run's
    /// bounded request would).
    pub(super) fn resign(&mut self, r: usize, say: Say) {
        let (code, outcome) = self.replicas[r].ending.expect("a stop carries its code");
        self.replicas[r].proc = Proc::Done(code);
        self.leave(r, Some(outcome), say);
    }

    /// The way out, for a run that ended with `outcome` or a campaign
    /// that ran nothing (None).
    fn leave(&mut self, r: usize, outcome: Option<Outcome>, mut say: Say) {
        let replica = &self.replicas[r];
        let leaving = Leaving {
            outcome,
            started: replica.ran,
            lease: replica.lease.is_some(),
            window: replica.window,
            fast: replica.fast,
            proven_at: replica.proven_at.unwrap_or(0),
        };
        let mut way = Resignation::new(leaving);
        let mut effect = way.start();
        while effect != Effect::Done {
            let fed = self.perform(r, effect, say.as_deref_mut());
            effect = way
                .fed(fed)
                .unwrap_or_else(|unexpected| panic!("replica {r}: {unexpected}"));
        }
    }

    /// One effect of the way out, done in the world.
    fn perform(&mut self, r: usize, effect: Effect, mut say: Say) -> Fed {
        let reached = self.request_trouble(r).is_none();
        match effect {
            // The model writes no start record (it counts starts itself).
            Effect::SettleStart => Fed::StartSettled(None),
            Effect::FindSuccessor { wanted } => {
                Fed::Successor(wanted && reached && self.behind(r).is_some())
            }
            Effect::Resign { .. } | Effect::ReadAttached if !reached => {
                say!(
                    say,
                    "replica {r} cannot reach etcd (or is refused) to resign"
                );
                match effect {
                    Effect::ReadAttached => Fed::Attached(None),
                    _ => Fed::Resigned(None),
                }
            }
            Effect::Resign {
                while_ours,
                writes,
                hand_over,
                read_attached,
            } => {
                let resigned = self.resign_with(r, while_ours, &writes, hand_over, say);
                // Nothing but candidate keys is ever attached to a lease
                // in the model: ours is alone on it.
                Fed::Resigned(Some(Resigned {
                    alone: read_attached.then_some(true),
                    ..resigned
                }))
            }
            Effect::ReadAttached => Fed::Attached(Some(true)),
            Effect::Answered => Fed::Done,
            Effect::GiveBack { .. } | Effect::WriteUnentitled { .. } | Effect::WriteStarted
                if !reached =>
            {
                Fed::Done
            }
            Effect::GiveBack { lease, window } => {
                self.give_back_as(r, lease, window);
                Fed::Done
            }
            Effect::WriteUnentitled { writes } => {
                self.write_unentitled(r, &writes, say);
                Fed::Done
            }
            Effect::WriteStarted => {
                self.write_started(r);
                Fed::Done
            }
            Effect::Done => Fed::Done,
        }
    }

    /// The lease revoked or left bare, and the window given back if asked.
    fn give_back_as(&mut self, r: usize, lease: LeaseEnd, window: bool) {
        match (lease, self.replicas[r].lease) {
            (LeaseEnd::Revoke, Some(held)) => self.etcd.revoke(held.id),
            (LeaseEnd::Revoke | LeaseEnd::LeaveBare | LeaseEnd::None, _) => {}
        }
        if window {
            self.give_back_window(r);
        }
    }

    /// Our end into `last-started` by a read and a swap (atomic here).
    fn write_started(&mut self, r: usize) {
        let revision = self.etcd.revision + 1;
        if self.write_record(r, Which::Started, Guard::NoLaterStart, revision) {
            self.etcd.revision = revision;
        }
    }

    /// One of replica `r`'s end records, written with `guard` at
    /// `revision` if etcd lets it land: whether it did. Ghost: a lost
    /// run's record that lands over a `last-finished` written after its
    /// win (its job ended at its loss, before that run's, perhaps long
    /// before it could reach etcd again).
    fn write_record(&mut self, r: usize, which: Which, guard: Guard, revision: i64) -> bool {
        let (value, token) = self.record_value(r);
        let newer_there = match (which, value) {
            (
                Which::Finished,
                Value::Record {
                    outcome, proven, ..
                },
            ) => {
                outcome == Outcome::Lost
                    && self
                        .etcd
                        .keys
                        .get(&Key::Finished)
                        .is_some_and(|found| found.modified > proven)
            }
            _ => false,
        };
        let written = self.etcd.record(which, guard, value, revision);
        if written && newer_there {
            self.lost_over_newer = Some(token);
        }
        self.wrote(which, written, token);
        written
    }

    /// The record replica `r`'s run writes, and its token.
    fn record_value(&self, r: usize) -> (Value, i64) {
        let replica = &self.replicas[r];
        let token = replica.token.unwrap_or(0);
        let (_, outcome) = replica.ending.expect("a run's way out");
        let proven = replica.proven_at.expect("a proven run");
        (
            Value::Record {
                token,
                outcome,
                proven,
            },
            token,
        )
    }

    /// The resignation's transaction: our key deleted with `writes`
    /// (and a handover), if it is still ours, or with no comparison.
    fn resign_with(
        &mut self,
        r: usize,
        while_ours: bool,
        writes: &[(Which, Guard)],
        hand_over: bool,
        mut say: Say,
    ) -> Resigned {
        let (key, token, lease) = self.ids(r);
        let not_written = Resigned {
            written: None,
            started_behind: false,
            alone: None,
        };
        if while_ours && !self.etcd.ours(key, token, lease) {
            return not_written;
        }
        let revision = self.etcd.revision + 1;
        if self.etcd.version(key).is_some() {
            self.etcd.delete_at(key, revision);
        }
        if hand_over {
            self.hand_over(token, revision);
        }
        let mut started_behind = false;
        for (which, guard) in writes.iter().copied() {
            let written = self.write_record(r, which, guard, revision);
            started_behind |= which == Which::Started && !written;
        }
        self.etcd.revision = revision;
        self.finished_floor = self.finished_floor.max(revision);
        say!(say, "replica {r} resigns at revision {revision}, entitled");
        Resigned {
            written: Some(revision),
            started_behind,
            alone: None,
        }
    }

    /// The end records of a run no longer entitled: `last-finished` and
    /// `last-succeeded` in one write, then `last-started` by a read and a
    /// swap.
    fn write_unentitled(&mut self, r: usize, writes: &[(Which, Guard)], mut say: Say) {
        let revision = self.etcd.revision + 1;
        let mut any = false;
        for (which, guard) in writes.iter().copied().filter(|(w, _)| *w != Which::Started) {
            any |= self.write_record(r, which, guard, revision);
        }
        if any {
            self.etcd.revision = revision;
        }
        for (which, guard) in writes.iter().copied().filter(|(w, _)| *w == Which::Started) {
            let revision = self.etcd.revision + 1;
            if self.write_record(r, which, guard, revision) {
                self.etcd.revision = revision;
            }
        }
        say!(say, "replica {r} writes its records unentitled");
    }

    /// Who replica `r`'s resignation hands over to: the candidate just
    /// behind its key, on the fast path with one runner.
    fn behind(&self, r: usize) -> Option<Key> {
        let replica = &self.replicas[r];
        if !replica.fast || self.slots != 1 {
            return None;
        }
        self.next_behind(replica.token?)
    }

    /// Whom a resignation behind token `token` hands over to, by the
    /// protocol's rule: the candidate just behind, if it is a replica's
    /// (another writer's never takes a handover).
    fn next_behind(&self, token: i64) -> Option<Key> {
        let mut behind: Vec<_> = self
            .etcd
            .keys
            .iter()
            .filter(|(key, found)| matches!(key, Key::Candidate(_)) && found.create > token)
            .collect();
        behind.sort_by_key(|(_, found)| found.create);
        let takes = |(_, found): &(&Key, &super::etcd::Version)| {
            matches!(found.value, Value::Candidate(Some(_)) | Value::HandedOver)
        };
        protocol::line::successor(behind, takes).map(|(key, _)| *key)
    }

    /// The handover: the resignation's transaction (at `revision`)
    /// rewrites the key of the candidate just behind ours (token `token`),
    /// keeping its create revision and lease.
    fn hand_over(&mut self, token: i64, revision: i64) {
        let Some(key) = self.next_behind(token) else {
            return;
        };
        let lease = self.etcd.keys[&key].lease;
        self.etcd.put_at(key, Value::HandedOver, lease, revision);
    }

    /// Ghost bookkeeping of a record written.
    fn wrote(&mut self, which: Which, written: bool, token: i64) {
        if !written {
            return;
        }
        match which {
            Which::Finished => {
                let ended = self.etcd.ended.get(&token).copied().unwrap_or(i64::MAX);
                self.finished_floor = self.finished_floor.max(ended);
            }
            Which::Started => {
                if let Some(started) = self.start_of(token) {
                    self.started_floor = self.started_floor.max(started);
                }
            }
            Which::Succeeded => {}
        }
    }

    /// Where the run of `token` comes in the order of starts, as the
    /// records define it: with one runner, when its command started
    /// (tokens order that), but for a run whose key another writer took
    /// before it started (None: out of that order, the robbed exception);
    /// with several, whose runs overlap, the revision its win was proven
    /// at (docs/design.md, "Run records"): of two runners proven apart,
    /// the later may spawn a few milliseconds first, and only the proof is
    /// seen by etcd.
    pub fn start_of(&self, token: i64) -> Option<i64> {
        let run = self
            .replicas
            .iter()
            .find(|replica| replica.token == Some(token));
        match run {
            Some(replica) if self.slots > 1 => Some(replica.proven_at.unwrap_or(0)),
            Some(replica) if replica.robbed && replica.started == 0 => None,
            Some(replica) => Some(i64::from(replica.started)),
            None => Some(0),
        }
    }

    /// The outcome a record of this run says, checked against the ghost.
    pub fn says_truth(&self, token: i64, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Succeeded => self
                .replicas
                .iter()
                .any(|replica| replica.token == Some(token) && replica.exited_zero),
            _ => true,
        }
    }
}
