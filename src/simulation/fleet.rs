//! The simulated world: a fleet of replicas, each firing `run::run` by
//! cron, against the simulated etcd, while the seed's faults come and go;
//! then the faults heal, and the fleet must make progress. Every choice
//! is the seed's, so a seed replays its walk exactly.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::host::{Behaviour, Pausable, Replica, REPLICA};
use super::ledger::{Ledger, Rules};
use super::network::{self, Link, Meanness, Network};
use super::Etcd;
use crate::election::handoff::Handoff;
use crate::election::holder::Holder;
use crate::model::sim::Rng;

/// A walk's world, drawn from its seed.
#[derive(Debug, Clone)]
pub struct Setup {
    pub seed: u64,
    pub replicas: usize,
    pub members: usize,
    pub ttl: Duration,
    pub max_running: usize,
    pub once_per: Option<Duration>,
    /// --once-per-attempts (1 without --once-per).
    pub once_per_attempts: u32,
    pub wait: Vec<bool>,
    /// Of those that wait, the ones with no --wait-timeout (a singleton
    /// worker under systemd): they wait for as long as it takes.
    pub wait_forever: Vec<bool>,
    pub fast: Vec<bool>,
    pub timeout: Vec<Option<Duration>>,
    /// --dial-timeout: an attempt on one member may take its share among
    /// the members (`Connection::attempt_timeout`), so with a short one a
    /// request whose answer was lost is sent again, to the next member,
    /// within the way out's bound.
    pub dial_timeout: Duration,
    /// How much faster etcd's clock runs than the replicas'.
    pub rate: f64,
    /// How late every answer to each replica comes, while faults last: up
    /// to the keeper's acknowledgement timeout and a little past it.
    pub late: Vec<Duration>,
    pub meanness: Meanness,
    /// Cron's period, and each replica's offset in it (clocks disagree).
    pub period: Duration,
    pub offsets: Vec<Duration>,
    /// How long faults come and go; then they heal.
    pub faulty: Duration,
    /// How long the fleet runs on after healing.
    pub calm: Duration,
    /// Keep every line of the trace in the report, not just the last.
    pub whole_trace: bool,
}

impl Setup {
    /// The world of `seed`, with at most `most` replicas.
    pub fn draw(seed: u64, most: usize) -> Setup {
        let mut rng = Rng::new(seed);
        let replicas = 3 + rng.below(most.max(3) - 2);
        let members = 1 + rng.below(3);
        let ttl = Duration::from_secs(2 + rng.below(9) as u64);
        let max_running = if rng.below(4) == 0 { 2 } else { 1 };
        let once_per = (rng.below(5) == 0).then(|| Duration::from_secs(90 + rng.below(240) as u64));
        let per = |rng: &mut Rng, one_in: usize| {
            (0..replicas)
                .map(|_| rng.below(one_in) == 0)
                .collect::<Vec<_>>()
        };
        let wait = per(&mut rng, 2);
        let wait_forever = per(&mut rng, 2)
            .into_iter()
            .zip(&wait)
            .map(|(forever, wait)| forever && *wait)
            .collect();
        let fast = per(&mut rng, 2);
        let timeout = (0..replicas)
            .map(|_| (rng.below(4) == 0).then(|| Duration::from_secs(5 + rng.below(60) as u64)))
            .collect();
        let late = (0..replicas)
            .map(|_| match rng.below(2) {
                0 => ttl.mul_f64(rng.below(1_200) as f64 / 6_000.0),
                _ => Duration::ZERO,
            })
            .collect();
        let dial_timeout = Duration::from_millis([2_000, 1_000, 600][rng.below(3)]);
        // Within the model's DRIFT: a twentieth either way.
        let rate = 1.0 + (rng.below(101) as f64 - 50.0) / 1000.0;
        let meanness = meanness(&mut rng, ttl, members);
        let period = Duration::from_secs(60);
        let offsets = (0..replicas)
            .map(|_| Duration::from_millis(rng.below(2_000) as u64))
            .collect();
        // Drawn last, so that every seed draws the rest as it did before.
        // One runner at a time tries a window of several (the command line
        // refuses them beside --max-running).
        let once_per_attempts = match once_per.is_some() && max_running == 1 && rng.below(2) == 0 {
            true => 3,
            false => 1,
        };
        Setup {
            seed,
            replicas,
            members,
            ttl,
            max_running,
            once_per,
            once_per_attempts,
            wait,
            wait_forever,
            fast,
            timeout,
            dial_timeout,
            rate,
            late,
            meanness,
            period,
            offsets,
            faulty: Duration::from_secs(300),
            calm: Duration::from_secs(240),
            whole_trace: false,
        }
    }
}

