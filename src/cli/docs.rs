//! The man page and shell completions, generated from the clap definition by
//! the binary itself (`--manual`, `--completions SHELL`) and checked in under
//! man/ and completions/; a test regenerates them and fails on a difference.

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;

use crate::child::env;
use crate::cli::Cli;
use crate::exit;

pub fn completion(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "leaderrun", &mut out);
    out
}

fn section(roff: &mut Roff, title: &str, paragraphs: &[&[(&str, bool)]]) {
    roff.control("SH", [title]);
    for paragraph in paragraphs {
        roff.control("PP", []);
        roff.text(inlines(paragraph));
    }
}

/// Text in parts, each bold (`true`) or roman.
fn inlines(parts: &[(&str, bool)]) -> Vec<clap_mangen::roff::Inline> {
    parts
        .iter()
        .map(|(text, strong)| if *strong { bold(*text) } else { roman(*text) })
        .collect()
}

fn tagged(roff: &mut Roff, title: &str, items: &[(&str, &str)]) {
    roff.control("SH", [title]);
    for (tag, text) in items {
        roff.control("TP", []);
        roff.text([bold(*tag)]);
        roff.text([roman(*text)]);
    }
}

fn examples(roff: &mut Roff, items: &[(&str, &str)]) {
    roff.control("SH", ["EXAMPLES"]);
    for (what, command) in items {
        roff.control("PP", []);
        roff.text([italic(*what)]);
        roff.control("PP", []);
        roff.control("nf", []);
        roff.control("RS", ["4"]);
        roff.text([roman(*command)]);
        roff.control("RE", []);
        roff.control("fi", []);
    }
}

/// A page's title, name, synopsis, description and options: the title,
/// name and description from clap; the synopsis as written (`synopsis`:
/// the real forms, with `--`, which clap_mangen's own does not show); the
/// options under one OPTIONS section, a subsection per group
/// ([`options`]). Hyphenation is off, so that no option name is broken
/// across lines.
fn head(man: &Man, command: &clap::Command, synopsis: &[&[(&str, bool)]]) -> Vec<u8> {
    let mut out = Vec::new();
    man.render_title(&mut out).expect("writing to memory");
    let mut roff = Roff::new();
    roff.control("nh", []);
    roff.to_writer(&mut out).expect("writing to memory");
    man.render_name_section(&mut out)
        .expect("writing to memory");
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    for (at, form) in synopsis.iter().enumerate() {
        if at > 0 {
            roff.control("br", []);
        }
        roff.text(inlines(form));
    }
    roff.to_writer(&mut out).expect("writing to memory");
    let mut roff = Roff::new();
    roff.control("SH", ["DESCRIPTION"]);
    let about = command
        .get_long_about()
        .or(command.get_about())
        .map(|about| about.to_string().replace('`', ""))
        .unwrap_or_default();
    for paragraph in about.split("\n\n") {
        roff.control("PP", []);
        roff.text([roman(
            paragraph.split_whitespace().collect::<Vec<_>>().join(" "),
        )]);
    }
    options(&mut roff, command);
    roff.to_writer(&mut out).expect("writing to memory");
    out
}

