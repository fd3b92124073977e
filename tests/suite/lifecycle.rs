//! Signals, crashes and healthy long runs.

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

#[test]
fn sigterm_stops_the_child_and_a_waiting_replica_takes_over_at_once() {
    let ttl = Duration::from_secs(15);
    let etcd = Etcd::shared();
    let jobs_handover = unique("jobs/handover");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "60");
    let ttl_arg = seconds(ttl);
    let args = ["--name", &jobs_handover, "--wait", "--ttl", &ttl_arg, "--"];
    let mut first = Replica::spawn(leaderrun(&etcd.endpoint()).args(args).args(&job));
    await_condition(SOON, "the first run", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
            == 1
    });
    let mut second = Replica::spawn(leaderrun(&etcd.endpoint()).args(args).args(&job));
    await_condition(SOON, "the second replica queued", || {
        etcd.candidates(&jobs_handover).len() == 2
    });
    let signalled = Instant::now();
    send(first.pid(), Signal::SIGTERM);
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(
        code,
        Some(128 + 15),
        "the child's status: killed by TERM: {stderr}"
    );
    let took = await_condition(ttl, "the second run", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
            >= 2
    });
    let handover = active_since(signalled);
    eprintln!("takeover {handover:?} after SIGTERM (TTL {ttl:?}); waited {took:?}");
    // The first resigned: the second did not wait for its lease to expire,
    // which it renewed at most a third of the TTL before.
    assert!(
        handover < ttl / 2,
        "took over well inside the TTL: {handover:?}"
    );
    // Not before its `sleep` runs: `sh -c` (dash) catches SIGINT, and a
    // SIGINT to the group while it forks reaches neither the shell, which
    // waits on, nor the fork, whose inherited handler takes it (about one
    // try in fifteen, sent right after the line).
    await_condition(SOON, "the second run's sleep", || {
        descendant_runs(second.pid(), "sleep")
    });
    send(second.pid(), Signal::SIGINT);
    assert_eq!(second.finish(LIMIT).0, Some(128 + 2));
}

#[test]
fn sigkill_of_leaderrun_leaves_no_child_or_background_job() {
    let etcd = Etcd::shared();
    let jobs_crash = unique("jobs/crash");
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "sleep 100 & echo $! > '{d}/bg'; echo $$ > '{d}/sh'; sleep 100",
        d = dir.path().display()
    );
    let mut replica = lr(etcd).name(&jobs_crash).spawn(["sh", "-c", &script]);
    // job_pid: a replica that exits before its job starts fails at once,
    // with what it said, not as a 20 s wait for a pid file.
    let shell = replica.job_pid(&dir.path().join("sh"), SOON);
    let background = replica.job_pid(&dir.path().join("bg"), SOON);
    let mut strays = Strays::new();
    strays.add(background, "sleep 100");
    send(replica.pid(), Signal::SIGKILL);
    replica.finish(SOON);
    let took = await_condition(SOON, "child and background job gone", || {
        killed(shell) && killed(background)
    });
    eprintln!("family gone {took:?} after SIGKILL");
}

#[test]
fn a_healthy_leader_with_a_short_ttl_finishes_a_long_job() {
    let etcd = Etcd::shared();
    let jobs_long = unique("jobs/long");
    let done = lr(etcd)
        .name(&jobs_long)
        .ttl(Duration::from_secs(2))
        .run_within(["sleep", "10"], LIMIT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(done.stderr.is_empty(), "{}", done.stderr);
}

/// The first renewal is due a third of the TTL after the grant, as every
/// other is: a run shorter than that opens no keep-alive stream (opening
/// one sends a renewal, etcd's work on the way to running), and a longer
/// one opens it then and is renewed.
#[test]
fn a_run_shorter_than_a_third_of_the_ttl_opens_no_keep_alive_stream() {
    let etcd = Etcd::start();
    let streams = || etcd.handled("LeaseKeepAlive");
    let before = streams();
    let run = |command: &[&str]| {
        let done = run_within(
            leaderrun(&etcd.endpoint())
                .args(["--name", "jobs/renewed", "--ttl", "6s", "--"])
                .args(command),
            LIMIT,
        );
        assert_eq!(done.code, Some(0), "{}", done.stderr);
    };
    run(&["true"]);
    // Past a third of its TTL (renewals past the TTL itself are
    // a_healthy_leader_with_a_short_ttl_finishes_a_long_job's).
    run(&["sleep", "2.5"]);
    // etcd counts a stream once it ends, with its connection.
    await_condition(SOON, "the long run's stream to end", || streams() > before);
    assert_eq!(
        streams(),
        before + 1,
        "one keep-alive stream, the long run's"
    );
}
