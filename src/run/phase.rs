//! The one place that decides what each event does in each phase of a run.
//!
//! A run passes through these phases, in order (campaigning again goes back
//! to granting):
//!
//! | phase      | what leaderrun does                                             |
//! |------------|-----------------------------------------------------------------|
//! | Dialling   | starts the guardian, connects to etcd                           |
//! | Granting   | asks for a lease                                                |
//! | Joining    | writes its candidate key (or, without --wait, tries to lead)    |
//! | Waiting    | watches the key ahead of it                                     |
//! | Proving    | with several runners, a waiter proves its turn again in a txn   |
//! |            | that rewrites its key (one runner: the read that found its turn |
//! |            | is the proof, and a run goes from Waiting to Claiming)          |
//! | Claiming   | the guardian again if it failed to start; the --once-per window |
//! | Running    | the command runs                                                |
//! | Stopping   | the kill schedule: --kill-signal, the grace, SIGKILL            |
//! | Resigning  | deletes its key with the run's records in one write (not lost), |
//! |            | else revokes its lease, then the records; an unspent window is  |
//! |            | revoked; each within a short bound; beside it, the guardian is  |
//! |            | released and collected, only once the job is known gone (else   |
//! |            | it stays armed, and kills the job's group as leaderrun exits)   |
//!
//! The events, and what each does ([`decide`] is this table, as code; a
//! phase's own work ends in one of the first group):
//!
//! | event \ phase              | Dialling … Claiming                        | Running              | Stopping    |
//! |----------------------------|--------------------------------------------|----------------------|-------------|
//! | the phase's work done (Dialled, Granted, Queued, Proven, Claimed) | the next phase (1 runner: a proof goes straight to Claiming; several, a waiter's proof writes: Proving) | – | – |
//! | someone else leads (Held)  | give back, exit the conflict code          | –                    | –           |
//! | the window already ran     | give back, exit the conflict code          | –                    | –           |
//! | the guardian failed        | give back, exit 125                        | –                    | –           |
//! | the spawn failed           | –                                          | resign, a not-started record, 126/127 | – |
//! | a forwarded signal (1)     | give back, exit 128+N: nothing ran         | forward to the job   | forward     |
//! | --wait-timeout             | give back, exit the conflict code          | –                    | –           |
//! | our place lost             | campaign again (--wait), else conflict     | –                    | –           |
//! | leadership lost (2)        | –                                          | stop the job, 124    | cut the grace to the loss's |
//! | the command exited         | –                                          | stop its leftovers, its status | – |
//! | waiting for it failed      | –                                          | stop the job, 125; the guardian stays armed | – |
//! | --timeout passed           | –  (it counts from the command's start)    | stop the job, 123    | –           |
//! | the command stopped (tty)  | –                                          | stop like it; continue with it | – |
//! | the job gone               | –                                          | –                    | resign, exit with the stop's code |
//! | the grace over             | –                                          | –                    | SIGKILL until gone |
//! | etcd error                 | first attempt: fail (125); once queued: retry with backoff (waiting: in line still) | (the lease deadline decides) | – |
//! | etcd refused (3)           | fail (125)                                 | –                    | –           |
//!
//! Resigning (the way out, after every ending) listens to nothing: each
//! of its requests, and all of them together, are bounded by [`CLEANUP`].
//! "–" is "ignore": what the phase is doing already answers it.
//!
//! (1) SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, but for
//! one ignored when leaderrun started, which stays ignored (`signals`).
//!
//! (2) The lease gone, its local deadline passed, or our key deleted,
//! replaced or overwritten; while stopping, only a stop that kept the
//! lease (--timeout, leftovers) watches for it.
//!
//! (3) Credentials, a permission or a certificate refused, or replicas
//! that disagree on a setting. Also when they changed under a queued replica: authentication
//! switched on, its password changed, its client certificate refused by
//! every endpoint (or theirs not trusted) with the TLS files read again.
//! A JWT token made stale by a change to etcd's users or roles is not a
//! refusal: the request authenticates again and is asked once more
//! (`etcd::connection`).
//!
//! Every clean-up on the way out (giving back a lease, a queue place or an
//! unspent window) is best effort and bounded by [`CLEANUP`]: what is not
//! revoked expires by itself within its TTL. The lease deadline, the grace
//! and every retry wait run on the boot-time clock (`clock`).

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::election::record::Outcome;
use crate::election::{KeyLoss, PlaceLost};
use crate::exit::Exit;
pub use crate::exit::{Code, Status};
use crate::planted::{planted, Defect};
pub use crate::protocol::stop::Grace;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Dialling,
    Granting,
    Joining,
    Waiting,
    Proving,
    Claiming,
    Running,
    Stopping,
    Resigning,
}

