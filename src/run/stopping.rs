//! Stopping: the state of a run whose command's job is being stopped, the
//! one place a job is stopped.
//!
//! The kill sequence: `--kill-signal` to the job (its group and every
//! descendant, then SIGCONT), a grace until the [`Deadline`] during which
//! further signals are passed on, then SIGKILL until nothing is left. Its
//! events (the job gone, the grace over, a signal, leadership lost during a
//! kept stop) go through the table like every other.

use std::time::Duration;

use super::phase::{Code, Event, Grace, Loss};
use super::schedule::KillSchedule;
use super::supervise::{leadership_lost, Leading};
use crate::clock;
use crate::logging::{self, Level};
use crate::signals::Signals;

/// A run whose job is being stopped; it exits with `code` once resigned.
pub struct Stopping<'a> {
    pub leading: Leading<'a>,
    pub code: Code,
    deadline: Deadline,
    /// Where the sequence is.
    step: Step,
    /// Set once leadership is lost during a kept stop: the loss's deadline.
    cut: Option<clock::Instant>,
    /// Nothing of the job is left: the guardian may be released.
    pub gone: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Not signalled yet.
    Starting,
    /// --kill-signal sent: the grace runs.
    Grace,
    /// SIGKILL until nothing is left.
    Killing,
}

/// When SIGKILL goes out if the job is still there.
enum Deadline {
    /// Leadership lost: fixed when the stop starts, before the lease could
    /// expire on the server.
    Fixed(clock::Instant),
    /// The lease is kept alive through the stop (--timeout, or what an
    /// exited command left running): --kill-after in full (`asked`), but
    /// never later than the margin before the lease could expire, which
    /// renewals move on while they are acknowledged; and once leadership
    /// is lost during it, the loss's grace ([`KillSchedule::kill_at`]).
    Kept {
        asked: clock::Instant,
        kill_after: Duration,
    },
}

