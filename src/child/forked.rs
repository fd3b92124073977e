//! Every line that runs in a child of leaderrun before its exec, or instead
//! of one, and the forks that start them: the command's process, cloned
//! with `CLONE_VM | CLONE_VFORK` (see `spawn`), and the guardian, forked
//! (see `guard`).
//!
//! leaderrun has threads (tokio's, for a name lookup), so a forked child is
//! a copy of one thread in a process whose locks another thread may have
//! held at the fork; the command's process even runs on leaderrun's memory,
//! with leaderrun's thread suspended in the clone. Until its exec or its
//! `_exit`, such a child keeps these rules:
//! - async-signal-safe calls only (signal-safety(7)): system calls, through
//!   nix, rustix or libc; never std's I/O handles, `std::env`, `tracing`,
//!   or a lazily made static;
//! - no allocation and no freeing: malloc's locks may be held, and on
//!   leaderrun's memory a free would change the parent's heap; what the
//!   child needs is made before the fork ([`Plan`]) or lives on its stack;
//! - no lock of any kind, for the same reason;
//! - no panic and no unwinding: a panic allocates and takes locks, and an
//!   unwind would run leaderrun's destructors or return into its stack;
//!   every way out is an exec or [`exit`] (`_exit`: no atexit handler
//!   runs);
//! - signals blocked across the fork until the child has put leaderrun's
//!   handlers back to their defaults: a handler of leaderrun's would write
//!   to leaderrun's signal pipe.
//!
//! What a lint can check is denied below, for the whole file: the panics a
//! line can write (panic, unwrap, expect, indexing, arithmetic that can
//! overflow), process::exit, printing. Allocation is not lintable: the
//! unit tests run the pure parts (the group's line, what the guardian makes
//! of what it read) under an allocator that counts.

#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::string_slice,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::exit,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::dbg_macro,
    clippy::mem_forget,
    clippy::multiple_unsafe_ops_per_block
)]

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::libc;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, sigprocmask, SigSet, SigmaskHow, Signal};
use nix::unistd::{dup2_stderr, dup2_stdin, dup2_stdout, ForkResult, Pid};

/// What the command's process needs until its exec, all made before the
/// clone, and where it writes why the exec failed.
pub(super) struct Plan<'a> {
    /// leaderrun's pid: a child whose parent is another has outlived it.
    pub parent: Pid,
    /// The guardian's pipe, to name the command's group on.
    pub guardian: Option<BorrowedFd<'a>>,
    /// Make the command's group the terminal's foreground group.
    pub take_terminal: bool,
    /// Where the command was found when leaderrun started.
    pub program: &'a CStr,
    /// The command's name, searched for in PATH anew if `program` fails
    /// to exec (gone since, say): the search `execvp` makes.
    pub search: Option<&'a CStr>,
    /// Null-terminated, of pointers to NUL-terminated strings alive as
    /// long as the plan.
    pub argv: &'a [*const libc::c_char],
    /// Null-terminated, as `argv`.
    pub envp: &'a [*const libc::c_char],
    /// The errno of a failed exec, written by the child.
    pub failure: AtomicI32,
}

/// Starts the command's process on `stack`, which it runs on until its
/// exec (see [`command`]); returns once it has exec'd or exited. Every
/// signal is blocked across the clone, and restored after.
pub(super) fn clone_command(plan: &Plan, stack: &mut [MaybeUninit<u8>]) -> io::Result<Pid> {
    // The top of the stack, aligned down to 16 bytes as the ABI asks.
    let top = stack.as_mut_ptr_range().end.map_addr(|at| at & !15);
    let before = SigSet::all().thread_swap_mask(SigmaskHow::SIG_SETMASK)?;
    // SAFETY: the child runs [`command`], which keeps this file's rules,
    // on `stack`, which it only writes before it reads, as any stack is
    // used. `plan` and `stack` outlive its use of them: with CLONE_VFORK
    // this thread resumes once the child has exec'd or exited.
    let pid = unsafe {
        libc::clone(
            command,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(plan).cast_mut().cast(),
        )
    };
    let err = io::Error::last_os_error();
    let _ = before.thread_set_mask();
    match pid {
        -1 => Err(err),
        pid => Ok(Pid::from_raw(pid)),
    }
}

