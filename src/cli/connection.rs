//! A connection's values, each from the first of its option, its
//! variable, the settings file and the default ([`settings`]), with where
//! each came from: what `check` and -v show. etcdctl's variables are
//! honoured as etcdctl reads them (its DNS SRV discovery, its timeouts, its
//! booleans), and the ones that would change how etcd is reached in ways
//! leaderrun does not are refused when set, never silently let be.

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;

use super::password;
use super::settings::{Origin, Sources};
use super::ConnectionArgs;
use crate::check::Setting;
use crate::etcd;

/// A connection's values, and where each came from.
pub struct Layered {
    pub options: etcd::Options,
    pub origins: Origins,
}

/// Whether the value of the argument `id` came from its environment
/// variable.
fn from_variable(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::EnvVariable)
}

/// A value clap read (from its option, or its variable) if it gave one,
/// else the settings file's `variable`, else None: with where it came from.
fn layered<T: Clone>(
    matches: &ArgMatches,
    sources: &Sources,
    (id, option, variable): Named,
    given: Option<&T>,
    parse: impl Fn(&str) -> Result<T>,
) -> Result<Option<(T, Origin)>> {
    match (matches.value_source(id), given) {
        (Some(ValueSource::CommandLine), Some(value)) => {
            return Ok(Some((value.clone(), Origin::Option(option))))
        }
        (Some(ValueSource::EnvVariable), Some(value)) => {
            return Ok(Some((value.clone(), Origin::Variable(variable.into()))))
        }
        _ => {}
    }
    match sources.file_value(variable) {
        Some((text, origin)) => {
            let value =
                parse(&text).map_err(|err| anyhow::anyhow!("{variable} ({origin}): {err:#}"))?;
            Ok(Some((value, origin)))
        }
        None => Ok(None),
    }
}

/// An argument: its id, its option, its variable.
type Named = (&'static str, &'static str, &'static str);

const CACERT: Named = ("cacert", "--cacert", "ETCDCTL_CACERT");
const CERT: Named = ("cert", "--cert", "ETCDCTL_CERT");
const KEY: Named = ("key", "--key", "ETCDCTL_KEY");
const USER: Named = ("user", "--user", "ETCDCTL_USER");
const SKIP_VERIFY: Named = (
    "insecure_skip_tls_verify",
    "--insecure-skip-tls-verify",
    "ETCDCTL_INSECURE_SKIP_TLS_VERIFY",
);
const DISCOVERY_SRV: Named = ("discovery_srv", "--discovery-srv", "ETCDCTL_DISCOVERY_SRV");
const DISCOVERY_NAME: Named = (
    "discovery_srv_name",
    "--discovery-srv-name",
    "ETCDCTL_DISCOVERY_SRV_NAME",
);
const INSECURE_DISCOVERY: Named = (
    "insecure_discovery",
    "--insecure-discovery",
    "ETCDCTL_INSECURE_DISCOVERY",
);

/// Where a value came from, ranked: an option (3) before a variable (2)
/// before the settings file (1).
fn rank(origin: &Origin) -> u8 {
    match origin {
        Origin::Option(_) => 3,
        Origin::Variable(_) => 2,
        Origin::File { .. } | Origin::Credential(_) => 1,
    }
}

/// A boolean option's value if its option or variable gave it (clap
/// gives its default otherwise, which the settings file outranks).
fn given_bool<'a>(matches: &ArgMatches, id: &str, value: &'a bool) -> Option<&'a bool> {
    matches
        .value_source(id)
        .is_some_and(|source| source != ValueSource::DefaultValue)
        .then_some(value)
}

/// etcdctl's variables that would change how etcd is reached, in ways
/// leaderrun does not: refused when set, rather than let be. etcdctl's
/// output settings (ETCDCTL_WRITE_OUT, ETCDCTL_HEX, ETCDCTL_DEBUG) say
/// nothing of reaching etcd: let be, and passed on to the command.
const UNSUPPORTED: [(&str, &str); 5] = [
    ("ETCDCTL_KEEPALIVE_TIME", "it pings every third of the TTL"),
    (
        "ETCDCTL_KEEPALIVE_TIMEOUT",
        "it pings every third of the TTL",
    ),
    ("ETCDCTL_MAX_REQUEST_BYTES", "its requests are small"),
    ("ETCDCTL_MAX_RECV_BYTES", "it reads answers of up to 32 MiB"),
    ("ETCDCTL_AUTH_JWT_TOKEN", "give --user, and a password"),
];

