//! The values options take: durations (bounded where etcd or safety needs
//! it) and signals. Each returns one line that says what was expected.

use std::time::Duration;

use nix::sys::signal::Signal;

const DAY: Duration = Duration::from_secs(60 * 60 * 24);

/// A duration as humantime spells it (`1m30s`, `500ms`), or bare seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("'{text}' is negative: a duration is 0 or more"));
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(text).map_err(|err| format!("{err} (expected e.g. 15s, 500ms, 2m)"))
}

/// A bound on a duration, and how the error message spells it.
type Bound = (Duration, &'static str);

/// etcd counts leases in whole seconds.
const WHOLE_SECOND: Bound = (
    Duration::from_secs(1),
    "1s (etcd counts leases in whole seconds)",
);

/// A duration between `least` and `most`; `what` names it in the error.
fn bounded(text: &str, what: &str, least: Bound, most: Bound) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration < least.0 {
        return Err(format!("{what} must be at least {}", least.1));
    }
    if duration > most.0 {
        return Err(format!("{what} must be at most {}", most.1));
    }
    Ok(duration)
}

/// --conflict-exit-code: 0 to 255, but not a code leaderrun gives for
/// something else (123 to 127): a script could no longer tell a conflict
/// from a timeout, a loss, a failure or a command that could not run.
pub fn parse_conflict_exit_code(text: &str) -> Result<i32, String> {
    use crate::exit::Exit;
    let code: i32 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number from 0 to 255"))?;
    if !(0..=255).contains(&code) {
        return Err(format!("{code} is not from 0 to 255"));
    }
    let taken = [
        (Exit::TimedOut, "--timeout"),
        (Exit::LeadershipLost, "leadership lost"),
        (Exit::Internal, "leaderrun failed"),
        (Exit::NotExecutable, "the command could not be executed"),
        (Exit::NotFound, "the command was not found"),
    ];
    match taken.iter().find(|(exit, _)| exit.code() == code) {
        Some((_, meaning)) => Err(format!(
            "{code} already means '{meaning}': choose a code that means only a conflict (75, the default, or 0 for cron)"
        )),
        None => Ok(code),
    }
}

pub fn parse_dial_timeout(text: &str) -> Result<Duration, String> {
    let least = (Duration::from_millis(10), "10ms");
    bounded(text, "the dial timeout", least, (DAY, "24h"))
}

pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let least = (Duration::from_millis(1), "1ms");
    bounded(text, "the timeout", least, (DAY * 366, "366 days"))
}

/// --wait-timeout: up to a year, as --timeout; a wait longer than that is
/// no bound at all (and a deadline past the clock's range cannot be set).
pub fn parse_wait_timeout(text: &str) -> Result<Duration, String> {
    bounded(
        text,
        "the wait timeout",
        (Duration::ZERO, "0"),
        (DAY * 366, "366 days"),
    )
}

/// --kill-after: up to a year, as --timeout; longer is no bound at all.
pub fn parse_kill_after(text: &str) -> Result<Duration, String> {
    bounded(
        text,
        "--kill-after",
        (Duration::ZERO, "0"),
        (DAY * 366, "366 days"),
    )
}

pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    bounded(text, "the TTL", WHOLE_SECOND, (DAY, "24h"))
}

pub fn parse_window(text: &str) -> Result<Duration, String> {
    bounded(text, "the window", WHOLE_SECOND, (DAY * 366, "366 days"))
}

/// `pause --for`: as a window, 1s to 366 days (a lease, in whole
/// seconds).
pub fn parse_pause_for(text: &str) -> Result<Duration, String> {
    bounded(text, "--for", WHOLE_SECOND, (DAY * 366, "366 days"))
}

/// `pause --reason`: some text, at most
/// [`REASON_LIMIT`](crate::election::pause::REASON_LIMIT) characters.
pub fn parse_reason(text: &str) -> Result<String, String> {
    use crate::election::pause::REASON_LIMIT;
    let count = text.chars().count();
    match () {
        () if text.trim().is_empty() => {
            Err("the reason is empty: say why, or leave --reason out".into())
        }
        () if count > REASON_LIMIT => Err(format!(
            "the reason is {count} characters long: at most {REASON_LIMIT}"
        )),
        () => Ok(text.to_string()),
    }
}

/// --max-running: 1 (an election) to 1000.
pub fn parse_max_running(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(count @ 1..=1000) => Ok(count),
        _ => Err(format!("'{text}' is not a count from 1 to 1000")),
    }
}

/// `--once-per-attempts`: 1 to [`MAX_ATTEMPTS`], so that a window's marker,
/// which lists them, stays small.
pub fn parse_attempts(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(count @ 1..=MAX_ATTEMPTS) => Ok(count),
        _ => Err(format!("'{text}' is not a count from 1 to {MAX_ATTEMPTS}")),
    }
}

/// The most attempts a `--once-per` window may allow.
pub const MAX_ATTEMPTS: u32 = 100;

/// A signal by name (`TERM`, `SIGTERM`, `term`) or number (`15`).
pub fn parse_signal(text: &str) -> Result<Signal, String> {
    let upper = text.trim().to_ascii_uppercase();
    let parsed = match upper.parse::<i32>() {
        Ok(number) => Signal::try_from(number).ok(),
        Err(_) => {
            let name = if upper.starts_with("SIG") {
                upper
            } else {
                format!("SIG{upper}")
            };
            name.parse::<Signal>().ok()
        }
    };
    parsed.ok_or_else(|| format!("unknown signal '{text}' (expected e.g. TERM, INT, 15)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_code_cannot_be_one_of_leaderruns_own() {
        for own in ["123", "124", "125", "126", "127"] {
            let err = parse_conflict_exit_code(own).unwrap_err();
            assert!(err.starts_with(&format!("{own} already means '")), "{err}");
        }
        for fine in ["0", "1", "75", "122", "128", "255"] {
            assert!(parse_conflict_exit_code(fine).is_ok(), "{fine}");
        }
        for bad in ["256", "-1", "x"] {
            assert!(parse_conflict_exit_code(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_and_signals_parse() {
        assert_eq!(parse_duration("15"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-5").unwrap_err().contains("negative"));
        assert_eq!(
            parse_ttl("500ms").unwrap_err(),
            "the TTL must be at least 1s (etcd counts leases in whole seconds)"
        );
        assert_eq!(parse_ttl("2d").unwrap_err(), "the TTL must be at most 24h");
        // No grace is longer than a year: a larger one never came to SIGKILL.
        assert_eq!(
            parse_kill_after("18446744073709551615s").unwrap_err(),
            "--kill-after must be at most 366 days"
        );
        assert_eq!(parse_kill_after("0"), Ok(Duration::ZERO));
        assert_eq!(parse_window("1d"), Ok(Duration::from_secs(86400)));
        assert!(parse_window("0s").is_err() && parse_window("400days").is_err());
        assert!(parse_dial_timeout("0").is_err() && parse_dial_timeout("10ms").is_ok());
        assert_eq!(parse_signal("term"), Ok(Signal::SIGTERM));
        assert_eq!(parse_signal("SIGINT"), Ok(Signal::SIGINT));
        assert_eq!(parse_signal("9"), Ok(Signal::SIGKILL));
        assert!(parse_signal("NOPE").is_err());
    }
}
