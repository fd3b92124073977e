//! Connections to etcd, one endpoint at a time, with failover.
//!
//! etcd-client balances over all endpoints it is given and does not fail
//! over: with one member of three dead, about a third of requests failed
//! with `Unavailable` in a trial, and a keep-alive stream never reconnects.
//! So each endpoint gets a client of its own, and leaderrun talks to one at
//! a time: the current one.
//! A caller that sees the current endpoint fail says so with
//! [`Connection::failed`], and everyone moves to the next.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use etcd_client::{Client, ConnectOptions};
use tonic::transport::{Channel as TonicChannel, Endpoint as TonicEndpoint};

use crate::error;
use crate::etcd::credentials::Credentials;
use crate::etcd::discovery::{self, Discovery};
use crate::etcd::symptom::{Symptom, USER_EMPTY};

/// The largest answer leaderrun reads in one message, for key-value reads
/// and watches. etcd-client's default, 4 MiB, is less than the first page
/// of an election's line when the job keeps large values under its prefix
/// (README's one-election role leaves it no other place): 8 keys of up to
/// etcd's largest value (`--max-request-bytes`, 1.5 MiB by default) need
/// 12 MiB. Reads that go on past the first page read keys only
/// (`election::line`), so no page is larger. A limit is not an allocation.
pub const MESSAGE_LIMIT: usize = 32 * 1024 * 1024;

/// How to reach etcd: the endpoints and what every client shares.
#[derive(Clone)]
pub struct Settings {
    /// The endpoints as the run began: given, or discovered.
    pub endpoints: Vec<String>,
    /// Where the endpoints were discovered (`--discovery-srv`): looked up
    /// again when every endpoint failed, so that members moved in DNS are
    /// found.
    pub discovery: Option<Discovery>,
    /// Bound on connecting plus one request to one endpoint.
    pub dial_timeout: Duration,
    /// HTTP/2 ping interval: breaks streams on a dead or frozen connection,
    /// so watches and keep-alives move on instead of hanging.
    pub ping_interval: Duration,
    pub credentials: Credentials,
}

impl Settings {
    /// Per-client options. No `Debug` of these anywhere: they hold the
    /// password.
    fn client_options(&self) -> ConnectOptions {
        // A member cut off from its quorum refuses streams at once instead
        // of holding them open: we move to another endpoint.
        let options = ConnectOptions::new().with_require_leader(true);
        match self.credentials.user() {
            Some((name, password)) => options
                .with_user(name, password)
                .with_auto_token_refresh(true),
            None => options,
        }
    }

    /// A lazily connecting channel to one endpoint: etcd-client would
    /// balance over all endpoints, and it cannot skip TLS verification.
    fn channel(&self, url: &str) -> Result<TonicChannel> {
        let mut endpoint = TonicEndpoint::from_shared(url.to_string())
            .with_context(|| format!("malformed endpoint '{url}'"))?
            .connect_timeout(self.dial_timeout)
            .http2_keep_alive_interval(self.ping_interval)
            .keep_alive_timeout(self.ping_interval)
            .keep_alive_while_idle(true);
        if url.starts_with("https://") {
            let server_name = self.discovery.as_ref().and_then(Discovery::server_name);
            endpoint = self.credentials.secure(endpoint, server_name)?;
        }
        // The library's tests: an endpoint of a simulated world is dialled
        // in memory, to its simulated etcd (`crate::simulation`).
        #[cfg(test)]
        if let Some(channel) = crate::simulation::channel(url, &endpoint) {
            return Ok(channel);
        }
        Ok(endpoint.connect_lazy())
    }
}

#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    pool: Mutex<Pool>,
    /// A look-up of the endpoints again is under way (one at a time).
    rediscovering: AtomicBool,
    /// When the endpoints were last looked up again.
    last_lookup: Mutex<Option<crate::clock::Instant>>,
}

/// The endpoints in use, a client for each once dialled, and the current
/// one. A new discovery replaces them all, as a new generation: a report
/// of failure about an endpoint of an older one changes nothing.
struct Pool {
    generation: u64,
    endpoints: Arc<[String]>,
    clients: Vec<Option<Client>>,
    current: usize,
}

impl Pool {
    fn new(endpoints: &[String], generation: u64) -> Pool {
        Pool {
            generation,
            endpoints: endpoints.into(),
            clients: vec![None; endpoints.len()],
            current: 0,
        }
    }
}

/// Which endpoint, of which generation of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub index: usize,
    generation: u64,
}

