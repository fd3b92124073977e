//! From the options as parsed to the plain values the layers below take:
//! [`etcd::Options`], the command's `ETCDCTL_*` plan ([`env::Etcdctl`]),
//! [`status::Options`] and a run's [`Config`].
//!
//! Where a value came from (the command line, its environment variable,
//! the settings file, a default) matters only here and in [`connection`],
//! read from clap ([`ValueSource`]) and from [`Sources`].

use std::io::IsTerminal;

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;

use super::connection::{connection, setting, Layered};
use super::settings::{Origin, Sources};
use super::{CheckArgs, Cli, PauseArgs, ResumeArgs, StatusArgs, SteerArgs};
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
/// command is told about that etcd; and its settings with where each came
/// from, for -v.
pub struct Run {
    pub config: Config,
    pub etcd: etcd::Options,
    pub etcdctl: env::Etcdctl,
    pub settings: Vec<Setting>,
}

/// What the command's `ETCDCTL_*` variables repeat of the options.
fn etcdctl(connection: &Layered) -> env::Etcdctl {
    let options = &connection.options;
    let from = |origin: &Option<Origin>, name: &str| matches!(origin, Some(Origin::Variable(variable)) if variable == name);
    env::Etcdctl {
        cacert: options.cacert.clone(),
        cert: options.cert.clone(),
        key: options.key.clone(),
        insecure_skip_tls_verify: options.insecure_skip_tls_verify,
        user: options.user.clone(),
        user_inherited: from(&connection.origins.user, "ETCDCTL_USER"),
        password_inherited: from(&connection.origins.password, "ETCDCTL_PASSWORD"),
    }
}