/// OPTIONS: every argument of `command`, a subsection per help heading in
/// the order they first come (the general ones first), each with its
/// value, its default, its environment variable and its choices. Help
/// texts are written for `--help`, where `code` reads as it is; here the
/// backticks go.
fn options(roff: &mut Roff, command: &clap::Command) {
    roff.control("SH", ["OPTIONS"]);
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
        if !headings.contains(&arg.get_help_heading()) {
            headings.push(arg.get_help_heading());
        }
    }
    headings.sort_by_key(|heading| heading.is_some());
    for heading in headings {
        roff.control("SS", [heading.unwrap_or("General")]);
        let args = command
            .get_arguments()
            .filter(|arg| !arg.is_hide_set() && arg.get_help_heading() == heading);
        for arg in args {
            roff.control("TP", []);
            roff.text(option_tag(arg));
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|help| help.to_string().replace('`', ""))
                .unwrap_or_default();
            // clap drops a one-line help's full stop; a man page keeps it.
            let stop = if help.ends_with(['.', ')', ':']) {
                ""
            } else {
                "."
            };
            roff.text([roman(format!("{help}{stop}"))]);
            let mut notes = Vec::new();
            let defaults: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|value| value.to_string_lossy().into_owned())
                .collect();
            if !defaults.is_empty() && arg.get_action().takes_values() {
                notes.push(format!("Default: {}.", defaults.join(", ")));
            }
            let choices: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| value.get_name().to_string())
                .collect();
            if !choices.is_empty() && arg.get_action().takes_values() {
                notes.push(format!("One of: {}.", choices.join(", ")));
            }
            if let Some(env) = arg.get_env() {
                notes.push(format!(
                    "May also be given as the {} environment variable.",
                    env.to_string_lossy()
                ));
            }
            if !notes.is_empty() {
                roff.control("br", []);
                roff.text([roman(notes.join(" "))]);
            }
        }
    }
}

/// `-n, --name NAME`, as a man page sets an option: the flag bold, the
/// value italic.
fn option_tag(arg: &clap::Arg) -> Vec<clap_mangen::roff::Inline> {
    let mut tag = Vec::new();
    if let Some(short) = arg.get_short() {
        tag.push(bold(format!("-{short}")));
    }
    if let Some(long) = arg.get_long() {
        if !tag.is_empty() {
            tag.push(roman(", "));
        }
        tag.push(bold(format!("--{long}")));
    }
    let values: Vec<String> = arg
        .get_value_names()
        .unwrap_or_default()
        .iter()
        .map(|name| name.to_string())
        .collect();
    if arg.is_positional() {
        let name = values
            .first()
            .cloned()
            .unwrap_or_else(|| arg.get_id().to_string());
        tag.push(italic(format!("{name} [ARGS]...")));
    } else if arg.get_action().takes_values() && !values.is_empty() {
        tag.push(roman(" "));
        tag.push(italic(values.join(" ")));
    }
    tag
}

pub fn man_page() -> Vec<u8> {
    let mut command = Cli::command();
    // Built, so that --help and --version are among its arguments.
    command.build();
    let man = Man::new(command.clone()).date("");
    let mut out = head(
        &man,
        &command,
        &[
            &[
                ("leaderrun", true),
                (" [OPTIONS] [--] COMMAND [ARGS]...", false),
            ],
            &[
                ("leaderrun status", true),
                (
                    " [OPTIONS] [--name NAME | --all [--prefix PREFIX] | -- COMMAND [ARGS]...]",
                    false,
                ),
            ],
            &[
                ("leaderrun pause", true),
                (
                    " [OPTIONS] [--for DURATION] [--reason TEXT] [--name NAME | -- COMMAND [ARGS]...]",
                    false,
                ),
            ],
            &[
                ("leaderrun resume", true),
                (" [OPTIONS] [--name NAME | -- COMMAND [ARGS]...]", false),
            ],
            &[
                ("leaderrun check", true),
                (
                    " [OPTIONS] [--once-per DURATION] [--name NAME | -- COMMAND [ARGS]...]",
                    false,
                ),
            ],
        ],
    );
    let mut roff = Roff::new();
    subcommands(&mut roff);
    exit_status(&mut roff);
    environment(&mut roff);
    given_to_the_command(&mut roff);
    fencing(&mut roff);
    examples(&mut roff, &EXAMPLES);
    see_also(
        &mut roff,
        "leaderrun-status(1), leaderrun-check(1), etcdctl(1), flock(1), timeout(1)",
    );
    roff.to_writer(&mut out).expect("writing to memory");
    version_section(&mut out);
    out
}

