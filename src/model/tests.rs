//! The checks CI runs, and the planted defects each caught.

use super::*;
use crate::planted::{with, Defect};

const WAIT: &[bool] = &[true];

fn bounds(replicas: usize, slots: usize, faults: u8) -> Bounds {
    Bounds {
        replicas,
        slots,
        wait: WAIT,
        faults,
    }
}

fn holds(what: &str, bounds: Bounds) {
    match check(bounds) {
        Ok(explored) => tell(what, &explored),
        Err(failure) => panic!(
            "{what}: {}\n{}",
            failure.property,
            failure.trace.join("\n")
        ),
    }
}

#[test]
fn one_runner_of_two_replicas_holds_under_faults() {
    holds("--max-running 1, 2 replicas", bounds(2, 1, depth()));
}

#[test]
fn two_runners_of_three_replicas_hold_under_faults() {
    holds("--max-running 2, 3 replicas", bounds(3, 2, depth()));
}

#[test]
fn replicas_without_wait_hold_under_faults() {
    let bounds = Bounds {
        wait: &[true, false],
        ..bounds(2, 1, depth())
    };
    holds("--max-running 1, one replica without --wait", bounds);
}

/// The checker, with `defect` planted, breaks `property` (its name's
/// start), and shows how.
fn caught(defect: Defect, bounds: Bounds, property: &str) {
    let failure = with(defect, || check(bounds)).expect_err("the defect goes unseen");
    let trace = failure.trace.join("\n");
    let _ = writeln!(std::io::stderr(), "{defect:?} caught:\n{trace}");
    assert!(
        failure.property.starts_with(property),
        "{defect:?}: expected {property}, found {}\n{trace}",
        failure.property
    );
    assert!(trace.contains("spawns its command"), "{trace}");
}

#[test]
fn spawning_before_the_win_is_proven_is_caught() {
    caught(Defect::SpawnUnproven, bounds(2, 1, 0), "exclusion");
}

#[test]
fn skipping_the_local_deadline_is_caught() {
    caught(Defect::SkipLocalDeadline, bounds(2, 1, 1), "lease");
}

#[test]
fn resigning_before_the_job_is_dead_is_caught() {
    caught(Defect::ResignBeforeDead, bounds(2, 1, 1), "exclusion");
}

#[test]
fn fencing_records_by_token_with_two_runners_is_caught() {
    caught(Defect::FenceByToken, bounds(2, 2, 0), "records");
}
