//! The child: spawned in a process group of its own, handed the terminal when
//! leaderrun has it, and stopped as a group.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{killpg, SigSet, SigmaskHow, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, getpid, getppid, isatty, setpgid, tcgetpgrp, tcsetpgrp, Pid};

use crate::exit::{self, CodedError};

/// The variables the child gets, overriding any inherited value.
pub struct ChildEnv {
    pub token: i64,
    pub key: String,
    pub lease: i64,
    pub name: String,
}

pub struct Child {
    process: tokio::process::Child,
    /// The child's pid, which is also its process group id.
    pub group: Pid,
    /// Whether the child holds the terminal's foreground, to take back.
    owns_terminal: bool,
    /// Whether the child was given the terminal: job control applies.
    interactive: bool,
}

/// Finds COMMAND the way `execvp` will, so that "not found" and "not
/// executable" are reported (127, 126) before campaigning, not after winning.
pub fn resolve(program: &OsString) -> anyhow::Result<PathBuf> {
    let path = Path::new(program);
    let shown = path.display();
    let check = |candidate: &Path| -> Option<Result<PathBuf, i32>> {
        let meta = std::fs::metadata(candidate).ok()?;
        let executable = meta.is_file()
            && nix::unistd::access(candidate, nix::unistd::AccessFlags::X_OK).is_ok();
        Some(if executable {
            Ok(candidate.to_path_buf())
        } else {
            Err(exit::NOT_EXECUTABLE)
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
                Some(Err(code)) => found = found.or(Some(Err(code))),
                None => {}
            }
        }
        found
    };
    match found {
        Some(Ok(full)) => Ok(full),
        Some(Err(code)) => Err(CodedError::error(
            code,
            format!("cannot execute '{shown}': permission denied"),
        )),
        None => Err(CodedError::error(
            exit::NOT_FOUND,
            format!("command not found: '{shown}'"),
        )),
    }
}

/// Whether leaderrun itself is in the terminal's foreground: then the child
/// must be made the foreground group, or Ctrl-C would not reach it and
/// reading the terminal would stop it with SIGTTIN.
fn terminal_is_ours() -> bool {
    let stdin = io::stdin();
    isatty(stdin.as_fd()).unwrap_or(false)
        && tcgetpgrp(stdin.as_fd())
            .map(|group| group == getpgrp())
            .unwrap_or(false)
}

