//! DNS SRV discovery, as etcdctl does it (`--discovery-srv DOMAIN`): the
//! endpoints are the targets of `_etcd-client-ssl._tcp.DOMAIN` (https),
//! then of `_etcd-client._tcp.DOMAIN` (http), each with `-NAME` after
//! `client-ssl` or `client` when `--discovery-srv-name NAME` is given.
//!
//! Like etcdctl: both records are looked up and their endpoints joined,
//! the https ones first; within each, by priority and then by weight, the
//! heaviest first (etcdctl draws by weight; leaderrun keeps one order, so
//! that its replicas try the members alike). A target is kept as the host
//! name it is, dialled by name. With `--insecure-discovery=false` the http
//! endpoints are dropped and each server's certificate must name the
//! domain. Unlike etcdctl, a discovery that finds no endpoint is an error,
//! never a fall back to `--endpoints` or 127.0.0.1:2379: the site asked for
//! discovery, and a replica that dials another etcd splits the election.
//!
//! The resolver is hickory's, configured from `/etc/resolv.conf` (as
//! etcdctl's Go resolver is), and made anew at each discovery: its answers
//! are not cached past one, so that records changed in DNS are seen when
//! the connection looks again (`Connection`, after every endpoint failed).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use hickory_resolver::proto::rr::RData;
use hickory_resolver::TokioResolver;

/// What to discover: a domain, an optional service name, and whether
/// http endpoints are taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    pub domain: String,
    /// `--discovery-srv-name`: `_etcd-client-ssl-NAME._tcp.DOMAIN`.
    pub service_name: Option<String>,
    /// `--insecure-discovery` (etcdctl's default, true): http endpoints are
    /// taken, and certificates are checked against each endpoint's own host.
    pub insecure: bool,
}

impl Discovery {
    /// The two record names, with the scheme each gives.
    pub fn records(&self) -> [(String, &'static str); 2] {
        let name = self
            .service_name
            .as_deref()
            .map(|name| format!("-{name}"))
            .unwrap_or_default();
        let domain = self.domain.trim_end_matches('.');
        [
            (format!("_etcd-client-ssl{name}._tcp.{domain}"), "https"),
            (format!("_etcd-client{name}._tcp.{domain}"), "http"),
        ]
    }

    /// The TLS server name each endpoint's certificate must show, when it
    /// is not the endpoint's own host: the domain, without
    /// `--insecure-discovery`, as etcdctl checks it.
    pub fn server_name(&self) -> Option<&str> {
        (!self.insecure).then(|| self.domain.trim_end_matches('.'))
    }
}

/// One SRV record's endpoint, with its order.
struct Found {
    priority: u16,
    weight: u16,
    url: String,
}

/// The endpoints of `discovery`, each lookup bounded by `limit`; an error
/// naming both records when neither gives one.
pub async fn endpoints(discovery: &Discovery, limit: Duration) -> Result<Vec<String>> {
    let resolver = resolver()?;
    let [(secure, https), (plain, http)] = discovery.records();
    // Both at once: a DNS server that never answers costs one bound, not two.
    let (secure_answer, plain_answer) = tokio::join!(
        lookup(&resolver, &secure, limit),
        lookup(&resolver, &plain, limit)
    );
    let mut endpoints = Vec::new();
    let mut failures = Vec::new();
    for (record, scheme, answer) in [(secure, https, secure_answer), (plain, http, plain_answer)] {
        let found = match answer {
            Ok(answer) => ordered(&answer, scheme),
            Err(failure) => {
                failures.push(format!("{record}: {failure}"));
                continue;
            }
        };
        if scheme == "http" && !discovery.insecure && !found.is_empty() {
            for dropped in &found {
                tracing::info!(
                    "ignoring discovered insecure endpoint {dropped} (--insecure-discovery=false)"
                );
            }
            failures.push(format!(
                "{record}: only http endpoints, and --insecure-discovery=false"
            ));
            continue;
        }
        if found.is_empty() {
            failures.push(format!("{record}: no usable targets"));
        }
        endpoints.extend(found);
    }
    if endpoints.is_empty() {
        bail!(
            "DNS SRV discovery of {} found no etcd endpoint ({}); leaderrun does not fall back to --endpoints",
            discovery.domain,
            failures.join("; ")
        );
    }
    endpoints.dedup();
    Ok(endpoints)
}

/// One SRV look-up, bounded by `limit`: its answer, or why none.
async fn lookup(
    resolver: &TokioResolver,
    record: &str,
    limit: Duration,
) -> Result<hickory_resolver::lookup::Lookup, String> {
    // Fully qualified: the search list of resolv.conf is not tried.
    let fqdn = format!("{record}.");
    match tokio::time::timeout(limit, resolver.srv_lookup(fqdn.as_str())).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(err)) if err.is_no_records_found() => Err("no such record".into()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!(
            "no answer within {}",
            humantime::format_duration(limit)
        )),
    }
}

