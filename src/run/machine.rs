//! The run as one state machine: each state carries its protocol state
//! (`protocol`: the campaign's, `protocol::campaign`; a leading run's,
//! `protocol::lead`) and what the shell holds beside it; each has its own
//! source of events. The protocol state takes each event, asks its part
//! of the table (`protocol::table`: [`table::campaign`],
//! [`table::running`], [`table::stopping`]), and comes back as what to do
//! with the state it is done in; one loop ([`drive`]) does it. No state can
//! be handed an answer it cannot carry out: each part answers in its own
//! type.
//!
//! | state         | protocol state, and what the shell holds beside it      | events from                                   |
//! |---------------|---------------------------------------------------------|-----------------------------------------------|
//! | `Campaigning` | the phase with what it holds (the lease, our place and key's watch, the proof), what it learnt, its pace | the phase's work (the [`Campaigner`]'s), signals, --wait-timeout |
//! | `Leading`     | `lead::Running` (the kill schedule, --timeout's end); the lease, the proof, our key's watch, the guardian, the job | leadership lost, the command, signals, --timeout |
//! | `Stopping`    | `lead::Stopping` (the order, the kill sequence); the leading run's holdings, what was last seen of the job | what is due, the job gone, signals, (kept) a loss |
//!
//! A win whose command cannot be spawned never leads: it ends at once
//! ([`table::spawn_failed`]). Every way out is an [`Ending`], carried out
//! by [`finish`]: what is held in etcd given back (resigned with the run's
//! records after a run, as `lead::Resigning` says), and the guardian
//! released, told "done" only with the proof that the job is gone
//! (`child::job::JobGone`), and only if the protocol trusts it. A job not
//! known gone (SIGKILL did not finish it within its bound) leaves the
//! guardian armed: it kills the job's group as it is let go.

use anyhow::Result;
use std::future::Future;
use tokio::sync::Notify;

use super::campaign::{self, Campaign, Campaigner, Event};
use super::notify::{Notifier, Stage};
use super::session::Session;
use super::stopping::Stopping;
use super::supervise::{Leading, NotStarted};
use super::waiting::{self, Waiting};
use super::{explain, Config};
use crate::clock;
use crate::clock::Now;
use crate::election::record::Ended;
use crate::election::Election;
use crate::etcd::Connection;
use crate::host::Guard;
use crate::host::Signals;
use crate::logging;
use crate::retry::CLEANUP;
use crate::signals;
use protocol::campaign::Next as CampaignNext;
use protocol::lead::{self, Resigning, RunningStep, StoppingStep};
use protocol::table::{
    self, CampaignAction, CampaignEvent, CampaignPhase, CampaignSource, Code, Phase, RunningEvent,
    CAMPAIGN_PRECEDENCE,
};

