//! The command line. Doc comments here are the `--help` text, the man page
//! and the completions: keep them the single source.
//!
//! This folder owns the options and their values (`parse.rs`), the plain
//! values it hands to the layers below, made once with what clap knows of
//! where each came from (`values.rs`; nothing below imports `cli`), the
//! text after `--help` (`help.rs`) and the generated man pages and
//! completions (`docs.rs`). It checks input and says what is wrong in one
//! line; it never talks to etcd or starts a process.

mod connection;
pub mod docs;
pub mod help;
mod parse;
mod password;
pub mod settings;
mod values;

use parse::{
    parse_attempts, parse_conflict_exit_code, parse_dial_timeout, parse_duration, parse_kill_after,
    parse_max_running, parse_pause_for, parse_reason, parse_signal, parse_timeout, parse_ttl,
    parse_wait_timeout, parse_window,
};

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgMatches, Args, Parser, Subcommand};
use nix::sys::signal::Signal;

const CONNECTION: &str = "Connection";
const ELECTION: &str = "Election";
const CHILD: &str = "Child process";
const SECURITY: &str = "TLS and authentication";
const OUTPUT: &str = "Output";
const COMMAND: &str = "Command";

/// `--version`: the version and the commit it was built from (build.rs).
/// `-V` and the man pages say the version alone, so that they do not change
/// with every commit.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LEADERRUN_COMMIT"),
    ")"
);

/// Run a command only on the replica that holds leadership in etcd.
///
/// Replicas race for a key under the election NAME in etcd, attached to a
/// lease that leaderrun keeps alive. The winner runs COMMAND with a fencing
/// token in LEADERRUN_TOKEN; the others exit with the conflict code, or queue
/// with --wait. If leadership is lost while COMMAND runs (lease expired or
/// revoked, key deleted, etcd unreachable for too long), leaderrun stops
/// COMMAND's whole process group before the lease can expire on the server
/// and exits 124. When COMMAND exits, leaderrun gives up leadership at once
/// and exits with COMMAND's status.
#[derive(Debug, Parser)]
#[command(
    name = "leaderrun",
    version,
    long_version = LONG_VERSION,
    after_help = help::after_help(),
    override_usage = "leaderrun [OPTIONS] [--] COMMAND [ARGS]...\n       leaderrun status [OPTIONS] [--name NAME | -- COMMAND [ARGS]...]\n       leaderrun pause|resume|check [OPTIONS] [--name NAME | -- COMMAND [ARGS]...]",
    subcommand_value_name = "SUBCOMMAND",
    subcommand_help_heading = "Subcommands",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub subcommand: Option<Command>,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    #[command(flatten)]
    pub election: ElectionArgs,

    #[command(flatten)]
    pub child: ChildArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Print a man page (roff) and exit: leaderrun(1), or with `status`,
    /// leaderrun-status(1).
    #[arg(long, value_name = "PAGE", num_args = 0..=1, default_missing_value = "leaderrun", help_heading = OUTPUT)]
    pub manual: Option<ManualPage>,

    /// Print the completion script for SHELL and exit.
    #[arg(long, value_name = "SHELL", help_heading = OUTPUT)]
    pub completions: Option<clap_complete::Shell>,

    /// The command to run while leader, and its arguments.
    #[arg(
        value_name = "COMMAND",
        required_unless_present_any = ["manual", "completions"],
        trailing_var_arg = true,
        value_hint = clap::ValueHint::CommandWithArguments,
        help_heading = COMMAND
    )]
    pub command: Vec<OsString>,
}

/// Parses the command line (`args[0]` is the program). The matches are
/// kept beside the options: they say where each value came from.
pub fn parse(args: &[OsString]) -> Result<(Cli, ArgMatches), clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&matches).map_err(|err| err.format(&mut Cli::command()))?;
    Ok((cli, matches))
}

