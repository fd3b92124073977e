//! The properties checked in every reachable state (progress is checked
//! from each one, in `mod.rs`).

use super::etcd::{Key, Value};
use super::world::World;
use crate::election::record::Outcome;

/// The first property `world` breaks, named and explained.
pub fn broken(world: &World) -> Option<String> {
    exclusion(world)
        .or_else(|| outlived(world))
        .or_else(|| tokens(world))
        .or_else(|| records(world))
        .or_else(|| window(world))
}

/// 6. With --once-per, at most one command starts in the window, whoever
///    runs and however the others end.
fn window(world: &World) -> Option<String> {
    (world.window_runs > 1).then(|| {
        format!(
            "once-per: {} commands started in one --once-per window",
            world.window_runs
        )
    })
}

/// 1. Never more than --max-running commands at once, but for one whose
///    leaderrun slept through its deadline (paused: fencing's case), or
///    whose lease or key another writer took (it runs until it notices;
///    property 2 bounds how long).
fn exclusion(world: &World) -> Option<String> {
    let running: Vec<usize> = (0..world.replicas.len())
        .filter(|r| {
            let replica = &world.replicas[*r];
            replica.runs() && !replica.overslept && !replica.robbed
        })
        .collect();
    (running.len() > world.slots).then(|| {
        format!(
            "exclusion: the commands of replicas {running:?} run at once, --max-running {}",
            world.slots
        )
    })
}

/// 2. No command outlives its lease on the server (expired by its TTL),
///    unless its leaderrun was paused through the deadline; nor, stronger,
///    the lease's local deadline (which, where the clocks' rates agree,
///    the server's expiry cannot come before; a replica's clock that runs
///    slow, the simulator's, puts it after), whoever took the lease or
///    key.
fn outlived(world: &World) -> Option<String> {
    world.replicas.iter().enumerate().find_map(|(r, replica)| {
        let held = replica.lease?;
        if !replica.runs() || replica.overslept {
            return None;
        }
        if world.etcd.expired.contains(&held.id) {
            return Some(format!(
                "lease: replica {r}'s command runs after its lease {} expired on the server",
                held.id
            ));
        }
        (world.now >= held.expires()).then(|| {
            format!(
                "lease: replica {r}'s command runs at {} ms, past its lease's local deadline {} ms",
                world.now,
                held.expires()
            )
        })
    })
}

/// 3. With one runner, every command starts with a larger token than every
///    command before it (but one whose key another writer took since its
///    proof: it learns of it only from the watch).
fn tokens(world: &World) -> Option<String> {
    world
        .token_went_back
        .then(|| "tokens: a command started with a token no larger than an earlier one's".into())
}

/// 4. Records tell the truth: last-finished is of the run that finished
///    last (by the revision its key stopped being its own) among those
///    that wrote it or were entitled to; last-started of the run that
///    started last (in the order the commands started) among those
///    written there, but for a run whose key another writer took before
///    it started (it cannot know, as in 3: its records rank it by its
///    proof); a success recorded is a command that exited 0.
fn records(world: &World) -> Option<String> {
    let record = |key| match world.etcd.keys.get(&key).map(|found| found.value) {
        Some(Value::Record { token, outcome, .. }) => Some((token, outcome)),
        _ => None,
    };
    if let Some((token, outcome)) = record(Key::Finished) {
        let ended = world.etcd.ended.get(&token).copied().unwrap_or(i64::MAX);
        if ended < world.finished_floor {
            return Some(format!(
                "records: last-finished is token {token}'s run, which finished at revision {ended}, but a run that finished at {} was entitled to it",
                world.finished_floor
            ));
        }
        if !world.says_truth(token, outcome) {
            return Some(format!(
                "records: last-finished says token {token} {outcome:?}, untrue"
            ));
        }
    }
    if let Some(token) = world.lost_over_newer {
        return Some(format!(
            "records: token {token}'s run, lost, replaced a last-finished written after its win (its job ended at its loss, before that run's)"
        ));
    }
    if let Some((token, outcome)) = record(Key::Succeeded) {
        if outcome != Outcome::Succeeded || !world.says_truth(token, outcome) {
            return Some(format!(
                "records: last-succeeded holds token {token} {outcome:?}"
            ));
        }
    }
    match record(Key::Started) {
        Some((token, _)) if world.start_of(token).is_some_and(|start| start < world.started_floor) => Some(format!(
            "records: last-started holds token {token}'s run, start {} in order, but start {} was written there",
            world.start_of(token).unwrap_or_default(),
            world.started_floor
        )),
        _ => None,
    }
}
