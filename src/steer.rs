//! `leaderrun pause` and `leaderrun resume`: an operator steering a whole
//! fleet's runs of an election at once, through the pause key beside it
//! (`election::pause`, which owns the key, its value and how a run meets
//! it). Each says in one line on stdout what it did, and what it
//! replaced or ended.

use std::time::Duration;

use anyhow::Result;

use crate::election::pause::{self, Pause};
use crate::etcd;
use crate::exit::Exit;
use crate::logging::printable;

/// How often the connection pings etcd: these are one or two requests.
const PING: Duration = Duration::from_secs(5);

/// What to do to the election.
#[derive(Debug)]
pub enum Action {
    /// Pause it, for `length` if given, for `reason` if given.
    Pause {
        length: Option<Duration>,
        reason: Option<String>,
    },
    /// End its pause.
    Resume,
}

/// What `pause` or `resume` was asked for.
pub struct Options {
    pub election: String,
    pub action: Action,
    pub etcd: etcd::Options,
}

pub async fn steer(options: Options) -> Result<Exit> {
    let connection = etcd::connect(&options.etcd, PING).await?;
    let election = printable(&options.election).into_owned();
    let line = match options.action {
        Action::Pause { length, reason } => {
            let (pause, replaced) =
                pause::set(&connection, &options.election, Pause::by_us(reason), length).await?;
            let until = match &pause.until {
                Some(until) => format!("until {}", printable(until)),
                None => "until leaderrun resume".to_string(),
            };
            let replaced = match replaced {
                Some(old) => format!("; it replaces the pause {}", old.describe()),
                None => String::new(),
            };
            format!("{election}: paused {until}; no run starts meanwhile, and runs already started go on{replaced}")
        }
        Action::Resume => match pause::clear(&connection, &options.election).await? {
            Some(ended) => format!("{election}: resumed; it was paused {}", ended.describe()),
            None => format!("{election}: not paused; nothing to resume"),
        },
    };
    crate::status::write_out(format!("{line}\n").as_bytes())?;
    Ok(Exit::Success)
}
