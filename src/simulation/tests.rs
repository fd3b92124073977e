//! Walks of the simulated world over the real shell: many seeds within a
//! time budget (`LEADERRUN_SIM_SECONDS`, 10 s by default; CI's), one seed
//! alone and told whole (`LEADERRUN_SIM_SEED`), every planted defect
//! found, and a seed's walk replayed exactly.
#![cfg(test)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::fleet::{walk, Report, Setup};
use protocol::planted::{self, Defect};

fn seed_from(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

/// The time to walk for.
fn budget() -> Duration {
    Duration::from_secs(seed_from("LEADERRUN_SIM_SECONDS").unwrap_or(10))
}

/// The most replicas a world has: 8 in CI's walk, 50 when asked.
fn most_replicas() -> usize {
    seed_from("LEADERRUN_SIM_REPLICAS").map_or(8, |most| most.clamp(3, 50) as usize)
}

/// The world of `seed`: as drawn, but with faults for
/// `LEADERRUN_SIM_MINUTES` of the world's time when that is set (a day is
/// 1440, a week of cron firings 10080).
fn world(seed: u64) -> Setup {
    let mut setup = Setup::draw(seed, most_replicas());
    if let Some(minutes) = seed_from("LEADERRUN_SIM_MINUTES") {
        setup.faulty = Duration::from_secs(minutes.max(1) * 60);
    }
    setup
}

/// A walk that broke a property, told with what replays it.
fn told(setup: &Setup, report: &Report) -> String {
    let mut text = String::new();
    if report.violations.is_empty() {
        let _ = writeln!(
            text,
            "simulation over the real shell: seed {} broke no property",
            setup.seed
        );
    } else {
        let _ = writeln!(
        text,
        "simulation over the real shell: seed {} broke {} (replay: LEADERRUN_SIM_SEED={} cargo test --lib simulation::tests::walks_break_no_property -- --nocapture)",
        setup.seed,
        report.violations.join("; "),
        setup.seed
    );
    }
    let _ = writeln!(text, "{setup:?}");
    let _ = writeln!(
        text,
        "{} invocations, {} starts, exits {:?}, trace {:016x} of {} requests; the last:",
        report.invocations, report.starts, report.exits, report.trace.0, report.trace.1
    );
    for line in &report.tail {
        let _ = writeln!(text, "  {line}");
    }
    text
}

/// Walks seeds from `first` until one breaks a property (its setup and
/// report) or the budget is spent (the seeds walked).
fn walk_for(first: u64, budget: Duration) -> Result<u64, Box<(Setup, Report)>> {
    let began = Instant::now();
    let mut seed = first;
    while began.elapsed() < budget {
        let setup = world(seed);
        let report = walk(&setup);
        if !report.violations.is_empty() {
            return Err(Box::new((setup, report)));
        }
        seed += 1;
    }
    Ok(seed - first)
}

#[test]
fn walks_break_no_property() {
    if let Some(seed) = seed_from("LEADERRUN_SIM_SEED") {
        let setup = world(seed);
        // With LEADERRUN_SIM_DEFECT naming one, the walk that found it.
        let chosen = std::env::var("LEADERRUN_SIM_DEFECT").unwrap_or_default();
        let report = match Defect::ALL
            .into_iter()
            .find(|defect| format!("{defect:?}") == chosen)
        {
            Some(defect) => planted::with(defect, || walk(&setup)),
            None => walk(&setup),
        };
        eprintln!("{}", told(&setup, &report));
        assert!(report.violations.is_empty(), "{}", told(&setup, &report));
        return;
    }
    let first = seed_from("LEADERRUN_SIM_FIRST").unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        now.as_secs() % 1_000_000 * 1_000
    });
    eprintln!("simulation over the real shell: seeds from {first}");
    match walk_for(first, budget()) {
        Ok(walks) => eprintln!("simulation over the real shell: {walks} walks, no property broken"),
        Err(found) => panic!("{}", told(&found.0, &found.1)),
    }
}

