//! The command's job: everything the command started, whether or not it
//! stayed in the command's process group.
//!
//! Signalling the group alone misses a daemon that the command started with
//! `setsid` (it leaves the group and the session), and counting the group
//! alone counts zombies: `kill(-pgid, 0)` succeeds while any member is a
//! zombie, and an orphan whose shell already exited stays a zombie until its
//! new parent reaps it (in many containers PID 1 reaps slowly, or never).
//!
//! So leaderrun makes itself a child subreaper
//! (`prctl(PR_SET_CHILD_SUBREAPER)`): orphaned descendants are reparented to
//! leaderrun rather than to PID 1. Then the job is exactly the command's
//! group plus every descendant of leaderrun but the guardian, leaderrun can
//! find each of them by walking `/proc`, and it reaps the orphans itself, so
//! a zombie never counts as a live job.
//!
//! Unless `/proc` is not leaderrun's: in a PID namespace without a `/proc`
//! of its own (`unshare --pid` without `--mount-proc`, a container given
//! the host's), `/proc` numbers the processes of another namespace, and a
//! walk of it would take strangers for the job (our pid is someone else's
//! there) and signal their numbers here, where they are other processes
//! again. There, and without `/proc` at all, the job is the command's group
//! alone, as for the guardian.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::{getpid, Pid};

use crate::clock;
use crate::clock::Now;

/// Makes orphaned descendants leaderrun's children (see the module doc).
/// Not inherited across fork, so the command is not one.
pub fn become_subreaper() {
    if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
        tracing::debug!(%err, "cannot become a child subreaper");
    }
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy)]
struct Process {
    pid: i32,
    parent: i32,
    group: i32,
    zombie: bool,
}

/// Whether leaderrun has said that `/proc` is not its own: it says so once.
static FOREIGN_PROC_SAID: AtomicBool = AtomicBool::new(false);

/// Whether `/proc` shows leaderrun's own PID namespace (see the module
/// doc): `/proc/self` names the reader as that namespace numbers it. One
/// `readlink`.
fn proc_is_ours() -> bool {
    let ours = std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse::<i32>().ok())
        == Some(getpid().as_raw());
    if !ours && !FOREIGN_PROC_SAID.swap(true, Ordering::Relaxed) {
        tracing::info!(
            "/proc does not show leaderrun's PID namespace: the command's job is its process group alone"
        );
    }
    ours
}

/// Every process on the machine that could be read; None if `/proc` is not
/// leaderrun's (see the module doc).
fn process_table() -> Option<Vec<Process>> {
    if !proc_is_ours() {
        return None;
    }
    let entries = std::fs::read_dir("/proc").ok()?;
    let table = entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            let pid: i32 = name.to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect();
    Some(table)
}

/// leaderrun's children (live or not yet reaped), from
/// `/proc/self/task/PID/children`: those of its main thread. A child is
/// listed under the thread that forked it or adopted it. leaderrun forks
/// only on its main thread (the runtime runs there), and the kernel gives
/// an orphan to the subreaper's first live thread, which is the main one
/// while leaderrun runs; the only other threads (tokio's, for a name
/// lookup) fork nothing. One open, two reads, one close: this is on the
/// next leader's path, and a walk of `/proc/self/task` was twice the system
/// calls. None if the kernel does not offer the file, or the list fills the
/// buffer (then the caller looks closer).
fn own_children() -> Option<Vec<i32>> {
    use nix::fcntl::{open, OFlag};
    let path = format!("/proc/self/task/{}/children", getpid());
    let file = open(
        path.as_str(),
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()?;
    let mut listed = [0u8; 4096];
    let mut length = 0;
    // To the end (a read of nothing): the kernel hands out whole entries,
    // so a read that stops short of the buffer's end is not the last.
    loop {
        let read = nix::unistd::read(&file, &mut listed[length..]).ok()?;
        if read == 0 {
            break;
        }
        length += read;
        if length == listed.len() {
            return None;
        }
    }
    let listed = std::str::from_utf8(&listed[..length]).ok()?;
    Some(
        listed
            .split_whitespace()
            .filter_map(|pid| pid.parse::<i32>().ok())
            .collect(),
    )
}

/// The fields of a `/proc/PID/stat` line from the third (state) on:
/// `pid (comm) state ppid pgrp ...`, where comm may hold spaces and
/// parentheses, so they are counted from the last ')'.
pub(super) fn stat_fields(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat.rsplit_once(')')?.1.split_whitespace())
}

fn parse_stat(pid: i32, stat: &str) -> Option<Process> {
    let mut fields = stat_fields(stat)?;
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some(Process {
        pid,
        parent,
        group,
        zombie: matches!(state, "Z" | "X"),
    })
}

