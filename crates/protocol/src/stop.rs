//! The kill sequence as a pure state machine: `--kill-signal` to the job,
//! a grace until SIGKILL is due, then SIGKILL until nothing is left.
//!
//! [`Stop`] is asked what comes next ([`Stop::next`]: an event for the
//! table, due now, or a wait until an instant; [`Stop::want`] says it in
//! the sequence's own words) with the time, the lease as the run sees it
//! and whether anything of the job is left; it is told what was done ([`Stop::signalled`], [`Stop::kill`],
//! [`Stop::killed`]) and of a loss during a kept stop ([`Stop::cut`]). The
//! run's `stopping` performs what it wants with the real job and clock;
//! the model checker with its modelled ones. Neither decides when SIGKILL
//! is due, nor when the job counts as gone: this does.

use std::time::Duration;

use super::schedule::KillSchedule;
pub use super::schedule::LeaseView;
use super::table::{Grace, StoppingEvent};
use crate::planted::{planted, Defect};
use crate::signal::Signal;
use crate::time::Instant;

/// A job being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stop {
    deadline: Deadline,
    step: Step,
    /// Set once leadership is lost during a kept stop: the loss's
    /// deadline for SIGKILL.
    cut: Option<Instant>,
    margin: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    /// Not signalled yet.
    Starting,
    /// --kill-signal sent: the grace runs.
    Grace,
    /// SIGKILL until nothing is left.
    Killing,
    /// SIGKILL sent for as long as its bound allows.
    Killed,
}

impl Deadline {
    /// Whether the lease is kept through the stop (a loss then matters).
    fn kept(self) -> bool {
        match self {
            Deadline::Kept { .. } => true,
            Deadline::Fixed(_) => false,
        }
    }
}

/// When SIGKILL goes out if the job is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Deadline {
    /// Leadership lost: fixed when the stop starts, before the lease could
    /// expire on the server.
    Fixed(Instant),
    /// The lease is kept alive through the stop (--timeout, or what an
    /// exited command left running): --kill-after in full (`asked`), but
    /// never later than the margin before the lease could expire, which
    /// renewals move on while they are acknowledged; and once leadership
    /// is lost during it, the loss's grace ([`Stop::cut`]).
    Kept {
        asked: Instant,
        kill_after: Duration,
    },
}

/// What the stop wants done now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// --kill-signal to the job (its group and every descendant, then
    /// SIGCONT); then [`Stop::signalled`].
    KillSignal,
    /// Wait for the job to be gone until `until`, when the grace is over;
    /// and for a loss of leadership if `loss_matters` (a kept stop, not
    /// cut yet). A renewal moves `until` on: ask again when one lands.
    AwaitGone { until: Instant, loss_matters: bool },
    /// The grace is over (or there was none left): SIGKILL is due.
    GraceOver,
    /// SIGKILL to the job until nothing is left, within a bound; then
    /// [`Stop::killed`].
    Kill,
    /// Nothing of the job is left: the stop is done.
    Gone,
    /// SIGKILL did not clear the job within its bound: the stop is over,
    /// and what is left is the guardian's, which stays armed.
    Abandoned,
}

/// What comes next of a stop, as its run takes it: an event for the
/// table now, or a wait.
#[derive(Debug, Clone)]
pub enum Next {
    /// Due now: a step of the sequence, or its end.
    Event(StoppingEvent),
    /// Nothing is due until `until`, unless the job goes, a signal comes
    /// or (if `loss_matters`) leadership is lost; a renewal may move
    /// `until` on: then ask again.
    Await { until: Instant, loss_matters: bool },
}

/// Why SIGKILL goes out, for the line that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// No grace was left when the stop started (leaderrun was stopped, or
    /// paused, past it): --kill-signal would first continue a stopped job.
    NoGraceLeft,
    /// Renewals stopped being acknowledged during a kept stop, before
    /// --kill-after (`kill_after`) was over.
    Unacknowledged { kill_after: Duration },
    /// The job outlived its grace.
    Outlived,
    /// SIGKILL was already on its way.
    Already,
}

impl Stop {
    /// A stop of the given `grace` that starts at `now`.
    pub fn new(
        grace: Grace,
        schedule: KillSchedule,
        kill_after: Duration,
        now: Instant,
        lease: LeaseView,
    ) -> Stop {
        let deadline = match grace {
            Grace::Lost => Deadline::Fixed(schedule.kill_at_from(lease.expires, now)),
            Grace::Kept => Deadline::Kept {
                asked: now + kill_after,
                kill_after,
            },
        };
        Stop {
            deadline,
            step: Step::Starting,
            cut: None,
            margin: schedule.margin,
        }
    }

