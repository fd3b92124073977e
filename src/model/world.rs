//! The world the checker explores: replicas of leaderrun, each with its
//! command and guardian, one etcd, one clock, and the faults.
//!
//! Each replica is driven the way the run's loop drives it: the work of its
//! phase, or a piece of news (its lease gone, its key lost, its local
//! deadline passed, its command ended, a signal, the grace over), becomes
//! the event of its state; the production protocol states (`protocol`:
//! the campaign, [`Running`], [`Stopping`]) take it and say what to do;
//! and the world does that (`driver`). The rules under them are the
//! production ones too: the kill schedule ([`KillSchedule`]) and the kill
//! sequence (asked what is due as the run asks it), `judge` and the
//! proof's count, the record plan ([`end_plan`]). What is the model's
//! own is how a phase's work talks to etcd, one atomic request per step.
//!
//! Time: a clock in milliseconds. It moves on by a tick, or to the next
//! deadline someone has, whichever is first, and never past a deadline that
//! a replica still running (not paused) has to act on: a process that runs
//! acts in time (the margin of the kill schedule is there for the real
//! delays). A paused replica has no say: the clock runs on past its
//! deadlines, and etcd expires its lease. The clock is etcd's; a replica
//! times its own spans (the TTL from a renewal, the next renewal) by a
//! clock of its own, which runs at etcd's rate but in the simulator
//! ([`Replica::slow_by`]).

use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::etcd::{Etcd, Key, Value};
use crate::clock::Instant;
use crate::election::record::Outcome;
use crate::election::{KeyLoss, PlaceLost};
use protocol::campaign::{Campaign, Memory, Rules, Work};
use protocol::lead::{Running, Stopping};
use protocol::line::{among_first, judge_version};
use protocol::renewal::{Acknowledged, Renewals};
use protocol::schedule::{KillSchedule, LeaseVerdict, LeaseView};
use protocol::stage::ClaimStep;
use protocol::stage::Holds;
use protocol::stop::Next;
use protocol::table::{
    CampaignAction, CampaignEvent, CampaignPhase, Loss, Phase, RunningEvent, Signal, Status,
    StoppingEvent, Trouble,
};

/// The TTL every replica asks for, and gets.
pub const TTL: u32 = 3_000;
/// --kill-after.
pub const KILL_AFTER: u32 = 1_000;
/// What the clock says in every state (see [`World::rebase`]).
pub const NOW: u32 = 100_000;
/// The clock's step when nobody has a deadline sooner.
pub const TICK: u32 = 1_000;
/// How much a new etcd leader extends every lease by: its election
/// timeout (etcd's default), added to the TTL from the moment it leads.
pub const ELECTION: u32 = 1_000;
/// The bound on a replica's clock rate against etcd's, per mille either
/// way, that the simulator draws within: a twentieth, half of what the
/// kill schedule's margin (a tenth of the TTL at the model's) leaves room
/// for, and a hundred times what NTP's slew and a crystal's drift reach.
pub const DRIFT: i32 = 50;

pub fn schedule() -> KillSchedule {
    KillSchedule::new(ms(TTL), ms(KILL_AFTER))
}

pub(super) fn ms(n: u32) -> Duration {
    Duration::from_millis(u64::from(n))
}

pub(super) fn at(now: u32) -> Instant {
    Instant::from_boot(ms(now))
}

pub(super) fn millis(instant: Instant) -> u32 {
    instant.since_boot().as_millis() as u32
}

/// What a modelled campaign holds, through the production stages: its
/// lease's id, its place in line (its key's token), its proof (the token
/// and the revision it was proven at). The model reads them back from the
/// campaign for each piece of work it does, so that a core that drops or
/// mixes up a held value shows in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Modelled;

/// A modelled proof: our key's token, proven among the first at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Proof {
    pub token: i64,
    pub at: i64,
}

impl Holds for Modelled {
    type Lease = i64;
    type Place = i64;
    type Proof = Proof;
    type Guard = ();
}

/// A replica's campaign, the production state, hashed as its phase (with
/// its claim's step), what it holds and what it has learnt. Its pace (when a retry may run, when
/// --wait-timeout ends it) is left out: the model lets a phase's work
/// happen at any moment, which takes in every backoff.
#[derive(Debug, Clone, Copy)]
pub struct C(pub Campaign<Modelled>);

/// A campaign's phase, claim step, holdings and memory: what tells two
/// campaigns apart.
type CampaignKey = (
    CampaignPhase,
    Option<ClaimStep>,
    (Option<i64>, Option<i64>, Option<Proof>),
    Memory,
);

impl C {
    fn key(&self) -> CampaignKey {
        let held = self.0.holding();
        (
            self.0.phase(),
            self.0.claim_step(),
            (
                held.lease.copied(),
                held.place.copied(),
                held.proof.copied(),
            ),
            self.0.memory(),
        )
    }

    /// The token of the key it holds in line, if it holds one.
    pub fn token(&self) -> Option<i64> {
        let held = self.0.holding();
        match (held.place, held.proof) {
            (_, Some(proof)) => Some(proof.token),
            (Some(token), None) => Some(*token),
            (None, None) => None,
        }
    }
}

impl PartialEq for C {
    fn eq(&self, other: &C) -> bool {
        self.key() == other.key()
    }
}

impl Eq for C {}

