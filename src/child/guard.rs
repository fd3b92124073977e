//! The guardian: a tiny process that kills the command's whole group if
//! leaderrun dies without cleaning up (SIGKILL, the OOM killer).
//!
//! PR_SET_PDEATHSIG only reaches the direct child; a shell's background jobs
//! would live on and run beside the next leader. The guardian is a fork of
//! leaderrun, made as the run starts, in a session of its own (so the
//! terminal's signals miss it), that execs nothing: it is as small as
//! leaderrun was then, and its exit, at the next leader's start, frees
//! little. It sleeps until its pipe closes, then reads what was written to
//! it: the group id, and "done" if leaderrun finished cleanly; without
//! "done" leaderrun died, and the group is killed. Lines written meanwhile
//! wait in the pipe and wake nobody: the group is written by the command's
//! process just before its exec, and a guardian woken there would take the
//! CPU from it, on the next leader's path.
//!
//! Three operator habits shape it:
//! - `pkill -9 leaderrun` (or `killall`, `pkill -f`) must not kill the
//!   guardian with leaderrun, or nobody is left to stop the job. `pkill`
//!   matches the 15-character `comm`, `pkill -f` the whole command line, so
//!   the guardian sets its `comm` to [`GUARD_NAME`](forked::GUARD_NAME) and writes that name
//!   over its copy of leaderrun's command line; neither contains
//!   "leaderrun". It does so as it first runs, and a fork can wait long to
//!   run on a loaded machine: no command starts until it has
//!   ([`Guard::await_named`]).
//! - A package upgrade renames a new file over the binary while a replica
//!   queues: the guardian opens no binary, so that changes nothing.
//! - `pkill lr-guardian`, or SIGTERM to every process of a unit (systemd),
//!   must not leave the job unguarded either: the guardian ignores every
//!   signal it can (`forked::ignore_every_signal`); only SIGKILL ends it.
//!
//! What the guardian cannot do: once leaderrun is dead, a descendant that
//! left the command's process group (`setsid`) has been reparented out of
//! reach; only the group is killed. While leaderrun lives it stops such
//! descendants itself (see `job`).

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::libc;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::forked;
use super::job::JobGone;

pub struct Guard {
    /// None once closed (on drop).
    pipe: Option<std::fs::File>,
    /// The read end of the pipe the guardian closes once it is named
    /// [`GUARD_NAME`](forked::GUARD_NAME): None once that was seen ([`Guard::await_named`]).
    named: Option<OwnedFd>,
    pid: Pid,
    /// Collected by [`Guard::release`]: nothing left for [`Drop`] to do.
    reaped: bool,
    guarding: Guarding,
}

/// What the guardian guards, which says whether it may be told "done".
enum Guarding {
    /// No job: none was started (its group, if a failed spawn named one,
    /// has nothing left in it).
    Nothing,
    /// A job not seen gone: the guardian stays armed.
    Job,
    /// The job, seen gone.
    Gone(JobGone),
}

