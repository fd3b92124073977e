//! Run records: every run leaves a record in etcd of where it ran, when,
//! and how it ended; `status` shows them, and `status --max-age` checks that
//! a run succeeded recently. Records are fenced by entitlement, not by
//! token: a run that still holds its key records its end, whatever the
//! tokens say; a stale one never overwrites a record newer than its win.

use crate::common::*;
use etcd_client::WatchOptions;
use std::time::{Duration, SystemTime};

fn status_json(etcd: &Etcd, name: &str) -> serde_json::Value {
    let done = lr(etcd).status().name(name).args(["--json"]).finish();
    serde_json::from_str(&done.stdout)
        .unwrap_or_else(|_| panic!("JSON: {} {}", done.stdout, done.stderr))
}

/// Runs `leaderrun --name NAME ARGS...` to its end; its exit code.
fn run(etcd: &Etcd, name: &str, args: &[&str]) -> Option<i32> {
    let done = run_within(
        leaderrun(&etcd.endpoint())
            .args(["--name", name])
            .args(args),
        LIMIT,
    );
    done.code
}

#[test]
fn every_ending_is_recorded_and_the_last_success_kept() {
    let etcd = Etcd::shared();
    let jobs_rec = unique("jobs/rec");
    let name = &jobs_rec;
    assert_eq!(
        status_json(etcd, name)["last_finished"],
        serde_json::Value::Null
    );

    assert_eq!(run(etcd, name, &["--", "true"]), Some(0));
    let shown = status_json(etcd, name);
    let finished = &shown["last_finished"];
    assert_eq!(finished["outcome"], "succeeded", "{shown}");
    assert_eq!(finished["exit_code"], 0, "{shown}");
    assert_eq!(finished["command"], "true", "{shown}");
    assert!(finished["duration_s"].as_f64().is_some(), "{shown}");
    for field in ["host", "pid", "token", "started", "finished"] {
        assert!(!finished[field].is_null(), "{field}: {shown}");
    }
    let success_token = finished["token"].clone();
    assert_eq!(shown["last_succeeded"], *finished);

    for (args, outcome, code) in [
        (vec!["--", "sh", "-c", "exit 3"], "failed", 3),
        (vec!["--", "sh", "-c", "kill -TERM $$"], "signalled", 143),
        (
            vec!["--timeout", "1s", "--", "sleep", "30"],
            "timed_out",
            123,
        ),
    ] {
        assert_eq!(run(etcd, name, &args), Some(code), "{args:?}");
        let shown = status_json(etcd, name);
        assert_eq!(shown["last_finished"]["outcome"], outcome, "{shown}");
        assert_eq!(shown["last_finished"]["exit_code"], code, "{shown}");
        assert_eq!(
            shown["last_succeeded"]["token"], success_token,
            "the last success stays: {shown}"
        );
    }
    let text = lr(etcd).status().name(name).finish();
    assert!(
        text.stdout.contains("\nlast run: timed out on "),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("\nlast success: succeeded on "),
        "{}",
        text.stdout
    );
}

#[test]
fn a_lost_run_is_recorded_as_lost() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(&etcd).name("jobs/lost").spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    await_condition(LIMIT, "the start record", || {
        status_json(&etcd, "jobs/lost")["last_finished"].is_null()
            && etcd.get("jobs/lost.last-started").is_some()
    });
    etcd.revoke(etcd.candidates("jobs/lost")[0].2);
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let shown = status_json(&etcd, "jobs/lost");
    assert_eq!(shown["last_finished"]["outcome"], "lost", "{shown}");
    assert_eq!(shown["last_succeeded"], serde_json::Value::Null, "{shown}");
}