impl<'a> Stopping<'a> {
    /// Starts stopping the job of `leading`, which ends with `code`. A job
    /// already gone (a command that exited and left nothing) needs no
    /// stop: the first event says so.
    pub fn new(leading: Leading<'a>, code: Code, grace: Grace, why: &Event) -> Stopping<'a> {
        let deadline = match grace {
            Grace::Lost => {
                Deadline::Fixed(leading.schedule.kill_at(leading.won.lease.state().expires))
            }
            Grace::Kept => Deadline::Kept {
                asked: clock::Instant::now() + leading.config.kill_after,
                kill_after: leading.config.kill_after,
            },
        };
        let gone = matches!(code, Code::Command(_)) && !leading.child.job_alive();
        tracing::trace!(alive = !gone, "job checked");
        say_why(&leading, why, gone);
        Stopping {
            leading,
            code,
            deadline,
            step: Step::Starting,
            cut: None,
            gone,
        }
    }

    /// When SIGKILL is due now.
    fn due(&self) -> clock::Instant {
        if let Some(cut) = self.cut {
            return cut;
        }
        match self.deadline {
            Deadline::Fixed(at) => at,
            Deadline::Kept { asked, .. } => {
                let state = self.leading.won.lease.state();
                if state.gone {
                    clock::Instant::now()
                } else {
                    asked.min(state.expires - self.leading.schedule.margin)
                }
            }
        }
    }

    /// The next event of the stop.
    pub async fn next_event(&mut self, signals: &mut Signals) -> Event {
        if self.gone {
            return Event::JobGone;
        }
        if self.step == Step::Starting {
            // No grace left (leaderrun was stopped, or paused, past it):
            // --kill-signal would first continue a stopped job.
            if self.due().has_passed() {
                tracing::info!("no grace left before the lease could expire; SIGKILL");
                self.step = Step::Killing;
                return Event::GraceOver;
            }
            self.leading
                .child
                .signal_job(self.leading.config.kill_signal);
            self.step = Step::Grace;
        }
        if self.step == Step::Killing {
            let child = &mut self.leading.child;
            child.kill_job(Duration::from_secs(1)).await;
            self.gone = !child.job_alive();
            return Event::JobGone;
        }
        self.within_grace(signals).await
    }

    /// Waits within the grace: the job gone, the grace over, a signal, or
    /// (kept) leadership lost. A renewal moves a kept deadline on: the
    /// wait goes on until the new one.
    async fn within_grace(&mut self, signals: &mut Signals) -> Event {
        let kept = matches!(self.deadline, Deadline::Kept { .. }) && self.cut.is_none();
        let mut renewed = self.leading.won.lease.watch();
        let mut keeper_alive = kept;
        loop {
            let until = self.due();
            let Leading {
                child,
                won,
                connection,
                schedule,
                ..
            } = &mut self.leading;
            let lost = leadership_lost(
                connection,
                &won.lease,
                &won.leadership,
                &mut won.own,
                *schedule,
            );
            tokio::select! {
                biased;
                gone = child.wait_job_gone(until) => {
                    self.gone = gone;
                    return if gone { Event::JobGone } else { Event::GraceOver };
                }
                loss = lost, if kept => return Event::LeadershipLost(loss),
                received = signals.recv() => return Event::Signal(received),
                changed = renewed.changed(), if keeper_alive => keeper_alive = changed.is_ok(),
            }
        }
    }

    /// Leadership lost during a kept stop: the grace is cut to the loss's,
    /// since the next leader may start at once.
    pub fn cut_grace(&mut self, loss: &Loss) {
        let schedule: KillSchedule = self.leading.schedule;
        let at = schedule
            .kill_at(self.leading.won.lease.state().expires)
            .min(self.due());
        let left = Duration::from_millis(at.remaining().as_millis() as u64);
        logging::say(
            Level::Warn,
            &format!(
                "leadership of {} lost while the command was being stopped: {loss}; SIGKILL in {} if it is still there",
                self.leading.config.election,
                humantime::format_duration(left)
            ),
        );
        self.cut = Some(at);
    }

    /// The grace is over: SIGKILL until nothing is left.
    pub fn kill(&mut self) {
        if self.step == Step::Grace {
            match self.deadline {
                Deadline::Kept { asked, kill_after } if !asked.has_passed() && self.cut.is_none() => {
                    logging::say(
                        Level::Warn,
                        &format!(
                            "SIGKILL before --kill-after {}: etcd stopped acknowledging the lease's renewals, and the lease could expire",
                            humantime::format_duration(kill_after)
                        ),
                    )
                }
                _ => tracing::info!("the command's job outlived the grace; SIGKILL"),
            }
        }
        self.step = Step::Killing;
    }

    /// After the stop: the terminal back in leaderrun's hands, with the
    /// modes it had before, unless the command exited by itself.
    pub fn restore_terminal(&mut self) {
        if !matches!(self.code, Code::Command(status) if !status.signalled) {
            self.leading.child.restore_terminal();
        }
    }
}

/// The line that says why the job is stopped (`why`, the event that
/// stopped it), if one is said.
fn say_why(leading: &Leading<'_>, why: &Event, gone: bool) {
    let config = leading.config;
    match why {
        Event::CommandExited(_) if !gone => {
            tracing::info!("the command exited; stopping what it left running")
        }
        Event::LeadershipLost(loss) => {
            let schedule = leading.schedule;
            let cut = if schedule.grace < config.kill_after {
                format!(
                    " (SIGKILL after {}, not --kill-after {}: the lease could expire by then)",
                    humantime::format_duration(schedule.grace),
                    humantime::format_duration(config.kill_after)
                )
            } else {
                String::new()
            };
            let lost = format!(
                "leadership of {} lost: {loss}; stopping the command{cut}",
                config.election
            );
            logging::say(Level::Warn, &lost);
        }
        Event::TimedOut => {
            let limit = config.timeout.map(humantime::format_duration);
            let past = format!(
                "{}: the command ran past --timeout {}; stopping it",
                config.election,
                limit.map(|limit| limit.to_string()).unwrap_or_default()
            );
            logging::say(Level::Warn, &past);
        }
        _ => {}
    }
}
