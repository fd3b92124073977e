//! Stopping: the state of a run whose command's job is being stopped, the
//! one place a job is stopped.
//!
//! The kill sequence: `--kill-signal` to the job (its group and every
//! descendant, then SIGCONT), a grace during which further signals are
//! passed on, then SIGKILL until nothing is left. What is due when is
//! `protocol::stop`'s to say, and what is done about it the table's: each
//! step due (--kill-signal, SIGKILL) is an event, like what happens
//! meanwhile (the job gone, the grace over, a signal, leadership lost
//! during a kept stop), and this carries out the table's answers with the
//! real job, clock and lease. It sends no signal of its own accord.

use std::time::Duration;

use super::supervise::{leadership_lost, Leading};
use crate::clock;
use crate::logging::{self, Level};
use crate::protocol::stop::{KillReason, LeaseView, Next, Stop};
use crate::protocol::table::{Code, Loss, RunningEvent, StopOrder, StoppingEvent};
use crate::signals::{Signal, Signals};

/// How long SIGKILL is sent, at most, before the stop is over whatever is
/// left (the guardian, still armed, has the rest).
const KILL_BOUND: Duration = Duration::from_secs(1);

/// A run whose job is being stopped; it exits with `code` once resigned.
pub struct Stopping<'a> {
    pub leading: Leading<'a>,
    pub code: Code,
    /// The kill sequence, which says what is due.
    stop: Stop,
    /// Whether anything of the job was left at the last look.
    job_left: bool,
    /// Whether the lease's keeper still tells of renewals.
    keeper_alive: bool,
    /// Whether a proof that the job is gone may disarm the guardian: not
    /// after a failed wait for the command, when leaderrun's own view of
    /// its processes is in doubt. The guardian, a process of its own,
    /// then kills the job's group as it is let go, whatever we saw.
    pub trust_proof: bool,
}

impl<'a> Stopping<'a> {
    /// Starts stopping the job of `leading`, which ends with `code`. A job
    /// already gone (a command that exited and left nothing) needs no
    /// stop: the first event says so.
    pub fn new(mut leading: Leading<'a>, order: StopOrder, why: &RunningEvent) -> Stopping<'a> {
        let lease = lease_view(&leading);
        let (schedule, kill_after) = (leading.schedule, leading.config.kill_after);
        let stop = Stop::new(
            order.grace,
            schedule,
            kill_after,
            clock::Instant::now(),
            lease,
        );
        let gone = order.exited && !leading.child.job_alive();
        tracing::trace!(alive = !gone, "job checked");
        say_why(&leading, why, gone);
        Stopping {
            leading,
            code: order.code,
            stop,
            job_left: !gone,
            keeper_alive: true,
            trust_proof: order.trust_gone,
        }
    }

    /// The next event of the stop: what the kill sequence wants done (for
    /// the table to say), or what happened while it waits on the job, the
    /// grace or a signal.
    pub async fn next_event(&mut self, signals: &mut Signals) -> StoppingEvent {
        loop {
            let lease = lease_view(&self.leading);
            let kill_signal = self.leading.config.kill_signal;
            match self
                .stop
                .next(clock::Instant::now(), lease, self.job_left, kill_signal)
            {
                Next::Event(event) => return event,
                Next::Await {
                    until,
                    loss_matters,
                } => {
                    if let Some(event) = self.within_grace(until, loss_matters, signals).await {
                        return event;
                    }
                }
            }
        }
    }

    /// --kill-signal, `signal`, to the whole job: the grace begins.
    pub fn send_kill_signal(&mut self, signal: Signal) {
        self.leading.child.signal_job(signal);
        self.stop.signalled();
    }

    /// SIGKILL to the job until nothing is left, within [`KILL_BOUND`].
    pub async fn kill(&mut self) {
        let child = &mut self.leading.child;
        child.kill_job(KILL_BOUND).await;
        self.job_left = child.job_alive();
        self.stop.killed();
    }

    /// Waits within the grace, until `until`: for the job to go, a signal,
    /// (if `loss_matters`) leadership lost, or a renewal, which may move
    /// the grace's end (then None: the kill sequence is asked again).
    async fn within_grace(
        &mut self,
        until: clock::Instant,
        loss_matters: bool,
        signals: &mut Signals,
    ) -> Option<StoppingEvent> {
        let mut renewed = self.leading.won.lease.watch();
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
        let keeper_alive = self.keeper_alive && loss_matters;
        tokio::select! {
            biased;
            gone = child.wait_job_gone(until) => self.job_left = !gone,
            loss = lost, if loss_matters => return Some(StoppingEvent::LeadershipLost(loss)),
            received = signals.recv() => return Some(StoppingEvent::Signal(received)),
            changed = renewed.changed(), if keeper_alive => self.keeper_alive = changed.is_ok(),
        }
        None
    }

    /// Leadership lost during a kept stop: the grace is cut to the loss's,
    /// since the next leader may start at once.
    pub fn cut_grace(&mut self, loss: &Loss) {
        let lease = lease_view(&self.leading);
        let at = self
            .stop
            .cut(self.leading.schedule, clock::Instant::now(), lease);
        let left = Duration::from_millis(at.remaining().as_millis() as u64);
        logging::say(
            Level::Warn,
            &format!(
                "leadership of {} lost while the command was being stopped: {loss}; SIGKILL in {} if it is still there",
                self.leading.config.election,
                humantime::format_duration(left)
            ),
        );
    }

    /// The grace is over: SIGKILL is due, and why is said.
    pub fn end_grace(&mut self) {
        match self.stop.kill(clock::Instant::now()) {
            KillReason::NoGraceLeft => {
                tracing::info!("no grace left before the lease could expire; SIGKILL")
            }
            KillReason::Unacknowledged { kill_after } => logging::say(
                Level::Warn,
                &format!(
                    "SIGKILL before --kill-after {}: etcd stopped acknowledging the lease's renewals, and the lease could expire",
                    humantime::format_duration(kill_after)
                ),
            ),
            KillReason::Outlived => tracing::info!("the command's job outlived the grace; SIGKILL"),
            KillReason::Already => {}
        }
    }

    /// After the stop: the terminal back in leaderrun's hands, with the
    /// modes it had before, unless the command exited by itself.
    pub fn restore_terminal(&mut self) {
        if !matches!(self.code, Code::Command(status) if !status.signalled) {
            self.leading.child.restore_terminal();
        }
    }
}

/// The lease as the kill sequence needs it.
fn lease_view(leading: &Leading<'_>) -> LeaseView {
    let state = leading.won.lease.state();
    LeaseView {
        expires: state.expires,
        gone: state.gone,
    }
}

/// The line that says why the job is stopped (`why`, the event that
/// stopped it), if one is said.
fn say_why(leading: &Leading<'_>, why: &RunningEvent, gone: bool) {
    let config = leading.config;
    match why {
        RunningEvent::CommandExited(_) if !gone => {
            tracing::info!("the command exited; stopping what it left running")
        }
        RunningEvent::LeadershipLost(loss) => {
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
        RunningEvent::TimedOut => {
            let limit = config.timeout.map(humantime::format_duration);
            let past = format!(
                "{}: the command ran past --timeout {}; stopping it",
                config.election,
                limit.map(|limit| limit.to_string()).unwrap_or_default()
            );
            logging::say(Level::Warn, &past);
        }
        RunningEvent::CommandExited(_)
        | RunningEvent::Signal(_)
        | RunningEvent::WaitFailed
        | RunningEvent::CommandStopped(_) => {}
    }
}