/// How mean a world's network and hosts are: calm, mean, or meaner (one
/// of three, from `rng`).
fn meanness(rng: &mut Rng, ttl: Duration, members: usize) -> Meanness {
    let mean = rng.below(3);
    Meanness {
        delayed: [0, 50, 200][mean],
        dropped: [0, 5, 20][mean],
        answer_lost: [0, 10, 40][mean],
        longest_delay: ttl / [1, 4, 2][mean],
        stopped: [10, 25, 50][mean],
        longest_stop: ttl * 2,
        stopped_at_stop: [50, 150, 250][mean],
        cut_after: [0, 5, 10][mean],
        cut_at_claim: [0, 50, 100][mean],
        flap: [0, 500, 500][mean],
        flaky_member: if members > 1 && rng.below(3) == 0 {
            50 + rng.below(150) as u32
        } else {
            0
        },
    }
}

/// What a walk found.
#[derive(Debug)]
pub struct Report {
    pub violations: Vec<String>,
    /// The trace's hash and length: the same seed gives the same.
    pub trace: (u64, u64),
    pub tail: Vec<String>,
    pub starts: usize,
    pub invocations: u64,
    pub exits: Vec<(i32, u64)>,
    pub whole_trace: Vec<String>,
}

/// Walks the world of `setup` to its end, in a runtime of its own whose
/// clock is paused: time moves only when every task waits.
pub fn walk(setup: &Setup) -> Report {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    // The world is made inside the runtime: every instant it takes (the
    // clocks' start among them) is then on the paused clock.
    let report = local.block_on(&runtime, async { World::new(setup).live().await });
    // Whatever still waits (a replica's stream, a member's connection)
    // goes with the runtime, before this thread's clocks are its own again.
    drop(local);
    drop(runtime);
    crate::clock::simulated::end();
    super::leave();
    report
}

/// One leaderrun, as cron started it.
struct Invocation {
    replica: Arc<Replica>,
    signals: mpsc::UnboundedSender<protocol::signal::Signal>,
    task: tokio::task::AbortHandle,
    done: Arc<AtomicBool>,
    started: Instant,
}

struct World {
    setup: Setup,
    rng: Rng,
    etcd: Etcd,
    network: Network,
    ledger: Ledger,
    running: Vec<Invocation>,
    invocations: u64,
    exits: Arc<Mutex<Vec<(i32, u64)>>>,
    violations: Arc<Mutex<Vec<String>>>,
    began: Instant,
}

/// What the world does next, one choice at a time.
#[derive(Debug, Clone, Copy)]
enum Fault {
    KillReplica,
    Terminate,
    Interrupt,
    Cut,
    MemberDown,
    LeaderChange,
    Compact,
    Pause,
    SlowLink,
}

/// The election every replica campaigns in.
const ELECTION: &str = "nightly";

/// The --wait-timeout of the replicas that have one.
const WAIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The faults, each as often as it is listed.
const FAULTS: [Fault; 11] = [
    Fault::KillReplica,
    Fault::Terminate,
    Fault::Interrupt,
    Fault::Cut,
    Fault::MemberDown,
    Fault::LeaderChange,
    Fault::Compact,
    Fault::Pause,
    Fault::SlowLink,
    Fault::SlowLink,
    Fault::SlowLink,
];

/// What the world keeps of each leaderrun's end.
struct Ends {
    ledger: Ledger,
    exits: Arc<Mutex<Vec<(i32, u64)>>>,
    violations: Arc<Mutex<Vec<String>>>,
    began: Instant,
}