/// The endpoints an SRV answer names, as URLs of `scheme`: by priority,
/// then the heaviest first. A target of "." (the service is not offered
/// there) or port 0 names no endpoint.
fn ordered(answer: &hickory_resolver::lookup::Lookup, scheme: &str) -> Vec<String> {
    let mut found: Vec<Found> = answer
        .answers()
        .iter()
        .filter_map(|record| match &record.data {
            RData::SRV(srv) if srv.port != 0 && !srv.target.is_root() => Some(Found {
                priority: srv.priority,
                weight: srv.weight,
                url: url(scheme, &srv.target.to_string(), srv.port),
            }),
            _ => None,
        })
        .collect();
    found.sort_by_key(|found| (found.priority, std::cmp::Reverse(found.weight)));
    found.into_iter().map(|found| found.url).collect()
}

/// `scheme://target:port`, the target without its final dot.
fn url(scheme: &str, target: &str, port: u16) -> String {
    let host = target.trim_end_matches('.');
    match host.contains(':') {
        true => format!("{scheme}://[{host}]:{port}"),
        false => format!("{scheme}://{host}:{port}"),
    }
}

/// A resolver as `/etc/resolv.conf` configures it. Debug builds only (the
/// suite's): `LEADERRUN_TEST_NAMESERVER=IP:PORT` asks that server
/// instead, so that a test's DNS server need not take port 53 or the
/// machine's resolv.conf.
fn resolver() -> Result<TokioResolver> {
    #[cfg(debug_assertions)]
    if let Some(server) = std::env::var_os("LEADERRUN_TEST_NAMESERVER") {
        use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
        let server: std::net::SocketAddr = server
            .to_str()
            .and_then(|text| text.parse().ok())
            .context("LEADERRUN_TEST_NAMESERVER: not IP:PORT")?;
        let mut name_server = NameServerConfig::udp_and_tcp(server.ip());
        name_server.connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
            .into_iter()
            .map(|mut connection| {
                connection.port = server.port();
                connection
            })
            .collect();
        let config = ResolverConfig::from_name_servers(vec![name_server]);
        let provider = hickory_resolver::net::runtime::TokioRuntimeProvider::default();
        return Ok(TokioResolver::builder_with_config(config, provider).build()?);
    }
    let builder = TokioResolver::builder_tokio()
        .context("reading the DNS configuration (/etc/resolv.conf) for --discovery-srv")?;
    Ok(builder.build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_are_etcds() {
        let plain = Discovery {
            domain: "example.com.".into(),
            service_name: None,
            insecure: true,
        };
        assert_eq!(
            plain.records(),
            [
                ("_etcd-client-ssl._tcp.example.com".to_string(), "https"),
                ("_etcd-client._tcp.example.com".to_string(), "http"),
            ]
        );
        assert_eq!(plain.server_name(), None);
        let named = Discovery {
            service_name: Some("prod".into()),
            insecure: false,
            ..plain
        };
        assert_eq!(
            named.records()[0].0,
            "_etcd-client-ssl-prod._tcp.example.com"
        );
        assert_eq!(named.records()[1].0, "_etcd-client-prod._tcp.example.com");
        assert_eq!(named.server_name(), Some("example.com"));
    }

    #[test]
    fn a_target_becomes_a_url_without_its_final_dot() {
        assert_eq!(
            url("https", "etcd-1.example.com.", 2379),
            "https://etcd-1.example.com:2379"
        );
        assert_eq!(url("http", "::1", 2379), "http://[::1]:2379");
    }
}
