//! Run by hand in a terminal: the command can read the terminal, Ctrl-C
//! reaches it, and Ctrl-Z and `fg` work in a shell. Driven through a real
//! pseudo-terminal: leaderrun as the session leader, or a real bash with job
//! control.

use crate::common::*;
use std::io::Write;

#[test]
fn the_command_reads_the_terminal_and_ctrl_c_stops_it() {
    let etcd = Etcd::shared();
    let jobs_tty = unique("jobs/tty");
    let (mut replica, mut master) = spawn_on_pty(leaderrun(&etcd.endpoint()).args([
        "--name",
        &jobs_tty,
        "--",
        "sh",
        "-c",
        "read line; echo \"got $line\"; exec sleep 100",
    ]));

    // Wait until the command runs (it holds the key), then type a line.
    await_condition(SOON, "the command to start", || {
        etcd.candidates(&jobs_tty).len() == 1
    });
    master.write_all(b"hello\n").unwrap();
    read_until(&mut master, "got hello", SOON);
    // Not before `sleep` runs: `sh -c` catches SIGINT and acts on it only
    // once its current child is done, so a Ctrl-C between the echo and the
    // exec would wait out the sleep.
    await_condition(SOON, "the sleep to start", || {
        children_of(replica.id() as i32)
            .into_iter()
            .any(|pid| comm(pid).as_deref() == Some("sleep"))
    });

    // Ctrl-C: the terminal sends SIGINT to its foreground group.
    master.write_all(&[0x03]).unwrap();
    let status = wait_within(&mut replica, SOON, "leaderrun after Ctrl-C");
    assert_eq!(
        status.code(),
        Some(128 + 2),
        "the command's status: killed by SIGINT"
    );
}

/// In an interactive shell, Ctrl-Z stops the job and gives the prompt back,
/// and `fg` continues it with the terminal, as for any other command.
#[test]
fn ctrl_z_stops_the_job_in_a_shell_and_fg_continues_it() {
    let etcd = Etcd::start();
    let (mut bash, mut master) = interactive_bash(&etcd);
    let limit = SOON;
    master
        .write_all(b"\"$LR\" --name jobs/tstp -- sh -c 'read a; echo \"first $a\"; read b; echo \"second $b\"'\n")
        .unwrap();
    await_condition(limit, "the command to start", || {
        etcd.candidates("jobs/tstp").len() == 1
    });
    let token = etcd.candidates("jobs/tstp")[0].1;
    master.write_all(b"one\n").unwrap();
    read_until(&mut master, "first one", limit);

    // Ctrl-Z: the shell reports the job stopped and answers again.
    master.write_all(&[0x1a]).unwrap();
    read_until(&mut master, "Stopped", limit);
    master.write_all(b"echo shell-$((6 * 7))\n").unwrap();
    read_until(&mut master, "shell-42", limit);
    let held = etcd.candidates("jobs/tstp");
    assert_eq!(
        held.first().map(|key| key.1),
        Some(token),
        "leadership kept while stopped"
    );

    // fg: the command has the terminal again, under the same leadership.
    master.write_all(b"fg\n").unwrap();
    master.write_all(b"two\n").unwrap();
    read_until(&mut master, "second two", limit);
    master.write_all(b"echo exit-$?\n").unwrap();
    read_until(&mut master, "exit-0", limit);
    await_resigned(&etcd, "jobs/tstp", "resigned after the job");

    master.write_all(b"exit\n").unwrap();
    wait_within(&mut bash, limit, "the shell");
}

/// A Ctrl-Z longer than the lease allows: leaderrun renewed nothing while
/// stopped, so on `fg` it must not continue the command (it would run
/// without leadership); it kills it and exits 124.
#[test]
fn fg_after_the_lease_could_have_expired_never_continues_the_command() {
    let etcd = Etcd::start();
    let (mut bash, mut master) = interactive_bash(&etcd);
    let limit = LIMIT;
    master
        .write_all(b"\"$LR\" --name jobs/tstp-late --ttl 3s -- sh -c 'read a; echo \"first $a\"; read b; echo \"second $b\"'\n")
        .unwrap();
    await_condition(limit, "the command to start", || {
        etcd.candidates("jobs/tstp-late").len() == 1
    });
    master.write_all(b"one\n").unwrap();
    read_until(&mut master, "first one", limit);
    master.write_all(&[0x1a]).unwrap();
    read_until(&mut master, "Stopped", limit);
    await_condition(limit, "the lease to expire", || {
        etcd.candidates("jobs/tstp-late").is_empty()
    });
    // Were the command continued, it would read "two" and answer.
    master.write_all(b"fg; echo exit-$?\n").unwrap();
    master.write_all(b"two\n").unwrap();
    let seen = read_until(&mut master, "exit-124", limit);
    assert!(
        !seen.contains("second two"),
        "continued without leadership: {seen}"
    );
    master.write_all(b"exit\n").unwrap();
    wait_within(&mut bash, limit, "the shell");
}

/// A command that changed the terminal's modes and was killed cannot put
/// them back: leaderrun does, as they were when it started the command.
#[test]
fn terminal_modes_are_restored_after_the_command_is_killed() {
    use nix::sys::termios::{tcgetattr, LocalFlags};
    let etcd = Etcd::shared();
    let jobs_tty_modes = unique("jobs/tty-modes");
    let pty = Pty::open();
    let modes = LocalFlags::ECHO | LocalFlags::ICANON;
    let before = tcgetattr(&pty.slave).unwrap();
    assert!(before.local_flags.contains(modes), "{before:?}");
    let mut replica = pty.spawn(leaderrun(&etcd.endpoint()).args([
        "--name",
        &jobs_tty_modes,
        "--",
        "sh",
        "-c",
        "stty raw -echo; echo ready; sleep 30",
    ]));
    let mut master = pty.master.try_clone().unwrap();
    read_until(&mut master, "ready", SOON);
    let changed = tcgetattr(&pty.slave).unwrap();
    assert!(!changed.local_flags.intersects(modes), "{changed:?}");

    let (_, _, lease) = etcd.candidates(&jobs_tty_modes)[0];
    etcd.revoke(lease);
    let status = wait_within(&mut replica, SOON, "leaderrun");
    assert_eq!(status.code(), Some(124));
    let after = tcgetattr(&pty.slave).unwrap();
    assert_eq!(
        after.local_flags & modes,
        before.local_flags & modes,
        "echo and canonical mode not restored: {after:?}"
    );
}
