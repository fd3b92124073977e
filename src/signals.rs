//! The signals leaderrun passes on to the child's group: SIGINT, SIGTERM,
//! SIGHUP and SIGQUIT.
//!
//! No signal reaches the child twice: the child has a process group of its
//! own, so what the terminal sends to its foreground group reaches either the
//! child (when it was given the terminal) or leaderrun (which forwards it),
//! never both.

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, Signal as Stream, SignalKind};

/// The signals passed on to the command's job.
const FORWARDED: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// What else leaderrun listens for: SIGCHLD (the command's exit and stops)
/// and SIGCONT (job control).
const ALSO_LISTENED: [Signal; 2] = [Signal::SIGCHLD, Signal::SIGCONT];

/// Unblocks the signals leaderrun listens for, which whoever started it
/// may have blocked (a blocked mask is inherited across exec): blocked,
/// SIGCHLD would never say the command exited, and leaderrun would hold
/// leadership for good. Called before the runtime starts a thread, so
/// that every thread has them unblocked.
pub fn unblock_listened() {
    let mut set = nix::sys::signal::SigSet::empty();
    for signal in FORWARDED.into_iter().chain(ALSO_LISTENED) {
        set.add(signal);
    }
    let _ = nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_UNBLOCK,
        Some(&set),
        None,
    );
}

pub struct Signals {
    streams: [(Signal, Stream); 4],
}

impl Signals {
    /// Installs the handlers. From here on these signals no longer kill
    /// leaderrun: it decides what they mean.
    pub fn install() -> std::io::Result<Signals> {
        let stream = |forwarded: Signal| {
            let kind = SignalKind::from_raw(forwarded as i32);
            signal(kind).map(|stream| (forwarded, stream))
        };
        let [int, term, hup, quit] = FORWARDED;
        Ok(Signals {
            streams: [stream(int)?, stream(term)?, stream(hup)?, stream(quit)?],
        })
    }

    /// The next signal received.
    pub async fn recv(&mut self) -> Signal {
        let [(int, a), (term, b), (hup, c), (quit, d)] = &mut self.streams;
        tokio::select! {
            _ = a.recv() => *int,
            _ = b.recv() => *term,
            _ = c.recv() => *hup,
            _ = d.recv() => *quit,
        }
    }
}
