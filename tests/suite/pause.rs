//! `leaderrun pause` and `resume`: a pause keeps every replica of an
//! election from starting (the conflict code, and the line with -v, naming
//! who paused, why, since and until when); a replica with --wait waits out
//! of line until it ends, its --wait-timeout counting, then queues as
//! usual; a pause never stops a command that runs; `--for` ends it by
//! itself; `status` shows it and exits 5. Against a real etcd, across
//! several replicas.

use crate::common::*;
use leaderrun::events;
use std::time::{Duration, Instant};

fn pause(etcd: &Etcd, name: &str, extra: &[&str]) -> Finished {
    lr(etcd)
        .args(["pause", "--name", name])
        .args(extra)
        .finish()
}

fn resume(etcd: &Etcd, name: &str) -> Finished {
    lr(etcd).args(["resume", "--name", name]).finish()
}

/// `status --name NAME --json`: its exit code and its object.
fn status_json(etcd: &Etcd, name: &str) -> (Option<i32>, serde_json::Value) {
    let done = lr(etcd).status().name(name).args(["--json"]).finish();
    let json = serde_json::from_str(&done.stdout)
        .unwrap_or_else(|err| panic!("{err}: {} {}", done.stdout, done.stderr));
    (done.code, json)
}

/// A replica with --wait whose info lines are JSON, to be read by event.
fn waiter(etcd: &Etcd, name: &str, job: Vec<String>) -> Replica {
    lr(etcd)
        .name(name)
        .wait()
        .verbose()
        .args(["--log-format", "json"])
        .spawn(job)
}

fn await_paused(replicas: &[&Replica]) {
    await_condition(SOON, "the waiters to find the pause", || {
        replicas
            .iter()
            .all(|replica| replica.logged(events::PAUSED) > 0)
    });
}

#[test]
fn a_pause_keeps_every_replica_from_starting_until_it_is_resumed() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");

    let paused = pause(etcd, &name, &["--reason", "deploy freeze"]);
    assert_eq!(paused.code, Some(0), "{}", paused.stderr);
    assert!(
        paused.stdout.contains("paused until leaderrun resume"),
        "{}",
        paused.stdout
    );

    // Without --wait: the conflict code, quiet for cron; with -v, one line
    // that says who paused, why and since when. Nothing is written.
    let quiet = lr(etcd).name(&name).run(recording_job(&log, "0"));
    assert_eq!(quiet.code, Some(75), "{}", quiet.stderr);
    assert!(
        quiet.stderr.is_empty(),
        "cron stays quiet: {}",
        quiet.stderr
    );
    let told = lr(etcd).name(&name).verbose().run(["true"]);
    assert_eq!(told.code, Some(75), "{}", told.stderr);
    let line = format!("leaderrun: not running: {name} is paused by ");
    assert!(told.stderr.contains(&line), "{}", told.stderr);
    for fact in [" since ", " until resumed: deploy freeze"] {
        assert!(told.stderr.contains(fact), "{fact}: {}", told.stderr);
    }
    assert!(
        !told.stderr.contains("is held by"),
        "nobody seemed to lead: {}",
        told.stderr
    );

    // With --wait: out of line (no key) until the pause ends.
    let mut waiters = vec![
        waiter(etcd, &name, recording_job(&log, "0.3")),
        waiter(etcd, &name, recording_job(&log, "0.3")),
    ];
    await_paused(&waiters.iter().collect::<Vec<_>>());
    assert!(etcd.candidates(&name).is_empty(), "a waiter stood in line");
    // --wait-timeout still counts.
    let gave_up = lr(etcd)
        .name(&name)
        .verbose()
        .args(["--wait-timeout", "1s"])
        .run(["true"]);
    assert_eq!(gave_up.code, Some(75), "{}", gave_up.stderr);
    let after = format!("not running after waiting: {name} is paused by ");
    assert!(gave_up.stderr.contains(&after), "{}", gave_up.stderr);

    let (code, json) = status_json(etcd, &name);
    assert_eq!(code, Some(5), "{json}");
    assert_eq!(json["paused"]["reason"], "deploy freeze", "{json}");
    assert_eq!(json["paused"]["until"], serde_json::Value::Null, "{json}");
    assert_eq!(json["paused"]["lease"], serde_json::Value::Null, "{json}");
    assert!(json["paused"]["user"].is_string(), "{json}");
    let text = lr(etcd).status().name(&name).finish();
    assert_eq!(text.code, Some(5), "{}", text.stderr);
    assert!(text.stdout.contains("paused:   by "), "{}", text.stdout);
    let all = |format: &str| {
        lr(etcd)
            .status()
            .args(["--all", "--prefix", &name, "--format", format])
            .finish()
    };
    let metrics = all("prometheus");
    let series = format!("leaderrun_paused{{election=\"{name}\"}} 1");
    assert!(metrics.stdout.contains(&series), "{}", metrics.stdout);
    let lines = all("text");
    assert!(lines.stdout.contains("; paused by "), "{}", lines.stdout);

    let resumed = resume(etcd, &name);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    assert!(
        resumed.stdout.contains("resumed; it was paused by "),
        "{}",
        resumed.stdout
    );
    assert_eq!(finish_all(&mut waiters, LIMIT), [Some(0), Some(0)]);
    let runs = intervals(&log);
    assert_eq!(
        runs.len(),
        2,
        "the two waiters ran, and nothing else: {runs:?}"
    );
    assert!(
        runs[0].end <= runs[1].start || runs[1].end <= runs[0].start,
        "one at a time: {runs:?}"
    );
    let (code, json) = status_json(etcd, &name);
    assert_eq!(code, Some(3), "{json}");
    assert_eq!(json["paused"], serde_json::Value::Null, "{json}");
    let again = resume(etcd, &name);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(again.stdout.contains("not paused"), "{}", again.stdout);
}