/// What a run holds, by state: its protocol state, and beside it what
/// the shell holds for it.
enum State<'a> {
    Campaigning(Campaign),
    Leading(Leading<'a>, lead::Running),
    Stopping(Stopping<'a>, lead::Stopping),
}

/// How a run ends.
enum Ending {
    /// Before the command: what is held given back, then exit.
    Campaign {
        code: Code,
        guard: Option<Guard>,
        error: Option<anyhow::Error>,
    },
    /// After a win: resign with the run's records, then exit.
    Run {
        code: Code,
        // Boxed: the ending comes once, and `Campaign` is small.
        ended: Box<Ended>,
        /// Holding the proof that the job is gone, if it is known gone.
        guard: Guard,
        error: Option<anyhow::Error>,
    },
}

/// What carrying out an action leads to.
// The next state moves by value at every step (boxing it would allocate
// once an event); the ending comes once.
#[allow(clippy::large_enum_variant)]
enum Next<'a> {
    State(State<'a>),
    End(Ending),
}

/// The loop: the current state's next event, its table's answer, carried
/// out; until the run ends. Then the way out ([`finish`]).
pub async fn drive(
    config: &Config,
    connection: &Connection,
    signals: &mut Signals,
    guardian: Option<Guard>,
) -> Result<i32> {
    let mut session = Session::new(connection.clone(), config.handoff);
    let mut campaigner = Campaigner::new(config, connection, guardian);
    let run = Run { config, connection };
    let mut state = State::Campaigning(campaign::start(config));
    let mut notifier = Notifier::new(config.notify_socket.clone());
    let mut shown = ShownWait::default();
    let ending = loop {
        notifier.stage(|| stage_of(&state, &campaigner), &config.election);
        shown.follow(config, connection, &state, &campaigner);
        let next = match state {
            State::Campaigning(mut core) => {
                let event = campaign_event(&mut core, &mut campaigner, &mut session, signals).await;
                let (phase, bare) = (core.phase(), event.bare());
                let decision = core.handle(event, clock::Instant::now());
                let action = decision.action;
                tracing::trace!(?phase, event = ?bare, ?action, "decided");
                let answered = Answered {
                    phase,
                    event: bare,
                    action,
                };
                let waits_on = matches!(
                    &decision.next,
                    CampaignNext::Campaign(core) if core.phase() == CampaignPhase::Waiting
                );
                if !waits_on || decision.warn_full {
                    // The live line cleared before anything is said of
                    // what comes next (why it did not run, a retry, a
                    // full etcd).
                    shown.stop();
                }
                if decision.warn_full {
                    warn_full();
                }
                if let Some(lease) = decision.released {
                    session.hold(lease);
                }
                run.campaign(decision.next, &answered, &mut campaigner, &mut session)
                    .await
            }
            State::Leading(mut leading, core) => {
                let event = leading.next_event(&core, signals).await;
                let step = core.handle(&event, clock::Instant::now(), leading.lease_view());
                tracing::trace!(phase = ?Phase::Running, ?event, ?step, "decided");
                lead(leading, step, &event)
            }
            State::Stopping(mut stopping, core) => {
                let event = stopping.next_event(&core, signals).await;
                let lease = stopping.leading.lease_view();
                let step = core.handle(&event, clock::Instant::now(), lease);
                tracing::trace!(phase = ?Phase::Stopping, ?event, ?step, "decided");
                stop(stopping, step, &mut session).await
            }
        };
        match next {
            Next::State(next) => state = next,
            Next::End(ending) => break ending,
        }
    };
    // The live line cleared before the way out says anything.
    drop(shown);
    finish(config, connection, session, ending).await
}

/// The wait in line shown (`waiting`) while the run waits in line, if
/// anyone looks (a terminal, -v, systemd): from the first time it joins
/// the line.
#[derive(Default)]
struct ShownWait {
    shown: Option<Waiting>,
    /// When the run first joined the line: "waited" counts from there.
    since: Option<clock::Instant>,
}

impl ShownWait {
    /// Shows the wait if `state` waits in line, and stops showing it
    /// (the live line cleared) once it does not.
    fn follow(
        &mut self,
        config: &Config,
        connection: &Connection,
        state: &State<'_>,
        campaigner: &Campaigner<'_>,
    ) {
        if config.wait_shown.is_none() && config.notify_socket.is_none() {
            return;
        }
        let waiting = match state {
            State::Campaigning(core) if core.phase() == CampaignPhase::Waiting => Some(core),
            _ => None,
        };
        match (waiting, &self.shown, campaigner.queued_as) {
            (Some(core), None, Some(ours)) => {
                let since = *self.since.get_or_insert_with(clock::Instant::now);
                self.shown = Some(waiting::show(
                    connection,
                    waiting::Watched {
                        shown: config.wait_shown,
                        systemd: config.notify_socket.clone(),
                        watching: campaigner.watching.subscribe(),
                        election: config.election.clone(),
                        ours,
                        since,
                        gives_up_at: core.gives_up_at(),
                        still_waiting_every: config.still_waiting_every,
                    },
                ));
            }
            (None, Some(_), _) => self.stop(),
            _ => {}
        }
    }

    /// Stops showing the wait: the live line cleared.
    fn stop(&mut self) {
        self.shown = None;
    }
}

/// Where the run in `state` stands, as the service manager is told; None
/// while a win is proven and claimed, which says nothing new (a waiter
/// whose turn came is still shown in line until it leads).
fn stage_of(state: &State<'_>, campaigner: &Campaigner<'_>) -> Option<Stage> {
    Some(match state {
        State::Campaigning(core) if core.awaits_resume() => Stage::Paused {
            by: campaigner
                .paused
                .as_ref()
                .map_or_else(String::new, |paused| paused.describe()),
        },
        State::Campaigning(core) => match core.phase() {
            CampaignPhase::Dialling | CampaignPhase::Granting | CampaignPhase::Joining => {
                Stage::Campaigning
            }
            CampaignPhase::Waiting => Stage::Queued {
                place: None,
                leads: campaigner.queued_behind.clone(),
            },
            CampaignPhase::Proving | CampaignPhase::Claiming => return None,
        },
        State::Leading(leading, _) => Stage::Leading {
            token: leading.won.leadership.token,
        },
        State::Stopping(..) => Stage::Ending,
    })
}

/// The campaign's next event: its phase's work (from when its protocol
/// says), raced against a signal and --wait-timeout (once its protocol
/// says it counts).
async fn campaign_event(
    core: &mut Campaign,
    campaigner: &mut Campaigner<'_>,
    session: &mut Session,
    signals: &mut Signals,
) -> Event {
    let give_up_at = core.gives_up_at();
    let work_from = core.work_from();
    let work = std::pin::pin!(async {
        if let Some(at) = work_from {
            clock::sleep_until(at).await;
        }
        campaigner.work(core.work(), session).await
    });
    let mut sources = (
        std::pin::pin!(signals.recv()),
        std::pin::pin!(clock::sleep_until_opt(give_up_at)),
        work,
    );
    // Polled in the protocol's order: the first ready is the event.
    std::future::poll_fn(|cx| {
        let (signal, timeout, work) = &mut sources;
        for source in CAMPAIGN_PRECEDENCE {
            let ready = match source {
                CampaignSource::Signal => signal.as_mut().poll(cx).map(CampaignEvent::Signal),
                CampaignSource::WaitTimeout => timeout
                    .as_mut()
                    .poll(cx)
                    .map(|()| CampaignEvent::WaitTimeout),
                CampaignSource::Work => work.as_mut().poll(cx),
            };
            if ready.is_ready() {
                return ready;
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// A full etcd refuses until an operator acts: a queued replica rides it
/// out, but says so once, without -v, rather than retrying in silence for
/// hours.
fn warn_full() {
    logging::say(
        logging::Level::Warn,
        "etcd's database is full (its NOSPACE alarm is raised): waiting until an operator frees space (compact, defragment, then etcdctl alarm disarm)",
    );
}

/// A campaign's event and the answer to it, in words: what the run's lines
/// say of it.
struct Answered {
    /// The phase it came in.
    phase: CampaignPhase,
    event: CampaignEvent,
    action: CampaignAction,
}

/// What the loop keeps between events, beside the state.
struct Run<'a> {
    config: &'a Config,
    connection: &'a Connection,
}

impl<'a> Run<'a> {
    /// Where a campaign's event led: the line the answer says, then on
    /// with the campaign, to the command, or out.
    async fn campaign(
        &self,
        next: CampaignNext<campaign::Etcd>,
        answered: &Answered,
        campaigner: &mut Campaigner<'a>,
        session: &mut Session,
    ) -> Next<'a> {
        let event = &answered.event;
        match answered.action {
            CampaignAction::RetryInLine | CampaignAction::RetryAfresh => {
                let line = campaign::describe(event, campaigner.error.take().as_ref());
                tracing::info!("{line}; retrying");
            }
            CampaignAction::CampaignAgain => {
                let line = campaign::describe(event, campaigner.error.take().as_ref());
                tracing::info!(
                    event = logging::events::CAMPAIGNING_AGAIN,
                    "{line}; campaigning again"
                );
            }
            // The wait for the pause's end shows itself (`waiting`).
            CampaignAction::Enter(_)
            | CampaignAction::Start
            | CampaignAction::Exit(_)
            | CampaignAction::AwaitResume
            | CampaignAction::Ignore => {}
        }
        match next {
            CampaignNext::Campaign(core) => Next::State(State::Campaigning(core)),
            CampaignNext::Start(won) => self.start(won.into(), session),
            CampaignNext::Exit(code) => {
                Next::End(self.campaign_over(campaigner, code, answered).await)
            }
        }
    }

    /// Spawns the command of a win: it leads, or ends having started
    /// nothing.
    fn start(&self, won: campaign::Won, session: &mut Session) -> Next<'a> {
        let window = session.window_claim.take();
        match Leading::start(self.config, self.connection, won, window) {
            Ok((leading, core)) => Next::State(State::Leading(leading, core)),
            Err(not_started) => Next::End(not_started_ending(*not_started, session)),
        }
    }

    /// A campaign that ends before the command: why, said if asked.
    async fn campaign_over(
        &self,
        campaigner: &mut Campaigner<'a>,
        code: Code,
        answered: &Answered,
    ) -> Ending {
        match code {
            Code::Signalled(signal) => {
                let phase = answered.phase;
                tracing::info!(?signal, ?phase, "signalled before the command ran");
            }
            Code::Conflict => explain::conflict(self.config, campaigner, &answered.event).await,
            Code::Command(_) | Code::Own(_) => {}
        }
        let error = match code {
            Code::Own(_) => campaigner.error.take(),
            Code::Command(_) | Code::Conflict | Code::Signalled(_) => None,
        };
        Ending::Campaign {
            code,
            guard: campaigner.take_guard(),
            error,
        }
    }
}

/// A step while the command runs, done.
fn lead<'a>(mut leading: Leading<'a>, step: RunningStep, event: &RunningEvent) -> Next<'a> {
    let core = match step {
        RunningStep::Forward(core, signal) => {
            tracing::info!(?signal, "passing the signal on to the command");
            leading.child.signal_job(signals::to_os(signal));
            core
        }
        RunningStep::FollowStop(core, signal) => {
            leading.follow_stop(&core, signal);
            core
        }
        RunningStep::Stop(core) => {
            tracing::trace!("supervision ended");
            let stopping = Stopping::new(leading, &core, event);
            return Next::State(State::Stopping(stopping, core));
        }
    };
    Next::State(State::Leading(leading, core))
}

/// A step while the job is being stopped, done.
async fn stop<'a>(
    mut stopping: Stopping<'a>,
    step: StoppingStep,
    session: &mut Session,
) -> Next<'a> {
    let core = match step {
        StoppingStep::Forward(core, signal) => {
            stopping.leading.child.signal_job(signals::to_os(signal));
            core
        }
        StoppingStep::KillSignal(core, signal) => {
            stopping.send_kill_signal(signal);
            core
        }
        StoppingStep::GraceCut(core, loss, at) => {
            stopping.say_cut(&loss, at);
            core
        }
        StoppingStep::GraceOver(core, reason) => {
            stopping.say_grace_over(reason);
            core
        }
        StoppingStep::Kill(core) => {
            stopping.kill().await;
            core
        }
        StoppingStep::Resign(resigning) => {
            return Next::End(run_ending(stopping, resigning, session))
        }
    };
    Next::State(State::Stopping(stopping, core))
}

