//! The child process: the command, spawned in a process group of its own,
//! its whole job (group and descendants), the terminal it may borrow, and
//! the guardian that outlives leaderrun.
//!
//! This folder owns every process leaderrun creates and every signal it
//! sends to them; it knows nothing of etcd. What to do when (forward a
//! signal, stop the job, follow a Ctrl-Z) is decided in `protocol::table`.
//! [`Child`] is the running job: dropped before its job was seen gone, it
//! kills it; only a [`job::JobGone`] lets the guardian be told "done".
//! Every line a child runs before its exec is in `forked`, with the rules
//! it keeps.

pub mod env;

pub(crate) mod forked;
pub mod guard;
pub mod job;
pub mod spawn;
pub mod terminal;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use tokio::signal::unix::{Signal as SignalStream, SignalKind};

use crate::clock;
use crate::clock::Now;
use job::{Job, JobGone};
use spawn::Process;
use terminal::Lent;

/// Something that happened to the running command.
pub enum ChildEvent {
    /// The command itself exited; its job may live on.
    Exited(io::Result<ExitStatus>),
    /// The command stopped for the terminal (Ctrl-Z, or reading it from the
    /// background), with this signal.
    Stopped(Signal),
}

/// The running command and its whole job. Dropped before its job was seen
/// gone (an error on the way out of supervision, say), it SIGKILLs the job
/// there and then, as process-wrap's `KillOnDrop` does: no way out of a
/// run leaves the job running.
pub struct Child {
    process: Process,
    /// The child's pid, which is also its process group id.
    pub group: Pid,
    job: Job,
    terminal: Lent,
    /// SIGCHLD: stops of the command, exits of adopted orphans.
    child_changes: SignalStream,
    status: Option<ExitStatus>,
}

/// Why the command cannot be run, found before campaigning ([`resolve`])
/// or by the spawn itself. `exit::exit_of` gives each its exit code (127,
/// 126, or as a shell reports the spawn's error).
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// No such program in PATH, or no such file.
    #[error("command not found: '{}'", .0.display())]
    NotFound(PathBuf),
    /// Found, but not a file leaderrun may execute.
    #[error("cannot execute '{}': permission denied", .0.display())]
    NotExecutable(PathBuf),
    /// The spawn failed, with `error`.
    #[error("cannot run '{}': {error}", .program.display())]
    Spawn { program: PathBuf, error: io::Error },
}

/// Finds COMMAND the way `execvp` will, so that "not found" and "not
/// executable" are reported (127, 126) before campaigning, not after winning.
pub fn resolve(program: &OsString) -> Result<PathBuf, SpawnError> {
    let path = Path::new(program);
    if program.is_empty() {
        return Err(SpawnError::NotFound(path.to_path_buf()));
    }
    // Err: found, but not executable.
    let check = |candidate: &Path| -> Option<Result<PathBuf, ()>> {
        let meta = std::fs::metadata(candidate).ok()?;
        let executable = meta.is_file()
            && nix::unistd::access(candidate, nix::unistd::AccessFlags::X_OK).is_ok();
        Some(if executable {
            Ok(candidate.to_path_buf())
        } else {
            Err(())
        })
    };
    let found = if program.as_encoded_bytes().contains(&b'/') {
        check(path)
    } else {
        let search =
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
        let mut found = None;
        for dir in std::env::split_paths(&search) {
            match check(&dir.join(path)) {
                Some(Ok(full)) => {
                    found = Some(Ok(full));
                    break;
                }
                // Keep looking past a non-executable match, as execvp does.
                Some(Err(())) => found = found.or(Some(Err(()))),
                None => {}
            }
        }
        found
    };
    match found {
        Some(Ok(full)) => Ok(full),
        Some(Err(())) => Err(SpawnError::NotExecutable(path.to_path_buf())),
        None => Err(SpawnError::NotFound(path.to_path_buf())),
    }
}

