//! `leaderrun check`: a preflight, for provisioning scripts and CI. Dials
//! every endpoint on its own and says what each is (reached, TLS
//! verified, authenticated, etcd's version, its raft leader), proves every
//! permission a run of the election needs with requests that change
//! nothing, and prints the settings a run would use with where each came
//! from. Exits 0 when a run would work; 125 with a line on stderr per
//! problem otherwise.
//!
//! A permission is proven by a transaction whose comparison never holds
//! (a key's create revision below 0): etcd checks the permission of every
//! operation in both of a transaction's branches before it looks at the
//! comparison, so a denied one is refused, and otherwise only the reads of
//! the failure branch run. Nothing is written.

use std::time::Duration;

use anyhow::Result;
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp};

use crate::election::name::{self, Beside};
use crate::etcd::connection::Failure;
use crate::etcd::ids::LeaseId;
use crate::etcd::{self, Connection};
use crate::exit::Exit;
use crate::logging::{self, printable, Level};

/// How often the connections ping etcd: a check is a few requests.
const PING: Duration = Duration::from_secs(5);

/// A setting a run would use, and where it came from.
pub struct Setting {
    pub name: &'static str,
    pub value: String,
    /// "--endpoints", "ETCDCTL_ENDPOINTS", "default", ...
    pub source: String,
}

/// With -v, a run's settings in one line, each with where it came from
/// (the password only as set or none): what `check` prints too.
pub fn log_settings(settings: &[Setting]) {
    let shown: Vec<String> = settings
        .iter()
        .map(|setting| {
            format!(
                "{} {} ({})",
                setting.name,
                printable(&setting.value),
                setting.source
            )
        })
        .collect();
    tracing::info!("settings: {}", shown.join(", "));
}

/// What `check` was asked for.
pub struct Options {
    pub election: String,
    /// `--once-per` given: the window's marker is needed too.
    pub once_per: bool,
    pub etcd: etcd::Options,
    pub settings: Vec<Setting>,
}

/// One grant a run needs, and how it is proven.
struct Grant {
    /// What it covers, as the docs name it.
    what: String,
    /// What a run does with it.
    needed_for: &'static str,
    /// The operations whose permissions prove it: writes in the branch
    /// never taken, reads in the one taken.
    writes: Vec<TxnOp>,
    reads: Vec<TxnOp>,
    /// The key the never-holding comparison names (read is checked on it).
    compared: Vec<u8>,
    /// A missing grant is a problem (the run fails), not a warning.
    required: bool,
}

/// The writes and the reads that prove readwrite on `keys`.
fn readwrite(keys: &[String]) -> (Vec<TxnOp>, Vec<TxnOp>) {
    let writes = keys
        .iter()
        .map(|key| TxnOp::put(key.as_str(), "", None))
        .collect();
    let reads = keys
        .iter()
        .map(|key| TxnOp::get(key.as_str(), None))
        .collect();
    (writes, reads)
}

/// Readwrite on the candidates' prefix: every run's key.
fn candidates(election: &str) -> Grant {
    let prefix = name::prefix(election);
    // Two keys a candidate's could be (no lease has id 0 or 1): one
    // branch may not name a key twice.
    let probe = name::candidate_key(election, LeaseId(0));
    let other = name::candidate_key(election, LeaseId(1));
    Grant {
        what: format!("readwrite on the prefix {prefix}"),
        needed_for: "every run: its key",
        writes: vec![
            TxnOp::put(probe.as_str(), "", None),
            TxnOp::delete(other.as_str(), Some(DeleteOptions::new())),
        ],
        reads: vec![TxnOp::get(
            prefix.as_str(),
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_keys_only()
                    .with_limit(1),
            ),
        )],
        compared: probe.into_bytes(),
        required: true,
    }
}

