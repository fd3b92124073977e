//! What a campaign holds in each of its phases: one type per phase, each
//! holding exactly what its work needs (the granted lease, our place in
//! line, the proof of our win), so that no phase can be reached without
//! what it works with, and no `Option` or default value stands in for
//! "not yet".
//!
//! The protocol does not know what a lease or a place *is*: the run
//! (`run::campaign`) holds its etcd lease, its key's watch and its proof
//! here, the model checker (`model`) holds nothing ([`Bare`]), and both go
//! through the same table ([`table::campaign`]), which moves what is held
//! from one phase to the next as it answers each event.
//!
//! [`table::campaign`]: super::table::campaign

use crate::planted::{planted, Defect};

/// The phases before the command exists: the campaign's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CampaignPhase {
    Dialling,
    Granting,
    Joining,
    Waiting,
    Proving,
    Claiming,
}

#[cfg(any(test, feature = "testing"))]
impl CampaignPhase {
    /// Every campaign phase, in order: what the tests walk. The match
    /// makes a phase added without its place here fail to compile.
    pub const ALL: [CampaignPhase; 6] = {
        use CampaignPhase::*;
        const fn listed(phase: CampaignPhase) -> usize {
            match phase {
                Dialling => 0,
                Granting => 1,
                Joining => 2,
                Waiting => 3,
                Proving => 4,
                Claiming => 5,
            }
        }
        let all = [Dialling, Granting, Joining, Waiting, Proving, Claiming];
        let mut i = 0;
        while i < all.len() {
            assert!(listed(all[i]) == i);
            i += 1;
        }
        all
    };
}

/// The kinds of thing a campaign holds on its way to a win: the run's
/// are etcd's (`run::campaign::Etcd`), the model's are nothing ([`Bare`]).
pub trait Holds {
    /// A granted lease, ours until it is given back.
    type Lease;
    /// Our key in line, with what watches it.
    type Place;
    /// The proof of our win: our key among the first in line at a revision.
    type Proof;
    /// A guardian ready to watch the command's job.
    type Guard;
}

/// Holds nothing: the table's own tests, and the model checker, whose
/// world keeps what a replica holds in etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bare;

impl Holds for Bare {
    type Lease = ();
    type Place = ();
    type Proof = ();
    type Guard = ();
}

/// A campaign's phase, with what it holds.
pub enum Stage<H: Holds> {
    /// Connecting to etcd.
    Dialling,
    /// Asking for a lease.
    Granting,
    /// Writing our key on the lease (or, without --wait, trying to lead).
    Joining { lease: H::Lease },
    /// In line behind a runner, watching the key ahead.
    Waiting { lease: H::Lease, place: H::Place },
    /// With several runners, our turn proven again by a write.
    Proving { lease: H::Lease, place: H::Place },
    /// A proven win, claiming what the command needs, a step at a time.
    /// `place` is absent for a win without --wait, which never queued.
    Claiming {
        lease: H::Lease,
        place: Option<H::Place>,
        proof: H::Proof,
        step: ClaimStep,
    },
}

/// A claim's steps, in the protocol's order: each is the work of the
/// Claiming phase until its event moves the claim on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaimStep {
    /// The guardian ready: started now if it failed to start before the
    /// campaign. Before the window, so that a guardian that cannot start
    /// never uses one up.
    Guard,
    /// No pause of the election stands (`leaderrun pause`): read, unless
    /// the write that proved the win already compared it away. Before the
    /// window, so that a paused run never spends one; with --wait, a
    /// pause found here is waited out of line, as one found as it joined.
    Pause,
    /// Before the window (only with --once-per): the lease sure, as at
    /// [`ClaimStep::Recheck`], so that a lease already too close to its
    /// deadline does not spend the window on a run that cannot start.
    Precheck,
    /// The `--once-per` window claimed (only with --once-per).
    Window,
    /// Make sure the proof may still start a command: the lease is sure
    /// to live past the point where the job would have to be stopped. A
    /// waiter stopped or starved past its lease's local deadline learns of
    /// its turn only on waking (a handover may be old news by then), and
    /// the steps before this one may take an etcd round trip: its key may
    /// be gone and the next one running. Last, so that nothing that takes
    /// time comes between it and the start; a window claimed before a
    /// re-check that fails goes back, since its command never started.
    Recheck,
    /// Nothing can keep the command from starting now: hand over the
    /// guardian, and start. It does no IO: the run asks for it as soon as
    /// the re-check is answered.
    Start,
}

