//! Replicas started together: without --wait exactly one runs; with --wait
//! all run, one at a time, with strictly increasing tokens.

use crate::common::*;
use std::time::Duration;

#[test]
fn five_waiting_replicas_all_run_one_at_a_time() {
    let etcd = Etcd::shared();
    let jobs_queue = unique("jobs/queue");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "0.3");
    let mut replicas: Vec<Replica> = (0..5)
        .map(|_| {
            lr(etcd)
                .name(&jobs_queue)
                .wait()
                .ttl(Duration::from_secs(5))
                .spawn(&job)
        })
        .collect();
    for replica in &mut replicas {
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
    let runs = intervals(&log);
    assert_eq!(runs.len(), 5, "every replica ran once: {runs:?}");
    for pair in runs.windows(2) {
        assert!(pair[0].end <= pair[1].start, "runs overlap: {pair:?}");
        assert!(
            pair[0].token < pair[1].token,
            "tokens must increase: {pair:?}"
        );
    }
    await_resigned(etcd, &jobs_queue, "everyone resigned");
}

#[test]
fn five_replicas_without_wait_exactly_one_runs() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "2");
    let mut replicas: Vec<Replica> = (0..5)
        .map(|_| lr(&etcd).name("jobs/once").verbose().spawn(&job))
        .collect();
    let mut codes = Vec::new();
    for replica in &mut replicas {
        let (code, stderr) = replica.finish(LIMIT);
        if code == Some(75) {
            assert!(
                stderr.contains("not running: jobs/once is held by pid"),
                "{stderr}"
            );
        }
        codes.push(code);
    }
    let runs = intervals(&log);
    assert_eq!(runs.len(), 1, "exactly one ran: {runs:?} {codes:?}");
    assert_eq!(
        codes.iter().filter(|code| **code == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|code| **code == Some(75)).count(),
        4,
        "{codes:?}"
    );
}

#[test]
fn conflict_is_quiet_without_a_terminal_and_its_code_can_be_chosen() {
    let etcd = Etcd::start();
    let mut holder = lr(&etcd).name("jobs/held").spawn(["sleep", "30"]);
    await_condition(SOON, "a leader", || etcd.candidates("jobs/held").len() == 1);

    let done = lr(&etcd).name("jobs/held").run_within(["true"], SOON);
    assert_eq!(done.code, Some(75));
    assert!(
        done.stderr.is_empty(),
        "cron must stay quiet: {}",
        done.stderr
    );

    let done = lr(&etcd)
        .name("jobs/held")
        .args(["--conflict-exit-code", "0"])
        .run_within(["true"], SOON);
    assert_eq!(done.code, Some(0));

    // --wait-timeout alone queues too, as `flock -w` does.
    for wait in [&["--wait"][..], &[]] {
        let done = run_within(
            leaderrun(&etcd.endpoint())
                .args(["--name", "jobs/held"])
                .args(wait)
                .args(["--wait-timeout", "500ms", "-v", "--", "true"]),
            SOON,
        );
        assert_eq!(done.code, Some(75), "{wait:?}: {}", done.stderr);
        assert!(
            done.stderr.contains("not running after waiting"),
            "{wait:?}: {}",
            done.stderr
        );
        assert_eq!(
            etcd.candidates("jobs/held").len(),
            1,
            "{wait:?}: the timed-out waiter left the queue"
        );
    }
    drop(holder.process.kill());
}

/// The job's own large values under the election's prefix (README's
/// one-election role leaves it no other place): the reads in line order
/// fetched the values of the keys they skip, and the answer passed the
/// client's 4 MiB limit, so every run, `--wait` and `status` exited 125
/// with "etcd ... refused", though etcd refused nothing.
#[test]
fn large_values_under_the_prefix_do_not_break_the_election() {
    let etcd = Etcd::start();
    let name = "jobs/big";
    let value = "x".repeat(1_200_000);
    for index in 0..4 {
        etcd.put(&format!("{name}/data-{index}"), &value, 0);
    }
    let limit = LIMIT;
    for slots in ["1", "2"] {
        let done = lr(&etcd)
            .name(name)
            .args(["--max-running", slots])
            .run_within(["true"], limit);
        assert_eq!(done.code, Some(0), "--max-running {slots}: {}", done.stderr);
    }
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("go");
    let mut leader = lr(&etcd)
        .name(name)
        .spawn(["sh", "-c", &until_exists(&flag)]);
    await_condition(limit, "a leader", || etcd.candidates(name).len() == 5);
    let mut waiter = lr(&etcd).name(name).wait().spawn(["true"]);
    await_condition(limit, "a waiter", || etcd.candidates(name).len() == 6);
    let status = lr(&etcd).status().name(name).finish_within(limit);
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    assert!(
        status.stdout.contains("\nwaiting:  1\n"),
        "{}",
        status.stdout
    );
    let all = run_within(
        leaderrun(&etcd.endpoint()).args(["status", "--all", "--prefix", "jobs/", "--json"]),
        limit,
    );
    assert_eq!(all.code, Some(0), "{}", all.stderr);
    std::fs::write(&flag, "").unwrap();
    for replica in [&mut leader, &mut waiter] {
        let (code, stderr) = replica.finish(limit);
        assert_eq!(code, Some(0), "{stderr}");
    }
}