impl Ends {
    /// Leaderrun `pid` on replica `index`, started then (and whether after
    /// faults healed), exited with `code`: counted, and held to its
    /// command's exit and, started in a calm world, to keeping its
    /// leadership.
    fn exited(
        &self,
        index: usize,
        pid: u32,
        (started, calm): (Instant, bool),
        code: i32,
        gives_up: Option<Option<Instant>>,
    ) {
        self.ledger.exited(pid, code);
        let conflict = code == protocol::exit::Exit::Conflict.code();
        if let Some(by) = gives_up.filter(|_| conflict) {
            if by.is_none_or(|by| Instant::now() < by) {
                let line = format!(
                    "at {:?}: replica {index}'s leaderrun, with --wait, gave up before its --wait-timeout ({:?}, started at {:?})",
                    Instant::now() - self.began,
                    by.map(|by| by - started),
                    started - self.began
                );
                self.violations.lock().expect("not poisoned").push(line);
            }
        }
        if calm && code == protocol::exit::Exit::LeadershipLost.code() {
            let line = format!(
                "at {:?}: replica {index}'s leaderrun, started at {:?} after faults healed, lost its leadership",
                Instant::now() - self.began,
                started - self.began
            );
            self.violations.lock().expect("not poisoned").push(line);
        }
        let mut exits = self.exits.lock().expect("not poisoned");
        match exits.iter_mut().find(|(seen, _)| *seen == code) {
            Some((_, count)) => *count += 1,
            None => exits.push((code, 1)),
        }
    }
}

impl World {
    fn new(setup: &Setup) -> World {
        crate::clock::simulated::begin();
        let ledger = Ledger::new(Rules {
            max_running: setup.max_running,
            once_per: setup.once_per,
            once_per_attempts: setup.once_per_attempts,
            etcd_rate: setup.rate,
            ttl: setup.ttl,
        });
        let etcd = Etcd::new(setup.rate, ledger.clone());
        let network = Network::new(setup.seed, setup.members, setup.replicas, setup.meanness);
        for (replica, late) in setup.late.iter().enumerate() {
            network.answer_late(replica, *late);
        }
        super::enter(etcd.clone(), network.clone());
        if setup.whole_trace {
            etcd.keep_whole_trace();
        }
        World {
            setup: setup.clone(),
            rng: Rng::new(setup.seed ^ 0x0077_6f72_6c64),
            etcd,
            network,
            ledger,
            running: Vec::new(),
            invocations: 0,
            exits: Arc::new(Mutex::new(Vec::new())),
            violations: Arc::new(Mutex::new(Vec::new())),
            began: Instant::now(),
        }
    }

    async fn live(mut self) -> Report {
        tokio::task::spawn_local(self.etcd.clone().expire_leases());
        let began = self.began;
        let healed_at = began + self.setup.faulty;
        let end = healed_at + self.setup.calm;
        let mut next_fault = began + self.fault_gap();
        let mut next_compaction = began + Duration::from_secs(300);
        let mut firing = 0u32;
        let mut healed = false;
        loop {
            let tick = began + self.setup.period * firing;
            let now = Instant::now();
            if now >= end {
                break;
            }
            // The next of: a cron firing, a fault, the healing, a
            // compaction.
            let next = [
                Some(tick),
                (!healed).then_some(next_fault),
                (!healed).then_some(healed_at),
                Some(next_compaction),
            ]
            .into_iter()
            .flatten()
            .min()
            .expect("a firing is always next");
            tokio::time::sleep_until(next.min(end)).await;
            let now = Instant::now();
            // Healed before anything else due then: a run fired at this
            // instant starts in a calm world.
            if !healed && now >= healed_at {
                healed = true;
                self.network.heal();
            }
            if now >= tick {
                if std::env::var_os("LEADERRUN_SIM_VERBOSE").is_some() {
                    let (_, requests, _) = self.etcd.trace_summary();
                    eprintln!(
                        "{:?} in: firing {firing}, {} running, {requests} requests, {} starts",
                        now - began,
                        self.running.len(),
                        self.ledger.starts().len()
                    );
                }
                self.fire(tick).await;
                firing += 1;
            }
            if !healed && now >= next_fault {
                self.fault();
                next_fault = now + self.fault_gap();
            }
            if now >= next_compaction {
                // etcd's periodic compaction: a few hundred revisions kept.
                self.etcd.compact(200);
                next_compaction = now + Duration::from_secs(300);
            }
            self.running
                .retain(|invocation| !invocation.done.load(Ordering::SeqCst));
        }
        self.progress(healed_at);
        self.stuck(end);
        self.finish()
    }

    fn fault_gap(&mut self) -> Duration {
        Duration::from_millis(200 + self.rng.below(6_000) as u64)
    }

