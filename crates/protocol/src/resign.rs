//! The way out, as a state machine: what a run gives back and writes as
//! it ends, in which order, and what each answer from etcd changes. The
//! run (`run::session`) performs each [`Effect`] with etcd and feeds back
//! what came of it ([`Fed`]); the model checker does the same in its
//! world. Neither decides: whether the run may claim its records, whether
//! the lease is left bare or revoked, whether the window is given back,
//! how the records are written afterwards, and when the next leader's
//! request counts as answered are all said here.
//!
//! **The rule of entitlement**, from the promise that records never claim
//! what is not theirs: a run's end records are written as the latest only
//! by the transaction that deletes its key, whose comparison (the key
//! created at our token, on our lease) etcd judges as it writes; nothing
//! else is the entitlement. A run asks for that transaction only if it has
//! not lost its leadership (its lease gone, its key deleted, replaced or
//! overwritten, or its local deadline passed): a lost run's job ended at
//! its loss, which may be long before it reaches etcd again, and its key
//! may still be intact then (a partition healed before etcd expired the
//! lease); as entitled, it would claim to have finished last over runs
//! that finished after its job was stopped. So it gives its lease back
//! first and writes as a run no longer entitled, only where nothing was
//! written since its win. Anything else that keeps the transaction from
//! being written (the comparison failed, no answer within the bound)
//! falls back to the same.

use crate::loss::Outcome;
use crate::planted::{planted, Defect};
use crate::records::{end_plan, Guard, Which};

/// What the way out knows as it begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Leaving {
    /// The run's outcome, as its records will say; None for a campaign
    /// that ends with nothing run (it only gives back what it holds).
    pub outcome: Option<Outcome>,
    /// The command started: a claimed window stays spent.
    pub started: bool,
    /// An election lease is held.
    pub lease: bool,
    /// A `--once-per` window is claimed.
    pub window: bool,
    /// The handoff's fast path is on (`LEADERRUN_HANDOFF` is not `slow`).
    pub fast: bool,
    /// The revision at which the run's win was proven.
    pub proven_at: i64,
}

/// Whether a run that ends with `outcome` asks for the entitled
/// resignation (the module's rule).
pub fn claims_entitlement(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Lost => planted(Defect::LostResignsEntitled),
        Outcome::Running
        | Outcome::Succeeded
        | Outcome::Failed
        | Outcome::Signalled
        | Outcome::TimedOut
        | Outcome::NotStarted => true,
    }
}

/// Whether nothing can have been attached to our lease in a run proven at
/// revision `proven_at` and resigned at `resigned`: true if no write came
/// between. Every write to etcd's keys takes a revision of its own, a key
/// is attached to a lease only by a write, and the command starts after
/// the proof and is dead before the resignation: anything it attached was
/// written at a revision between the two. It trusts etcd's revisions to
/// go only forward (an etcd restored from a backup under a running replica
/// numbers writes anew, and breaks the election itself).
pub fn nothing_attached_since(proven_at: i64, resigned: i64) -> bool {
    proven_at > 0 && resigned == proven_at + 1
}

/// What to do with the lease on the way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseEnd {
    /// Nothing held.
    None,
    /// Revoke it: whatever is attached goes with it, our key too.
    Revoke,
    /// Stop renewing it and leave it to expire: only our key, deleted by
    /// the resignation, was on it, so etcd's work on the next leader's
    /// path is the resignation's one write, as a lock's release is.
    LeaveBare,
}

