//! The real shell in a simulated world: `run::run`, the lease keeper, the
//! election's requests, `etcd::Connection` and etcd-client itself run as
//! in production, against a simulated etcd served over in-memory gRPC
//! connections, with simulated processes and signals, on tokio's paused
//! clock in one thread, one seed choosing every interleaving, delay and
//! fault. The model checker (`crate::model`) checks the protocol; this
//! checks the code that carries it out.
//!
//! The seams, each a few lines in the code it opens, compiled in the
//! library's tests only: `crate::host` (processes, signals, the guardian,
//! the pid, tasks), `clock` (the boot-time and wall clocks read off
//! tokio's), and `etcd::connection` (an endpoint of [`network::endpoint`]'s
//! is dialled here). What stays outside, and why: docs/design.md.
//!
//! [`store`] is etcd's state, [`services`] and [`watches`] its gRPC face,
//! [`network`] the links and their faults, [`host`] a replica's
//! processes (each a [`process`]), [`ledger`] what is known for sure and the properties, and
//! [`fleet`] the world that runs replicas by cron for as long as asked.

pub mod fleet;
pub mod host;
pub mod ledger;
pub mod network;
pub mod process;
pub mod services;
pub mod store;
mod tests;
pub mod watches;

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use std::sync::atomic::Ordering;

use tokio::sync::Notify;
use tokio::time::Instant;

use ledger::Ledger;
use network::{Fate, Link, Network};
use store::{Refusal, Store};

/// The simulated etcd: its store, who is told of each change, and a trace
/// of every request applied (what a replay must repeat).
#[derive(Clone)]
pub struct Etcd {
    inner: Arc<Inner>,
}

struct Inner {
    store: Mutex<Store>,
    /// The revision watchers last heard of, and how they hear of the next:
    /// a `Notify` (it wakes its waiters in the order they came), not a
    /// tokio `watch` channel (its receivers wait on one of several inner
    /// `Notify`s, picked by the runtime's random numbers, which no seed of
    /// ours sets: the walk would not replay).
    revision: std::sync::atomic::AtomicI64,
    changed: Notify,
    leases_changed: Notify,
    ledger: Ledger,
    trace: Mutex<Trace>,
    epoch: Instant,
}

/// Every request's fate, hashed as it comes; the last lines kept for a
/// failure's report.
#[derive(Default)]
pub struct Trace {
    hasher: std::collections::hash_map::DefaultHasher,
    pub count: u64,
    pub tail: std::collections::VecDeque<String>,
    /// Every line, when asked for (`Etcd::keep_whole_trace`).
    pub whole: Option<Vec<String>>,
}

const TRACE_TAIL: usize = 60;

impl Etcd {
    pub fn new(rate: f64, ledger: Ledger) -> Etcd {
        Etcd {
            inner: Arc::new(Inner {
                store: Mutex::new(Store::new(rate)),
                revision: std::sync::atomic::AtomicI64::new(1),
                changed: Notify::new(),
                leases_changed: Notify::new(),
                ledger,
                trace: Mutex::new(Trace::default()),
                epoch: Instant::now(),
            }),
        }
    }

    /// Runs `apply` on the store now, after the leases due have expired;
    /// watchers learn of any new revision.
    pub fn apply<T>(
        &self,
        apply: impl FnOnce(&mut Store, Instant) -> Result<T, Refusal>,
    ) -> Result<T, Refusal> {
        let now = Instant::now();
        let (answer, revision, sooner, news) = {
            let mut store = self.inner.store.lock().expect("not poisoned");
            let expired = store.expire(now);
            let before = store.next_expiry();
            let answer = apply(&mut store, now);
            let after = store.next_expiry();
            let sooner = after.is_some_and(|after| before.is_none_or(|before| after < before));
            let news = store.take_news(expired);
            (answer, store.revision, sooner, news)
        };
        // Told once the store is let go, as the ledger locks its own book.
        self.inner.ledger.hear(news);
        let seen = self.inner.revision.swap(revision, Ordering::SeqCst);
        if seen != revision {
            self.inner.changed.notify_waiters();
        }
        // A lease that expires before any the expiring task waits for.
        if sooner {
            self.inner.leases_changed.notify_one();
        }
        answer
    }

    /// Resolves once the store moves past `revision`.
    pub async fn moved_past(&self, revision: i64) {
        loop {
            let changed = self.inner.changed.notified();
            if self.inner.revision.load(Ordering::SeqCst) > revision {
                return;
            }
            changed.await;
        }
    }

    /// The store's revision, as watchers last heard of it.
    pub fn revision(&self) -> i64 {
        self.inner.revision.load(Ordering::SeqCst)
    }

    /// Whether etcd holds the lease `id` now (its expiry due first).
    pub fn holds_lease(&self, id: i64) -> bool {
        self.apply(|store, _| Ok(store.lease_alive(id)))
            .unwrap_or(false)
    }

    /// Expires leases when etcd's clock says, for as long as it runs.
    pub async fn expire_leases(self) {
        loop {
            let next = self.inner.store.lock().expect("not poisoned").next_expiry();
            let woken = self.inner.leases_changed.notified();
            match next {
                Some(next) => tokio::select! {
                    biased;
                    () = tokio::time::sleep_until(next) => {}
                    () = woken => {}
                },
                None => woken.await,
            }
            let _ = self.apply(|_, _| Ok(()));
        }
    }

