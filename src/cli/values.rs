//! From the options as parsed to the plain values the layers below take:
//! [`etcd::Options`], the command's `ETCDCTL_*` plan ([`env::Etcdctl`]),
//! [`status::Options`] and a run's [`Config`].
//!
//! Where a value came from (the command line, its environment variable, a
//! default) matters only here, and is read from clap ([`ValueSource`]),
//! not from the environment again.

use std::io::IsTerminal;

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;

use super::{CheckArgs, Cli, ConnectionArgs, PauseArgs, ResumeArgs, StatusArgs, SteerArgs};
use crate::check::{self, Setting};
use crate::child::{self, env};
use crate::election::handoff::Handoff;
use crate::election::holder::Holder;
use crate::election::name;
use crate::etcd;
use crate::run::{still_waiting_every, Config, NotifySocket, WaitShown, STILL_WAITING_VARIABLE};
use crate::status::{self, Elections, Format};
use crate::steer;

/// What a run takes: its configuration, how to reach etcd, and what the
/// command is told about that etcd.
pub struct Run {
    pub config: Config,
    pub etcd: etcd::Options,
    pub etcdctl: env::Etcdctl,
}

/// Whether the value of the argument `id` came from its environment
/// variable.
fn from_variable(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::EnvVariable)
}

/// How to reach etcd, with each value's source settled: an empty
/// LEADERRUN_ENDPOINTS is unset (an empty --endpoints is an error, said when
/// connecting), then ETCDCTL_ENDPOINTS, empty also unset; a password from
/// ETCDCTL_PASSWORD gives way to one in `--user USER:PASSWORD`, which says
/// more (a nested leaderrun, or a variable exported as README advises).
fn etcd(args: &ConnectionArgs, matches: &ArgMatches) -> etcd::Options {
    let blank = |text: &String| text.trim().is_empty();
    let endpoints = args
        .endpoints
        .clone()
        .filter(|text| !(blank(text) && from_variable(matches, "endpoints")))
        .or_else(|| {
            std::env::var("ETCDCTL_ENDPOINTS")
                .ok()
                .filter(|text| !blank(text))
        });
    let inline = args.user.as_deref().is_some_and(|user| user.contains(':'));
    let password = args
        .password
        .clone()
        .filter(|_| !(inline && from_variable(matches, "password")));
    etcd::Options {
        endpoints,
        dial_timeout: args.dial_timeout,
        cacert: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        insecure_skip_tls_verify: args.insecure_skip_tls_verify,
        user: args.user.clone(),
        password,
    }
}

/// What the command's `ETCDCTL_*` variables repeat of the options.
fn etcdctl(args: &ConnectionArgs, matches: &ArgMatches) -> env::Etcdctl {
    env::Etcdctl {
        cacert: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        insecure_skip_tls_verify: args.insecure_skip_tls_verify,
        user: args.user.clone(),
        user_inherited: from_variable(matches, "user"),
        password_inherited: from_variable(matches, "password"),
    }
}

/// `leaderrun status`'s values: one election (by --name or by the command
/// line), or every one under --prefix.
pub fn status(args: StatusArgs, matches: &ArgMatches) -> Result<status::Options> {
    let format = match (args.format, args.json) {
        (Some(format), _) => format,
        (None, true) => Format::Json,
        (None, false) => Format::Text,
    };
    let elections = if args.all {
        Elections::All {
            prefix: args.prefix.unwrap_or_default(),
        }
    } else {
        Elections::One(named(args.name.name, &args.command)?)
    };
    Ok(status::Options {
        elections,
        format,
        watch: args.watch,
        max_age: args.max_age,
        etcd: etcd(&args.connection, matches),
    })
}

/// The one election `status`, `pause` and `resume` name: by --name, or
/// by the command line the replicas run.
fn named(name: Option<String>, command: &[std::ffi::OsString]) -> Result<String> {
    Ok(match (name, command.is_empty()) {
        // One of them names it: a command beside --name would be ignored.
        (Some(_), false) => {
            bail!("name the election with --name or with the command line after --, not both")
        }
        (Some(name), _) if !name.is_empty() => name,
        (None, false) => name::derive(command),
        _ => bail!("name the election with --name, or give the command line after --"),
    })
}

