//! Optional self-telemetry: the service's own traces (its `tracing` spans)
//! and logs (its `tracing` events), exported over OTLP/HTTP. Off by default.
//!
//! OTLP/HTTP through `crate::http_client`, run on a one-thread runtime of
//! its own: the SDK's batch processors export from their own threads,
//! outside any async runtime (see [`ExportClient`]).
//! Config validation refuses an endpoint that is one of toolscore's own
//! receivers, so its telemetry never feeds back into its own pipeline.
//! An `https://` endpoint is reached over TLS configured by
//! `telemetry.otlp.tls`, built when the exporters start.

use crate::key_error::KeyError;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::http_client::HttpClient;
use crate::tls::ClientTlsConfig;
use crate::tls::keyed;

/// `telemetry.otlp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfTelemetryConfig {
    /// Export the service's own traces and logs.
    pub enabled: bool,
    /// The OTLP/HTTP base URL (`/v1/traces` and `/v1/logs` are appended):
    /// `http://` (plaintext) or `https://` (TLS, configured by `tls`);
    /// never one of toolscore's own receivers.
    pub endpoint: String,
    /// TLS of an `https://` endpoint: `ca_file` (unset: the system's
    /// roots), `cert_file` and `key_file` for mutual TLS,
    /// `insecure_skip_verify`, `min_version`. Refused with `http://`.
    pub tls: ClientTlsConfig,
    pub traces: bool,
    pub logs: bool,
    /// `service.name` of the service's own telemetry.
    pub service_name: String,
}

impl Default for SelfTelemetryConfig {
    fn default() -> Self {
        SelfTelemetryConfig {
            enabled: false,
            endpoint: "http://otel-collector:4318".into(),
            tls: ClientTlsConfig::default(),
            traces: true,
            logs: true,
            service_name: "toolscore".into(),
        }
    }
}

impl SelfTelemetryConfig {
    /// Checks the endpoint's scheme and the `tls` keys (no file is read);
    /// the error is (key path, message). Checked even when disabled.
    pub fn validate(&self) -> Result<(), KeyError> {
        let https = if self.endpoint.starts_with("https://") {
            true
        } else if self.endpoint.starts_with("http://") {
            false
        } else {
            return Err(KeyError::new(
                "telemetry.otlp.endpoint".into(),
                format!(
                    "must start with http:// or https://, got {:?}",
                    self.endpoint
                ),
            ));
        };
        keyed::validate("telemetry.otlp.tls", https, &self.tls)
    }
}

/// The running exporters; flushed and stopped by [`SelfTelemetry::shutdown`].
#[derive(Default)]
pub struct SelfTelemetry {
    pub tracer: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    pub logger: Option<opentelemetry_sdk::logs::SdkLoggerProvider>,
}

impl SelfTelemetry {
    /// Builds the exporters the config asks for (none when disabled). The
    /// TLS files of an `https://` endpoint are read here: one that cannot
    /// be used is an error naming its key (`telemetry.otlp.tls.ca_file: …`).
    pub fn start(cfg: &SelfTelemetryConfig) -> Result<SelfTelemetry, String> {
        use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
        if !cfg.enabled {
            return Ok(SelfTelemetry::default());
        }
        let keyed = |e: KeyError| e.to_string();
        cfg.validate().map_err(keyed)?;
        // Built for http:// too (then with the defaults, the system's
        // roots): the client's connector takes one for either scheme.
        let tls = keyed::build("telemetry.otlp.tls", &cfg.tls, &[b"http/1.1"]).map_err(keyed)?;
        if !cfg.traces && !cfg.logs {
            return Ok(SelfTelemetry::default());
        }
        let client: Arc<dyn opentelemetry_http::HttpClient> = Arc::new(
            ExportClient::new(tls)
                .map_err(|e| format!("telemetry.otlp: cannot build the HTTP client: {e}"))?,
        );
        let base = cfg.endpoint.trim_end_matches('/');
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_attribute(opentelemetry::KeyValue::new(
                "service.name",
                cfg.service_name.clone(),
            ))
            .build();
        let mut out = SelfTelemetry::default();
        if cfg.traces {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(PROTOCOL)
                .with_shared_http_client(client.clone())
                .with_endpoint(format!("{base}/v1/traces"))
                .with_timeout(EXPORT_TIMEOUT)
                .build()
                .map_err(|e| format!("telemetry.otlp: cannot build the trace exporter: {e}"))?;
            out.tracer = Some(
                opentelemetry_sdk::trace::SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build(),
            );
        }
        if cfg.logs {
            let exporter = opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_protocol(PROTOCOL)
                .with_shared_http_client(client)
                .with_endpoint(format!("{base}/v1/logs"))
                .with_timeout(EXPORT_TIMEOUT)
                .build()
                .map_err(|e| format!("telemetry.otlp: cannot build the log exporter: {e}"))?;
            out.logger = Some(
                opentelemetry_sdk::logs::SdkLoggerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource)
                    .build(),
            );
        }
        Ok(out)
    }

    /// Flushes what is buffered and stops the exporters.
    pub fn shutdown(self) {
        if let Some(t) = self.tracer {
            let _ = t.shutdown();
        }
        if let Some(l) = self.logger {
            let _ = l.shutdown();
        }
    }
}

