//! The signals leaderrun passes on to the child's group: the four that ask
//! a program to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and the three a
//! supervisor sends a daemon to tell it something (SIGUSR1, SIGUSR2,
//! SIGALRM: runit's `sv 1`, `sv 2` and `sv alarm`, a log rotation's "reopen
//! your logs"). Each of them kills a program that does not handle it: left
//! to its default, it would kill leaderrun, and the guardian would SIGKILL
//! the job, with no grace and the key left to expire.
//!
//! No signal reaches the child twice: the child has a process group of its
//! own, so what the terminal sends to its foreground group reaches either the
//! child (when it was given the terminal) or leaderrun (which forwards it),
//! never both.
//!
//! A signal ignored when leaderrun starts stays ignored, for leaderrun and
//! for the command, as it does through `flock` or `nice`: `nohup` ignores
//! SIGHUP, and a shell without job control starts a background job with
//! SIGINT and SIGQUIT ignored, so that the terminal's Ctrl-C spares it. A
//! handler would undo what whoever started leaderrun asked for. Two go to
//! the command at their defaults whatever they were (`child::spawn`):
//! SIGPIPE, which Rust's runtime ignores before `main`, so that how it came
//! cannot be seen, and SIGCHLD, which ignored would make the command's own
//! children vanish unwaited.

use std::task::Poll;

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, Signal as Stream, SignalKind};

/// The signals passed on to the command's job.
const FORWARDED: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
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
    /// One stream for each forwarded signal that was not ignored on entry.
    streams: Vec<(Signal, Stream)>,
}

impl Signals {
    /// Installs the handlers, but for signals ignored on entry. From here
    /// on the others no longer kill leaderrun: it decides what they mean.
    pub fn install() -> std::io::Result<Signals> {
        let mut streams = Vec::with_capacity(FORWARDED.len());
        for forwarded in FORWARDED {
            if ignored(forwarded) {
                tracing::debug!("{forwarded} was ignored when leaderrun started: it stays ignored");
                continue;
            }
            let kind = SignalKind::from_raw(forwarded as i32);
            streams.push((forwarded, signal(kind)?));
        }
        Ok(Signals { streams })
    }

    /// The next signal received, in the protocol's words.
    pub async fn recv(&mut self) -> protocol::signal::Signal {
        std::future::poll_fn(|context| {
            for (signal, stream) in &mut self.streams {
                // None only once the runtime is shutting down.
                if let Poll::Ready(Some(())) = stream.poll_recv(context) {
                    return Poll::Ready(from_os(*signal));
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// The protocol's word for one of the platform's signals.
pub fn from_os(signal: Signal) -> protocol::signal::Signal {
    protocol::signal::Signal::from_number(signal as i32)
}

/// The platform's signal for one of the protocol's. Every signal the
/// protocol is given is made by [`from_os`] or is one of its constants,
/// which a test below holds to the platform's numbers: each has one.
pub fn to_os(signal: protocol::signal::Signal) -> Signal {
    Signal::try_from(signal.number()).expect("every protocol signal is one of the platform's")
}

/// Whether `signal` is ignored now: before [`Signals::install`], whether it
/// was ignored on entry (exec keeps an ignored signal ignored).
fn ignored(signal: Signal) -> bool {
    crate::child::forked::disposition(signal as i32) == Some(nix::libc::SIG_IGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The protocol numbers its signals itself: each is the platform's.
    #[test]
    fn the_protocol_s_signals_are_the_platform_s() {
        for (signal, name) in protocol::signal::Signal::NAMED {
            let os = to_os(signal);
            assert_eq!(os.as_str(), name);
            assert_eq!(from_os(os), signal);
            assert_eq!(signal.to_string(), os.to_string());
        }
    }
}
