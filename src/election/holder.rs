//! The value a candidate writes under its key: who it is, so that others can
//! name the holder ("held by pid 4242 on web-2 since ...").

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use crate::etcd::ids::{LeaseId, Token};
use crate::etcd::kv::Kv;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    pub host: String,
    pub pid: u32,
    /// When this holder became leader (RFC 3339, UTC). While queued, when it
    /// joined the queue.
    pub started: String,
    pub command: String,
    /// The --max-running of this holder's run: how many run at once. Left
    /// out when 1, so that single-runner values are what they always were;
    /// 0 for a value another tool wrote (unknown).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_running: usize,
}

/// The field that tells a leaderrun's candidate from another tool's: the
/// lease its key is on, written with the value. Another tool's proposal
/// shaped like our value, or a value copied from another key, does not
/// name the lease of the key it is under; so leaderrun writes (hands over
/// to) no key of another tool's, however its value looks.
const ON_LEASE: &str = "lease";

/// The field a resigning leader adds to the value of the waiter it hands
/// over to: the leader's token.
const HANDED_OVER_BY: &str = "handed_over_by";

/// The field, beside [`HANDED_OVER_BY`], with the candidates behind the
/// one handed over to, in line order, as the resigning leader knew them
/// ([`Behind`]).
const NEXT: &str = "next";

/// The token of the leader that wrote [`NEXT`]: the list is taken only
/// from the handover that wrote it. A leader of an older version, which
/// keeps fields it does not know, may hand over a value holding a list it
/// did not write.
const NEXT_BY: &str = "next_by";

/// The token of the leader whose handover was written only with no pause
/// of the election standing (its transaction compared the pause key
/// away, `election::pause`): the handover then proves that there was
/// none at its revision too, and the waiter reads no pause at its claim.
/// A leader of an older version hands over with no such comparison (and
/// keeps fields it does not know): the field counts only beside the
/// `handed_over_by` of the same token.
const NO_PAUSE_BY: &str = "no_pause_by";

/// What a handover to a waiter says ([`Holder::handover`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Handover {
    /// The candidates behind it that the leader passed on.
    pub passed_on: Vec<Behind>,
    /// The leader's handover was written only with no pause standing.
    pub unpaused: bool,
}

/// A candidate further back in line, as a resigning leader passes it on to
/// the one it hands over to, so that this one hands over in turn with no
/// read of its own: who is behind a waiter changes only by candidates
/// leaving (a newcomer queues at the end), and a handover to one that has
/// left is refused by its comparison of key, token and lease.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Behind {
    pub key: String,
    pub token: Token,
    pub lease: LeaseId,
    /// Its value, as read: what the handover to it rewrites.
    pub value: serde_json::Value,
}

impl Behind {
    /// A candidate as read from its key; None for one that is not a
    /// leaderrun's of this version or later (another tool's, whatever its
    /// value; or an older leaderrun's, which learns its turn by reading).
    pub fn read(kv: &Kv) -> Option<Behind> {
        let value: serde_json::Value = serde_json::from_slice(&kv.value).ok()?;
        let behind = Behind {
            key: String::from_utf8_lossy(&kv.key).into_owned(),
            token: Token::created_at(kv.create_revision),
            lease: kv.lease,
            value,
        };
        behind.is_leaderruns().then_some(behind)
    }

    /// Whether its value was written by a leaderrun for this key: it names
    /// the key's lease. A list passed on by a leader of an older version
    /// may name candidates that are not.
    pub fn is_leaderruns(&self) -> bool {
        self.value.get(ON_LEASE).and_then(serde_json::Value::as_i64) == Some(self.lease.0)
    }
}

/// Who a candidate's value says it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Proclaimed {
    /// A leaderrun's: who, where, since when.
    Leaderrun(Holder),
    /// Another tool's (`etcdctl elect`'s proposal; `etcdctl lock`'s value,
    /// empty), as it is: nothing else of it is known.
    Other(String),
}

impl Proclaimed {
    /// A candidate's value, as read.
    pub fn read(value: &[u8]) -> Proclaimed {
        match serde_json::from_slice(value) {
            Ok(holder) => Proclaimed::Leaderrun(holder),
            Err(_) => Proclaimed::Other(String::from_utf8_lossy(value).into_owned()),
        }
    }

    /// Since when it waits or leads, as its value says (RFC 3339); None
    /// for another tool's.
    pub fn started(&self) -> Option<&str> {
        match self {
            Proclaimed::Leaderrun(holder) => Some(&holder.started),
            Proclaimed::Other(_) => None,
        }
    }

