//! etcd permissions: what one election needs, against a real etcd with
//! authentication on. A role granting readwrite on the prefix
//! `jobs/nightly` (etcd's range `[jobs/nightly, jobs/nightlz)`, which holds
//! both the election's keys `jobs/nightly/<lease>` and the `--once-per`
//! marker `jobs/nightly.once-per`) is enough to run, queue with `--wait`,
//! open a window, renew the lease, resign and read `status`. A user that
//! may only read that range, or that may write only another prefix, is
//! refused: exit 125, one line that says permission denied, the command not
//! run and nothing left in etcd. Readwrite on `jobs/nightly/` alone covers
//! the election but not its marker.

use crate::common::*;
use etcd_client::Permission;
use std::process::Command;
use std::time::Duration;

const ROOT_PASSWORD: &str = "root-pw-4bq7";
const NAME: &str = "jobs/nightly";
const MARKER: &str = "jobs/nightly.once-per";
/// Every bound on one leaderrun run: far above the ~0.1 s one takes.
const BOUND: Duration = LIMIT;

fn password(user: &str) -> String {
    format!("pw-{user}-x9")
}

/// An etcd with authentication on, and `user` holding one role (named
/// after the user) that grants `permissions` and nothing else.
fn etcd_with_user(user: &str, permissions: Vec<Permission>) -> Etcd {
    etcd_with_user_on(EtcdOptions::default(), user, permissions)
}

/// [`etcd_with_user`], of an etcd started with `options`.
fn etcd_with_user_on(options: EtcdOptions, user: &str, permissions: Vec<Permission>) -> Etcd {
    let mut etcd = Etcd::start_with(options);
    etcd.enable_auth(ROOT_PASSWORD);
    add_user(&etcd, user, permissions);
    etcd
}

/// `user`, with a role of its own (named after it) that grants
/// `permissions` and nothing else, added to an etcd with authentication on.
fn add_user(etcd: &Etcd, user: &str, permissions: Vec<Permission>) {
    let (user, secret) = (user.to_string(), password(user));
    etcd.with(async move |mut client| {
        client.role_add(user.as_str()).await.expect("role add");
        for permission in permissions {
            client
                .role_grant_permission(user.as_str(), permission)
                .await
                .expect("grant permission");
        }
        client
            .user_add(user.as_str(), secret, None)
            .await
            .expect("user add");
        client
            .user_grant_role(user.as_str(), user.as_str())
            .await
            .expect("grant role");
    });
}

/// `leaderrun --user USER --password PASSWORD ARGS...`, or `leaderrun
/// status --user USER --password PASSWORD ARGS...` when ARGS start with
/// `status` (its options follow the subcommand).
fn as_user(etcd: &Etcd, user: &str, args: &[&str]) -> Command {
    let mut command = leaderrun(&etcd.endpoint());
    let args = match args.split_first() {
        Some((&subcommand, rest))
            if ["status", "pause", "resume", "check"].contains(&subcommand) =>
        {
            command.arg(subcommand);
            rest
        }
        _ => args,
    };
    command
        .args(["--user", user, "--password", &password(user)])
        .args(args);
    command
}

/// `leaderrun status --json --name jobs/nightly` as `user`: its exit code
/// and the object it printed.
fn status_as(etcd: &Etcd, user: &str) -> (Option<i32>, serde_json::Value) {
    let done = run_within(
        &mut as_user(etcd, user, &["status", "--json", "--name", NAME]),
        BOUND,
    );
    let json = serde_json::from_str(&done.stdout).unwrap_or_else(|err| {
        panic!(
            "status as {user}: {err}: stdout {:?}, stderr {}",
            done.stdout, done.stderr
        )
    });
    (done.code, json)
}

/// The leases etcd holds, as root sees them.
fn leases(etcd: &Etcd) -> Vec<i64> {
    etcd.with(async |mut client| {
        let listed = client.leases().await.expect("lease list");
        listed.leases().iter().map(|lease| lease.id()).collect()
    })
}