/// The grants a run of `election` needs.
fn grants(election: &str, once_per: bool) -> Vec<Grant> {
    let key = |which: Beside| which.key(election);
    let (record_writes, record_reads) = readwrite(&[
        key(Beside::LastStarted),
        key(Beside::LastFinished),
        key(Beside::LastSucceeded),
    ]);
    let (marker_writes, marker_reads) = readwrite(&[key(Beside::OncePer)]);
    vec![
        candidates(election),
        Grant {
            what: format!("read on {}", key(Beside::Paused)),
            needed_for: "every run: its first write compares the pause",
            writes: Vec::new(),
            reads: vec![TxnOp::get(key(Beside::Paused), None)],
            compared: key(Beside::Paused).into_bytes(),
            required: true,
        },
        Grant {
            what: format!("readwrite on {}", key(Beside::OncePer)),
            needed_for: "--once-per: the window's marker",
            writes: marker_writes,
            reads: marker_reads,
            compared: key(Beside::OncePer).into_bytes(),
            required: once_per,
        },
        Grant {
            what: format!("read on {}", key(Beside::LastStarted)),
            needed_for: "--once-per: the window's claim reads the last start",
            writes: Vec::new(),
            reads: vec![TxnOp::get(key(Beside::LastStarted), None)],
            compared: key(Beside::LastStarted).into_bytes(),
            required: once_per,
        },
        Grant {
            what: format!("readwrite on {election}.last-*"),
            needed_for: "the run records; without them runs work, but leave none",
            writes: record_writes,
            reads: record_reads,
            compared: key(Beside::LastStarted).into_bytes(),
            required: false,
        },
    ]
}

/// What the check found.
#[derive(Default)]
struct Findings {
    /// Lines of the report, on stdout.
    report: Vec<String>,
    /// What keeps a run from working: a line each on stderr, and 125.
    problems: Vec<String>,
    /// What a run survives: a line each on stderr.
    warnings: Vec<String>,
}

pub async fn check(options: Options) -> Result<Exit> {
    let mut findings = Findings::default();
    findings
        .report
        .push(format!("election: {}", printable(&options.election)));
    findings.report.push("settings:".into());
    for setting in &options.settings {
        findings.report.push(format!(
            "  {:<13} {} ({})",
            setting.name,
            printable(&setting.value),
            setting.source
        ));
    }
    let credentials = etcd::credentials::Credentials::from_options(&options.etcd)?;
    let endpoints = match &options.etcd.discovery {
        Some(discovery) => {
            match etcd::discovery::endpoints(discovery, options.etcd.dial_timeout).await {
                Ok(endpoints) => endpoints,
                Err(err) => {
                    findings.problems.push(format!("{err:#}"));
                    return say(findings);
                }
            }
        }
        None => etcd::endpoints::resolve(
            options.etcd.endpoints.as_deref(),
            credentials.tls_requested() || options.etcd.tls_transport,
        )?,
    };
    let clusters = dial_each(&options, &credentials, &endpoints, &mut findings).await;
    if let Some((first, at)) = clusters.first() {
        if let Some((other, there)) = clusters.iter().find(|(cluster, _)| cluster != first) {
            findings.problems.push(format!(
                "the endpoints belong to different etcd clusters: {at} to {first:x}, {there} to {other:x}; replicas that fail over between them could each lead"
            ));
        }
    }
    if clusters.is_empty() {
        findings
            .problems
            .push(format!("no endpoint of {} could be used", endpoints.len()));
    } else {
        let connection = etcd::connect(&options.etcd, PING).await?;
        prove_grants(&connection, &options, &mut findings).await;
        stuck(&connection, &options, &mut findings).await;
    }
    say(findings)
}

/// Each endpoint dialled on its own, a line each in the report: the
/// cluster each one that answered belongs to, with its URL.
async fn dial_each<'a>(
    options: &Options,
    credentials: &etcd::credentials::Credentials,
    endpoints: &'a [String],
    findings: &mut Findings,
) -> Vec<(u64, &'a str)> {
    findings.report.push("endpoints:".into());
    let mut clusters = Vec::new();
    for endpoint in endpoints {
        let one = etcd::Options {
            endpoints: Some(endpoint.clone()),
            discovery: None,
            ..options.etcd.clone()
        };
        match dial(&one, endpoint, credentials).await {
            Ok((line, cluster)) => {
                clusters.push((cluster, endpoint.as_str()));
                findings.report.push(format!("  {endpoint}: {line}"));
            }
            Err(err) => {
                let line = format!("{endpoint}: {err:#}");
                match Failure::of(&err) {
                    // Every endpoint would say the same: a run fails.
                    Some(Failure::Refused) => {
                        findings.report.push(format!("  {endpoint}: refused"));
                        findings.problems.push(line);
                    }
                    _ => {
                        findings.report.push(format!("  {endpoint}: not usable"));
                        findings.warnings.push(line);
                    }
                }
            }
        }
    }
    clusters
}

