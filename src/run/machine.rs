//! The run as one state machine: each state carries what it holds, each
//! has its own source of events and its own part of the table
//! (`protocol::table`: [`table::campaign`], asked through the campaign's
//! protocol state, `protocol::campaign`; [`table::running`],
//! [`table::stopping`]), which answers every event it can have; one loop
//! ([`drive`]) carries the answers out. No state can be handed an answer
//! it cannot carry out: each part of the table answers in its own type.
//!
//! | state         | holds                                                   | events from                                   |
//! |---------------|---------------------------------------------------------|-----------------------------------------------|
//! | `Campaigning` | its protocol state: the phase with what it holds (the lease, our place and key's watch, the proof), what it learnt, its pace | the phase's work (the [`Campaigner`]'s), signals, --wait-timeout |
//! | `Leading`     | the lease, the proof, our key's watch, the guardian, the job | leadership lost, the command, signals, --timeout |
//! | `Stopping`    | a leading run, the exit code, the kill sequence          | the job gone, the grace over, signals, (kept) a loss |
//!
//! A win whose command cannot be spawned never leads: it ends at once
//! ([`table::spawn_failed`]). Every way out is an [`Ending`], carried out
//! by [`finish`]: what is held in etcd given back (resigned with the run's
//! records after a run), and the guardian released, told "done" only with
//! the proof that the job is gone (`child::job::JobGone`). A job not known
//! gone (SIGKILL did not finish it within its bound) leaves the guardian
//! armed: it kills the job's group as it is let go.

use anyhow::Result;
use tokio::sync::Notify;

use super::campaign::{self, Campaign, Campaigner, Event};
use super::session::Session;
use super::stopping::Stopping;
use super::supervise::{Leading, NotStarted};
use super::{explain, Config};
use crate::child::guard::Guard;
use crate::clock;
use crate::election::record::Ended;
use crate::election::Election;
use crate::etcd::Connection;
use crate::logging;
use crate::protocol::campaign::Next as CampaignNext;
use crate::protocol::table::{
    self, CampaignAction, CampaignEvent, CampaignPhase, Code, Phase, RunningAction, RunningEvent,
    StoppingAction,
};
use crate::retry::CLEANUP;
use crate::signals::Signals;

/// What a run holds, by state.
enum State<'a> {
    Campaigning(Campaign),
    Leading(Leading<'a>),
    Stopping(Stopping<'a>),
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
        ended: Ended,
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
    let ending = loop {
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
                if decision.warn_full {
                    warn_full();
                }
                if let Some(lease) = decision.released {
                    session.hold(lease);
                }
                run.campaign(decision.next, &answered, &mut campaigner, &mut session)
                    .await
            }
            State::Leading(mut leading) => {
                let event = leading.next_event(signals).await;
                let action = table::running(&event);
                tracing::trace!(phase = ?Phase::Running, ?event, ?action, "decided");
                lead(leading, action, &event)
            }
            State::Stopping(mut stopping) => {
                let event = stopping.next_event(signals).await;
                let action = table::stopping(&event);
                tracing::trace!(phase = ?Phase::Stopping, ?event, ?action, "decided");
                stop(stopping, action, &mut session).await
            }
        };
        match next {
            Next::State(next) => state = next,
            Next::End(ending) => break ending,
        }
    };
    finish(config, connection, session, ending).await
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
    let work = async {
        if let Some(at) = work_from {
            clock::sleep_until(at).await;
        }
        campaigner.work(core.work(), session).await
    };
    tokio::select! {
        biased;
        signal = signals.recv() => CampaignEvent::Signal(signal),
        _ = clock::sleep_until_opt(give_up_at) => CampaignEvent::WaitTimeout,
        event = work => event,
    }
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
            CampaignAction::Enter(_)
            | CampaignAction::Start
            | CampaignAction::Exit(_)
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
        match Leading::start(self.config, self.connection, won) {
            Ok(leading) => Next::State(State::Leading(leading)),
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

/// An action while the command runs.
fn lead<'a>(mut leading: Leading<'a>, action: RunningAction, event: &RunningEvent) -> Next<'a> {
    match action {
        RunningAction::Forward(signal) => {
            tracing::info!(?signal, "passing the signal on to the command");
            leading.child.signal_job(signal);
        }
        RunningAction::FollowStop(signal) => leading.follow_stop(signal),
        RunningAction::Stop(order) => {
            tracing::trace!("supervision ended");
            return Next::State(State::Stopping(Stopping::new(leading, order, event)));
        }
    }
    Next::State(State::Leading(leading))
}

/// An action while the job is being stopped.
async fn stop<'a>(
    mut stopping: Stopping<'a>,
    action: StoppingAction,
    session: &mut Session,
) -> Next<'a> {
    match action {
        StoppingAction::Forward(signal) => stopping.leading.child.signal_job(signal),
        StoppingAction::CutGrace(loss) => stopping.cut_grace(&loss),
        StoppingAction::SendKillSignal(signal) => stopping.send_kill_signal(signal),
        StoppingAction::EndGrace => stopping.end_grace(),
        StoppingAction::Kill => stopping.kill().await,
        StoppingAction::Resign => return Next::End(run_ending(stopping, session)),
    }
    Next::State(State::Stopping(stopping))
}

/// A stopped run's way out: its lease, watches and look-up of who is
/// behind back to the session, to resign with its records.
fn run_ending(mut stopping: Stopping<'_>, session: &mut Session) -> Ending {
    stopping.restore_terminal();
    let (code, trust_proof) = (stopping.code, stopping.trust_proof);
    let leading = stopping.leading;
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
    Ending::Run {
        code,
        ended: Ended::new(record, Some(leading.start), proven_at),
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
    } = not_started;
    let code = table::spawn_failed(exit);
    let proven_at = won.leadership.proven_at;
    session.after_run(won.lease, won.own, None, false);
    let record = run.ended(code.outcome(), Some(exit.code()));
    Ending::Run {
        code,
        ended: Ended::new(record, None, proven_at),
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
        } => (code, Some(guard), Some(ended), error),
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
            match ended {
                Some(ended) => {
                    let election = Election::new(connection, &config.election, config.max_running);
                    session.resign(ended, &election, &answered).await;
                }
                None => session.give_back().await,
            }
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