/// What one invocation does: the dispatch in `main`. The values for
/// `status` and for a run are made here, and an error in them is said
/// where the mode's own errors are.
pub enum Mode {
    /// Print generated documentation (a man page, completions, a table).
    Docs(Vec<u8>),
    /// `leaderrun status`.
    Status(Box<anyhow::Result<crate::status::Options>>),
    /// Run the command as leader.
    Run(Box<anyhow::Result<values::Run>>),
    /// `leaderrun pause` and `resume`.
    Steer(Box<anyhow::Result<crate::steer::Options>>),
    /// `leaderrun check`.
    Check(Box<anyhow::Result<crate::check::Options>>),
}

pub use values::Run;

impl Cli {
    /// The mode's own parts: its subcommand's name (None for a run), its
    /// connection options, its output options.
    fn parts(&self) -> (Option<&'static str>, &ConnectionArgs, &OutputArgs) {
        match &self.subcommand {
            Some(Command::Status(args)) => (Some("status"), &args.connection, &args.output),
            Some(Command::Pause(args)) => {
                (Some("pause"), &args.steer.connection, &args.steer.output)
            }
            Some(Command::Resume(args)) => {
                (Some("resume"), &args.steer.connection, &args.steer.output)
            }
            Some(Command::Check(args)) => {
                (Some("check"), &args.steer.connection, &args.steer.output)
            }
            None => (None, &self.connection, &self.output),
        }
    }

    /// The subcommand's matches, or the run's.
    fn own_matches<'m>(&self, matches: &'m ArgMatches) -> &'m ArgMatches {
        let name = self.parts().0;
        name.and_then(|name| matches.subcommand_matches(name))
            .unwrap_or(matches)
    }

    /// The output options of the mode asked for.
    pub fn output(&self) -> &OutputArgs {
        self.parts().2
    }

    /// Whether the options ask only for documentation (no settings read).
    pub fn docs_only(&self) -> bool {
        self.completions.is_some() || self.manual.is_some()
    }

    /// The settings file the options name, read (`--config`,
    /// `LEADERRUN_CONFIG`, or the system's).
    pub fn sources(&self) -> anyhow::Result<settings::Sources> {
        settings::Sources::load(self.parts().1.config.as_deref())
    }

    /// The log format: --log-format or LEADERRUN_LOG_FORMAT, else the
    /// settings file's, else text.
    pub fn log_format(
        &self,
        matches: &ArgMatches,
        sources: &settings::Sources,
    ) -> anyhow::Result<crate::logging::LogFormat> {
        let output = self.output();
        let own = self.own_matches(matches);
        let given = own.value_source("log_format") != Some(clap::parser::ValueSource::DefaultValue);
        match sources.file_value("LEADERRUN_LOG_FORMAT") {
            Some((text, origin)) if !given => {
                <crate::logging::LogFormat as clap::ValueEnum>::from_str(text.trim(), true).map_err(
                    |_| {
                        anyhow::anyhow!(
                            "LEADERRUN_LOG_FORMAT ({origin}): '{text}' is not text or json"
                        )
                    },
                )
            }
            _ => Ok(output.log_format),
        }
    }

    /// What the options ask for; `matches` are those they were parsed
    /// from, which say where each value came from, and `sources` the
    /// environment and the settings file.
    pub fn mode(self, matches: &ArgMatches, sources: &settings::Sources) -> Mode {
        if let Some(shell) = self.completions {
            return Mode::Docs(docs::completion(shell));
        }
        if let Some(page) = self.manual {
            return Mode::Docs(match page {
                ManualPage::Leaderrun => docs::man_page(),
                ManualPage::Status => docs::status_man_page(),
                ManualPage::Check => docs::check_man_page(),
                ManualPage::ExitCodes => help::exit_codes_markdown().into(),
                ManualPage::Environment => help::environment_markdown().into(),
            });
        }
        let own = self.own_matches(matches);
        match self.subcommand {
            Some(Command::Status(args)) => {
                Mode::Status(Box::new(values::status(args, own, sources)))
            }
            Some(Command::Pause(args)) => Mode::Steer(Box::new(values::pause(args, own, sources))),
            Some(Command::Resume(args)) => {
                Mode::Steer(Box::new(values::resume(args, own, sources)))
            }
            Some(Command::Check(args)) => Mode::Check(Box::new(values::check(args, own, sources))),
            None => Mode::Run(Box::new(values::run(self, own, sources))),
        }
    }
}

