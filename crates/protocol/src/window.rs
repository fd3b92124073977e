//! The `--once-per` window's judgements, on plain values: whether a
//! window's marker agrees with the window a replica asks for, whether the
//! last run's record shows a window of another length still open, and
//! what the window's attempts leave of it ([`judge`]). The run and
//! `status` read the marker and the records from etcd and the wall clock,
//! and pass in what they say (the clock as an age, measured by the run).

use std::time::Duration;

use crate::loss::Outcome;

/// Whether a marker that says its window is `theirs` seconds long (None:
/// a marker of a version that did not say) agrees with ours, `ours`
/// seconds. Replicas that disagree on the window would each get the
/// length of whoever fires first: the run refuses rather than guess.
pub fn agrees(theirs: Option<u64>, ours: u64) -> bool {
    match theirs {
        Some(theirs) => theirs == ours,
        None => true,
    }
}

/// Of the last run's record, the length of the window it opened if that
/// window is another length than ours (`ours`, in whole seconds, measured
/// as `window`) and is still open by our clock: the run began `age` ago
/// (None: its start cannot be read). The marker of a replica with a
/// shorter --once-per expires first, and one with a longer window would
/// then run the job again in silence: its window is taken as open. A run
/// that never started opened no window, and a run with no --once-per
/// (`opened`: None) counts for none.
pub fn other_window_open(
    outcome: Outcome,
    opened: Option<u64>,
    age: Option<Duration>,
    ours: u64,
    window: Duration,
) -> Option<u64> {
    let started = match outcome {
        Outcome::NotStarted => false,
        Outcome::Running
        | Outcome::Succeeded
        | Outcome::Failed
        | Outcome::Signalled
        | Outcome::Lost
        | Outcome::TimedOut => true,
    };
    let theirs = opened.filter(|theirs| started && *theirs != ours)?;
    (age? < window).then_some(theirs)
}

/// Where one attempt of a window stands, as the window's marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptState {
    /// Its run claimed the window; its command had not started as it
    /// last wrote.
    Claimed,
    /// Its command started and had not ended as its run last wrote.
    Running,
    /// Its run ended so.
    Ended(Outcome),
}

/// One attempt, with what etcd says of its run beside the marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub state: AttemptState,
    /// Its run no longer holds the election: its candidate key is gone.
    pub run_gone: bool,
    /// The run records say its command started (`last-started` holds its
    /// token, started): what tells a run that started, but was killed
    /// before it could say so in the marker, from one that never started.
    pub start_recorded: bool,
}

/// What a window's attempts leave of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Another run may try: `counted` attempts started so far, each of
    /// them failed.
    Open { counted: u32 },
    /// An attempt's run still holds the election and has not ended.
    UnderWay,
    /// An attempt succeeded: the window is spent.
    Succeeded,
    /// `counted` attempts started, as many as the window allows (with one,
    /// the default, its first start spends it), and none succeeded.
    Spent { counted: u32 },
}

/// Whether a run may add its attempt to a window its marker judged so:
/// only an open one, and only if the marker is on a lease (`leased`): one
/// with none never closes (written by hand, or copied by `etcdctl
/// make-mirror`), and a run that claimed it would keep every later run
/// out for ever.
pub fn claimable(verdict: Verdict, leased: bool) -> bool {
    leased && matches!(verdict, Verdict::Open { .. })
}

/// Whether a replica of `runners` runners (`--max-running`) may take part
/// in a window that allows `attempts`: several attempts take one runner at
/// a time, each after the last failed; runners side by side would each
/// find the others' attempts under way and leave, the window open and
/// nobody to try it.
pub fn runners_fit(attempts: u32, runners: usize) -> bool {
    attempts <= 1 || runners <= 1
}

/// Whether an attempt counts: its command started. A run that never
/// started its command (killed before it could, or the command could not
/// be started) spent nothing; one whose command started counts however it
/// ended, also one whose leaderrun was killed before it could write its
/// end (its run gone with the attempt still `Running`).
pub fn counts(attempt: Attempt) -> bool {
    match attempt.state {
        AttemptState::Claimed => attempt.run_gone && attempt.start_recorded,
        AttemptState::Running => attempt.run_gone,
        AttemptState::Ended(Outcome::NotStarted) => false,
        AttemptState::Ended(_) => true,
    }
}

