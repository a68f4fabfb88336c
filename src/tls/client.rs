//! TLS for outgoing connections (the OTLP exporter, self-telemetry).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde::{Deserialize, Serialize};

use super::{MinVersion, TlsError, certificates, private_key, provider, read, roots};

/// `tls:` of an outgoing connection, used when its endpoint is `https://`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientTlsConfig {
    /// CA certificates (PEM) the server's certificate must chain to. Unset:
    /// the system's roots.
    pub ca_file: Option<PathBuf>,
    /// With `ca_file`, trust the system's roots as well.
    pub include_system_ca_certs_pool: bool,
    /// A client certificate chain (PEM) for servers that ask for one
    /// (mutual TLS); with `key_file`.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate. Only for tests: anyone on the path
    /// can read and change the data.
    pub insecure_skip_verify: bool,
    pub min_version: MinVersion,
}

/// Builds the client configuration. `alpn`: `h2` for gRPC.
pub fn client_config(
    config: &ClientTlsConfig,
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(config.min_version.versions())?;
    let builder = if config.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServer(provider())))
    } else {
        let mut store = match &config.ca_file {
            Some(path) => roots(path, &read(path)?)?,
            None => rustls::RootCertStore::empty(),
        };
        if config.ca_file.is_none() || config.include_system_ca_certs_pool {
            // Unreadable entries of the system store are skipped, as every
            // TLS client does; an empty result fails the handshake clearly.
            let native = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(native.certs);
        }
        builder.with_root_certificates(store)
    };
    let mut built = match (&config.cert_file, &config.key_file) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert, &read(cert)?)?;
            let key_der = private_key(key, &read(key)?)?;
            builder.with_client_auth_cert(chain, key_der)?
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(path), None) | (None, Some(path)) => {
            return Err(TlsError::Pem {
                path: path.clone(),
                message: "cert_file and key_file are set together".into(),
            });
        }
    };
    built.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(built))
}

/// `insecure_skip_verify`: any certificate, but the handshake's signatures
/// are still checked, so the connection is at least encrypted to whoever
/// holds the certificate's key.
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
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

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