/// A refused run takes nothing with it: no key under the election, no
/// marker, and the lease it was granted given back (it would otherwise
/// live for its whole TTL, 15 s): no lease but those of `before`.
fn assert_nothing_left(etcd: &Etcd, before: &[i64], context: &str) {
    assert!(
        etcd.candidates(NAME).is_empty(),
        "{context}: {:?}",
        etcd.candidates(NAME)
    );
    assert_eq!(etcd.get(MARKER), None, "{context}: a marker");
    await_condition(SOON, &format!("{context}: its lease given back"), || {
        leases(etcd).iter().all(|lease| before.contains(lease))
    });
}

/// A plain run, a --once-per run and a --wait run of `jobs/nightly` as
/// `user`: each refused in one line, with nothing left behind.
fn assert_every_run_refused(etcd: &Etcd, user: &str, label: &str) {
    let denied = "etcdserver: permission denied";
    for (options, step) in [
        (vec![], "refused campaigning"),
        (vec!["--once-per", "1h"], "refused campaigning"),
        (vec!["--wait"], "refused joining the queue"),
    ] {
        let mut args = vec!["--name", NAME];
        args.extend(&options);
        args.extend(["--", "echo", "ran"]);
        // A run that succeeded before leaves its lease, with nothing on
        // it, to expire by itself.
        let before = leases(etcd);
        let done = run_within(&mut as_user(etcd, user, &args), BOUND);
        let context = format!("{label} {options:?}");
        assert_one_error_line(&done, &format!("{step}: {denied}"), &context);
        assert_nothing_left(etcd, &before, &context);
    }
}

#[test]
fn readwrite_on_the_name_as_a_prefix_is_all_an_election_needs() {
    let user = "nightly";
    let etcd = etcd_with_user(user, vec![Permission::read_write(NAME).with_prefix()]);
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(3), "nobody leads yet: {json}");
    assert_eq!(json["holder"], serde_json::Value::Null, "{json}");

    let done = run_within(
        &mut as_user(&etcd, user, &["--name", NAME, "--", "echo", "ran"]),
        BOUND,
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(done.stdout, "ran\n");
    assert!(done.stderr.is_empty(), "{}", done.stderr);

    // --once-per writes its marker beside the election, inside the prefix.
    let once = [
        "--name",
        NAME,
        "--once-per",
        "1h",
        "-v",
        "--",
        "echo",
        "ran",
    ];
    let first = run_within(&mut as_user(&etcd, user, &once), BOUND);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(first.stdout, "ran\n");
    assert!(etcd.get(MARKER).is_some(), "the window's marker");
    let second = run_within(&mut as_user(&etcd, user, &once), BOUND);
    assert_eq!(second.code, Some(75), "{}", second.stderr);
    assert!(second.stdout.is_empty(), "ran twice in a window");
    assert!(
        second
            .stderr
            .contains("already started in this --once-per window"),
        "{}",
        second.stderr
    );

    // A leader that outlives its 2 s lease several times over: etcd 3.7
    // accepts a renewal only from a user that may write the keys on the
    // lease, so a refused renewal would end this run with 124.
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    let job = format!(
        "sleep 5; while [ ! -e '{}' ]; do sleep 0.02; done",
        release.display()
    );
    let mut leader = Replica::spawn(&mut as_user(
        &etcd,
        user,
        &["--name", NAME, "--ttl", "2s", "--", "sh", "-c", &job],
    ));
    await_condition(SOON, "a leader", || etcd.candidates(NAME).len() == 1);
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(0), "someone leads: {json}");
    assert_eq!(json["holder"]["pid"], leader.pid(), "{json}");

    // Queued behind it, the waiter runs once it is done.
    let mut waiter_command = as_user(
        &etcd,
        user,
        &["--name", NAME, "--ttl", "2s", "--wait", "--", "echo", "ran"],
    );
    let waiter = std::thread::spawn(move || run_within(&mut waiter_command, BOUND));
    await_condition(SOON, "a queued replica", || {
        etcd.candidates(NAME).len() == 2
    });
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(json["waiters"], 1, "{json}");
    std::fs::write(&release, "").unwrap();
    let (code, stderr) = leader.finish(BOUND);
    assert_eq!(code, Some(0), "renewals accepted: {stderr}");
    let waited = waiter.join().unwrap();
    assert_eq!(waited.code, Some(0), "{}", waited.stderr);
    assert_eq!(waited.stdout, "ran\n");

    // Both resigned by revoking their leases, which etcd allows only to a
    // user that may write every key on the lease.
    assert!(
        etcd.candidates(NAME).is_empty(),
        "{:?}",
        etcd.candidates(NAME)
    );
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(3), "nobody leads again: {json}");

    // The pause lies in the prefix too: paused for a while (its lease),
    // a run refused, then resumed (the lease revoked).
    let steer = |args: &[&str]| run_within(&mut as_user(&etcd, user, args), BOUND);
    let paused = steer(&["pause", "--name", NAME, "--for", "1h"]);
    assert_eq!(paused.code, Some(0), "{}", paused.stderr);
    let refused = steer(&["--name", NAME, "--", "echo", "ran"]);
    assert_eq!(refused.code, Some(75), "{}", refused.stderr);
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(5), "paused: {json}");
    let resumed = steer(&["resume", "--name", NAME]);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    assert!(resumed.stdout.contains("resumed"), "{}", resumed.stdout);
    assert_eq!(etcd.get(&format!("{NAME}.paused")), None);
}

