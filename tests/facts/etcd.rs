//! What the simulated etcd (`src/simulation/store.rs`) assumes of etcd,
//! as one script of requests and the transcript etcd must answer it with.
//! The suite runs it against real etcds (`suite::etcd_facts`); the
//! library's tests run it against the simulated one
//! (`simulation::tests::the_simulated_etcd_answers_as_etcd_does`). One
//! transcript, [`EXPECTED`], for both: where the simulation assumed
//! something of etcd, etcd said so here.

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, LeaseTimeToLiveOptions, PutOptions,
    SortOrder, SortTarget, Txn, TxnOp, WatchOptions,
};

/// The transcript, revisions counted from the script's first write.
pub const EXPECTED: &[&str] = &[
    "put a: +0",
    "txn creating b and c: succeeded true at +1",
    "b and c: created at +1 and +1",
    "txn on a's version 5: succeeded false, a read at version 1",
    "a lease of 3 s: granted 3 s",
    "d and e on the lease: +2 and +3",
    "revoked: revision +4, keys left [a, b, c]",
    "the revoked lease's time to live: -1",
    "a put on the revoked lease: NotFound",
    "a keep-alive opened for the revoked lease: lease keep alive error: lease not found",
    "a renewal on a stream whose lease was revoked since: TTL 0",
    "the first key of three: [a] more true count 3",
    "keys by key, descending: [c, b, a]",
    "watch from +2: PUT d +2, PUT e +3, DELETE d +4, DELETE e +4",
    "compacted at +4: a read at +1 refused: OutOfRange",
    "watch from +1: created, then cancelled at compaction +4",
];

fn names(keys: impl Iterator<Item = Vec<u8>>, prefix: &str) -> String {
    let names: Vec<String> = keys
        .map(|key| String::from_utf8_lossy(&key[prefix.len()..]).into_owned())
        .collect();
    format!("[{}]", names.join(", "))
}

fn code(err: etcd_client::Error) -> String {
    match err {
        etcd_client::Error::GRpcStatus(status) => format!("{:?}", status.code()),
        other => format!("{other}"),
    }
}

