//! Leadership lost behind leaderrun's back: the child's whole group dies
//! promptly and leaderrun exits 124.

use crate::common::*;
use std::path::Path;
use std::time::Duration;

/// A shell with two background jobs; all three write their pids.
fn family(dir: &Path) -> Vec<String> {
    let script = format!(
        "sleep 100 & echo $! > '{d}/bg1'; sleep 100 & echo $! > '{d}/bg2'; echo $$ > '{d}/sh'; wait",
        d = dir.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

fn family_pids(dir: &Path) -> Vec<i32> {
    ["sh", "bg1", "bg2"]
        .iter()
        .map(|file| read_pid(&dir.join(file), SOON))
        .collect()
}

fn lose_leadership(how: impl FnOnce(&Etcd, &(String, i64, i64))) {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", "jobs/loss", "--kill-after", "5s", "--"])
            .args(family(dir.path())),
    );
    let pids = family_pids(dir.path());
    assert!(pids.iter().all(|pid| alive(*pid)));
    let candidates = etcd.candidates("jobs/loss");
    how(&etcd, &candidates[0]);
    let took = await_condition(SOON, "the child's group to die", || {
        pids.iter().all(|pid| !alive(*pid))
    });
    eprintln!("group gone {took:?} after the loss");
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    assert!(stderr.contains("leadership of jobs/loss lost"), "{stderr}");
}

#[test]
fn revoked_lease_kills_the_child_and_its_background_jobs() {
    lose_leadership(|etcd, (_, _, lease)| etcd.revoke(*lease));
}

#[test]
fn deleted_leader_key_kills_the_child_and_its_background_jobs() {
    lose_leadership(|etcd, (key, _, _)| etcd.delete(key));
}

/// `leaderrun` (as `lr` has it) over a job that ignores SIGTERM, and the
/// job's pid.
fn stubborn(lr: Lr) -> (Replica, i32) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "trap '' TERM; echo $$ > '{}'; while :; do sleep 0.1; done",
        pidfile.display()
    );
    let replica = lr.spawn(["sh", "-c", &script]);
    (replica, read_pid(&pidfile, SOON))
}

#[test]
fn a_child_ignoring_the_stop_signal_is_killed_after_the_grace() {
    let etcd = Etcd::shared();
    let jobs_stubborn = unique("jobs/stubborn");
    let (mut replica, pid) = stubborn(
        lr(etcd)
            .name(&jobs_stubborn)
            .args(["--kill-after", "300ms"]),
    );
    let (_, _, lease) = etcd.candidates(&jobs_stubborn)[0];
    etcd.revoke(lease);
    await_condition(SOON, "SIGKILL after the grace", || !alive(pid));
    assert_eq!(replica.finish(LIMIT).0, Some(124));
}

/// A loss's grace, with the lease's keeper gone (it ends when etcd says the
/// lease is gone), is waited out asleep. The lease is revoked just before
/// a renewal is due (here every 4 s of a 12 s TTL, a grace of 1.8 s), so
/// that the keeper hears of it within the grace, whichever of it and the
/// key's watch tells the loss first. The grace's wait, still listening
/// for renewals from a keeper that was gone, spun a whole core until
/// SIGKILL. Measured by the kernel's count of leaderrun's CPU time over
/// a second inside the grace.
#[test]
fn a_loss_waits_out_its_grace_asleep_once_the_keeper_is_gone() {
    let ttl = Duration::from_secs(12);
    let etcd = Etcd::shared();
    let name = unique("jobs/loss-asleep");
    let (mut replica, pid) = stubborn(
        lr(etcd)
            .name(&name)
            .ttl(ttl)
            .debug_json()
            .args(["--kill-after", "10s"]),
    );
    let (_, _, lease) = etcd.candidates(&name)[0];
    let sent = replica.renewal_acknowledged(ttl) - ttl;
    let next = sent + ttl / 3;
    std::thread::sleep(
        next.saturating_duration_since(std::time::Instant::now())
            .saturating_sub(Duration::from_millis(200)),
    );
    etcd.revoke(lease);
    std::thread::sleep(Duration::from_millis(600));
    assert_asleep_for(replica.pid(), Duration::from_secs(1), "a loss's grace");
    await_condition(SOON, "SIGKILL after the grace", || !alive(pid));
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
}

#[test]
fn leftovers_of_a_finished_child_are_stopped_before_resigning() {
    let etcd = Etcd::shared();
    let jobs_leftover = unique("jobs/leftover");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("bg");
    let script = format!("sleep 100 & echo $! > '{}'", pidfile.display());
    let done = lr(etcd)
        .name(&jobs_leftover)
        .run_within(["sh", "-c", &script], Duration::from_secs(20));
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let pid = read_pid(&pidfile, Duration::from_secs(1));
    assert!(!alive(pid), "the background job outlived the run");
}
