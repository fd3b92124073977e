//! The run's side of retrying: waiting out a backoff on the boot-time
//! clock, and a seed for its jitter that differs between replicas and runs.
//! The policy itself (the steps, the ceilings, the clean-up bound) is the
//! protocol's (`protocol::backoff`).

use std::time::Duration;

pub use protocol::backoff::{Backoff, CLEANUP, KEEPING, WAITING};

use crate::clock::{self, Now};

/// A backoff up to `ceiling`, seeded from this process and the clock, so
/// that replicas differ.
pub fn backoff(ceiling: Duration) -> Backoff {
    Backoff::seeded(ceiling, seed())
}

/// Waits the next delay of `backoff`.
pub async fn wait(backoff: &mut Backoff) {
    clock::sleep(backoff.next_delay()).await;
}

/// A seed for the jitter that differs between replicas and runs.
pub fn seed() -> u64 {
    u64::from(crate::host::pid()) ^ clock::Instant::now().since_boot().as_nanos() as u64
}
