//! The handoff to the next in line, and what keeps it short without
//! giving up safety: the leader resigns in one write that deletes its key,
//! writes the run's records (fenced as ever) and hands over to the one
//! behind it (even after a command shorter than a round trip), its lease
//! is revoked only if the command attached keys to it, its watches stay
//! open until it has resigned, every waiter has its guardian ready before
//! its turn, and the win is proven by the handover or by the read that
//! found it (the leader key's "since" is written after, off the path, and
//! wakes nobody).

use crate::common::*;
use leaderrun::events;
use nix::sys::signal::Signal;
use std::time::{Duration, SystemTime};

/// The mod revision and token of an election's `.last-finished` record.
fn last_finished(etcd: &Etcd, name: &str) -> (i64, i64) {
    let key = format!("{name}.last-finished");
    etcd.with(async move |mut client| {
        let response = client.get(key, None).await.unwrap();
        let kv = response.kvs().first().expect("a record");
        let record: serde_json::Value = serde_json::from_slice(kv.value()).unwrap();
        (kv.mod_revision(), record["token"].as_i64().unwrap())
    })
}

#[test]
fn fast_path_a_run_resigns_and_records_its_end_in_one_write() {
    let etcd = Etcd::start();
    let name = "jobs/handoff";
    let run = || {
        let done = lr(&etcd).name(name).run(["true"]);
        assert_eq!(done.code, Some(0), "{}", done.stderr);
    };
    run();
    let before = requests(&etcd);
    run();
    assert_eq!(
        since_then(&etcd, before, 2),
        [2, 0],
        "[Txn, LeaseRevoke]: one transaction to lead, one to resign with the records (no read of them), and the lease, with nothing left on it, left to expire"
    );
    assert!(etcd.candidates(name).is_empty());
    let (_, token) = last_finished(&etcd, name);
    assert!(token > 0);
}

/// The requests etcd has handled: [Txn, LeaseRevoke]. Not the plain reads
/// (Range): a leader's look-up of who is behind it runs beside its command,
/// and a short command's resignation may cut it off before etcd sees it.
fn requests(etcd: &Etcd) -> [u64; 2] {
    ["Txn", "LeaseRevoke"].map(|method| etcd.handled(method))
}

/// The requests handled since `before`, once at least `txns` transactions
/// have been counted: etcd counts a request as its answer goes out, so the
/// last may show a moment after its client has exited.
fn since_then(etcd: &Etcd, before: [u64; 2], txns: u64) -> [u64; 2] {
    let since = || {
        let now = requests(etcd);
        [0, 1].map(|at| now[at] - before[at])
    };
    await_condition(LIMIT, "etcd to count the requests", || since()[0] >= txns);
    since()
}

#[test]
fn fast_path_a_handoff_costs_three_transactions_at_most_and_no_revoke() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-cost";
    let (mut leader, release) = lead_until_released(&etcd, name);
    let mut next = queue(&etcd, name, &["true"]);
    next.await_watching(LIMIT);
    let before = requests(&etcd);
    release.go();
    for replica in [&mut leader, &mut next] {
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
    // The leader's resignation (its records in it); the next one's proof,
    // unless the leader handed over to it (it looks up who is behind it as
    // its command starts, and that may come before the next one queued);
    // the next one's resignation, whose records replace the leader's with
    // no read first, because they were written at the revision that woke
    // it. A read and a swap more would mean the records fell back to the
    // fenced write.
    let [txns, revokes] = since_then(&etcd, before, 2);
    assert!(
        (2..=3).contains(&txns) && revokes == 0,
        "{txns} Txn, {revokes} LeaseRevoke"
    );
    let (_, token) = last_finished(&etcd, name);
    assert_eq!(token, etcd_token_of_last_run(&etcd, name));
}

#[test]
fn fast_path_a_leader_hands_over_to_the_waiter_behind_it_with_no_read() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-over";
    let (mut first, release_first) = lead_having_looked_behind(&etcd, name);
    let flag = release_first.flag.with_file_name("second");
    let until = until_exists(&flag);
    let mut second = queue(&etcd, name, &["sh", "-c", &until]);
    second.await_watching(LIMIT);
    let mut third = queue(&etcd, name, &["true"]);
    third.await_watching(LIMIT);
    // The first leader looked behind it as it started, before anyone
    // queued: the second proves its turn by reading. Its own look behind
    // it, as its command starts, finds the third.
    hand_to_the_next_and_see_it_look_behind(&mut first, &release_first, &second);
    std::fs::write(&flag, "").unwrap();
    let (code, handing) = second.finish(LIMIT);
    assert_eq!(code, Some(0), "{handing}");
    let (code, handed) = third.finish(LIMIT);
    assert_eq!(code, Some(0), "{handed}");
    assert!(
        count_events(&handing, events::HANDED_OVER) > 0,
        "the second hands over: {handing}"
    );
    // The third's turn is proven by that rewrite of its key, with no read.
    assert!(
        count_events(&handed, events::HANDED_OVER_TO_US) > 0,
        "the third is handed over to: {handed}"
    );
    assert!(etcd.candidates(name).is_empty());
}

