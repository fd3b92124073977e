//! One watch stream, opened on the current endpoint, and what each of its
//! messages says ([`Received`]): events, or one of the ways a watch ends.
//! Every watch leaderrun keeps (its own key, the key ahead of a waiter, an
//! election's line for `status --watch`) reads its stream through here.

use etcd_client::{WatchOptions, WatchStream};

use crate::clock;
use crate::etcd::kv::WatchEvent;
use crate::etcd::Connection;

/// An open watch, and the endpoint it was opened on.
pub struct Watch {
    /// Boxed: a stream is large, and watches travel inside outcomes.
    stream: Box<WatchStream>,
    index: crate::etcd::connection::Slot,
    connection: Connection,
}

/// What a watch's next message says.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// Changes, in revision order (none: a progress notification).
    Events(Vec<WatchEvent>),
    /// etcd compacted past where the watch was: the history since is gone.
    Compacted,
    /// etcd cancelled the watch, for this reason.
    Cancelled(String),
    /// The stream failed or closed.
    Closed,
}

impl Received {
    /// The events, or None if the watch ended.
    pub fn events(self) -> Option<Vec<WatchEvent>> {
        match self {
            Received::Events(events) => Some(events),
            _ => None,
        }
    }
}

impl Watch {
    /// Watches `key` with `options` on the current endpoint. None, with the
    /// endpoint marked failed, if it could not be opened in time: the
    /// caller retries, on the next endpoint.
    pub async fn open(connection: &Connection, key: &[u8], options: WatchOptions) -> Option<Watch> {
        let (stream, index) = connection.open_watch(key, options).await?;
        Some(Watch {
            stream: Box::new(stream),
            index,
            connection: connection.clone(),
        })
    }

    /// The next message. Cancel safe: a message is taken whole or not at
    /// all.
    pub async fn next(&mut self) -> Received {
        received(self.stream.message().await)
    }

    /// The next message if the connection has already received it, with
    /// no wait for the network.
    pub async fn next_if_here(&mut self) -> Option<Received> {
        clock::ready_now(self.stream.message()).await.map(received)
    }

    /// Reports the endpoint the watch was on as failed: the next watch is
    /// opened on the next one, with a new client (a cancelled watch may
    /// hold a token etcd has forgotten: a restart, with auth on).
    pub fn failed(&self) {
        self.connection.failed(self.index);
    }
}

fn received(message: Result<Option<etcd_client::WatchResponse>, etcd_client::Error>) -> Received {
    match message {
        Ok(Some(response)) if response.compact_revision() > 0 => Received::Compacted,
        Ok(Some(response)) if response.canceled() => {
            Received::Cancelled(response.cancel_reason().to_string())
        }
        Ok(Some(response)) => Received::Events(WatchEvent::all_of(response.events()).collect()),
        Ok(None) | Err(_) => Received::Closed,
    }
}
