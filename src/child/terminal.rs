//! The terminal: handed to the command when leaderrun has it, taken back
//! (with its modes restored after a kill), and job control followed.
//!
//! The command has a process group of its own, so it is no longer in the
//! terminal's foreground group: Ctrl-C would miss it and reading the
//! terminal would stop it with SIGTTIN. When leaderrun is in the foreground
//! it makes the command's group the foreground group instead. A command that
//! is killed (leadership lost, a signal) cannot restore the modes it set
//! (`stty raw -echo`), so leaderrun saves them before the hand-over and puts
//! them back after a kill.

use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg, Termios};
use nix::unistd::{getpgrp, isatty, tcgetpgrp, tcsetpgrp, Pid};

/// Whether stdin is a terminal: then job control (Ctrl-Z, a background
/// job reading the terminal) can stop the command.
pub fn is_terminal() -> bool {
    isatty(io::stdin().as_fd()).unwrap_or(false)
}

/// Whether leaderrun itself is in the terminal's foreground.
pub fn in_foreground() -> bool {
    is_terminal()
        && tcgetpgrp(io::stdin().as_fd())
            .map(|group| group == getpgrp())
            .unwrap_or(false)
}

/// Makes `group` the terminal's foreground group. From a background group,
/// tcsetpgrp raises SIGTTOU unless it is blocked, and would stop leaderrun
/// under a job-control shell. (The command's process takes the foreground
/// itself before its exec: see `forked`.)
pub fn set_foreground(group: Pid) {
    with_ttou_blocked(|| {
        let _ = tcsetpgrp(io::stdin().as_fd(), group);
    });
}

/// Runs `change` (a change to the terminal) with SIGTTOU blocked, so that
/// a leaderrun in the background is not stopped by it.
fn with_ttou_blocked(change: impl FnOnce()) {
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mut old = SigSet::empty();
    if nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut old)).is_ok()
    {
        change();
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
}

/// The terminal as lent to the command.
#[derive(Default)]
pub struct Lent {
    /// The command's group holds the foreground: take it back.
    given: bool,
    /// The modes before the hand-over, to restore after a kill.
    modes: Option<Termios>,
}

impl Lent {
    /// Before spawning: if leaderrun holds the foreground, saves the
    /// terminal's modes and returns a loan to make; None otherwise. (Not
    /// after: the child takes the foreground itself before exec, and
    /// leaderrun would no longer see it as its own.)
    pub fn prepare() -> Option<Lent> {
        in_foreground().then(|| Lent {
            given: false,
            modes: tcgetattr(io::stdin().as_fd()).ok(),
        })
    }

    /// Makes `group` the foreground group. The child does the same from
    /// its side before exec, so the order of the two does not matter.
    pub fn give(&mut self, group: Pid) {
        set_foreground(group);
        self.given = true;
    }

    /// After a job-control stop: hands the foreground back to `group` if
    /// leaderrun holds it again (`fg`, not `bg`).
    pub fn hand_over(&mut self, group: Pid) {
        if in_foreground() {
            if self.modes.is_none() {
                self.modes = tcgetattr(io::stdin().as_fd()).ok();
            }
            self.give(group);
        }
    }

    /// Puts leaderrun's own group back in the foreground; with
    /// `restore_modes`, also the modes saved at the hand-over.
    pub fn take_back(&mut self, restore_modes: bool) {
        if std::mem::take(&mut self.given) {
            set_foreground(getpgrp());
        }
        if restore_modes {
            if let Some(modes) = &self.modes {
                let mut ttou = SigSet::empty();
                ttou.add(Signal::SIGTTOU);
                let mut old = SigSet::empty();
                let _ = nix::sys::signal::pthread_sigmask(
                    SigmaskHow::SIG_BLOCK,
                    Some(&ttou),
                    Some(&mut old),
                );
                let _ = tcsetattr(io::stdin().as_fd(), SetArg::TCSADRAIN, modes);
                let _ =
                    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
            }
        }
    }
}

static CONTINUED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_continue(_: nix::libc::c_int) {
    CONTINUED.store(true, Ordering::SeqCst);
}

/// Counts SIGCONT, so that [`stop_like`] knows whether leaderrun really
/// stopped. Installed once, before the command starts.
pub fn watch_continue() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler};
    let action = SigAction::new(
        SigHandler::Handler(on_continue),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic.
    if let Err(err) = unsafe { sigaction(Signal::SIGCONT, &action) } {
        tracing::debug!(%err, "cannot watch SIGCONT");
    }
}

/// Stops leaderrun with `signal`, as the command was stopped, so that the
/// shell sees its job stopped; returns once continued (`fg`, `bg`), true.
/// False when leaderrun did not stop: in a process group that no shell
/// controls (orphaned), the kernel discards job-control stops.
pub fn stop_like(signal: Signal) -> bool {
    CONTINUED.store(false, Ordering::SeqCst);
    let _ = nix::sys::signal::raise(signal);
    CONTINUED.load(Ordering::SeqCst)
}
