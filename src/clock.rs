//! The clock for every timer that guards safety: CLOCK_BOOTTIME. It is
//! monotonic like CLOCK_MONOTONIC but keeps counting while the machine is
//! suspended, so a deadline that passed during a suspend is seen as passed on
//! resume, and a renewal due during a suspend goes out at once on resume.
//!
//! Tokio's timers run on CLOCK_MONOTONIC, which stops during a suspend, so
//! leaderrun's renewal schedule, its kill deadline and the TERM-to-KILL grace
//! all sleep here instead, on a `timerfd` armed on CLOCK_BOOTTIME.

use std::future::Future;
use std::os::fd::OwnedFd;
use std::time::Duration;

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{
    ClockId as TimerClock, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags,
};
use nix::time::{clock_gettime, ClockId};
use tokio::io::unix::AsyncFd;

pub use protocol::time::Instant;

/// The wall clock, for what is written for people and for `--once-per`'s
/// windows, which are kept in wall-clock time across machines.
pub fn wall() -> std::time::SystemTime {
    #[cfg(test)]
    if let Some(since) = simulated::elapsed() {
        return std::time::UNIX_EPOCH + simulated::WALL + since;
    }
    std::time::SystemTime::now()
}

/// The clocks of a simulated world (`crate::simulation`): both read off
/// tokio's paused clock, from the moment the world began, on the thread
/// that simulates it.
#[cfg(test)]
pub mod simulated {
    use std::cell::Cell;
    use std::time::Duration;

    /// What the boot-time clock reads as a simulated world begins.
    pub const BOOT: Duration = Duration::from_secs(1_000);
    /// What the wall clock reads then: 2026-12-07T00:00:00Z.
    pub const WALL: Duration = Duration::from_secs(1_796_601_600);

    thread_local! {
        static BEGAN: Cell<Option<tokio::time::Instant>> = const { Cell::new(None) };
    }

    /// This thread's clocks are the simulated world's from now on.
    pub fn begin() {
        BEGAN.with(|began| began.set(Some(tokio::time::Instant::now())));
    }

    pub fn end() {
        BEGAN.with(|began| began.set(None));
    }

    /// How long the simulated world has run, if this thread simulates one.
    pub fn elapsed() -> Option<Duration> {
        BEGAN.with(Cell::get).map(|began| began.elapsed())
    }

    thread_local! {
        /// Reads of the clock in a row at one instant.
        static READS: Cell<(Duration, u32)> = const { Cell::new((Duration::ZERO, 0)) };
    }

    /// So many reads of the clock while it stands still is a task that
    /// loops without waiting: in a real run, a core spun for as long;
    /// here time itself would stand still, and the walk with it. It
    /// panics, which the world reports as a property broken.
    pub const SPIN_LIMIT: u32 = 1_000_000;

    /// The clock was read at `now`: a spin, past [`SPIN_LIMIT`] such reads.
    pub fn read_at(now: Duration) {
        let (at, count) = READS.with(Cell::get);
        let count = if at == now { count + 1 } else { 1 };
        READS.with(|cell| cell.set((now, count)));
        assert!(
            count < SPIN_LIMIT,
            "spin: the clock read {SPIN_LIMIT} times standing at {now:?}: a task loops without waiting"
        );
    }
}

/// Reading the boot-time clock, which the protocol's instants never do.
pub trait Now: Sized {
    /// The instant now.
    fn now() -> Self;
    /// Time left until `self`, zero when it has passed.
    fn remaining(self) -> Duration;
    fn has_passed(self) -> bool;
    /// Time since `self`, zero if it is still to come.
    fn elapsed(self) -> Duration;
}

impl Now for Instant {
    fn now() -> Self {
        #[cfg(test)]
        if let Some(since) = simulated::elapsed() {
            simulated::read_at(since);
            return Instant::from_boot(simulated::BOOT + since);
        }
        let spec = clock_gettime(ClockId::CLOCK_BOOTTIME)
            .or_else(|_| clock_gettime(ClockId::CLOCK_MONOTONIC))
            .expect("a monotonic clock is always available on Linux");
        Instant::from_boot(Duration::from(spec))
    }

    fn remaining(self) -> Duration {
        self.saturating_since(Self::now())
    }

    fn has_passed(self) -> bool {
        Self::now() >= self
    }

    fn elapsed(self) -> Duration {
        Self::now().saturating_since(self)
    }
}

/// Sleeps until `deadline` on the boot-time clock.
pub async fn sleep_until(deadline: Instant) {
    if deadline.has_passed() {
        return;
    }
    #[cfg(test)]
    if simulated::elapsed().is_some() {
        return tokio::time::sleep(deadline.remaining()).await;
    }
    match boot_timer(deadline) {
        Ok(timer) => {
            // Readable once the timer has expired. A spurious wake-up is
            // told apart by reading the clock again.
            while !deadline.has_passed() {
                match timer.readable().await {
                    Ok(mut ready) => ready.clear_ready(),
                    Err(_) => return step_until(deadline).await,
                }
            }
        }
        // No timerfd (out of file descriptors): short steps on tokio's clock,
        // re-reading the boot-time clock after each.
        Err(_) => step_until(deadline).await,
    }
}