    /// The --max-running its value gives; None for another tool's, which
    /// holds the election alone (etcd's election elects only the first).
    pub fn max_running(&self) -> Option<usize> {
        match self {
            Proclaimed::Leaderrun(holder) => Some(holder.max_running),
            Proclaimed::Other(_) => None,
        }
    }

    /// "pid 4242 on web-2 since 2026-11-29T07:00:00Z", or what another
    /// tool's candidate is known by: its value, or (empty, as `etcdctl
    /// lock` writes it) its key.
    pub fn describe(&self, key: &str) -> String {
        match self {
            Proclaimed::Leaderrun(holder) => holder.describe(),
            Proclaimed::Other(value) if value.is_empty() => format!(
                "another tool's candidate (etcdctl elect or lock), key {} with an empty value",
                printable(key)
            ),
            Proclaimed::Other(value) => format!(
                "another tool's candidate (etcdctl elect or lock), value {}",
                printable(value)
            ),
        }
    }

    /// What `status` shows as the command: a leaderrun's command, or
    /// another tool's value whole.
    pub fn command(&self) -> &str {
        match self {
            Proclaimed::Leaderrun(holder) => &holder.command,
            Proclaimed::Other(value) => value,
        }
    }

    /// The holder for `status --json`: what is not known is null; another
    /// tool's value is shown whole as the command, as it always was, with
    /// `other_tool` true.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Proclaimed::Leaderrun(holder) => serde_json::json!({
                "host": holder.host,
                "pid": holder.pid,
                "started": holder.started,
                "command": holder.command,
            }),
            Proclaimed::Other(value) => serde_json::json!({
                "host": null,
                "pid": null,
                "started": null,
                "command": value,
                "other_tool": true,
            }),
        }
    }
}

fn one() -> usize {
    1
}

fn is_one(count: &usize) -> bool {
    *count == 1
}

impl Holder {
    /// This process as a holder of `command`. With `redact_args`, only the
    /// program is kept: the value is readable by anyone who can read the
    /// election, and arguments may carry secrets.
    pub fn for_this_process(command: &[OsString], redact_args: bool) -> Self {
        let host = nix::unistd::gethostname()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "unknown".into());
        let shown = match command {
            [program, _, ..] if redact_args => {
                format!("{} {ARGUMENTS_REDACTED}", program.to_string_lossy())
            }
            _ => command
                .iter()
                .map(|arg| arg.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let command = bounded(shown);
        Holder {
            host,
            pid: crate::host::pid(),
            started: now_rfc3339(),
            command,
            max_running: 1,
        }
    }

    /// The value as JSON, with nothing added (what older versions wrote).
    #[cfg(test)]
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a struct of strings serializes")
    }

    /// The value of our candidate key on `lease`: this holder, with the
    /// lease that tells it from another tool's ([`ON_LEASE`]).
    pub fn encode_on(&self, lease: LeaseId) -> String {
        #[derive(Serialize)]
        struct OnLease<'a> {
            #[serde(flatten)]
            holder: &'a Holder,
            lease: i64,
        }
        let value = OnLease {
            holder: self,
            lease: lease.0,
        };
        serde_json::to_string(&value).expect("a struct of strings serializes")
    }

    /// Reads a value of leaderrun's own back, for the tests; one that is
    /// not is kept whole as the command. Values another tool may have
    /// written are read so that nothing is invented of them: a candidate's
    /// by [`Proclaimed::read`], a `--once-per` marker's by `once_per`.
    #[cfg(test)]
    pub fn decode(value: &[u8]) -> Self {
        serde_json::from_slice(value).unwrap_or_else(|_| Holder {
            host: "?".into(),
            pid: 0,
            started: "?".into(),
            command: String::from_utf8_lossy(value).into_owned(),
            max_running: 0,
        })
    }

    /// A waiter's value, as the leader that resigns to it rewrites it: the
    /// same value (fields this version does not know kept), with
    /// `handed_over_by` and `no_pause_by` set to the leader's token (the
    /// handover compares the pause away: `Election::resign_with`), and
    /// `next`, the candidates behind it, if any are passed on. None for a
    /// value that is not a JSON object (another tool's candidate: no
    /// handover to it).
    pub fn handed_over(value: &serde_json::Value, by: Token, next: &[Behind]) -> Option<Vec<u8>> {
        let mut value = value.clone();
        let fields = value.as_object_mut()?;
        fields.insert(HANDED_OVER_BY.into(), serde_json::Value::from(by.0));
        fields.insert(NO_PAUSE_BY.into(), serde_json::Value::from(by.0));
        fields.remove(NEXT);
        fields.remove(NEXT_BY);
        if !next.is_empty() {
            fields.insert(NEXT.into(), serde_json::to_value(next).ok()?);
            fields.insert(NEXT_BY.into(), serde_json::Value::from(by.0));
        }
        serde_json::to_vec(&value).ok()
    }

    /// Whether a candidate's value says a resigning leader handed over to
    /// it (see [`Holder::handed_over`]), and if so, the candidates that
    /// leader passed on (none if it passed none, if the list is not that
    /// handover's own, or in a form this version does not read) and
    /// whether it was written with no pause standing. One parse of the
    /// value, on the way from the handover to the command.
    pub fn handover(value: &[u8]) -> Option<Handover> {
        let mut value: serde_json::Value = serde_json::from_slice(value).ok()?;
        let by = value.get(HANDED_OVER_BY)?.as_i64()?;
        let this = |field: &str| value.get(field).and_then(serde_json::Value::as_i64) == Some(by);
        let unpaused = this(NO_PAUSE_BY);
        let passed_on = this(NEXT_BY)
            .then(|| serde_json::from_value(value.get_mut(NEXT)?.take()).ok())
            .flatten();
        Some(Handover {
            passed_on: passed_on.unwrap_or_default(),
            unpaused,
        })
    }

    /// "pid 4242 on web-2 since 2026-11-29T07:00:00Z".
    pub fn describe(&self) -> String {
        format!(
            "pid {} on {} since {}",
            self.pid,
            printable(&self.host),
            printable(&self.started)
        )
    }
}