/// Refuses a variable of etcdctl's that leaderrun does not honour, set.
fn refuse_unsupported() -> Result<()> {
    for (name, instead) in UNSUPPORTED {
        if std::env::var_os(name).is_some_and(|value| !value.is_empty()) {
            bail!("leaderrun does not support {name} ({instead}): unset it for leaderrun");
        }
    }
    match std::env::var("ETCDCTL_API") {
        Ok(api) if !api.is_empty() && api.trim() != "3" => {
            bail!("ETCDCTL_API={api}: leaderrun speaks etcd's v3 API only")
        }
        _ => Ok(()),
    }
}

/// A boolean as etcdctl (Go) reads one.
fn go_bool(text: &str) -> Result<bool> {
    match text.trim() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        other => bail!("'{other}' is not true or false"),
    }
}

/// A duration as etcdctl's variables give one (`2s`, `500ms`).
fn duration(text: &str) -> Result<std::time::Duration> {
    humantime::parse_duration(text.trim()).map_err(|err| anyhow::anyhow!("'{text}': {err}"))
}

/// The dial timeout and where it came from: --dial-timeout, or as long as
/// etcdctl would wait with ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT
/// (their sum, each missing one at etcdctl's default), or 5 s.
fn dial_timeout(
    args: &ConnectionArgs,
    matches: &ArgMatches,
    sources: &Sources,
) -> Result<(std::time::Duration, String)> {
    if matches.value_source("dial_timeout") == Some(ValueSource::CommandLine) {
        return Ok((args.dial_timeout, "--dial-timeout".into()));
    }
    let read = |name: &'static str| -> Result<Option<(std::time::Duration, Origin)>> {
        match sources.var(name) {
            Some((text, origin)) => {
                let value =
                    duration(&text).map_err(|err| anyhow::anyhow!("{name} ({origin}): {err:#}"))?;
                if value.is_zero() {
                    bail!("{name} ({origin}) is 0: give a duration such as 2s");
                }
                Ok(Some((value, origin)))
            }
            None => Ok(None),
        }
    };
    let (dial, command) = (
        read("ETCDCTL_DIAL_TIMEOUT")?,
        read("ETCDCTL_COMMAND_TIMEOUT")?,
    );
    if dial.is_none() && command.is_none() {
        return Ok((args.dial_timeout, "default".into()));
    }
    let part = |found: Option<(std::time::Duration, Origin)>, default: u64| match found {
        Some((value, origin)) => (value, origin.to_string()),
        None => (
            std::time::Duration::from_secs(default),
            "etcdctl's default".into(),
        ),
    };
    let ((dial, dial_from), (command, command_from)) = (part(dial, 2), part(command, 5));
    let total = (dial + command).min(std::time::Duration::from_secs(3600));
    Ok((
        total,
        format!("dial {dial:?} from {dial_from} + command {command:?} from {command_from}"),
    ))
}