/// One endpoint dialled alone: what it is, in a line, and the id of the
/// cluster it belongs to.
async fn dial(
    one: &etcd::Options,
    endpoint: &str,
    credentials: &etcd::credentials::Credentials,
) -> Result<(String, u64)> {
    let connection = etcd::connect(one, PING).await?;
    let status = connection
        .call("reading the member's status", |mut client| async move {
            client.status().await
        })
        .await?;
    let members = connection
        .call("listing the members", |mut client| async move {
            client.member_list().await
        })
        .await?;
    let leader = members
        .members()
        .iter()
        .find(|member| member.id() == status.leader())
        .map_or_else(
            || format!("member {:x}", status.leader()),
            |member| format!("{} ({:x})", printable(member.name()), member.id()),
        );
    // What the connection is, by its URL: the TLS options do nothing for
    // an http:// endpoint.
    let https = endpoint.starts_with("https://");
    let tls = match (https, one.insecure_skip_tls_verify) {
        (false, _) if credentials.tls_requested() => {
            "no TLS (http://: the TLS options are not used)"
        }
        (false, _) => "no TLS",
        (true, true) => "TLS, server certificate not verified (--insecure-skip-tls-verify)",
        (true, false) if one.cacert.is_some() => "TLS verified against --cacert",
        (true, false) => "TLS verified against the system's CAs",
    };
    let cluster = status.header().map_or(0, |header| header.cluster_id());
    let user = match credentials.user() {
        Some((user, _)) => format!("authenticated as {}", printable(user)),
        None => "no user".into(),
    };
    let line = format!(
        "reached; etcd {}; cluster {cluster:x}; raft leader {leader}; {tls}; {user}",
        printable(status.version())
    );
    Ok((line, cluster))
}

/// A problem for what keeps every run out for ever, though the grants
/// hold: a key with no lease at the head of the line, or (with
/// --once-per) a window's marker with no lease. Unread (no grant), it is
/// the grants' problem, said there.
async fn stuck(connection: &Connection, options: &Options, findings: &mut Findings) {
    let election = &options.election;
    if let Ok(snapshot) = crate::election::read_leader(connection, election).await {
        if let Some(leader) = snapshot.leader.filter(crate::election::Leader::stale) {
            findings.problems.push(format!(
                "{} is stuck: {}",
                printable(election),
                leader.describe()
            ));
        }
    }
    if !options.once_per {
        return;
    }
    if let Ok(Some(marker)) = crate::election::once_per::read(connection, election).await {
        if marker.lease == LeaseId::NONE {
            findings.problems.push(format!(
                "{} is stuck: its --once-per marker has no lease, so no run starts until it is removed ({})",
                printable(election),
                crate::election::holder::etcdctl_del(&crate::election::once_per::marker_key(election))
            ));
        }
    }
}

/// Proves each grant: a line each in the report, a problem or a warning
/// for each one missing.
async fn prove_grants(connection: &Connection, options: &Options, findings: &mut Findings) {
    findings.report.push("permissions:".into());
    for grant in grants(&options.election, options.once_per) {
        let txn = Txn::new()
            .when([Compare::create_revision(
                grant.compared.clone(),
                CompareOp::Less,
                0,
            )])
            .and_then(grant.writes)
            .or_else(grant.reads);
        let proven = connection.txn("proving a permission", txn).await;
        let said = match &proven {
            Ok(response) if !response.succeeded() => "granted".to_string(),
            // A comparison that held: nothing that etcd keeps can.
            Ok(_) => "granted (but the comparison held: report this)".to_string(),
            Err(err) => format!("not proven: {err:#}"),
        };
        findings.report.push(format!(
            "  {}: {said} ({})",
            printable(&grant.what),
            grant.needed_for
        ));
        if let Err(err) = proven {
            let line = format!(
                "{} is not granted ({}): {err:#}",
                printable(&grant.what),
                grant.needed_for
            );
            match grant.required || Failure::of(&err) != Some(Failure::Refused) {
                true => findings.problems.push(line),
                false => findings.warnings.push(line),
            }
        }
    }
}

/// The report on stdout, the problems and warnings on stderr; the exit.
/// A stdout that cannot be written is an error (a reader gone is not).
fn say(findings: Findings) -> Result<Exit> {
    let report = findings.report.join("\n") + "\n";
    crate::status::write_out(report.as_bytes())?;
    for warning in &findings.warnings {
        logging::say(Level::Warn, &format!("warning: {warning}"));
    }
    for problem in &findings.problems {
        logging::say(Level::Error, &format!("error: {problem}"));
    }
    Ok(match findings.problems.is_empty() {
        true => Exit::Success,
        false => Exit::Internal,
    })
}
