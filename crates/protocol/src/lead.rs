//! A run that leads, as far as its protocol goes: its command's job runs
//! ([`Running`]), then is stopped ([`Stopping`]), then the run resigns
//! ([`Resigning`]). Each state is fed its events with the time and the
//! lease as the run sees it, asks its part of the table
//! ([`table::running`], [`table::stopping`]) what the event means, and
//! comes back as a step that says what to do, with the state it leads to
//! ([`RunningStep`], [`StoppingStep`]). What the kill sequence has due
//! ([`Stopping::next`]) is an event like any other.
//!
//! The run (`run::supervise`, `run::stopping`) does what a step says with
//! the real job, clock and etcd; the model checker (`model`) does it in its
//! world. Neither decides anything: when --timeout ends, whether a job
//! stopped for the terminal may be continued, that --kill-signal starts the
//! grace, when SIGKILL is due and why, when the job counts as gone and
//! whether that proof may disarm the guardian are all said here.

use std::fmt;
use std::time::Duration;

use super::schedule::{KillSchedule, LeaseView};
use super::stop::{KillReason, Next, Stop};
use super::table::{
    self, Code, Loss, RunningAction, RunningEvent, Signal, StopOrder, StoppingAction, StoppingEvent,
};
use crate::planted::{planted, Defect};
use crate::time::Instant;

/// What a leading run's stop is made of: the kill schedule of its lease,
/// --kill-after and --kill-signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Rules {
    schedule: KillSchedule,
    kill_after: Duration,
    kill_signal: Signal,
}

/// A run whose command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Running {
    rules: Rules,
    /// When --timeout ends, if given.
    timeout_at: Option<Instant>,
}

/// What a running command's event leads to: what to do, with the state
/// it is done in. Shown as what to do, without the state.
pub enum RunningStep {
    /// Pass the signal on to the command's job; it runs on.
    Forward(Running, Signal),
    /// Stop like the command, stopped for the terminal by this signal;
    /// once continued, continue the job if [`Running::may_continue`].
    FollowStop(Running, Signal),
    /// Stop the job: the stop begins ([`Stopping::order`] says why and how).
    Stop(Stopping),
}

impl fmt::Debug for RunningStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunningStep::Forward(_, signal) => f.debug_tuple("Forward").field(signal).finish(),
            RunningStep::FollowStop(_, signal) => {
                f.debug_tuple("FollowStop").field(signal).finish()
            }
            RunningStep::Stop(stopping) => f.debug_tuple("Stop").field(&stopping.order).finish(),
        }
    }
}

impl fmt::Debug for StoppingStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoppingStep::Forward(_, signal) => f.debug_tuple("Forward").field(signal).finish(),
            StoppingStep::KillSignal(_, signal) => {
                f.debug_tuple("KillSignal").field(signal).finish()
            }
            StoppingStep::GraceCut(_, loss, at) => {
                f.debug_tuple("GraceCut").field(loss).field(at).finish()
            }
            StoppingStep::GraceOver(_, reason) => f.debug_tuple("GraceOver").field(reason).finish(),
            StoppingStep::Kill(_) => f.write_str("Kill"),
            StoppingStep::Resign(resigning) => f.debug_tuple("Resign").field(resigning).finish(),
        }
    }
}

impl Running {
    /// The command of a win on a lease of `ttl`, spawned at `now`.
    pub fn new(
        ttl: Duration,
        kill_after: Duration,
        kill_signal: Signal,
        timeout: Option<Duration>,
        now: Instant,
    ) -> Running {
        Running {
            rules: Rules {
                schedule: KillSchedule::new(ttl, kill_after),
                kill_after,
                kill_signal,
            },
            timeout_at: timeout.map(|limit| now + limit),
        }
    }

    /// The kill schedule of its lease.
    pub fn schedule(&self) -> KillSchedule {
        self.rules.schedule
    }

    /// When --timeout ends (TimedOut is due), if it was given.
    pub fn timeout_at(&self) -> Option<Instant> {
        self.timeout_at
    }

