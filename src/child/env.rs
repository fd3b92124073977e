//! What the command finds in its environment, beyond what it inherits: the
//! election's variables (`LEADERRUN_*`) and the `ETCDCTL_*` variables that
//! let an `etcdctl` (or a nested leaderrun) inside it reach the same etcd
//! as leaderrun, without repeating flags.
//!
//! No secret is added: a password reaches the command only if it was
//! already in the environment leaderrun inherited (`ETCDCTL_PASSWORD`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::etcd::ids::{LeaseId, Token};

/// What the command finds in its environment, as `--help`, the man page
/// and README describe it (README's table is checked against this).
pub const GIVEN: [(&str, &str); 7] = [
    ("LEADERRUN_TOKEN", "the fencing token: the leader key's create revision, in decimal, larger for every new leader of the election"),
    ("LEADERRUN_KEY", "the leader key, <name>/<lease id in hex> (etcd's election layout)"),
    ("LEADERRUN_LEASE", "the lease id in hex, as in LEADERRUN_KEY (etcdctl prints it zero-padded to 16 digits, and takes either); keys the command attaches to it are deleted when the run ends"),
    ("LEADERRUN_NAME", "the election name; never read back as an option, so a leaderrun inside the command derives its own election"),
    ("ETCDCTL_ENDPOINTS", "the endpoints leaderrun uses, as URLs, so that etcdctl in the command reaches the same etcd"),
    ("ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "the TLS options leaderrun was given (only those given), files as absolute paths"),
    ("ETCDCTL_USER", "the user name, only when leaderrun got --user NAME and the password from ETCDCTL_PASSWORD, which the command inherits anyway; no password is ever added"),
];

/// systemd's notification socket, which the command does not inherit
/// unless --pass-notify-socket: leaderrun speaks for the run
/// (`run::notify`), and the command's own READY=1 would be its word
/// against leaderrun's.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Variables set for the command, overriding inherited ones.
pub type Variables = Vec<(&'static str, OsString)>;

/// The election's variables.
pub fn election(token: Token, key: &str, lease: LeaseId, name: &str) -> Variables {
    vec![
        ("LEADERRUN_TOKEN", token.to_string().into()),
        ("LEADERRUN_KEY", key.into()),
        ("LEADERRUN_LEASE", format!("{lease:x}").into()),
        ("LEADERRUN_NAME", name.into()),
    ]
}

/// What leaderrun was given to reach etcd, as far as the command's
/// `ETCDCTL_*` variables repeat it, and where the credentials came from.
/// No `Debug`: `user` may hold a password.
#[derive(Clone, Default)]
pub struct Etcdctl {
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure_skip_tls_verify: bool,
    /// `--user` as given: `USER` or `USER:PASSWORD`.
    pub user: Option<String>,
    /// Whether `--user` came from ETCDCTL_USER, which the command inherits.
    pub user_inherited: bool,
    /// Whether the password came from ETCDCTL_PASSWORD, which the command
    /// inherits.
    pub password_inherited: bool,
}

/// The `ETCDCTL_*` variables for the etcd leaderrun uses: the endpoints as
/// URLs (so the scheme says whether TLS is on), the TLS files as absolute
/// paths (the command may change directory), and the user name, if its
/// password already reaches the command through `ETCDCTL_PASSWORD`.
pub fn etcdctl(args: &Etcdctl, endpoints: &[String]) -> Variables {
    let mut variables: Variables = vec![("ETCDCTL_ENDPOINTS", endpoints.join(",").into())];
    let files = [
        ("ETCDCTL_CACERT", &args.cacert),
        ("ETCDCTL_CERT", &args.cert),
        ("ETCDCTL_KEY", &args.key),
    ];
    for (name, file) in files {
        if let Some(file) = file {
            variables.push((name, absolute(file)));
        }
    }
    if args.insecure_skip_tls_verify {
        variables.push(("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "true".into()));
    }
    if let Some(user) = &args.user {
        let name = user.split_once(':').map_or(user.as_str(), |(name, _)| name);
        // A user given as a flag, whose password the command already has:
        // name it. A `USER:PASSWORD` flag or a --password flag is never
        // copied into the command's environment.
        if args.password_inherited && !args.user_inherited {
            variables.push(("ETCDCTL_USER", name.into()));
        }
    }
    variables
}

fn absolute(path: &Path) -> OsString {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .into_os_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(variables: &'a Variables, name: &str) -> Option<&'a OsString> {
        variables
            .iter()
            .find(|(variable, _)| *variable == name)
            .map(|(_, value)| value)
    }

    #[test]
    fn endpoints_and_tls_files_reach_the_command() {
        let args = Etcdctl {
            cacert: Some(PathBuf::from("/etc/etcd/ca.pem")),
            cert: Some(PathBuf::from("client.pem")),
            key: Some(PathBuf::from("/etc/etcd/client-key.pem")),
            ..Etcdctl::default()
        };
        let endpoints = ["https://a:2379".to_string(), "https://b:2379".to_string()];
        let variables = etcdctl(&args, &endpoints);
        assert_eq!(
            find(&variables, "ETCDCTL_ENDPOINTS").unwrap(),
            "https://a:2379,https://b:2379"
        );
        assert_eq!(
            find(&variables, "ETCDCTL_CACERT").unwrap(),
            "/etc/etcd/ca.pem"
        );
        let cert = PathBuf::from(find(&variables, "ETCDCTL_CERT").unwrap());
        assert!(
            cert.is_absolute() && cert.ends_with("client.pem"),
            "{cert:?}"
        );
        assert!(find(&variables, "ETCDCTL_USER").is_none());
    }

    #[test]
    fn no_password_is_added() {
        // --user u:secret: nothing about the user is passed on.
        let mut args = Etcdctl {
            user: Some("u:secret".into()),
            ..Etcdctl::default()
        };
        let variables = etcdctl(&args, &[]);
        assert!(find(&variables, "ETCDCTL_USER").is_none());
        assert!(find(&variables, "ETCDCTL_PASSWORD").is_none());

        // --user u --password secret: neither.
        args.user = Some("u".into());
        let variables = etcdctl(&args, &[]);
        assert!(find(&variables, "ETCDCTL_USER").is_none());

        // --user u with ETCDCTL_PASSWORD inherited: the name goes along.
        args.password_inherited = true;
        let variables = etcdctl(&args, &[]);
        assert_eq!(find(&variables, "ETCDCTL_USER").unwrap(), "u");
        assert!(find(&variables, "ETCDCTL_PASSWORD").is_none());

        // ETCDCTL_USER and ETCDCTL_PASSWORD both inherited: nothing to add.
        args.user_inherited = true;
        let variables = etcdctl(&args, &[]);
        assert!(find(&variables, "ETCDCTL_USER").is_none());
    }
}
