//! The exporter's lazily connecting channel: tonic's own connector for an
//! `http://` endpoint, and for an `https://` one a connector that dials TCP
//! and does the rustls handshake with the configuration of `exporter.tls`
//! (built here, at start-up, so a bad file fails start-up and not the first
//! export). tonic's built-in TLS is not used, so that every TLS client of
//! the service is configured by the one `crate::tls` builder.

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tonic::transport::{Channel, Endpoint};

use super::ExporterConfig;
use crate::key_error::KeyError;
use crate::tls::keyed;

/// Builds the channel; nothing is dialled until the first request, and a
/// broken connection is re-dialled on the next.
pub fn channel(cfg: &ExporterConfig) -> Result<Channel, KeyError> {
    let endpoint_error = |message: String| KeyError::new("exporter.endpoint".into(), message);
    let uri: Uri = cfg
        .endpoint
        .parse()
        .map_err(|e| endpoint_error(format!("not a valid URI ({e}): {:?}", cfg.endpoint)))?;
    let timeout = ExporterConfig::ms(cfg.timeout_ms);
    let settings = |endpoint: Endpoint| {
        endpoint
            // For the custom connector too: it bounds TCP and the handshake.
            .connect_timeout(timeout)
            .timeout(timeout)
            // Notices a peer that vanished without closing the connection.
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(10))
    };
    if uri.scheme_str() != Some("https") {
        let endpoint = Endpoint::from_shared(cfg.endpoint.clone())
            .map_err(|e| endpoint_error(format!("{e}: {:?}", cfg.endpoint)))?;
        return Ok(settings(endpoint).connect_lazy());
    }
    let target = Target::new(&uri, cfg)?;
    // The connector dials `target` whatever URI tonic hands it. That URI is
    // given as http:// because tonic, when built with a TLS feature of its
    // own, refuses an https:// URI it has no TLS configuration for; the
    // requests still carry the https:// origin (`:scheme`, `:authority`).
    let dial = format!("http://{}", target.authority);
    let endpoint = Endpoint::from_shared(dial)
        .map_err(|e| endpoint_error(format!("{e}: {:?}", cfg.endpoint)))?
        .origin(uri);
    let connector = tower::service_fn(move |_: Uri| {
        let target = target.clone();
        async move { target.connect().await }
    });
    Ok(settings(endpoint).connect_with_connector_lazy(connector))
}

/// An `https://` endpoint: where to dial and how to check who answers.
#[derive(Clone)]
struct Target {
    /// `host:port` as written (an IPv6 host in brackets).
    authority: String,
    host: Arc<str>,
    port: u16,
    server_name: ServerName<'static>,
    tls: TlsConnector,
}

impl Target {
    fn new(uri: &Uri, cfg: &ExporterConfig) -> Result<Target, KeyError> {
        let endpoint_error = |message: &str| {
            KeyError::new(
                "exporter.endpoint".into(),
                format!("{message}: {:?}", cfg.endpoint),
            )
        };
        let authority = uri
            .authority()
            .ok_or_else(|| endpoint_error("must name a host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(443);
        let server_name = ServerName::try_from(host.to_owned())
            .map_err(|_| endpoint_error("the host is not a valid TLS server name"))?;
        let config = keyed::build("exporter.tls", &cfg.tls, &[b"h2"])?;
        Ok(Target {
            authority: format!("{}:{port}", authority.host()),
            host: host.into(),
            port,
            server_name,
            tls: TlsConnector::from(config),
        })
    }

    /// Dials and shakes hands. Bounded by the endpoint's connect timeout,
    /// which tonic wraps around the whole connector.
    async fn connect(self) -> std::io::Result<TokioIo<TlsStream<TcpStream>>> {
        let tcp = TcpStream::connect((&*self.host, self.port)).await?;
        // As tonic's own connector does: requests are small and latency-bound.
        tcp.set_nodelay(true)?;
        let tls = self.tls.connect(self.server_name, tcp).await?;
        Ok(TokioIo::new(tls))
    }
}
