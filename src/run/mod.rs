//! Running a command as leader: campaign, prove, claim, spawn, supervise,
//! stop, resign.
//!
//! The phases and what every event does in each are in [`phase`], the only
//! place that decides. [`campaign`] owns everything before the command
//! exists, [`supervise`] everything after, [`schedule`] when a job is
//! killed. This file wires them: the campaign raced against signals and
//! the user's deadline, then supervision, then giving everything back.

pub mod campaign;
pub mod phase;
// The lead's new table (issue 31), until it replaces `phase` on main.
#[cfg(test)]
#[allow(dead_code)]
pub mod phase_next;
pub mod schedule;
pub mod supervise;

use std::cell::Cell;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sys::signal::Signal;

use crate::child::env;
use crate::child::guard::Guard;
use crate::child::{self, job, terminal};
use crate::cli::Cli;
use crate::clock;
use crate::election::holder::Holder;
use crate::election::name;
use crate::election::once_per::Marker;
use crate::election::{self, Election, Leader, OwnKey};
use crate::etcd::{self, Connection};
use crate::exit;
use crate::logging::{self, Level};
use crate::retry::CLEANUP;
use crate::signals::Signals;
use campaign::{Campaign, Outcome, Session};
use phase::{decide, Action, Event, Phase, Policy};
use supervise::Supervision;

pub struct Config {
    pub command: Vec<OsString>,
    /// Where COMMAND was found in PATH when leaderrun started: exec'd
    /// without a search of PATH on the next leader's path.
    pub program: PathBuf,
    pub election: String,
    pub ttl: Duration,
    pub wait: bool,
    pub wait_timeout: Option<Duration>,
    pub conflict_code: i32,
    pub once_per: Option<Duration>,
    pub kill_signal: Signal,
    pub kill_after: Duration,
    /// --max-running: how many candidates run at once.
    pub max_running: usize,
    /// --timeout: the longest the command may run.
    pub timeout: Option<Duration>,
    /// Say why we did not run (cron mails whatever is printed, so only when
    /// someone is watching: a terminal, or -v).
    pub explain: bool,
    /// The ETCDCTL_* variables that take the command to our etcd.
    pub etcd_env: env::Variables,
    /// Who we are, as our key and our records say (host, pid, the command
    /// as stored, --max-running): made once, with `started` set anew
    /// wherever it is written.
    pub holder: Holder,
}

impl Config {
    /// The command's environment over leaderrun's own: the election's
    /// variables and the ETCDCTL_* ones.
    pub fn command_env(&self, token: i64, key: &str, lease: i64) -> env::Variables {
        let mut variables = env::election(token, key, lease, &self.election);
        variables.extend(self.etcd_env.iter().cloned());
        variables
    }

    fn from_cli(cli: Cli) -> Result<Config> {
        let command = cli.command;
        let program = child::resolve(&command[0])?;
        let election = match cli.election.name.name {
            Some(name) if name.is_empty() => anyhow::bail!("--name must not be empty"),
            Some(name) => name,
            None => name::derive(&command),
        };
        let holder = Holder {
            max_running: cli.election.max_running,
            ..Holder::for_this_process(&command, cli.election.redact_args)
        };
        Ok(Config {
            program,
            holder,
            election,
            ttl: cli.election.ttl,
            // --wait-timeout bounds a wait: it implies one, as `flock -w` does.
            wait: cli.election.wait || cli.election.wait_timeout.is_some(),
            wait_timeout: cli.election.wait_timeout,
            conflict_code: cli.election.conflict_exit_code,
            once_per: cli.election.once_per,
            kill_signal: cli.child.kill_signal,
            kill_after: cli.child.kill_after,
            timeout: cli.child.timeout,
            max_running: cli.election.max_running,
            explain: cli.output.verbose > 0 || std::io::stderr().is_terminal(),
            etcd_env: Vec::new(),
            command,
        })
    }
}

pub async fn run(cli: Cli) -> Result<i32> {
    // First: from here on a signal is ours to answer, in every phase.
    let mut signals = Signals::install().context("installing signal handlers")?;
    let connection_args = cli.connection.clone();
    let mut config = Config::from_cli(cli)?;
    tracing::info!("election {}", config.election);
    // The guardian first, while leaderrun is small and before anything
    // waits on etcd: its start is then off the path between winning and
    // running, for a waiter and a first try alike. One that fails to start
    // is tried again once we win, and that failure is fatal.
    let mut guardian = Guard::start()
        .inspect_err(|err| tracing::debug!("starting the guardian: {err}; trying again on winning"))
        .ok();
    // A dead connection must break the keep-alive stream well within the
    // TTL: ping every third of it.
    let ping = (config.ttl / 3).clamp(Duration::from_secs(1), Duration::from_secs(10));
    let connection = etcd::connect(&connection_args, ping)?;
    config.etcd_env = env::etcdctl(&connection_args, &connection.settings().endpoints);
    job::become_subreaper();
    child::listen_for_exits();
    terminal::watch_continue();

    let phase = Cell::new(Phase::Dialling);
    let mut session = Session::new(connection.clone());
    let mut ended = None;
    let result = lead(
        &config,
        &connection,
        &mut signals,
        &mut session,
        &phase,
        &mut guardian,
        &mut ended,
    )
    .await;
    // Every way out passes here. Signals are no longer listened to: what
    // they would ask for, leaving, is under way (bounded by CLEANUP).
    phase.set(Phase::Resigning);
    let answered = tokio::sync::Notify::new();
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
                    let election = Election::new(&connection, &config.election, config.max_running);
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
    // it: the guardian goes at once. Every path hands it back here.
    let release = async {
        if let Some(guard) = guardian {
            answered.notified().await;
            guard.release(CLEANUP).await;
        }
    };
    tokio::join!(resign, release);
    result
}

