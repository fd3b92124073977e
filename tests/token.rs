//! The child gets the fencing token: the leader key's create revision.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn token_is_the_keys_create_revision_and_beats_an_inherited_one() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let script = format!(
        "echo $LEADERRUN_TOKEN $LEADERRUN_KEY $LEADERRUN_LEASE $LEADERRUN_NAME > '{}'; sleep 30",
        seen.display()
    );
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", "jobs/token", "--", "sh", "-c", &script])
            .env("LEADERRUN_TOKEN", "999999")
            .env("LEADERRUN_KEY", "inherited"),
    );
    let mut fields = Vec::new();
    await_condition(Duration::from_secs(10), "the child's record", || {
        fields = std::fs::read_to_string(&seen)
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect();
        fields.len() == 4
    });
    let candidates = etcd.candidates("jobs/token");
    assert_eq!(candidates.len(), 1, "exactly one key: {candidates:?}");
    let (key, create_revision, lease) = &candidates[0];
    assert_eq!(fields[0], create_revision.to_string(), "token");
    assert_eq!(&fields[1], key);
    assert_eq!(fields[2], format!("{lease:x}"));
    assert_eq!(
        key,
        &format!("jobs/token/{lease:x}"),
        "etcd's election key layout"
    );
    assert_eq!(fields[3], "jobs/token");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(replica.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (code, _) = replica.finish(Duration::from_secs(10));
    assert_eq!(code, Some(143));
    assert!(etcd.candidates("jobs/token").is_empty(), "resigned on exit");
}

#[test]
fn tokens_grow_from_one_leader_to_the_next() {
    let etcd = Etcd::start();
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let done = run_within(
            leaderrun(&etcd.endpoint()).args([
                "--name",
                "jobs/grow",
                "--",
                "sh",
                "-c",
                "echo $LEADERRUN_TOKEN",
            ]),
            Duration::from_secs(10),
        );
        assert_eq!(done.code, Some(0), "{}", done.stderr);
        tokens.push(done.stdout.trim().parse::<i64>().unwrap());
    }
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "{tokens:?}"
    );
}