impl ClaimStep {
    /// The step a proven win starts its claim with.
    pub const FIRST: ClaimStep = ClaimStep::Guard;

    /// The step after the ones that take time (the guardian, the window):
    /// the re-check.
    pub fn recheck() -> ClaimStep {
        if planted(Defect::SkipRecheck) {
            ClaimStep::Start
        } else {
            ClaimStep::Recheck
        }
    }
}

/// What a stage holds, each if it holds it.
pub struct Holding<'a, H: Holds> {
    pub lease: Option<&'a H::Lease>,
    pub place: Option<&'a H::Place>,
    pub proof: Option<&'a H::Proof>,
}

/// A claimed win: everything a run needs to start its command.
pub struct Won<H: Holds> {
    pub lease: H::Lease,
    /// Our place in line, if the win came through the queue.
    pub place: Option<H::Place>,
    pub proof: H::Proof,
    pub guard: H::Guard,
}

impl<H: Holds> Stage<H> {
    /// Its phase, in the words of logs and of the table.
    pub fn phase(&self) -> CampaignPhase {
        match self {
            Stage::Dialling => CampaignPhase::Dialling,
            Stage::Granting => CampaignPhase::Granting,
            Stage::Joining { .. } => CampaignPhase::Joining,
            Stage::Waiting { .. } => CampaignPhase::Waiting,
            Stage::Proving { .. } => CampaignPhase::Proving,
            Stage::Claiming { .. } => CampaignPhase::Claiming,
        }
    }

    /// What it holds: its lease, its place in line, its proof.
    pub fn holding(&self) -> Holding<'_, H> {
        let (lease, place, proof) = match self {
            Stage::Dialling | Stage::Granting => (None, None, None),
            Stage::Joining { lease } => (Some(lease), None, None),
            Stage::Waiting { lease, place } | Stage::Proving { lease, place } => {
                (Some(lease), Some(place), None)
            }
            Stage::Claiming {
                lease,
                place,
                proof,
                ..
            } => (Some(lease), place.as_ref(), Some(proof)),
        };
        Holding {
            lease,
            place,
            proof,
        }
    }

    /// The lease it holds, let go of: the campaign starts again, or ends.
    pub fn release(self) -> Option<H::Lease> {
        match self {
            Stage::Dialling | Stage::Granting => None,
            Stage::Joining { lease }
            | Stage::Waiting { lease, .. }
            | Stage::Proving { lease, .. }
            | Stage::Claiming { lease, .. } => Some(lease),
        }
    }
}

impl<H: Holds> std::fmt::Debug for Stage<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.phase().fmt(f)
    }
}

impl<H: Holds> Clone for Stage<H>
where
    H::Lease: Clone,
    H::Place: Clone,
    H::Proof: Clone,
{
    fn clone(&self) -> Self {
        match self {
            Stage::Dialling => Stage::Dialling,
            Stage::Granting => Stage::Granting,
            Stage::Joining { lease } => Stage::Joining {
                lease: lease.clone(),
            },
            Stage::Waiting { lease, place } => Stage::Waiting {
                lease: lease.clone(),
                place: place.clone(),
            },
            Stage::Proving { lease, place } => Stage::Proving {
                lease: lease.clone(),
                place: place.clone(),
            },
            Stage::Claiming {
                lease,
                place,
                proof,
                step,
            } => Stage::Claiming {
                lease: lease.clone(),
                place: place.clone(),
                proof: proof.clone(),
                step: *step,
            },
        }
    }
}

impl<H: Holds> Copy for Stage<H>
where
    H::Lease: Copy,
    H::Place: Copy,
    H::Proof: Copy,
{
}

#[cfg(any(test, feature = "testing"))]
impl Stage<Bare> {
    /// The stage of a phase, holding nothing: what the table's tests walk.
    pub fn of(phase: CampaignPhase) -> Stage<Bare> {
        match phase {
            CampaignPhase::Dialling => Stage::Dialling,
            CampaignPhase::Granting => Stage::Granting,
            CampaignPhase::Joining => Stage::Joining { lease: () },
            CampaignPhase::Waiting => Stage::Waiting {
                lease: (),
                place: (),
            },
            CampaignPhase::Proving => Stage::Proving {
                lease: (),
                place: (),
            },
            CampaignPhase::Claiming => Stage::Claiming {
                lease: (),
                place: Some(()),
                proof: (),
                step: ClaimStep::FIRST,
            },
        }
    }
}
