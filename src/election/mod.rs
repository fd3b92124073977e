//! The election, done client-side over KV transactions, with the same key
//! layout as etcd's election API (`<name>/<lease hex>`, lowest create
//! revision leads), so `etcdctl elect` and leaderrun see the same election.
//!
//! Doing it here rather than through the server's `Campaign` RPC avoids its
//! two traps:
//! - the phantom win: `Campaign` can return success for a key that no
//!   longer exists, when the candidate's lease died while it queued and the
//!   keys ahead of it then went (etcd issue 19597; the lock API was fixed in
//!   11456, the election API was not);
//! - a per-request timeout on the client also cuts a blocking `Campaign`,
//!   so a long wait cannot be bounded that way.
//!
//! Every win here is proven before anything runs: our own key, with its
//! create revision and our lease, among the first --max-running in line,
//! all at one revision. The read that finds our turn (`Queued`,
//! `Turn::Ours`) is such a proof, and so, with one runner, is the handover:
//! the leader's resignation rewrites the key of the candidate behind it
//! ([`Election::resign_with`]), which watches its own key. The rewrite
//! passes on who is behind that candidate ([`Successor::first_of`]), so
//! that it hands over in turn without reading the line. With more than
//! one runner [`Election::prove`] proves again with a transaction that also
//! rewrites our key, to wake the waiter behind. The layout ([`Election`]):
//! this file writes, proves and gives up our key, `queue.rs` waits for our
//! turn, `watch.rs` watches our key from the queue to the end of the run,
//! and `line.rs` reads the candidates in order. Beside them, `name.rs`
//! names the election and lays out every key leaderrun writes,
//! `holder.rs` is the value under a candidate's key, `record.rs` the run
//! records and `once_per.rs` the --once-per window; `handoff.rs` is the
//! fast path of a change of leader (who is behind us, what is passed on,
//! the lease left to expire) and its one switch. Nothing here keeps the
//! lease alive or runs processes, but for the look-up behind us, a task
//! of its own beside the command. The rules applied to what etcd answers
//! (whether a key is still ours, whether a place runs, who runs, the
//! records' plan) are the protocol's (`protocol::line`,
//! `protocol::records`): this folder asks etcd and applies them.
//!
//! Only keys `<name>/<lease hex>` are candidates ([`name::is_candidate`]).
//! The keys of an election whose name extends ours (`<name>/sub/<lease>`)
//! share our prefix, so every read in line order skips them, reading on (at
//! the same revision) when a page holds none of ours.

pub mod handoff;
pub mod holder;
mod line;
pub mod name;
pub mod once_per;
pub mod pause;
mod queue;
pub mod record;
#[cfg(test)]
mod stored;
mod watch;

pub use handoff::Successor;
pub use line::{read_leader, Line, Snapshot};
pub use watch::{watch_for_loss, OwnKey};

use anyhow::{Context, Result};
use etcd_client::{Compare, CompareOp, PutOptions, SortOrder, Txn, TxnOp, TxnResponse};

use crate::election::holder::{etcdctl_del, printable, Holder, Proclaimed};
use crate::election::pause::PauseSeen;
use crate::etcd::ids::{LeaseId, Revision, Token};
use crate::etcd::kv::Kv;
use crate::etcd::requests::{range_at, revision_of, Range};
use crate::etcd::Connection;
use line::first_in_line;

/// Replicas of one election that disagree on what must be the same on all
/// of them (--max-running, the --once-per window): no retry changes it, and
/// the replica is refused rather than left to guess.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Disagreement(pub String);

/// Proof that we run: our key existed, among the first --max-running in
/// line, with this create revision, at `proven_at`.
#[derive(Debug, Clone)]
pub struct Leadership {
    pub name: String,
    pub key: String,
    /// The lease our key is attached to.
    pub lease: LeaseId,
    /// The key's create revision: the fencing token.
    pub token: Token,
    /// The store revision at which ownership was proven; watch from after it.
    pub proven_at: Revision,
}

/// How many times a join tries again when the leader it agreed with left
/// before its key was written: each try follows the next leader.
const JOIN_ATTEMPTS: usize = 16;

/// Whoever leads, as read from their key.
#[derive(Debug, Clone)]
pub struct Leader {
    pub key: String,
    pub token: Token,
    pub lease: LeaseId,
    pub holder: Proclaimed,
}

