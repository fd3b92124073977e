//! Replicas in the background, and the jobs they run: jobs that record their
//! runs, write their pid, or check on another process.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leaderrun::events;

use super::await_condition;
use super::etcd::Etcd;
use super::invocation::leaderrun;
use super::invocation::{DRAIN, LIMIT, SOON};
use super::processes::{read_pid, wait_within};

/// A background leaderrun whose stderr is collected; killed on drop.
pub struct Replica {
    pub process: Child,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stderr_closed: std::sync::mpsc::Receiver<()>,
}

impl Replica {
    pub fn spawn(command: &mut Command) -> Replica {
        super::stalls::watch();
        let mut process = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("leaderrun starts");
        // Collected as it comes: a surviving grandchild may hold the pipe
        // open, and must not make the test wait for it.
        let pipe = process.stderr.take().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (closed, stderr_closed) = std::sync::mpsc::channel();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
            let _ = closed.send(());
        });
        Replica {
            process,
            stderr,
            stderr_closed,
        }
    }

    pub fn pid(&self) -> i32 {
        self.process.id() as i32
    }

    /// What it has written to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether this waiter (run with [`DEBUG_JSON`]) has had its look at
    /// the queue and watches the key ahead of it: it logged
    /// [`events::QUEUED`].
    pub fn is_watching(&self) -> bool {
        self.logged(events::QUEUED) > 0
    }

    /// How many `event`s (see [`leaderrun::events`]) it has logged so far;
    /// it must run with [`DEBUG_JSON`].
    pub fn logged(&self, event: &str) -> usize {
        events_so_far(&self.stderr_so_far())
            .iter()
            .filter(|fields| fields["event"] == event)
            .count()
    }

    /// Waits until this waiter watches the key ahead ([`Self::is_watching`]).
    pub fn await_watching(&self, limit: Duration) {
        await_condition(limit, "a waiter to watch", || self.is_watching());
    }

    /// The pid its job wrote to `path`, within `limit`. Panics at once,
    /// with what it said, if it exits first, and so too after `limit`.
    pub fn job_pid(&mut self, path: &Path, limit: Duration) -> i32 {
        let started = std::time::Instant::now();
        loop {
            let written = std::fs::read_to_string(path).ok();
            if let Some(pid) = written.and_then(|text| text.trim().parse().ok()) {
                return pid;
            }
            if let Some(status) = self.process.try_wait().unwrap() {
                let _ = self.stderr_closed.recv_timeout(DRAIN);
                panic!(
                    "the replica exited ({status}) before its job wrote {}: {}",
                    path.display(),
                    self.stderr_so_far()
                );
            }
            assert!(
                !super::stalls::past(started, limit),
                "timed out after {limit:?} waiting for a pid in {}: {}",
                path.display(),
                self.stderr_so_far()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until it has exited, within `limit` (panics otherwise); its
    /// status is kept for [`Self::finish`].
    pub fn await_exit(&mut self, limit: Duration) {
        let process = &mut self.process;
        await_condition(limit, "the replica to exit", || {
            process.try_wait().unwrap().is_some()
        });
    }

    /// Waits for exit within `limit`; returns the code and stderr.
    pub fn finish(&mut self, limit: Duration) -> (Option<i32>, String) {
        let status = wait_within(&mut self.process, limit, "the replica");
        let _ = self.stderr_closed.recv_timeout(DRAIN);
        let stderr = self.stderr.lock().unwrap().clone();
        (status.code(), stderr)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        // A test that failed says what each of its replicas said: where a
        // wait ran out, that is where the time went.
        if std::thread::panicking() {
            eprintln!(
                "replica {} had said, when the test failed:\n{}",
                self.process.id(),
                self.stderr_so_far()
            );
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// One run of a job, as recorded by [`recording_job`]: token, start and end
/// in nanoseconds of CLOCK_MONOTONIC-ish wall time on this machine.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    pub token: i64,
    pub start: u128,
    pub end: u128,
}

/// A shell command that runs until `flag` exists (`sh -c` it): a job the
/// test ends when it chooses.
pub fn until_exists(flag: &Path) -> String {
    format!("while [ ! -e '{}' ]; do sleep 0.05; done", flag.display())
}

/// A shell job that appends "start TOKEN NS" and "end TOKEN NS" lines to
/// `log`, sleeping `seconds` between.
pub fn recording_job(log: &Path, seconds: &str) -> Vec<String> {
    let script = format!(
        "echo \"start $LEADERRUN_TOKEN $(date +%s%N)\" >> '{log}'; sleep {seconds}; echo \"end $LEADERRUN_TOKEN $(date +%s%N)\" >> '{log}'",
        log = log.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

/// A job that writes its pid, then becomes `sleep`.
pub fn pid_job(pidfile: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo $$ > '{}'; exec sleep 1000", pidfile.display()),
    ]
}

/// A leader of `name` running [`pid_job`] (its pid file in `dir`), once its
/// command runs: the replica, and the command's pid.
pub fn pid_job_leader(etcd: &Etcd, name: &str, dir: &Path) -> (Replica, i32) {
    let pidfile = dir.join("leader");
    let leader = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(["--name", name, "--"])
            .args(pid_job(&pidfile)),
    );
    let pid = read_pid(&pidfile, SOON);
    (leader, pid)
}

/// A job that records whether process `other` still ran when it started.
pub fn checking_job(other: i32, report: &Path) -> Vec<String> {
    let script = format!(
        "state=$(cut -d' ' -f3 /proc/{other}/stat 2>/dev/null); echo \"${{state:-gone}} $LEADERRUN_TOKEN\" > '{}'; exec sleep 1000",
        report.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

pub fn read_report(report: &Path, limit: Duration) -> (String, i64) {
    let mut fields = Vec::new();
    await_condition(limit, "the new leader's report", || {
        fields = std::fs::read_to_string(report)
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect();
        fields.len() == 2
    });
    (fields[0].clone(), fields[1].parse().unwrap())
}

/// Reads the intervals of a recording job's log: complete ones only.
pub fn intervals(log: &Path) -> Vec<Interval> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut starts = std::collections::HashMap::new();
    let mut done = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() != 3 {
            continue;
        }
        let token: i64 = parts[1].parse().unwrap();
        let at: u128 = parts[2].parse().unwrap();
        match parts[0] {
            "start" => {
                starts.insert(token, at);
            }
            "end" => {
                let start = starts.remove(&token).expect("an end after its start");
                done.push(Interval {
                    token,
                    start,
                    end: at,
                });
            }
            _ => {}
        }
    }
    done.sort_by_key(|interval| interval.start);
    done
}

/// The options that make a run log its debug events as JSON lines, to be
/// read by their `event` field (see [`leaderrun::events`]) and not by
/// their wording.
pub const DEBUG_JSON: [&str; 3] = ["-vv", "--log-format", "json"];

/// The fields of each event that a run with [`DEBUG_JSON`] logged, in
/// order (lines without an `event` field left out). Panics if `stderr`
/// has no JSON line at all: a finished run without [`DEBUG_JSON`] would
/// otherwise seem to have logged nothing.
pub fn logged_events(stderr: &str) -> Vec<serde_json::Value> {
    let events = events_so_far(stderr);
    assert!(
        stderr.lines().any(is_json_log_line),
        "no JSON log line (run it with DEBUG_JSON): {stderr}"
    );
    events
}

/// How many `event`s a finished run with [`DEBUG_JSON`] logged on
/// `stderr` (see [`logged_events`]).
pub fn count_events(stderr: &str, event: &str) -> usize {
    logged_events(stderr)
        .iter()
        .filter(|fields| fields["event"] == event)
        .count()
}

/// [`logged_events`] of a run still going, which may have logged nothing
/// yet.
fn events_so_far(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|object| object["fields"].clone())
        .filter(|fields| fields["event"].is_string())
        .collect()
}

fn is_json_log_line(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|object| object["level"].is_string())
}

/// A job that ignores SIGTERM and writes its pid to `pidfile`: only
/// SIGKILL ends it, which the kill schedule sends the margin before the
/// lease's local deadline.
pub fn stubborn_job(pidfile: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "trap '' TERM; echo $$ > '{}'; exec sleep 1000",
            pidfile.display()
        ),
    ]
}

