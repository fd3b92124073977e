//! The network between the replicas and the simulated etcd's members, as
//! one seed decides it: each request's fate (on time, delayed, dropped
//! before etcd, or applied with its answer lost), members that fail, and
//! replicas cut off; and the in-memory connections a replica's real
//! client dials (`etcd::connection`'s seam under test).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::model::sim::Rng;

/// Which replica talks to which member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Link {
    pub replica: usize,
    pub member: usize,
}

/// What becomes of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Applied after `before`, answered after `after` more.
    Delivered { before: Duration, after: Duration },
    /// Lost on the way: etcd never sees it, and no answer comes.
    Dropped,
    /// Applied after `before`; the answer never comes.
    AnswerLost { before: Duration },
    /// The member answers at once that it cannot serve (no leader).
    Refused,
}

/// How mean the network is, per seed.
#[derive(Debug, Clone, Copy)]
pub struct Meanness {
    /// Per mille of requests delayed, dropped, or answered never.
    pub delayed: u32,
    pub dropped: u32,
    pub answer_lost: u32,
    /// The longest delay, either way.
    pub longest_delay: Duration,
    /// Per mille of requests after which their sender is stopped
    /// (SIGSTOP), for up to `longest_stop`: the answer finds it asleep.
    pub stopped: u32,
    pub longest_stop: Duration,
    /// Per mille of kill sequences at whose --kill-signal the leaderrun
    /// is stopped too, for up to `longest_stop` (a machine that thrashes
    /// as the job is stopped).
    pub stopped_at_stop: u32,
    /// Per mille of requests after which their sender is cut off, for up
    /// to `longest_stop`: its next request, whatever it is, is lost.
    pub cut_after: u32,
    /// Per mille of claims (a key put in line, a proof that rewrites it,
    /// a `--once-per` window claimed) at which their sender is cut off,
    /// for up to `longest_stop`: the claim is lost, and the lease may
    /// expire before the run can reach etcd again.
    pub cut_at_claim: u32,
    /// Per mille of cuts of a quarter of `longest_stop` or more (long
    /// enough to cost a lease) after which the link flaps: the replica's
    /// first claim that creates a key (a join, a window) once it is back,
    /// within `longest_stop` of the cut's end, finds it cut again, for
    /// half of `longest_stop` to all of it. A waiter that lost its place
    /// to the first cut joins on a new lease and loses that one too.
    pub flap: u32,
    /// Per mille of the answers of member 0 lost on top (a proxy in front
    /// of it that drops answers it finds slow): requests applied whose
    /// client tries the next member.
    pub flaky_member: u32,
}

impl Meanness {
    pub const CALM: Meanness = Meanness {
        delayed: 0,
        dropped: 0,
        answer_lost: 0,
        longest_delay: Duration::ZERO,
        stopped: 0,
        longest_stop: Duration::ZERO,
        stopped_at_stop: 0,
        cut_after: 0,
        cut_at_claim: 0,
        flap: 0,
        flaky_member: 0,
    };
}

#[derive(Debug)]
struct State {
    rng: Rng,
    meanness: Meanness,
    /// Members down until then.
    down_until: Vec<Instant>,
    /// Replicas cut off from every member until then.
    cut_until: Vec<Instant>,
    /// Replicas whose link flaps: a claim before then is cut off again
    /// ([`Meanness::flap`]).
    flaps_until: Vec<Instant>,
    /// How late every answer to each replica comes (its link is slow).
    late: Vec<Duration>,
    /// Faults heal for good from here on (the progress property's).
    healed: bool,
}

impl State {
    /// How long a replica stopped or cut off at a request stays so: up to
    /// `longest_stop`.
    fn stop_length(&mut self) -> Duration {
        let longest = self.meanness.longest_stop.as_millis() as usize;
        Duration::from_millis(1 + self.rng.below(longest.max(1)) as u64)
    }

