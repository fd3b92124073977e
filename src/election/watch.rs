//! Watching our own key, from the queue to the end of the run ([`OwnKey`]):
//! its deletion, replacement or overwrite is the loss of our place or of
//! leadership, and its rewrite by a resigning leader is our turn. Rides out
//! broken watches and endpoint changes. Also the watch of the key or prefix
//! ahead of a waiter ([`WatchAhead`]). Watches are kept open to the end of
//! the run, past the resignation ([`OwnKey::keep_ahead`]).

use std::collections::VecDeque;

use etcd_client::{WatchFilterType, WatchOptions};

use super::holder::{Behind, Handover, Holder};
use super::pause::PauseSeen;
use super::{judge, KeyLoss, Leadership};
use crate::etcd::ids::{LeaseId, Revision, Token};
use crate::etcd::kv::{Kv, WatchEvent};
use crate::etcd::watch::{Received, Watch};
use crate::etcd::Connection;
use crate::retry;

/// Resolves when our key is deleted, replaced or overwritten, which means
/// leadership is lost. `own` is the watch of our key, the one a waiter
/// kept while it queued if it did: it goes on from where it is, with no new
/// watch on the way to running. Survives broken watches and endpoint
/// changes by re-reading the key and watching again from where it stopped.
pub async fn watch_for_loss(
    connection: &Connection,
    leadership: &Leadership,
    own: &mut OwnKey,
) -> KeyLoss {
    let (token, lease) = (leadership.token, leadership.lease);
    // What happened up to the proof, the proof has seen.
    own.skip_to(leadership.proven_at.next());
    let mut backoff = retry::backoff(retry::KEEPING);
    loop {
        match own.next(connection).await {
            OwnKeyNews::Lost(loss) => return loss,
            OwnKeyNews::HandedOver(_) => continue,
            OwnKeyNews::Broke => {}
        }
        // The watch broke: make sure nothing was missed, then watch again.
        let read = connection
            .get("checking the leader key", own.key.as_slice(), None)
            .await;
        match read {
            Ok(read) => {
                if let Some(loss) = judge(read.kvs.first(), token, lease) {
                    return loss;
                }
                if read.revision > Revision::default() {
                    own.skip_to(read.revision.next());
                }
            }
            // Unreachable etcd is the lease deadline's business, not ours.
            Err(err) => tracing::debug!("{err:#}"),
        }
        retry::wait(&mut backoff).await;
    }
}

/// A watch of our own candidate key, opened as we join the queue and kept
/// to the end of the run: while we wait it brings a handover (or the loss
/// of our place) at once, and once we lead it is the watch for loss, with
/// nothing to open on the way to running.
pub struct OwnKey {
    key: Vec<u8>,
    token: Token,
    lease: LeaseId,
    /// Events before this revision are passed over.
    from: Revision,
    /// The watch, once opened (and again after it broke).
    stream: Option<Watch>,
    /// Events received and not yet looked at: a response may hold several.
    pending: VecDeque<WatchEvent>,
    /// The last watch of what is ahead of us, kept open (see
    /// [`OwnKey::keep_ahead`]); boxed, as the stream is.
    ahead: Option<Box<WatchAhead>>,
    /// The stream broke or ended while responses were taken without
    /// waiting: the next call to [`OwnKey::next`] says so.
    ended: bool,
    /// The candidates behind us that the leader who handed over to us
    /// passed on, if it did ([`Holder::handover`]).
    passed_on: Vec<Behind>,
    /// The election's pause as a proof of our turn found it: by the read
    /// that found our turn, or a handover written with no pause standing.
    pub pause_seen: Option<PauseSeen>,
}

/// What an event on our key (created at `token`, on `lease`) makes of it:
/// lost and how, or still ours.
fn loss_in(event: &WatchEvent, token: Token, lease: LeaseId) -> Option<KeyLoss> {
    match event {
        WatchEvent::Delete(_) => Some(KeyLoss::Deleted),
        WatchEvent::Put(kv) => judge(Some(kv), token, lease),
    }
}

/// A rewrite of a candidate's key by a leader handing over to it, with
/// the candidates that leader passed on ([`Holder::handover`]).
fn handover_in(event: &WatchEvent) -> Option<Handover> {
    match event {
        WatchEvent::Put(kv) => Holder::handover(&kv.value),
        WatchEvent::Delete(_) => None,
    }
}

/// What the event at the front of the watch of our key is news of, given
/// that events before revision `from` are passed over.
#[derive(Debug, PartialEq)]
enum Front {
    /// Before `from`: passed over.
    Old,
    /// No news (a rewrite that keeps our key ours), at this revision.
    Nothing(Revision),
    Lost(KeyLoss, Revision),
    /// A handover to us at this revision, passing on these candidates.
    HandedOver(Handover, Revision),
}

