//! leaderrun: run a command only on the replica that holds leadership in
//! etcd, hand it a fencing token, and stop it when leadership is lost.
//!
//! The path of a run through the folders (docs/design.md's Architecture section
//! draws the same):
//!
//! ```text
//! main ── cli ─────────── options, their values, --help, man pages
//!   │
//!   ├─ status ─────────── leaderrun status: read or follow the election
//!   └─ run ────────────── one run, phase by phase (protocol::table decides)
//!        ├─ etcd ──────── connection, failover, DNS discovery, TLS, requests
//!        ├─ lease ─────── grant, keep alive (keeper), local deadline, revoke
//!        ├─ election ──── join, wait in line, prove, watch our key;
//!        │                the --once-per window; names; holder values
//!        ├─ child ─────── spawn, the job, the terminal, the guardian,
//!        │                the command's environment
//!        └─ exit ──────── which error gets which exit code
//!
//! protocol (crates/protocol, a crate of its own, at the foot of the
//! house) ── pure state machines, no IO, no clock read: the table of every
//! event in every phase, the kill schedule and sequence, and their words
//! (instants, signals, exit codes as data, losses, outcomes, backoff)
//! ```
//!
//! `main` alone calls `cli`, and hands the plain values it makes (a run's
//! `Config`, `etcd::Options`, `status::Options`) down: nothing below `cli`
//! imports it. Errors come back up typed; `exit::exit_of` gives them their
//! exit code.
//!
//! Shared by all: `clock` (reading the boot-time clock every timer runs
//! on), `retry` (waiting out the protocol's backoff), `error` (finding an
//! error by its type; which errors no retry changes), `signals`, `logging`.
//! Only [`main`] and [`events`] (the log event names the tests read) are
//! public: the compiler sees everything else's use.

// In the library's tests the run reaches the simulation's processes and
// signals instead (`host`): what only the run calls of these is unused
// there, and tested by their own tests and the suite's real runs.
mod check;
#[cfg_attr(test, allow(dead_code))]
mod child;
mod cli;
mod clock;
mod election;
mod error;
mod etcd;
mod exit;
mod files;
mod host;
mod lease;
mod logging;
#[cfg(test)]
mod model;
mod retry;
mod run;
#[cfg_attr(test, allow(dead_code))]
mod signals;
#[cfg(test)]
mod simulation;
mod status;
mod steer;

pub use logging::events;

use std::ffi::OsString;

use cli::Mode;
use exit::Exit;
use logging::Level;

/// The whole program; returns the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    install_panic_hook();
    let separated = args.iter().any(|arg| arg == "--");
    let (cli, matches) = match cli::parse(&args) {
        Ok(parsed) => parsed,
        Err(err) => {
            logging::set_format(asked_format(&args));
            return usage_error(&err);
        }
    };
    let Some(sources) = settings_read(&cli, &matches) else {
        return Exit::Internal.code();
    };
    let verbose = cli.output().verbose;
    // `leaderrun -v status ...`: options before `status` make it the
    // command to run, not the subcommand. Running a program called status
    // as leader is never what that meant; `-- status` still does it.
    let subcommand = cli
        .command
        .first()
        .and_then(|first| first.to_str())
        .filter(|first| ["status", "pause", "resume", "check"].contains(first));
    if let Some(word) = subcommand.filter(|_| !separated && cli.subcommand.is_none()) {
        logging::say(
            Level::Error,
            &format!("error: options go after '{word}' (leaderrun {word} --name NAME ...); to run a program called {word}, write -- {word}"),
        );
        return Exit::Internal.code();
    }
    match cli.mode(&matches, &sources) {
        Mode::Docs(text) => print_docs(&text),
        Mode::Status(options) => execute(verbose, async {
            status::status((*options)?).await.map(Exit::code)
        }),
        Mode::Check(options) => execute(verbose, async {
            check::check((*options)?).await.map(Exit::code)
        }),
        Mode::Steer(options) => execute(verbose, async {
            steer::steer((*options)?).await.map(Exit::code)
        }),
        Mode::Run(values) => execute(verbose, async {
            let cli::Run {
                config,
                etcd,
                etcdctl,
                settings,
            } = (*values)?;
            check::log_settings(&settings);
            run::run(config, etcd, etcdctl).await
        }),
    }
}

