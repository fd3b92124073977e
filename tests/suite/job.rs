//! The whole job stops, not only the command's process group: when
//! leaderrun and everything named like it is SIGKILLed at once (`pkill -9
//! leaderrun`), and when descendants escaped the group with `setsid`, on a
//! loss of leadership or after the command exited.

use crate::common::*;
use leaderrun::events;
use nix::sys::signal::Signal;
use std::path::Path;
use std::time::Duration;

/// A command that starts a daemon in a session of its own (which writes
/// its pid to `pidfile`) and then runs `then`.
fn daemonizing(pidfile: &Path, then: &str) -> Vec<String> {
    let script = format!(
        "setsid sh -c \"echo \\$\\$ > '{}'; exec sleep 313\" & {then}",
        pidfile.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

#[test]
fn pkill_9_leaderrun_leaves_nothing_of_the_job_running() {
    pkill_9_leaves_nothing(None);
}

/// A guardian slow to run (a fork that waited long for a core, seen beside
/// two busy loops) is named leaderrun until it runs: a command started
/// before that, and `pkill -9 leaderrun` then, would kill the guardian
/// with leaderrun and leave the job running. The command waits for it.
#[test]
fn pkill_9_just_after_a_start_whose_guardian_was_slow_to_run_leaves_nothing() {
    pkill_9_leaves_nothing(Some("300"));
}

/// `pkill -9` of a replica whose command runs, and of its helpers named
/// leaderrun; `naming_delay` (ms) holds its guardian back before it takes
/// its name.
fn pkill_9_leaves_nothing(naming_delay: Option<&str>) {
    let etcd = Etcd::shared();
    let jobs_pkill = unique("jobs/pkill");
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "sleep 301 & echo $! > '{d}/bg'; sleep 302 & echo $! > '{d}/fg'; wait",
        d = dir.path().display()
    );
    let mut run = lr(etcd).name(&jobs_pkill);
    if let Some(delay) = naming_delay {
        run = run.env("LEADERRUN_TEST_GUARDIAN_NAMED_AFTER_MS", delay);
    }
    let mut replica = run.spawn(["sh", "-c", &script]);
    let bg = read_pid(&dir.path().join("bg"), SOON);
    let fg = read_pid(&dir.path().join("fg"), SOON);
    let mut strays = Strays::new();
    strays.add(bg, "sleep 301");
    strays.add(fg, "sleep 302");

    // `pkill -9 leaderrun` or `pkill -9 -f leaderrun`, kept to this test's
    // replica and its own children so that parallel tests survive. Its
    // helpers go first: a helper that outlived the replica by a few
    // microseconds must not make the test pass by luck.
    let named_leaderrun = |pid: i32| {
        comm(pid).is_some_and(|name| name.contains("leaderrun"))
            || cmdline(pid).is_some_and(|line| line.contains("leaderrun"))
    };
    let helpers: Vec<i32> = children_of(replica.pid())
        .into_iter()
        .filter(|pid| named_leaderrun(*pid))
        .collect();
    eprintln!("killing the replica and its helpers {helpers:?}");
    for pid in helpers.iter().chain([replica.pid()].iter()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
    }
    wait_within(&mut replica.process, LIMIT, "the replica");

    let took = await_condition(LIMIT, "the job's sleeps to die", || {
        !alive(bg) && !alive(fg)
    });
    eprintln!("job gone {took:?} after pkill -9");
}

#[test]
fn a_daemon_that_left_the_group_is_stopped_when_leadership_is_lost() {
    let etcd = Etcd::shared();
    let jobs_setsid_loss = unique("jobs/setsid-loss");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("d");
    let mut replica = lr(etcd)
        .name(&jobs_setsid_loss)
        .spawn(daemonizing(&pidfile, "sleep 60"));
    let daemon = read_pid(&pidfile, SOON);
    let mut strays = Strays::new();
    strays.add(daemon, "sleep 313");
    assert!(alive(daemon));

    let (_, _, lease) = etcd.candidates(&jobs_setsid_loss)[0];
    etcd.revoke(lease);
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let took = await_condition(SOON, "the daemon to die", || !alive(daemon));
    eprintln!("daemon gone {took:?} after leaderrun exited");
}

#[test]
fn a_daemon_that_left_the_group_is_stopped_when_the_command_exits() {
    let etcd = Etcd::shared();
    let jobs_setsid_exit = unique("jobs/setsid-exit");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("d");
    // The command waits until the daemon has written its pid, then exits.
    let wait_for_pid = format!("until [ -s '{}' ]; do sleep 0.01; done", pidfile.display());
    let done = run_within(
        leaderrun(&etcd.endpoint())
            .args(["--name", &jobs_setsid_exit, "--"])
            .args(daemonizing(&pidfile, &wait_for_pid)),
        Duration::from_secs(20),
    );
    let daemon = read_pid(&pidfile, Duration::from_secs(1));
    let mut strays = Strays::new();
    strays.add(daemon, "sleep 313");
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let took = await_condition(SOON, "the daemon to die", || !alive(daemon));
    eprintln!("daemon gone {took:?} after leaderrun exited");
}

/// Bytes written to the guardian's pipe and not read yet, through a reader
/// of our own on it.
fn unread_by_guardian(guardian: i32) -> usize {
    use std::os::fd::AsRawFd;
    let pipe = std::fs::File::open(format!("/proc/{guardian}/fd/0")).unwrap();
    let mut unread: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int, into a local.
    let ok = unsafe { nix::libc::ioctl(pipe.as_raw_fd(), nix::libc::FIONREAD, &mut unread) };
    assert_eq!(ok, 0, "FIONREAD on the guardian's pipe");
    unread as usize
}

/// What leaderrun told the guardian, read through a reader of our own on
/// its pipe: what was written and not read yet.
fn told_guardian(reader: &mut std::fs::File) -> String {
    use std::io::Read;
    let mut said = Vec::new();
    let mut buffer = [0u8; 256];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => said.extend_from_slice(&buffer[..read]),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(err) => panic!("reading the guardian's pipe: {err}"),
        }
    }
    String::from_utf8_lossy(&said).into_owned()
}