impl Leader {
    fn from_kv(kv: &Kv) -> Self {
        Leader {
            // Escaped, not lossy: keys of names that are not UTF-8 stay
            // apart (the same text as a lossy copy for UTF-8 keys).
            key: name::escaped(&kv.key).into_owned(),
            token: Token::created_at(kv.create_revision),
            lease: kv.lease,
            holder: Proclaimed::read(&kv.value),
        }
    }

    /// "pid 4242 on web-2 since 2026-11-29T07:00:00Z (token 42)".
    pub fn describe(&self) -> String {
        if self.stale() {
            return format!(
                "a stale key with no lease, {}, which never expires (remove it with: {})",
                printable(&self.key),
                etcdctl_del(&self.key)
            );
        }
        format!("{} (token {})", self.holder.describe(&self.key), self.token)
    }

    /// The --max-running it leads with: another tool's candidate leads
    /// alone.
    pub fn slots(&self) -> usize {
        self.holder.max_running().unwrap_or(1).max(1)
    }

    /// Whether it is another tool's candidate (`etcdctl elect` or `lock`),
    /// which runs only as the first in line: etcd's election elects only
    /// the first key.
    pub fn other_tool(&self) -> bool {
        self.holder.max_running().is_none()
    }

    /// A key with no lease (written by hand, or overwritten by a plain
    /// `put`): nothing will ever remove it, and it blocks the election.
    pub fn stale(&self) -> bool {
        self.lease == LeaseId::NONE
    }
}

pub enum Attempt {
    /// Ours, and no pause stood at the revision that proved it (the write
    /// that won compared it away, or the proof read it): the claim need
    /// not read it again.
    Won(Leadership),
    /// The election is paused (`leaderrun pause`): nothing was written.
    Paused(pause::Paused),
    /// Someone else holds the election (every slot, with --max-running);
    /// the leader, or None if they left between our two reads.
    Held(Option<Leader>),
    /// Our key vanished between joining the queue and proving the win.
    Vanished,
}

/// A place in the queue.
pub struct Candidate {
    pub key: String,
    /// Our key's create revision: the run's token, if it wins.
    pub token: Token,
}

pub enum Turn {
    /// Our key, ours and among the first --max-running in line, read at
    /// this revision: the proof a win needs.
    Ours(Revision),
    /// Our place is gone while we queued: start again.
    Gone(PlaceLost),
    /// A request failed: whether to retry is the run's table's to say.
    Failed(anyhow::Error),
}

/// What joining the line came to.
pub enum Joined {
    Queued(Queued),
    /// The election is paused (`leaderrun pause`): nothing was written.
    Paused(pause::Paused),
}

/// A place in the queue, and who runs as it was taken.
pub struct Queued {
    pub candidate: Candidate,
    /// The first --max-running candidates in line: those that run.
    pub runners: Vec<Leader>,
    /// The revision at which our key, intact, was among the runners (a
    /// proof of the win, as `Turn::Ours` is), if it was.
    pub proven_at: Option<Revision>,
}

pub use protocol::line::{among_first, judge_version};
pub use protocol::loss::{KeyLoss, PlaceLost};

/// What a key we hold has become, judged from its latest version (None:
/// deleted): still ours, or lost and how.
fn judge(kv: Option<&Kv>, token: Token, lease: LeaseId) -> Option<KeyLoss> {
    let version = kv.map(|kv| (kv.create_revision.0, kv.lease.0));
    judge_version(version, token.0, lease.0)
}

/// Whether a read at one revision proves a turn: our key, as read, still
/// ours (created at `token`, on `lease`), and among `runners`, the first
/// `slots` (--max-running) in line as the same read found them.
fn proves_turn(
    ours: Option<&Kv>,
    token: Token,
    lease: LeaseId,
    runners: &[Leader],
    slots: usize,
) -> bool {
    judge(ours, token, lease).is_none() && runs(runners, token, slots)
}

/// Whether the candidate created at `token`, whose key the same read found
/// intact (so in line), is among `runners`: fewer of them are ahead of it
/// than there are slots.
fn runs(runners: &[Leader], token: Token, slots: usize) -> bool {
    let ahead = runners
        .iter()
        .take_while(|runner| runner.token != token)
        .count();
    among_first(ahead, slots)
}

