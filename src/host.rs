//! What a run reaches beyond its own memory and etcd: its command's job
//! (`child`), the guardian, the signals sent to leaderrun, its pid, and
//! the tasks it starts beside itself. The real ones in every build but
//! the library's tests, where the simulation's stand in under the same
//! names (`crate::simulation::host`), so that the simulated world runs the
//! production `run` code. Nothing else in `run`, `election` or `lease`
//! reaches processes or signals.

use std::future::Future;

pub use crate::child::ChildEvent;
#[cfg(not(test))]
pub use crate::child::{guard::Guard, Child};
#[cfg(not(test))]
pub use crate::signals::Signals;
#[cfg(test)]
pub use crate::simulation::host::{Child, Guard, Signals};

/// Makes this process ready to run a job: the subreaper that adopts its
/// orphans, SIGCHLD listened for, SIGCONT followed.
pub fn prepare() {
    #[cfg(not(test))]
    {
        crate::child::job::become_subreaper();
        crate::child::listen_for_exits();
        crate::child::terminal::watch_continue();
    }
}

/// This leaderrun's pid.
pub fn pid() -> u32 {
    #[cfg(test)]
    return crate::simulation::host::pid();
    #[cfg(not(test))]
    std::process::id()
}

/// Starts `task` beside the run: it ends with the process (with the
/// replica, simulated: a SIGKILL takes it too).
pub fn spawn<F>(task: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[cfg(test)]
    return crate::simulation::host::spawn(task);
    #[cfg(not(test))]
    tokio::spawn(task)
}