/// What the way out asks the run to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Let the start record's write finish (within the clean-up bound), or
    /// call it off if it has not begun, so that it cannot land after the
    /// end records; feed [`Fed::StartSettled`] with where it was written.
    SettleStart,
    /// Find who is behind us to hand over to (with one runner, on the fast
    /// path), if `wanted`; or call the look-up off. Feed
    /// [`Fed::Successor`].
    FindSuccessor { wanted: bool },
    /// The one-write resignation: in one transaction, while our key is
    /// still ours (`while_ours`: the comparison that is the entitlement),
    /// delete it and make `writes`, each judged on its own (`last-started`
    /// first); with `hand_over`, also hand over to the successor found.
    /// With `read_attached`, read the lease's attached keys beside it. Feed
    /// [`Fed::Resigned`].
    Resign {
        while_ours: bool,
        writes: Vec<(Which, Guard)>,
        hand_over: bool,
        read_attached: bool,
    },
    /// Read which keys are attached to the lease (after a handover whose
    /// revision does not show that nothing was). Feed [`Fed::Attached`].
    ReadAttached,
    /// The request the next leader waits on has its answer (or none came,
    /// or nobody is known to wait): what waits on it (the guardian's
    /// release) may go. Feed [`Fed::Done`].
    Answered,
    /// Give back, side by side, within the clean-up bound: the lease as
    /// said, and the claimed window if `window` (its command never
    /// started). Feed [`Fed::Done`].
    GiveBack { lease: LeaseEnd, window: bool },
    /// The end records as a run no longer entitled: `writes` in one
    /// transaction, then `last-started` by a read and a swap unless a run
    /// that started later is recorded there. Feed [`Fed::Done`].
    WriteUnentitled { writes: Vec<(Which, Guard)> },
    /// Our end into `last-started` by a read and a swap: the resignation
    /// found a record written there since our win. Feed [`Fed::Done`].
    WriteStarted,
    /// The way out is over.
    Done,
}

/// What came of an effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fed {
    /// The start record settled: the revision it was written at, if it was.
    StartSettled(Option<i64>),
    /// Someone is known behind us (and wanted), or not.
    Successor(bool),
    /// The resignation's answer, or None (an error, or no answer in time).
    Resigned(Option<Resigned>),
    /// The lease's attached keys, read: whether ours was the only one
    /// (None: not read, or no answer).
    Attached(Option<bool>),
    /// An effect that tells nothing back was done (or given up on).
    Done,
}

/// The answer to the resignation's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resigned {
    /// Our key was still ours: deleted, with the records, at this revision.
    pub written: Option<i64>,
    /// The records' `last-started` write did not land: a record was
    /// written there since our win.
    pub started_behind: bool,
    /// The lease's attached keys, read beside it if asked: whether ours
    /// was the only one.
    pub alone: Option<bool>,
}

/// Where the way out is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Step {
    Begin,
    SettlingStart,
    FindingSuccessor,
    /// Nobody is known behind us: what waits on the resignation goes
    /// beside it, not after it.
    AnsweringEarly,
    Resigning {
        hand_over: bool,
    },
    ReadingAttached {
        started_behind: bool,
    },
    Answering {
        written: Written,
    },
    GivingBack {
        written: Written,
    },
    Recording,
    Over,
}

/// What the resignation wrote, as far as what follows goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Written {
    /// Our key deleted with the records.
    records: bool,
    /// `last-started` still to write by a read and a swap.
    started_behind: bool,
    /// Nothing but our key was on the lease.
    bare: bool,
}

const NOT_WRITTEN: Written = Written {
    records: false,
    started_behind: false,
    bare: false,
};

/// The way out of one run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resignation {
    leaving: Leaving,
    /// Where the start record was written, once settled.
    started_at: Option<i64>,
    step: Step,
}

/// An answer that the effect asked for does not give, or one given when
/// nothing was asked: the driver's defect, never etcd's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexpected {
    pub fed: Fed,
    pub at: &'static str,
}

impl std::fmt::Display for Unexpected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the way out was fed {:?} {}", self.fed, self.at)
    }
}

impl std::error::Error for Unexpected {}

impl Resignation {
    pub fn new(leaving: Leaving) -> Resignation {
        Resignation {
            leaving,
            started_at: None,
            step: Step::Begin,
        }
    }

    /// Whether this way out asks for the entitled resignation.
    pub fn entitled(&self) -> bool {
        self.leaving.lease && self.leaving.outcome.is_some_and(claims_entitlement)
    }

