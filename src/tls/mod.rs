//! TLS for the listeners (`server.rs`) and for outgoing connections
//! (`client.rs`), with rustls and its ring provider. The keys follow the
//! OpenTelemetry Collector's `configtls` (`cert_file`, `key_file`,
//! `client_ca_file`, `ca_file`, `min_version`, `insecure_skip_verify`).

mod client;
pub mod keyed;
mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};

pub use client::{ClientTlsConfig, client_config};
pub use server::{ServerTls, ServerTlsConfig, TlsMetrics};

/// A TLS file or setting that cannot be used; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Pem { path: PathBuf, message: String },
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
    #[error("the client CA bundle cannot verify clients: {0}")]
    Verifier(String),
}

/// The lowest TLS version a side accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MinVersion {
    #[default]
    #[serde(rename = "1.2")]
    Tls12,
    #[serde(rename = "1.3")]
    Tls13,
}

impl MinVersion {
    fn versions(self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        static BOTH: [&rustls::SupportedProtocolVersion; 2] =
            [&rustls::version::TLS13, &rustls::version::TLS12];
        static ONLY_13: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
        match self {
            MinVersion::Tls12 => &BOTH,
            MinVersion::Tls13 => &ONLY_13,
        }
    }
}

/// Makes ring the process's default rustls provider, for TLS clients built
/// without a configuration of ours (the tests' reqwest clients), which would
/// otherwise panic for want of one: every configuration built here names
/// ring itself, so the binary carries one crypto library. Call first thing
/// in `main`; a second call does nothing.
pub fn install_default_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The one crypto provider of every TLS configuration built here.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Every certificate of a PEM file; at least one.
fn certificates(path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            message: format!("not a PEM certificate file: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_owned(),
            message: "holds no PEM certificate".into(),
        });
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn private_key(path: &Path, pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| TlsError::Pem {
        path: path.to_owned(),
        message: format!("holds no usable PEM private key: {e}"),
    })
}

/// A root store of the certificates in a PEM bundle.
fn roots(path: &Path, pem: &[u8]) -> Result<rustls::RootCertStore, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for cert in certificates(path, pem)? {
        store.add(cert).map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            message: format!("holds a certificate that cannot be a trust anchor: {e}"),
        })?;
    }
    Ok(store)
}

#[cfg(test)]
mod tests;
