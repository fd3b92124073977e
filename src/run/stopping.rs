//! Stopping: the state of a run whose command's job is being stopped, the
//! one place a job is stopped.
//!
//! The kill sequence: `--kill-signal` to the job (its group and every
//! descendant, then SIGCONT), a grace during which further signals are
//! passed on, then SIGKILL until nothing is left. What is due when, and
//! what is done about it, is the protocol's (`protocol::lead::Stopping`):
//! each step due (--kill-signal, SIGKILL) is an event, like what happens
//! meanwhile (the job gone, the grace over, a signal, leadership lost
//! during a kept stop), and this does what each of its steps says with the
//! real job, clock and lease, and tells what it sees of them. It sends no
//! signal of its own accord.

use std::future::Future;
use std::time::Duration;

use super::supervise::{leadership_lost, Leading};
use crate::clock;
use crate::clock::Now;
use crate::host::Signals;
use crate::logging::{self, Level};
use crate::signals;
use protocol::lead;
use protocol::signal::Signal;
use protocol::stop::{KillReason, Next};
use protocol::table::{GraceSource, Loss, RunningEvent, StoppingEvent, GRACE_PRECEDENCE};

use protocol::renewal::KILL_BOUND;

/// A run whose job is being stopped: what it holds beside its protocol
/// state (`lead::Stopping`), and what it has seen of the job and lease.
pub struct Stopping<'a> {
    pub leading: Leading<'a>,
    /// Whether anything of the job was left at the last look.
    job_left: bool,
    /// Whether the lease's keeper still tells of renewals.
    keeper_alive: bool,
}

impl<'a> Stopping<'a> {
    /// Starts stopping the job of `leading`, as `core` was ordered to
    /// (`why`, the event that stopped it, said if it is said). A command
    /// that exited may have left nothing: then the job is looked at, and
    /// the first event says it is gone.
    pub fn new(
        mut leading: Leading<'a>,
        core: &lead::Stopping,
        why: &RunningEvent,
    ) -> Stopping<'a> {
        let gone = core.order().exited && !leading.child.job_alive();
        tracing::trace!(alive = !gone, "job checked");
        say_why(&leading, core, why, gone);
        Stopping {
            leading,
            job_left: !gone,
            keeper_alive: true,
        }
    }

    /// The next event of the stop: what the kill sequence has due (for
    /// the table to say), or what happened while it waits on the job, the
    /// grace or a signal.
    pub async fn next_event(
        &mut self,
        core: &lead::Stopping,
        signals: &mut Signals,
    ) -> StoppingEvent {
        loop {
            let lease = self.leading.lease_view();
            match core.next(clock::Instant::now(), lease, self.job_left) {
                Next::Event(event) => return event,
                Next::Await {
                    until,
                    loss_matters,
                } => {
                    let within = self.within_grace(core, until, loss_matters, signals);
                    if let Some(event) = within.await {
                        return event;
                    }
                }
            }
        }
    }

    /// --kill-signal, `signal`, to the whole job.
    pub fn send_kill_signal(&mut self, signal: Signal) {
        self.leading.child.signal_job(signals::to_os(signal));
    }

    /// SIGKILL to the job until nothing is left, within [`KILL_BOUND`];
    /// then a look at what is left.
    pub async fn kill(&mut self) {
        let child = &mut self.leading.child;
        child.kill_job(KILL_BOUND).await;
        self.job_left = child.job_alive();
    }

    /// Waits within the grace, until `until`: for the job to go, a signal,
    /// (if `loss_matters`) leadership lost, or a renewal, which may move
    /// the grace's end (then None: the kill sequence is asked again).
    async fn within_grace(
        &mut self,
        core: &lead::Stopping,
        until: clock::Instant,
        loss_matters: bool,
        signals: &mut Signals,
    ) -> Option<StoppingEvent> {
        let mut renewed = self.leading.won.lease.watch();
        let Leading {
            child,
            won,
            connection,
            ..
        } = &mut self.leading;
        let lost = leadership_lost(
            connection,
            &won.lease,
            &won.leadership,
            &mut won.own,
            core.schedule(),
        );
        let keeper_alive = self.keeper_alive && loss_matters;
        let mut sources = (
            std::pin::pin!(child.wait_job_gone(until)),
            std::pin::pin!(lost),
            std::pin::pin!(signals.recv()),
            std::pin::pin!(renewed.changed()),
        );
        // Polled in the protocol's order: the first ready is what happened.
        let happened = std::future::poll_fn(|cx| {
            let (gone, lost, signal, renewal) = &mut sources;
            for source in GRACE_PRECEDENCE {
                let ready = match source {
                    GraceSource::JobGone => gone.as_mut().poll(cx).map(InGrace::Gone),
                    GraceSource::Leadership if loss_matters => {
                        lost.as_mut().poll(cx).map(InGrace::Lost)
                    }
                    GraceSource::Signal => signal.as_mut().poll(cx).map(InGrace::Signal),
                    GraceSource::Renewed if keeper_alive => renewal
                        .as_mut()
                        .poll(cx)
                        .map(|changed| InGrace::Renewed(changed.is_ok())),
                    GraceSource::Leadership | GraceSource::Renewed => continue,
                };
                if ready.is_ready() {
                    return ready;
                }
            }
            std::task::Poll::Pending
        })
        .await;
        match happened {
            InGrace::Gone(gone) => self.job_left = !gone,
            InGrace::Lost(loss) => return Some(StoppingEvent::LeadershipLost(loss)),
            InGrace::Signal(received) => return Some(StoppingEvent::Signal(received)),
            InGrace::Renewed(alive) => self.keeper_alive = alive,
        }
        None
    }

    /// Leadership lost during a kept stop: the grace is cut to the loss's,
    /// SIGKILL due `at`; said.
    pub fn say_cut(&self, loss: &Loss, at: clock::Instant) {
        let left = Duration::from_millis(at.remaining().as_millis() as u64);
        tell(Some(cut_line(&self.leading.config.election, loss, left)));
    }

    /// The grace is over: why SIGKILL is due, said.
    pub fn say_grace_over(&self, reason: KillReason) {
        tell(grace_over_line(reason));
    }
}

