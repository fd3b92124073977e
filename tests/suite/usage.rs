//! Bad input: one clear line on stderr and exit 125, within a bound.

use crate::common::*;
use std::time::Duration;

fn one_line_125(args: &[&str], endpoints: &str, mentions: &str) {
    let done = run_within(leaderrun(endpoints).args(args), SOON);
    assert_one_error_line(&done, mentions, &format!("{args:?}"));
}

#[test]
fn bad_arguments() {
    let nowhere = "http://127.0.0.1:1";
    one_line_125(&["--bogus", "--", "true"], nowhere, "--bogus");
    one_line_125(&["--ttl", "soon", "--", "true"], nowhere, "--ttl");
    one_line_125(
        &["--kill-after", "forever", "--", "true"],
        nowhere,
        "--kill-after",
    );
    one_line_125(&["--kill-signal", "NOPE", "--", "true"], nowhere, "NOPE");
    // Options before `status` would make it the program to run.
    one_line_125(
        &["-v", "status", "--name", "x"],
        nowhere,
        "options go after 'status'",
    );
    one_line_125(&["--once-per", "0s", "--", "true"], nowhere, "at least 1s");
    one_line_125(
        &["--once-per", "400d", "--", "true"],
        nowhere,
        "at most 366 days",
    );
    one_line_125(&["--key", "k.pem", "--", "true"], nowhere, "--cert");
    let not_pem = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    one_line_125(
        &["--cacert", not_pem, "--", "true"],
        nowhere,
        "is not a PEM file",
    );
    one_line_125(
        &["--user", ":pw", "--", "true"],
        nowhere,
        "needs a user name",
    );
    // A deadline past the clock's range was once an internal error.
    one_line_125(
        &["--wait-timeout", "18446744073709551615s", "--", "true"],
        nowhere,
        "at most 366 days",
    );
    one_line_125(&[], nowhere, "COMMAND");
    // A conflict code that means something else already.
    for own in ["123", "124", "125"] {
        one_line_125(
            &["--conflict-exit-code", own, "--", "true"],
            nowhere,
            &format!("{own} already means"),
        );
    }
    // status takes one of the two names; the command was ignored.
    one_line_125(
        &["status", "--name", "a", "--", "true"],
        nowhere,
        "not both",
    );
    one_line_125(&["--name", "", "--", "true"], nowhere, "--name");
}

#[test]
fn malformed_endpoint() {
    one_line_125(&["--", "true"], "localhost", "malformed endpoint");
    one_line_125(
        &["--", "true"],
        "ftp://127.0.0.1:2379",
        "malformed endpoint",
    );
}

#[test]
fn credentials_in_an_endpoint_are_refused_unrepeated() {
    for endpoint in [
        "http://someone:s3cret-pw@127.0.0.1:2379",
        "someone:s3cret-pw@127.0.0.1:2379",
    ] {
        let done = Lr::at(endpoint).run_within(["true"], SOON);
        assert_one_error_line(&done, "--user", endpoint);
        assert!(
            !done.stderr.contains("s3cret-pw"),
            "the password is repeated: {}",
            done.stderr
        );
    }
}

#[test]
fn refused_endpoint_fails_fast() {
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    one_line_125(&["--", "true"], &endpoint, &endpoint);
}

#[test]
fn silent_endpoint_fails_within_the_dial_timeout() {
    // Accepts connections and never answers: a hung etcd.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let done = Lr::at(&endpoint)
        .args(["--dial-timeout", "1s"])
        .run_within(["true"], SOON);
    assert_eq!(done.code, Some(125), "{}", done.stderr);
    assert!(done.stderr.contains("no answer"), "{}", done.stderr);
    assert!(
        done.took < Duration::from_secs(5),
        "bounded by the dial timeout: {:?}",
        done.took
    );
}

#[test]
fn etcdctl_endpoints_is_the_fallback() {
    let done = run_within(
        leaderrun("")
            .env_remove("LEADERRUN_ENDPOINTS")
            .env("ETCDCTL_ENDPOINTS", "127.0.0.1:1")
            .args(["--", "true"]),
        SOON,
    );
    assert_eq!(done.code, Some(125));
    assert!(
        done.stderr.contains("http://127.0.0.1:1"),
        "{}",
        done.stderr
    );
}

/// With too few file descriptors leaderrun says so, as any other error of
/// its own; it never panics.
#[test]
fn low_file_descriptor_limits_never_panic() {
    let etcd = Etcd::start();
    for limit in 4..=24 {
        let script = format!("ulimit -n {limit}; exec \"$LR\" --name jobs/fd-{limit} -- true");
        let done = run_within(
            leaderrun_env(&mut std::process::Command::new("sh"), &etcd.endpoint())
                .env("LR", env!("CARGO_BIN_EXE_leaderrun"))
                .args(["-c", &script]),
            Duration::from_secs(20),
        );
        let context = format!("ulimit -n {limit}: exit {:?}: {}", done.code, done.stderr);
        assert_ne!(done.code, Some(134), "{context}");
        assert!(!done.stderr.contains("panicked"), "{context}");
        match done.code {
            Some(0) => {}
            Some(125) => {
                assert_eq!(done.stderr.lines().count(), 1, "{context}");
                assert!(done.stderr.starts_with("leaderrun: error: "), "{context}");
            }
            _ => panic!("{context}"),
        }
    }
}

/// `--help >/dev/full` said nothing and exited 0: the reader got no help,
/// and nothing told it so. Now one line and 125, as for any failure.
#[test]
fn help_and_version_that_cannot_be_written_fail() {
    for flag in ["--help", "--version"] {
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let done = std::process::Command::new(env!("CARGO_BIN_EXE_leaderrun"))
            .arg(flag)
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(125), "{flag}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flag}: {stderr}");
        assert!(stderr.contains("writing to stdout"), "{flag}: {stderr}");
    }
}
