//! The campaign's own state: the phase of a run before its command
//! exists with what it holds ([`Stage`]), what the run has learnt on the
//! way, and the pace of its retries. Fed each event with the time, a
//! [`Campaign`] asks the table ([`table::campaign`]) what to do, and
//! comes back moved on as the answer says ([`Next`]): still campaigning,
//! with the work of its phase to do ([`Campaign::work`], from
//! [`Campaign::work_from`], raced against [`Campaign::gives_up_at`]), or
//! won with all a command needs, or over with an exit code. The run does
//! that work with etcd (`run::campaign`); the model checker (`model`)
//! drives the same type in its world, so what a run holds and remembers
//! between events is checked along with the table.

use std::time::Duration;

use super::stage::{ClaimStep, Holding, Holds, Stage, Won};
use super::table::{
    self, retry_ceiling, Answer, CampaignAction, CampaignEvent, CampaignPhase, Code, Policy,
};
use crate::backoff::Backoff;
use crate::time::Instant;

/// A run before its command exists, as far as its protocol goes.
pub struct Campaign<H: Holds> {
    stage: Stage<H>,
    memory: Memory,
    pace: Pace,
}

/// What a campaign is told as it begins: the options that change what
/// the table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rules {
    /// --wait.
    pub wait: bool,
    /// --max-running 1.
    pub single: bool,
    /// --once-per: a claim takes the window.
    pub once_per: bool,
    /// --kill-after: a claim's re-check judges the lease by the kill
    /// schedule it makes with the TTL.
    pub kill_after: Duration,
}

/// What the campaign has learnt that changes what the table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Memory {
    pub rules: Rules,
    /// The run has been in the queue once (its key was written with
    /// --wait): etcd worked, so a failure now is an outage to ride out,
    /// not a wrong endpoint.
    pub queued_before: bool,
    /// The campaign has had its first look at the queue (and found someone
    /// ahead), or an attempt failed: --wait-timeout may end the wait from
    /// then on, so that `--wait-timeout 0` tries once, as `flock -w 0`.
    pub looked: bool,
}

impl Memory {
    /// What `event` in `phase` teaches.
    fn learn<H: Holds>(&mut self, phase: CampaignPhase, event: &CampaignEvent<H>) {
        use CampaignEvent as E;
        let queued = match event {
            // A pause found as it joined: etcd answered the join.
            E::Queued(_) | E::FirstInLine(..) | E::Paused => phase == CampaignPhase::Joining,
            E::Dialled
            | E::Granted(_)
            | E::Proven(_)
            | E::LeaseSeen { .. }
            | E::GuardReady
            | E::WindowClaimed
            | E::Claimed(_)
            | E::Held
            | E::WindowTaken
            | E::GuardianFailed
            | E::Unpaused
            | E::Resumed
            | E::Signal(_)
            | E::WaitTimeout
            | E::PlaceLost(_)
            | E::Etcd(_) => false,
        };
        self.queued_before |= self.rules.wait && queued;
        // The way to a win, uneventful, is no look yet: anything else (a
        // place behind someone, someone leading, a setback) is.
        let looked = match event {
            E::Dialled
            | E::Granted(_)
            | E::FirstInLine(..)
            | E::Proven(_)
            | E::LeaseSeen { .. }
            | E::GuardReady
            | E::Unpaused
            | E::Resumed
            | E::WindowClaimed
            | E::Claimed(_) => false,
            E::Queued(_)
            | E::Paused
            | E::Held
            | E::WindowTaken
            | E::GuardianFailed
            | E::Signal(_)
            | E::WaitTimeout
            | E::PlaceLost(_)
            | E::Etcd(_) => true,
        };
        self.looked |= looked;
    }

    /// What the table needs to know beyond the phase, at `now`.
    fn policy(self, now: Instant) -> Policy {
        Policy {
            wait: self.rules.wait,
            queued_before: self.queued_before,
            single: self.rules.single,
            once_per: self.rules.once_per,
            kill_after: self.rules.kill_after,
            now,
        }
    }
}

/// When the campaign's work may run next, and when it gives up.
#[derive(Debug, Clone, Copy)]
struct Pace {
    /// The jitter's seed, for each backoff begun.
    seed: u64,
    /// The backoff of the phase that retries, while it does: it grows as
    /// long as that phase keeps failing.
    backoff: Option<(CampaignPhase, Backoff)>,
    /// When a campaign that is backing off tries again.
    retry_at: Option<Instant>,
    /// --wait-timeout's end.
    gives_up_at: Option<Instant>,
    /// NOSPACE said once already.
    warned_full: bool,
    /// The election is paused: the work is to wait for the pause's end
    /// before the phase's own.
    awaiting_resume: bool,
}