/// One election: where it lives, its name, and how many of its candidates
/// run at once (--max-running; 1 makes it an election, more a semaphore).
/// Everything a campaign does to it goes through here.
#[derive(Clone, Copy)]
pub struct Election<'a> {
    pub connection: &'a Connection,
    pub name: &'a str,
    pub slots: usize,
}

impl<'a> Election<'a> {
    pub fn new(connection: &'a Connection, name: &'a str, slots: usize) -> Self {
        Election {
            connection,
            name,
            slots,
        }
    }

    /// Our candidate key, and the put that writes it (with `holder` as its
    /// value) attached to our lease.
    fn our_key(&self, lease: LeaseId, holder: &Holder) -> (String, TxnOp) {
        let key = name::candidate_key(self.name, lease);
        let options = etcd_client::PutOptions::new().with_lease(lease.0);
        let put = TxnOp::put(key.as_str(), holder.encode_on(lease), Some(options));
        (key, put)
    }

    /// Runs if, and only if, a slot is free. Nobody in line: in one
    /// transaction, our key is written only when no key exists under the
    /// election, and losers write nothing. Otherwise the runners are read,
    /// and with fewer than --max-running of them we join the line and run
    /// only if our key is among the first --max-running.
    pub async fn try_acquire(&self, lease: LeaseId, holder: &Holder) -> Result<Attempt> {
        let (key, put) = self.our_key(lease, holder);
        let txn = Txn::new()
            .when([
                Compare::create_revision(name::prefix(self.name), CompareOp::Equal, 0)
                    .with_prefix(),
                pause::none_stands(self.name),
            ])
            .and_then([put, TxnOp::get(key.as_str(), None)])
            .or_else([first_in_line(self.name), pause::get(self.name)]);
        let response = self.connection.txn("campaigning", txn).await?;
        if let Some(paused) = pause::found(&response, 1) {
            return Ok(Attempt::Paused(paused));
        }
        let revision = revision_of(&response);
        let page = range_at(&response, 0);
        if response.succeeded() {
            let kv = page
                .first()
                .context("etcd did not return the key it just wrote")?;
            return Ok(Attempt::Won(Leadership {
                name: self.name.to_string(),
                key,
                lease,
                token: Token::created_at(kv.create_revision),
                proven_at: revision,
            }));
        }
        let runners = self.runners(page).await?;
        if runners.len() == self.slots {
            return Ok(Attempt::Held(runners.into_iter().next()));
        }
        self.try_a_free_slot(lease, holder, runners).await
    }

    /// A slot is free, or only keys of elections nested in ours are under
    /// our prefix: "fewer than N candidates" cannot be asked of etcd in one
    /// comparison. So join the queue and run only if among the first N,
    /// proven as any queued win is; otherwise the caller's lease revoke
    /// takes our key out again.
    async fn try_a_free_slot(
        &self,
        lease: LeaseId,
        holder: &Holder,
        runners: Vec<Leader>,
    ) -> Result<Attempt> {
        let Queued {
            candidate, runners, ..
        } = match self
            .enqueue(lease, holder, Some(runners.first().cloned()))
            .await?
        {
            Joined::Queued(queued) => queued,
            Joined::Paused(paused) => return Ok(Attempt::Paused(paused)),
        };
        if !runners.iter().any(|runner| runner.key == candidate.key) {
            return Ok(Attempt::Held(runners.into_iter().next()));
        }
        Ok(match self.prove(&candidate, lease, holder).await? {
            Some((
                _,
                PauseSeen {
                    paused: Some(paused),
                    ..
                },
            )) => Attempt::Paused(paused),
            Some((leadership, _)) => Attempt::Won(leadership),
            None => Attempt::Vanished,
        })
    }

