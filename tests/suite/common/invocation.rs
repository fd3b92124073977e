//! The leaderrun invocation: the binary in a clean environment, run to its
//! end within a limit, and what its output must look like.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::etcd::Etcd;
use super::processes::wait_within;
use super::replicas::{Replica, DEBUG_JSON};

/// How long a run, or a wait for something that should come at once, may
/// take before the test fails: it guards against a hang, and bounds
/// nothing a test measures.
pub const LIMIT: Duration = Duration::from_secs(30);

/// The shorter limit many waits take: for a start, a pid file, a queue.
/// Beside two busy loops and the release build, this machine was seen to
/// stall every test at once for ten seconds (two tests on two etcds of
/// their own timed out at 10 s together): generous, it bounds a hang, not
/// a speed.
pub const SOON: Duration = Duration::from_secs(20);

/// How long the output of a process that exited is waited for: a
/// descendant that kept the pipe open (a daemon) holds the test that long,
/// and what it would still write is not what a test reads.
pub const DRAIN: Duration = Duration::from_secs(10);

/// A leaderrun invocation pointed at `etcd`, built option by option and
/// ended by its command: `lr(&etcd).name("jobs/a").wait().spawn(["true"])`.
pub fn lr(etcd: &Etcd) -> Lr {
    Lr::at(&etcd.endpoint())
}

/// An invocation being built (see [`lr`]).
pub struct Lr {
    command: Command,
}

impl Lr {
    /// Pointed at `endpoints` (a comma-separated list, or one that does
    /// not answer).
    pub fn at(endpoints: &str) -> Lr {
        Lr {
            command: leaderrun(endpoints),
        }
    }

    /// `leaderrun status`: must come first.
    pub fn status(self) -> Lr {
        self.args(["status"])
    }

    /// `--name`: the election.
    pub fn name(self, name: &str) -> Lr {
        self.args(["--name", name])
    }

    /// `--wait`: queue instead of giving up when it is held.
    pub fn wait(self) -> Lr {
        self.args(["--wait"])
    }

    /// `--ttl`, in whole seconds.
    pub fn ttl(self, ttl: Duration) -> Lr {
        self.args(["--ttl", &seconds(ttl)])
    }

    /// `-v`: leaderrun's info lines.
    pub fn verbose(self) -> Lr {
        self.args(["-v"])
    }

    /// Debug lines as JSON, to be read by their event ([`DEBUG_JSON`]).
    /// A waiting run's own lines off: the tests that read the events count
    /// the protocol's requests, and a shown wait reads the line
    /// (`wait_shown.rs` tests those lines).
    pub fn debug_json(self) -> Lr {
        self.args(DEBUG_JSON)
            .env("LEADERRUN_STILL_WAITING_EVERY", "off")
    }

    /// One more variable in leaderrun's environment.
    pub fn env(mut self, name: &str, value: &str) -> Lr {
        self.command.env(name, value);
        self
    }

