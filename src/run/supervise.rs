//! Leading: the state of a run whose command runs, while leadership
//! lasts.
//!
//! [`Leading`] carries what a leading run holds: the lease, the proof, the
//! watch of our key, the guardian, the command's job, its start record and
//! the look-up of who is behind us. Its events come from four sources:
//! leadership lost (the lease gone, the local deadline, or our key deleted,
//! replaced or overwritten, folded into one), the command (it exited or
//! stopped for the terminal; SIGCHLD and job control live there), a
//! signal, and --timeout (when it ends, the protocol's `lead::Running`
//! says). What each does is the protocol's (`lead::Running::handle`, which
//! asks `protocol::table::running`), and so is whether a job stopped for
//! the terminal may be continued; stopping the job is
//! [`super::stopping`]'s.

use std::future::Future;
use std::time::Duration;
use tokio::task::JoinHandle;

use super::campaign::Won;
use super::Config;
use crate::clock;
use crate::clock::Now;
use crate::election::handoff;
use crate::election::holder::{self, Holder};
use crate::election::once_per::WindowClaim;
use crate::election::record;
use crate::election::{self, Election, Leadership, OwnKey, Successor};
use crate::etcd::ids::Revision;
use crate::etcd::Connection;
use crate::exit::Exit;
use crate::host::Signals;
use crate::host::{Child, ChildEvent};
use crate::lease::Lease;
use crate::signals;
use protocol::lead::Running;
use protocol::schedule::{KillSchedule, LeaseVerdict, LeaseView};
use protocol::table::{Loss, RunningEvent, RunningSource, Signal, RUNNING_PRECEDENCE};

/// A run whose command runs.
pub struct Leading<'a> {
    pub config: &'a Config,
    pub connection: &'a Connection,
    pub won: Won,
    pub child: Child,
    /// The run, as its records will say.
    pub run: record::Run,
    /// The start record, written beside the command.
    pub start: JoinHandle<Option<Revision>>,
    /// Who is behind us, looked up beside the command (`handoff`).
    pub behind: Option<JoinHandle<Option<Successor>>>,
    /// Our attempt at the `--once-per` window, to write its end.
    pub window: Option<WindowClaim>,
}

/// A win whose command could not be started.
pub struct NotStarted {
    pub exit: Exit,
    pub won: Won,
    pub run: record::Run,
    pub error: anyhow::Error,
    /// Our attempt at the `--once-per` window, to write its end.
    pub window: Option<WindowClaim>,
}

impl<'a> Leading<'a> {
    /// Spawns the command for a proven win: it runs, as its protocol
    /// state (`lead::Running`) says from then on.
    pub fn start(
        config: &'a Config,
        connection: &'a Connection,
        mut won: Won,
        claim: Option<WindowClaim>,
    ) -> Result<(Leading<'a>, Running), Box<NotStarted>> {
        let leadership = &won.leadership;
        let env = config.command_env(leadership.token, &leadership.key, won.lease.id);
        let holder = Holder {
            started: holder::now_rfc3339(),
            ..config.holder.clone()
        };
        let window = config.once_per.map(crate::etcd::requests::whole_seconds);
        let window = window.map(i64::unsigned_abs);
        let run = record::Run::new(&holder, leadership.token, leadership.proven_at, window);
        super::hooks::stop_if_asked("spawning");
        let spawned = Child::spawn(
            &config.program,
            &config.command,
            &env,
            config.withheld,
            &mut won.guard,
        );
        let child = match spawned {
            Ok(child) => child,
            Err(error) => {
                let exit = crate::exit::exit_of(&error);
                return Err(Box::new(NotStarted {
                    exit,
                    won,
                    run,
                    error,
                    window: claim,
                }));
            }
        };
        won.guard.check();
        tracing::trace!(pid = child.group.as_raw(), "command spawned");
        mark_window_started(connection, claim.as_ref());
        let election = Election::new(connection, &config.election, config.max_running);
        let passed_on = won.own.take_passed_on();
        let behind = handoff::look_behind(config.handoff, &election, leadership, passed_on);
        let marked = mark_leading(connection, config, leadership, holder);
        let start = record::start(connection, leadership, run.started(), marked);
        let running = Running::new(
            won.lease.ttl,
            config.kill_after,
            signals::from_os(config.kill_signal),
            config.timeout,
            clock::Instant::now(),
        );
        let grace = running.schedule().grace;
        if let Some(line) = shortened_line(config.kill_after, grace, won.lease.ttl) {
            tracing::debug!("{line}");
        }
        let leading = Leading {
            config,
            connection,
            child,
            run,
            start,
            behind,
            won,
            window: claim,
        };
        Ok((leading, running))
    }