/// The same seed walks the same world: every request, its fate and the
/// revision it left, in the same order (the trace's hash and length).
#[test]
fn a_seed_replays_its_walk_exactly() {
    let mut setup = Setup::draw(11, 5);
    setup.faulty = Duration::from_secs(240);
    setup.calm = Duration::from_secs(120);
    setup.whole_trace = true;
    let first = walk(&setup);
    let again = walk(&setup);
    let parted = first
        .whole_trace
        .iter()
        .zip(&again.whole_trace)
        .position(|(one, other)| one != other);
    if let Some(at) = parted {
        let from = at.saturating_sub(12);
        panic!(
            "the walks part at line {at}:\n{:#?}\n{:#?}",
            &first.whole_trace[from..=at],
            &again.whole_trace[from..=at]
        );
    }
    assert!(
        first.trace.1 > 100,
        "a walk of a few requests shows nothing: {first:?}"
    );
    assert_eq!(
        first.trace, again.trace,
        "{:#?}\n{:#?}",
        first.tail, again.tail
    );
    assert_eq!(first.starts, again.starts);
    let other = walk(&Setup { seed: 12, ..setup });
    assert_ne!(first.trace, other.trace, "another seed, the same walk");
}

/// How long each planted defect may take to be found, unless
/// `LEADERRUN_SIM_SECONDS` says.
const DEFECT_BUDGET: Duration = Duration::from_secs(40);

/// Walks from seed `first` (unless `LEADERRUN_SIM_FIRST` says) with
/// `defect` planted until a walk finds it, within [`DEFECT_BUDGET`]
/// (`LEADERRUN_SIM_SECONDS`): the seed and the time are printed.
fn found(defect: Defect, first: u64) {
    let budget = seed_from("LEADERRUN_SIM_SECONDS").map_or(DEFECT_BUDGET, Duration::from_secs);
    let first = seed_from("LEADERRUN_SIM_FIRST").unwrap_or(first);
    let began = Instant::now();
    match planted::with(defect, || walk_for(first, budget)) {
        Err(found) => eprintln!(
            "{defect:?}: found by seed {} in {:.1} s: {}",
            found.0.seed,
            began.elapsed().as_secs_f64(),
            found.1.violations[0]
        ),
        Ok(walks) => panic!("{defect:?} unseen within {budget:?} ({walks} walks)"),
    }
}

/// Every planted defect (`crates/protocol/src/planted.rs`) is found by the
/// walk, a test each. Each searches from the first seed that found it in
/// a search from seed 0 (`from`): with the world as it is, that walk
/// finds it at once; a change to the world that moves the finding seed
/// leaves a search from there, within the budget. From seed 0 each is
/// found within 12 s on two busy cores (at most the 35th walk:
/// `LEADERRUN_SIM_FIRST=0`, the figures of docs/design.md); the budget is
/// over three times that.
macro_rules! the_planted_defects_are_found {
    ($($test:ident: $defect:ident from $from:literal,)*) => {
        mod the_planted_defects_are_found {
            use super::*;

            /// The defects walked here, to hold to `Defect::ALL`.
            pub const WALKED: &[Defect] = &[$(Defect::$defect),*];

            $(
                #[test]
                fn $test() {
                    found(Defect::$defect, $from);
                }
            )*
        }
    };
}

the_planted_defects_are_found! {
    spawn_unproven: SpawnUnproven from 1,
    skip_local_deadline: SkipLocalDeadline from 0,
    resign_before_dead: ResignBeforeDead from 0,
    fence_by_token: FenceByToken from 0,
    gone_at_kill_signal: GoneAtKillSignal from 0,
    stop_at_expiry: StopAtExpiry from 0,
    start_unsure: StartUnsure from 7,
    retry_keeps_lease: RetryKeepsLease from 34,
    grace_without_kill: GraceWithoutKill from 0,
    thin_margin: ThinMargin from 0,
    resign_without_comparison: ResignWithoutComparison from 13,
    window_back_after_start: WindowBackAfterStart from 9,
    deadline_from_ack: DeadlineFromAck from 34,
    skip_recheck: SkipRecheck from 7,
    lost_resigns_entitled: LostResignsEntitled from 7,
}

#[test]
fn every_planted_defect_is_walked() {
    assert_eq!(the_planted_defects_are_found::WALKED, Defect::ALL);
}

#[path = "../../tests/facts/etcd.rs"]
mod facts;

/// The simulated etcd answers the script the suite runs against real
/// etcds (`tests/facts/etcd.rs`) with the same transcript.
#[test]
fn the_simulated_etcd_answers_as_etcd_does() {
    let lines = super::with_one_member(async |client, _| facts::transcript(client, "facts/").await);
    assert_eq!(lines, facts::EXPECTED);
}
