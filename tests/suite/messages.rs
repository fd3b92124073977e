//! Names, environment and messages: a nested leaderrun, `--wait-timeout 0`,
//! small input errors, PEM files of the wrong kind, a full etcd, a closed
//! stdout for `status`, and command lines too big for an etcd value.

use crate::common::*;
use std::process::Stdio;
use std::time::Duration;

const NOWHERE: &str = "http://127.0.0.1:1";

/// A leaderrun run by leaderrun derives its own election from its command
/// line: it neither inherits the outer one's name nor queues behind it.
#[test]
fn a_nested_leaderrun_derives_its_own_election() {
    let etcd = Etcd::shared();
    let jobs_outer = unique("jobs/outer");
    let done = run_within(
        leaderrun(&etcd.endpoint())
            .args(["--name", &jobs_outer, "--"])
            .arg(env!("CARGO_BIN_EXE_leaderrun"))
            .args(["--", "sh", "-c", "echo inner ran"]),
        LIMIT,
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(done.stdout, "inner ran\n", "{}", done.stderr);
    await_resigned(etcd, &jobs_outer, "the outer resigned");
}

/// `--wait --wait-timeout 0` looks at the queue once: it runs when nobody
/// leads, and gives up at once when someone does.
#[test]
fn wait_timeout_zero_runs_when_free_and_gives_up_when_held() {
    let etcd = Etcd::shared();
    let jobs_wait0 = unique("jobs/wait0");
    let run = || {
        lr(etcd)
            .name(&jobs_wait0)
            .wait()
            .args(["--wait-timeout", "0"])
            .run_within(["echo", "ran"], LIMIT)
    };
    let free = run();
    assert_eq!(free.code, Some(0), "{}", free.stderr);
    assert_eq!(free.stdout, "ran\n");

    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let _leader = lr(etcd).name(&jobs_wait0).spawn(pid_job(&pidfile));
    read_pid(&pidfile, Duration::from_secs(20));
    let held = run();
    assert_eq!(held.code, Some(75), "{}", held.stderr);
    assert!(held.stdout.is_empty(), "ran beside the leader");
    assert!(held.took < SOON, "gave up after {:?}", held.took);
}

#[test]
fn small_input_errors_are_one_line_and_125() {
    let one_line_125 = |args: &[&str], endpoints: &str, mentions: &str| {
        let done = run_within(leaderrun(endpoints).args(args), Duration::from_secs(20));
        assert_one_error_line(&done, mentions, &format!("{endpoints} {args:?}"));
    };
    one_line_125(
        &["--dial-timeout", "0", "--", "true"],
        NOWHERE,
        "--dial-timeout",
    );
    one_line_125(&["--ttl", "-5", "--", "true"], NOWHERE, "negative");
    one_line_125(&["--", "true"], "::1:2379", "brackets");
    one_line_125(&["--", "true"], "h:1 h:2", "commas");
}

/// An empty program name is a command that is not found, as in a shell.
#[test]
fn an_empty_command_is_not_found() {
    let etcd = Etcd::shared();
    let jobs_empty_command = unique("jobs/empty-command");
    let done = lr(etcd)
        .name(&jobs_empty_command)
        .run_within([""], Duration::from_secs(20));
    assert_eq!(done.code, Some(127), "{}", done.stderr);
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    assert!(
        done.stderr.starts_with("leaderrun: ") && done.stderr.contains("command not found"),
        "{}",
        done.stderr
    );
}

/// A command name with a newline (or an escape sequence) in it split the
/// one-line error into two lines: control characters are escaped in every
/// line of leaderrun's, -v's lines too.
#[test]
fn control_characters_in_a_message_are_escaped() {
    let etcd = Etcd::shared();
    let jobs_odd_command = unique("jobs/odd-command");
    for verbose in [None, Some("-v")] {
        let mut command = leaderrun(&etcd.endpoint());
        command.args(["--name", &jobs_odd_command]).args(verbose);
        let done = run_within(
            command.args(["--", "no\nsuch\x1b[2J"]),
            Duration::from_secs(20),
        );
        assert_eq!(done.code, Some(127), "{}", done.stderr);
        assert!(!done.stderr.contains('\x1b'), "{:?}", done.stderr);
        let error: Vec<&str> = done
            .stderr
            .lines()
            .filter(|line| line.contains("error"))
            .collect();
        assert_eq!(error.len(), 1, "{:?}", done.stderr);
        assert!(
            error[0].contains("no\\nsuch\\u{1b}[2J"),
            "{:?}",
            done.stderr
        );
        for line in done.stderr.lines() {
            assert!(
                line.starts_with("leaderrun: ") || line.contains("INFO") || line.contains("DEBUG"),
                "a line that is not one of leaderrun's: {:?}",
                done.stderr
            );
        }
    }
}

/// `LEADERRUN_ENDPOINTS=` (set, but empty) counts as unset: the etcdctl
/// fallback applies.
#[test]
fn an_empty_leaderrun_endpoints_is_unset() {
    let etcd = Etcd::shared();
    let jobs_emptyenv = unique("jobs/emptyenv");
    let done = run_within(
        leaderrun(&etcd.endpoint())
            .env("LEADERRUN_ENDPOINTS", "")
            .env("ETCDCTL_ENDPOINTS", etcd.endpoint())
            .args(["--name", &jobs_emptyenv, "--", "echo", "ran"]),
        Duration::from_secs(20),
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(done.stdout, "ran\n");
}

/// A private key given to --cert is named as such, before any connection.
#[test]
fn a_private_key_given_as_the_certificate_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    let pem = rcgen::KeyPair::generate().unwrap().serialize_pem();
    std::fs::write(&key, pem).unwrap();
    let key = key.to_str().unwrap();
    let done = run_within(
        leaderrun(NOWHERE).args(["--cert", key, "--key", key, "--", "true"]),
        Duration::from_secs(20),
    );
    assert_one_error_line(
        &done,
        "holds a private key, not a certificate",
        "--cert KEY",
    );
}

/// Activates or deactivates the NOSPACE alarm on the member the test
/// client talks to.
fn nospace_alarm(etcd: &Etcd, action: etcd_client::AlarmAction) {
    etcd.with(async move |mut client| {
        let member = client
            .status()
            .await
            .expect("status")
            .header()
            .expect("a header")
            .member_id();
        let mut options = etcd_client::AlarmOptions::new();
        options.with_member(member);
        client
            .alarm(action, etcd_client::AlarmType::Nospace, Some(options))
            .await
            .expect("alarm changed");
    });
}

/// etcd that answers "database space exceeded" is there and refusing: the
/// message says so, not that it is unreachable.
#[test]
fn a_full_etcd_is_refused_not_unreachable() {
    let etcd = Etcd::start();
    nospace_alarm(&etcd, etcd_client::AlarmAction::Activate);
    let run = || {
        lr(&etcd)
            .name("jobs/full")
            .run_within(["echo", "ran"], LIMIT)
    };
    let full = run();
    assert_one_error_line(&full, "refused", "NOSPACE alarm");
    assert!(
        full.stderr.contains("database space exceeded"),
        "{}",
        full.stderr
    );
    assert!(!full.stderr.contains("unreachable"), "{}", full.stderr);

    nospace_alarm(&etcd, etcd_client::AlarmAction::Deactivate);
    let mut done = None;
    await_condition(
        Duration::from_secs(20),
        "a run once the alarm is off",
        || {
            let attempt = run();
            let ran = attempt.code == Some(0);
            done = Some(attempt);
            ran
        },
    );
    assert_eq!(done.unwrap().stdout, "ran\n");
}

/// `status | head -1` and the like: stdout closed before status writes is
/// how such a pipeline ends, not an error of leaderrun's.
#[test]
fn status_to_a_closed_pipe_is_not_an_error() {
    let etcd = Etcd::shared();
    let jobs_pipe = unique("jobs/pipe");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let _leader = lr(etcd).name(&jobs_pipe).spawn(pid_job(&pidfile));
    read_pid(&pidfile, Duration::from_secs(20));

    for extra in [&[][..], &["--json"][..]] {
        let status = || {
            let mut command = leaderrun(&etcd.endpoint());
            command.args(["status", "--name", &jobs_pipe]).args(extra);
            command
        };
        let open = run_within(&mut status(), Duration::from_secs(20));
        assert_eq!(open.code, Some(0), "{extra:?}: {}", open.stderr);
        assert!(!open.stdout.is_empty(), "{extra:?}");

        // The reading end is closed before leaderrun starts: every write
        // to stdout fails.
        let (reader, writer) = nix::unistd::pipe().expect("a pipe");
        drop(reader);
        let mut child = status()
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .spawn()
            .expect("leaderrun starts");
        let stderr_pipe = child.stderr.take().unwrap();
        let (send_stderr, stderr) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = send_stderr.send(std::io::read_to_string(stderr_pipe).unwrap_or_default());
        });
        let closed = wait_within(&mut child, Duration::from_secs(20), "status");
        let stderr = stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        let context = format!("{extra:?}: {closed:?}: {stderr}");
        assert_ne!(closed.code(), Some(125), "{context}");
        assert!(!stderr.contains("Broken pipe"), "{context}");
        assert!(!stderr.contains("error"), "{context}");
        assert_eq!(closed.code(), open.code, "the same answer: {context}");
    }
}

