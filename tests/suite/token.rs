//! The child gets the fencing token: the leader key's create revision.

use crate::common::*;
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
    await_condition(SOON, "the child's record", || {
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
    let (code, _) = replica.finish(LIMIT);
    assert_eq!(code, Some(143));
    await_resigned(&etcd, "jobs/token", "resigned on exit");
}

/// The command's environment is leaderrun's, as it was given (order,
/// values with '=' in them, odd entries), but each election variable once,
/// with our value: an inherited one is replaced, never repeated.
#[test]
fn the_command_gets_leaderruns_environment_with_each_election_variable_once() {
    let etcd = Etcd::start();
    let done = run_within(
        leaderrun(&etcd.endpoint())
            .args(["--name", "jobs/env", "--", "/usr/bin/env", "-0"])
            .env("LEADERRUN_TOKEN", "999999")
            .env("SPAWN_ENV_FIRST", "a=b=c")
            .env("LEADERRUN_NAME_NOT", "kept")
            .env("SPAWN_ENV_EMPTY", ""),
        Duration::from_secs(20),
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let entries: Vec<&str> = done
        .stdout
        .split('\0')
        .filter(|entry| !entry.is_empty())
        .collect();
    let named = |name: &str| -> Vec<&str> {
        entries
            .iter()
            .filter(|entry| entry.split_once('=').map(|(key, _)| key) == Some(name))
            .copied()
            .collect()
    };
    // Ours: the key's create revision (see the test above), not the
    // inherited one.
    let token = named("LEADERRUN_TOKEN");
    assert_eq!(token.len(), 1, "{entries:?}");
    let token = token[0].strip_prefix("LEADERRUN_TOKEN=").unwrap();
    assert!(token.parse::<i64>().is_ok() && token != "999999", "{token}");
    let key = named("LEADERRUN_KEY");
    assert_eq!(key.len(), 1, "{entries:?}");
    assert!(key[0].starts_with("LEADERRUN_KEY=jobs/env/"), "{key:?}");
    assert_eq!(named("LEADERRUN_NAME"), ["LEADERRUN_NAME=jobs/env"]);
    assert_eq!(named("SPAWN_ENV_FIRST"), ["SPAWN_ENV_FIRST=a=b=c"]);
    assert_eq!(named("LEADERRUN_NAME_NOT"), ["LEADERRUN_NAME_NOT=kept"]);
    assert_eq!(named("SPAWN_ENV_EMPTY"), ["SPAWN_ENV_EMPTY="]);
    assert_eq!(
        named("LEADERRUN_ENDPOINTS").len(),
        1,
        "inherited, passed on once"
    );
    assert_eq!(
        named("PATH"),
        [format!("PATH={}", std::env::var("PATH").unwrap())],
        "inherited as it was"
    );
}

#[test]
fn tokens_grow_from_one_leader_to_the_next() {
    let etcd = Etcd::shared();
    let jobs_grow = unique("jobs/grow");
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let done = lr(etcd)
            .name(&jobs_grow)
            .run_within(["sh", "-c", "echo $LEADERRUN_TOKEN"], SOON);
        assert_eq!(done.code, Some(0), "{}", done.stderr);
        tokens.push(done.stdout.trim().parse::<i64>().unwrap());
    }
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "{tokens:?}"
    );
}