impl Hash for C {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// A phase, hashed as its discriminant (the production type has no Hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct P(pub Phase);

impl Hash for P {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0 as u8).hash(state);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proc {
    Alive,
    /// SIGKILLed: its guardian killed the job.
    Killed,
    /// Exited with this code.
    Done(i32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Job {
    None,
    /// The command's job runs; `term` once --kill-signal went to it.
    Running {
        term: bool,
    },
    /// It ended (code, by a signal); leaderrun has not waited for it yet.
    Ended(i32, bool),
    /// Waited for: nothing of it is left.
    Reaped,
}

/// The lease as the replica knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Held {
    pub id: i64,
    /// The keeper's state, the production one (`protocol::renewal`): the
    /// local deadline (the send time of the latest acknowledged renewal
    /// plus the TTL), the next renewal, the one awaiting its answer. Its
    /// spans are timed by the replica's own clock ([`Replica::timed`]).
    pub renewals: Renewals,
    /// etcd said it is gone.
    pub gone: bool,
}

impl Held {
    /// The lease as the production rules take it.
    pub fn view(&self) -> LeaseView {
        LeaseView {
            expires: self.renewals.expires(),
            gone: self.gone,
        }
    }

    /// The local deadline, in the model's milliseconds.
    pub fn expires(&self) -> u32 {
        millis(self.renewals.expires())
    }
}

/// A replica's command's run, in the production states: not begun (or
/// over), running, or its job being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Led {
    Not,
    Running(Running),
    Stopping(Stopping),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Replica {
    /// --timeout given; `timed_out` once it passed.
    pub timeout: bool,
    /// --wait-timeout given.
    pub wait_timeout: bool,
    pub timed_out: bool,
    pub proc: Proc,
    pub paused: bool,
    pub connected: bool,
    pub signal: bool,
    pub phase: P,
    /// Before the command: the production campaign, whose phase `phase`
    /// follows.
    pub campaign: C,
    pub lease: Option<Held>,
    pub token: Option<i64>,
    pub proven_at: Option<i64>,
    pub job: Job,
    /// Its command's run, in the production states.
    pub led: Led,
    /// The code the run resigns with: (exit code, what the record says).
    pub ending: Option<(i32, Outcome)>,
    /// Leadership loss already seen (once is news, twice is not).
    pub lost_seen: bool,
    /// Ghost: the run's local deadline passed while leaderrun was paused
    /// with the job running: the documented exception.
    pub overslept: bool,
    /// Ghost: another writer took its lease or key (revoked, deleted,
    /// overwritten): it runs on until it notices, as any lock's holder
    /// would; fencing's case too.
    pub robbed: bool,
    /// Ghost: when its command started, in the order of all starts.
    pub started: u8,
    /// Ghost: the command ran (in this replica's life).
    pub ran: bool,
    /// Ghost: the command exited 0 by itself.
    pub exited_zero: bool,
    /// etcd refuses its requests from now on (its credentials changed, a
    /// permission taken away): no retry helps.
    pub refused: bool,
    /// Its command cannot be spawned (not found, not executable).
    pub spawn_fails: bool,
    /// Its guardian cannot be started (no process to spare).
    pub guardian_fails: bool,
    /// It claimed the --once-per window, and its command has not started:
    /// the window is to be given back if it never does.
    pub window: bool,
    /// How much slower than etcd's its clock runs, per mille (negative:
    /// faster): every span it times (the TTL from a renewal's send, the
    /// wait to the next renewal) lasts that much longer in etcd's time.
    /// 0 in the checker; the simulator draws it within [`DRIFT`].
    pub slow_by: i32,
    /// The handover's fast path on (LEADERRUN_HANDOFF unset): with one
    /// runner, it hands over to the candidate behind it as it resigns,
    /// and takes a handover to it as its proof. Off in the checker (its
    /// configurations are the slow path's); the simulator draws it per
    /// replica, as a fleet mid-change would have it.
    pub fast: bool,
    /// etcd compacted its history while it waited in line or proved its
    /// turn: its watches broke, and the read it makes of the line at the
    /// revision it knew fails (an error like any other to the run).
    pub compacted: bool,
    /// etcd's answers to its renewals may come late, up to the keeper's
    /// acknowledgement timeout (a slow etcd, a congested link). Off in
    /// the checker, whose renewals are answered at once; the simulator
    /// draws it per replica.
    pub answers_late: bool,
}

impl Replica {
    fn new(rules: Rules, timeout: bool, wait_timeout: bool) -> Replica {
        // The instant --wait-timeout ends is the model's to choose (any
        // moment once it counts): only whether it counts is the campaign's.
        let gives_up_at = wait_timeout.then_some(at(NOW));
        Replica {
            timeout,
            wait_timeout,
            timed_out: false,
            proc: Proc::Alive,
            paused: false,
            connected: true,
            signal: false,
            phase: P(Phase::Dialling),
            campaign: C(Campaign::new(rules, gives_up_at, 1)),
            lease: None,
            token: None,
            proven_at: None,
            job: Job::None,
            led: Led::Not,
            ending: None,
            lost_seen: false,
            overslept: false,
            robbed: false,
            started: 0,
            ran: false,
            exited_zero: false,
            refused: false,
            spawn_fails: false,
            guardian_fails: false,
            window: false,
            slow_by: 0,
            fast: false,
            compacted: false,
            answers_late: false,
        }
    }

