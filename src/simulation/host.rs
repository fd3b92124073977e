//! The simulated host of one replica: its command's job as simulated
//! processes, the guardian, the signals sent to leaderrun, and its pid.
//! `crate::host` gives the run these in the library's tests, with the
//! same names and calls as the real ones (`child`, `signals`), so the run
//! is the production code.
//!
//! A job is described by its command's words (the world writes them from
//! the seed): `sim-job RUN_MS CODE [term-ignored] [leaves=MS] [dies=MS]
//! [spawn-fails]`. It exits with CODE after RUN_MS unless a signal ends it
//! first; with `term-ignored` only SIGKILL does; with `leaves=MS` its
//! descendants outlive it by MS; with `dies=MS` SIGKILL takes MS to end
//! it (uninterruptible sleep).

use std::ffi::OsString;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use super::ledger::Ledger;
use super::process::Job;
use crate::child::env;
use crate::child::job::JobGone;
use crate::child::ChildEvent;

tokio::task_local! {
    /// The replica whose run this task is.
    pub static REPLICA: Arc<Replica>;
}

/// What one run of leaderrun on a replica reaches: the ledger of every
/// job, its signals, and whether it was killed by SIGKILL (then nothing of
/// it runs any more, no destructor included: the guardian kills its job).
pub struct Replica {
    pub index: usize,
    pub pid: u32,
    pub ledger: Ledger,
    pub signals: Mutex<Option<mpsc::UnboundedReceiver<protocol::signal::Signal>>>,
    pub killed: std::sync::atomic::AtomicBool,
    /// How long the guardian takes to kill the job once leaderrun is gone.
    pub guardian_delay: Duration,
    /// The tasks the run started beside itself ([`spawn`]).
    pub tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    /// A run without --wait, fired in a calm world, tries once: it starts
    /// its command by then or not at all.
    pub starts_by: Option<Instant>,
}

impl Replica {
    fn paused_until(&self) -> Option<Instant> {
        self.ledger.paused_until(self.index)
    }
}

/// One of a replica's tasks (its run, or one the run spawned), held still
/// while the replica is stopped: polled then, it waits out the pause
/// first. What woke it meanwhile is still there when it is polled again,
/// as a stopped process finds its timers due and its sockets full.
pub struct Pausable<F> {
    replica: Arc<Replica>,
    task: Pin<Box<F>>,
    resume: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<F: Future> Pausable<F> {
    pub fn new(replica: Arc<Replica>, task: F) -> Pausable<F> {
        Pausable {
            replica,
            task: Box::pin(task),
            resume: None,
        }
    }
}

impl<F: Future> Future for Pausable<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if let Some(until) = self.replica.paused_until() {
            if until > Instant::now() {
                let resume = self
                    .resume
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                resume.as_mut().reset(until);
                if resume.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
        }
        self.resume = None;
        self.task.as_mut().poll(cx)
    }
}

fn replica() -> Arc<Replica> {
    REPLICA
        .try_with(Arc::clone)
        .expect("a simulated host is reached from a replica's own task")
}

/// The pid of this leaderrun.
pub fn pid() -> u32 {
    REPLICA.try_with(|replica| replica.pid).unwrap_or(1)
}

/// The words of a simulated command.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    pub runs: Duration,
    pub code: i32,
    pub term_ignored: bool,
    pub leaves: Duration,
    pub dies_slowly: Duration,
    pub spawn_fails: bool,
}

impl Behaviour {
    pub fn words(&self) -> Vec<OsString> {
        let mut words = vec![
            "sim-job".into(),
            self.runs.as_millis().to_string().into(),
            self.code.to_string().into(),
        ];
        if self.term_ignored {
            words.push("term-ignored".into());
        }
        if !self.leaves.is_zero() {
            words.push(format!("leaves={}", self.leaves.as_millis()).into());
        }
        if !self.dies_slowly.is_zero() {
            words.push(format!("dies={}", self.dies_slowly.as_millis()).into());
        }
        if self.spawn_fails {
            words.push("spawn-fails".into());
        }
        words
    }