    /// The first effect.
    pub fn start(&mut self) -> Effect {
        debug_assert_eq!(self.step, Step::Begin);
        match self.leaving.outcome {
            Some(_) => {
                self.step = Step::SettlingStart;
                Effect::SettleStart
            }
            None => self.give_back(NOT_WRITTEN),
        }
    }

    /// What came of the last effect; the next one.
    pub fn fed(&mut self, fed: Fed) -> Result<Effect, Unexpected> {
        let unexpected = |at| Err(Unexpected { fed, at });
        let step = std::mem::replace(&mut self.step, Step::Over);
        match (step, fed) {
            (Step::SettlingStart, Fed::StartSettled(at)) => {
                self.started_at = at;
                self.step = Step::FindingSuccessor;
                Ok(Effect::FindSuccessor {
                    wanted: self.entitled(),
                })
            }
            (Step::FindingSuccessor, Fed::Successor(known)) => Ok(self.found(known)),
            (Step::AnsweringEarly, Fed::Done) => Ok(self.resign(false)),
            (Step::Resigning { hand_over }, Fed::Resigned(answer)) => {
                Ok(self.resigned(hand_over, answer))
            }
            (Step::ReadingAttached { started_behind }, Fed::Attached(alone)) => {
                let written = Written {
                    records: true,
                    started_behind,
                    bare: self.leaving.fast && alone == Some(true),
                };
                Ok(self.answer(written))
            }
            (Step::Answering { written }, Fed::Done) => Ok(self.give_back(written)),
            (Step::GivingBack { written }, Fed::Done) => Ok(self.record(written)),
            (Step::Recording, Fed::Done) => Ok(Effect::Done),
            (step @ Step::Begin, _) => {
                self.step = step;
                unexpected("before it started")
            }
            (step @ Step::Over, _) => {
                self.step = step;
                unexpected("after it was over")
            }
            (
                step @ (Step::SettlingStart
                | Step::FindingSuccessor
                | Step::AnsweringEarly
                | Step::Resigning { .. }
                | Step::ReadingAttached { .. }
                | Step::Answering { .. }
                | Step::GivingBack { .. }
                | Step::Recording),
                _,
            ) => {
                self.step = step;
                unexpected("that its effect does not give")
            }
        }
    }

    /// With what is known of who is behind us: the entitled resignation
    /// (what waits on it let go first if nobody is known to), or straight
    /// to giving back.
    fn found(&mut self, known: bool) -> Effect {
        match (self.entitled(), known) {
            (true, true) => self.resign(true),
            (true, false) => {
                self.step = Step::AnsweringEarly;
                Effect::Answered
            }
            // Nobody waits on a resignation that will not be made.
            (false, _) => self.answer(NOT_WRITTEN),
        }
    }

    fn resign(&mut self, known: bool) -> Effect {
        let Some(outcome) = self.leaving.outcome else {
            return self.answer(NOT_WRITTEN);
        };
        let hand_over = known && self.leaving.fast;
        self.step = Step::Resigning { hand_over };
        Effect::Resign {
            while_ours: !planted(Defect::ResignWithoutComparison),
            writes: end_plan(outcome, true, self.leaving.proven_at, self.started_at),
            hand_over,
            // With someone handed over to, the read waits until the
            // handover is on its way (beside it, it would be etcd's work
            // on the next leader's path), and is skipped if the
            // resignation shows nothing can have been attached. With
            // nobody, it goes beside, and the run ends a round trip
            // sooner. The slow path always revokes: no read.
            read_attached: self.leaving.fast && !hand_over,
        }
    }

    fn resigned(&mut self, hand_over: bool, answer: Option<Resigned>) -> Effect {
        let Some(Resigned {
            written: Some(revision),
            started_behind,
            alone,
        }) = answer
        else {
            return self.answer(NOT_WRITTEN);
        };
        let nothing_attached =
            hand_over && nothing_attached_since(self.leaving.proven_at, revision);
        if hand_over && !nothing_attached {
            self.step = Step::ReadingAttached { started_behind };
            return Effect::ReadAttached;
        }
        let bare = self.leaving.fast && (nothing_attached || alone == Some(true));
        self.answer(Written {
            records: true,
            started_behind,
            bare,
        })
    }