/// The man pages the binary can print.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ManualPage {
    Leaderrun,
    Status,
    Check,
    /// README's exit status table (Markdown).
    ExitCodes,
    /// README's table of what the command gets (Markdown).
    Environment,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show who leads an election, its token and its queue.
    ///
    /// Name the election with --name, or give the same command line after
    /// `--` as the replicas run, so that the derived name matches. Exits 0
    /// when someone leads, 3 when nobody does, 4 when a key with no lease
    /// leads or a --once-per marker with no lease keeps every run out
    /// (stuck: neither ever expires), 5 when the election is paused
    /// (`leaderrun pause`), 125 on errors; with --all, 0
    /// once every election is read, whoever leads (a leaderless one is a
    /// line, or leaderrun_leader_present 0), and 125 on errors.
    Status(StatusArgs),

    /// Pause an election across the fleet: no run of it starts until
    /// `leaderrun resume` (or until --for ends).
    ///
    /// While paused, a run exits with the conflict code (75, or
    /// --conflict-exit-code), saying who paused, why, since and until when
    /// (with -v, or on a terminal, as for every conflict); a run with
    /// --wait waits until the pause ends (its --wait-timeout still counts),
    /// then queues as usual. A pause never stops a command that already
    /// runs. Pausing a paused election replaces its pause. The pause is
    /// the key NAME.paused in etcd; `leaderrun status` shows it and exits 5.
    Pause(PauseArgs),

    /// End an election's pause: runs start again (those waiting with
    /// --wait join the line as they come back). Exits 0 whether it was
    /// paused or not, saying which.
    Resume(ResumeArgs),

    /// Check, before a real run, that a run of an election would work.
    ///
    /// Dials every endpoint on its own and says what each is (reached,
    /// TLS verified, authenticated, etcd's version, its raft leader);
    /// proves every permission a run needs (its candidates' keys, the
    /// pause, with --once-per the window's marker, the run records) with
    /// transactions whose comparison never holds, so that nothing is
    /// written; and prints the settings a run would use, each with where
    /// it came from. Exits 0 when a run would work (an endpoint not
    /// reached, or no grant for the records, is a warning), 125 with a
    /// line per problem otherwise.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The window the runs use (`--once-per`): its marker's grant is then
    /// needed too.
    #[arg(long, value_name = "DURATION", value_parser = parse_window, allow_hyphen_values = true)]
    pub once_per: Option<Duration>,

    #[command(flatten)]
    pub steer: SteerArgs,
}

/// The election `pause` and `resume` steer, and how to reach etcd.
#[derive(Debug, Args)]
pub struct SteerArgs {
    // First, before the flattened groups set their headings.
    #[command(flatten)]
    pub name: NameArg,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// The command line the replicas run, to derive the election name.
    #[arg(value_name = "COMMAND", trailing_var_arg = true, help_heading = COMMAND)]
    pub command: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// End the pause by itself after DURATION (1s to 366 days): it is
    /// written on an etcd lease of that length, so a forgotten pause
    /// cannot outlive it. Without it, the pause lasts until `resume`.
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_pause_for, allow_hyphen_values = true)]
    pub length: Option<Duration>,

    /// Why, shown to every run it keeps from starting and by `status`
    /// (at most 200 characters; control characters are shown escaped).
    #[arg(long, value_name = "TEXT", value_parser = parse_reason, allow_hyphen_values = true)]
    pub reason: Option<String>,

    #[command(flatten)]
    pub steer: SteerArgs,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub steer: SteerArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    // First, before the flattened groups set their headings.
    #[command(flatten)]
    pub name: NameArg,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,

    /// Keep watching, printing a line each time the leader changes.
    #[arg(long, conflicts_with = "json")]
    pub watch: bool,

    /// A freshness check for monitoring: exit 0 if a run succeeded within
    /// DURATION of now, else 2, with one line saying when the last success
    /// was. Works with nobody leading.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with_all = ["watch", "json"], allow_hyphen_values = true)]
    pub max_age: Option<Duration>,

    /// Every election whose name starts with --prefix (every one in etcd
    /// without it): a line each, a JSON array with --json, or metrics with
    /// --format prometheus.
    #[arg(long, conflicts_with_all = ["name", "watch", "max_age", "command"])]
    pub all: bool,

    /// With --all: only elections whose names start with PREFIX.
    #[arg(long, value_name = "PREFIX", requires = "all")]
    pub prefix: Option<String>,

    /// How to print: text, json (as --json), or prometheus (the text
    /// exposition format, for node_exporter's textfile collector).
    #[arg(long, value_name = "FORMAT", value_enum, conflicts_with_all = ["json", "watch", "max_age"])]
    pub format: Option<crate::status::Format>,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// The command line the replicas run, to derive the election name.
    #[arg(value_name = "COMMAND", trailing_var_arg = true, help_heading = COMMAND)]
    pub command: Vec<OsString>,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = CONNECTION)]