/// A leader SIGKILLed mid-run writes no end: its start record says
/// "running" for good. `status` said "this run: running" with nobody
/// leading; it says the leader is gone.
#[test]
fn a_start_with_its_leader_gone_is_not_shown_as_running() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(&etcd)
        .name("jobs/killed")
        .ttl(Duration::from_secs(2))
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    let text = || lr(&etcd).status().name("jobs/killed").finish().stdout;
    await_condition(LIMIT, "the start record", || {
        etcd.get("jobs/killed.last-started").is_some()
    });
    assert!(text().contains("this run: running"), "{}", text());
    let running = status_json(&etcd, "jobs/killed");
    assert_eq!(running["last_started"]["state"], "running", "{running}");
    assert_eq!(metric(&etcd, "jobs/killed", GONE), Some(0.0));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(replica.pid()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_within(&mut replica.process, LIMIT, "the replica");
    await_condition(LIMIT, "the lease to expire", || {
        etcd.candidates("jobs/killed").is_empty()
    });
    let shown = text();
    assert!(!shown.contains("this run:"), "{shown}");
    assert!(
        shown.contains("last start: on ") && shown.contains("no end recorded: its leader is gone"),
        "{shown}"
    );
    // The same facts for programs: JSON and the metrics said nothing of
    // it, and went on showing the run before as the last.
    let json = status_json(&etcd, "jobs/killed");
    let started = &json["last_started"];
    assert_eq!(started["state"], "leader_gone", "{json}");
    assert_eq!(started["outcome"], "running", "{json}");
    assert_eq!(started["token"], running["last_started"]["token"], "{json}");
    assert_eq!(metric(&etcd, "jobs/killed", GONE), Some(1.0));
    let at = humantime::parse_rfc3339(started["started"].as_str().unwrap()).unwrap();
    let at = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as f64;
    assert_eq!(metric(&etcd, "jobs/killed", START), Some(at));
}

const GONE: &str = "leaderrun_last_start_leader_gone";
const START: &str = "leaderrun_last_start_timestamp_seconds";

/// One election's sample of `metric` in `status --format prometheus`.
fn metric(etcd: &Etcd, name: &str, metric: &str) -> Option<f64> {
    let done = lr(etcd)
        .status()
        .name(name)
        .args(["--format", "prometheus"])
        .finish();
    let scrape =
        prometheus_parse::Scrape::parse(done.stdout.lines().map(|line| Ok(line.to_string())))
            .unwrap_or_else(|err| panic!("{err}: {}", done.stdout));
    assert!(scrape.docs.contains_key(metric), "{}", done.stdout);
    scrape
        .samples
        .iter()
        .find(|sample| sample.metric == metric && sample.labels.get("election") == Some(name))
        .map(|sample| match sample.value {
            prometheus_parse::Value::Gauge(value) => value,
            ref other => panic!("{metric} is not a gauge: {other:?}"),
        })
}

/// A record as leaderrun writes it, to put by hand: `finished` (and the
/// outcome) only if the run ended.
fn record(token: i64, started: SystemTime, finished: Option<SystemTime>) -> String {
    let stamp = |at: SystemTime| humantime::format_rfc3339_seconds(at).to_string();
    serde_json::json!({
        "host": "web-9",
        "pid": 4242,
        "token": token,
        "command": "nightly",
        "started": stamp(started),
        "finished": finished.map(stamp),
        "duration_s": finished.map(|_| 1.0),
        "exit_code": finished.map(|_| 0),
        "outcome": if finished.is_some() { "succeeded" } else { "running" },
    })
    .to_string()
}

/// A start whose end is recorded is "ended" in JSON, and not gone.
#[test]
fn a_start_that_ended_is_shown_as_ended() {
    let etcd = Etcd::start();
    let now = SystemTime::now();
    let ended = record(9, now, Some(now));
    etcd.put("jobs/ended.last-started", &ended, 0);
    etcd.put("jobs/ended.last-finished", &ended, 0);
    let json = status_json(&etcd, "jobs/ended");
    assert_eq!(json["last_started"]["state"], "ended", "{json}");
    assert_eq!(json["last_started"]["token"], 9, "{json}");
    assert_eq!(metric(&etcd, "jobs/ended", GONE), Some(0.0));
    // No start recorded: null, and nothing gone.
    assert!(status_json(&etcd, "jobs/none")["last_started"].is_null());
    assert_eq!(metric(&etcd, "jobs/none", GONE), Some(0.0));
    assert_eq!(metric(&etcd, "jobs/none", START), None);
}

