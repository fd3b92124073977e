//! The protocol's crate (`crates/protocol`) does no IO because it cannot:
//! nothing in its dependency tree is a crate that does. This holds the
//! tree, as cargo resolves it, to an allowance of pure crates, and shows
//! that the check fails once a crate that does IO is added. What the
//! standard library offers every crate (its files, sockets, processes and
//! clocks) is kept out of the crate's text.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates the protocol may stand on: itself, and crates that do no IO
/// and read no clock (humantime formats durations, nothing more). Grow it
/// only with such a crate, and say why here.
const ALLOWED: [&str; 2] = ["leaderrun-protocol", "humantime"];

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn protocol_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/protocol")
}

/// The crates the package at `manifest` depends on to build and run (its
/// normal and build dependencies, every level), by name; `extra` are
/// cargo's own flags (`--locked` in the workspace).
fn dependency_tree(manifest: &Path, extra: &[&str]) -> Vec<String> {
    let output = Command::new(cargo())
        .args(["tree", "--offline", "--edges", "normal,build"])
        .args(["--prefix", "none", "--format", "{p}", "--manifest-path"])
        .arg(manifest)
        .args(extra)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The crates of `tree` that are not allowed.
fn not_allowed(tree: &[String]) -> Vec<String> {
    tree.iter()
        .filter(|name| !ALLOWED.contains(&name.as_str()))
        .cloned()
        .collect()
}

#[test]
fn the_protocol_depends_on_nothing_that_does_io() {
    let tree = dependency_tree(&protocol_dir().join("Cargo.toml"), &["--locked"]);
    assert!(
        tree.iter().any(|name| name == "leaderrun-protocol"),
        "the tree names the crate itself: {tree:?}"
    );
    assert_eq!(not_allowed(&tree), Vec::<String>::new());
}

/// A copy of the crate with libc added (as nix or tokio would bring it)
/// fails the check: the check reads what cargo resolves, not a list kept
/// by hand.
#[test]
fn the_check_fails_when_a_crate_that_does_io_is_added() {
    let copy = tempfile::tempdir().expect("a temporary directory");
    let source = protocol_dir();
    std::fs::create_dir(copy.path().join("src")).unwrap();
    for entry in std::fs::read_dir(source.join("src")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            copy.path().join("src").join(entry.file_name()),
        )
        .unwrap();
    }
    let manifest = std::fs::read_to_string(source.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\n[dependencies]\n"), "{manifest}");
    let manifest = manifest.replace("\n[dependencies]\n", "\n[dependencies]\nlibc = \"0.2\"\n");
    // A workspace of its own: the copy is not a member of leaderrun's.
    std::fs::write(
        copy.path().join("Cargo.toml"),
        format!("{manifest}\n[workspace]\n"),
    )
    .unwrap();
    // Resolved against this workspace's lock, so offline needs nothing new.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock"),
        copy.path().join("Cargo.lock"),
    )
    .unwrap();
    let tree = dependency_tree(&copy.path().join("Cargo.toml"), &[]);
    assert_eq!(not_allowed(&tree), ["libc"]);
}

/// What the standard library offers that no code of the protocol's may
/// name: its IO, and its clocks. (Crates that do IO it cannot name at
/// all: it does not depend on them.)
const FORBIDDEN: [&str; 10] = [
    "std::process",
    "std::net",
    "std::fs",
    "std::io",
    "std::env",
    "std::thread::sleep",
    "std::time::Instant",
    "SystemTime",
    "::now()",
    "unsafe",
];

#[test]
fn the_protocol_names_no_io_nor_clock_of_the_standard_library() {
    let mut read = 0;
    for entry in std::fs::read_dir(protocol_dir().join("src")).expect("the crate's src") {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // Its own unit tests may build what they like.
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or(&text);
        for line in code
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
        {
            for name in FORBIDDEN {
                assert!(
                    !line.contains(name),
                    "{} names {name}: {line}",
                    path.display()
                );
            }
        }
        read += 1;
    }
    assert!(read >= 10, "only {read} files read");
}
