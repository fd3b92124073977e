//! Replicas started together: without --wait exactly one runs; with --wait
//! all run, one at a time, with strictly increasing tokens.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn five_waiting_replicas_all_run_one_at_a_time() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "0.3");
    let mut replicas: Vec<Replica> = (0..5)
        .map(|_| {
            Replica::spawn(
                leaderrun(&etcd.endpoint())
                    .args(["--name", "jobs/queue", "--wait", "--ttl", "5s", "--"])
                    .args(&job),
            )
        })
        .collect();
    for replica in &mut replicas {
        let (code, stderr) = replica.finish(Duration::from_secs(30));
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
    assert!(
        etcd.candidates("jobs/queue").is_empty(),
        "everyone resigned"
    );
}

#[test]
fn five_replicas_without_wait_exactly_one_runs() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "2");
    let mut replicas: Vec<Replica> = (0..5)
        .map(|_| {
            Replica::spawn(
                leaderrun(&etcd.endpoint())
                    .args(["--name", "jobs/once", "-v", "--"])
                    .args(&job),
            )
        })
        .collect();
    let mut codes = Vec::new();
    for replica in &mut replicas {
        let (code, stderr) = replica.finish(Duration::from_secs(30));
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
    let mut holder = Replica::spawn(leaderrun(&etcd.endpoint()).args([
        "--name",
        "jobs/held",
        "--",
        "sleep",
        "30",
    ]));
    await_condition(Duration::from_secs(10), "a leader", || {
        etcd.candidates("jobs/held").len() == 1
    });

    let done = run_within(
        leaderrun(&etcd.endpoint()).args(["--name", "jobs/held", "--", "true"]),
        Duration::from_secs(10),
    );
    assert_eq!(done.code, Some(75));
    assert!(
        done.stderr.is_empty(),
        "cron must stay quiet: {}",
        done.stderr
    );

    let done = run_within(
        leaderrun(&etcd.endpoint()).args([
            "--name",
            "jobs/held",
            "--conflict-exit-code",
            "0",
            "--",
            "true",
        ]),
        Duration::from_secs(10),
    );
    assert_eq!(done.code, Some(0));

    // --wait-timeout alone queues too, as `flock -w` does.
    for wait in [&["--wait"][..], &[]] {
        let done = run_within(
            leaderrun(&etcd.endpoint())
                .args(["--name", "jobs/held"])
                .args(wait)
                .args(["--wait-timeout", "500ms", "-v", "--", "true"]),
            Duration::from_secs(10),
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