    /// Cron fires on every replica, each at its own offset.
    async fn fire(&mut self, tick: Instant) {
        let mut order: Vec<usize> = (0..self.setup.replicas).collect();
        order.sort_by_key(|replica| self.setup.offsets[*replica]);
        for replica in order {
            tokio::time::sleep_until(tick + self.setup.offsets[replica]).await;
            let mine = self
                .running
                .iter()
                .filter(|invocation| invocation.replica.index == replica)
                .count();
            // Cron starts a run whatever the last is doing; four at a time
            // is where a real crontab's operator would have noticed.
            if mine < 4 {
                self.start(replica);
            }
        }
    }

    fn behaviour(&mut self) -> Behaviour {
        // A fifth run long; a fifth find nothing to do and are done at
        // once (the runs that finish while one before them is still
        // resigning).
        let runs = match self.rng.below(5) {
            0 => Duration::from_millis(30_000 + self.rng.below(150_000) as u64),
            1 => Duration::from_millis(self.rng.below(300) as u64),
            _ => Duration::from_millis(self.rng.below(20_000) as u64),
        };
        Behaviour {
            runs,
            code: [0, 0, 0, 1, 3][self.rng.below(5)],
            term_ignored: self.rng.below(3) == 0,
            leaves: if self.rng.below(3) == 0 {
                Duration::from_millis(self.rng.below(5_000) as u64)
            } else {
                Duration::ZERO
            },
            // SIGKILL takes a moment for some: well within the kill
            // schedule's margin (a fifth of its floor), as a process
            // leaving a slow write does.
            dies_slowly: if self.rng.below(3) == 0 {
                Duration::from_millis(1 + self.rng.below(40) as u64)
            } else {
                Duration::ZERO
            },
            spawn_fails: self.rng.below(50) == 0,
        }
    }

    /// A run's options on replica `index`, as its crontab line would
    /// give them, and how it reaches etcd.
    fn options(
        &self,
        index: usize,
        pid: u32,
        behaviour: &Behaviour,
    ) -> (crate::run::Config, crate::etcd::Options) {
        let setup = &self.setup;
        let wait = setup.wait[index];
        let config = crate::run::Config {
            program: PathBuf::from("sim-job"),
            command: behaviour.words(),
            election: ELECTION.into(),
            ttl: setup.ttl,
            wait,
            wait_timeout: (wait && !setup.wait_forever[index]).then_some(WAIT_TIMEOUT),
            conflict_code: 75,
            once_per: setup.once_per,
            once_per_attempts: setup.once_per_attempts,
            kill_signal: Signal::SIGTERM,
            kill_after: Duration::from_secs(2),
            max_running: setup.max_running,
            timeout: setup.timeout[index],
            explain: false,
            etcd_env: Vec::new(),
            holder: Holder {
                host: format!("replica{index}"),
                pid,
                started: String::new(),
                command: "sim-job".into(),
                max_running: setup.max_running,
            },
            handoff: if setup.fast[index] {
                Handoff::Fast
            } else {
                Handoff::Slow
            },
            notify_socket: None,
            withheld: &[],
            wait_shown: None,
            still_waiting_every: Duration::from_secs(300),
        };
        let endpoints: Vec<String> = (0..setup.members)
            .map(|member| {
                network::endpoint(Link {
                    replica: index,
                    member,
                })
            })
            .collect();
        let options = crate::etcd::Options {
            endpoints: Some(endpoints.join(",")),
            discovery: None,
            tls_transport: false,
            dial_timeout: setup.dial_timeout,
            cacert: None,
            cert: None,
            key: None,
            insecure_skip_tls_verify: false,
            user: None,
            password: None,
        };
        (config, options)
    }

