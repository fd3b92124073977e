//! The one place that decides what each event does in each phase of a run.
//!
//! A run passes through these phases, in order (campaigning again goes back
//! to granting):
//!
//! | phase      | what leaderrun does                                             |
//! |------------|-----------------------------------------------------------------|
//! | Dialling   | starts the guardian, connects to etcd                           |
//! | Granting   | asks for a lease                                                |
//! | Joining    | writes its candidate key (or, without --wait, tries to lead)    |
//! | Waiting    | watches the key ahead of it                                     |
//! | Proving    | with several runners, a waiter proves its turn again in a txn   |
//! |            | that rewrites its key (one runner: the read that found its turn |
//! |            | is the proof, and a run goes from Waiting to Claiming)          |
//! | Claiming   | the guardian again if it failed to start; no pause (waited out  |
//! |            | with --wait); the --once-per window                             |
//! | Running    | the command runs                                                |
//! | Stopping   | the kill schedule: --kill-signal, the grace, SIGKILL            |
//! | Resigning  | deletes its key with the run's records in one write (not lost), |
//! |            | else revokes its lease, then the records; an unspent window is  |
//! |            | revoked; each within a short bound; beside it, the guardian is  |
//! |            | released and collected, only once the job is known gone (else   |
//! |            | it stays armed, and kills the job's group as leaderrun exits)   |
//!
//! Each stretch of phases has its own events and its own answers, so that
//! an event no phase of a stretch can see, or an answer it cannot carry
//! out, cannot be written: [`campaign`] before the command (Dialling to
//! Claiming), [`running`] while it runs, [`stopping`] while its job is
//! stopped, and [`spawn_failed`] for a command that could not start.
//! Resigning (the way out, after every ending) listens to nothing: each of
//! its requests, and all of them together, are bounded by [`CLEANUP`].
//! Every answer is a match with no arm for "anything else": a new event or
//! phase is decided here before it compiles.
//!
//! Before the command ([`campaign`]; a phase's own work ends in one of the
//! first group, and only in its own phase):
//!
//! | event                      | Dialling … Claiming                                  |
//! |----------------------------|------------------------------------------------------|
//! | the phase's work done (Dialled, Granted, Queued, Proven, Claimed) | the next phase (1 runner: a proof goes straight to Claiming; several, a waiter's proof writes: Proving); Claimed: spawn the command (Running) |
//! | someone else leads (Held)  | give back, exit the conflict code                    |
//! | the window already ran     | give back, exit the conflict code                    |
//! | the guardian failed        | give back, exit 125                                  |
//! | paused (Joining, the claim's pause step) | give back, exit the conflict code; --wait: give back, wait out of line for the pause to end, then a new lease, and queue as usual |
//! | a forwarded signal (1)     | give back, exit 128+N: nothing ran                   |
//! | --wait-timeout             | give back, exit the conflict code                    |
//! | our place lost             | campaign again (--wait), else conflict               |
//! | etcd error                 | first attempt: fail (125); once queued: retry after a backoff (Waiting: in line still; before: with a new lease, since the old one may be lost with nobody listening) |
//! | etcd refused (3)           | fail (125)                                           |
//!
//! While the command runs ([`running`]) and while its job is stopped
//! ([`stopping`]); the spawn's failure is [`spawn_failed`]'s:
//!
//! | event                      | Running                                 | Stopping    |
//! |----------------------------|-----------------------------------------|-------------|
//! | the spawn failed           | resign, a not-started record, 126/127   | –           |
//! | a forwarded signal (1)     | forward to the job                      | forward     |
//! | leadership lost (2)        | stop the job, 124                       | cut the grace to the loss's |
//! | the command exited         | stop its leftovers, its status          | –           |
//! | waiting for it failed      | stop the job, 125; the guardian stays armed | –       |
//! | --timeout passed           | stop the job, 123 (it counts from the command's start) | – |
//! | the command stopped (tty)  | stop like it; continue with it          | –           |
//! | --kill-signal due          | –                                       | send it (to the group and every descendant), then SIGCONT |
//! | the job gone               | –                                       | resign, exit with the stop's code |
//! | the grace over             | –                                       | end the grace, saying why |
//! | SIGKILL due                | –                                       | SIGKILL until gone, within a bound |
//! | the job outlived SIGKILL   | –                                       | resign, the guardian armed; the stop's code |
//! | etcd error                 | (the lease deadline decides)            | –           |
//!
//! "–" is an event that state has no source of: what it is doing already
//! answers it.
//!
//! (1) SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, but for
//! one ignored when leaderrun started, which stays ignored (`signals`).
//!
//! (2) The lease gone, its local deadline passed, or our key deleted,
//! replaced or overwritten; while stopping, only a stop that kept the
//! lease (--timeout, leftovers) watches for it.
//!
//! (3) Credentials, a permission or a certificate refused, or replicas
//! that disagree on a setting. Also when they changed under a queued replica: authentication
//! switched on, its password changed, its client certificate refused by
//! every endpoint (or theirs not trusted) with the TLS files read again.
//! A JWT token made stale by a change to etcd's users or roles is not a
//! refusal: the request authenticates again and is asked once more
//! (`etcd::connection`).
//!
//! Every clean-up on the way out (giving back a lease, a queue place or an
//! unspent window) is best effort and bounded by [`CLEANUP`]: what is not
//! revoked expires by itself within its TTL. The lease deadline, the grace
//! and every retry wait run on the boot-time clock (`clock`).
//!
//! [`CLEANUP`]: crate::backoff::CLEANUP

use std::time::Duration;

use crate::exit::Exit;
pub use crate::exit::{Code, Status};
use crate::loss::Outcome;
use crate::loss::{KeyLoss, PlaceLost};
use crate::planted::{planted, Defect};
use crate::schedule::{KillSchedule, LeaseView};
pub use crate::signal::Signal;
pub use crate::stage::{Bare, CampaignPhase, ClaimStep, Holds, Stage, Won};
use crate::time::Instant;

/// How long a stop may take before SIGKILL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grace {
    /// Leadership is lost: the schedule's grace, cut to what the lease
    /// allows, fixed as the stop starts.
    Lost,
    /// The lease is kept alive through the stop: --kill-after in full,
    /// unless renewals stop being acknowledged or leadership is lost.
    Kept,
}

/// Where a run is, in the words of logs and `explain`: the campaign's
/// phases, then the command's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Dialling,
    Granting,
    Joining,
    Waiting,
    Proving,
    Claiming,
    Running,
    Stopping,
    Resigning,
}

impl Phase {
    /// A run that leads: its command runs, or its job is being stopped.
    pub fn leads(self) -> bool {
        match self {
            Phase::Running | Phase::Stopping => true,
            Phase::Dialling
            | Phase::Granting
            | Phase::Joining
            | Phase::Waiting
            | Phase::Proving
            | Phase::Claiming
            | Phase::Resigning => false,
        }
    }

