//! What the simulated world knows for sure, beside what the replicas
//! believe: every job and when it lived, every lease's expiry on etcd's
//! clock, and the properties held against them as they happen.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::process::Job;
use super::store::{field_of, News, RecordJudged};

/// The rules a fleet's runs share, which the properties are judged by.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub max_running: usize,
    pub once_per: Option<Duration>,
    /// --once-per-attempts: how many marked starts a window may hold.
    pub once_per_attempts: u32,
    /// How much faster etcd's clock runs: a window is a lease of its
    /// length, so it lasts `once_per / etcd_rate` of the world's time.
    pub etcd_rate: f64,
    /// The lease's TTL: a window is claimed before its run starts, within
    /// the lease's life, so starts may come closer than windows by that.
    pub ttl: Duration,
}

#[derive(Debug, Default)]
struct Book {
    jobs: BTreeMap<u32, (Arc<Mutex<Job>>, Arc<Notify>)>,
    next_group: u32,
    /// Each start: when, by which replica, with which token.
    pub starts: Vec<(Instant, usize, i64)>,
    pub violations: Vec<String>,
    /// When the last job known to have died died.
    last_gone: Option<Instant>,
    /// Every job by its token, for what records say of it.
    by_token: BTreeMap<i64, Arc<Mutex<Job>>>,
    /// The tokens of runs whose start the store holds: their attempt
    /// marked started or ended in the `--once-per` marker, or a start
    /// record written.
    marked: BTreeSet<i64>,
    /// The tokens of runs the marker says succeeded.
    succeeded: BTreeSet<i64>,
    /// When each `--once-per` window was opened (its marker created).
    openings: Vec<Instant>,
    /// Replicas stopped (SIGSTOP) until then.
    paused: BTreeMap<usize, Instant>,
    /// How many times etcd's answer that a lease is gone reached the
    /// replica that used it, by lease.
    told_gone: BTreeMap<i64, u32>,
}

/// How many times a lease's user may be told it is gone: once for the
/// request that finds it so, once more for one sent beside it. A third
/// is a run that goes on with a lease etcd let go of.
const TOLD_GONE: u32 = 3;

/// The world's ledger, shared by every replica's host and by etcd.
#[derive(Debug, Clone)]
pub struct Ledger {
    book: Arc<Mutex<Book>>,
    rules: Rules,
    epoch: Instant,
}

