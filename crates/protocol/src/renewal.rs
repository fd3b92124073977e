//! The lease's keeper, as a state machine: when a renewal is due, how
//! long its acknowledgement may take, and the local deadline each
//! acknowledgement gives. The run's keeper (`lease::keeper`) sends what
//! this says, when it says, and feeds back each acknowledgement; the
//! model checker's world does the same. Every span comes from the one
//! [`Cadence`] of a TTL, which the kill schedule (`schedule`) is derived
//! from too.
//!
//! **The local deadline counts from a renewal's send.** etcd renews a
//! lease when it receives the renewal, which is after we sent it: the
//! lease cannot expire on the server before `send + granted TTL`. Counted
//! from the acknowledgement instead, a slow answer would move the deadline
//! past the server's expiry by as long as the answer took, and the
//! acknowledgement may take longer than the kill schedule's margin.

use std::time::Duration;

use crate::planted::{planted, Defect};
use crate::time::Instant;

/// How many renewals go out in a TTL.
const RENEWALS_PER_TTL: u32 = 3;
/// A renewal's acknowledgement may take this share of the TTL before the
/// keeper tries another endpoint (half the time between renewals)...
const ACK_SHARE: u32 = 6;
/// ...but never less than this: a healthy etcd answers in milliseconds,
/// and one that has to be connected to first needs more.
const ACK_FLOOR: Duration = Duration::from_millis(300);
/// The job must be dead this share of the TTL before the local deadline:
/// room for delivering SIGKILL and for clock rates to differ...
const MARGIN_SHARE: u32 = 10;
/// ...within these bounds.
const MARGIN_FLOOR: Duration = Duration::from_millis(200);
const MARGIN_CEILING: Duration = Duration::from_secs(1);

/// How long SIGKILL is sent, at most, before a stop is over whatever is
/// left of the job (a process deep in the kernel): the guardian, still
/// armed, has the rest.
pub const KILL_BOUND: Duration = Duration::from_secs(1);

/// Every span of a lease's life, from the TTL etcd granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cadence {
    pub ttl: Duration,
    /// A renewal goes out this long after the one before (or the grant).
    pub renew_every: Duration,
    /// A renewal not acknowledged within this is given up on: the keeper
    /// opens a new stream, on the next endpoint.
    pub ack_timeout: Duration,
    /// The job must be dead this long before the local deadline.
    pub margin: Duration,
}

impl Cadence {
    pub fn of(ttl: Duration) -> Cadence {
        Cadence {
            ttl,
            renew_every: ttl / RENEWALS_PER_TTL,
            ack_timeout: (ttl / ACK_SHARE).max(ACK_FLOOR),
            margin: (ttl / MARGIN_SHARE).clamp(MARGIN_FLOOR, MARGIN_CEILING),
        }
    }

    /// The longest a stop may wait before SIGKILL: killing starts that
    /// long before the deadline, and must not start just because one
    /// renewal was missed. A renewal goes out every `renew_every`, and a
    /// lost one is given up on after `ack_timeout` (half of that again as
    /// slack).
    pub fn longest_grace(&self) -> Duration {
        self.renew_every
            .saturating_sub(self.margin)
            .saturating_sub(self.ack_timeout / 2)
    }
}

/// The keeper's state: the local deadline, the next renewal, and the one
/// renewal whose acknowledgement is awaited, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Renewals {
    cadence: Cadence,
    /// The local deadline: the send of the latest acknowledged renewal
    /// (the grant first) plus the TTL it was granted.
    expires: Instant,
    next_due: Instant,
    /// When the renewal awaiting its acknowledgement was sent. One at a
    /// time: its acknowledgement is given up on before the next is due.
    awaited: Option<Instant>,
}

/// What an acknowledgement says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Acknowledged {
    /// The lease lives on: the local deadline is now `expires` (never
    /// earlier than it was); the renewal acknowledged was `sent` then.
    Until { expires: Instant, sent: Instant },
    /// etcd says the lease no longer exists.
    Gone,
}

/// An input the keeper's state does not expect: the driver's defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unexpected {
    /// A renewal sent while another's acknowledgement is awaited.
    SentWhileAwaiting,
    /// An acknowledgement of no renewal sent.
    AcknowledgedNothing,
}

impl std::fmt::Display for Unexpected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unexpected::SentWhileAwaiting => {
                "a renewal was sent while another's acknowledgement was awaited"
            }
            Unexpected::AcknowledgedNothing => "an acknowledgement came of no renewal sent",
        })
    }
}

impl std::error::Error for Unexpected {}

impl Renewals {
    /// A lease granted `ttl`, by a grant sent at `granted_at`: as good as
    /// a renewal sent then.
    pub fn new(ttl: Duration, granted_at: Instant) -> Renewals {
        let cadence = Cadence::of(ttl);
        Renewals {
            cadence,
            expires: granted_at + ttl,
            next_due: granted_at + cadence.renew_every,
            awaited: None,
        }
    }

    pub fn cadence(&self) -> Cadence {
        self.cadence
    }

    /// The local deadline: the server cannot expire the lease before it.
    pub fn expires(&self) -> Instant {
        self.expires
    }

    /// When the next renewal is due (at once if this has passed).
    pub fn next_due(&self) -> Instant {
        self.next_due
    }

    /// When the awaited acknowledgement is given up on, if one is.
    pub fn ack_due(&self) -> Option<Instant> {
        self.awaited.map(|sent| sent + self.cadence.ack_timeout)
    }