    /// Joins the queue: writes our key (if absent) and reads the runners;
    /// or, if the election is paused, writes nothing and says so.
    ///
    /// A replica whose --max-running disagrees with the leader's never
    /// writes its key: the leader is read first (`seen`, if the caller has
    /// read it already), and the write compares that it still leads. A key
    /// written only to be refused would stand in line until its revoke (for
    /// a TTL, if the replica is killed then), and every replica behind it
    /// that agrees with the leader would find it first in line once the
    /// leader goes, and refuse itself too. Two replicas that join at once
    /// with nobody in line may still both write: the later one then
    /// refuses, from the same transaction's read, and revokes.
    pub async fn enqueue(
        &self,
        lease: LeaseId,
        holder: &Holder,
        seen: Option<Option<Leader>>,
    ) -> Result<Joined> {
        let (key, put) = self.our_key(lease, holder);
        let mut leader = match seen {
            Some(leader) => leader,
            None => self.leader().await?,
        };
        for _ in 0..JOIN_ATTEMPTS {
            self.agree(leader.as_slice())?;
            let mut when = vec![
                Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
                pause::none_stands(self.name),
            ];
            if let Some(leader) = &leader {
                when.push(Compare::create_revision(
                    leader.key.as_str(),
                    CompareOp::Equal,
                    leader.token.0,
                ));
            }
            let txn = Txn::new()
                .when(when)
                .and_then([
                    put.clone(),
                    TxnOp::get(key.as_str(), None),
                    first_in_line(self.name),
                ])
                .or_else([
                    TxnOp::get(key.as_str(), None),
                    first_in_line(self.name),
                    pause::get(self.name),
                ]);
            let response = self.connection.txn("joining the queue", txn).await?;
            if let Some(paused) = pause::found(&response, 2) {
                return Ok(Joined::Paused(paused));
            }
            let revision = revision_of(&response);
            let ours = range_at(&response, 0).first();
            let runners = self.runners(range_at(&response, 1)).await;
            let Some(ours) = ours else {
                // The leader we agreed with is gone: agree with the next.
                leader = runners?.into_iter().next();
                continue;
            };
            let runners = runners?;
            let token = Token::created_at(ours.create_revision);
            let proven = proves_turn(Some(&ours), token, lease, &runners, self.slots);
            return Ok(Joined::Queued(Queued {
                candidate: Candidate { key, token },
                runners,
                proven_at: proven.then_some(revision),
            }));
        }
        anyhow::bail!("the leader of {} kept changing as we joined", self.name)
    }

    /// Whoever leads the election now, read in line order.
    async fn leader(&self) -> Result<Option<Leader>> {
        let page = self
            .connection
            .get(
                "joining the queue",
                name::prefix(self.name),
                Some(line::in_line(SortOrder::Ascend, line::FIRST_PAGE)),
            )
            .await?;
        let first = self.first_candidates(page, SortOrder::Ascend, 1).await?;
        Ok(first.first().map(Leader::from_kv))
    }

    /// The first --max-running candidates in line, from a read in line
    /// order; an error if the leader runs with another --max-running.
    async fn runners(&self, page: Range) -> Result<Vec<Leader>> {
        let first = self
            .first_candidates(page, SortOrder::Ascend, self.slots)
            .await?;
        let runners: Vec<Leader> = first.iter().map(Leader::from_kv).collect();
        self.agree(&runners)?;
        Ok(runners)
    }

    /// Replicas that disagree on --max-running would each count the slots
    /// their own way, and together run more than either allows: the count
    /// of whoever leads (the first of `line`) holds, and a replica that
    /// gives another is refused. Candidates behind the leader are not
    /// asked: one that disagrees is refused at its own turn (it never
    /// writes its key, if it is of this version), and counting it as a
    /// slot only makes us wait, never run beside more than we allow.
    /// Another tool's candidate (`etcdctl elect` or `lock`, whose value is
    /// not leaderrun's JSON) holds the election alone, as one of one.
    fn agree(&self, line: &[Leader]) -> Result<()> {
        let Some(other) = line.first() else {
            return Ok(());
        };
        match other.holder.max_running() {
            Some(theirs) if theirs == self.slots => Ok(()),
            None if self.slots == 1 => Ok(()),
            None => Err(Disagreement(format!(
                    "--max-running {} cannot share {} with another tool's candidate ({}), which holds it alone: run it with --max-running 1, or give leaderrun another --name",
                    self.slots,
                    self.name,
                    other.describe(),
                ))
            .into()),
            Some(theirs) => Err(Disagreement(format!(
                "--max-running {} disagrees with {}, which runs {} with --max-running {}: give every replica the same --max-running",
                self.slots,
                other.describe(),
                self.name,
                theirs
            ))
            .into()),
        }
    }

