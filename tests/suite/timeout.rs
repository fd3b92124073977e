//! `--timeout`: a limit on the command's run, counted from its start. Past
//! it, the whole job is stopped as on loss of leadership, leaderrun resigns
//! at once and exits 123, a code of its own (not `timeout(1)`'s 124, which
//! is leaderrun's "leadership lost").

use crate::common::*;
use std::time::Duration;

#[test]
fn a_command_past_its_timeout_is_stopped_and_leaves_no_key() {
    let etcd = Etcd::shared();
    let jobs_t = unique("jobs/t");
    let done = lr(etcd)
        .name(&jobs_t)
        .args(["--timeout", "1s"])
        .run_within(["sleep", "30"], Duration::from_secs(20));
    assert_eq!(done.code, Some(123), "{}", done.stderr);
    assert!(
        done.took >= Duration::from_secs(1) && done.took < Duration::from_secs(15),
        "about a second: {:?}",
        done.took
    );
    assert_one_line_mentioning(&done.stderr, "ran past --timeout 1s");
    await_resigned(etcd, &jobs_t, "resigned");
}

/// A job that ignores --kill-signal gets SIGKILL after --kill-after, as on
/// loss; a shell's background job goes with it. With -v, the SIGKILL is
/// said, and why.
#[test]
fn a_command_that_ignores_term_is_killed_after_kill_after() {
    let etcd = Etcd::shared();
    let jobs_t = unique("jobs/t");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(etcd)
        .name(&jobs_t)
        .verbose()
        .args(["--timeout", "1s", "--kill-after", "1s"])
        .spawn(ignores_term(&pidfile));
    let background = read_pid(&pidfile, Duration::from_secs(20));
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(123), "{stderr}");
    assert!(!alive(background), "the background job was killed too");
    assert!(
        stderr.contains("the command's job outlived the grace; SIGKILL"),
        "{stderr}"
    );
}

/// On a --timeout the lease is healthy, so the whole --kill-after is
/// given, kept alive past a TTL: it was cut to the bound that protects a
/// loss (under a second at a 6 s TTL), silently. The TTL leaves etcd 5 s
/// past a renewal's time to answer it before leadership is lost, which
/// would cut the grace: at a 3 s TTL, a shared etcd beside a model check
/// and two busy loops once left renewals unanswered for 2.25 s, and at 6 s
/// for 4.5 s.
#[test]
fn a_timeout_gives_the_whole_kill_after_while_the_lease_is_kept() {
    let etcd = Etcd::shared();
    let jobs_t_grace = unique("jobs/t-grace");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let began = std::time::Instant::now();
    let mut replica = lr(etcd)
        .name(&jobs_t_grace)
        .ttl(Duration::from_secs(10))
        .args(["--timeout", "1s", "--kill-after", "11s"])
        .spawn(ignores_term(&pidfile));
    let background = read_pid(&pidfile, Duration::from_secs(20));
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(123), "{stderr}");
    assert!(
        began.elapsed() >= Duration::from_secs(12),
        "SIGKILL came {:?} after the start, before --timeout 1s + --kill-after 11s (the machine stood still for {:?} meanwhile): {stderr}",
        began.elapsed(),
        stalls::stalled_between(began, std::time::Instant::now())
    );
    assert!(!alive(background), "the background job was killed too");
    assert!(!stderr.contains("SIGKILL before"), "{stderr}");
}

/// A kept stop waits out its grace asleep: renewals go on during it (here
/// every 2 s of a 6 s TTL), and each moves the grace's end, but none may
/// make the wait spin. Measured by the kernel's count of leaderrun's CPU
/// time over 4 s of the grace, with a renewal or two among them: it spun a
/// whole core from the first renewal on, when every fresh watch of the
/// lease took the renewals before it for news.
#[test]
fn a_kept_stop_waits_out_its_grace_asleep() {
    let etcd = Etcd::shared();
    let name = unique("jobs/t-asleep");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(etcd)
        .name(&name)
        .ttl(Duration::from_secs(6))
        .args(["--timeout", "1s", "--kill-after", "8s"])
        .spawn(ignores_term(&pidfile));
    read_pid(&pidfile, Duration::from_secs(20));
    // The stop begins a second after the start; measure well inside it.
    std::thread::sleep(Duration::from_millis(1500));
    assert_asleep_for(replica.pid(), Duration::from_secs(4), "a kept grace");
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(123), "{stderr}");
}

