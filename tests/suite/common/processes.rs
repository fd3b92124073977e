//! Processes as /proc shows them: alive or not, their state, children and
//! command lines; signals; and the clean-up of what a failing test leaves.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use super::await_condition;
use super::invocation::SOON;

/// Waits for `child` to exit, polling every 10 ms; kills it and panics,
/// naming it `what`, if that takes over `limit`.
pub fn wait_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    super::stalls::watch();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if super::stalls::past(started, limit) {
            let tree = process_tree(child.id() as i32);
            let _ = child.kill();
            let _ = child.wait();
            let stalled = super::stalls::stalled_note(started);
            panic!("{what} did not exit within {limit:?}{stalled}; its processes:\n{tree}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Whether `pid` will run none of its own code again: gone, a zombie,
/// exiting (`PF_EXITING` in its flags), or with SIGKILL pending. Beside
/// two busy loops the kernel took 5.4 s to finish a SIGKILLed process
/// (in `exit_mmap`), sent a margin before the lease's deadline: it did
/// nothing of its own in that time. The bounds on a kill are on this.
pub fn killed(pid: i32) -> bool {
    const PF_EXITING: u64 = 0x4;
    // After the state: ppid, pgrp, session, tty, tpgid, flags.
    let exiting = stat_field::<u64>(pid, 5).is_some_and(|flags| flags & PF_EXITING != 0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let sigkill = 1u64 << (nix::libc::SIGKILL - 1);
    let pending = status
        .lines()
        .filter(|line| line.starts_with("SigPnd:") || line.starts_with("ShdPnd:"))
        .filter_map(|line| u64::from_str_radix(line[7..].trim(), 16).ok())
        .any(|mask| mask & sigkill != 0);
    !alive(pid) || exiting || pending
}

/// Reads a pid that a child wrote to `path`, once it is there.
pub fn read_pid(path: &Path, limit: Duration) -> i32 {
    let mut pid = None;
    await_condition(limit, &format!("a pid in {}", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

pub fn send(pid: i32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).expect("signal delivered");
}

/// Stops `pid` with SIGSTOP and waits, within `SOON`, until every one of
/// its threads is stopped. kill(2) returns before that: the stop begins
/// when one thread takes the signal, and until then the others run on. On
/// a loaded machine etcd's threads were seen to run 14 ms after the kill,
/// long enough to answer a request that a test sent to a "frozen" etcd.
pub fn stop(pid: i32) {
    send(pid, nix::sys::signal::Signal::SIGSTOP);
    await_condition(SOON, "every thread of the process to stop", || {
        threads_stopped(pid)
    });
}

/// Whether every thread of `pid` is stopped (state T, or t when traced).
fn threads_stopped(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat"));
        // A thread that has exited since the listing is no longer running.
        stat.map_or(true, |stat| matches!(state_letter(&stat), Some("T" | "t")))
    })
}

/// The state letter in a /proc stat line: the field after the command
/// name, which is in parentheses and may itself hold spaces and ')'.
fn state_letter(stat: &str) -> Option<&str> {
    stat.rsplit(')').next()?.split_whitespace().next()
}

/// The process state letter of `pid` ("R", "S", "Z"...), or None if gone.
pub fn process_state(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    state_letter(&stat).map(String::from)
}

/// The command name of `pid` (/proc/PID/comm), if it exists.
pub fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|comm| comm.trim_end().to_string())
}

/// The command line of `pid`, arguments joined by spaces, if it exists.
pub fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|byte| *byte == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    Some(args.join(" "))
}