    /// `span` as its clock times it, in etcd's time.
    pub(super) fn timed(&self, span: u32) -> u32 {
        let stretched = i64::from(span) * i64::from(1_000 + self.slow_by) / 1_000;
        u32::try_from(stretched).unwrap_or(u32::MAX)
    }

    pub fn runs(&self) -> bool {
        matches!(self.job, Job::Running { .. })
    }

    fn acts(&self) -> bool {
        self.proc == Proc::Alive && !self.paused
    }

    fn key(&self) -> Option<Key> {
        self.lease.map(|held| Key::Candidate(held.id))
    }
}

/// What a replica's step is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum News {
    /// The work of its phase.
    Work,
    /// The keeper's renewal is due.
    Renew,
    /// The answer to the keeper's renewal comes (late: the simulator's).
    Acknowledged,
    /// The keeper gives up on the answer to its renewal: its time is out.
    AckLate,
    /// The lease's local deadline says the job must be being stopped.
    Deadline,
    /// The keeper learnt the lease is gone.
    LeaseGone,
    /// Its key is not its own any more (the own-key watch).
    KeyLost,
    /// Its command's job ended.
    Ended,
    /// A signal to leaderrun.
    Signal,
    /// The grace is over.
    GraceOver,
    /// --timeout passed (at no instant the model fixes: any moment of the
    /// command's run).
    TimedOut,
    /// --wait-timeout passed (any moment once the campaign counts it).
    WaitTimeout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    Kill(u8),
    Pause(u8),
    Resume(u8),
    Partition(u8),
    Heal(u8),
    Down,
    Up,
    /// Someone revokes this lease.
    Revoke(i64),
    /// Someone deletes this candidate key.
    Delete(i64),
    /// Someone overwrites this candidate key, on a lease of their own.
    Overwrite(i64),
    Signal(u8),
    /// etcd refuses this replica's requests from now on.
    Refuse(u8),
    /// This replica's command will fail to spawn.
    FailSpawn(u8),
    /// This replica's guardian will fail to start, if it must be started
    /// on winning.
    FailGuardian(u8),
    /// etcd's raft leader changes: the new leader extends every lease to
    /// its TTL and its election timeout from now (etcd's `Promote`),
    /// which no holder is told of.
    LeaderChange,
    /// etcd compacts its history up to now.
    Compact,
}

/// The faults, in four groups that CI checks one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// SIGKILL, SIGSTOP (and SIGCONT), a signal to leaderrun.
    Process,
    /// A replica cut off (and healed), etcd unavailable (and back).
    Network,
    /// Another writer revokes a lease, deletes or overwrites a key.
    Writer,
    /// What a win needs refused: etcd refuses a replica's requests, its
    /// command cannot be spawned, its guardian cannot be started.
    Refusal,
    /// etcd's own life: a raft leader change, a compaction.
    Cluster,
}

pub const ALL: &[Kind] = &[
    Kind::Process,
    Kind::Network,
    Kind::Writer,
    Kind::Refusal,
    Kind::Cluster,
];

impl Fault {
    pub fn kind(self) -> Kind {
        match self {
            Fault::Kill(_) | Fault::Pause(_) | Fault::Resume(_) | Fault::Signal(_) => Kind::Process,
            Fault::Partition(_) | Fault::Heal(_) | Fault::Down | Fault::Up => Kind::Network,
            Fault::Revoke(_) | Fault::Delete(_) | Fault::Overwrite(_) => Kind::Writer,
            Fault::Refuse(_) | Fault::FailSpawn(_) | Fault::FailGuardian(_) => Kind::Refusal,
            Fault::LeaderChange | Fault::Compact => Kind::Cluster,
        }
    }