/// On a panic, before leaderrun exits: SIGKILLs the job that runs, if one
/// does, its group and every descendant that left it, as `Child`'s drop
/// would (a panic skips every drop: the hook exits, and release builds
/// abort). The guardian, armed still, would kill the group alone: the
/// descendants that left it are found only from here, by walking down
/// from leaderrun, their subreaper.
pub fn kill_on_panic(limit: Duration) {
    let group = RUNNING.0.swap(0, Ordering::SeqCst);
    if group == 0 {
        return;
    }
    let spared = Some(RUNNING.1.load(Ordering::SeqCst))
        .filter(|pid| *pid != 0)
        .map(Pid::from_raw);
    let group = Pid::from_raw(group);
    Job::new(group, spared).kill_now(group, limit);
}

/// Proof that the command's job is gone: a look at it found nothing of it
/// alive, or none was ever started. Only this folder makes one, and the
/// guardian is told "done" only with one in hand (see `guard`): every other
/// way out leaves it armed.
#[derive(Debug)]
#[must_use]
pub struct JobGone(());

impl JobGone {
    /// No job was started, or its spawn failed before the exec (the child
    /// made only system calls, then exited and was collected).
    pub(super) fn nothing_started() -> JobGone {
        JobGone(())
    }

    /// A simulated job seen gone (`crate::simulation::host`).
    #[cfg(test)]
    pub(crate) fn simulated() -> JobGone {
        JobGone(())
    }
}

/// The command's job, as seen from leaderrun.
pub struct Job {
    /// The command's process group (its pid).
    group: Pid,
    /// Not part of the job: the guardian, which leaderrun started itself.
    spared: Option<Pid>,
    /// A look found nothing of the job alive: nothing of it can start
    /// anything again.
    gone: bool,
}

/// The job that runs now, for a panic to kill (see [`kill_on_panic`]):
/// its group, and the guardian to spare (0: none). Set while a job lives,
/// cleared once it is seen gone, so that a group id used again by then is
/// never signalled.
static RUNNING: (AtomicI32, AtomicI32) = (AtomicI32::new(0), AtomicI32::new(0));

impl Job {
    pub fn new(group: Pid, spared: Option<Pid>) -> Job {
        RUNNING
            .1
            .store(spared.map_or(0, Pid::as_raw), Ordering::SeqCst);
        RUNNING.0.store(group.as_raw(), Ordering::SeqCst);
        Job {
            group,
            spared,
            gone: false,
        }
    }

    /// The proof, if a look found the job gone.
    pub fn gone(&self) -> Option<JobGone> {
        self.gone.then_some(JobGone(()))
    }