/// How to reach etcd, each value from the first of: its option, its
/// variable, the settings file, the default. An empty LEADERRUN_ENDPOINTS
/// is unset (an empty --endpoints is an error, said when connecting), then
/// ETCDCTL_ENDPOINTS, empty also unset; a password from ETCDCTL_PASSWORD
/// gives way to one in `--user USER:PASSWORD`, which says more (a nested
/// leaderrun, or a variable exported as README advises). With where each
/// came from, for `check` and -v.
pub fn connection(
    args: &ConnectionArgs,
    matches: &ArgMatches,
    sources: &Sources,
) -> Result<Layered> {
    refuse_unsupported()?;
    let path = |text: &str| Ok(std::path::PathBuf::from(text));
    let text = |text: &str| Ok(text.to_string());
    let endpoints = endpoints(args, matches, sources);
    let discovery = discovery(args, matches, sources, endpoints.as_ref())?;
    let cacert = layered(matches, sources, CACERT, args.cacert.as_ref(), path)?;
    let cert = layered(matches, sources, CERT, args.cert.as_ref(), path)?;
    let key = layered(matches, sources, KEY, args.key.as_ref(), path)?;
    if cert.is_some() != key.is_some() {
        bail!("--cert and --key go together: give both (or neither)");
    }
    let skip_verify = given_bool(matches, SKIP_VERIFY.0, &args.insecure_skip_tls_verify);
    let insecure = layered(matches, sources, SKIP_VERIFY, skip_verify, go_bool)?;
    let user = layered(matches, sources, USER, args.user.as_ref(), text)?;
    let user_text = user.as_ref().map(|(user, _)| user.clone());
    let password = password::password(args, matches, sources, user_text.as_deref())?;
    let transport_secure = match sources.var("ETCDCTL_INSECURE_TRANSPORT") {
        Some((text, origin)) => !go_bool(&text)
            .map_err(|err| anyhow::anyhow!("ETCDCTL_INSECURE_TRANSPORT ({origin}): {err:#}"))?,
        None => false,
    };
    let (dial_timeout, dial_from) = dial_timeout(args, matches, sources)?;
    let options = etcd::Options {
        endpoints: endpoints.as_ref().map(|(text, _)| text.clone()),
        discovery: discovery.as_ref().map(|(found, _)| found.clone()),
        dial_timeout,
        cacert: cacert.as_ref().map(|(path, _)| path.clone()),
        cert: cert.as_ref().map(|(path, _)| path.clone()),
        key: key.as_ref().map(|(path, _)| path.clone()),
        insecure_skip_tls_verify: insecure.as_ref().is_some_and(|(insecure, _)| *insecure),
        tls_transport: transport_secure,
        user: user_text,
        password: password.as_ref().map(|(password, _)| password.clone()),
    };
    let origins = Origins {
        endpoints: endpoints.map(|(_, origin)| origin),
        discovery: discovery.map(|(_, origin)| origin),
        dial: dial_from,
        cacert: cacert.map(|(_, origin)| origin),
        cert: cert.map(|(_, origin)| origin),
        key: key.map(|(_, origin)| origin),
        insecure: insecure.map(|(_, origin)| origin),
        user: user.map(|(_, origin)| origin),
        password: password.map(|(_, origin)| origin),
    };
    Ok(Layered { options, origins })
}

/// Where each connection setting came from (None: the default).
pub struct Origins {
    pub endpoints: Option<Origin>,
    pub discovery: Option<Origin>,
    pub dial: String,
    pub cacert: Option<Origin>,
    pub cert: Option<Origin>,
    pub key: Option<Origin>,
    pub insecure: Option<Origin>,
    pub user: Option<Origin>,
    pub password: Option<Origin>,
}

impl Layered {
    /// The settings a run would use, each with where it came from; never
    /// the password itself.
    pub fn settings(&self) -> Vec<Setting> {
        let (options, origins) = (&self.options, &self.origins);
        let from = |origin: &Option<Origin>| {
            origin
                .as_ref()
                .map_or_else(|| "default".to_string(), Origin::to_string)
        };
        let file = |path: &Option<std::path::PathBuf>| {
            path.as_ref()
                .map_or_else(|| "none".into(), |path| path.display().to_string())
        };
        let mut settings = Vec::new();
        match &options.discovery {
            Some(discovery) => {
                let records = discovery.records().map(|(record, _)| record).join(", ");
                let records = match discovery.server_name() {
                    Some(domain) => format!("{records}; https only, certificates for {domain}"),
                    None => records,
                };
                settings.push(setting("discovery", records, from(&origins.discovery)));
            }
            None => {
                let endpoints = options
                    .endpoints
                    .clone()
                    .unwrap_or_else(|| etcd::endpoints::DEFAULT.into());
                settings.push(setting("endpoints", endpoints, from(&origins.endpoints)));
            }
        }
        let dial = humantime::format_duration(options.dial_timeout).to_string();
        settings.extend([
            setting("dial-timeout", dial, origins.dial.clone()),
            setting("cacert", file(&options.cacert), from(&origins.cacert)),
            setting("cert", file(&options.cert), from(&origins.cert)),
            setting("key", file(&options.key), from(&origins.key)),
            setting(
                "insecure",
                options.insecure_skip_tls_verify.to_string(),
                from(&origins.insecure),
            ),
        ]);
        let user = options
            .user
            .as_deref()
            .map_or("none", |user| user.split(':').next().unwrap_or(user));
        settings.push(setting("user", user, from(&origins.user)));
        let password = match (&origins.password, options.user.as_deref()) {
            (_, Some(user)) if user.contains(':') => setting(
                "password",
                "set",
                format!("{} USER:PASSWORD", from(&origins.user)),
            ),
            (Some(origin), _) => setting("password", "set", origin.to_string()),
            (None, _) => setting("password", "none", "default"),
        };
        settings.push(password);
        settings
    }
}