/// A run whose supervision fails (the wait for the command's exit, made to
/// fail by the test builds' LEADERRUN_TEST_FAIL_WAIT) exits 125, and still
/// stops the whole job, a daemon that left the group included, and leaves
/// the guardian armed: it was never told "done". A writer of our own on the
/// guardian's pipe keeps it asleep after leaderrun exits, so that what
/// leaderrun told it can be read, and so that only leaderrun can have
/// stopped the job.
#[test]
fn a_failed_wait_still_stops_the_whole_job_and_leaves_the_guardian_armed() {
    use std::os::unix::fs::OpenOptionsExt;
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let (pidfile, background, go) = (
        dir.path().join("d"),
        dir.path().join("bg"),
        dir.path().join("go"),
    );
    let then = format!(
        "sleep 331 & echo $! > '{}'; until [ -e '{}' ]; do sleep 0.01; done",
        background.display(),
        go.display()
    );
    let mut replica = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .env("LEADERRUN_TEST_FAIL_WAIT", "1")
            .args(["--name", "jobs/failed-wait", "--"])
            .args(daemonizing(&pidfile, &then)),
    );
    let daemon = read_pid(&pidfile, Duration::from_secs(10));
    let background = read_pid(&background, Duration::from_secs(10));
    let mut strays = Strays::new();
    strays.add(daemon, "sleep 313");
    strays.add(background, "sleep 331");
    // The guardian names itself after its fork, which nothing orders
    // before the command's pid file: awaited, then there is one.
    await_condition(SOON, "the guardian to name itself", || {
        !guardians_of(replica.pid()).is_empty()
    });
    let guardians = guardians_of(replica.pid());
    assert_eq!(guardians.len(), 1, "one guardian");
    let pipe = format!("/proc/{}/fd/0", guardians[0]);
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&pipe)
        .unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&pipe).unwrap();

    std::fs::write(&go, "").unwrap();
    let (code, stderr) = replica.finish(Duration::from_secs(10));
    let left: Vec<i32> = [daemon, background]
        .into_iter()
        .filter(|pid| alive(*pid))
        .collect();
    let said = told_guardian(&mut reader);
    eprintln!("left running: {left:?}; the guardian was told {said:?}");
    assert_eq!(code, Some(125), "{stderr}");
    assert!(stderr.contains("waiting for the command"), "{stderr}");
    assert!(left.is_empty(), "the job outlived leaderrun: {left:?}");
    assert!(
        said.lines().any(|line| line.parse::<i32>().is_ok()),
        "the command named its group: {said:?}"
    );
    assert!(!said.contains("done"), "the guardian was told {said:?}");
    assert!(alive(guardians[0]), "the guardian sleeps on, armed");
    drop(writer);
    await_condition(SOON, "the guardian to exit", || !alive(guardians[0]));
}

