//! leaderrun's protocol as pure state machines: fed what happened and the
//! time, asked what to do and when to wake (sans-IO, as quinn-proto keeps
//! a QUIC connection). leaderrun's run performs what they ask with etcd,
//! the job and the boot-time clock; its model checker and simulator
//! perform it in their modelled world, so that all of them drive the
//! same code.
//!
//! A crate of its own so that purity is the compiler's to hold: its
//! dependencies name nothing that does IO (leaderrun's `tests/purity.rs`
//! holds them to an allowance of pure crates), so it cannot name tokio,
//! etcd-client, nix or rustix; and the same test file keeps the standard
//! library's IO and clocks out of its text.
//!
//! What it owns:
//! - [`table`]: what every event does in every phase of a run, the one
//!   place that decides;
//! - [`campaign`]: the campaign's state between events, with what each
//!   phase holds ([`stage`]) and the pace of its retries;
//! - [`lead`]: a leading run's states (its command running, its job being
//!   stopped); [`resign`]: the way out, with the rule of entitlement;
//! - [`renewal`]: the lease's keeper (every span of a lease's life from
//!   its TTL, the renewals due, the local deadline each acknowledgement
//!   gives, counted from its send);
//! - [`schedule`]: the kill schedule (when a stop starts, how long its
//!   grace lasts, what the lease says of a leading run and of a win about
//!   to start) and [`stop`], the kill sequence;
//! - its vocabulary, which the run converts to and from at its edge:
//!   [`time`] (instants given, never read), [`signal`], [`exit`] (every
//!   exit code, as data), [`loss`] (what can happen to a key or a place,
//!   and how a run ends), [`backoff`] (every retry's pace, seeded);
//! - the rules the run and the model checker apply to what etcd says:
//!   [`line`] (whether a key is still ours, whether a place runs, who
//!   runs), [`records`] (the run records' plan and guards) and
//!   [`window`] (the `--once-per` window's judgements);
//! - [`planted`]: the defects the model checker and simulator must catch.

pub mod backoff;
pub mod campaign;
pub mod exit;
pub mod lead;
pub mod line;
pub mod loss;
pub mod planted;
pub mod records;
pub mod renewal;
pub mod resign;
pub mod schedule;
pub mod signal;
pub mod stage;
pub mod stop;
pub mod table;
pub mod time;
pub mod window;

/// What the protocol's own tests build their instants and leases from, in
/// milliseconds since boot.
#[cfg(test)]
mod testing {
    use std::time::Duration;

    use super::schedule::LeaseView;
    use super::time::Instant;

    pub fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    pub fn at(n: u64) -> Instant {
        Instant::from_boot(ms(n))
    }

    /// A lease alive until `expires`, as a leading run sees it.
    pub fn lease(expires: u64) -> LeaseView {
        LeaseView {
            expires: at(expires),
            gone: false,
        }
    }
}
