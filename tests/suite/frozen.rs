//! Deadlines hold while etcd is frozen (SIGSTOPped: connections stay open
//! and nothing answers): a signal, --wait-timeout, and the end of a run all
//! end leaderrun on time, without waiting for etcd to answer a last
//! request.

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// The dial timeout of the replicas signalled while etcd is frozen: a
/// replica that waited for etcd to answer a last request would exit no
/// sooner than this, one that does not wait within a fraction of it.
const DIAL_TIMEOUT: Duration = Duration::from_secs(8);

/// --dial-timeout for [`DIAL_TIMEOUT`].
fn dial_timeout() -> [String; 2] {
    ["--dial-timeout".into(), seconds(DIAL_TIMEOUT)]
}

#[test]
fn sigint_to_a_queued_replica_exits_at_once() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let name = "jobs/frozen-queued";
    let (_leader, _) = pid_job_leader(&etcd, name, dir.path());
    let mut waiter = lr(&etcd)
        .name(name)
        .wait()
        .args(dial_timeout())
        .spawn(["true"]);
    await_condition(SOON, "the waiter queued", || {
        etcd.candidates(name).len() == 2
    });

    let _frozen = etcd.freeze();
    let signalled = Instant::now();
    send(waiter.pid(), Signal::SIGINT);
    let (code, stderr) = waiter.finish(Duration::from_secs(20));
    let took = active_since(signalled);
    eprintln!("exited {took:?} after SIGINT (dial timeout {DIAL_TIMEOUT:?})");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < DIAL_TIMEOUT / 2, "{took:?}: {stderr}");
}

#[test]
fn the_wait_timeout_holds() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let name = "jobs/frozen-timeout";
    let (_leader, _) = pid_job_leader(&etcd, name, dir.path());
    let wait_timeout = Duration::from_secs(6);
    let started = Instant::now();
    let mut waiter = lr(&etcd)
        .debug_json()
        .name(name)
        .wait()
        .args(["--wait-timeout", &seconds(wait_timeout)])
        .args(dial_timeout())
        .spawn(["true"]);
    // Queued, and frozen, well before the timeout. Queued as the waiter
    // sees it: its key in etcd is not enough, as etcd may write it before
    // it answers, and a freeze in between leaves the waiter without its
    // first look at the queue, which --wait-timeout waits for.
    waiter.await_watching(wait_timeout * 3 / 4);

    let _frozen = etcd.freeze();
    let (code, stderr) = waiter.finish(LIMIT);
    // Not before it, by leaderrun's clock, which counts stalls; late by
    // less than half the dial timeout, of the machine's running time.
    let (took, active) = (started.elapsed(), active_since(started));
    eprintln!("exited {took:?} after it started waiting");
    assert_eq!(code, Some(75), "{stderr}");
    assert!(
        took >= wait_timeout && active < wait_timeout + DIAL_TIMEOUT / 2,
        "--wait-timeout {wait_timeout:?}, exited after {took:?} ({active:?} running): {stderr}"
    );
}

#[test]
fn sigterm_to_a_running_leader_ends_the_run_at_once() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child");
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["-vv", "--name", "jobs/frozen-term", "--ttl", "30s"])
            .args(dial_timeout())
            .arg("--")
            .args(pid_job(&pidfile)),
    );
    let child = read_pid(&pidfile, SOON);

    let _frozen = etcd.freeze();
    let signalled = Instant::now();
    send(replica.pid(), Signal::SIGTERM);
    let (code, stderr) = replica.finish(Duration::from_secs(20));
    let took = active_since(signalled);
    eprintln!("exited {took:?} after SIGTERM (dial timeout {DIAL_TIMEOUT:?})");
    assert!(!alive(child), "the command outlived leaderrun");
    assert_eq!(code, Some(143), "{stderr}");
    assert!(took < DIAL_TIMEOUT / 2, "{took:?}: {stderr}");
    // One bound for the whole way out: after the resignation went
    // unanswered, the revocation and the records did not each wait theirs
    // (the three took 1.5 s).
    assert!(stderr.contains("giving back: not done within"), "{stderr}");
    assert!(
        !stderr.contains("recording the run's end: no answer"),
        "{stderr}"
    );
}

/// A grant counts from when it was sent, as the local deadline does: one
/// answered late (etcd frozen for half the TTL) is renewed at once, not a
/// third of the TTL after its answer, which would be past the point where
/// the run must start stopping (a quarter of the TTL before its end).
#[test]
fn a_grant_answered_late_is_renewed_at_once() {
    let etcd = Etcd::start();
    let frozen = etcd.freeze();
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", "jobs/frozen-grant", "--ttl", "6s"])
            .args(dial_timeout())
            .args(["--", "sleep", "4"]),
    );
    // The fault: etcd answers nothing for half the TTL.
    std::thread::sleep(Duration::from_secs(3));
    frozen.thaw();
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
}
