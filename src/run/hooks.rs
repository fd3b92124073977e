//! Debug builds' hooks for the suite, which a release build compiles to
//! nothing: a run stopped at a chosen step, for a test to kill it there.

/// Debug builds only (the suite's; a release build has none of it): with
/// `LEADERRUN_TEST_STOP_AT` set to `step`, the run stops itself there
/// (SIGSTOP), so that a test can kill it with SIGKILL at that very step.
/// The steps: `window-claimed` (the `--once-per` claim answered) and
/// `spawning` (just before the command is started).
pub fn stop_if_asked(step: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("LEADERRUN_TEST_STOP_AT").is_some_and(|asked| asked == step) {
        // Best effort: a test that asked waits for the stop it asked for.
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
    #[cfg(not(debug_assertions))]
    let _ = step;
}
