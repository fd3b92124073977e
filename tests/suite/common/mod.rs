//! The one test harness: a real etcd per test (free loopback ports, a
//! temporary data dir), the real leaderrun binary, and helpers to await
//! conditions instead of sleeping on hope. A module per concern; tests
//! `use crate::common::*`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod dns;
pub mod etcd;
pub mod faults;
pub mod invocation;
pub mod pki;
pub mod processes;
pub mod pty;
pub mod replicas;
pub mod stalls;

pub use dns::*;
pub use etcd::*;
pub use faults::*;
pub use invocation::*;
pub use processes::*;
pub use pty::*;
pub use replicas::*;
pub use stalls::active_since;

/// Polls `condition` every 10 ms until it holds; panics with `what` after
/// `limit` (of the machine's running time: see [`stalls`]). Returns how
/// long it took, less the stalls seen meanwhile.
pub fn await_condition(
    limit: Duration,
    what: &str,
    mut condition: impl FnMut() -> bool,
) -> Duration {
    stalls::watch();
    let started = Instant::now();
    while !condition() {
        assert!(
            !stalls::past(started, limit),
            "timed out after {limit:?} waiting for {what}{}",
            stalls::stalled_note(started)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    active_since(started)
}

/// The code of the block between `<!-- NAME: start -->` and
/// `<!-- NAME: end -->` in README.md (or, if README has none, in the first
/// of docs/*.md that has it), without its fences: the examples that tests
/// run as written.
pub fn readme_block(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let start = format!("<!-- {name}: start -->");
    let end = format!("<!-- {name}: end -->");
    // README.md first, then docs/*.md, in name order: the first that has it.
    let mut documents = vec![root.join("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
                .collect()
        })
        .unwrap_or_default();
    in_docs.sort();
    documents.extend(in_docs);
    let (document, text) = documents
        .iter()
        .map(|path| (path, std::fs::read_to_string(path).unwrap_or_default()))
        .find(|(_, text)| text.contains(&start))
        .unwrap_or_else(|| panic!("neither README.md nor docs/*.md has {start}"));
    let from = text.find(&start).unwrap() + start.len();
    let to = text[from..]
        .find(&end)
        .unwrap_or_else(|| panic!("{} has no {end}", document.display()))
        + from;
    text[from..to]
        .lines()
        .filter(|line| !line.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
        + "\n"
}