#[test]
fn a_pause_never_stops_a_running_command_and_the_line_behind_it_waits_it_out() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-running");
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let ran = dir.path().join("ran");
    let mut leader = lr(etcd).name(&name).spawn(["sh", "-c", &until_exists(&go)]);
    await_condition(SOON, "a leader", || etcd.candidates(&name).len() == 1);
    let mut queued = waiter(
        etcd,
        &name,
        vec![
            "sh".into(),
            "-c".into(),
            format!("touch '{}'", ran.display()),
        ],
    );
    await_condition(SOON, "a waiter in line", || {
        etcd.candidates(&name).len() == 2
    });

    let paused = pause(etcd, &name, &["--for", "1h"]);
    assert_eq!(paused.code, Some(0), "{}", paused.stderr);
    // The leader's command goes on, and ends as it will.
    std::fs::write(&go, "").unwrap();
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(0), "the pause stopped nothing: {stderr}");
    // Its turn come, the waiter leaves the line for the pause.
    await_paused(&[&queued]);
    await_condition(SOON, "the line empty", || etcd.candidates(&name).is_empty());
    assert!(!ran.exists(), "it ran while paused");
    let (code, json) = status_json(etcd, &name);
    assert_eq!((code, &json["waiters"]), (Some(5), &0.into()), "{json}");
    assert!(json["paused"]["until"].is_string(), "{json}");
    assert!(json["paused"]["lease"].is_string(), "--for's lease: {json}");

    let resumed = resume(etcd, &name);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    let (code, stderr) = queued.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ran.exists(), "{stderr}");
}

#[test]
fn a_pause_for_a_while_ends_by_itself() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-for");
    let paused = pause(etcd, &name, &["--for", "2s", "--reason", "short"]);
    assert_eq!(paused.code, Some(0), "{}", paused.stderr);
    let since = Instant::now();
    assert!(
        paused.stdout.contains(": paused until 20"),
        "{}",
        paused.stdout
    );
    let mut queued = waiter(etcd, &name, vec!["true".into()]);
    let (code, stderr) = queued.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(r#""event":"paused""#),
        "it waited out the pause: {stderr}"
    );
    // Never before the lease's TTL (etcd ends a lease no sooner).
    assert!(
        since.elapsed() >= Duration::from_secs(1),
        "ran {:?} after the pause",
        since.elapsed()
    );
    assert_eq!(status_json(etcd, &name).0, Some(3));
}

#[test]
fn a_paused_once_per_run_spends_no_window() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-window");
    let marker = format!("{name}.once-per");
    assert_eq!(pause(etcd, &name, &[]).code, Some(0));
    let refused = lr(etcd)
        .name(&name)
        .args(["--once-per", "1h"])
        .run(["true"]);
    assert_eq!(refused.code, Some(75), "{}", refused.stderr);
    assert_eq!(etcd.get(&marker), None, "the window is unspent");
    assert_eq!(resume(etcd, &name).code, Some(0));
    let ran = lr(etcd)
        .name(&name)
        .args(["--once-per", "1h"])
        .run(["echo", "ran"]);
    assert_eq!(
        (ran.code, ran.stdout.as_str()),
        (Some(0), "ran\n"),
        "{}",
        ran.stderr
    );
    let spent = lr(etcd)
        .name(&name)
        .args(["--once-per", "1h"])
        .run(["true"]);
    assert_eq!(
        spent.code,
        Some(75),
        "the window had its run: {}",
        spent.stderr
    );
}

