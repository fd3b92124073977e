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