/// The token the last run's records say ran last.
fn etcd_token_of_last_run(etcd: &Etcd, name: &str) -> i64 {
    let value = etcd.get(&format!("{name}.last-started")).expect("a record");
    serde_json::from_str::<serde_json::Value>(&value).unwrap()["token"]
        .as_i64()
        .unwrap()
}

#[test]
fn keys_the_command_attached_to_its_lease_go_with_the_run() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-attached";
    let put = format!(
        "'{}' put --lease=\"$LEADERRUN_LEASE\" app/endpoint here >/dev/null",
        etcdctl_binary().display()
    );
    let done = lr(&etcd).name(name).verbose().run(["sh", "-c", &put]);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    // Revoked before leaderrun exited: gone at once, not a TTL later,
    // unless etcd left the revocation unanswered within the way out's
    // bound, which leaderrun says: then it goes with the lease.
    if way_out_unanswered(&done.stderr) {
        await_condition(LIMIT, "the key to go with the lease", || {
            etcd.get("app/endpoint").is_none()
        });
    } else {
        assert_eq!(etcd.get("app/endpoint"), None, "{}", done.stderr);
    }
    await_resigned(&etcd, name, "resigned");
}

#[test]
fn fast_path_keys_the_command_attached_go_with_the_run_when_it_hands_over() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-attached-over";
    let (mut first, release_first) = lead_until_released(&etcd, name);
    let put = format!(
        "'{}' put --lease=\"$LEADERRUN_LEASE\" app/endpoint here >/dev/null",
        etcdctl_binary().display()
    );
    let mut second = queue(&etcd, name, &["sh", "-c", &put]);
    second.await_watching(LIMIT);
    let flag = release_first.flag.with_file_name("third");
    let mut third = queue(&etcd, name, &["sh", "-c", &until_exists(&flag)]);
    third.await_watching(LIMIT);
    release_first.go();
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, handing) = second.finish(LIMIT);
    assert_eq!(code, Some(0), "{handing}");
    assert!(
        count_events(&handing, events::HANDED_OVER) > 0,
        "the second hands over: {handing}"
    );
    // Its put came between its win and its resignation: the keys were
    // read, and the lease revoked before it exited, while the third leads.
    assert_eq!(etcd.get("app/endpoint"), None);
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = third.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(etcd.candidates(name).is_empty());
}

/// A whole record with `token`, as JSON.
fn record_with(token: i64) -> String {
    serde_json::json!({
        "host": "elsewhere", "pid": 1, "token": token, "command": "other",
        "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z",
        "duration_s": 1.0, "exit_code": 0, "outcome": "succeeded",
    })
    .to_string()
}