    /// Whether it spends the fault budget (ending a fault does not).
    fn costs(self) -> bool {
        !matches!(self, Fault::Resume(_) | Fault::Heal(_) | Fault::Up)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Replica(u8, News),
    /// The command exits by itself, 0.
    Exits(u8),
    /// The command dies of the --kill-signal sent to it.
    DiesOfTerm(u8),
    /// etcd expires a lease whose TTL ran out.
    Expire(i64),
    Tick,
    Fault(Fault),
}

/// Time since the start, for the trace: not part of the state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Elapsed(pub u32);

impl PartialEq for Elapsed {
    fn eq(&self, _: &Elapsed) -> bool {
        true
    }
}

impl Eq for Elapsed {}

impl Hash for Elapsed {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct World {
    pub now: u32,
    pub elapsed: Elapsed,
    pub slots: usize,
    pub etcd: Etcd,
    pub replicas: Vec<Replica>,
    pub faults_left: u8,
    /// The kinds of fault that may strike.
    pub kinds: &'static [Kind],
    /// Ghost: the largest token a command started with.
    pub max_started: i64,
    /// Ghost: a command started with a token no larger than one before.
    pub token_went_back: bool,
    /// Ghost: the latest end, by revision, of a run entitled to write the
    /// last-finished record or that wrote it.
    pub finished_floor: i64,
    /// Ghost: a lost run (this token) whose record replaced a
    /// `last-finished` written after its win.
    pub lost_over_newer: Option<i64>,
    /// Ghost: how many commands started.
    pub starts: u8,
    /// Ghost: the latest start (in start order) written to last-started.
    pub started_floor: i64,
    /// --once-per (every replica, one window).
    pub once_per: bool,
    /// Ghost: how many commands started in the window.
    pub window_runs: u8,
}

/// Where a step's story goes, if anyone listens (only for a trace).
pub type Say<'a> = Option<&'a mut Vec<String>>;

impl World {
    pub fn new(
        replicas: usize,
        slots: usize,
        wait: &[bool],
        timeout: &[bool],
        wait_timeout: &[bool],
        once_per: bool,
        faults: (u8, &'static [Kind]),
    ) -> World {
        World {
            now: NOW,
            elapsed: Elapsed(0),
            slots,
            etcd: Etcd::new(),
            replicas: (0..replicas)
                .map(|r| {
                    let rules = Rules {
                        wait: wait[r % wait.len()],
                        single: slots == 1,
                        once_per,
                        kill_after: ms(KILL_AFTER),
                    };
                    Replica::new(
                        rules,
                        timeout[r % timeout.len()],
                        wait_timeout[r % wait_timeout.len()],
                    )
                })
                .collect(),
            faults_left: faults.0,
            kinds: faults.1,
            max_started: 0,
            token_went_back: false,
            finished_floor: 0,
            lost_over_newer: None,
            starts: 0,
            started_floor: 0,
            once_per,
            window_runs: 0,
        }
    }

    /// The state in a few lines, for a trace.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "at t={} ms (shown as {NOW} ms), etcd rev {}, keys {:?}, leases {:?}",
            self.elapsed.0, self.etcd.revision, self.etcd.keys, self.etcd.leases
        )];
        for (r, replica) in self.replicas.iter().enumerate() {
            lines.push(format!(
                "replica {r}: {:?} {:?} paused {} connected {} lease {:?} token {:?} job {:?}",
                replica.proc,
                replica.phase.0,
                replica.paused,
                replica.connected,
                replica.lease,
                replica.token,
                replica.job
            ));
        }
        lines
    }

    pub(super) fn reachable(&self, r: usize) -> bool {
        self.replicas[r].connected && !self.etcd.down
    }

    /// Why etcd will not do what replica `r` asks now, if it will not:
    /// out of reach, or refusing it. Its watches need only reach it.
    pub(super) fn request_trouble(&self, r: usize) -> Option<Trouble> {
        if !self.reachable(r) {
            Some(Trouble::Outage)
        } else if self.replicas[r].refused {
            Some(Trouble::Refused)
        } else {
            None
        }
    }

    /// Whether replica `r` has `news` now.
    pub fn has(&self, r: usize, news: News) -> bool {
        let replica = &self.replicas[r];
        if !replica.acts() {
            return false;
        }
        let phase = replica.phase.0;
        let leading = phase.leads();
        match news {
            News::Work => self.has_work(r),
            News::Renew | News::Acknowledged | News::AckLate => self.keeper_has(r, news),
            News::Deadline => {
                leading
                    && !replica.lost_seen
                    && replica.lease.is_some_and(|held| {
                        schedule().verdict(held.view(), at(self.now)) == LeaseVerdict::MustStop
                    })
            }
            // Only where the run listens to its lease's keeper: a waiter,
            // and a run that leads. Before Waiting, a lost lease shows only
            // as the requests on it failing; Claiming reads it (the claim).
            News::LeaseGone => {
                replica.lease.is_some_and(|held| held.gone)
                    && !replica.lost_seen
                    && matches!(phase, Phase::Waiting | Phase::Running | Phase::Stopping)
            }
            News::KeyLost => {
                matches!(phase, Phase::Proving | Phase::Claiming) | leading
                    && !replica.lost_seen
                    && self.reachable(r)
                    && self.key_loss(r).is_some()
            }
            News::Ended => matches!(replica.job, Job::Ended(..)) && leading,
            // Resigning listens to nothing: a signal then waits for the exit.
            News::Signal => replica.signal && phase != Phase::Resigning,
            // Only while the job runs: one that exited is seen gone first
            // (News::Ended), as the run's wait for it reaps it.
            News::GraceOver => {
                replica.runs()
                    && matches!(
                        self.stop_next(r),
                        Some(Next::Event(StoppingEvent::GraceOver))
                    )
            }
            News::TimedOut => {
                let counts =
                    matches!(replica.led, Led::Running(core) if core.timeout_at().is_some());
                counts && !replica.timed_out && replica.runs()
            }
            News::WaitTimeout => {
                let campaigning = phase.campaigns();
                campaigning && replica.campaign.0.gives_up_at().is_some()
            }
        }
    }

    /// Whether replica `r`'s keeper has `news` now (it acts).
    fn keeper_has(&self, r: usize, news: News) -> bool {
        let Some(held) = self.replicas[r].lease else {
            return false;
        };
        let now = at(self.now);
        let awaited = held.renewals.ack_due();
        match news {
            News::Renew => !held.gone && awaited.is_none() && now >= held.renewals.next_due(),
            // Etcd's answer may come at any moment before the keeper gives
            // up on it, if etcd can still be reached.
            News::Acknowledged => self.reachable(r) && awaited.is_some_and(|due| now < due),
            News::AckLate => awaited.is_some_and(|due| now >= due),
            News::Work
            | News::Deadline
            | News::LeaseGone
            | News::KeyLost
            | News::Ended
            | News::Signal
            | News::GraceOver
            | News::TimedOut
            | News::WaitTimeout => false,
        }
    }