    /// Reaps the orphans leaderrun adopted (see [`Self::reap_orphans`]),
    /// then the job's processes that are alive (zombies do not count):
    /// members of the group and leaderrun's descendants, the guardian
    /// excepted. One walk of `/proc` serves both. An empty list is
    /// remembered: the job is gone.
    pub fn reap_and_list(&mut self, command: Pid) -> Vec<Pid> {
        let live = self.look(command);
        self.gone = live.is_empty();
        if self.gone {
            let _ = RUNNING.0.compare_exchange(
                self.group.as_raw(),
                0,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        live
    }

    fn look(&self, command: Pid) -> Vec<Pid> {
        if self.surely_gone() {
            return Vec::new();
        }
        let Some(table) = process_table() else {
            return self.group_alone(command);
        };
        self.reap(&table, command);
        self.members(&table)
            .into_iter()
            .filter(|process| !process.zombie)
            .map(|process| Pid::from_raw(process.pid))
            .collect()
    }

    /// SIGKILLs the job until nothing of it is left, or `limit`, blocking
    /// the thread: for a job whose owner goes away before it was seen gone
    /// (see `Child`'s `Drop`), where nothing can be awaited. `command` is
    /// the command's pid, whose status its owner collects.
    pub fn kill_now(&mut self, command: Pid, limit: Duration) {
        let until = clock::Instant::now() + limit;
        let mut pause = Duration::from_millis(1);
        loop {
            self.signal(Signal::SIGKILL);
            if self.reap_and_list(command).is_empty() {
                return;
            }
            if until.has_passed() {
                tracing::warn!(group = self.group.as_raw(), "the job outlived SIGKILL");
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Whether the job is gone, judged cheaply: no process of the group is
    /// left (zombies included: `kill(-pgid, 0)` counts them), and leaderrun
    /// has no child but the guardian, so no descendant either (orphans are
    /// reparented to leaderrun, the subreaper). A walk of `/proc` costs about
    /// a millisecond on a busy machine, on the next leader's path; this is
    /// a few system calls. False means "look closer", not "alive".
    fn surely_gone(&self) -> bool {
        if killpg(self.group, None) != Err(nix::errno::Errno::ESRCH) {
            return false;
        }
        let spared = self.spared.map(Pid::as_raw);
        own_children().is_some_and(|children| children.iter().all(|pid| Some(*pid) == spared))
    }

    fn members(&self, table: &[Process]) -> Vec<Process> {
        let me = getpid().as_raw();
        let spared = self.spared.map(Pid::as_raw);
        let mut members: Vec<Process> = Vec::new();
        let mut parents = vec![me];
        // Breadth first down from leaderrun; the table is small, and a
        // process's parent is always found before it.
        while let Some(parent) = parents.pop() {
            for process in table.iter().filter(|process| process.parent == parent) {
                if Some(process.pid) == spared || process.pid == me {
                    continue;
                }
                members.push(*process);
                parents.push(process.pid);
            }
        }
        let group = self.group.as_raw();
        for process in table.iter().filter(|process| process.group == group) {
            if !members.iter().any(|member| member.pid == process.pid) {
                members.push(*process);
            }
        }
        members
    }

    /// Sends `signal` to the group and to every live descendant outside it,
    /// then SIGCONT the same way: a stopped process acts on a signal only
    /// once it runs again (as `timeout(1)` does).
    pub fn signal(&self, signal: Signal) {
        self.send(signal);
        if !matches!(signal, Signal::SIGKILL | Signal::SIGCONT) {
            self.send(Signal::SIGCONT);
        }
    }

    fn send(&self, signal: Signal) {
        match killpg(self.group, signal) {
            Ok(()) => tracing::debug!(group = self.group.as_raw(), ?signal, "signalled the group"),
            Err(err) => {
                tracing::trace!(group = self.group.as_raw(), ?signal, %err, "group not signalled")
            }
        }
        let group = self.group.as_raw();
        let table = process_table().unwrap_or_default();
        for process in self.members(&table) {
            if process.group != group && !process.zombie {
                tracing::debug!(
                    pid = process.pid,
                    ?signal,
                    "signalled a descendant outside the group"
                );
                let _ = kill(Pid::from_raw(process.pid), signal);
            }
        }
    }

    /// Reaps leaderrun's zombie children other than `command` (whose status
    /// tokio collects) and the guardian (whose status its owner collects):
    /// the orphans adopted as subreaper.
    pub fn reap_orphans(&self, command: Pid) {
        match process_table() {
            Some(table) => self.reap(&table, command),
            None => self.reap_group(command),
        }
    }

    /// Without a `/proc` of our own: the group's live processes (the group
    /// itself, if any is left), once its zombies (orphans of ours) are
    /// reaped.
    fn group_alone(&self, command: Pid) -> Vec<Pid> {
        self.reap_group(command);
        match killpg(self.group, None) {
            Ok(()) => vec![self.group],
            Err(_) => Vec::new(),
        }
    }

    /// Reaps the group's zombies that are leaderrun's children, but
    /// `command` (whose status its owner collects): each is looked at
    /// first without being reaped, so the command's is never taken.
    fn reap_group(&self, command: Pid) {
        use nix::sys::wait::{waitid, Id};
        let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        while let Ok(status) = waitid(Id::PGid(self.group), peek) {
            match status.pid() {
                Some(pid) if pid != command => {
                    let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
                }
                // Nothing to reap, or only the command's status.
                _ => break,
            }
        }
    }

    fn reap(&self, table: &[Process], command: Pid) {
        let me = getpid().as_raw();
        for process in table {
            let ours = process.parent == me && process.zombie;
            let reserved = process.pid == command.as_raw()
                || Some(process.pid) == self.spared.map(Pid::as_raw);
            if ours && !reserved {
                let _ = waitpid(Pid::from_raw(process.pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stat_lines_with_odd_command_names() {
        let process = parse_stat(42, "42 (a) b (c) S 7 42 42 0 -1").unwrap();
        assert_eq!(
            (process.parent, process.group, process.zombie),
            (7, 42, false)
        );
        assert!(parse_stat(9, "9 (x) Z 1 9 9").unwrap().zombie);
        assert!(parse_stat(9, "garbage").is_none());
    }

    #[test]
    fn finds_descendants_outside_the_group_and_spares_the_guardian() {
        let me = getpid().as_raw();
        let table = [
            Process {
                pid: 100,
                parent: me,
                group: 100,
                zombie: false,
            },
            Process {
                pid: 101,
                parent: 100,
                group: 100,
                zombie: false,
            },
            Process {
                pid: 102,
                parent: 101,
                group: 102,
                zombie: false,
            },
            Process {
                pid: 103,
                parent: 102,
                group: 102,
                zombie: false,
            },
            Process {
                pid: 200,
                parent: me,
                group: 200,
                zombie: false,
            },
            Process {
                pid: 201,
                parent: 200,
                group: 200,
                zombie: false,
            },
            Process {
                pid: 300,
                parent: 1,
                group: 300,
                zombie: false,
            },
        ];
        let job = Job::new(Pid::from_raw(100), Some(Pid::from_raw(200)));
        let mut pids: Vec<i32> = job.members(&table).iter().map(|p| p.pid).collect();
        pids.sort();
        assert_eq!(pids, [100, 101, 102, 103]);
    }
}