/// What `--redact-args` stores in place of the arguments.
pub const ARGUMENTS_REDACTED: &str = "[arguments redacted]";

/// The most of a command line a holder value keeps. The value is only for
/// people (`status`, "held by"), and etcd refuses a request over 1.5 MiB
/// while `exec` takes up to 2 MiB of arguments.
const COMMAND_KEPT: usize = 4096;

fn bounded(mut command: String) -> String {
    if command.len() <= COMMAND_KEPT {
        return command;
    }
    let total = command.len();
    let mut end = COMMAND_KEPT;
    while !command.is_char_boundary(end) {
        end -= 1;
    }
    command.truncate(end);
    command.push_str(&format!("... ({total} bytes in all)"));
    command
}

pub use crate::logging::printable;

/// `text` as one shell word that a shell reads back as `text`: in single
/// quotes, or in `$'...'` with escapes when it holds control characters
/// (which single quotes would pass raw to the terminal). For the `etcdctl
/// del` that leaderrun suggests.
pub fn shell_quoted(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut quoted = String::from("$'");
    for byte in text.bytes() {
        match byte {
            b'\\' | b'\'' => {
                quoted.push('\\');
                quoted.push(byte as char);
            }
            0x20..=0x7e => quoted.push(byte as char),
            _ => quoted.push_str(&format!("\\x{byte:02x}")),
        }
    }
    quoted.push('\'');
    quoted
}

