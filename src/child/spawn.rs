//! Starting the command's process: `clone(CLONE_VM | CLONE_VFORK)`, as
//! glibc's `posix_spawn` does, with leaderrun's own steps before the exec.
//!
//! std's `Command` forks once a `pre_exec` step is set: leaderrun's page
//! tables are copied, and every page it writes afterwards is copied again,
//! all on the next leader's path. Here the child borrows leaderrun's memory
//! until it execs (leaderrun waits, as for any spawn, so an exec that fails
//! is reported at once). What the child does before the exec is what the
//! safety of the run needs, nothing more:
//! - a process group of its own (the job, stopped and killed as one);
//! - PR_SET_PDEATHSIG, and a check that leaderrun has not died already;
//! - its group named to the guardian, so that a SIGKILL of leaderrun from
//!   here on still stops everything the command starts;
//! - the terminal's foreground, when leaderrun holds it;
//! - signal handlers back to their defaults (and SIGPIPE, which Rust
//!   ignores), no signal blocked.
//!
//! The child shares leaderrun's memory: it makes only system calls, on
//! memory made before the clone, and writes nothing but the errno of a
//! failed exec. Every signal is blocked across the clone, so no handler of
//! leaderrun's runs in it. Its code, and the clone, are in `forked`, with
//! the rules it keeps; this file makes what it needs, before.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::libc;
use nix::unistd::Pid;
use rustix::process::WaitOptions;

use super::env;
use super::forked::{self, Plan};

/// The child's stack until its exec: system calls only, a few frames, and
/// glibc's `execvpe`, which holds on the stack a path (at most PATH_MAX
/// and NAME_MAX) and, for a script without `#!`, an argv one longer than
/// the command's (counted in [`stack_size`]).
const STACK: usize = 64 * 1024;

/// The command's process.
pub struct Process {
    pub pid: Pid,
}

/// Starts `program` with `command` as its arguments and `env` over
/// leaderrun's own environment; returns once it has exec'd. `guardian` is
/// the pipe it names its group on; with `take_terminal` it makes its group
/// the terminal's foreground group.
///
/// `program` is where COMMAND was found at start-up, so the exec searches
/// no PATH: a search is an exec tried in each directory before the one
/// that holds it, and the next leader waits for all of them. If it fails,
/// COMMAND's name is searched for in PATH anew, as `execvp` would.
pub fn spawn(
    program: &Path,
    command: &[OsString],
    env: &env::Variables,
    withheld: &[&str],
    guardian: Option<BorrowedFd>,
    take_terminal: bool,
) -> io::Result<Process> {
    let args = command
        .iter()
        .map(|arg| CString::new(arg.as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    let argv = pointers(&args);
    let path = CString::new(program.as_os_str().as_bytes())?;
    let search = match program.as_os_str() == command[0] {
        true => None,
        false => Some(CString::new(command[0].as_bytes())?),
    };
    let environment = environment(env, withheld)?;
    let plan = Plan {
        parent: nix::unistd::getpid(),
        guardian,
        take_terminal,
        program: &path,
        search: search.as_deref(),
        argv: &argv,
        envp: &environment.envp,
        failure: AtomicI32::new(0),
    };
    // Left unwritten: zeroing it here would fault in all of its pages on
    // the next leader's path; the child touches only the few at its top.
    let mut stack: Vec<u8> = Vec::with_capacity(stack_size(argv.len()));
    let process = Process {
        pid: forked::clone_command(&plan, stack.spare_capacity_mut())?,
    };
    match plan.failure.load(Ordering::Acquire) {
        0 => Ok(process),
        errno => {
            // It has exited: collect it.
            let _ = process.wait_with(WaitOptions::empty());
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

impl Process {
    /// The exit status, if the process has exited (reaped now).
    pub fn try_wait(&self) -> io::Result<Option<ExitStatus>> {
        let status = self.wait_with(WaitOptions::NOHANG)?;
        if status.is_some() && wait_fails() {
            return Err(io::Error::other(
                "the wait failed, as LEADERRUN_TEST_FAIL_WAIT asks",
            ));
        }
        Ok(status)
    }

    fn wait_with(&self, options: WaitOptions) -> io::Result<Option<ExitStatus>> {
        let pid = rustix::process::Pid::from_raw(self.pid.as_raw());
        let waited = rustix::process::waitpid(pid, options)?;
        Ok(waited.map(|(_, status)| ExitStatus::from_raw(status.as_raw())))
    }
}

/// Test builds only: with `LEADERRUN_TEST_FAIL_WAIT` set, the wait that
/// collects the command's exit fails (once it has collected it), so that a
/// test can show that a run whose supervision fails still stops the whole
/// job and leaves the guardian armed. Read once; a release build has no
/// such variable.
#[cfg(debug_assertions)]
fn wait_fails() -> bool {
    static FAILS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FAILS.get_or_init(|| std::env::var_os("LEADERRUN_TEST_FAIL_WAIT").is_some())
}

#[cfg(not(debug_assertions))]
fn wait_fails() -> bool {
    false
}

/// The child's stack for a command of `pointers` argv pointers (the null
/// included): [`STACK`], and room for execvpe's argv for a script.
fn stack_size(pointers: usize) -> usize {
    STACK + (pointers + 2) * std::mem::size_of::<*const libc::c_char>()
}

/// The command's environment: leaderrun's own but for the variables `env`
/// sets, then those.
struct Environment {
    /// `env`'s variables, as `NAME=value` strings: `envp` points into
    /// them.
    _set: Vec<CString>,
    /// The null-terminated array for the exec: the inherited strings where
    /// they lie (not copies), then `_set`'s.
    envp: Vec<*const libc::c_char>,
}

extern "C" {
    /// The process's environment: a null-terminated array of `NAME=value`
    /// strings.
    static environ: *const *const libc::c_char;
}

/// leaderrun's environment with `env` over it, and without the variables
/// `withheld` names. Inherited variables are
/// passed on as the very strings leaderrun was given: copying each (as
/// `std::env::vars_os` does) cost more allocations than the rest of the
/// spawn, on the next leader's path. Nothing in leaderrun changes its own
/// environment (no `set_var`, no `setenv`), so they stay where they are.
fn environment(env: &env::Variables, withheld: &[&str]) -> io::Result<Environment> {
    let set = env
        .iter()
        .map(|(name, value)| {
            let mut pair = name.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            CString::new(pair)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // A name is what comes before the first '=' after its first byte, as
    // the C library reads it (a name may begin with '=').
    let overridden = |entry: &[u8]| {
        let name = match entry.iter().skip(1).position(|byte| *byte == b'=') {
            Some(at) => &entry[..at + 1],
            None => entry,
        };
        env.iter().any(|(over, _)| over.as_bytes() == name)
            || withheld.iter().any(|gone| gone.as_bytes() == name)
    };
    let mut envp = Vec::new();
    // SAFETY: `environ` is the array the process started with (or the C
    // library rebuilt), null-terminated, of NUL-terminated strings, and
    // nothing changes it while leaderrun runs (see above).
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            if !overridden(std::ffi::CStr::from_ptr(*entry).to_bytes()) {
                envp.push(*entry);
            }
            entry = entry.add(1);
        }
    }
    envp.extend(set.iter().map(|pair| pair.as_ptr()));
    envp.push(std::ptr::null());
    Ok(Environment { _set: set, envp })
}

/// A null-terminated array of pointers to `strings`.
pub(super) fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|string| string.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}
