//! Certificates for the TLS tests, made by rcgen: a CA and the server and
//! client certificates it signs, and a folder to write them to. Also
//! compiled into the unit tests of `src/tls` (by path), so both use one
//! generator.

// Not every includer uses every helper.
#![allow(dead_code)]

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A test's folder of certificates, keys and token files.
pub struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    pub fn new() -> Files {
        Files {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes whole to a temporary name and renames, as Kubernetes swaps a
    /// Secret's files, so a reload never reads half a file.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        let tmp = self.path(&format!(".{name}.tmp"));
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &path).expect("rename");
        path
    }
}

/// A certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, both PEM.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("CA key");
        Ca {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `localhost` and 127.0.0.1.
    pub fn server(&self) -> Leaf {
        self.leaf(
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate.
    pub fn client(&self, name: &str) -> Leaf {
        self.leaf(&[name], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn leaf(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Leaf {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, &names[0]);
        params.extended_key_usages = vec![usage];
        // Python 3.13's ssl verifies strictly (VERIFY_X509_STRICT), which
        // needs the issuer's key identifier in the certificate.
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}
