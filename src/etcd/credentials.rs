//! TLS material and etcd user credentials. The TLS files are read at start
//! (a bad one is a usage error) and again for every new connection: a
//! certificate renewed in place on disk is used from the next one on.
//!
//! The password lives here and nowhere else: [`Credentials`] redacts it in
//! `Debug`, and no error message built here quotes it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use crate::etcd::Options;

/// How to secure and authenticate connections to etcd.
#[derive(Clone, Default)]
pub struct Credentials {
    /// Where the TLS files are. Kept as given, not resolved: a Kubernetes
    /// Secret is renewed by swapping the symbolic link its files go
    /// through, and a resolved path would keep the old files.
    files: TlsFiles,
    /// What the TLS files held when last read whole and good: used when a
    /// read again fails (a renewal caught half done).
    last_read: Arc<Mutex<Tls>>,
    skip_verify: bool,
    /// Whether any TLS option was given: then bare `host:port` endpoints
    /// mean https, as with etcdctl.
    tls_requested: bool,
    user: Option<(String, String)>,
}

/// The TLS files given: CAs to trust instead of the system's, and the
/// client certificate and its key.
#[derive(Clone, Default)]
struct TlsFiles {
    ca: Option<PathBuf>,
    identity: Option<(PathBuf, PathBuf)>,
}

/// What the TLS files hold, PEM.
#[derive(Clone, Default)]
struct Tls {
    ca: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl TlsFiles {
    /// Reads every file, checking that each holds what its flag wants.
    fn read(&self) -> Result<Tls> {
        let ca = match &self.ca {
            Some(path) => Some(read_pem("--cacert", path, Pem::Certificate)?),
            None => None,
        };
        let identity = match &self.identity {
            Some((cert, key)) => Some((
                read_pem("--cert", cert, Pem::Certificate)?,
                read_pem("--key", key, Pem::PrivateKey)?,
            )),
            None => None,
        };
        Ok(Tls { ca, identity })
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("ca", &self.files.ca.is_some())
            .field("client_certificate", &self.files.identity.is_some())
            .field("skip_verify", &self.skip_verify)
            .field("user", &self.user.as_ref().map(|(name, _)| name))
            .finish_non_exhaustive()
    }
}

impl Credentials {
    pub fn from_options(args: &Options) -> Result<Self> {
        let identity = match (&args.cert, &args.key) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            (None, None) => None,
            // The command line enforces the pair; this is for options built otherwise.
            _ => bail!("--cert and --key go together"),
        };
        let files = TlsFiles {
            ca: args.cacert.clone(),
            identity,
        };
        let tls = files.read()?;
        let user = match (&args.user, args.password.as_deref()) {
            (None, None) => None,
            (None, Some(_)) => bail!(
                "a password is given (--password, --password-file, their variables or the settings file), but no --user"
            ),
            (Some(user), password) => Some(split_user(user, password)?),
        };
        let given = files.ca.is_some() || files.identity.is_some();
        let credentials = Credentials {
            tls_requested: given || args.insecure_skip_tls_verify,
            files,
            last_read: Arc::new(Mutex::new(tls.clone())),
            skip_verify: args.insecure_skip_tls_verify,
            user,
        };
        if credentials.tls_requested {
            // Parse the PEM files now, so that a bad one is a usage error
            // and not an endpoint that seems unreachable.
            let probe = Endpoint::from_static("https://localhost:2379");
            if let Err(err) = credentials.secure_with(&tls, probe, None) {
                let mut causes: Vec<String> = err.chain().map(ToString::to_string).collect();
                causes.retain(|cause| cause != "transport error");
                bail!("{}", causes.join(": "));
            }
        }
        Ok(credentials)
    }

    pub fn has_client_certificate(&self) -> bool {
        self.files.identity.is_some()
    }

    pub fn tls_requested(&self) -> bool {
        self.tls_requested
    }

    /// User name and password for etcd's authentication, if any.
    pub fn user(&self) -> Option<(&str, &str)> {
        self.user
            .as_ref()
            .map(|(name, password)| (name.as_str(), password.as_str()))
    }