impl Child {
    /// Spawns the command in a process group of its own (see [`spawn`]),
    /// with `env` over leaderrun's environment: `program`, where [`resolve`]
    /// found it, with `command` as its arguments. `guardian` is told the
    /// group before the exec, and is not part of the job.
    pub fn spawn(
        program: &Path,
        command: &[OsString],
        env: &env::Variables,
        withheld: &[&str],
        guardian: &mut guard::Guard,
    ) -> anyhow::Result<Child> {
        // Before the spawn, so that no stop or exit of the child goes unseen.
        let child_changes = tokio::signal::unix::signal(SignalKind::child())
            .map_err(|err| anyhow::anyhow!("cannot watch the command (SIGCHLD): {err}"))?;
        guardian.await_named(GUARDIAN_NAMED);
        let lent = Lent::prepare();
        let take_terminal = lent.is_some();
        let process = spawn::spawn(
            program,
            command,
            env,
            withheld,
            guardian.pipe(),
            take_terminal,
        )
        .map_err(|error| SpawnError::Spawn {
            program: PathBuf::from(&command[0]),
            error,
        })?;
        let group = process.pid;
        guardian.guard_job();
        let mut lent = lent.unwrap_or_default();
        if take_terminal {
            // The child did the same before its exec; this only records it.
            lent.give(group);
        }
        Ok(Child {
            process,
            group,
            job: Job::new(group, Some(guardian.pid())),
            terminal: lent,
            child_changes,
            status: None,
        })
    }

    /// The next thing that happens to the command. Adopted orphans are
    /// reaped on the way.
    pub async fn event(&mut self) -> ChildEvent {
        let mut woken = false;
        loop {
            // The command's exit first: a SIGCHLD is most often that, and
            // the walk of /proc for orphans can wait (and is only worth it
            // once a SIGCHLD has come).
            let exited = match self.process.try_wait() {
                Ok(None) => None,
                Ok(Some(status)) => {
                    self.status = Some(status);
                    Some(Ok(status))
                }
                Err(err) => Some(Err(err)),
            };
            if let Some(exited) = exited {
                self.terminal.take_back(false);
                return ChildEvent::Exited(exited);
            }
            if woken {
                self.job.reap_orphans(self.group);
                if let Some(signal) = self.job_control_stop() {
                    return ChildEvent::Stopped(signal);
                }
            }
            self.child_changes.recv().await;
            woken = true;
        }
    }

    /// A stop of the command by SIGTSTP, SIGTTIN or SIGTTOU, if it has one.
    /// A SIGSTOP from someone else is not job control: not ours to follow.
    fn job_control_stop(&self) -> Option<Signal> {
        if !terminal::is_terminal() {
            return None;
        }
        // WSTOPPED without WEXITED: only reads a stop, never reaps an exit.
        let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WNOHANG;
        match waitid(Id::Pid(self.group), flags) {
            Ok(WaitStatus::Stopped(_, signal))
                if matches!(signal, Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU) =>
            {
                Some(signal)
            }
            _ => None,
        }
    }

    /// Job control: the command stopped for the terminal, so leaderrun
    /// takes the terminal back and stops the same way, and the shell sees
    /// its job stopped and gives the prompt back. On `fg` (leaderrun is in
    /// the foreground again) it hands the terminal back; on `fg` or `bg` it
    /// continues the job. While stopped, leaderrun renews nothing: a stop
    /// longer than the lease allows ends with the job killed on resume:
    /// `may_continue`, asked once leaderrun runs again, says whether the
    /// job may be continued at all.
    pub fn follow_stop(&mut self, signal: Signal, may_continue: impl FnOnce() -> bool) {
        tracing::debug!(
            ?signal,
            "the command stopped for the terminal; stopping too"
        );
        self.terminal.take_back(false);
        if !terminal::stop_like(signal) {
            tracing::info!(
                ?signal,
                "the command stopped for the terminal, and no shell controls leaderrun's job to continue it"
            );
            return;
        }
        if !may_continue() {
            tracing::info!("continued past the lease's deadline: the command stays stopped");
            return;
        }
        self.terminal.hand_over(self.group);
        self.job.signal(Signal::SIGCONT);
    }

