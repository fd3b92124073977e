//! The simulated etcd's watch streams: each replays the history from its
//! start revision, then follows every change, in revision order; a watch
//! whose history was compacted is cancelled with the compaction revision,
//! and a stream may be cut (the network's choice) as a member's restart or
//! a proxy's reset cuts a real one.

use etcd_client::proto::{PbWatchRequest, PbWatchRequestUnion as WatchUnion, PbWatchResponse};
use tokio::sync::mpsc;
use tonic::{Status, Streaming};

use super::network::{Link, Network};
use super::store::{header, KeyRange, Store};
use super::Etcd;

/// One watch on a stream.
struct Watcher {
    id: i64,
    range: KeyRange,
    /// The next revision to send.
    next: i64,
    no_put: bool,
    no_delete: bool,
    prev_kv: bool,
}

/// A stream is cut at one wake in this many, at most.
const CUT_ONE_IN: u64 = 200;

type Answers = mpsc::Sender<Result<PbWatchResponse, Status>>;

/// Serves one watch stream until either side ends it.
pub async fn serve(
    etcd: Etcd,
    network: Network,
    link: Link,
    mut requests: Streaming<PbWatchRequest>,
    answers: Answers,
) {
    let mut watchers: Vec<Watcher> = Vec::new();
    let mut next_id = 0;
    loop {
        let seen = etcd.revision();
        let responses = etcd.apply(|store, _| Ok(catch_up(store, &mut watchers)));
        for response in responses.unwrap_or_default() {
            if answers.send(Ok(response)).await.is_err() {
                return;
            }
        }
        if network.broken(link) || network.roll(CUT_ONE_IN) == 0 && !watchers.is_empty() {
            etcd.trace(link, "watch cut", &super::network::Fate::Dropped, false);
            let _ = answers
                .send(Err(Status::unavailable("simulated: watch stream cut")))
                .await;
            return;
        }
        tokio::select! {
            biased;
            request = requests.message() => match request {
                Ok(Some(request)) => {
                    etcd.trace(link, "watch request", &super::network::Fate::Delivered {
                        before: std::time::Duration::ZERO,
                        after: std::time::Duration::ZERO,
                    }, true);
                    let answer = etcd.apply(|store, _| {
                        Ok(handle(store, request, &mut watchers, &mut next_id))
                    });
                    for response in answer.unwrap_or_default() {
                        if answers.send(Ok(response)).await.is_err() {
                            return;
                        }
                    }
                }
                _ => return,
            },
            () = etcd.moved_past(seen) => {}
            () = answers.closed() => return,
        }
    }
}

/// A request on the stream: create, cancel, or ask for progress.
fn handle(
    store: &Store,
    request: PbWatchRequest,
    watchers: &mut Vec<Watcher>,
    next_id: &mut i64,
) -> Vec<PbWatchResponse> {
    match request.request_union {
        Some(WatchUnion::CreateRequest(create)) => {
            let id = *next_id;
            *next_id += 1;
            let start = match create.start_revision {
                0 => store.revision + 1,
                start => start,
            };
            let created = PbWatchResponse {
                header: header(store),
                watch_id: id,
                created: true,
                ..Default::default()
            };
            if start < store.compacted {
                let cancelled = PbWatchResponse {
                    header: header(store),
                    watch_id: id,
                    canceled: true,
                    compact_revision: store.compacted,
                    ..Default::default()
                };
                return vec![created, cancelled];
            }
            watchers.push(Watcher {
                id,
                range: KeyRange::new(create.key, create.range_end),
                next: start,
                no_put: create.filters.contains(&0),
                no_delete: create.filters.contains(&1),
                prev_kv: create.prev_kv,
            });
            vec![created]
        }
        Some(WatchUnion::CancelRequest(cancel)) => {
            watchers.retain(|watcher| watcher.id != cancel.watch_id);
            vec![PbWatchResponse {
                header: header(store),
                watch_id: cancel.watch_id,
                canceled: true,
                ..Default::default()
            }]
        }
        Some(WatchUnion::ProgressRequest(_)) => vec![PbWatchResponse {
            header: header(store),
            watch_id: -1,
            ..Default::default()
        }],
        None => Vec::new(),
    }
}

/// Each watcher's events since it was last sent to, or its cancellation if
/// they were compacted away.
fn catch_up(store: &Store, watchers: &mut Vec<Watcher>) -> Vec<PbWatchResponse> {
    let mut responses = Vec::new();
    let mut compacted = Vec::new();
    for watcher in watchers.iter_mut() {
        if watcher.next > store.revision {
            continue;
        }
        if watcher.next < store.compacted {
            compacted.push(watcher.id);
            responses.push(PbWatchResponse {
                header: header(store),
                watch_id: watcher.id,
                canceled: true,
                compact_revision: store.compacted,
                ..Default::default()
            });
            continue;
        }
        let events: Vec<_> = store
            .events
            .iter()
            .filter(|event| {
                let kv = event.kv.as_ref().expect("an event has its key");
                kv.mod_revision >= watcher.next
                    && watcher.range.holds(&kv.key)
                    && !(event.r#type == 0 && watcher.no_put)
                    && !(event.r#type == 1 && watcher.no_delete)
            })
            .map(|event| {
                let mut event = event.clone();
                if !watcher.prev_kv {
                    event.prev_kv = None;
                }
                event
            })
            .collect();
        watcher.next = store.revision + 1;
        if !events.is_empty() {
            responses.push(PbWatchResponse {
                header: header(store),
                watch_id: watcher.id,
                events,
                ..Default::default()
            });
        }
    }
    watchers.retain(|watcher| !compacted.contains(&watcher.id));
    responses
}