    /// Any other options, as given.
    pub fn args(mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Lr {
        self.command.args(args);
        self
    }

    /// The command line, `--` and `job` after the options.
    pub fn command(mut self, job: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Command {
        self.command.arg("--").args(job);
        self.command
    }

    /// Runs `job` in the background (see [`Replica`]).
    pub fn spawn(self, job: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Replica {
        Replica::spawn(&mut self.command(job))
    }

    /// Runs it as built, with no command (`status`, or options that must
    /// be refused), to its end within [`LIMIT`].
    pub fn finish(self) -> Finished {
        self.finish_within(LIMIT)
    }

    /// [`Lr::finish`], within `limit`.
    pub fn finish_within(mut self, limit: Duration) -> Finished {
        run_within(&mut self.command, limit)
    }

    /// Runs `job` to its end, within [`LIMIT`].
    pub fn run(self, job: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Finished {
        self.run_within(job, LIMIT)
    }

    /// Runs `job` to its end, within `limit` (see [`run_within`]).
    pub fn run_within(
        self,
        job: impl IntoIterator<Item = impl AsRef<OsStr>>,
        limit: Duration,
    ) -> Finished {
        run_within(&mut self.command(job), limit)
    }
}

/// leaderrun, pointed at `endpoints`, with an environment cleaned of
/// anything the developer's shell might carry.
pub fn leaderrun(endpoints: &str) -> Command {
    leaderrun_at(Path::new(env!("CARGO_BIN_EXE_leaderrun")), endpoints)
}

/// [`leaderrun`], run from another copy of the binary.
pub fn leaderrun_at(binary: &Path, endpoints: &str) -> Command {
    let mut command = Command::new(binary);
    leaderrun_env(&mut command, endpoints);
    command
}

/// Gives `command` (leaderrun, or a shell that runs it) the environment
/// [`leaderrun`] runs in.
pub fn leaderrun_env<'a>(command: &'a mut Command, endpoints: &str) -> &'a mut Command {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        // LEADERRUN_HANDOFF=slow runs the whole suite on the handoff's
        // slow path: kept.
        let kept = key == "LEADERRUN_HANDOFF";
        if (key.starts_with("LEADERRUN_") || key.starts_with("ETCDCTL_")) && !kept {
            command.env_remove(key.as_ref());
        }
    }
    // The machine's own settings file and systemd credentials are not the
    // test's: a debug build reads this path instead of
    // /etc/leaderrun/leaderrun.conf.
    command
        .env(
            "LEADERRUN_TEST_SYSTEM_CONFIG",
            "/nonexistent/leaderrun.conf",
        )
        .env_remove("CREDENTIALS_DIRECTORY");
    command.env("LEADERRUN_ENDPOINTS", endpoints)
}

/// Output of a finished run.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs to completion, killing it (and failing) if it takes over `limit`.
pub fn run_within(command: &mut Command, limit: Duration) -> Finished {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("leaderrun starts");
    // Read on threads that report back over channels: a grandchild that
    // survives (the bug some tests look for) keeps the pipes open, and must
    // not make the test wait for it.
    let collect = |pipe: Box<dyn std::io::Read + Send>| {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = send.send(std::io::read_to_string(pipe).unwrap_or_default());
        });
        receive
    };
    let out = collect(Box::new(child.stdout.take().unwrap()));
    let err = collect(Box::new(child.stderr.take().unwrap()));
    let status = wait_within(&mut child, limit, "leaderrun");
    Finished {
        code: status.code(),
        took: started.elapsed(),
        stdout: out.recv_timeout(DRAIN).unwrap_or_default(),
        stderr: err.recv_timeout(DRAIN).unwrap_or_default(),
    }
}

/// leaderrun's answer to bad input or a refusal: exit 125, one line on
/// stderr, `leaderrun: error: ` and then something that mentions
/// `mentions`, and nothing on stdout (the command did not run). `context`
/// says which case failed.
pub fn assert_one_error_line(done: &Finished, mentions: &str, context: &str) {
    assert_eq!(done.code, Some(125), "{context}: {}", done.stderr);
    assert_eq!(
        done.stderr.lines().count(),
        1,
        "{context}: one line: {}",
        done.stderr
    );
    assert!(
        done.stderr.starts_with("leaderrun: error: "),
        "{context}: {}",
        done.stderr
    );
    assert!(
        done.stderr.contains(mentions),
        "{context}: should mention {mentions}: {}",
        done.stderr
    );
    assert!(
        done.stdout.is_empty(),
        "{context}: the command must not run"
    );
}

/// A whole number of seconds as leaderrun's duration options take it
/// ("8s"), so that a test states a TTL or timeout once, as a Duration.
pub fn seconds(duration: Duration) -> String {
    assert_eq!(duration.subsec_nanos(), 0, "{duration:?}: whole seconds");
    format!("{}s", duration.as_secs())
}

/// leaderrun's own lines on `stderr` (`leaderrun: ...`, written whatever
/// the verbosity), without the logs of -v and -vv: as text, or the
/// message of each JSON line (`--log-format json`).
pub fn own_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(
            |line| match serde_json::from_str::<serde_json::Value>(line) {
                Ok(object) => object["fields"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                Err(_) => line.to_string(),
            },
        )
        .filter(|line| line.starts_with("leaderrun: "))
        .collect()
}