    fn start(&mut self, index: usize) {
        // Started in a calm world: nothing can take its leadership, and a
        // run without --wait tries once.
        let calm = Instant::now() >= self.began + self.setup.faulty;
        self.invocations += 1;
        let pid = 10_000 + self.invocations as u32;
        let behaviour = self.behaviour();
        let (signals, inbox) = mpsc::unbounded_channel();
        let replica = Arc::new(Replica {
            index,
            pid,
            ledger: self.ledger.clone(),
            signals: Mutex::new(Some(inbox)),
            killed: AtomicBool::new(false),
            guardian_delay: Duration::from_millis(1 + self.rng.below(20) as u64),
            tasks: Mutex::new(Vec::new()),
            starts_by: (!self.setup.wait[index] && calm)
                .then(|| Instant::now() + self.setup.ttl * 2 + Duration::from_secs(5)),
        });
        let (config, options) = self.options(index, pid, &behaviour);
        let done = Arc::new(AtomicBool::new(false));
        let ends = Ends {
            ledger: self.ledger.clone(),
            exits: self.exits.clone(),
            violations: self.violations.clone(),
            began: self.began,
        };
        let started = Instant::now();
        let gives_up = self.gives_up(index, started);
        let finished = done.clone();
        let exited = replica.clone();
        let run = REPLICA.scope(
            replica.clone(),
            Pausable::new(
                replica.clone(),
                crate::run::run(config, options, crate::child::env::Etcdctl::default()),
            ),
        );
        let task = tokio::task::spawn_local(run);
        let abort = task.abort_handle();
        tokio::task::spawn_local(async move {
            match task.await {
                Ok(result) => {
                    ends.exited(index, pid, (started, calm), result.unwrap_or(125), gives_up)
                }
                Err(err) if err.is_panic() => {
                    let line = format!("replica {index}'s leaderrun panicked: {err}");
                    ends.violations.lock().expect("not poisoned").push(line);
                }
                Err(_) => {}
            }
            // The process exits: whatever it started beside the run (a
            // keeper whose lease was dropped, a record still being
            // written) ends with it.
            for task in exited.tasks.lock().expect("not poisoned").iter() {
                task.abort();
            }
            finished.store(true, Ordering::SeqCst);
        });
        self.running.push(Invocation {
            replica,
            signals,
            task: abort,
            done,
            started,
        });
    }

    /// When a --wait run on replica `index`, started then, may give up
    /// (exit with the conflict code): at its --wait-timeout, or never. A
    /// --once-per window spent ends a run at once too: None, not judged.
    fn gives_up(&self, index: usize, started: Instant) -> Option<Option<Instant>> {
        match (self.setup.wait[index], self.setup.once_per) {
            (true, None) if self.setup.wait_forever[index] => Some(None),
            (true, None) => Some(Some(started + WAIT_TIMEOUT)),
            _ => None,
        }
    }

    /// A signal to one of the leaderruns running (SIGKILL: nothing of it
    /// runs on, no destructor).
    fn signal_one(&mut self, fault: Fault) {
        if self.running.is_empty() {
            return;
        }
        // Half the time, one whose command runs: stops are where the kill
        // sequence and the way out are. A pause, one whose command is being
        // stopped when there is one: a pause that outlasts the lease there
        // is where a run wakes to find its job gone and its key gone too.
        let stopping = match fault {
            Fault::Pause => self.ledger.stopping(),
            _ => Vec::new(),
        };
        let leading = match stopping.is_empty() {
            true => self.ledger.leading(),
            false => stopping,
        };
        let candidates: Vec<usize> = (0..self.running.len())
            .filter(|index| leading.contains(&self.running[*index].replica.pid))
            .collect();
        let chosen = if !candidates.is_empty() && self.rng.below(2) == 0 {
            candidates[self.rng.below(candidates.len())]
        } else {
            self.rng.below(self.running.len())
        };
        let invocation = &self.running[chosen];
        match fault {
            Fault::KillReplica => {
                // SIGKILL: nothing of it runs on, no destructor.
                invocation.replica.killed.store(true, Ordering::SeqCst);
                invocation.task.abort();
                for task in invocation
                    .replica
                    .tasks
                    .lock()
                    .expect("not poisoned")
                    .iter()
                {
                    task.abort();
                }
            }
            Fault::Terminate => {
                let _ = invocation.signals.send(protocol::signal::Signal::SIGTERM);
            }
            Fault::Pause => {
                let length = self
                    .setup
                    .ttl
                    .mul_f64(0.5 + self.rng.below(25) as f64 / 10.0);
                self.ledger
                    .pause(invocation.replica.index, Instant::now() + length);
            }
            _ => {
                let _ = invocation.signals.send(protocol::signal::Signal::SIGINT);
            }
        }
    }