/// `leaderrun status`'s values: one election (by --name or by the command
/// line), or every one under --prefix.
pub fn status(
    args: StatusArgs,
    matches: &ArgMatches,
    sources: &Sources,
) -> Result<status::Options> {
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
        etcd: connection(&args.connection, matches, sources)?.options,
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
pub fn pause(args: PauseArgs, matches: &ArgMatches, sources: &Sources) -> Result<steer::Options> {
    let action = steer::Action::Pause {
        length: args.length,
        reason: args.reason,
    };
    steered(args.steer, action, matches, sources)
}

/// `leaderrun resume`'s values.
pub fn resume(args: ResumeArgs, matches: &ArgMatches, sources: &Sources) -> Result<steer::Options> {
    steered(args.steer, steer::Action::Resume, matches, sources)
}

/// `leaderrun check`'s values: the election, how to reach etcd, and the
/// settings a run would use with where each came from.
pub fn check(args: CheckArgs, matches: &ArgMatches, sources: &Sources) -> Result<check::Options> {
    let CheckArgs { once_per, steer } = args;
    let named_by = match steer.name.name {
        Some(_) => "--name",
        None => "derived from the command line",
    };
    let election = named(steer.name.name, &steer.command)?;
    let layered = connection(&steer.connection, matches, sources)?;
    let mut settings = vec![setting("name", election.clone(), named_by)];
    let (_, ttl) = ttl_of(None, DEFAULT_TTL, sources)?;
    settings.extend(run_settings(&layered, sources, ttl));
    Ok(check::Options {
        election,
        once_per: once_per.is_some(),
        etcd: layered.options,
        settings,
    })
}

/// What a run's settings are, each with where it came from: the
/// connection's, the TTL (`ttl`) and the settings file read.
fn run_settings(layered: &Layered, sources: &Sources, ttl: Setting) -> Vec<Setting> {
    let mut settings = layered.settings();
    settings.push(ttl);
    let file = sources.file.as_ref().map_or_else(
        || "none".to_string(),
        |file| file.path.display().to_string(),
    );
    settings.push(setting(
        "settings-file",
        file,
        "--config, LEADERRUN_CONFIG or /etc/leaderrun/leaderrun.conf",
    ));
    settings
}

/// The TTL and where it came from: `given` if its option or variable gave
/// it (as clap read them, for a run), else LEADERRUN_TTL from the
/// environment or the settings file, else the default (as clap's
/// `--ttl` default, for a run; `check` has no `--ttl`, and asks
/// [`DEFAULT_TTL`]).
fn ttl_of(
    given: Option<(std::time::Duration, &str)>,
    default: std::time::Duration,
    sources: &Sources,
) -> Result<(std::time::Duration, Setting)> {
    let (ttl, origin) = match (given, sources.var("LEADERRUN_TTL")) {
        (Some((ttl, origin)), _) => (ttl, origin.to_string()),
        (None, Some((text, origin))) => {
            let ttl = super::parse::parse_ttl(&text)
                .map_err(|err| anyhow::anyhow!("LEADERRUN_TTL ({origin}): {err}"))?;
            (ttl, origin.to_string())
        }
        (None, None) => (default, "default".to_string()),
    };
    let shown = humantime::format_duration(ttl).to_string();
    Ok((ttl, setting("ttl", shown, origin)))
}

/// `--ttl`'s default, as `check` reports what a run would take.
const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(15);

fn steered(
    args: SteerArgs,
    action: steer::Action,
    matches: &ArgMatches,
    sources: &Sources,
) -> Result<steer::Options> {
    Ok(steer::Options {
        election: named(args.name.name, &args.command)?,
        action,
        etcd: connection(&args.connection, matches, sources)?.options,
    })
}

/// A run's TTL, and where it came from ([`ttl_of`]).
fn ttl(
    cli: &Cli,
    matches: &ArgMatches,
    sources: &Sources,
) -> Result<(std::time::Duration, Setting)> {
    let given = match matches.value_source("ttl") {
        Some(ValueSource::CommandLine) => Some((cli.election.ttl, "--ttl")),
        Some(ValueSource::EnvVariable) => Some((cli.election.ttl, "LEADERRUN_TTL")),
        _ => None,
    };
    ttl_of(given, cli.election.ttl, sources)
}

/// `--once-per-attempts`, refused beside a `--max-running` the protocol
/// does not let it share a window with (`window::runners_fit`).
fn once_per_attempts(cli: &Cli) -> Result<u32> {
    let attempts = cli.election.once_per_attempts;
    if !protocol::window::runners_fit(attempts, cli.election.max_running) {
        bail!("--once-per-attempts above 1 takes one runner at a time: not with --max-running");
    }
    Ok(attempts)
}

/// A run's values. COMMAND is looked for in PATH here, so that one that
/// cannot run is refused before campaigning.
pub fn run(cli: Cli, matches: &ArgMatches, sources: &Sources) -> Result<Run> {
    let layered = connection(&cli.connection, matches, sources)?;
    let etcdctl = etcdctl(&layered);
    let once_per_attempts = once_per_attempts(&cli)?;
    let (ttl, ttl_shown) = ttl(&cli, matches, sources)?;
    let settings = run_settings(&layered, sources, ttl_shown);
    let handoff = sources.var(Handoff::VARIABLE).map(|(value, _)| value);
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
        ttl,
        // --wait-timeout bounds a wait: it implies one, as `flock -w` does.
        wait: cli.election.wait || cli.election.wait_timeout.is_some(),
        wait_timeout: cli.election.wait_timeout,
        conflict_code: cli.election.conflict_exit_code,
        once_per: cli.election.once_per,
        once_per_attempts,
        kill_signal: cli.child.kill_signal,
        kill_after: cli.child.kill_after,
        timeout: cli.child.timeout,
        max_running: cli.election.max_running,
        explain: cli.output.verbose > 0 || std::io::stderr().is_terminal(),
        etcd_env: Vec::new(),
        handoff: Handoff::from_value(handoff.as_deref().map(std::ffi::OsStr::new)),
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
        etcd: layered.options,
        etcdctl,
        settings,
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

    /// check's TTL when none is given is a run's: `--ttl`'s default.
    #[test]
    fn checks_default_ttl_is_the_runs() {
        let (cli, _) = parsed(&["leaderrun", "--", "true"]);
        assert_eq!(cli.election.ttl, DEFAULT_TTL);
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
        let layered = connection(&cli.connection, &matches, &Sources::default()).unwrap();
        let options = &layered.options;
        assert_eq!(options.endpoints.as_deref(), Some(""));
        assert_eq!(options.password.as_deref(), Some("other"));
        let plan = etcdctl(&layered);
        assert!(!plan.user_inherited && !plan.password_inherited);
    }
}
