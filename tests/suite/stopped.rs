//! A stopped command: a signal passed on to a stopped group still ends it
//! (leaderrun continues the group), and a command started in the background
//! of an interactive shell that stops to read the terminal is reported
//! "Stopped" by the shell, and `fg` brings it back with the terminal.

use crate::common::*;
use nix::sys::signal::Signal;
use std::io::Write;
use std::time::Instant;

#[test]
fn a_stopped_command_still_ends_on_sigterm() {
    let etcd = Etcd::shared();
    let jobs_stopped = unique("jobs/stopped");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("p");
    let script = format!("echo $$ > '{}'; kill -STOP $$; sleep 60", pidfile.display());
    let mut replica = lr(etcd).name(&jobs_stopped).spawn(["sh", "-c", &script]);
    let pid = read_pid(&pidfile, SOON);
    let mut strays = Strays::new();
    strays.add(pid, "kill -STOP");
    await_condition(SOON, "the command to stop", || {
        process_state(pid).as_deref() == Some("T")
    });

    let signalled = Instant::now();
    send(replica.pid(), Signal::SIGTERM);
    let (code, stderr) = replica.finish(LIMIT);
    eprintln!("exited {:?} after SIGTERM", signalled.elapsed());
    assert_eq!(code, Some(128 + 15), "{stderr}");
    assert!(!alive(pid), "the command outlived leaderrun");
    await_resigned(etcd, &jobs_stopped, "the election key to go with leaderrun");
}

/// `leaderrun -- cat &` in bash: cat reads the terminal from the
/// background and stops with SIGTTIN; leaderrun stops the same way, so
/// bash reports the job stopped, and `fg` continues both with the terminal.
#[test]
fn a_background_job_reading_the_terminal_stops_and_fg_resumes_it() {
    let etcd = Etcd::start();
    let (mut bash, mut master) = interactive_bash(&etcd);
    let limit = SOON;
    // Report job changes at once, not only before the next prompt.
    master.write_all(b"set -b\n").unwrap();
    read_until(&mut master, "$ ", limit);
    master
        .write_all(b"\"$LR\" --name jobs/bg -- cat &\n")
        .unwrap();
    let mut strays = Strays::new();
    strays.add_session(bash.id() as i32);
    let mut cat = None;
    await_condition(limit, "cat to start", || {
        cat = children_of(bash.id() as i32)
            .into_iter()
            .flat_map(children_of)
            .find(|pid| comm(*pid).as_deref() == Some("cat"));
        cat.is_some()
    });
    let cat = cat.unwrap();
    read_until(&mut master, "Stopped", limit);
    master.write_all(b"echo shell-$((6 * 7))\n").unwrap();
    read_until(&mut master, "shell-42", limit);
    assert_eq!(
        etcd.candidates("jobs/bg").len(),
        1,
        "leadership kept while stopped"
    );

    // fg: once cat has the terminal, in the mode bash left it (echo on), a
    // line typed is echoed by the terminal and then by cat.
    master.write_all(b"fg\n").unwrap();
    await_condition(limit, "cat to run in the foreground", || {
        process_state(cat).as_deref() != Some("T")
            && nix::unistd::tcgetpgrp(&master).is_ok_and(|group| group.as_raw() == cat)
    });
    master.write_all(b"meow\n").unwrap();
    read_until(&mut master, "meow\r\nmeow\r\n", limit);
    master.write_all(&[0x04]).unwrap();
    master.write_all(b"echo exit-$?\n").unwrap();
    read_until(&mut master, "exit-0", limit);
    await_resigned(&etcd, "jobs/bg", "resigned after the job");

    master.write_all(b"exit\n").unwrap();
    wait_within(&mut bash, limit, "the shell");
}
