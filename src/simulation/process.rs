//! A simulated process group: the command and what it leaves behind, as
//! the world's clock moves it on and signals end it.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::Instant;

/// A simulated process group: the command and what it leaves behind.
#[derive(Debug)]
pub struct Job {
    pub group: u32,
    pub replica: usize,
    /// The pid of the leaderrun that started it.
    pub leaderrun: u32,
    pub lease: i64,
    pub token: i64,
    /// When the command exits by itself, and with what.
    pub exits_at: Instant,
    pub code: i32,
    pub term_ignored: bool,
    /// How long its descendants outlive the command.
    pub leaves: Duration,
    /// The command's status, once it exited.
    pub status: Option<ExitStatus>,
    /// When the last of the job dies (None: alive while the command is).
    pub gone_at: Option<Instant>,
    pub started: Instant,
}

impl Job {
    /// Moves the job on to `now`: a command due to exit exits.
    pub fn settle(&mut self, now: Instant) {
        if self.status.is_none() && self.exits_at <= now {
            self.status = Some(ExitStatus::from_raw((self.code & 0xff) << 8));
            self.gone_at = Some(self.exits_at + self.leaves);
        }
    }

    pub fn alive(&self, now: Instant) -> bool {
        self.gone_at.is_none_or(|gone| gone > now)
    }

    /// A signal to the whole group.
    pub fn signal(&mut self, signal: Signal, now: Instant) {
        self.settle(now);
        let ends = match signal {
            Signal::SIGKILL => true,
            Signal::SIGSTOP
            | Signal::SIGCONT
            | Signal::SIGTSTP
            | Signal::SIGTTIN
            | Signal::SIGTTOU
            | Signal::SIGCHLD
            | Signal::SIGWINCH
            | Signal::SIGURG => false,
            _ => !self.term_ignored,
        };
        if !ends {
            return;
        }
        if self.status.is_none() {
            self.status = Some(ExitStatus::from_raw(signal as i32));
            self.exits_at = now;
        }
        self.gone_at = Some(self.gone_at.map_or(now, |gone| gone.min(now)));
    }
}