    /// Whether a job stopped for the terminal may be continued at `now`,
    /// once leaderrun runs again: not if leaderrun was stopped past the
    /// point where the job must be stopped (the loss comes next).
    pub fn may_continue(&self, lease: LeaseView, now: Instant) -> bool {
        !self.rules.schedule.must_stop_at(lease.expires, now)
    }

    /// What `event` leads to, at `now`, with the lease as `lease`.
    pub fn handle(self, event: &RunningEvent, now: Instant, lease: LeaseView) -> RunningStep {
        match table::running(event) {
            RunningAction::Forward(signal) => RunningStep::Forward(self, signal),
            RunningAction::FollowStop(signal) => RunningStep::FollowStop(self, signal),
            RunningAction::Stop(order) => RunningStep::Stop(Stopping::new(self, order, now, lease)),
        }
    }
}

/// A run whose command's job is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stopping {
    rules: Rules,
    order: StopOrder,
    stop: Stop,
}

/// What an event of a stop leads to: what to do, with the state it is
/// done in. Shown as what to do, without the state.
pub enum StoppingStep {
    /// Pass the signal on to the job; the stop goes on.
    Forward(Stopping, Signal),
    /// Send --kill-signal (this one) to the job, its group and every
    /// descendant, then SIGCONT: the grace has begun.
    KillSignal(Stopping, Signal),
    /// Leadership lost (so) during a kept stop: the grace is cut to the
    /// loss's, SIGKILL due at the instant given.
    GraceCut(Stopping, Loss, Instant),
    /// The grace is over (for this reason, to be said): SIGKILL is next.
    GraceOver(Stopping, KillReason),
    /// SIGKILL to the job until nothing is left, within a bound; then
    /// look whether anything is left ([`Stopping::next`]'s `job_left`).
    Kill(Stopping),
    /// The stop is over: resign.
    Resign(Resigning),
}

impl Stopping {
    fn new(running: Running, order: StopOrder, now: Instant, lease: LeaseView) -> Stopping {
        let Rules {
            schedule,
            kill_after,
            ..
        } = running.rules;
        Stopping {
            rules: running.rules,
            order,
            stop: Stop::new(order.grace, schedule, kill_after, now, lease),
        }
    }

    /// Why and how the job is stopped: the code the run ends with, the
    /// grace, and whether the command itself is gone already (then only
    /// what it left may be left: look before the first [`Stopping::next`]).
    pub fn order(&self) -> StopOrder {
        self.order
    }

    /// The kill schedule of its lease.
    pub fn schedule(&self) -> KillSchedule {
        self.rules.schedule
    }

    /// What comes next of the kill sequence at `now`: an event due now,
    /// or a wait; `job_left` says whether anything of the job was left at
    /// the last look.
    pub fn next(&self, now: Instant, lease: LeaseView, job_left: bool) -> Next {
        self.stop.next(now, lease, job_left, self.rules.kill_signal)
    }

    /// What `event` leads to, at `now`, with the lease as `lease`.
    pub fn handle(mut self, event: &StoppingEvent, now: Instant, lease: LeaseView) -> StoppingStep {
        match table::stopping(event) {
            StoppingAction::Forward(signal) => StoppingStep::Forward(self, signal),
            StoppingAction::SendKillSignal(signal) => {
                self.stop.signalled();
                StoppingStep::KillSignal(self, signal)
            }
            StoppingAction::CutGrace(loss) => {
                let at = self.stop.cut(self.rules.schedule, now, lease);
                StoppingStep::GraceCut(self, loss, at)
            }
            StoppingAction::EndGrace if planted(Defect::GraceWithoutKill) => {
                StoppingStep::GraceOver(self, KillReason::Outlived)
            }
            StoppingAction::EndGrace => {
                let reason = self.stop.kill(now);
                StoppingStep::GraceOver(self, reason)
            }
            StoppingAction::Kill => {
                self.stop.killed();
                StoppingStep::Kill(self)
            }
            StoppingAction::Resign => StoppingStep::Resign(Resigning::after(self.order)),
        }
    }

