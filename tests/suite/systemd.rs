//! Under a systemd `Type=notify` unit (`NOTIFY_SOCKET` set), leaderrun
//! tells the service manager where the run stands, over a real datagram
//! socket as systemd's: `READY=1` once in line or leading (a queued
//! replica becomes ready too), a `STATUS=` line at each stage, and
//! `STOPPING=1` as the command is stopped. The command does not inherit
//! the socket unless `--pass-notify-socket`.

use crate::common::*;
use nix::sys::signal::Signal;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// A notification socket, as systemd binds one for a unit.
struct Manager {
    socket: UnixDatagram,
    path: String,
}

impl Manager {
    fn bind(dir: &Path, unit: &str) -> Manager {
        let path = dir.join(unit);
        let socket = UnixDatagram::bind(&path).unwrap();
        socket.set_read_timeout(Some(LIMIT)).unwrap();
        Manager {
            socket,
            path: path.display().to_string(),
        }
    }

    /// The next notification, whole.
    fn next(&self) -> String {
        let mut buffer = [0; 4096];
        let read = self
            .socket
            .recv(&mut buffer)
            .expect("a notification within the limit");
        String::from_utf8(buffer[..read].to_vec()).unwrap()
    }
}

#[test]
fn a_leader_and_a_waiter_are_ready_and_say_where_they_stand() {
    let etcd = Etcd::shared();
    let name = unique("workers/notified");
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (
        Manager::bind(dir.path(), "a"),
        Manager::bind(dir.path(), "b"),
    );
    let seen = dir.path().join("seen");
    let job = format!(
        "echo \"${{NOTIFY_SOCKET-unset}}\" >> '{}'; exec sleep 1000",
        seen.display()
    );

    // A replica of the service, its unit's socket `manager`'s.
    let replica = |manager: &Manager| {
        lr(etcd)
            .name(&name)
            .wait()
            .env("NOTIFY_SOCKET", &manager.path)
            .spawn(["sh", "-c", &job])
    };
    let mut leader = replica(&first);
    assert_eq!(first.next(), format!("STATUS=campaigning for {name}\n"));
    let leading = first.next();
    let token = etcd.candidates(&name)[0].1;
    assert_eq!(
        leading,
        format!("READY=1\nSTATUS=leading {name} with fencing token {token}; the command runs\n")
    );

    let mut waiter = replica(&second);
    assert_eq!(second.next(), format!("STATUS=campaigning for {name}\n"));
    let queued = second.next();
    let behind = format!("pid {} on ", leader.pid());
    assert!(
        queued.starts_with(&format!("READY=1\nSTATUS=queued for {name}: {behind}"))
            && queued.ends_with(" leads\n"),
        "{queued}"
    );

    send(leader.pid(), Signal::SIGTERM);
    assert_eq!(
        first.next(),
        format!("STOPPING=1\nSTATUS=stopping the command of {name}\n")
    );
    assert_eq!(leader.finish(LIMIT).0, Some(143));
    let leading = second.next();
    let token = etcd.candidates(&name)[0].1;
    assert_eq!(
        leading,
        format!("READY=1\nSTATUS=leading {name} with fencing token {token}; the command runs\n")
    );
    send(waiter.pid(), Signal::SIGTERM);
    assert_eq!(waiter.finish(LIMIT).0, Some(143));
    // Neither command was given the socket.
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(seen, "unset\nunset\n");
}

#[test]
fn the_socket_is_passed_on_only_when_asked() {
    let etcd = Etcd::shared();
    let dir = tempfile::tempdir().unwrap();
    let manager = Manager::bind(dir.path(), "unit");
    let echo = ["sh", "-c", "echo \"${NOTIFY_SOCKET-unset}\""];
    for (args, given) in [
        (&[][..], "unset"),
        (&["--pass-notify-socket"][..], &manager.path),
    ] {
        let done = lr(etcd)
            .name(&unique("jobs/notify-passed"))
            .args(args)
            .env("NOTIFY_SOCKET", &manager.path)
            .run(echo);
        assert_eq!(done.code, Some(0), "{}", done.stderr);
        assert_eq!(done.stdout, format!("{given}\n"), "{args:?}");
    }
}

/// No service manager: nothing is sent, and a socket that is not there
/// (systemd gone) costs the run nothing but a -v line.
#[test]
fn a_socket_nobody_reads_does_not_stop_the_run() {
    let etcd = Etcd::shared();
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone").display().to_string();
    let done = lr(etcd)
        .name(&unique("jobs/notify-gone"))
        .verbose()
        .env("NOTIFY_SOCKET", &gone)
        .run(["true"]);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stderr.contains("telling systemd where the run stands"),
        "{}",
        done.stderr
    );
}