    /// The token of replica `r`'s key: the campaign's while it
    /// campaigns (what it holds), the run's once it won.
    pub(super) fn token_of(&self, r: usize) -> Option<i64> {
        let replica = &self.replicas[r];
        if replica.phase.0.campaigns() {
            replica.campaign.token()
        } else {
            replica.token
        }
    }

    fn key_loss(&self, r: usize) -> Option<KeyLoss> {
        let replica = &self.replicas[r];
        let (key, token, held) = (replica.key()?, self.token_of(r)?, replica.lease?);
        judge_version(self.etcd.version(key), token, held.id)
    }

    fn has_work(&self, r: usize) -> bool {
        let replica = &self.replicas[r];
        match replica.phase.0 {
            Phase::Waiting => {
                self.reachable(r)
                    && (replica.compacted
                        || self.key_loss(r).is_some()
                        || self.turn(r)
                        || self.handed_over(r).is_some())
            }
            Phase::Running => false,
            // The kill sequence is over: JobGone (an end still to wait
            // for is News::Ended's; SIGKILL always lands here, so what it
            // abandons is an end not waited for yet).
            Phase::Stopping => {
                matches!(self.stop_next(r), Some(Next::Event(StoppingEvent::JobGone)))
            }
            _ => true,
        }
    }

    /// The revision at which the leader before it handed over to replica
    /// `r`, if it did and `r` takes handovers (the fast path): its own
    /// key's watch shows the rewrite, which proves its turn then.
    pub(super) fn handed_over(&self, r: usize) -> Option<i64> {
        let replica = &self.replicas[r];
        let key = replica.key().filter(|_| replica.fast)?;
        let found = self.etcd.keys.get(&key)?;
        let ours = self.token_of(r) == Some(found.create) && replica.lease?.id == found.lease;
        (ours && found.value == Value::HandedOver).then_some(found.modified)
    }

    /// The proof's rule, on our key read now.
    fn turn(&self, r: usize) -> bool {
        let token = self.token_of(r).unwrap_or(i64::MAX);
        among_first(self.etcd.ahead_of(token), self.slots)
    }

    /// Every step that can be taken now.
    pub fn steps(&self, with_faults: bool) -> Vec<Step> {
        let mut steps = Vec::new();
        const NEWS: [News; 12] = [
            News::Work,
            News::Renew,
            News::Acknowledged,
            News::AckLate,
            News::Deadline,
            News::LeaseGone,
            News::KeyLost,
            News::Ended,
            News::Signal,
            News::GraceOver,
            News::TimedOut,
            News::WaitTimeout,
        ];
        for r in 0..self.replicas.len() {
            for news in NEWS {
                if self.has(r, news) {
                    steps.push(Step::Replica(r as u8, news));
                }
            }
        }
        for (r, replica) in self.replicas.iter().enumerate() {
            match replica.job {
                Job::Running { term } => {
                    steps.push(Step::Exits(r as u8));
                    if term {
                        steps.push(Step::DiesOfTerm(r as u8));
                    }
                }
                Job::None | Job::Ended(..) | Job::Reaped => {}
            }
        }
        if let Some(id) = self.etcd.due(self.now) {
            steps.push(Step::Expire(id));
        }
        if !self.urgent() {
            steps.push(Step::Tick);
        }
        if with_faults {
            self.faults(&mut steps);
        }
        steps
    }

    fn faults(&self, steps: &mut Vec<Step>) {
        let budget = self.faults_left > 0;
        let mut add = |fault: Fault| {
            if (budget || !fault.costs()) && self.kinds.contains(&fault.kind()) {
                steps.push(Step::Fault(fault));
            }
        };
        for (r, replica) in self.replicas.iter().enumerate() {
            let r8 = r as u8;
            if replica.proc != Proc::Alive {
                continue;
            }
            add(Fault::Kill(r8));
            add(if replica.paused {
                Fault::Resume(r8)
            } else {
                Fault::Pause(r8)
            });
            add(if replica.connected {
                Fault::Partition(r8)
            } else {
                Fault::Heal(r8)
            });
            if !replica.signal {
                add(Fault::Signal(r8));
            }
            if !replica.refused {
                add(Fault::Refuse(r8));
            }
            // Only before the command: afterwards they change nothing.
            let campaigning = replica.phase.0.campaigns();
            if campaigning && !replica.spawn_fails {
                add(Fault::FailSpawn(r8));
            }
            if campaigning && !replica.guardian_fails {
                add(Fault::FailGuardian(r8));
            }
        }
        add(if self.etcd.down {
            Fault::Up
        } else {
            Fault::Down
        });
        add(Fault::LeaderChange);
        add(Fault::Compact);
        for id in self.etcd.leases.keys() {
            add(Fault::Revoke(*id));
        }
        for key in self.etcd.keys.keys() {
            if let Key::Candidate(id) = key {
                add(Fault::Delete(*id));
                add(Fault::Overwrite(*id));
            }
        }
    }

    /// Someone running has a deadline due now, or local news to act on
    /// (a lease known gone, a child ended, a signal): the clock waits for
    /// them. Not the work of a phase, nor a watch's news: requests to
    /// etcd and what it streams may take any time.
    fn urgent(&self) -> bool {
        const LOCAL: [News; 7] = [
            News::Renew,
            News::AckLate,
            News::Deadline,
            News::GraceOver,
            News::LeaseGone,
            News::Ended,
            News::Signal,
        ];
        (0..self.replicas.len()).any(|r| LOCAL.into_iter().any(|news| self.has(r, news)))
            || self.etcd.due(self.now).is_some()
    }

