//! An axum listener that does the TLS handshake, for the tests' HTTPS
//! servers; failed handshakes are counted and the connection dropped. Also
//! compiled into tests/exporter_tls.rs (by path).

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::pki;

pub struct TlsListener {
    tcp: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    failures: mpsc::UnboundedSender<()>,
}

impl TlsListener {
    /// Listens on an ephemeral loopback port with `leaf` as the server's
    /// certificate, offering HTTP/1.1; also returns the failed handshakes.
    pub async fn bind(leaf: &pki::Leaf) -> (TlsListener, mpsc::UnboundedReceiver<()>) {
        let certs = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (failures_tx, failures) = mpsc::unbounded_channel();
        let listener = TlsListener {
            tcp,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            failures: failures_tx,
        };
        (listener, failures)
    }

    pub fn port(&self) -> u16 {
        self.tcp.local_addr().unwrap().port()
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            match self.acceptor.accept(tcp).await {
                Ok(tls) => return (tls, addr),
                Err(_) => {
                    let _ = self.failures.send(());
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
