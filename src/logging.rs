//! Logs go to stderr, and only when asked for: quiet by default, so that cron
//! mails nothing. `-v` and `-vv` raise leaderrun's own level; LEADERRUN_LOG
//! takes a full tracing filter, for debugging the libraries underneath too.
//!
//! leaderrun's own lines ("leaderrun: error: ...", the loss of leadership,
//! why it did not run) go through [`say`], so that `--log-format json` makes
//! every line on stderr one JSON object, in the shape tracing's JSON lines
//! have: `{"timestamp", "level", "fields": {"message"}, "target"}`.

use std::io::Write;
use std::sync::OnceLock;
use std::time::SystemTime;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

pub mod events;

pub const LOG_ENV: &str = "LEADERRUN_LOG";

/// How leaderrun writes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Chooses the format of every line on stderr from here on. The first
/// call wins.
pub fn set_format(format: LogFormat) {
    let _ = FORMAT.set(format);
}

fn format() -> LogFormat {
    FORMAT.get().copied().unwrap_or_default()
}

/// The filter of the logs: LEADERRUN_LOG's directives (`target=level`,
/// comma-separated, or a bare level), else -v's. tracing-subscriber's
/// `Targets`, not its `EnvFilter`: the directives people give it are
/// these, and EnvFilter's span and field matching links a regex engine
/// into every build (two large crates, compiled twice by each release
/// build, for a filter that is only ever set by hand to debug).
fn filter(verbose: u8) -> Option<Targets> {
    let given = std::env::var(LOG_ENV)
        .ok()
        .filter(|text| !text.trim().is_empty());
    if let Some(targets) = given.and_then(|text| text.parse().ok()) {
        return Some(targets);
    }
    let directives = match verbose {
        0 => return None,
        1 => "leaderrun=info",
        2 => "leaderrun=debug",
        _ => "leaderrun=trace,etcd_client=debug,tonic=debug,h2=info",
    };
    directives.parse().ok()
}

pub fn init(verbose: u8) {
    let Some(filter) = filter(verbose) else {
        return;
    };
    // A stderr that fails (a full disk, a reader gone) loses the line, and
    // that is all: tracing-subscriber would otherwise report it with
    // `eprintln!`, which panics on that same stderr.
    // Every level through the format layer (its own default is INFO):
    // the filter above decides.
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_writer(|| OneLine(std::io::stderr()))
        .log_internal_errors(false)
        .with_ansi(false);
    let _ = match format() {
        LogFormat::Text => builder.with_target(false).finish().with(filter).try_init(),
        LogFormat::Json => builder
            .json()
            .with_target(true)
            .finish()
            .with(filter)
            .try_init(),
    };
}

/// How much a line of leaderrun's own matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Info,
}

/// One of leaderrun's own lines on stderr: `leaderrun: MESSAGE`, or its
/// JSON object. Written whatever the verbosity: the callers decide when.
/// A stderr that fails (`2>/dev/full`, a closed pipe) loses the line; the
/// exit code still says what happened.
pub fn say(level: Level, message: &str) {
    // A simulated world's replicas say nothing: their thousands of lines
    // would bury a failure's report (`crate::simulation`).
    #[cfg(test)]
    if crate::clock::simulated::elapsed().is_some() {
        return;
    }
    let line = format!("leaderrun: {message}");
    let text = match format() {
        LogFormat::Text => printable(&line).into_owned(),
        LogFormat::Json => {
            let level = match level {
                Level::Error => "ERROR",
                Level::Warn => "WARN",
                Level::Info => "INFO",
            };
            let object = serde_json::json!({
                "timestamp": humantime::format_rfc3339_micros(SystemTime::now()).to_string(),
                "level": level,
                "fields": { "message": line },
                "target": "leaderrun",
            });
            object.to_string()
        }
    };
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// `text` made safe for a terminal and for a one-line format: control
/// characters (a newline, an escape sequence) and the invisible ones that
/// change how text around them reads ([`invisible`]: a right-to-left
/// override, a zero-width space) are shown escaped, as Rust escapes them
/// (`\n`, `\u{1b}`, `\u{202e}`). Every line leaderrun writes to stderr
/// goes through it, and every value another writer may have put in etcd
/// (a name, a holder, a pause) before it is shown on stdout. (JSON
/// escapes control characters itself.)
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || invisible(c);
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if unsafe_char(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Unicode's format characters (general category Cf) and its two
/// separators (Zl, Zp): invisible, yet they reorder (bidirectional
/// overrides and isolates), hide (zero-width ones, the soft hyphen) or
/// break (the line separator) the text around them on a terminal.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

/// Stderr for tracing's text lines, each made [`printable`] as [`say`]'s are. tracing
/// writes a line, its newline last, in one call.
struct OneLine(std::io::Stderr);

impl Write for OneLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (&*text, ""),
        };
        let line = printable(body);
        self.0.write_all(line.as_bytes())?;
        self.0.write_all(end.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn invisible_characters_are_shown_escaped_with_control_ones() {
        assert_eq!(
            printable("a\u{202e}RTL\u{2066}i\u{200b}z\u{ad}s\u{2028}\n"),
            "a\\u{202e}RTL\\u{2066}i\\u{200b}z\\u{ad}s\\u{2028}\\n"
        );
        assert_eq!(printable("plain é 漢字"), "plain é 漢字");
    }

    use super::*;

    #[test]
    fn control_characters_are_escaped_and_nothing_else() {
        assert_eq!(printable("plain 'é' text"), "plain 'é' text");
        assert_eq!(
            printable("cannot run 'a\nb\r\t\x1b[2J\u{7f}\u{85}'"),
            "cannot run 'a\\nb\\r\\t\\u{1b}[2J\\u{7f}\\u{85}'"
        );
    }
}