/// A record written by another writer while we ran, whatever its token
/// (a copy from another cluster, a newer version's record this one cannot
/// read whole): we still hold our key as we end, so we finished last, and
/// the one write that resigns replaces it. Fenced by token, the larger ones
/// froze the records for good.
#[test]
fn a_record_written_while_we_ran_is_replaced_whatever_its_token() {
    let etcd = Etcd::start();
    let newer = i64::MAX / 2;
    for (name, theirs, token) in [
        ("jobs/handoff-older", record_with(1), 1),
        ("jobs/handoff-newer", record_with(newer), newer),
        (
            "jobs/handoff-partial",
            format!(r#"{{"token":{newer},"outcome":"postponed"}}"#),
            newer,
        ),
    ] {
        let (mut leader, release) = lead_until_released(&etcd, name);
        let (_, ours, _) = etcd.candidates(name)[0].clone();
        etcd.put(&format!("{name}.last-finished"), &theirs, 0);
        release.go();
        let (code, stderr) = leader.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
        let (_, recorded) = last_finished(&etcd, name);
        assert_ne!(recorded, token, "{name}");
        assert_eq!(recorded, ours, "{name}");
    }
}

/// A run that ends while its start record is still being written (it ran
/// past the second that record waits, and etcd answers slowly: a loaded
/// machine) does not wait for that write: its resignation goes out at
/// once, and its end replaces a record written while it ran. Waited for,
/// the start record took the way out's whole bound, the resignation was
/// never sent, and the record written while it ran stayed
/// (a_record_written_while_we_ran_is_replaced_whatever_its_token, seen
/// failing beside two busy loops).
#[test]
fn a_start_record_still_being_written_does_not_hold_back_the_resignation() {
    let etcd = Etcd::start();
    let proxy = Proxy::start(etcd.client_port());
    let name = "jobs/handoff-start-in-flight";
    let (mut leader, release) =
        spawn_until_released(Lr::at(&proxy.endpoint()).name(name).debug_json());
    // Leading, on either handoff path (the slow one looks behind nobody).
    await_condition(LIMIT, "the leader to lead", || {
        leader.logged(events::LEADER) > 0
    });
    let (_, ours, _) = etcd.candidates(name)[0].clone();
    etcd.put(&format!("{name}.last-finished"), &record_with(1), 0);
    // Every answer from now on comes later than the way out's bound;
    // requests still reach etcd at once. Released past the start
    // record's second, its write (a read, then a swap) is on its way.
    proxy.delay_answers(Duration::from_millis(600));
    std::thread::sleep(Duration::from_millis(1150));
    release.go();
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let (_, recorded) = last_finished(&etcd, name);
    assert_eq!(recorded, ours, "{stderr}");
}

#[test]
fn a_run_that_lost_its_key_still_records_its_end() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-lost";
    let mut leader = lr(&etcd).name(name).spawn(["sleep", "60"]);
    await_condition(LIMIT, "a leader", || etcd.candidates(name).len() == 1);
    let (key, token, _) = etcd.candidates(name)[0].clone();
    etcd.delete(&key);
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    let (_, recorded) = last_finished(&etcd, name);
    assert_eq!(recorded, token);
}

/// What lets a leader's command of [`lead_until_released`] end.
struct Release {
    _dir: tempfile::TempDir,
    flag: std::path::PathBuf,
}

/// A leader of `name` whose command runs until [`Release::go`].
fn lead_until_released(etcd: &Etcd, name: &str) -> (Replica, Release) {
    let (leader, release) = spawn_until_released(lr(etcd).name(name));
    await_condition(LIMIT, "a leader", || etcd.candidates(name).len() == 1);
    (leader, release)
}

/// `replica` spawned with a command that runs until released.
fn spawn_until_released(replica: Lr) -> (Replica, Release) {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("go");
    let until = until_exists(&flag);
    let leader = replica.spawn(["sh", "-c", &until]);
    (leader, Release { _dir: dir, flag })
}

/// [`lead_until_released`], once the leader has looked behind it and
/// found nobody: the one that queues next is not handed over to, and reads
/// its way to leading. (The look-up goes out as the command starts, which
/// on a busy machine can be after the key is written and others queue.)
fn lead_having_looked_behind(etcd: &Etcd, name: &str) -> (Replica, Release) {
    let (leader, release) = spawn_until_released(lr(etcd).name(name).debug_json());
    await_condition(LIMIT, "the leader to look behind it", || {
        leader.logged(events::LOOKED_BEHIND) > 0
    });
    (leader, release)
}

impl Release {
    fn go(&self) {
        std::fs::write(&self.flag, "").unwrap();
    }
}

/// A waiter queued with `-vv` (its re-reads of the queue show).
fn queue(etcd: &Etcd, name: &str, command: &[&str]) -> Replica {
    lr(etcd).name(name).wait().debug_json().spawn(command)
}

/// Releases `leader` once two seconds have gone by since the waiter with
/// `key` queued (the records say seconds), and sees it exit 0. Returns the
/// time from which the waiter's key may say it leads.
fn hand_over_seconds_after_queueing(
    etcd: &Etcd,
    key: &str,
    leader: &mut Replica,
    release: &Release,
) -> SystemTime {
    let queued = since(etcd, key);
    await_condition(LIMIT, "two seconds since the waiter queued", || {
        SystemTime::now() > queued + Duration::from_secs(2)
    });
    let leads_from = SystemTime::now() - Duration::from_secs(1);
    release.go();
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    leads_from
}

/// A candidate key's `started`: since when it queued, or leads.
fn since(etcd: &Etcd, key: &str) -> SystemTime {
    let value: serde_json::Value = serde_json::from_str(&etcd.get(key).expect("the key")).unwrap();
    humantime::parse_rfc3339(value["started"].as_str().unwrap()).unwrap()
}