    /// Adds TLS to an https endpoint, with the TLS files read again: a
    /// certificate renewed in place on disk (cert-manager renewing a
    /// Secret) is used from the next connection on, and one read at start
    /// and expired since is not kept. Files that no longer read whole and
    /// good (a renewal caught half done) give way to what they held when
    /// last read: the handshake then says whether that still does.
    ///
    /// `server_name`: the name the server's certificate must show, when it
    /// is not the endpoint's host (DNS SRV discovery's domain).
    pub fn secure(&self, endpoint: Endpoint, server_name: Option<&str>) -> Result<Endpoint> {
        let fresh = self.files.read().and_then(|tls| {
            let secured = self.secure_with(&tls, endpoint.clone(), server_name)?;
            Ok((tls, secured))
        });
        let last_read = &self.last_read;
        match fresh {
            Ok((tls, secured)) => {
                *last_read.lock().expect("not poisoned") = tls;
                Ok(secured)
            }
            Err(err) => {
                tracing::info!("{err:#}; using the TLS files as read before");
                let tls = last_read.lock().expect("not poisoned").clone();
                self.secure_with(&tls, endpoint, server_name)
            }
        }
    }

    /// Adds TLS to an https endpoint, with `tls` as the files' content.
    fn secure_with(
        &self,
        tls: &Tls,
        endpoint: Endpoint,
        server_name: Option<&str>,
    ) -> Result<Endpoint> {
        let mut config = ClientTlsConfig::new().assume_http2(true);
        if let Some(name) = server_name {
            config = config.domain_name(name);
        }
        if let Some((cert, key)) = &tls.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        let endpoint = if self.skip_verify {
            let verifier = Arc::new(AcceptAnyServerCertificate::new());
            endpoint.tls_config_with_verifier(config, verifier)
        } else {
            config = match &tls.ca {
                Some(ca) => config.ca_certificate(Certificate::from_pem(ca)),
                None => config.with_native_roots(),
            };
            endpoint.tls_config(config)
        };
        endpoint.context("invalid TLS options (--cacert, --cert, --key)")
    }
}

/// `--user USER[:PASSWORD]` and `--password`, as etcdctl takes them.
fn split_user(user: &str, password: Option<&str>) -> Result<(String, String)> {
    let (name, inline) = match user.split_once(':') {
        Some((name, inline)) => (name, Some(inline)),
        None => (user, None),
    };
    if name.is_empty() {
        bail!("--user needs a user name (USER[:PASSWORD])");
    }
    let password = match (inline, password) {
        (Some(_), Some(_)) => {
            bail!("the password for --user is given twice: in USER:PASSWORD and in --password")
        }
        (Some(password), None) | (None, Some(password)) => password,
        // etcdctl would prompt; leaderrun leaves the terminal to the command.
        (None, None) => bail!(
            "no password for etcd user '{name}': give --password-file (or \
             LEADERRUN_PASSWORD_FILE, or a settings file's), --password or ETCDCTL_PASSWORD"
        ),
    };
    Ok((name.to_string(), password.to_string()))
}

/// What a PEM file given to a flag must hold.
#[derive(Clone, Copy, PartialEq)]
enum Pem {
    Certificate,
    PrivateKey,
}

/// Reads a PEM file and checks, by its block labels (RFC 7468), that it
/// holds what the flag wants: a certificate given as a key (or the other way
/// round) is our fault, and is said so here rather than as a handshake
/// failure later.
/// The largest TLS file read: a chain of a few certificates is kilobytes.
const PEM_LIMIT: u64 = 1024 * 1024;

fn read_pem(flag: &str, path: &Path, wanted: Pem) -> Result<Vec<u8>> {
    let bytes = crate::files::read_bounded(flag, path, PEM_LIMIT, crate::files::Secret::No)?;
    let shown = path.display();
    let Some(found) = pem_sections(&bytes) else {
        bail!("{flag} {shown} is not a PEM file");
    };
    match wanted {
        Pem::Certificate if found.certificate => Ok(bytes),
        Pem::PrivateKey if found.key => Ok(bytes),
        Pem::Certificate if found.key => {
            bail!("{flag} {shown} holds a private key, not a certificate (the key goes to --key)")
        }
        Pem::PrivateKey if found.certificate => {
            bail!("{flag} {shown} holds a certificate, not a private key (it goes to --cert)")
        }
        Pem::Certificate => bail!("{flag} {shown} holds no certificate"),
        Pem::PrivateKey => bail!("{flag} {shown} holds no private key"),
    }
}