    fn read(words: &[OsString]) -> Behaviour {
        let word = |index: usize| {
            words
                .get(index)
                .and_then(|word| word.to_str())
                .unwrap_or("")
        };
        let mut behaviour = Behaviour {
            runs: Duration::from_millis(word(1).parse().unwrap_or(0)),
            code: word(2).parse().unwrap_or(0),
            ..Behaviour::default()
        };
        for word in words.iter().skip(3).filter_map(|word| word.to_str()) {
            match word.split_once('=') {
                Some(("leaves", ms)) => {
                    behaviour.leaves = Duration::from_millis(ms.parse().unwrap_or(0));
                }
                Some(("dies", ms)) => {
                    behaviour.dies_slowly = Duration::from_millis(ms.parse().unwrap_or(0));
                }
                _ if word == "term-ignored" => behaviour.term_ignored = true,
                _ if word == "spawn-fails" => behaviour.spawn_fails = true,
                _ => {}
            }
        }
        behaviour
    }
}

/// The guardian, which has nothing to do while leaderrun lives: the job
/// of a leaderrun killed by SIGKILL is killed by its `Child`'s drop (see
/// there), so it holds nothing.
pub struct Guard;

impl Guard {
    pub fn start() -> std::io::Result<Guard> {
        Ok(Guard)
    }

    pub fn check(&self) {}

    pub fn job_gone(&mut self, _gone: JobGone) {}

    pub async fn release(self) {}
}

/// The signals sent to this leaderrun.
pub struct Signals {
    inbox: Option<mpsc::UnboundedReceiver<protocol::signal::Signal>>,
}

impl Signals {
    pub fn install() -> std::io::Result<Signals> {
        let inbox = replica().signals.lock().expect("not poisoned").take();
        Ok(Signals { inbox })
    }