#[test]
fn every_waiter_has_its_guardian_ready_before_its_turn() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-guardian";
    let (mut leader, release) = lead_until_released(&etcd, name);
    let (mut next, mut behind) = (queue(&etcd, name, &["true"]), queue(&etcd, name, &["true"]));
    for waiter in [&next, &behind] {
        await_condition(LIMIT, "a waiter's guardian", || {
            waiter.is_watching() && guardians_of(waiter.pid()).len() == 1
        });
    }
    assert_eq!(etcd.candidates(name).len(), 3, "nobody's turn has come");
    release.go();
    for replica in [&mut leader, &mut next, &mut behind] {
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
}

#[test]
fn a_waiter_that_comes_to_lead_shows_since_when_it_leads() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-since";
    let (mut leader, release) = lead_until_released(&etcd, name);
    let waiter = lr(&etcd).name(name).wait().spawn(["sleep", "60"]);
    await_condition(LIMIT, "a waiter", || etcd.candidates(name).len() == 2);
    let waiter_key = etcd.candidates(name)[1].0.clone();
    let leads_from = hand_over_seconds_after_queueing(&etcd, &waiter_key, &mut leader, &release);
    await_condition(LIMIT, "the waiter's key to say since when it leads", || {
        etcd.candidates(name).len() == 1 && since(&etcd, &waiter_key) >= leads_from
    });
    drop(waiter);
}

#[test]
fn a_leader_marking_since_when_it_leads_wakes_nobody() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-behind";
    let (mut leader, release) = lead_until_released(&etcd, name);
    let mut next = queue(&etcd, name, &["sleep", "120"]);
    await_condition(LIMIT, "the next in line", || {
        etcd.candidates(name).len() == 2
    });
    let next_key = etcd.candidates(name)[1].0.clone();
    let mut behind = queue(&etcd, name, &["true"]);
    behind.await_watching(LIMIT);
    let leads_from = hand_over_seconds_after_queueing(&etcd, &next_key, &mut leader, &release);
    // The one ahead leads, and after a second rewrites its key with since
    // when: the one behind, watching that key, must sleep through it.
    await_condition(LIMIT, "the new leader to mark since when it leads", || {
        since(&etcd, &next_key) >= leads_from
    });
    send(next.pid(), nix::sys::signal::Signal::SIGTERM);
    let (code, stderr) = next.finish(LIMIT);
    assert_eq!(code, Some(143), "{stderr}");
    let (code, stderr) = behind.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        count_events(&stderr, events::QUEUED),
        1,
        "woken only by the deletion of the key ahead: {stderr}"
    );
}

/// Queues `waiters` replicas running `true` behind a leader, one after
/// another, releases the leader (calling `at_release` just before), and
/// returns what that returned and their logs, once all have exited 0.
fn chain_of_true<T>(
    etcd: &Etcd,
    name: &str,
    waiters: usize,
    at_release: impl FnOnce() -> T,
) -> (T, Vec<String>) {
    let (mut leader, release) = lead_until_released(etcd, name);
    // Queued one after another, so that the line is in this order.
    let mut waiters: Vec<Replica> = (0..waiters)
        .map(|_| {
            let waiter = queue(etcd, name, &["true"]);
            waiter.await_watching(LIMIT);
            waiter
        })
        .collect();
    let before = at_release();
    release.go();
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let logs = waiters
        .iter_mut()
        .map(|waiter| {
            let (code, stderr) = waiter.finish(LIMIT);
            assert_eq!(code, Some(0), "{stderr}");
            stderr
        })
        .collect();
    (before, logs)
}

#[test]
fn fast_path_a_chain_of_commands_shorter_than_a_round_trip_is_handed_over_all_along() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-chain";
    let (reads, logs) = chain_of_true(&etcd, name, 5, || etcd.handled("Range"));
    // The first leader looked behind it before anyone queued: the first
    // waiter reads. `true` ends well within a round trip, yet every leader
    // after it waits for its look behind and hands over.
    for (place, log) in logs.iter().enumerate().skip(1) {
        assert!(
            count_events(log, events::HANDED_OVER_TO_US) > 0,
            "waiter {place} is handed over to: {log}"
        );
    }
    // Reads of the line once the first leader is released: the first
    // waiter's proof and its look behind it (it was not handed over to),
    // and the last one's, which was told of nobody behind it. The three
    // between were told who is behind them by the leader that handed over
    // to them. A look behind by every leader would make six.
    let reads = etcd.handled("Range") - reads;
    assert!(reads <= 3, "{reads} reads of the line: {logs:?}");
    assert!(etcd.candidates(name).is_empty());
}