/// A stopped run's way out: its lease, watches and look-up of who is
/// behind back to the session, to resign with its records.
fn run_ending(stopping: Stopping<'_>, resigning: Resigning, session: &mut Session) -> Ending {
    let Resigning {
        code,
        trust_proof,
        restore_terminal,
    } = resigning;
    let mut leading = stopping.leading;
    if restore_terminal {
        leading.child.restore_terminal();
    }
    let config = leading.config;
    let mut won = leading.won;
    // Only the proof that the job is gone lets the guardian be told
    // "done"; without it, it stays armed. The job itself is dropped here:
    // not seen gone, it is killed as it goes.
    if let Some(gone) = leading.child.gone().filter(|_| trust_proof) {
        won.guard.job_gone(gone);
    }
    let proven_at = won.leadership.proven_at;
    session.after_run(won.lease, won.own, leading.behind, true);
    let record = leading
        .run
        .ended(code.outcome(), Some(code.value(config.conflict_code)));
    let window = leading.window.map(|claim| claim.ended(&record, None));
    Ending::Run {
        code,
        ended: Box::new(Ended::new(record, Some(leading.start), proven_at, window)),
        guard: won.guard,
        error: None,
    }
}

/// A win whose command could not be started: nothing ran, its window is
/// given back, and its record says it did not start.
fn not_started_ending(not_started: NotStarted, session: &mut Session) -> Ending {
    let NotStarted {
        exit,
        won,
        run,
        error,
        window,
    } = not_started;
    let code = table::spawn_failed(exit);
    let proven_at = won.leadership.proven_at;
    session.after_run(won.lease, won.own, None, false);
    let record = run.ended(code.outcome(), Some(exit.code()));
    let why = format!("{error:#}");
    let window = window.map(|claim| claim.ended(&record, Some(&why)));
    Ending::Run {
        code,
        ended: Box::new(Ended::new(record, None, proven_at, window)),
        guard: won.guard,
        error: Some(error),
    }
}

