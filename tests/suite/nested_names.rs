//! Election names that extend each other (`pfx/a` and `pfx/a/b`) are
//! independent elections, though the keys of one lie under the other's
//! prefix: only `<name>/<lease hex>` is a candidate of `<name>`.

use crate::common::*;
use std::time::Duration;

/// Writes `count` keys of a nested election under `under`, as other
/// writers would: several to a transaction, so that many share one create
/// revision and a page of the line can end in the middle of them.
fn crowd(etcd: &Etcd, under: &str, count: usize) {
    let under = under.to_string();
    etcd.with(async move |mut client| {
        for batch in (0..count).collect::<Vec<_>>().chunks(100) {
            let puts: Vec<_> = batch
                .iter()
                .map(|i| etcd_client::TxnOp::put(format!("{under}/{:x}", 0x1000 + i), "x", None))
                .collect();
            client
                .txn(etcd_client::Txn::new().and_then(puts))
                .await
                .expect("txn");
        }
    });
}

fn status_json(etcd: &Etcd, name: &str) -> serde_json::Value {
    let done = lr(etcd)
        .status()
        .name(name)
        .args(["--json"])
        .finish_within(Duration::from_secs(20));
    serde_json::from_str(&done.stdout)
        .unwrap_or_else(|_| panic!("JSON: {} {}", done.stdout, done.stderr))
}

#[test]
fn an_election_whose_name_extends_ours_neither_leads_nor_queues_in_it() {
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    // More keys of elections nested in ours than one page of the line, and
    // older than any candidate of ours, so every read in line order has to
    // read past them.
    crowd(&etcd, "pfx/a/zz", 300);
    let nested = Lr::at(&endpoint).name("pfx/a/b").spawn(["sleep", "60"]);
    await_condition(SOON, "pfx/a/b to lead", || {
        etcd.candidates("pfx/a/b").len() == 1
    });

    // Nobody leads pfx/a: it runs at once, without --wait.
    let done = Lr::at(&endpoint)
        .name("pfx/a")
        .run_within(["echo", "ran"], Duration::from_secs(20));
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(done.stdout, "ran\n");
    assert_eq!(status_json(&etcd, "pfx/a")["key"], serde_json::Value::Null);

    // A leader of pfx/a and one waiter: the waiter queues behind the leader
    // only, and runs when it leaves, while pfx/a/b still leads.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut leader = Lr::at(&endpoint).name("pfx/a").spawn(pid_job(&pidfile));
    let job = read_pid(&pidfile, Duration::from_secs(20));
    let mut waiter = Lr::at(&endpoint)
        .name("pfx/a")
        .wait()
        .spawn(["sh", "-c", "echo waited"]);
    await_condition(SOON, "one waiter on pfx/a", || {
        status_json(&etcd, "pfx/a")["waiters"] == 1
    });
    let shown = status_json(&etcd, "pfx/a");
    assert_eq!(shown["holder"]["pid"], leader.pid(), "{shown}");
    assert_eq!(
        status_json(&etcd, "pfx/a/b")["waiters"],
        0,
        "pfx/a/b sees no waiter of pfx/a"
    );

    send(job, nix::sys::signal::Signal::SIGTERM);
    let (code, stderr) = leader.finish(Duration::from_secs(20));
    assert_eq!(code, Some(143), "{stderr}");
    let (code, stderr) = waiter.finish(Duration::from_secs(20));
    assert_eq!(code, Some(0), "the waiter ran: {stderr}");
    assert!(alive(nested.pid()), "pfx/a/b still leads");
    assert_eq!(etcd.candidates("pfx/a/b").len(), 1);
}

#[test]
fn a_leader_of_the_shorter_name_does_not_block_the_longer() {
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let _outer = Lr::at(&endpoint).name("pfx/a").spawn(["sleep", "60"]);
    await_condition(SOON, "pfx/a to lead", || {
        status_json(&etcd, "pfx/a")["key"] != serde_json::Value::Null
    });
    // `pfx/a/1f` would be a candidate key of pfx/a; as a name, it is an
    // election of its own.
    for name in ["pfx/a/b", "pfx/a/1f"] {
        let done = Lr::at(&endpoint)
            .name(name)
            .run_within(["echo", "ran"], Duration::from_secs(20));
        assert_eq!(done.code, Some(0), "{name}: {}", done.stderr);
        assert_eq!(done.stdout, "ran\n");
    }
}
