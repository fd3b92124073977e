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
    /// How long SIGKILL takes to end it: a process in uninterruptible
    /// sleep (a write to a slow disk, a hung mount) dies only when the
    /// kernel lets it go.
    pub dies_slowly: Duration,
    /// The signal that ends the command at `exits_at`, if one does.
    pub ended_by: Option<Signal>,
    /// The command's status, once it exited.
    pub status: Option<ExitStatus>,
    /// When the last of the job dies (None: alive while the command is).
    pub gone_at: Option<Instant>,
    pub started: Instant,
    /// Its leaderrun was stopped (SIGSTOP) while it ran: nothing could
    /// stop it before its lease expired, the documented exception, so it
    /// is held to no property of exclusion.
    pub overslept: bool,
    /// Its leaderrun has sent it a terminating signal, ignored or not (it
    /// is being stopped).
    pub signalled: bool,
}

impl Job {
    /// Moves the job on to `now`: a command due to exit (or to die of a
    /// signal) does.
    pub fn settle(&mut self, now: Instant) {
        if self.status.is_some() || self.exits_at > now {
            return;
        }
        self.status = Some(match self.ended_by {
            Some(signal) => ExitStatus::from_raw(signal as i32),
            None => ExitStatus::from_raw((self.code & 0xff) << 8),
        });
        let descendants = self.exits_at + self.leaves;
        self.gone_at = Some(
            self.gone_at
                .map_or(descendants, |gone| gone.min(descendants)),
        );
    }

    pub fn alive(&self, now: Instant) -> bool {
        self.gone_at.is_none_or(|gone| gone > now)
    }

    /// A signal to the whole group.
    pub fn signal(&mut self, signal: Signal, now: Instant) {
        self.settle(now);
        let terminating = !matches!(
            signal,
            Signal::SIGSTOP
                | Signal::SIGCONT
                | Signal::SIGTSTP
                | Signal::SIGTTIN
                | Signal::SIGTTOU
                | Signal::SIGCHLD
                | Signal::SIGWINCH
                | Signal::SIGURG
        );
        self.signalled |= terminating;
        let ends = signal == Signal::SIGKILL || (terminating && !self.term_ignored);
        if !ends {
            return;
        }
        let dies = match signal {
            Signal::SIGKILL => now + self.dies_slowly,
            _ => now,
        };
        if self.status.is_none() && dies < self.exits_at {
            self.exits_at = dies;
            self.ended_by = Some(signal);
        }
        self.gone_at = Some(self.gone_at.map_or(dies, |gone| gone.min(dies)));
        self.settle(now);
    }
}