impl Ledger {
    pub fn new(rules: Rules) -> Ledger {
        Ledger {
            book: Arc::new(Mutex::new(Book {
                next_group: 1000,
                ..Book::default()
            })),
            rules,
            epoch: Instant::now(),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().expect("not poisoned")
    }

    fn at(&self, now: Instant) -> String {
        format!("{:.3}s", (now - self.epoch).as_secs_f64())
    }

    /// A job started: held to `--max-running` (the jobs alive now, on the
    /// world's clock) and to `--once-per` (one start a window).
    pub fn spawned(&self, mut job: Job, lease_held: bool) -> (u32, Arc<Mutex<Job>>, Arc<Notify>) {
        let now = Instant::now();
        let at = self.at(now);
        let mut book = self.book();
        if !lease_held {
            let line = format!(
                "at {at}: replica {} started a job (token {}) on lease {:x}, which etcd no longer held",
                job.replica, job.token, job.lease
            );
            book.violations.push(line);
        }
        // A job that is dead and no longer anyone's is forgotten.
        let mut last_gone = book.last_gone;
        book.jobs.retain(|_, (job, _)| {
            let held = Arc::strong_count(job) > 1;
            let mut job = job.lock().expect("not poisoned");
            job.settle(now);
            let alive = job.alive(now);
            if !held && !alive {
                last_gone = last_gone.max(job.gone_at);
            }
            held || alive
        });
        book.last_gone = last_gone;
        let running = book
            .jobs
            .values()
            .filter(|(other, _)| {
                let other = other.lock().expect("not poisoned");
                other.alive(now) && !other.overslept
            })
            .count();
        if running >= self.rules.max_running {
            let line = format!(
                "at {at}: replica {} started a job (token {}) while {running} ran, with --max-running {}",
                job.replica, job.token, self.rules.max_running
            );
            book.violations.push(line);
        }
        self.judge_order(&mut book, &job, now);
        book.next_group += 1;
        let group = book.next_group;
        job.group = group;
        book.starts.push((now, job.replica, job.token));
        let token = job.token;
        let job = Arc::new(Mutex::new(job));
        book.by_token.insert(token, job.clone());
        let changed = Arc::new(Notify::new());
        book.jobs.insert(group, (job.clone(), changed.clone()));
        (group, job, changed)
    }

    /// A start, held to the tokens' order (one runner) and to the window.
    fn judge_order(&self, book: &mut Book, job: &Job, now: Instant) {
        let at = self.at(now);
        if let Some((_, replica, token)) =
            book.starts.last().filter(|_| self.rules.max_running == 1)
        {
            if job.token <= *token {
                let line = format!(
                    "at {at}: replica {} started with token {}, after replica {replica}'s start with token {token}",
                    job.replica, job.token
                );
                book.violations.push(line);
            }
        }
        if let Some(window) = self.rules.once_per {
            self.judge_window(book, job, now, window);
        }
    }

    /// A start held to the `--once-per` window: fewer starts than the
    /// window allows before it in its window, none of them a recorded
    /// success. A window begins as its marker is created and lasts its
    /// length on etcd's clock, less a TTL (a run's claim and start are
    /// apart by less), however often its marker is written anew. Only starts the store holds count
    /// (`Book::marked`): one whose leaderrun was killed before it could
    /// say so leaves the window open, as leaderrun promises.
    fn judge_window(&self, book: &mut Book, job: &Job, now: Instant, window: Duration) {
        let at = self.at(now);
        let apart = window
            .div_f64(self.rules.etcd_rate)
            .saturating_sub(self.rules.ttl);
        let marked: Vec<(Instant, usize, i64)> = book
            .starts
            .iter()
            .filter(|(_, _, token)| book.marked.contains(token))
            .copied()
            .collect();
        // The window in force: a marker created anew opens another only
        // once the last one's length is over, or if nothing started in it
        // (a claim whose command never started gave it back). Created anew
        // over a window a command started in, it is still that window:
        // the one a run that gave its window back after its start opened.
        let mut opened: Option<Instant> = None;
        for opening in book.openings.iter().filter(|opening| **opening <= now) {
            let started_in = |since: Instant| {
                marked
                    .iter()
                    .any(|(when, _, _)| *when >= since && when < opening)
            };
            match opened {
                Some(since) if opening.duration_since(since) < apart && started_in(since) => {}
                _ => opened = Some(*opening),
            }
        }
        let Some(opened) = opened.filter(|opened| now.duration_since(*opened) < apart) else {
            return;
        };
        let within: Vec<&(Instant, usize, i64)> = marked
            .iter()
            .filter(|(when, _, _)| *when >= opened)
            .collect();
        let allowed = self.rules.once_per_attempts.max(1) as usize;
        if let Some((last, replica, token)) = within.last().filter(|_| within.len() >= allowed) {
            let line = format!(
                "at {at}: replica {} started (token {}) {:?} after replica {replica}'s start (token {token}), inside --once-per {window:?}, the window's start number {} of {allowed} allowed",
                job.replica, job.token, now.duration_since(*last), within.len() + 1
            );
            book.violations.push(line);
        }
        if let Some((_, replica, token)) = within
            .iter()
            .find(|(_, _, token)| book.succeeded.contains(token))
        {
            let line = format!(
                "at {at}: replica {} started (token {}) inside --once-per {window:?}, after replica {replica}'s run (token {token}) succeeded in it",
                job.replica, job.token
            );
            book.violations.push(line);
        }
    }

    /// etcd let a lease expire: no job of it may be alive.
    fn lease_expired(&self, lease: i64) {
        self.none_alive_on(lease, &format!("lease {lease:x} expired on etcd's clock"));
    }

    /// A key on `lease` was deleted (its run resigned, gave it up, or the
    /// lease went): no job of that lease may still be alive, or the next
    /// in line could start beside it.
    fn key_released(&self, lease: i64) {
        self.none_alive_on(lease, &format!("the key of lease {lease:x} was deleted"));
    }

    /// `what` happened to `lease`: each job of it still alive is a
    /// violation.
    fn none_alive_on(&self, lease: i64, what: &str) {
        let now = Instant::now();
        let at = self.at(now);
        let mut book = self.book();
        let alive: Vec<String> = book
            .jobs
            .values()
            .filter_map(|(job, _)| {
                let mut job = job.lock().expect("not poisoned");
                job.settle(now);
                (job.lease == lease && job.alive(now) && !job.overslept).then(|| {
                    format!(
                        "at {at}: {what} while replica {}'s job (token {}, started {}) was alive",
                        job.replica,
                        job.token,
                        self.at(job.started)
                    )
                })
            })
            .collect();
        book.violations.extend(alive);
    }

    /// A record was written: last-finished never goes back to a run
    /// whose key went before the replaced one's, nor to a lost run over
    /// one written after the lost run's win (its job ended at its loss,
    /// before that run's, however late it reached etcd); a success
    /// recorded is a job that exited 0.
    fn record_written(&self, record: RecordJudged) {
        let RecordJudged {
            key,
            value,
            written,
            over,
            over_written_at,
        } = record;
        let at = self.at(Instant::now());
        let which = String::from_utf8_lossy(&key).into_owned();
        let mut book = self.book();
        let proven_at = field_of(&value, "proven_at").and_then(|at| at.as_i64());
        if let (Some(proven_at), Some(over_at)) = (proven_at, over_written_at) {
            let lost = outcome_of(&value).as_deref() == Some("lost");
            if lost && over_at > proven_at && which.ends_with(".last-finished") {
                book.violations.push(format!(
                    "at {at}: {which} went to a lost run (token {:?}, proven at revision {proven_at}) over a record written at {over_at}, after its win",
                    written.map(|(token, _)| token)
                ));
            }
        }
        if let (Some((token, Some(ended))), Some((replaced, Some(replaced_ended)))) =
            (written, over)
        {
            if token != replaced && replaced_ended > ended && which.ends_with(".last-finished") {
                book.violations.push(format!(
                    "at {at}: {which} went back from token {replaced}'s run (its key deleted at revision {replaced_ended}) to token {token}'s (deleted at {ended})"
                ));
            }
        }
        let Some((token, _)) = written else { return };
        if outcome_of(&value).as_deref() != Some("succeeded") {
            return;
        }
        let now = Instant::now();
        let exited = book.by_token.get(&token).map(|job| {
            let mut job = job.lock().expect("not poisoned");
            job.settle(now);
            job.status.and_then(|status| status.code())
        });
        if exited != Some(Some(0)) {
            book.violations.push(format!(
                "at {at}: {which} says token {token}'s run succeeded, but its command {}",
                match exited {
                    None => "never started".to_string(),
                    Some(None) => "did not exit 0 (a signal, or still running)".to_string(),
                    Some(Some(code)) => format!("exited {code}"),
                }
            ));
        }
    }

    /// What etcd's store had to tell since the world last asked, each
    /// held to its property.
    pub fn hear(&self, news: News) {
        let News {
            expired,
            released,
            records,
            findings,
            window_marked,
            window_succeeded,
            windows_opened,
        } = news;
        {
            let mut book = self.book();
            book.marked.extend(window_marked);
            book.succeeded.extend(window_succeeded);
            if windows_opened > 0 {
                book.openings.push(Instant::now());
            }
        }
        if !findings.is_empty() {
            self.book().violations.extend(findings);
        }
        for lease in expired {
            self.lease_expired(lease);
        }
        for lease in released {
            self.key_released(lease);
        }
        for record in records {
            self.record_written(record);
        }
    }

    /// The leaderruns whose jobs are alive now.
    pub fn leading(&self) -> Vec<u32> {
        self.with_jobs(|_| true)
    }

    /// The leaderruns whose jobs are alive and being stopped now.
    pub fn stopping(&self) -> Vec<u32> {
        self.with_jobs(|job| job.signalled)
    }

    /// The leaderruns whose jobs are alive now and `chosen`.
    fn with_jobs(&self, chosen: impl Fn(&Job) -> bool) -> Vec<u32> {
        let now = Instant::now();
        let book = self.book();
        book.jobs
            .values()
            .filter_map(|(job, _)| {
                let mut job = job.lock().expect("not poisoned");
                job.settle(now);
                (job.alive(now) && chosen(&job)).then_some(job.leaderrun)
            })
            .collect()
    }

    /// The last moment a job was alive: now, if one is.
    pub fn last_alive(&self) -> Option<Instant> {
        let now = Instant::now();
        let book = self.book();
        let mut last = book.last_gone;
        for (job, _) in book.jobs.values() {
            let mut job = job.lock().expect("not poisoned");
            job.settle(now);
            let until = if job.alive(now) {
                Some(now)
            } else {
                job.gone_at
            };
            last = last.max(until);
        }
        last
    }

    /// etcd's answer that `lease` is not found reached the replica that
    /// wrote with it: a run must start again on a new lease, not send
    /// the same write again and again (it would wait for ever, queued
    /// nowhere).
    pub fn told_lease_gone(&self, lease: i64, replica: usize) {
        let at = self.at(Instant::now());
        let mut book = self.book();
        let told = book.told_gone.entry(lease).or_default();
        *told += 1;
        if *told == TOLD_GONE {
            book.violations.push(format!(
                "at {at}: replica {replica} was told {TOLD_GONE} times that lease {lease:x} is gone, and writes with it still"
            ));
        }
    }

    /// A violation the world saw itself.
    pub fn note(&self, line: String) {
        self.book().violations.push(line);
    }

    /// The exit status comes back: the leaderrun of pid `leaderrun` exited
    /// with `code`, which is its command's own when the command exited by
    /// itself (unless leaderrun stopped it, or lost its leadership or ran
    /// past `--timeout` as it exited: then leaderrun's own code, 124 or
    /// 123), and never 0 for a run that started no command.
    pub fn exited(&self, leaderrun: u32, code: i32) {
        use protocol::exit::Exit;
        let now = Instant::now();
        let at = self.at(now);
        let mut book = self.book();
        let job = book.by_token.values().find_map(|job| {
            let mut job = job.lock().expect("not poisoned");
            job.settle(now);
            (job.leaderrun == leaderrun).then(|| (job.status, job.signalled || job.overslept))
        });
        let own = [Exit::LeadershipLost.code(), Exit::TimedOut.code()];
        let line = match job {
            None if code == 0 => {
                format!("at {at}: leaderrun {leaderrun} exited 0, yet started no command")
            }
            Some((Some(status), false)) => match status.code() {
                Some(exited) if exited != code && !own.contains(&code) => format!(
                    "at {at}: leaderrun {leaderrun} exited {code}, yet its command exited {exited} by itself"
                ),
                _ => return,
            },
            _ => return,
        };
        book.violations.push(line);
    }

    /// Replica `replica` is stopped (SIGSTOP: a paused VM, a machine
    /// swapping hard) until `until`: none of its leaderruns' tasks runs
    /// meanwhile (`host::Pausable`), and its jobs run on. A job alive now
    /// is the documented exception: nothing can stop it before its lease
    /// expires, so it is held to no property of exclusion.
    pub fn pause(&self, replica: usize, until: Instant) {
        let now = Instant::now();
        let mut book = self.book();
        let paused = book.paused.entry(replica).or_insert(until);
        *paused = (*paused).max(until);
        for (job, _) in book.jobs.values() {
            let mut job = job.lock().expect("not poisoned");
            if job.replica == replica && job.alive(now) {
                job.overslept = true;
            }
        }
    }

    /// Until when replica `replica` is stopped, if it was.
    pub fn paused_until(&self, replica: usize) -> Option<Instant> {
        self.book().paused.get(&replica).copied()
    }

    /// A live leaderrun let go of its job while it was alive: the kill
    /// sequence never saw it gone, and only KillOnDrop (the last line, for
    /// a run that ends by a path nobody planned) stopped it. On every
    /// planned way out the job is seen gone first.
    pub fn let_go_alive(&self, replica: usize, token: i64) {
        let at = self.at(Instant::now());
        let line = format!(
            "at {at}: replica {}'s run let go of its job (token {}) alive: it was killed by KillOnDrop, not by the kill sequence",
            replica, token
        );
        self.book().violations.push(line);
    }

    pub fn violations(&self) -> Vec<String> {
        self.book().violations.clone()
    }

    pub fn starts(&self) -> Vec<(Instant, usize, i64)> {
        self.book().starts.clone()
    }
}

/// The outcome a record's value names.
fn outcome_of(value: &[u8]) -> Option<String> {
    Some(field_of(value, "outcome")?.as_str()?.to_string())
}