    /// This stop with every instant it holds moved by `move_to`: for a
    /// simulated clock that is set back (the model checker's rebase).
    #[cfg(any(test, feature = "testing"))]
    pub fn retimed(mut self, move_to: impl Fn(Instant) -> Instant) -> Stopping {
        self.stop = self.stop.retimed(move_to);
        self
    }
}

/// A run whose stop is over: it resigns with its records, then exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resigning {
    /// What the run exits with, and its records say.
    pub code: Code,
    /// Whether the job seen gone may tell the guardian "done": not after
    /// a failed wait for the command, when leaderrun's own view of its
    /// processes is in doubt; the guardian then kills the job's group as
    /// it is let go, whatever leaderrun saw.
    pub trust_proof: bool,
    /// Whether the terminal goes back to leaderrun with the modes it had
    /// before: unless the command exited by itself, when what it left is
    /// the command's to say.
    pub restore_terminal: bool,
}

impl Resigning {
    fn after(order: StopOrder) -> Resigning {
        let code = order.code;
        Resigning {
            code,
            trust_proof: order.trust_gone,
            // A command that exited by itself left the terminal as it
            // wanted it; anything else (a signal, a stop of ours) is
            // leaderrun's to restore.
            restore_terminal: match code {
                Code::Command(status) => status.signalled,
                Code::Conflict | Code::Signalled(_) | Code::Own(_) => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::{Exit, Status};
    use crate::table::Grace;
    use crate::testing::{at, lease, ms};

    /// A 3 s lease renewed at 10 s, --kill-after 1 s, --timeout 5 s.
    fn running() -> Running {
        Running::new(
            ms(3_000),
            ms(1_000),
            Signal::SIGTERM,
            Some(ms(5_000)),
            at(10_000),
        )
    }

    fn stopping(event: RunningEvent, now: u64) -> Stopping {
        match running().handle(&event, at(now), lease(13_000)) {
            RunningStep::Stop(stopping) => stopping,
            step => panic!("{event:?} does not stop the job: {step:?}"),
        }
    }

    fn due(stopping: &Stopping, now: u64, job_left: bool) -> StoppingEvent {
        match stopping.next(at(now), lease(13_000), job_left) {
            Next::Event(event) => event,
            next => panic!("nothing is due at {now}: {next:?}"),
        }
    }

    fn exited(code: i32) -> RunningEvent {
        RunningEvent::CommandExited(Status {
            code,
            signalled: false,
        })
    }

    #[test]
    fn the_timeout_counts_from_the_spawn() {
        assert_eq!(running().timeout_at(), Some(at(15_000)));
        let without = Running::new(ms(3_000), ms(1_000), Signal::SIGTERM, None, at(0));
        assert_eq!(without.timeout_at(), None);
    }

    #[test]
    fn a_signal_is_passed_on_and_a_terminal_stop_followed() {
        let signal = RunningEvent::Signal(Signal::SIGHUP);
        assert!(matches!(
            running().handle(&signal, at(10_000), lease(13_000)),
            RunningStep::Forward(_, Signal::SIGHUP)
        ));
        let stopped = RunningEvent::CommandStopped(Signal::SIGTSTP);
        assert!(matches!(
            running().handle(&stopped, at(10_000), lease(13_000)),
            RunningStep::FollowStop(_, Signal::SIGTSTP)
        ));
    }

    #[test]
    fn a_stopped_job_is_continued_only_before_it_must_be_stopped() {
        let running = running();
        let stop_from = running.schedule().stop_from(at(13_000));
        let just_before = stop_from - ms(1);
        assert!(running.may_continue(lease(13_000), just_before));
        assert!(!running.may_continue(lease(13_000), stop_from));
    }

    #[test]
    fn each_way_of_ending_stops_with_its_code_and_grace() {
        let lost = RunningEvent::LeadershipLost(Loss::LeaseGone);
        let cases = [
            (lost, Code::Own(Exit::LeadershipLost), Grace::Lost, true),
            (
                RunningEvent::TimedOut,
                Code::Own(Exit::TimedOut),
                Grace::Kept,
                true,
            ),
            (
                RunningEvent::WaitFailed,
                Code::Own(Exit::Internal),
                Grace::Kept,
                false,
            ),
        ];
        for (event, code, grace, trust_gone) in cases {
            let order = stopping(event.clone(), 10_000).order();
            assert_eq!((order.code, order.grace), (code, grace), "{event:?}");
            assert_eq!(order.trust_gone, trust_gone, "{event:?}");
            assert!(!order.exited, "{event:?}");
        }
        let order = stopping(exited(3), 10_000).order();
        assert!(order.exited && order.trust_gone);
        assert_eq!(order.grace, Grace::Kept);
    }

    #[test]
    fn a_stop_signals_waits_kills_and_resigns() {
        let lost = RunningEvent::LeadershipLost(Loss::LeaseGone);
        let stopping = stopping(lost, 10_000);
        let event = due(&stopping, 10_000, true);
        assert!(matches!(
            event,
            StoppingEvent::KillSignalDue(Signal::SIGTERM)
        ));
        let StoppingStep::KillSignal(stopping, Signal::SIGTERM) =
            stopping.handle(&event, at(10_000), lease(13_000))
        else {
            panic!("--kill-signal is not sent")
        };
        // The grace runs: nothing is due before its end.
        let kill_at = stopping.schedule().kill_at_from(at(13_000), at(10_000));
        assert!(kill_at <= at(13_000) - stopping.schedule().margin);
        assert!(matches!(
            stopping.next(at(10_000), lease(13_000), true),
            Next::Await { until, loss_matters: false } if until == kill_at
        ));
        let over = due(&stopping, millis(kill_at), true);
        assert!(matches!(over, StoppingEvent::GraceOver));
        let StoppingStep::GraceOver(stopping, KillReason::Outlived) =
            stopping.handle(&over, kill_at, lease(13_000))
        else {
            panic!("the grace does not end")
        };
        let kill = due(&stopping, millis(kill_at), true);
        let StoppingStep::Kill(stopping) = stopping.handle(&kill, kill_at, lease(13_000)) else {
            panic!("SIGKILL does not go out")
        };
        let gone = due(&stopping, millis(kill_at), false);
        assert!(matches!(gone, StoppingEvent::JobGone));
        let StoppingStep::Resign(resigning) = stopping.handle(&gone, kill_at, lease(13_000)) else {
            panic!("a stopped job does not resign")
        };
        assert_eq!(resigning.code, Code::Own(Exit::LeadershipLost));
        assert!(resigning.trust_proof && resigning.restore_terminal);
    }

    #[test]
    fn a_job_that_outlives_sigkill_resigns_without_its_proof_being_asked() {
        let stopping = stopping(RunningEvent::TimedOut, 10_000);
        let over = due(&stopping, 11_000, true);
        let StoppingStep::GraceOver(stopping, KillReason::NoGraceLeft) =
            stopping.handle(&over, at(11_000), lease(13_000))
        else {
            panic!("a stop with no grace left does not end its grace at once")
        };
        let kill = due(&stopping, 11_000, true);
        let StoppingStep::Kill(stopping) = stopping.handle(&kill, at(11_000), lease(13_000)) else {
            panic!("SIGKILL does not go out")
        };
        let outlived = due(&stopping, 12_000, true);
        assert!(matches!(outlived, StoppingEvent::JobOutlivedKill));
        assert!(matches!(
            stopping.handle(&outlived, at(12_000), lease(13_000)),
            StoppingStep::Resign(Resigning {
                code: Code::Own(Exit::TimedOut),
                ..
            })
        ));
    }

    #[test]
    fn a_loss_during_a_kept_stop_cuts_its_grace() {
        let stopping = stopping(RunningEvent::TimedOut, 10_000);
        let signal = due(&stopping, 10_000, true);
        let StoppingStep::KillSignal(stopping, _) =
            stopping.handle(&signal, at(10_000), lease(13_000))
        else {
            panic!("--kill-signal is not sent")
        };
        assert!(matches!(
            stopping.next(at(10_000), lease(13_000), true),
            Next::Await {
                loss_matters: true,
                ..
            }
        ));
        let lost = StoppingEvent::LeadershipLost(Loss::LeaseGone);
        let StoppingStep::GraceCut(stopping, Loss::LeaseGone, cut) =
            stopping.handle(&lost, at(10_100), lease(13_000))
        else {
            panic!("a loss does not cut the grace")
        };
        let schedule = stopping.schedule();
        assert_eq!(cut, schedule.kill_at_from(at(13_000), at(10_100)));
        assert!(matches!(
            stopping.next(at(10_100), lease(13_000), true),
            Next::Await { until, loss_matters: false } if until == cut
        ));
    }

    #[test]
    fn a_signal_during_a_stop_is_passed_on() {
        let stopping = stopping(RunningEvent::TimedOut, 10_000);
        let signal = StoppingEvent::Signal(Signal::SIGINT);
        assert!(matches!(
            stopping.handle(&signal, at(10_000), lease(13_000)),
            StoppingStep::Forward(_, Signal::SIGINT)
        ));
    }

    #[test]
    fn a_command_that_exited_leaves_the_terminal_and_its_proof_as_they_are() {
        let stopping = stopping(exited(3), 10_000);
        let gone = due(&stopping, 10_000, false);
        let StoppingStep::Resign(resigning) = stopping.handle(&gone, at(10_000), lease(13_000))
        else {
            panic!("a job already gone does not resign")
        };
        assert_eq!(
            resigning.code,
            Code::Command(Status {
                code: 3,
                signalled: false
            })
        );
        assert!(resigning.trust_proof && !resigning.restore_terminal);
        let killed = stopping_of_signalled();
        assert!(killed.restore_terminal);
    }

    /// A command that a signal ended: the terminal is restored after it.
    fn stopping_of_signalled() -> Resigning {
        let ended = RunningEvent::CommandExited(Status {
            code: 143,
            signalled: true,
        });
        let stopping = stopping(ended, 10_000);
        let gone = due(&stopping, 10_000, false);
        match stopping.handle(&gone, at(10_000), lease(13_000)) {
            StoppingStep::Resign(resigning) => resigning,
            step => panic!("a job already gone does not resign: {step:?}"),
        }
    }

    #[test]
    fn a_failed_wait_does_not_trust_the_job_seen_gone() {
        let stopping = stopping(RunningEvent::WaitFailed, 10_000);
        let gone = due(&stopping, 10_000, false);
        assert!(matches!(
            stopping.handle(&gone, at(10_000), lease(13_000)),
            StoppingStep::Resign(Resigning {
                trust_proof: false,
                ..
            })
        ));
    }

    #[test]
    fn steps_show_what_to_do_without_the_state() {
        let forward = running().handle(
            &RunningEvent::Signal(Signal::SIGHUP),
            at(10_000),
            lease(13_000),
        );
        assert_eq!(format!("{forward:?}"), "Forward(SIGHUP)");
        let stop = running().handle(&RunningEvent::TimedOut, at(10_000), lease(13_000));
        assert!(
            format!("{stop:?}").starts_with("Stop(StopOrder {"),
            "{stop:?}"
        );
        let RunningStep::Stop(stopping) = stop else {
            panic!("--timeout does not stop the job")
        };
        let signal = due(&stopping, 10_000, true);
        let step = stopping.handle(&signal, at(10_000), lease(13_000));
        assert_eq!(format!("{step:?}"), "KillSignal(SIGTERM)");
    }

    fn millis(instant: Instant) -> u64 {
        instant.since_boot().as_millis() as u64
    }
}