fn front(event: &WatchEvent, from: Revision, token: Token, lease: LeaseId) -> Front {
    let revision = event.revision();
    if revision < from {
        return Front::Old;
    }
    match (loss_in(event, token, lease), handover_in(event)) {
        (Some(loss), _) => Front::Lost(loss, revision),
        (None, Some(handover)) => Front::HandedOver(handover, revision),
        (None, None) => Front::Nothing(revision),
    }
}

/// What happened to our key, as far as a campaign or a run goes.
pub enum OwnKeyNews {
    Lost(KeyLoss),
    /// A resigning leader handed over to us, at this revision.
    HandedOver(Revision),
    /// The watch broke (closed, cancelled, or etcd compacted past where it
    /// was); the next call opens it again from where it stopped.
    Broke,
}

impl OwnKey {
    /// The watch of `key` (created at `token`, on `lease`), from revision
    /// `from`; opened on first use.
    pub fn new(key: &str, token: Token, lease: LeaseId, from: Revision) -> OwnKey {
        OwnKey {
            key: key.as_bytes().to_vec(),
            token,
            lease,
            from,
            stream: None,
            pending: VecDeque::new(),
            ahead: None,
            ended: false,
            passed_on: Vec::new(),
            pause_seen: None,
        }
    }

    /// The watch of our key for the run of `leadership`, opened on first
    /// use: for a run that did not queue.
    pub fn of(leadership: &Leadership) -> OwnKey {
        OwnKey::new(
            &leadership.key,
            leadership.token,
            leadership.lease,
            Revision::default(),
        )
    }

    /// The candidates behind us that the leader who handed over to us
    /// passed on (none if it did not, or nobody handed over to us).
    pub fn take_passed_on(&mut self) -> Vec<Behind> {
        std::mem::take(&mut self.passed_on)
    }

    /// A handover that a read of our key found, at the revision it
    /// returns: the read raced the watch's news of it, and came first.
    /// Taken as that news would be, so that what the leader passed on is
    /// not lost (the new leader would read the line again), and the watch
    /// passes over it.
    pub fn handed_over_in(&mut self, ours: &Kv) -> Option<Revision> {
        let handover = Holder::handover(&ours.value)?;
        self.take_handover(handover, ours.mod_revision);
        self.skip_to(ours.mod_revision.next());
        Some(ours.mod_revision)
    }

    /// What a handover at `revision` says, kept for the run.
    fn take_handover(&mut self, handover: Handover, revision: Revision) {
        self.passed_on = handover.passed_on;
        self.pause_seen = handover.unpaused.then_some(PauseSeen {
            at: revision,
            paused: None,
        });
    }

    /// Keeps the last watch of what is ahead of us open with this one, in
    /// place of the one before. Dropping a watch cancels it, and etcd does
    /// the work of ending it (its stream, its watcher) at once: as the next
    /// leader spawns, that work would be on its path. Kept, it ends with
    /// the rest, once the run has resigned (see `Session::keep_watching`).
    ///
    /// Only the watch of one key, for its deletion (one runner): once our
    /// turn has come that key is gone, and nothing more comes on it. A
    /// watch that could still bring events (a prefix, or rewrites) is let
    /// go: unread, they would hold the connection's flow-control window,
    /// which the lease's renewals share.
    pub(super) fn keep_ahead(&mut self, watch: WatchAhead) {
        self.ahead = (watch.watched == Watched::Key && !watch.wake_on_put).then(|| Box::new(watch));
    }