/// How long one export request may take, connect to last byte.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Protobuf, named rather than left to the crate's default, which a build
/// with its `http-json` feature (the tests') or `OTEL_EXPORTER_OTLP_PROTOCOL`
/// would change.
const PROTOCOL: opentelemetry_otlp::Protocol = opentelemetry_otlp::Protocol::HttpBinary;

/// The largest answer read from the collector: an OTLP answer holds at most
/// a partial-success message.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The exporters' HTTP client. The batch processors call it from their own
/// threads through `futures_executor::block_on`, with no tokio reactor, and
/// the exporters are built before the service's runtime starts and flushed
/// after it stops (`main.rs`); so each request runs on a one-thread runtime
/// owned here, which lives as long as the exporters, and the caller only
/// awaits its result.
#[derive(Debug)]
struct ExportClient {
    client: HttpClient,
    handle: tokio::runtime::Handle,
    _runtime: OwnRuntime,
}

impl ExportClient {
    fn new(tls: Arc<rustls::ClientConfig>) -> Result<ExportClient, String> {
        let client = HttpClient::new(Some(tls), EXPORT_TIMEOUT, MAX_ANSWER_BYTES)
            .map_err(|e| e.to_string())?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolscore-otlp-http")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start its thread: {e}"))?;
        Ok(ExportClient {
            client,
            handle: runtime.handle().clone(),
            _runtime: OwnRuntime(Some(runtime)),
        })
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for ExportClient {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let client = self.client.clone();
        let answer = self
            .handle
            .spawn(async move { client.send(request).await })
            .await??;
        Ok(answer)
    }
}

/// The runtime, stopped without waiting when the exporters are dropped:
/// dropping it the ordinary way blocks, which panics in an async context,
/// and by then `SelfTelemetry::shutdown` has flushed what there was.
#[derive(Debug)]
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Whether `endpoint` (an `http(s)://host[:port]` URL) names one of `own`
/// addresses on this machine.
pub fn points_at(endpoint: &str, own: &[std::net::SocketAddr]) -> bool {
    let Ok(uri) = endpoint.parse::<http::Uri>() else {
        return false;
    };
    let default_port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        _ => return false,
    };
    let Some(host) = uri.host() else {
        return false;
    };
    let port = uri.port_u16().unwrap_or(default_port);
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .ok();
    let local = host == "localhost" || ip.is_some_and(|ip| ip.is_loopback() || ip.is_unspecified());
    own.iter()
        .any(|a| a.port() == port && (local || ip == Some(a.ip())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_receivers_are_recognised() {
        let own = [
            "127.0.0.1:4317".parse().unwrap(),
            "0.0.0.0:4318".parse().unwrap(),
        ];
        assert!(points_at("http://localhost:4318", &own));
        assert!(points_at("http://127.0.0.1:4317/", &own));
        assert!(points_at("http://[::1]:4318", &own));
        assert!(!points_at("http://otel-collector:4318", &own));
        assert!(!points_at("http://127.0.0.1:14318", &own));
        assert!(points_at("http://127.0.0.1:4318/v1/traces", &own));
        assert!(!points_at("grpc://127.0.0.1:4318", &own));
        assert!(!points_at("not a url", &own));
        let on_80 = ["127.0.0.1:80".parse().unwrap()];
        assert!(points_at("http://localhost", &on_80));
    }

    fn https(tls: ClientTlsConfig) -> SelfTelemetryConfig {
        SelfTelemetryConfig {
            enabled: true,
            endpoint: "https://otel-collector:4318".into(),
            tls,
            ..SelfTelemetryConfig::default()
        }
    }

    #[test]
    fn https_is_accepted_and_tls_keys_need_it() {
        assert_eq!(SelfTelemetryConfig::default().validate(), Ok(()));
        assert_eq!(https(ClientTlsConfig::default()).validate(), Ok(()));
        let skip = ClientTlsConfig {
            insecure_skip_verify: true,
            ..ClientTlsConfig::default()
        };
        assert_eq!(https(skip.clone()).validate(), Ok(()));
        let plaintext = SelfTelemetryConfig {
            endpoint: "http://otel-collector:4318".into(),
            ..https(skip)
        };
        let crate::key_error::KeyError { key: path, message } = plaintext.validate().unwrap_err();
        assert_eq!(path, "telemetry.otlp.tls");
        assert!(message.contains("https://"), "{message}");
        let no_scheme = SelfTelemetryConfig {
            endpoint: "otel-collector:4318".into(),
            ..SelfTelemetryConfig::default()
        };
        assert_eq!(
            no_scheme.validate().unwrap_err().key,
            "telemetry.otlp.endpoint"
        );
    }

    #[test]
    fn a_tls_file_that_cannot_be_used_fails_start_naming_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = https(ClientTlsConfig {
            ca_file: Some(dir.path().join("missing-ca.pem")),
            ..ClientTlsConfig::default()
        });
        let Err(e) = SelfTelemetry::start(&cfg) else {
            panic!("started with a missing ca_file");
        };
        assert!(e.starts_with("telemetry.otlp.tls.ca_file: "), "{e}");
        assert!(e.contains("missing-ca.pem"), "{e}");
        let half = https(ClientTlsConfig {
            key_file: Some(dir.path().join("key.pem")),
            ..ClientTlsConfig::default()
        });
        let Err(e) = SelfTelemetry::start(&half) else {
            panic!("started with a key_file and no cert_file");
        };
        assert!(e.starts_with("telemetry.otlp.tls.cert_file: "), "{e}");
    }
}