/// The command's process, on leaderrun's memory until its exec.
extern "C" fn command(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `plan` is the `&Plan` that `clone_command` passed, alive
    // until we exec or exit (CLONE_VFORK).
    let plan = unsafe { &*plan.cast_const().cast::<Plan>() };
    default_handlers();
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if nix::unistd::getppid() != plan.parent {
        exit(127);
    }
    // Name our group to the guardian before the exec: a SIGKILL of
    // leaderrun from here on would otherwise leave what the command
    // starts running (PDEATHSIG reaches this process only).
    let group = nix::unistd::getpid();
    if let Some(pipe) = plan.guardian {
        tell_guardian(pipe, group);
    }
    if plan.take_terminal {
        // SIGTTOU, which tcsetpgrp raises from a background group, is
        // blocked (every signal is, until the line below).
        let _ = nix::unistd::tcsetpgrp(rustix::stdio::stdin(), group);
    }
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    // A path with a slash: execvpe searches nothing, but still runs a
    // script without `#!` with /bin/sh.
    exec(plan.program, plan);
    if let Some(name) = plan.search {
        exec(name, plan);
    }
    plan.failure.store(Errno::last_raw(), Ordering::Release);
    exit(127)
}

/// `execvpe` of `path` with the plan's arguments and environment; returns
/// only if it failed (errno says why).
fn exec(path: &CStr, plan: &Plan) {
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are
    // null-terminated arrays of NUL-terminated strings (see [`Plan`]).
    unsafe { libc::execvpe(path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr()) };
}

/// Ends the child now: `_exit`, which runs no atexit handler and flushes
/// nothing of leaderrun's.
fn exit(code: libc::c_int) -> ! {
    // SAFETY: `_exit` takes a plain number and never returns.
    unsafe { libc::_exit(code) }
}