/// SUBCOMMANDS. Not clap_mangen's section: it lists `help` too, and
/// points to a leaderrun-help(1) that does not exist.
fn subcommands(roff: &mut Roff) {
    tagged(
        roff,
        "SUBCOMMANDS",
        &[
            (
                "leaderrun-status(1)",
                "Show who leads an election, its token and its queue.",
            ),
            (
                "leaderrun pause [--for DURATION] [--reason TEXT]",
                "Pause an election across the fleet: until leaderrun resume, or until --for ends (an etcd lease of that length), no run of it starts. A run exits with the conflict code (saying, with -v or on a terminal, who paused, why, since and until when); a run with --wait waits out of line until the pause ends, its --wait-timeout counting, then queues as usual. A command already running is never stopped. The pause is the key NAME.paused; a second pause replaces the first. --reason is at most 200 characters; --for is 1s to 366 days. The connection options and --name (or -- COMMAND) are those of a run.",
            ),
            (
                "leaderrun resume",
                "End an election's pause (exit 0 whether it was paused or not, saying which).",
            ),
            (
                "leaderrun-check(1)",
                "Check, before a real run, that a run of an election would work: every endpoint, every permission it needs, the settings it would use.",
            ),
            (
                "leaderrun help [SUBCOMMAND]",
                "Print the help of leaderrun, or of a subcommand.",
            ),
        ],
    );
}

/// ENVIRONMENT: what leaderrun itself reads.
fn environment(roff: &mut Roff) {
    tagged(
        roff,
        "ENVIRONMENT",
        &[
            ("LEADERRUN_ENDPOINTS, ETCDCTL_ENDPOINTS", "etcd endpoints, when --endpoints is not given; the first that is set wins."),
            ("LEADERRUN_TTL", "Default for --ttl."),
            ("ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "Defaults for --cacert, --cert, --key and --insecure-skip-tls-verify, as etcdctl reads them."),
            ("ETCDCTL_USER, ETCDCTL_PASSWORD", "Defaults for --user and --password. Prefer ETCDCTL_PASSWORD to --password, which other users can read in the process list. leaderrun never prints either."),
            ("LEADERRUN_LOG", "Filter directives for debug logs on stderr: target=level, comma-separated, or a bare level, e.g. leaderrun=debug,h2=info."),
            ("LEADERRUN_STILL_WAITING_EVERY", "How often a run waiting in line with -v logs that it still waits (a duration of 1s or more; 5m by default; anything else is refused, exit 125); off turns its waiting lines off, and the reads of the line they need."),
            ("NOTIFY_SOCKET", "systemd's notification socket: when set, leaderrun tells systemd where the run stands (see --pass-notify-socket)."),
            ("TERM", "dumb turns off the live line a run waiting in line shows on a terminal (without -v; with it, the wait is logged)."),
        ],
    );
}

/// FENCING: what the token is for, and how to use it.
fn fencing(roff: &mut Roff) {
    section(
        roff,
        "FENCING",
        &[
            &[("A lease guarantees exclusivity only until it expires, and it can expire while the old leader's command still runs (a long pause, a partition). leaderrun stops the command before the lease could expire by its own monotonic clock, but a process that was frozen cannot be stopped while frozen. The fencing token closes that hole: pass ", false), ("LEADERRUN_TOKEN", true), (" with every write, and have the downstream system reject a token lower than the highest it has seen, e.g. in SQL: UPDATE jobs SET last_token = $LEADERRUN_TOKEN, ... WHERE id = 1 AND last_token <= $LEADERRUN_TOKEN (0 rows updated: a newer leader exists, stop); or in etcd, a transaction guarded on create_revision($LEADERRUN_KEY) == $LEADERRUN_TOKEN.", false)],
            &[("With --max-running above 1, runners hold different tokens at once, and the smaller may be a legitimate runner: fence per runner, not by the largest token. Keep the token per slot or per item a runner claims (a row's last_token, compared and set by that runner), or use the etcd guard on the runner's own key, which holds for any N.", false)],
            &[("A cluster copied with etcdctl make-mirror numbers revisions anew, so tokens go backwards there: reset the fences, or restore from a snapshot with etcdutl snapshot restore --bump-revision N --mark-compacted (etcd 3.5 and later), which keeps tokens growing.", false)],
        ],
    );
}

/// leaderrun(1)'s EXAMPLES: what each is for, and the line.
const EXAMPLES: [(&str, &str); 5] = [
            ("A crontab line on every replica: one runs the job, the others stay silent, and at most one run starts per hour-long window, so a replica whose clock is late, even by a second, does not run a short job again. cron's PATH is /usr/bin:/bin, where the packages install leaderrun, and cron passes on none of a login shell's variables, so the endpoints are in the line:", "0 0 * * *  leaderrun --endpoints etcd1:2379,etcd2:2379 --once-per 1h -- /usr/local/bin/nightly-batch"),
            ("Against an etcd with TLS, client certificates and authentication:", "ETCDCTL_PASSWORD=... leaderrun --endpoints etcd1:2379 --cacert ca.pem --cert client.pem --key client-key.pem --user batch -- ./job"),
            ("A CI step that queues behind other deploys, for at most ten minutes:", "leaderrun --name deploy/prod --wait --wait-timeout 10m -- ./deploy.sh"),
            ("By hand, in a terminal (Ctrl-C reaches the command):", "leaderrun --name maintenance -- psql"),
            ("Who leads, as JSON:", "leaderrun status --name deploy/prod --json"),
];

/// EXIT STATUS, from the one table of exit codes.
fn exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for row in &exit::TABLE {
        roff.control("TP", []);
        roff.text([bold(row.code)]);
        roff.text([roman(capitalised(row.meaning))]);
    }
    roff.control("PP", []);
    roff.text([roman(exit::WHOSE_CODE)]);
}