#[test]
fn fast_path_a_waiter_passed_on_that_has_left_the_line_is_passed_over() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-passed-left";
    let (mut first, release_first) = lead_having_looked_behind(&etcd, name);
    let flag = release_first.flag.with_file_name("second");
    let mut second = queue(&etcd, name, &["sh", "-c", &until_exists(&flag)]);
    second.await_watching(LIMIT);
    let mut behind: Vec<Replica> = (0..3)
        .map(|_| {
            let waiter = queue(&etcd, name, &["true"]);
            waiter.await_watching(LIMIT);
            waiter
        })
        .collect();
    // The second reads its way to leading, and looks behind it: it will
    // hand over to the third and pass on the fourth and the fifth.
    hand_to_the_next_and_see_it_look_behind(&mut first, &release_first, &second);
    // The fourth leaves the line before its turn.
    send(behind[1].pid(), Signal::SIGTERM);
    behind[1].finish(LIMIT);
    await_condition(LIMIT, "the fourth to leave the line", || {
        etcd.candidates(name).len() == 3
    });
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = second.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, third) = behind[0].finish(LIMIT);
    assert_eq!(code, Some(0), "{third}");
    // The third hands over to nobody (the fourth is gone); the fifth,
    // which watched the third's key once the fourth left, wakes on its
    // deletion and leads by reading the line.
    let (code, fifth) = behind[2].finish(LIMIT);
    assert_eq!(code, Some(0), "{fifth}");
    assert!(
        count_events(&fifth, events::HANDED_OVER_TO_US) == 0,
        "the fifth was not handed over to: {fifth}"
    );
    assert!(etcd.candidates(name).is_empty());
}

#[test]
fn fast_path_a_leader_that_hands_over_with_nothing_written_since_its_win_reads_nothing_of_its_lease(
) {
    let etcd = Etcd::start();
    let name = "jobs/handoff-unread";
    let before = etcd.handled("LeaseTimeToLive");
    let ((), logs) = chain_of_true(&etcd, name, 5, || ());
    let handovers = logs
        .iter()
        .filter(|log| count_events(log, events::HANDED_OVER) > 0)
        .count();
    assert!(handovers >= 1, "somebody hands over: {logs:?}");
    // Six resignations. Those that hand over find in their own revision
    // that nothing was written since their win, so nothing can be attached
    // to their lease; the others (the first leader, who looked behind
    // before anyone queued, and the last) read its keys beside resigning.
    let reads = 6 - handovers as u64;
    await_condition(LIMIT, "etcd to count the reads", || {
        etcd.handled("LeaseTimeToLive") - before >= reads
    });
    assert_eq!(
        etcd.handled("LeaseTimeToLive") - before,
        reads,
        "reads of a lease's keys, with {handovers} handovers"
    );
    assert!(etcd.candidates(name).is_empty());
}

#[test]
fn a_leader_keeps_its_watches_open_until_it_has_resigned() {
    let etcd = Etcd::start();
    let name = "jobs/handoff-watches";
    let streams = |etcd: &Etcd| etcd.gauge("etcd_debugging_mvcc_watch_stream_total");
    let (mut first, release_first) = lead_until_released(&etcd, name);
    let flag = release_first.flag.with_file_name("second");
    let mut second = queue(&etcd, name, &["sh", "-c", &until_exists(&flag)]);
    second.await_watching(LIMIT);
    // The first watches its own key; the second its own and the one ahead.
    await_condition(LIMIT, "three watch streams", || streams(&etcd) == 3);
    let watches = etcd.handled("Watch");
    release_first.go();
    let (code, stderr) = first.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    // The first is gone from etcd's view: its watch ended with its
    // connection.
    await_condition(LIMIT, "the first's watch to end", || streams(&etcd) <= 2);
    // The second leads with both its watches still open: ending the one of
    // the key ahead as its turn came would have put etcd's work on its path.
    assert_eq!(streams(&etcd), 2, "the second's watches, while it runs");
    assert_eq!(
        etcd.handled("Watch"),
        watches + 1,
        "only the first's watch ended"
    );
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = second.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    await_condition(LIMIT, "every watch to end with the run", || {
        streams(&etcd) == 0
    });
}

