//! `status --all`: every election under a prefix, as lines, a JSON array,
//! or Prometheus metrics, read back here by a real parser of Prometheus's
//! text format.

use crate::common::*;
use std::time::Duration;

fn all(etcd: &Etcd, extra: &[&str]) -> Finished {
    run_within(
        leaderrun(&etcd.endpoint())
            .args(["status", "--all", "--prefix", "jobs/"])
            .args(extra),
        LIMIT,
    )
}

#[test]
fn every_election_under_a_prefix_as_lines_json_and_metrics() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    // jobs/a leads now; jobs/b ran once and succeeded; other/c is outside.
    let _leader = lr(&etcd).name("jobs/a").spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    for name in ["jobs/b", "other/c"] {
        let done = lr(&etcd).name(name).run(["true"]);
        assert_eq!(done.code, Some(0), "{}", done.stderr);
    }

    let text = all(&etcd, &[]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", text.stdout);
    assert!(lines[0].starts_with("jobs/a: led by pid "), "{}", lines[0]);
    assert!(
        lines[1].starts_with("jobs/b: no leader, 0 waiting; last run: succeeded on "),
        "{}",
        lines[1]
    );

    let json = all(&etcd, &["--json"]);
    let array: serde_json::Value = serde_json::from_str(&json.stdout).expect("a JSON array");
    let names: Vec<&str> = array
        .as_array()
        .unwrap()
        .iter()
        .map(|object| object["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["jobs/a", "jobs/b"]);
    assert_eq!(array[1]["last_succeeded"]["outcome"], "succeeded");

    let metrics = all(&etcd, &["--format", "prometheus"]);
    assert_eq!(metrics.code, Some(0), "{}", metrics.stderr);
    let scrape =
        prometheus_parse::Scrape::parse(metrics.stdout.lines().map(|line| Ok(line.to_string())))
            .expect("the text exposition format");
    let value = |metric: &str, election: &str| {
        scrape
            .samples
            .iter()
            .find(|sample| {
                sample.metric == metric && sample.labels.get("election") == Some(election)
            })
            .map(|sample| match sample.value {
                prometheus_parse::Value::Gauge(value) => value,
                ref other => panic!("{metric} is not a gauge: {other:?}"),
            })
    };
    assert_eq!(value("leaderrun_leader_present", "jobs/a"), Some(1.0));
    assert_eq!(value("leaderrun_leader_present", "jobs/b"), Some(0.0));
    assert_eq!(value("leaderrun_waiters", "jobs/a"), Some(0.0));
    assert_eq!(value("leaderrun_last_run_exit_code", "jobs/b"), Some(0.0));
    let success = value("leaderrun_last_success_timestamp_seconds", "jobs/b").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - success).abs() < 600.0, "{success} vs {now}");
    assert_eq!(value("leaderrun_leader_present", "other/c"), None);
    assert!(scrape
        .docs
        .contains_key("leaderrun_last_run_duration_seconds"));
}