/// A client for one endpoint, with the slot to report if it fails.
pub struct Endpoint {
    pub client: Client,
    pub index: Slot,
}

impl Connection {
    pub fn new(settings: Settings) -> Self {
        let pool = Mutex::new(Pool::new(&settings.endpoints, 0));
        Connection {
            inner: Arc::new(Inner {
                settings,
                pool,
                rediscovering: AtomicBool::new(false),
                last_lookup: Mutex::new(None),
            }),
        }
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.inner.pool.lock().expect("not poisoned")
    }

    /// The endpoints in use now.
    pub fn endpoints(&self) -> Arc<[String]> {
        self.pool().endpoints.clone()
    }

    /// The URL of the endpoint in `slot` (of its generation, or the
    /// current one if the pool moved on).
    fn url(&self, slot: Slot) -> String {
        let pool = self.pool();
        pool.endpoints
            .get(slot.index)
            .cloned()
            .unwrap_or_else(|| pool.endpoints.join(","))
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The time one attempt on one endpoint may take: the dial timeout shared
    /// out so that trying every endpoint once stays within it.
    pub fn attempt_timeout(&self) -> Duration {
        let settings = &self.inner.settings;
        let count = self.pool().endpoints.len().max(1);
        let share = settings.dial_timeout / count as u32;
        share.max(Duration::from_millis(200).min(settings.dial_timeout))
    }

    /// `future`, bounded by one attempt's time ([`Self::attempt_timeout`]).
    /// Boxed: what the caller holds across the wait is then a pointer, not
    /// the request's large future (nor the client it may own), which would
    /// otherwise be in every future that waits on etcd.
    pub fn within_attempt<F: Future>(&self, future: F) -> tokio::time::Timeout<Pin<Box<F>>> {
        tokio::time::timeout(self.attempt_timeout(), Box::pin(future))
    }

    /// A client for the current endpoint. Connecting is lazy (no I/O here)
    /// unless authentication is on, when it fetches a token first.
    pub async fn current(&self) -> Result<Endpoint> {
        Ok(self.current_or_new().await?.0)
    }

    /// [`Self::current`], and whether its client was made just now (and
    /// so read the TLS files just now).
    async fn current_or_new(&self) -> Result<(Endpoint, bool)> {
        let (index, url) = {
            let pool = self.pool();
            let index = Slot {
                index: pool.current,
                generation: pool.generation,
            };
            // A client is large (kilobytes): no local holds one across the
            // wait below, or every request's future would be that much
            // larger.
            if let Some(client) = pool.clients[pool.current].clone() {
                return Ok((Endpoint { client, index }, false));
            }
            (index, pool.endpoints[pool.current].clone())
        };
        // Boxed: making a client is rare (once per endpoint, and after a
        // failure) and its future large; held inline, it would be in every
        // request's future, and in every future that holds one of those.
        // (A statement of its own: a temporary lives to the end of the
        // statement, across the wait, unboxed.)
        let dialling = Box::pin(self.dial(index, url));
        Ok((dialling.await?, true))
    }

    /// A new client for the endpoint `url` in `index`, kept for the next
    /// requests.
    async fn dial(&self, index: Slot, url: String) -> Result<Endpoint> {
        let settings = &self.inner.settings;
        let channel = etcd_client::Channel::Tonic(settings.channel(&url)?);
        let connect = Client::from_channel(channel, Some(settings.client_options()));
        let client = match tokio::time::timeout(self.attempt_timeout(), connect).await {
            Ok(Ok(client)) => client,
            // Authentication refused: every endpoint would say the same.
            Ok(Err(err)) if !is_transient(&err) => {
                let err = anyhow!(Refused(describe(&err)));
                return Err(err.context(format!("cannot authenticate to {url}")));
            }
            Ok(Err(err)) => {
                self.failed(index);
                let failed = Failed {
                    symptom: Symptom::of(&err),
                    message: describe(&err),
                };
                return Err(anyhow!(failed).context(format!("cannot connect to {url}")));
            }
            Err(_) => {
                self.failed(index);
                return Err(anyhow!("cannot connect to {url}: timed out"));
            }
        };
        let mut pool = self.pool();
        if pool.generation == index.generation {
            pool.clients[index.index] = Some(client.clone());
        }
        drop(pool);
        Ok(Endpoint { client, index })
    }

    /// Reports that the endpoint at `index` failed. Moves to the next one,
    /// unless someone else already moved on from it.
    /// Its client is dropped too: the next use dials again and, with
    /// authentication on, gets a fresh token (an etcd that restarted has
    /// forgotten the old one, and a watch opened with it is refused).
    pub fn failed(&self, index: Slot) {
        let mut pool = self.pool();
        if pool.generation != index.generation {
            return;
        }
        pool.clients[index.index] = None;
        let count = pool.endpoints.len();
        let next = (index.index + 1) % count;
        if pool.current == index.index {
            pool.current = next;
            if count > 1 {
                tracing::info!(
                    from = %pool.endpoints[index.index],
                    to = %pool.endpoints[next],
                    "moving to another etcd endpoint"
                );
            }
        }
        drop(pool);
        // The last endpoint of the round failed (every failure comes here:
        // `call`'s, the lease keeper's, the watches'): where the endpoints
        // were discovered, look again, beside the caller.
        if next == 0 && self.inner.settings.discovery.is_some() {
            let connection = self.clone();
            tokio::spawn(async move {
                connection.rediscover().await;
            });
        }
    }

    /// After every endpoint failed, with `--discovery-srv`: the endpoints
    /// looked up again, and put in use if they differ (a new generation,
    /// every client dialled anew). One look-up at a time; its failure
    /// keeps the endpoints as they were.
    async fn rediscover(&self) {
        let Some(discovery) = &self.inner.settings.discovery else {
            return;
        };
        if self.inner.rediscovering.swap(true, Ordering::AcqRel) {
            return;
        }
        // Not more than once a second, however often endpoints fail.
        {
            let mut last = self.inner.last_lookup.lock().expect("not poisoned");
            let now = <crate::clock::Instant as crate::clock::Now>::now();
            if last.is_some_and(|last| now.saturating_since(last) < Duration::from_secs(1)) {
                self.inner.rediscovering.store(false, Ordering::Release);
                return;
            }
            *last = Some(now);
        }
        let found = discovery::endpoints(discovery, self.inner.settings.dial_timeout).await;
        self.inner.rediscovering.store(false, Ordering::Release);
        let found = match found {
            Ok(found) => found,
            Err(err) => {
                tracing::info!("{err:#}; keeping the endpoints found before");
                return;
            }
        };
        let mut pool = self.pool();
        if *pool.endpoints == *found {
            return;
        }
        tracing::info!(
            from = %pool.endpoints.join(","),
            to = %found.join(","),
            "DNS SRV discovery found other etcd endpoints"
        );
        *pool = Pool::new(&found, pool.generation + 1);
    }

    /// Runs one request, trying each endpoint once at most, each attempt
    /// bounded by [`Self::attempt_timeout`]. Errors that another endpoint
    /// would answer the same way (a lease not found, a denied permission)
    /// are returned at once.
    pub async fn call<T, F, Fut>(&self, what: &str, mut request: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let mut tries = Tries::new(self.pool().endpoints.len());
        while tries.attempt < tries.attempts {
            tries.attempt += 1;
            let (Endpoint { client, index }, new) = match self.current_or_new().await {
                Ok(endpoint) => endpoint,
                Err(err) if error::find::<Refused>(&err).is_some() => return Err(err),
                Err(err) => {
                    tries.not_dialled(err);
                    continue;
                }
            };
            let url = &self.url(index);
            match self.within_attempt(request(client)).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(err)) if is_stale_token(&err) && !tries.reauthenticated => {
                    // Our credentials are good; the token they got is not
                    // (a JWT from before the last change to etcd's users or
                    // roles). etcd-client renews only an expired token, so
                    // authenticate again, as etcd's own client does, and
                    // ask the same endpoint once more.
                    tries.reauthenticated = true;
                    // Boxed, as dialling is: rare, and not to be in every
                    // request's future.
                    match Box::pin(self.reauthenticate(index)).await {
                        Ok(()) => {
                            tries.attempts += 1;
                            continue;
                        }
                        Err(err) if error::find::<Refused>(&err).is_some() => {
                            return Err(err.context(format!("etcd at {url} refused {what}")));
                        }
                        Err(err) => {
                            tracing::debug!(%url, "{what}: {err:#}");
                            tries.symptom = Symptom::Other;
                            tries.last_error = Some(err);
                        }
                    }
                }
                Ok(Err(err)) if !is_transient(&err) => return Err(self.refusal(what, url, &err)),
                Ok(Err(err)) => {
                    tracing::debug!(%url, error = %err, "{what} failed");
                    tries.symptom = Symptom::of(&err);
                    tries.last_error = Some(anyhow!("{}", describe(&err)));
                }
                Err(_) => {
                    tracing::debug!(%url, "{what} timed out");
                    tries.symptom = Symptom::Other;
                    tries.last_error = Some(anyhow!(
                        "no answer from {url} within {}",
                        humantime::format_duration(self.attempt_timeout())
                    ));
                }
            }
            tries.failed(new);
            // At the last endpoint of the round, this also looks the
            // endpoints up again where they were discovered: the next
            // request (the caller's retry) goes to the ones found.
            self.failed(index);
        }
        Err(self.verdict(what, tries))
    }

    /// The error for an answer that said no: another endpoint would say
    /// the same (a full database, a request too large). A denied
    /// permission is our configuration's fault, like refused credentials
    /// (authentication switched on, or our password changed, under a
    /// running replica): no wait will change it.
    fn refusal(&self, what: &str, url: &str, err: &etcd_client::Error) -> anyhow::Error {
        let message = format!("{}{}", describe(err), self.hint(Symptom::of(err)));
        let err = if is_permission_denied(err) || is_credentials_refused(err) {
            anyhow!(Refused(message))
        } else if is_too_large(err) {
            // Not etcd's refusal: our own limit on its answer.
            // The same on every endpoint, at every retry.
            return anyhow!(Refused(format!(
                "etcd's answer to {what} is larger than leaderrun reads in one message ({} MiB): keep the job's large values out of the election's prefix ({})",
                MESSAGE_LIMIT / (1024 * 1024),
                describe(err)
            )));
        } else if is_no_space(err) {
            anyhow!(NoSpace(message))
        } else {
            anyhow!(Answered(message))
        };
        err.context(format!("etcd at {url} refused {what}"))
    }

    /// The error once every attempt of a call failed.
    fn verdict(&self, what: &str, tries: Tries) -> anyhow::Error {
        let last_error = tries.last_error.unwrap_or_else(|| anyhow!("no endpoint"));
        let endpoints = self.endpoints().join(",");
        let hint = self.hint(tries.symptom);
        if tries.only_certificates_failed && tries.new_client_failed {
            // Every endpoint refused our client certificate, or showed one
            // we do not trust, with the TLS files read again: no wait
            // changes that, until someone renews the files. A replica that
            // waited on would never take over, and never exit for its
            // supervisor to restart it.
            return anyhow!(Refused(format!(
                "TLS handshake with etcd at {endpoints} failed ({what}): {last_error:#}{hint}"
            )));
        }
        anyhow!(Unreachable(format!(
            "etcd unreachable at {endpoints} ({what}): {last_error:#}{hint}"
        )))
    }

    /// Authenticates the client of the endpoint at `index` again: every
    /// clone of it (the keeper's, the watches') sends the new token from
    /// then on. Refused if etcd turns the credentials down.
    async fn reauthenticate(&self, index: Slot) -> Result<()> {
        let client = {
            let pool = self.pool();
            (pool.generation == index.generation)
                .then(|| pool.clients[index.index].clone())
                .flatten()
        };
        // Dropped meanwhile (it failed): the next dial authenticates.
        let Some(client) = client else {
            return Ok(());
        };
        let refresh = async move { client.refresh_token().await };
        match self.within_attempt(refresh).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) if !is_transient(&err) => Err(anyhow!(Refused(describe(&err)))),
            Ok(Err(err)) => Err(anyhow!("authenticating again: {}", describe(&err))),
            Err(_) => Err(anyhow!(
                "authenticating again: no answer within {}",
                humantime::format_duration(self.attempt_timeout())
            )),
        }
    }

    /// What to check, for errors whose cause is in leaderrun's own options.
    fn hint(&self, symptom: Symptom) -> &'static str {
        let https = self
            .endpoints()
            .iter()
            .any(|url| url.starts_with("https://"));
        let credentials = &self.inner.settings.credentials;
        symptom.hint(
            https,
            credentials.tls_requested(),
            credentials.has_client_certificate(),
        )
    }
}