    /// The next deadline after now that the clock must stop at.
    fn next_deadline(&self) -> u32 {
        let mut next = self.now + TICK;
        let mut consider = |t: u32| {
            if t > self.now {
                next = next.min(t);
            }
        };
        for (r, replica) in self.replicas.iter().enumerate() {
            if !replica.acts() {
                continue;
            }
            if let Some(held) = replica.lease.filter(|held| !held.gone) {
                consider(millis(held.renewals.next_due()));
                // The latest moment the answer can come, and the keeper's
                // giving up on it.
                if let Some(due) = held.renewals.ack_due() {
                    consider(millis(due) - 1);
                    consider(millis(due));
                }
                let verdict = schedule().verdict(held.view(), at(self.now));
                if let (Phase::Running | Phase::Stopping, LeaseVerdict::HoldsUntil(until)) =
                    (replica.phase.0, verdict)
                {
                    consider(millis(until));
                }
            }
            if let Some(Next::Await { until, .. }) = self.stop_next(r) {
                consider(millis(until));
            }
        }
        for expiry in self.etcd.leases.values() {
            consider(*expiry);
        }
        next
    }

    /// Takes `step`.
    pub fn take(&mut self, step: Step, mut say: Say) {
        match step {
            Step::Replica(r, news) => self.replica_step(r as usize, news, say),
            Step::Exits(r) => {
                say!(say, "replica {r}'s command exits 0");
                self.replicas[r as usize].job = Job::Ended(0, false);
                self.replicas[r as usize].exited_zero = true;
            }
            Step::DiesOfTerm(r) => {
                say!(say, "replica {r}'s command dies of SIGTERM");
                self.replicas[r as usize].job = Job::Ended(143, true);
            }
            Step::Expire(id) => {
                say!(say, "etcd expires lease {id} (TTL out)");
                self.etcd.revoke(id);
                self.etcd.expired.push(id);
            }
            Step::Tick => {
                let next = self.next_deadline();
                say!(say, "the clock moves on by {} ms", next - self.now);
                self.tick(next);
            }
            Step::Fault(fault) => {
                say!(say, "FAULT {fault:?}");
                if fault.costs() {
                    self.faults_left -= 1;
                }
                self.fault(fault);
            }
        }
    }

    fn tick(&mut self, next: u32) {
        self.elapsed.0 += next - self.now;
        self.now = next;
        let now = at(next);
        for replica in &mut self.replicas {
            let passed = replica
                .lease
                .is_some_and(|held| now >= schedule().stop_from(held.renewals.expires()));
            if replica.paused && replica.runs() && passed {
                replica.overslept = true;
            }
        }
        self.rebase();
    }

    /// Puts the clock back to [`NOW`], every time with it: the world is
    /// the same whatever the hour, so time needs no bound. A time past is
    /// as good as any other past time (every rule compares it with now, or
    /// takes the earlier of it and another), so all of them become one.
    fn rebase(&mut self) {
        let shift = self.now - NOW;
        let back = |t: &mut u32| *t = t.saturating_sub(shift).max(NOW - 1);
        let back_instant = |instant: Instant| {
            let mut t = millis(instant);
            back(&mut t);
            at(t)
        };
        for replica in &mut self.replicas {
            if let Some(held) = &mut replica.lease {
                // A renewal's send is counted from while its answer may
                // come: exact within the acknowledgement timeout, one
                // instant before it.
                let window = millis(at(0) + held.renewals.cadence().ack_timeout);
                let back_sent = |instant: Instant| {
                    let t = millis(instant).saturating_sub(shift);
                    at(t.max(NOW - 1 - window))
                };
                held.renewals = held.renewals.retimed(back_instant, back_sent);
            }
            // A running command's --timeout ends at an instant of the
            // model's choosing (the same in every state): not retimed.
            if let Led::Stopping(core) = replica.led {
                replica.led = Led::Stopping(core.retimed(back_instant));
            }
        }
        for expiry in self.etcd.leases.values_mut() {
            back(expiry);
        }
        self.now = NOW;
    }

