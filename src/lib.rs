//! toolscore: scores how AI agents use their tools, from their OpenTelemetry traces.
//!
//! The data flow, stage by stage (see `ARCHITECTURE.md`):
//! [`record`] (a span as one record from the wire to the evaluators, IDs and
//! values from [`span`]) → [`extract`] (spans → tool calls) →
//! [`evaluator`] (tool calls + criteria → scores), with [`criteria`] loading
//! UiPath evaluator and eval-set files and binding criteria to traces, and
//! [`pyvalue`] holding the Python value semantics every score depends on.

pub mod agent_trace;
pub mod api;
pub mod app;
pub mod assembler;
pub mod auth;
pub mod bounds;
pub mod cli;
pub mod config;
pub mod criteria;
pub mod evaluator;
pub mod exporter;
pub mod extract;
pub mod http_client;
pub(crate) mod json_text;
pub mod key_error;
pub mod listener;
pub mod llm;
pub mod net;
pub mod otlp_json;
pub mod pyvalue;
pub mod receiver;
pub mod record;
pub mod scoring;
pub mod security;
pub mod span;
pub mod store;
pub mod supervise;
pub mod telemetry;
pub mod tls;
pub mod wal;
