//! Where each setting comes from, in order: the command line, the
//! environment, the settings file, the default. The settings file keeps a
//! site's `ETCDCTL_*` settings (and leaderrun's own) out of every crontab
//! line: the same names and values as the variables, one `NAME=value` a
//! line, so that one file serves leaderrun, a systemd `EnvironmentFile=`
//! and a shell's `set -a; . FILE`.
//!
//! The file is `--config FILE` (or `LEADERRUN_CONFIG`), else
//! [`SYSTEM_PATH`] when it exists. It may hold a password, so it is read
//! only if nobody but its owner can read or write it ([`files`]); a name
//! it does not know, or one given twice, is refused with its line, rather
//! than a typo's setting silently left at its default.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::files::{self, Secret};

/// The settings file read when neither `--config` nor `LEADERRUN_CONFIG`
/// names one, if it exists.
pub const SYSTEM_PATH: &str = "/etc/leaderrun/leaderrun.conf";

/// The largest settings file read.
const LIMIT: u64 = 64 * 1024;

/// The names a settings file may set: the variables leaderrun reads.
pub const NAMES: [&str; 18] = [
    "ETCDCTL_ENDPOINTS",
    "LEADERRUN_ENDPOINTS",
    "ETCDCTL_DISCOVERY_SRV",
    "ETCDCTL_DISCOVERY_SRV_NAME",
    "ETCDCTL_INSECURE_DISCOVERY",
    "ETCDCTL_INSECURE_TRANSPORT",
    "ETCDCTL_DIAL_TIMEOUT",
    "ETCDCTL_COMMAND_TIMEOUT",
    "ETCDCTL_CACERT",
    "ETCDCTL_CERT",
    "ETCDCTL_KEY",
    "ETCDCTL_INSECURE_SKIP_TLS_VERIFY",
    "ETCDCTL_USER",
    "ETCDCTL_PASSWORD",
    "LEADERRUN_PASSWORD_FILE",
    "LEADERRUN_TTL",
    "LEADERRUN_HANDOFF",
    "LEADERRUN_LOG_FORMAT",
];

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An option on the command line.
    Option(&'static str),
    /// A variable of the environment.
    Variable(String),
    /// A line of the settings file.
    File { path: PathBuf, line: usize },
    /// Systemd's credentials directory (`$CREDENTIALS_DIRECTORY`).
    Credential(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Option(option) => write!(f, "{option}"),
            Origin::Variable(name) => write!(f, "{name}"),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Credential(path) => write!(f, "credential {}", path.display()),
        }
    }
}

/// A settings file, read.
#[derive(Debug)]
pub struct SettingsFile {
    pub path: PathBuf,
    entries: Vec<Entry>,
}

#[derive(Debug, PartialEq)]
struct Entry {
    name: String,
    value: String,
    line: usize,
}

impl SettingsFile {
    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<SettingsFile> {
        let bytes = files::read_bounded("the settings file", path, LIMIT, Secret::Yes)?;
        let Ok(text) = String::from_utf8(bytes) else {
            bail!("the settings file {} is not UTF-8 text", path.display());
        };
        // A byte-order mark, as some editors write one, is no name.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let entries = parse(text)
            .map_err(|err| anyhow::anyhow!("the settings file {}: {err}", path.display()))?;
        Ok(SettingsFile {
            path: path.to_path_buf(),
            entries,
        })
    }

    fn get(&self, name: &str) -> Option<(String, Origin)> {
        let entry = self.entries.iter().find(|entry| entry.name == name)?;
        let origin = Origin::File {
            path: self.path.clone(),
            line: entry.line,
        };
        Some((entry.value.clone(), origin))
    }
}

/// The lines of a settings file: `NAME=value`, blank lines and `#`
/// comments (a `#` starts one only at the start of a line, as in systemd's
/// `EnvironmentFile=`: after a value it is part of it), an optional
/// `export ` before the name, and a value in matching quotes taken without
/// them. A name not in [`NAMES`], or one
/// given twice, is refused.
fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries: Vec<Entry> = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let line_number = at + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("line {line_number}: expected NAME=value"));
        };
        let name = name.trim();
        if !NAMES.contains(&name) {
            let shown = crate::logging::printable(name);
            return Err(format!(
                "line {line_number}: {shown} is not a setting leaderrun reads (it reads {})",
                NAMES.join(", ")
            ));
        }
        if let Some(first) = entries.iter().find(|entry| entry.name == name) {
            return Err(format!(
                "line {line_number}: {name} is set twice (first on line {})",
                first.line
            ));
        }
        entries.push(Entry {
            name: name.to_string(),
            value: unquoted(value.trim()).to_string(),
            line: line_number,
        });
    }
    Ok(entries)
}

