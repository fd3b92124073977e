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
    let endpoints = etcd::endpoints::resolve(
        options.etcd.endpoints.as_deref(),
        credentials.tls_requested(),
    )?;
    findings.report.push("endpoints:".into());
    let mut reached = 0;
    for endpoint in &endpoints {
        let one = etcd::Options {
            endpoints: Some(endpoint.clone()),
            ..options.etcd.clone()
        };
        match dial(&one, &credentials).await {
            Ok(line) => {
                reached += 1;
                findings.report.push(format!("  {endpoint}: {line}"));
            }
            Err(err) => {
                findings.report.push(format!("  {endpoint}: not reached"));
                let line = format!("{endpoint}: {err:#}");
                match Failure::of(&err) {
                    // Every endpoint would say the same: a run fails.
                    Some(Failure::Refused) => findings.problems.push(line),
                    _ => findings.warnings.push(line),
                }
            }
        }
    }
    if reached == 0 {
        findings
            .problems
            .push(format!("no endpoint of {} was reached", endpoints.len()));
    } else {
        let connection = etcd::connect(&options.etcd, PING)?;
        prove_grants(&connection, &options, &mut findings).await;
    }
    Ok(say(findings))
}

/// One endpoint dialled alone: what it is, in a line.
async fn dial(one: &etcd::Options, credentials: &etcd::credentials::Credentials) -> Result<String> {
    let connection = etcd::connect(one, PING)?;
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
    let tls = match (credentials.tls_requested(), one.insecure_skip_tls_verify) {
        (_, true) => "TLS, server certificate not verified (--insecure-skip-tls-verify)",
        (true, false) if one.cacert.is_some() => "TLS verified against --cacert",
        (true, false) => "TLS verified against the system's CAs",
        (false, false) => "no TLS",
    };
    let user = match credentials.user() {
        Some((user, _)) => format!("authenticated as {}", printable(user)),
        None => "no user".into(),
    };
    Ok(format!(
        "reached; etcd {}; raft leader {leader}; {tls}; {user}",
        printable(status.version())
    ))
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
fn say(findings: Findings) -> Exit {
    let report = findings.report.join("\n") + "\n";
    let _ = crate::status::write_out(report.as_bytes());
    for warning in &findings.warnings {
        logging::say(Level::Warn, &format!("warning: {warning}"));
    }
    for problem in &findings.problems {
        logging::say(Level::Error, &format!("error: {problem}"));
    }
    match findings.problems.is_empty() {
        true => Exit::Success,
        false => Exit::Internal,
    }
}