/// What the attempts of one call have learnt so far.
struct Tries {
    /// One attempt per endpoint, and one more on the same endpoint after
    /// authenticating again, once per call.
    attempts: usize,
    attempt: usize,
    reauthenticated: bool,
    last_error: Option<anyhow::Error>,
    symptom: Symptom,
    /// Whether every attempt failed in a TLS handshake, on a certificate,
    /// and one of them with a client made in this call (see
    /// [`Connection::verdict`]).
    only_certificates_failed: bool,
    new_client_failed: bool,
    tried_anew: bool,
}

impl Tries {
    fn new(endpoints: usize) -> Self {
        Tries {
            attempts: endpoints,
            attempt: 0,
            reauthenticated: false,
            last_error: None,
            symptom: Symptom::Other,
            only_certificates_failed: true,
            new_client_failed: false,
            tried_anew: false,
        }
    }

    /// No client could be made for the current endpoint.
    fn not_dialled(&mut self, err: anyhow::Error) {
        let failed = error::find::<Failed>(&err);
        self.symptom = failed.map_or(Symptom::Other, |failed| failed.symptom);
        self.only_certificates_failed &= self.symptom.is_certificate();
        self.new_client_failed = true;
        self.last_error = Some(err);
    }

    /// An attempt failed, with a client made in this call if `new`.
    fn failed(&mut self, new: bool) {
        self.only_certificates_failed &= self.symptom.is_certificate();
        self.new_client_failed |= new;
        if self.symptom.is_certificate() && !self.new_client_failed && !self.tried_anew {
            // A client made before may hold TLS files renewed since:
            // one more attempt, with a new client (which reads them
            // again), before the verdict.
            self.tried_anew = true;
            self.attempts += 1;
        }
    }
}