/// `leaderrun pause`'s values.
pub fn pause(args: PauseArgs, matches: &ArgMatches) -> Result<steer::Options> {
    let action = steer::Action::Pause {
        length: args.length,
        reason: args.reason,
    };
    steered(args.steer, action, matches)
}

/// `leaderrun resume`'s values.
pub fn resume(args: ResumeArgs, matches: &ArgMatches) -> Result<steer::Options> {
    steered(args.steer, steer::Action::Resume, matches)
}

/// `leaderrun check`'s values: the election, how to reach etcd, and the
/// settings a run would use with where each came from.
pub fn check(args: CheckArgs, matches: &ArgMatches) -> Result<check::Options> {
    let CheckArgs { once_per, steer } = args;
    let named_by = match steer.name.name {
        Some(_) => "--name",
        None => "derived from the command line",
    };
    let election = named(steer.name.name, &steer.command)?;
    let etcd = etcd(&steer.connection, matches);
    let mut settings = vec![Setting {
        name: "name",
        value: election.clone(),
        source: named_by.into(),
    }];
    settings.extend(sourced_settings(&steer.connection, &etcd, matches)?);
    Ok(check::Options {
        election,
        once_per: once_per.is_some(),
        etcd,
        settings,
    })
}

/// Where the value of `id` came from: its option, `variable`, or the
/// default.
fn source(matches: &ArgMatches, id: &str, option: &str, variable: &str) -> String {
    match matches.value_source(id) {
        Some(ValueSource::CommandLine) => option.into(),
        Some(ValueSource::EnvVariable) => variable.into(),
        _ => "default".into(),
    }
}

/// A setting, its value and its source.
fn setting(name: &'static str, value: impl Into<String>, source: impl Into<String>) -> Setting {
    Setting {
        name,
        value: value.into(),
        source: source.into(),
    }
}

/// The connection's settings as a run would take them, and the TTL.
fn sourced_settings(
    args: &ConnectionArgs,
    etcd: &etcd::Options,
    matches: &ArgMatches,
) -> Result<Vec<Setting>> {
    let endpoints_source = match (&args.endpoints, &etcd.endpoints) {
        (_, None) => "default".into(),
        (Some(given), Some(used)) if given == used => {
            source(matches, "endpoints", "--endpoints", "LEADERRUN_ENDPOINTS")
        }
        (_, Some(_)) => "ETCDCTL_ENDPOINTS".into(),
    };
    let file = |path: &Option<std::path::PathBuf>| {
        path.as_ref()
            .map_or_else(|| "none".into(), |path| path.display().to_string())
    };
    let from = |id: &str, option: &str, variable: &str| source(matches, id, option, variable);
    let user = etcd
        .user
        .as_deref()
        .map_or("none", |user| user.split(':').next().unwrap_or(user));
    let endpoints = etcd
        .endpoints
        .as_deref()
        .unwrap_or(etcd::endpoints::DEFAULT);
    let dial_timeout = humantime::format_duration(etcd.dial_timeout).to_string();
    Ok(vec![
        setting("endpoints", endpoints, endpoints_source),
        setting(
            "dial-timeout",
            dial_timeout,
            from("dial_timeout", "--dial-timeout", "-"),
        ),
        setting(
            "cacert",
            file(&etcd.cacert),
            from("cacert", "--cacert", "ETCDCTL_CACERT"),
        ),
        setting(
            "cert",
            file(&etcd.cert),
            from("cert", "--cert", "ETCDCTL_CERT"),
        ),
        setting("key", file(&etcd.key), from("key", "--key", "ETCDCTL_KEY")),
        setting(
            "insecure",
            etcd.insecure_skip_tls_verify.to_string(),
            from(
                "insecure_skip_tls_verify",
                "--insecure-skip-tls-verify",
                "ETCDCTL_INSECURE_SKIP_TLS_VERIFY",
            ),
        ),
        setting("user", user, from("user", "--user", "ETCDCTL_USER")),
        password_setting(etcd, matches),
        ttl_setting()?,
    ])
}

/// Whether a password is set, and where from; never the password.
fn password_setting(etcd: &etcd::Options, matches: &ArgMatches) -> Setting {
    match (&etcd.password, etcd.user.as_deref()) {
        (_, Some(user)) if user.contains(':') => {
            let given = source(matches, "user", "--user", "ETCDCTL_USER");
            setting("password", "set", format!("{given} USER:PASSWORD"))
        }
        (Some(_), _) => setting(
            "password",
            "set",
            source(matches, "password", "--password", "ETCDCTL_PASSWORD"),
        ),
        (None, _) => setting("password", "none", "default"),
    }
}

