//! Like timeout(1) or flock(1): stdio passes through, the status comes back.

use crate::common::*;
use std::io::Write;
use std::process::Stdio;

#[test]
fn stdin_and_stdout_pass_through() {
    let etcd = Etcd::start();
    let mut child = leaderrun(&etcd.endpoint())
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"x\ny\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"x\ny\n");
}

#[test]
fn exit_status_table() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("plain-file");
    std::fs::write(&not_executable, "data").unwrap();
    let cases: Vec<(Vec<String>, i32)> = vec![
        (vec!["true".into()], 0),
        (vec!["sh".into(), "-c".into(), "exit 3".into()], 3),
        (
            vec!["sh".into(), "-c".into(), "kill -USR1 $$".into()],
            128 + 10,
        ),
        (vec!["sh".into(), "-c".into(), "kill -9 $$".into()], 128 + 9),
        (vec![not_executable.display().to_string()], 126),
        (vec!["no-such-command-anywhere".into()], 127),
    ];
    for (command, expected) in cases {
        let done = run_within(leaderrun(&etcd.endpoint()).arg("--").args(&command), SOON);
        assert_eq!(done.code, Some(expected), "{command:?}: {}", done.stderr);
        if (126..=127).contains(&expected) {
            assert_eq!(done.stderr.lines().count(), 1, "one line: {}", done.stderr);
        } else {
            assert!(done.stderr.is_empty(), "quiet: {}", done.stderr);
        }
    }
}