#[test]
fn read_only_on_the_prefix_is_refused_in_one_line_but_may_read_status() {
    let user = "reader";
    let etcd = etcd_with_user(user, vec![Permission::read(NAME).with_prefix()]);
    assert_every_run_refused(&etcd, user, "read-only");

    // Reading is all status needs: the election, the marker and the
    // leader's lease.
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(3), "{json}");
    let root = format!("root:{ROOT_PASSWORD}");
    let mut leader = lr(&etcd)
        .name(NAME)
        .args(["--user", &root, "--once-per", "1h"])
        .spawn(["sleep", "1000"]);
    await_condition(SOON, "root's run to start", || etcd.get(MARKER).is_some());
    let (code, json) = status_as(&etcd, user);
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(json["holder"]["pid"], leader.pid(), "{json}");
    assert_eq!(json["last_run"]["pid"], leader.pid(), "{json}");
    assert!(json["ttl"].as_u64().is_some_and(|ttl| ttl > 0), "{json}");
    send(leader.pid(), nix::sys::signal::Signal::SIGTERM);
    leader.finish(BOUND);
}

#[test]
fn readwrite_on_another_prefix_is_refused_in_one_line() {
    let user = "other";
    let etcd = etcd_with_user(
        user,
        vec![Permission::read_write("jobs/other").with_prefix()],
    );
    // The user and its password are fine: its own prefix works.
    let own = run_within(
        &mut as_user(&etcd, user, &["--name", "jobs/other", "--", "echo", "ran"]),
        BOUND,
    );
    assert_eq!(own.code, Some(0), "{}", own.stderr);
    assert_eq!(own.stdout, "ran\n");

    assert_every_run_refused(&etcd, user, "another prefix");
    let status = run_within(
        &mut as_user(&etcd, user, &["status", "--name", NAME]),
        BOUND,
    );
    assert_one_error_line(
        &status,
        "refused reading the election: etcdserver: permission denied",
        "status of another prefix",
    );
}

