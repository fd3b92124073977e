//! Machine-wide stalls, seen from the test process, and taken out of the
//! time the tests' bounds measure.
//!
//! The machines the suite runs on (virtual ones, two cores) stop every
//! process at times: two watchers pinned one to each core, each sleeping
//! 10 ms at a time, overslept together by 1.2 s and once by 14.7 s, while
//! the suite ran beside two busy loops. Nothing on the machine runs then:
//! not leaderrun, not etcd, not the command, not the test. Such a stall is
//! a paused machine, which the guarantees leave out (docs/guarantees.md:
//! what cannot be stopped can still write late; the fencing token catches
//! it). A bound on what leaderrun does is on the time the machine ran:
//! [`active_since`] is the time since an instant less the stalls seen
//! meanwhile, and every wait's limit is stretched by them. A stall longer
//! than a lease still costs that lease, as it would in production; a test
//! that needs the lease kept leaves its TTL room for the stalls it can.
//!
//! The watcher is a thread of the test process, started by the harness's
//! first use ([`watch`], called by etcd's start, [`crate::common::Replica`]'s
//! spawn and every wait). It sees its own process starved too, which the
//! test's own clock suffers just the same.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long the watcher sleeps at a time.
const TICK: Duration = Duration::from_millis(10);

/// An oversleep past this is a stall: under two busy loops a tick is late
/// by tens of milliseconds, which is load, not a stall.
const STALL: Duration = Duration::from_millis(250);

/// The stalls seen so far: when each began (when the tick was due) and
/// ended (when it came).
fn stalls() -> &'static Mutex<Vec<(Instant, Instant)>> {
    static STALLS: OnceLock<Mutex<Vec<(Instant, Instant)>>> = OnceLock::new();
    STALLS.get_or_init(|| {
        // Returns once the watcher is in its first tick, so that a stall
        // from then on is seen (one that came while the thread was yet to
        // run was not, beside two busy loops).
        let (ticking, started) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("stall watcher".into())
            .spawn(move || loop {
                let due = Instant::now() + TICK;
                let _ = ticking.try_send(());
                std::thread::sleep(TICK);
                let came = Instant::now();
                if came.duration_since(due) > STALL {
                    stalls().lock().unwrap().push((due, came));
                }
            })
            .expect("a stall watcher");
        started.recv().expect("the stall watcher runs");
        Mutex::new(Vec::new())
    })
}

/// Starts the watcher, if it has not started yet.
pub fn watch() {
    stalls();
}

/// How much of the time between `from` and `to` the machine stood still.
pub fn stalled_between(from: Instant, to: Instant) -> Duration {
    stalls()
        .lock()
        .unwrap()
        .iter()
        .map(|&(began, ended)| {
            let (began, ended) = (began.max(from), ended.min(to));
            ended.saturating_duration_since(began)
        })
        .sum()
}

/// The time since `since` that the machine ran: what has passed, less the
/// stalls seen meanwhile.
pub fn active_since(since: Instant) -> Duration {
    let now = Instant::now();
    now.duration_since(since)
        .saturating_sub(stalled_between(since, now))
}

/// Whether `limit` has passed since `since` in the machine's running time
/// (a wait's limit, stretched by the stalls seen meanwhile).
pub fn past(since: Instant, limit: Duration) -> bool {
    active_since(since) >= limit
}

/// Said beside a bound that failed: the stalls that were taken out of it.
pub fn stalled_note(since: Instant) -> String {
    match stalled_between(since, Instant::now()) {
        stalled if stalled.is_zero() => String::new(),
        stalled => format!(" (beside {stalled:?} the machine stood still, not counted)"),
    }
}
