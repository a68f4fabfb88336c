//! A listener's TLS: its configuration built from the files, and re-built
//! when they change (cert-manager and Kubernetes Secrets replace them in
//! place). New connections get the new certificate; open ones keep theirs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use serde::{Deserialize, Serialize};

use super::{MinVersion, TlsError, certificates, private_key, provider, read, roots};

/// `tls:` of a listener. Present means the listener speaks only TLS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTlsConfig {
    /// The certificate chain (PEM), leaf first.
    pub cert_file: PathBuf,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// CA certificates (PEM) that client certificates must chain to. Set,
    /// every client must present one (mutual TLS).
    #[serde(default)]
    pub client_ca_file: Option<PathBuf>,
    #[serde(default)]
    pub min_version: MinVersion,
    /// How often the files are read again; a change is served to new
    /// connections.
    #[serde(default = "default_reload_interval_secs")]
    pub reload_interval_secs: u64,
    /// A client must finish its handshake within this.
    #[serde(default = "default_handshake_timeout_ms")]
    pub handshake_timeout_ms: u64,
}

fn default_reload_interval_secs() -> u64 {
    30
}

fn default_handshake_timeout_ms() -> u64 {
    10_000
}

/// The counters of one listener's TLS.
#[derive(Clone, Default)]
pub struct TlsMetrics {
    /// Handshakes that failed or timed out (a plaintext client, an unknown
    /// CA, a missing client certificate).
    pub handshake_failures: Counter,
    /// Files read again and found changed: served from then on.
    pub reloads: Counter,
    /// Files found changed but unusable, or unreadable: the previous ones
    /// are kept.
    pub reload_failures: Counter,
    /// The served certificate's `notAfter`, Unix seconds: alert on it
    /// before a renewal that never came.
    pub not_after: Gauge,
}

/// The TLS side of one listener.
pub struct ServerTls {
    listener: &'static str,
    config: ServerTlsConfig,
    alpn: Vec<Vec<u8>>,
    current: RwLock<Loaded>,
    pub metrics: TlsMetrics,
}

/// The files as last read, and what was built from them.
struct Loaded {
    files: Vec<Vec<u8>>,
    config: Arc<rustls::ServerConfig>,
}

impl ServerTls {
    /// Reads and checks the files. `alpn`: the protocols the listener
    /// speaks (`h2` for gRPC, `http/1.1` for the HTTP listeners).
    pub fn load(
        listener: &'static str,
        config: &ServerTlsConfig,
        alpn: &[&[u8]],
        metrics: TlsMetrics,
    ) -> Result<ServerTls, TlsError> {
        let alpn: Vec<Vec<u8>> = alpn.iter().map(|p| p.to_vec()).collect();
        let files = read_files(config)?;
        let (built, not_after) = build(config, &files, &alpn)?;
        metrics.not_after.set(not_after);
        Ok(ServerTls {
            listener,
            config: config.clone(),
            alpn,
            current: RwLock::new(Loaded {
                files,
                config: built,
            }),
            metrics,
        })
    }

    /// An acceptor with the newest certificate.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        tokio_rustls::TlsAcceptor::from(Arc::clone(&current.config))
    }

    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.config.handshake_timeout_ms)
    }

    pub fn reload_interval(&self) -> Duration {
        Duration::from_secs(self.config.reload_interval_secs.max(1))
    }

    pub fn listener(&self) -> &'static str {
        self.listener
    }

    /// Reads the files again; returns whether they changed and were taken.
    /// Unusable files leave the previous configuration in place.
    pub fn reload(&self) -> Result<bool, TlsError> {
        // A file that cannot be read (a Secret unmounted) counts as a
        // failure on every try, as an unusable one does.
        let files = read_files(&self.config).inspect_err(|_| {
            self.metrics.reload_failures.inc();
        })?;
        if self.current.read().unwrap_or_else(|e| e.into_inner()).files == files {
            return Ok(false);
        }
        let (built, not_after) = match build(&self.config, &files, &self.alpn) {
            Ok(b) => b,
            Err(e) => {
                self.metrics.reload_failures.inc();
                return Err(e);
            }
        };
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Loaded {
            files,
            config: built,
        };
        self.metrics.reloads.inc();
        self.metrics.not_after.set(not_after);
        Ok(true)
    }
}

fn read_files(config: &ServerTlsConfig) -> Result<Vec<Vec<u8>>, TlsError> {
    let mut files = vec![read(&config.cert_file)?, read(&config.key_file)?];
    if let Some(ca) = &config.client_ca_file {
        files.push(read(ca)?);
    }
    Ok(files)
}

/// The configuration, and the leaf certificate's `notAfter` (Unix seconds).
fn build(
    config: &ServerTlsConfig,
    files: &[Vec<u8>],
    alpn: &[Vec<u8>],
) -> Result<(Arc<rustls::ServerConfig>, i64), TlsError> {
    let (cert_pem, key_pem) = match files {
        [cert, key, ..] => (cert, key),
        _ => return Err(TlsError::Verifier("the files were not read".into())),
    };
    let chain = certificates(&config.cert_file, cert_pem)?;
    let not_after = not_after(&config.cert_file, &chain[0])?;
    let key = private_key(&config.key_file, key_pem)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(config.min_version.versions())?;
    let builder = match (&config.client_ca_file, files.get(2)) {
        (Some(path), Some(pem)) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(path, pem)?),
                provider(),
            )
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut built = builder
        .with_single_cert(chain, key)
        .map_err(|e| key_error(&config.key_file, e))?;
    built.alpn_protocols = alpn.to_vec();
    Ok((Arc::new(built), not_after))
}

fn not_after(path: &Path, leaf: &rustls_pki_types::CertificateDer<'_>) -> Result<i64, TlsError> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(leaf).map_err(|e| TlsError::Pem {
        path: path.to_owned(),
        message: format!("holds a certificate that is not valid X.509: {e}"),
    })?;
    let secs = cert
        .tbs_certificate
        .validity
        .not_after
        .to_unix_duration()
        .as_secs();
    Ok(i64::try_from(secs).unwrap_or(i64::MAX))
}

/// A key that does not fit the certificate names the key file.
fn key_error(path: &Path, e: rustls::Error) -> TlsError {
    TlsError::Pem {
        path: path.to_owned(),
        message: format!("cannot be used with the certificate: {e}"),
    }
}