/// A line of leaderrun's own about a stop: said whatever the verbosity,
/// or only with -v.
#[derive(Debug, PartialEq)]
enum Line {
    Said(Level, String),
    Verbose(&'static str),
}

/// Writes `line`, if there is one.
fn tell(line: Option<Line>) {
    match line {
        Some(Line::Said(level, text)) => logging::say(level, &text),
        Some(Line::Verbose(text)) => tracing::info!("{text}"),
        None => {}
    }
}

/// The line that says why the job is stopped (`why`, the event that
/// stopped it), if one is said.
fn say_why(leading: &Leading<'_>, core: &lead::Stopping, why: &RunningEvent, gone: bool) {
    let config = leading.config;
    let limits = Limits {
        kill_after: config.kill_after,
        grace: core.schedule().grace,
        timeout: config.timeout,
    };
    tell(why_line(&config.election, limits, why, gone));
}

/// What a stop's lines tell of its bounds.
#[derive(Debug, Clone, Copy)]
struct Limits {
    kill_after: Duration,
    /// The grace the kill schedule gives: --kill-after, or less where the
    /// lease could expire first.
    grace: Duration,
    timeout: Option<Duration>,
}

/// Why the job of `election` is stopped, in words: `why` is the event
/// that stopped it; `gone`, whether a command that exited left nothing.
fn why_line(election: &str, limits: Limits, why: &RunningEvent, gone: bool) -> Option<Line> {
    match why {
        RunningEvent::CommandExited(_) if !gone => Some(Line::Verbose(
            "the command exited; stopping what it left running",
        )),
        RunningEvent::LeadershipLost(loss) => {
            let cut = if limits.grace < limits.kill_after {
                format!(
                    " (SIGKILL after {}, not --kill-after {}: the lease could expire by then)",
                    humantime::format_duration(limits.grace),
                    humantime::format_duration(limits.kill_after)
                )
            } else {
                String::new()
            };
            Some(Line::Said(
                Level::Warn,
                format!("leadership of {election} lost: {loss}; stopping the command{cut}"),
            ))
        }
        RunningEvent::TimedOut => {
            let limit = limits.timeout.map(humantime::format_duration);
            Some(Line::Said(
                Level::Warn,
                format!(
                    "{election}: the command ran past --timeout {}; stopping it",
                    limit.map(|limit| limit.to_string()).unwrap_or_default()
                ),
            ))
        }
        RunningEvent::CommandExited(_)
        | RunningEvent::Signal(_)
        | RunningEvent::WaitFailed
        | RunningEvent::CommandStopped(_) => None,
    }
}

/// Leadership of `election` lost during a kept stop, SIGKILL `left` away.
fn cut_line(election: &str, loss: &Loss, left: Duration) -> Line {
    Line::Said(
        Level::Warn,
        format!(
            "leadership of {election} lost while the command was being stopped: {loss}; SIGKILL in {} if it is still there",
            humantime::format_duration(left)
        ),
    )
}

/// Why SIGKILL is due at the grace's end.
fn grace_over_line(reason: KillReason) -> Option<Line> {
    match reason {
        KillReason::NoGraceLeft => Some(Line::Verbose(
            "no grace left before the lease could expire; SIGKILL",
        )),
        KillReason::Unacknowledged { kill_after } => Some(Line::Said(
            Level::Warn,
            format!(
                "SIGKILL before --kill-after {}: etcd stopped acknowledging the lease's renewals, and the lease could expire",
                humantime::format_duration(kill_after)
            ),
        )),
        KillReason::Outlived => Some(Line::Verbose(
            "the command's job outlived the grace; SIGKILL",
        )),
        KillReason::Already => None,
    }
}

/// What a stop's sources gave within its grace.
enum InGrace {
    /// The job gone (true), or the grace's end reached (false).
    Gone(bool),
    Lost(Loss),
    Signal(Signal),
    /// A renewal acknowledged; false once the keeper is gone.
    Renewed(bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::table::Status;

    const SECOND: Duration = Duration::from_secs(1);

    fn limits(grace: Duration) -> Limits {
        Limits {
            kill_after: 10 * SECOND,
            grace,
            timeout: Some(60 * SECOND),
        }
    }

    /// The text of a warning, said whatever the verbosity.
    fn warned(line: Option<Line>) -> String {
        match line {
            Some(Line::Said(Level::Warn, text)) => text,
            other => panic!("not a warning: {other:?}"),
        }
    }

    #[test]
    fn a_loss_says_so_and_a_grace_cut_short_says_by_how_much() {
        let lost = RunningEvent::LeadershipLost(Loss::LeaseGone);
        let whole = warned(why_line("nightly", limits(10 * SECOND), &lost, false));
        assert_eq!(
            whole,
            format!(
                "leadership of nightly lost: {}; stopping the command",
                Loss::LeaseGone
            )
        );
        let cut = warned(why_line("nightly", limits(3 * SECOND), &lost, false));
        assert!(
            cut.ends_with(
                "(SIGKILL after 3s, not --kill-after 10s: the lease could expire by then)"
            ),
            "{cut}"
        );
        let longer = warned(why_line("nightly", limits(11 * SECOND), &lost, false));
        assert_eq!(longer, whole);
    }

    #[test]
    fn a_command_that_exited_is_told_of_only_with_v_and_only_if_it_left_something() {
        let exited = RunningEvent::CommandExited(Status {
            code: 0,
            signalled: false,
        });
        assert!(matches!(
            why_line("nightly", limits(SECOND), &exited, false),
            Some(Line::Verbose(_))
        ));
        assert_eq!(why_line("nightly", limits(SECOND), &exited, true), None);
    }

    #[test]
    fn a_timeout_names_its_limit() {
        let line = warned(why_line(
            "nightly",
            limits(SECOND),
            &RunningEvent::TimedOut,
            false,
        ));
        assert_eq!(
            line,
            "nightly: the command ran past --timeout 1m; stopping it"
        );
    }

    #[test]
    fn a_kept_stop_cut_short_says_when_sigkill_comes() {
        let line = warned(Some(cut_line("nightly", &Loss::LeaseGone, 2 * SECOND)));
        assert!(
            line.starts_with("leadership of nightly lost while the command was being stopped"),
            "{line}"
        );
        assert!(
            line.ends_with("SIGKILL in 2s if it is still there"),
            "{line}"
        );
    }

    #[test]
    fn only_a_silent_etcd_is_warned_of_at_the_graces_end() {
        let unacknowledged = KillReason::Unacknowledged {
            kill_after: 10 * SECOND,
        };
        let line = warned(grace_over_line(unacknowledged));
        assert!(
            line.starts_with("SIGKILL before --kill-after 10s"),
            "{line}"
        );
        for reason in [KillReason::NoGraceLeft, KillReason::Outlived] {
            assert!(matches!(grace_over_line(reason), Some(Line::Verbose(_))));
        }
        assert_eq!(grace_over_line(KillReason::Already), None);
    }
}