    /// The lease as the protocol takes it.
    pub fn lease_view(&self) -> LeaseView {
        view_of(&self.won.lease)
    }

    /// The next thing that happens to the run.
    pub async fn next_event(&mut self, running: &Running, signals: &mut Signals) -> RunningEvent {
        let Won {
            lease,
            leadership,
            own,
            ..
        } = &mut self.won;
        let schedule = running.schedule();
        let lost = leadership_lost(self.connection, lease, leadership, own, schedule);
        let mut sources = (
            std::pin::pin!(lost),
            std::pin::pin!(self.child.event()),
            std::pin::pin!(signals.recv()),
            std::pin::pin!(clock::sleep_until_opt(running.timeout_at())),
        );
        // Polled in the protocol's order: the first ready is the event.
        let happened = std::future::poll_fn(|cx| {
            let (lost, child, signal, timeout) = &mut sources;
            for source in RUNNING_PRECEDENCE {
                let ready = match source {
                    RunningSource::Leadership => lost.as_mut().poll(cx).map(Happened::Lost),
                    RunningSource::Command => child.as_mut().poll(cx).map(Happened::Child),
                    RunningSource::Signal => signal.as_mut().poll(cx).map(Happened::Signal),
                    RunningSource::Timeout => timeout.as_mut().poll(cx).map(|()| Happened::Timeout),
                };
                if ready.is_ready() {
                    return ready;
                }
            }
            std::task::Poll::Pending
        })
        .await;
        let event = match happened {
            Happened::Lost(loss) => RunningEvent::LeadershipLost(loss),
            Happened::Child(ChildEvent::Exited(Ok(status))) => {
                RunningEvent::CommandExited(crate::exit::status_of(status))
            }
            Happened::Child(ChildEvent::Exited(Err(err))) => {
                // Exits 125, which comes with its line.
                let line = format!("error: waiting for the command: {err}");
                crate::logging::say(crate::logging::Level::Error, &line);
                RunningEvent::WaitFailed
            }
            Happened::Child(ChildEvent::Stopped(signal)) => {
                RunningEvent::CommandStopped(signals::from_os(signal))
            }
            Happened::Signal(signal) => RunningEvent::Signal(signal),
            Happened::Timeout => RunningEvent::TimedOut,
        };
        #[cfg(debug_assertions)]
        panic_if_asked(&event);
        event
    }

    /// The command stopped for the terminal: stop like it; once continued,
    /// continue the job if its protocol says it may still run.
    pub fn follow_stop(&mut self, running: &Running, signal: Signal) {
        let lease = &self.won.lease;
        let may_continue = || running.may_continue(view_of(lease), clock::Instant::now());
        self.child.follow_stop(signals::to_os(signal), may_continue);
    }
}

/// The lease as the protocol takes it, as its keeper last told.
fn view_of(lease: &Lease) -> LeaseView {
    let state = lease.state();
    LeaseView {
        expires: state.expires,
        gone: state.gone,
    }
}

/// Debug builds only (the suite's; a release build has none of it): with
/// `LEADERRUN_TEST_PANIC_ON_SIGNAL` set, a signal to pass on to a running
/// command panics instead, so that a test can see what a panic leaves of
/// the job.
#[cfg(debug_assertions)]
fn panic_if_asked(event: &RunningEvent) {
    if matches!(event, RunningEvent::Signal(_))
        && std::env::var_os("LEADERRUN_TEST_PANIC_ON_SIGNAL").is_some()
    {
        panic!("asked to, by LEADERRUN_TEST_PANIC_ON_SIGNAL");
    }
}

