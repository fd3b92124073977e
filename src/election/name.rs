//! Election names, and the layout of every key leaderrun writes. Without
//! `--name`, the name comes from the command line, so that the same crontab
//! line on every replica joins the same election.
//!
//! The keys of election `<name>`:
//! - `<name>/<lease id in lower-case hex>`: a candidate ([`candidate_key`]),
//!   as etcd's election API (and `etcdctl elect`) writes it;
//! - `<name>.once-per`, `<name>.last-started`, `<name>.last-finished`,
//!   `<name>.last-succeeded`, `<name>.paused`: kept beside the election ([`Beside`]), never
//!   under `<name>/`, where they would count as candidates.
//!
//! Names are bytes, as etcd's keys are: a name that is not UTF-8 (one
//! `etcdctl elect` was given) has keys of its own, read with the `raw_`
//! functions.

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::etcd::ids::LeaseId;

/// `leaderrun/<program basename>-<8 hex digits of a hash of the whole argv>`.
/// The hash is FNV-1a, spelled out here so it never changes between builds or
/// Rust versions: a changed name would split an election across an upgrade.
pub fn derive(command: &[OsString]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for arg in command {
        for &byte in arg.as_bytes().iter().chain(std::iter::once(&0u8)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let program = command
        .first()
        .and_then(|first| Path::new(first).file_name())
        .map(|base| base.to_string_lossy().into_owned())
        .unwrap_or_default();
    let readable: String = program
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!(
        "leaderrun/{readable}-{:08x}",
        (hash >> 32) ^ (hash & 0xffff_ffff)
    )
}

/// The prefix every candidate's key lives under, as etcd's election API uses.
pub fn prefix(name: &str) -> String {
    format!("{name}/")
}

/// The end of the range of keys that start with `prefix`; None for every
/// key (an empty prefix, or one of 0xff bytes).
pub fn range_end(prefix: &str) -> Option<Vec<u8>> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A candidate's key: `<name>/<lease id in lower-case hex>`, as etcd's
/// election API (and so `etcdctl elect`) writes it.
pub fn candidate_key(name: &str, lease: LeaseId) -> String {
    format!("{name}/{lease:x}")
}

/// Whether `key` is a candidate of election `name`: its prefix, then a lease
/// id in lower-case hex (1 to 16 digits: `%x` drops leading zeros), then
/// nothing. Matching the prefix alone would count the keys of election
/// `name/sub` (`name/sub/<lease>`) as candidates of `name`, and the two
/// elections would block each other.
///
/// The name is bytes: etcd's keys are, and a name that is not UTF-8 (one
/// `etcdctl elect` was given) must match its own keys, not a lossy copy.
pub fn is_candidate(name: impl AsRef<[u8]>, key: &[u8]) -> bool {
    key.strip_prefix(name.as_ref())
        .and_then(|rest| rest.strip_prefix(b"/"))
        .is_some_and(|lease| {
            (1..=16).contains(&lease.len())
                && lease
                    .iter()
                    .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(byte))
        })
}

/// A key leaderrun keeps beside an election: `<name><suffix>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beside {
    /// The `--once-per` window's marker (`election::once_per`).
    OncePer,
    /// The run records (`election::record`).
    LastStarted,
    LastFinished,
    LastSucceeded,
    /// A fleet-wide pause (`election::pause`).
    Paused,
}

impl Beside {
    pub const ALL: [Beside; 5] = [
        Beside::OncePer,
        Beside::LastStarted,
        Beside::LastFinished,
        Beside::LastSucceeded,
        Beside::Paused,
    ];

    fn suffix(self) -> &'static str {
        match self {
            Beside::OncePer => ".once-per",
            Beside::LastStarted => ".last-started",
            Beside::LastFinished => ".last-finished",
            Beside::LastSucceeded => ".last-succeeded",
            Beside::Paused => ".paused",
        }
    }

    /// This key of election `name`.
    pub fn key(self, name: &str) -> String {
        format!("{name}{}", self.suffix())
    }

    /// This key of a name as bytes, which need not be UTF-8.
    pub fn raw_key(self, name: &[u8]) -> Vec<u8> {
        [name, self.suffix().as_bytes()].concat()
    }
}

/// The election a key belongs to, if it is one of leaderrun's: a
/// candidate's, or one kept beside an election.
pub fn election_of(key: &[u8]) -> Option<&[u8]> {
    let beside = Beside::ALL
        .iter()
        .find_map(|which| key.strip_suffix(which.suffix().as_bytes()));
    if let Some(name) = beside {
        return Some(name).filter(|name| !name.is_empty());
    }
    let slash = key.iter().rposition(|&byte| byte == b'/')?;
    let name = &key[..slash];
    (!name.is_empty() && is_candidate(name, key)).then_some(name)
}

/// [`prefix`] of a name as bytes, which need not be UTF-8.
pub fn raw_prefix(name: &[u8]) -> Vec<u8> {
    [name, b"/"].concat()
}

/// The end of the range of keys under `raw_prefix(name)`: the prefix ends
/// in `/`, and the next byte after `/` is `0`.
pub fn raw_prefix_end(name: &[u8]) -> Vec<u8> {
    [name, b"0"].concat()
}

