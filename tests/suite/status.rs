//! `leaderrun status`: who leads, the token, the queue; exit 3 when nobody.

use crate::common::*;
use std::time::Duration;

#[test]
fn status_names_the_leader_and_counts_waiters() {
    let etcd = Etcd::shared();
    let jobs_st = unique("jobs/st");
    let endpoint = etcd.endpoint();
    let none = Lr::at(&endpoint)
        .status()
        .name(&jobs_st)
        .finish_within(SOON);
    assert_eq!(none.code, Some(3), "{}", none.stderr);
    assert!(none.stdout.contains("leader:   none"), "{}", none.stdout);

    let leader = Lr::at(&endpoint).name(&jobs_st).spawn(["sleep", "30"]);
    await_condition(SOON, "a leader", || etcd.candidates(&jobs_st).len() == 1);
    let waiters: Vec<Replica> = (2..=3)
        .map(|place| {
            let waiter = Lr::at(&endpoint)
                .name(&jobs_st)
                .wait()
                .spawn(["echo", "waiter"]);
            await_condition(SOON, "a waiter", || {
                etcd.candidates(&jobs_st).len() == place
            });
            waiter
        })
        .collect();

    let done = Lr::at(&endpoint)
        .status()
        .name(&jobs_st)
        .args(["--json"])
        .finish_within(SOON);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let status: serde_json::Value = serde_json::from_str(&done.stdout).expect("one JSON object");
    let (key, token, lease) = etcd.candidates(&jobs_st)[0].clone();
    assert_eq!(status["name"], jobs_st.as_str());
    assert_eq!(status["key"], key);
    assert_eq!(status["token"], token);
    assert_eq!(status["lease"], format!("{lease:x}"));
    assert_eq!(status["holder"]["pid"], leader.pid());
    assert_eq!(status["holder"]["command"], "sleep 30");
    assert_eq!(status["waiters"], 2);
    let ttl = status["ttl"].as_i64().expect("ttl in seconds");
    assert!((1..=15).contains(&ttl), "{ttl}");
    // Who waits, in line order, with each one's place in line.
    let candidates = etcd.candidates(&jobs_st);
    let queue = status["queue"].as_array().expect("the queue, listed");
    assert_eq!(queue.len(), 2, "{status}");
    for ((waiter, shown), place) in waiters.iter().zip(queue).zip(2..) {
        assert_eq!(shown["place"], place, "{status}");
        assert_eq!(shown["pid"], waiter.pid(), "{status}");
        assert_eq!(shown["key"], candidates[place - 1].0, "{status}");
        assert_eq!(shown["token"], candidates[place - 1].1, "{status}");
        assert_eq!(shown["command"], "echo waiter", "{status}");
        assert!(shown["started"].is_string(), "{status}");
    }
    let text = Lr::at(&endpoint)
        .status()
        .name(&jobs_st)
        .finish_within(SOON)
        .stdout;
    let listed: Vec<&str> = text.lines().filter(|line| line.starts_with("  ")).collect();
    assert_eq!(listed.len(), 2, "{text}");
    for ((waiter, line), place) in waiters.iter().zip(listed).zip(2..) {
        let starts = format!("  {place}. pid {} on ", waiter.pid());
        assert!(
            line.starts_with(&starts) && line.ends_with(": echo waiter"),
            "{text}"
        );
    }

    // The same election, named by the command line instead of --name.
    let _derived = Lr::at(&endpoint).spawn(["sleep", "31"]);
    let mut by_command = None;
    await_condition(SOON, "status by command line", || {
        let done = Lr::at(&endpoint).status().run_within(["sleep", "31"], SOON);
        let found = done.code == Some(0);
        by_command = Some(done.stdout);
        found
    });
    assert!(by_command.unwrap().contains("command:  sleep 31"));
}

/// Starts `status --watch` on `name`; its lines arrive on the receiver.
fn watch_status(
    endpoint: &str,
    name: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    watch_status_with(endpoint, name, &[])
}

/// [`watch_status`] with more options.
fn watch_status_with(
    endpoint: &str,
    name: &str,
    options: &[&str],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut watcher = leaderrun(endpoint)
        .args(["status", "--name", name, "--watch"])
        .args(options)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = watcher.stdout.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = sender.send(line);
        }
    });
    (watcher, lines)
}

