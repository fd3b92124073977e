//! The protocol, model-checked (issue 32): every interleaving of a few
//! replicas, one etcd and the faults, within bounds, explored breadth
//! first, with the production decision code driving each replica
//! (`protocol::table`, the kill schedule, `judge` and the proof's count, the
//! record plan). docs/design.md's "Model checking" says what is checked,
//! what is assumed and what lies outside.
//!
//! The explorer is our own, not stateright's: the world's clock needs
//! urgency (time may not pass a deadline a running process has to act
//! on), progress is checked by a fair, fault-free continuation from every
//! state, and a breadth-first search with parent links gives the shortest
//! trace, replayed step by step in words. That is about a hundred lines,
//! where the crate would add a dependency tree to every debug build of CI.
//!
//! `etcd.rs` is the store, `world.rs` the replicas, clock and faults,
//! `driver.rs` how a replica's phase works and its actions are carried
//! out, `properties.rs` what must hold, `fingerprint.rs` how a state is
//! known again. `sim.rs` walks the same world at random from a seed, past
//! these bounds (docs/design.md, "Simulation").

macro_rules! say {
    ($say:expr, $($arg:tt)*) => {
        if let Some(lines) = $say.as_deref_mut() {
            lines.push(format!($($arg)*));
        }
    };
}

mod driver;
mod etcd;
mod fingerprint;
mod properties;
pub mod sim;
mod world;

use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};

use world::{Proc, Step, World};

/// The bounds of one check.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub replicas: usize,
    /// --max-running.
    pub slots: usize,
    /// --wait, by replica (cycled).
    pub wait: &'static [bool],
    /// --timeout, by replica (cycled): it may pass at any moment while the
    /// command runs.
    pub timeout: &'static [bool],
    /// --wait-timeout, by replica (cycled): once it counts (the campaign
    /// says when), it may end the campaign at any moment.
    pub wait_timeout: &'static [bool],
    /// --once-per, for every replica: one window that outlasts the run.
    pub once_per: bool,
    /// The handover's fast path, by replica (cycled).
    pub fast: &'static [bool],
    /// How many faults may strike (ending one is free).
    pub faults: u8,
    /// Which kinds.
    pub kinds: &'static [world::Kind],
}

#[derive(Debug)]
pub struct Explored {
    pub states: usize,
    pub transitions: usize,
    pub depth: usize,
    pub took: Duration,
}

#[derive(Debug)]
pub struct Failure {
    pub property: String,
    pub trace: Vec<String>,
}

fn fingerprint(world: &World) -> u64 {
    fingerprint::of(world)
}

/// The longest a fault-free continuation may take to end every replica.
const SETTLE: usize = 2_000;

/// Explores every state within `bounds`; the first broken property found,
/// with the shortest trace to it.
pub fn check(bounds: Bounds) -> Result<Explored, Failure> {
    let start = Instant::now();
    let mut init = World::new(
        bounds.replicas,
        bounds.slots,
        bounds.wait,
        bounds.timeout,
        bounds.wait_timeout,
        bounds.once_per,
        (bounds.faults, bounds.kinds),
    );
    for (r, replica) in init.replicas.iter_mut().enumerate() {
        replica.fast = bounds.fast[r % bounds.fast.len()];
    }
    // Per state: its parent and the step from it (the root is its own).
    let mut nodes: Vec<(u32, Step)> = vec![(0, Step::Tick)];
    let mut seen: fingerprint::Table<u32> = fingerprint::Table::default();
    seen.insert(fingerprint(&init), 0);
    let mut queue = VecDeque::from([(init.clone(), 0u32, 0usize)]);
    let mut progress = Progress::default();
    let (mut transitions, mut depth) = (0, 0);
    while let Some((world, index, level)) = queue.pop_front() {
        depth = depth.max(level);
        if nodes.len() % 200_000 == 0 && std::env::var_os("LEADERRUN_MODEL_VERBOSE").is_some() {
            let _ = writeln!(
                std::io::stderr(),
                "  {} states, depth {level}, {:.1?}",
                nodes.len(),
                start.elapsed()
            );
        }
        let broken = properties::broken(&world).or_else(|| progress.stalls(&world));
        if let Some(property) = broken {
            return Err(Failure {
                trace: replay(&init, &path(&nodes, index), &property),
                property,
            });
        }
        for step in world.steps(true) {
            transitions += 1;
            let mut next = world.clone();
            next.take(step, None);
            let print = fingerprint(&next);
            if seen.contains_key(&print) {
                continue;
            }
            let at = nodes.len() as u32;
            seen.insert(print, at);
            nodes.push((index, step));
            queue.push_back((next, at, level + 1));
        }
    }
    Ok(Explored {
        states: nodes.len(),
        transitions,
        depth,
        took: start.elapsed(),
    })
}

fn path(nodes: &[(u32, Step)], mut index: u32) -> Vec<Step> {
    let mut steps = Vec::new();
    while index != 0 {
        let (parent, step) = nodes[index as usize];
        steps.push(step);
        index = parent;
    }
    steps.reverse();
    steps
}