    /// The pids of the leaderruns whose keys are in line in election
    /// `name` now (each key's value names its holder).
    pub fn in_line(&self, name: &str) -> Vec<u32> {
        use crate::election::holder::Proclaimed;
        use crate::election::name;
        let prefix = name::prefix(name);
        let end = name::range_end(&prefix).unwrap_or_else(|| vec![0]);
        let range = store::KeyRange::new(prefix.into_bytes(), end);
        let store = self.inner.store.lock().expect("not poisoned");
        store
            .range(&range, store.revision)
            .unwrap_or_default()
            .iter()
            .filter_map(|kv| match Proclaimed::read(&kv.value) {
                Proclaimed::Leaderrun(holder) => Some(holder.pid),
                Proclaimed::Other(_) => None,
            })
            .collect()
    }

    /// Replica `replica` is stopped (SIGSTOP) until `until`
    /// ([`Ledger::pause`]).
    pub fn pause(&self, replica: usize, until: Instant) {
        self.inner.ledger.pause(replica, until);
    }

    /// A raft leader change: every lease runs its full TTL anew.
    pub fn leader_changed(&self) {
        let _ = self.apply(|store, now| {
            store.leader_changed(now);
            Ok(())
        });
    }

    /// Compacts everything but the last `keep` revisions.
    pub fn compact(&self, keep: i64) {
        let _ = self.apply(|store, _| {
            store.compact(store.revision - keep);
            Ok(())
        });
    }

    pub fn trace(&self, link: Link, what: &str, fate: &Fate, applied: bool) {
        let at = Instant::now() - self.inner.epoch;
        let revision = self.revision();
        let line = format!(
            "{:>10.3}s r{} m{} {what}: {fate:?} applied={applied} revision={revision}",
            at.as_secs_f64(),
            link.replica,
            link.member
        );
        let mut trace = self.inner.trace.lock().expect("not poisoned");
        line.hash(&mut trace.hasher);
        trace.count += 1;
        if let Some(whole) = &mut trace.whole {
            whole.push(line.clone());
        }
        if trace.tail.len() == TRACE_TAIL {
            trace.tail.pop_front();
        }
        trace.tail.push_back(line);
    }

    /// etcd's answer that `lease` is gone reached `replica`.
    pub fn told_lease_gone(&self, lease: i64, replica: usize) {
        self.inner.ledger.told_lease_gone(lease, replica);
    }

    /// Keeps every line of the trace from now on, not just the last.
    pub fn keep_whole_trace(&self) {
        self.inner.trace.lock().expect("not poisoned").whole = Some(Vec::new());
    }

    pub fn whole_trace(&self) -> Vec<String> {
        let trace = self.inner.trace.lock().expect("not poisoned");
        trace.whole.clone().unwrap_or_default()
    }

    /// The trace so far: its hash, its length and its last lines.
    pub fn trace_summary(&self) -> (u64, u64, Vec<String>) {
        let trace = self.inner.trace.lock().expect("not poisoned");
        let hash = trace.hasher.clone().finish();
        (hash, trace.count, trace.tail.iter().cloned().collect())
    }
}

thread_local! {
    /// The world this thread simulates, while it does.
    static WORLD: RefCell<Option<(Etcd, Network)>> = const { RefCell::new(None) };
}

/// Makes `etcd` and `network` what this thread's simulated endpoints reach.
pub fn enter(etcd: Etcd, network: Network) {
    WORLD.with(|world| *world.borrow_mut() = Some((etcd, network)));
}

/// The etcd this thread's world runs, if it runs one.
pub fn etcd() -> Option<Etcd> {
    WORLD.with(|world| world.borrow().as_ref().map(|(etcd, _)| etcd.clone()))
}

/// The network this thread's world runs, if it runs one.
pub fn network() -> Option<Network> {
    WORLD.with(|world| world.borrow().as_ref().map(|(_, network)| network.clone()))
}

pub fn leave() {
    WORLD.with(|world| *world.borrow_mut() = None);
}

/// Runs `body` on tokio's paused clock with a client of a calm simulated
/// etcd of one member, over replica 0's link (the network given too, to
/// break it), the shell's clocks read off tokio's: for tests of how the
/// shell takes one request's answer.
pub fn with_one_member<T>(body: impl AsyncFnOnce(etcd_client::Client, Network) -> T) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        crate::clock::simulated::begin();
        let ledger = Ledger::new(ledger::Rules {
            max_running: 1,
            once_per: None,
            once_per_attempts: 1,
            etcd_rate: 1.0,
            ttl: std::time::Duration::from_secs(1),
        });
        let network = Network::new(0, 1, 1, network::Meanness::CALM);
        enter(Etcd::new(1.0, ledger), network.clone());
        let url = network::endpoint(Link {
            replica: 0,
            member: 0,
        });
        let endpoint = tonic::transport::Endpoint::from_shared(url.clone()).expect("a URL");
        let channel = channel(&url, &endpoint).expect("a simulated endpoint");
        let client = etcd_client::Client::from_channel(etcd_client::Channel::Tonic(channel), None)
            .await
            .expect("a client");
        let answer = body(client, network).await;
        leave();
        crate::clock::simulated::end();
        answer
    })
}

/// The channel for a simulated endpoint (None: not one), for
/// `etcd::connection`'s seam: the real client's transport, over an
/// in-memory connection to the simulated member.
pub fn channel(
    url: &str,
    endpoint: &tonic::transport::Endpoint,
) -> Option<tonic::transport::Channel> {
    let link = network::link_of(url)?;
    let (etcd, network) = WORLD.with(|world| world.borrow().clone())?;
    let connector = tower::service_fn(move |_: tonic::codegen::http::Uri| {
        let connection = services::dial(&etcd, &network, link);
        async move { connection }
    });
    Some(endpoint.clone().connect_with_connector_lazy(connector))
}