/// The answer to an event.
pub struct Decision<H: Holds> {
    /// The table's answer, in words.
    pub action: CampaignAction,
    /// Say (once a run, and without -v) that etcd's database is full: a
    /// queued replica rides it out, but not in silence for hours.
    pub warn_full: bool,
    /// A lease the campaign has let go of (it starts again, or ends): to
    /// be given back.
    pub released: Option<H::Lease>,
    pub next: Next<H>,
}

/// Where a campaign is after an event.
pub enum Next<H: Holds> {
    /// Still campaigning: its phase's work to do.
    Campaign(Campaign<H>),
    /// Won and claimed: spawn the command with what the win holds.
    Start(Won<H>),
    /// Over before the command: exit with the code.
    Exit(Code),
}

/// The work a campaign's phase asks for, with what it works on.
pub enum Work<'a, H: Holds> {
    /// Connect to etcd.
    Dial,
    /// Ask for a lease.
    Grant,
    /// Write our key on the lease: with --wait, in line; without, only
    /// if a slot is free (try to lead).
    Join { lease: &'a H::Lease, how: Join },
    /// Wait for our turn in line.
    Wait {
        lease: &'a H::Lease,
        place: &'a mut H::Place,
    },
    /// Prove our turn again, with a write.
    Prove {
        lease: &'a H::Lease,
        place: &'a H::Place,
    },
    /// Wait until the election's pause ends (it was found standing, with
    /// --wait): then the phase's own work.
    AwaitResume,
    /// A step of the claim ([`ClaimStep`]), in the order the table takes
    /// them: the guardian ready, no pause, make sure of the lease, the
    /// --once-per window claimed, the guardian handed over.
    Claim {
        lease: &'a H::Lease,
        proof: &'a H::Proof,
        step: ClaimStep,
    },
}

/// How to join the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Join {
    /// With --wait: write our key in line, and learn whether it is among
    /// the first (a proof at once) or behind a runner.
    Enqueue,
    /// Without: our key written only if a slot is free; else learn who
    /// holds it.
    Try,
}

impl<H: Holds> Campaign<H> {
    /// A campaign about to dial: `gives_up_at` is --wait-timeout's end,
    /// `seed` spreads its retries apart from other replicas'.
    pub fn new(rules: Rules, gives_up_at: Option<Instant>, seed: u64) -> Campaign<H> {
        Campaign {
            stage: Stage::Dialling,
            memory: Memory {
                rules,
                queued_before: false,
                looked: false,
            },
            pace: Pace {
                seed,
                backoff: None,
                retry_at: None,
                gives_up_at,
                warned_full: false,
                awaiting_resume: false,
            },
        }
    }

    /// The phase whose work is to be done.
    pub fn phase(&self) -> CampaignPhase {
        self.stage.phase()
    }