    /// Adds to what is pending every response already received, without
    /// waiting for more: after a pause (SIGSTOP, a frozen VM), a handover
    /// may be followed, in what the connection has read, by the loss of our
    /// key. Each response is taken as it is there when polled; once none
    /// is, the task yields once, so that the connection reads and hands out
    /// what the socket holds, and looks again. Cancel safe: only whole
    /// responses are added.
    async fn take_what_is_here(&mut self) {
        let mut yielded = false;
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return;
            };
            match stream.next_if_here().await {
                Some(Received::Events(events)) => self.pending.extend(events),
                // Broken or ended: the next call to `next` finds out.
                Some(_) => {
                    self.ended = true;
                    return;
                }
                None if yielded => return,
                None => {
                    tokio::task::yield_now().await;
                    yielded = true;
                }
            }
        }
    }

    /// The loss of our key among the pending events, if there is one.
    fn later_loss(&self) -> Option<KeyLoss> {
        self.pending
            .iter()
            .find_map(|event| loss_in(event, self.token, self.lease))
    }

    /// Passes over everything before `revision`.
    pub fn skip_to(&mut self, revision: Revision) {
        self.from = self.from.max(revision);
    }

    /// The next news of our key. Cancel safe: what it has received and not
    /// yet returned stays here for the next call.
    pub async fn next(&mut self, connection: &Connection) -> OwnKeyNews {
        loop {
            if let Some(news) = self.news_received().await {
                return news;
            }
            if self.stream.is_none() {
                let options = WatchOptions::new().with_start_revision(self.from.0);
                match Watch::open(connection, &self.key, options).await {
                    Some(stream) => self.stream = Some(stream),
                    None => return OwnKeyNews::Broke,
                }
            }
            let Some(stream) = self.stream.as_mut() else {
                continue;
            };
            let received = match self.ended {
                true => Received::Closed,
                false => stream.next().await,
            };
            match received {
                Received::Events(events) => self.pending.extend(events),
                // Ended, however: dial again (see [`Watch::failed`]).
                _ => {
                    stream.failed();
                    self.stream = None;
                    self.ended = false;
                    return OwnKeyNews::Broke;
                }
            }
        }
    }

    /// News among what the connection has already received, with no wait
    /// for the network.
    pub async fn arrived(&mut self) -> Option<OwnKeyNews> {
        self.take_what_is_here().await;
        self.news_received().await
    }

    /// The first news among the events received: passes over what is
    /// older than `from`, and what is no news (a rewrite that keeps our
    /// key ours).
    async fn news_received(&mut self) -> Option<OwnKeyNews> {
        while let Some(event) = self.pending.front() {
            let front = front(event, self.from, self.token, self.lease);
            if let Front::HandedOver(..) = front {
                // A handover is news of its revision: if our key was lost
                // since, and that has reached us, the loss wins. It stays
                // in front while the rest comes in, so that a call
                // cancelled meanwhile finds it again.
                self.take_what_is_here().await;
            }
            self.pending.pop_front();
            match front {
                Front::Old => continue,
                Front::Nothing(revision) => self.from = revision.next(),
                Front::Lost(loss, revision) => {
                    self.from = revision.next();
                    return Some(OwnKeyNews::Lost(loss));
                }
                Front::HandedOver(handover, revision) => {
                    self.from = revision.next();
                    self.take_handover(handover, revision);
                    return Some(match self.later_loss() {
                        Some(loss) => OwnKeyNews::Lost(loss),
                        None => OwnKeyNews::HandedOver(revision),
                    });
                }
            }
        }
        None
    }
}

/// What a watch covers: one key, or every key under a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Watched {
    Key,
    Prefix,
}

/// The watch of what is ahead of a waiter: the key just ahead, or (the
/// first waiter, with several runners) the prefix.
pub(super) struct WatchAhead {
    stream: Watch,
    watched: Watched,
    wake_on_put: bool,
}

impl WatchAhead {
    /// Watches `key` (or the prefix `key`) from revision `from`, for
    /// deletions, and with `wake_on_put` rewrites too. Without it, etcd is
    /// asked to leave rewrites out (a filter): they would wake this waiter
    /// only to be passed over, at every change of leader (the leader
    /// handing over rewrites the key of the one behind it). None if it
    /// could not be opened.
    pub(super) async fn open(
        connection: &Connection,
        key: &[u8],
        watched: Watched,
        wake_on_put: bool,
        from: Revision,
    ) -> Option<WatchAhead> {
        let mut options = WatchOptions::new().with_start_revision(from.0);
        if watched == Watched::Prefix {
            options = options.with_prefix();
        }
        if !wake_on_put {
            options = options.with_filters([WatchFilterType::NoPut]);
        }
        let stream = Watch::open(connection, key, options).await?;
        Some(WatchAhead {
            stream,
            watched,
            wake_on_put,
        })
    }

    /// Waits for a deletion (or a rewrite, if it wakes on those),
    /// advancing `from` past each event seen: true then, false when the
    /// watch broke (error, end, compaction, endpoint change), and the
    /// caller re-reads and retries. Cancel safe.
    pub(super) async fn woken(&mut self, from: &mut Revision) -> bool {
        loop {
            let Some(events) = self.stream.next().await.events() else {
                self.stream.failed();
                return false;
            };
            if wakes(&events, self.wake_on_put, from) {
                return true;
            }
        }
    }
}

