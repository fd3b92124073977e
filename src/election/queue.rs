//! Waiting in the queue: watching only the candidate just ahead (no herd,
//! no polling), and our own key (a handover, or the loss of our place),
//! until it is our turn, or our place is lost.

use std::ops::ControlFlow;

use anyhow::Result;
use etcd_client::{GetOptions, SortOrder, Txn, TxnOp, TxnResponse};
use tokio::sync::watch;

use super::handoff::Handoff;
use super::line::{in_line, FIRST_PAGE};
use super::pause::{self, PauseSeen, Paused};
use super::watch::{OwnKey, OwnKeyNews, WatchAhead, Watched};
use super::{among_first, judge, name, Candidate, Election, KeyLoss, PlaceLost, Turn};
use crate::etcd::ids::{LeaseId, Revision};
use crate::etcd::kv::Kv;
use crate::etcd::requests::{range_at, revision_of};
use crate::lease::LeaseState;
use crate::logging::events;
use crate::retry;

impl Election<'_> {
    /// Waits until every key ahead of ours is gone, watching only the one just
    /// ahead (no herd, no polling). Returns when it is our turn, or when our key
    /// disappeared (lease lost) so the caller must start again.
    ///
    /// Beside the key ahead, `own` watches our key: with one runner, the
    /// leader that resigns to us rewrites it in the transaction that deletes
    /// its own key (see [`Election::resign_with`]), which proves our turn at
    /// that revision with no read; its deletion or overwrite loses our place
    /// at once. That proof is taken only on the handoff's fast path
    /// (`handoff`).
    ///
    /// `watching` is told each key (or prefix) watched ahead, as it
    /// changes: what a shown wait (`run::waiting`) reads the line again on,
    /// with no watch of its own.
    pub async fn wait_for_turn(
        &self,
        handoff: Handoff,
        candidate: &Candidate,
        lease_id: LeaseId,
        lease: &mut watch::Receiver<LeaseState>,
        own: &mut OwnKey,
        watching: &watch::Sender<Option<Vec<u8>>>,
    ) -> Turn {
        let mut broken_watches = retry::backoff(retry::KEEPING);
        // The last revision the watch showed us, once it has shown one.
        let mut seen = None;
        loop {
            if lease.borrow().gone {
                return Turn::Gone(PlaceLost::LeaseGone);
            }
            let looked = match self
                .look_racing(handoff, candidate, lease_id, seen, own)
                .await
            {
                ControlFlow::Continue(looked) => looked,
                ControlFlow::Break(turn) => return turn,
            };
            let (ahead, revision) = match looked {
                Ok(Ahead::Lost(loss)) => return Turn::Gone(PlaceLost::Key(loss)),
                Ok(Ahead::Nobody(revision, ours, paused)) => {
                    own.pause_seen = Some(PauseSeen {
                        at: revision,
                        paused,
                    });
                    return self.nobody_ahead(handoff, own, revision, ours);
                }
                Ok(Ahead::Watch(watch, revision)) => {
                    watching.send_if_modified(|watched| {
                        let new = watched.as_deref() != Some(watch.key.as_slice());
                        if new {
                            *watched = Some(watch.key.clone());
                        }
                        new
                    });
                    (watch, revision)
                }
                // Ridden out or not, as the run's table decides (a
                // waiter rides an outage out: its lease decides whether its
                // place survives it).
                Err(err) => return Turn::Failed(err),
            };
            let (moved, from) = match self.wait_ahead(handoff, &ahead, revision, lease, own).await {
                ControlFlow::Continue(woken) => woken,
                ControlFlow::Break(turn) => return turn,
            };
            // The last revision the watch showed, if it showed any.
            seen = (from > revision.next()).then_some(Revision(from.0 - 1));
            tracing::trace!(?seen, "woke");
            if moved {
                broken_watches.reset();
            } else {
                retry::wait(&mut broken_watches).await;
            }
        }
    }

    /// Reads what is ahead ([`Election::look_ahead`]). Woken by what is
    /// ahead (`seen`), the read races the news of our own key: a leader's
    /// handover at the revision that woke us is most often on its way, and
    /// is taken as it comes, the read dropped (Break).
    async fn look_racing(
        &self,
        handoff: Handoff,
        candidate: &Candidate,
        lease_id: LeaseId,
        seen: Option<Revision>,
        own: &mut OwnKey,
    ) -> ControlFlow<Turn, Result<Ahead>> {
        let read = self.look_ahead(candidate, lease_id, seen);
        tokio::pin!(read);
        let mut racing = seen.is_some();
        loop {
            tokio::select! {
                biased;
                news = self.own_news(handoff, own), if racing => match turn_from(news) {
                    Some(turn) => return ControlFlow::Break(turn),
                    // The watch broke: the read decides.
                    None => racing = false,
                },
                looked = &mut read => return ControlFlow::Continue(looked),
            }
        }
    }

    /// Our turn, proven at `revision` by a read that found nobody ahead
    /// and our key as `ours`. The read may have beaten the watch to a
    /// handover: what it passes on is taken all the same.
    fn nobody_ahead(
        &self,
        handoff: Handoff,
        own: &mut OwnKey,
        revision: Revision,
        ours: Option<Kv>,
    ) -> Turn {
        let handover = ours.and_then(|ours| own.handed_over_in(&ours));
        let taken = |at: &Revision| self.matters(handoff, &OwnKeyNews::HandedOver(*at));
        if let Some(at) = handover.filter(taken) {
            tracing::debug!(
                event = events::HANDED_OVER_TO_US,
                revision = at.0,
                "our turn: handed over by the leader (the read came first)"
            );
        }
        Turn::Ours(revision)
    }

    /// Watches `ahead`, as read at `revision`, and our own key, until one
    /// of them moves or the lease is gone. Break: news of our own key that
    /// decides the turn. Otherwise, whether what is ahead moved (false: its
    /// watch broke), and the revision it was watched up to (exclusive).
    async fn wait_ahead(
        &self,
        handoff: Handoff,
        ahead: &Watch,
        revision: Revision,
        lease: &mut watch::Receiver<LeaseState>,
        own: &mut OwnKey,
    ) -> ControlFlow<Turn, (bool, Revision)> {
        // Our key was ours at `revision`: what came before says nothing.
        own.skip_to(revision.next());
        let watched = String::from_utf8_lossy(&ahead.key).into_owned();
        tracing::debug!(event = events::QUEUED, %watched, "queued; watching");
        let mut from = revision.next();
        // The watch lives here, outside the race, to be kept open.
        let mut opened = None;
        let woken = tokio::select! {
            biased;
            news = self.own_news(handoff, own) => Woken::Own(news),
            moved = async {
                let watch = WatchAhead::open(
                    self.connection,
                    &ahead.key,
                    ahead.watched,
                    ahead.wake_on_put,
                    from,
                );
                match watch.await {
                    Some(watch) => opened.insert(watch).woken(&mut from).await,
                    None => false,
                }
            } => Woken::Ahead(moved),
            _ = lease_gone(lease) => Woken::Ahead(true),
        };
        if let Some(watch) = opened {
            own.keep_ahead(watch);
        }
        let moved = match woken {
            Woken::Own(news) => match turn_from(news) {
                Some(turn) => return ControlFlow::Break(turn),
                None => false,
            },
            Woken::Ahead(moved) => moved,
        };
        // The key ahead changed. If that was the leader resigning to us,
        // its handover is most often here already: etcd tells the two
        // watches of one revision in no set order, each on its own
        // stream. Then no read; and no wait for the network either.
        if let Some(turn) = self
            .own_news_arrived(handoff, own)
            .await
            .and_then(turn_from)
        {
            return ControlFlow::Break(turn);
        }
        ControlFlow::Continue((moved, from))
    }

    /// Whether news of our own key matters to a waiter: a handover proves
    /// a turn only with one runner, and only on the handoff's fast path.
    fn matters(&self, handoff: Handoff, news: &OwnKeyNews) -> bool {
        (self.slots == 1 && handoff.fast()) || !matches!(news, OwnKeyNews::HandedOver(_))
    }

    /// The next news of our own key that matters to a waiter.
    async fn own_news(&self, handoff: Handoff, own: &mut OwnKey) -> OwnKeyNews {
        loop {
            let news = own.next(self.connection).await;
            if self.matters(handoff, &news) {
                return news;
            }
        }
    }

    /// The news of our own key that matters to a waiter among what has
    /// already come in, if there is any.
    async fn own_news_arrived(&self, handoff: Handoff, own: &mut OwnKey) -> Option<OwnKeyNews> {
        loop {
            let news = own.arrived().await?;
            if self.matters(handoff, &news) {
                return Some(news);
            }
        }
    }

    /// Reads, at one revision, our key and the candidates just ahead of it,
    /// and decides what to watch. With fewer than --max-running ahead, it is
    /// our turn. Otherwise one key only, so that a change wakes one waiter,
    /// not the whole queue:
    /// - the first waiter (exactly --max-running ahead, all running) must
    ///   see any runner go: with one runner, that is the key just ahead;
    ///   with more, it watches the prefix for deletions (the one waiter that
    ///   does);
    /// - every other waiter watches the key just ahead; with more than one
    ///   runner it wakes on its rewrite too: that is the waiter ahead
    ///   proving its win, which makes this one the first waiter, the one
    ///   that must watch the prefix. With one runner a rewrite (the leader
    ///   marking since when it leads) wakes nobody.
    ///
    /// After a watch showed us revision `seen`, the read is served by the
    /// member alone (serializable), not agreed on by the cluster first: see
    /// [`read_ahead`]. That spares the next leader, on the handoff's path,
    /// the wait for every write etcd has taken in but not yet applied (the
    /// old leader's lease revoke, say).
    async fn look_ahead(
        &self,
        candidate: &Candidate,
        lease_id: LeaseId,
        seen: Option<Revision>,
    ) -> Result<Ahead> {
        let mut response = None;
        if let Some(seen) = seen {
            match self.read_ahead(candidate, Read::MemberLocal).await {
                // Behind what the watch showed (another member, lagging):
                // the read would miss the very change that woke us.
                Ok(read) if revision_of(&read) < seen => {}
                Ok(read) => response = Some(read),
                Err(err) => tracing::debug!("{err:#}; asking the cluster instead"),
            }
        }
        let response = match response {
            Some(response) => response,
            None => self.read_ahead(candidate, Read::Linearizable).await?,
        };
        let revision = revision_of(&response);
        let ours = range_at(&response, 0).first();
        if let Some(loss) = judge(ours.as_ref(), candidate.token, lease_id) {
            return Ok(Ahead::Lost(loss));
        }
        let line = range_at(&response, 1);
        let ahead = self
            .first_candidates(line, SortOrder::Descend, self.slots + 1)
            .await?;
        // Whether the leader agrees on --max-running is asked at the join
        // and at the proof of our turn, not of the keys just ahead: a
        // disagreeing one there is refused at its own turn.
        Ok(match to_watch(self.name, self.slots, &ahead) {
            Some(watch) => Ahead::Watch(watch, revision),
            None => {
                let paused = range_at(&response, 2).first().as_ref().map(Paused::of);
                Ahead::Nobody(revision, ours, paused)
            }
        })
    }
}