/// In a child of leaderrun (its handler table its own copy): leaderrun's
/// signal handlers back to the defaults an exec would give, and SIGPIPE,
/// which Rust ignores, too.
fn default_handlers() {
    for signal in 1..libc::SIGRTMAX() {
        let reset = disposition(signal).is_some_and(|current| {
            current != libc::SIG_DFL && (current != libc::SIG_IGN || signal == libc::SIGPIPE)
        });
        if reset {
            // SAFETY: sets a disposition to the default; no handler runs.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}

/// What `signal` does now: SIG_DFL, SIG_IGN or a handler's address; None
/// if it cannot be read. One system call, on the stack: safe in a child.
pub fn disposition(signal: libc::c_int) -> Option<libc::sighandler_t> {
    let mut current = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: sigaction reads the disposition into `current`, which is
    // large enough; nothing is set.
    let read = unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) };
    // SAFETY: zeroed, then filled by the kernel: a valid sigaction either
    // way (all its fields are plain numbers and pointers).
    (read == 0).then(|| unsafe { current.assume_init() }.sa_sigaction)
}

/// Writes `group` and a newline to the guardian's pipe: one write(2),
/// atomic on a pipe, so it never interleaves with leaderrun's own line.
fn tell_guardian(pipe: BorrowedFd, group: Pid) {
    let mut line = [0u8; GROUP_LINE];
    let _ = nix::unistd::write(pipe, group_line(group.as_raw().unsigned_abs(), &mut line));
}

/// Room for any u32 in decimal (ten digits) and a newline.
const GROUP_LINE: usize = 11;

/// `group` in decimal, then a newline, written at the end of `line`: the
/// bytes to write.
fn group_line(group: u32, line: &mut [u8; GROUP_LINE]) -> &[u8] {
    let mut start = GROUP_LINE.saturating_sub(1);
    if let Some(newline) = line.get_mut(start) {
        *newline = b'\n';
    }
    let mut value = group;
    // Digits from the last back; `start` ends on the first.
    while start > 0 {
        start = start.saturating_sub(1);
        if let Some(digit) = line.get_mut(start) {
            *digit = b'0'.saturating_add((value % 10) as u8);
        }
        value /= 10;
        if value == 0 {
            break;
        }
    }
    line.get(start..).unwrap_or_default()
}

/// Forks the guardian (see `guard`), which runs [`guardian`] with `read`
/// as its stdin, `named` as its stdout until it has its name, and `null`
/// as its stderr, then stdout; returns its pid. Every signal is blocked
/// across the fork, and restored in the parent. `pauses` (none but in the
/// suite's tests) hold the guardian back.
pub(super) fn fork_guardian(
    read: BorrowedFd,
    named: BorrowedFd,
    null: BorrowedFd,
    arguments: Option<(usize, usize)>,
    pauses: Pauses,
) -> nix::Result<Pid> {
    let before = SigSet::all().thread_swap_mask(SigmaskHow::SIG_SETMASK)?;
    // SAFETY: the child runs [`guardian`] only, which keeps this file's
    // rules and never returns.
    let forked = unsafe { nix::unistd::fork() };
    match forked {
        Ok(ForkResult::Child) => guardian(read, named, null, arguments, pauses),
        Ok(ForkResult::Parent { child }) => {
            let _ = before.thread_set_mask();
            Ok(child)
        }
        Err(err) => {
            let _ = before.thread_set_mask();
            Err(err)
        }
    }
}

/// The guardian, in the forked child. A session of its own, so that the
/// terminal's signals miss it; every signal it can ignore ignored; none
/// blocked; stdin the pipe; nothing else of leaderrun's open (the pipe's
/// write end least of all, or the hang-up would never come); named
/// `lr-guardian`, which it says by closing `named` (its stdout until
/// then: the write end's only copy, so leaderrun reads its end), before
/// leaderrun lets a command start. Then it sleeps until the pipe hangs up,
/// and kills the group it was told unless it was told "done".
fn guardian(
    read: BorrowedFd,
    named: BorrowedFd,
    null: BorrowedFd,
    arguments: Option<(usize, usize)>,
    pauses: Pauses,
) -> ! {
    let _ = nix::unistd::setsid();
    ignore_every_signal();
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let _ = dup2_stdin(read);
    let _ = dup2_stdout(named);
    let _ = dup2_stderr(null);
    close_from(3);
    pause(&pauses.before_naming);
    // SAFETY: `arguments` is this process's argument area, read from
    // `/proc/self/stat` before the fork (see `guard`).
    unsafe { rename(arguments) };
    // Named: stdout becomes /dev/null (stderr's), which closes the last
    // write end of `named`.
    let _ = dup2_stdout(rustix::stdio::stderr());
    wait_for_hangup();
    // What leaderrun wrote: a group line, and "done"; a few bytes. Read to
    // the end (EOF, or an error: the pipe broke), keeping what fits.
    let mut said = [0u8; 256];
    let mut length = 0;
    while let Some(room) = said.get_mut(length..).filter(|room| !room.is_empty()) {
        match nix::unistd::read(rustix::stdio::stdin(), room) {
            Ok(read) if read > 0 => length = length.saturating_add(read),
            _ => break,
        }
    }
    if let Some(group) = group_to_kill(said.get(..length).unwrap_or_default()) {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    pause(&pauses.before_exit);
    exit(0)
}

/// How long the guardian waits at two points: not at all, but in debug
/// builds (the suite's), where a test stands for a guardian that a loaded
/// machine was slow to run (see `guard`).
#[derive(Clone, Copy)]
pub(super) struct Pauses {
    /// Before it takes its name.
    pub(super) before_naming: libc::timespec,
    /// Before it exits.
    pub(super) before_exit: libc::timespec,
}

/// Sleeps for `pause`, if it is not zero.
fn pause(pause: &libc::timespec) {
    if pause.tv_sec != 0 || pause.tv_nsec != 0 {
        // SAFETY: a sleep on a timespec made before the fork.
        unsafe { libc::nanosleep(pause, std::ptr::null_mut()) };
    }
}

/// Ignores every signal but SIGKILL and SIGSTOP, which cannot be: leaderrun's
/// handlers go with it (they would write to leaderrun's signal pipe).
/// Killed, the guardian leaves nobody to stop the job if leaderrun dies
/// next: `pkill lr-guardian`, an operator's `kill` of a stray-looking
/// process, or systemd's stop of a unit, which sends SIGTERM to every
/// process in it (leaderrun then ends the run and tells the guardian
/// "done"). A real fault still ends it: the kernel delivers SIGSEGV and the
/// like at their defaults when they are ignored. The two real-time signals
/// the C library keeps for itself cannot be set here, and keep theirs.
fn ignore_every_signal() {
    for signal in 1..=libc::SIGRTMAX() {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            // SAFETY: sets a disposition to "ignore"; no handler runs.
            unsafe { libc::signal(signal, libc::SIG_IGN) };
        }
    }
}

/// What the guardian does with what leaderrun told it: the group to kill,
/// unless leaderrun said "done" (it finished cleanly), or named none.
fn group_to_kill(said: &[u8]) -> Option<i32> {
    let mut group = None;
    for line in said.split(|byte| *byte == b'\n') {
        if line == b"done" {
            return None;
        }
        // Parsing a number allocates nothing.
        let named = std::str::from_utf8(line)
            .ok()
            .and_then(|line| line.parse::<i32>().ok());
        if let Some(pid) = named {
            group = Some(pid).filter(|pid| *pid > 1);
        }
    }
    group
}

/// The guardian's process name (`comm`) and command line.
pub const GUARD_NAME: &std::ffi::CStr = c"lr-guardian";

/// Names the guardian `GUARD_NAME`: its `comm`, and its command line,
/// written over the one at `area` (the guardian's own copy of leaderrun's),
/// the rest zeroed, so that `/proc/PID/cmdline` reads "lr-guardian".
/// Without the area, the command line stays leaderrun's.
///
/// # Safety
/// `area` is the argument area of this process, from `argument_area`.
unsafe fn rename(area: Option<(usize, usize)>) {
    let _ = nix::sys::prctl::set_name(GUARD_NAME);
    let Some((start, end)) = area else { return };
    let name = GUARD_NAME.to_bytes();
    let length = end.saturating_sub(start);
    if length <= name.len() {
        return;
    }
    let base = start as *mut u8;
    // SAFETY: `area` is this process's own argument area (the caller's
    // promise), `length` bytes from `base`.
    unsafe { std::ptr::write_bytes(base, 0, length) };
    // SAFETY: as above; the name is shorter than the area, and is not in
    // it.
    unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), base, name.len()) };
}