/// A replica whose clock is a day ahead records a success: read as age 0,
/// it passed `--max-age 1h` for a day and an hour. It is not fresh, and
/// the line says the writer's clock is ahead, and by how much.
#[test]
fn a_success_dated_ahead_of_our_clock_is_not_fresh() {
    let etcd = Etcd::start();
    let check = |name: &str| {
        lr(&etcd)
            .status()
            .name(name)
            .args(["--max-age", "1h"])
            .finish()
    };
    let day = Duration::from_secs(24 * 3600);
    let ahead = SystemTime::now() + day;
    etcd.put(
        "jobs/ahead.last-succeeded",
        &record(7, ahead - Duration::from_secs(1), Some(ahead)),
        0,
    );
    let done = check("jobs/ahead");
    assert_eq!(done.code, Some(2), "{} {}", done.stdout, done.stderr);
    assert_eq!(done.stdout.lines().count(), 1, "{}", done.stdout);
    assert!(
        done.stdout
            .starts_with("jobs/ahead: stale: last success: succeeded on web-9, "),
        "{}",
        done.stdout
    );
    // A day less the seconds this test took to get here.
    assert!(
        done.stdout
            .contains("the writer's clock is at least 23h 59m")
            || done.stdout.contains("the writer's clock is at least 1day "),
        "{}",
        done.stdout
    );

    // The same record, dated by a clock that agrees with ours, is fresh.
    let now = SystemTime::now();
    etcd.put(
        "jobs/now.last-succeeded",
        &record(7, now - Duration::from_secs(1), Some(now)),
        0,
    );
    let done = check("jobs/now");
    assert_eq!(done.code, Some(0), "{} {}", done.stdout, done.stderr);
}

/// A leader paused past its lease, resumed after a newer leader's run: its
/// late "lost" record is fenced off by the newer token.
#[test]
fn a_stale_leader_cannot_overwrite_a_newer_record() {
    let etcd = Etcd::shared();
    let jobs_fence = unique("jobs/fence");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut stale = lr(etcd)
        .name(&jobs_fence)
        .ttl(Duration::from_secs(2))
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    stop(stale.pid());
    let newer = lr(etcd).name(&jobs_fence).wait().run(["true"]);
    assert_eq!(newer.code, Some(0), "{}", newer.stderr);
    let before = status_json(etcd, &jobs_fence);
    assert_eq!(before["last_finished"]["outcome"], "succeeded", "{before}");
    send(stale.pid(), nix::sys::signal::Signal::SIGCONT);
    let (code, stderr) = stale.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let after = status_json(etcd, &jobs_fence);
    assert_eq!(after["last_finished"], before["last_finished"], "{after}");
}

#[test]
fn max_age_is_a_freshness_check() {
    let etcd = Etcd::start();
    let check = |name: &str, age: &str| {
        lr(&etcd)
            .status()
            .name(name)
            .args(["--max-age", age])
            .finish()
    };
    // Never succeeded: stale, whoever leads (nobody).
    let never = check("jobs/age", "1h");
    assert_eq!(never.code, Some(2), "{}", never.stderr);
    assert_eq!(never.stdout.lines().count(), 1, "{}", never.stdout);
    assert!(
        never.stdout.contains("no run has succeeded"),
        "{}",
        never.stdout
    );

    assert_eq!(run(&etcd, "jobs/age", &["--", "true"]), Some(0));
    let fresh = check("jobs/age", "1h");
    assert_eq!(fresh.code, Some(0), "{}", fresh.stderr);
    assert!(
        fresh
            .stdout
            .starts_with("jobs/age: fresh: last success: succeeded on "),
        "{}",
        fresh.stdout
    );

    // A failure does not refresh it, and time makes it stale.
    assert_eq!(run(&etcd, "jobs/age", &["--", "false"]), Some(1));
    await_condition(SOON, "the success to age past 1s", || {
        check("jobs/age", "1s").code == Some(2)
    });
    let stale = check("jobs/age", "1s");
    assert!(
        stale.stdout.contains("stale: last success: succeeded on "),
        "{}",
        stale.stdout
    );
}

/// With --max-running 2, runs finish in any order: the run with the
/// smaller token that finishes last is "last finished" (its failure was
/// recorded nowhere when records were fenced by the larger token), and the
/// success before it stays "last succeeded".
#[test]
fn with_several_runners_the_run_that_finishes_last_is_recorded() {
    let etcd = Etcd::shared();
    let jobs_order = unique("jobs/order");
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("go");
    let name = &jobs_order;
    let mut first = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", name, "--max-running", "2", "--"])
            .args(["sh", "-c", &format!("{}; exit 7", until_exists(&flag))]),
    );
    await_condition(LIMIT, "the first runner's key", || {
        etcd.candidates(name).len() == 1
    });
    let second = lr(etcd)
        .name(name)
        .args(["--max-running", "2"])
        .run(["true"]);
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let between = status_json(etcd, name);
    let success = between["last_succeeded"].clone();
    assert_eq!(success["outcome"], "succeeded", "{between}");
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(7), "{stderr}");

    let shown = status_json(etcd, name);
    let finished = &shown["last_finished"];
    assert_eq!(finished["outcome"], "failed", "{shown}");
    assert_eq!(finished["exit_code"], 7, "{shown}");
    assert!(
        finished["token"].as_i64() < success["token"].as_i64(),
        "the smaller token finished last: {shown}"
    );
    assert_eq!(shown["last_succeeded"], success, "{shown}");
    // The run that started last is the second: the first's end leaves its
    // record in `last-started` alone.
    let started: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{name}.last-started")).unwrap()).unwrap();
    assert_eq!(started["token"], success["token"], "{started}");
}