#[test]
fn a_pause_holds_every_slot_of_max_running() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-slots");
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let ran = dir.path().join("ran");
    let started = dir.path().join("started");
    let job = format!(
        "echo $LEADERRUN_TOKEN >> '{}'; {}",
        started.display(),
        until_exists(&go)
    );
    let runner = || {
        lr(etcd)
            .name(&name)
            .args(["--max-running", "2"])
            .spawn(["sh", "-c", &job])
    };
    let commands = || {
        std::fs::read_to_string(&started)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let mut runners = vec![runner()];
    await_condition(SOON, "a runner", || commands() == 1);
    runners.push(runner());
    // Their commands started: a pause before that would keep one from it.
    await_condition(SOON, "two runners", || commands() == 2);
    assert_eq!(pause(etcd, &name, &[]).code, Some(0));
    let third = lr(etcd)
        .name(&name)
        .args(["--max-running", "2", "-v"])
        .run(["true"]);
    assert_eq!(third.code, Some(75), "{}", third.stderr);
    assert!(third.stderr.contains("is paused by"), "{}", third.stderr);
    let mut queued = lr(etcd)
        .name(&name)
        .wait()
        .args(["--max-running", "2", "-v", "--log-format", "json"])
        .spawn(["sh", "-c", &format!("touch '{}'", ran.display())]);
    await_paused(&[&queued]);
    std::fs::write(&go, "").unwrap();
    assert_eq!(finish_all(&mut runners, LIMIT), [Some(0), Some(0)]);
    assert!(!ran.exists(), "a slot freed while paused was taken");
    assert_eq!(resume(etcd, &name).code, Some(0));
    let (code, stderr) = queued.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ran.exists(), "{stderr}");
}

/// A replica of an older release does not know the pause and runs (the
/// upgrade notes say so); beside it, this release's replicas still do not
/// start, and say the pause, not the older one, is why.
#[test]
fn a_replica_of_an_older_release_runs_through_a_pause_and_this_release_still_does_not() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-older");
    assert_eq!(pause(etcd, &name, &["--reason", "upgrade"]).code, Some(0));
    // Its key, as an older release writes it as it leads: the pause
    // unread.
    let lease = etcd.grant(30).unwrap();
    let value = format!(
        r#"{{"host":"old-1","pid":7,"started":"2026-12-01T00:00:00Z","command":"batch","lease":"{lease:x}"}}"#
    );
    etcd.put(&format!("{name}/{lease:x}"), &value, lease);
    let (code, json) = status_json(etcd, &name);
    assert_eq!(code, Some(5), "paused, whoever leads: {json}");
    assert_eq!(json["holder"]["host"], "old-1", "{json}");
    let new = lr(etcd).name(&name).verbose().run(["true"]);
    assert_eq!(new.code, Some(75), "{}", new.stderr);
    assert!(new.stderr.contains("is paused by"), "{}", new.stderr);
    etcd.revoke(lease);
    assert_eq!(resume(etcd, &name).code, Some(0));
}

#[test]
fn bad_pauses_are_refused_in_one_line() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-bad");
    let long = "x".repeat(201);
    for (args, mentions) in [
        (vec!["--reason", ""], "the reason is empty"),
        (vec!["--reason", "   "], "the reason is empty"),
        (vec!["--reason", &long], "at most 200"),
        (vec!["--for", "0"], "--for must be at least 1s"),
        (vec!["--for", "-5s"], "is negative"),
    ] {
        let done = pause(etcd, &name, &args);
        assert_one_error_line(&done, mentions, &format!("{args:?}"));
        assert_eq!(done.code, Some(125), "{args:?}: {}", done.stderr);
    }
    let unnamed = lr(etcd).args(["pause"]).finish();
    assert_one_error_line(&unnamed, "name the election with --name", "no name");
    assert_eq!(etcd.get(&format!("{name}.paused")), None, "nothing written");
}

