//! The binary is replaced while a replica waits (a package upgrade renames
//! a new file over it): the waiter still runs its command when its turn
//! comes, with everything it needs to supervise it.

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::Duration;

#[test]
fn a_waiter_runs_its_command_after_its_binary_was_replaced() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("leaderrun");
    std::fs::copy(env!("CARGO_BIN_EXE_leaderrun"), &installed).unwrap();

    let pidfile = dir.path().join("leader");
    let mut leader = lr(&etcd).name("jobs/upgrade").spawn(pid_job(&pidfile));
    read_pid(&pidfile, SOON);
    let ran = dir.path().join("ran");
    let script = format!("echo $LEADERRUN_TOKEN > '{}'", ran.display());
    let mut waiter = Replica::spawn(leaderrun_at(&installed, &etcd.endpoint()).args([
        "--name",
        "jobs/upgrade",
        "--wait",
        "--",
        "sh",
        "-c",
        &script,
    ]));
    await_condition(SOON, "the waiter queued", || {
        etcd.candidates("jobs/upgrade").len() == 2
    });

    // The upgrade: the new version is written beside the old one and
    // renamed over it, so the waiter's own file is unlinked.
    let new = dir.path().join("leaderrun.new");
    std::fs::copy(env!("CARGO_BIN_EXE_leaderrun"), &new).unwrap();
    std::fs::rename(&new, &installed).unwrap();

    send(leader.pid(), Signal::SIGTERM);
    leader.finish(LIMIT);
    let (code, stderr) = waiter.finish(Duration::from_secs(15));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ran.exists(), "the command did not run: {stderr}");
}