/// THE COMMAND'S ENVIRONMENT, from the one table of what it gets.
fn given_to_the_command(roff: &mut Roff) {
    roff.control("SH", ["THE COMMAND'S ENVIRONMENT"]);
    roff.control("PP", []);
    roff.text([roman(
        "Set for the command, overriding any inherited value:",
    )]);
    for (name, meaning) in &env::GIVEN {
        roff.control("TP", []);
        roff.text([bold(*name)]);
        roff.text([roman(capitalised(meaning))]);
    }
}

/// A table's text as a sentence: capitalised, with a full stop.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    let first = chars.next().map(|c| c.to_uppercase().to_string());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

/// VERSION: the version alone. clap_mangen's would print `--version`'s
/// text, which names the commit, and the checked-in page would change with
/// every commit.
fn version_section(out: &mut Vec<u8>) {
    let mut roff = Roff::new();
    roff.control("SH", ["VERSION"]);
    roff.text([roman(concat!("v", env!("CARGO_PKG_VERSION")))]);
    roff.to_writer(out).expect("writing to memory");
}

fn see_also(roff: &mut Roff, pages: &str) {
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(pages)]);
}

/// leaderrun-status(1): the `status` subcommand, with what it prints.
pub fn status_man_page() -> Vec<u8> {
    let status = Cli::command()
        .find_subcommand("status")
        .expect("the status subcommand")
        .clone()
        .name("leaderrun-status")
        .bin_name("leaderrun status")
        // For the title; `status` itself takes no --version.
        .version(env!("CARGO_PKG_VERSION"))
        .disable_version_flag(true);
    let mut status = status;
    status.build();
    let man = Man::new(status.clone()).date("");
    let mut out = head(
        &man,
        &status,
        &[&[
            ("leaderrun status", true),
            (
                " [OPTIONS] [--name NAME | --all [--prefix PREFIX] | -- COMMAND [ARGS]...]",
                false,
            ),
        ]],
    );
    let mut roff = Roff::new();
    what_status_prints(&mut roff);
    run_records(&mut roff);
    status_exit_status(&mut roff);
    examples(&mut roff, &STATUS_EXAMPLES);
    see_also(&mut roff, "leaderrun(1), etcdctl(1)");
    roff.to_writer(&mut out).expect("writing to memory");
    version_section(&mut out);
    out
}