    fn fault(&mut self) {
        let fault = FAULTS[self.rng.below(FAULTS.len())];
        let ttl = self.setup.ttl;
        match fault {
            Fault::KillReplica | Fault::Terminate | Fault::Interrupt | Fault::Pause => {
                self.signal_one(fault)
            }
            Fault::Cut => {
                let replica = match self.leader() {
                    Some(leader) if self.rng.below(2) == 0 => leader,
                    _ => self.rng.below(self.setup.replicas),
                };
                let length = ttl.mul_f64(0.2 + self.rng.below(30) as f64 / 10.0);
                self.network.cut(replica, length);
            }
            Fault::SlowLink => {
                // Every answer to one replica (half the time, the
                // leader's) late by 0.08 to 0.2 TTL for a few TTLs, about
                // the keeper's acknowledgement timeout (a sixth): renewals
                // land on etcd, their acknowledgements come in time but
                // late, or miss the timeout and the run loses a lease etcd
                // still holds. Half
                // the time the link then fails: the late acknowledgements
                // were the last, and the lease runs out on etcd.
                let replica = match self.leader() {
                    Some(leader) if self.rng.below(2) == 0 => leader,
                    _ => self.rng.below(self.setup.replicas),
                };
                let late = ttl.mul_f64((80 + self.rng.below(120)) as f64 / 1000.0);
                let length = ttl.mul_f64(1.0 + self.rng.below(30) as f64 / 10.0);
                let then_cut = (self.rng.below(2) == 0)
                    .then(|| ttl.mul_f64(0.5 + self.rng.below(20) as f64 / 10.0));
                self.network.slow_for(replica, late, length, then_cut);
            }
            Fault::MemberDown => {
                let member = self.rng.below(self.setup.members);
                let length = Duration::from_millis(500 + self.rng.below(20_000) as u64);
                self.network.member_down(member, length);
            }
            Fault::LeaderChange => self.etcd.leader_changed(),
            Fault::Compact => self.etcd.compact(self.rng.below(20) as i64),
        }
    }

    /// The replica of a leaderrun whose job runs, if one does.
    fn leader(&self) -> Option<usize> {
        let leading = self.ledger.leading();
        self.running
            .iter()
            .find(|invocation| leading.contains(&invocation.replica.pid))
            .map(|invocation| invocation.replica.index)
    }

    /// Once faults heal, runs start again (where a window or a wait does
    /// not rightly hold them back).
    fn progress(&mut self, healed_at: Instant) {
        if self.setup.once_per.is_some() {
            return;
        }
        // Healed, and no job holds the place: the next firing's runs
        // campaign, one wins within a few TTLs (a queue drains, leases of
        // replicas killed meanwhile expire).
        let free = self
            .ledger
            .last_alive()
            .map_or(healed_at, |last| last.max(healed_at));
        let due = free + self.setup.period + self.setup.ttl * 4 + Duration::from_secs(2);
        let end = healed_at + self.setup.calm;
        if due >= end {
            return;
        }
        let started = self.ledger.starts().iter().any(|(at, _, _)| *at >= free);
        if !started {
            let line = format!(
                "progress: healed at {:?} and free from {:?}, yet no run started by the end ({:?})",
                healed_at - self.began,
                free - self.began,
                end - self.began
            );
            self.violations.lock().expect("not poisoned").push(line);
        }
    }

    /// No leaderrun is stuck once faults heal: one that started long
    /// enough before the end (its --wait-timeout, a few TTLs of
    /// campaigning and stopping, a minute of slack) and has no job running
    /// is stuck, unless it has no --wait-timeout and its key is in line
    /// (it is queued, behind runs that came before it).
    fn stuck(&mut self, end: Instant) {
        let bound = Duration::from_secs(120 + 60) + self.setup.ttl * 8;
        let leading = self.ledger.leading();
        let in_line = self.etcd.in_line(ELECTION);
        for invocation in &self.running {
            let started = invocation.started;
            let done = invocation.done.load(Ordering::SeqCst);
            let pid = invocation.replica.pid;
            if done || leading.contains(&pid) || started + bound > end {
                continue;
            }
            if self.setup.wait_forever[invocation.replica.index] && in_line.contains(&pid) {
                continue;
            }
            let line = format!(
                "stuck: replica {}'s leaderrun (pid {}), started at {:?}, still runs at the end ({:?}) with no job and no key in line",
                invocation.replica.index,
                invocation.replica.pid,
                started - self.began,
                end - self.began
            );
            self.violations.lock().expect("not poisoned").push(line);
        }
    }

    fn finish(self) -> Report {
        let mut violations = self.ledger.violations();
        violations.extend(
            self.violations
                .lock()
                .expect("not poisoned")
                .iter()
                .cloned(),
        );
        let (hash, count, tail) = self.etcd.trace_summary();
        Report {
            violations,
            trace: (hash, count),
            tail,
            starts: self.ledger.starts().len(),
            invocations: self.invocations,
            exits: self.exits.lock().expect("not poisoned").clone(),
            whole_trace: self.etcd.whole_trace(),
        }
    }
}
