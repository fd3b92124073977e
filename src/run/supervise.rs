//! Supervision: the command runs while leadership lasts.
//!
//! A loop with three arms, each one future: leadership lost (the lease gone,
//! the local deadline, or our key deleted, replaced or overwritten, folded
//! into one), a child event (the command exited or stopped for the
//! terminal; SIGCHLD and job control live there), and a signal. What each
//! does is [`decide`]'s answer for [`Phase::Running`]. Then the kill sequence,
//! [`KillSequence`], the one place that stops a job.

use std::cell::Cell;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use anyhow::{Context, Result};
use nix::sys::signal::Signal;

use super::phase::{decide, Action, Event, Loss, Phase, Policy};
use super::schedule::KillSchedule;
use super::Config;
use crate::child::guard::Guard;
use crate::child::{Child, ChildEvent};
use crate::clock;
use crate::election::holder::{self, Holder};
use crate::election::record::{self, Outcome};
use crate::election::{self, Leadership, OwnKey};
use crate::etcd::Connection;
use crate::exit::{self, Exit};
use crate::lease::Lease;
use crate::logging::{self, Level};
use crate::signals::Signals;

enum Ending {
    Exited(io::Result<ExitStatus>),
    Lost(Loss),
    TimedOut,
}

/// What supervision needs from the run.
pub struct Supervision<'a> {
    pub config: &'a Config,
    pub connection: &'a Connection,
    pub lease: &'a Lease,
    pub leadership: &'a Leadership,
    /// The watch of our key the campaign kept, if it queued: the watch for
    /// loss goes on with it.
    pub own: Cell<Option<OwnKey>>,
    pub policy: Policy,
}

