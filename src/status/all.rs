//! `status --all`: every election under a prefix, found by reading etcd's
//! keys page by page (keys only), so that memory holds the names and not
//! the keys. Names are bytes, as etcd's keys are: one that is not UTF-8
//! (`etcdctl elect` takes any) is read under its own keys, not a lossy
//! copy that would fold `odd/\xfe` and `odd/\xff` into one election with
//! no leader.
//!
//! Text is written election by election, for people watching a long
//! list. JSON and the metrics for Prometheus are programs' input: built
//! whole, then written, so that etcd failing mid-way leaves nothing on
//! stdout (not half an array, not half the elections' metrics) beside the
//! error. The metrics are grouped by family, as Prometheus's text format
//! wants.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::SystemTime;

use anyhow::Result;

use super::{render, write_out, Format, Report, StartState};
use crate::election::holder::printable;
use crate::election::name;
use crate::etcd::requests::Pages;
use crate::etcd::Connection;
use crate::exit::Exit;

/// Keys per page when looking for elections.
const PAGE: i64 = 1000;

pub async fn all(connection: &Connection, prefix: &str, format: Format) -> Result<Exit> {
    let names = elections(connection, prefix).await?;
    match format {
        Format::Prometheus => {
            let mut reports = Vec::new();
            for election in &names {
                reports.push(Report::read(connection, election).await?);
            }
            write_out(prometheus(&reports).as_bytes())?;
        }
        Format::Json => {
            // Values, not reports: a report holds far more than its JSON.
            let mut array = Vec::new();
            for election in &names {
                array.push(render::json_value(
                    &Report::read(connection, election).await?,
                ));
            }
            write_out(format!("{}\n", serde_json::Value::Array(array)).as_bytes())?;
        }
        Format::Text => {
            for election in &names {
                let report = Report::read(connection, election).await?;
                if !write_out(format!("{}\n", line(&report)).as_bytes())? {
                    return Ok(Exit::Success);
                }
            }
        }
    }
    Ok(Exit::Success)
}

/// The names of the elections whose keys lie under `prefix`: those with a
/// candidate (`<name>/<lease hex>`) or a key leaderrun keeps beside one.
async fn elections(connection: &Connection, prefix: &str) -> Result<BTreeSet<Vec<u8>>> {
    let mut names = BTreeSet::new();
    let start = prefix.as_bytes().to_vec();
    let end = name::range_end(prefix);
    let mut pages = Pages::new(connection, "listing the elections", start, end, PAGE);
    while let Some(page) = pages.next().await? {
        for kv in &page {
            let found =
                name::election_of(&kv.key).filter(|name| name.starts_with(prefix.as_bytes()));
            if let Some(name) = found {
                names.insert(name.to_vec());
            }
        }
    }
    Ok(names)
}

/// One line for an election.
fn line(report: &Report) -> String {
    let leader = match &report.leader {
        Some(leader) => format!("led by {}", leader.describe()),
        None => "no leader".into(),
    };
    let last = match &report.records.last_finished {
        Some(last) => format!("; last run: {}", render::run_line(last)),
        None => String::new(),
    };
    // A run that died without its end, as the other views say it.
    let gone = match report.last_start() {
        Some((run, StartState::LeaderGone)) => format!(
            "; last start: on {}, {}, token {}: no end recorded, its leader is gone",
            printable(&run.host),
            printable(&run.started),
            run.token
        ),
        _ => String::new(),
    };
    let paused = match &report.paused {
        Some(paused) => format!("; paused {}", paused.describe()),
        None => String::new(),
    };
    let window = match &report.marker {
        Some(marker) if marker.stuck() => format!(
            "; stuck: a --once-per marker with no lease keeps every run out ({})",
            marker.describe()
        ),
        _ => String::new(),
    };
    format!(
        "{}: {leader}, {} waiting{paused}{window}{gone}{last}",
        printable(&name::escaped(&report.election)),
        report.waiters()
    )
}

/// A metric family: its name, its help, and its value for an election.
type Family = (&'static str, &'static str, fn(&Report) -> Option<f64>);

/// The metrics of an election, family by family.
const FAMILIES: [Family; 10] = [
    (
        "leaderrun_leader_present",
        "Whether the election has a leader that can lose its place (1) or not (0): a key with no lease is no leader (leaderrun_stuck).",
        |r| Some(f64::from(u8::from(r.leader.as_ref().is_some_and(|leader| !leader.stale())))),
    ),
    (
        "leaderrun_stuck",
        "Whether the election is stuck (1) or not (0): a key with no lease leads, or a --once-per marker with no lease keeps every run out; neither ends by itself (status exits 4).",
        |r| Some(f64::from(u8::from(r.stuck()))),
    ),
    (
        "leaderrun_paused",
        "Whether the election is paused by leaderrun pause (1) or not (0): no run starts.",
        |r| Some(f64::from(u8::from(r.paused.is_some()))),
    ),
    (
        "leaderrun_waiters",
        "Candidates queued behind the runners.",
        |r| Some(r.waiters() as f64),
    ),
    (
        "leaderrun_last_success_timestamp_seconds",
        "When the last successful run finished, in seconds since the epoch.",
        |r| {
            r.records
                .last_succeeded
                .as_ref()
                .and_then(|run| timestamp(run.finished.as_deref()))
        },
    ),
    (
        "leaderrun_last_run_finished_timestamp_seconds",
        "When the last run finished, in seconds since the epoch.",
        |r| {
            r.records
                .last_finished
                .as_ref()
                .and_then(|run| timestamp(run.finished.as_deref()))
        },
    ),
    (
        "leaderrun_last_run_duration_seconds",
        "How long the last finished run took.",
        |r| {
            r.records
                .last_finished
                .as_ref()
                .and_then(|run| run.duration_s)
        },
    ),
    (
        "leaderrun_last_run_exit_code",
        "The exit code of the last finished run.",
        |r| {
            r.records
                .last_finished
                .as_ref()
                .and_then(|run| run.exit_code)
                .map(f64::from)
        },
    ),
    (
        "leaderrun_last_start_timestamp_seconds",
        "When the last recorded run started, in seconds since the epoch.",
        |r| {
            r.last_start()
                .and_then(|(run, _)| timestamp(Some(&run.started)))
        },
    ),
    (
        "leaderrun_last_start_leader_gone",
        "Whether the last started run has no end recorded and its leader is gone (1) or not (0).",
        |r| {
            let gone = r
                .last_start()
                .is_some_and(|(_, state)| state == StartState::LeaderGone);
            Some(f64::from(u8::from(gone)))
        },
    ),
];

/// The text exposition format: a family a block, a sample per election.
pub fn prometheus(reports: &[Report]) -> String {
    let mut out = String::new();
    for (metric, help, value) in FAMILIES {
        let _ = writeln!(out, "# HELP {metric} {help}");
        let _ = writeln!(out, "# TYPE {metric} gauge");
        for report in reports {
            if let Some(value) = value(report) {
                let election = label(&name::escaped(&report.election));
                let _ = writeln!(out, "{metric}{{election=\"{election}\"}} {value}");
            }
        }
    }
    out
}

/// An RFC 3339 time of a record, in seconds since the epoch.
fn timestamp(at: Option<&str>) -> Option<f64> {
    let at = humantime::parse_rfc3339(at?).ok()?;
    let since = at.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    Some(since.as_secs() as f64)
}

/// A label value as the exposition format escapes it.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