/// Why leadership ended while the command ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loss {
    /// etcd said the lease no longer exists (revoked, or expired).
    LeaseGone,
    /// Renewals went unacknowledged so long that the lease could be about
    /// to expire on the server.
    Unacknowledged {
        silent_for: Duration,
        ttl: Duration,
        /// Why the last renewal failed, if the keeper saw it fail.
        trouble: Option<std::sync::Arc<str>>,
    },
    Key(KeyLoss),
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loss::LeaseGone => {
                f.write_str("etcd says the lease no longer exists (revoked or expired)")
            }
            Loss::Unacknowledged {
                silent_for,
                ttl,
                trouble,
            } => {
                write!(
                    f,
                    "etcd has not acknowledged a lease renewal for {} (TTL {})",
                    humantime::format_duration(
                        Duration::from_millis(silent_for.as_millis() as u64)
                    ),
                    humantime::format_duration(*ttl)
                )?;
                match trouble {
                    Some(trouble) => write!(f, "; the last renewal failed: {trouble}"),
                    None => Ok(()),
                }
            }
            Loss::Key(loss) => loss.fmt(f),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Event {
    // The work of a phase, done: what comes next is the table's.
    /// Dialling: the client is made, the guardian started (or not).
    Dialled,
    /// Granting: a lease is ours.
    Granted,
    /// Joining with --wait: our key is in line, behind a runner.
    Queued,
    /// Our win is proven: our key, alive and among the first
    /// --max-running in line, read at one revision (or, Proving, written
    /// in the proof's transaction).
    Proven,
    /// Claiming: the guardian is ready and the --once-per window (if any)
    /// is ours.
    Claimed,
    /// Someone else leads (without --wait).
    Held,
    /// This `--once-per` window already had its run.
    WindowTaken,
    /// The guardian could not be started, on winning.
    GuardianFailed,
    /// The command could not be started: 126 or 127.
    SpawnFailed(Exit),
    /// Stopping: nothing of the command's job is left.
    JobGone,
    /// Stopping: the grace is over and the job is still there.
    GraceOver,

    // What happens to a run, from outside its work.
    Signal(Signal),
    WaitTimeout,
    /// Our place in the queue, or our win, is gone before the command ran.
    PlaceLost(PlaceLost),
    /// Leadership is gone while the command runs (or is being stopped).
    LeadershipLost(Loss),
    /// The command exited, with the shell's view of its status.
    CommandExited(Status),
    /// Waiting for the command failed: what it did is unknown.
    WaitFailed,
    /// The command has run for --timeout.
    TimedOut,
    /// The command stopped for the terminal.
    CommandStopped(Signal),
    /// An etcd request failed.
    Etcd(Trouble),
}

/// How an etcd request failed, as far as the table cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// etcd turned our credentials, a permission or our certificate down,
    /// or the replicas disagree on a setting: every endpoint and every
    /// retry would say the same.
    Refused,
    /// The database is full (NOSPACE): refused until an operator acts.
    Full,
    /// Anything else: unreachable, timed out, an election in etcd.
    Outage,
}