/// Waits until election `name` has no candidate left, within [`LIMIT`]:
/// every run resigned as it ended or, where etcd did not answer a
/// resignation within the half second the way out gives it (on a loaded
/// machine, beside two busy loops), its key went with its lease, whose
/// TTL is under LIMIT. A key that stays (one on no lease, or on a lease
/// something still renews) fails it, with `what`.
pub fn await_resigned(etcd: &Etcd, name: &str, what: &str) {
    await_condition(LIMIT, what, || etcd.candidates(name).is_empty());
}

/// Whether a run's way out (with `-v`) said etcd did not answer within
/// its bound, the half second it gives etcd: what it holds then goes with
/// its lease, a TTL later (on a loaded machine, beside two busy loops).
pub fn way_out_unanswered(stderr: &str) -> bool {
    stderr.contains("no answer within") || stderr.contains("not done within")
}

/// The margin the job must be dead by before the lease's local deadline,
/// as docs/operating.md ("Choosing a TTL") states it: a tenth of the TTL,
/// at least 200 ms and at most 1 s.
pub fn margin(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_millis(200), Duration::from_secs(1))
}

impl Replica {
    /// Waits for a renewal acknowledged after every one this replica (run
    /// with [`DEBUG_JSON`]) has logged so far ([`events::RENEWED`]), and
    /// returns the latest its lease's local deadline can be: the renewal's
    /// send (`sent_ago_ms` before its line, which came before now) plus
    /// the TTL granted. A fault struck at once then leaves that deadline
    /// where it is, known to within the time the line took to reach us.
    pub fn renewal_acknowledged(&self, limit: Duration) -> Instant {
        self.renewal_answered(limit).0
    }

