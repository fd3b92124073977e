//! Everything that talks to etcd goes through here: where etcd is
//! ([`endpoints`]), how to reach it safely ([`credentials`]), and one
//! [`Connection`] that fails over between members and classifies errors, and
//! the requests made through it, each written once ([`requests`]), with
//! the keys and watch events they return as plain values ([`kv`], with
//! the numbers in them typed: [`ids`]) and one reader of a watch stream
//! ([`watch`]).
//! Nothing here knows about elections, leases or children.

pub mod connection;
pub mod credentials;
pub mod endpoints;
pub mod ids;
pub mod kv;
pub mod requests;
mod symptom;
pub mod watch;

use std::time::Duration;

use anyhow::Result;

pub use connection::Connection;
use connection::Settings;
use credentials::Credentials;

use crate::cli::ConnectionArgs;

/// A connection as the options say: endpoints, TLS, credentials, the dial
/// timeout, and an HTTP/2 ping every `ping_interval`, which breaks streams
/// on a dead or frozen connection.
pub fn connect(args: &ConnectionArgs, ping_interval: Duration) -> Result<Connection> {
    let credentials = Credentials::from_args(args)?;
    let endpoints = endpoints::resolve(args.endpoints.as_deref(), credentials.tls_requested())?;
    Ok(Connection::new(Settings {
        endpoints,
        dial_timeout: args.dial_timeout,
        ping_interval,
        credentials,
    }))
}
