//! SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM at each
//! stage of a run: while dialling etcd and while queued they end leaderrun
//! at once with 128+N and the command never runs; while the command runs
//! they are passed on to it, and its status is leaderrun's. A frozen etcd
//! does not delay the exit. One ignored when leaderrun starts (`nohup`)
//! stays ignored, for the command too.

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

const SIGNALS: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
];

/// How soon leaderrun must exit after a signal that ends it.
const PROMPTLY: Duration = Duration::from_secs(2);

/// Signals `replica`, waits for it, and checks it exited 128+N promptly.
fn signal_and_expect_exit(replica: &mut Replica, signal: Signal) -> String {
    let signalled = Instant::now();
    send(replica.pid(), signal);
    let (code, stderr) = replica.finish(Duration::from_secs(20));
    let took = active_since(signalled);
    eprintln!("{signal}: exited {code:?} {took:?} after the signal");
    assert_eq!(code, Some(128 + signal as i32), "{signal}: {stderr}");
    assert!(
        took < PROMPTLY,
        "{signal}: exited {took:?} after the signal: {stderr}"
    );
    stderr
}

#[test]
fn a_signal_while_dialling_ends_leaderrun_at_once() {
    for signal in SIGNALS {
        let silent = SilentEndpoint::start();
        let name = format!("jobs/dialling-{signal}");
        let mut replica = Replica::spawn(leaderrun(&silent.endpoint).args([
            "--dial-timeout",
            "9s",
            "--name",
            &name,
            "--",
            "true",
        ]));
        await_condition(SOON, "leaderrun to dial", || silent.accepted() > 0);
        signal_and_expect_exit(&mut replica, signal);
    }
}

#[test]
fn a_signal_while_queued_ends_leaderrun_and_the_command_never_runs() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let name = "jobs/queued-signal";
    let leader_pid = dir.path().join("leader");
    let _leader = lr(&etcd).name(name).spawn(pid_job(&leader_pid));
    read_pid(&leader_pid, SOON);
    for signal in SIGNALS {
        let ran = dir.path().join(format!("ran-{signal}"));
        let script = format!("echo ran > '{}'", ran.display());
        let mut waiter = lr(&etcd).name(name).wait().spawn(["sh", "-c", &script]);
        await_condition(SOON, "the waiter queued", || {
            etcd.candidates(name).len() == 2
        });
        signal_and_expect_exit(&mut waiter, signal);
        assert_eq!(
            etcd.candidates(name).len(),
            1,
            "{signal}: the waiter's key outlived it"
        );
        assert!(!ran.exists(), "{signal}: the command ran");
    }
}

#[test]
fn a_signal_while_the_command_runs_is_passed_on_to_it() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    for signal in SIGNALS {
        let name = format!("jobs/running-{signal}");
        let pidfile = dir.path().join(format!("{signal}"));
        // No core file from SIGQUIT.
        let script = format!(
            "ulimit -c 0; echo $$ > '{}'; exec sleep 100",
            pidfile.display()
        );
        let mut replica = Replica::spawn(
            leaderrun(&etcd.endpoint())
                .current_dir(dir.path())
                .args(["--name", &name, "--", "sh", "-c", &script]),
        );
        let child = read_pid(&pidfile, SOON);
        signal_and_expect_exit(&mut replica, signal);
        assert!(!alive(child), "{signal}: the command outlived leaderrun");
        await_resigned(&etcd, &name, &format!("{signal}: resigned"));
    }
}

