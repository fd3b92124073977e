//! `leaderrun status`: who leads an election, its token and its queue.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::cli::StatusArgs;
use crate::election::holder::printable;
use crate::election::name;
use crate::election::once_per;
use crate::election::{self, Leader};
use crate::etcd::{self, Connection};
use crate::exit::Exit;
use crate::signals::Signals;

/// How often `status --watch` pings etcd: a dead connection breaks its
/// watch within this, and the watch moves to another endpoint.
const WATCH_PING: Duration = Duration::from_secs(5);

pub async fn status(args: StatusArgs) -> Result<i32> {
    let election = match (&args.name.name, args.command.is_empty()) {
        (Some(name), _) if !name.is_empty() => name.clone(),
        (None, false) => name::derive(&args.command),
        _ => anyhow::bail!("name the election with --name, or give the command line after --"),
    };
    let connection = etcd::connect(&args.connection, WATCH_PING)?;
    if args.watch {
        return watch(&connection, &election).await;
    }
    let election::Snapshot {
        leader, candidates, ..
    } = election::read_leader(&connection, &election).await?;
    let ttl = match &leader {
        Some(leader) => connection
            .time_left(leader.lease)
            .await?
            .map(|left| left.as_secs()),
        None => None,
    };
    let waiters = (candidates - i64::from(leader.is_some())).max(0);
    let marker = once_per::current(&connection, &election).await?;
    let code = if leader.is_some() {
        Exit::Success.code()
    } else {
        Exit::NoLeader.code()
    };
    // Written in one go at the end: a reader that went away (`status |
    // true`) is not an error.
    let mut out = Vec::new();
    if args.json {
        let last_run = marker.as_ref().map(|marker| {
            let last = &marker.last;
            json!({
                "host": last.holder.host,
                "pid": last.holder.pid,
                "started": last.holder.started,
                "command": last.holder.command,
                "token": last.token,
                "window_left": marker.left.map(|left| left.as_secs()),
            })
        });
        let mut object = match &leader {
            Some(leader) => json!({
                "name": election,
                "key": leader.key,
                "token": leader.token,
                "lease": format!("{:x}", leader.lease),
                "ttl": ttl,
                "holder": {
                    "host": leader.holder.host,
                    "pid": leader.holder.pid,
                    "started": leader.holder.started,
                    "command": leader.holder.command,
                },
                "waiters": waiters,
            }),
            None => json!({
                "name": election, "key": null, "token": null, "lease": null,
                "ttl": null, "holder": null, "waiters": waiters,
            }),
        };
        object["last_run"] = last_run.unwrap_or_default();
        writeln!(out, "{object}")?;
    } else {
        writeln!(out, "election: {election}")?;
        match &leader {
            Some(leader) => {
                writeln!(out, "leader:   {}", leader.describe())?;
                writeln!(out, "command:  {}", printable(&leader.holder.command))?;
                writeln!(out, "token:    {}", leader.token)?;
                writeln!(out, "key:      {}", leader.key)?;
                let left = ttl.map_or_else(|| "expired".into(), |ttl| format!("{ttl}s left"));
                writeln!(out, "lease:    {:x} ({left})", leader.lease)?;
            }
            None => writeln!(out, "leader:   none")?,
        }
        writeln!(out, "waiting:  {waiters}")?;
        if let Some(marker) = &marker {
            let left = match (marker.lease, marker.left) {
                (0, _) => format!(
                    "never closes: the marker has no lease (remove it with: etcdctl del '{}')",
                    printable(&once_per::marker_key(&election))
                ),
                (_, None) => "closing".into(),
                (_, Some(left)) => format!("closes in {}", humantime::format_duration(left)),
            };
            let last = marker.last.describe();
            writeln!(
                out,
                "once-per: this window's run started {last}; the window {left}"
            )?;
        }
    }
    write_out(&out)?;
    Ok(code)
}

/// Writes to stdout; false if the reader went away (a closed pipe), which
/// is how `status | head -1` ends, not an error.
fn write_out(bytes: &[u8]) -> Result<bool> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Prints a line per change of leader, in order, until interrupted. The
/// first read must succeed; after it, etcd restarting is ridden out.
async fn watch(connection: &Connection, election: &str) -> Result<i32> {
    let mut signals = Signals::install()?;
    let line = election::Line::read(connection, election).await?;
    let report = |leader: Option<&Leader>| {
        let line = describe(election, leader);
        let line = format!("{} {line}\n", crate::election::holder::now_rfc3339());
        write_out(line.as_bytes())
    };
    tokio::select! {
        followed = line.follow(connection, report) => followed?,
        _ = signals.recv() => {}
    }
    Ok(Exit::Success.code())
}

/// A watch line. The line's own time is when the change was seen; the
/// holder's "since" is left out, because a new leader's value still says
/// when it joined the queue until it has proven its win.
fn describe(election: &str, leader: Option<&Leader>) -> String {
    match leader {
        Some(leader) if leader.stale() => format!("{election}: blocked by {}", leader.describe()),
        Some(leader) => format!(
            "{election}: led by pid {} on {} (token {})",
            leader.holder.pid,
            printable(&leader.holder.host),
            leader.token
        ),
        None => format!("{election}: no leader"),
    }
}