    /// A run before its command: campaigning.
    pub fn campaigns(self) -> bool {
        match self {
            Phase::Dialling
            | Phase::Granting
            | Phase::Joining
            | Phase::Waiting
            | Phase::Proving
            | Phase::Claiming => true,
            Phase::Running | Phase::Stopping | Phase::Resigning => false,
        }
    }
}

impl From<CampaignPhase> for Phase {
    fn from(phase: CampaignPhase) -> Phase {
        match phase {
            CampaignPhase::Dialling => Phase::Dialling,
            CampaignPhase::Granting => Phase::Granting,
            CampaignPhase::Joining => Phase::Joining,
            CampaignPhase::Waiting => Phase::Waiting,
            CampaignPhase::Proving => Phase::Proving,
            CampaignPhase::Claiming => Phase::Claiming,
        }
    }
}

/// Why leadership ended while the command ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loss {
    /// etcd said the lease no longer exists (revoked, or expired).
    LeaseGone,
    /// Renewals went unacknowledged so long that the lease could be about
    /// to expire on the server.
    Unacknowledged {
        silent_for: Duration,
        ttl: Duration,
        /// Why the last renewal failed, if the keeper saw it fail.
        trouble: Option<std::sync::Arc<str>>,
    },
    Key(KeyLoss),
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loss::LeaseGone => {
                f.write_str("etcd says the lease no longer exists (revoked or expired)")
            }
            Loss::Unacknowledged {
                silent_for,
                ttl,
                trouble,
            } => {
                write!(
                    f,
                    "etcd has not acknowledged a lease renewal for {} (TTL {})",
                    humantime::format_duration(
                        Duration::from_millis(silent_for.as_millis() as u64)
                    ),
                    humantime::format_duration(*ttl)
                )?;
                match trouble {
                    Some(trouble) => write!(f, "; the last renewal failed: {trouble}"),
                    None => Ok(()),
                }
            }
            Loss::Key(loss) => loss.fmt(f),
        }
    }
}

/// What happens to a run before its command exists. What a phase's work
/// gains comes with it (`H`: the run's etcd lease, place and proof; in
/// the model and the tests, nothing: [`Bare`]), and the table moves it
/// into the next phase's [`Stage`].
pub enum CampaignEvent<H: Holds = Bare> {
    // The work of a phase, done: what comes next is the table's.
    /// Dialling: the client is made.
    Dialled,
    /// Granting: a lease is ours.
    Granted(H::Lease),
    /// Joining with --wait: our key is in line, behind a runner.
    Queued(H::Place),
    /// Joining with --wait: our key is in line, and the read that wrote
    /// it found it among the first --max-running: a proof at once.
    FirstInLine(H::Place, H::Proof),
    /// Our win is proven: our key, alive and among the first
    /// --max-running in line, read at one revision (or, Proving, written
    /// in the proof's transaction; or, Joining without --wait, written by
    /// the attempt that found nobody leading).
    Proven(H::Proof),
    /// Claiming, its re-check: the lease as the keeper knows it, with the
    /// TTL etcd granted.
    LeaseSeen {
        view: LeaseView,
        ttl: Duration,
    },
    /// Claiming: the guardian is ready.
    GuardReady,
    /// Claiming: the --once-per window is ours.
    WindowClaimed,
    /// Claiming, its last step: nothing keeps the command from starting;
    /// the guardian, handed over.
    Claimed(H::Guard),
    /// Someone else leads (without --wait).
    Held,
    /// This `--once-per` window already had its run.
    WindowTaken,
    /// The guardian could not be started, on winning.
    GuardianFailed,
    /// Joining, or Claiming at its pause step: the election is paused
    /// (`leaderrun pause`). Without --wait the run ends; with it, the
    /// pause is waited out of line ([`Answer::AwaitResume`]).
    Paused,
    /// Claiming, its pause step: no pause stands.
    Unpaused,
    /// The pause waited out has ended (resumed, or its `--for` over):
    /// a lease again.
    Resumed,

    // What happens to a campaign from outside its work.
    Signal(Signal),
    WaitTimeout,
    /// Our place in the queue, or our win, is gone before the command ran.
    PlaceLost(PlaceLost),
    /// An etcd request failed.
    Etcd(Trouble),
}

impl<H: Holds> CampaignEvent<H> {
    /// etcd said its database is full.
    pub fn full(&self) -> bool {
        use CampaignEvent as E;
        match self {
            E::Etcd(trouble) => trouble.full(),
            E::Dialled
            | E::Granted(_)
            | E::Queued(_)
            | E::FirstInLine(..)
            | E::Proven(_)
            | E::LeaseSeen { .. }
            | E::GuardReady
            | E::WindowClaimed
            | E::Claimed(_)
            | E::Held
            | E::WindowTaken
            | E::GuardianFailed
            | E::Paused
            | E::Unpaused
            | E::Resumed
            | E::Signal(_)
            | E::WaitTimeout
            | E::PlaceLost(_) => false,
        }
    }

    /// The event without what it brings: what logs, explanations and
    /// the model's traces show.
    pub fn bare(&self) -> CampaignEvent {
        use CampaignEvent as E;
        match self {
            E::Dialled => E::Dialled,
            E::Granted(_) => E::Granted(()),
            E::Queued(_) => E::Queued(()),
            E::FirstInLine(..) => E::FirstInLine((), ()),
            E::Proven(_) => E::Proven(()),
            E::LeaseSeen { view, ttl } => E::LeaseSeen {
                view: *view,
                ttl: *ttl,
            },
            E::GuardReady => E::GuardReady,
            E::WindowClaimed => E::WindowClaimed,
            E::Claimed(_) => E::Claimed(()),
            E::Held => E::Held,
            E::WindowTaken => E::WindowTaken,
            E::GuardianFailed => E::GuardianFailed,
            E::Paused => E::Paused,
            E::Unpaused => E::Unpaused,
            E::Resumed => E::Resumed,
            E::Signal(signal) => E::Signal(*signal),
            E::WaitTimeout => E::WaitTimeout,
            E::PlaceLost(lost) => E::PlaceLost(*lost),
            E::Etcd(trouble) => E::Etcd(*trouble),
        }
    }
}

impl Clone for CampaignEvent {
    fn clone(&self) -> Self {
        self.bare()
    }
}

