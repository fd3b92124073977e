//! A zombie is not a running process: leaderrun does not wait out the
//! TERM-to-KILL grace for members of the command's group that are already
//! dead but not reaped (by a parent that is not leaderrun). And leaderrun
//! leaves no zombie of its own: its guardian is collected on every way out.
//!
//! A test binary of its own: the test process makes itself a child
//! subreaper and never reaps orphans, so that a grandchild orphaned by the
//! command's shell stays a zombie in the group whatever PID 1 does.

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

#[test]
fn a_zombie_in_the_group_does_not_hold_up_the_exit() {
    nix::sys::prctl::set_child_subreaper(true).expect("a child subreaper");
    let etcd = Etcd::shared();
    let jobs_zombie = unique("jobs/zombie");
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("sh");
    let ttl = Duration::from_secs(15);
    let script = format!("echo $$ > '{}'; sleep 60; echo after", shell.display());
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--ttl", &seconds(ttl), "--name", &jobs_zombie])
            .args(["--", "sh", "-c", &script]),
    );
    let shell = read_pid(&shell, SOON);
    let mut sleep = None;
    await_condition(SOON, "the shell's sleep", || {
        sleep = children_of(shell)
            .into_iter()
            .find(|pid| comm(*pid).as_deref() == Some("sleep"));
        sleep.is_some()
    });
    let mut strays = Strays::new();
    strays.add(sleep.unwrap(), "sleep 60");

    // Shell and sleep both die of the TERM passed on; the sleep, orphaned,
    // becomes this process's zombie, still a member of the group.
    let signalled = Instant::now();
    send(replica.pid(), Signal::SIGTERM);
    let (code, stderr) = replica.finish(Duration::from_secs(15));
    let took = active_since(signalled);
    eprintln!("exited {took:?} after SIGTERM");
    assert_eq!(code, Some(128 + 15), "{stderr}");
    assert!(
        took < ttl / 10,
        "waited {took:?} for a group of zombies (TTL {ttl:?})"
    );
}

/// leaderrun collects its guardian before it exits, on every way out:
/// orphaned, a guardian would be a zombie for whoever adopts it, and in a
/// container whose PID 1 does not reap, one more after every run. Here the
/// test process adopts it, and never reaps.
#[test]
fn no_guardian_is_left_to_whoever_adopts_leaderrun_s_children() {
    no_guardian_is_left(&[]);
}

/// The same with every guardian slow to exit, as on a loaded machine that
/// runs it late: longer than the half second the way out gives etcd
/// (which once left one to the adopter, beside two busy loops).
#[test]
fn no_guardian_slow_to_exit_is_left_to_whoever_adopts_leaderrun_s_children() {
    no_guardian_is_left(&[("LEADERRUN_TEST_GUARDIAN_EXITS_AFTER_MS", "1500")]);
}

/// Four ways out (the command's exit, a conflict, `--wait-timeout`, a
/// signal), each run with `env`; then no guardian is left to the test.
fn no_guardian_is_left(env: &[(&str, &str)]) {
    nix::sys::prctl::set_child_subreaper(true).expect("a child subreaper");
    let etcd = Etcd::shared();
    let jobs_guardians = unique("jobs/guardians");
    let limit = LIMIT;
    let name = &jobs_guardians;
    let lr = || {
        env.iter()
            .fold(lr(etcd).name(name), |lr, (key, value)| lr.env(key, value))
    };
    let ran = lr().run_within(["true"], limit);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let mut holder = lr().spawn(["sleep", "60"]);
    await_condition(limit, "a holder", || etcd.candidates(name).len() == 1);
    let lost = lr().run_within(["true"], limit);
    assert_eq!(lost.code, Some(75), "{}", lost.stderr);
    let waited = lr()
        .wait()
        .args(["--wait-timeout", "1s"])
        .run_within(["true"], limit);
    assert_eq!(waited.code, Some(75), "{}", waited.stderr);
    send(holder.pid(), Signal::SIGTERM);
    let (code, stderr) = holder.finish(limit);
    assert_eq!(code, Some(143), "{stderr}");
    let orphans = guardians_of(std::process::id() as i32);
    assert!(orphans.is_empty(), "guardians left behind: {orphans:?}");
}