/// Marks the run's `--once-per` attempt started, beside the command, as
/// soon as it has (`once_per::WindowClaim::mark_running`).
fn mark_window_started(connection: &Connection, claim: Option<&WindowClaim>) {
    if let Some(claim) = claim.cloned() {
        crate::host::spawn(claim.mark_running(connection.clone()));
    }
}

/// With one runner, our key still holds the holder as it queued (the win
/// was proven by a read): rewrite it with the time we began to lead, for
/// `status`. More runners proved with that rewrite already.
fn mark_leading(
    connection: &Connection,
    config: &Config,
    leadership: &Leadership,
    holder: Holder,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let connection = connection.clone();
    let (name, slots) = (config.election.clone(), config.max_running);
    let leadership = leadership.clone();
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

/// Resolves when leadership is lost, and says how: etcd says the lease is
/// gone, renewals went unacknowledged until the kill schedule must start, or
/// our key was deleted, replaced or overwritten.
pub async fn leadership_lost(
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
        let view = LeaseView {
            expires: now.expires,
            gone: now.gone,
        };
        let stop_from = match schedule.verdict(view, clock::Instant::now()) {
            LeaseVerdict::Gone => return Loss::LeaseGone,
            LeaseVerdict::MustStop => {
                return Loss::Unacknowledged {
                    silent_for: silent_for(now.expires, lease.ttl, clock::Instant::now()),
                    ttl: lease.ttl,
                    trouble: now.trouble,
                }
            }
            LeaseVerdict::HoldsUntil(stop_from) => stop_from,
        };
        tokio::select! {
            biased;
            _ = clock::sleep_until(stop_from) => {}
            changed = state.changed(), if keeper_alive => keeper_alive = changed.is_ok(),
            loss = &mut key => return Loss::Key(loss),
        }
    }
}

/// How long etcd has acknowledged nothing, as of `now`: since the send
/// of the last renewal it acknowledged, which is a TTL before the lease's
/// local deadline `expires`.
fn silent_for(expires: clock::Instant, ttl: Duration, now: clock::Instant) -> Duration {
    now.saturating_since(expires - ttl)
}

/// The -v line for a --kill-after that the kill schedule shortened to
/// `grace`, so that SIGKILL lands before a lease of `ttl` could expire.
fn shortened_line(kill_after: Duration, grace: Duration, ttl: Duration) -> Option<String> {
    (grace < kill_after).then(|| {
        format!(
            "--kill-after {} shortened to {}, so that SIGKILL lands before a {} lease could expire",
            humantime::format_duration(kill_after),
            humantime::format_duration(grace),
            humantime::format_duration(ttl)
        )
    })
}

/// What a running command's sources gave, before it is the protocol's
/// event.
enum Happened {
    Lost(Loss),
    Child(ChildEvent),
    Signal(Signal),
    Timeout,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn silence_counts_from_the_last_acknowledged_renewals_send() {
        let at = |seconds| clock::Instant::from_boot(seconds * SECOND);
        // Acknowledged a renewal sent at 100 s: a 10 s lease's local
        // deadline is then 110 s.
        assert_eq!(silent_for(at(110), 10 * SECOND, at(107)), 7 * SECOND);
        assert_eq!(silent_for(at(110), 10 * SECOND, at(99)), Duration::ZERO);
    }

    #[test]
    fn only_a_kill_after_cut_short_is_told() {
        let line = shortened_line(10 * SECOND, 4 * SECOND, 6 * SECOND);
        assert_eq!(
            line.as_deref(),
            Some("--kill-after 10s shortened to 4s, so that SIGKILL lands before a 6s lease could expire")
        );
        assert_eq!(shortened_line(10 * SECOND, 10 * SECOND, 60 * SECOND), None);
        assert_eq!(shortened_line(10 * SECOND, 11 * SECOND, 60 * SECOND), None);
    }
}
