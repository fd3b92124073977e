//! The soak test: replicas queue for one election over and over while a
//! seeded fault injector kills and pauses them, cuts them off from etcd and
//! kills etcd members. Their children write to a fenced store, as a
//! downstream system that checks tokens would.
//!
//! What must hold:
//! - tokens strictly increase in the order their first writes happen: every
//!   new leader's token beats every earlier one;
//! - a write that arrives after a later leader's (an overlap of two
//!   children) only ever comes from a child whose leaderrun was paused
//!   (SIGSTOP), while paused or just after it resumed and before it could
//!   stop the child; the fence rejects every such write. Partitions,
//!   crashes and etcd faults cause none: the kill comes first;
//! - the accepted writes of different tokens never overlap.
//!
//! LEADERRUN_TORTURE_SECS sets the duration (default 20), and
//! LEADERRUN_TORTURE_SEED replays a seed (the same faults in the same
//! order; their timing against the replicas still varies).
//!
//! The parts: [`Soak`] runs the replicas, [`FaultInjector`] picks and
//! applies the faults, [`check_overlaps`] judges the recorded writes, and
//! the test wires them together. The checker has tests of its own on
//! hand-made writes, at the end.

use crate::common::*;
use nix::sys::signal::Signal;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

const NAME: &str = "torture/soak";
const MEMBERS: usize = 3;
const REPLICAS: usize = 4;
/// The replicas' lease TTL.
const TTL: &str = "3s";
/// How often the soak replaces exited replicas and injects or undoes faults.
const TICK: Duration = Duration::from_millis(20);
/// How long after its leaderrun resumes a child may still write.
const RESUME_ALLOWANCE: Duration = Duration::from_secs(1);

#[test]
fn no_two_children_write_at_once_under_random_faults() {
    let seed = std::env::var("LEADERRUN_TORTURE_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| now_ns() as u64);
    let seconds = std::env::var("LEADERRUN_TORTURE_SECS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(20u64);
    let replay = format!("LEADERRUN_TORTURE_SEED={seed} LEADERRUN_TORTURE_SECS={seconds}");
    eprintln!("torture: {replay}");

    let mut soak = Soak::start();
    let started = Instant::now();
    let origin = now_ns();
    let mut faults = FaultInjector::new(seed, started + Duration::from_secs(1));
    while started.elapsed() < Duration::from_secs(seconds) {
        soak.replace_exited(&mut faults);
        faults.tick(&mut soak);
        std::thread::sleep(TICK);
    }
    let (writes, tally) = soak.stop(faults);

    let findings = check_overlaps(&writes, &tally.pauses);
    print_report(&writes, &tally, &findings, origin, seconds);
    findings.assert_holds(&replay);
    assert!(
        findings.first_tokens.len() >= 2 && !tally.faults.is_empty(),
        "the soak must see handoffs and faults to mean anything ({replay})"
    );
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The child: COUNT writes, 50 ms apart, each under the store's lock. A
/// write is accepted if its token is at least the highest seen, else fenced.
/// Each line: verdict, token, leaderrun's pid, wall time in ns.
const WRITER: &str = r#"lr=$PPID; i=0
while [ $i -lt $1 ]; do
  flock "$TORTURE_DIR/lock" sh -c '
    high=$(cat "$TORTURE_DIR/high" 2>/dev/null || echo 0)
    now=$(date +%s%N)
    if [ "$LEADERRUN_TOKEN" -ge "$high" ]; then
      echo "$LEADERRUN_TOKEN" > "$TORTURE_DIR/high"; verdict=ok
    else
      verdict=fenced
    fi
    echo "$verdict $LEADERRUN_TOKEN $0 $now" >> "$TORTURE_DIR/log"' "$lr"
  sleep 0.05; i=$((i + 1))
done"#;

/// One line of the store's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Write {
    accepted: bool,
    token: i64,
    leaderrun: i32,
    at: u128,
}

fn read_writes(log: &std::path::Path) -> Vec<Write> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [verdict, token, leaderrun, at] => Some(Write {
                    accepted: *verdict == "ok",
                    token: token.parse().ok()?,
                    leaderrun: leaderrun.parse().ok()?,
                    at: at.parse().ok()?,
                }),
                _ => None,
            }
        })
        .collect()
}