#[test]
fn status_watch_prints_a_line_per_change_of_leader() {
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let (mut watcher, lines) = watch_status(&endpoint, "jobs/sw");
    let next = || lines.recv_timeout(SOON).expect("a status line");
    assert!(next().ends_with("jobs/sw: no leader"));
    let done = Lr::at(&endpoint)
        .name("jobs/sw")
        .run_within(["sleep", "0.5"], SOON);
    assert_eq!(done.code, Some(0));
    assert!(next().contains("jobs/sw: led by pid"));
    assert!(next().ends_with("jobs/sw: no leader"));
    send(watcher.id() as i32, nix::sys::signal::Signal::SIGINT);
    assert_eq!(watcher.wait().unwrap().code(), Some(0));
}

/// A queue that hands over faster than one read of etcd: every leader gets
/// its line, in order, none missed.
#[test]
fn status_watch_follows_every_leader_of_a_fast_queue() {
    const QUEUED: usize = 60;
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let (mut watcher, lines) = watch_status(&endpoint, "jobs/fast");
    let next = || lines.recv_timeout(LIMIT).expect("a status line");
    assert!(next().ends_with("jobs/fast: no leader"));

    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut first = Lr::at(&endpoint).name("jobs/fast").spawn(pid_job(&pidfile));
    let job = read_pid(&pidfile, Duration::from_secs(20));
    let mut queued: Vec<Replica> = (0..QUEUED)
        .map(|_| Lr::at(&endpoint).name("jobs/fast").wait().spawn(["true"]))
        .collect();
    await_condition(Duration::from_secs(60), "the whole queue", || {
        etcd.candidates("jobs/fast").len() == QUEUED + 1
    });
    send(job, nix::sys::signal::Signal::SIGTERM);
    first.finish(Duration::from_secs(20));
    for replica in &mut queued {
        let (code, stderr) = replica.finish(Duration::from_secs(60));
        assert_eq!(code, Some(0), "{stderr}");
    }

    let mut tokens: Vec<i64> = Vec::new();
    loop {
        let line = next();
        if line.ends_with("jobs/fast: no leader") {
            break;
        }
        let token = line
            .rsplit_once("(token ")
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .and_then(|token| token.parse().ok())
            .unwrap_or_else(|| panic!("a leader line: {line}"));
        tokens.push(token);
    }
    assert_eq!(tokens.len(), QUEUED + 1, "one line per leader: {tokens:?}");
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "in order: {tokens:?}"
    );
    send(watcher.id() as i32, nix::sys::signal::Signal::SIGINT);
    assert_eq!(watcher.wait().unwrap().code(), Some(0));
}

/// With authentication on, an etcd that restarts has forgotten every token:
/// the watch must dial again and authenticate afresh, not go blind.
#[test]
fn status_watch_rides_out_a_restart_with_authentication_on() {
    const PASSWORD: &str = "watch-pw-51";
    let mut etcd = Etcd::start();
    etcd.enable_auth(PASSWORD);
    let endpoint = etcd.endpoint();
    let user = format!("root:{PASSWORD}");
    let (mut watcher, lines) = watch_status_with(&endpoint, "jobs/aw", &["--user", &user]);
    let next = || lines.recv_timeout(LIMIT).expect("a status line");
    assert!(next().ends_with("jobs/aw: no leader"));
    etcd.restart();
    let done = Lr::at(&endpoint)
        .name("jobs/aw")
        .args(["--user", &user])
        .run(["sleep", "0.5"]);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(next().contains("jobs/aw: led by pid"));
    assert!(next().ends_with("jobs/aw: no leader"));
    send(watcher.id() as i32, nix::sys::signal::Signal::SIGINT);
    assert_eq!(watcher.wait().unwrap().code(), Some(0));
}

/// An election name with a newline and an escape sequence in it: the
/// one-line `--max-age` output (a Nagios check's) printed them raw.
#[test]
fn max_age_shows_control_characters_escaped() {
    let etcd = Etcd::start();
    let name = "jobs/c\nb\x1b[31m";
    let ran = lr(&etcd)
        .name(name)
        .run_within(["true"], Duration::from_secs(20));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let fresh = lr(&etcd)
        .status()
        .name(name)
        .args(["--max-age", "1h"])
        .finish_within(Duration::from_secs(20));
    assert_eq!(fresh.code, Some(0), "{}", fresh.stderr);
    assert_eq!(fresh.stdout.lines().count(), 1, "{:?}", fresh.stdout);
    assert!(
        fresh.stdout.starts_with("jobs/c\\nb\\u{1b}[31m: fresh: "),
        "{:?}",
        fresh.stdout
    );
}