/// A run dates its leadership and its record from its command's start, not
/// from leaderrun's: a run that waited in line two seconds says that its
/// command started after the runs ahead ended, in its key (what `status`
/// shows: marked as leading a second into its command with one runner,
/// rewritten as its turn is proven with several) and in its record.
#[test]
fn a_queued_run_dates_its_start_from_its_command() {
    let etcd = Etcd::shared();
    for runners in ["1", "2"] {
        let name = unique("jobs/dated");
        let dir = tempfile::tempdir().unwrap();
        let (go, done) = (dir.path().join("go"), dir.path().join("done"));
        let slots = ["--max-running", runners];
        let mut ahead: Vec<Replica> = (0..runners.parse().unwrap())
            .map(|_| {
                lr(etcd)
                    .name(&name)
                    .args(slots)
                    .spawn(["sh", "-c", &until_exists(&go)])
            })
            .collect();
        await_condition(LIMIT, "the runners ahead", || {
            etcd.candidates(&name).len() == ahead.len()
        });
        let mut queued =
            lr(etcd)
                .name(&name)
                .args(slots)
                .wait()
                .spawn(["sh", "-c", &until_exists(&done)]);
        await_condition(LIMIT, "the run in line", || {
            etcd.candidates(&name).len() == ahead.len() + 1
        });
        let (key, token, _) = etcd.candidates(&name).pop().unwrap();
        std::thread::sleep(Duration::from_secs(2));
        // Stamps are in whole seconds, cut down.
        let released = SystemTime::now() - Duration::from_secs(1);
        std::fs::write(&go, "").unwrap();
        for replica in &mut ahead {
            assert_eq!(replica.finish(LIMIT).0, Some(0));
        }
        let stamp = |value: &serde_json::Value| {
            humantime::parse_rfc3339(value["started"].as_str().expect("started")).unwrap()
        };
        // Each version of the key, from its creation, until one dates the
        // command: the run ahead may hand over by rewriting it first.
        let (versions, dated) = etcd.with(async |mut client| {
            let from = WatchOptions::new().with_start_revision(token);
            let mut watch = client.watch(key.as_str(), Some(from)).await.unwrap();
            let mut versions = Vec::new();
            let read = async {
                loop {
                    let message = watch.message().await.unwrap().expect("the watch goes on");
                    for event in message.events() {
                        let value = event.kv().expect("a key").value();
                        versions.push(serde_json::from_slice::<serde_json::Value>(value).unwrap());
                        if stamp(versions.last().unwrap()) > released {
                            return;
                        }
                    }
                }
            };
            let dated = tokio::time::timeout(LIMIT, read).await.is_ok();
            (versions, dated)
        });
        assert!(
            dated,
            "--max-running {runners}: the key says the command started before the runs ahead ended: {versions:?}"
        );
        std::fs::write(&done, "").unwrap();
        let (code, stderr) = queued.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
        let shown = status_json(etcd, &name);
        assert!(
            stamp(&shown["last_finished"]) > released,
            "--max-running {runners}: the record says the command started before the runs ahead ended: {shown}"
        );
    }
}

