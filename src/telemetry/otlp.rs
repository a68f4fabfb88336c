//! Optional self-telemetry: the service's own traces (its `tracing` spans)
//! and logs (its `tracing` events), exported over OTLP/HTTP. Off by default.
//!
//! OTLP/HTTP with a blocking client is used because the SDK's batch
//! processors export from their own threads, outside any async runtime.
//! Config validation refuses an endpoint that is one of toolscore's own
//! receivers, so its telemetry never feeds back into its own pipeline.

use serde::{Deserialize, Serialize};

/// `telemetry.otlp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfTelemetryConfig {
    /// Export the service's own traces and logs.
    pub enabled: bool,
    /// The OTLP/HTTP base URL (`/v1/traces` and `/v1/logs` are appended);
    /// never one of toolscore's own receivers.
    pub endpoint: String,
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
            traces: true,
            logs: true,
            service_name: "toolscore".into(),
        }
    }
}

/// The running exporters; flushed and stopped by [`SelfTelemetry::shutdown`].
#[derive(Default)]
pub struct SelfTelemetry {
    pub tracer: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    pub logger: Option<opentelemetry_sdk::logs::SdkLoggerProvider>,
}

impl SelfTelemetry {
    /// Builds the exporters the config asks for (none when disabled).
    pub fn start(cfg: &SelfTelemetryConfig) -> Result<SelfTelemetry, String> {
        use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
        if !cfg.enabled {
            return Ok(SelfTelemetry::default());
        }
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
                .with_http_client(blocking_client())
                .with_endpoint(format!("{base}/v1/traces"))
                .with_timeout(std::time::Duration::from_secs(10))
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
                .with_http_client(blocking_client())
                .with_endpoint(format!("{base}/v1/logs"))
                .with_timeout(std::time::Duration::from_secs(10))
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

/// A blocking client, explicitly: the batch processors export from plain
/// threads, where an async client would need a runtime that is not there.
fn blocking_client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap_or_else(|_| reqwest::blocking::Client::new())
}

/// Whether `endpoint` (an `http://host:port` URL) names one of `own`
/// addresses on this machine.
pub fn points_at(endpoint: &str, own: &[std::net::SocketAddr]) -> bool {
    let Some(rest) = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
    else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    let Some((host, port)) = authority.rsplit_once(':') else {
        return false;
    };
    let Ok(port) = port.parse::<u16>() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let local = matches!(host, "localhost" | "127.0.0.1" | "::1" | "0.0.0.0")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    own.iter().any(|a| {
        a.port() == port
            && (local
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip == a.ip()))
    })
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
    }
}