pub struct ConnectionArgs {
    /// etcd endpoints, comma-separated (`http://host:port`,
    /// `https://host:port`, or bare `host:port`: https if a TLS option is
    /// given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to
    /// ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379.
    /// leaderrun moves to the next endpoint when one fails.
    #[arg(
        long,
        env = "LEADERRUN_ENDPOINTS", hide_env_values = true,
        value_name = "URL,...",
        value_hint = clap::ValueHint::Url
    )]
    pub endpoints: Option<String>,

    /// Find the endpoints in DNS, as etcdctl does: the SRV records
    /// `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN`
    /// (http), looked up again when every endpoint fails. Used instead of
    /// --endpoints (unless --endpoints is given as an option and this only
    /// in the environment); finding nothing is an error (125), never a fall
    /// back to 127.0.0.1:2379.
    #[arg(
        long,
        env = "ETCDCTL_DISCOVERY_SRV",
        hide_env_values = true,
        value_name = "DOMAIN"
    )]
    pub discovery_srv: Option<String>,

    /// With --discovery-srv: the records of this service name,
    /// `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`.
    #[arg(
        long,
        env = "ETCDCTL_DISCOVERY_SRV_NAME",
        hide_env_values = true,
        value_name = "NAME"
    )]
    pub discovery_srv_name: Option<String>,

    /// With --discovery-srv: `false` drops the http endpoints found, and
    /// checks each server's certificate against DOMAIN rather than its own
    /// host, as etcdctl does; `true` (the default) takes both.
    #[arg(long, env = "ETCDCTL_INSECURE_DISCOVERY", hide_env_values = true, value_name = "BOOL",
          value_parser = clap::builder::BoolishValueParser::new(), default_value = "true",
          num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub insecure_discovery: bool,

    /// How long to wait for etcd to answer before giving up (exit 125). An
    /// etcd that takes the connection and then says nothing may be given up
    /// on sooner: the connection's ping, every third of the TTL, closes it
    /// after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and
    /// ETCDCTL_COMMAND_TIMEOUT (or the settings file's) give as long as
    /// etcdctl would wait: their sum, each missing one at etcdctl's default
    /// (2s and 5s).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_dial_timeout, allow_hyphen_values = true)]
    pub dial_timeout: Duration,

    /// Read settings from FILE: `NAME=value` lines of the variables
    /// leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...).
    /// An option or a variable of the environment comes first, the file
    /// next, then the default. Without it, /etc/leaderrun/leaderrun.conf
    /// if it exists. Refused if others than its owner may read or write it.
    #[arg(long, env = "LEADERRUN_CONFIG", hide_env_values = true, value_name = "FILE",
          value_hint = clap::ValueHint::FilePath)]
    pub config: Option<PathBuf>,

    /// Trust the CAs in FILE (PEM) for etcd's server certificate, instead of
    /// the system's. Any TLS option makes bare `host:port` endpoints https.
    #[arg(long, env = "ETCDCTL_CACERT", hide_env_values = true, value_name = "FILE",
          value_hint = clap::ValueHint::FilePath, help_heading = SECURITY)]
    pub cacert: Option<PathBuf>,

    /// Client certificate (PEM), for an etcd that checks client certificates.
    #[arg(long, env = "ETCDCTL_CERT", hide_env_values = true, value_name = "FILE",
          requires = "key", value_hint = clap::ValueHint::FilePath, help_heading = SECURITY)]
    pub cert: Option<PathBuf>,

    /// Private key (PEM) of --cert.
    #[arg(long, env = "ETCDCTL_KEY", hide_env_values = true, value_name = "FILE",
          requires = "cert", value_hint = clap::ValueHint::FilePath, help_heading = SECURITY)]
    pub key: Option<PathBuf>,

    /// Accept any server certificate: the connection is encrypted, but the
    /// server's identity is not checked. For testing only.
    #[arg(long, env = "ETCDCTL_INSECURE_SKIP_TLS_VERIFY", hide_env_values = true,
          value_parser = clap::builder::BoolishValueParser::new(), help_heading = SECURITY)]
    pub insecure_skip_tls_verify: bool,

    /// etcd user for an etcd with authentication on. The password may follow
    /// a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does
    /// not prompt).
    #[arg(long, env = "ETCDCTL_USER", hide_env_values = true, value_name = "USER[:PASSWORD]",
          help_heading = SECURITY)]
    pub user: Option<String>,

    /// Password for --user. Other users can read command lines (`ps`) and
    /// crontabs: prefer --password-file.
    #[arg(long, env = "ETCDCTL_PASSWORD", hide_env_values = true, value_name = "PASSWORD",
          help_heading = SECURITY)]
    pub password: Option<String>,

    /// Read the password for --user from FILE (its first line), which only
    /// its owner may read. Without a password given otherwise, a systemd
    /// unit's credential `etcd-password` (LoadCredential=) is read from
    /// $CREDENTIALS_DIRECTORY.
    #[arg(long, env = "LEADERRUN_PASSWORD_FILE", hide_env_values = true, value_name = "FILE",
          conflicts_with = "password", value_hint = clap::ValueHint::FilePath, help_heading = SECURITY)]
    pub password_file: Option<PathBuf>,
}