/// Campaigns, then runs the command if we lead; returns the exit code.
async fn lead(
    config: &Config,
    connection: &Connection,
    signals: &mut Signals,
    session: &mut Session,
    phase: &Cell<Phase>,
    guardian: &mut Option<Guard>,
    ended: &mut Option<election::record::Ended>,
) -> Result<i32> {
    let give_up_at = config
        .wait_timeout
        .map(|timeout| clock::Instant::now() + timeout);
    // The campaign holds the guardian until we win (dropped with it, the
    // guardian exits); a win hands it back in `guardian`, where it stays
    // until we have resigned.
    let mut campaign = Campaign::new(config, connection, phase, guardian.take());
    // --wait-timeout ends the wait, but never before the first look at the
    // queue: `--wait-timeout 0` tries once. Reaching etcd at all is bounded
    // by --dial-timeout.
    let has_looked = campaign.has_looked();
    let timed_out = async {
        clock::sleep_until_opt(give_up_at).await;
        has_looked.await;
    };
    let raced = tokio::select! {
        biased;
        signal = signals.recv() => Err(Event::Signal(signal)),
        _ = timed_out => Err(Event::WaitTimeout),
        outcome = campaign.run(session) => Ok(outcome),
    };
    let policy = campaign.policy();
    // Back to `run`, to release at the end, unless a win carries it.
    *guardian = campaign.take_guard();
    let outcome = match raced {
        Ok(outcome) => outcome,
        Err(event) => return Ok(interrupted(config, connection, phase.get(), event, policy).await),
    };
    let (leadership, guard, own) = match outcome {
        Outcome::Won(leadership, guard, own) => (leadership, guardian.insert(guard), own),
        Outcome::Held(leader) => {
            explain_conflict(config, leader.as_ref(), "");
            return Ok(config.conflict_code);
        }
        Outcome::WindowTaken(marker) => {
            explain_window(config, &marker);
            return Ok(config.conflict_code);
        }
        Outcome::Failed(err) => return Err(err),
    };
    phase.set(Phase::Running);
    let mut own = own;
    let passed_on = own.as_mut().map_or_else(Vec::new, OwnKey::take_passed_on);
    let supervision = Supervision {
        config,
        connection,
        lease: session.lease(),
        leadership: &leadership,
        own: Cell::new(own),
        policy,
    };
    let mut started = false;
    let mut behind = None;
    let look_behind = || {
        started = true;
        behind = campaign::look_behind(
            connection,
            &config.election,
            config.max_running,
            &leadership,
            passed_on,
        );
    };
    let code = supervision.run(signals, guard, look_behind, ended).await;
    let watches = supervision.own.take();
    session.expect_successor(behind);
    session.keep_watching(watches);
    if started {
        session.spend_window();
    }
    code
}

/// The exit code when a signal or --wait-timeout ended the campaign: the
/// table decides which it is in this phase.
async fn interrupted(
    config: &Config,
    connection: &Connection,
    phase: Phase,
    event: Event,
    policy: Policy,
) -> i32 {
    match (decide(phase, &event, policy), event) {
        (Action::ExitSignalled, Event::Signal(signal)) => {
            tracing::info!(?signal, ?phase, "signalled before the command ran");
            exit::SIGNAL_BASE + signal as i32
        }
        _ => {
            if config.explain {
                let read =
                    clock::timeout(CLEANUP, election::read_leader(connection, &config.election));
                let leader = read
                    .await
                    .and_then(Result::ok)
                    .and_then(|snapshot| snapshot.leader);
                explain_conflict(config, leader.as_ref(), " after waiting");
            }
            config.conflict_code
        }
    }
}

fn explain_conflict(config: &Config, leader: Option<&Leader>, after: &str) {
    if !config.explain {
        return;
    }
    let holder = leader.map_or_else(|| "another replica".to_string(), Leader::describe);
    let line = format!(
        "not running{after}: {} is held by {holder}",
        config.election
    );
    logging::say(Level::Info, &line);
}

fn explain_window(config: &Config, marker: &Marker) {
    if !config.explain {
        return;
    }
    let left = match (marker.lease, marker.left) {
        (0, _) => format!(
            "; its marker has no lease, so the window never closes (remove it with: {})",
            crate::election::holder::etcdctl_del(&crate::election::once_per::marker_key(
                &config.election
            ))
        ),
        (_, None) => String::new(),
        (_, Some(left)) => format!(
            "; the window closes in {}",
            humantime::format_duration(left)
        ),
    };
    let line = format!(
        "not running: {} already started in this --once-per window, {}{left}",
        config.election,
        marker.last.describe()
    );
    logging::say(Level::Info, &line);
}
