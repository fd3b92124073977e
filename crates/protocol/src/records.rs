//! The run records' rule, on plain values: which records a run's end
//! writes, and when etcd lets each write land. The run carries the plan
//! out in its transactions (`election::record`), the model checker in its
//! modelled etcd: both take it from here.
//!
//! Every write is fenced by entitlement, not by token: with --max-running
//! above 1 runs finish in any order, and a record copied from another
//! cluster carries a token from another numbering. A run still
//! **entitled** (its key still its own, which the resignation's
//! transaction compares as it writes) writes `last-finished` and
//! `last-succeeded` unconditionally: it is the run that finishes now, so
//! it finished last. A run no longer entitled writes them only where
//! nothing was written since its win was proven. `last-started` is the run
//! whose win was proven last.

use crate::loss::Outcome;
use crate::planted::{planted, Defect};

/// Which of an election's records a write is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    Started,
    Finished,
    Succeeded,
}

/// When a record write is made, judged by etcd as it is made (the
/// module's rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guard {
    /// Unconditionally: a run still entitled, in the transaction whose
    /// comparison is the entitlement.
    Always,
    /// Only if the key was not written after this revision (the proof's).
    NotWrittenSince(i64),
    /// `last-started` of an entitled run: not written since the proof, or
    /// still our own start record, which was written at `ours`.
    NotWrittenSinceOr { proof: i64, ours: i64 },
    /// Unless a run that started later (a larger token of this cluster) is
    /// recorded there ([`keeps_later`]): a read, then a swap, so never in
    /// the resignation's transaction.
    NoLaterStart,
}

/// The end writes of a run whose win was proven at `proven_at`:
/// `entitled` in the transaction that deletes its key, else after its
/// lease is revoked. `started_at`: where its own start record was
/// written, if it was. `last-started` first. The model checker drives
/// this plan, and etcd's answers to it, as the run writes it.
pub fn end_plan(
    outcome: Outcome,
    entitled: bool,
    proven_at: i64,
    started_at: Option<i64>,
) -> Vec<(Which, Guard)> {
    let started = match (entitled, started_at) {
        (false, _) => Guard::NoLaterStart,
        (true, None) => Guard::NotWrittenSince(proven_at),
        (true, Some(ours)) => Guard::NotWrittenSinceOr {
            proof: proven_at,
            ours,
        },
    };
    let end = match entitled {
        _ if planted(Defect::FenceByToken) => Guard::NoLaterStart,
        true => Guard::Always,
        false => Guard::NotWrittenSince(proven_at),
    };
    let mut plan = vec![(Which::Started, started), (Which::Finished, end)];
    if outcome == Outcome::Succeeded {
        plan.push((Which::Succeeded, end));
    }
    plan
}

/// Whether a record of token `theirs`, found where a run of token `ours`
/// would write, is of a run that started later and stays: tokens order
/// the starts of one cluster's runs, and a token above the store's
/// revision `store` belongs to no run of this cluster.
pub fn keeps_later(theirs: Option<i64>, ours: i64, store: i64) -> bool {
    theirs.is_some_and(|theirs| theirs > ours && theirs <= store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_later_start_of_this_cluster_is_kept() {
        // Ours is token 10 in a store at revision 20.
        assert!(keeps_later(Some(11), 10, 20), "a later run's");
        assert!(keeps_later(Some(20), 10, 20), "the store's last write");
        assert!(!keeps_later(Some(10), 10, 20), "our own");
        assert!(!keeps_later(Some(9), 10, 20), "an earlier run's");
        assert!(!keeps_later(Some(21), 10, 20), "of another cluster");
        assert!(!keeps_later(None, 10, 20), "no record");
    }
}
