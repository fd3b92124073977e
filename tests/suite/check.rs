//! `leaderrun check`: every endpoint dialled on its own and described,
//! the settings a run would use with where each came from, a problem a
//! line on stderr and 125, what a run survives a warning and 0. (The
//! grants under authentication: `permissions.rs`; TLS: `security.rs`.)

use crate::common::*;

#[test]
fn check_describes_each_endpoint_and_where_each_setting_came_from() {
    let etcd = Etcd::shared();
    let gone = format!("127.0.0.1:{}", free_port());
    let endpoints = format!("{},{gone}", etcd.endpoint());
    let done = Lr::at(&endpoints)
        .env("LEADERRUN_TTL", "9s")
        .args([
            "check",
            "--dial-timeout",
            "2s",
            "--",
            "nightly-batch",
            "--all",
        ])
        .finish();
    assert_eq!(
        done.code,
        Some(0),
        "one endpoint is enough: {}",
        done.stderr
    );
    let out = &done.stdout;
    for said in [
        "  name          leaderrun/nightly-batch-",
        "(derived from the command line)",
        "  dial-timeout  2s (--dial-timeout)",
        "  ttl           9s (LEADERRUN_TTL)",
        "  password      none (default)",
        ": reached; etcd 3.",
        "; raft leader ",
        "; no TLS; no user",
        &format!("  http://{gone}: not usable"),
        ": granted (every run: its key)",
    ] {
        assert!(out.contains(said), "{said:?} in {out}");
    }
    let warned: Vec<&str> = done.stderr.lines().collect();
    assert_eq!(warned.len(), 1, "{}", done.stderr);
    assert!(
        warned[0].starts_with(&format!("leaderrun: warning: http://{gone}: ")),
        "{}",
        done.stderr
    );
}

/// Endpoints of two clusters are a problem: replicas that fail over
/// between them could each lead. And a report that cannot be written is
/// an error, as for `status`.
#[test]
fn check_refuses_endpoints_of_two_clusters_and_a_stdout_it_cannot_write() {
    let (one, other) = (Etcd::shared(), Etcd::start());
    let endpoints = format!("{},{}", one.endpoint(), other.endpoint());
    let done = Lr::at(&endpoints)
        .args(["check", "--name", "jobs/a"])
        .finish();
    assert_eq!(done.code, Some(125), "{}", done.stderr);
    assert!(
        done.stderr
            .contains("leaderrun: error: the endpoints belong to different etcd clusters: "),
        "{}",
        done.stderr
    );
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let written = leaderrun(&one.endpoint())
        .args(["check", "--name", "jobs/a"])
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&written.stderr);
    assert_eq!(written.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
}

#[test]
fn check_with_no_endpoint_reached_says_so_and_exits_125() {
    let gone = format!("127.0.0.1:{}", free_port());
    let done = Lr::at(&gone)
        .args(["check", "--name", "jobs/a", "--dial-timeout", "1s"])
        .finish();
    assert_eq!(done.code, Some(125), "{}", done.stderr);
    let lines: Vec<&str> = done.stderr.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"leaderrun: error: no endpoint of 1 could be used"),
        "{}",
        done.stderr
    );
    assert_eq!(
        lines.len(),
        2,
        "the endpoint, then the problem: {}",
        done.stderr
    );
    // Usage: a name is needed, and an empty one is refused.
    let unnamed = Lr::at(&gone).args(["check"]).finish();
    assert_one_error_line(&unnamed, "name the election with --name", "no name");
    let bad_ttl = Lr::at(&gone)
        .env("LEADERRUN_TTL", "soon")
        .args(["check", "--name", "jobs/a"])
        .finish();
    assert_one_error_line(&bad_ttl, "invalid value 'soon' for '--ttl", "a bad TTL");
}

/// An election that no run can ever start in, though every grant holds, is
/// a problem: a key with no lease at the head of the line, or (with
/// --once-per) a window's marker with no lease. check names each, with
/// the etcdctl del that removes it.
#[test]
fn check_names_what_keeps_every_run_out_for_ever() {
    let etcd = Etcd::shared();
    let name = unique("jobs/stuck-check");
    etcd.put(&format!("{name}.once-per"), "maintenance", 0);
    let without = lr(etcd)
        .args(["check", "--name", &name])
        .finish_within(SOON);
    assert_eq!(
        without.code,
        Some(0),
        "runs without --once-per: {}",
        without.stderr
    );
    let with = lr(etcd)
        .args(["check", "--name", &name, "--once-per", "1h"])
        .finish_within(SOON);
    assert_eq!(with.code, Some(125), "{}", with.stderr);
    assert!(
        with.stderr.contains("leaderrun: error: ")
            && with.stderr.contains("its --once-per marker has no lease"),
        "{}",
        with.stderr
    );
    assert!(
        with.stderr.contains(&format!("del '{name}.once-per'")),
        "{}",
        with.stderr
    );
    let key = format!("{name}/1234abcd");
    etcd.put(&key, "by hand", 0);
    let keyed = lr(etcd)
        .args(["check", "--name", &name])
        .finish_within(SOON);
    assert_eq!(keyed.code, Some(125), "{}", keyed.stderr);
    assert!(
        keyed.stderr.contains("is stuck: a stale key with no lease"),
        "{}",
        keyed.stderr
    );
}
