//! How long to wait before asking etcd again: one policy for every retry
//! loop (renewals, watches, queue reads, lease grants).
//!
//! Exponential from [`FIRST`] up to a ceiling the caller chooses, with a
//! little jitter so that a thousand waiters that lost etcd together do not
//! come back together. The waits are on the boot-time clock like every other
//! timer; none of them bounds anything the user asked for: the callers race
//! them against signals and deadlines.

use std::time::Duration;

use crate::clock;

/// The bound on best-effort clean-up (revoking a lease, reading who leads
/// for a message) on every way out: a user's deadline or signal is honoured
/// within this of its time, whatever etcd does.
pub const CLEANUP: Duration = Duration::from_millis(500);

/// The first wait after a failure.
pub const FIRST: Duration = Duration::from_millis(50);

/// Ceiling for loops that keep leadership or a place in the queue: short,
/// because each failed attempt eats into the lease.
pub const KEEPING: Duration = Duration::from_millis(500);

/// Ceiling for loops that wait for etcd to come back (a refused lease
/// grant, a status watch): slower, so that many replicas do not hammer a
/// struggling etcd.
pub const WAITING: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    next: Duration,
    ceiling: Duration,
    seed: u64,
}

impl Backoff {
    /// Seeded from this process and the clock, so that replicas differ.
    pub fn new(ceiling: Duration) -> Backoff {
        Backoff::seeded(ceiling, seed())
    }

    /// With the jitter's seed given (the protocol's, which reads no clock).
    pub fn seeded(ceiling: Duration, seed: u64) -> Backoff {
        Backoff {
            next: FIRST.min(ceiling),
            ceiling,
            seed: seed | 1,
        }
    }

    /// The next wait: between 75% and 100% of the current step, which then
    /// doubles up to the ceiling.
    pub fn next_delay(&mut self) -> Duration {
        // xorshift64: cheap, and good enough to spread replicas apart.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let quarter = self.next / 4;
        let jitter = quarter.mul_f64((self.seed % 1000) as f64 / 1000.0);
        let delay = self.next - quarter + jitter;
        self.next = (self.next * 2).min(self.ceiling);
        delay
    }

    /// Waits the next delay.
    pub async fn wait(&mut self) {
        clock::sleep(self.next_delay()).await;
    }

    /// Back to the first step, after a success.
    pub fn reset(&mut self) {
        self.next = FIRST.min(self.ceiling);
    }
}

/// A seed for the jitter that differs between replicas and runs.
pub fn seed() -> u64 {
    u64::from(std::process::id()) ^ clock::Instant::now().elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_ceiling_with_bounded_jitter() {
        let mut backoff = Backoff::new(Duration::from_millis(400));
        let delays: Vec<Duration> = (0..6).map(|_| backoff.next_delay()).collect();
        let steps = [50, 100, 200, 400, 400, 400].map(Duration::from_millis);
        for (delay, step) in delays.iter().zip(steps) {
            assert!(
                *delay <= step && *delay >= step * 3 / 4,
                "{delay:?} for {step:?}"
            );
        }
        backoff.reset();
        assert!(backoff.next_delay() <= FIRST);
    }
}