/// `pid` and its descendants, one a line: pid, state, kernel wait channel
/// and command line, for the message of a test that waited in vain.
pub fn process_tree(pid: i32) -> String {
    let mut lines = String::new();
    let mut todo = vec![(pid, 0)];
    while let Some((pid, depth)) = todo.pop() {
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let masks: Vec<&str> = status
            .lines()
            .filter(|line| line.starts_with("SigBlk") || line.starts_with("SigIgn"))
            .collect();
        lines.push_str(&format!(
            "{:indent$}{pid} {} pgrp {:?} tty-fg {:?} {wchan} {} {}\n",
            "",
            process_state(pid).unwrap_or_else(|| "gone".into()),
            stat_field::<i32>(pid, 1),
            stat_field::<i32>(pid, 4),
            masks.join(" "),
            cmdline(pid).unwrap_or_default(),
            indent = depth * 2
        ));
        todo.extend(children_of(pid).into_iter().map(|child| (child, depth + 1)));
    }
    lines
}

/// The processes whose parent is `parent`, zombies included.
pub fn children_of(parent: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|pid| stat_field(*pid, 0) == Some(parent))
        .collect()
}

/// Whether a descendant of `pid` runs `program` (its /proc comm): past
/// its exec, so no longer a shell's fork with the shell's handlers.
pub fn descendant_runs(pid: i32, program: &str) -> bool {
    let mut todo = children_of(pid);
    while let Some(pid) = todo.pop() {
        if comm(pid).as_deref() == Some(program) {
            return true;
        }
        todo.extend(children_of(pid));
    }
    false
}

/// The direct children of `pid` that are leaderrun's guardian
/// (`lr-guardian`).
pub fn guardians_of(pid: i32) -> Vec<i32> {
    children_of(pid)
        .into_iter()
        .filter(|child| comm(*child).as_deref() == Some("lr-guardian"))
        .collect()
}

/// Processes a test expects to be gone, SIGKILLed on drop if they are not,
/// so that a failing test does not leave them behind. Each is named by its
/// pid and a piece of its command line, checked before killing so that a
/// reused pid is left alone.
/// A whole session can be named too (a shell on a terminal and its jobs).
#[derive(Default)]
pub struct Strays {
    processes: Vec<(i32, String)>,
    sessions: Vec<i32>,
}

impl Strays {
    pub fn new() -> Strays {
        Strays::default()
    }

    pub fn add(&mut self, pid: i32, cmdline_contains: &str) {
        self.processes.push((pid, cmdline_contains.to_string()));
    }

    /// Every process of the session `sid` (whose leader is `sid`).
    pub fn add_session(&mut self, sid: i32) {
        self.sessions.push(sid);
    }
}

impl Drop for Strays {
    fn drop(&mut self) {
        let kill = |pid: i32| {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        };
        for (pid, expected) in &self.processes {
            if cmdline(*pid).is_some_and(|line| line.contains(expected.as_str())) {
                kill(*pid);
            }
        }
        for sid in &self.sessions {
            all_pids()
                .into_iter()
                .filter(|pid| stat_field(*pid, 2) == Some(*sid))
                .for_each(kill);
        }
    }
}

fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// A numeric field of /proc/PID/stat, counted from the one after the state
/// (0: ppid, 1: pgrp, 2: session).
fn stat_field<T: std::str::FromStr>(pid: i32, index: usize) -> Option<T> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let field = stat.rsplit(')').next()?.split_whitespace().nth(index + 1)?;
    field.parse().ok()
}

/// How much CPU time `pid` used over the next `window` of wall time
/// (user and system, counted by the kernel in ticks of 10 ms), and the
/// wall time measured.
fn cpu_over(pid: i32, window: Duration) -> (Duration, Duration) {
    let ticks = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("it runs");
        // After the command's name, which may hold spaces: its fields 14, 15.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    let (before, from) = (ticks(), Instant::now());
    std::thread::sleep(window);
    let spent = ticks() - before;
    (Duration::from_millis(spent * 10), from.elapsed())
}

/// Checks that `pid` sleeps through the next `window` (in `what`): a
/// quarter of the time is far above a sleeper's wake-ups, and far below
/// a spin's whole core.
pub fn assert_asleep_for(pid: i32, window: Duration, what: &str) {
    let (used, over) = cpu_over(pid, window);
    assert!(
        used < over / 4,
        "leaderrun used {used:?} of CPU in {over:?} of {what}"
    );
}