    /// [`Replica::renewal_acknowledged`], with how long after its send the
    /// acknowledgement came (as leaderrun measured it).
    pub fn renewal_answered(&self, limit: Duration) -> (Instant, Duration) {
        let renewals = |stderr: &str| -> Vec<serde_json::Value> {
            events_so_far(stderr)
                .into_iter()
                .filter(|fields| fields["event"] == events::RENEWED)
                .collect()
        };
        let before = renewals(&self.stderr_so_far()).len();
        let mut latest = None;
        await_condition(limit, "a renewal acknowledged", || {
            latest = renewals(&self.stderr_so_far()).into_iter().nth(before);
            latest.is_some()
        });
        let seen = Instant::now();
        let latest = latest.expect("seen");
        let sent_ago = Duration::from_millis(latest["sent_ago_ms"].as_u64().expect("sent_ago_ms"));
        let granted = Duration::from_secs(latest["granted"].as_u64().expect("granted"));
        (seen - sent_ago + granted, sent_ago)
    }
}

/// The documented bound on a loss (docs/guarantees.md, "Losing
/// leadership"): the job, here one that ignores SIGTERM, is dead the margin
/// before the lease's local deadline (`deadline`, at the latest, from
/// [`Replica::renewal_acknowledged`]), when SIGKILL is due; seen killed
/// ([`super::processes::killed`]) at `died`, it may have taken half the
/// margin again to be delivered and seen. Not merely "within the TTL": a stop due at the deadline itself
/// fails this.
/// The machine's stalls since the renewal are taken out of `died` (see
/// [`super::stalls`]).
pub fn assert_killed_a_margin_before(deadline: Instant, died: Instant, ttl: Duration) {
    let died = died - super::stalls::stalled_between(deadline - ttl, died);
    let bound = deadline - margin(ttl) / 2;
    let before = |at: Instant| {
        if at <= deadline {
            format!("{:?} before", deadline - at)
        } else {
            format!("{:?} after", at - deadline)
        }
    };
    eprintln!(
        "the job died {} the lease's local deadline (margin {:?}, TTL {ttl:?})",
        before(died),
        margin(ttl)
    );
    assert!(
        died <= bound,
        "the job died {} the lease's local deadline: SIGKILL is due {:?} before it",
        before(died),
        margin(ttl)
    );
}

/// Waits for every one of `replicas` to exit, each within `limit`: their
/// exit codes, sorted (which replica won a race is not the point).
pub fn finish_all(replicas: &mut [Replica], limit: Duration) -> Vec<Option<i32>> {
    let mut codes: Vec<Option<i32>> = replicas
        .iter_mut()
        .map(|replica| replica.finish(limit).0)
        .collect();
    codes.sort();
    codes
}
