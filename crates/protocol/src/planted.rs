//! Defects planted on purpose, for leaderrun's model checker and simulator
//! to prove that they can fail: each sits in the production code the
//! checker drives, behind a switch that only a test can turn on, for its
//! own thread. Without the `planted` feature (which only leaderrun's test
//! builds turn on), [`planted`] is a constant false and the defects
//! compile away.

/// The defects the model checker and the simulator must catch (the
/// last, only the simulator can).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// The proof of a win skips "among the first --max-running": a queued
    /// key counts as a win, and the command is spawned before the win is
    /// proven.
    SpawnUnproven,
    /// The lease's local deadline is never seen to pass.
    SkipLocalDeadline,
    /// A stop whose grace is over resigns with the job still there.
    ResignBeforeDead,
    /// The end records are fenced by token (a record replaces one with a
    /// smaller token only), which is wrong once runs finish in any order.
    FenceByToken,
    /// The kill sequence counts the job gone once --kill-signal went out,
    /// whether or not it is.
    GoneAtKillSignal,
    /// A running job's stop is due at the lease's local deadline, without
    /// the grace and the margin before it.
    StopAtExpiry,
    /// The claim skips its re-check of the lease: a proof is acted on
    /// though the lease is gone, or the job would have to be stopped at
    /// once.
    StartUnsure,
    /// An etcd error before Waiting is retried on the lease the campaign
    /// had, though nothing listened for that lease since: one lost during
    /// the outage fails every request alike, for ever.
    RetryKeepsLease,
    /// A stop whose grace is over says so, but never moves on to SIGKILL
    /// (a leading run's state, `protocol::lead`, forgets to): the job
    /// lives on.
    GraceWithoutKill,
    /// The kill schedule's margin is a millisecond: enough where clocks
    /// agree and processes act in time (the checker's world), not where a
    /// replica's clock runs slower than etcd's (the simulator's).
    ThinMargin,
    /// The resignation's transaction writes the records as entitled
    /// without comparing that our key is still ours: a run whose key is
    /// gone overwrites the records of runs that came after it.
    ResignWithoutComparison,
    /// A claimed `--once-per` window is given back on the way out even
    /// though its command started: the window's run can happen again.
    WindowBackAfterStart,
    /// The lease's local deadline counts from a renewal's acknowledgement
    /// instead of its send: a slow answer moves it past the server's
    /// expiry.
    DeadlineFromAck,
    /// A proven win's claim starts past its re-check of the lease (the
    /// step skipped where the claim begins, not in the check itself).
    SkipRecheck,
    /// A run that lost its leadership asks for the entitled resignation:
    /// with its key still intact (its local deadline passed, etcd slow to
    /// expire the lease), its records claim to have finished last over
    /// runs that finished after its job was stopped.
    LostResignsEntitled,
}

impl Defect {
    /// Every defect: the simulator must find each. The match makes a
    /// defect added without its place here fail to compile.
    pub const ALL: [Defect; 15] = {
        use Defect::*;
        const fn listed(defect: Defect) -> usize {
            match defect {
                SpawnUnproven => 0,
                SkipLocalDeadline => 1,
                ResignBeforeDead => 2,
                FenceByToken => 3,
                GoneAtKillSignal => 4,
                StopAtExpiry => 5,
                StartUnsure => 6,
                RetryKeepsLease => 7,
                GraceWithoutKill => 8,
                ThinMargin => 9,
                ResignWithoutComparison => 10,
                WindowBackAfterStart => 11,
                DeadlineFromAck => 12,
                SkipRecheck => 13,
                LostResignsEntitled => 14,
            }
        }
        let all = [
            SpawnUnproven,
            SkipLocalDeadline,
            ResignBeforeDead,
            FenceByToken,
            GoneAtKillSignal,
            StopAtExpiry,
            StartUnsure,
            RetryKeepsLease,
            GraceWithoutKill,
            ThinMargin,
            ResignWithoutComparison,
            WindowBackAfterStart,
            DeadlineFromAck,
            SkipRecheck,
            LostResignsEntitled,
        ];
        let mut i = 0;
        while i < all.len() {
            assert!(listed(all[i]) == i);
            i += 1;
        }
        all
    };
}

/// Whether `defect` is planted (never, outside the model checker's tests).
#[cfg(not(any(test, feature = "testing")))]
#[inline(always)]
pub fn planted(_defect: Defect) -> bool {
    false
}

#[cfg(any(test, feature = "testing"))]
thread_local! {
    static PLANTED: std::cell::Cell<Option<Defect>> = const { std::cell::Cell::new(None) };
}

/// Whether `defect` is planted in this thread.
#[cfg(any(test, feature = "testing"))]
pub fn planted(defect: Defect) -> bool {
    PLANTED.with(|planted| planted.get() == Some(defect))
}

/// Runs `body` with `defect` planted in this thread (a test's own: tests
/// run side by side in threads of one process).
#[cfg(any(test, feature = "testing"))]
pub fn with<T>(defect: Defect, body: impl FnOnce() -> T) -> T {
    struct Unplant;
    impl Drop for Unplant {
        fn drop(&mut self) {
            PLANTED.with(|planted| planted.set(None));
        }
    }
    PLANTED.with(|planted| planted.set(Some(defect)));
    let _unplant = Unplant;
    body()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_defect_is_planted_only_while_its_body_runs() {
        assert!(!planted(Defect::ThinMargin));
        with(Defect::ThinMargin, || {
            assert!(planted(Defect::ThinMargin));
            assert!(!planted(Defect::StopAtExpiry));
        });
        assert!(!planted(Defect::ThinMargin), "left planted after its body");
        let panicked =
            std::panic::catch_unwind(|| with(Defect::StopAtExpiry, || panic!("a body that fails")));
        assert!(panicked.is_err());
        assert!(!planted(Defect::StopAtExpiry), "left planted after a panic");
    }
}
