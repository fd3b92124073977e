//! Under a systemd `Type=notify` unit (`NOTIFY_SOCKET` set), leaderrun
//! tells the service manager where the run stands, over a real datagram
//! socket as systemd's: `READY=1` once in line or leading (a queued
//! replica becomes ready too), a `STATUS=` line at each stage (a queued
//! one's place as it moves), and `STOPPING=1` as the run ends. The command
//! does not inherit the socket unless `--pass-notify-socket`; a socket
//! nobody reads never holds the run up.

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
        queued.starts_with(&format!("READY=1\nSTATUS=queued for {name}; {behind}"))
            && queued.ends_with(" leads\n"),
        "{queued}"
    );

    // Told as it joined, then its place as the wait shown read the line.
    let placed = second.next();
    assert!(
        placed.starts_with(&format!(
            "READY=1\nSTATUS=queued for {name}: place 2 in line; {behind}"
        )) && placed.ends_with(" leads\n"),
        "{placed}"
    );

    send(leader.pid(), Signal::SIGTERM);
    assert_eq!(
        first.next(),
        format!("STOPPING=1\nSTATUS=ending the run of {name}: its command's job stopped, then resigning\n")
    );
    assert_eq!(leader.finish(LIMIT).0, Some(143));
    let leading = second.next();
    let token = etcd.candidates(&name)[0].1;
    assert_eq!(
        leading,
        format!("READY=1\nSTATUS=leading {name} with fencing token {token}; the command runs\n")
    );
    // Neither command was given the socket.
    await_condition(SOON, "the second command to start", || {
        std::fs::read_to_string(&seen).is_ok_and(|seen| seen.lines().count() == 2)
    });
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "unset\nunset\n");
    send(waiter.pid(), Signal::SIGTERM);
    assert_eq!(waiter.finish(LIMIT).0, Some(143));
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
fn a_socket_that_is_not_there_costs_only_a_v_line() {
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

/// A service manager that stopped reading: its socket's queue full. Every
/// notification is refused at once, and the run goes on as if none were
/// listening: a leader stops its command on SIGTERM, a short run ends. A
/// blocking send once froze the whole run there, renewals included.
#[test]
fn a_socket_nobody_reads_never_holds_the_run_up() {
    let etcd = Etcd::shared();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deaf");
    let deaf = UnixDatagram::bind(&path).unwrap();
    let filler = UnixDatagram::unbound().unwrap();
    filler.set_nonblocking(true).unwrap();
    while filler.send_to(b"STATUS=filler\n", &path).is_ok() {}
    let path = path.display().to_string();

    let done = lr(etcd)
        .name(&unique("jobs/notify-deaf"))
        .env("NOTIFY_SOCKET", &path)
        .run_within(["sh", "-c", "exit 5"], SOON);
    assert_eq!(done.code, Some(5), "{}", done.stderr);

    let name = unique("jobs/notify-deaf");
    let mut leader = lr(etcd)
        .name(&name)
        .env("NOTIFY_SOCKET", &path)
        .spawn(["sleep", "1000"]);
    await_condition(SOON, "a leader", || etcd.candidates(&name).len() == 1);
    send(leader.pid(), Signal::SIGTERM);
    assert_eq!(leader.finish(SOON).0, Some(143));
    drop(deaf);
}

/// NOTIFY_SOCKET may name a socket in the abstract namespace (`@name`),
/// as some service managers give it.
#[test]
fn an_abstract_socket_is_told_too() {
    use std::os::linux::net::SocketAddrExt;
    let etcd = Etcd::shared();
    let name = unique("jobs/notify-abstract");
    let abstract_name = format!("leaderrun-suite-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
    let manager = UnixDatagram::bind_addr(&address).unwrap();
    manager.set_read_timeout(Some(LIMIT)).unwrap();
    let done = lr(etcd)
        .name(&name)
        .env("NOTIFY_SOCKET", &format!("@{abstract_name}"))
        .run(["true"]);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let mut buffer = [0; 4096];
    let read = manager.recv(&mut buffer).expect("a notification");
    let first = String::from_utf8_lossy(&buffer[..read]);
    assert_eq!(first, format!("STATUS=campaigning for {name}\n"));
}

/// A replica that waits out a pause is ready (it has started, and waits as
/// it was asked to) and says who paused; a pause key written by hand
/// holding a megabyte still gets it there, its status cut short.
#[test]
fn a_replica_waiting_out_a_pause_is_ready_and_says_so() {
    let etcd = Etcd::shared();
    let name = unique("workers/paused");
    let dir = tempfile::tempdir().unwrap();
    let manager = Manager::bind(dir.path(), "p");
    etcd.put(&format!("{name}.paused"), &"z".repeat(1 << 20), 0);
    let mut waiter = lr(etcd)
        .name(&name)
        .wait()
        .env("NOTIFY_SOCKET", &manager.path)
        .spawn(["true"]);
    assert_eq!(manager.next(), format!("STATUS=campaigning for {name}\n"));
    let paused = manager.next();
    let said = format!(
        "READY=1\nSTATUS={name} is paused by a key leaderrun did not write, holding \"{}",
        "z".repeat(100)
    );
    assert!(paused.starts_with(&said), "{paused}");
    assert!(paused.len() < 1100, "{} bytes", paused.len());
    etcd.delete(&format!("{name}.paused"));
    let (code, stderr) = waiter.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
}
