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
//! | Proving    | its key alive and first, read at one revision (N > 1: a txn)    |
//! | Claiming   | the guardian again if it failed to start; the --once-per window |
//! | Running    | the command runs                                                |
//! | Stopping   | the kill schedule: --kill-signal, the grace, SIGKILL            |
//! | Resigning  | deletes its key with the run's records in one write (not lost), |
//! |            | else revokes its lease, then the records; an unspent window is  |
//! |            | revoked; each within a short bound; beside it, the guardian is  |
//! |            | released and collected (the job is gone by then)                |
//!
//! The events, and what each does ([`decide`] is this table, as code):
//!
//! | event \ phase            | Dialling … Claiming                        | Running              | Stopping    | Resigning |
//! |--------------------------|--------------------------------------------|----------------------|-------------|-----------|
//! | a forwarded signal (1)   | give back, exit 128+N: nothing ran         | forward to the job   | forward     | ignore    |
//! | --wait-timeout           | give back, exit the conflict code          | –                    | –           | –         |
//! | lease gone               | campaign again (--wait), else conflict     | stop the job, 124    | ignore      | ignore    |
//! | local deadline passed    | –  (a waiter's lease guards no command)    | stop the job, 124    | ignore      | ignore    |
//! | key deleted/replaced     | campaign again (--wait), else conflict     | stop the job, 124    | ignore      | ignore    |
//! | the command exited       | –                                          | stop its leftovers, resign, its status | – | – |
//! | --timeout passed         | –  (it counts from the command's start)    | stop the job, 123    | ignore      | ignore    |
//! | the command stopped (tty)| –                                          | stop like it; continue with it | – | – |
//! | etcd error               | first attempt: fail (125); once queued: retry with backoff | (the lease deadline decides) | ignore | ignore |
//! | etcd refused credentials, permission or certificate (2) | fail (125) | –                    | –           | –         |
//!
//! (1) SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, but for
//! one ignored when leaderrun started, which stays ignored (`signals`).
//!
//! (2) Also when they changed under a queued replica: authentication
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

use crate::election::{KeyLoss, PlaceLost};

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
    Signal(Signal),
    WaitTimeout,
    /// Our place in the queue, or our win, is gone before the command ran.
    PlaceLost(PlaceLost),
    /// Leadership is gone while the command runs.
    Lost(Loss),
    CommandExited,
    /// The command has run for --timeout.
    TimedOut,
    /// The command stopped for the terminal.
    CommandStopped(Signal),
    /// An etcd request failed; `refused` when etcd turned our credentials
    /// down (every endpoint and every retry would say the same).
    Etcd {
        refused: bool,
    },
}

/// What the policy of a run needs to know beyond the phase.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// --wait: queue rather than exit when someone else leads.
    pub wait: bool,
    /// This run has already been in the queue once: etcd worked, so a
    /// failure now is an outage to ride out, not a wrong endpoint.
    pub queued_before: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing ran: give back what is held, exit 128+N.
    ExitSignalled,
    /// Give back what is held, exit the conflict code.
    GiveUp,
    /// New lease, back of the queue.
    CampaignAgain,
    /// The same step again, after a backoff.
    Retry,
    /// leaderrun's own failure: give back what is held, exit 125.
    Fail,
    /// Pass the signal on to the command's job.
    Forward,
    /// Stop the command's job on the kill schedule, resign, exit 124.
    StopLost,
    /// Stop what the command left behind, resign, exit with its status.
    Finish,
    /// Stop the command's job on the kill schedule, resign, exit 123.
    StopTimedOut,
    /// Stop like the command, and continue it when continued.
    FollowStop,
    /// Nothing to do: what this phase is doing already answers it.
    Ignore,
}

/// The table in the module doc, as code.
pub fn decide(phase: Phase, event: &Event, policy: Policy) -> Action {
    use Action::*;
    use Phase::*;
    match (phase, event) {
        (Resigning, _) => Ignore,
        (Stopping, Event::Signal(_)) => Forward,
        (Stopping, _) => Ignore,
        (Running, Event::Signal(_)) => Forward,
        (Running, Event::Lost(_)) => StopLost,
        (Running, Event::CommandExited) => Finish,
        (Running, Event::TimedOut) => StopTimedOut,
        (Running, Event::CommandStopped(_)) => FollowStop,
        (Running, _) => Ignore,
        (_, Event::Signal(_)) => ExitSignalled,
        (_, Event::WaitTimeout) => GiveUp,
        (_, Event::PlaceLost(_)) if policy.wait => CampaignAgain,
        (_, Event::PlaceLost(_)) => GiveUp,
        (_, Event::Etcd { refused: true }) => Fail,
        (_, Event::Etcd { .. }) if policy.wait && policy.queued_before => Retry,
        (_, Event::Etcd { .. }) => Fail,
        // Not events of the phases before the command.
        (_, Event::Lost(_) | Event::CommandExited | Event::CommandStopped(_) | Event::TimedOut) => {
            Ignore
        }
    }
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
        }
    }

    #[test]
    fn a_signal_before_the_command_exits_and_after_it_is_forwarded() {
        for phase in ALL {
            let action = decide(phase, &Event::Signal(Signal::SIGINT), policy(true, true));
            let expected = match phase {
                Phase::Running | Phase::Stopping => Action::Forward,
                Phase::Resigning => Action::Ignore,
                _ => Action::ExitSignalled,
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

    #[test]
    fn etcd_errors_fail_the_first_attempt_and_are_ridden_out_once_queued() {
        let error = Event::Etcd { refused: false };
        let refused = Event::Etcd { refused: true };
        check(&[
            (Phase::Dialling, error.clone(), true, false, Action::Fail),
            (Phase::Granting, error.clone(), true, true, Action::Retry),
            (Phase::Granting, error.clone(), false, true, Action::Fail),
            (Phase::Granting, refused, true, true, Action::Fail),
            (Phase::Running, error, true, true, Action::Ignore),
        ]);
    }

    #[test]
    fn losing_a_place_campaigns_again_only_when_waiting() {
        let lost = Event::PlaceLost(PlaceLost::LeaseGone);
        let loss = Event::Lost(Loss::Key(KeyLoss::Overwritten));
        check(&[
            (
                Phase::Waiting,
                lost.clone(),
                true,
                true,
                Action::CampaignAgain,
            ),
            (Phase::Proving, lost, false, false, Action::GiveUp),
            (Phase::Running, loss.clone(), true, true, Action::StopLost),
            (Phase::Stopping, loss, true, true, Action::Ignore),
        ]);
    }

    #[test]
    fn the_command_is_followed_only_while_it_runs() {
        let stopped = Event::CommandStopped(Signal::SIGTSTP);
        check(&[
            (Phase::Running, stopped, false, false, Action::FollowStop),
            (
                Phase::Running,
                Event::CommandExited,
                false,
                false,
                Action::Finish,
            ),
            (
                Phase::Stopping,
                Event::CommandExited,
                false,
                false,
                Action::Ignore,
            ),
            (
                Phase::Waiting,
                Event::WaitTimeout,
                true,
                true,
                Action::GiveUp,
            ),
        ]);
    }
}