    /// Proves that we run before anything runs: our key still exists with our
    /// create revision and our lease (which therefore is alive), and it is
    /// among the first --max-running in line. Rewrites its value with the
    /// time we started, and reads the election's pause at the same
    /// revision. None means the "win" was a phantom: the key is gone.
    pub async fn prove(
        &self,
        candidate: &Candidate,
        lease: LeaseId,
        holder: &Holder,
    ) -> Result<Option<(Leadership, PauseSeen)>> {
        let (key, put) = self.our_key(lease, holder);
        let txn = Txn::new()
            .when(ours(&key, candidate.token, lease))
            .and_then([put, first_in_line(self.name), pause::get(self.name)]);
        let response = self.connection.txn("proving leadership", txn).await?;
        if !response.succeeded() {
            return Ok(None);
        }
        let revision = revision_of(&response);
        let runners = self.runners(range_at(&response, 0)).await?;
        if !runs(&runners, candidate.token, self.slots) {
            return Ok(None);
        }
        let paused = range_at(&response, 1)
            .first()
            .as_ref()
            .map(pause::Paused::of);
        Ok(Some((
            Leadership {
                name: self.name.to_string(),
                key: candidate.key.clone(),
                lease,
                token: candidate.token,
                proven_at: revision,
            },
            PauseSeen {
                at: revision,
                paused,
            },
        )))
    }
    /// Gives up our key, if it is still ours: in one transaction, deletes
    /// it and does `then` (the run's end records, written as a run still
    /// entitled to them). The answer, if the write was made (the delete's
    /// response first, then `then`'s, in order); if not, nothing was
    /// written.
    ///
    /// The next in line wakes on this deletion and proves its win at or
    /// after it, so whatever `then` writes (the run's end records) is in
    /// place by the time it runs. With `successor`, the same transaction
    /// hands over to it, if it is still there: its value is rewritten to
    /// say so (its key, lease and create revision unchanged). It watches its
    /// own key, and that rewrite proves its turn at this revision, with no
    /// read: our key was first in line until this revision, which deletes
    /// it, and `successor` was the first behind it ([`Election::successor`])
    /// and still is (the comparison), since no key created later can come
    /// between.
    pub async fn resign_with(
        &self,
        leadership: (&str, Token, LeaseId),
        while_ours: bool,
        then: Vec<TxnOp>,
        successor: Option<&Successor>,
    ) -> Result<Option<TxnResponse>> {
        let (key, token, lease) = leadership;
        // Without the comparison only where the protocol plants that
        // defect for the model checker: never in a build that is not a test.
        let compares = match while_ours {
            true => ours(key, token, lease).to_vec(),
            false => Vec::new(),
        };
        let mut ops = vec![TxnOp::delete(key, None)];
        ops.extend(then);
        if let Some(next) = successor {
            let options = PutOptions::new().with_lease(next.lease.0);
            let put = TxnOp::put(next.key.as_str(), next.value.clone(), Some(options));
            // Only with no pause standing: the waiter then takes the
            // handover as proof of that too (`no_pause_by`), and reads
            // nothing at its claim; with one, it learns its turn by reading,
            // and the pause with it.
            let mut when = ours(&next.key, next.token, next.lease).to_vec();
            when.push(pause::none_stands(self.name));
            let hand_over = Txn::new().when(when).and_then([put]);
            ops.push(TxnOp::txn(hand_over));
        }
        let txn = Txn::new().when(compares).and_then(ops);
        let response = self.connection.txn("resigning", txn).await?;
        Ok(response.succeeded().then_some(response))
    }

    /// Rewrites our key's value with `holder`, if the key is still ours:
    /// how `status` learns since when we lead, off the path to running.
    pub async fn mark_leading(&self, leadership: &Leadership, holder: &Holder) -> Result<()> {
        let (key, put) = self.our_key(leadership.lease, holder);
        let txn = Txn::new()
            .when(ours(&key, leadership.token, leadership.lease))
            .and_then([put]);
        self.connection.txn("marking our key", txn).await?;
        Ok(())
    }
}

