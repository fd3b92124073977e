//! Running a command as leader: campaign, prove, spawn, supervise, resign.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sys::signal::Signal;
use tokio::signal::unix::SignalKind;

use crate::child::{self, Child, ChildEnv};
use crate::cli::Cli;
use crate::clock;
use crate::connection::{Connection, Settings};
use crate::credentials::Credentials;
use crate::election::{self, Attempt, Leader, Leadership, Turn};
use crate::endpoints;
use crate::exit;
use crate::guard::Guard;
use crate::holder::{self, Holder};
use crate::lease::Lease;
use crate::name;
use crate::once_per::{self, Claim, Marker};
use crate::signals::Signals;

/// The child must be dead this long before the earliest instant the lease
/// could expire on the server: room for delivering SIGKILL and for clock
/// rates to differ.
pub fn safety_margin(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_millis(200), Duration::from_secs(1))
}

/// The longest TERM-to-KILL grace the TTL allows. Killing starts `grace`
/// before the deadline, and must not start just because one renewal was
/// missed: a renewal goes out every third of the TTL, and a lost one is
/// retried after an acknowledgement timeout of a sixth.
pub fn max_grace(ttl: Duration) -> Duration {
    (ttl / 3)
        .saturating_sub(safety_margin(ttl))
        .saturating_sub(ttl / 12)
}

/// Connection settings shared by `run` and `status`.
pub fn connection_for(args: &crate::cli::ConnectionArgs, ttl: Duration) -> Result<Connection> {
    let credentials = Credentials::from_args(args)?;
    let endpoints = endpoints::resolve(args.endpoints.as_deref(), credentials.tls_requested())?;
    Ok(Connection::new(Settings {
        endpoints,
        dial_timeout: args.dial_timeout,
        ping_interval: (ttl / 3).clamp(Duration::from_secs(1), Duration::from_secs(10)),
        credentials,
    }))
}

struct Config {
    command: Vec<OsString>,
    election: String,
    ttl: Duration,
    wait: bool,
    wait_timeout: Option<Duration>,
    conflict_code: i32,
    once_per: Option<Duration>,
    kill_signal: Signal,
    kill_after: Duration,
    /// Say why we did not run (cron mails whatever is printed, so only when
    /// someone is watching: a terminal, or -v).
    explain: bool,
}

enum Elected {
    Leader(Lease, Leadership),
    /// Not leader, and done: exit with this code.
    Exit(i32),
}

pub async fn run(cli: Cli) -> Result<i32> {
    let command = cli.command;
    child::resolve(&command[0])?;
    let election = match cli.election.name.name {
        Some(name) if name.is_empty() => anyhow::bail!("--name must not be empty"),
        Some(name) => name,
        None => name::derive(&command),
    };
    tracing::info!("election {election}");
    let config = Config {
        election,
        ttl: cli.election.ttl,
        wait: cli.election.wait,
        wait_timeout: cli.election.wait_timeout,
        conflict_code: cli.election.conflict_exit_code,
        once_per: cli.election.once_per,
        kill_signal: cli.child.kill_signal,
        kill_after: cli.child.kill_after,
        explain: cli.output.verbose > 0 || std::io::stderr().is_terminal(),
        command,
    };
    let connection = connection_for(&cli.connection, config.ttl)?;
    let mut signals = Signals::install().context("installing signal handlers")?;

    let (lease, leadership) = match elect(&config, &connection, &mut signals).await? {
        Elected::Leader(lease, leadership) => (lease, leadership),
        Elected::Exit(code) => return Ok(code),
    };
    tracing::info!(token = leadership.token, key = %leadership.key, "leader");
    if let Some(window) = config.once_per {
        let holder = Holder::for_this_process(&config.command);
        match once_per::claim(&connection, &leadership, window, &holder).await {
            Ok(Claim::Ours) => tracing::info!(
                "this run opens a --once-per {} window",
                humantime::format_duration(window)
            ),
            Ok(Claim::Taken(marker)) => {
                lease.revoke().await;
                explain_window(&config, &marker);
                return Ok(config.conflict_code);
            }
            Err(err) => {
                lease.revoke().await;
                return Err(err);
            }
        }
    }
    let code = supervise(&config, &connection, &mut signals, &lease, &leadership).await;
    lease.revoke().await;
    code
}

