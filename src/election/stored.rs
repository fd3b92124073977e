//! Test builds only: the stored formats as docs/operating.md lists them
//! ("Upgrades and compatibility") against what the code writes. Every
//! field of a value written with all its optional fields must be named in
//! its bullet there, and every optional field in the section's list of
//! those added so far; a field added without a word fails here.

use super::holder::{Behind, Holder};
use super::once_per::{Attempt, LastRun};
use super::record::{Outcome, Record};
use crate::etcd::ids::{LeaseId, Revision, Token};
use crate::etcd::kv::Kv;

const OPERATING: &str = include_str!("../../docs/operating.md");

/// The section on stored formats.
fn section() -> &'static str {
    let start = OPERATING
        .find("## Upgrades and compatibility")
        .expect("the section on stored formats");
    let rest = &OPERATING[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 3);
    &rest[..end]
}

/// The bullet of the section that begins with `title`.
fn bullet(title: &str) -> &'static str {
    let section = section();
    let start = section
        .find(&format!("- **{title}"))
        .unwrap_or_else(|| panic!("a bullet for {title}"));
    let rest = &section[start + 2..];
    let end = rest.find("\n- ").unwrap_or(rest.len());
    &rest[..end]
}

/// The words in backquotes of `text`: the names it gives.
fn named(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|quoted| {
            quoted
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| !word.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The top-level fields of `json`.
fn fields(json: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(json).expect("JSON");
    value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn holder() -> Holder {
    Holder {
        host: "web-2".into(),
        pid: 42,
        started: "2026-12-03T00:00:00Z".into(),
        command: "true".into(),
        max_running: 3,
    }
}

/// A candidate's value with every field it may carry: handed over to,
/// with someone passed on behind it.
fn candidate() -> String {
    let lease = LeaseId(0x2a);
    let value = holder().encode_on(lease);
    let behind =
        Behind::read(&Kv::written("j/2a", 9, lease.0, value.as_bytes())).expect("our own value");
    let value: serde_json::Value = serde_json::from_str(&value).unwrap();
    let handed = Holder::handed_over(&value, Token(7), &[behind]).expect("a handover");
    String::from_utf8(handed).unwrap()
}

fn record() -> String {
    serde_json::to_string(&Record {
        host: "web-2".into(),
        pid: 42,
        token: Token(7),
        command: "true".into(),
        started: "s".into(),
        finished: Some("f".into()),
        duration_s: Some(1.0),
        exit_code: Some(0),
        outcome: Outcome::Succeeded,
        once_per_s: Some(3600),
        proven_at: Some(Revision(8)),
    })
    .unwrap()
}

fn attempt() -> Attempt {
    Attempt {
        token: Token(7),
        key: "j/2a".into(),
        host: "web-2".into(),
        pid: 42,
        started: "s".into(),
        state: "failed".into(),
        exit_code: Some(1),
        why: Some("exited with 1".into()),
    }
}

fn marker() -> String {
    serde_json::to_string(&LastRun {
        holder: holder(),
        token: Token(7),
        window_s: Some(3600),
        attempts_allowed: Some(3),
        attempts: vec![attempt()],
    })
    .unwrap()
}

fn pause() -> String {
    serde_json::to_string(&super::pause::Pause {
        until: Some("u".into()),
        reason: Some("r".into()),
        ..super::pause::Pause::by_us(None)
    })
    .unwrap()
}

/// The fields every version writes: the others are optional, added since.
const ALWAYS: [&str; 10] = [
    "host",
    "pid",
    "started",
    "command",
    "token",
    "window_s",
    "finished",
    "duration_s",
    "exit_code",
    "outcome",
];

#[test]
fn every_stored_field_is_documented() {
    let optional = {
        let list = section()
            .split("so far")
            .nth(1)
            .expect("the list of optional fields added so far");
        named(&list[..list.find(';').unwrap_or(list.len())])
    };
    // The pause's fields, all there since its first version (`until` and
    // `reason` when given).
    let paused = ["host", "user", "since", "until", "reason"];
    // An attempt's, all there since attempts were added (`exit_code` and
    // `why` once it ended so).
    let attempt_fields = [
        "token",
        "key",
        "host",
        "pid",
        "started",
        "state",
        "exit_code",
        "why",
    ];
    let attempt = serde_json::to_string(&attempt()).unwrap();
    for (title, json, first) in [
        ("The holder value", candidate(), &[][..]),
        ("The `--once-per` marker", marker(), &[]),
        ("The run records", record(), &[]),
        ("The pause", pause(), &paused),
        ("The `--once-per` marker", attempt, &attempt_fields),
    ] {
        let documented = named(bullet(title));
        for field in fields(&json) {
            assert!(
                documented.contains(&field),
                "docs/operating.md's \"{title}\" does not name `{field}`, which the code writes: {json}"
            );
            assert!(
                ALWAYS.contains(&field.as_str())
                    || first.contains(&field.as_str())
                    || optional.contains(&field),
                "`{field}` ({title}) is not in the list of optional fields added so far"
            );
        }
    }
}
