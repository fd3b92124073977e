//! The `--once-per` window's judgements, on plain values: whether a
//! window's marker agrees with the window a replica asks for, and whether
//! the last run's record shows a window of another length still open. The
//! run reads the marker and the record from etcd and the wall clock, and
//! passes in what they say (the clock as an age, measured by the run).

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
}
