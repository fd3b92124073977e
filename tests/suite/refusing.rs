//! A waiter that lost its place while etcd refuses new leases ("database
//! space exceeded", the NOSPACE alarm) says so once, keeps to
//! --wait-timeout and still answers signals while it retries.

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

const REFUSAL: &str = "database space exceeded";

/// A leader of `name`, and a waiter with `extra` options queued behind it
/// (spawned at the returned instant). Then etcd starts refusing leases, and
/// the waiter's lease is revoked: it has lost its place and must get a new
/// lease. Returns once it is seen retrying.
fn waiter_refused_a_new_lease(
    etcd: &Etcd,
    name: &str,
    extra: &[&str],
    dir: &std::path::Path,
) -> (Replica, Replica, Instant) {
    let (leader, _) = pid_job_leader(etcd, name, dir);
    let started = Instant::now();
    // A short TTL: the waiter hears of its revoked lease within a second.
    let waiter = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", name, "--wait", "--ttl", "3s"])
            .args(extra)
            .args(["--", "true"]),
    );
    await_condition(SOON, "the waiter queued", || {
        etcd.candidates(name).len() == 2
    });

    etcd.raise_nospace_alarm();
    let refused = etcd.grant(5);
    assert!(
        refused.as_ref().is_err_and(|err| err.contains(REFUSAL)),
        "etcd should refuse leases now: {refused:?}"
    );
    let (_, _, lease) = etcd.candidates(name)[1];
    etcd.revoke(lease);
    // Said once, without -v: a replica retrying in silence for hours
    // looks healthy.
    await_condition(SOON, "the waiter to say etcd is full", || {
        waiter.stderr_so_far().contains("NOSPACE alarm is raised")
    });
    (leader, waiter, started)
}

#[test]
fn the_wait_timeout_holds_while_leases_are_refused() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let wait_timeout = Duration::from_secs(8);
    let (_leader, mut waiter, started) = waiter_refused_a_new_lease(
        &etcd,
        "jobs/refused-timeout",
        &["--wait-timeout", &seconds(wait_timeout)],
        dir.path(),
    );
    let (code, stderr) = waiter.finish(wait_timeout * 2);
    let (took, active) = (started.elapsed(), active_since(started));
    eprintln!("exited {took:?} after it started waiting");
    assert_eq!(code, Some(75), "{stderr}");
    assert_eq!(
        stderr.matches("NOSPACE alarm is raised").count(),
        1,
        "said once, over several retries: {stderr}"
    );
    // Late by less than one of leaderrun's 2 s retry pauses: the timeout
    // cuts a pause short rather than waiting it out.
    assert!(
        took >= wait_timeout && active < wait_timeout + Duration::from_millis(1500),
        "--wait-timeout {wait_timeout:?}, exited after {took:?} ({active:?} running): {stderr}"
    );
}

#[test]
fn sigterm_ends_a_waiter_retrying_a_refused_lease() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let (_leader, mut waiter, _) =
        waiter_refused_a_new_lease(&etcd, "jobs/refused-term", &[], dir.path());
    let signalled = Instant::now();
    send(waiter.pid(), Signal::SIGTERM);
    let (code, stderr) = waiter.finish(Duration::from_secs(15));
    let took = active_since(signalled);
    eprintln!("exited {took:?} after SIGTERM");
    assert_eq!(code, Some(143), "{stderr}");
    assert!(took < Duration::from_secs(2), "{took:?}: {stderr}");
}