/// An event's name and its data, but not what it brings (a lease, a
/// proof): those say nothing to a reader of the trace.
impl<H: Holds> std::fmt::Debug for CampaignEvent<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use CampaignEvent as E;
        match self {
            E::Dialled => f.write_str("Dialled"),
            E::Granted(_) => f.write_str("Granted"),
            E::Queued(_) => f.write_str("Queued"),
            E::FirstInLine(..) => f.write_str("FirstInLine"),
            E::Proven(_) => f.write_str("Proven"),
            E::LeaseSeen { view, ttl } => f
                .debug_struct("LeaseSeen")
                .field("view", view)
                .field("ttl", ttl)
                .finish(),
            E::GuardReady => f.write_str("GuardReady"),
            E::WindowClaimed => f.write_str("WindowClaimed"),
            E::Claimed(_) => f.write_str("Claimed"),
            E::Held => f.write_str("Held"),
            E::WindowTaken => f.write_str("WindowTaken"),
            E::GuardianFailed => f.write_str("GuardianFailed"),
            E::Paused => f.write_str("Paused"),
            E::Unpaused => f.write_str("Unpaused"),
            E::Resumed => f.write_str("Resumed"),
            E::Signal(signal) => f.debug_tuple("Signal").field(signal).finish(),
            E::WaitTimeout => f.write_str("WaitTimeout"),
            E::PlaceLost(lost) => f.debug_tuple("PlaceLost").field(lost).finish(),
            E::Etcd(trouble) => f.debug_tuple("Etcd").field(trouble).finish(),
        }
    }
}

/// What happens to a run whose command runs.
#[derive(Debug, Clone)]
pub enum RunningEvent {
    Signal(Signal),
    /// Leadership is gone while the command runs.
    LeadershipLost(Loss),
    /// The command exited, with the shell's view of its status.
    CommandExited(Status),
    /// Waiting for the command failed: what it did is unknown.
    WaitFailed,
    /// The command has run for --timeout.
    TimedOut,
    /// The command stopped for the terminal.
    CommandStopped(Signal),
}

/// What happens to a run whose command's job is being stopped.
#[derive(Debug, Clone)]
pub enum StoppingEvent {
    Signal(Signal),
    /// Leadership is gone during a stop that kept it (--timeout, leftovers).
    LeadershipLost(Loss),
    /// The kill sequence's first step is due: --kill-signal (this one).
    KillSignalDue(Signal),
    /// SIGKILL is due: the grace is over, and what it cost was said.
    KillDue,
    /// Nothing of the command's job is left.
    JobGone,
    /// SIGKILL did not clear the job within its bound (a process deep in
    /// the kernel): the stop is over, and what is left is the guardian's,
    /// which stays armed, since no proof of the job's end exists.
    JobOutlivedKill,
    /// The grace is over and the job is still there.
    GraceOver,
}

/// Where a campaign's events come from, each a source the run waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CampaignSource {
    /// A forwarded signal.
    Signal,
    /// --wait-timeout's end.
    WaitTimeout,
    /// The work of the phase (after its backoff).
    Work,
}

/// Which of a campaign's events is taken when several are ready at once:
/// the user's word first (a signal, then the deadline asked for), so
/// that a campaign whose work is always ready still ends when asked.
pub const CAMPAIGN_PRECEDENCE: [CampaignSource; 3] = [
    CampaignSource::Signal,
    CampaignSource::WaitTimeout,
    CampaignSource::Work,
];

/// Where a running command's events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunningSource {
    /// The lease, its local deadline and our key.
    Leadership,
    /// The command: its exit, or its stop for the terminal.
    Command,
    /// A forwarded signal.
    Signal,
    /// --timeout's end.
    Timeout,
}

/// Which of a running command's events is taken when several are ready
/// at once: leadership first, so that after a pause of leaderrun itself
/// (SIGSTOP, a suspended machine) the job is stopped at once whatever
/// else is pending; then the command's own end, which is its status.
pub const RUNNING_PRECEDENCE: [RunningSource; 4] = [
    RunningSource::Leadership,
    RunningSource::Command,
    RunningSource::Signal,
    RunningSource::Timeout,
];

/// Where a stop's events come from, within its grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GraceSource {
    /// The job gone (or the grace's end reached).
    JobGone,
    /// Leadership lost, during a stop that kept it.
    Leadership,
    /// A forwarded signal.
    Signal,
    /// A renewal acknowledged, which may move the grace's end.
    Renewed,
}

/// Which of a stop's events is taken when several are ready at once: the
/// job gone first (nothing is left to stop), then a loss, which cuts the
/// grace.
pub const GRACE_PRECEDENCE: [GraceSource; 4] = [
    GraceSource::JobGone,
    GraceSource::Leadership,
    GraceSource::Signal,
    GraceSource::Renewed,
];

/// How an etcd request failed, as far as the table cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// etcd turned our credentials, a permission or our certificate down,
    /// or the replicas disagree on a setting: every endpoint and every
    /// retry would say the same.
    Refused,
    /// The database is full (NOSPACE): refused until an operator acts.
    Full,
    /// Anything else: unreachable, timed out, an election in etcd, a
    /// lease not found.
    Outage,
}

impl Trouble {
    /// etcd's database is full (an operator must act).
    pub fn full(self) -> bool {
        match self {
            Trouble::Full => true,
            Trouble::Refused | Trouble::Outage => false,
        }
    }
}

/// What the policy of a campaign needs to know beyond the phase.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// --wait: queue rather than exit when someone else leads.
    pub wait: bool,
    /// This run has already been in the queue once: etcd worked, so a
    /// failure now is an outage to ride out, not a wrong endpoint.
    pub queued_before: bool,
    /// --max-running 1: the read that finds our turn proves the win; with
    /// more runners the proof also writes, to wake the waiter behind.
    pub single: bool,
    /// --once-per: a claim takes the window.
    pub once_per: bool,
    /// --kill-after: with the TTL, the kill schedule a claim's re-check
    /// judges the lease by.
    pub kill_after: Duration,
    /// When the event came.
    pub now: Instant,
}

impl Code {
    /// What the run's end record says of a command that ended with this
    /// code (or never started).
    pub fn outcome(self) -> Outcome {
        match self {
            Code::Command(status) if status.code == 0 => Outcome::Succeeded,
            Code::Command(status) if status.signalled => Outcome::Signalled,
            Code::Command(_) => Outcome::Failed,
            Code::Own(Exit::LeadershipLost) => Outcome::Lost,
            Code::Own(Exit::TimedOut) => Outcome::TimedOut,
            Code::Own(Exit::NotFound | Exit::NotExecutable) => Outcome::NotStarted,
            Code::Own(_) | Code::Conflict | Code::Signalled(_) => Outcome::Failed,
        }
    }
}