/// `etcdctl make-mirror` copies records into a cluster whose revisions
/// start again low: a copied token of 900000 froze every later record with
/// --max-running above 1 (fenced by the larger token), and `--max-age`
/// said stale while jobs succeeded. Now every run replaces them, with one
/// runner or several alike.
#[test]
fn records_copied_from_another_cluster_do_not_freeze_the_records() {
    let etcd = Etcd::shared();
    let jobs_copied1 = unique("jobs/copied1");
    let jobs_copied2 = unique("jobs/copied2");
    for (name, slots) in [(&jobs_copied1, "1"), (&jobs_copied2, "2")] {
        let copied = serde_json::json!({
            "host": "old-cluster", "pid": 1, "token": 900000, "command": "batch",
            "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z",
            "duration_s": 1.0, "exit_code": 0, "outcome": "succeeded",
        })
        .to_string();
        for which in ["last-started", "last-finished", "last-succeeded"] {
            etcd.put(&format!("{name}.{which}"), &copied, 0);
        }
        assert_eq!(
            run(etcd, name, &["--max-running", slots, "--", "true"]),
            Some(0)
        );
        let shown = status_json(etcd, name);
        for which in ["last_finished", "last_succeeded"] {
            assert_ne!(shown[which]["host"], "old-cluster", "{which}: {shown}");
            assert!(shown[which]["token"].as_i64().unwrap() < 900000, "{shown}");
        }
        let fresh = lr(etcd)
            .status()
            .name(name)
            .args(["--max-age", "1h"])
            .finish();
        assert_eq!(
            fresh.code,
            Some(0),
            "--max-running {slots}: {}",
            fresh.stdout
        );
    }
}

