//! Logs go to stderr, and only when asked for: quiet by default, so that cron
//! mails nothing. `-v` and `-vv` raise leaderrun's own level; LEADERRUN_LOG
//! takes a full tracing filter, for debugging the libraries underneath too.

use tracing_subscriber::EnvFilter;

pub const LOG_ENV: &str = "LEADERRUN_LOG";

pub fn init(verbose: u8) {
    let filter = match EnvFilter::try_from_env(LOG_ENV) {
        Ok(filter) => filter,
        Err(_) => match verbose {
            0 => return,
            1 => EnvFilter::new("leaderrun=info"),
            2 => EnvFilter::new("leaderrun=debug"),
            _ => EnvFilter::new("leaderrun=trace,etcd_client=debug,tonic=debug,h2=info"),
        },
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .try_init();
}