#[test]
fn the_election_prefix_alone_covers_neither_the_pause_nor_the_once_per_marker() {
    // `jobs/nightly/` with its slash: the candidates' keys, not the pause
    // `jobs/nightly.paused` that a run's first write compares, nor the
    // marker `jobs/nightly.once-per` beside them.
    let user = "slash";
    let etcd = etcd_with_user(
        user,
        vec![Permission::read_write(format!("{NAME}/")).with_prefix()],
    );
    assert_every_run_refused(&etcd, user, "without the pause");

    // Read on the pause added: runs work, --once-per does not.
    let pause = format!("{NAME}.paused");
    etcd.with(async |mut client| {
        client
            .role_grant_permission(user, Permission::read(pause.as_str()))
            .await
            .expect("grant permission");
    });
    let plain = run_within(
        &mut as_user(&etcd, user, &["--name", NAME, "--", "echo", "ran"]),
        BOUND,
    );
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    assert_eq!(plain.stdout, "ran\n");

    let before = leases(&etcd);
    let once = run_within(
        &mut as_user(
            &etcd,
            user,
            &["--name", NAME, "--once-per", "1h", "--", "echo", "ran"],
        ),
        BOUND,
    );
    assert_one_error_line(
        &once,
        "refused claiming the --once-per window: etcdserver: permission denied",
        "--once-per without the marker",
    );
    assert_nothing_left(&etcd, &before, "--once-per without the marker");
    let status = run_within(
        &mut as_user(&etcd, user, &["status", "--name", NAME]),
        BOUND,
    );
    assert_one_error_line(
        &status,
        "refused reading the --once-per marker: etcdserver: permission denied",
        "status without the marker",
    );
    // Pausing needs write on the pause: a run's role only reads it.
    let paused = run_within(&mut as_user(&etcd, user, &["pause", "--name", NAME]), BOUND);
    assert_one_error_line(
        &paused,
        "refused pausing the election: etcdserver: permission denied",
        "pause with read only",
    );
}

