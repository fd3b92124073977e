//! `--once-per`: at most one run per window across replicas, however late
//! a replica's clock fires it.

use crate::common::*;
use std::time::Duration;

const NAME: &str = "jobs/nightly";
const MARKER: &str = "jobs/nightly.once-per";

#[test]
fn staggered_replicas_run_the_job_once_per_window() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let release = dir.path().join("release");
    // The first run lasts until the test releases it, so the others can be
    // staggered around it.
    let job = format!(
        "echo \"start $LEADERRUN_TOKEN $(date +%s%N)\" >> '{log}'; \
         while [ ! -e '{release}' ]; do sleep 0.02; done; \
         echo \"end $LEADERRUN_TOKEN $(date +%s%N)\" >> '{log}'",
        log = log.display(),
        release = release.display()
    );
    let replica = |extra: &[&str]| {
        let mut command = leaderrun(&etcd.endpoint());
        command
            .args(["--name", NAME, "--once-per", "1h"])
            .args(extra)
            .args(["--", "sh", "-c", &job]);
        command
    };

    let mut first = Replica::spawn(&mut replica(&[]));
    await_condition(SOON, "the first run", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("start"))
    });
    // On time, while the first runs: an ordinary conflict.
    let on_time = run_within(&mut replica(&[]), SOON);
    assert_eq!(on_time.code, Some(75), "{}", on_time.stderr);
    // Queued behind the first: wins when it is done, and then finds the
    // window taken.
    let mut queued = Replica::spawn(&mut replica(&["--wait", "-v"]));
    await_condition(SOON, "a queued replica", || {
        etcd.candidates(NAME).len() == 2
    });

    std::fs::write(&release, "").unwrap();
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let token = intervals(&log)[0].token;
    let (code, stderr) = queued.finish(LIMIT);
    assert_eq!(code, Some(75), "{stderr}");
    let said = "already started in this --once-per window, at ";
    assert!(stderr.contains(said), "{stderr}");
    assert!(stderr.contains(&format!("token {token})")), "{stderr}");

    // Late (the replica whose clock is behind): quiet for cron, says why
    // with -v, and gives the same exit code either way.
    let late = run_within(&mut replica(&[]), SOON);
    assert_eq!(late.code, Some(75), "{}", late.stderr);
    assert!(late.stderr.is_empty(), "cron stays quiet: {}", late.stderr);
    let late = run_within(&mut replica(&["-v"]), SOON);
    assert_eq!(late.code, Some(75), "{}", late.stderr);
    assert!(late.stderr.contains(said), "{}", late.stderr);
    assert!(
        late.stderr.contains("the window closes in "),
        "{}",
        late.stderr
    );

    let runs = intervals(&log);
    assert_eq!(runs.len(), 1, "one run in the window: {runs:?}");
    await_resigned(&etcd, NAME, "everyone resigned");

    // status shows the window's run.
    let status = lr(&etcd)
        .status()
        .name(NAME)
        .args(["--json"])
        .finish_within(SOON);
    assert_eq!(status.code, Some(3), "{}", status.stderr);
    let object: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(object["last_run"]["token"], token, "{object}");
    let left = object["last_run"]["window_left"].as_u64().unwrap();
    assert!((3500..=3600).contains(&left), "{object}");
}

#[test]
fn the_window_ends_by_itself_and_only_once_per_runs_look_at_it() {
    let etcd = Etcd::start();
    let run = |extra: &[&str]| {
        let done = run_within(
            leaderrun(&etcd.endpoint())
                .args(["--name", NAME])
                .args(extra)
                .args(["--", "sh", "-c", "echo $LEADERRUN_TOKEN"]),
            SOON,
        );
        (
            done.code,
            done.stdout.trim().parse::<i64>().ok(),
            done.stderr,
        )
    };
    let (code, first, stderr) = run(&["--once-per", "2s"]);
    assert_eq!(code, Some(0), "{stderr}");
    let marker: serde_json::Value =
        serde_json::from_str(&etcd.get(MARKER).expect("a marker")).unwrap();
    assert_eq!(marker["token"].as_i64(), first, "{marker}");
    await_resigned(&etcd, NAME, "the marker is not a candidate of the election");

    let (code, _, stderr) = run(&["--once-per", "2s"]);
    assert_eq!(code, Some(75), "the window is still open: {stderr}");
    let (code, other, stderr) = run(&[]);
    assert_eq!(code, Some(0), "runs without --once-per ignore it: {stderr}");

    // etcd may round a short lease up to its minimum TTL; wait for it.
    await_condition(Duration::from_secs(15), "the window's end", || {
        etcd.get(MARKER).is_none()
    });
    let (code, next, stderr) = run(&["--once-per", "2s"]);
    assert_eq!(code, Some(0), "a new window: {stderr}");
    assert!(
        next > other && other > first,
        "{first:?} {other:?} {next:?}"
    );
}

