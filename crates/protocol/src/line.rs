//! The rules of the line, on plain values: whether a key we hold is still
//! ours, whether a place in line runs, and who runs. The run applies them
//! to what etcd answered (`election`); the model checker to its modelled
//! etcd; `status` and `explain` to the line they read.

use crate::loss::KeyLoss;
use crate::planted::{planted, Defect};

/// What a key we hold has become, judged from its latest version as
/// (create revision, lease), or None if it is deleted: still ours (None),
/// or lost and how. A plain `put` keeps the create revision and drops or
/// changes the lease, so both are compared.
pub fn judge_version(version: Option<(i64, i64)>, token: i64, lease: i64) -> Option<KeyLoss> {
    match version {
        None => Some(KeyLoss::Deleted),
        Some((created, _)) if created != token => Some(KeyLoss::Replaced),
        Some((_, attached)) if attached != lease => Some(KeyLoss::Overwritten),
        Some(_) => None,
    }
}

/// The proof rule's count: a key with `ahead` candidates ahead of it in
/// line (at the revision it was read at, itself intact) is among the first
/// `slots` (--max-running), and runs. Every candidate ahead counts, another
/// tool's too: it holds its place, and running beside it could make one
/// more than the slots allow.
pub fn among_first(ahead: usize, slots: usize) -> bool {
    ahead < slots || planted(Defect::SpawnUnproven)
}

/// Of a line (candidates in line order), those that run now, as `status`
/// shows them: the first `slots`, but for another tool's candidate behind
/// the first (`other_tool`), which waits for etcd's own election to elect
/// it (that elects only the first key). It still counts as one ahead for
/// [`among_first`]: a place that waits is not a slot free.
pub fn running<T>(
    line: impl IntoIterator<Item = T>,
    slots: usize,
    other_tool: impl Fn(&T) -> bool,
) -> Vec<T> {
    line.into_iter()
        .take(slots)
        .enumerate()
        .filter(|(place, candidate)| *place == 0 || !other_tool(candidate))
        .map(|(_, candidate)| candidate)
        .collect()
}

/// Whom a resignation hands over to: of the candidates behind ours (in
/// line order), the first, if it takes a handover (a leaderrun of one
/// runner, which watches its own key for one; another tool's candidate
/// watches only the key ahead of it, and is never handed over to).
/// Nobody behind the first is: the handover proves the turn of the one
/// just behind our key.
pub fn successor<T>(
    behind: impl IntoIterator<Item = T>,
    takes_handover: impl Fn(&T) -> bool,
) -> Option<T> {
    behind.into_iter().next().filter(takes_handover)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_ours_while_created_at_our_token_on_our_lease() {
        assert_eq!(judge_version(Some((5, 9)), 5, 9), None);
        assert_eq!(judge_version(None, 5, 9), Some(KeyLoss::Deleted));
        assert_eq!(judge_version(Some((6, 9)), 5, 9), Some(KeyLoss::Replaced));
        assert_eq!(
            judge_version(Some((5, 0)), 5, 9),
            Some(KeyLoss::Overwritten)
        );
    }

    #[test]
    fn a_place_runs_while_fewer_than_the_slots_are_ahead() {
        assert!(among_first(0, 1));
        assert!(!among_first(1, 1));
        assert!(among_first(2, 3));
        assert!(!among_first(3, 3));
    }

    #[test]
    fn a_handover_goes_to_the_one_just_behind_or_to_nobody() {
        // (token, takes a handover)
        let takes = |(_, takes): &(i64, bool)| *takes;
        assert_eq!(successor([(5, true), (6, true)], takes), Some((5, true)));
        assert_eq!(successor([(5, false), (6, true)], takes), None);
        assert_eq!(successor(Vec::<(i64, bool)>::new(), takes), None);
    }

    #[test]
    fn another_tool_s_candidate_behind_the_first_waits() {
        // (token, another tool's)
        let line = [(1, false), (2, true), (3, false), (4, false)];
        let run = |slots| -> Vec<i64> {
            running(line, slots, |(_, other)| *other)
                .into_iter()
                .map(|(token, _)| token)
                .collect()
        };
        assert_eq!(run(1), [1]);
        assert_eq!(run(3), [1, 3]);
        let first = [(7, true), (8, false)];
        assert_eq!(running(first, 2, |(_, other)| *other).len(), 2);
    }
}
