//! A [`Report`] as text for people, or as one JSON object for programs.
//! Values written by other tools are escaped ([`printable`]) in the text.
//! A name that is not UTF-8 is shown with its bad bytes as `\xNN`
//! ([`name::escaped`]) everywhere; the JSON adds its exact bytes in base64.

use serde_json::json;

use super::{Report, StartState};
use crate::election::holder::{etcdctl_del, printable};
use crate::election::name;
use crate::election::once_per::{self, Marker};
use crate::election::pause::Paused;
use crate::election::record::Record;
use crate::etcd::ids::LeaseId;

pub fn json(report: &Report) -> String {
    format!("{}\n", json_value(report))
}

/// A report as one JSON object.
pub fn json_value(report: &Report) -> serde_json::Value {
    let mut object = leader_json(report);
    // Only for a name that is not UTF-8, whose "name" is then escaped
    // text (and could be a UTF-8 name's too): its exact bytes.
    if std::str::from_utf8(&report.election).is_err() {
        object["name_base64"] = base64(&report.election).into();
    }
    object["paused"] = report.paused.as_ref().map(pause_json).unwrap_or_default();
    object["last_run"] = report
        .marker
        .as_ref()
        .map(last_run_json)
        .unwrap_or_default();
    records_json(report, &mut object);
    if report.max_running > 1 {
        let holders: Vec<_> = report.runners.iter().map(runner_json).collect();
        object["holders"] = holders.into();
        object["max_running"] = report.max_running.into();
    }
    object
}

/// The report's name, leader and waiters.
fn leader_json(report: &Report) -> serde_json::Value {
    let election = name::escaped(&report.election);
    match &report.leader {
        Some(leader) => json!({
            "name": election,
            "key": leader.key,
            "token": leader.token,
            "lease": format!("{:x}", leader.lease),
            "ttl": report.ttl,
            "holder": leader.holder.json(),
            "waiters": report.waiters(),
            "queue": queue_json(report),
        }),
        None => json!({
            "name": election, "key": null, "token": null, "lease": null,
            "ttl": null, "holder": null, "waiters": report.waiters(),
            "queue": queue_json(report),
        }),
    }
}

/// Those waiting, in line order: each with its place in line (the
/// leader's is 1), its key, token and lease, and what its value says
/// (host, pid, since when it waits, command).
fn queue_json(report: &Report) -> serde_json::Value {
    report
        .waiting
        .iter()
        .map(|(place, waiter)| {
            let mut shown = runner_json(waiter);
            shown["place"] = (*place).into();
            shown
        })
        .collect::<Vec<_>>()
        .into()
}

/// The election's pause: who, where, since and until when, and why, as
/// `leaderrun pause` wrote them (`until` and `reason` null when not
/// given); for a value leaderrun did not write, only `raw`, its text.
fn pause_json(paused: &Paused) -> serde_json::Value {
    let lease = match paused.lease {
        LeaseId::NONE => serde_json::Value::Null,
        lease => format!("{lease:x}").into(),
    };
    match &paused.value {
        Ok(pause) => json!({
            "user": pause.user,
            "host": pause.host,
            "since": pause.since,
            "until": pause.until,
            "reason": pause.reason,
            "lease": lease,
        }),
        Err(raw) => {
            let mut shown = json!({
                "raw": name::escaped(raw),
                "lease": lease,
            });
            // As for a name: its exact bytes, when they are not text.
            if std::str::from_utf8(raw).is_err() {
                shown["raw_base64"] = base64(raw).into();
            }
            shown
        }
    }
}

/// The `--once-per` window: its latest run, its attempts, what they leave
/// of it, and what it has left. A marker leaderrun did not write claims no
/// run: only its value is given (`raw`, escaped; `raw_base64` too where it
/// is not text).
fn last_run_json(marker: &Marker) -> serde_json::Value {
    let mut shown = match &marker.last {
        Some(last) => json!({
            "written_by_leaderrun": true,
            "host": last.holder.host,
            "pid": last.holder.pid,
            "started": last.holder.started,
            "command": last.holder.command,
            "token": last.token,
            "attempts_allowed": last.allowed(),
            "attempts": last.attempts,
        }),
        None => {
            let mut shown = json!({
                "written_by_leaderrun": false,
                "raw": name::escaped(&marker.raw),
            });
            if std::str::from_utf8(&marker.raw).is_err() {
                shown["raw_base64"] = base64(&marker.raw).into();
            }
            shown
        }
    };
    shown["verdict"] = marker.verdict_name().into();
    shown["stuck"] = marker.stuck().into();
    shown["window_left"] = marker.left.map(|left| left.as_secs()).into();
    shown
}

/// Adds the run records to `object`: the last start with where it
/// stands, the last run that finished, the last that succeeded.
fn records_json(report: &Report, object: &mut serde_json::Value) {
    let records = &report.records;
    object["last_started"] = report
        .last_start()
        .map(|(started, state)| {
            let mut shown = record_json(started);
            shown["state"] = state.name().into();
            shown
        })
        .unwrap_or_default();
    object["last_finished"] = records
        .last_finished
        .as_ref()
        .map(record_json)
        .unwrap_or_default();
    object["last_succeeded"] = records
        .last_succeeded
        .as_ref()
        .map(record_json)
        .unwrap_or_default();
}

/// A run record in JSON: exactly these names, which scripts read.
fn record_json(record: &Record) -> serde_json::Value {
    json!({
        "host": record.host,
        "pid": record.pid,
        "token": record.token,
        "command": record.command,
        "started": record.started,
        "finished": record.finished,
        "duration_s": record.duration_s,
        "exit_code": record.exit_code,
        "outcome": record.outcome.name(),
    })
}

