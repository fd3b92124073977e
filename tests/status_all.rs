//! `status --all`: every election under a prefix, as lines, a JSON array,
//! or Prometheus metrics, read back here by a real parser of Prometheus's
//! text format.

mod common;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

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
    let _leader = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", "jobs/a", "--"])
            .args(pid_job(&pidfile)),
    );
    read_pid(&pidfile, LIMIT);
    for name in ["jobs/b", "other/c"] {
        let done = run_within(
            leaderrun(&etcd.endpoint()).args(["--name", name, "--", "true"]),
            LIMIT,
        );
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
