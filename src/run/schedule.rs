//! The kill schedule: when stopping the command starts, and how long the
//! TERM-to-KILL grace may last, so that SIGKILL always lands before the lease
//! could expire on the server.
//!
//! `expires` is the lease's local deadline: the send time of the latest
//! acknowledged renewal plus the granted TTL, on the boot-time clock. The
//! server cannot expire the lease before it (see `lease`).

use std::time::Duration;

use crate::clock;
use crate::planted::{planted, Defect};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillSchedule {
    /// The job must be dead this long before `expires`: room for delivering
    /// SIGKILL and for clock rates to differ.
    pub margin: Duration,
    /// The TERM-to-KILL grace: --kill-after, shortened to what the TTL
    /// allows.
    pub grace: Duration,
}

impl KillSchedule {
    pub fn new(ttl: Duration, kill_after: Duration) -> KillSchedule {
        let margin = (ttl / 10).clamp(Duration::from_millis(200), Duration::from_secs(1));
        // Killing starts `grace` before the deadline, and must not start
        // just because one renewal was missed: a renewal goes out every
        // third of the TTL, and a lost one is retried after an
        // acknowledgement timeout of a sixth (half of that again as slack).
        let max_grace = (ttl / 3).saturating_sub(margin).saturating_sub(ttl / 12);
        KillSchedule {
            margin,
            grace: kill_after.min(max_grace),
        }
    }

    /// When to start stopping the job if no renewal is acknowledged by then.
    pub fn stop_from(&self, expires: clock::Instant) -> clock::Instant {
        expires - self.margin - self.grace
    }

    /// Whether the job must be being stopped already, for a lease that
    /// expires at `expires`: nothing may start then, and a stopped job is
    /// not continued.
    pub fn must_stop(&self, expires: clock::Instant) -> bool {
        self.must_stop_at(expires, clock::Instant::now())
    }

    /// [`KillSchedule::must_stop`] at `now`: the rule itself, which the
    /// model checker drives on its own clock.
    pub fn must_stop_at(&self, expires: clock::Instant, now: clock::Instant) -> bool {
        if planted(Defect::SkipLocalDeadline) {
            return false;
        }
        now >= self.stop_from(expires)
    }

    /// When SIGKILL must go out, for a stop that starts now: after the
    /// grace, and never later than the margin before `expires`.
    pub fn kill_at(&self, expires: clock::Instant) -> clock::Instant {
        self.kill_at_from(expires, clock::Instant::now())
    }

    /// [`KillSchedule::kill_at`] for a stop that starts at `now`.
    pub fn kill_at_from(&self, expires: clock::Instant, now: clock::Instant) -> clock::Instant {
        (now + self.grace).min(expires - self.margin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn margin_is_a_tenth_of_the_ttl_within_bounds() {
        // (TTL, margin), in milliseconds.
        for (ttl, margin) in [(2_000, 200), (5_000, 500), (15_000, 1_000), (60_000, 1_000)] {
            let schedule = KillSchedule::new(ms(ttl), ms(10_000));
            assert_eq!(schedule.margin, ms(margin), "TTL {ttl} ms");
        }
    }

    #[test]
    fn grace_is_kill_after_shortened_to_what_the_ttl_allows() {
        // (TTL, --kill-after, grace), in milliseconds.
        let cases = [
            // A third (5 s) less the margin (1 s) less a twelfth (1.25 s).
            (15_000, 10_000, 2_750),
            (15_000, 300, 300),
            // 666 ms less 200 ms less 166 ms.
            (2_000, 10_000, 300),
            // A very short TTL leaves no grace: SIGKILL at once.
            (500, 10_000, 0),
        ];
        for (ttl, kill_after, grace) in cases {
            let schedule = KillSchedule::new(ms(ttl), ms(kill_after));
            assert_eq!(
                schedule.grace,
                ms(grace),
                "TTL {ttl} ms, --kill-after {kill_after} ms"
            );
        }
    }

    #[test]
    fn a_missed_renewal_never_starts_the_stop() {
        for ttl in [2_000, 3_000, 5_000, 15_000, 60_000, 3_600_000].map(ms) {
            let schedule = KillSchedule::new(ttl, ms(u64::MAX / 4));
            let ack_timeout = (ttl / 6).max(ms(300));
            // The last acknowledged renewal was sent at 0; the next goes at a
            // third, is given up on after the ack timeout, and retried.
            let retried_at = ttl / 3 + ack_timeout;
            let stop_from = ttl - schedule.margin - schedule.grace;
            assert!(
                stop_from >= retried_at,
                "TTL {ttl:?}: stop at {stop_from:?}, retry at {retried_at:?}"
            );
        }
    }

    #[test]
    fn sigkill_lands_a_margin_before_the_deadline() {
        let schedule = KillSchedule::new(ms(15_000), ms(10_000));
        let now = clock::Instant::now();
        let expires = now + ms(2_000);
        let kill_at = schedule.kill_at(expires);
        assert!(kill_at <= expires - schedule.margin);
        assert!(schedule.stop_from(expires) < now);
        let far = now + ms(60_000);
        assert!(schedule.kill_at(far) <= clock::Instant::now() + schedule.grace);
    }
}
