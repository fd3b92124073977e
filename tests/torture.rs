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

mod common;
use common::*;
use nix::sys::signal::Signal;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

const NAME: &str = "torture/soak";
const MEMBERS: usize = 3;
const REPLICAS: usize = 4;
/// How long after its leaderrun resumes a child may still write.
const RESUME_ALLOWANCE: Duration = Duration::from_secs(1);

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

struct Write {
    accepted: bool,
    token: i64,
    leaderrun: i32,
    at: u128,
}

fn read_writes(log: &Path) -> Vec<Write> {
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

/// One replica's place: its own proxies to every member (so it alone can be
/// cut off) and its current leaderrun.
struct Slot {
    proxies: Vec<Proxy>,
    replica: Option<Replica>,
}

enum Undo {
    Resume(usize, i32),
    Heal(usize),
    StartMember(usize),
}

#[derive(Default)]
struct Tally {
    faults: BTreeMap<&'static str, usize>,
    /// Every fault and undo, with its wall time in ns, for the timeline.
    events: Vec<(u128, String)>,
    exits: BTreeMap<String, usize>,
    /// (leaderrun pid, paused at, resumed or killed at), in ns.
    pauses: Vec<(i32, u128, Option<u128>)>,
}

impl Tally {
    fn fault(&mut self, kind: &'static str, detail: String) {
        *self.faults.entry(kind).or_default() += 1;
        self.event(format!("{kind}: {detail}"));
    }

    fn event(&mut self, what: String) {
        self.events.push((now_ns(), what));
    }

    fn pause_ended(&mut self, pid: i32) {
        let now = now_ns();
        for pause in self.pauses.iter_mut().filter(|pause| pause.0 == pid) {
            pause.2.get_or_insert(now);
        }
    }
}

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
    let mut rng = Rng(seed);

    let mut etcd = Etcd::start_with(EtcdOptions {
        members: MEMBERS,
        ..EtcdOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut slots: Vec<Slot> = (0..REPLICAS)
        .map(|_| Slot {
            proxies: (0..MEMBERS)
                .map(|member| Proxy::start(etcd.member_client_port(member)))
                .collect(),
            replica: None,
        })
        .collect();
    let spawn = |slot: &Slot, writes: u64| {
        let endpoints: Vec<String> = slot.proxies.iter().map(Proxy::endpoint).collect();
        Replica::spawn(
            leaderrun(&endpoints.join(","))
                .args(["--name", NAME, "--wait", "--ttl", "3s"])
                .args(["--", "sh", "-c", WRITER, "sh", &writes.to_string()])
                .env("TORTURE_DIR", dir.path()),
        )
    };

    let mut tally = Tally::default();
    let mut pending: Vec<(Instant, Undo)> = Vec::new();
    let mut member_down = false;
    let started = Instant::now();
    let origin = now_ns();
    let mut next_fault = started + Duration::from_secs(1);
    while started.elapsed() < Duration::from_secs(seconds) {
        for slot in slots.iter_mut() {
            let exited = match slot.replica.as_mut() {
                Some(replica) => replica.process.try_wait().unwrap(),
                None => None,
            };
            if let Some(status) = exited {
                let code = status
                    .code()
                    .map_or_else(|| "killed".to_string(), |code| code.to_string());
                *tally.exits.entry(code).or_default() += 1;
                slot.replica = None;
            }
            if slot.replica.is_none() {
                slot.replica = Some(spawn(slot, 20 + rng.below(130)));
            }
        }

        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = pending.into_iter().partition(|(at, _)| *at <= now);
        pending = later;
        for (_, undo) in due {
            match undo {
                Undo::Resume(slot, pid) => {
                    let same = slots[slot].replica.as_ref().map(Replica::pid) == Some(pid);
                    if same {
                        send(pid, Signal::SIGCONT);
                        tally.event(format!("SIGCONT replica {slot} (leaderrun {pid})"));
                    }
                    tally.pause_ended(pid);
                }
                Undo::Heal(slot) => {
                    slots[slot].proxies.iter().for_each(Proxy::heal);
                    tally.event(format!("heal replica {slot}"));
                }
                Undo::StartMember(member) => {
                    etcd.start_member(member);
                    member_down = false;
                    tally.event(format!("start member {member}"));
                }
            }
        }

        if now >= next_fault {
            next_fault = now + rng.millis(1000, 3000);
            // Most faults hit whoever wrote last, most likely the leader:
            // that is where they can do harm.
            let writer = read_writes(&log).last().map(|write| write.leaderrun);
            let leader = slots
                .iter()
                .position(|slot| slot.replica.as_ref().map(Replica::pid) == writer);
            let slot = match leader {
                Some(leader) if rng.below(4) != 0 => leader,
                _ => rng.below(REPLICAS as u64) as usize,
            };
            match rng.below(20) {
                0..=2 => {
                    if let Some(mut replica) = slots[slot].replica.take() {
                        let pid = replica.pid();
                        tally.pause_ended(pid);
                        let _ = replica.process.kill();
                        let _ = replica.process.wait();
                        *tally.exits.entry("killed".into()).or_default() += 1;
                        tally.fault("SIGKILL a replica", format!("{slot} (leaderrun {pid})"));
                    }
                }
                3..=8 => {
                    let pid = slots[slot].replica.as_ref().map(Replica::pid);
                    let paused = tally
                        .pauses
                        .iter()
                        .any(|p| Some(p.0) == pid && p.2.is_none());
                    if let (Some(pid), false) = (pid, paused) {
                        send(pid, Signal::SIGSTOP);
                        tally.pauses.push((pid, now_ns(), None));
                        let pause = rng.millis(500, 6000);
                        pending.push((now + pause, Undo::Resume(slot, pid)));
                        let detail = format!("{slot} (leaderrun {pid}) for {pause:?}");
                        tally.fault("SIGSTOP a replica", detail);
                    }
                }
                9..=15 => {
                    slots[slot].proxies.iter().for_each(Proxy::cut);
                    let cut = rng.millis(500, 6000);
                    pending.push((now + cut, Undo::Heal(slot)));
                    let pid = slots[slot].replica.as_ref().map_or(0, Replica::pid);
                    let detail = format!("{slot} (leaderrun {pid}) for {cut:?}");
                    tally.fault("partition a replica", detail);
                }
                _ => {
                    // One member down at a time: the cluster keeps quorum.
                    if !member_down {
                        let member = rng.below(MEMBERS as u64) as usize;
                        etcd.kill_member(member);
                        member_down = true;
                        let down = rng.millis(1000, 4000);
                        pending.push((now + down, Undo::StartMember(member)));
                        tally.fault("kill an etcd member", format!("{member} for {down:?}"));
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Dropping a replica SIGKILLs it, paused or not; its guardian takes the
    // child along. That ends any pause still pending.
    for slot in slots.iter_mut() {
        if let Some(replica) = slot.replica.take() {
            tally.pause_ended(replica.pid());
        }
    }
    drop(slots);
    // A child killed mid-write may leave one line behind: let writes settle.
    let mut settled = read_writes(&log).len();
    await_condition(Duration::from_secs(10), "the writes to settle", || {
        std::thread::sleep(Duration::from_millis(200));
        let count = read_writes(&log).len();
        std::mem::replace(&mut settled, count) == count
    });

    let writes = read_writes(&log);
    let mut first_tokens = Vec::new();
    let mut highest = 0;
    let mut overlaps = Vec::new();
    let mut accepted: HashMap<i64, (u128, u128)> = HashMap::new();
    for write in &writes {
        if !first_tokens.contains(&write.token) {
            first_tokens.push(write.token);
        }
        if write.token < highest {
            overlaps.push((write, highest));
        }
        highest = highest.max(write.token);
        if write.accepted {
            let span = accepted.entry(write.token).or_insert((write.at, write.at));
            span.1 = write.at;
        }
    }
    let unexplained: Vec<String> = overlaps
        .iter()
        .filter(|(write, _)| {
            let allowance = RESUME_ALLOWANCE.as_nanos();
            !tally.pauses.iter().any(|&(pid, from, to)| {
                pid == write.leaderrun
                    && write.at >= from
                    && to.is_none_or(|to| write.at <= to + allowance)
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

    // The timeline: faults, and each token's first and last write.
    let mut timeline = tally.events.clone();
    for write in &writes {
        let seen_before = timeline
            .iter()
            .any(|(_, what)| what.starts_with(&format!("token {} ", write.token)));
        if !seen_before {
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
    eprintln!(
        "torture: {seconds}s, {} writes, {} leaders ({} handoffs)",
        writes.len(),
        first_tokens.len(),
        first_tokens.len().saturating_sub(1)
    );
    eprintln!("torture: faults injected: {:?}", tally.faults);
    eprintln!("torture: replica exits by code: {:?}", tally.exits);
    eprintln!(
        "torture: overlaps found: {} stale writes, all fenced: {}; unexplained by a pause: {}",
        overlaps.len(),
        overlaps.iter().all(|(write, _)| !write.accepted),
        unexplained.len()
    );

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
    assert!(
        first_tokens.len() >= 2 && !tally.faults.is_empty(),
        "the soak must see handoffs and faults to mean anything ({replay})"
    );
}