    /// When SIGKILL is due, as of `now`.
    pub fn due(&self, now: Instant, lease: LeaseView) -> Instant {
        if let Some(cut) = self.cut {
            return cut;
        }
        match self.deadline {
            Deadline::Fixed(at) => at,
            Deadline::Kept { .. } if lease.gone => now,
            Deadline::Kept { asked, .. } => asked.min(lease.expires - self.margin),
        }
    }

    /// What the stop wants now, with `job_left` whether anything of the
    /// job is left.
    pub fn want(&self, now: Instant, lease: LeaseView, job_left: bool) -> Want {
        if !job_left {
            return Want::Gone;
        }
        match self.step {
            Step::Starting | Step::Grace if now >= self.due(now, lease) => Want::GraceOver,
            Step::Starting => Want::KillSignal,
            Step::Grace if planted(Defect::GoneAtKillSignal) => Want::Gone,
            Step::Grace => Want::AwaitGone {
                until: self.due(now, lease),
                loss_matters: self.deadline.kept() && self.cut.is_none(),
            },
            Step::Killing => Want::Kill,
            Step::Killed => Want::Abandoned,
        }
    }

    /// What comes next ([`Stop::want`], as the event the table answers):
    /// `kill_signal` is --kill-signal's. The run and the model checker
    /// both take their stop's events from here.
    pub fn next(
        &self,
        now: Instant,
        lease: LeaseView,
        job_left: bool,
        kill_signal: Signal,
    ) -> Next {
        Next::Event(match self.want(now, lease, job_left) {
            Want::KillSignal => StoppingEvent::KillSignalDue(kill_signal),
            Want::AwaitGone {
                until,
                loss_matters,
            } => {
                return Next::Await {
                    until,
                    loss_matters,
                }
            }
            Want::GraceOver => StoppingEvent::GraceOver,
            Want::Kill => StoppingEvent::KillDue,
            Want::Gone => StoppingEvent::JobGone,
            Want::Abandoned => StoppingEvent::JobOutlivedKill,
        })
    }

    /// --kill-signal went out.
    pub fn signalled(&mut self) {
        if self.step == Step::Starting {
            self.step = Step::Grace;
        }
    }

    /// Leadership lost during a kept stop, at `now`: SIGKILL is due by the
    /// loss's grace, since the next leader may start at once. Returns when.
    pub fn cut(&mut self, schedule: KillSchedule, now: Instant, lease: LeaseView) -> Instant {
        let at = schedule
            .kill_at_from(lease.expires, now)
            .min(self.due(now, lease));
        self.cut = Some(at);
        at
    }

    /// The grace is over: SIGKILL until nothing is left. Returns why, as
    /// of `now`.
    pub fn kill(&mut self, now: Instant) -> KillReason {
        let reason = match (self.step, self.deadline) {
            (Step::Starting, _) => KillReason::NoGraceLeft,
            (Step::Grace, Deadline::Kept { asked, kill_after })
                if now < asked && self.cut.is_none() =>
            {
                KillReason::Unacknowledged { kill_after }
            }
            (Step::Grace, _) => KillReason::Outlived,
            (Step::Killing | Step::Killed, _) => KillReason::Already,
        };
        self.step = match self.step {
            Step::Starting | Step::Grace => Step::Killing,
            step @ (Step::Killing | Step::Killed) => step,
        };
        reason
    }

    /// SIGKILL went out for as long as its bound allows.
    pub fn killed(&mut self) {
        if self.step == Step::Killing {
            self.step = Step::Killed;
        }
    }

    /// This stop with every instant it holds moved by `move_to`: for a
    /// simulated clock that is set back (the model checker's rebase).
    #[cfg(any(test, feature = "testing"))]
    pub fn retimed(mut self, move_to: impl Fn(Instant) -> Instant) -> Stop {
        self.deadline = match self.deadline {
            Deadline::Fixed(at) => Deadline::Fixed(move_to(at)),
            Deadline::Kept { asked, kill_after } => Deadline::Kept {
                asked: move_to(asked),
                kill_after,
            },
        };
        self.cut = self.cut.map(move_to);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at, lease, ms};

    /// A 3 s TTL (margin 300 ms, grace at most 450 ms), --kill-after 1 s.
    fn schedule() -> KillSchedule {
        KillSchedule::new(ms(3_000), ms(1_000))
    }