impl Guard {
    /// Starts the guardian; call before spawning the child, and early:
    /// before leaderrun dials etcd, the copy the fork makes is small.
    ///
    /// A fork of leaderrun that execs nothing. It is a copy of what
    /// leaderrun is so far (small: it has not dialled etcd), and its exit
    /// frees only that: an exec'd binary would load and relocate
    /// leaderrun's code again, and its exit, on the next leader's path,
    /// would unmap all of it. Between the fork and its `_exit` the guardian
    /// makes only system calls, on memory made before the fork, as a child
    /// of a threaded process must. The pipe exists from the fork on, so a
    /// group written to it is read whenever the guardian gets there, even
    /// after leaderrun is gone; and no binary is opened, so a package
    /// upgrade that replaced the file changes nothing.
    pub fn start() -> std::io::Result<Guard> {
        let arguments = argument_area();
        let null = nix::fcntl::open(
            "/dev/null",
            OFlag::O_RDWR | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (named, named_by_guardian) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let child = forked::fork_guardian(
            read.as_fd(),
            named_by_guardian.as_fd(),
            null.as_fd(),
            arguments,
            pauses(),
        )?;
        drop(read);
        // The guardian holds the only write end left: its close says named.
        drop(named_by_guardian);
        Ok(Guard {
            pipe: Some(std::fs::File::from(write)),
            named: Some(named),
            pid: child,
            reaped: false,
            guarding: Guarding::Nothing,
        })
    }

    /// Waits, within `limit`, until the guardian bears its own name, which
    /// it takes as it first runs: before that it is named leaderrun, and
    /// `pkill -9 leaderrun` just after a command started would kill the
    /// guardian with leaderrun, leaving nobody to stop the job (seen on a
    /// loaded machine, where a fork can wait long to run). Called before
    /// the command is spawned, by when the guardian has long had its name:
    /// one poll that finds the pipe closed. Past `limit` the run goes on:
    /// the guardian guards all the same, only under leaderrun's name.
    pub fn await_named(&mut self, limit: std::time::Duration) {
        let Some(named) = &self.named else { return };
        let mut fds = [PollFd::new(named.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(limit).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, timeout) {
            Ok(0) => tracing::warn!(
                guardian = self.pid.as_raw(),
                "the guardian has not taken its name yet; going on"
            ),
            // Closed (or broken): named, or gone, which `check` tells.
            _ => self.named = None,
        }
    }

    /// The pipe to the guardian, for the child to name its own group
    /// between fork and exec (see `Child::spawn`).
    pub fn pipe(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().map(AsFd::as_fd)
    }

    /// The guardian's pid: not part of the command's job.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Once the command's process has been told to exec (it names its
    /// group to the guardian itself, before the exec: see
    /// `child::spawn`): says so if the guardian is already gone (someone
    /// killed it). The run goes on, without that protection.
    pub fn check(&self) {
        if !matches!(
            waitpid(self.pid, Some(WaitPidFlag::WNOHANG)),
            Ok(WaitStatus::StillAlive)
        ) {
            crate::logging::say(
                crate::logging::Level::Warn,
                "the guardian process is gone: if leaderrun is killed, what the command started may live on",
            );
        }
    }

    /// A job was started, its group named to the guardian (see
    /// `Child::spawn`): from here on only a [`JobGone`] lets the guardian
    /// be told "done".
    pub(super) fn guard_job(&mut self) {
        self.guarding = Guarding::Job;
    }

    /// The job is gone: the guardian may be told "done" on release.
    pub fn job_gone(&mut self, gone: JobGone) {
        self.guarding = Guarding::Gone(gone);
    }

    /// Tells the guardian "done", which only a proof that the job is gone
    /// allows.
    fn done(&mut self, _gone: JobGone) {
        if let Some(pipe) = &mut self.pipe {
            // One write: a line never interleaves with the child's.
            let _ = pipe.write_all(b"done\n");
        }
    }

    /// At the end of a run, once the resignation's first request is
    /// answered (see `run`): tells the guardian "done" if the job is gone
    /// or never started (see [`Self::job_gone`]), else leaves it armed, to
    /// kill the group; then collects its exit within [`EXIT_COLLECTED`], so
    /// that no zombie is left to whoever adopts it (a PID 1 that does not
    /// reap, in a container).
    pub async fn release(mut self) {
        match std::mem::replace(&mut self.guarding, Guarding::Job) {
            Guarding::Nothing => self.done(JobGone::nothing_started()),
            Guarding::Gone(gone) => self.done(gone),
            Guarding::Job => {
                tracing::info!("the command's job was not seen gone: the guardian kills its group")
            }
        }
        drop(self.pipe.take());
        let collected = crate::clock::timeout(EXIT_COLLECTED, super::collect(self.pid));
        self.reaped = collected.await.is_some();
        if !self.reaped {
            tracing::info!(
                guardian = self.pid.as_raw(),
                "the guardian has not exited within {EXIT_COLLECTED:?}: whoever adopts it collects it"
            );
        }
    }
}

/// How long the way out waits for the released guardian's exit. Released,
/// it exits at once, in a millisecond; the bound is for a machine that
/// runs it late (beside two busy loops, once past the half second that
/// bounds etcd's part of the way out) or a guardian stopped by SIGSTOP.
/// Not waited for, it would be left a zombie to whoever adopts it.
const EXIT_COLLECTED: std::time::Duration = std::time::Duration::from_secs(5);

/// Closes the pipe: after "done" the guardian exits quietly, without it
/// the guardian kills the group it was told (an unused guardian was told
/// none). Its exit is collected by a task of the runtime, as SIGCHLD
/// comes; if leaderrun exits first, whoever adopts it collects it.
impl Drop for Guard {
    fn drop(&mut self) {
        drop(self.pipe.take());
        if !self.reaped {
            super::reap_later(self.pid);
        }
    }
}

/// How long the guardian waits before it takes its name and before it
/// exits: no time, but in debug builds (the suite's), where
/// `LEADERRUN_TEST_GUARDIAN_NAMED_AFTER_MS` and
/// `LEADERRUN_TEST_GUARDIAN_EXITS_AFTER_MS` let a test stand for a fork
/// that a loaded machine was slow to run.
fn pauses() -> forked::Pauses {
    forked::Pauses {
        before_naming: test_pause("LEADERRUN_TEST_GUARDIAN_NAMED_AFTER_MS"),
        before_exit: test_pause("LEADERRUN_TEST_GUARDIAN_EXITS_AFTER_MS"),
    }
}

/// The pause in milliseconds that `variable` asks for, in debug builds.
fn test_pause(variable: &str) -> libc::timespec {
    #[cfg(debug_assertions)]
    let ms = std::env::var(variable)
        .ok()
        .and_then(|ms| ms.parse::<i64>().ok())
        .unwrap_or(0);
    #[cfg(not(debug_assertions))]
    let ms = {
        let _ = variable;
        0
    };
    libc::timespec {
        tv_sec: ms / 1000,
        tv_nsec: ms % 1000 * 1_000_000,
    }
}

/// Where leaderrun's command line lies in its memory (`arg_start` and
/// `arg_end` of `/proc/self/stat`), for the guardian to write its own name
/// over: `pkill -f leaderrun` must not match it.
fn argument_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields from the third on: arg_start and arg_end are fields 48 and 49.
    let mut fields = super::job::stat_fields(&stat)?;
    let start = fields.nth(45)?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_area_is_found() {
        let (start, end) = argument_area().expect("/proc/self/stat has arg_start, arg_end");
        // SAFETY: reads this process's own argument area.
        let raw = unsafe { std::slice::from_raw_parts(start as *const u8, end - start) };
        let first = raw.split(|byte| *byte == 0).next().unwrap();
        let argv0 = std::env::args_os().next().unwrap();
        assert_eq!(
            first,
            std::os::unix::ffi::OsStrExt::as_bytes(argv0.as_os_str())
        );
    }
}