/// What `attempts` leave of a window that allows `allowed` of them
/// (`--once-per-attempts`, as the run that opened the window gave it).
pub fn judge(attempts: &[Attempt], allowed: u32) -> Verdict {
    let under_way = |attempt: &Attempt| {
        !attempt.run_gone && matches!(attempt.state, AttemptState::Claimed | AttemptState::Running)
    };
    if attempts.iter().any(under_way) {
        return Verdict::UnderWay;
    }
    let succeeded = |attempt: &Attempt| attempt.state == AttemptState::Ended(Outcome::Succeeded);
    if attempts.iter().any(succeeded) {
        return Verdict::Succeeded;
    }
    let counted = attempts.iter().filter(|attempt| counts(**attempt)).count();
    let counted = u32::try_from(counted).unwrap_or(u32::MAX);
    if counted >= allowed.max(1) {
        Verdict::Spent { counted }
    } else {
        Verdict::Open { counted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn a_marker_agrees_when_it_says_our_length_or_nothing() {
        assert!(agrees(Some(60), 60));
        assert!(agrees(None, 60), "a 0.1.0 marker");
        assert!(!agrees(Some(61), 60));
    }

    #[test]
    fn another_length_s_window_is_open_while_its_run_began_within_ours() {
        let open = |outcome, opened, age| other_window_open(outcome, opened, age, 3600, HOUR);
        let minute = Some(Duration::from_secs(60));
        assert_eq!(open(Outcome::Succeeded, Some(60), minute), Some(60));
        assert_eq!(open(Outcome::Succeeded, Some(3600), minute), None, "ours");
        assert_eq!(open(Outcome::Succeeded, None, minute), None, "no window");
        assert_eq!(open(Outcome::NotStarted, Some(60), minute), None);
        assert_eq!(open(Outcome::Failed, Some(60), Some(HOUR)), None, "closed");
        assert_eq!(open(Outcome::Failed, Some(60), None), None, "unreadable");
    }

    fn gone(state: AttemptState) -> Attempt {
        Attempt {
            state,
            run_gone: true,
            start_recorded: false,
        }
    }

    #[test]
    fn only_a_success_spends_a_window_of_several_attempts() {
        let failed = gone(AttemptState::Ended(Outcome::Failed));
        let lost = gone(AttemptState::Ended(Outcome::Lost));
        assert_eq!(judge(&[], 3), Verdict::Open { counted: 0 });
        assert_eq!(judge(&[failed], 3), Verdict::Open { counted: 1 });
        assert_eq!(judge(&[failed, lost], 3), Verdict::Open { counted: 2 });
        assert_eq!(
            judge(&[failed, lost, failed], 3),
            Verdict::Spent { counted: 3 }
        );
        let succeeded = gone(AttemptState::Ended(Outcome::Succeeded));
        assert_eq!(judge(&[failed, succeeded], 3), Verdict::Succeeded);
        // One attempt, the default: the first start spends the window.
        assert_eq!(judge(&[failed], 1), Verdict::Spent { counted: 1 });
        assert_eq!(judge(&[failed], 0), Verdict::Spent { counted: 1 });
    }

    #[test]
    fn a_run_that_never_started_spends_nothing() {
        // Killed between its claim and its command's start: its key gone,
        // the marker still says claimed, and no start recorded.
        let claimed = gone(AttemptState::Claimed);
        assert!(!counts(claimed));
        assert_eq!(judge(&[claimed], 1), Verdict::Open { counted: 0 });
        let spawn_failed = gone(AttemptState::Ended(Outcome::NotStarted));
        assert_eq!(
            judge(&[claimed, spawn_failed], 1),
            Verdict::Open { counted: 0 }
        );
        // Killed just after its start, before the marker said so: the
        // start record says it started.
        let started = Attempt {
            start_recorded: true,
            ..claimed
        };
        assert_eq!(judge(&[started], 1), Verdict::Spent { counted: 1 });
        // Killed while its command ran: it counts, as a failure.
        let vanished = gone(AttemptState::Running);
        assert_eq!(judge(&[vanished], 2), Verdict::Open { counted: 1 });
    }

    #[test]
    fn a_run_still_holding_the_election_is_under_way() {
        for state in [AttemptState::Claimed, AttemptState::Running] {
            let live = Attempt {
                state,
                run_gone: false,
                start_recorded: false,
            };
            let failed = gone(AttemptState::Ended(Outcome::Failed));
            assert_eq!(judge(&[failed, live], 3), Verdict::UnderWay);
        }
        // An ended attempt is over whoever holds the election.
        let ended = Attempt {
            state: AttemptState::Ended(Outcome::Failed),
            run_gone: false,
            start_recorded: true,
        };
        assert_eq!(judge(&[ended], 2), Verdict::Open { counted: 1 });
    }

    #[test]
    fn only_an_open_leased_window_takes_an_attempt_and_only_one_runner_several() {
        assert!(claimable(Verdict::Open { counted: 1 }, true));
        assert!(!claimable(Verdict::Open { counted: 0 }, false), "no lease");
        assert!(!claimable(Verdict::UnderWay, true));
        assert!(!claimable(Verdict::Succeeded, true));
        assert!(!claimable(Verdict::Spent { counted: 1 }, true));
        assert!(runners_fit(1, 3) && runners_fit(3, 1) && runners_fit(1, 1));
        assert!(!runners_fit(2, 2));
    }
}