/// A connection that failed, with what its error says about our options.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Failed {
    symptom: Symptom,
    message: String,
}

/// etcd answered, and said no (bad credentials, a denied permission), or
/// every endpoint failed the TLS handshake on a certificate: not worth
/// another endpoint, nor a retry.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(String);

impl Refused {
    pub fn new(message: impl Into<String>) -> Self {
        Refused(message.into())
    }
}

/// etcd answered no, in a way another endpoint would repeat but a later
/// attempt may not (a lease not found, a key's revision compacted).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Answered(String);

/// No endpoint answered the request within its bounds.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(String);

/// Every way a request to etcd fails, each a type the connection raises:
/// what a caller routes, matching every kind, so that a new kind of
/// failure stops the compiler where it is routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Credentials, a permission or a certificate refused ([`Refused`]);
    /// an answer too large to read: the same at every endpoint and every
    /// retry.
    Refused,
    /// etcd's database is full ([`NoSpace`]).
    Full,
    /// etcd said no, as a later attempt may not ([`Answered`]).
    Answered,
    /// No endpoint answered ([`Unreachable`]).
    Unreachable,
}

impl Failure {
    /// The failure of a request to etcd behind `err`, if it is one.
    pub fn of(err: &anyhow::Error) -> Option<Failure> {
        err.chain().find_map(|cause| {
            if cause.is::<Refused>() {
                Some(Failure::Refused)
            } else if cause.is::<NoSpace>() {
                Some(Failure::Full)
            } else if cause.is::<Answered>() {
                Some(Failure::Answered)
            } else if cause.is::<Unreachable>() {
                Some(Failure::Unreachable)
            } else {
                None
            }
        })
    }
}