/// `etcdctl --endpoints=URLS del KEY`, quoted for the shell, with the
/// endpoints this process reached etcd at.
pub fn etcdctl_del(key: &str) -> String {
    match crate::etcd::endpoints_in_use() {
        Some(endpoints) => format!(
            "etcdctl --endpoints={} del {}",
            shell_quoted(endpoints),
            shell_quoted(key)
        ),
        None => format!("etcdctl del {}", shell_quoted(key)),
    }
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(crate::clock::wall()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_commands_are_cut_and_control_characters_escaped() {
        let long = "x".repeat(COMMAND_KEPT * 3);
        let holder = Holder::for_this_process(&[long.into()], false);
        assert!(
            holder.command.len() < COMMAND_KEPT + 40,
            "{}",
            holder.command.len()
        );
        assert!(holder
            .command
            .ends_with(&format!("({} bytes in all)", COMMAND_KEPT * 3)));
        assert_eq!(printable("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("plain"), "plain");
    }

    #[test]
    fn keys_are_quoted_for_the_shell() {
        assert_eq!(shell_quoted("jobs/a"), "'jobs/a'");
        assert_eq!(shell_quoted("q/it's/1"), r"'q/it'\''s/1'");
        assert_eq!(shell_quoted("a\x1bb'c"), r"$'a\x1bb\'c'");
        assert_eq!(shell_quoted("é\n"), r"$'\xc3\xa9\x0a'");
    }

    #[test]
    fn redacted_holders_keep_only_the_program() {
        let command = ["psql".into(), "postgres://u:secret@db".into()];
        let holder = Holder::for_this_process(&command, true);
        assert_eq!(holder.command, "psql [arguments redacted]");
        assert_eq!(
            Holder::for_this_process(&["true".into()], true).command,
            "true"
        );
    }

    #[test]
    fn a_handover_passes_on_who_is_behind_and_keeps_the_value() {
        let holder = Holder::for_this_process(&["true".into()], false);
        let value: serde_json::Value = serde_json::from_str(&holder.encode()).unwrap();
        let behind = Behind::read(&Kv::written(
            "jobs/a/2",
            9,
            2,
            holder.encode_on(LeaseId(2)).as_bytes(),
        ))
        .unwrap();
        let handed = Holder::handed_over(&value, Token(7), std::slice::from_ref(&behind)).unwrap();
        assert_eq!(Holder::decode(&handed), holder, "the holder is kept");
        assert_eq!(
            Holder::handover(&handed).unwrap(),
            Handover {
                passed_on: vec![behind.clone()],
                unpaused: true
            }
        );
        // Handed over on in turn, what was passed on before is not kept.
        let again: serde_json::Value = serde_json::from_slice(&handed).unwrap();
        let handed = Holder::handed_over(&again, Token(8), &[]).unwrap();
        let unpaused = Handover {
            passed_on: Vec::new(),
            unpaused: true,
        };
        assert_eq!(Holder::handover(&handed), Some(unpaused));
        // Handed over on by a leader that keeps fields it does not know
        // (an older version): neither the list nor the pause's absence is
        // that handover's.
        let mut kept: serde_json::Value = serde_json::from_slice(
            &Holder::handed_over(&value, Token(7), std::slice::from_ref(&behind)).unwrap(),
        )
        .unwrap();
        kept["handed_over_by"] = serde_json::Value::from(8);
        let unknown = Handover {
            passed_on: Vec::new(),
            unpaused: false,
        };
        assert_eq!(Holder::handover(kept.to_string().as_bytes()), Some(unknown));
        // No handover: a waiter's own value, or another tool's.
        assert_eq!(Holder::handover(holder.encode().as_bytes()), None);
        assert_eq!(Holder::handover(b"etcdctl-value"), None);
        assert!(Behind::read(&Kv::written("jobs/a/3", 9, 3, b"etcdctl-value")).is_none());
    }

    #[test]
    fn only_a_value_that_names_its_keys_lease_is_a_leaderruns_to_hand_over_to() {
        let holder = Holder::for_this_process(&["true".into()], false);
        let ours = holder.encode_on(LeaseId(0x2a));
        assert!(Behind::read(&Kv::written("jobs/y/2a", 9, 0x2a, ours.as_bytes())).is_some());
        // The same value under a key on another lease (copied, or another
        // tool's proposal shaped like ours), and one of an older version.
        assert!(Behind::read(&Kv::written("jobs/y/2b", 9, 0x2b, ours.as_bytes())).is_none());
        let proposal = r#"{"host":"web-9","pid":4242,"started":"2026-01-01T00:00:00Z","command":"my-proposal"}"#;
        assert!(Behind::read(&Kv::written("jobs/y/2c", 9, 0x2c, proposal.as_bytes())).is_none());
        // What names the lease is read back as the holder it was.
        assert_eq!(
            Proclaimed::read(ours.as_bytes()),
            Proclaimed::Leaderrun(holder)
        );
    }

    #[test]
    fn round_trips_and_tolerates_foreign_values() {
        let holder = Holder::for_this_process(&["sleep".into(), "1".into()], false);
        assert_eq!(Holder::decode(holder.encode().as_bytes()), holder);
        assert_eq!(Holder::decode(b"etcdctl-value").command, "etcdctl-value");
        assert_eq!(Holder::decode(b"etcdctl-value").max_running, 0, "unknown");
        // --max-running is written only when it is not 1, and fields of
        // another version (a handover's) are passed over.
        let many = Holder {
            max_running: 3,
            ..holder.clone()
        };
        assert!(!holder.encode().contains("max_running"));
        assert_eq!(Holder::decode(many.encode().as_bytes()).max_running, 3);
        let mut newer: serde_json::Value = serde_json::from_str(&holder.encode()).unwrap();
        newer["handed_over_by"] = 7.into();
        newer["from_the_future"] = "x".into();
        assert_eq!(Holder::decode(newer.to_string().as_bytes()), holder);
    }
}