/// A SIGSTOP of a leaderrun, in ns: from the stop to the SIGCONT or the
/// kill that ended it (None while it lasts).
#[derive(Debug, Clone, Copy)]
struct Pause {
    leaderrun: i32,
    from: u128,
    to: Option<u128>,
}

/// What happened during the soak, for the report and the checker.
#[derive(Default)]
struct Tally {
    faults: BTreeMap<&'static str, usize>,
    /// Every fault and undo, with its wall time in ns, for the timeline.
    events: Vec<(u128, String)>,
    exits: BTreeMap<String, usize>,
    pauses: Vec<Pause>,
}

impl Tally {
    fn fault(&mut self, kind: &'static str, detail: String) {
        *self.faults.entry(kind).or_default() += 1;
        self.event(format!("{kind}: {detail}"));
    }

    fn event(&mut self, what: String) {
        self.events.push((now_ns(), what));
    }

    fn exit(&mut self, code: String) {
        *self.exits.entry(code).or_default() += 1;
    }

    fn paused(&self, pid: i32) -> bool {
        self.pauses
            .iter()
            .any(|pause| pause.leaderrun == pid && pause.to.is_none())
    }

    fn pause_ended(&mut self, pid: i32) {
        let now = now_ns();
        for pause in self
            .pauses
            .iter_mut()
            .filter(|pause| pause.leaderrun == pid)
        {
            pause.to.get_or_insert(now);
        }
    }
}

/// One replica's place: its own proxies to every member (so it alone can be
/// cut off) and its current leaderrun.
struct Slot {
    proxies: Vec<Proxy>,
    replica: Option<Replica>,
}

/// The etcd cluster, the replicas' slots and the store their children
/// write to.
struct Soak {
    etcd: Etcd,
    slots: Vec<Slot>,
    dir: tempfile::TempDir,
}

impl Soak {
    fn start() -> Soak {
        let etcd = Etcd::start_with(EtcdOptions {
            members: MEMBERS,
            ..EtcdOptions::default()
        });
        let slots = (0..REPLICAS)
            .map(|_| Slot {
                proxies: (0..MEMBERS)
                    .map(|member| Proxy::start(etcd.member_client_port(member)))
                    .collect(),
                replica: None,
            })
            .collect();
        Soak {
            etcd,
            slots,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The store's log of writes.
    fn log(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    /// Tallies the replicas that exited, and starts a new one in every
    /// empty slot, its child making as many writes as `faults` draws.
    fn replace_exited(&mut self, faults: &mut FaultInjector) {
        for index in 0..self.slots.len() {
            let slot = &mut self.slots[index];
            let exited = match slot.replica.as_mut() {
                Some(replica) => replica.process.try_wait().unwrap(),
                None => None,
            };
            if let Some(status) = exited {
                let code = status
                    .code()
                    .map_or_else(|| "killed".to_string(), |code| code.to_string());
                faults.tally.exit(code);
                slot.replica = None;
            }
            if self.slots[index].replica.is_none() {
                let replica = self.spawn(index, faults.writes());
                self.slots[index].replica = Some(replica);
            }
        }
    }

    fn spawn(&self, slot: usize, writes: u64) -> Replica {
        let endpoints: Vec<String> = self.slots[slot]
            .proxies
            .iter()
            .map(Proxy::endpoint)
            .collect();
        Replica::spawn(
            leaderrun(&endpoints.join(","))
                .args(["--name", NAME, "--wait", "--ttl", TTL])
                .args(["--", "sh", "-c", WRITER, "sh", &writes.to_string()])
                .env("TORTURE_DIR", self.dir.path()),
        )
    }

    /// The leaderrun in `slot`, if one runs there.
    fn pid(&self, slot: usize) -> Option<i32> {
        self.slots[slot].replica.as_ref().map(Replica::pid)
    }

    /// Ends the soak: kills every replica (which ends any pause still
    /// pending) and waits for the writes to settle. Returns them, and what
    /// the injector tallied.
    fn stop(mut self, faults: FaultInjector) -> (Vec<Write>, Tally) {
        let mut tally = faults.tally;
        // Dropping a replica SIGKILLs it, paused or not; its guardian takes
        // the child along.
        for slot in self.slots.iter_mut() {
            if let Some(replica) = slot.replica.take() {
                tally.pause_ended(replica.pid());
            }
        }
        self.slots.clear();
        // A child killed mid-write may leave one line behind: let writes
        // settle.
        let log = self.log();
        let mut settled = read_writes(&log).len();
        await_condition(SOON, "the writes to settle", || {
            std::thread::sleep(Duration::from_millis(200));
            let count = read_writes(&log).len();
            std::mem::replace(&mut settled, count) == count
        });
        (read_writes(&log), tally)
    }
}

/// A fault's end, due at a later tick.
enum Undo {
    Resume(usize, i32),
    Heal(usize),
    StartMember(usize),
}

/// splitmix64: small, seeded, good enough to pick faults.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(low + self.below(high - low))
    }
}

/// Owns the seeded RNG: every random choice of the soak (faults, their
/// targets and lengths, and how many writes each child makes) is drawn here,
/// in the same order for the same seed. Applies faults every 1 to 3 s:
/// SIGKILL or SIGSTOP of a replica's leaderrun, a partition of a replica,
/// the kill of an etcd member; and undoes them when due. Records all of it
/// in its tally.
struct FaultInjector {
    rng: Rng,
    next_fault: Instant,
    pending: Vec<(Instant, Undo)>,
    member_down: bool,
    tally: Tally,
}

impl FaultInjector {
    fn new(seed: u64, first_fault: Instant) -> FaultInjector {
        FaultInjector {
            rng: Rng(seed),
            next_fault: first_fault,
            pending: Vec::new(),
            member_down: false,
            tally: Tally::default(),
        }
    }

