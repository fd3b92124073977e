//! The numbers etcd hands out, each its own type, so that a lease id, a
//! store revision and a fencing token cannot be passed for one another:
//! all three are an `i64` on the wire.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A lease's id, as etcd granted it. Shown in lower-case hex (`{:x}`), as
/// etcd and `etcdctl` show it, and as a candidate's key spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LeaseId(pub i64);

impl LeaseId {
    /// No lease: what etcd reports for a key that is attached to none.
    pub const NONE: LeaseId = LeaseId(0);
}

impl fmt::LowerHex for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

/// A revision of etcd's store: every write makes the next one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Revision(pub i64);

impl Revision {
    /// The revision after this one: where a watch goes on from.
    pub fn next(self) -> Revision {
        Revision(self.0 + 1)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A run's fencing token: the create revision of its candidate key,
/// unique in the cluster and larger for every later candidate. A rewrite
/// of the key keeps it; only a new key gets a new one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Token(pub i64);

impl Token {
    /// The token of a key created at `revision`.
    pub fn created_at(revision: Revision) -> Token {
        Token(revision.0)
    }

    /// The revision the key was created at.
    pub fn revision(self) -> Revision {
        Revision(self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_show_and_serialize_as_their_numbers() {
        assert_eq!(format!("{:x}", LeaseId(0x694d_9a5b)), "694d9a5b");
        assert_eq!(Token(42).to_string(), "42");
        assert_eq!(serde_json::to_string(&Token(42)).unwrap(), "42");
        assert_eq!(serde_json::from_str::<Token>("7").unwrap(), Token(7));
        assert_eq!(Revision(9).next(), Revision(10));
        assert_eq!(Token::created_at(Revision(5)).revision(), Revision(5));
    }
}