/// What a waiter of election `name` with `slots` runners watches, given
/// `ahead`, the candidates just ahead of its key (nearest first, up to
/// `slots + 1` of them): None if fewer than `slots` are ahead, which makes
/// it our turn. See [`Election::look_ahead`] for why.
fn to_watch(name: &str, slots: usize, ahead: &[Kv]) -> Option<Watch> {
    let nearest = ahead.first()?;
    if among_first(ahead.len(), slots) {
        return None;
    }
    let first_waiter = ahead.len() == slots;
    Some(match first_waiter && slots > 1 {
        true => Watch {
            key: name::prefix(name).into_bytes(),
            watched: Watched::Prefix,
            wake_on_put: false,
        },
        false => Watch {
            key: nearest.key.clone(),
            watched: Watched::Key,
            wake_on_put: slots > 1,
        },
    })
}

/// How a read of the queue is served.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Agreed on by the cluster: the latest revision there is.
    Linearizable,
    /// By the member we ask, from what it has applied: a revision that may
    /// be behind the cluster's.
    MemberLocal,
}

impl Election<'_> {
    /// Our key, the candidates just ahead of it and the election's pause,
    /// read at one revision (the answer's).
    ///
    /// A member-local read is as good a proof of our turn as a linearizable
    /// one. Whatever revision it was read at, that revision is committed
    /// history, the same on every member. A key exists over one unbroken
    /// span of revisions, and keys ahead of ours were created before ours.
    /// So if none is ahead of ours at revision R, none ever is after R. Our
    /// key's fate after R is what the watch of our key (from R + 1) and the
    /// lease's local deadline look after, as they do after any proof. An
    /// answer older than the watch's news is the caller's to refuse.
    async fn read_ahead(&self, candidate: &Candidate, read: Read) -> Result<TxnResponse> {
        let mut ahead =
            in_line(SortOrder::Descend, FIRST_PAGE).with_max_create_revision(candidate.token.0 - 1);
        let mut ours = GetOptions::new();
        if read == Read::MemberLocal {
            ahead = ahead.with_serializable();
            ours = ours.with_serializable();
        }
        let mut pause = GetOptions::new();
        if read == Read::MemberLocal {
            pause = pause.with_serializable();
        }
        let txn = Txn::new().and_then([
            TxnOp::get(candidate.key.as_str(), Some(ours)),
            TxnOp::get(name::prefix(self.name), Some(ahead)),
            TxnOp::get(pause::pause_key(self.name), Some(pause)),
        ]);
        self.connection.txn("reading the queue", txn).await
    }
}