    /// How many writes a new replica's child makes.
    fn writes(&mut self) -> u64 {
        20 + self.rng.below(130)
    }

    /// Undoes the faults that are due, then injects one if it is time.
    fn tick(&mut self, soak: &mut Soak) {
        let now = Instant::now();
        self.undo_due(now, soak);
        if now >= self.next_fault {
            self.next_fault = now + self.rng.millis(1000, 3000);
            self.inject(now, soak);
        }
    }

    fn undo_due(&mut self, now: Instant, soak: &mut Soak) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.pending = later;
        for (_, undo) in due {
            match undo {
                Undo::Resume(slot, pid) => {
                    if soak.pid(slot) == Some(pid) {
                        send(pid, Signal::SIGCONT);
                        self.tally
                            .event(format!("SIGCONT replica {slot} (leaderrun {pid})"));
                    }
                    self.tally.pause_ended(pid);
                }
                Undo::Heal(slot) => {
                    soak.slots[slot].proxies.iter().for_each(Proxy::heal);
                    self.tally.event(format!("heal replica {slot}"));
                }
                Undo::StartMember(member) => {
                    soak.etcd.start_member(member);
                    self.member_down = false;
                    self.tally.event(format!("start member {member}"));
                }
            }
        }
    }

    fn inject(&mut self, now: Instant, soak: &mut Soak) {
        let slot = self.target(soak);
        match self.rng.below(20) {
            0..=2 => self.sigkill(soak, slot),
            3..=8 => self.sigstop(now, soak, slot),
            9..=15 => self.partition(now, soak, slot),
            _ => self.kill_member(now, soak),
        }
    }

    /// The slot a fault hits. Most faults hit whoever wrote last, most
    /// likely the leader: that is where they can do harm.
    fn target(&mut self, soak: &Soak) -> usize {
        let writer = read_writes(&soak.log()).last().map(|write| write.leaderrun);
        let leader = (0..soak.slots.len()).find(|&slot| soak.pid(slot) == writer);
        match leader {
            Some(leader) if self.rng.below(4) != 0 => leader,
            _ => self.rng.below(REPLICAS as u64) as usize,
        }
    }

    fn sigkill(&mut self, soak: &mut Soak, slot: usize) {
        if let Some(mut replica) = soak.slots[slot].replica.take() {
            let pid = replica.pid();
            self.tally.pause_ended(pid);
            // Replica's drop would do the same; done here to record when.
            let _ = replica.process.kill();
            let _ = replica.process.wait();
            self.tally.exit("killed".into());
            self.tally
                .fault("SIGKILL a replica", format!("{slot} (leaderrun {pid})"));
        }
    }