/// Releases `leader`, sees it exit 0, and waits until `next`, leading,
/// has looked up who is behind it as its command starts (it logged
/// [`events::LOOKED_BEHIND`]).
fn hand_to_the_next_and_see_it_look_behind(
    leader: &mut Replica,
    release: &Release,
    next: &Replica,
) {
    release.go();
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    await_condition(LIMIT, "the next leader to look behind it", || {
        next.logged(events::LOOKED_BEHIND) > 0
    });
}

#[test]
fn fast_path_a_waiter_stopped_past_its_lease_never_runs_on_an_old_handover() {
    // Its lease expires while it is stopped (the shortest etcd grants).
    stopped_waiter_handed_over_then_lost("jobs/handoff-expired", &["--ttl", "2s"], |_, _| {});
}

#[test]
fn fast_path_a_waiter_whose_key_went_while_it_was_stopped_never_runs_on_the_handover() {
    // Its key is deleted by hand right after the handover, its lease alive.
    stopped_waiter_handed_over_then_lost("jobs/handoff-deleted", &[], |etcd, key| etcd.delete(key));
}

/// A waiter is stopped (SIGSTOP), handed over to, then loses its key by
/// `lose` or its lease's expiry; the one behind it takes over and runs.
/// Woken (SIGCONT), the stopped one must not run on that old handover
/// while the other runs: it queues anew, and runs after it.
fn stopped_waiter_handed_over_then_lost(name: &str, options: &[&str], lose: impl Fn(&Etcd, &str)) {
    use nix::sys::signal::Signal;
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let (ran, second_flag, third_flag) = (
        dir.path().join("ran"),
        dir.path().join("second"),
        dir.path().join("third"),
    );
    let (mut first, release_first) = lead_having_looked_behind(&etcd, name);
    let mut second = queue(&etcd, name, &["sh", "-c", &until_exists(&second_flag)]);
    second.await_watching(LIMIT);
    let touch = format!("touch '{}'", ran.display());
    let mut stopped = lr(&etcd)
        .debug_json()
        .name(name)
        .wait()
        .args(options)
        .spawn(["sh", "-c", &touch]);
    stopped.await_watching(LIMIT);
    let stopped_key = etcd.candidates(name)[2].0.clone();
    let mut third = queue(&etcd, name, &["sh", "-c", &until_exists(&third_flag)]);
    third.await_watching(LIMIT);
    // The second leads, and as its command starts looks up who is behind
    // it: the one about to be stopped.
    hand_to_the_next_and_see_it_look_behind(&mut first, &release_first, &second);
    // Every watch caught up (etcd catches up a watch that starts in the
    // past only every 100 ms): the handover reaches the stopped one's
    // watch of its own key as it happens, not after the loss.
    await_condition(LIMIT, "every watch to catch up", || {
        etcd.metrics()
            .lines()
            .any(|line| line == "etcd_debugging_mvcc_slow_watcher_total 0")
    });
    stop(stopped.pid());
    std::fs::write(&second_flag, "").unwrap();
    let (code, handing) = second.finish(LIMIT);
    assert_eq!(code, Some(0), "{handing}");
    assert!(count_events(&handing, events::HANDED_OVER) > 0, "{handing}");
    lose(&etcd, &stopped_key);
    await_condition(LIMIT, "the stopped one's key to go", || {
        etcd.candidates(name)
            .iter()
            .all(|(key, _, _)| *key != stopped_key)
    });
    await_condition(LIMIT, "the third to lead", || {
        third.logged(events::LEADER) > 0
    });
    send(stopped.pid(), Signal::SIGCONT);
    await_condition(LIMIT, "the woken one to campaign again", || {
        stopped.logged(events::CAMPAIGNING_AGAIN) > 0
    });
    assert!(
        !ran.exists(),
        "ran beside the third: {}",
        stopped.stderr_so_far()
    );
    // Nor did it seem to lead on the old handover.
    let log = stopped.stderr_so_far();
    let events: Vec<_> = logged_events(&log)
        .into_iter()
        .map(|fields| fields["event"].clone())
        .collect();
    let woke = events
        .iter()
        .position(|event| event == events::CAMPAIGNING_AGAIN)
        .unwrap();
    assert!(
        !events[..woke].contains(&events::LEADER.into()),
        "no 'leader' line: {log}"
    );
    std::fs::write(&third_flag, "").unwrap();
    for replica in [&mut third, &mut stopped] {
        let (code, stderr) = replica.finish(LIMIT);
        assert_eq!(code, Some(0), "{stderr}");
    }
    assert!(ran.exists(), "the woken one runs in its new turn");
}