/// What a PEM file holds, parsed (not searched for markers): a section
/// whose base64 is damaged does not count.
struct Sections {
    certificate: bool,
    key: bool,
}

/// None if the file holds no PEM section at all.
fn pem_sections(bytes: &[u8]) -> Option<Sections> {
    let kinds: Vec<SectionKind> = <(SectionKind, Vec<u8>)>::pem_slice_iter(bytes)
        .filter_map(Result::ok)
        .map(|(kind, _)| kind)
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let key = [
        SectionKind::PrivateKey,
        SectionKind::RsaPrivateKey,
        SectionKind::EcPrivateKey,
    ];
    Some(Sections {
        certificate: kinds.contains(&SectionKind::Certificate),
        key: kinds.iter().any(|kind| key.contains(kind)),
    })
}

/// `--insecure-skip-tls-verify`: any server certificate is accepted, as
/// etcdctl does. Handshake signatures are still checked, so the connection
/// is encrypted to whoever holds the presented key; only who that is goes
/// unchecked.
#[derive(Debug)]
struct AcceptAnyServerCertificate {
    provider: CryptoProvider,
}

type Cert<'a> = CertificateDer<'a>;
type Dss = DigitallySignedStruct;
type Signature = Result<HandshakeSignatureValid, rustls::Error>;

impl AcceptAnyServerCertificate {
    fn new() -> Self {
        AcceptAnyServerCertificate {
            provider: rustls::crypto::ring::default_provider(),
        }
    }

    fn algorithms(&self) -> &rustls::crypto::WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

impl ServerCertVerifier for AcceptAnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &Cert, dss: &Dss) -> Signature {
        verify_tls12_signature(message, cert, dss, self.algorithms())
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &Cert, dss: &Dss) -> Signature {
        verify_tls13_signature(message, cert, dss, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_password_as_etcdctl_takes_them() {
        let pair = |name: &str, password: &str| Some((name.to_string(), password.to_string()));
        assert_eq!(split_user("root:s3cret", None).ok(), pair("root", "s3cret"));
        assert_eq!(
            split_user("root", Some("s3cret")).ok(),
            pair("root", "s3cret")
        );
        assert_eq!(split_user("root:a:b", None).ok(), pair("root", "a:b"));
        assert_eq!(split_user("root:", None).ok(), pair("root", ""));
        for (user, password) in [
            ("root:pw-one", Some("pw-two")),
            (":pw-one", None),
            ("root", None),
        ] {
            let err = split_user(user, password).unwrap_err().to_string();
            assert!(!err.contains("pw-"), "{err}");
        }
    }

    #[test]
    fn debug_never_shows_the_password() {
        let credentials = Credentials {
            user: Some(("root".into(), "hunter2".into())),
            ..Credentials::default()
        };
        let shown = format!("{credentials:?}");
        assert!(
            shown.contains("root") && !shown.contains("hunter2"),
            "{shown}"
        );
    }

    #[test]
    fn pem_files_are_parsed_not_searched_for_markers() {
        let der = |label: &str, body: &str| {
            format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n")
        };
        let certificate = der("CERTIFICATE", "MIIBAA==");
        let key = der("PRIVATE KEY", "MIIBAA==");
        let sections = pem_sections(format!("{certificate}{key}").as_bytes()).unwrap();
        assert!(sections.certificate && sections.key);
        let only_key = pem_sections(key.as_bytes()).unwrap();
        assert!(!only_key.certificate && only_key.key);
        // Markers around damaged base64 hold nothing.
        assert!(pem_sections(der("CERTIFICATE", "not base64 !!").as_bytes()).is_none());
        assert!(pem_sections(b"[package]\nname = \"x\"\n").is_none());
    }
}