/// What news of our own key means for a waiter: our turn (a handover),
/// our place lost, or nothing (the watch broke; it is opened again).
fn turn_from(news: OwnKeyNews) -> Option<Turn> {
    match news {
        OwnKeyNews::HandedOver(at) => {
            tracing::debug!(
                event = events::HANDED_OVER_TO_US,
                revision = at.0,
                "our turn: handed over by the leader"
            );
            Some(Turn::Ours(at))
        }
        OwnKeyNews::Lost(loss) => Some(Turn::Gone(PlaceLost::Key(loss))),
        OwnKeyNews::Broke => None,
    }
}

/// What woke a waiter: news of its own key, or of what is ahead (true), or
/// the watch of what is ahead broke (false).
enum Woken {
    Own(OwnKeyNews),
    Ahead(bool),
}

/// What is ahead of our key in the queue.
enum Ahead {
    /// Our own key is gone, or not ours any more.
    Lost(KeyLoss),
    /// Fewer than --max-running, with our key ours, at this revision: our
    /// turn, and the proof of it; with our key and the pause as read.
    Nobody(Revision, Option<Kv>, Option<Paused>),
    /// What to watch, as read at this revision.
    Watch(Watch, Revision),
}

/// The one thing a waiter watches, and which events wake it.
#[derive(Debug, PartialEq, Eq)]
struct Watch {
    key: Vec<u8>,
    watched: Watched,
    /// Deletions always wake; a rewrite only when this is set.
    wake_on_put: bool,
}