/// A job that ignores SIGTERM, led as `name` with a 3 s TTL, past its
/// --timeout of 1 s and into a --kill-after of 20 s: the replica, the
/// job's pid, and what `fault` (called then) returned.
fn past_timeout_in_grace<T>(
    etcd: &Etcd,
    name: &str,
    fault: impl FnOnce() -> T,
) -> (Replica, i32, T) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "trap '' TERM; echo $$ > '{}'; while :; do sleep 0.1; done",
        pidfile.display()
    );
    let replica = lr(etcd)
        .name(name)
        .ttl(Duration::from_secs(3))
        .args(["--timeout", "1s", "--kill-after", "20s"])
        .spawn(["sh", "-c", &script]);
    let job = read_pid(&pidfile, Duration::from_secs(20));
    await_condition(Duration::from_secs(20), "the timeout", || {
        replica.stderr_so_far().contains("ran past --timeout")
    });
    let done = fault();
    (replica, job, done)
}

/// Waits for `job` to be killed within ten seconds of `since`, then for
/// the replica's exit: 123, and its stderr.
fn killed_and_exited(mut replica: Replica, job: i32, since: std::time::Instant) -> String {
    // A loss's grace at a 3 s TTL is under half a second; the timeout's,
    // which it cuts, is 20 s.
    await_condition(SOON, "the job to be killed", || !alive(job));
    let took = active_since(since);
    assert!(
        took < Duration::from_secs(10),
        "the job outlived the loss by {took:?}"
    );
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(123), "{stderr}");
    assert!(
        stderr.contains("lost while the command was being stopped"),
        "{stderr}"
    );
    stderr
}

/// The key deleted during that whole --kill-after: leadership is lost, and
/// the next leader may start at once, so the grace is cut to the loss's.
/// The old job ran beside the new leader for the whole --kill-after.
#[test]
fn a_loss_during_a_timeouts_grace_cuts_it_to_the_losss() {
    let etcd = Etcd::shared();
    let jobs_t_lost = unique("jobs/t-lost");
    let (replica, job, deleted) = past_timeout_in_grace(etcd, &jobs_t_lost, || {
        let (key, _, _) = etcd.candidates(&jobs_t_lost)[0].clone();
        etcd.delete(&key);
        std::time::Instant::now()
    });
    killed_and_exited(replica, job, deleted);
}

/// etcd frozen during that whole --kill-after: its renewals go
/// unacknowledged, so the lease could expire long before the grace the
/// user asked for ends. The leadership is taken as lost a margin before it
/// could, the grace cut to the loss's, and the line says why, with what
/// the keeper last saw fail.
#[test]
fn a_frozen_etcd_during_a_timeouts_grace_cuts_it_to_the_losss() {
    let etcd = Etcd::start();
    let (replica, job, (frozen, since)) = past_timeout_in_grace(&etcd, "jobs/t-frozen", || {
        (etcd.freeze(), std::time::Instant::now())
    });
    let stderr = killed_and_exited(replica, job, since);
    drop(frozen);
    assert!(
        stderr.contains(": etcd has not acknowledged a lease renewal"),
        "{stderr}"
    );
    assert!(stderr.contains("the last renewal failed: "), "{stderr}");
}

/// The limit counts from the command's start: time spent queued with
/// --wait does not count (--wait-timeout bounds that).
#[test]
fn time_in_the_queue_does_not_count() {
    let etcd = Etcd::shared();
    let jobs_t = unique("jobs/t");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut leader = lr(etcd).name(&jobs_t).spawn(pid_job(&pidfile));
    let job = read_pid(&pidfile, Duration::from_secs(20));
    let mut waiter = lr(etcd)
        .name(&jobs_t)
        .wait()
        .args(["--timeout", "3s"])
        .spawn(["sleep", "1"]);
    await_condition(Duration::from_secs(20), "the waiter to queue", || {
        etcd.candidates(&jobs_t).len() == 2
    });
    // The point of the test: queued for longer than its --timeout.
    std::thread::sleep(Duration::from_secs(4));
    send(job, nix::sys::signal::Signal::SIGTERM);
    leader.finish(Duration::from_secs(20));
    let (code, stderr) = waiter.finish(Duration::from_secs(20));
    assert_eq!(code, Some(0), "{stderr}");
}

fn assert_one_line_mentioning(stderr: &str, mentions: &str) {
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("leaderrun: "), "{stderr}");
    assert!(stderr.contains(mentions), "{stderr}");
}

/// A job that ignores SIGTERM, with a background job whose pid it writes
/// to `pidfile`: only SIGKILL ends it.
fn ignores_term(pidfile: &std::path::Path) -> Vec<String> {
    let script = format!(
        "trap '' TERM; sleep 1000 & echo $! > '{}'; wait",
        pidfile.display()
    );
    vec!["sh".into(), "-c".into(), script]
}
