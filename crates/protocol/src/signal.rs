//! The signals the protocol speaks of, by number: the ones a run passes
//! on, the ones that stop a job for the terminal, --kill-signal (any the
//! user names) and SIGKILL. The run converts its own (nix's) at the edge;
//! a test there holds every constant here to the platform's number.

use std::fmt;

/// A signal, by its number on Linux (x86_64 and aarch64 number alike).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Signal(i32);

impl Signal {
    pub const SIGHUP: Signal = Signal(1);
    pub const SIGINT: Signal = Signal(2);
    pub const SIGQUIT: Signal = Signal(3);
    pub const SIGKILL: Signal = Signal(9);
    pub const SIGUSR1: Signal = Signal(10);
    pub const SIGUSR2: Signal = Signal(12);
    pub const SIGALRM: Signal = Signal(14);
    pub const SIGTERM: Signal = Signal(15);
    pub const SIGCONT: Signal = Signal(18);
    pub const SIGSTOP: Signal = Signal(19);
    pub const SIGTSTP: Signal = Signal(20);
    pub const SIGTTIN: Signal = Signal(21);
    pub const SIGTTOU: Signal = Signal(22);

    /// Every signal named here, with its name.
    pub const NAMED: [(Signal, &'static str); 13] = [
        (Signal::SIGHUP, "SIGHUP"),
        (Signal::SIGINT, "SIGINT"),
        (Signal::SIGQUIT, "SIGQUIT"),
        (Signal::SIGKILL, "SIGKILL"),
        (Signal::SIGUSR1, "SIGUSR1"),
        (Signal::SIGUSR2, "SIGUSR2"),
        (Signal::SIGALRM, "SIGALRM"),
        (Signal::SIGTERM, "SIGTERM"),
        (Signal::SIGCONT, "SIGCONT"),
        (Signal::SIGSTOP, "SIGSTOP"),
        (Signal::SIGTSTP, "SIGTSTP"),
        (Signal::SIGTTIN, "SIGTTIN"),
        (Signal::SIGTTOU, "SIGTTOU"),
    ];

    /// The signal numbered `number`: any the platform has (the run makes
    /// them only from signals it knows).
    pub const fn from_number(number: i32) -> Signal {
        Signal(number)
    }

    pub const fn number(self) -> i32 {
        self.0
    }

    fn name(self) -> Option<&'static str> {
        Signal::NAMED
            .iter()
            .find(|(signal, _)| *signal == self)
            .map(|(_, name)| *name)
    }
}

/// Its name (as nix's signals show: `SIGTERM`), or its number.
impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "signal {}", self.0),
        }
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
