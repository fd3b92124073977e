//! The guardian: a tiny process that kills the command's whole group if
//! leaderrun dies without cleaning up (SIGKILL, the OOM killer).
//!
//! PR_SET_PDEATHSIG only reaches the direct child; a shell's background jobs
//! would live on and run beside the next leader. The guardian is leaderrun's
//! own binary in a session of its own (so the terminal's signals miss it).
//! It sleeps until its pipe closes, then reads what was written to it: the
//! group id, and "done" if leaderrun finished cleanly; without "done"
//! leaderrun died, and the group is killed. Lines written meanwhile wait
//! in the pipe and wake nobody: the group is written by the command's
//! process just before its exec, and a guardian woken there would take the
//! CPU from it, on the next leader's path.
//!
//! Two operator habits shape how it is started:
//! - `pkill -9 leaderrun` (or `killall`, `pkill -f`) must not kill the
//!   guardian with leaderrun, or nobody is left to stop the job. `pkill`
//!   matches the 15-character `comm`, `pkill -f` the whole command line, so
//!   the guardian's name, `comm` and arguments are all [`GUARD_NAME`], which
//!   does not contain "leaderrun". It is told apart from a user's command by
//!   that name *and* a variable only leaderrun sets.
//! - A package upgrade renames a new file over the binary while a replica
//!   queues: `current_exe()` then names a deleted path and spawning it fails.
//!   `/proc/self/exe` still opens the running binary's inode.
//!
//! What the guardian cannot do: once leaderrun is dead, a descendant that
//! left the command's process group (`setsid`) has been reparented out of
//! reach; only the group is killed. While leaderrun lives it stops such
//! descendants itself (see `job`).

use std::ffi::{CString, OsString};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};

use super::spawn;

/// The guardian's process name, `comm` and only argument.
pub const GUARD_NAME: &str = "lr-guardian";

/// Set in the guardian's environment, with [`GUARD_NAME`] as argv[0].
const GUARD_VARIABLE: &str = "LEADERRUN_GUARDIAN_OF";

pub struct Guard {
    /// None once closed (on drop).
    pipe: Option<std::fs::File>,
    pid: Pid,
    /// Collected by [`Guard::release`]: nothing left for [`Drop`] to do.
    reaped: bool,
}

/// Whether this process was started as the guardian.
pub fn is_guardian(args: &[OsString]) -> bool {
    args.len() == 1 && args[0] == GUARD_NAME && std::env::var_os(GUARD_VARIABLE).is_some()
}

impl Guard {
    /// Starts the guardian; call before spawning the child.
    ///
    /// A bare fork and exec, not `Command::spawn`: the parent returns as
    /// soon as the fork does, while the guardian execs on its own (spawn
    /// would wait for the exec, up to a millisecond or two on a busy
    /// machine, on the next leader's path). The pipe exists from the fork
    /// on, so a group written to it is read whenever the guardian gets
    /// there, even after leaderrun is gone. Everything the child needs is
    /// made before the fork: between fork and exec it only makes system
    /// calls, as a child of a threaded process must.
    pub fn start() -> std::io::Result<Guard> {
        let exe = if std::path::Path::new("/proc/self/exe").exists() {
            std::path::PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe()?
        };
        let exe = CString::new(exe.as_os_str().as_bytes())?;
        let name = CString::new(GUARD_NAME)?;
        // leaderrun's own environment (the dynamic loader may need some of
        // it, LD_LIBRARY_PATH say), and the variable that makes it the
        // guardian.
        let guardian_of = vec![(GUARD_VARIABLE, std::process::id().to_string().into())];
        let environment = spawn::environment(&guardian_of)?;
        let argv = [name.as_ptr(), std::ptr::null()];
        let envp = spawn::pointers(&environment);
        let null = nix::fcntl::open(
            "/dev/null",
            OFlag::O_RDWR | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        // SAFETY: the child makes only async-signal-safe system calls
        // (setsid, sigprocmask, dup2, execve, _exit) on memory made before
        // the fork.
        match unsafe { nix::unistd::fork() }? {
            ForkResult::Child => unsafe {
                // A session of its own, so that the terminal's signals
                // miss it; no signal blocked; stdin the pipe.
                libc::setsid();
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                libc::dup2(read.as_raw_fd(), 0);
                libc::dup2(null.as_raw_fd(), 1);
                libc::dup2(null.as_raw_fd(), 2);
                libc::execve(exe.as_ptr(), argv.as_ptr(), envp.as_ptr());
                libc::_exit(127)
            },
            ForkResult::Parent { child } => {
                drop(read);
                Ok(Guard {
                    pipe: Some(std::fs::File::from(write)),
                    pid: child,
                    reaped: false,
                })
            }
        }
    }

    /// The pipe to the guardian, for the child to name its own group
    /// between fork and exec (see `Child::spawn`).
    pub fn pipe_fd(&self) -> std::os::fd::RawFd {
        self.pipe.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// The guardian's pid: not part of the command's job.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Once the command's process has been told to exec (it names its
    /// group to the guardian itself, before the exec: see
    /// `child::spawn`): says so if the guardian is already gone (its exec
    /// failed, or someone killed it). The run goes on, without that
    /// protection.
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

    fn tell(&mut self, line: &str) {
        if let Some(pipe) = &mut self.pipe {
            // One write: a line never interleaves with the child's.
            let _ = pipe.write_all(format!("{line}\n").as_bytes());
        }
    }

    /// At the end of a run, once the resignation's first request is
    /// answered (the job gone, or never started; see `run`): tells the
    /// guardian "done", then collects its exit within
    /// `limit`, so that no zombie is left to whoever adopts it (a PID 1
    /// that does not reap, in a container).
    pub async fn release(mut self, limit: std::time::Duration) {
        self.tell("done");
        drop(self.pipe.take());
        let collected = crate::clock::timeout(limit, super::collect(self.pid));
        self.reaped = collected.await.is_some();
    }
}

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

/// The guardian's main: returns its exit code.
pub fn run() -> i32 {
    if let Ok(name) = std::ffi::CString::new(GUARD_NAME) {
        let _ = nix::sys::prctl::set_name(&name);
    }
    wait_for_hangup(0);
    let mut lines = BufReader::new(std::io::stdin().lock()).lines();
    let mut group = None;
    loop {
        match lines.next() {
            Some(Ok(line)) if line == "done" => return 0,
            Some(Ok(line)) => group = line.trim().parse::<i32>().ok().filter(|pid| *pid > 1),
            // The pipe closed (or broke) without "done": leaderrun is dead.
            Some(Err(_)) | None => break,
        }
    }
    if let Some(group) = group {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    0
}

/// Sleeps until every writer of the pipe `fd` has closed it. A poll for no
/// event at all: the kernel wakes it for the hang-up (or an error) only,
/// not for data written to the pipe.
fn wait_for_hangup(fd: std::os::fd::RawFd) {
    let mut pipe = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    loop {
        // SAFETY: one pollfd, on the stack.
        let ready = unsafe { libc::poll(&mut pipe, 1, -1) };
        let interrupted = ready < 0 && nix::errno::Errno::last() == nix::errno::Errno::EINTR;
        if !interrupted {
            // Hung up, or poll failed: reading tells which (EOF, or data
            // and then EOF, or an error: all end the wait below).
            return;
        }
    }
}