/// Sleeps for `duration` on the boot-time clock.
pub async fn sleep(duration: Duration) {
    sleep_until(Instant::now() + duration).await;
}

/// Sleeps until `deadline`, or for ever when there is none.
pub async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Runs `future` for at most `limit` from its first poll; None if the
/// limit came first.
///
/// Not an async fn: an async fn holds its arguments, and again whatever it
/// moves them into, so a future passed through one by value takes twice
/// its size, and a future made of such calls many times the size of its
/// parts (leaderrun's whole run was once a 120 KB future, copied whole
/// onto a fresh stack and heap at start-up: page faults, on the way to
/// running). Boxed here, it takes a pointer's.
pub fn timeout<F: Future>(limit: Duration, future: F) -> impl Future<Output = Option<F::Output>> {
    let future = Box::pin(future);
    async move { until(Instant::now() + limit, future).await }
}

/// Runs `future` until `deadline`; None if the deadline came first.
///
/// The future is polled first, each time: one already done (the look-up
/// of who is behind us, as a resignation starts) returns without a timer
/// armed, which costs five system calls on the next leader's path.
async fn until<F: Future>(
    deadline: Instant,
    mut future: std::pin::Pin<Box<F>>,
) -> Option<F::Output> {
    tokio::select! {
        biased;
        value = &mut future => Some(value),
        _ = sleep_until(deadline) => None,
    }
}

/// What `future` gives when polled once, now: None if it would wait.
///
/// Not `tokio::time::timeout(Duration::ZERO, ..)`: tokio's timers round a
/// deadline up to the next whole millisecond and fire only as the runtime
/// next parks, so a zero timeout on a future that is not ready waits up
/// to a millisecond or more, on the next leader's path.
pub async fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|context| match future.as_mut().poll(context) {
        std::task::Poll::Ready(value) => std::task::Poll::Ready(Some(value)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

fn boot_timer(deadline: Instant) -> std::io::Result<AsyncFd<OwnedFd>> {
    let timer = TimerFd::new(
        TimerClock::CLOCK_BOOTTIME,
        TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
    )?;
    // An absolute expiry of zero would disarm the timer; deadlines are
    // always later than boot.
    let at = TimeSpec::from_duration(deadline.since_boot().max(Duration::from_nanos(1)));
    timer.set(
        Expiration::OneShot(at),
        TimerSetTimeFlags::TFD_TIMER_ABSTIME,
    )?;
    // SAFETY: the descriptor is owned, so it stays open for as long as the
    // registration lives.
    Ok(unsafe { AsyncFd::register(OwnedFd::from(timer)) }?)
}

async fn step_until(deadline: Instant) {
    const STEP: Duration = Duration::from_millis(250);
    loop {
        let left = deadline.remaining();
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(STEP)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `test` on a runtime like leaderrun's.
    fn on_runtime(test: impl Future<Output = ()>) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(test);
    }

    #[test]
    fn sleeps_until_the_deadline_and_no_longer() {
        on_runtime(async {
            let start = Instant::now();
            sleep(Duration::from_millis(30)).await;
            let took = start.elapsed();
            assert!(took >= Duration::from_millis(30), "{took:?}");
            assert!(took < Duration::from_secs(2), "{took:?}");
            assert_eq!(
                timeout(Duration::from_millis(10), std::future::pending::<()>()).await,
                None
            );
            assert_eq!(timeout(Duration::from_secs(5), async { 7 }).await, Some(7));
            // A passed deadline returns at once.
            sleep_until(start).await;
            // Polled once: what is not ready is None.
            assert_eq!(ready_now(async { 7 }).await, Some(7));
            assert_eq!(ready_now(std::future::pending::<()>()).await, None);
        });
    }

    #[test]
    fn a_future_already_done_beats_its_deadline() {
        on_runtime(async {
            // The future is polled first: done, it wins even against a
            // deadline already passed, and no timer is armed for it.
            let passed = Instant::now();
            for _ in 0..64 {
                assert_eq!(until(passed, Box::pin(async { 7 })).await, Some(7));
            }
        });
    }

    #[test]
    fn a_timeout_holds_its_future_by_pointer() {
        // A future with 16 KiB held across a wait: inline, a timeout of it
        // would be at least as large.
        let large = async {
            let held = [1u8; 16 * 1024];
            tokio::task::yield_now().await;
            held.iter().map(|byte| usize::from(*byte)).sum::<usize>()
        };
        assert!(std::mem::size_of_val(&large) >= 16 * 1024);
        let bounded = timeout(Duration::from_secs(1), large);
        assert!(std::mem::size_of_val(&bounded) < 1024);
        on_runtime(async {
            assert_eq!(bounded.await, Some(16 * 1024));
        });
    }
}