/// What a campaign does next, in words: an [`Answer`] without what it
/// holds (for the trace, the model's world and the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignAction {
    /// The next phase's work.
    Enter(CampaignPhase),
    /// The win is claimed: spawn the command (Running).
    Start,
    /// The same look again after a backoff, in line still (Waiting: the
    /// place rides on a lease that its keeper renews, and the look finds
    /// a place lost).
    RetryInLine,
    /// Again from a new lease after a backoff: nothing listens for the
    /// lease before Waiting, so the old one may be lost unseen, and every
    /// request on it would fail alike.
    RetryAfresh,
    /// New lease, back of the queue, at once.
    CampaignAgain,
    /// Give back what is held, exit with the code: nothing ran.
    Exit(Code),
    /// Give back what is held, wait for the election's pause to end, then
    /// campaign again from a new lease (--wait).
    AwaitResume,
    /// Nothing to do: the event cannot come in this phase (its work never
    /// gives it), or what the phase is doing already answers it.
    Ignore,
}

/// What a running command's run does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunningAction {
    /// Pass the signal on to the command's job.
    Forward(Signal),
    /// Stop like the command (stopped by this signal), and continue it
    /// when continued.
    FollowStop(Signal),
    /// Stop the command's job (what is left of it) on the kill schedule,
    /// then resign and exit with the code.
    Stop(StopOrder),
}

/// How a job is to be stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StopOrder {
    /// What the run exits with once resigned.
    pub code: Code,
    /// Whether the lease is still ours to stop within (Kept) or lost.
    pub grace: Grace,
    /// Whether the command itself is gone already (it exited): only
    /// leftovers of its job may be left to stop.
    pub exited: bool,
    /// Whether the job seen gone may disarm the guardian: not after a
    /// failed wait for the command, when leaderrun's own view of its
    /// processes is in doubt. The guardian, a process of its own, then
    /// kills the job's group as it is let go, whatever leaderrun saw.
    pub trust_gone: bool,
}

/// What a run stopping its job does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoppingAction {
    /// Pass the signal on to the command's job.
    Forward(Signal),
    /// --kill-signal (this one) to the job, its group and every
    /// descendant, then SIGCONT; the grace begins.
    SendKillSignal(Signal),
    /// Leadership lost (so) during a kept stop: the grace is cut to the
    /// loss's, since the next leader may start at once.
    CutGrace(Loss),
    /// The grace is over: SIGKILL is due, and why is said.
    EndGrace,
    /// SIGKILL to the job until nothing is left, within a bound.
    Kill,
    /// The job is gone: resign, with the run's records, and exit with
    /// the code the stop carried.
    Resign,
}

/// The ceiling of a retry's backoff, by phase: a waiter's place rides on
/// its lease, so it looks again soon; before that, a struggling etcd is
/// not hammered by many replicas.
pub fn retry_ceiling(phase: CampaignPhase) -> Duration {
    use CampaignPhase::*;
    match phase {
        Waiting => crate::backoff::KEEPING,
        Dialling | Granting | Joining | Proving | Claiming => crate::backoff::WAITING,
    }
}

/// The table's answer to a campaign: what to do, with what the campaign
/// holds moved to where it goes next.
pub enum Answer<H: Holds> {
    /// The next phase's work, with what it holds.
    Enter(Stage<H>),
    /// The win is claimed: spawn the command (Running), with all it needs.
    Start(Won<H>),
    /// The same phase's work again after a backoff, holding what it held.
    RetryInLine(Stage<H>),
    /// Again from a new lease after a backoff: the old one let go of.
    RetryAfresh { released: Option<H::Lease> },
    /// New lease, back of the queue, at once: the old one let go of.
    CampaignAgain { released: Option<H::Lease> },
    /// Give back what is held, exit with the code: nothing ran.
    Exit {
        code: Code,
        released: Option<H::Lease>,
    },
    /// Wait for the election's pause to end, then campaign again from a
    /// new lease: the old one let go of.
    AwaitResume { released: Option<H::Lease> },
    /// Nothing to do: the event cannot come in this phase (its work never
    /// gives it; what it brings is dropped), or what the phase is doing
    /// already answers it.
    Ignore(Stage<H>),
}

impl<H: Holds> Answer<H> {
    /// The answer in words, without what it holds.
    pub fn action(&self) -> CampaignAction {
        match self {
            Answer::Enter(stage) => CampaignAction::Enter(stage.phase()),
            Answer::Start(_) => CampaignAction::Start,
            Answer::RetryInLine(_) => CampaignAction::RetryInLine,
            Answer::RetryAfresh { .. } => CampaignAction::RetryAfresh,
            Answer::CampaignAgain { .. } => CampaignAction::CampaignAgain,
            Answer::Exit { code, .. } => CampaignAction::Exit(*code),
            Answer::AwaitResume { .. } => CampaignAction::AwaitResume,
            Answer::Ignore(_) => CampaignAction::Ignore,
        }
    }
}

/// The campaign ends with `code`, giving back what `stage` holds.
fn exit<H: Holds>(code: Code, stage: Stage<H>) -> Answer<H> {
    Answer::Exit {
        code,
        released: stage.release(),
    }
}

/// Before the command: every event in every campaign phase, with what
/// each phase holds. A phase's work ends only in its own phase's events:
/// in any other, one is ignored (and what it brings dropped). What comes
/// from outside the work (a signal, the user's deadline, a place lost, an
/// etcd error) answers alike in every phase, giving back what the phase
/// holds ([`Stage::release`], which each phase answers).
pub fn campaign<H: Holds>(stage: Stage<H>, event: CampaignEvent<H>, policy: Policy) -> Answer<H> {
    use CampaignEvent as E;
    use Stage as S;
    match event {
        E::Dialled => match stage {
            S::Dialling => Answer::Enter(S::Granting),
            stage @ (S::Granting
            | S::Joining { .. }
            | S::Waiting { .. }
            | S::Proving { .. }
            | S::Claiming { .. }) => Answer::Ignore(stage),
        },
        E::Granted(lease) => match stage {
            S::Granting => Answer::Enter(S::Joining { lease }),
            stage @ (S::Dialling
            | S::Joining { .. }
            | S::Waiting { .. }
            | S::Proving { .. }
            | S::Claiming { .. }) => Answer::Ignore(stage),
        },
        E::Queued(place) => match stage {
            S::Joining { lease } => Answer::Enter(S::Waiting { lease, place }),
            stage @ (S::Dialling
            | S::Granting
            | S::Waiting { .. }
            | S::Proving { .. }
            | S::Claiming { .. }) => Answer::Ignore(stage),
        },
        E::FirstInLine(place, proof) => first_in_line(stage, place, proof, policy),
        E::Proven(proof) => proven(stage, proof, policy),
        E::LeaseSeen { view, ttl } => rechecked(stage, view, ttl, policy),
        E::GuardReady => claim_step(stage, ClaimStep::Guard, ClaimStep::Pause),
        E::Unpaused => {
            let next = if policy.once_per {
                ClaimStep::Precheck
            } else {
                ClaimStep::recheck()
            };
            claim_step(stage, ClaimStep::Pause, next)
        }
        E::Paused => paused(stage, policy),
        E::Resumed => resumed(stage),
        E::WindowClaimed => claim_step(stage, ClaimStep::Window, ClaimStep::recheck()),
        E::Claimed(guard) => claimed(stage, guard),
        E::WindowTaken => refused_claim(stage, ClaimStep::Window, Code::Conflict),
        E::GuardianFailed => refused_claim(stage, ClaimStep::Guard, Code::Own(Exit::Internal)),
        E::Held | E::WaitTimeout => exit(Code::Conflict, stage),
        E::Signal(signal) => exit(Code::Signalled(signal), stage),
        E::PlaceLost(_) => place_lost(stage, policy),
        E::Etcd(trouble) => etcd_trouble(stage, trouble, policy),
    }
}

