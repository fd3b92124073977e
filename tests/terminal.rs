//! Run by hand in a terminal: the command can read the terminal, Ctrl-C
//! reaches it, and Ctrl-Z and `fg` work in a shell. Driven through a real
//! pseudo-terminal: leaderrun as the session leader, or a real bash with job
//! control.

mod common;
use common::*;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn read_until(master: &mut std::fs::File, needle: &str, limit: Duration) -> String {
    let started = Instant::now();
    let mut seen = String::new();
    let mut buffer = [0u8; 1024];
    while !seen.contains(needle) {
        assert!(
            started.elapsed() < limit,
            "no {needle:?} on the terminal; saw {seen:?}"
        );
        match master.read(&mut buffer) {
            Ok(0) => std::thread::sleep(Duration::from_millis(10)),
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(err) => panic!("reading the terminal: {err}; saw {seen:?}"),
        }
    }
    seen
}

/// Starts `command` as a session leader with a fresh pseudo-terminal as its
/// controlling terminal and stdio, the way a terminal emulator starts a
/// shell. Returns the process and the terminal's master side.
fn spawn_on_pty(command: &mut Command) -> (std::process::Child, std::fs::File) {
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let slave: OwnedFd = pty.slave;
    command
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::setsid()?;
            if nix::libc::ioctl(0, nix::libc::TIOCSCTTY as _, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let process = command.spawn().expect("starts on the terminal");
    let master = std::fs::File::from(pty.master);
    nix::fcntl::fcntl(
        &master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();
    (process, master)
}

#[test]
fn the_command_reads_the_terminal_and_ctrl_c_stops_it() {
    let etcd = Etcd::start();
    let (mut replica, mut master) = spawn_on_pty(leaderrun(&etcd.endpoint()).args([
        "--name",
        "jobs/tty",
        "--",
        "sh",
        "-c",
        "read line; echo \"got $line\"; sleep 100",
    ]));

    // Wait until the command runs (it holds the key), then type a line.
    await_condition(Duration::from_secs(10), "the command to start", || {
        etcd.candidates("jobs/tty").len() == 1
    });
    master.write_all(b"hello\n").unwrap();
    read_until(&mut master, "got hello", Duration::from_secs(10));

    // Ctrl-C: the terminal sends SIGINT to its foreground group.
    master.write_all(&[0x03]).unwrap();
    let status = wait_within(
        &mut replica,
        Duration::from_secs(10),
        "leaderrun after Ctrl-C",
    );
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
    let (mut bash, mut master) = spawn_on_pty(
        Command::new("bash")
            .args(["--norc", "--noprofile", "-i"])
            .env("PS1", "$ ")
            .env("TERM", "dumb")
            .env("LR", env!("CARGO_BIN_EXE_leaderrun"))
            .env("LEADERRUN_ENDPOINTS", etcd.endpoint()),
    );
    let limit = Duration::from_secs(10);
    read_until(&mut master, "$ ", limit);
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
    assert!(
        etcd.candidates("jobs/tstp").is_empty(),
        "resigned after the job"
    );

    master.write_all(b"exit\n").unwrap();
    wait_within(&mut bash, limit, "the shell");
}