/// "succeeded on web-2, 2026-11-29T00:00:01Z to 2026-11-29T00:03:12Z (3m 11s),
/// token 1187".
pub fn run_line(record: &Record) -> String {
    let outcome = record.outcome.name().replace('_', " ");
    let took = record.duration_s.map(|seconds| {
        humantime::format_duration(std::time::Duration::from_secs(seconds.round() as u64))
    });
    let until = match (&record.finished, took) {
        (Some(finished), Some(took)) => format!(" to {} ({took})", printable(finished)),
        _ => String::new(),
    };
    format!(
        "{outcome} on {}, {}{until}, token {}",
        printable(&record.host),
        printable(&record.started),
        record.token
    )
}

/// One runner of a --max-running election.
fn runner_json(runner: &crate::election::Leader) -> serde_json::Value {
    let mut shown = json!({
        "key": runner.key,
        "token": runner.token,
        "lease": format!("{:x}", runner.lease),
    });
    if let (Some(shown), serde_json::Value::Object(holder)) =
        (shown.as_object_mut(), runner.holder.json())
    {
        shown.extend(holder);
    }
    shown
}

pub fn text(report: &Report) -> String {
    let election = name::escaped(&report.election);
    let mut lines = vec![format!("election: {}", printable(&election))];
    match &report.leader {
        Some(leader) => {
            let left = report
                .ttl
                .map_or_else(|| "expired".into(), |ttl| format!("{ttl}s left"));
            lines.extend([
                format!("leader:   {}", leader.describe()),
                format!("command:  {}", command_shown(leader.holder.command())),
                format!("token:    {}", leader.token),
                format!("key:      {}", printable(&leader.key)),
                format!("lease:    {:x} ({left})", leader.lease),
            ]);
        }
        None => lines.push("leader:   none".into()),
    }
    if let Some(paused) = &report.paused {
        lines.push(format!(
            "paused:   {}; no run starts until it ends (leaderrun resume)",
            paused.describe()
        ));
    }
    if report.max_running > 1 {
        lines.push(format!(
            "running:  {} of at most {} (--max-running)",
            report.runners.len(),
            report.max_running
        ));
        for runner in &report.runners {
            lines.push(format!("runner:   {}", runner.describe()));
        }
    }
    lines.extend(waiting_lines(report));
    match report.last_start() {
        Some((run, StartState::Running)) => lines.push(format!("this run: {}", run_line(run))),
        Some((run, StartState::LeaderGone)) => lines.push(format!(
            "last start: on {}, {}, token {}; no end recorded: its leader is gone",
            printable(&run.host),
            printable(&run.started),
            run.token
        )),
        Some((_, StartState::Ended)) | None => {}
    }
    if let Some(last) = &report.records.last_finished {
        lines.push(format!("last run: {}", run_line(last)));
    }
    if let Some(last) = &report.records.last_succeeded {
        lines.push(format!("last success: {}", run_line(last)));
    }
    if let Some(marker) = &report.marker {
        lines.push(window(&election, marker));
    }
    lines.join("\n") + "\n"
}

/// A holder's command as the text shows it: another tool's candidate
/// with an empty value (`etcdctl lock`'s) tells none, and says so.
fn command_shown(command: &str) -> std::borrow::Cow<'_, str> {
    match command.is_empty() {
        true => "(none told: another tool's candidate with an empty value)".into(),
        false => printable(command),
    }
}

/// How many of those waiting the text lists, in line order.
const SHOWN_WAITING: usize = 20;

/// "waiting:" with how many wait, then the first [`SHOWN_WAITING`] of
/// them, a line each.
fn waiting_lines(report: &Report) -> Vec<String> {
    let mut lines = vec![format!("waiting:  {}", report.waiters())];
    for (place, waiter) in report.waiting.iter().take(SHOWN_WAITING) {
        lines.push(format!(
            "  {place}. {}: {}",
            waiter.describe(),
            command_shown(waiter.holder.command())
        ));
    }
    let more = report.waiters().saturating_sub(SHOWN_WAITING);
    if more > 0 {
        lines.push(format!("  ... and {more} more (all of them: --json)"));
    }
    lines
}

/// The `--once-per` line: whose run opened the window, and when it closes.
fn window(election: &str, marker: &Marker) -> String {
    let left = match (marker.lease, marker.left) {
        (LeaseId::NONE, _) if marker.stuck() => format!(
            "never closes: the marker has no lease, so no run starts until it is removed (stuck; remove it with: {})",
            etcdctl_del(&once_per::marker_key(election))
        ),
        (LeaseId::NONE, _) => "never closes: the marker has no lease".into(),
        (_, None) => "closing".into(),
        (_, Some(left)) => format!("closes in {}", humantime::format_duration(left)),
    };
    format!("once-per: {}; the window {left}", marker.describe())
}

/// Standard base64 (RFC 4648, with padding), as `base64 -d` reads it: for
/// the one field that needs it, not worth a dependency.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk.iter().enumerate().fold(0u32, |group, (at, &byte)| {
            group | u32::from(byte) << (16 - 8 * at)
        });
        for at in 0..4 {
            if at <= chunk.len() {
                out.push(char::from(ALPHABET[(group >> (18 - 6 * at)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        // RFC 4648's own test vectors.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        assert_eq!(base64(b"odd/\xfe"), "b2RkL/4=");
        assert_eq!(base64(b"odd/\xff"), "b2RkL/8=");
    }
}
