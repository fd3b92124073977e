//! Time as the protocol sees it: instants on the boot-time clock, given
//! to it by whoever drives it. The protocol never reads a clock; the run
//! reads CLOCK_BOOTTIME (leaderrun's `clock`), the model checker and the
//! simulator keep virtual time.

use std::time::Duration;

/// A point on the boot-time clock: how long after boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Duration);

impl Instant {
    /// The instant `since_boot` after boot.
    pub const fn from_boot(since_boot: Duration) -> Self {
        Instant(since_boot)
    }

    /// How long after boot this instant is.
    pub const fn since_boot(self) -> Duration {
        self.0
    }

    /// How long after `earlier` this is; zero if it is not later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating: a deadline past the clock's range is as good as never.
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(rhs))
    }
}

impl std::ops::Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(rhs))
    }
}