    /// A renewal went out at `now`.
    pub fn sent(&mut self, now: Instant) -> Result<(), Unexpected> {
        if self.awaited.is_some() {
            return Err(Unexpected::SentWhileAwaiting);
        }
        self.awaited = Some(now);
        self.next_due = now + self.cadence.renew_every;
        Ok(())
    }

    /// The awaited renewal was acknowledged at `now`, with `granted`
    /// (zero: the lease is gone).
    pub fn acknowledged(
        &mut self,
        granted: Duration,
        now: Instant,
    ) -> Result<Acknowledged, Unexpected> {
        let sent = self.awaited.take().ok_or(Unexpected::AcknowledgedNothing)?;
        if granted.is_zero() {
            return Ok(Acknowledged::Gone);
        }
        let counted_from = if planted(Defect::DeadlineFromAck) {
            now
        } else {
            sent
        };
        self.expires = self.expires.max(counted_from + granted);
        Ok(Acknowledged::Until {
            expires: self.expires,
            sent,
        })
    }

    /// The stream the awaited renewal went on broke, or its
    /// acknowledgement is given up on: it will never come. The next
    /// renewal goes on a new stream.
    pub fn broke(&mut self) {
        self.awaited = None;
    }

    /// The same state with every instant moved: for a simulated clock
    /// that is set back (the model checker's rebase). The deadlines by
    /// `move_to`; the awaited renewal's send by `move_sent`, apart: it is
    /// counted from (the TTL, the acknowledgement timeout), so a rebase
    /// that makes every past instant one must keep it exact for as long
    /// as its answer may come.
    #[cfg(any(test, feature = "testing"))]
    pub fn retimed(
        mut self,
        move_to: impl Fn(Instant) -> Instant,
        move_sent: impl Fn(Instant) -> Instant,
    ) -> Renewals {
        self.expires = move_to(self.expires);
        self.next_due = move_to(self.next_due);
        self.awaited = self.awaited.map(move_sent);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at, ms};

    #[test]
    fn an_unexpected_input_is_said_in_words() {
        let said = [
            Unexpected::SentWhileAwaiting,
            Unexpected::AcknowledgedNothing,
        ]
        .map(|u| u.to_string());
        assert!(
            said[0].contains("sent while") && said[1].contains("no renewal sent"),
            "{said:?}"
        );
    }

    #[test]
    fn every_span_comes_from_the_ttl() {
        let six = Cadence::of(ms(6_000));
        assert_eq!(six.renew_every, ms(2_000));
        assert_eq!(six.ack_timeout, ms(1_000));
        assert_eq!(six.margin, ms(600));
        assert_eq!(six.longest_grace(), ms(900));
        let two = Cadence::of(ms(2_000));
        assert_eq!(two.ack_timeout, ms(333) + Duration::from_nanos(333_333));
        assert_eq!(Cadence::of(ms(1_200)).ack_timeout, ACK_FLOOR);
        assert_eq!(Cadence::of(ms(60_000)).margin, MARGIN_CEILING);
    }

    /// An acknowledgement as late as the keeper waits for one still dates
    /// the deadline from the send: etcd renewed the lease when the
    /// renewal reached it, which was no later.
    #[test]
    fn a_late_acknowledgement_dates_the_deadline_from_the_send() {
        let mut renewals = Renewals::new(ms(6_000), at(0));
        assert_eq!(renewals.expires(), at(6_000));
        assert_eq!(renewals.next_due(), at(2_000));
        renewals.sent(at(2_000)).unwrap();
        assert_eq!(renewals.ack_due(), Some(at(3_000)));
        let late = at(2_999);
        assert_eq!(
            renewals.acknowledged(ms(6_000), late),
            Ok(Acknowledged::Until {
                expires: at(8_000),
                sent: at(2_000)
            })
        );
        assert!(
            renewals.expires() <= at(2_000) + ms(6_000),
            "no later than the server's expiry, counted from when it got the renewal"
        );
        assert_eq!(renewals.ack_due(), None);
        assert_eq!(renewals.next_due(), at(4_000));
    }

    #[test]
    fn the_deadline_never_goes_back_and_a_zero_ttl_is_the_lease_gone() {
        let mut renewals = Renewals::new(ms(6_000), at(0));
        renewals.sent(at(2_000)).unwrap();
        // A smaller TTL granted (etcd's minimum changed, a leader change).
        renewals.acknowledged(ms(3_000), at(2_010)).unwrap();
        assert_eq!(renewals.expires(), at(6_000));
        renewals.sent(at(4_000)).unwrap();
        assert_eq!(
            renewals.acknowledged(Duration::ZERO, at(4_010)),
            Ok(Acknowledged::Gone)
        );
    }

    #[test]
    fn one_renewal_is_awaited_at_a_time_and_a_break_forgets_it() {
        let mut renewals = Renewals::new(ms(6_000), at(0));
        assert_eq!(
            renewals.acknowledged(ms(6_000), at(1)),
            Err(Unexpected::AcknowledgedNothing)
        );
        renewals.sent(at(2_000)).unwrap();
        assert_eq!(renewals.sent(at(2_001)), Err(Unexpected::SentWhileAwaiting));
        renewals.broke();
        assert_eq!(renewals.ack_due(), None);
        assert_eq!(
            renewals.expires(),
            at(6_000),
            "a broken renewal renews nothing"
        );
        renewals.sent(at(2_100)).unwrap();
    }
}