/// What the policy of a run needs to know beyond the phase.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// --wait: queue rather than exit when someone else leads.
    pub wait: bool,
    /// This run has already been in the queue once: etcd worked, so a
    /// failure now is an outage to ride out, not a wrong endpoint.
    pub queued_before: bool,
    /// --max-running 1: the read that finds our turn proves the win; with
    /// more runners the proof also writes, to wake the waiter behind.
    pub single: bool,
}

impl Code {
    /// What the run's end record says of a command that ended with this
    /// code (or never started).
    pub fn outcome(self) -> Outcome {
        match self {
            Code::Command(status) if status.code == 0 => Outcome::Succeeded,
            Code::Command(status) if status.signalled => Outcome::Signalled,
            Code::Command(_) => Outcome::Failed,
            Code::Own(Exit::LeadershipLost) => Outcome::Lost,
            Code::Own(Exit::TimedOut) => Outcome::TimedOut,
            Code::Own(Exit::NotFound | Exit::NotExecutable) => Outcome::NotStarted,
            Code::Own(_) | Code::Conflict | Code::Signalled(_) => Outcome::Failed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The next phase's work.
    Enter(Phase),
    /// The same work again, after a backoff: an outage, ridden out once
    /// queued (Waiting: in line still; before: with a new lease).
    Retry,
    /// New lease, back of the queue.
    CampaignAgain,
    /// Give back what is held, exit with the code: nothing ran.
    Exit(Code),
    /// Pass the signal on to the command's job.
    Forward,
    /// Stop like the command, and continue it when continued.
    FollowStop,
    /// Stop the command's job (what is left of it) on the kill schedule,
    /// then resign and exit with the code.
    Stop(Code, Grace),
    /// Leadership lost during a kept stop: the grace is cut to the loss's.
    CutGrace,
    /// SIGKILL to the job until nothing is left.
    Kill,
    /// The job is gone: resign, with the run's records, and exit with
    /// the code the stop carried.
    Resign,
    /// The command could not be started: resign with a record saying so,
    /// and exit with this code (126, 127).
    NotStarted(Exit),
    /// Nothing to do: what this phase is doing already answers it.
    Ignore,
}

/// The ceiling of a retry's backoff, by phase: a waiter's place rides on
/// its lease, so it looks again soon; before that, a struggling etcd is
/// not hammered by many replicas.
pub fn retry_ceiling(phase: Phase) -> Duration {
    match phase {
        Phase::Waiting => crate::retry::KEEPING,
        Phase::Dialling
        | Phase::Granting
        | Phase::Joining
        | Phase::Proving
        | Phase::Claiming
        | Phase::Running
        | Phase::Stopping
        | Phase::Resigning => crate::retry::WAITING,
    }
}

/// The table in the module doc, as code: every event in every phase, with
/// no arm for "anything else", so that a new event or phase is decided
/// here before it compiles.
pub fn decide(phase: Phase, event: &Event, policy: Policy) -> Action {
    match event {
        Event::Dialled => progress(phase, Phase::Dialling, Action::Enter(Phase::Granting)),
        Event::Granted => progress(phase, Phase::Granting, Action::Enter(Phase::Joining)),
        Event::Queued => progress(phase, Phase::Joining, Action::Enter(Phase::Waiting)),
        Event::Proven => proven(phase, policy),
        Event::Claimed => progress(phase, Phase::Claiming, Action::Enter(Phase::Running)),
        Event::Held | Event::WaitTimeout => before_the_command(phase, Action::Exit(Code::Conflict)),
        Event::WindowTaken => progress(phase, Phase::Claiming, Action::Exit(Code::Conflict)),
        Event::GuardianFailed => progress(
            phase,
            Phase::Claiming,
            Action::Exit(Code::Own(Exit::Internal)),
        ),
        Event::SpawnFailed(exit) => progress(phase, Phase::Running, Action::NotStarted(*exit)),
        Event::JobGone => progress(phase, Phase::Stopping, Action::Resign),
        Event::GraceOver => progress(phase, Phase::Stopping, grace_over()),
        Event::Signal(signal) => signalled(phase, *signal),
        Event::PlaceLost(_) if policy.wait => before_the_command(phase, Action::CampaignAgain),
        Event::PlaceLost(_) => before_the_command(phase, Action::Exit(Code::Conflict)),
        Event::LeadershipLost(_) => leading(
            phase,
            stop(Exit::LeadershipLost, Grace::Lost),
            Action::CutGrace,
        ),
        Event::CommandExited(status) => progress(
            phase,
            Phase::Running,
            Action::Stop(Code::Command(*status), Grace::Kept),
        ),
        Event::WaitFailed => progress(phase, Phase::Running, stop(Exit::Internal, Grace::Kept)),
        Event::TimedOut => leading(phase, stop(Exit::TimedOut, Grace::Kept), Action::Ignore),
        Event::CommandStopped(_) => progress(phase, Phase::Running, Action::FollowStop),
        Event::Etcd(trouble) => etcd_trouble(phase, *trouble, policy),
    }
}

/// The grace is over and the job still there: SIGKILL until it is gone.
fn grace_over() -> Action {
    if planted(Defect::ResignBeforeDead) {
        return Action::Resign;
    }
    Action::Kill
}

fn stop(exit: Exit, grace: Grace) -> Action {
    Action::Stop(Code::Own(exit), grace)
}

/// `then` in the phase whose work the event ends; elsewhere, nothing.
fn progress(phase: Phase, of: Phase, then: Action) -> Action {
    if phase == of {
        then
    } else {
        Action::Ignore
    }
}

/// A proof: with one runner (or a proof already written), straight to
/// claiming; a waiter of several runners proves again with a write.
fn proven(phase: Phase, policy: Policy) -> Action {
    use Phase::*;
    match phase {
        Joining | Waiting if !policy.single && policy.wait => Action::Enter(Proving),
        Joining | Waiting | Proving => Action::Enter(Claiming),
        Dialling | Granting | Claiming | Running | Stopping | Resigning => Action::Ignore,
    }
}

/// `then` before the command exists; nothing once it does.
fn before_the_command(phase: Phase, then: Action) -> Action {
    use Phase::*;
    match phase {
        Dialling | Granting | Joining | Waiting | Proving | Claiming => then,
        Running | Stopping | Resigning => Action::Ignore,
    }
}

/// `running` while the command runs, `stopping` while it is stopped;
/// nothing before or after.
fn leading(phase: Phase, running: Action, stopping: Action) -> Action {
    use Phase::*;
    match phase {
        Running => running,
        Stopping => stopping,
        Dialling | Granting | Joining | Waiting | Proving | Claiming | Resigning => Action::Ignore,
    }
}

/// A forwarded signal: before the command, nothing ran and we exit
/// 128+N; while there is a job, it is passed on; resigning, it waits.
fn signalled(phase: Phase, signal: Signal) -> Action {
    use Phase::*;
    match phase {
        Dialling | Granting | Joining | Waiting | Proving | Claiming => {
            Action::Exit(Code::Signalled(signal))
        }
        Running | Stopping => Action::Forward,
        Resigning => Action::Ignore,
    }
}

/// An etcd request failed: before the command, fatal on a first attempt or
/// a refusal, ridden out once queued; the lease deadline decides while the
/// command runs.
fn etcd_trouble(phase: Phase, trouble: Trouble, policy: Policy) -> Action {
    let ride_out = policy.wait && policy.queued_before;
    let then = match trouble {
        Trouble::Refused => Action::Exit(Code::Own(Exit::Internal)),
        Trouble::Full | Trouble::Outage if ride_out => Action::Retry,
        Trouble::Full | Trouble::Outage => Action::Exit(Code::Own(Exit::Internal)),
    };
    before_the_command(phase, then)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Phase; 9] = [
        Phase::Dialling,
        Phase::Granting,
        Phase::Joining,
        Phase::Waiting,
        Phase::Proving,
        Phase::Claiming,
        Phase::Running,
        Phase::Stopping,
        Phase::Resigning,
    ];

    fn policy(wait: bool, queued_before: bool) -> Policy {
        Policy {
            wait,
            queued_before,
            single: true,
        }
    }

    const EXITED: Status = Status {
        code: 3,
        signalled: false,
    };

    #[test]
    fn a_signal_before_the_command_exits_and_after_it_is_forwarded() {
        for phase in ALL {
            let action = decide(phase, &Event::Signal(Signal::SIGINT), policy(true, true));
            let expected = match phase {
                Phase::Running | Phase::Stopping => Action::Forward,
                Phase::Resigning => Action::Ignore,
                _ => Action::Exit(Code::Signalled(Signal::SIGINT)),
            };
            assert_eq!(action, expected, "{phase:?}");
        }
    }

    /// (phase, event, --wait, queued before) → what happens.
    type Case = (Phase, Event, bool, bool, Action);

    fn check(cases: &[Case]) {
        for (phase, event, wait, queued_before, expected) in cases {
            let action = decide(*phase, event, policy(*wait, *queued_before));
            assert_eq!(action, *expected, "{event:?} in {phase:?}, wait {wait}");
        }
    }

    const FAIL: Action = Action::Exit(Code::Own(Exit::Internal));

    #[test]
    fn etcd_errors_fail_the_first_attempt_and_are_ridden_out_once_queued() {
        let error = Event::Etcd(Trouble::Outage);
        let full = Event::Etcd(Trouble::Full);
        let refused = Event::Etcd(Trouble::Refused);
        check(&[
            (Phase::Dialling, error.clone(), true, false, FAIL),
            (Phase::Granting, error.clone(), true, true, Action::Retry),
            (Phase::Waiting, full.clone(), true, true, Action::Retry),
            (Phase::Granting, error.clone(), false, true, FAIL),
            (Phase::Joining, full, false, false, FAIL),
            (Phase::Waiting, refused.clone(), true, true, FAIL),
            (Phase::Granting, refused, true, true, FAIL),
            (Phase::Running, error.clone(), true, true, Action::Ignore),
            (Phase::Stopping, error, true, true, Action::Ignore),
        ]);
    }

    #[test]
    fn losing_a_place_campaigns_again_only_when_waiting() {
        let lost = Event::PlaceLost(PlaceLost::LeaseGone);
        let loss = Event::LeadershipLost(Loss::Key(KeyLoss::Overwritten));
        check(&[
            (
                Phase::Waiting,
                lost.clone(),
                true,
                true,
                Action::CampaignAgain,
            ),
            (
                Phase::Proving,
                lost.clone(),
                false,
                false,
                Action::Exit(Code::Conflict),
            ),
            (Phase::Running, lost, true, true, Action::Ignore),
            (
                Phase::Running,
                loss.clone(),
                true,
                true,
                Action::Stop(Code::Own(Exit::LeadershipLost), Grace::Lost),
            ),
            (Phase::Stopping, loss.clone(), true, true, Action::CutGrace),
            (Phase::Resigning, loss.clone(), true, true, Action::Ignore),
            (Phase::Waiting, loss, true, true, Action::Ignore),
        ]);
    }

    #[test]
    fn the_command_is_followed_only_while_it_runs() {
        let stopped = Event::CommandStopped(Signal::SIGTSTP);
        let exited = Event::CommandExited(EXITED);
        check(&[
            (
                Phase::Running,
                stopped.clone(),
                false,
                false,
                Action::FollowStop,
            ),
            (Phase::Stopping, stopped, false, false, Action::Ignore),
            (
                Phase::Running,
                exited.clone(),
                false,
                false,
                Action::Stop(Code::Command(EXITED), Grace::Kept),
            ),
            (Phase::Stopping, exited, false, false, Action::Ignore),
            (
                Phase::Running,
                Event::WaitFailed,
                false,
                false,
                Action::Stop(Code::Own(Exit::Internal), Grace::Kept),
            ),
            (
                Phase::Running,
                Event::TimedOut,
                false,
                false,
                Action::Stop(Code::Own(Exit::TimedOut), Grace::Kept),
            ),
            (
                Phase::Stopping,
                Event::TimedOut,
                false,
                false,
                Action::Ignore,
            ),
            (
                Phase::Waiting,
                Event::WaitTimeout,
                true,
                true,
                Action::Exit(Code::Conflict),
            ),
            (
                Phase::Running,
                Event::WaitTimeout,
                true,
                true,
                Action::Ignore,
            ),
        ]);
    }

    #[test]
    fn each_phase_s_work_leads_to_the_next_and_nowhere_else() {
        let progress = [
            (
                Event::Dialled,
                Phase::Dialling,
                Action::Enter(Phase::Granting),
            ),
            (
                Event::Granted,
                Phase::Granting,
                Action::Enter(Phase::Joining),
            ),
            (Event::Queued, Phase::Joining, Action::Enter(Phase::Waiting)),
            (
                Event::Claimed,
                Phase::Claiming,
                Action::Enter(Phase::Running),
            ),
            (
                Event::WindowTaken,
                Phase::Claiming,
                Action::Exit(Code::Conflict),
            ),
            (Event::GuardianFailed, Phase::Claiming, FAIL),
            (
                Event::SpawnFailed(Exit::NotFound),
                Phase::Running,
                Action::NotStarted(Exit::NotFound),
            ),
            (Event::JobGone, Phase::Stopping, Action::Resign),
            (Event::GraceOver, Phase::Stopping, Action::Kill),
        ];
        for (event, of, then) in progress {
            for phase in ALL {
                let expected = if phase == of { then } else { Action::Ignore };
                assert_eq!(
                    decide(phase, &event, policy(true, true)),
                    expected,
                    "{event:?} in {phase:?}"
                );
            }
        }
    }

    #[test]
    fn with_one_runner_a_proof_goes_straight_to_claiming() {
        for phase in ALL {
            let expected = match phase {
                Phase::Joining | Phase::Waiting | Phase::Proving => Action::Enter(Phase::Claiming),
                _ => Action::Ignore,
            };
            let action = decide(phase, &Event::Proven, policy(true, true));
            assert_eq!(action, expected, "{phase:?}");
        }
    }

    #[test]
    fn several_runners_prove_a_waiter_s_turn_with_a_write() {
        let several = Policy {
            wait: true,
            queued_before: true,
            single: false,
        };
        let without_wait = Policy {
            wait: false,
            ..several
        };
        assert_eq!(
            decide(Phase::Waiting, &Event::Proven, several),
            Action::Enter(Phase::Proving)
        );
        assert_eq!(
            decide(Phase::Joining, &Event::Proven, several),
            Action::Enter(Phase::Proving)
        );
        // Without --wait, the attempt's own transaction proved it.
        assert_eq!(
            decide(Phase::Joining, &Event::Proven, without_wait),
            Action::Enter(Phase::Claiming)
        );
        assert_eq!(
            decide(Phase::Proving, &Event::Proven, several),
            Action::Enter(Phase::Claiming)
        );
    }

    #[test]
    fn the_record_says_how_the_command_ended() {
        let status = |code, signalled| Code::Command(Status { code, signalled });
        assert_eq!(status(0, false).outcome(), Outcome::Succeeded);
        assert_eq!(status(1, false).outcome(), Outcome::Failed);
        assert_eq!(status(143, true).outcome(), Outcome::Signalled);
        assert_eq!(Code::Own(Exit::LeadershipLost).outcome(), Outcome::Lost);
        assert_eq!(Code::Own(Exit::TimedOut).outcome(), Outcome::TimedOut);
        assert_eq!(Code::Own(Exit::NotFound).outcome(), Outcome::NotStarted);
        assert_eq!(Code::Own(Exit::Internal).outcome(), Outcome::Failed);
        assert_eq!(Code::Signalled(Signal::SIGTERM).value(75), 143);
        assert_eq!(Code::Conflict.value(0), 0);
    }
}