    fn sigstop(&mut self, now: Instant, soak: &Soak, slot: usize) {
        let Some(pid) = soak.pid(slot) else {
            return;
        };
        if self.tally.paused(pid) {
            return;
        }
        send(pid, Signal::SIGSTOP);
        self.tally.pauses.push(Pause {
            leaderrun: pid,
            from: now_ns(),
            to: None,
        });
        let pause = self.rng.millis(500, 6000);
        self.pending.push((now + pause, Undo::Resume(slot, pid)));
        let detail = format!("{slot} (leaderrun {pid}) for {pause:?}");
        self.tally.fault("SIGSTOP a replica", detail);
    }

    fn partition(&mut self, now: Instant, soak: &Soak, slot: usize) {
        soak.slots[slot].proxies.iter().for_each(Proxy::cut);
        let cut = self.rng.millis(500, 6000);
        self.pending.push((now + cut, Undo::Heal(slot)));
        let pid = soak.pid(slot).unwrap_or(0);
        let detail = format!("{slot} (leaderrun {pid}) for {cut:?}");
        self.tally.fault("partition a replica", detail);
    }

    /// One member down at a time: the cluster keeps quorum.
    fn kill_member(&mut self, now: Instant, soak: &mut Soak) {
        if self.member_down {
            return;
        }
        let member = self.rng.below(MEMBERS as u64) as usize;
        soak.etcd.kill_member(member);
        self.member_down = true;
        let down = self.rng.millis(1000, 4000);
        self.pending.push((now + down, Undo::StartMember(member)));
        self.tally
            .fault("kill an etcd member", format!("{member} for {down:?}"));
    }
}

/// What the checker found in the writes.
#[derive(Debug)]
struct Findings {
    /// Each token once, in the order of its first write.
    first_tokens: Vec<i64>,
    /// Writes that came after a write of a higher token, with that token.
    overlaps: Vec<(Write, i64)>,
    /// The overlaps that no pause of the writer's leaderrun explains.
    unexplained: Vec<String>,
    /// Each token's accepted writes, first to last, in start order.
    spans: Vec<(i64, (u128, u128))>,
}

/// Judges the writes, in log order, against the pauses of the writers'
/// leaderruns.
fn check_overlaps(writes: &[Write], pauses: &[Pause]) -> Findings {
    let mut first_tokens = Vec::new();
    let mut highest = 0;
    let mut overlaps = Vec::new();
    let mut accepted: HashMap<i64, (u128, u128)> = HashMap::new();
    for write in writes {
        if !first_tokens.contains(&write.token) {
            first_tokens.push(write.token);
        }
        if write.token < highest {
            overlaps.push((*write, highest));
        }
        highest = highest.max(write.token);
        if write.accepted {
            let span = accepted.entry(write.token).or_insert((write.at, write.at));
            span.1 = write.at;
        }
    }
    let allowance = RESUME_ALLOWANCE.as_nanos();
    let unexplained = overlaps
        .iter()
        .filter(|(write, _)| {
            !pauses.iter().any(|pause| {
                pause.leaderrun == write.leaderrun
                    && write.at >= pause.from
                    && pause.to.is_none_or(|to| write.at <= to + allowance)
            })
        })
        .map(|(write, newer)| {
            format!(
                "token {} from leaderrun {} at {} after token {newer}",
                write.token, write.leaderrun, write.at
            )
        })
        .collect();
    let mut spans: Vec<(i64, (u128, u128))> = accepted.into_iter().collect();
    spans.sort_by_key(|(_, (start, _))| *start);
    Findings {
        first_tokens,
        overlaps,
        unexplained,
        spans,
    }
}

