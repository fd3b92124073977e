//! Certificates for a TLS etcd, generated per test: a CA, a server
//! certificate for 127.0.0.1 and localhost, and a client certificate.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};

pub struct Pki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Pki {
    pub fn generate(dir: &Path) -> Pki {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "leaderrun test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

        let leaf = |names: Vec<String>, purpose: ExtendedKeyUsagePurpose, common_name: &str| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names).unwrap();
            params.extended_key_usages = vec![purpose];
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
            let cert = params.signed_by(&key, &ca).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let server = leaf(
            vec!["127.0.0.1".into(), "localhost".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
            "etcd",
        );
        let client = leaf(vec![], ExtendedKeyUsagePurpose::ClientAuth, "leaderrun");

        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        Pki {
            ca: write("ca.pem", &ca.pem()),
            server_cert: write("server.pem", &server.0),
            server_key: write("server-key.pem", &server.1),
            client_cert: write("client.pem", &client.0),
            client_key: write("client-key.pem", &client.1),
        }
    }
}

/// An ECDSA P-256 key pair for etcd to sign JWT tokens with (ES256),
/// written to `dir`: (private key, PKCS#8 PEM; public key, SPKI PEM).
pub fn jwt_keys(dir: &Path) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let private = dir.join("jwt-key.pem");
    let public = dir.join("jwt-pub.pem");
    std::fs::write(&private, key.serialize_pem()).unwrap();
    std::fs::write(&public, key.public_key_pem()).unwrap();
    (private, public)
}
