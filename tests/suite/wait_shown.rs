//! A run waiting in line (`--wait`) says where it stands: on a terminal, a
//! live line redrawn in place and cleared as the wait ends; not on one, with
//! -v, a line as it joins, one whenever the one just ahead changes, and a
//! "still waiting" line at a steady interval (here 1 s), their facts as
//! fields in JSON logs; without -v, nothing (cron mails nothing).

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::Duration;

/// The `waiting` events a replica logged as JSON so far: their fields.
fn waiting_events(replica: &Replica) -> Vec<serde_json::Value> {
    replica
        .stderr_so_far()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|line| line["fields"].clone())
        .filter(|fields| fields["event"] == leaderrun::events::WAITING)
        .collect()
}

/// A leader of `name` until `go` exists.
fn leader_until(etcd: &Etcd, name: &str, go: &std::path::Path) -> Replica {
    let leader = lr(etcd).name(name).spawn(["sh", "-c", &until_exists(go)]);
    await_condition(SOON, "a leader", || etcd.candidates(name).len() == 1);
    leader
}

#[test]
fn a_logged_wait_says_where_it_stands_as_it_joins_as_the_one_ahead_changes_and_steadily() {
    let etcd = Etcd::shared();
    let name = unique("jobs/shown");
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let mut leader = leader_until(etcd, &name, &go);
    let mut quiet = lr(etcd).name(&name).wait().spawn(["true"]);
    await_condition(SOON, "a waiter", || etcd.candidates(&name).len() == 2);
    let mut logged = lr(etcd)
        .name(&name)
        .wait()
        .verbose()
        .args(["--log-format", "json"])
        .env("LEADERRUN_STILL_WAITING_EVERY", "1s")
        .spawn(["echo", "ran"]);
    await_condition(SOON, "the joining line and two reminders", || {
        waiting_events(&logged).len() >= 3
    });
    let events = waiting_events(&logged);
    let leads = format!("pid {} on ", leader.pid());
    for (at, event) in events.iter().enumerate() {
        let said = event["message"].as_str().unwrap();
        let expected = match at {
            0 => format!("waiting for {name}: place 3 in line, 2 ahead; waited "),
            _ => format!("still waiting for {name}: place 3 in line, 2 ahead; waited "),
        };
        assert!(said.starts_with(&expected), "{said}");
        assert_eq!(event["place"], 3, "{event}");
        assert_eq!(event["ahead"], 2, "{event}");
        assert!(
            event["leader"].as_str().unwrap().starts_with(&leads),
            "{event}"
        );
        assert_eq!(
            event["leader_command"],
            format!("sh -c {}", until_exists(&go))
        );
    }

    // The one just ahead leaves the line: said at once, the new place with it.
    let before = events.len();
    send(quiet.pid(), Signal::SIGTERM);
    assert_eq!(quiet.finish(LIMIT).0, Some(143));
    let changed = await_condition(SOON, "the change ahead said", || {
        waiting_events(&logged)[before..].iter().any(|event| {
            event["message"]
                .as_str()
                .unwrap()
                .ends_with("(the one ahead changed)")
        })
    });
    eprintln!("the change ahead was said {changed:?} after");
    let events = waiting_events(&logged);
    let change = events[before..]
        .iter()
        .find(|event| {
            event["message"]
                .as_str()
                .unwrap()
                .ends_with("(the one ahead changed)")
        })
        .unwrap();
    assert_eq!(change["place"], 2, "{change}");
    // A waiter without -v, and not on a terminal, said nothing.
    assert_eq!(quiet.finish(LIMIT).1, "");

    std::fs::write(&go, "").unwrap();
    assert_eq!(leader.finish(LIMIT).0, Some(0));
    let (code, stderr) = logged.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
}

