//! Other writers touching our keys: a leader key overwritten by a plain
//! `put`, stale keys and `--once-per` markers with no lease, replicas that
//! disagree on the window, and foreign values full of control characters.

use crate::common::*;
use std::time::Duration;

fn status(etcd: &Etcd, name: &str) -> Finished {
    lr(etcd)
        .status()
        .name(name)
        .finish_within(Duration::from_secs(20))
}

/// A plain `put` keeps the key's create revision but drops its lease: the
/// key is no longer ours, and the leader must stop as on any other loss.
#[test]
fn an_overwritten_leader_key_is_loss_of_leadership() {
    let etcd = Etcd::shared();
    let jobs_overwrite = unique("jobs/overwrite");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(etcd).name(&jobs_overwrite).spawn(pid_job(&pidfile));
    let pid = read_pid(&pidfile, Duration::from_secs(20));
    let candidates = etcd.candidates(&jobs_overwrite);
    assert_eq!(candidates.len(), 1, "{candidates:?}");
    etcd.put(&candidates[0].0, "x", 0);
    await_condition(SOON, "the child to die", || !alive(pid));
    let (code, stderr) = replica.finish(Duration::from_secs(20));
    assert_eq!(code, Some(124), "{stderr}");
    assert!(stderr.contains("overwritten"), "{stderr}");
}

/// A waiter whose key is overwritten says so when its turn comes (not that
/// its key disappeared), and queues again, behind the stale key.
#[test]
fn an_overwritten_waiter_key_is_named_as_overwritten() {
    let etcd = Etcd::shared();
    let jobs_overwait = unique("jobs/overwait");
    let name = &jobs_overwait;
    let dir = tempfile::tempdir().unwrap();
    let (leader, _) = pid_job_leader(etcd, name, dir.path());
    let waiter = lr(etcd).verbose().name(name).wait().spawn(["true"]);
    let limit = Duration::from_secs(20);
    await_condition(limit, "the waiter to queue", || {
        etcd.candidates(name).len() == 2
    });
    etcd.put(&etcd.candidates(name)[1].0, "handwritten", 0);
    send(leader.pid(), nix::sys::signal::Signal::SIGTERM);
    await_condition(limit, "the waiter to say what happened", || {
        waiter
            .stderr_so_far()
            .contains("our key was overwritten by another writer while queued; campaigning again")
    });
}

/// A key with no lease under the election never expires: whoever finds it
/// in the lead says what it is and how to remove it, and `status` exits 4
/// (stuck), not 0, so that a monitor reading the code sees it.
#[test]
fn a_stale_key_with_no_lease_blocks_the_election_and_is_named() {
    let etcd = Etcd::start();
    etcd.put("jobs/stale/1234abcd", "x", 0);

    let done = lr(&etcd)
        .verbose()
        .name("jobs/stale")
        .run_within(["echo", "ran"], Duration::from_secs(20));
    assert_eq!(done.code, Some(75), "{}", done.stderr);
    assert!(done.stdout.is_empty(), "the command ran: {}", done.stdout);
    assert!(
        done.stderr.contains("stale key with no lease"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains(&format!(
            "etcdctl --endpoints='{}' del 'jobs/stale/1234abcd'",
            etcd.endpoint()
        )),
        "{}",
        done.stderr
    );

    let shown = status(&etcd, "jobs/stale");
    assert_eq!(shown.code, Some(4), "{}{}", shown.stdout, shown.stderr);
    let leader = shown
        .stdout
        .lines()
        .find(|line| line.starts_with("leader:"))
        .unwrap_or_else(|| panic!("a leader line: {}", shown.stdout));
    assert!(leader.contains("stale key with no lease"), "{leader}");
}

/// A `--once-per` marker written with no lease never expires, so its window
/// never closes: leaderrun says so instead of waiting for it.
#[test]
fn a_once_per_marker_with_no_lease_never_closes() {
    let etcd = Etcd::start();
    let marker = r#"{"host":"h","pid":1,"started":"2026-01-01T00:00:00Z","command":"c","token":5}"#;
    etcd.put("jobs/mk.once-per", marker, 0);

    let done = lr(&etcd)
        .verbose()
        .name("jobs/mk")
        .args(["--once-per", "1h"])
        .run_within(["echo", "ran"], Duration::from_secs(20));
    assert_eq!(done.code, Some(75), "{}", done.stderr);
    assert!(done.stdout.is_empty(), "the command ran: {}", done.stdout);
    assert!(done.stderr.contains("never closes"), "{}", done.stderr);
    assert!(
        done.stderr.contains(&format!(
            "etcdctl --endpoints='{}' del 'jobs/mk.once-per'",
            etcd.endpoint()
        )),
        "{}",
        done.stderr
    );

    // Nobody leads, and nobody will until the marker is removed: stuck.
    let shown = status(&etcd, "jobs/mk");
    assert_eq!(shown.code, Some(4), "stuck: {}", shown.stderr);
    assert!(shown.stdout.contains("never closes"), "{}", shown.stdout);
}

/// Replicas given different `--once-per` windows for one name are
/// misconfigured: the one that disagrees with the open window says so and
/// fails, the ones that agree find the window taken.
#[test]
fn once_per_windows_of_different_lengths_disagree() {
    let etcd = Etcd::shared();
    let jobs_len = unique("jobs/len");
    let run = |window: &str| {
        lr(etcd)
            .name(&jobs_len)
            .args(["--once-per", window])
            .run_within(["echo", "ran"], Duration::from_secs(20))
    };
    let first = run("1h");
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(first.stdout, "ran\n");

    let longer = run("2h");
    assert_one_error_line(&longer, "disagrees", "--once-per 2h after 1h");

    let again = run("1h");
    assert_eq!(again.code, Some(75), "{}", again.stderr);
    assert!(again.stdout.is_empty(), "ran twice in the window");
}

/// A holder value written by someone else may carry terminal escapes:
/// `status` shows them escaped, never raw.
#[test]
fn control_characters_in_foreign_values_are_escaped() {
    let etcd = Etcd::start();
    let lease = etcd.grant(60).expect("a lease");
    let value = r#"{"host":"h\u001b[2J","pid":7,"started":"s","command":"evil\u001b]0;x\u0007"}"#;
    etcd.put("jobs/esc/1234abcd", value, lease);

    let shown = status(&etcd, "jobs/esc");
    assert_eq!(shown.code, Some(0), "{}{}", shown.stdout, shown.stderr);
    assert!(
        !shown.stdout.contains(['\u{1b}', '\u{7}']),
        "raw control characters: {:?}",
        shown.stdout
    );
    assert!(shown.stdout.contains("h\\u{1b}[2J"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("evil\\u{1b}]0;x\\u{7}"),
        "{}",
        shown.stdout
    );
}