/// Runs the script under `prefix` (keys of its own), and gives the
/// transcript. It compacts etcd's history: give it an etcd of its own.
/// Long: a script, read top to bottom beside [`EXPECTED`].
#[allow(clippy::too_many_lines)]
pub async fn transcript(mut client: Client, prefix: &str) -> Vec<String> {
    let key = |name: &str| format!("{prefix}{name}");
    let mut lines = Vec::new();
    let base = client
        .put(key("a"), "1", None)
        .await
        .expect("put")
        .header()
        .expect("header")
        .revision();
    let at = |revision: i64| format!("+{}", revision - base);
    lines.push(format!("put a: {}", at(base)));

    let txn = Txn::new()
        .when([Compare::create_revision(key("b"), CompareOp::Equal, 0)])
        .and_then([
            TxnOp::put(key("b"), "2", None),
            TxnOp::put(key("c"), "3", None),
        ]);
    let answer = client.txn(txn).await.expect("txn");
    let revision = answer.header().expect("header").revision();
    lines.push(format!(
        "txn creating b and c: succeeded {} at {}",
        answer.succeeded(),
        at(revision)
    ));
    let b = client.get(key("b"), None).await.expect("get").kvs()[0].create_revision();
    let c = client.get(key("c"), None).await.expect("get").kvs()[0].create_revision();
    lines.push(format!("b and c: created at {} and {}", at(b), at(c)));

    let txn = Txn::new()
        .when([Compare::version(key("a"), CompareOp::Equal, 5)])
        .or_else([TxnOp::get(key("a"), None)]);
    let answer = client.txn(txn).await.expect("txn");
    let version = match answer.op_responses().first() {
        Some(etcd_client::TxnOpResponse::Get(get)) => get.kvs()[0].version(),
        _ => -1,
    };
    lines.push(format!(
        "txn on a's version 5: succeeded {}, a read at version {version}",
        answer.succeeded()
    ));

    let lease = client.lease_grant(3, None).await.expect("grant");
    lines.push(format!("a lease of 3 s: granted {} s", lease.ttl()));
    let on_lease = || Some(PutOptions::new().with_lease(lease.id()));
    let mut revisions = Vec::new();
    for (name, value) in [("d", "4"), ("e", "5")] {
        let put = client.put(key(name), value, on_lease()).await.expect("put");
        revisions.push(put.header().expect("header").revision());
    }
    let (d, e) = (revisions[0], revisions[1]);
    lines.push(format!("d and e on the lease: {} and {}", at(d), at(e)));
    let revoked = client
        .lease_revoke(lease.id())
        .await
        .expect("revoke")
        .header()
        .expect("header")
        .revision();
    let left = client
        .get(
            key(""),
            Some(GetOptions::new().with_prefix().with_keys_only()),
        )
        .await
        .expect("get");
    let left = names(left.kvs().iter().map(|kv| kv.key().to_vec()), prefix);
    lines.push(format!(
        "revoked: revision {}, keys left {left}",
        at(revoked)
    ));
    let ttl = client
        .lease_time_to_live(lease.id(), Some(LeaseTimeToLiveOptions::new().with_keys()))
        .await
        .expect("time to live")
        .ttl();
    lines.push(format!("the revoked lease's time to live: {ttl}"));
    let refused = client
        .put(key("f"), "6", on_lease())
        .await
        .map(|_| ())
        .map_err(code);
    lines.push(format!(
        "a put on the revoked lease: {}",
        refused.err().unwrap_or_else(|| "accepted".into())
    ));
    // etcd answers a renewal of a lease it does not have with a TTL of 0,
    // and etcd-client refuses an opening so answered.
    let opened = client.lease_keep_alive(lease.id()).await;
    lines.push(format!(
        "a keep-alive opened for the revoked lease: {}",
        opened
            .map(|_| "opened".into())
            .unwrap_or_else(|err| err.to_string())
    ));
    let other = client.lease_grant(3, None).await.expect("grant").id();
    let (mut keeper, mut stream) = client.lease_keep_alive(other).await.expect("opened");
    client.lease_revoke(other).await.expect("revoke");
    keeper.keep_alive().await.expect("sent");
    let renewal = stream
        .message()
        .await
        .expect("answered")
        .expect("a renewal");
    lines.push(format!(
        "a renewal on a stream whose lease was revoked since: TTL {}",
        renewal.ttl()
    ));

    let first = client
        .get(key(""), Some(GetOptions::new().with_prefix().with_limit(1)))
        .await
        .expect("get");
    let shown = names(first.kvs().iter().map(|kv| kv.key().to_vec()), prefix);
    lines.push(format!(
        "the first key of three: {shown} more {} count {}",
        first.more(),
        first.count()
    ));
    let sorted = GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_sort(SortTarget::Key, SortOrder::Descend);
    let sorted = client.get(key(""), Some(sorted)).await.expect("get");
    lines.push(format!(
        "keys by key, descending: {}",
        names(sorted.kvs().iter().map(|kv| kv.key().to_vec()), prefix)
    ));

    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(base + 2)
        .with_prev_key();
    let mut watch = client.watch(key(""), Some(options)).await.expect("watch");
    let mut events = Vec::new();
    while events.len() < 4 {
        let Ok(Some(message)) = watch.message().await else {
            break;
        };
        for event in message.events() {
            let kv = event.kv().expect("an event's key");
            let kind = match event.event_type() {
                EventType::Put => "PUT",
                EventType::Delete => "DELETE",
            };
            let name = String::from_utf8_lossy(&kv.key()[prefix.len()..]).into_owned();
            events.push(format!("{kind} {name} {}", at(kv.mod_revision())));
        }
    }
    lines.push(format!("watch from +2: {}", events.join(", ")));

    client.compact(revoked, None).await.expect("compact");
    let old = client
        .get(key("a"), Some(GetOptions::new().with_revision(base + 1)))
        .await;
    lines.push(format!(
        "compacted at {}: a read at +1 refused: {}",
        at(revoked),
        old.map(|_| "read".to_string()).unwrap_or_else(code)
    ));
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(base + 1);
    let mut watch = client.watch(key(""), Some(options)).await.expect("watch");
    let mut said = Vec::new();
    while let Ok(Some(message)) = watch.message().await {
        if message.created() {
            said.push("created".to_string());
        }
        if message.canceled() {
            said.push(format!(
                "cancelled at compaction {}",
                at(message.compact_revision())
            ));
            break;
        }
    }
    lines.push(format!("watch from +1: {}", said.join(", then ")));
    lines
}
