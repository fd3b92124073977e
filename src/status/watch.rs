//! `status --watch`: a line per change of leader, in order, and one per
//! change of the election's pause, until interrupted or the reader goes
//! away.

use anyhow::Result;

use super::write_out;
use crate::election::holder::{now_rfc3339, printable, Proclaimed};
use crate::election::pause::{self, Paused};
use crate::election::{Leader, Line};
use crate::etcd::Connection;
use crate::exit::Exit;
use crate::signals::Signals;

/// The first read must succeed; after it, etcd restarting is ridden out.
pub async fn watch(connection: &Connection, election: &str) -> Result<Exit> {
    let mut signals = Signals::install()?;
    let line = Line::read(connection, election).await?;
    let report = |leader: Option<&Leader>| {
        let shown = format!("{} {}\n", now_rfc3339(), describe(election, leader));
        write_out(shown.as_bytes())
    };
    // The pause as first read is said only if there is one.
    let mut first = true;
    let pauses = |paused: Option<&Paused>| {
        let said = match (paused, std::mem::take(&mut first)) {
            (None, true) => return Ok(true),
            (None, false) => format!("{}: resumed", printable(election)),
            (Some(paused), _) => format!("{}: paused {}", printable(election), paused.describe()),
        };
        write_out(format!("{} {said}\n", now_rfc3339()).as_bytes())
    };
    tokio::select! {
        followed = line.follow(connection, report) => followed?,
        followed = pause::follow(connection, election, pauses) => followed?,
        _ = signals.recv() => {}
    }
    Ok(Exit::Success)
}

/// A watch line. The line's own time is when the change was seen; the
/// holder's "since" is left out, because a new leader's value still says
/// when it joined the queue until it has proven its win.
fn describe(election: &str, leader: Option<&Leader>) -> String {
    let election = printable(election);
    match leader {
        Some(leader) if leader.stale() => format!("{election}: blocked by {}", leader.describe()),
        Some(leader) => match &leader.holder {
            Proclaimed::Leaderrun(holder) => format!(
                "{election}: led by pid {} on {} (token {})",
                holder.pid,
                printable(&holder.host),
                leader.token
            ),
            Proclaimed::Other(_) => format!("{election}: led by {}", leader.describe()),
        },
        None => format!("{election}: no leader"),
    }
}