/// WHAT IT PRINTS: each of status's outputs.
fn what_status_prints(roff: &mut Roff) {
    tagged(
        roff,
        "WHAT IT PRINTS",
        &[
            ("text", "Lines \"election:\", \"leader:\" (pid, host, the time it became leader, token; or \"none\"), \"paused:\" (while paused: who, on which host, since and until when, and why), \"command:\", \"token:\", \"key:\", \"lease:\" (id in hex and seconds left), \"waiting:\" (how many are queued with --wait, then the first 20 of them in line order, a line each: place in line, pid, host, since when it waits, token, command), when a --once-per marker stands, \"once-per:\" (what its runs left of the window: open, taken by a run under way, or spent; each run with when it claimed the window, where, its token and how it ended; and when the window closes, or that it never does), and from the run records \"this run:\" (a run in progress; \"last start:\" instead when its leader is gone with no end recorded), \"last run:\" and \"last success:\" (outcome, host, start and end, token). A key with no lease that blocks the election is named as stale, with the etcdctl del (and the endpoints) that removes it."),
            ("--json", "One JSON object: name (a name that is not UTF-8 has its bad bytes escaped as \\xNN, and name_base64 is added with its exact bytes), key, token, lease (hex), ttl (seconds left), holder {host, pid, started, command; for another tool's candidate, etcdctl elect's or lock's, host, pid and started are null, command is its value and other_tool is true}, paused (the pause: user, host, since, until, reason, lease; only raw and lease for a pause key leaderrun did not write; null when not paused), waiters (how many wait), queue (those who wait, in line order: place, key, token, lease and the holder's fields, started being since when it waits), last_run (the --once-per window's run: host, pid, started, command, token, window_left in seconds; or null), last_started (the last recorded start: the run record's fields plus state, one of running, leader_gone, ended; or null), and last_finished and last_succeeded (run records: host, pid, token, command, started, finished, duration_s, exit_code, and outcome, one of running, succeeded, failed, signalled, lost, timed_out, not_started; or null). With --max-running above 1, also holders (every runner) and max_running. With nobody leading, key, token, lease, ttl and holder are null."),
            ("--watch", "A line per change of leader, in order, each starting with the time it was seen: \"NAME: led by pid PID on HOST (token N)\", \"NAME: no leader\", or \"NAME: blocked by\" a stale key; and a line per change of the election's pause, \"NAME: paused by ...\" (also first, if it is paused) or \"NAME: resumed\". It follows etcd's watch, so a queue that hands over quickly still gets a line per leader; it rides out an etcd restart, and ends on SIGINT or SIGTERM with exit 0, or quietly when its reader goes away."),
        ],
    );
}

/// RUN RECORDS: the keys every run writes, and how far they can be trusted.
fn run_records(roff: &mut Roff) {
    section(
        roff,
        "RUN RECORDS",
        &[
            &[("Every run writes ", false), ("<name>.last-started", true), (" (as it starts, and again as it ends), ", false), ("<name>.last-finished", true), (" and ", false), ("<name>.last-succeeded", true), (". Writes are fenced by entitlement, not by token: a run that still holds its leader key records its end unconditionally (it finished last, whatever the tokens say, with --max-running above 1 too); a run that lost its key writes only over records not written since its win was proven; last-started is the run that started last: the one whose win was proven last (with one runner, the largest token; each record carries its proof's revision, proven_at), where one above the store's revision, copied from another cluster, is replaced.", false)],
            &[("--max-age compares the record's end time, by the writer's clock, with this machine's clock. A success dated in the future is not fresh (the writer's clock is ahead, so its age cannot be known); a writer whose clock is behind makes a success look older, a false stale that no record can correct. Keep the clocks on NTP and choose --max-age with a margin over the job's period.", false)],
            &[("Records and tokens copied into another cluster (etcdctl make-mirror) carry that cluster's revisions: new runs replace the records, but tokens start again low there, so a downstream fence that keeps the largest token refuses every new leader until it is reset; restoring a snapshot with etcdutl snapshot restore --bump-revision N --mark-compacted (etcd 3.5 and later) keeps tokens growing.", false)],
        ],
    );
}

