//! Logging and self-telemetry configuration (`telemetry:`), owned by the
//! module that reads it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// `level` and `target=level` directives (`info`, `warn,toolscore=debug`);
    /// `RUST_LOG` overrides it.
    pub log_level: String,
    pub log_format: LogFormat,
    /// The service's own traces and logs over OTLP/HTTP (off by default).
    pub otlp: super::SelfTelemetryConfig,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            log_level: "info".into(),
            log_format: LogFormat::Text,
            otlp: super::SelfTelemetryConfig::default(),
        }
    }
}