/// The guardian is released once the resignation the next leader waits on
/// is answered, not beside it: its exit takes a CPU for a while, and on a
/// small machine it took it from etcd, as etcd worked on that request.
#[test]
fn fast_path_the_guardian_is_released_once_the_resignation_is_answered() {
    let etcd = Etcd::start();
    let name = "jobs/guardian-released";
    let dir = tempfile::tempdir().unwrap();
    let [release_first, release_second, frozen] =
        ["first", "second", "frozen"].map(|flag| dir.path().join(flag));
    let replica = |command: String| {
        Replica::spawn(
            leaderrun(&etcd.endpoint())
                .args([
                    "-vv",
                    "--log-format",
                    "json",
                    "--name",
                    name,
                    "--wait",
                    "--",
                    "sh",
                    "-c",
                ])
                .arg(command),
        )
    };
    let mut first = replica(until_exists(&release_first));
    // Nobody behind it yet: the second reads its way to leading.
    await_condition(LIMIT, "the first to look behind it", || {
        first.logged(events::LOOKED_BEHIND) > 0
    });
    // The second's command, once let go, freezes etcd as its last act, so
    // that its resignation waits (for CLEANUP, half a second, at most).
    let mut second = replica(format!(
        "{}; kill -STOP {}; touch '{}'",
        until_exists(&release_second),
        etcd.pid(),
        frozen.display()
    ));
    second.await_watching(SOON);
    let mut third = replica("true".into());
    third.await_watching(SOON);
    // The first looked behind it before anyone queued: the second reads
    // its way to leading, then looks behind it, and finds the third.
    std::fs::write(&release_first, "").unwrap();
    assert_eq!(first.finish(LIMIT).0, Some(0));
    await_condition(LIMIT, "the second to look behind it", || {
        second.logged(events::LOOKED_BEHIND) > 0
    });
    std::fs::write(&release_second, "").unwrap();
    let command_gone =
        || frozen.exists() && children_of(second.pid()) == guardians_of(second.pid());
    await_condition(SOON, "the command to end", command_gone);
    let gone_at = std::time::Instant::now();
    // Well within the resignation's bound: released beside it, the
    // guardian would be gone within milliseconds.
    while gone_at.elapsed() < Duration::from_millis(200) {
        assert_eq!(
            guardians_of(second.pid()).len(),
            1,
            "the guardian waits while the resignation is unanswered"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    send(etcd.pid(), Signal::SIGCONT);
    for replica in [&mut second, &mut third] {
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
}

/// With nobody behind, no next leader waits on the resignation: the
/// guardian is released beside it, not after it.
#[test]
fn with_nobody_behind_the_guardian_is_released_beside_the_resignation() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let frozen = dir.path().join("frozen");
    let script = format!("kill -STOP {}; touch '{}'", etcd.pid(), frozen.display());
    let mut replica = lr(&etcd)
        .verbose()
        .name("jobs/guardian-beside")
        .spawn(["sh", "-c", &script]);
    await_condition(SOON, "the command to end", || frozen.exists());
    // etcd is frozen: the resignation goes unanswered until its bound,
    // which leaderrun reports.
    await_condition(SOON, "the guardian to go", || {
        guardians_of(replica.pid()).is_empty()
    });
    assert!(
        !replica.stderr_so_far().contains("resigning: no answer"),
        "the guardian went only once the resignation gave up: {}",
        replica.stderr_so_far()
    );
    send(etcd.pid(), Signal::SIGCONT);
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn the_guardian_sleeps_through_the_run_and_still_stops_the_job() {
    let etcd = Etcd::shared();
    let jobs_guardian_asleep = unique("jobs/guardian-asleep");
    let dir = tempfile::tempdir().unwrap();
    let running = dir.path().join("running");
    let script = format!("echo $$ > '{}'; exec sleep 303", running.display());
    let mut replica = lr(etcd)
        .name(&jobs_guardian_asleep)
        .spawn(["sh", "-c", &script]);
    let command = read_pid(&running, SOON);
    // The guardian names itself after its fork, which nothing orders
    // before the command's pid file: awaited, then there is one.
    await_condition(SOON, "the guardian to name itself", || {
        !guardians_of(replica.pid()).is_empty()
    });
    let guardians = guardians_of(replica.pid());
    assert_eq!(guardians.len(), 1, "one guardian");
    // The command's process named its group to the guardian before its
    // exec, on the way to running: the line waits in the pipe, and woke
    // nobody.
    assert!(
        unread_by_guardian(guardians[0]) > 0,
        "the group's line is still in the pipe"
    );
    // Read when leaderrun dies: the group is still killed.
    let mut strays = Strays::new();
    strays.add(command, "sleep 303");
    send(replica.pid(), Signal::SIGKILL);
    wait_within(&mut replica.process, SOON, "the replica");
    await_condition(SOON, "the guardian to kill the command", || !alive(command));
}

/// `pkill lr-guardian`, or systemd's SIGTERM to every process of a unit:
/// the guardian ignores what it can, so that a SIGKILL of leaderrun after
/// it still leaves nobody of the job running.
#[test]
fn the_guardian_outlives_the_signals_it_can_ignore() {
    let etcd = Etcd::shared();
    let jobs_guardian_signalled = unique("jobs/guardian-signalled");
    let dir = tempfile::tempdir().unwrap();
    let background = dir.path().join("bg");
    let script = format!(
        "sleep 323 & echo $! > '{}'; exec sleep 324",
        background.display()
    );
    let mut replica = lr(etcd)
        .name(&jobs_guardian_signalled)
        .spawn(["sh", "-c", &script]);
    let background = read_pid(&background, SOON);
    // The guardian names itself after its fork, which nothing orders
    // before the command's pid file: awaited, then there is one.
    await_condition(SOON, "the guardian to name itself", || {
        !guardians_of(replica.pid()).is_empty()
    });
    let guardians = guardians_of(replica.pid());
    assert_eq!(guardians.len(), 1, "one guardian");
    let mut strays = Strays::new();
    strays.add(background, "sleep 323");
    for signal in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGALRM,
        Signal::SIGTSTP,
        Signal::SIGABRT,
        Signal::SIGSEGV,
        Signal::SIGSYS,
    ] {
        send(guardians[0], signal);
    }
    // Real-time signals end a process that does not handle them, too.
    for signal in [nix::libc::SIGRTMIN(), nix::libc::SIGRTMAX()] {
        // SAFETY: kill takes plain numbers.
        assert_eq!(unsafe { nix::libc::kill(guardians[0], signal) }, 0);
    }
    send(replica.pid(), Signal::SIGKILL);
    wait_within(&mut replica.process, SOON, "the replica");
    await_condition(
        SOON,
        "the guardian to kill the command's background job",
        || !alive(background),
    );
}

/// In a PID namespace without a `/proc` of its own (`unshare --pid` without
/// `--mount-proc`), `/proc` numbers the host's processes: leaderrun's pid
/// there is someone else's (pid 2 is the kernel's thread starter, with
/// every kernel thread its child). A walk of it took those for the job and
/// signalled their numbers in the namespace, killing processes that had
/// nothing to do with the command. There the job is the command's group
/// alone: a background job the command left is still stopped, strangers
/// are not touched.
#[test]
fn in_a_pid_namespace_without_its_own_proc_the_job_is_the_group_alone() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    // leaderrun first, so that it is pid 2 in the namespace; then strangers,
    // which the host's kernel threads' numbers land on. The command exits
    // (and leaderrun looks at its job) only once all eight are there.
    let script = r#"
        "$LR" -v --name jobs/pidns -- sh -c 'sleep 317 & echo $! > "$DIR/bg"; until [ "$(cat "$DIR/strangers" 2>/dev/null | wc -l)" -ge 8 ]; do sleep 0.01; done; exit 3' 2> "$DIR/err" &
        lr=$!
        for i in 1 2 3 4 5 6 7 8; do sleep 319 & echo $! >> "$DIR/strangers"; done
        wait $lr; echo $? > "$DIR/rc"
        for p in $(cat "$DIR/strangers"); do kill -0 $p 2>/dev/null && echo $p >> "$DIR/alive"; done
        kill -0 $(cat "$DIR/bg") 2>/dev/null && echo alive > "$DIR/bg-state" || echo gone > "$DIR/bg-state"
        kill $(cat "$DIR/strangers") $(cat "$DIR/bg") 2>/dev/null
        exit 0
    "#;
    let mut unshare = std::process::Command::new("unshare");
    unshare
        .args(["--pid", "--fork", "sh", "-c", script])
        .env("LR", env!("CARGO_BIN_EXE_leaderrun"))
        .env("DIR", dir.path());
    leaderrun_env(&mut unshare, &etcd.endpoint());
    let done = run_within(&mut unshare, LIMIT);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    assert_eq!(done.code, Some(0), "unshare: {}", done.stderr);
    let stderr = read("err");
    assert_eq!(read("rc").trim(), "3", "the command's status: {stderr}");
    assert_eq!(
        read("alive").lines().count(),
        8,
        "every stranger alive: {stderr}"
    );
    assert_eq!(
        read("bg-state").trim(),
        "gone",
        "the background job stopped: {stderr}"
    );
    assert!(
        stderr.contains("/proc does not show leaderrun's PID namespace"),
        "{stderr}"
    );
}

/// A panic skips every drop, `Child`'s among them: the panic hook kills
/// the whole job before leaderrun exits 125, the daemon that left the
/// group included, which the guardian (it knows the group only) would
/// leave running. Debug builds of leaderrun panic on a signal to pass on
/// when asked to (`LEADERRUN_TEST_PANIC_ON_SIGNAL`).
#[test]
fn a_panic_while_the_command_runs_kills_the_whole_job() {
    let etcd = Etcd::shared();
    let name = unique("jobs/panic");
    let dir = tempfile::tempdir().unwrap();
    let daemon_file = dir.path().join("d");
    let command_file = dir.path().join("c");
    let then = format!("echo $$ > '{}'; exec sleep 60", command_file.display());
    let mut replica = lr(etcd)
        .name(&name)
        .env("LEADERRUN_TEST_PANIC_ON_SIGNAL", "1")
        .spawn(daemonizing(&daemon_file, &then));
    let daemon = read_pid(&daemon_file, SOON);
    let command = read_pid(&command_file, SOON);
    let mut strays = Strays::new();
    strays.add(daemon, "sleep 313");
    strays.add(command, "sleep 60");

    send(replica.pid(), Signal::SIGUSR1);
    let (code, stderr) = replica.finish(LIMIT);
    assert_eq!(code, Some(125), "{stderr}");
    assert!(
        stderr.contains("error: internal error: asked to"),
        "{stderr}"
    );
    // Dead as leaderrun exited, not when the guardian got round to it:
    // the daemon is no member of the group the guardian kills.
    assert!(!alive(command), "the command outlived the panic");
    assert!(!alive(daemon), "the daemon outlived the panic: {stderr}");
}