#[test]
fn a_pause_is_shown_escaped_and_a_pause_written_by_hand_still_pauses() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-odd");
    let reason = "red \u{1b}[31malert\u{1b}[0m\nsecond line \u{202e}desrever";
    assert_eq!(pause(etcd, &name, &["--reason", reason]).code, Some(0));
    let told = lr(etcd).name(&name).verbose().run(["true"]);
    assert_eq!(told.code, Some(75), "{}", told.stderr);
    assert!(!told.stderr.contains('\u{1b}'), "raw: {:?}", told.stderr);
    assert!(
        told.stderr
            .contains(r"red \u{1b}[31malert\u{1b}[0m\nsecond line \u{202e}desrever"),
        "{}",
        told.stderr
    );
    let text = lr(etcd).status().name(&name).finish();
    for raw in ['\u{1b}', '\u{202e}'] {
        assert!(!text.stdout.contains(raw), "raw: {:?}", text.stdout);
    }
    let (_, json) = status_json(etcd, &name);
    assert_eq!(json["paused"]["reason"], reason, "exact in JSON: {json}");
    // A second pause replaces the first, and says so.
    let again = pause(etcd, &name, &["--reason", "another"]);
    assert!(
        again.stdout.contains("it replaces the pause by "),
        "{}",
        again.stdout
    );

    etcd.put(&format!("{name}.paused"), "maintenance\u{7}", 0);
    let told = lr(etcd).name(&name).verbose().run(["true"]);
    assert_eq!(told.code, Some(75), "{}", told.stderr);
    assert!(
        told.stderr.contains(
            r#"paused by a key leaderrun did not write, holding "maintenance\u{7}", until resumed"#
        ),
        "{}",
        told.stderr
    );
    let (code, json) = status_json(etcd, &name);
    assert_eq!(code, Some(5), "{json}");
    assert_eq!(json["paused"]["raw"], "maintenance\u{7}", "{json}");
    assert_eq!(
        json["paused"]["raw_base64"],
        serde_json::Value::Null,
        "{json}"
    );

    // Bytes that are not text, and a megabyte of them: shown as \xNN, cut
    // short in every line; whole in JSON, with their exact bytes.
    let key = format!("{name}.paused");
    etcd.with(async |mut client| {
        let mut value = b"odd \xff\xfe ".to_vec();
        value.extend(std::iter::repeat_n(b'z', 1 << 20));
        client.put(key, value, None).await.expect("put");
    });
    let told = lr(etcd).name(&name).verbose().run(["true"]);
    assert!(
        told.stderr.contains(r#"holding "odd \xff\xfe zzz"#),
        "{}",
        told.stderr
    );
    assert!(
        told.stderr.contains("... (1048583 bytes in all)"),
        "{}",
        told.stderr
    );
    assert!(told.stderr.len() < 1000, "{} bytes", told.stderr.len());
    let (_, json) = status_json(etcd, &name);
    let exact = json["paused"]["raw_base64"].as_str().unwrap_or_default();
    assert!(
        exact.starts_with("b2RkIP/+"),
        "the exact bytes: {exact:.40}"
    );
    let ended = resume(etcd, &name);
    assert!(ended.stdout.len() < 1000, "{} bytes", ended.stdout.len());
}

#[test]
fn status_watch_says_each_pause_and_resume() {
    let etcd = Etcd::shared();
    let name = unique("jobs/paused-watched");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("watched");
    assert_eq!(pause(etcd, &name, &["--reason", "first"]).code, Some(0));
    let mut watcher = leaderrun(&etcd.endpoint())
        .args(["status", "--name", &name, "--watch"])
        .stdout(std::fs::File::create(&out).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&out).unwrap_or_default();
    await_condition(SOON, "the pause said", || said().contains(": first"));
    assert_eq!(resume(etcd, &name).code, Some(0));
    let resumed = format!("{name}: resumed");
    await_condition(SOON, "the resume said", || said().contains(&resumed));
    assert_eq!(pause(etcd, &name, &["--reason", "second"]).code, Some(0));
    await_condition(SOON, "the next pause said", || said().contains(": second"));
    assert!(said().contains(&format!("{name}: no leader")), "{}", said());
    send(watcher.id() as i32, nix::sys::signal::Signal::SIGTERM);
    let status = wait_within(&mut watcher, LIMIT, "the watch");
    assert_eq!(status.code(), Some(0));
    assert_eq!(resume(etcd, &name).code, Some(0));
}