/// Whether another attempt (on another endpoint, or later) could succeed.
pub fn is_transient(err: &etcd_client::Error) -> bool {
    use etcd_client::Error;
    use tonic::Code;
    match err {
        // ResourceExhausted is etcd's "database space exceeded" (a raised
        // NOSPACE alarm, cluster-wide) or a gRPC message over its limit:
        // an answer, the same from every member.
        Error::GRpcStatus(status) => matches!(
            status.code(),
            Code::Unavailable
                | Code::DeadlineExceeded
                | Code::Unknown
                | Code::Internal
                | Code::Aborted
                | Code::Cancelled
        ),
        Error::TransportError(_) | Error::IoError(_) | Error::WatchError(_) => true,
        _ => false,
    }
}

/// etcd's database is full (its NOSPACE alarm is raised): it refuses every
/// write and every lease grant until an operator frees space, compacts,
/// defragments and disarms the alarm. Told by etcd's message
/// (`ErrGRPCNoSpace`, its API): its code, ResourceExhausted, also means a
/// message over the size limit.
fn is_no_space(err: &etcd_client::Error) -> bool {
    matches!(err, etcd_client::Error::GRpcStatus(status)
        if status.code() == tonic::Code::ResourceExhausted
            && status.message().contains("database space exceeded"))
}

/// A refusal of a full etcd ([`is_no_space`]): only an operator ends it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoSpace(String);

