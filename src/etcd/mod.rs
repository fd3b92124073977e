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
pub mod discovery;
pub mod endpoints;
pub mod ids;
pub mod kv;
pub mod requests;
mod symptom;
pub mod watch;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

pub use connection::Connection;
use connection::Settings;
use credentials::Credentials;

/// Where etcd is and how to reach it, as the user gave it (the options, or
/// the variables that stand for them): checked when connecting. No
/// `Debug`: it holds the password.
#[derive(Clone, Default)]
pub struct Options {
    /// The endpoint list as given, comma-separated; None: [`endpoints::DEFAULT`].
    pub endpoints: Option<String>,
    /// Where to discover the endpoints instead (`--discovery-srv`).
    pub discovery: Option<discovery::Discovery>,
    /// ETCDCTL_INSECURE_TRANSPORT=false: bare `host:port` endpoints are
    /// https, as when a TLS option is given.
    pub tls_transport: bool,
    /// Bound on connecting plus one request to one endpoint.
    pub dial_timeout: Duration,
    /// CAs to trust instead of the system's (PEM).
    pub cacert: Option<PathBuf>,
    /// The client certificate and its key (PEM); one without the other is
    /// refused.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure_skip_tls_verify: bool,
    /// `USER` or `USER:PASSWORD`.
    pub user: Option<String>,
    /// The password for `user`, if not in it.
    pub password: Option<String>,
}

/// The endpoints this process connected to, for the commands it suggests
/// (`etcdctl --endpoints=... del KEY`): a suggestion copied into another
/// shell must reach the same etcd.
static ENDPOINTS_IN_USE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The endpoints this process connected to first, comma-separated, if it
/// did.
pub fn endpoints_in_use() -> Option<&'static str> {
    ENDPOINTS_IN_USE.get().map(String::as_str)
}

/// A connection as the options say: endpoints, TLS, credentials, the dial
/// timeout, and an HTTP/2 ping every `ping_interval`, which breaks streams
/// on a dead or frozen connection.
///
/// With discovery, the endpoints are looked up first, each look-up
/// bounded by the dial timeout: finding none is an error.
pub async fn connect(options: &Options, ping_interval: Duration) -> Result<Connection> {
    let credentials = Credentials::from_options(options)?;
    let endpoints = match &options.discovery {
        Some(discovery) => discovery::endpoints(discovery, options.dial_timeout).await?,
        None => endpoints::resolve(
            options.endpoints.as_deref(),
            credentials.tls_requested() || options.tls_transport,
        )?,
    };
    tracing::debug!("etcd endpoints: {}", endpoints.join(","));
    let _ = ENDPOINTS_IN_USE.set(endpoints.join(","));
    Ok(Connection::new(Settings {
        endpoints,
        discovery: options.discovery.clone(),
        dial_timeout: options.dial_timeout,
        ping_interval,
        credentials,
    }))
}