/// The election is paused: without --wait, give back and exit the
/// conflict code; with it, give back what is held and wait the pause out
/// out of line, then start again from a new lease and queue as usual. A
/// place kept through the pause would be a key first in line that does
/// not run: every reader of the election (`status`, `etcdctl elect`)
/// would take it for a leader, for as long as the pause lasts.
fn paused<H: Holds>(stage: Stage<H>, policy: Policy) -> Answer<H> {
    use Stage as S;
    match stage {
        S::Joining { .. }
        | S::Claiming {
            step: ClaimStep::Pause,
            ..
        } if !policy.wait => exit(Code::Conflict, stage),
        stage @ (S::Joining { .. }
        | S::Claiming {
            step: ClaimStep::Pause,
            ..
        }) => Answer::AwaitResume {
            released: stage.release(),
        },
        stage @ (S::Dialling
        | S::Granting
        | S::Waiting { .. }
        | S::Proving { .. }
        | S::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// The pause waited out is over: a lease again, to queue as usual (a
/// pause put back since is found as the run joins).
fn resumed<H: Holds>(stage: Stage<H>) -> Answer<H> {
    use Stage as S;
    match stage {
        S::Granting => Answer::Enter(S::Granting),
        stage @ (S::Dialling
        | S::Joining { .. }
        | S::Waiting { .. }
        | S::Proving { .. }
        | S::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// Joining with --wait, our key written and found among the first.
fn first_in_line<H: Holds>(
    stage: Stage<H>,
    place: H::Place,
    proof: H::Proof,
    policy: Policy,
) -> Answer<H> {
    use Stage as S;
    match stage {
        // Several runners: a waiter's proof is written, which wakes the
        // waiter behind (the proof that came with the place is not used).
        S::Joining { lease } if !policy.single => Answer::Enter(S::Proving { lease, place }),
        S::Joining { lease } => Answer::Enter(S::Claiming {
            lease,
            place: Some(place),
            proof,
            step: ClaimStep::FIRST,
        }),
        stage @ (S::Dialling
        | S::Granting
        | S::Waiting { .. }
        | S::Proving { .. }
        | S::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// Our win proven: by the attempt without --wait (Joining), by the read
/// that found our turn (Waiting), or by the proof's write (Proving).
fn proven<H: Holds>(stage: Stage<H>, proof: H::Proof, policy: Policy) -> Answer<H> {
    use Stage as S;
    match stage {
        S::Waiting { lease, place } if !policy.single => Answer::Enter(S::Proving { lease, place }),
        S::Joining { lease } => Answer::Enter(S::Claiming {
            lease,
            place: None,
            proof,
            step: ClaimStep::FIRST,
        }),
        S::Waiting { lease, place } | S::Proving { lease, place } => Answer::Enter(S::Claiming {
            lease,
            place: Some(place),
            proof,
            step: ClaimStep::FIRST,
        }),
        stage @ (S::Dialling | S::Granting | S::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// The claim's re-check: a proof is good for running only while the
/// lease is sure to be alive past the point where the job would have to
/// be stopped; otherwise the place is lost (how, the kill schedule says).
fn rechecked<H: Holds>(
    stage: Stage<H>,
    view: LeaseView,
    ttl: Duration,
    policy: Policy,
) -> Answer<H> {
    let refused = KillSchedule::new(ttl, policy.kill_after).refuse_start(view, policy.now);
    let step = match &stage {
        Stage::Claiming { step, .. } => Some(*step),
        Stage::Dialling
        | Stage::Granting
        | Stage::Joining { .. }
        | Stage::Waiting { .. }
        | Stage::Proving { .. } => None,
    };
    match (stage, step, refused) {
        (
            stage @ Stage::Claiming { .. },
            Some(ClaimStep::Precheck | ClaimStep::Recheck),
            Some(_),
        ) => place_lost(stage, policy),
        (stage, Some(ClaimStep::Precheck), None) => {
            claim_step(stage, ClaimStep::Precheck, ClaimStep::Window)
        }
        (stage, _, None) => claim_step(stage, ClaimStep::Recheck, ClaimStep::Start),
        (
            stage @ (Stage::Dialling
            | Stage::Granting
            | Stage::Joining { .. }
            | Stage::Waiting { .. }
            | Stage::Proving { .. }
            | Stage::Claiming { .. }),
            _,
            Some(_),
        ) => Answer::Ignore(stage),
    }
}

/// A claim's step `done` is done: on to `next`. In any other step or
/// phase the event is not this work's.
fn claim_step<H: Holds>(stage: Stage<H>, done: ClaimStep, next: ClaimStep) -> Answer<H> {
    match stage {
        Stage::Claiming {
            lease,
            place,
            proof,
            step,
        } if step == done => Answer::Enter(Stage::Claiming {
            lease,
            place,
            proof,
            step: next,
        }),
        stage @ (Stage::Dialling
        | Stage::Granting
        | Stage::Joining { .. }
        | Stage::Waiting { .. }
        | Stage::Proving { .. }
        | Stage::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// The claim made, the guardian handed over: the win starts its command.
fn claimed<H: Holds>(stage: Stage<H>, guard: H::Guard) -> Answer<H> {
    use Stage as S;
    match stage {
        S::Claiming {
            lease,
            place,
            proof,
            step: ClaimStep::Start,
        } => Answer::Start(Won {
            lease,
            place,
            proof,
            guard,
        }),
        stage @ (S::Dialling
        | S::Granting
        | S::Joining { .. }
        | S::Waiting { .. }
        | S::Proving { .. }
        | S::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// The claim refused at its step `at`: the window had its run, or no
/// guardian.
fn refused_claim<H: Holds>(stage: Stage<H>, at: ClaimStep, code: Code) -> Answer<H> {
    use Stage as S;
    match stage {
        stage @ S::Claiming { step, .. } if step == at => exit(code, stage),
        stage @ (S::Dialling
        | S::Granting
        | S::Joining { .. }
        | S::Waiting { .. }
        | S::Proving { .. }
        | S::Claiming { .. }) => Answer::Ignore(stage),
    }
}

/// Our place in the queue, or our win, is gone before the command ran:
/// campaign again with --wait, else conflict.
fn place_lost<H: Holds>(stage: Stage<H>, policy: Policy) -> Answer<H> {
    match policy.wait {
        true => Answer::CampaignAgain {
            released: stage.release(),
        },
        false => exit(Code::Conflict, stage),
    }
}

/// While the command runs: every event.
pub fn running(event: &RunningEvent) -> RunningAction {
    let stop = |code, grace| {
        RunningAction::Stop(StopOrder {
            code,
            grace,
            exited: match code {
                Code::Command(_) => true,
                Code::Conflict | Code::Signalled(_) | Code::Own(_) => false,
            },
            trust_gone: match event {
                RunningEvent::WaitFailed => false,
                RunningEvent::Signal(_)
                | RunningEvent::LeadershipLost(_)
                | RunningEvent::CommandExited(_)
                | RunningEvent::TimedOut
                | RunningEvent::CommandStopped(_) => true,
            },
        })
    };
    match event {
        RunningEvent::Signal(signal) => RunningAction::Forward(*signal),
        RunningEvent::LeadershipLost(_) => stop(Code::Own(Exit::LeadershipLost), Grace::Lost),
        RunningEvent::CommandExited(status) => stop(Code::Command(*status), Grace::Kept),
        RunningEvent::WaitFailed => stop(Code::Own(Exit::Internal), Grace::Kept),
        RunningEvent::TimedOut => stop(Code::Own(Exit::TimedOut), Grace::Kept),
        RunningEvent::CommandStopped(signal) => RunningAction::FollowStop(*signal),
    }
}

/// While the job is stopped: every event.
pub fn stopping(event: &StoppingEvent) -> StoppingAction {
    match event {
        StoppingEvent::Signal(signal) => StoppingAction::Forward(*signal),
        StoppingEvent::LeadershipLost(loss) => StoppingAction::CutGrace(loss.clone()),
        StoppingEvent::KillSignalDue(signal) => StoppingAction::SendKillSignal(*signal),
        StoppingEvent::KillDue => StoppingAction::Kill,
        StoppingEvent::JobGone | StoppingEvent::JobOutlivedKill => StoppingAction::Resign,
        StoppingEvent::GraceOver if planted(Defect::ResignBeforeDead) => StoppingAction::Resign,
        StoppingEvent::GraceOver => StoppingAction::EndGrace,
    }
}

/// A proven win whose command could not be started (126, 127): nothing
/// ran; the run resigns with a record saying so, and exits with this.
pub fn spawn_failed(exit: Exit) -> Code {
    Code::Own(exit)
}

/// An etcd request failed: fatal on a first attempt or a refusal, ridden
/// out once queued.
fn etcd_trouble<H: Holds>(stage: Stage<H>, trouble: Trouble, policy: Policy) -> Answer<H> {
    use CampaignPhase::*;
    let ride_out = policy.wait && policy.queued_before;
    match (trouble, stage.phase()) {
        (Trouble::Refused, Dialling | Granting | Joining | Waiting | Proving | Claiming) => {
            exit(Code::Own(Exit::Internal), stage)
        }
        (Trouble::Full | Trouble::Outage, Waiting) if ride_out => Answer::RetryInLine(stage),
        (Trouble::Full | Trouble::Outage, Dialling | Granting | Joining | Proving | Claiming)
            if ride_out =>
        {
            if planted(Defect::RetryKeepsLease) {
                return Answer::RetryInLine(stage);
            }
            Answer::RetryAfresh {
                released: stage.release(),
            }
        }
        (
            Trouble::Full | Trouble::Outage,
            Dialling | Granting | Joining | Waiting | Proving | Claiming,
        ) => exit(Code::Own(Exit::Internal), stage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use CampaignPhase::*;

    /// The table's answer in words, to `event` in `phase` holding nothing.
    fn campaign(phase: CampaignPhase, event: &CampaignEvent, policy: Policy) -> CampaignAction {
        super::campaign(Stage::of(phase), event.clone(), policy).action()
    }

    fn policy(wait: bool, queued_before: bool) -> Policy {
        Policy {
            wait,
            queued_before,
            single: true,
            once_per: false,
            kill_after: Duration::from_secs(10),
            now: crate::testing::at(0),
        }
    }

    const EXITED: Status = Status {
        code: 3,
        signalled: false,
    };

    const FAIL: CampaignAction = CampaignAction::Exit(Code::Own(Exit::Internal));

    #[test]
    fn a_run_campaigns_before_its_command_and_leads_while_it_runs_or_stops() {
        for phase in CampaignPhase::ALL {
            let phase = Phase::from(phase);
            assert!(phase.campaigns() && !phase.leads(), "{phase:?}");
        }
        for phase in [Phase::Running, Phase::Stopping] {
            assert!(phase.leads() && !phase.campaigns(), "{phase:?}");
        }
        let resigning = Phase::Resigning;
        assert!(!resigning.leads() && !resigning.campaigns());
    }

    #[test]
    fn a_signal_before_the_command_exits_and_after_it_is_forwarded() {
        for phase in CampaignPhase::ALL {
            let signal = CampaignEvent::Signal(Signal::SIGINT);
            assert_eq!(
                campaign(phase, &signal, policy(true, true)),
                CampaignAction::Exit(Code::Signalled(Signal::SIGINT)),
                "{phase:?}"
            );
        }
        assert_eq!(
            running(&RunningEvent::Signal(Signal::SIGINT)),
            RunningAction::Forward(Signal::SIGINT)
        );
        assert_eq!(
            stopping(&StoppingEvent::Signal(Signal::SIGHUP)),
            StoppingAction::Forward(Signal::SIGHUP)
        );
    }

    /// (phase, event, --wait, queued before) → what happens.
    type Case = (CampaignPhase, CampaignEvent, bool, bool, CampaignAction);

    fn check(cases: &[Case]) {
        for (phase, event, wait, queued_before, expected) in cases {
            let action = campaign(*phase, event, policy(*wait, *queued_before));
            assert_eq!(action, *expected, "{event:?} in {phase:?}, wait {wait}");
        }
    }

    #[test]
    fn etcd_errors_fail_the_first_attempt_and_are_ridden_out_once_queued() {
        let error = CampaignEvent::Etcd(Trouble::Outage);
        let full = CampaignEvent::Etcd(Trouble::Full);
        let refused = CampaignEvent::Etcd(Trouble::Refused);
        check(&[
            (Dialling, error.clone(), true, false, FAIL),
            (
                Granting,
                error.clone(),
                true,
                true,
                CampaignAction::RetryAfresh,
            ),
            (
                Joining,
                error.clone(),
                true,
                true,
                CampaignAction::RetryAfresh,
            ),
            (
                Proving,
                full.clone(),
                true,
                true,
                CampaignAction::RetryAfresh,
            ),
            (
                Claiming,
                error.clone(),
                true,
                true,
                CampaignAction::RetryAfresh,
            ),
            (
                Waiting,
                full.clone(),
                true,
                true,
                CampaignAction::RetryInLine,
            ),
            (
                Waiting,
                error.clone(),
                true,
                true,
                CampaignAction::RetryInLine,
            ),
            (Granting, error.clone(), false, true, FAIL),
            (Waiting, error, true, false, FAIL),
            (Joining, full, false, false, FAIL),
            (Waiting, refused.clone(), true, true, FAIL),
            (Granting, refused, true, true, FAIL),
        ]);
    }

    #[test]
    fn losing_a_place_campaigns_again_only_when_waiting() {
        let lost = CampaignEvent::PlaceLost(PlaceLost::LeaseGone);
        for phase in CampaignPhase::ALL {
            check(&[
                (
                    phase,
                    lost.clone(),
                    true,
                    true,
                    CampaignAction::CampaignAgain,
                ),
                (
                    phase,
                    lost.clone(),
                    false,
                    false,
                    CampaignAction::Exit(Code::Conflict),
                ),
            ]);
        }
        let loss = Loss::Key(KeyLoss::Overwritten);
        assert_eq!(
            running(&RunningEvent::LeadershipLost(loss.clone())),
            RunningAction::Stop(StopOrder {
                code: Code::Own(Exit::LeadershipLost),
                grace: Grace::Lost,
                exited: false,
                trust_gone: true,
            })
        );
        assert_eq!(
            stopping(&StoppingEvent::LeadershipLost(loss.clone())),
            StoppingAction::CutGrace(loss)
        );
    }

    #[test]
    fn the_command_is_followed_and_stopped_as_it_ends() {
        let kept = |code, exited, trust_gone| {
            RunningAction::Stop(StopOrder {
                code,
                grace: Grace::Kept,
                exited,
                trust_gone,
            })
        };
        let cases = [
            (
                RunningEvent::CommandStopped(Signal::SIGTSTP),
                RunningAction::FollowStop(Signal::SIGTSTP),
            ),
            (
                RunningEvent::CommandExited(EXITED),
                kept(Code::Command(EXITED), true, true),
            ),
            (
                RunningEvent::WaitFailed,
                kept(Code::Own(Exit::Internal), false, false),
            ),
            (
                RunningEvent::TimedOut,
                kept(Code::Own(Exit::TimedOut), false, true),
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(running(&event), expected, "{event:?}");
        }
        assert_eq!(stopping(&StoppingEvent::JobGone), StoppingAction::Resign);
        assert_eq!(
            stopping(&StoppingEvent::JobOutlivedKill),
            StoppingAction::Resign
        );
        assert_eq!(
            stopping(&StoppingEvent::GraceOver),
            StoppingAction::EndGrace
        );
        assert_eq!(stopping(&StoppingEvent::KillDue), StoppingAction::Kill);
        assert_eq!(
            stopping(&StoppingEvent::KillSignalDue(Signal::SIGUSR1)),
            StoppingAction::SendKillSignal(Signal::SIGUSR1),
            "the kill signal asked for, not a default"
        );
        assert_eq!(
            spawn_failed(Exit::NotFound),
            Code::Own(Exit::NotFound),
            "a spawn that failed exits 127"
        );
    }

    #[test]
    fn the_wait_timeout_and_a_holder_end_a_campaign_in_every_phase() {
        for phase in CampaignPhase::ALL {
            check(&[
                (
                    phase,
                    CampaignEvent::WaitTimeout,
                    true,
                    true,
                    CampaignAction::Exit(Code::Conflict),
                ),
                (
                    phase,
                    CampaignEvent::Held,
                    false,
                    false,
                    CampaignAction::Exit(Code::Conflict),
                ),
            ]);
        }
    }

    #[test]
    fn each_phase_s_work_leads_to_the_next_and_nowhere_else() {
        let progress = [
            (
                CampaignEvent::Dialled,
                Dialling,
                CampaignAction::Enter(Granting),
            ),
            (
                CampaignEvent::Granted(()),
                Granting,
                CampaignAction::Enter(Joining),
            ),
            (
                CampaignEvent::Queued(()),
                Joining,
                CampaignAction::Enter(Waiting),
            ),
        ];
        for (event, of, then) in progress {
            for phase in CampaignPhase::ALL {
                let expected = if phase == of {
                    then
                } else {
                    CampaignAction::Ignore
                };
                assert_eq!(
                    campaign(phase, &event, policy(true, true)),
                    expected,
                    "{event:?} in {phase:?}"
                );
            }
        }
    }

    /// The stage of Claiming at `step`, holding nothing.
    fn claiming(step: ClaimStep) -> Stage<Bare> {
        Stage::Claiming {
            lease: (),
            place: Some(()),
            proof: (),
            step,
        }
    }

    /// A claim step's event, the step it is the work of, the policy, the
    /// step it leads to, and what the table does: with and without
    /// --once-per.
    type ClaimCase = (
        CampaignEvent,
        ClaimStep,
        Policy,
        Option<ClaimStep>,
        CampaignAction,
    );

    fn claim_cases() -> [ClaimCase; 11] {
        use ClaimStep::*;
        let sure = CampaignEvent::LeaseSeen {
            view: crate::testing::lease(6_000),
            ttl: Duration::from_secs(6),
        };
        let (one, window) = (
            policy(true, true),
            Policy {
                once_per: true,
                ..policy(true, true)
            },
        );
        let next = CampaignAction::Enter(Claiming);
        let (taken, start) = (CampaignAction::Exit(Code::Conflict), CampaignAction::Start);
        let (wait, try_only) = (one, Policy { wait: false, ..one });
        [
            (CampaignEvent::GuardReady, Guard, one, Some(Pause), next),
            (CampaignEvent::Unpaused, Pause, one, Some(Recheck), next),
            (CampaignEvent::Unpaused, Pause, window, Some(Precheck), next),
            (CampaignEvent::Paused, Pause, try_only, None, taken),
            (
                CampaignEvent::Paused,
                Pause,
                wait,
                None,
                CampaignAction::AwaitResume,
            ),
            (sure.clone(), Precheck, window, Some(Window), next),
            (
                CampaignEvent::WindowClaimed,
                Window,
                window,
                Some(Recheck),
                next,
            ),
            (sure, Recheck, one, Some(Start), next),
            (CampaignEvent::Claimed(()), Start, one, None, start),
            (CampaignEvent::WindowTaken, Window, window, None, taken),
            (CampaignEvent::GuardianFailed, Guard, one, None, FAIL),
        ]
    }

    #[test]
    fn a_claim_takes_its_steps_in_order_and_each_only_in_its_step() {
        use ClaimStep::*;
        let cases = claim_cases();
        for (event, of, policy, next, then) in cases {
            for step in [Guard, Pause, Precheck, Window, Recheck, Start] {
                let answer = super::campaign(claiming(step), event.clone(), policy);
                // The lease is seen at both of the re-checks: each has a
                // case of its own.
                let rechecks = [Precheck, Recheck];
                let seen = matches!(event, CampaignEvent::LeaseSeen { .. });
                if step != of && seen && rechecks.contains(&step) && rechecks.contains(&of) {
                    continue;
                }
                if step != of {
                    assert_eq!(
                        answer.action(),
                        CampaignAction::Ignore,
                        "{event:?} at {step:?}"
                    );
                    continue;
                }
                assert_eq!(answer.action(), then, "{event:?} at {step:?}");
                if let (Answer::Enter(Stage::Claiming { step, .. }), Some(next)) = (answer, next) {
                    assert_eq!(step, next, "{event:?}");
                }
            }
            // A pause is also found as a run joins (its own test).
            for phase in CampaignPhase::ALL
                .into_iter()
                .filter(|phase| *phase != Claiming)
                .filter(|phase| !(*phase == Joining && matches!(event, CampaignEvent::Paused)))
            {
                assert_eq!(campaign(phase, &event, policy), CampaignAction::Ignore);
            }
        }
    }

    /// The re-check refuses a proof whose lease must be being stopped at
    /// once, or is gone: the place is lost (campaign again with --wait).
    #[test]
    fn a_claim_whose_lease_is_not_sure_loses_its_place() {
        let ttl = Duration::from_secs(6);
        let at_now = |expires| CampaignEvent::LeaseSeen {
            view: crate::testing::lease(expires),
            ttl,
        };
        let gone = CampaignEvent::LeaseSeen {
            view: LeaseView {
                gone: true,
                ..crate::testing::lease(6_000)
            },
            ttl,
        };
        // Now is 0: a deadline within the margin and grace is too close.
        for (event, wait, then) in [
            (at_now(1_000), true, CampaignAction::CampaignAgain),
            (at_now(1_000), false, CampaignAction::Exit(Code::Conflict)),
            (gone, true, CampaignAction::CampaignAgain),
            (at_now(6_000), true, CampaignAction::Enter(Claiming)),
        ] {
            let answer = super::campaign(
                claiming(ClaimStep::Recheck),
                event.clone(),
                policy(wait, true),
            );
            assert_eq!(answer.action(), then, "{event:?}");
        }
    }

    #[test]
    fn with_one_runner_a_proof_goes_straight_to_claiming() {
        for phase in CampaignPhase::ALL {
            let expected = match phase {
                Joining | Waiting | Proving => CampaignAction::Enter(Claiming),
                Dialling | Granting | Claiming => CampaignAction::Ignore,
            };
            let action = campaign(phase, &CampaignEvent::Proven(()), policy(true, true));
            assert_eq!(action, expected, "{phase:?}");
            let first = campaign(
                phase,
                &CampaignEvent::FirstInLine((), ()),
                policy(true, true),
            );
            let expected = match phase {
                Joining => CampaignAction::Enter(Claiming),
                Dialling | Granting | Waiting | Proving | Claiming => CampaignAction::Ignore,
            };
            assert_eq!(first, expected, "first in line in {phase:?}");
        }
    }

    #[test]
    fn several_runners_prove_a_waiter_s_turn_with_a_write() {
        let several = Policy {
            single: false,
            ..policy(true, true)
        };
        let without_wait = Policy {
            wait: false,
            ..several
        };
        let proven = CampaignEvent::Proven(());
        let first = CampaignEvent::FirstInLine((), ());
        // Without --wait, the attempt's own transaction proved it (a win
        // with no place in line, whatever --wait says).
        let cases = [
            (Waiting, &proven, several, Proving),
            (Joining, &first, several, Proving),
            (Joining, &proven, without_wait, Claiming),
            (Joining, &proven, several, Claiming),
            (Proving, &proven, several, Claiming),
        ];
        for (phase, event, policy, next) in cases {
            assert_eq!(
                campaign(phase, event, policy),
                CampaignAction::Enter(next),
                "{event:?} in {phase:?} with {policy:?}"
            );
        }
    }

    #[test]
    fn every_campaign_phase_is_a_phase_of_the_run() {
        let phases: Vec<Phase> = CampaignPhase::ALL.into_iter().map(Phase::from).collect();
        assert_eq!(
            phases,
            [
                Phase::Dialling,
                Phase::Granting,
                Phase::Joining,
                Phase::Waiting,
                Phase::Proving,
                Phase::Claiming
            ]
        );
    }

    #[test]
    fn the_record_says_how_the_command_ended() {
        let status = |code, signalled| Code::Command(Status { code, signalled });
        assert_eq!(status(0, false).outcome(), Outcome::Succeeded);
        assert_eq!(status(1, false).outcome(), Outcome::Failed);
        assert_eq!(status(143, true).outcome(), Outcome::Signalled);
        assert_eq!(Code::Own(Exit::LeadershipLost).outcome(), Outcome::Lost);
        assert_eq!(Code::Own(Exit::TimedOut).outcome(), Outcome::TimedOut);
        assert_eq!(Code::Own(Exit::NotFound).outcome(), Outcome::NotStarted);
        assert_eq!(Code::Own(Exit::Internal).outcome(), Outcome::Failed);
        assert_eq!(Code::Signalled(Signal::SIGTERM).value(75), 143);
        assert_eq!(Code::Conflict.value(0), 0);
    }

    /// The words of a loss, which the warning of a lost leadership says.
    #[test]
    fn a_loss_says_what_etcd_did_or_failed_to_do() {
        assert_eq!(
            Loss::LeaseGone.to_string(),
            "etcd says the lease no longer exists (revoked or expired)"
        );
        let silent = Loss::Unacknowledged {
            silent_for: Duration::from_micros(4_500_900),
            ttl: Duration::from_secs(6),
            trouble: Some("connection refused".into()),
        };
        assert_eq!(
            silent.to_string(),
            "etcd has not acknowledged a lease renewal for 4s 500ms (TTL 6s); the last renewal failed: connection refused"
        );
        let quiet = Loss::Unacknowledged {
            silent_for: Duration::from_secs(5),
            ttl: Duration::from_secs(6),
            trouble: None,
        };
        assert!(quiet.to_string().ends_with("for 5s (TTL 6s)"), "{quiet}");
        assert_eq!(
            Loss::Key(KeyLoss::Deleted).to_string(),
            KeyLoss::Deleted.to_string()
        );
    }
}