/// An answer larger than the client's limit on a message: tonic's own
/// decoding error, not etcd's (its status is OutOfRange, its text fixed).
fn is_too_large(err: &etcd_client::Error) -> bool {
    matches!(err, etcd_client::Error::GRpcStatus(status)
        if status.code() == tonic::Code::OutOfRange
            && status.message().contains("message length too large"))
}

/// etcd's `ErrAuthFailed`: the user or the password is wrong.
const AUTH_FAILED: &str = "etcdserver: authentication failed, invalid user ID or password";

/// etcd refused our credentials: none given to an etcd that wants them
/// (authentication switched on under a replica started without `--user`),
/// or a password it no longer takes (changed under a running replica: the
/// client authenticates again when its token is refused, and that fails).
/// At dialling, the same refusal comes from the first authentication.
fn is_credentials_refused(err: &etcd_client::Error) -> bool {
    matches!(err, etcd_client::Error::GRpcStatus(status)
        if status.code() == tonic::Code::InvalidArgument
            && [USER_EMPTY, AUTH_FAILED].contains(&status.message()))
}

/// etcd's `ErrAuthOldRevision`: a JWT token carries the revision of
/// etcd's auth store when it was issued, and any change to users, roles or
/// passwords since (even one that is nothing to us) makes etcd refuse it.
const AUTH_OLD_REVISION: &str = "etcdserver: revision of auth store is old";

/// Our token is stale ([`AUTH_OLD_REVISION`]): authenticating again cures
/// it.
fn is_stale_token(err: &etcd_client::Error) -> bool {
    matches!(err, etcd_client::Error::GRpcStatus(status)
        if status.code() == tonic::Code::InvalidArgument
            && status.message() == AUTH_OLD_REVISION)
}

/// etcd refused a request for want of a permission.
fn is_permission_denied(err: &etcd_client::Error) -> bool {
    matches!(err, etcd_client::Error::GRpcStatus(status) if status.code() == tonic::Code::PermissionDenied)
}

/// The lease is gone on the server: not something to retry.
pub fn is_lease_not_found(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::GRpcStatus(status) => status.code() == tonic::Code::NotFound,
        // etcd-client reports a lease that is gone when the stream opens as
        // this variant, with only a message ("lease not found", or the
        // status it turned into text): no type is left to read.
        etcd_client::Error::LeaseKeepAliveError(message) => message.contains("not found"),
        _ => false,
    }
}

/// One line for an etcd-client error. Transport errors repeat themselves
/// down their source chain ("transport error: tcp connect error: tcp connect
/// error: Connection refused"): keep each part once, drop the noise.
pub fn describe(err: &etcd_client::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut push = |text: String| {
        for part in text.split(": ") {
            let part = part.trim();
            let noise =
                part.is_empty() || part == "transport error" || part == "grpc request error";
            if !noise && !parts.iter().any(|seen| seen == part) {
                parts.push(part.to_string());
            }
        }
    };
    // etcd-client's own error has no source(): walk the inner error's chain.
    let mut source: Option<&dyn std::error::Error> = match err {
        etcd_client::Error::GRpcStatus(status) => {
            push(status.message().to_string());
            if status.message().is_empty() {
                push(format!("{:?}", status.code()));
            }
            std::error::Error::source(status)
        }
        etcd_client::Error::TransportError(inner) => {
            push(inner.to_string());
            std::error::Error::source(inner)
        }
        etcd_client::Error::IoError(inner) => {
            push(inner.to_string());
            None
        }
        other => {
            push(other.to_string());
            None
        }
    };
    while let Some(cause) = source {
        push(cause.to_string());
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of failure the connection raises is found under its
    /// contexts; anything else is none of them.
    #[test]
    fn every_failure_is_told_by_its_kind() {
        let cases = [
            (anyhow!(Refused::new("denied")), Failure::Refused),
            (anyhow!(NoSpace("full".into())), Failure::Full),
            (
                anyhow!(Answered("lease not found".into())),
                Failure::Answered,
            ),
            (
                anyhow!(Unreachable("no answer".into())),
                Failure::Unreachable,
            ),
        ];
        for (err, kind) in cases {
            let err = Err::<(), _>(err).context("campaigning").unwrap_err();
            assert_eq!(Failure::of(&err), Some(kind), "{err:#}");
        }
        assert_eq!(Failure::of(&anyhow!("a bound of our own ran out")), None);
    }
}