    /// What its phase holds: its lease, its place in line, its proof.
    pub fn holding(&self) -> Holding<'_, H> {
        self.stage.holding()
    }

    /// Where its claim is, while it claims.
    pub fn claim_step(&self) -> Option<ClaimStep> {
        match self.stage {
            Stage::Claiming { step, .. } => Some(step),
            Stage::Dialling
            | Stage::Granting
            | Stage::Joining { .. }
            | Stage::Waiting { .. }
            | Stage::Proving { .. } => None,
        }
    }

    /// What it has learnt: the model checker's, to tell states apart.
    #[cfg(any(test, feature = "testing"))]
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// The work the phase asks for, on what it holds.
    pub fn work(&mut self) -> Work<'_, H> {
        if self.pace.awaiting_resume {
            return Work::AwaitResume;
        }
        match &mut self.stage {
            Stage::Dialling => Work::Dial,
            Stage::Granting => Work::Grant,
            Stage::Joining { lease } => Work::Join {
                lease,
                how: match self.memory.rules.wait {
                    true => Join::Enqueue,
                    false => Join::Try,
                },
            },
            Stage::Waiting { lease, place } => Work::Wait { lease, place },
            Stage::Proving { lease, place } => Work::Prove { lease, place },
            Stage::Claiming {
                lease, proof, step, ..
            } => Work::Claim {
                lease,
                proof,
                step: *step,
            },
        }
    }

    /// Whether its work is to wait for the election's pause to end.
    pub fn awaits_resume(&self) -> bool {
        self.pace.awaiting_resume
    }

    /// When the phase's work may start: after a setback, its backoff.
    pub fn work_from(&self) -> Option<Instant> {
        self.pace.retry_at
    }

    /// When --wait-timeout ends the campaign: never before its first look
    /// at the queue (reaching etcd at all is bounded by --dial-timeout).
    pub fn gives_up_at(&self) -> Option<Instant> {
        self.pace.gives_up_at.filter(|_| self.memory.looked)
    }

    /// `event` happened at `now`: what to do, and the campaign moved on.
    pub fn handle(self, event: CampaignEvent<H>, now: Instant) -> Decision<H> {
        let Campaign {
            stage,
            mut memory,
            mut pace,
        } = self;
        let phase = stage.phase();
        // The work that waited for this instant is done (unless the event
        // is ignored: then it still waits).
        let waited = pace.retry_at.take();
        let awaiting = std::mem::take(&mut pace.awaiting_resume);
        memory.learn(phase, &event);
        let full = event.full();
        let answer = table::campaign(stage, event, memory.policy(now));
        let action = answer.action();
        let mut warn_full = false;
        let mut released = None;
        let campaign = |stage: Stage<H>, pace: Pace| {
            Next::Campaign(Campaign {
                stage,
                memory,
                pace,
            })
        };
        let next = match answer {
            Answer::Enter(stage) => {
                pace.backoff = None;
                campaign(stage, pace)
            }
            Answer::Start(won) => Next::Start(won),
            Answer::RetryInLine(stage) => {
                warn_full = pace.retry(phase, full, now);
                campaign(stage, pace)
            }
            Answer::RetryAfresh { released: lease } => {
                warn_full = pace.retry(phase, full, now);
                released = lease;
                campaign(Stage::Granting, pace)
            }
            // A pause waited out, then the same as campaigning again.
            Answer::CampaignAgain { released: lease } | Answer::AwaitResume { released: lease } => {
                pace.awaiting_resume = action == CampaignAction::AwaitResume;
                released = lease;
                campaign(Stage::Granting, pace)
            }
            Answer::Exit {
                code,
                released: lease,
            } => {
                released = lease;
                Next::Exit(code)
            }
            Answer::Ignore(stage) => {
                pace.retry_at = waited;
                pace.awaiting_resume = awaiting;
                campaign(stage, pace)
            }
        };
        Decision {
            action,
            warn_full,
            released,
            next,
        }
    }
}

impl Pace {
    /// The same work of `phase` again after its backoff; whether to say
    /// now that etcd is full (`full`: the setback was NOSPACE).
    fn retry(&mut self, phase: CampaignPhase, full: bool, now: Instant) -> bool {
        let backoff = match &mut self.backoff {
            Some((of, backoff)) if *of == phase => backoff,
            slot => {
                self.seed = self.seed.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
                let backoff = Backoff::seeded(retry_ceiling(phase), self.seed);
                &mut slot.insert((phase, backoff)).1
            }
        };
        self.retry_at = Some(now + backoff.next_delay());
        let warn = full && !self.warned_full;
        self.warned_full |= full;
        warn
    }
}

impl<H: Holds> Clone for Campaign<H>
where
    Stage<H>: Clone,
{
    fn clone(&self) -> Self {
        Campaign {
            stage: self.stage.clone(),
            memory: self.memory,
            pace: self.pace,
        }
    }
}

impl<H: Holds> Copy for Campaign<H> where Stage<H>: Copy {}

