//! The Debian package, installed as an operator would (`scripts/test` builds
//! it with `scripts/package`, installs it with `dpkg -i` and names it in
//! LEADERRUN_TEST_DEB), and README's crontab lines run as written under
//! cron's environment: `PATH=/usr/bin:/bin`, none of a login shell's
//! variables, `/bin/sh -c`, no terminal.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The package this suite checks. Without it there is nothing to test, and
/// saying so is a failure, not a pass.
fn package() -> PathBuf {
    let deb = std::env::var_os("LEADERRUN_TEST_DEB").unwrap_or_else(|| {
        panic!(
            "LEADERRUN_TEST_DEB is not set: scripts/test builds the package, installs it and sets it \
             (by hand: scripts/package, dpkg -i, LEADERRUN_TEST_DEB=<the .deb>)"
        )
    });
    PathBuf::from(deb)
}

fn output(command: &mut Command) -> String {
    let output = command.output().expect("runs");
    assert!(output.status.success(), "{command:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_package_installs_leaderrun_where_cron_finds_it_with_its_docs() {
    let deb = package();
    let listing = output(Command::new("dpkg-deb").arg("--contents").arg(&deb));
    for path in [
        "./usr/bin/leaderrun",
        "./usr/share/man/man1/leaderrun.1.gz",
        "./usr/share/man/man1/leaderrun-status.1.gz",
        "./usr/share/man/man1/leaderrun-check.1.gz",
        "./usr/share/bash-completion/completions/leaderrun",
        "./usr/share/zsh/vendor-completions/_leaderrun",
        "./usr/share/fish/vendor_completions.d/leaderrun.fish",
        "./usr/share/doc/leaderrun/copyright",
        "./usr/share/doc/leaderrun/changelog.gz",
    ] {
        assert!(
            listing.lines().any(|line| line.ends_with(path)),
            "the package lacks {path}:\n{listing}"
        );
    }
    let version = output(
        Command::new("dpkg-deb")
            .args(["--field"])
            .arg(&deb)
            .arg("Version"),
    );
    assert_eq!(version.trim(), env!("CARGO_PKG_VERSION"));

    // Installed, and found by cron's PATH.
    let installed =
        output(Command::new("dpkg-query").args(["-W", "-f=${Version} ${Status}", "leaderrun"]));
    assert_eq!(
        installed,
        format!("{} install ok installed", env!("CARGO_PKG_VERSION"))
    );
    let found = output(
        Command::new("/bin/sh")
            .args(["-c", "command -v leaderrun && leaderrun --version"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin"),
    );
    let installed_version = format!(
        "/usr/bin/leaderrun\nleaderrun {} (commit ",
        env!("CARGO_PKG_VERSION")
    );
    assert!(found.starts_with(&installed_version), "{found:?}");
    let copyright = std::fs::read_to_string("/usr/share/doc/leaderrun/copyright").unwrap();
    assert!(copyright.contains("License: MIT") && copyright.contains("License: Apache-2.0"));
}

/// A crontab as README gives it: its variable lines and its jobs.
struct Crontab {
    variables: Vec<(String, String)>,
    jobs: Vec<String>,
}

fn crontab(block: &str) -> Crontab {
    let mut crontab = Crontab {
        variables: Vec::new(),
        jobs: Vec::new(),
    };
    for line in block.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match line.split_once('=') {
            Some((name, value)) if fields.len() == 1 => crontab
                .variables
                .push((name.to_string(), value.to_string())),
            // Five time fields, then the command, which cron gives to sh.
            _ => crontab.jobs.push(fields[5..].join(" ")),
        }
    }
    crontab
}

/// The job README names, played by a script that logs each run, and holds
/// the lead while `hold` exists.
struct Job {
    dir: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("nightly-batch");
        let text = format!(
            "#!/bin/sh\necho \"$LEADERRUN_TOKEN\" >> '{log}'\nwhile [ -e '{hold}' ]; do sleep 0.1; done\n",
            log = dir.path().join("log").display(),
            hold = dir.path().join("hold").display(),
        );
        std::fs::write(&script, text).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        Job { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("nightly-batch")
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("log"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    fn hold(&self) -> PathBuf {
        self.dir.path().join("hold")
    }
}

/// A crontab job line as cron runs it: `/bin/sh -c LINE` with PATH, HOME,
/// SHELL and LOGNAME, the crontab's variables, and nothing else.
fn cron_command(line: &str, crontab: &Crontab, etcd: &Etcd, job: &Job) -> Command {
    let line = line.replace(
        "/usr/local/bin/nightly-batch",
        &job.path().display().to_string(),
    );
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(line)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", job.dir.path())
        .env("SHELL", "/bin/sh")
        .env("LOGNAME", "root")
        .stdin(Stdio::null());
    for (name, value) in &crontab.variables {
        // The one substitution: the crontab's etcd is the test's.
        let value = if name == "LEADERRUN_ENDPOINTS" {
            etcd.endpoint()
        } else {
            value.clone()
        };
        command.env(name, value);
    }
    command
}

/// cron mails whatever a job prints: a quiet job prints nothing.
fn assert_quiet(done: &Finished, what: &str) {
    assert!(
        done.stdout.is_empty() && done.stderr.is_empty(),
        "{what} printed: {}{}",
        done.stdout,
        done.stderr
    );
}

#[test]
fn readmes_crontab_lines_run_under_crons_environment() {
    package();
    let etcd = Etcd::start();
    let crontab = crontab(&readme_block("crontab"));
    assert!(
        crontab
            .variables
            .iter()
            .any(|(name, _)| name == "LEADERRUN_ENDPOINTS"),
        "README's crontab names etcd"
    );
    let [plain, lenient] = crontab.jobs.as_slice() else {
        panic!("two crontab lines: {:?}", crontab.jobs);
    };
    let job = Job::new();
    let limit = Duration::from_secs(60);

    // Nobody leads: the line runs the job, quietly.
    let done = run_within(&mut cron_command(plain, &crontab, &etcd, &job), limit);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_quiet(&done, "the leader");
    assert_eq!(job.runs(), 1);

    // Another replica leads: exit 75 with the first line, 0 with the second,
    // and silence from both.
    std::fs::write(job.hold(), "").unwrap();
    let mut leader = cron_command(plain, &crontab, &etcd, &job);
    let mut leader = leader
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    await_condition(limit, "the other replica to run the job", || {
        job.runs() == 2
    });
    let done = run_within(&mut cron_command(plain, &crontab, &etcd, &job), limit);
    assert_eq!(done.code, Some(75), "{}", done.stderr);
    assert_quiet(&done, "a replica that does not lead");
    let done = run_within(&mut cron_command(lenient, &crontab, &etcd, &job), limit);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_quiet(
        &done,
        "a replica that does not lead, --conflict-exit-code 0",
    );
    assert_eq!(job.runs(), 2);
    std::fs::remove_file(job.hold()).unwrap();
    assert_eq!(
        wait_within(&mut leader, limit, "the leader").code(),
        Some(0)
    );

    // --once-per: a late replica in the same window does not run it again.
    let once = crontab_once_per();
    let job = Job::new();
    let done = run_within(&mut cron_command(&once, &crontab, &etcd, &job), limit);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let late = run_within(&mut cron_command(&once, &crontab, &etcd, &job), limit);
    assert_eq!(late.code, Some(75), "{}", late.stderr);
    assert_quiet(&late, "a late replica");
    assert_eq!(job.runs(), 1);
}

/// README's `--once-per` crontab line.
fn crontab_once_per() -> String {
    let block = crontab(&readme_block("crontab once-per"));
    let [line] = block.jobs.as_slice() else {
        panic!("one --once-per line: {:?}", block.jobs);
    };
    assert!(line.contains("--once-per"), "{line}");
    line.clone()
}

#[test]
fn the_installed_man_pages_render() {
    package();
    for page in ["leaderrun", "leaderrun-status", "leaderrun-check"] {
        let path = Path::new("/usr/share/man/man1").join(format!("{page}.1.gz"));
        assert!(path.exists(), "{} is not installed", path.display());
        let text = output(
            Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("gzip -dc '{}' | grep -c '^\\.SH'", path.display())),
        );
        let sections: usize = text.trim().parse().unwrap();
        assert!(sections >= 5, "{page}(1) has {sections} sections");
    }
}