/// Resolves once the lease is gone. Renewals change the lease's state too,
/// and must not wake a waiter: it would re-read the queue every renewal.
async fn lease_gone(lease: &mut watch::Receiver<LeaseState>) {
    loop {
        if lease.borrow_and_update().gone {
            return;
        }
        if lease.changed().await.is_err() {
            // The keeper ended without saying why: treat the lease as lost.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` candidates ahead, nearest first.
    fn ahead(count: i64) -> Vec<Kv> {
        (1..=count)
            .map(|at| Kv::written(format!("j/{at:x}"), 20 - at, at, b"{}"))
            .collect()
    }

    #[test]
    fn one_runner_waits_on_the_key_just_ahead() {
        assert_eq!(to_watch("j", 1, &ahead(0)), None, "our turn");
        let watch = to_watch("j", 1, &ahead(2)).unwrap();
        assert_eq!(watch.key, b"j/1");
        assert_eq!((watch.watched, watch.wake_on_put), (Watched::Key, false));
        assert_eq!(to_watch("j", 1, &ahead(1)), Some(watch));
    }

    #[test]
    fn with_more_runners_only_the_first_waiter_watches_the_prefix() {
        assert_eq!(to_watch("j", 3, &ahead(2)), None, "a slot is free");
        let first = to_watch("j", 3, &ahead(3)).unwrap();
        assert_eq!(first.key, b"j/");
        assert_eq!((first.watched, first.wake_on_put), (Watched::Prefix, false));
        // Further back: the key just ahead, and its rewrite (the waiter
        // ahead proving its win) wakes too.
        let later = to_watch("j", 3, &ahead(4)).unwrap();
        assert_eq!(later.key, b"j/1");
        assert_eq!((later.watched, later.wake_on_put), (Watched::Key, true));
    }
}