    #[test]
    fn a_lost_stop_signals_then_kills_at_the_schedules_time() {
        let mut stop = Stop::new(
            Grace::Lost,
            schedule(),
            ms(1_000),
            at(10_000),
            lease(12_000),
        );
        let lease = lease(12_000);
        assert_eq!(stop.want(at(10_000), lease, true), Want::KillSignal);
        stop.signalled();
        let kill_at = schedule().kill_at_from(at(12_000), at(10_000));
        assert_eq!(
            stop.want(at(10_000), lease, true),
            Want::AwaitGone {
                until: kill_at,
                loss_matters: false
            }
        );
        assert!(kill_at <= at(12_000) - schedule().margin);
        assert_eq!(stop.want(kill_at, lease, true), Want::GraceOver);
        assert_eq!(stop.kill(kill_at), KillReason::Outlived);
        assert_eq!(stop.want(kill_at, lease, true), Want::Kill);
        stop.killed();
        assert_eq!(stop.want(kill_at, lease, false), Want::Gone);
        assert_eq!(stop.want(kill_at, lease, true), Want::Abandoned);
    }

    #[test]
    fn a_job_already_gone_needs_no_stop() {
        let stop = Stop::new(Grace::Kept, schedule(), ms(1_000), at(0), lease(3_000));
        assert_eq!(stop.want(at(0), lease(3_000), false), Want::Gone);
    }

    #[test]
    fn no_grace_left_goes_straight_to_sigkill() {
        // The lease's local deadline is within the margin already.
        let mut stop = Stop::new(
            Grace::Lost,
            schedule(),
            ms(1_000),
            at(10_000),
            lease(10_100),
        );
        assert_eq!(stop.want(at(10_000), lease(10_100), true), Want::GraceOver);
        assert_eq!(stop.kill(at(10_000)), KillReason::NoGraceLeft);
        assert_eq!(stop.want(at(10_000), lease(10_100), true), Want::Kill);
    }

    #[test]
    fn a_kept_stop_gives_kill_after_in_full_while_renewals_land() {
        let mut stop = Stop::new(Grace::Kept, schedule(), ms(1_000), at(0), lease(3_000));
        stop.signalled();
        let want = stop.want(at(0), lease(3_000), true);
        assert_eq!(
            want,
            Want::AwaitGone {
                until: at(1_000),
                loss_matters: true
            }
        );
        assert_eq!(stop.want(at(1_000), lease(4_000), true), Want::GraceOver);
        assert_eq!(stop.kill(at(1_000)), KillReason::Outlived);
    }

    #[test]
    fn a_kept_stop_kills_a_margin_before_an_unrenewed_lease_could_expire() {
        let mut stop = Stop::new(Grace::Kept, schedule(), ms(10_000), at(0), lease(3_000));
        stop.signalled();
        let due = at(3_000) - schedule().margin;
        assert_eq!(stop.due(at(0), lease(3_000)), due);
        assert_eq!(stop.want(due, lease(3_000), true), Want::GraceOver);
        assert_eq!(
            stop.kill(due),
            KillReason::Unacknowledged {
                kill_after: ms(10_000)
            }
        );
    }

    #[test]
    fn a_kept_stop_whose_lease_is_gone_kills_at_once() {
        let mut stop = Stop::new(Grace::Kept, schedule(), ms(1_000), at(0), lease(3_000));
        stop.signalled();
        let gone = LeaseView {
            expires: at(3_000),
            gone: true,
        };
        assert_eq!(stop.want(at(10), gone, true), Want::GraceOver);
    }

    #[test]
    fn a_loss_during_a_kept_stop_cuts_the_grace_to_the_losss() {
        let mut stop = Stop::new(Grace::Kept, schedule(), ms(1_000), at(0), lease(3_000));
        stop.signalled();
        let cut = stop.cut(schedule(), at(100), lease(3_000));
        assert_eq!(cut, schedule().kill_at_from(at(3_000), at(100)));
        assert!(cut < at(1_000));
        assert_eq!(
            stop.want(at(100), lease(3_000), true),
            Want::AwaitGone {
                until: cut,
                loss_matters: false
            }
        );
        // A renewal does not move a cut deadline on.
        assert_eq!(stop.due(at(100), lease(9_000)), cut);
        assert_eq!(stop.kill(cut), KillReason::Outlived);
    }

    #[test]
    fn retimed_moves_every_instant() {
        let mut stop = Stop::new(Grace::Kept, schedule(), ms(1_000), at(5_000), lease(8_000));
        stop.signalled();
        stop.cut(schedule(), at(5_000), lease(8_000));
        let back = stop.retimed(|instant| instant - ms(1_000));
        assert_eq!(
            back.due(at(4_000), lease(7_000)),
            stop.due(at(5_000), lease(8_000)) - ms(1_000)
        );
    }
}