/// Becomes leader, or decides not to run.
async fn elect(config: &Config, connection: &Connection, signals: &mut Signals) -> Result<Elected> {
    let started = clock::Instant::now();
    let gave_up_at = config.wait_timeout.map(|timeout| started + timeout);
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let holder = Holder::for_this_process(&config.command);
        let lease = match Lease::grant(connection, config.ttl).await {
            Ok(lease) => lease,
            // The first failure is the answer (etcd unreachable); once
            // queued, keep trying for as long as we may wait.
            Err(err) if attempt == 1 || !config.wait => return Err(err),
            Err(err) => {
                tracing::info!("{err:#}; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if attempt == 1 {
            tracing::debug!(ttl = ?lease.ttl, "granted TTL");
        }
        if !config.wait {
            let attempt =
                election::try_acquire(connection, &config.election, lease.id, &holder).await;
            return match attempt {
                Ok(Attempt::Won(leadership)) => Ok(Elected::Leader(lease, leadership)),
                Ok(Attempt::Lost(leader)) => {
                    lease.revoke().await;
                    explain_conflict(config, leader.as_ref(), "");
                    Ok(Elected::Exit(config.conflict_code))
                }
                Err(err) => {
                    lease.revoke().await;
                    Err(err)
                }
            };
        }

        let (candidate, leader) =
            match election::enqueue(connection, &config.election, lease.id, &holder).await {
                Ok(queued) => queued,
                Err(err) if attempt == 1 => {
                    lease.revoke().await;
                    return Err(err);
                }
                Err(err) => {
                    tracing::info!("{err:#}; retrying");
                    lease.revoke().await;
                    continue;
                }
            };
        if let Some(leader) = leader.filter(|leader| leader.key != candidate.key) {
            tracing::info!("waiting: {} leads", leader.describe());
        }
        let mut lease_state = lease.watch();
        let timeout = async {
            match gave_up_at {
                Some(at) => clock::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let turn = tokio::select! {
            turn = election::wait_for_turn(connection, &config.election, &candidate, &mut lease_state) => turn,
            _ = timeout => {
                lease.revoke().await;
                let leader = election::read_leader(connection, &config.election).await.ok().and_then(|snapshot| snapshot.leader);
                explain_conflict(config, leader.as_ref(), " after waiting");
                return Ok(Elected::Exit(config.conflict_code));
            }
            signal = signals.recv() => {
                lease.revoke().await;
                tracing::info!(?signal, "signalled while queued");
                return Ok(Elected::Exit(exit::SIGNAL_BASE + signal as i32));
            }
        };
        match turn? {
            Turn::Ours => {
                let holder = Holder {
                    started: holder::now_rfc3339(),
                    ..holder
                };
                match election::prove(connection, &config.election, &candidate, lease.id, &holder).await? {
                    Some(leadership) => return Ok(Elected::Leader(lease, leadership)),
                    None => tracing::info!(
                        "won a campaign for a key that no longer exists (phantom win); campaigning again"
                    ),
                }
            }
            Turn::KeyLost(reason) => tracing::info!("{reason}; campaigning again"),
        }
        lease.revoke().await;
    }
}

fn explain_conflict(config: &Config, leader: Option<&Leader>, after: &str) {
    if !config.explain {
        return;
    }
    let holder = leader.map_or_else(|| "another replica".to_string(), Leader::describe);
    eprintln!(
        "leaderrun: not running{after}: {} is held by {holder}",
        config.election
    );
}

fn explain_window(config: &Config, marker: &Marker) {
    if !config.explain {
        return;
    }
    let left = marker.left.map_or_else(String::new, |left| {
        format!(
            "; the window closes in {}",
            humantime::format_duration(left)
        )
    });
    eprintln!(
        "leaderrun: not running: {} already started in this --once-per window, {}{left}",
        config.election,
        marker.last.describe()
    );
}

enum Ending {
    Exited(std::io::Result<std::process::ExitStatus>),
    Lost(String),
}

/// Runs the child while leadership lasts.
async fn supervise(
    config: &Config,
    connection: &Connection,
    signals: &mut Signals,
    lease: &Lease,
    leadership: &Leadership,
) -> Result<i32> {
    let margin = safety_margin(lease.ttl);
    let grace = config.kill_after.min(max_grace(lease.ttl));
    // Before the spawn, so that no stop of the child goes unseen.
    let mut child_changes = tokio::signal::unix::signal(SignalKind::child())
        .context("installing the SIGCHLD handler")?;
    let mut guard = Guard::start().context("starting the guardian process")?;
    let env = ChildEnv {
        token: leadership.token,
        key: leadership.key.clone(),
        lease: lease.id,
        name: config.election.clone(),
    };
    let mut child = match Child::spawn(&config.command, &env) {
        Ok(child) => child,
        Err(err) => {
            guard.release();
            return Err(err);
        }
    };
    guard.watch(child.group);

    let mut lease_state = lease.watch();
    let loss = election::watch_for_loss(connection, leadership);
    tokio::pin!(loss);
    let ending = loop {
        let state = lease_state.borrow_and_update().clone();
        if let Some(reason) = state.gone {
            break Ending::Lost(reason);
        }
        // Checked before anything else, so that after a pause of leaderrun
        // itself the child is stopped at once, whatever else is pending.
        let kill_from = state.expires - margin - grace;
        if kill_from.has_passed() {
            break Ending::Lost(format!(
                "etcd has not acknowledged a lease renewal for {} (TTL {})",
                humantime::format_duration(round_ms((state.expires - lease.ttl).elapsed())),
                humantime::format_duration(lease.ttl)
            ));
        }
        tokio::select! {
            biased;
            _ = clock::sleep_until(kill_from) => {}
            _ = lease_state.changed() => {}
            reason = &mut loss => break Ending::Lost(reason),
            signal = signals.recv() => {
                tracing::info!(?signal, "passing the signal on to the command");
                child.signal_group(signal);
            }
            status = child.wait() => break Ending::Exited(status),
            _ = child_changes.recv(), if child.interactive() => child.follow_stop(),
        }
    };

    let deadline = lease.state().expires - margin;
    let code = match ending {
        Ending::Exited(status) => {
            let status = status.context("waiting for the command")?;
            if child.group_alive() {
                tracing::info!("the command exited; stopping what it left running in its group");
                child
                    .stop(config.kill_signal, grace.min(deadline.remaining()))
                    .await
                    .ok();
            }
            exit::from_status(status)
        }
        Ending::Lost(reason) => {
            eprintln!(
                "leaderrun: leadership of {} lost: {reason}; stopping the command",
                config.election
            );
            child
                .stop(config.kill_signal, grace.min(deadline.remaining()))
                .await
                .ok();
            exit::LEADERSHIP_LOST
        }
    };
    guard.release();
    Ok(code)
}

fn round_ms(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis() as u64)
}