/// The way out, on every path: what is held given back (resigned with the
/// run's records after a run), the guardian released beside it once the
/// job is known gone. Signals are no longer listened to: what they would
/// ask for, leaving, is under way (bounded by [`CLEANUP`]).
async fn finish(
    config: &Config,
    connection: &Connection,
    mut session: Session,
    ending: Ending,
) -> Result<i32> {
    let (code, guard, ended, error) = match ending {
        Ending::Campaign { code, guard, error } => (code, guard, None, error),
        Ending::Run {
            code,
            ended,
            guard,
            error,
        } => (code, Some(guard), Some(*ended), error),
    };
    tracing::trace!(phase = ?Phase::Resigning, "giving back");
    let answered = Notify::new();
    // Each request on the way out is bounded by CLEANUP, and so is the
    // whole way: after a resignation etcd did not answer, the revocation
    // and the records would each wait as long again, for an etcd that is
    // frozen or gone. What is not given back by then expires by itself.
    // On tokio's clock, not the boot-time one: this bound guards no lease,
    // and arming it costs no system call on the next leader's path.
    let resign = async {
        let given_back = tokio::time::timeout(CLEANUP, async {
            let election = Election::new(connection, &config.election, config.max_running);
            session.leave(ended, &election, &answered).await;
        });
        match given_back.await {
            Ok(()) => tracing::trace!("given back"),
            Err(_) => tracing::info!(
                "giving back: not done within {CLEANUP:?}; what is left expires with its lease"
            ),
        }
        answered.notify_one();
    };
    // The job is gone (or never was): the guardian is released and
    // collected once the resignation's first request (the one the next
    // leader waits on) is answered, beside the rest of it. Its exit takes a
    // CPU for a while: released sooner, it would take it from etcd as etcd
    // works on that request. With nobody known behind us, nobody waits on
    // it: the guardian goes at once.
    let release = async {
        if let Some(guard) = guard {
            answered.notified().await;
            guard.release().await;
        }
    };
    tokio::join!(resign, release);
    match error {
        Some(error) => Err(error),
        None => Ok(code.value(config.conflict_code)),
    }
}
