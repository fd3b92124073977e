//! The clock for lease deadlines: CLOCK_BOOTTIME. It is monotonic like
//! CLOCK_MONOTONIC but keeps counting while the machine is suspended, so a
//! deadline that passed during a suspend is seen as passed on resume.

use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// A point on the boot-time clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant(Duration);

impl Instant {
    pub fn now() -> Self {
        let spec = clock_gettime(ClockId::CLOCK_BOOTTIME)
            .or_else(|_| clock_gettime(ClockId::CLOCK_MONOTONIC))
            .expect("a monotonic clock is always available on Linux");
        Instant(Duration::from(spec))
    }

    /// Time left until `self`, zero when it has passed.
    pub fn remaining(self) -> Duration {
        self.0.saturating_sub(Self::now().0)
    }

    pub fn has_passed(self) -> bool {
        Self::now() >= self
    }

    pub fn elapsed(self) -> Duration {
        Self::now().0.saturating_sub(self.0)
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0 + rhs)
    }
}

impl std::ops::Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(rhs))
    }
}

/// Sleeps until `deadline` on the boot-time clock. Tokio's timers run on
/// CLOCK_MONOTONIC, which stops during a suspend, so sleep in short steps and
/// re-read the clock: a passed deadline is noticed within `STEP` of resuming.
pub async fn sleep_until(deadline: Instant) {
    const STEP: Duration = Duration::from_millis(250);
    loop {
        let left = deadline.remaining();
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(STEP)).await;
    }
}