/// A permission taken away from a replica queued with --wait: when it
/// next asks etcd, it is refused, and it fails in one line with 125 rather
/// than retrying for ever.
#[test]
fn a_queued_replica_whose_permission_is_revoked_fails_in_one_line() {
    let user = "nightly";
    let etcd = etcd_with_user(user, vec![Permission::read_write(NAME).with_prefix()]);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut leader = lr(&etcd)
        .name(NAME)
        .args(["--user", "root", "--password", ROOT_PASSWORD])
        .spawn(pid_job(&pidfile));
    let job = read_pid(&pidfile, BOUND);
    let mut waiter = Replica::spawn(&mut as_user(
        &etcd,
        user,
        &["--ttl", "3s", "--name", NAME, "--wait", "--", "echo", "ran"],
    ));
    await_condition(BOUND, "the waiter to queue", || {
        etcd.candidates(NAME).len() == 2
    });
    etcd.with(async move |mut client| {
        let range = etcd_client::RoleRevokePermissionOptions::new().with_prefix();
        client
            .role_revoke_permission(user, NAME, Some(range))
            .await
            .expect("revoke permission");
    });
    send(job, nix::sys::signal::Signal::SIGTERM);
    leader.finish(BOUND);
    let (code, stderr) = waiter.finish(BOUND);
    assert_eq!(code, Some(125), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
}

/// A leader as root running [`pid_job`], and `waiter` queued behind it
/// (both keys in etcd): the leader, its command's pid and the waiter.
fn leader_and_waiter(
    etcd: &Etcd,
    dir: &std::path::Path,
    waiter: &mut Command,
) -> (Replica, i32, Replica) {
    let pidfile = dir.join("pid");
    let leader = lr(etcd)
        .name(NAME)
        .args(["--user", "root", "--password", ROOT_PASSWORD])
        .spawn(pid_job(&pidfile));
    let job = read_pid(&pidfile, BOUND);
    let waiter = Replica::spawn(waiter);
    waiter.await_watching(BOUND);
    (leader, job, waiter)
}

/// A waiter that exited on a refusal: 125, and of its lines the one that
/// it writes whatever the verbosity (its own, `leaderrun: `, not the
/// timestamped logs of -vv) is one error that mentions `mentions`.
fn assert_refused_waiter(waiter: &mut Replica, mentions: &str) {
    let (code, stderr) = waiter.finish(BOUND);
    assert_eq!(code, Some(125), "{stderr}");
    let own = own_lines(&stderr);
    assert_eq!(own.len(), 1, "one line of its own: {stderr}");
    eprintln!("{}", own[0]);
    assert!(own[0].starts_with("leaderrun: error: "), "{stderr}");
    assert!(
        own[0].contains(mentions),
        "should mention {mentions}: {stderr}"
    );
}

/// Authentication switched on under replicas that run without a user:
/// once the waiter's turn comes, etcd refuses its every request ("user
/// name is empty"), which no retry changes. It fails in one line with 125
/// and gives back its place, rather than retrying for ever (on etcd 3.4,
/// where renewals need no user, it held the head of the queue for good).
#[test]
fn a_waiter_without_a_user_fails_in_one_line_once_authentication_is_switched_on() {
    let mut etcd = Etcd::start();
    let ttl = Duration::from_secs(3);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut leader = lr(&etcd).name(NAME).spawn(pid_job(&pidfile));
    read_pid(&pidfile, BOUND);
    let mut waiter = lr(&etcd)
        .ttl(ttl)
        .name(NAME)
        .wait()
        .debug_json()
        .spawn(["echo", "ran"]);
    waiter.await_watching(BOUND);
    etcd.enable_auth(ROOT_PASSWORD);
    // The leader's lease revoked (by root): the waiter's turn.
    let (_, _, lease) = etcd.candidates(NAME)[0].clone();
    etcd.revoke(lease);
    leader.finish(BOUND);
    assert_refused_waiter(
        &mut waiter,
        "user name is empty (etcd has authentication on: give --user)",
    );
    // Its revoke refused too, its place is given back by expiry.
    await_condition(ttl * 3, "the waiter's key to go", || {
        etcd.candidates(NAME).is_empty()
    });
}

/// The password of a queued replica's user changed: at its turn its client
/// authenticates again with the old one, and is refused. One line and
/// 125, as a wrong password at the start gives, and at its turn: not a
/// retry for ever at the head of the queue (etcd 3.4), nor only once a
/// refused renewal has made it dial again (3.7, which checks renewals'
/// tokens: the change comes just after one, so the next is a third of the
/// TTL away).
#[test]
fn a_waiter_whose_password_changed_fails_in_one_line_at_its_turn() {
    let user = "nightly";
    let etcd = etcd_with_user(user, vec![Permission::read_write(NAME).with_prefix()]);
    let ttl = Duration::from_secs(24);
    let dir = tempfile::tempdir().unwrap();
    let (mut leader, job, mut waiter) = leader_and_waiter(
        &etcd,
        dir.path(),
        &mut as_user(
            &etcd,
            user,
            &[
                "--ttl",
                &seconds(ttl),
                "--name",
                NAME,
                "--wait",
                "-vv",
                "--log-format",
                "json",
                "--",
                "echo",
                "ran",
            ],
        ),
    );
    let (_, _, lease) = etcd.candidates(NAME)[1];
    await_renewal(&etcd, lease, ttl);
    etcd.with(async move |mut client| {
        client
            .user_change_password(user, "a-new-password")
            .await
            .expect("change password");
    });
    let changed = std::time::Instant::now();
    send(job, nix::sys::signal::Signal::SIGTERM);
    leader.finish(BOUND);
    // Within a sixth of the TTL: half the time to that next renewal.
    waiter.await_exit(ttl / 6);
    eprintln!("refused {:?} after the change", changed.elapsed());
    assert_refused_waiter(
        &mut waiter,
        "authentication failed, invalid user ID or password",
    );
}

/// Returns just after a renewal of `lease` (of `ttl`): once etcd shows it
/// run down by a few seconds, then nearly whole again.
fn await_renewal(etcd: &Etcd, lease: i64, ttl: Duration) {
    let left = |etcd: &Etcd| etcd.lease_left(lease).unwrap_or_default();
    await_condition(ttl, "the lease to run down", || {
        left(etcd) <= ttl - Duration::from_secs(3)
    });
    await_condition(ttl, "a renewal", || {
        left(etcd) >= ttl - Duration::from_secs(1)
    });
}

/// With JWT tokens, any change to etcd's users or roles (here one that
/// has nothing to do with us: another user added) makes every token
/// issued before it stale ("revision of auth store is old"), though the
/// credentials behind it are good. leaderrun authenticates again and
/// carries on, as etcd's own client does: the leader keeps its leadership
/// (renewals, the watch of its key) and resigns at once, and the waiter
/// takes over at once (unless etcd leaves the resignation unanswered
/// within the way out's bound, which the leader then says). (etcd 3.7 checks the token of every renewal, so
/// there a refused renewal renews the token too, within a third of the
/// TTL; the handover is made right after a change, before that.)
#[test]
fn with_jwt_tokens_a_change_to_the_users_costs_neither_the_leader_nor_the_waiter() {
    let user = "nightly";
    let options = EtcdOptions {
        jwt: true,
        ..EtcdOptions::default()
    };
    let etcd = etcd_with_user_on(
        options,
        user,
        vec![Permission::read_write(NAME).with_prefix()],
    );
    // Long enough that a handover (within three fifths of it) is told, on
    // a loaded machine too, from the key left to expire with the lease
    // (two thirds of it after the release at the soonest: renewed a third
    // of a TTL before it at the latest). At 12 s, beside two busy loops,
    // the waiter's turn came 6.7 s after the release, its read of the line
    // waiting on etcd's authentication again.
    let ttl = Duration::from_secs(18);
    let dir = tempfile::tempdir().unwrap();
    let (pidfile, release, ran) = (
        dir.path().join("pid"),
        dir.path().join("release"),
        dir.path().join("ran"),
    );
    let job = format!(
        "echo $$ > '{}'; {}",
        pidfile.display(),
        until_exists(&release)
    );
    let mut leader = Replica::spawn(&mut as_user(
        &etcd,
        user,
        &[
            "--ttl",
            &seconds(ttl),
            "--name",
            NAME,
            "-v",
            "--",
            "sh",
            "-c",
            &job,
        ],
    ));
    let child = read_pid(&pidfile, BOUND);
    let key = etcd.candidates(NAME)[0].clone();
    let touch = format!("touch '{}'", ran.display());
    let mut waiter = Replica::spawn(&mut as_user(
        &etcd,
        user,
        &[
            "--ttl",
            &seconds(ttl),
            "--name",
            NAME,
            "--wait",
            "-vv",
            "--log-format",
            "json",
            "--",
            "sh",
            "-c",
            &touch,
        ],
    ));
    waiter.await_watching(BOUND);
    let add_user = |name: &'static str| {
        etcd.with(async |mut client| {
            client
                .user_add(name, "pw-unrelated", None)
                .await
                .expect("user add");
        })
    };

    add_user("unrelated");
    let held = Leader {
        name: NAME.to_string(),
        ttl,
        child,
        key,
    };
    // Past a TTL: a lease the change kept from being renewed is gone by
    // then.
    let hold = ttl + ttl / 3;
    held.assert_survives(&etcd, "a user added", std::time::Instant::now(), hold);
    assert_eq!(etcd.candidates(NAME).len(), 2, "the waiter still queued");

    // Both hold fresh tokens by now; another change, and the leader's
    // resignation and the waiter's read of the queue go out with stale
    // ones. Refused, the resignation would leave the key to expire with
    // the lease, a TTL later.
    add_user("unrelated-too");
    let released = std::time::Instant::now();
    std::fs::write(&release, "").unwrap();
    await_condition(LIMIT, "the waiter's command", || ran.exists());
    let handed_over = active_since(released);
    eprintln!("handed over {handed_over:?} after the release");
    let (code, stderr) = leader.finish(BOUND);
    assert_eq!(code, Some(0), "the leader kept its leadership: {stderr}");
    // The stale token cost no refusal: the leader said nothing of its
    // resignation, or only that etcd (on a loaded machine: its three raft
    // writes, the authentication among them) did not answer within the
    // way out's bound, and the key was left to expire. Otherwise the
    // handover is at once: well within three fifths of the TTL, before any
    // expiry.
    let unanswered = way_out_unanswered(&stderr);
    assert!(
        !stderr.contains("resigning:") || stderr.contains("resigning: no answer within"),
        "the resignation was refused: {stderr}"
    );
    assert!(
        unanswered || handed_over < ttl * 3 / 5,
        "handed over {handed_over:?} after the release, though the resignation was answered: {stderr}"
    );
    let (code, stderr) = waiter.finish(BOUND);
    assert_eq!(code, Some(0), "the waiter got its turn: {stderr}");
}