    /// A stop or cut `per_mille` of the times it is asked, and how long.
    fn stop_at_times(&mut self, per_mille: u32) -> Option<Duration> {
        if self.rng.below(1000) as u32 >= per_mille {
            return None;
        }
        Some(self.stop_length())
    }
}

/// The network: what the world set, and the seed's choices.
#[derive(Debug, Clone)]
pub struct Network {
    state: Arc<Mutex<State>>,
}

impl Network {
    pub fn new(seed: u64, members: usize, replicas: usize, meanness: Meanness) -> Network {
        let now = Instant::now();
        Network {
            state: Arc::new(Mutex::new(State {
                rng: Rng::new(seed ^ 0x6e65_7477_6f72_6b00),
                meanness,
                down_until: vec![now; members],
                cut_until: vec![now; replicas.max(1)],
                flaps_until: vec![now; replicas.max(1)],
                late: vec![Duration::ZERO; replicas.max(1)],
                healed: false,
            })),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("not poisoned")
    }

    /// Takes a member down for `length`.
    pub fn member_down(&self, member: usize, length: Duration) {
        let mut state = self.state();
        if !state.healed {
            state.down_until[member] = Instant::now() + length;
        }
    }

    /// Cuts a replica off every member for `length` (a cut under way
    /// lasts at least as long as it would have); a long one may leave the
    /// link flapping ([`Meanness::flap`]).
    pub fn cut(&self, replica: usize, length: Duration) {
        let mut state = self.state();
        if state.healed {
            return;
        }
        let now = Instant::now();
        if state.cut_until.len() <= replica {
            state.cut_until.resize(replica + 1, now);
            state.flaps_until.resize(replica + 1, now);
        }
        let until = state.cut_until[replica].max(now + length);
        state.cut_until[replica] = until;
        let longest = state.meanness.longest_stop;
        let flap = state.meanness.flap;
        if flap > 0 && length >= longest / 4 && state.rng.below(1000) < flap as usize {
            state.flaps_until[replica] = until + longest;
        }
    }

    /// Every answer to `replica` comes `late`, on top of its fate's delay.
    pub fn answer_late(&self, replica: usize, late: Duration) {
        let mut state = self.state();
        if state.late.len() <= replica {
            state.late.resize(replica + 1, Duration::ZERO);
        }
        state.late[replica] = late;
    }

    /// Every answer to `replica` comes `late` for `length`, then as late
    /// as it did before; then, with `then_cut`, it is cut off for that
    /// long (a link that degrades, then fails: the acknowledgements that
    /// came late were the last).
    pub fn slow_for(
        &self,
        replica: usize,
        late: Duration,
        length: Duration,
        then_cut: Option<Duration>,
    ) {
        let before = {
            let state = self.state();
            if state.healed {
                return;
            }
            state.late.get(replica).copied().unwrap_or_default()
        };
        self.answer_late(replica, before.max(late));
        let network = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(length).await;
            if !network.state().healed {
                network.answer_late(replica, before);
                if let Some(cut) = then_cut {
                    network.cut(replica, cut);
                }
            }
        });
    }

    /// Every fault ends now, for good.
    pub fn heal(&mut self) {
        let mut state = self.state();
        let now = Instant::now();
        state.healed = true;
        state.meanness = Meanness::CALM;
        state.down_until.iter_mut().for_each(|until| *until = now);
        state.cut_until.iter_mut().for_each(|until| *until = now);
        state.flaps_until.iter_mut().for_each(|until| *until = now);
        state
            .late
            .iter_mut()
            .for_each(|late| *late = Duration::ZERO);
    }

    /// Whether a link carries nothing now.
    pub fn broken(&self, link: Link) -> bool {
        let state = self.state();
        let now = Instant::now();
        state.down_until[link.member] > now
            || state
                .cut_until
                .get(link.replica)
                .is_some_and(|until| *until > now)
    }

    /// The fate of the next request on `link`.
    pub fn fate(&self, link: Link) -> Fate {
        let now = Instant::now();
        let mut state = self.state();
        if state.down_until[link.member] > now {
            return Fate::Refused;
        }
        if state
            .cut_until
            .get(link.replica)
            .is_some_and(|until| *until > now)
        {
            return Fate::Dropped;
        }
        let meanness = state.meanness;
        let late = state.late.get(link.replica).copied().unwrap_or_default();
        let roll = state.rng.below(1000) as u32;
        let flaky = link.member == 0
            && meanness.flaky_member > 0
            && (state.rng.below(1000) as u32) < meanness.flaky_member;
        let delay = |rng: &mut Rng| {
            let longest = meanness.longest_delay.as_millis() as u64;
            Duration::from_millis(rng.below(longest.max(1) as usize) as u64)
        };
        if roll < meanness.dropped {
            Fate::Dropped
        } else if flaky || roll < meanness.dropped + meanness.answer_lost {
            Fate::AnswerLost {
                before: delay(&mut state.rng),
            }
        } else if roll < meanness.dropped + meanness.answer_lost + meanness.delayed {
            let before = delay(&mut state.rng);
            let after = delay(&mut state.rng) + late;
            Fate::Delivered { before, after }
        } else {
            Fate::Delivered {
                before: Duration::from_micros(200),
                after: Duration::from_micros(200) + late,
            }
        }
    }

    /// Whether the sender of the request just sent on `link` is stopped
    /// now, and for how long (cut off instead, it is done here).
    pub fn stops_sender(&self, link: Link) -> Option<Duration> {
        let mut state = self.state();
        let meanness = state.meanness;
        let roll = state.rng.below(1000) as u32;
        if roll >= meanness.stopped + meanness.cut_after {
            return None;
        }
        let length = state.stop_length();
        if roll < meanness.stopped {
            return Some(length);
        }
        drop(state);
        self.cut(link.replica, length);
        None
    }

    /// Cuts the sender of a claim off before the claim arrives: at times
    /// ([`Meanness::cut_at_claim`]), and always one that `creates` its key
    /// on a flapping link ([`Meanness::flap`]).
    pub fn cut_at_claim(&self, link: Link, creates: bool) {
        let length = {
            let mut state = self.state();
            let now = Instant::now();
            let flaps = state.flaps_until.get(link.replica).copied();
            if creates && flaps.is_some_and(|until| until > now) {
                state.flaps_until[link.replica] = now;
                let half = state.meanness.longest_stop / 2;
                let more = state.rng.below(half.as_millis().max(1) as usize) as u64;
                Some(half + Duration::from_millis(more))
            } else {
                let per_mille = state.meanness.cut_at_claim;
                state.stop_at_times(per_mille)
            }
        };
        if let Some(length) = length {
            self.cut(link.replica, length);
        }
    }

    /// Whether a leaderrun that just sent its job --kill-signal is
    /// stopped now, and for how long.
    pub fn stops_stopper(&self) -> Option<Duration> {
        let mut state = self.state();
        let per_mille = state.meanness.stopped_at_stop;
        state.stop_at_times(per_mille)
    }

    /// A number from the network's own choices (a stream cut, a late
    /// acknowledgement): below `bound`.
    pub fn roll(&self, bound: u64) -> u64 {
        self.state().rng.below(bound.max(1) as usize) as u64
    }
}

/// The endpoint a replica's options name for a member: a URL the
/// connection's seam sends here instead of the network.
pub fn endpoint(link: Link) -> String {
    format!("http://m{}.r{}.sim:2379", link.member, link.replica)
}

/// The link an endpoint of [`endpoint`]'s names.
pub fn link_of(url: &str) -> Option<Link> {
    let host = url.strip_prefix("http://")?.split(':').next()?;
    let rest = host.strip_suffix(".sim")?;
    let (member, replica) = rest.split_once('.')?;
    Some(Link {
        member: member.strip_prefix('m')?.parse().ok()?,
        replica: replica.strip_prefix('r')?.parse().ok()?,
    })
}