/// A command line far over what an etcd request may carry (but within what
/// exec takes) runs: the holder value keeps only its start.
#[test]
fn a_very_long_command_line_runs() {
    let etcd = Etcd::shared();
    let jobs_long = unique("jobs/long");
    let args: Vec<String> = (0..400)
        .map(|index| format!("{index:04}{}", "a".repeat(4092)))
        .collect();
    let script = "n=0; for a; do n=$((n + ${#a})); done; echo \"$# $n\"";
    let done = run_within(
        leaderrun(&etcd.endpoint())
            .args(["--name", &jobs_long, "--", "sh", "-c", script, "sh"])
            .args(&args),
        Duration::from_secs(60),
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(
        done.stdout,
        format!("400 {}\n", 400 * 4096),
        "{}",
        done.stderr
    );
}

/// A stderr that fails (`2>/dev/full`, a reader that went away) loses
/// leaderrun's lines, and nothing else: the exit codes stay the contract,
/// and nothing panics.
#[test]
fn a_stderr_that_fails_changes_no_exit_code() {
    let etcd = Etcd::shared();
    let jobs_full = unique("jobs/full");
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let cases: [(&[&str], i32); 3] = [
        (&["--name", &jobs_full, "--", "nonexistent-command-zz"], 127),
        (
            &["-vv", "--name", &jobs_full, "--", "sh", "-c", "exit 3"],
            3,
        ),
        (
            &[
                "-v",
                "--name",
                &jobs_full,
                "--timeout",
                "1s",
                "--",
                "sleep",
                "60",
            ],
            123,
        ),
    ];
    for (args, expected) in cases {
        let mut command = leaderrun(&etcd.endpoint());
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(full());
        let mut child = command.spawn().expect("leaderrun starts");
        let status = wait_within(&mut child, LIMIT, "leaderrun");
        assert_eq!(status.code(), Some(expected), "{args:?}");
    }
}