/// The election's name, shared by running and `status`.
#[derive(Debug, Args)]
pub struct NameArg {
    /// Election name, exactly as `etcdctl elect NAME` uses it. Default:
    /// derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`),
    /// so the same command line on every replica joins the same election;
    /// -v prints it.
    ///
    /// Not read from LEADERRUN_NAME: leaderrun hands that to its command,
    /// and a leaderrun inside that command must not join its parent's
    /// election.
    #[arg(short, long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Args)]
#[command(next_help_heading = ELECTION)]
pub struct ElectionArgs {
    #[command(flatten)]
    pub name: NameArg,

    /// Lease time to live. etcd may grant a longer one (it raises TTLs below
    /// its minimum); the granted TTL is the one used. Renewed every third of
    /// it. Shorter means faster takeover after a crash, and less tolerance
    /// for a slow etcd.
    #[arg(long, env = "LEADERRUN_TTL", hide_env_values = true, value_name = "DURATION", default_value = "15s", value_parser = parse_ttl, allow_hyphen_values = true)]
    pub ttl: Duration,

    /// Queue for leadership instead of exiting when another replica leads.
    ///
    /// On a terminal a live line shows the place in line, who leads and
    /// how long this run has waited; elsewhere -v logs it.
    #[arg(short, long)]
    pub wait: bool,

    /// Queue, as --wait, but give up after this long, with the conflict exit
    /// code. The queue is always looked at once: `--wait-timeout 0` runs if
    /// nobody leads, as `flock -w 0` does.
    #[arg(long, value_name = "DURATION", value_parser = parse_wait_timeout, allow_hyphen_values = true)]
    pub wait_timeout: Option<Duration>,

    /// Start at most one run per DURATION, across all replicas: for cron
    /// jobs on machines whose clocks disagree. The first leader in a window
    /// runs; later leaders exit with the conflict code (-v says when, where
    /// and with which token the window's run started). The window is an etcd
    /// lease, so etcd measures it and it ends by itself. Make it shorter than
    /// the schedule's period and longer than the clocks' skew, e.g.
    /// `--once-per 1h` for a nightly job. Replicas that disagree on the
    /// window are refused (125), also once a shorter window's marker has
    /// expired, while the last run's start record names its window.
    #[arg(long, value_name = "DURATION", value_parser = parse_window, allow_hyphen_values = true)]
    pub once_per: Option<Duration>,

