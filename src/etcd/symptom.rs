//! What a failed request says about leaderrun's own options (credentials,
//! TLS, the endpoint's scheme), read from the error's types: rustls's
//! errors and alerts, std::io's error kinds, hyper's and h2's closed
//! connections, and etcd's status codes. Text is read only where no type is
//! left: etcd's own refusals (etcd's message is its API; its client
//! compares them too), and a status that carries a transport failure as
//! text ([`of_text`]). The tests that trigger each hint pin that text.

use std::error::Error as StdError;

use rustls::{AlertDescription, CertificateError};
use tonic::Code;

/// etcd's `ErrUserEmpty` (rpctypes): authentication is on, and the
/// request came with no user. Its messages are etcd's API (its own client
/// compares them too).
pub(super) const USER_EMPTY: &str = "etcdserver: user name is empty";

/// The cause of a failure, as far as a hint goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symptom {
    /// etcd has authentication on, and we gave no user.
    NoUser,
    /// The server's certificate is signed by a CA we do not trust.
    UnknownIssuer,
    /// The server refused our client certificate, or wanted one.
    CertificateRefused,
    /// The connection was closed or reset without an answer.
    Dropped,
    Other,
}

impl Symptom {
    pub fn of(err: &etcd_client::Error) -> Symptom {
        let mut cause: Option<&(dyn StdError + 'static)> = match err {
            etcd_client::Error::GRpcStatus(status) => {
                if status.code() == Code::InvalidArgument && status.message() == USER_EMPTY {
                    return Symptom::NoUser;
                }
                Some(status)
            }
            etcd_client::Error::TransportError(inner) => Some(inner),
            etcd_client::Error::IoError(inner) => Some(inner),
            _ => None,
        };
        while let Some(current) = cause {
            if let Some(symptom) = of_one(current) {
                return symptom;
            }
            cause = current.source();
        }
        match err {
            etcd_client::Error::GRpcStatus(status) => of_text(status.message()),
            _ => Symptom::Other,
        }
    }

    /// A TLS handshake failed on a certificate: etcd refused ours, or we
    /// do not trust its.
    pub fn is_certificate(self) -> bool {
        matches!(self, Symptom::UnknownIssuer | Symptom::CertificateRefused)
    }

    /// What to check, given whether TLS is in use, whether a TLS option was
    /// given, and whether we present a client certificate.
    pub fn hint(self, https: bool, tls_options: bool, client_certificate: bool) -> &'static str {
        match self {
            Symptom::NoUser => " (etcd has authentication on: give --user)",
            Symptom::UnknownIssuer => " (is its CA in --cacert?)",
            Symptom::CertificateRefused if client_certificate => {
                " (etcd refused the client certificate: is it signed by a CA etcd trusts, and not expired?)"
            }
            Symptom::CertificateRefused => {
                " (does etcd want a client certificate? see --cert, --key)"
            }
            // etcd drops a TLS connection that brings no certificate
            // without a word, and a plain-text one that reaches a TLS port.
            Symptom::Dropped if https && !client_certificate => {
                " (does etcd want a client certificate? see --cert, --key)"
            }
            // A TLS option only makes bare host:port https; a written
            // http:// stays plain text.
            Symptom::Dropped if !https && tls_options => {
                " (does etcd serve TLS there? then write https://)"
            }
            Symptom::Dropped if !https => {
                " (does etcd serve TLS there? then use https:// or a TLS option)"
            }
            _ => "",
        }
    }
}

