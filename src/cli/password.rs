//! The password for `--user`, from the first of: `--password`,
//! `--password-file`, ETCDCTL_PASSWORD, LEADERRUN_PASSWORD_FILE, the
//! settings file's ETCDCTL_PASSWORD or LEADERRUN_PASSWORD_FILE, and
//! systemd's credential `etcd-password` (`LoadCredential=` puts it in
//! `$CREDENTIALS_DIRECTORY`). A password file is read only if nobody but
//! its owner can read or write it, and only its first line is the
//! password: a crontab line then names a file, never the password.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;

use super::settings::{Origin, Sources};
use super::ConnectionArgs;
use crate::files::{self, Secret};

/// The largest password file read.
const LIMIT: u64 = 4096;

/// The name of the systemd credential leaderrun reads.
pub const CREDENTIAL: &str = "etcd-password";

/// The password and where it came from; None without one. `user` is the
/// user as given: a password in `USER:PASSWORD` outranks one from the
/// environment or a file (a nested leaderrun's, or a variable exported
/// beside it), and makes the credential unneeded.
pub fn password(
    args: &ConnectionArgs,
    matches: &ArgMatches,
    sources: &Sources,
    user: Option<&str>,
) -> Result<Option<(String, Origin)>> {
    let inline = user.is_some_and(|user| user.contains(':'));
    let source = |id| matches.value_source(id);
    // clap refuses --password beside --password-file.
    match (
        source("password"),
        &args.password,
        source("password_file"),
        &args.password_file,
    ) {
        (Some(ValueSource::CommandLine), Some(password), _, _) => {
            return Ok(Some((password.clone(), Origin::Option("--password"))))
        }
        (_, _, Some(ValueSource::CommandLine), Some(path)) => {
            let password = read("--password-file", path)?;
            return Ok(Some((password, Origin::Option("--password-file"))));
        }
        _ => {}
    }
    if inline {
        return Ok(None);
    }
    if let (Some(ValueSource::EnvVariable), Some(password)) = (source("password"), &args.password) {
        return Ok(Some((
            password.clone(),
            Origin::Variable("ETCDCTL_PASSWORD".into()),
        )));
    }
    if let (Some(ValueSource::EnvVariable), Some(path)) =
        (source("password_file"), &args.password_file)
    {
        let password = read("LEADERRUN_PASSWORD_FILE", path)?;
        return Ok(Some((
            password,
            Origin::Variable("LEADERRUN_PASSWORD_FILE".into()),
        )));
    }
    if let Some(found) = sources.file_value("ETCDCTL_PASSWORD") {
        return Ok(Some(found));
    }
    if let Some((path, origin)) = sources.file_value("LEADERRUN_PASSWORD_FILE") {
        let password = read(
            &format!("LEADERRUN_PASSWORD_FILE ({origin})"),
            Path::new(&path),
        )?;
        return Ok(Some((password, origin)));
    }
    if user.is_none() {
        return Ok(None);
    }
    credential()
}

/// systemd's credential, if the unit loaded one.
fn credential() -> Result<Option<(String, Origin)>> {
    let Some(directory) = std::env::var_os("CREDENTIALS_DIRECTORY").filter(|dir| !dir.is_empty())
    else {
        return Ok(None);
    };
    let path = PathBuf::from(directory).join(CREDENTIAL);
    if !path.exists() {
        return Ok(None);
    }
    let password = read("the credential", &path)?;
    Ok(Some((password, Origin::Credential(path))))
}

/// The first line of a password file.
fn read(what: &str, path: &Path) -> Result<String> {
    let bytes = files::read_bounded(what, path, LIMIT, Secret::Yes)?;
    let Ok(text) = String::from_utf8(bytes) else {
        bail!("{what} {} is not UTF-8 text", path.display());
    };
    let password = text
        .lines()
        .next()
        .unwrap_or_default()
        .trim_end_matches('\r');
    if password.is_empty() {
        bail!(
            "{what} {} holds no password (its first line is empty)",
            path.display()
        );
    }
    Ok(password.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_password_file_gives_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p");
        std::fs::write(&file, "s3cret\r\nignored\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read("--password-file", &file).unwrap(), "s3cret");
        std::fs::write(&file, "\n").unwrap();
        let empty = read("--password-file", &file).unwrap_err();
        assert!(format!("{empty}").contains("holds no password"), "{empty}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let loose = read("--password-file", &file).unwrap_err();
        assert!(format!("{loose}").contains("chmod 600"), "{loose}");
    }
}