/// leaderrun-status(1)'s EXIT STATUS: its own codes, from the one table.
fn status_exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit::status_rows() {
        roff.control("TP", []);
        roff.text([bold(code)]);
        roff.text([roman(capitalised(&meaning))]);
    }
}

/// leaderrun-status(1)'s EXAMPLES.
const STATUS_EXAMPLES: [(&str, &str); 3] = [
    (
        "Who leads the deploys:",
        "leaderrun status --name deploy/prod",
    ),
    (
        "The election of a crontab line, named by the same command line the replicas run:",
        "leaderrun status -- /usr/local/bin/nightly-batch",
    ),
    (
        "A line per change of leader:",
        "leaderrun status --name deploy/prod --watch",
    ),
];

/// leaderrun-check(1): the `check` subcommand, with what it prints.
pub fn check_man_page() -> Vec<u8> {
    let mut check = Cli::command()
        .find_subcommand("check")
        .expect("the check subcommand")
        .clone()
        .name("leaderrun-check")
        .bin_name("leaderrun check")
        // For the title; `check` itself takes no --version.
        .version(env!("CARGO_PKG_VERSION"))
        .disable_version_flag(true);
    check.build();
    let man = Man::new(check.clone()).date("");
    let mut out = head(
        &man,
        &check,
        &[&[
            ("leaderrun check", true),
            (
                " [OPTIONS] [--once-per DURATION] [--name NAME | -- COMMAND [ARGS]...]",
                false,
            ),
        ]],
    );
    let mut roff = Roff::new();
    tagged(
        &mut roff,
        "WHAT IT PRINTS",
        &[
            ("settings:", "Each setting a run would use, with where it came from: an option, its environment variable, the settings file (FILE:LINE), a systemd credential, or the default; and the settings file read. The password is shown as set or none, never itself. With --discovery-srv, the SRV records looked up, and under endpoints: the endpoints they named."),
            ("endpoints:", "A line per endpoint, each dialled on its own: reached, etcd's version, the id of its cluster (endpoints of two clusters are a problem), the raft leader it knows (its name and member id), TLS by the endpoint's URL (verified against --cacert or the system's CAs, not verified with --insecure-skip-tls-verify, or none for http://) and the user it authenticated as; or refused (credentials, a certificate), or not usable (unreachable, silent, or with no raft leader)."),
            ("permissions:", "A line per grant a run of the election needs: readwrite on the prefix NAME/ (the replicas' keys), read on NAME.paused (the pause, which every run's first write compares), readwrite on NAME.once-per (the --once-per window's marker) and on NAME.last-started, .last-finished and .last-succeeded (the run records; with --once-per, read on NAME.last-started is needed, since the window's claim reads it). Each is proven by a transaction whose comparison never holds: etcd checks the permission of every operation in both branches before it looks at the comparison, and nothing is written."),
        ],
    );
    tagged(
        &mut roff,
        "EXIT STATUS",
        &[
            ("0", "A run would work. Warnings, each a line on stderr starting with leaderrun: warning:, may remain: an endpoint not usable while another was, no grant for the run records (runs work, but leave no record), or, without --once-per, none for the window's marker."),
            ("125", "A run would not work: a line on stderr per problem, each starting with leaderrun: error: (no endpoint usable, credentials or a certificate refused, endpoints of different clusters, a missing grant: with --once-per, the marker's and read on NAME.last-started too; an election stuck for ever: a key with no lease at the head of the line, or with --once-per a marker with no lease), or check itself failed (usage, a file that cannot be read, a stdout that cannot be written)."),
        ],
    );
    examples(
        &mut roff,
        &[
            (
                "Before the first real run of a crontab line, with the variables the line sets:",
                "ETCDCTL_USER=nightly ETCDCTL_PASSWORD=... leaderrun check --name jobs/nightly --once-per 1h",
            ),
            (
                "In a provisioning script:",
                "leaderrun check --name jobs/nightly || exit 1",
            ),
        ],
    );
    see_also(&mut roff, "leaderrun(1), leaderrun-status(1), etcdctl(1)");
    roff.to_writer(&mut out).expect("writing to memory");
    version_section(&mut out);
    out
}
