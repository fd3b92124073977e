//! What can happen to what a run holds in etcd (its key, its place in
//! line), and how a run ends, in the words of its records.

use std::fmt;

/// Why a place in the queue is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlaceLost {
    /// etcd said our lease is gone (revoked, or expired while we waited).
    LeaseGone,
    /// Our turn came, but the lease's local deadline had passed by then
    /// (leaderrun stopped or starved): it may have expired, our key with it.
    Unsure,
    /// Our key is not there any more, or not ours.
    Key(KeyLoss),
}

/// What happened to a key we hold, as seen by reading or watching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyLoss {
    Deleted,
    /// Another key of the same name, created later.
    Replaced,
    /// Same create revision, but written by someone else: a plain `put`
    /// keeps the create revision and drops (or changes) the lease.
    Overwritten,
}

impl fmt::Display for KeyLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            // A revoked lease deletes the key too, and the deletion is
            // usually seen before the renewal that would say so.
            KeyLoss::Deleted => "the leader key was deleted (by hand, or with its lease)",
            KeyLoss::Replaced => "the leader key was replaced",
            KeyLoss::Overwritten => "the leader key was overwritten by another writer",
        })
    }
}

impl fmt::Display for PlaceLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlaceLost::LeaseGone => "etcd says our lease is gone",
            PlaceLost::Unsure => {
                "our turn came after our lease's local deadline (was leaderrun stopped?): it may have expired"
            }
            PlaceLost::Key(KeyLoss::Deleted) => "our key disappeared while queued",
            PlaceLost::Key(KeyLoss::Replaced) => "our key was replaced by another while queued",
            PlaceLost::Key(KeyLoss::Overwritten) => {
                "our key was overwritten by another writer while queued"
            }
        })
    }
}

/// How a run ended, from a fixed set that scripts may rely on: the
/// records store it by [`Outcome::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Running,
    Succeeded,
    Failed,
    Signalled,
    Lost,
    TimedOut,
    NotStarted,
}

impl Outcome {
    /// Every outcome, in the order above.
    pub const ALL: [Outcome; 7] = [
        Outcome::Running,
        Outcome::Succeeded,
        Outcome::Failed,
        Outcome::Signalled,
        Outcome::Lost,
        Outcome::TimedOut,
        Outcome::NotStarted,
    ];

    /// Its name in the records, in JSON and in `status`.
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Running => "running",
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Signalled => "signalled",
            Outcome::Lost => "lost",
            Outcome::TimedOut => "timed_out",
            Outcome::NotStarted => "not_started",
        }
    }

    /// The outcome named `name`, if this version knows it.
    pub fn named(name: &str) -> Option<Outcome> {
        Outcome::ALL
            .into_iter()
            .find(|outcome| outcome.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loss_is_said_in_words_of_its_own() {
        let keys = [KeyLoss::Deleted, KeyLoss::Replaced, KeyLoss::Overwritten];
        let mut said: Vec<String> = keys.iter().map(ToString::to_string).collect();
        let places = [PlaceLost::LeaseGone, PlaceLost::Unsure];
        said.extend(places.iter().map(ToString::to_string));
        said.extend(keys.map(|key| PlaceLost::Key(key).to_string()));
        for (i, words) in said.iter().enumerate() {
            assert!(words.len() > 10, "{words:?}");
            assert!(!said[..i].contains(words), "{words:?} twice");
        }
    }

    #[test]
    fn every_outcome_is_named_once_and_read_back() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::named(outcome.name()), Some(outcome));
        }
        assert_eq!(Outcome::named("some_newer_outcome"), None);
    }
}