    pub async fn recv(&mut self) -> protocol::signal::Signal {
        match &mut self.inbox {
            Some(inbox) => match inbox.recv().await {
                Some(signal) => signal,
                None => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    }
}

/// The running command and its job, simulated.
pub struct Child {
    pub group: Pid,
    job: Arc<Mutex<Job>>,
    changed: Arc<Notify>,
    replica: Arc<Replica>,
    seen_gone: bool,
}

impl Child {
    pub fn spawn(
        _program: &Path,
        command: &[OsString],
        env: &env::Variables,
        _withheld: &[&str],
        _guardian: &mut Guard,
    ) -> anyhow::Result<Child> {
        let replica = replica();
        let behaviour = Behaviour::read(command);
        if behaviour.spawn_fails {
            return Err(anyhow::anyhow!(crate::child::SpawnError::Spawn {
                program: command[0].clone().into(),
                error: std::io::Error::from_raw_os_error(nix::libc::ENOMEM),
            }));
        }
        let var = |name: &str| {
            env.iter()
                .find(|(key, _)| *key == name)
                .and_then(|(_, value)| value.to_str())
                .unwrap_or("")
                .to_string()
        };
        let now = Instant::now();
        if replica.starts_by.is_some_and(|by| now > by) {
            replica.ledger.note(format!(
                "replica {}'s leaderrun (pid {}), without --wait, started its command late: it waited",
                replica.index, replica.pid
            ));
        }
        let job = Job {
            group: 0,
            replica: replica.index,
            leaderrun: replica.pid,
            lease: i64::from_str_radix(&var("LEADERRUN_LEASE"), 16).unwrap_or(0),
            token: var("LEADERRUN_TOKEN").parse().unwrap_or(0),
            exits_at: now + behaviour.runs,
            code: behaviour.code,
            term_ignored: behaviour.term_ignored,
            leaves: behaviour.leaves,
            dies_slowly: behaviour.dies_slowly,
            ended_by: None,
            status: None,
            gone_at: None,
            started: now,
            overslept: false,
            signalled: false,
        };
        // Judged before the ledger is: etcd's expiry may tell the ledger.
        let lease_held = super::etcd().is_none_or(|etcd| etcd.holds_lease(job.lease));
        let (group, job, changed) = replica.ledger.spawned(job, lease_held);
        Ok(Child {
            group: Pid::from_raw(group as i32),
            job,
            changed,
            replica,
            seen_gone: false,
        })
    }

    fn with<T>(&self, look: impl FnOnce(&mut Job, Instant) -> T) -> T {
        let now = Instant::now();
        let mut job = self.job.lock().expect("not poisoned");
        job.settle(now);
        look(&mut job, now)
    }

    pub async fn event(&mut self) -> ChildEvent {
        loop {
            let (status, exits_at) = self.with(|job, _| (job.status, job.exits_at));
            if let Some(status) = status {
                return ChildEvent::Exited(Ok(status));
            }
            let changed = self.changed.notified();
            tokio::select! {
                biased;
                () = changed => {}
                () = tokio::time::sleep_until(exits_at) => {}
            }
        }
    }

    pub fn follow_stop(&mut self, _signal: Signal, _may_continue: impl FnOnce() -> bool) {}

    pub fn signal_job(&self, signal: Signal) {
        let first_stop = self.with(|job, now| {
            let before = job.signalled;
            job.signal(signal, now);
            !before && job.signalled && signal != Signal::SIGKILL
        });
        self.changed.notify_waiters();
        // The kill sequence begun: at times leaderrun is stopped right
        // after (`Network::stops_stopper`).
        let stopped = first_stop
            .then(super::network)
            .flatten()
            .and_then(|network| network.stops_stopper());
        if let Some(length) = stopped {
            let until = Instant::now() + length;
            self.replica.ledger.pause(self.replica.index, until);
        }
    }

    pub async fn wait_job_gone(&mut self, until: crate::clock::Instant) -> bool {
        loop {
            let (alive, wake) = self.with(|job, now| {
                let wake = job.gone_at.unwrap_or(job.exits_at).max(now);
                (job.alive(now), wake)
            });
            if !alive {
                self.seen_gone = true;
                return true;
            }
            let left = crate::clock::Now::remaining(until);
            if left.is_zero() {
                return false;
            }
            let changed = self.changed.notified();
            tokio::select! {
                biased;
                () = changed => {}
                () = tokio::time::sleep_until(wake.min(Instant::now() + left)) => {}
            }
        }
    }

    pub fn job_alive(&mut self) -> bool {
        let alive = self.with(|job, now| job.alive(now));
        self.seen_gone |= !alive;
        alive
    }

    /// SIGKILL, then a wait for the job to die within `limit`, as the
    /// real one (which sends it again meanwhile, to what it finds).
    pub async fn kill_job(&mut self, limit: Duration) {
        self.signal_job(Signal::SIGKILL);
        let until = <crate::clock::Instant as crate::clock::Now>::now() + limit;
        self.wait_job_gone(until).await;
    }

    pub fn gone(&self) -> Option<JobGone> {
        self.seen_gone.then(JobGone::simulated)
    }

    pub fn restore_terminal(&mut self) {}
}

impl Drop for Child {
    /// KillOnDrop, as the real child (a job let go of alive is a finding:
    /// [`Ledger::let_go_alive`]); but a leaderrun killed by SIGKILL runs
    /// no destructor: its guardian kills the job a moment later.
    fn drop(&mut self) {
        if self.seen_gone {
            return;
        }
        let killed = self
            .replica
            .killed
            .load(std::sync::atomic::Ordering::SeqCst);
        if !killed {
            let alive = self.with(|job, now| job.alive(now).then_some((job.replica, job.token)));
            if let Some((replica, token)) = alive {
                self.replica.ledger.let_go_alive(replica, token);
                self.signal_job(Signal::SIGKILL);
            }
            return;
        }
        let (job, changed) = (self.job.clone(), self.changed.clone());
        let delay = self.replica.guardian_delay;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            job.lock()
                .expect("not poisoned")
                .signal(Signal::SIGKILL, Instant::now());
            changed.notify_waiters();
        });
    }
}

/// `crate::host::spawn`, simulated: the task is the replica's, so that a
/// SIGKILL of the replica ends it too, a SIGSTOP holds it still, and it
/// reaches the replica's host.
pub fn spawn<F>(task: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    match REPLICA.try_with(Arc::clone) {
        Ok(replica) => {
            let task = Pausable::new(replica.clone(), task);
            let handle = tokio::spawn(REPLICA.scope(replica.clone(), task));
            replica
                .tasks
                .lock()
                .expect("not poisoned")
                .push(handle.abort_handle());
            handle
        }
        Err(_) => tokio::spawn(task),
    }
}