    /// With --once-per: only a run that succeeds spends the window, and up
    /// to N (1 to 100) runs may start in it, each after the last failed (a non-zero
    /// exit, leadership lost, --timeout, a signal). With --wait the
    /// replicas queued behind a failed run try in turn; without it, the
    /// next firing on any replica tries. 1, the default, is the first run
    /// to start spending the window, whatever its end. The run that opens
    /// a window sets its N; the window's marker lists each attempt and how
    /// it ended (`status`). One runner at a time: not with --max-running.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_attempts, requires = "once_per")]
    pub once_per_attempts: u32,

    /// Store only the program's name in etcd, not its arguments. The command
    /// line is kept in the candidate key's value (and in the --once-per
    /// marker), where `status` shows it to anyone who can read the election:
    /// use this when an argument is secret.
    #[arg(long)]
    pub redact_args: bool,

    /// Run up to N at once: a semaphore. The N replicas first in line run,
    /// each with a fencing token of its own; the rest queue (--wait) or
    /// exit with the conflict code. Every replica of one name must give the
    /// same N: the leader's N holds, and a replica that gives another is
    /// refused (125) before it joins the line.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_max_running)]
    pub max_running: usize,

    /// Exit code when another replica leads or the wait timed out: 0 to
    /// 255, but not 123 to 127, which leaderrun gives for other things.
    #[arg(long, value_name = "N", default_value_t = crate::exit::Exit::Conflict.code(), value_parser = parse_conflict_exit_code)]
    pub conflict_exit_code: i32,
}

#[derive(Debug, Args)]
#[command(next_help_heading = CHILD)]
pub struct ChildArgs {
    /// Signal that stops the command's whole job (its process group and
    /// every descendant that left it), then SIGCONT so that a stopped job
    /// acts on it.
    ///
    /// Sent when leadership is lost, when the command runs past --timeout,
    /// and to what an exited command left running; SIGKILL follows after
    /// --kill-after.
    #[arg(long, value_name = "SIGNAL", default_value = "TERM", value_parser = parse_signal)]
    pub kill_signal: Signal,

    /// Send SIGKILL this long after --kill-signal if the group is still
    /// there. On loss of leadership it is shortened so that SIGKILL lands
    /// before the lease could expire on the server (the warning says so).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_kill_after, allow_hyphen_values = true)]
    pub kill_after: Duration,

    /// Stop the command if it runs longer than this (--kill-signal, then
    /// SIGKILL after --kill-after, in full while the lease is kept alive),
    /// and exit 123. Counts from the command's start: --wait-timeout bounds
    /// the queueing.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// Give the command NOTIFY_SOCKET, systemd's notification socket.
    ///
    /// Under a Type=notify unit leaderrun tells systemd itself where the
    /// run stands (READY=1 once in line or leading, a STATUS= line at each
    /// stage, STOPPING=1), and the command does not inherit the socket.
    /// Pass it on to a command that sends its own notifications; the unit
    /// then needs NotifyAccess=all.
    #[arg(long)]
    pub pass_notify_socket: bool,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = OUTPUT)]
pub struct OutputArgs {
    /// Say more on stderr: -v for decisions (election name, holder, token),
    /// -vv for every step. LEADERRUN_LOG takes filter directives instead
    /// (e.g. `leaderrun=trace,h2=debug`).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// text, or json: every line leaderrun writes to stderr (its errors, a
    /// loss, why it did not run, the -v logs) as one JSON object, for log
    /// shippers.
    #[arg(
        long,
        env = "LEADERRUN_LOG_FORMAT",
        hide_env_values = true,
        value_name = "FORMAT",
        value_enum,
        default_value_t
    )]
    pub log_format: crate::logging::LogFormat,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn command_after_double_dash_may_be_named_status() {
        let cli = Cli::try_parse_from(["leaderrun", "--", "status", "-x"]).unwrap();
        assert!(cli.subcommand.is_none());
        assert_eq!(cli.command, ["status", "-x"]);
        let cli = Cli::try_parse_from(["leaderrun", "status", "--name", "a"]).unwrap();
        assert!(cli.subcommand.is_some());
    }
}