impl Supervision<'_> {
    /// Spawns the command and runs it while leadership lasts; returns the
    /// exit code. `started` is called once the command exists; `ended`
    /// receives the run's records, to write once leadership is given back.
    pub async fn run(
        &self,
        signals: &mut Signals,
        guard: &Guard,
        started: impl FnOnce(),
        ended: &mut Option<record::Ended>,
    ) -> Result<i32> {
        let config = self.config;
        let schedule = KillSchedule::new(self.lease.ttl, config.kill_after);
        if schedule.grace < config.kill_after {
            tracing::debug!(
                "--kill-after {} shortened to {}, so that SIGKILL lands before a {} lease could expire",
                humantime::format_duration(config.kill_after),
                humantime::format_duration(schedule.grace),
                humantime::format_duration(self.lease.ttl)
            );
        }
        let token = self.leadership.token;
        let env = config.command_env(token, &self.leadership.key, self.lease.id);
        let holder = Holder {
            started: holder::now_rfc3339(),
            ..config.holder.clone()
        };
        let window = config
            .once_per
            .map(|window| crate::etcd::requests::whole_seconds(window).unsigned_abs());
        let run = record::Run::new(&holder, token, window);
        let mut child = match Child::spawn(&config.program, &config.command, &env, guard) {
            Ok(child) => child,
            Err(err) => {
                let not_started = run.ended(Outcome::NotStarted, Some(exit::code_of(&err)));
                *ended = Some(record::Ended::new(
                    not_started,
                    None,
                    self.leadership.proven_at,
                ));
                return Err(err);
            }
        };
        guard.check();
        tracing::trace!(pid = child.group.as_raw(), "command spawned");
        started();
        let start = record::start(
            self.connection,
            self.leadership,
            run.started(),
            self.mark_leading(holder),
        );
        let timeout_at = config.timeout.map(|limit| clock::Instant::now() + limit);

        let ending = self
            .while_leading(&mut child, signals, schedule, timeout_at)
            .await;
        // Lost, the grace is the schedule's, cut to what the lease allows;
        // otherwise the lease is kept alive through the stop, and the grace
        // is --kill-after in full, unless renewals stop being acknowledged.
        let kill = KillSequence {
            signal: config.kill_signal,
            deadline: match &ending {
                Ending::Lost(_) => Deadline::Fixed(schedule.kill_at(self.lease.state().expires)),
                _ => Deadline::Kept {
                    asked: clock::Instant::now() + config.kill_after,
                    kill_after: config.kill_after,
                    lease: self.lease,
                    schedule,
                },
            },
            policy: self.policy,
            election: &config.election,
        };
        let outcome = match &ending {
            Ending::Exited(Ok(status)) if status.success() => Outcome::Succeeded,
            Ending::Exited(Ok(status)) if status.signal().is_some() => Outcome::Signalled,
            Ending::Exited(_) => Outcome::Failed,
            Ending::Lost(_) => Outcome::Lost,
            Ending::TimedOut => Outcome::TimedOut,
        };
        tracing::trace!("supervision ended");
        let code = match ending {
            Ending::Exited(status) => {
                let status = status.context("waiting for the command")?;
                let alive = child.job_alive();
                tracing::trace!(alive, "job checked");
                if alive {
                    tracing::info!("the command exited; stopping what it left running");
                    self.stop_keeping(&kill, &mut child, signals, schedule)
                        .await;
                }
                if status.signal().is_some() {
                    child.restore_terminal();
                }
                exit::from_status(status)
            }
            Ending::Lost(loss) => {
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
                kill.run(&mut child, signals, std::future::pending()).await;
                child.restore_terminal();
                Exit::LeadershipLost.code()
            }
            Ending::TimedOut => {
                let limit = config.timeout.map(humantime::format_duration);
                let past = format!(
                    "{}: the command ran past --timeout {}; stopping it",
                    config.election,
                    limit.map(|limit| limit.to_string()).unwrap_or_default()
                );
                logging::say(Level::Warn, &past);
                self.stop_keeping(&kill, &mut child, signals, schedule)
                    .await;
                child.restore_terminal();
                Exit::TimedOut.code()
            }
        };
        *ended = Some(record::Ended::new(
            run.ended(outcome, Some(code)),
            Some(start),
            self.leadership.proven_at,
        ));
        Ok(code)
    }

    /// With one runner, our key still holds the holder as it queued (the
    /// win was proven by a read): rewrite it with the time we began to
    /// lead, for `status`. More runners proved with that rewrite already.
    fn mark_leading(
        &self,
        holder: Holder,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let connection = self.connection.clone();
        let (name, slots) = (self.config.election.clone(), self.config.max_running);
        let leadership = self.leadership.clone();
        async move {
            if slots != 1 {
                return;
            }
            let election = election::Election::new(&connection, &name, slots);
            let marked = election.mark_leading(&leadership, &holder);
            match clock::timeout(record::WRITE_BOUND, marked).await {
                Some(Ok(())) => {}
                Some(Err(err)) => tracing::info!("{err:#}"),
                None => tracing::info!("marking our key: no answer in time"),
            }
        }
    }

    /// The kill sequence while the lease is kept alive, watching for a loss
    /// of leadership as the run did: our key deleted or replaced, or the
    /// lease revoked, cuts the grace to the loss's, since the next leader
    /// may start at once.
    async fn stop_keeping(
        &self,
        kill: &KillSequence<'_>,
        child: &mut Child,
        signals: &mut Signals,
        schedule: KillSchedule,
    ) {
        let mut own = self
            .own
            .take()
            .unwrap_or_else(|| OwnKey::of(self.leadership));
        let lost = leadership_lost(
            self.connection,
            self.lease,
            self.leadership,
            &mut own,
            schedule,
        );
        kill.run(child, signals, lost).await;
        self.own.set(Some(own));
    }

    async fn while_leading(
        &self,
        child: &mut Child,
        signals: &mut Signals,
        schedule: KillSchedule,
        timeout_at: Option<clock::Instant>,
    ) -> Ending {
        let mut own = self
            .own
            .take()
            .unwrap_or_else(|| OwnKey::of(self.leadership));
        let ending = self
            .until_ending(child, signals, schedule, timeout_at, &mut own)
            .await;
        // Kept, with the watch of what was ahead: see `OwnKey::keep_ahead`.
        self.own.set(Some(own));
        ending
    }

    async fn until_ending(
        &self,
        child: &mut Child,
        signals: &mut Signals,
        schedule: KillSchedule,
        timeout_at: Option<clock::Instant>,
        own: &mut OwnKey,
    ) -> Ending {
        let lost = leadership_lost(self.connection, self.lease, self.leadership, own, schedule);
        tokio::pin!(lost);
        loop {
            let mut status = None;
            let event = tokio::select! {
                biased;
                // First, so that after a pause of leaderrun itself the job
                // is stopped at once, whatever else is pending.
                loss = &mut lost => Event::Lost(loss),
                happened = child.event() => match happened {
                    ChildEvent::Exited(exited) => {
                        status = Some(exited);
                        Event::CommandExited
                    }
                    ChildEvent::Stopped(signal) => Event::CommandStopped(signal),
                },
                signal = signals.recv() => Event::Signal(signal),
                _ = clock::sleep_until_opt(timeout_at) => Event::TimedOut,
            };
            match (decide(Phase::Running, &event, self.policy), event) {
                (Action::Forward, Event::Signal(signal)) => {
                    tracing::info!(?signal, "passing the signal on to the command");
                    child.signal_job(signal);
                }
                (Action::FollowStop, Event::CommandStopped(signal)) => {
                    // Not continued if leaderrun was stopped past the point
                    // where the job must be stopped: the loss comes next.
                    let lease = self.lease;
                    let in_time = || !schedule.must_stop(lease.state().expires);
                    child.follow_stop(signal, in_time);
                }
                (Action::StopLost, Event::Lost(loss)) => return Ending::Lost(loss),
                (Action::StopTimedOut, _) => return Ending::TimedOut,
                (Action::Finish, _) => {
                    return Ending::Exited(status.expect("an exit comes with its status"))
                }
                _ => {}
            }
        }
    }
}