/// The settings file, read before anything is said (it may choose the log
/// format, set here); documentation alone reads none. None, with the
/// error said, if it cannot be used.
fn settings_read(cli: &cli::Cli, matches: &clap::ArgMatches) -> Option<cli::settings::Sources> {
    let sources = match cli.docs_only() {
        true => Ok(cli::settings::Sources::default()),
        false => cli.sources(),
    };
    let format = sources
        .as_ref()
        .map_err(|err| anyhow::anyhow!("{err:#}"))
        .and_then(|sources| cli.log_format(matches, sources));
    logging::set_format(match &format {
        Ok(format) => *format,
        Err(_) => cli.output().log_format,
    });
    match (sources, format) {
        (Ok(sources), Ok(_)) => Some(sources),
        (Err(err), _) | (_, Err(err)) => {
            logging::say(Level::Error, &format!("error: {err:#}"));
            None
        }
    }
}

fn print_docs(text: &[u8]) -> i32 {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    written(stdout.write_all(text).and_then(|()| stdout.flush()))
}

/// The exit code of writing --help, --version or a page to stdout: 0, or
/// 125 with a line saying why (`>/dev/full`), as `ls --help` says "write
/// error". A reader that went away (`| head -1`) gets no line: nobody
/// reads the rest.
fn written(result: std::io::Result<()>) -> i32 {
    match result {
        Ok(()) => Exit::Success.code(),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Exit::Internal.code(),
        Err(err) => {
            logging::say(Level::Error, &format!("error: writing to stdout: {err}"));
            Exit::Internal.code()
        }
    }
}

/// Runs a mode that does its work on the runtime; its error, if any, is
/// one line on stderr and its exit code.
fn execute(verbose: u8, work: impl std::future::Future<Output = anyhow::Result<i32>>) -> i32 {
    logging::init(verbose);
    signals::unblock_listened();
    if let Err(message) = enough_file_descriptors() {
        logging::say(Level::Error, &format!("error: {message}"));
        return Exit::Internal.code();
    }
    // One thread: the child must be spawned from a thread that lives as long
    // as leaderrun (PR_SET_PDEATHSIG), and one is all a supervisor needs.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            logging::say(
                Level::Error,
                &format!("error: cannot start the runtime: {err}"),
            );
            return Exit::Internal.code();
        }
    };
    match runtime.block_on(work) {
        Ok(code) => code,
        Err(err) => {
            logging::say(Level::Error, &format!("error: {err:#}"));
            exit::code_of(&err)
        }
    }
}

/// Whatever goes wrong inside, leaderrun says so in one line and exits 125,
/// as for any other failure of its own. If the command is running, its
/// whole job is SIGKILLed first, descendants that left its group included
/// (`child::job::kill_on_panic`): a panic skips every drop. The guardian,
/// armed still, is the last resort for the group.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|text| text.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        let place = info
            .location()
            .map(|at| format!(" at {}:{}", at.file(), at.line()))
            .unwrap_or_default();
        logging::say(
            Level::Error,
            &format!("error: internal error: {message}{place}"),
        );
        child::job::kill_on_panic(std::time::Duration::from_secs(1));
        std::process::exit(Exit::Internal.code());
    }));
}

/// The file descriptors leaderrun needs at most at once, the three standard
/// ones included: the runtime (two epolls, a waker), the signal pipe, the
/// sockets to etcd, timers, a pidfd, the guardian's pipe and /dev/null, and
/// the spawn's pipe. Measured: 18 with one endpoint; one more per endpoint.
const FILE_DESCRIPTORS_NEEDED: u64 = 20;