/// Whether `events` wake a waiter that watches what is ahead of it (a
/// deletion does; a rewrite only `wake_on_put`), advancing `from` past
/// each event up to the one that wakes it.
fn wakes(events: &[WatchEvent], wake_on_put: bool, from: &mut Revision) -> bool {
    events.iter().any(|event| {
        *from = (*from).max(event.revision().next());
        wake_on_put || matches!(event, WatchEvent::Delete(_))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our key, created at 10 on lease 0x1f.
    fn ours() -> Kv {
        Kv::written(
            "j/1f",
            10,
            0x1f,
            br#"{"host":"h","pid":1,"started":"s","command":"c"}"#,
        )
    }

    /// Our key as a resigning leader (token 9) rewrites it at `revision`.
    fn handed_over(revision: i64) -> WatchEvent {
        let value: serde_json::Value = serde_json::from_slice(&ours().value).unwrap();
        let value = Holder::handed_over(&value, Token(9), &[]).unwrap();
        WatchEvent::Put(ours().rewritten(revision, 0x1f, &value))
    }

    fn deleted(revision: i64) -> WatchEvent {
        WatchEvent::Delete(Kv {
            mod_revision: Revision(revision),
            ..Kv::default()
        })
    }

    #[test]
    fn each_event_on_our_key_is_judged() {
        let front = |event: &WatchEvent| front(event, Revision(11), Token(10), LeaseId(0x1f));
        assert_eq!(
            front(&deleted(12)),
            Front::Lost(KeyLoss::Deleted, Revision(12))
        );
        assert_eq!(front(&deleted(10)), Front::Old, "before `from`");
        let since = WatchEvent::Put(ours().rewritten(12, 0x1f, b"{}"));
        assert_eq!(
            front(&since),
            Front::Nothing(Revision(12)),
            "our own rewrite"
        );
        assert_eq!(
            front(&handed_over(13)),
            Front::HandedOver(
                Handover {
                    passed_on: Vec::new(),
                    unpaused: true
                },
                Revision(13)
            )
        );
        let replaced = WatchEvent::Put(Kv::written("j/1f", 14, 0x1f, b"{}"));
        assert_eq!(
            front(&replaced),
            Front::Lost(KeyLoss::Replaced, Revision(14))
        );
        // A handover's value on a key that is no longer ours is a loss.
        let WatchEvent::Put(handover) = handed_over(15) else {
            unreachable!()
        };
        let overwritten = WatchEvent::Put(handover.rewritten(15, 0, &handover.value));
        assert_eq!(
            front(&overwritten),
            Front::Lost(KeyLoss::Overwritten, Revision(15))
        );
    }

    fn with_pending(events: Vec<WatchEvent>) -> OwnKey {
        let mut own = OwnKey::new("j/1f", Token(10), LeaseId(0x1f), Revision(11));
        own.pending.extend(events);
        own
    }

    #[tokio::test]
    async fn a_loss_after_a_handover_that_has_arrived_wins() {
        let mut own = with_pending(vec![handed_over(12), deleted(13)]);
        assert!(matches!(
            own.news_received().await,
            Some(OwnKeyNews::Lost(KeyLoss::Deleted))
        ));
        let mut own = with_pending(vec![handed_over(12)]);
        assert!(matches!(
            own.news_received().await,
            Some(OwnKeyNews::HandedOver(Revision(12)))
        ));
        assert_eq!(own.from, Revision(13));
        assert!(own.news_received().await.is_none());
    }

    #[tokio::test]
    async fn old_events_and_our_own_rewrites_are_no_news() {
        let rewrite = WatchEvent::Put(ours().rewritten(12, 0x1f, b"{}"));
        let mut own = with_pending(vec![deleted(5), rewrite, handed_over(14)]);
        own.skip_to(Revision(6));
        assert!(matches!(
            own.news_received().await,
            Some(OwnKeyNews::HandedOver(Revision(14)))
        ));
        let mut own = with_pending(vec![handed_over(12)]);
        own.skip_to(Revision(13));
        assert!(own.news_received().await.is_none(), "seen by a proof");
        assert!(own.pending.is_empty());
    }

    #[test]
    fn a_waiter_wakes_on_a_deletion_and_on_a_rewrite_only_if_asked() {
        let rewrite = WatchEvent::Put(ours().rewritten(12, 0x1f, b"{}"));
        let mut from = Revision(11);
        assert!(!wakes(std::slice::from_ref(&rewrite), false, &mut from));
        assert_eq!(from, Revision(13), "passed over, as seen");
        assert!(wakes(
            &[rewrite.clone(), deleted(14), deleted(15)],
            false,
            &mut from
        ));
        assert_eq!(from, Revision(15), "up to the event that woke it");
        let mut from = Revision(11);
        assert!(wakes(&[rewrite], true, &mut from));
        assert_eq!(from, Revision(13));
        assert!(!wakes(&[], true, &mut from), "a progress notification");
    }
}