/// Two `etcdctl elect` holders of names that are not UTF-8, `odd/\xfe` and
/// `odd/\xff`, were folded into one election `odd/\u{fffd}` whose leader
/// was looked up under the lossy name: none. Each is its own election,
/// with its leader, in every format.
#[test]
fn names_that_are_not_utf8_stay_apart_with_their_leaders() {
    let etcd = Etcd::start();
    // etcd's own election API, as `etcdctl elect` campaigns.
    etcd.with(async |mut client| {
        for (name, proposal) in [(&b"odd/\xfe"[..], "p-fe"), (&b"odd/\xff"[..], "p-ff")] {
            let lease = client.lease_grant(60, None).await.unwrap().id();
            client
                .campaign(name.to_vec(), proposal, lease)
                .await
                .unwrap();
        }
    });
    let all = |extra: &[&str]| {
        run_within(
            leaderrun(&etcd.endpoint())
                .args(["status", "--all", "--prefix", "odd/"])
                .args(extra),
            LIMIT,
        )
    };

    let text = all(&[]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", text.stdout);
    assert!(lines[0].starts_with(r"odd/\xfe: led by "), "{}", lines[0]);
    assert!(lines[1].starts_with(r"odd/\xff: led by "), "{}", lines[1]);

    let json = all(&["--json"]);
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    let array: serde_json::Value = serde_json::from_str(&json.stdout).expect("a JSON array");
    assert_eq!(array.as_array().map(Vec::len), Some(2), "{array}");
    for (object, name, base64, proposal) in [
        (&array[0], r"odd/\xfe", "b2RkL/4=", "p-fe"),
        (&array[1], r"odd/\xff", "b2RkL/8=", "p-ff"),
    ] {
        assert_eq!(object["name"], name, "{object}");
        assert_eq!(object["name_base64"], base64, "{object}");
        assert_eq!(object["holder"]["command"], proposal, "{object}");
        let key = object["key"].as_str().expect("a leader key");
        assert!(key.starts_with(&format!("{name}/")), "{object}");
    }
    // A UTF-8 name has no name_base64: its "name" is exact.
    let plain = lr(&etcd)
        .status()
        .name("odd/plain")
        .args(["--json"])
        .finish();
    let plain: serde_json::Value = serde_json::from_str(&plain.stdout).expect("one object");
    assert!(plain.get("name_base64").is_none(), "{plain}");

    let metrics = all(&["--format", "prometheus"]);
    assert_eq!(metrics.code, Some(0), "{}", metrics.stderr);
    prometheus_parse::Scrape::parse(metrics.stdout.lines().map(|line| Ok(line.to_string())))
        .expect("the text exposition format");
    // The exposition format escapes the backslash of `\xfe` itself.
    for series in [
        r#"leaderrun_leader_present{election="odd/\\xfe"} 1"#,
        r#"leaderrun_leader_present{election="odd/\\xff"} 1"#,
    ] {
        assert!(
            metrics.stdout.lines().any(|line| line == series),
            "{series}: {}",
            metrics.stdout
        );
    }
    assert!(!metrics.stdout.contains('\u{fffd}'), "{}", metrics.stdout);
}

/// `status --all --json` wrote election by election: an etcd that stopped
/// answering mid-way left half a JSON array on stdout, which a script
/// might take for the whole. JSON and the metrics are written whole or not
/// at all: on error, stdout is empty, with one line on stderr and 125.
#[test]
fn etcd_failing_midway_leaves_no_partial_json_or_metrics() {
    let etcd = Etcd::start();
    // Enough elections that reading them all outlasts the wait below.
    let record = r#"{"host":"web-1","pid":1,"token":1,"command":"true","started":"2026-01-01T00:00:00Z","finished":"2026-01-01T00:00:01Z","duration_s":1.0,"exit_code":0,"outcome":"succeeded"}"#;
    etcd.with(async |mut client| {
        for batch in 0..20 {
            let puts: Vec<_> = (0..100)
                .map(|at| {
                    let key = format!("jobs/e{:04}.last-finished", batch * 100 + at);
                    etcd_client::TxnOp::put(key, record, None)
                })
                .collect();
            client
                .txn(etcd_client::Txn::new().and_then(puts))
                .await
                .unwrap();
        }
    });
    for format in [&["--json"][..], &["--format", "prometheus"][..]] {
        let before = etcd.handled("Txn");
        let started = std::time::Instant::now();
        let status = leaderrun(&etcd.endpoint())
            .args([
                "status",
                "--all",
                "--prefix",
                "jobs/",
                "--dial-timeout",
                "1s",
            ])
            .args(format)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Each election's records are one Txn: freeze etcd a few elections
        // in, long before the last.
        await_condition(LIMIT, "status to read a few elections", || {
            etcd.handled("Txn") >= before + 5
        });
        let frozen = etcd.freeze();
        let output = status.wait_with_output().unwrap();
        frozen.thaw();
        let done = Finished {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            took: started.elapsed(),
        };
        assert!(
            done.stdout.is_empty(),
            "{format:?}: {} bytes written: {:.200}",
            done.stdout.len(),
            done.stdout
        );
        assert_one_error_line(&done, "etcd", &format!("{format:?}"));
    }
}

/// `status --all` exits 0 once it has read every election, whoever leads:
/// with no elections at all, and with elections that nobody leads (status
/// for one name exits 3 then). Documented in status(1) and `--help`.
#[test]
fn all_exits_zero_once_read_whoever_leads() {
    let etcd = Etcd::start();
    for format in [&[][..], &["--json"], &["--format", "prometheus"]] {
        let none = all(&etcd, format);
        assert_eq!(
            none.code,
            Some(0),
            "no elections {format:?}: {}",
            none.stderr
        );
    }
    let ran = lr(&etcd).name("jobs/over").run(["true"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    // A record, and a stale-free election nobody leads.
    let one = lr(&etcd).status().name("jobs/over").finish();
    assert_eq!(one.code, Some(3), "{}", one.stderr);
    let listed = all(&etcd, &[]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    // status takes no --version (leaderrun-status(1) no longer says it does).
    let version = run_within(leaderrun(&etcd.endpoint()).args(["status", "-V"]), LIMIT);
    assert_eq!(version.code, Some(125), "{}", version.stdout);
}

/// A run that died without its end record (its leaderrun SIGKILLed): the
/// fleet's text view said only the earlier run's success, as if all were
/// well; JSON and the metrics already said its leader is gone.
#[test]
fn all_shows_a_run_that_died_without_its_end() {
    let etcd = Etcd::start();
    let name = "jobs/died";
    let ran = lr(&etcd).name(name).run(["true"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(&etcd)
        .name(name)
        .ttl(Duration::from_secs(2))
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    await_condition(LIMIT, "the start record", || {
        etcd.get("jobs/died.last-started")
            .is_some_and(|record| record.contains("\"running\""))
    });
    send(replica.pid(), nix::sys::signal::Signal::SIGKILL);
    wait_within(&mut replica.process, LIMIT, "the replica");
    await_condition(LIMIT, "the lease to expire", || {
        etcd.candidates(name).is_empty()
    });
    let listed = all(&etcd, &[]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let line = listed
        .stdout
        .lines()
        .find(|line| line.starts_with("jobs/died: "))
        .unwrap_or_else(|| panic!("{}", listed.stdout));
    assert!(
        line.contains("no end recorded, its leader is gone")
            && line.contains("; last run: succeeded"),
        "{line}"
    );
}