/// Closes every file descriptor from `first` up.
fn close_from(first: u32) {
    // SAFETY: close_range takes plain numbers.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0) };
    if closed != 0 {
        // Before Linux 5.9: one by one, up to a generous bound.
        for fd in first..4096 {
            // SAFETY: closes a number that may not be open; nothing of
            // leaderrun's is used after this in the guardian.
            unsafe { libc::close(fd as libc::c_int) };
        }
    }
}

/// Sleeps until every writer of the pipe on stdin has closed it. A poll
/// for no event at all: the kernel wakes it for the hang-up (or an error)
/// only, not for data written to the pipe.
fn wait_for_hangup() {
    let stdin = rustix::stdio::stdin();
    let mut pipe = [PollFd::new(stdin, PollFlags::empty())];
    // Hung up, or poll failed: reading tells which (EOF, or data and then
    // EOF, or an error: all end the wait).
    while poll(&mut pipe, PollTimeout::NONE) == Err(Errno::EINTR) {}
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// The system allocator, counting this thread's allocations.
    struct Counting;

    thread_local! {
        static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    }

    // SAFETY: passes every call to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.with(|count| count.set(count.get().wrapping_add(1)));
            // SAFETY: the caller's promises are System's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the caller's promises are System's.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// How many allocations `work` made on this thread.
    fn allocations(work: impl FnOnce()) -> usize {
        let before = ALLOCATIONS.with(Cell::get);
        work();
        ALLOCATIONS.with(Cell::get).wrapping_sub(before)
    }

    #[test]
    fn the_group_line_reads_back_as_the_group() {
        let mut line = [0u8; GROUP_LINE];
        for group in [2, 9, 10, 4242, i32::MAX.unsigned_abs(), u32::MAX] {
            let written = group_line(group, &mut line);
            assert_eq!(written, format!("{group}\n").as_bytes());
        }
        assert_eq!(group_line(4242, &mut line), b"4242\n");
        assert_eq!(group_to_kill(group_line(4242, &mut line)), Some(4242));
    }

    #[test]
    fn the_group_is_killed_unless_leaderrun_said_done() {
        assert_eq!(group_to_kill(b"4242\n"), Some(4242), "leaderrun died");
        assert_eq!(group_to_kill(b"4242\ndone\n"), None, "a clean end");
        assert_eq!(group_to_kill(b""), None, "no group was named");
        assert_eq!(group_to_kill(b"done\n"), None, "nothing ran");
        // Never a group that would be everyone, or init's.
        assert_eq!(group_to_kill(b"1\n"), None);
        assert_eq!(group_to_kill(b"0\n"), None);
        assert_eq!(group_to_kill(b"-5\n"), None);
        assert_eq!(group_to_kill(b"99999999999\n"), None, "not a pid");
        // A line cut short by leaderrun's death names nothing.
        assert_eq!(group_to_kill(b"42x"), None);
    }

    #[test]
    fn the_childs_computations_allocate_nothing() {
        let mut line = [0u8; GROUP_LINE];
        let made = allocations(|| {
            let written = group_line(4242, &mut line);
            std::hint::black_box(group_to_kill(std::hint::black_box(written)));
            std::hint::black_box(group_to_kill(b"17\n\xff\n-3\ndone\n"));
            std::hint::black_box(disposition(libc::SIGTERM));
        });
        assert_eq!(made, 0, "allocations in code a forked child runs");
        // The counter counts: a check that cannot pass by accident.
        assert!(allocations(|| drop(std::hint::black_box(vec![1u8]))) > 0);
    }
}