/// The TTL a run would take from LEADERRUN_TTL, or its default.
fn ttl_setting() -> Result<Setting> {
    Ok(match std::env::var("LEADERRUN_TTL") {
        Ok(text) => {
            let ttl = super::parse::parse_ttl(&text)
                .map_err(|err| anyhow::anyhow!("LEADERRUN_TTL: {err}"))?;
            let shown = humantime::format_duration(ttl).to_string();
            setting("ttl", shown, "LEADERRUN_TTL")
        }
        Err(_) => setting("ttl", "15s", "default"),
    })
}

fn steered(args: SteerArgs, action: steer::Action, matches: &ArgMatches) -> Result<steer::Options> {
    Ok(steer::Options {
        election: named(args.name.name, &args.command)?,
        action,
        etcd: etcd(&args.connection, matches),
    })
}

/// A run's values. COMMAND is looked for in PATH here, so that one that
/// cannot run is refused before campaigning.
pub fn run(cli: Cli, matches: &ArgMatches) -> Result<Run> {
    let etcd = etcd(&cli.connection, matches);
    let etcdctl = etcdctl(&cli.connection, matches);
    let command = cli.command;
    let program = child::resolve(&command[0])?;
    let election = match cli.election.name.name {
        Some(name) if name.is_empty() => bail!("--name must not be empty"),
        Some(name) => name,
        None => name::derive(&command),
    };
    let holder = Holder {
        max_running: cli.election.max_running,
        ..Holder::for_this_process(&command, cli.election.redact_args)
    };
    let still_waiting = still_waiting_every(std::env::var_os(STILL_WAITING_VARIABLE).as_deref())
        .map_err(anyhow::Error::msg)?;
    let config = Config {
        program,
        holder,
        election,
        ttl: cli.election.ttl,
        // --wait-timeout bounds a wait: it implies one, as `flock -w` does.
        wait: cli.election.wait || cli.election.wait_timeout.is_some(),
        wait_timeout: cli.election.wait_timeout,
        conflict_code: cli.election.conflict_exit_code,
        once_per: cli.election.once_per,
        once_per_attempts: cli.election.once_per_attempts,
        kill_signal: cli.child.kill_signal,
        kill_after: cli.child.kill_after,
        timeout: cli.child.timeout,
        max_running: cli.election.max_running,
        explain: cli.output.verbose > 0 || std::io::stderr().is_terminal(),
        etcd_env: Vec::new(),
        handoff: Handoff::from_value(std::env::var_os(Handoff::VARIABLE).as_deref()),
        notify_socket: NotifySocket::from_env(std::env::var_os(env::NOTIFY_SOCKET).as_deref()),
        withheld: match cli.child.pass_notify_socket {
            true => &[],
            false => &[env::NOTIFY_SOCKET],
        },
        wait_shown: WaitShown::choose(
            std::io::stderr().is_terminal(),
            std::env::var_os("TERM").as_deref(),
            cli.output.verbose > 0 && still_waiting.is_some(),
        ),
        still_waiting_every: still_waiting.unwrap_or_default(),
        command,
    };
    Ok(Run {
        config,
        etcd,
        etcdctl,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn parsed(args: &[&str]) -> (Cli, ArgMatches) {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        super::super::parse(&args).expect("parses")
    }

    /// What the command line says is kept as said: an empty --endpoints is
    /// an error later, not the default, and --password is not dropped for
    /// a USER:PASSWORD (credentials then refuse the two).
    #[test]
    fn values_from_the_command_line_are_kept() {
        let (cli, matches) = parsed(&[
            "leaderrun",
            "--endpoints",
            "",
            "--user",
            "u:pw",
            "--password",
            "other",
            "--",
            "true",
        ]);
        let options = etcd(&cli.connection, &matches);
        assert_eq!(options.endpoints.as_deref(), Some(""));
        assert_eq!(options.password.as_deref(), Some("other"));
        let plan = etcdctl(&cli.connection, &matches);
        assert!(!plan.user_inherited && !plan.password_inherited);
    }
}