impl Findings {
    /// Panics, naming `replay`, if anything must not be.
    fn assert_holds(&self, replay: &str) {
        let Findings {
            first_tokens,
            overlaps,
            unexplained,
            spans,
        } = self;
        assert!(
            first_tokens.windows(2).all(|pair| pair[0] < pair[1]),
            "tokens must increase in start order: {first_tokens:?} ({replay})"
        );
        assert!(
            unexplained.is_empty(),
            "children overlapped without a pause to explain it, {} writes, first: {:?} ({replay})",
            unexplained.len(),
            &unexplained[..unexplained.len().min(3)]
        );
        assert!(
            overlaps.iter().all(|(write, _)| !write.accepted),
            "the fence let a stale write through ({replay})"
        );
        for pair in spans.windows(2) {
            let ((a, (_, a_end)), (b, (b_start, _))) = (pair[0], pair[1]);
            assert!(
                a_end < b_start && a < b,
                "accepted writes of tokens {a} and {b} overlap ({replay})"
            );
        }
    }
}

/// Prints the timeline (faults, and each token's first and last write) and
/// the totals.
fn print_report(writes: &[Write], tally: &Tally, findings: &Findings, origin: u128, seconds: u64) {
    let mut timeline = tally.events.clone();
    let mut seen = BTreeSet::new();
    for write in writes {
        if seen.insert(write.token) {
            let count = writes.iter().filter(|w| w.token == write.token).count();
            let last = writes
                .iter()
                .rev()
                .find(|w| w.token == write.token)
                .unwrap();
            let what = format!(
                "token {} (leaderrun {}) writes {count} times until +{:.2}s",
                write.token,
                write.leaderrun,
                (last.at.saturating_sub(origin)) as f64 / 1e9
            );
            timeline.push((write.at, what));
        }
    }
    timeline.sort_by_key(|(at, _)| *at);
    for (at, what) in &timeline {
        eprintln!(
            "torture: +{:.2}s {what}",
            at.saturating_sub(origin) as f64 / 1e9
        );
    }
    let leaders = findings.first_tokens.len();
    eprintln!(
        "torture: {seconds}s, {} writes, {leaders} leaders ({} handoffs)",
        writes.len(),
        leaders.saturating_sub(1)
    );
    eprintln!("torture: faults injected: {:?}", tally.faults);
    eprintln!("torture: replica exits by code: {:?}", tally.exits);
    eprintln!(
        "torture: overlaps found: {} stale writes, all fenced: {}; unexplained by a pause: {}",
        findings.overlaps.len(),
        findings.overlaps.iter().all(|(write, _)| !write.accepted),
        findings.unexplained.len()
    );
}

/// A write at `at` seconds (in ns) of `token` by leaderrun `leaderrun`.
fn write(accepted: bool, token: i64, leaderrun: i32, at: u128) -> Write {
    Write {
        accepted,
        token,
        leaderrun,
        at: at * 1_000_000_000,
    }
}

/// Two leaders in turn, the first paused from 1.5 s to 3 s: its child's
/// write at 2.5 s comes after the second leader's, and the fence rejects it.
fn handoff_with_a_paused_leader() -> (Vec<Write>, Vec<Pause>) {
    let writes = vec![
        write(true, 5, 100, 1),
        write(true, 7, 200, 2),
        write(false, 5, 100, 2),
        write(true, 7, 200, 3),
    ];
    let pauses = vec![Pause {
        leaderrun: 100,
        from: 1_500_000_000,
        to: Some(3_000_000_000),
    }];
    (writes, pauses)
}

#[test]
fn the_checker_passes_a_fenced_overlap_that_a_pause_explains() {
    let (writes, pauses) = handoff_with_a_paused_leader();
    let findings = check_overlaps(&writes, &pauses);
    assert_eq!(findings.first_tokens, [5, 7]);
    assert_eq!(findings.overlaps, [(writes[2], 7)]);
    assert!(findings.unexplained.is_empty(), "{findings:?}");
    findings.assert_holds("hand-made");
}

#[test]
#[should_panic(expected = "children overlapped without a pause to explain it")]
fn the_checker_flags_an_overlap_without_a_pause() {
    let (writes, _) = handoff_with_a_paused_leader();
    let findings = check_overlaps(&writes, &[]);
    assert_eq!(findings.unexplained.len(), 1, "{findings:?}");
    findings.assert_holds("hand-made");
}

#[test]
#[should_panic(expected = "the fence let a stale write through")]
fn the_checker_flags_a_stale_write_the_fence_accepted() {
    let (mut writes, pauses) = handoff_with_a_paused_leader();
    writes[2].accepted = true;
    check_overlaps(&writes, &pauses).assert_holds("hand-made");
}