/// A name or key (bytes) as text: its UTF-8 as it is, and each byte that
/// is not part of valid UTF-8 as `\xNN`. Unlike a lossy conversion, which
/// turns every such byte into U+FFFD, it keeps `odd/\xfe` and `odd/\xff`
/// apart. Borrowed, unchanged, when the bytes are UTF-8.
pub fn escaped(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.into();
    }
    let mut shown = String::new();
    for chunk in bytes.utf8_chunks() {
        shown.push_str(chunk.valid());
        for byte in chunk.invalid() {
            shown.push_str(&format!("\\x{byte:02x}"));
        }
    }
    shown.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_prefix_ends_where_its_last_byte_that_can_grow_grows() {
        assert_eq!(range_end("jobs/"), Some(b"jobs0".to_vec()));
        assert_eq!(range_end(""), None);
    }

    #[test]
    fn derived_names_are_stable_readable_and_distinct() {
        let a = derive(&argv(&["/usr/bin/nightly batch", "--all"]));
        assert_eq!(a, derive(&argv(&["/usr/bin/nightly batch", "--all"])));
        assert!(a.starts_with("leaderrun/nightly_batch-"), "{a}");
        // Argument boundaries count: "a b" differs from "a", "b".
        assert_ne!(
            derive(&argv(&["sh", "a b"])),
            derive(&argv(&["sh", "a", "b"]))
        );
        assert_ne!(a, derive(&argv(&["/usr/bin/nightly batch"])));
        // Pinned, so an accidental change of the hash fails here.
        assert_eq!(derive(&argv(&["true"])), "leaderrun/true-ab0b26f8");
    }

    #[test]
    fn names_that_are_not_utf8_are_escaped_apart() {
        assert_eq!(escaped(b"jobs/a"), "jobs/a");
        assert!(matches!(escaped(b"jobs/a"), Cow::Borrowed(_)));
        assert_eq!(escaped(b"odd/\xfe"), "odd/\\xfe");
        assert_eq!(escaped(b"odd/\xff/1f"), "odd/\\xff/1f");
        // Valid UTF-8 around and between the bad bytes is kept.
        assert_eq!(escaped("é\u{0}".as_bytes()), "é\u{0}");
        assert_eq!(escaped(b"a\xc3b\xe2\x82"), "a\\xc3b\\xe2\\x82");
    }

    #[test]
    fn keys_match_etcd_election_layout() {
        assert_eq!(
            candidate_key("jobs/x", LeaseId(0x694d_9a5b_c1f2_1a0b)),
            "jobs/x/694d9a5bc1f21a0b"
        );
    }

    #[test]
    fn keys_name_their_elections() {
        let of = |key: &'static [u8]| election_of(key);
        assert_eq!(of(b"jobs/a/694d9a5bc1f21a0b"), Some(&b"jobs/a"[..]));
        assert_eq!(of(b"jobs/a.last-finished"), Some(&b"jobs/a"[..]));
        assert_eq!(of(b"jobs/a.once-per"), Some(&b"jobs/a"[..]));
        assert_eq!(of(b"jobs/a/sweep"), None);
        assert_eq!(of(b"unrelated"), None);
        assert_eq!(of(b".once-per"), None);
        // Names that are not UTF-8 are found, each under its own bytes.
        assert_eq!(of(b"odd/\xfe/694d9a5bc1f21a0b"), Some(&b"odd/\xfe"[..]));
        assert_eq!(of(b"odd/\xff.last-started"), Some(&b"odd/\xff"[..]));
        for which in Beside::ALL {
            assert_eq!(
                election_of(which.key("jobs/a").as_bytes()),
                Some(&b"jobs/a"[..])
            );
            assert_eq!(which.raw_key(b"jobs/a"), which.key("jobs/a").as_bytes());
            assert!(!is_candidate("jobs/a", which.key("jobs/a").as_bytes()));
        }
        assert_eq!(Beside::OncePer.key("j"), "j.once-per");
        assert_eq!(Beside::LastStarted.key("j"), "j.last-started");
        assert_eq!(Beside::LastFinished.key("j"), "j.last-finished");
        assert_eq!(Beside::LastSucceeded.key("j"), "j.last-succeeded");
    }

    #[test]
    fn only_a_lease_id_after_the_prefix_makes_a_candidate() {
        assert!(is_candidate("pfx/a", b"pfx/a/694d9a5bc1f21a0b"));
        assert!(is_candidate("pfx/a", b"pfx/a/1f"));
        assert!(is_candidate(
            "pfx/a",
            candidate_key("pfx/a", LeaseId(1)).as_bytes()
        ));
        assert!(is_candidate(
            "pfx/a",
            candidate_key("pfx/a", LeaseId(i64::MAX)).as_bytes()
        ));
        // Another election's candidate, under ours.
        assert!(!is_candidate("pfx/a", b"pfx/a/b/694d9a5bc1f21a0b"));
        assert!(!is_candidate("pfx/a", b"pfx/a/1f/694d9a5bc1f21a0b"));
        assert!(!is_candidate("pfx/a", b"pfx/ab/1f"));
        assert!(!is_candidate("pfx/a", b"pfx/a/"));
        assert!(!is_candidate("pfx/a", b"pfx/a/694d9a5bc1f21a0b0"));
        assert!(!is_candidate("pfx/a", b"pfx/a/694D9A"));
        assert!(!is_candidate("pfx/a", b"pfx/a/sweep"));
        assert!(!is_candidate("pfx/a", b"pfx/a.once-per"));
        assert_eq!(raw_prefix_end(b"pfx/a"), b"pfx/a0");
        assert!(is_candidate(b"odd/\xfe", b"odd/\xfe/1f"));
        assert!(!is_candidate(b"odd/\xfe", b"odd/\xff/1f"));
        assert_eq!(raw_prefix(b"odd/\xfe"), b"odd/\xfe/");
        assert_eq!(raw_prefix_end(b"odd/\xfe"), b"odd/\xfe0");
        assert!(prefix("pfx/a").as_bytes() < raw_prefix_end(b"pfx/a").as_slice());
    }
}