/// `leaderrun check` proves each grant a run needs with a transaction
/// whose comparison never holds, writing nothing: etcd checks every
/// operation's permission in both branches whatever the comparison (pinned
/// here on the etcd under test: 3.7, and 3.4 in CI's stage of it). With a
/// role of exactly the four grants it passes; with each taken away in turn
/// it names the one missing: a problem (125) for the candidates' prefix
/// and the pause, for the marker only with --once-per, a warning for the
/// records.
#[test]
fn check_proves_each_grant_and_names_the_one_missing() {
    let exact = |election: &str| {
        vec![
            Permission::read_write(format!("{election}/")).with_prefix(),
            Permission::read(format!("{election}.paused")),
            Permission::read_write(format!("{election}.once-per")),
            Permission::read_write(format!("{election}.last-")).with_prefix(),
        ]
    };
    let etcd = etcd_with_user("full", exact(NAME));
    let check = |user: &str, extra: &[&str]| {
        let mut args = vec!["check", "--name", NAME];
        args.extend_from_slice(extra);
        run_within(&mut as_user(&etcd, user, &args), BOUND)
    };
    let passed = check("full", &["--once-per", "1h"]);
    assert_eq!(passed.code, Some(0), "{}", passed.stderr);
    assert_eq!(
        passed.stdout.matches(": granted (").count(),
        5,
        "{}",
        passed.stdout
    );
    assert!(
        passed.stdout.contains("authenticated as full"),
        "{}",
        passed.stdout
    );

    let lacking = ["prefix", "pause", "marker", "records"];
    let mut verdicts = Vec::new();
    for (at, missing) in lacking.iter().enumerate() {
        let user = format!("lacks-{missing}");
        let mut grants = exact(NAME);
        grants.remove(at);
        add_user(&etcd, &user, grants);
        let named = match *missing {
            "prefix" => format!("readwrite on the prefix {NAME}/ is not granted"),
            "pause" => format!("read on {NAME}.paused is not granted"),
            "marker" => format!("readwrite on {NAME}.once-per is not granted"),
            _ => format!("readwrite on {NAME}.last-* is not granted"),
        };
        for windowed in [false, true] {
            let done = check(&user, if windowed { &["--once-per", "1h"] } else { &[] });
            let context = format!("{missing}, --once-per {windowed}: {}", done.stderr);
            // Its own line: an error if a run of this kind needs it.
            let needed = match *missing {
                "prefix" | "pause" => true,
                "marker" => windowed,
                _ => false,
            };
            let level = if needed { "error" } else { "warning" };
            let said: Vec<&str> = done.stderr.lines().filter(|l| l.contains(&named)).collect();
            assert!(
                said.len() == 1 && said[0].starts_with(&format!("leaderrun: {level}: {named}")),
                "{context}"
            );
            assert!(done.stderr.contains("permission denied"), "{context}");
            // The window's claim reads the last start: without the
            // records' grant, a --once-per run fails.
            let last_started =
                format!("leaderrun: error: read on {NAME}.last-started is not granted");
            let records_windowed = *missing == "records" && windowed;
            assert_eq!(
                done.stderr.contains(&last_started),
                records_windowed,
                "{context}"
            );
            verdicts.push((user.clone(), windowed, done.code, context));
        }
    }
    // Nothing was written by any of it.
    let keys = || {
        etcd.with(async |mut client| {
            let options = etcd_client::GetOptions::new().with_prefix();
            client
                .get(NAME, Some(options))
                .await
                .expect("get")
                .kvs()
                .len()
        })
    };
    assert_eq!(keys(), 0, "check wrote to etcd");
    // And each verdict is what a run as that user then does: 125 where
    // check said 125, anything else (it ran, or found the window taken)
    // where it said 0.
    for (user, windowed, code, context) in verdicts {
        let mut args = vec!["--name", NAME];
        if windowed {
            args.extend(["--once-per", "1h"]);
        }
        args.extend(["--", "true"]);
        let ran = run_within(&mut as_user(&etcd, &user, &args), BOUND);
        let failed = ran.code == Some(125);
        assert_eq!(
            code,
            Some(if failed { 125 } else { 0 }),
            "check and the run disagree: the run said {}; check: {context}",
            ran.stderr
        );
    }
}