    fn fault(&mut self, fault: Fault) {
        let now = self.now;
        match fault {
            Fault::Kill(r) => {
                let replica = &mut self.replicas[r as usize];
                replica.proc = Proc::Killed;
                // The guardian sees the pipe close and kills the group.
                if replica.job != Job::None {
                    replica.job = Job::Reaped;
                }
            }
            Fault::Pause(r) => self.replicas[r as usize].paused = true,
            Fault::Resume(r) => self.replicas[r as usize].paused = false,
            Fault::Partition(r) => self.replicas[r as usize].connected = false,
            Fault::Heal(r) => self.replicas[r as usize].connected = true,
            Fault::Down => self.etcd.down = true,
            Fault::Up => self.etcd.down = false,
            Fault::Revoke(id) => {
                self.rob(id);
                self.etcd.revoke(id);
            }
            Fault::Delete(id) => {
                self.rob(id);
                let revision = self.etcd.revision + 1;
                self.etcd.delete_at(Key::Candidate(id), revision);
                self.etcd.revision = revision;
            }
            Fault::Overwrite(id) => {
                self.rob(id);
                let theirs = self.etcd.grant(now, TTL);
                let revision = self.etcd.revision + 1;
                self.etcd
                    .put_at(Key::Candidate(id), Value::Candidate(None), theirs, revision);
                self.etcd.revision = revision;
            }
            Fault::Signal(r) => self.replicas[r as usize].signal = true,
            Fault::Refuse(r) => self.replicas[r as usize].refused = true,
            Fault::FailSpawn(r) => self.replicas[r as usize].spawn_fails = true,
            Fault::FailGuardian(r) => self.replicas[r as usize].guardian_fails = true,
            Fault::LeaderChange => {
                for expiry in self.etcd.leases.values_mut() {
                    *expiry = (*expiry).max(now + TTL + ELECTION);
                }
            }
            Fault::Compact => {
                for replica in &mut self.replicas {
                    if matches!(replica.phase.0, Phase::Waiting | Phase::Proving) {
                        replica.compacted = true;
                    }
                }
            }
        }
    }

    /// Another writer takes lease `id` (or its key) from whoever holds it.
    fn rob(&mut self, id: i64) {
        for replica in &mut self.replicas {
            if replica.lease.is_some_and(|held| held.id == id) {
                replica.robbed = true;
            }
        }
    }

    fn replica_step(&mut self, r: usize, news: News, mut say: Say) {
        if let News::Renew | News::Acknowledged | News::AckLate = news {
            return self.keeper_step(r, news, say);
        }
        let phase = self.replicas[r].phase.0;
        match phase {
            Phase::Dialling
            | Phase::Granting
            | Phase::Joining
            | Phase::Waiting
            | Phase::Proving
            | Phase::Claiming => {}
            Phase::Running => {
                let event = self.running_event(r, news);
                let Led::Running(core) = self.replicas[r].led else {
                    unreachable!("a replica running its command runs it")
                };
                let step = core.handle(&event, at(self.now), self.lease_view(r));
                say!(say, "replica {r} in {phase:?}: {event:?} -> {step:?}");
                return self.do_running(r, step, say);
            }
            Phase::Stopping => {
                let event = self.stopping_event(r, news);
                let Led::Stopping(core) = self.replicas[r].led else {
                    unreachable!("a replica stopping its job stops it")
                };
                let step = core.handle(&event, at(self.now), self.lease_view(r));
                say!(say, "replica {r} in {phase:?}: {event:?} -> {step:?}");
                return self.do_stopping(r, step, say);
            }
            // Its only news is its work (`World::has`).
            Phase::Resigning => return self.resign(r, say),
        };
        let event = self.campaign_event(r, news, say.as_deref_mut());
        let now = at(self.now);
        // What a trace shows of it: its name and data, not what it brings.
        let event_shown = event.bare();
        let decision = self.replicas[r].campaign.0.handle(event, now);
        let event = event_shown;
        let action = decision.action;
        say!(say, "replica {r} in {phase:?}: {event:?} -> {action:?}");
        // A phase's own work never gives an event its table ignores: it
        // would be done again at once, or its gain dropped.
        assert!(
            news != News::Work || action != CampaignAction::Ignore,
            "replica {r}'s work in {phase:?} gave {event:?}, which its table ignores"
        );
        self.follow_decision(r, decision, say.as_deref_mut());
        // The start takes no time after the re-check: the run asks for it
        // as soon as the re-check is answered, with no IO between.
        if news == News::Work && self.asks_start(r) {
            self.replica_step(r, News::Work, say);
        }
    }

    /// Whether replica `r`'s campaign asks to start its command next.
    fn asks_start(&self, r: usize) -> bool {
        let replica = &self.replicas[r];
        let mut campaign = replica.campaign.0;
        replica.phase.0 == Phase::Claiming
            && matches!(
                campaign.work(),
                Work::Claim {
                    step: ClaimStep::Start,
                    ..
                }
            )
    }

    /// What `news` is to a campaign.
    fn campaign_event(&mut self, r: usize, news: News, say: Say) -> CampaignEvent<Modelled> {
        match news {
            News::Work => self.work(r, say),
            News::LeaseGone => {
                self.replicas[r].lost_seen = true;
                CampaignEvent::PlaceLost(PlaceLost::LeaseGone)
            }
            News::KeyLost => {
                let loss = self.key_loss(r).expect("a loss to tell");
                CampaignEvent::PlaceLost(PlaceLost::Key(loss))
            }
            News::Signal => {
                self.replicas[r].signal = false;
                CampaignEvent::Signal(Signal::SIGTERM)
            }
            News::WaitTimeout => CampaignEvent::WaitTimeout,
            News::Renew
            | News::Acknowledged
            | News::AckLate
            | News::Deadline
            | News::Ended
            | News::GraceOver
            | News::TimedOut => {
                unreachable!("{news:?} is no news to a campaign")
            }
        }
    }

