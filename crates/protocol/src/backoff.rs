//! How long to wait before asking etcd again: one policy for every retry
//! loop (renewals, watches, queue reads, lease grants), and the bound on
//! every clean-up.
//!
//! Exponential from [`FIRST`] up to a ceiling the caller chooses, with a
//! little jitter so that a thousand waiters that lost etcd together do not
//! come back together. The jitter's seed is given (the run seeds it from
//! its pid and the clock, the simulator from its seed), so a sequence of
//! waits replays. None of them bounds anything the user asked for: the
//! callers race them against signals and deadlines.

use std::time::Duration;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backoff {
    next: Duration,
    ceiling: Duration,
    seed: u64,
}

impl Backoff {
    /// With the jitter's seed given.
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

    /// Back to the first step, after a success.
    pub fn reset(&mut self) {
        self.next = FIRST.min(self.ceiling);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_ceiling_with_bounded_jitter() {
        let mut backoff = Backoff::seeded(Duration::from_millis(400), 0x5eed);
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

    #[test]
    fn one_seed_gives_one_sequence() {
        let waits = |seed| {
            let mut backoff = Backoff::seeded(WAITING, seed);
            (0..8).map(|_| backoff.next_delay()).collect::<Vec<_>>()
        };
        assert_eq!(waits(7), waits(7));
        assert_ne!(waits(7), waits(8));
    }

    /// The share of its step's quarter that a delay took as jitter, in
    /// tenths: 0 to 9.
    fn tenths(delay: Duration, step: Duration) -> usize {
        let quarter = step / 4;
        ((delay - (step - quarter)).as_secs_f64() / quarter.as_secs_f64() * 10.0) as usize
    }

    #[test]
    fn the_jitter_spreads_over_its_whole_range_for_every_seed() {
        // Replicas that fail together must not retry together: one
        // backoff's delays at its ceiling, and the first delays of
        // neighbouring seeds (a pid, a counter), each fill every tenth of
        // the quarter the jitter spans. Seed 0 and 1 included: the
        // generator must never stick at zero.
        let step = Duration::from_millis(400);
        let mut backoff = Backoff::seeded(step, 0);
        backoff.next = step;
        let mut along = [0; 10];
        for _ in 0..200 {
            along[tenths(backoff.next_delay(), step).min(9)] += 1;
        }
        let mut across = [0; 10];
        for seed in 0..200 {
            let mut backoff = Backoff::seeded(step, seed);
            backoff.next = step;
            across[tenths(backoff.next_delay(), step).min(9)] += 1;
        }
        for counts in [along, across] {
            assert!(counts.iter().all(|&n| n >= 5), "{counts:?}");
        }
        for seed in [0, 1, u64::MAX] {
            let mut backoff = Backoff::seeded(step, seed);
            backoff.next = step;
            let mut delays: Vec<Duration> = (0..20).map(|_| backoff.next_delay()).collect();
            delays.sort();
            delays.dedup();
            assert!(delays.len() > 15, "seed {seed}: {delays:?}");
        }
    }
}
