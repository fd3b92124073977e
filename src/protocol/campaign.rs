//! The campaign's own state: the phase of a run before its command
//! exists, what the run has learnt on the way, and the pace of its
//! retries. Fed each event with the time, a [`Campaign`] asks the table
//! ([`table::campaign`]) what to do, moves itself on as the answer says,
//! and hands the answer back. The run does the new phase's work with etcd
//! (`run::campaign`), waiting first until [`Campaign::work_from`], and
//! races it against [`Campaign::gives_up_at`]; the model checker (`model`)
//! drives the same type, so what a run remembers between events is
//! checked along with the table.

use super::table::{
    self, retry_ceiling, CampaignAction, CampaignEvent, CampaignPhase, Policy, Trouble,
};
use crate::clock::Instant;
use crate::retry::Backoff;

/// A run before its command exists, as far as its protocol goes.
#[derive(Debug, Clone, Copy)]
pub struct Campaign {
    phase: CampaignPhase,
    memory: Memory,
    pace: Pace,
}

/// What the campaign has learnt that changes what the table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Memory {
    /// --wait.
    pub wait: bool,
    /// --max-running 1.
    pub single: bool,
    /// The run has been in the queue once (its key was written with
    /// --wait): etcd worked, so a failure now is an outage to ride out,
    /// not a wrong endpoint.
    pub queued_before: bool,
    /// The campaign has had its first look at the queue (and found someone
    /// ahead), or an attempt failed: --wait-timeout may end the wait from
    /// then on, so that `--wait-timeout 0` tries once, as `flock -w 0`.
    pub looked: bool,
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
}

/// The answer to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub action: CampaignAction,
    /// Say (once a run, and without -v) that etcd's database is full: a
    /// queued replica rides it out, but not in silence for hours.
    pub warn_full: bool,
}

impl Campaign {
    /// A campaign about to dial: `gives_up_at` is --wait-timeout's end,
    /// `seed` spreads its retries apart from other replicas'.
    pub fn new(wait: bool, single: bool, gives_up_at: Option<Instant>, seed: u64) -> Campaign {
        Campaign {
            phase: CampaignPhase::Dialling,
            memory: Memory {
                wait,
                single,
                queued_before: false,
                looked: false,
            },
            pace: Pace {
                seed,
                backoff: None,
                retry_at: None,
                gives_up_at,
                warned_full: false,
            },
        }
    }

    /// The phase whose work is to be done (or, once the table said
    /// `Start` or `Exit`, the phase the campaign ended in).
    pub fn phase(&self) -> CampaignPhase {
        self.phase
    }

