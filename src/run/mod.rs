//! Running a command as leader: campaign, prove, claim, spawn, supervise,
//! stop, resign.
//!
//! The phases and what every event does in each are `protocol`'s (its
//! table, and the protocol states that ask it), the only place that
//! decides; [`machine`] is the one loop that feeds them and does what they
//! say, over states that each carry what they hold:
//! [`campaign`] (everything before the command exists, each claim step as
//! the protocol orders them), [`supervise`] (the command running),
//! [`stopping`] (the kill sequence, as `protocol::lead` asks for it), and
//! [`session`] (what the run holds in etcd, and the way out, as
//! `protocol::resign` asks for it). Each state waits on its sources in the
//! order the protocol gives (`protocol::table`'s precedences). What is
//! still chosen here, and why, docs/design.md lists ("What the run still
//! does itself").
//! The handoff's fast path (`election::handoff`) is used here, behind its
//! one switch; [`explain`] says why a run did not run. This file starts the guardian,
//! dials etcd and hands over to the machine.

mod campaign;
mod explain;
mod hooks;
mod machine;
mod notify;
mod session;
mod stopping;
mod supervise;
mod waiting;

pub use notify::Socket as NotifySocket;
pub use waiting::{still_waiting_every, Shown as WaitShown, STILL_WAITING_VARIABLE};

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sys::signal::Signal;

use crate::child::env;
use crate::election::holder::Holder;
use crate::etcd;
use crate::etcd::ids::{LeaseId, Token};
use crate::host::{self, Guard, Signals};

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
    /// --once-per-attempts: how many runs may start in a window, each
    /// after the last failed (1: the first start spends it).
    pub once_per_attempts: u32,
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
    /// The handoff fast path, or only the slow path (`handoff`).
    pub handoff: crate::election::handoff::Handoff,
    /// Where a service manager listens (`NOTIFY_SOCKET`), if one does: it
    /// is told where the run stands (`notify`).
    pub notify_socket: Option<NotifySocket>,
    /// What the command does not inherit of leaderrun's environment:
    /// `NOTIFY_SOCKET`, unless --pass-notify-socket.
    pub withheld: &'static [&'static str],
    /// How a wait in line is shown (`waiting`), if at all.
    pub wait_shown: Option<WaitShown>,
    /// How often a logged wait says it still waits.
    pub still_waiting_every: Duration,
}

impl Config {
    /// The command's environment over leaderrun's own: the election's
    /// variables and the ETCDCTL_* ones.
    pub fn command_env(&self, token: Token, key: &str, lease: LeaseId) -> env::Variables {
        let mut variables = env::election(token, key, lease, &self.election);
        variables.extend(self.etcd_env.iter().cloned());
        variables
    }
}

/// Runs the command as leader, as `config` says, with etcd reached as
/// `etcd_options` say; `etcdctl` is what the command is told of that etcd.
pub async fn run(
    mut config: Config,
    etcd_options: etcd::Options,
    etcdctl: env::Etcdctl,
) -> Result<i32> {
    // First: from here on a signal is ours to answer, in every phase.
    let mut signals = Signals::install().context("installing signal handlers")?;
    tracing::info!("election {}", config.election);
    // The guardian first, while leaderrun is small and before anything
    // waits on etcd: its start is then off the path between winning and
    // running, for a waiter and a first try alike. One that fails to start
    // is tried again once we win, and that failure is fatal.
    let guardian = Guard::start()
        .inspect_err(|err| tracing::debug!("starting the guardian: {err}; trying again on winning"))
        .ok();
    // A dead connection must break the keep-alive stream well within the
    // TTL: ping every third of it.
    let ping = (config.ttl / 3).clamp(Duration::from_secs(1), Duration::from_secs(10));
    let connection = etcd::connect(&etcd_options, ping).await?;
    config.etcd_env = env::etcdctl(&etcdctl, &connection.settings().endpoints);
    host::prepare();
    machine::drive(&config, &connection, &mut signals, guardian).await
}