/// A setting, its value and its source.
pub fn setting(name: &'static str, value: impl Into<String>, source: impl Into<String>) -> Setting {
    Setting {
        name,
        value: value.into(),
        source: source.into(),
    }
}

/// The endpoint list as given, and from where: --endpoints or
/// LEADERRUN_ENDPOINTS (clap's), ETCDCTL_ENDPOINTS, the settings file's
/// (LEADERRUN_ENDPOINTS, then ETCDCTL_ENDPOINTS); blank ones unset.
fn endpoints(
    args: &ConnectionArgs,
    matches: &ArgMatches,
    sources: &Sources,
) -> Option<(String, Origin)> {
    let blank = |text: &String| text.trim().is_empty();
    let given = args
        .endpoints
        .clone()
        .filter(|text| !blank(text) || !from_variable(matches, "endpoints"));
    if let Some(given) = given {
        let origin = match from_variable(matches, "endpoints") {
            true => Origin::Variable("LEADERRUN_ENDPOINTS".into()),
            false => Origin::Option("--endpoints"),
        };
        return Some((given, origin));
    }
    if let Ok(text) = std::env::var("ETCDCTL_ENDPOINTS") {
        if !blank(&text) {
            return Some((text, Origin::Variable("ETCDCTL_ENDPOINTS".into())));
        }
    }
    sources
        .file_value("LEADERRUN_ENDPOINTS")
        .or_else(|| sources.file_value("ETCDCTL_ENDPOINTS"))
        .filter(|(text, _)| !blank(text))
}

/// DNS SRV discovery, if asked for and not outranked: an --endpoints
/// option comes before a discovery domain from the environment or the
/// settings file; otherwise discovery comes first, as etcdctl's does.
fn discovery(
    args: &ConnectionArgs,
    matches: &ArgMatches,
    sources: &Sources,
    endpoints: Option<&(String, Origin)>,
) -> Result<Option<(etcd::discovery::Discovery, Origin)>> {
    let text = |text: &str| Ok(text.to_string());
    let not_blank = |text: &&String| !text.trim().is_empty();
    let option = matches.value_source(DISCOVERY_SRV.0) == Some(ValueSource::CommandLine);
    if option
        && args
            .discovery_srv
            .as_ref()
            .is_some_and(|domain| domain.trim().is_empty())
    {
        bail!("--discovery-srv is empty: give a domain, or leave it out");
    }
    let given = args.discovery_srv.as_ref().filter(not_blank);
    let domain = layered(matches, sources, DISCOVERY_SRV, given, text)?;
    let given = args.discovery_srv_name.as_ref().filter(not_blank);
    let name = layered(matches, sources, DISCOVERY_NAME, given, text)?;
    let given = given_bool(matches, INSECURE_DISCOVERY.0, &args.insecure_discovery);
    let insecure = layered(matches, sources, INSECURE_DISCOVERY, given, go_bool)?;
    let Some((domain, origin)) = domain else {
        if let Some((_, from)) = name {
            bail!("--discovery-srv-name ({from}) is given without --discovery-srv");
        }
        return Ok(None);
    };
    // Endpoints given at a higher level come first; at the same level,
    // discovery, as in etcdctl; both as options is a mistake.
    match endpoints.map(|(_, given)| rank(given)) {
        Some(theirs) if theirs > rank(&origin) => return Ok(None),
        Some(3) => bail!("give --endpoints or --discovery-srv, not both"),
        _ => {}
    }
    let discovery = etcd::discovery::Discovery {
        domain: domain.trim().to_string(),
        service_name: name.map(|(name, _)| name.trim().to_string()),
        insecure: insecure.is_none_or(|(insecure, _)| insecure),
    };
    Ok(Some((discovery, origin)))
}