impl Child {
    /// Spawns the child. Must run on the main thread: PR_SET_PDEATHSIG fires
    /// when the spawning *thread* exits, and the main thread lives as long as
    /// leaderrun does.
    pub fn spawn(command: &[OsString], env: &ChildEnv) -> anyhow::Result<Child> {
        let take_terminal = terminal_is_ours();
        let parent = getpid();
        let mut builder = std::process::Command::new(&command[0]);
        builder
            .args(&command[1..])
            .env("LEADERRUN_TOKEN", env.token.to_string())
            .env("LEADERRUN_KEY", &env.key)
            .env("LEADERRUN_LEASE", format!("{:x}", env.lease))
            .env("LEADERRUN_NAME", &env.name)
            .process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            builder.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                // leaderrun may have died before the line above took effect.
                if getppid() != parent {
                    return Err(io::Error::other("leaderrun exited"));
                }
                setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
                if take_terminal {
                    // Restores the signal mask, which exec inherits.
                    set_foreground(getpid());
                }
                Ok(())
            });
        }
        let process = tokio::process::Command::from(builder)
            .kill_on_drop(false)
            .spawn()
            .map_err(|err| spawn_error(&command[0], err))?;
        let group = Pid::from_raw(process.id().expect("a just-spawned child has a pid") as i32);
        if take_terminal {
            // Also from this side, so the order of the two does not matter.
            // The child may already have taken the foreground: then
            // leaderrun is in the background, where an unblocked SIGTTOU
            // would stop it under a job-control shell.
            set_foreground(group);
        }
        Ok(Child {
            process,
            group,
            owns_terminal: take_terminal,
            interactive: take_terminal,
        })
    }

    /// Whether the child runs in leaderrun's terminal, under a shell's job
    /// control.
    pub fn interactive(&self) -> bool {
        self.interactive
    }

    /// Job control, called on SIGCHLD. When the child stops for the
    /// terminal (Ctrl-Z, or reading it from the background), leaderrun
    /// takes the terminal back and stops the same way, so that the shell
    /// sees its job stopped and gives the prompt back. On `fg` it hands the
    /// terminal to the child again and continues it. While stopped,
    /// leaderrun renews nothing: a stop longer than the lease allows ends
    /// with the child killed on resume, as after any pause.
    pub fn follow_stop(&mut self) {
        // WSTOPPED without WEXITED: only reads a stop, never reaps an exit.
        let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WNOHANG;
        let signal = match waitid(Id::Pid(self.group), flags) {
            Ok(WaitStatus::Stopped(_, signal)) => signal,
            _ => return,
        };
        if !matches!(signal, Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU) {
            // A SIGSTOP from someone else is not job control: not ours to follow.
            return;
        }
        tracing::debug!(
            ?signal,
            "the command stopped for the terminal; stopping too"
        );
        self.take_back_terminal();
        let _ = nix::sys::signal::raise(signal);
        // Continued: by `fg` (we are the foreground again) or by `bg`.
        if terminal_is_ours() {
            set_foreground(self.group);
            self.owns_terminal = true;
        }
        self.signal_group(Signal::SIGCONT);
    }

    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.process.wait().await;
        self.take_back_terminal();
        status
    }

    /// Sends `signal` to the whole group. A group that is already gone is fine.
    pub fn signal_group(&self, signal: Signal) {
        match killpg(self.group, signal) {
            Ok(()) => tracing::debug!(
                group = self.group.as_raw(),
                ?signal,
                "signalled the child's group"
            ),
            Err(err) => {
                tracing::debug!(group = self.group.as_raw(), ?signal, %err, "could not signal the group")
            }
        }
    }

    /// Whether any process is left in the child's group (background jobs can
    /// outlive the child itself).
    pub fn group_alive(&self) -> bool {
        killpg(self.group, None).is_ok()
    }

    /// The kill sequence: `signal` to the group, then SIGKILL after `grace`
    /// if anything in the group is left. Returns the child's status.
    pub async fn stop(&mut self, signal: Signal, grace: Duration) -> io::Result<ExitStatus> {
        self.signal_group(signal);
        let reaped = tokio::select! {
            status = self.process.wait() => Some(status),
            _ = tokio::time::sleep(grace) => None,
        };
        let status = match reaped {
            Some(status) => {
                // The child is gone; wait out the rest of the grace for its
                // group, then make sure.
                let until = tokio::time::Instant::now() + grace;
                while self.group_alive() && tokio::time::Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                status
            }
            None => {
                self.signal_group(Signal::SIGKILL);
                self.process.wait().await
            }
        };
        if self.group_alive() {
            self.signal_group(Signal::SIGKILL);
        }
        self.take_back_terminal();
        status
    }

    /// Puts leaderrun's own group back in the terminal's foreground.
    fn take_back_terminal(&mut self) {
        if std::mem::take(&mut self.owns_terminal) {
            set_foreground(getpgrp());
        }
    }
}

/// Makes `group` the terminal's foreground group. From a background group,
/// tcsetpgrp raises SIGTTOU unless it is blocked.
fn set_foreground(group: Pid) {
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mut old = SigSet::empty();
    if nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut old)).is_ok()
    {
        let _ = tcsetpgrp(io::stdin().as_fd(), group);
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
}

fn spawn_error(program: &OsString, err: io::Error) -> anyhow::Error {
    let shown = Path::new(program).display();
    let code = match err.kind() {
        io::ErrorKind::NotFound => exit::NOT_FOUND,
        io::ErrorKind::PermissionDenied => exit::NOT_EXECUTABLE,
        _ if err.raw_os_error() == Some(nix::libc::ENOEXEC) => exit::NOT_EXECUTABLE,
        _ => exit::INTERNAL,
    };
    CodedError::error(code, format!("cannot run '{shown}': {err}"))
}