    fn answer(&mut self, written: Written) -> Effect {
        self.step = Step::Answering { written };
        Effect::Answered
    }

    fn give_back(&mut self, written: Written) -> Effect {
        self.step = Step::GivingBack { written };
        let lease = match (self.leaving.lease, written.bare) {
            (false, _) => LeaseEnd::None,
            (true, true) => LeaseEnd::LeaveBare,
            (true, false) => LeaseEnd::Revoke,
        };
        Effect::GiveBack {
            lease,
            window: self.leaving.window
                && (!self.leaving.started || planted(Defect::WindowBackAfterStart)),
        }
    }

    fn record(&mut self, written: Written) -> Effect {
        let Some(outcome) = self.leaving.outcome else {
            self.step = Step::Over;
            return Effect::Done;
        };
        self.step = Step::Recording;
        if !written.records {
            let writes = end_plan(outcome, false, self.leaving.proven_at, self.started_at);
            return Effect::WriteUnentitled { writes };
        }
        if written.started_behind {
            return Effect::WriteStarted;
        }
        self.step = Step::Over;
        Effect::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(outcome: Outcome) -> Leaving {
        Leaving {
            outcome: Some(outcome),
            started: true,
            lease: true,
            window: false,
            fast: true,
            proven_at: 10,
        }
    }

    /// Drives a way out, answering each effect with `answer`; the effects
    /// in order.
    fn walk(leaving: Leaving, answer: impl Fn(&Effect) -> Fed) -> Vec<Effect> {
        let mut way = Resignation::new(leaving);
        let mut effects = vec![way.start()];
        while *effects.last().unwrap() != Effect::Done {
            let fed = answer(effects.last().unwrap());
            effects.push(way.fed(fed).expect("an answer its effect gives"));
            assert!(effects.len() < 20, "{effects:?}");
        }
        effects
    }

    fn etcd_answers(written: Option<i64>, alone: Option<bool>) -> impl Fn(&Effect) -> Fed {
        move |effect| match effect {
            Effect::SettleStart => Fed::StartSettled(None),
            Effect::FindSuccessor { wanted } => Fed::Successor(*wanted),
            Effect::Resign { read_attached, .. } => Fed::Resigned(Some(Resigned {
                written,
                started_behind: false,
                alone: if *read_attached { alone } else { None },
            })),
            Effect::ReadAttached => Fed::Attached(alone),
            Effect::Answered
            | Effect::GiveBack { .. }
            | Effect::WriteUnentitled { .. }
            | Effect::WriteStarted => Fed::Done,
            Effect::Done => unreachable!(),
        }
    }

    #[test]
    fn a_run_not_lost_resigns_in_one_write_and_hands_over() {
        let effects = walk(run(Outcome::Succeeded), etcd_answers(Some(11), None));
        assert!(matches!(
            &effects[2],
            Effect::Resign { while_ours: true, hand_over: true, read_attached: false, writes }
                if writes.len() == 3
        ));
        // Resigned at the revision after the proof: nothing attached.
        assert_eq!(
            effects[3..],
            [
                Effect::Answered,
                Effect::GiveBack {
                    lease: LeaseEnd::LeaveBare,
                    window: false
                },
                Effect::Done
            ]
        );
    }

    #[test]
    fn a_lost_run_gives_back_first_and_writes_unentitled() {
        let effects = walk(run(Outcome::Lost), etcd_answers(Some(11), Some(true)));
        assert_eq!(effects[1], Effect::FindSuccessor { wanted: false });
        assert_eq!(effects[2], Effect::Answered);
        assert_eq!(
            effects[3],
            Effect::GiveBack {
                lease: LeaseEnd::Revoke,
                window: false
            }
        );
        assert!(matches!(
            &effects[4],
            Effect::WriteUnentitled { writes }
                if writes.iter().all(|(_, guard)| *guard != Guard::Always)
        ));
    }

    #[test]
    fn a_resignation_not_written_falls_back_to_the_unentitled_writes() {
        let effects = walk(run(Outcome::Failed), etcd_answers(None, Some(true)));
        assert_eq!(
            effects[4],
            Effect::GiveBack {
                lease: LeaseEnd::Revoke,
                window: false
            }
        );
        assert!(matches!(effects[5], Effect::WriteUnentitled { .. }));
    }

    #[test]
    fn a_lease_with_other_keys_is_revoked_and_the_slow_path_always_revokes() {
        // Written at a revision that leaves room for writes since the
        // proof: the keys are read after the handover.
        let effects = walk(run(Outcome::Succeeded), etcd_answers(Some(15), Some(false)));
        assert_eq!(effects[3], Effect::ReadAttached);
        assert_eq!(
            effects[5],
            Effect::GiveBack {
                lease: LeaseEnd::Revoke,
                window: false
            }
        );
        let slow = Leaving {
            fast: false,
            ..run(Outcome::Succeeded)
        };
        let effects = walk(slow, etcd_answers(Some(11), Some(true)));
        assert!(matches!(
            effects[2],
            Effect::Resign {
                hand_over: false,
                read_attached: false,
                ..
            }
        ));
        assert_eq!(
            effects[4],
            Effect::GiveBack {
                lease: LeaseEnd::Revoke,
                window: false
            }
        );
    }

    #[test]
    fn a_window_goes_back_only_if_its_command_never_started() {
        let claimed = |started, outcome| Leaving {
            window: true,
            started,
            ..run(outcome)
        };
        let gives_back = |leaving| {
            walk(leaving, etcd_answers(Some(11), None))
                .into_iter()
                .find_map(|effect| match effect {
                    Effect::GiveBack { window, .. } => Some(window),
                    _ => None,
                })
                .unwrap()
        };
        assert!(!gives_back(claimed(true, Outcome::Failed)));
        assert!(gives_back(claimed(false, Outcome::NotStarted)));
        let campaign = Leaving {
            outcome: None,
            started: false,
            ..claimed(false, Outcome::Failed)
        };
        assert!(gives_back(campaign));
    }

    #[test]
    fn with_nobody_behind_what_waits_goes_before_the_resignation() {
        let answers = etcd_answers(Some(11), Some(true));
        let effects = walk(run(Outcome::Succeeded), |effect| match effect {
            Effect::FindSuccessor { .. } => Fed::Successor(false),
            effect => answers(effect),
        });
        assert_eq!(effects[2], Effect::Answered);
        assert!(matches!(
            effects[3],
            Effect::Resign {
                hand_over: false,
                read_attached: true,
                ..
            }
        ));
        assert_eq!(
            effects[5],
            Effect::GiveBack {
                lease: LeaseEnd::LeaveBare,
                window: false
            }
        );
    }

    #[test]
    fn an_unexpected_answer_names_what_was_fed_and_where() {
        let mut way = Resignation::new(run(Outcome::Succeeded));
        let unexpected = way.fed(Fed::Done).expect_err("nothing was asked yet");
        let said = unexpected.to_string();
        assert!(said.starts_with("the way out was fed Done "), "{said}");
    }

    #[test]
    fn nothing_can_be_attached_only_when_no_write_came_between() {
        assert!(nothing_attached_since(41, 42));
        // Our own start record, the command's keys, anyone's write.
        assert!(!nothing_attached_since(41, 43));
        // An etcd that numbers anew (restored from a backup).
        assert!(!nothing_attached_since(41, 41));
        assert!(!nothing_attached_since(41, 12));
        // No proof revision known.
        assert!(!nothing_attached_since(0, 1));
    }

    #[test]
    fn an_answer_its_effect_does_not_give_is_an_error() {
        let mut way = Resignation::new(run(Outcome::Succeeded));
        assert_eq!(way.start(), Effect::SettleStart);
        assert!(way.fed(Fed::Done).is_err());
        // Still where it was: the right answer goes on.
        assert!(way.fed(Fed::StartSettled(None)).is_ok());
    }
}