impl<H: Holds> std::fmt::Debug for Campaign<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Campaign")
            .field("stage", &self.stage)
            .field("memory", &self.memory)
            .field("pace", &self.pace)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exit::Exit;
    use crate::stage::Bare;
    use crate::table::Code;
    use crate::table::Trouble;
    use CampaignEvent as E;
    use CampaignPhase::*;

    /// Feeds `event` to `campaign`, moved on in place if it goes on.
    fn go(campaign: &mut Campaign<Bare>, event: E, now: Instant) -> Decision<Bare> {
        let decision = campaign.handle(event, now);
        if let Next::Campaign(next) = &decision.next {
            *campaign = *next;
        }
        decision
    }

    fn at(ms: u64) -> Instant {
        Instant::from_boot(Duration::from_millis(ms))
    }

    /// The rules of a campaign with --wait or not, one runner or more,
    /// no --once-per.
    fn rules(wait: bool, single: bool) -> Rules {
        Rules {
            wait,
            single,
            once_per: false,
            kill_after: Duration::from_secs(10),
        }
    }

    /// How long after `now` (in ms) the campaign's work waits.
    fn backoff(campaign: &Campaign<Bare>, now: u64) -> Duration {
        let from = campaign.work_from().expect("a backoff");
        from.since_boot() - Duration::from_millis(now)
    }

    fn waiting_campaign() -> Campaign<Bare> {
        let mut campaign = Campaign::<Bare>::new(rules(true, true), Some(at(5_000)), 7);
        for event in [E::Dialled, E::Granted(()), E::Queued(())] {
            go(&mut campaign, event, at(0));
        }
        assert_eq!(campaign.phase(), Waiting);
        campaign
    }

    #[test]
    fn wait_timeout_counts_only_from_the_first_look() {
        let mut campaign = Campaign::<Bare>::new(rules(true, true), Some(at(0)), 7);
        for event in [E::Dialled, E::Granted(())] {
            go(&mut campaign, event.clone(), at(0));
            assert_eq!(campaign.gives_up_at(), None, "after {event:?}");
        }
        go(&mut campaign, E::Queued(()), at(0));
        assert_eq!(campaign.gives_up_at(), Some(at(0)));
        assert_eq!(
            go(&mut campaign, E::WaitTimeout, at(0)).action,
            CampaignAction::Exit(Code::Conflict)
        );
    }

    #[test]
    fn a_failed_attempt_counts_as_a_look() {
        // Proven as it joined (no look at anyone ahead), then a setback
        // in the proof's write: the retry may be given up on.
        let mut campaign = Campaign::<Bare>::new(rules(true, false), Some(at(0)), 7);
        for event in [E::Dialled, E::Granted(()), E::FirstInLine((), ())] {
            go(&mut campaign, event, at(0));
        }
        assert_eq!(campaign.gives_up_at(), None);
        let retry = go(&mut campaign, E::Etcd(Trouble::Outage), at(0));
        assert_eq!(retry.action, CampaignAction::RetryAfresh);
        assert_eq!(campaign.gives_up_at(), Some(at(0)));
    }

    #[test]
    fn a_retry_waits_its_phases_backoff_which_grows_until_the_phase_moves_on() {
        let mut campaign = waiting_campaign();
        let outage = E::Etcd(Trouble::Outage);
        let first = go(&mut campaign, outage.clone(), at(1_000));
        assert_eq!(first.action, CampaignAction::RetryInLine);
        let delay = backoff(&campaign, 1_000);
        assert!(
            delay <= crate::backoff::FIRST && delay >= crate::backoff::FIRST * 3 / 4,
            "{delay:?}"
        );
        go(&mut campaign, outage.clone(), at(2_000));
        let second = backoff(&campaign, 2_000);
        assert!(
            second > crate::backoff::FIRST,
            "the backoff grows: {second:?}"
        );
        // Success moves on and forgets the backoff.
        assert_eq!(campaign.claim_step(), None);
        go(&mut campaign, E::Proven(()), at(3_000));
        assert_eq!(campaign.phase(), Claiming);
        assert!(campaign.claim_step().is_some());
        assert_eq!(campaign.work_from(), None);
        go(&mut campaign, outage.clone(), at(4_000));
        assert_eq!(
            campaign.phase(),
            Granting,
            "Claiming's outage starts afresh"
        );
        let fresh = backoff(&campaign, 4_000);
        assert!(
            fresh <= crate::backoff::FIRST,
            "a new phase's backoff starts over: {fresh:?}"
        );
    }

    #[test]
    fn a_phase_entered_by_campaigning_again_backs_off_from_the_start() {
        let mut campaign = waiting_campaign();
        let outage = E::Etcd(Trouble::Outage);
        for now in [0, 100, 200] {
            go(&mut campaign, outage.clone(), at(now));
        }
        assert!(
            backoff(&campaign, 200) > crate::backoff::FIRST,
            "Waiting's grew"
        );
        let lost = E::PlaceLost(crate::loss::PlaceLost::LeaseGone);
        assert_eq!(
            go(&mut campaign, lost.clone(), at(300)).action,
            CampaignAction::CampaignAgain
        );
        assert_eq!(
            go(&mut campaign, outage.clone(), at(400)).action,
            CampaignAction::RetryAfresh
        );
        let fresh = backoff(&campaign, 400);
        assert!(
            fresh <= crate::backoff::FIRST,
            "Granting's is its own: {fresh:?}"
        );
    }

    #[test]
    fn the_wait_for_a_retry_is_over_at_the_next_event() {
        let mut campaign = waiting_campaign();
        go(&mut campaign, E::Etcd(Trouble::Outage), at(1_000));
        assert!(campaign.work_from().is_some());
        go(&mut campaign, E::Proven(()), at(1_100));
        assert_eq!(campaign.work_from(), None);
    }

    #[test]
    fn every_backoff_begun_draws_a_jitter_of_its_own() {
        // Each phase that backs off seeds a new backoff from the last
        // seed: after many, replicas of neighbouring seeds still retry
        // apart (a seed that sticks would send them all back at once).
        let last_delay = |seed| {
            let mut pace = Pace {
                seed,
                backoff: None,
                retry_at: None,
                gives_up_at: None,
                warned_full: false,
                awaiting_resume: false,
            };
            for phase in [Granting, Joining].repeat(6) {
                pace.retry(phase, false, at(0));
            }
            pace.retry_at.expect("a retry").since_boot()
        };
        let mut delays: Vec<Duration> = (0..200).map(last_delay).collect();
        delays.sort();
        delays.dedup();
        assert!(delays.len() > 90, "{} distinct of 200", delays.len());
    }

    /// A pause with --wait, found as the run joins or at its claim: it is
    /// waited out with the lease (and so the place) given back, then the
    /// run starts again from a lease. --wait-timeout counts through it; a
    /// signal ends it.
    #[test]
    fn a_pause_is_waited_out_with_wait_and_ends_the_run_without() {
        let mut campaign = Campaign::<Bare>::new(rules(true, true), Some(at(60_000)), 1);
        go(&mut campaign, E::Dialled, at(0));
        go(&mut campaign, E::Granted(()), at(0));
        assert_eq!(campaign.gives_up_at(), None);
        let decision = go(&mut campaign, E::Paused, at(10));
        assert_eq!(decision.action, CampaignAction::AwaitResume);
        assert_eq!(decision.released, Some(()));
        assert!(matches!(campaign.work(), Work::AwaitResume));
        assert_eq!(campaign.phase(), Granting);
        assert_eq!(campaign.gives_up_at(), Some(at(60_000)));
        // A signal or the deadline while it waits: the run ends.
        let signalled = campaign.handle(E::Signal(crate::signal::Signal::SIGTERM), at(20));
        assert!(matches!(signalled.next, Next::Exit(Code::Signalled(_))));
        let timed_out = campaign.handle(E::WaitTimeout, at(60_000));
        assert!(matches!(timed_out.next, Next::Exit(Code::Conflict)));
        // An event the wait cannot give leaves it waiting.
        go(&mut campaign, E::Unpaused, at(30));
        assert!(matches!(campaign.work(), Work::AwaitResume));
        go(&mut campaign, E::Resumed, at(40));
        assert!(matches!(campaign.work(), Work::Grant));
        go(&mut campaign, E::Granted(()), at(50));
        go(&mut campaign, E::FirstInLine((), ()), at(60));
        assert_eq!(campaign.claim_step(), Some(ClaimStep::Guard));
        go(&mut campaign, E::GuardReady, at(60));
        assert_eq!(campaign.claim_step(), Some(ClaimStep::Pause));
        let decision = go(&mut campaign, E::Paused, at(70));
        assert_eq!(decision.action, CampaignAction::AwaitResume);
        assert_eq!(decision.released, Some(()), "the place is given back");
        assert!(matches!(campaign.work(), Work::AwaitResume));
        go(&mut campaign, E::Resumed, at(80));
        assert!(matches!(campaign.work(), Work::Grant));
        for event in [E::Granted(()), E::FirstInLine((), ()), E::GuardReady] {
            go(&mut campaign, event, at(90));
        }
        go(&mut campaign, E::Unpaused, at(90));
        assert_eq!(campaign.claim_step(), Some(ClaimStep::Recheck));

        // Without --wait: the conflict code, the lease given back.
        let mut campaign = Campaign::<Bare>::new(rules(false, true), None, 1);
        go(&mut campaign, E::Dialled, at(0));
        go(&mut campaign, E::Granted(()), at(0));
        let decision = campaign.handle(E::Paused, at(10));
        assert_eq!(decision.released, Some(()));
        assert!(matches!(decision.next, Next::Exit(Code::Conflict)));
    }

    #[test]
    fn a_full_etcd_is_said_once_a_run() {
        let mut campaign = waiting_campaign();
        let full = E::Etcd(Trouble::Full);
        for trouble in [Trouble::Outage, Trouble::Refused] {
            assert!(!go(&mut campaign, E::Etcd(trouble), at(0)).warn_full);
        }
        assert!(go(&mut campaign, full.clone(), at(0)).warn_full);
        assert!(!go(&mut campaign, full.clone(), at(100)).warn_full);
        assert!(!go(&mut campaign, E::Etcd(Trouble::Outage), at(200)).warn_full);
    }

    #[test]
    fn a_waiter_proven_as_it_joins_has_been_queued_and_rides_out_an_outage() {
        let mut campaign = Campaign::<Bare>::new(rules(true, false), None, 7);
        for event in [E::Dialled, E::Granted(()), E::FirstInLine((), ())] {
            go(&mut campaign, event, at(0));
        }
        assert_eq!(campaign.phase(), Proving);
        assert!(campaign.memory().queued_before);
        let decision = go(&mut campaign, E::Etcd(Trouble::Outage), at(0));
        assert_eq!(decision.action, CampaignAction::RetryAfresh);
        assert_eq!(campaign.phase(), Granting);
    }

    #[test]
    fn a_waiter_never_queued_fails_on_an_outage() {
        // --wait, but etcd never worked for it: a wrong endpoint, most
        // likely, not an outage to ride out.
        let mut campaign = Campaign::<Bare>::new(rules(true, true), None, 7);
        go(&mut campaign, E::Dialled, at(0));
        let decision = go(&mut campaign, E::Etcd(Trouble::Outage), at(0));
        assert_eq!(
            decision.action,
            CampaignAction::Exit(Code::Own(Exit::Internal))
        );
    }

    #[test]
    fn a_campaign_that_ends_or_starts_again_lets_go_of_its_lease() {
        let signal = E::Signal(crate::signal::Signal::SIGTERM);
        let decision = waiting_campaign().handle(signal.clone(), at(0));
        assert!(matches!(decision.next, Next::Exit(_)));
        assert_eq!(decision.released, Some(()), "the lease is given back");
        let lost = E::PlaceLost(crate::loss::PlaceLost::LeaseGone);
        let decision = waiting_campaign().handle(lost, at(0));
        assert_eq!(decision.action, CampaignAction::CampaignAgain);
        assert_eq!(decision.released, Some(()));
        let mut granting = Campaign::<Bare>::new(rules(true, true), None, 7);
        go(&mut granting, E::Dialled, at(0));
        let decision = granting.handle(signal, at(0));
        assert_eq!(decision.released, None, "nothing granted yet");
    }

    #[test]
    fn a_trace_names_the_phase_and_the_event_not_what_they_hold() {
        let campaign = waiting_campaign();
        assert!(
            format!("{campaign:?}").starts_with("Campaign { stage: Waiting, memory: "),
            "{campaign:?}"
        );
        assert_eq!(
            format!("{:?}", E::<Bare>::FirstInLine((), ())),
            "FirstInLine"
        );
        assert_eq!(
            format!("{:?}", E::<Bare>::Etcd(Trouble::Full)),
            "Etcd(Full)"
        );
    }

    #[test]
    fn without_wait_nothing_is_ridden_out() {
        let mut campaign = Campaign::<Bare>::new(rules(false, true), None, 7);
        for event in [E::Dialled, E::Granted(()), E::Proven(())] {
            go(&mut campaign, event, at(0));
        }
        assert!(!campaign.memory().queued_before);
        assert_eq!(
            go(&mut campaign, E::Etcd(Trouble::Outage), at(0)).action,
            CampaignAction::Exit(Code::Own(Exit::Internal))
        );
    }

    #[test]
    fn a_place_lost_in_line_starts_again_from_a_new_lease() {
        let mut campaign = waiting_campaign();
        let lost = E::PlaceLost(crate::loss::PlaceLost::LeaseGone);
        assert_eq!(
            go(&mut campaign, lost.clone(), at(0)).action,
            CampaignAction::CampaignAgain
        );
        assert_eq!(campaign.phase(), Granting);
        assert!(campaign.memory().queued_before);
    }
}
