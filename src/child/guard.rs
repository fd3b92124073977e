//! The guardian: a tiny process that kills the command's whole group if
//! leaderrun dies without cleaning up (SIGKILL, the OOM killer).
//!
//! PR_SET_PDEATHSIG only reaches the direct child; a shell's background jobs
//! would live on and run beside the next leader. The guardian is leaderrun's
//! own binary in a session of its own (so the terminal's signals miss it).
//! It reads the group id from a pipe, then waits for the pipe to close:
//! closed after "done" means leaderrun finished cleanly; closed without it
//! means leaderrun died, and the group is killed.
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

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The guardian's process name, `comm` and only argument.
pub const GUARD_NAME: &str = "lr-guardian";

/// Set in the guardian's environment, with [`GUARD_NAME`] as argv[0].
const GUARD_VARIABLE: &str = "LEADERRUN_GUARDIAN_OF";

pub struct Guard {
    pipe: ChildStdin,
    process: std::process::Child,
}

/// Whether this process was started as the guardian.
pub fn is_guardian(args: &[OsString]) -> bool {
    args.len() == 1 && args[0] == GUARD_NAME && std::env::var_os(GUARD_VARIABLE).is_some()
}

impl Guard {
    /// Starts the guardian; call before spawning the child.
    pub fn start() -> std::io::Result<Guard> {
        let exe = if std::path::Path::new("/proc/self/exe").exists() {
            std::path::PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe()?
        };
        let mut command = Command::new(exe);
        command
            .arg0(GUARD_NAME)
            .env(GUARD_VARIABLE, std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid()?;
                Ok(())
            });
        }
        let mut process = command.spawn()?;
        let pipe = process.stdin.take().expect("stdin was piped");
        Ok(Guard { pipe, process })
    }

    /// The pipe to the guardian, for the child to name its own group
    /// between fork and exec (see `Child::spawn`).
    pub fn pipe_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.pipe.as_raw_fd()
    }

    /// The guardian's pid: not part of the command's job.
    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.process.id() as i32)
    }

    /// Tells the guardian which group to kill should leaderrun die.
    pub fn watch(&mut self, group: Pid) {
        let _ = writeln!(self.pipe, "{}", group.as_raw());
    }

    /// leaderrun has dealt with the group itself: release the guardian.
    pub fn release(mut self) {
        let _ = writeln!(self.pipe, "done");
        drop(self.pipe);
        let _ = self.process.wait();
    }
}

/// The guardian's main: returns its exit code.
pub fn run() -> i32 {
    if let Ok(name) = std::ffi::CString::new(GUARD_NAME) {
        let _ = nix::sys::prctl::set_name(&name);
    }
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
