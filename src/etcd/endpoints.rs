//! Endpoint list parsing, as etcdctl accepts it: `http://h:p`, `https://h:p`
//! or bare `h:p`, comma-separated.

use anyhow::{bail, Result};

/// The default when neither `--endpoints`, LEADERRUN_ENDPOINTS nor
/// ETCDCTL_ENDPOINTS says otherwise; the same as etcdctl's.
pub const DEFAULT: &str = "127.0.0.1:2379";

/// The endpoint list: `given` (which the command line chose), or
/// [`DEFAULT`]. Bare `host:port` means https when `tls` (any TLS option was
/// given), as with etcdctl.
pub fn resolve(given: Option<&str>, tls: bool) -> Result<Vec<String>> {
    parse(given.unwrap_or(DEFAULT), if tls { "https" } else { "http" })
}

/// Parses a comma-separated list into normalised URLs with an explicit
/// scheme, `default_scheme` where none is given.
pub fn parse(text: &str, default_scheme: &str) -> Result<Vec<String>> {
    let mut endpoints = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            continue;
        }
        endpoints.push(normalise(item, default_scheme)?);
    }
    if endpoints.is_empty() {
        bail!("no etcd endpoint given (--endpoints is empty)");
    }
    Ok(endpoints)
}

fn normalise(item: &str, default_scheme: &str) -> Result<String> {
    // `user:password@host:port`: etcdctl takes no credentials there either.
    // The item is not repeated: it holds the password, which no message
    // shows.
    if let Some((_, host)) = item.rsplit_once('@') {
        bail!(
            "malformed endpoint '…@{host}': credentials go in --user and --password \
             (or ETCDCTL_USER and ETCDCTL_PASSWORD), not in the endpoint"
        );
    }
    let (scheme, rest) = match item.split_once("://") {
        Some((scheme @ ("http" | "https"), rest)) => (scheme, rest),
        Some((scheme, _)) => {
            bail!("malformed endpoint '{item}': scheme '{scheme}' is not http or https")
        }
        None => (default_scheme, item),
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => bail!("malformed endpoint '{item}': expected host:port"),
    };
    if host.chars().any(char::is_whitespace) {
        bail!("malformed endpoint '{item}': endpoints are separated by commas");
    }
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.contains(':') && !bracketed {
        bail!("malformed endpoint '{item}': an IPv6 address goes in brackets, e.g. [::1]:2379");
    }
    let host_ok =
        !host.is_empty() && !host.contains('/') && (host.starts_with('[') == host.ends_with(']'));
    if !host_ok {
        bail!("malformed endpoint '{item}': bad host '{host}'");
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok(format!("{scheme}://{host}:{port}")),
        _ => bail!("malformed endpoint '{item}': bad port '{port}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_etcdctl_accepts() {
        assert_eq!(
            parse("127.0.0.1:2379, http://a:1,https://[::1]:3/", "http").unwrap(),
            ["http://127.0.0.1:2379", "http://a:1", "https://[::1]:3"]
        );
        assert_eq!(
            parse("127.0.0.1:2379,http://a:1", "https").unwrap(),
            ["https://127.0.0.1:2379", "http://a:1"]
        );
    }

    #[test]
    fn credentials_are_refused_and_not_repeated() {
        let refused = parse("http://me:s3cret@a:1", "http")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--password"), "{refused}");
        assert!(refused.contains("a:1"), "{refused}");
        assert!(!refused.contains("s3cret"), "{refused}");
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "localhost",
            "ftp://a:1",
            "a:0",
            "a:99999",
            ":2379",
            "a:b",
            "http://a/b:1",
            "::1:2379",
            "h:1 h:2",
            "http://u:p@a:1",
        ] {
            assert!(parse(bad, "http").is_err(), "{bad} should be rejected");
        }
    }
}
