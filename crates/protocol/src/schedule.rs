//! The kill schedule: when stopping the command starts, and how long the
//! TERM-to-KILL grace may last, so that SIGKILL always lands before the lease
//! could expire on the server; and from it, what the lease says of a
//! leading run ([`KillSchedule::verdict`]) and of a proven win about to
//! start its command ([`KillSchedule::may_start`]).
//!
//! `expires` is the lease's local deadline: the send time of the latest
//! acknowledged renewal plus the granted TTL, on the boot-time clock. The
//! server cannot expire the lease before it (see `lease`).

use std::time::Duration;

use crate::loss::PlaceLost;
use crate::planted::{planted, Defect};
use crate::renewal::Cadence;
use crate::time::Instant;

/// The lease as a leading run knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseView {
    /// The local deadline: the server cannot expire the lease before it.
    pub expires: Instant,
    /// etcd said it no longer exists.
    pub gone: bool,
}

/// What the lease says of a run that leads, at some instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseVerdict {
    /// etcd said the lease is gone.
    Gone,
    /// Renewals went unacknowledged until the job must be being stopped.
    MustStop,
    /// The lease holds until this instant, when the job must be being
    /// stopped unless a renewal is acknowledged first.
    HoldsUntil(Instant),
}

/// Whether a proven win may start its command now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartVerdict {
    /// The lease is sure to live past the point where the job would have
    /// to be stopped.
    Sure,
    /// etcd said the lease is gone.
    LeaseGone,
    /// The job would have to be stopped at once: the proof may be old news
    /// (a waiter stopped or starved past its lease's local deadline).
    Unsure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KillSchedule {
    /// The job must be dead this long before `expires`: room for delivering
    /// SIGKILL and for clock rates to differ.
    pub margin: Duration,
    /// The TERM-to-KILL grace: --kill-after, shortened to what the TTL
    /// allows.
    pub grace: Duration,
}

impl KillSchedule {
    /// The schedule of a lease granted `ttl` (its [`Cadence`]), for
    /// --kill-after.
    pub fn new(ttl: Duration, kill_after: Duration) -> KillSchedule {
        let cadence = Cadence::of(ttl);
        KillSchedule {
            margin: if planted(Defect::ThinMargin) {
                Duration::from_millis(1)
            } else {
                cadence.margin
            },
            grace: kill_after.min(cadence.longest_grace()),
        }
    }

    /// When to start stopping the job if no renewal is acknowledged by then.
    pub fn stop_from(&self, expires: Instant) -> Instant {
        expires - self.margin - self.grace
    }

    /// Whether, at `now`, the job must be being stopped already, for a
    /// lease that expires at `expires`: nothing may start then, and a
    /// stopped job is not continued.
    pub fn must_stop_at(&self, expires: Instant, now: Instant) -> bool {
        if planted(Defect::SkipLocalDeadline) {
            return false;
        }
        now >= self.stop_from(expires)
    }

    /// What `lease` says of a leading run at `now`: the run's watch of its
    /// lease sleeps until the instant it holds until, and asks again then
    /// or when a renewal lands.
    pub fn verdict(&self, lease: LeaseView, now: Instant) -> LeaseVerdict {
        if lease.gone {
            return LeaseVerdict::Gone;
        }
        let stop_from = if planted(Defect::StopAtExpiry) {
            lease.expires
        } else {
            self.stop_from(lease.expires)
        };
        if planted(Defect::SkipLocalDeadline) || now < stop_from {
            LeaseVerdict::HoldsUntil(stop_from)
        } else {
            LeaseVerdict::MustStop
        }
    }

    /// The claim's re-check, as the campaign takes it: nothing if a proof
    /// may start its command at `now` ([`KillSchedule::may_start`]), else
    /// how its place is lost.
    pub fn refuse_start(&self, lease: LeaseView, now: Instant) -> Option<PlaceLost> {
        match self.may_start(lease, now) {
            StartVerdict::Sure => None,
            StartVerdict::LeaseGone => Some(PlaceLost::LeaseGone),
            StartVerdict::Unsure => Some(PlaceLost::Unsure),
        }
    }

    /// Whether a proof is still good for running at `now`: it says we were
    /// first at its revision, and is good only while our lease is sure to
    /// be alive.
    pub fn may_start(&self, lease: LeaseView, now: Instant) -> StartVerdict {
        if planted(Defect::StartUnsure) {
            return StartVerdict::Sure;
        }
        match self.verdict(lease, now) {
            LeaseVerdict::Gone => StartVerdict::LeaseGone,
            LeaseVerdict::MustStop => StartVerdict::Unsure,
            LeaseVerdict::HoldsUntil(_) => StartVerdict::Sure,
        }
    }

    /// When SIGKILL must go out, for a stop that starts at `now`: after
    /// the grace, and never later than the margin before `expires`.
    pub fn kill_at_from(&self, expires: Instant, now: Instant) -> Instant {
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

    /// A job stopped for the terminal is continued only before this (see
    /// `run::supervise`'s `follow_stop`).
    #[test]
    fn the_job_must_be_being_stopped_from_the_grace_and_margin_before_expiry_on() {
        let schedule = KillSchedule::new(ms(15_000), ms(10_000));
        let expires = Instant::from_boot(ms(100_000));
        let stop_from = schedule.stop_from(expires);
        assert_eq!(stop_from, Instant::from_boot(ms(100_000 - 1_000 - 2_750)));
        assert!(!schedule.must_stop_at(expires, stop_from - ms(1)));
        assert!(schedule.must_stop_at(expires, stop_from));
        assert!(schedule.must_stop_at(expires, expires + ms(1)));
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
        let now = Instant::from_boot(ms(100_000));
        let expires = now + ms(2_000);
        let kill_at = schedule.kill_at_from(expires, now);
        assert!(kill_at <= expires - schedule.margin);
        assert!(schedule.stop_from(expires) < now);
        let far = now + ms(60_000);
        assert!(schedule.kill_at_from(far, now) <= now + schedule.grace);
    }

    #[test]
    fn the_verdict_holds_until_the_stop_is_due_then_must_stop() {
        let schedule = KillSchedule::new(ms(3_000), ms(1_000));
        let at = |n| Instant::from_boot(ms(n));
        let lease = LeaseView {
            expires: at(10_000),
            gone: false,
        };
        let stop_from = schedule.stop_from(lease.expires);
        assert!(stop_from <= at(10_000) - schedule.margin - schedule.grace);
        assert_eq!(
            schedule.verdict(lease, at(9_000)),
            LeaseVerdict::HoldsUntil(stop_from)
        );
        assert_eq!(schedule.may_start(lease, at(9_000)), StartVerdict::Sure);
        assert_eq!(schedule.verdict(lease, stop_from), LeaseVerdict::MustStop);
        assert_eq!(schedule.may_start(lease, stop_from), StartVerdict::Unsure);
        let gone = LeaseView {
            gone: true,
            ..lease
        };
        assert_eq!(schedule.verdict(gone, at(0)), LeaseVerdict::Gone);
        assert_eq!(schedule.may_start(gone, at(0)), StartVerdict::LeaseGone);
        // The claim's words for the same verdicts.
        assert_eq!(schedule.refuse_start(lease, at(9_000)), None);
        assert_eq!(
            schedule.refuse_start(lease, stop_from),
            Some(PlaceLost::Unsure)
        );
        assert_eq!(
            schedule.refuse_start(gone, at(0)),
            Some(PlaceLost::LeaseGone)
        );
    }
}