/// One error of a chain, by its type.
fn of_one(cause: &(dyn StdError + 'static)) -> Option<Symptom> {
    if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
        return of_tls(tls);
    }
    if let Some(io) = cause.downcast_ref::<std::io::Error>() {
        return of_io(io);
    }
    if let Some(http) = cause.downcast_ref::<hyper::Error>() {
        // A request cancelled because its connection closed under it.
        if http.is_closed() || http.is_canceled() || http.is_incomplete_message() {
            return Some(Symptom::Dropped);
        }
    }
    if let Some(http2) = cause.downcast_ref::<h2::Error>() {
        // h2's source() skips the io::Error it wraps (and std's io::Error
        // skips its own inner error): look inside here, or a TLS alert
        // would never be seen.
        if let Some(symptom) = http2.get_io().and_then(of_io) {
            return Some(symptom);
        }
        if http2.is_go_away() || http2.is_io() {
            return Some(Symptom::Dropped);
        }
    }
    None
}

/// The fallback when no type is left to read: h2 hands a TLS error on as an
/// I/O error that keeps only its text, and tonic sometimes reports a
/// transport failure as a status whose message is the only trace of its
/// cause (both seen with etcd 3.7 refusing a missing client certificate:
/// "received fatal alert: CertificateRequired"). The names
/// read here are rustls's alert names and std's error texts; the unit test
/// and `security.rs` pin them.
fn of_text(message: &str) -> Symptom {
    let alerts = [
        "CertificateRequired",
        "BadCertificate",
        "UnknownCA",
        "CertificateExpired",
    ];
    let dropped = ["connection closed", "broken pipe", "connection reset"];
    let lower = message.to_lowercase();
    if alerts.iter().any(|alert| message.contains(alert)) {
        Symptom::CertificateRefused
    } else if dropped.iter().any(|symptom| lower.contains(symptom)) {
        Symptom::Dropped
    } else {
        Symptom::Other
    }
}

/// An I/O error: a TLS error inside it, or a connection dropped.
fn of_io(io: &std::io::Error) -> Option<Symptom> {
    if let Some(tls) = io
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        return of_tls(tls);
    }
    use std::io::ErrorKind::*;
    match io.kind() {
        ConnectionReset | BrokenPipe | UnexpectedEof => Some(Symptom::Dropped),
        // h2 passes a TLS error on as an I/O error of this kind that keeps
        // only its text ("received fatal alert: CertificateRequired").
        InvalidData => Some(of_text(&io.to_string())).filter(|symptom| *symptom != Symptom::Other),
        _ => None,
    }
}

fn of_tls(err: &rustls::Error) -> Option<Symptom> {
    match err {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            Some(Symptom::UnknownIssuer)
        }
        // Which alert depends on the server's Go version: for a
        // certificate signed by a CA it does not trust, etcd 3.4 sends
        // BadCertificate and 3.7 UnknownCA; newer Go sends
        // CertificateExpired for an expired one.
        rustls::Error::AlertReceived(
            AlertDescription::CertificateRequired
            | AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateExpired,
        ) => Some(Symptom::CertificateRefused),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_and_io_errors_are_read_by_type() {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert_eq!(of_one(&unknown), Some(Symptom::UnknownIssuer));
        let wrapped = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(AlertDescription::CertificateRequired),
        );
        assert_eq!(of_one(&wrapped), Some(Symptom::CertificateRefused));
        let expired = rustls::Error::AlertReceived(AlertDescription::CertificateExpired);
        assert_eq!(of_one(&expired), Some(Symptom::CertificateRefused));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(of_one(&reset), Some(Symptom::Dropped));
        let as_text = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "received fatal alert: CertificateRequired",
        );
        assert_eq!(of_one(&as_text), Some(Symptom::CertificateRefused));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(of_one(&refused), None);
        // A status that carries its cause only as text.
        let alert = tonic::Status::unavailable(
            "connection error: received fatal alert: CertificateRequired",
        );
        assert_eq!(
            Symptom::of(&etcd_client::Error::GRpcStatus(alert)),
            Symptom::CertificateRefused
        );
        let status = tonic::Status::invalid_argument(USER_EMPTY);
        assert_eq!(
            Symptom::of(&etcd_client::Error::GRpcStatus(status)),
            Symptom::NoUser
        );
    }
}