    /// What it has learnt: the model checker's, to tell states apart.
    #[cfg(test)]
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// What the table needs to know beyond the phase.
    pub fn policy(&self) -> Policy {
        Policy {
            wait: self.memory.wait,
            queued_before: self.memory.queued_before,
            single: self.memory.single,
        }
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

    /// `event` happened at `now`: what to do, the campaign moved on.
    pub fn handle(&mut self, event: &CampaignEvent, now: Instant) -> Decision {
        use CampaignEvent as E;
        // The work that waited for this instant is done.
        self.pace.retry_at = None;
        if self.memory.wait
            && matches!(
                (self.phase, event),
                (CampaignPhase::Joining, E::Queued | E::Proven)
            )
        {
            self.memory.queued_before = true;
        }
        if !matches!(event, E::Dialled | E::Granted | E::Proven | E::Claimed) {
            self.memory.looked = true;
        }
        let action = table::campaign(self.phase, event, self.policy());
        let mut warn_full = false;
        match action {
            CampaignAction::Enter(phase) => {
                self.pace.backoff = None;
                self.phase = phase;
            }
            CampaignAction::Start => self.pace.backoff = None,
            CampaignAction::RetryInLine => warn_full = self.retry(event, now),
            CampaignAction::RetryAfresh => {
                warn_full = self.retry(event, now);
                self.phase = CampaignPhase::Granting;
            }
            CampaignAction::CampaignAgain => self.phase = CampaignPhase::Granting,
            CampaignAction::Exit(_) | CampaignAction::Ignore => {}
        }
        Decision { action, warn_full }
    }

    /// The same work again after the failing phase's backoff; whether to
    /// say now that etcd is full.
    fn retry(&mut self, event: &CampaignEvent, now: Instant) -> bool {
        let phase = self.phase;
        let pace = &mut self.pace;
        let backoff = match &mut pace.backoff {
            Some((of, backoff)) if *of == phase => backoff,
            slot => {
                pace.seed = pace.seed.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
                let backoff = Backoff::seeded(retry_ceiling(phase), pace.seed);
                &mut slot.insert((phase, backoff)).1
            }
        };
        pace.retry_at = Some(now + backoff.next_delay());
        let full = matches!(event, CampaignEvent::Etcd(Trouble::Full));
        let warn = full && !pace.warned_full;
        pace.warned_full |= full;
        warn
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exit::Exit;
    use crate::protocol::table::Code;
    use CampaignEvent as E;
    use CampaignPhase::*;

    fn at(ms: u64) -> Instant {
        Instant::from_boot(Duration::from_millis(ms))
    }

    /// How long after `now` (in ms) the campaign's work waits.
    fn backoff(campaign: &Campaign, now: u64) -> Duration {
        let from = campaign.work_from().expect("a backoff");
        from.since_boot() - Duration::from_millis(now)
    }

    fn waiting_campaign() -> Campaign {
        let mut campaign = Campaign::new(true, true, Some(at(5_000)), 7);
        for event in [E::Dialled, E::Granted, E::Queued] {
            campaign.handle(&event, at(0));
        }
        assert_eq!(campaign.phase(), Waiting);
        campaign
    }

    #[test]
    fn wait_timeout_counts_only_from_the_first_look() {
        let mut campaign = Campaign::new(true, true, Some(at(0)), 7);
        for event in [E::Dialled, E::Granted] {
            campaign.handle(&event, at(0));
            assert_eq!(campaign.gives_up_at(), None, "after {event:?}");
        }
        campaign.handle(&E::Queued, at(0));
        assert_eq!(campaign.gives_up_at(), Some(at(0)));
        assert_eq!(
            campaign.handle(&E::WaitTimeout, at(0)).action,
            CampaignAction::Exit(Code::Conflict)
        );
    }

    #[test]
    fn a_failed_attempt_counts_as_a_look() {
        let mut campaign = Campaign::new(false, true, Some(at(0)), 7);
        campaign.handle(&E::Dialled, at(0));
        campaign.handle(&E::Etcd(Trouble::Outage), at(0));
        assert_eq!(campaign.gives_up_at(), Some(at(0)));
    }

    #[test]
    fn a_retry_waits_its_phases_backoff_which_grows_until_the_phase_moves_on() {
        let mut campaign = waiting_campaign();
        let outage = E::Etcd(Trouble::Outage);
        let first = campaign.handle(&outage, at(1_000));
        assert_eq!(first.action, CampaignAction::RetryInLine);
        let delay = backoff(&campaign, 1_000);
        assert!(
            delay <= crate::retry::FIRST && delay >= crate::retry::FIRST * 3 / 4,
            "{delay:?}"
        );
        campaign.handle(&outage, at(2_000));
        let second = backoff(&campaign, 2_000);
        assert!(
            second > crate::retry::FIRST,
            "the backoff grows: {second:?}"
        );
        // Success moves on and forgets the backoff.
        campaign.handle(&E::Proven, at(3_000));
        assert_eq!(campaign.phase(), Claiming);
        assert_eq!(campaign.work_from(), None);
        campaign.handle(&outage, at(4_000));
        assert_eq!(
            campaign.phase(),
            Granting,
            "Claiming's outage starts afresh"
        );
        let fresh = backoff(&campaign, 4_000);
        assert!(
            fresh <= crate::retry::FIRST,
            "a new phase's backoff starts over: {fresh:?}"
        );
    }

    #[test]
    fn a_phase_entered_by_campaigning_again_backs_off_from_the_start() {
        let mut campaign = waiting_campaign();
        let outage = E::Etcd(Trouble::Outage);
        for now in [0, 100, 200] {
            campaign.handle(&outage, at(now));
        }
        assert!(
            backoff(&campaign, 200) > crate::retry::FIRST,
            "Waiting's grew"
        );
        let lost = E::PlaceLost(crate::election::PlaceLost::LeaseGone);
        assert_eq!(
            campaign.handle(&lost, at(300)).action,
            CampaignAction::CampaignAgain
        );
        assert_eq!(
            campaign.handle(&outage, at(400)).action,
            CampaignAction::RetryAfresh
        );
        let fresh = backoff(&campaign, 400);
        assert!(
            fresh <= crate::retry::FIRST,
            "Granting's is its own: {fresh:?}"
        );
    }

    #[test]
    fn the_wait_for_a_retry_is_over_at_the_next_event() {
        let mut campaign = waiting_campaign();
        campaign.handle(&E::Etcd(Trouble::Outage), at(1_000));
        assert!(campaign.work_from().is_some());
        campaign.handle(&E::Proven, at(1_100));
        assert_eq!(campaign.work_from(), None);
    }

    #[test]
    fn a_full_etcd_is_said_once_a_run() {
        let mut campaign = waiting_campaign();
        let full = E::Etcd(Trouble::Full);
        assert!(campaign.handle(&full, at(0)).warn_full);
        assert!(!campaign.handle(&full, at(100)).warn_full);
        assert!(
            !campaign
                .handle(&E::Etcd(Trouble::Outage), at(200))
                .warn_full
        );
    }

    #[test]
    fn a_waiter_proven_as_it_joins_has_been_queued_and_rides_out_an_outage() {
        let mut campaign = Campaign::new(true, false, None, 7);
        for event in [E::Dialled, E::Granted, E::Proven] {
            campaign.handle(&event, at(0));
        }
        assert_eq!(campaign.phase(), Proving);
        assert!(campaign.memory().queued_before);
        let decision = campaign.handle(&E::Etcd(Trouble::Outage), at(0));
        assert_eq!(decision.action, CampaignAction::RetryAfresh);
        assert_eq!(campaign.phase(), Granting);
    }

    #[test]
    fn without_wait_nothing_is_ridden_out() {
        let mut campaign = Campaign::new(false, true, None, 7);
        for event in [E::Dialled, E::Granted, E::Proven] {
            campaign.handle(&event, at(0));
        }
        assert!(!campaign.memory().queued_before);
        assert_eq!(
            campaign.handle(&E::Etcd(Trouble::Outage), at(0)).action,
            CampaignAction::Exit(Code::Own(Exit::Internal))
        );
    }

    #[test]
    fn a_place_lost_in_line_starts_again_from_a_new_lease() {
        let mut campaign = waiting_campaign();
        let lost = E::PlaceLost(crate::election::PlaceLost::LeaseGone);
        assert_eq!(
            campaign.handle(&lost, at(0)).action,
            CampaignAction::CampaignAgain
        );
        assert_eq!(campaign.phase(), Granting);
        assert!(campaign.memory().queued_before);
    }
}