    /// What `news` is to a run whose command runs.
    fn running_event(&mut self, r: usize, news: News) -> RunningEvent {
        match news {
            News::Deadline => RunningEvent::LeadershipLost(self.deadline_passed(r)),
            News::LeaseGone => RunningEvent::LeadershipLost(self.lease_gone(r)),
            News::KeyLost => RunningEvent::LeadershipLost(self.key_lost(r)),
            News::Ended => {
                let (code, signalled) = self.reap(r);
                RunningEvent::CommandExited(Status { code, signalled })
            }
            News::Signal => {
                self.replicas[r].signal = false;
                RunningEvent::Signal(Signal::SIGTERM)
            }
            News::TimedOut => {
                self.replicas[r].timed_out = true;
                RunningEvent::TimedOut
            }
            News::Work
            | News::Renew
            | News::Acknowledged
            | News::AckLate
            | News::GraceOver
            | News::WaitTimeout => {
                unreachable!("{news:?} is no news to a running command's run")
            }
        }
    }

    /// What `news` is to a run stopping its job.
    fn stopping_event(&mut self, r: usize, news: News) -> StoppingEvent {
        match news {
            // What it waited for is over (`World::has_work`, `World::has`):
            // the stop says what that is.
            News::Work | News::GraceOver => self.stop_event(r),
            News::Deadline => StoppingEvent::LeadershipLost(self.deadline_passed(r)),
            News::LeaseGone => StoppingEvent::LeadershipLost(self.lease_gone(r)),
            News::KeyLost => StoppingEvent::LeadershipLost(self.key_lost(r)),
            News::Ended => {
                self.reap(r);
                self.stop_event(r)
            }
            News::Signal => {
                self.replicas[r].signal = false;
                StoppingEvent::Signal(Signal::SIGTERM)
            }
            News::Renew
            | News::Acknowledged
            | News::AckLate
            | News::TimedOut
            | News::WaitTimeout => {
                unreachable!("{news:?} is no news to a stop")
            }
        }
    }

    /// The event the kill sequence has due now.
    fn stop_event(&self, r: usize) -> StoppingEvent {
        match self.stop_next(r) {
            Some(Next::Event(event)) => event,
            next => unreachable!("nothing of the stop is due: {next:?}"),
        }
    }

    fn deadline_passed(&mut self, r: usize) -> Loss {
        self.replicas[r].lost_seen = true;
        Loss::Unacknowledged {
            silent_for: ms(TTL),
            ttl: ms(TTL),
            trouble: None,
        }
    }

    /// The lease's end, seen by replica `r`'s keeper.
    fn lease_gone(&mut self, r: usize) -> Loss {
        self.replicas[r].lost_seen = true;
        Loss::LeaseGone
    }

    fn key_lost(&mut self, r: usize) -> Loss {
        let loss = self.key_loss(r).expect("a loss to tell");
        self.replicas[r].lost_seen = true;
        Loss::Key(loss)
    }

    /// The job's end, waited for.
    fn reap(&mut self, r: usize) -> (i32, bool) {
        let replica = &mut self.replicas[r];
        let Job::Ended(code, signalled) = replica.job else {
            unreachable!("news of an end that did not happen")
        };
        replica.job = Job::Reaped;
        (code, signalled)
    }

    /// What replica `r`'s keeper does with `news`.
    fn keeper_step(&mut self, r: usize, news: News, mut say: Say) {
        match news {
            News::Renew => self.renew(r, say),
            News::Acknowledged => self.acknowledged(r, say),
            News::AckLate => {
                say!(say, "replica {r}'s keeper gives up on its renewal's answer");
                let held = self.replicas[r].lease.as_mut().expect("a renewal awaited");
                held.renewals.broke();
            }
            News::Work
            | News::Deadline
            | News::LeaseGone
            | News::KeyLost
            | News::Ended
            | News::Signal
            | News::GraceOver
            | News::TimedOut
            | News::WaitTimeout => {
                unreachable!("{news:?} is no news to the keeper")
            }
        }
    }

    /// The keeper's renewal goes out: etcd renews the lease as it gets
    /// it, now. Its answer comes at once, or (the simulator's replicas
    /// whose answers come late) later, as [`News::Acknowledged`].
    fn renew(&mut self, r: usize, mut say: Say) {
        let (now, trouble) = (self.now, self.request_trouble(r));
        let late = self.replicas[r].answers_late;
        let held = self.replicas[r].lease.as_mut().expect("a lease to renew");
        held.renewals
            .sent(at(now))
            .expect("one renewal awaited at a time");
        if trouble.is_some() {
            held.renewals.broke();
            say!(
                say,
                "replica {r}'s renewal fails: etcd unreachable or refusing"
            );
            return;
        }
        if !self.etcd.renew(held.id, now, TTL) {
            held.renewals.broke();
            held.gone = true;
            say!(say, "replica {r} learns lease {} is gone", held.id);
            return;
        }
        say!(say, "replica {r} renews lease {}", held.id);
        if !late {
            self.acknowledged(r, say);
        }
    }

    /// The answer to the keeper's renewal: the local deadline the
    /// production keeper's state gives it.
    fn acknowledged(&mut self, r: usize, mut say: Say) {
        let (now, granted) = (at(self.now), ms(self.replicas[r].timed(TTL)));
        let held = self.replicas[r].lease.as_mut().expect("a renewal awaited");
        match held.renewals.acknowledged(granted, now) {
            Ok(Acknowledged::Until { expires, .. }) => say!(
                say,
                "replica {r}'s renewal is acknowledged: expires {} ms",
                millis(expires)
            ),
            Ok(Acknowledged::Gone) => held.gone = true,
            Err(unexpected) => panic!("replica {r}: {unexpected}"),
        }
    }
}
