//! Names the commit the binary is built from, for `--version`: git's
//! abbreviated HEAD, with `-dirty` if the work tree differs from it.
//! Outside a git checkout (a source tarball), `LEADERRUN_COMMIT` if set,
//! else "unknown". Nothing else is generated: etcd-client's own build
//! script compiles the protos.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=LEADERRUN_COMMIT");
    let commit = std::env::var("LEADERRUN_COMMIT")
        .ok()
        .filter(|commit| !commit.is_empty())
        .or_else(|| {
            let head = git(&["rev-parse", "--short=12", "HEAD"])?;
            // Built again when HEAD moves, or the index does (a commit,
            // a checkout); a change to a tracked file rebuilds anyway.
            if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
                for file in ["HEAD", "index"] {
                    println!("cargo:rerun-if-changed={dir}/{file}");
                }
                if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    println!("cargo:rerun-if-changed={dir}/{reference}");
                }
            }
            // --no-optional-locks: a status refreshes the index and writes
            // it back where it can, and a written index reruns this script
            // and rebuilds leaderrun; scripts/test builds two profiles of
            // one checkout at once, so one build's status rebuilt the other.
            let dirty = git(&[
                "--no-optional-locks",
                "status",
                "--porcelain",
                "--untracked-files=no",
            ])
            .is_some_and(|changes| !changes.is_empty());
            Some(if dirty { format!("{head}-dirty") } else { head })
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LEADERRUN_COMMIT={commit}");
}
