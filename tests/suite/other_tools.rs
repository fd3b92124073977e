//! Beside etcd's own tools on one name: an `etcdctl elect` or `etcdctl
//! lock` candidate is described by what is known of it (never a made-up
//! pid or host), counted as a runner only where etcd's election elects it
//! (first in line), and its key never written by a leaderrun's handover,
//! however its value looks.

use crate::common::*;

/// A candidate as `etcdctl elect NAME VALUE` (or, with an empty value,
/// `etcdctl lock NAME`) writes it: `NAME/<lease in hex>`, on its lease.
fn other_tool(etcd: &Etcd, name: &str, value: &str) -> (String, i64) {
    let lease = etcd.grant(60).expect("a lease");
    let key = format!("{name}/{lease:x}");
    etcd.put(&key, value, lease);
    (key, lease)
}

fn status_json(etcd: &Etcd, name: &str) -> serde_json::Value {
    let done = lr(etcd).status().name(name).args(["--json"]).finish();
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    serde_json::from_str(&done.stdout).expect("one JSON object")
}

#[test]
fn another_tools_holder_is_described_by_what_is_known_of_it() {
    let etcd = Etcd::shared();
    let jobs_x = unique("jobs/x");
    other_tool(etcd, &jobs_x, "proposal-A");
    let done = lr(etcd).name(&jobs_x).verbose().run(["true"]);
    assert_eq!(done.code, Some(75), "{}", done.stderr);
    assert!(
        done.stderr.contains("another tool's candidate") && done.stderr.contains("proposal-A"),
        "{}",
        done.stderr
    );
    assert!(!done.stderr.contains("pid 0"), "{}", done.stderr);
    let status = status_json(etcd, &jobs_x);
    let holder = &status["holder"];
    assert!(
        holder["pid"].is_null() && holder["host"].is_null(),
        "{status}"
    );
    assert!(holder["started"].is_null(), "{status}");
    assert_eq!(holder["other_tool"], true, "{status}");
    assert_eq!(holder["command"], "proposal-A", "{status}");

    // `etcdctl lock` writes an empty value: its key names it.
    let jobs_lock = unique("jobs/lock");
    let (key, _) = other_tool(etcd, &jobs_lock, "");
    let done = lr(etcd).status().name(&jobs_lock).finish();
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stdout
            .contains(&format!("key {key} with an empty value")),
        "{}",
        done.stdout
    );
    assert!(!done.stdout.contains("pid 0"), "{}", done.stdout);
}

#[test]
fn a_waiting_etcdctl_candidate_is_not_counted_as_a_runner() {
    let etcd = Etcd::shared();
    let jobs_z = unique("jobs/z");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut runner = lr(etcd)
        .name(&jobs_z)
        .args(["--max-running", "2"])
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, SOON);
    // Behind it, `etcdctl elect` waits: etcd's election elects only the
    // first key.
    other_tool(etcd, &jobs_z, "behind");
    let done = lr(etcd).status().name(&jobs_z).finish();
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stdout.contains("running:  1 of at most 2"),
        "{}",
        done.stdout
    );
    assert!(done.stdout.contains("waiting:  1"), "{}", done.stdout);
    let status = status_json(etcd, &jobs_z);
    assert_eq!(
        status["holders"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    assert_eq!(status["waiters"], 1, "{status}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(runner.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    runner.await_exit(LIMIT);
}

/// A leaderrun queued between two `etcdctl elect` candidates runs when the
/// first resigns, and then resigns without writing the second's key,
/// though its value is shaped like a leaderrun's.
#[test]
fn a_handover_never_rewrites_another_tools_key() {
    let etcd = Etcd::shared();
    let jobs_y = unique("jobs/y");
    let dir = tempfile::tempdir().unwrap();
    let (first, first_lease) = other_tool(etcd, &jobs_y, "first");
    let ran = dir.path().join("ran");
    let flag = dir.path().join("go");
    let job = format!("touch '{}'; {}", ran.display(), until_exists(&flag));
    let mut waiter = lr(etcd).name(&jobs_y).wait().spawn(["sh", "-c", &job]);
    await_condition(SOON, "the waiter queued", || {
        etcd.candidates(&jobs_y).len() == 2
    });
    let shaped =
        r#"{"host":"web-9","pid":4242,"started":"2026-01-01T00:00:00Z","command":"my-proposal"}"#;
    let (second, _) = other_tool(etcd, &jobs_y, shaped);
    etcd.revoke(first_lease);
    await_condition(SOON, "the waiter runs", || ran.exists());
    assert!(etcd.get(&first).is_none());
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = waiter.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        etcd.get(&second).as_deref(),
        Some(shaped),
        "another tool's key is left as it wrote it"
    );
}