/// The trace in words: each step, with the clock and the revision (a step
/// that cannot be taken where it comes, in a shrunk walk, is passed over).
fn replay(init: &World, steps: &[Step], property: &str) -> Vec<String> {
    let mut world = init.clone();
    let mut lines = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        if !world.steps(true).contains(step) {
            continue;
        }
        let mut said = Vec::new();
        world.take(*step, Some(&mut said));
        for line in said {
            lines.push(format!(
                "{n:>3}. t={:>5} ms rev {:>2}: {line}",
                world.elapsed.0, world.etcd.revision
            ));
        }
    }
    lines.push(format!("BROKEN {property}"));
    lines.extend(world.summary());
    lines
}

/// Progress: once faults stop (every pause, partition and outage ended),
/// a fair run without faults ends every replica, and each replica that was
/// waiting in line has run its command by then. The continuation is one
/// fixed fair schedule (the first step enabled, replicas in order, the
/// clock last), so each state's outcome is remembered for the next.
#[derive(Default)]
struct Progress {
    /// A healed state's fingerprint: the replicas that had run when every
    /// replica ended (None: they never all end).
    settled: fingerprint::Table<Option<u64>>,
}

impl Progress {
    fn stalls(&mut self, world: &World) -> Option<String> {
        let mut healed = world.clone();
        heal(&mut healed);
        let waiting = world.replicas.iter().enumerate().filter(|(_, replica)| {
            // A signal pending is a request to give up, and --wait-timeout
            // is one made in advance: not a stall.
            replica.proc == Proc::Alive
                && !replica.signal
                && !replica.wait_timeout
                // Refused by etcd, or unable to spawn its command or start
                // its guardian, a run ends without running: no outage
                // that ends.
                && !replica.refused
                && !replica.spawn_fails
                && !replica.guardian_fails
                && replica.phase.0 == protocol::table::Phase::Waiting
        });
        let ran = self.settle(healed);
        let Some(ran) = ran else {
            return Some(format!(
                "progress: with the faults over, the replicas do not all end (their commands with them) within {SETTLE} steps"
            ));
        };
        // With --once-per, the window's one run may be anyone's: those who
        // find it taken end without running, and rightly. A window claimed
        // by a run that then never started, and not given back (its
        // leaderrun killed, or etcd out of its reach as the re-check after
        // the window refused the start) is spent with no run: the window's
        // marker lives on a lease of its own, as long as the window
        // (docs/operating.md, "Choosing a --once-per window", says so), a
        // gap the claim's steps show and this allows.
        // (One still claiming that goes on to run makes `ran` count.)
        let spent_unstarted = world
            .replicas
            .iter()
            .any(|replica| replica.window && !replica.ran);
        if world.once_per {
            return (waiting.count() > 0 && ran == 0 && !spent_unstarted).then(|| {
                "progress: replicas waited in line for a --once-per window, and all ended without a run, though the faults ended".into()
            });
        }
        for (r, _) in waiting {
            if ran & (1 << r) == 0 {
                return Some(format!(
                    "progress: replica {r} waited in line, and ended without running, though the faults ended"
                ));
            }
        }
        None
    }

    fn settle(&mut self, mut world: World) -> Option<u64> {
        let mut on_the_way = Vec::new();
        let mut outcome = None;
        for _ in 0..SETTLE {
            let print = fingerprint(&world);
            if let Some(known) = self.settled.get(&print) {
                outcome = *known;
                break;
            }
            on_the_way.push(print);
            if world
                .replicas
                .iter()
                .all(|replica| replica.proc != Proc::Alive)
            {
                // A command left running by an ended leaderrun: no end.
                let orphan = world.replicas.iter().any(|replica| replica.runs());
                outcome = (!orphan).then(|| ran(&world));
                break;
            }
            let Some(step) = world.steps(false).into_iter().next() else {
                break;
            };
            world.take(step, None);
        }
        for print in on_the_way {
            self.settled.insert(print, outcome);
        }
        outcome
    }
}

fn ran(world: &World) -> u64 {
    world
        .replicas
        .iter()
        .enumerate()
        .filter(|(_, replica)| replica.ran)
        .fold(0, |mask, (r, _)| mask | 1 << r)
}

/// The faults end: every replica continued and reconnected, etcd back.
fn heal(world: &mut World) {
    for replica in &mut world.replicas {
        replica.paused = false;
        replica.connected = true;
    }
    world.etcd.down = false;
}

/// The deeper run: LEADERRUN_MODEL_DEPTH faults of any kind at once.
fn deeper() -> Option<u8> {
    std::env::var("LEADERRUN_MODEL_DEPTH")
        .ok()
        .and_then(|depth| depth.parse().ok())
}

/// Prints past the test harness's capture, so that CI's log shows it.
fn tell(what: &str, explored: &Explored) {
    let _ = writeln!(
        std::io::stderr(),
        "model {what}: {} states, {} transitions, depth {}, in {:.1?}",
        explored.states,
        explored.transitions,
        explored.depth,
        explored.took
    );
}

#[cfg(test)]
mod tests;
