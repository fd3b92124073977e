//! `--log-format json`: every line leaderrun writes to stderr is one JSON
//! object, its own lines (errors, a loss) as much as the -v logs, in the
//! shape tracing's JSON lines have, for log shippers.

use crate::common::*;

/// Each line of `stderr` as a JSON object with a level and a message.
fn objects(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .map(|line| {
            let object: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
            assert!(object["level"].is_string(), "{line}");
            assert!(object["timestamp"].is_string(), "{line}");
            assert!(object["fields"]["message"].is_string(), "{line}");
            object
        })
        .collect()
}

#[test]
fn every_line_on_stderr_is_a_json_object() {
    let etcd = Etcd::shared();
    let jobs_log = unique("jobs/log");
    let done = lr(etcd)
        .verbose()
        .name(&jobs_log)
        .args(["--log-format", "json"])
        .run(["true"]);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let lines = objects(&done.stderr);
    assert!(
        lines
            .iter()
            .any(|line| line["fields"]["message"] == "leader"),
        "the -v lines: {}",
        done.stderr
    );

    // leaderrun's own error line, whatever the verbosity.
    let failed = run_within(
        leaderrun("http://127.0.0.1:1").args([
            "--log-format",
            "json",
            "--dial-timeout",
            "200ms",
            "--name",
            &jobs_log,
            "--",
            "true",
        ]),
        LIMIT,
    );
    assert_eq!(failed.code, Some(125), "{}", failed.stderr);
    let lines = objects(&failed.stderr);
    assert_eq!(lines.len(), 1, "{}", failed.stderr);
    assert_eq!(lines[0]["level"], "ERROR");
    let message = lines[0]["fields"]["message"].as_str().unwrap();
    assert!(message.starts_with("leaderrun: error: "), "{message}");

    // And a usage error, which comes before the options are parsed.
    let refused = run_within(
        leaderrun("http://127.0.0.1:1").args([
            "--log-format",
            "json",
            "--ttl",
            "soon",
            "--",
            "true",
        ]),
        LIMIT,
    );
    assert_eq!(refused.code, Some(125), "{}", refused.stderr);
    let lines = objects(&refused.stderr);
    assert_eq!(lines.len(), 1, "{}", refused.stderr);
    assert_eq!(lines[0]["level"], "ERROR");
}

#[test]
fn the_loss_line_is_json_too() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut replica = lr(&etcd)
        .name("jobs/logloss")
        .args(["--log-format", "json"])
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    etcd.revoke(etcd.candidates("jobs/logloss")[0].2);
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let lines = objects(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert_eq!(lines[0]["level"], "WARN");
    let message = lines[0]["fields"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("leaderrun: leadership of jobs/logloss lost: "),
        "{message}"
    );
}