    /// Sends `signal` to the whole job (then SIGCONT, so that a stopped job
    /// acts on it). A job that is already gone is fine.
    pub fn signal_job(&self, signal: Signal) {
        self.job.signal(signal);
    }

    /// Waits until nothing of the job is left alive, or `until`; true if the
    /// job is gone. Wakes on SIGCHLD, and polls for descendants that are
    /// not leaderrun's children (their exits send leaderrun nothing).
    pub async fn wait_job_gone(&mut self, until: clock::Instant) -> bool {
        let mut pause = Duration::from_millis(2);
        loop {
            let live = self.job.reap_and_list(self.group);
            if self.status.is_none() {
                if let Ok(Some(status)) = self.process.try_wait() {
                    self.status = Some(status);
                }
            }
            if live.is_empty() {
                return true;
            }
            if until.has_passed() {
                return false;
            }
            let wake = (clock::Instant::now() + pause).min(until);
            tokio::select! {
                _ = clock::sleep_until(wake) => {}
                _ = self.child_changes.recv() => {}
            }
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Whether anything of the job is alive (background jobs and daemons
    /// can outlive the command itself).
    pub fn job_alive(&mut self) -> bool {
        !self.job.reap_and_list(self.group).is_empty()
    }

    /// SIGKILLs the job until nothing of it is left, within `limit`.
    pub async fn kill_job(&mut self, limit: Duration) {
        let until = clock::Instant::now() + limit;
        loop {
            self.job.signal(Signal::SIGKILL);
            let soon = (clock::Instant::now() + Duration::from_millis(100)).min(until);
            if self.wait_job_gone(soon).await || until.has_passed() {
                return;
            }
        }
    }

    /// The proof that the job is gone, if a look found it so (a wait for
    /// it, [`Self::job_alive`]): for the guardian's release.
    pub fn gone(&self) -> Option<JobGone> {
        self.job.gone()
    }

    /// After a kill: the terminal back in leaderrun's hands, with the modes
    /// it had before the command ran.
    pub fn restore_terminal(&mut self) {
        self.terminal.take_back(true);
    }
}

/// How long a spawn waits, at most, for the guardian to take its name
/// (`guard::Guard::await_named`). It forks before the dial, so this is
/// almost always one poll; 1 s was not enough beside two busy loops, where
/// the machine stood still for seconds at a time.
const GUARDIAN_NAMED: Duration = Duration::from_secs(5);

/// How long a drop waits for the job to die of SIGKILL (as
/// [`Child::kill_job`] is given by supervision).
const KILL_ON_DROP: Duration = Duration::from_secs(1);

impl Drop for Child {
    fn drop(&mut self) {
        if self.job.gone().is_some() {
            return;
        }
        tracing::info!("the command's job was not seen gone; SIGKILL");
        self.job.kill_now(self.group, KILL_ON_DROP);
        if self.status.is_none() {
            let _ = self.process.try_wait();
        }
        self.terminal.take_back(true);
    }
}

/// Collects the exit of `pid`, a child of ours, in a task of the runtime;
/// if leaderrun exits first, whoever adopts it does.
fn reap_later(pid: Pid) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(collect(pid));
    }
}

/// Installs the SIGCHLD handler now, while nothing waits on us: the first
/// listener installs it, and the command's spawn, on the next leader's
/// path, would otherwise be that first listener. The handler stays
/// installed once the listener made here is dropped.
pub fn listen_for_exits() {
    if let Err(err) = tokio::signal::unix::signal(SignalKind::child()) {
        tracing::debug!(%err, "cannot listen for SIGCHLD yet");
    }
}

/// Resolves once `pid`, a child of ours, has exited and been collected,
/// waking as SIGCHLD comes.
async fn collect(pid: Pid) {
    let Ok(mut exits) = tokio::signal::unix::signal(SignalKind::child()) else {
        return;
    };
    while let Ok(WaitStatus::StillAlive) = waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
        exits.recv().await;
    }
}