/// A command that fails to start has not had its run: the window stays
/// open for the next attempt.
#[test]
fn a_command_that_cannot_start_does_not_use_up_the_window() {
    use std::os::unix::fs::PermissionsExt;
    let etcd = Etcd::shared();
    let jobs_cannot_start = unique("jobs/cannot-start");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("job");
    std::fs::write(&script, "#!/nonexistent/interpreter\necho ran\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let name = &jobs_cannot_start;
    let marker = format!("{name}.once-per");

    let done = run_within(
        leaderrun(&etcd.endpoint())
            .args(["--name", name, "--once-per", "1h", "--"])
            .arg(&script),
        SOON,
    );
    assert_eq!(done.code, Some(127), "{}", done.stderr);
    assert_eq!(
        etcd.get(&marker),
        None,
        "a run that never started opened the window"
    );

    let done = lr(etcd)
        .name(name)
        .args(["--once-per", "1h"])
        .run_within(["true"], SOON);
    assert_eq!(
        done.code,
        Some(0),
        "the window is still free: {}",
        done.stderr
    );
    assert!(etcd.get(&marker).is_some(), "this run opened the window");
}

/// Replicas that disagree on the window: one with `--once-per 3s` runs; its
/// marker is gone three seconds on, and a replica with `--once-per 1h` ran
/// the job again in silence. The opposite order is refused, both windows
/// named, and now so is this: the last run's start record names its
/// window. A run without --once-per opened none, and counts for none.
#[test]
fn a_longer_window_is_kept_after_a_shorter_ones_marker_expires() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = format!("echo ran >> '{}'", log.display());
    let run = |window: &str| {
        run_within(
            leaderrun(&etcd.endpoint())
                .args(["--name", NAME, "--once-per", window])
                .args(["--", "sh", "-c", &job]),
            SOON,
        )
    };
    let short = run("3s");
    assert_eq!(short.code, Some(0), "{}", short.stderr);
    await_condition(SOON, "the short window's end", || {
        etcd.get(MARKER).is_none()
    });
    let long = run("1h");
    assert_one_error_line(
        &long,
        "--once-per 1h disagrees with the window",
        "1h after 3s",
    );
    assert!(
        long.stderr.contains(", 3s: it began at "),
        "{}",
        long.stderr
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ran\n");
    assert_eq!(etcd.get(MARKER), None, "the window is not opened again");
    // A run without --once-per, then one with it: it runs.
    let plain = lr(&etcd).name(NAME).run_within(["sh", "-c", &job], SOON);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    let after_plain = run("1h");
    assert_eq!(after_plain.code, Some(0), "{}", after_plain.stderr);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ran\nran\nran\n");
}

/// `--once-per-attempts`: three replicas queued; the first fails, the
/// second succeeds, the third finds the window spent by that success. The
/// marker lists both attempts, and `status` shows them.
#[test]
fn with_attempts_only_a_success_spends_the_window() {
    let etcd = Etcd::shared();
    let name = unique("jobs/attempts");
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    let log = dir.path().join("runs");
    // Each replica's job logs its token; the first also waits for the
    // test (so that the others queue behind it), then fails.
    let job = |code: u8| {
        format!(
            "echo \"$LEADERRUN_TOKEN\" >> '{log}'; {}; exit {code}",
            until_exists(&release),
            log = log.display()
        )
    };
    let replica = |code: u8| {
        lr(etcd)
            .name(&name)
            .wait()
            .verbose()
            .args(["--once-per", "1h", "--once-per-attempts", "3"])
            .spawn(["sh", "-c", &job(code)])
    };
    let mut failing = replica(1);
    await_condition(SOON, "the first run", || log.exists());
    let mut succeeding = replica(0);
    await_condition(SOON, "the second replica queued", || {
        etcd.candidates(&name).len() == 2
    });
    let mut third = replica(0);
    await_condition(SOON, "the third replica queued", || {
        etcd.candidates(&name).len() == 3
    });
    std::fs::write(&release, "").unwrap();
    let (code, stderr) = failing.finish(LIMIT);
    assert_eq!(code, Some(1), "{stderr}");
    let (code, stderr) = succeeding.finish(LIMIT);
    assert_eq!(code, Some(0), "the next in line tries: {stderr}");
    let (code, stderr) = third.finish(LIMIT);
    assert_eq!(code, Some(75), "{stderr}");
    assert!(
        stderr.contains("this --once-per window is spent by a success"),
        "{stderr}"
    );
    let tokens: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(tokens.len(), 2, "two runs in the window: {tokens:?}");

    let marker: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{name}.once-per")).unwrap()).unwrap();
    let attempts = marker["attempts"].as_array().expect("attempts");
    let states: Vec<(String, String)> = attempts
        .iter()
        .map(|a| {
            (
                a["token"].to_string(),
                a["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (tokens[0].clone(), "failed".to_string()),
            (tokens[1].clone(), "succeeded".to_string())
        ],
        "{marker}"
    );
    assert_eq!(attempts[0]["why"], "exited with 1", "{marker}");
    assert_eq!(marker["attempts_allowed"], 3, "{marker}");

    let status = lr(etcd)
        .status()
        .name(&name)
        .args(["--json"])
        .finish_within(SOON);
    let object: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(object["last_run"]["verdict"], "succeeded", "{object}");
    assert_eq!(
        object["last_run"]["attempts"], marker["attempts"],
        "{object}"
    );
    let text = lr(etcd).status().name(&name).finish_within(SOON);
    assert!(
        text.stdout
            .contains("once-per: spent by a success (run 1: claimed at "),
        "{}",
        text.stdout
    );
}

/// Without --wait, the next firing tries after a failure, up to the
/// bound; by default (one attempt) a failure spends the window.
#[test]
fn without_wait_the_next_firing_tries_up_to_the_bound() {
    let etcd = Etcd::shared();
    let run = |name: &str, attempts: &str, code: u8| {
        lr(etcd)
            .name(name)
            .verbose()
            .args(["--once-per", "1h", "--once-per-attempts", attempts])
            .run_within(["sh", "-c", &format!("exit {code}")], SOON)
    };
    let name = unique("jobs/bounded");
    assert_eq!(run(&name, "2", 3).code, Some(3));
    // A replica of several runners is refused a window of several
    // attempts, whatever its own --once-per-attempts.
    let runners = lr(etcd)
        .name(&name)
        .args(["--once-per", "1h", "--max-running", "2"])
        .run_within(["true"], SOON);
    assert_one_error_line(
        &runners,
        "allows 2 attempts, one runner at a time",
        "runners",
    );
    assert_eq!(run(&name, "2", 4).code, Some(4), "the second attempt runs");
    let third = run(&name, "2", 0);
    assert_eq!(third.code, Some(75), "{}", third.stderr);
    assert!(
        third.stderr.contains("spent: 2 attempts, none succeeded"),
        "{}",
        third.stderr
    );
    assert!(third.stderr.contains("exited with 4"), "{}", third.stderr);

    // One attempt, the default: the failure spends it.
    let name = unique("jobs/one-attempt");
    assert_eq!(run(&name, "1", 3).code, Some(3));
    let second = run(&name, "1", 0);
    assert_eq!(second.code, Some(75), "{}", second.stderr);
    assert!(
        second
            .stderr
            .contains("already started in this --once-per window"),
        "{}",
        second.stderr
    );
}

/// `kill -9` of leaderrun at each step between its window claim and its
/// command's start (it stops itself there, `LEADERRUN_TEST_STOP_AT`, and
/// the test kills it), in both modes: the window is not spent, and the
/// next run, once the killed run's lease is gone, runs.
#[test]
fn a_run_killed_before_its_command_started_spends_no_window() {
    let etcd = Etcd::shared();
    for (step, attempts) in [
        ("window-claimed", "1"),
        ("spawning", "1"),
        ("window-claimed", "3"),
        ("spawning", "3"),
    ] {
        let name = unique("jobs/killed-early");
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        let mut killed = lr(etcd)
            .name(&name)
            .ttl(Duration::from_secs(2))
            .env("LEADERRUN_TEST_STOP_AT", step)
            .args(["--once-per", "1h", "--once-per-attempts", attempts])
            .spawn(["sh", "-c", &format!("touch '{}'", ran.display())]);
        let pid = killed.pid();
        await_condition(SOON, "leaderrun stopped at the step", || {
            process_state(pid).as_deref() == Some("T")
        });
        let marker = etcd.get(&format!("{name}.once-per"));
        assert!(
            marker
                .as_deref()
                .is_some_and(|m| m.contains("\"state\":\"claimed\"")),
            "{step}: the window is claimed: {marker:?}"
        );
        send(pid, nix::sys::signal::Signal::SIGKILL);
        killed.await_exit(SOON);
        assert!(!ran.exists(), "{step}: the command never started");
        await_condition(LIMIT, "the killed run's key gone", || {
            etcd.candidates(&name).is_empty()
        });
        let next = lr(etcd)
            .name(&name)
            .verbose()
            .args(["--once-per", "1h", "--once-per-attempts", attempts])
            .run_within(["sh", "-c", &format!("touch '{}'", ran.display())], SOON);
        assert_eq!(next.code, Some(0), "{step}, {attempts}: {}", next.stderr);
        assert!(ran.exists(), "{step}: the next run ran");
        let after = lr(etcd)
            .name(&name)
            .args(["--once-per", "1h", "--once-per-attempts", attempts])
            .run_within(["true"], SOON);
        assert_eq!(after.code, Some(75), "{step}: now the window is spent");
    }
}

/// A marker leaderrun did not write claims no run: it is shown for what
/// it is, escaped; with no lease it keeps every run out for ever, and
/// `status` says the election is stuck (4), in every view.
#[test]
fn a_marker_written_by_hand_is_shown_as_it_is_and_is_stuck() {
    let etcd = Etcd::shared();
    let name = unique("jobs/by-hand");
    etcd.put(&format!("{name}.once-per"), "maintenance\u{1b}[2J", 0);
    let run = lr(etcd)
        .name(&name)
        .verbose()
        .args(["--once-per", "1h"])
        .run_within(["true"], SOON);
    assert_eq!(run.code, Some(75), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "has a --once-per marker leaderrun did not write, holding \"maintenance\\u{1b}[2J\""
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("pid 0"), "{}", run.stderr);
    let status = lr(etcd)
        .status()
        .name(&name)
        .args(["--json"])
        .finish_within(SOON);
    assert_eq!(status.code, Some(4), "stuck: {}", status.stderr);
    let object: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let last = &object["last_run"];
    assert_eq!(last["written_by_leaderrun"], false, "{object}");
    assert_eq!(last["stuck"], true, "{object}");
    assert!(
        last.get("host").is_none() && last.get("token").is_none(),
        "{object}"
    );
    let text = lr(etcd).status().name(&name).finish_within(SOON);
    assert_eq!(text.code, Some(4));
    assert!(
        text.stdout
            .contains("(stuck; remove it with: etcdctl --endpoints="),
        "{}",
        text.stdout
    );
    let all = lr(etcd)
        .status()
        .args(["--all", "--prefix", &name])
        .finish_within(SOON);
    assert!(
        all.stdout
            .contains("stuck: a --once-per marker with no lease"),
        "{}",
        all.stdout
    );
    let metrics = lr(etcd)
        .status()
        .args(["--all", "--prefix", &name, "--format", "prometheus"])
        .finish_within(SOON);
    let line = format!("leaderrun_stuck{{election=\"{name}\"}} 1");
    assert!(metrics.stdout.contains(&line), "{}", metrics.stdout);
    // A key with no lease that leads: stuck too, and no leader that can
    // lose its place (status --name exits 4 for it).
    let stale = format!("{name}-stale");
    etcd.put(&format!("{stale}/1234abcd"), "by hand", 0);
    let metrics = lr(etcd)
        .status()
        .args(["--all", "--prefix", &stale, "--format", "prometheus"])
        .finish_within(SOON);
    for line in [
        format!("leaderrun_leader_present{{election=\"{stale}\"}} 0"),
        format!("leaderrun_stuck{{election=\"{stale}\"}} 1"),
    ] {
        assert!(metrics.stdout.contains(&line), "{line}: {}", metrics.stdout);
    }
}

/// A fleet mid-upgrade: a marker as a version before attempts writes it
/// (no `attempts`) is a window that had its run, to a replica of this
/// version with `--once-per-attempts 3`; and this version's marker keeps
/// the fields those versions read (the run, its token, the window).
#[test]
fn a_fleet_mid_upgrade_runs_a_window_no_more_often_than_its_older_replicas() {
    let etcd = Etcd::shared();
    let name = unique("jobs/mixed");
    let lease = etcd.grant(3600).unwrap();
    let older = r#"{"host":"old-1","pid":7,"started":"2026-12-01T00:00:00Z","command":"/usr/local/bin/nightly","token":3,"window_s":3600}"#;
    etcd.put(&format!("{name}.once-per"), older, lease);
    let newer = lr(etcd)
        .name(&name)
        .verbose()
        .args(["--once-per", "1h", "--once-per-attempts", "3"])
        .run_within(["true"], SOON);
    assert_eq!(newer.code, Some(75), "{}", newer.stderr);
    assert!(
        newer.stderr.contains(
            "already started in this --once-per window, at 2026-12-01T00:00:00Z on old-1"
        ),
        "{}",
        newer.stderr
    );
    etcd.revoke(lease);
    // This version's marker, after a failed attempt: what an older version
    // reads of it is there, and says a run took the window.
    let failed = lr(etcd)
        .name(&name)
        .args(["--once-per", "1h", "--once-per-attempts", "3"])
        .run_within(["false"], SOON);
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    let marker: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{name}.once-per")).unwrap()).unwrap();
    for field in ["host", "pid", "started", "command", "token", "window_s"] {
        assert!(marker.get(field).is_some(), "{field} in {marker}");
    }
}