#[test]
fn sigint_while_etcd_is_frozen_mid_campaign_exits_at_once_and_never_runs() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let name = "jobs/frozen-campaign";
    let leader_pid = dir.path().join("leader");
    let mut leader = lr(&etcd).name(name).spawn(pid_job(&leader_pid));
    read_pid(&leader_pid, SOON);
    let ran = dir.path().join("ran");
    let script = format!("echo ran > '{}'", ran.display());
    // A short TTL: a waiter that exits at once while etcd is frozen may
    // leave its key to go with its lease.
    let mut waiter = lr(&etcd)
        .name(name)
        .wait()
        .ttl(Duration::from_secs(3))
        .args(["--dial-timeout", "8s"])
        .spawn(["sh", "-c", &script]);
    await_condition(SOON, "the waiter queued", || {
        etcd.candidates(name).len() == 2
    });

    let frozen = etcd.freeze();
    signal_and_expect_exit(&mut waiter, Signal::SIGINT);
    frozen.thaw();

    // The leader ends; the waiter's key goes (revoked, or with its lease),
    // and nothing ever runs the waiter's command.
    send(leader.pid(), Signal::SIGTERM);
    leader.finish(LIMIT);
    await_condition(LIMIT, "the election to empty", || {
        etcd.candidates(name).is_empty()
    });
    assert!(!ran.exists(), "the signalled waiter's command ran");
}

/// A blocked signal mask is inherited across exec: started with every
/// signal blocked, leaderrun still sees its command exit (SIGCHLD) and
/// still passes SIGTERM on, instead of holding leadership for good.
#[test]
fn signals_blocked_by_whoever_started_leaderrun_still_reach_it() {
    use std::os::unix::process::CommandExt;
    let block_all = |command: &mut std::process::Command| {
        // SAFETY: one system call between fork and exec.
        unsafe {
            command.pre_exec(|| {
                let all = nix::sys::signal::SigSet::all();
                nix::sys::signal::pthread_sigmask(
                    nix::sys::signal::SigmaskHow::SIG_BLOCK,
                    Some(&all),
                    None,
                )
                .map_err(std::io::Error::from)
            });
        }
    };
    let etcd = Etcd::start();
    let mut exits = leaderrun(&etcd.endpoint());
    exits.args(["--name", "jobs/blocked", "--", "sh", "-c", "exit 4"]);
    block_all(&mut exits);
    let ran = run_within(&mut exits, LIMIT);
    assert_eq!(ran.code, Some(4), "{}", ran.stderr);

    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > '{}'; exec sleep 100", pidfile.display());
    let mut runs = leaderrun(&etcd.endpoint());
    runs.args(["--name", "jobs/blocked", "--", "sh", "-c", &script]);
    block_all(&mut runs);
    let mut replica = Replica::spawn(&mut runs);
    let child = read_pid(&pidfile, SOON);
    signal_and_expect_exit(&mut replica, Signal::SIGTERM);
    assert!(!alive(child), "the command outlived leaderrun");
}

/// `nohup leaderrun ...`: SIGHUP was ignored when leaderrun started, so it
/// stays ignored, by leaderrun and by its command, as through `flock`; so
/// does SIGINT for a background job of a shell without job control.
#[test]
fn a_signal_ignored_on_entry_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let ignored = dir.path().join("ignored");
    let script = format!(
        "grep '^SigIgn:' /proc/self/status > '{}'; echo $$ > '{}'; exec sleep 100",
        ignored.display(),
        pidfile.display()
    );
    let mut command = leaderrun(&etcd.endpoint());
    command.args(["--name", "jobs/nohup", "--", "sh", "-c", &script]);
    // SAFETY: two system calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            for signal in [Signal::SIGHUP, Signal::SIGINT] {
                nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn)
                    .map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    let mut replica = Replica::spawn(&mut command);
    let child = read_pid(&pidfile, SOON);
    let mask = std::fs::read_to_string(&ignored).unwrap();
    let mask = u64::from_str_radix(mask.trim_start_matches("SigIgn:").trim(), 16).unwrap();
    for signal in [Signal::SIGHUP, Signal::SIGINT] {
        assert_ne!(
            mask & (1 << (signal as u64 - 1)),
            0,
            "{signal} ignored for the command: {mask:x}"
        );
    }
    // Neither ends the run: the first signal that does is SIGTERM's.
    send(replica.pid(), Signal::SIGHUP);
    send(replica.pid(), Signal::SIGINT);
    signal_and_expect_exit(&mut replica, Signal::SIGTERM);
    assert!(!alive(child), "the command outlived leaderrun");
}