/// The comparisons that hold while `key` is ours: created at `token`,
/// attached to our lease.
pub(crate) fn ours(key: &str, token: Token, lease: LeaseId) -> [Compare; 2] {
    [
        Compare::create_revision(key, CompareOp::Equal, token.0),
        Compare::lease(key, CompareOp::Equal, lease.0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_stays_ours_only_with_our_create_revision_and_lease() {
        let ours = Kv::written("j/1f", 10, 0x1f, b"{}");
        assert_eq!(judge(Some(&ours), Token(10), LeaseId(0x1f)), None);
        // Rewritten by us (a handover, a "since"): still ours.
        assert_eq!(
            judge(
                Some(&ours.rewritten(12, 0x1f, b"x")),
                Token(10),
                LeaseId(0x1f)
            ),
            None
        );
        assert_eq!(
            judge(None, Token(10), LeaseId(0x1f)),
            Some(KeyLoss::Deleted)
        );
        // Deleted and created again (by another lease's holder, or ours).
        let again = Kv::written("j/1f", 14, 0x1f, b"{}");
        assert_eq!(
            judge(Some(&again), Token(10), LeaseId(0x1f)),
            Some(KeyLoss::Replaced)
        );
        // A plain put keeps the create revision and drops the lease.
        let put = ours.rewritten(13, 0, b"by hand");
        assert_eq!(
            judge(Some(&put), Token(10), LeaseId(0x1f)),
            Some(KeyLoss::Overwritten)
        );
    }

    fn runner(key: &str, token: i64) -> Leader {
        Leader::from_kv(&Kv::written(key, token, token, b"{}"))
    }

    #[test]
    fn a_turn_is_proven_by_our_key_intact_among_the_runners() {
        let ours = Kv::written("j/2", 12, 2, b"{}");
        let runners = [runner("j/1", 11), runner("j/2", 12)];
        assert!(proves_turn(Some(&ours), Token(12), LeaseId(2), &runners, 2));
        assert!(
            !proves_turn(Some(&ours), Token(12), LeaseId(2), &runners[..1], 1),
            "not running"
        );
        assert!(
            !proves_turn(None, Token(12), LeaseId(2), &runners, 2),
            "gone"
        );
        let overwritten = ours.rewritten(13, 0, b"");
        assert!(!proves_turn(
            Some(&overwritten),
            Token(12),
            LeaseId(2),
            &runners,
            2
        ));
        // Another key of the same name, created later, is not ours.
        assert!(!proves_turn(
            Some(&ours),
            Token(11),
            LeaseId(2),
            &runners[1..],
            2
        ));
    }

    #[test]
    fn a_leader_is_read_from_its_key_whatever_wrote_it() {
        let holder = Holder::decode(br#"{"host":"web-2","pid":42,"started":"s","command":"c"}"#);
        let value = holder.encode_on(LeaseId(0x2a));
        let leader = Leader::from_kv(&Kv::written("j/2a", 7, 0x2a, value.as_bytes()));
        assert_eq!(
            (leader.key.as_str(), leader.token, leader.lease),
            ("j/2a", Token(7), LeaseId(0x2a))
        );
        assert_eq!(leader.holder, Proclaimed::Leaderrun(holder));
        assert_eq!(leader.holder.max_running(), Some(1), "left out when 1");
        assert!(!leader.stale() && !leader.other_tool());
        assert_eq!(leader.describe(), "pid 42 on web-2 since s (token 7)");
        // `etcdctl elect`'s value, and a key with no lease.
        let foreign = Leader::from_kv(&Kv::written(&b"odd/\xfe/1"[..], 8, 0, b"proposal"));
        assert_eq!(foreign.key, "odd/\\xfe/1");
        assert_eq!(foreign.holder, Proclaimed::Other("proposal".into()));
        assert!(foreign.other_tool());
        assert!(foreign.stale());
        assert!(foreign.describe().starts_with("a stale key with no lease"));
    }

    #[test]
    fn another_tools_candidate_is_described_by_what_is_known_of_it() {
        // `etcdctl elect`'s proposal, and `etcdctl lock`'s empty value:
        // no pid, host or time is made up.
        let elect = Leader::from_kv(&Kv::written("jobs/x/694d", 2, 0x694d, b"proposal-A"));
        assert_eq!(
            elect.describe(),
            "another tool's candidate (etcdctl elect or lock), value proposal-A (token 2)"
        );
        let lock = Leader::from_kv(&Kv::written("jobs/x/694e", 3, 0x694e, b""));
        assert_eq!(
            lock.describe(),
            "another tool's candidate (etcdctl elect or lock), key jobs/x/694e with an empty value (token 3)"
        );
        for leader in [&elect, &lock] {
            let json = leader.holder.json();
            assert!(json["pid"].is_null() && json["host"].is_null(), "{json}");
            assert!(
                json["started"].is_null() && json["other_tool"] == true,
                "{json}"
            );
        }
        assert_eq!(elect.holder.json()["command"], "proposal-A");
    }
}