/// libfaketime, from Debian's `faketime` package (scripts/deps installs it).
const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A run's duration is measured on the boot-time clock: the wall clock
/// stepped three hours forward while the command ran (NTP, a VM resumed)
/// made a short run read 10800 s, and a step back 0.
#[test]
fn a_wall_clock_step_does_not_change_a_runs_duration() {
    assert!(
        std::path::Path::new(FAKETIME).exists(),
        "{FAKETIME} is missing: run scripts/deps"
    );
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let (flag, offset) = (dir.path().join("go"), dir.path().join("offset"));
    let running = dir.path().join("running");
    std::fs::write(&offset, "+0\n").unwrap();
    let name = "jobs/stepped";
    // The run's start is dated as the command spawns: the clock steps
    // only once the command runs.
    let job = format!("touch '{}'; {}", running.display(), until_exists(&flag));
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", name, "--", "sh", "-c", &job])
            // Only the wall clock is faked, and read anew at every call.
            .env("LD_PRELOAD", FAKETIME)
            .env("FAKETIME_TIMESTAMP_FILE", &offset)
            .env("FAKETIME_NO_CACHE", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    );
    await_condition(LIMIT, "the command to run", || running.exists());
    std::fs::write(&offset, "+3h\n").unwrap();
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let shown = status_json(&etcd, name);
    let finished = &shown["last_finished"];
    let took = finished["duration_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("no end recorded: {shown}"));
    assert!(took < LIMIT.as_secs_f64(), "{shown}");
    // The step is real to the wall-clock fields: the end is dated 3 h on.
    let (started, ended) = (
        humantime::parse_rfc3339(finished["started"].as_str().unwrap()).unwrap(),
        humantime::parse_rfc3339(finished["finished"].as_str().unwrap()).unwrap(),
    );
    assert!(
        ended.duration_since(started).unwrap() >= Duration::from_secs(3 * 3600 - 60),
        "the wall clock did not step: {shown}"
    );
}

/// The token of an election's `last-started` record.
fn started_token(etcd: &Etcd, name: &str) -> Option<i64> {
    let value = etcd.get(&format!("{name}.last-started"))?;
    serde_json::from_str::<serde_json::Value>(&value).ok()?["token"].as_i64()
}

/// Two runners proven within a second of each other (as cron replicas
/// are): the first's start record, written a second in, landed after the
/// second's win, and the second was then never recorded as started.
/// `last-started` is the run that started last.
#[test]
fn the_run_that_started_last_is_last_started_with_several_runners() {
    let etcd = Etcd::shared();
    let jobs_starts = unique("jobs/starts");
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("go");
    let name = &jobs_starts;
    let mut first =
        lr(etcd)
            .name(name)
            .args(["--max-running", "2"])
            .spawn(["sh", "-c", &until_exists(&flag)]);
    await_condition(LIMIT, "the first runner", || {
        etcd.candidates(name).len() == 1
    });
    let first_token = etcd.candidates(name)[0].1;
    let second = lr(etcd)
        .name(name)
        .args(["--max-running", "2"])
        .run(["sleep", "1.5"]);
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let second_token = status_json(etcd, name)["last_finished"]["token"]
        .as_i64()
        .unwrap();
    assert!(second_token > first_token);
    assert_eq!(
        started_token(etcd, name),
        Some(second_token),
        "while the first runs"
    );
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(started_token(etcd, name), Some(second_token), "after both");
    assert_eq!(
        status_json(etcd, name)["last_finished"]["token"],
        first_token
    );
}

/// A leader paused past its lease, a newer run of under a second while it
/// is paused, then the old leader resumes: its "lost" end took
/// `last-started` (it held its own start record), and the newer run's end
/// was then refused there, so `last-started` named the older run.
#[test]
fn a_resumed_stale_leader_does_not_take_last_started_from_a_newer_run() {
    let etcd = Etcd::shared();
    let jobs_stale_start = unique("jobs/stale-start");
    let dir = tempfile::tempdir().unwrap();
    let (pidfile, started) = (dir.path().join("pid"), dir.path().join("b"));
    let name = &jobs_stale_start;
    let mut stale = lr(etcd)
        .name(name)
        .ttl(Duration::from_secs(2))
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    await_condition(LIMIT, "the old leader's start record", || {
        started_token(etcd, name).is_some()
    });
    stop(stale.pid());
    let job = format!("touch '{}'; sleep 0.9", started.display());
    let mut newer = lr(etcd)
        .name(name)
        .ttl(Duration::from_secs(2))
        .wait()
        .spawn(["sh", "-c", &job]);
    await_condition(LIMIT, "the newer run", || started.exists());
    send(stale.pid(), nix::sys::signal::Signal::SIGCONT);
    let (code, stderr) = stale.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let (code, stderr) = newer.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let shown = status_json(etcd, name);
    let newest = shown["last_finished"]["token"].as_i64().unwrap();
    assert_eq!(shown["last_finished"]["outcome"], "succeeded", "{shown}");
    assert_eq!(started_token(etcd, name), Some(newest), "{shown}");
}

/// A `last-succeeded` record that does not say it succeeded (written by
/// hand, or garbled) passed `--max-age` as a fresh success.
#[test]
fn max_age_takes_only_a_success_for_a_success() {
    let etcd = Etcd::shared();
    let jobs_not_a_success = unique("jobs/not-a-success");
    let name = &jobs_not_a_success;
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let failed = serde_json::json!({
        "host": "h", "pid": 1, "token": 1, "command": "batch", "started": now,
        "finished": now, "duration_s": 1.0, "exit_code": 1, "outcome": "failed",
    });
    etcd.put(&format!("{name}.last-succeeded"), &failed.to_string(), 0);
    let check = lr(etcd)
        .status()
        .name(name)
        .args(["--max-age", "1h"])
        .finish();
    assert_eq!(check.code, Some(2), "{}", check.stdout);
    assert!(
        check.stdout.contains("no run has succeeded"),
        "{}",
        check.stdout
    );
}

/// With several runners, runs overlap, and the run that started last is
/// the one whose win was proven last, not the one with the largest token:
/// a run that stood ahead of ours in line can prove its turn after ours
/// (found by the model checker, `model::tests`). A run of ours that lost
/// its key, and writes its records as no longer entitled, must not
/// replace that run's start with its own: it ordered them by token.
#[test]
fn a_lost_run_leaves_the_start_of_a_runner_proven_after_it() {
    let etcd = Etcd::shared();
    let name = unique("jobs/proven-later");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(etcd)
        .name(&name)
        .args(["--max-running", "2"])
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    let started = format!("{name}.last-started");
    await_condition(LIMIT, "our start record", || etcd.get(&started).is_some());
    let (key, token, _) = etcd.candidates(&name).remove(0);
    // The store's revision now, after our proof: a write's create revision.
    let probe = format!("{name}-probe");
    etcd.put(&format!("{probe}/now"), "", 0);
    let now = etcd.candidates(&probe)[0].1;
    let theirs = serde_json::json!({
        "host": "web-9", "pid": 9, "token": token - 1, "command": "batch",
        "started": "2026-12-01T00:00:00Z", "finished": null, "duration_s": null,
        "exit_code": null, "outcome": "running", "proven_at": now,
    });
    etcd.put(&started, &theirs.to_string(), 0);
    etcd.delete(&key);
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let shown = status_json(etcd, &name);
    assert_eq!(shown["last_started"]["host"], "web-9", "{shown}");
    assert_eq!(shown["last_finished"]["outcome"], "lost", "{shown}");
}
