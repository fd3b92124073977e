//! The guardian: a tiny process that kills the child's whole group if
//! leaderrun dies without cleaning up (SIGKILL, OOM killer).
//!
//! PR_SET_PDEATHSIG only reaches the direct child; a shell's background jobs
//! would live on and run beside the next leader. The guardian is leaderrun's
//! own binary, started with [`GUARD_ARG`], in a session of its own (so the
//! terminal's signals miss it). It reads the group id from a pipe, then waits
//! for the pipe to close: closed after "done" means leaderrun finished
//! cleanly; closed without it means leaderrun died, and the group is killed.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The hidden first argument that turns leaderrun into the guardian.
pub const GUARD_ARG: &str = "__leaderrun_guard";

pub struct Guard {
    pipe: ChildStdin,
    process: std::process::Child,
}

impl Guard {
    /// Starts the guardian; call before spawning the child.
    pub fn start() -> anyhow::Result<Guard> {
        let exe = std::env::current_exe()?;
        let mut command = Command::new(exe);
        command
            .arg(GUARD_ARG)
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
