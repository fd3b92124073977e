//! Run by hand in a terminal: the command can read the terminal, and Ctrl-C
//! reaches it. Driven through a real pseudo-terminal, with leaderrun as the
//! session leader the way a shell would start it.

mod common;
use common::*;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
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

#[test]
fn the_command_reads_the_terminal_and_ctrl_c_stops_it() {
    let etcd = Etcd::start();
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let slave: OwnedFd = pty.slave;
    let slave_fd = slave.as_raw_fd();
    let mut command = leaderrun(&etcd.endpoint());
    command
        .args([
            "--name",
            "jobs/tty",
            "--",
            "sh",
            "-c",
            "read line; echo \"got $line\"; sleep 100",
        ])
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
    let mut replica = command.spawn().expect("leaderrun starts");
    let _ = slave_fd;
    let mut master = std::fs::File::from(pty.master);
    nix::fcntl::fcntl(
        &master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();

    // Wait until the command runs (it holds the key), then type a line.
    await_condition(Duration::from_secs(10), "the command to start", || {
        etcd.candidates("jobs/tty").len() == 1
    });
    master.write_all(b"hello\n").unwrap();
    read_until(&mut master, "got hello", Duration::from_secs(10));

    // Ctrl-C: the terminal sends SIGINT to its foreground group.
    master.write_all(&[0x03]).unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = replica.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "Ctrl-C did not stop the command"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        status.code(),
        Some(128 + 2),
        "the command's status: killed by SIGINT"
    );
}