/// `leaderrun --wait` at a terminal, behind a leader, until the leader
/// ends; TERM as given.
fn waiting_at_a_terminal(term: &str) -> String {
    let etcd = Etcd::shared();
    let name = unique("jobs/live");
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let mut leader = leader_until(etcd, &name, &go);
    // Wide enough for the whole line.
    let pty = Pty::open_sized(Some(250));
    let mut waiter = pty.spawn(
        leaderrun(&etcd.endpoint())
            .args([
                "--name",
                &name,
                "--wait-timeout",
                "10m",
                "--",
                "echo",
                "ran",
            ])
            .env("TERM", term),
    );
    let mut terminal = pty.master.try_clone().unwrap();
    await_condition(SOON, "the waiter in line", || {
        etcd.candidates(&name).len() == 2
    });
    // Long enough for a live line to have been drawn, and redrawn.
    let shown = match term {
        "dumb" => {
            std::thread::sleep(Duration::from_secs(2));
            String::new()
        }
        _ => read_until(&mut terminal, "waited 1s", SOON),
    };
    std::fs::write(&go, "").unwrap();
    assert_eq!(leader.finish(LIMIT).0, Some(0));
    let shown = shown + &read_until(&mut terminal, "ran", SOON);
    let status = wait_within(&mut waiter, LIMIT, "the waiter");
    assert_eq!(status.code(), Some(0), "{shown:?}");
    shown
}

#[test]
fn a_wait_at_a_terminal_is_one_live_line_cleared_as_the_run_starts() {
    let shown = waiting_at_a_terminal("xterm");
    let live = shown
        .find("waiting for jobs/live")
        .unwrap_or_else(|| panic!("a live line: {shown:?}"));
    let line = &shown[live..];
    for part in [
        "place 2 in line, 1 ahead; waited ",
        "s (--wait-timeout: 9m 5",
        "s left); pid ",
        " leads: sh -c ",
    ] {
        assert!(line.contains(part), "{part:?} in {shown:?}");
    }
    // Redrawn in place (a carriage return, the line erased), never a new
    // line of its own; cleared the same way before the command's output.
    let last = shown.rfind("waiting for jobs/live").unwrap();
    let ran = shown.rfind("ran").unwrap();
    assert!(shown[last..ran].contains("\r\x1b[2K"), "{shown:?}");
    assert!(!shown[..ran].contains('\n'), "{shown:?}");
}

#[test]
fn a_dumb_terminal_gets_no_live_line() {
    let shown = waiting_at_a_terminal("dumb");
    assert!(!shown.contains("waiting for"), "{shown:?}");
    assert!(!shown.contains('\x1b'), "{shown:?}");
}

/// A wait that gives up at --wait-timeout clears its line before saying
/// why it did not run: the line once ran into the live one.
#[test]
fn the_live_line_is_cleared_before_the_give_up_is_said() {
    let etcd = Etcd::shared();
    let name = unique("jobs/live-out");
    let dir = tempfile::tempdir().unwrap();
    let mut leader = leader_until(etcd, &name, &dir.path().join("go"));
    let pty = Pty::open_sized(Some(250));
    let mut waiter = pty.spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", &name, "--wait-timeout", "2s", "--", "true"])
            .env("TERM", "xterm"),
    );
    let mut terminal = pty.master.try_clone().unwrap();
    let shown = read_until(&mut terminal, "not running after waiting", LIMIT);
    let said = shown.find("leaderrun: not running after waiting").unwrap();
    assert!(shown.contains("waiting for "), "{shown:?}");
    assert!(shown[..said].ends_with("\r\x1b[2K"), "{shown:?}");
    let status = wait_within(&mut waiter, LIMIT, "the waiter");
    assert_eq!(status.code(), Some(75), "{shown:?}");
    send(leader.pid(), Signal::SIGTERM);
    leader.finish(LIMIT);
}

/// A reminder interval that is not one is refused as bad input, in one
/// line, before anything is asked of etcd: 1ms once logged hundreds of
/// lines a second.
#[test]
fn a_bad_reminder_interval_is_refused_in_one_line() {
    let etcd = Etcd::shared();
    for bad in ["1ms", "soon", "", "-1s"] {
        let done = lr(etcd)
            .name(&unique("jobs/still"))
            .wait()
            .env("LEADERRUN_STILL_WAITING_EVERY", bad)
            .run_within(["true"], SOON);
        assert_eq!(done.code, Some(125), "{bad:?}: {}", done.stderr);
        assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
        assert!(
            done.stderr.contains("LEADERRUN_STILL_WAITING_EVERY"),
            "{}",
            done.stderr
        );
    }
}