/// Refuses a limit too low to run safely (`ulimit -n 6`), before anything
/// fails half-way: tokio panics when its signal pipe cannot be made.
fn enough_file_descriptors() -> Result<(), String> {
    use nix::sys::resource::{getrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, _)) if soft < FILE_DESCRIPTORS_NEEDED => Err(format!(
            "too few file descriptors: the limit is {soft} (ulimit -n), leaderrun needs {FILE_DESCRIPTORS_NEEDED}"
        )),
        _ => Ok(()),
    }
}

/// The --log-format the arguments ask for, read from them as given: a
/// usage error comes before they are parsed, and a log shipper that asked
/// for JSON must get that line as JSON too. The last one before `--` wins,
/// as when parsed.
fn asked_format(args: &[OsString]) -> logging::LogFormat {
    let mut format = logging::LogFormat::Text;
    let own = args.iter().take_while(|arg| *arg != "--");
    let mut value_next = false;
    for arg in own {
        let value = if value_next {
            Some(arg.as_os_str())
        } else {
            arg.to_str()
                .and_then(|arg| arg.strip_prefix("--log-format="))
                .map(std::ffi::OsStr::new)
        };
        value_next = arg == "--log-format";
        match value.and_then(|value| value.to_str()) {
            Some("json") => format = logging::LogFormat::Json,
            Some("text") => format = logging::LogFormat::Text,
            _ => {}
        }
    }
    format
}

/// clap's errors span several lines; ours are one, and exit 125, not 2.
fn usage_error(err: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        use std::io::Write;
        return written(err.print().and_then(|()| std::io::stdout().flush()));
    }
    let line = format!("error: {} (see 'leaderrun --help')", one_line(err));
    logging::say(Level::Error, &line);
    Exit::Internal.code()
}

/// clap's message without its usage and tips: the first paragraph of its
/// rendering, on one line. clap offers the message only rendered, so this
/// reads its layout; the test below pins it.
fn one_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let first_paragraph = rendered
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    first_paragraph
        .strip_prefix("error: ")
        .unwrap_or(&first_paragraph)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_format_is_read_from_arguments_that_do_not_parse() {
        let format =
            |args: &[&str]| asked_format(&args.iter().map(OsString::from).collect::<Vec<_>>());
        use logging::LogFormat::{Json, Text};
        assert_eq!(
            format(&["leaderrun", "--log-format", "json", "--ttl", "x"]),
            Json
        );
        assert_eq!(format(&["leaderrun", "--log-format=json", "--bogus"]), Json);
        assert_eq!(
            format(&["leaderrun", "--log-format=json", "--log-format", "text"]),
            Text
        );
        assert_eq!(format(&["leaderrun", "--bogus"]), Text);
        // The command's own arguments are not leaderrun's.
        assert_eq!(
            format(&["leaderrun", "--", "app", "--log-format", "json"]),
            Text
        );
    }

    #[test]
    fn clap_errors_become_one_line() {
        let parse = |args: &[&str]| {
            let args: Vec<OsString> = args.iter().map(OsString::from).collect();
            cli::parse(&args).expect_err("a usage error")
        };
        let bad_value = one_line(&parse(&["leaderrun", "--ttl", "soon", "--", "true"]));
        assert!(
            bad_value.starts_with("invalid value 'soon' for '--ttl <DURATION>': "),
            "{bad_value}"
        );
        for text in [
            bad_value,
            one_line(&parse(&["leaderrun", "--bogus", "--", "true"])),
        ] {
            assert!(!text.contains('\n') && !text.contains("Usage") && !text.contains("--help"));
        }
        let unknown = one_line(&parse(&["leaderrun", "--bogus", "--", "true"]));
        assert_eq!(unknown, "unexpected argument '--bogus' found");
    }
}