fn unquoted(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// The environment and the settings file, looked up in that order.
#[derive(Debug, Default)]
pub struct Sources {
    pub file: Option<SettingsFile>,
}

impl Sources {
    /// The settings file named by `config` (`--config` or
    /// `LEADERRUN_CONFIG`, which clap read), else [`SYSTEM_PATH`] if it
    /// exists, else none.
    pub fn load(config: Option<&Path>) -> Result<Sources> {
        let file = match config {
            Some(path) => Some(SettingsFile::read(path)?),
            None => {
                // Absent is no file; anything else that keeps it from
                // being read (a folder this user may not enter, a link to
                // nothing) is said, never taken for no file: the site's
                // endpoints are in it.
                let system = system_path();
                match std::fs::symlink_metadata(&system) {
                    Ok(_) => Some(SettingsFile::read(&system)?),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
                    Err(err) => bail!("cannot read the settings file {}: {err}", system.display()),
                }
            }
        };
        Ok(Sources { file })
    }

    /// The variable `name` from the environment (an empty value is
    /// unset), else from the settings file.
    pub fn var(&self, name: &'static str) -> Option<(String, Origin)> {
        match std::env::var(name) {
            Ok(value) if !value.trim().is_empty() => Some((value, Origin::Variable(name.into()))),
            _ => self.file_value(name),
        }
    }

    /// `name` from the settings file alone: for a setting whose variable
    /// clap reads itself, asked only when neither the option nor the
    /// variable gave it.
    pub fn file_value(&self, name: &str) -> Option<(String, Origin)> {
        self.file.as_ref()?.get(name)
    }
}

/// [`SYSTEM_PATH`]; in debug builds (the suite's),
/// `LEADERRUN_TEST_SYSTEM_CONFIG` stands for it, so that a test need not
/// write under /etc.
fn system_path() -> PathBuf {
    #[cfg(debug_assertions)]
    if let Some(path) = std::env::var_os("LEADERRUN_TEST_SYSTEM_CONFIG") {
        return PathBuf::from(path);
    }
    PathBuf::from(SYSTEM_PATH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_file_is_names_and_values() {
        let text = "# etcd\n\nETCDCTL_ENDPOINTS=https://etcd-1:2379,https://etcd-2:2379\nexport ETCDCTL_USER=\"nightly\"\n  LEADERRUN_TTL = '30s'\nETCDCTL_PASSWORD=a=b#c\n";
        let entries = parse(text).unwrap();
        let pairs: Vec<(&str, &str, usize)> = entries
            .iter()
            .map(|entry| (entry.name.as_str(), entry.value.as_str(), entry.line))
            .collect();
        assert_eq!(
            pairs,
            [
                (
                    "ETCDCTL_ENDPOINTS",
                    "https://etcd-1:2379,https://etcd-2:2379",
                    3
                ),
                ("ETCDCTL_USER", "nightly", 4),
                ("LEADERRUN_TTL", "30s", 5),
                ("ETCDCTL_PASSWORD", "a=b#c", 6),
            ]
        );
    }

    #[test]
    fn a_name_it_does_not_read_or_one_given_twice_is_refused() {
        let typo = parse("ETCDCTL_ENDPOINT=x\n").unwrap_err();
        assert!(
            typo.starts_with("line 1: ETCDCTL_ENDPOINTS is not")
                || typo.starts_with("line 1: ETCDCTL_ENDPOINT is not"),
            "{typo}"
        );
        let twice = parse("LEADERRUN_TTL=1s\nLEADERRUN_TTL=2s\n").unwrap_err();
        assert_eq!(
            twice,
            "line 2: LEADERRUN_TTL is set twice (first on line 1)"
        );
        assert_eq!(
            parse("just words\n").unwrap_err(),
            "line 1: expected NAME=value"
        );
    }

    #[test]
    fn origins_say_where_a_value_came_from() {
        let file = Origin::File {
            path: "/etc/leaderrun/leaderrun.conf".into(),
            line: 3,
        };
        assert_eq!(file.to_string(), "/etc/leaderrun/leaderrun.conf:3");
        assert_eq!(
            Origin::Variable("ETCDCTL_USER".into()).to_string(),
            "ETCDCTL_USER"
        );
        assert_eq!(Origin::Option("--user").to_string(), "--user");
    }
}