/// Resolves when leadership is lost, and says how: etcd says the lease is
/// gone, renewals went unacknowledged until the kill schedule must start, or
/// our key was deleted, replaced or overwritten.
async fn leadership_lost(
    connection: &Connection,
    lease: &Lease,
    leadership: &Leadership,
    own: &mut OwnKey,
    schedule: KillSchedule,
) -> Loss {
    let mut state = lease.watch();
    let key = election::watch_for_loss(connection, leadership, own);
    tokio::pin!(key);
    let mut keeper_alive = true;
    loop {
        let now = state.borrow_and_update().clone();
        if now.gone {
            return Loss::LeaseGone;
        }
        let stop_from = schedule.stop_from(now.expires);
        if stop_from.has_passed() {
            return Loss::Unacknowledged {
                silent_for: (now.expires - lease.ttl).elapsed(),
                ttl: lease.ttl,
                trouble: now.trouble,
            };
        }
        tokio::select! {
            biased;
            _ = clock::sleep_until(stop_from) => {}
            changed = state.changed(), if keeper_alive => keeper_alive = changed.is_ok(),
            loss = &mut key => return Loss::Key(loss),
        }
    }
}

/// The kill sequence, the one place a job is stopped: `signal` to the job
/// (its group and every descendant, then SIGCONT), a grace until the
/// [`Deadline`] during which further signals are passed on, then SIGKILL
/// until nothing is left.
struct KillSequence<'a> {
    signal: Signal,
    deadline: Deadline<'a>,
    policy: Policy,
    election: &'a str,
}

/// When SIGKILL goes out if the job is still there.
enum Deadline<'a> {
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
        kill_after: std::time::Duration,
        lease: &'a Lease,
        schedule: KillSchedule,
    },
}

impl Deadline<'_> {
    fn at(&self) -> clock::Instant {
        match self {
            Deadline::Fixed(at) => *at,
            Deadline::Kept {
                asked,
                lease,
                schedule,
                ..
            } => {
                let state = lease.state();
                if state.gone {
                    clock::Instant::now()
                } else {
                    (*asked).min(state.expires - schedule.margin)
                }
            }
        }
    }

    /// The deadline once leadership is lost during the stop.
    fn on_loss(&self) -> clock::Instant {
        match self {
            Deadline::Fixed(at) => *at,
            Deadline::Kept {
                lease, schedule, ..
            } => schedule.kill_at(lease.state().expires).min(self.at()),
        }
    }
}

impl KillSequence<'_> {
    /// `lost` resolves if leadership is lost during the stop (never, for a
    /// stop that a loss began).
    async fn run(
        &self,
        child: &mut Child,
        signals: &mut Signals,
        lost: impl std::future::Future<Output = Loss>,
    ) {
        let gone = if self.deadline.at().has_passed() {
            // No grace left (leaderrun was stopped, or paused, past it):
            // --kill-signal would first continue a stopped job.
            tracing::info!("no grace left before the lease could expire; SIGKILL");
            false
        } else {
            self.within_grace(child, signals, lost).await
        };
        if !gone {
            child.kill_job(std::time::Duration::from_secs(1)).await;
        }
    }

    /// --kill-signal, then the grace, passing further signals on; true if
    /// the job is gone within it.
    async fn within_grace(
        &self,
        child: &mut Child,
        signals: &mut Signals,
        lost: impl std::future::Future<Output = Loss>,
    ) -> bool {
        child.signal_job(self.signal);
        tokio::pin!(lost);
        let mut renewed = match &self.deadline {
            Deadline::Kept { lease, .. } => Some(lease.watch()),
            Deadline::Fixed(_) => None,
        };
        let mut keeper_alive = renewed.is_some();
        // Set once leadership is lost during the stop.
        let mut cut: Option<clock::Instant> = None;
        let gone = loop {
            let until = cut.unwrap_or_else(|| self.deadline.at());
            tokio::select! {
                biased;
                gone = child.wait_job_gone(until) => break gone,
                loss = &mut lost, if cut.is_none() => {
                    let at = self.deadline.on_loss();
                    logging::say(
                        Level::Warn,
                        &format!(
                            "leadership of {} lost while the command was being stopped: {loss}; SIGKILL in {} if it is still there",
                            self.election,
                            humantime::format_duration(std::time::Duration::from_millis(
                                at.remaining().as_millis() as u64
                            ))
                        ),
                    );
                    cut = Some(at);
                }
                received = signals.recv() => {
                    let event = Event::Signal(received);
                    if decide(Phase::Stopping, &event, self.policy) == Action::Forward {
                        child.signal_job(received);
                    }
                }
                // A renewal moves a kept deadline on: wait again until it.
                changed = async { renewed.as_mut()?.changed().await.ok() }, if keeper_alive => {
                    keeper_alive = changed.is_some();
                }
            }
        };
        if !gone {
            match &self.deadline {
                Deadline::Kept {
                    asked, kill_after, ..
                } if !asked.has_passed() && cut.is_none() => logging::say(
                    Level::Warn,
                    &format!(
                        "SIGKILL before --kill-after {}: etcd stopped acknowledging the lease's renewals, and the lease could expire",
                        humantime::format_duration(*kill_after)
                    ),
                ),
                _ => tracing::info!("the command's job outlived the grace; SIGKILL"),
            }
        }
        gone
    }
}
