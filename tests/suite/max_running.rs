//! `--max-running N`: a semaphore. The N candidates first in line run, each
//! with its own fencing token and every guarantee of a leader; the rest
//! queue (--wait) or exit with the conflict code. Replicas that disagree on
//! N are refused.

use crate::common::*;
use leaderrun::events;

/// The most runs that overlapped at any instant.
fn most_at_once(runs: &[Interval]) -> usize {
    runs.iter()
        .map(|run| {
            runs.iter()
                .filter(|other| other.start <= run.start && run.start < other.end)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn five_waiters_with_two_slots_run_two_at_a_time_never_three() {
    let etcd = Etcd::shared();
    let jobs_sem = unique("jobs/sem");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "1");
    let mut replicas: Vec<Replica> = (0..5)
        .map(|_| {
            lr(etcd)
                .name(&jobs_sem)
                .wait()
                .args(["--max-running", "2"])
                .spawn(&job)
        })
        .collect();
    for replica in &mut replicas {
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
    let runs = intervals(&log);
    assert_eq!(runs.len(), 5, "every replica ran once: {runs:?}");
    assert_eq!(most_at_once(&runs), 2, "two at a time: {runs:?}");
    let mut tokens: Vec<i64> = runs.iter().map(|run| run.token).collect();
    tokens.dedup();
    assert_eq!(tokens.len(), 5, "a token each: {runs:?}");
    await_resigned(etcd, &jobs_sem, "everyone resigned");
}

#[test]
fn four_racers_without_wait_give_two_runs_and_two_conflicts() {
    let etcd = Etcd::shared();
    let jobs_race = unique("jobs/race");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let job = recording_job(&log, "3");
    let mut replicas: Vec<Replica> = (0..4)
        .map(|_| {
            lr(etcd)
                .name(&jobs_race)
                .args(["--max-running", "2"])
                .spawn(&job)
        })
        .collect();
    assert_eq!(
        finish_all(&mut replicas, LIMIT),
        [Some(0), Some(0), Some(75), Some(75)]
    );
    assert_eq!(intervals(&log).len(), 2);
}

/// Each runner has a lease of its own: losing one stops that runner only.
#[test]
fn losing_one_runners_lease_stops_only_that_runner() {
    let etcd = Etcd::shared();
    let jobs_two = unique("jobs/two");
    let dir = tempfile::tempdir().unwrap();
    let mut runners = Vec::new();
    for name in ["a", "b"] {
        let pidfile = dir.path().join(name);
        let replica = lr(etcd)
            .name(&jobs_two)
            .args(["--max-running", "2"])
            .spawn(pid_job(&pidfile));
        runners.push((replica, read_pid(&pidfile, LIMIT)));
    }
    let shown = lr(etcd).status().name(&jobs_two).args(["--json"]).finish();
    let status: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(status["max_running"], 2, "{status}");
    assert_eq!(
        status["holders"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );
    assert_eq!(status["waiters"], 0, "{status}");

    let candidates = etcd.candidates(&jobs_two);
    assert_eq!(candidates.len(), 2, "{candidates:?}");
    etcd.revoke(candidates[0].2);
    let (first, first_job) = &mut runners[0];
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    assert!(!alive(*first_job));
    let (second, second_job) = &mut runners[1];
    assert!(alive(*second_job), "the other runner runs on");
    assert_eq!(second.process.try_wait().unwrap(), None);
}

#[test]
fn replicas_that_disagree_on_the_count_are_refused() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let _runner = lr(&etcd)
        .name("jobs/odd")
        .args(["--max-running", "2"])
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    for (count, wait) in [("3", false), ("3", true), ("1", false)] {
        let mut command = leaderrun(&etcd.endpoint());
        command.args(["--name", "jobs/odd", "--max-running", count]);
        if wait {
            command.arg("--wait");
        }
        let done = run_within(command.args(["--", "echo", "ran"]), LIMIT);
        assert_one_error_line(&done, "--max-running 2", &format!("{count}, wait {wait}"));
        assert!(
            done.stderr
                .contains(&format!("--max-running {count} disagrees")),
            "{}",
            done.stderr
        );
    }
    assert_eq!(etcd.candidates("jobs/odd").len(), 1, "nothing left behind");
}

/// The store's revision: it moves with every write.
fn revision(etcd: &Etcd) -> i64 {
    etcd.with(async |mut client| {
        let response = client.get("/", None).await.unwrap();
        response.header().unwrap().revision()
    })
}

/// A replica refused for its count never writes its key: one written and
/// then refused stood in line until its revoke (for a whole TTL if it was
/// killed then), and replicas that agree with the leader but found it first
/// in line refused themselves too.
#[test]
fn a_refused_replica_never_joins_the_line() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let _runner = lr(&etcd)
        .name("jobs/apart")
        .args(["--max-running", "2"])
        .spawn(pid_job(&pidfile));
    read_pid(&pidfile, LIMIT);
    // The runner's last write: its start record, a second in.
    await_condition(LIMIT, "the runner's start record", || {
        etcd.get("jobs/apart.last-started").is_some()
    });
    let before = revision(&etcd);
    let done = lr(&etcd)
        .name("jobs/apart")
        .wait()
        .args(["--max-running", "3"])
        .run(["true"]);
    assert_one_error_line(&done, "--max-running 3 disagrees", "a refused waiter");
    assert_eq!(revision(&etcd), before, "the refused replica wrote to etcd");
}

/// Replicas that disagree on the count, started together with --wait: the
/// count of whoever leads holds. Every replica that gives it runs in turn,
/// and only the others are refused. They refused each other (often nobody
/// ran at all) when a refused replica's key stood in line before its revoke.
#[test]
fn replicas_that_disagree_started_together_let_the_leaders_count_run() {
    let etcd = Etcd::start();
    for round in 0..3 {
        let name = format!("jobs/mix{round}");
        let mut replicas = Vec::new();
        for _ in 0..3 {
            for count in ["2", "3"] {
                let replica = lr(&etcd)
                    .name(&name)
                    .wait()
                    .args(["--max-running", count])
                    .spawn(["sleep", "0.5"]);
                replicas.push((count, replica));
            }
        }
        let mut codes: std::collections::BTreeMap<&str, Vec<Option<i32>>> = Default::default();
        let mut said = String::new();
        for (count, mut replica) in replicas {
            let (code, stderr) = replica.finish(LIMIT);
            codes.entry(count).or_default().push(code);
            said.push_str(&stderr);
        }
        let ran: Vec<&str> = codes
            .iter()
            .filter(|(_, codes)| codes.iter().all(|code| *code == Some(0)))
            .map(|(count, _)| *count)
            .collect();
        assert_eq!(ran.len(), 1, "round {round}: {codes:?}\n{said}");
        for (count, codes) in &codes {
            if *count != ran[0] {
                assert!(
                    codes.iter().all(|code| *code == Some(125)),
                    "round {round}: {codes:?}\n{said}"
                );
            }
        }
    }
}

/// `etcdctl elect` holds the election alone: its value is not leaderrun's
/// JSON and says no count, and a leaderrun with two slots ran beside it.
#[test]
fn another_tools_holder_is_not_shared() {
    let etcd = Etcd::start();
    let lease = etcd.grant(60).expect("a lease");
    // As `etcdctl elect jobs/shared etcdctl-holder` writes it.
    etcd.put(&format!("jobs/shared/{lease:x}"), "etcdctl-holder", lease);
    let done = lr(&etcd)
        .name("jobs/shared")
        .args(["--max-running", "2"])
        .run(["echo", "ran"]);
    assert_one_error_line(&done, "another tool's candidate", "--max-running 2");
    // One of one, as before: the conflict code.
    let done = lr(&etcd).name("jobs/shared").run(["echo", "ran"]);
    assert_eq!(done.code, Some(75), "{}", done.stderr);
    assert_eq!(
        etcd.candidates("jobs/shared").len(),
        1,
        "nothing left behind"
    );
}

/// Waiters watch one key each (only the first waiter watches the runners),
/// so a change wakes one or two of them, not the whole queue: the number of
/// times the queue is read grows with the number of waiters, not with its
/// square.
#[test]
fn a_change_wakes_one_waiter_not_the_whole_queue() {
    const WAITERS: usize = 16;
    let etcd = Etcd::shared();
    let jobs_herd = unique("jobs/herd");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut first = lr(etcd)
        .name(&jobs_herd)
        .args(["--max-running", "2"])
        .spawn(pid_job(&pidfile));
    let job = read_pid(&pidfile, LIMIT);
    // The first waiter takes the second slot at once: it holds it until
    // the whole queue is there, or it could be done (and gone from the
    // line) before the last one has joined.
    let flag = dir.path().join("all-queued");
    let waiter = format!("{}; sleep 0.2", until_exists(&flag));
    let mut waiters: Vec<Replica> = (0..WAITERS)
        .map(|_| {
            Replica::spawn(
                leaderrun(&etcd.endpoint())
                    .args([
                        "-vv",
                        "--log-format",
                        "json",
                        "--name",
                        &jobs_herd,
                        "--max-running",
                        "2",
                    ])
                    .args(["--wait", "--", "sh", "-c", &waiter]),
            )
        })
        .collect();
    await_condition(LIMIT, "the whole queue", || {
        etcd.candidates(&jobs_herd).len() == WAITERS + 1
    });
    std::fs::write(&flag, "").unwrap();
    send(job, nix::sys::signal::Signal::SIGTERM);
    first.finish(LIMIT);
    let mut reads = 0;
    for waiter in &mut waiters {
        let (code, stderr) = waiter.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
        reads += count_events(&stderr, events::QUEUED);
    }
    // Watching the prefix, every waiter would wake at each of the 2n
    // changes (a proof and an exit per runner): about n² reads.
    assert!(
        reads <= 4 * WAITERS,
        "{reads} reads of the queue for {WAITERS} waiters"
    );
}

#[test]
fn a_runner_lets_go_of_its_watch_of_the_prefix_as_it_starts() {
    // Two run; the first waiter watches the whole prefix for deletions.
    // Once its turn comes that watch could still bring every deletion
    // under the prefix, unread all run long (and holding the connection's
    // flow-control window, which the renewals share): it is let go, not
    // kept to the end of the run as the watch of one key would be.
    let etcd = Etcd::start();
    let name = "jobs/sem-prefix";
    let dir = tempfile::tempdir().unwrap();
    let flags: Vec<_> = ["first", "second", "third"]
        .iter()
        .map(|flag| dir.path().join(flag))
        .collect();
    let runner = |flag: &std::path::Path| {
        let until = until_exists(flag);
        lr(&etcd)
            .name(name)
            .wait()
            .debug_json()
            .args(["--max-running", "2"])
            .spawn(["sh", "-c", &until])
    };
    let streams = |etcd: &Etcd| etcd.gauge("etcd_debugging_mvcc_watch_stream_total");
    let mut first = runner(&flags[0]);
    await_condition(LIMIT, "the first to run", || {
        etcd.candidates(name).len() == 1
    });
    let mut second = runner(&flags[1]);
    await_condition(LIMIT, "the second to run", || {
        etcd.candidates(name).len() == 2
    });
    let mut third = runner(&flags[2]);
    await_condition(LIMIT, "the third to watch the prefix", || {
        third.is_watching() && streams(&etcd) == 4
    });
    std::fs::write(&flags[0], "").unwrap();
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    // The second's watch of its key and the third's of its own: the
    // prefix watch ended as the third began to run.
    await_condition(LIMIT, "the third to run with one watch", || {
        third.logged(events::LEADER) > 0 && streams(&etcd) == 2
    });
    for (flag, replica) in flags[1..].iter().zip([&mut second, &mut third]) {
        std::fs::write(flag, "").unwrap();
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
}
