//! The configuration file: one typed, strict YAML (or JSON) document.
//!
//! Every struct denies unknown keys, every field has a documented default, and
//! units are in key names (`_ms`, `_secs`, `_bytes`). Loading goes through
//! `serde_path_to_error` so an error names the file and the key path. Counts
//! and durations that must not be 0 are `NonZero*`, refused while parsing; a
//! second pass ([`Config::validate`]) checks maxima (declared by each
//! section, `bounds.rs`) and what crosses fields (grace < idle timeout, rule
//! references).
//!
//! Each stage owns its section's types (`receiver::ReceiversConfig`,
//! `store::StoreConfig`, …), so it reads them without depending on this
//! module; [`Config`] assembles them, and they are re-exported here.

use crate::bounds::Section;
use crate::key_error::KeyError;
use crate::listener::Listener;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::api::{ApiConfig, ApiListener, UiConfig};
pub use crate::assembler::{AssemblerConfig, OnTimeout};
use crate::criteria::{BinderConfig, BindingConfig};
pub use crate::criteria::{
    EvalSetsConfig, EvaluatorsConfig, InlineEvaluator, RuleConfig, RuleMatch,
};
use crate::extract::ExtractConfig;
pub use crate::receiver::{GrpcReceiverConfig, HttpReceiverConfig, ReceiversConfig};
pub use crate::scoring::EvaluationConfig;
pub use crate::store::{PostgresConfig, SqliteConfig, StoreBackend, StoreConfig, WriterConfig};
pub use crate::telemetry::{LogFormat, TelemetryConfig};
pub use crate::wal::{WalConfig, WalSync};

/// The deepest `{`/`[` nesting a config may have. The YAML parser refuses
/// past 128 too, but only after reading the whole document, in time that
/// grows with the square of the depth (50 s for 100,000 levels).
const MAX_FLOW_DEPTH: usize = 128;

/// Ok, or the line where flow collections (`{…}`, `[…]`, outside quotes and
/// comments) first nest deeper than `max`.
fn flow_depth_within(text: &str, max: usize) -> Result<(), usize> {
    let (mut depth, mut line) = (0usize, 1);
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    let mut previous = '\n';
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\n') => line += 1,
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') if previous.is_whitespace() => {
                while chars.next_if(|&c| c != '\n').is_some() {}
            }
            (None, '{' | '[') => {
                depth += 1;
                if depth > max {
                    return Err(line);
                }
            }
            (None, '}' | ']') => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = c;
    }
    Ok(())
}

/// The embedded default, what `toolscore serve` runs with no `--config`.
pub const DEFAULT_YAML: &str = include_str!("../config/default.yaml");

/// The shortest claim on running judgements (`store.postgres.judgement_lease_secs`):
/// it is renewed once a second at best, at a quarter of its length.
const MIN_JUDGEMENT_LEASE_SECS: u64 = 5;

/// A configuration that could not be loaded; the message names the file and
/// the key path.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {reason}")]
    Read {
        file: String,
        reason: std::io::Error,
    },
    #[error("{file}: at `{path}`: {message}")]
    Invalid {
        file: String,
        path: String,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub receivers: ReceiversConfig,
    pub assembler: AssemblerConfig,
    pub extract: ExtractConfig,
    pub evaluators: EvaluatorsConfig,
    pub eval_sets: EvalSetsConfig,
    pub binding: BindingConfig,
    pub rules: Vec<RuleConfig>,
    pub store: StoreConfig,
    /// The write-ahead log of accepted spans (`src/wal/`).
    pub wal: WalConfig,
    pub evaluation: EvaluationConfig,
    pub api: ApiConfig,
    /// The bearer tokens of listeners with `auth.enabled` (`src/auth/`).
    pub auth: crate::auth::AuthConfig,
    /// OTLP export of results to a downstream Collector (off by default).
    pub exporter: crate::exporter::ExporterConfig,
    /// The model providers of the LLM-judged evaluators (`src/llm/`).
    pub llm: crate::llm::config::LlmConfig,
    pub telemetry: TelemetryConfig,
    /// How long a graceful shutdown may take in all before work is abandoned.
    pub shutdown_timeout_ms: u64,
}

impl crate::bounds::Bounded for Config {
    const MAXIMA: &'static [(&'static str, u64)] =
        &[("shutdown_timeout_ms", crate::bounds::HOUR_MS)];
}

impl Default for Config {
    fn default() -> Self {
        Config {
            receivers: ReceiversConfig::default(),
            assembler: AssemblerConfig::default(),
            extract: ExtractConfig::default(),
            evaluators: EvaluatorsConfig::default(),
            eval_sets: EvalSetsConfig::default(),
            binding: BindingConfig::default(),
            rules: Vec::new(),
            store: StoreConfig::default(),
            wal: WalConfig::default(),
            evaluation: EvaluationConfig::default(),
            api: ApiConfig::default(),
            auth: crate::auth::AuthConfig::default(),
            exporter: crate::exporter::ExporterConfig::default(),
            llm: crate::llm::config::LlmConfig::default(),
            telemetry: TelemetryConfig::default(),
            shutdown_timeout_ms: 20_000,
        }
    }
}

/// One listener's settings, wherever the configuration keeps them.
pub struct ListenerConfig<'a> {
    pub enabled: bool,
    pub endpoint: std::net::SocketAddr,
    pub tls: &'a Option<crate::tls::ServerTlsConfig>,
    pub auth: &'a crate::auth::ListenerAuthConfig,
}

impl Config {
    /// A listener's settings (`receivers.grpc`, …, `api.grpc`).
    pub fn listener(&self, which: Listener) -> ListenerConfig<'_> {
        let (r, a) = (&self.receivers, &self.api);
        let (enabled, endpoint, tls, auth) = match which {
            Listener::OtlpGrpc => (r.grpc.enabled, r.grpc.endpoint, &r.grpc.tls, &r.grpc.auth),
            Listener::OtlpHttp => (r.http.enabled, r.http.endpoint, &r.http.tls, &r.http.auth),
            Listener::ApiHttp => (a.http.enabled, a.http.endpoint, &a.http.tls, &a.http.auth),
            Listener::ApiGrpc => (a.grpc.enabled, a.grpc.endpoint, &a.grpc.tls, &a.grpc.auth),
        };
        ListenerConfig {
            enabled,
            endpoint,
            tls,
            auth,
        }
    }

    /// Parses and validates a configuration document; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        flow_depth_within(text, MAX_FLOW_DEPTH).map_err(|line| ConfigError::Invalid {
            file: file.to_owned(),
            path: "(root)".into(),
            message: format!("collections nested more than {MAX_FLOW_DEPTH} deep at line {line}"),
        })?;
        let mut path = String::new();
        let config: Config =
            serde_saphyr::with_deserializer_from_str_with_options(text, yaml_options(), |de| {
                serde_path_to_error::deserialize(de).map_err(|e| {
                    path = e.path().to_string();
                    e.into_inner()
                })
            })
            .map_err(|e| ConfigError::Invalid {
                file: file.to_owned(),
                path: path_or_root(&path),
                message: e.render_with_formatter(&YamlMessages(text)),
            })?;
        config
            .validate()
            .map_err(|KeyError { key: path, message }| ConfigError::Invalid {
                file: file.to_owned(),
                path,
                message,
            })?;
        Ok(config)
    }

    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|reason| ConfigError::Read {
            file: path.display().to_string(),
            reason,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// The embedded default.
    pub fn embedded() -> Result<Config, ConfigError> {
        Config::parse(DEFAULT_YAML, "<embedded config/default.yaml>")
    }

    /// The config's sections whose numbers have maxima (`bounds.rs`), each
    /// at its key path. docs/configuration.md lists the same maxima.
    fn sections(&self) -> Vec<Section> {
        /// `sections!(a.b, c)`: the sections `self.a.b` at `a.b` and
        /// `self.c` at `c`.
        macro_rules! sections {
            ($($($field:ident).+),* $(,)?) => {
                vec![$(Section::of(stringify!($($field).+), &self.$($field).+)),*]
            };
        }
        let mut out = sections!(
            receivers.grpc,
            receivers.http,
            receivers.admission,
            assembler,
            store,
            store.sqlite,
            store.postgres,
            store.writer,
            wal,
            evaluation,
            api,
            api.ui,
            exporter,
        );
        out.push(Section::of("", self));
        out
    }

    /// The reload intervals and handshake deadlines, each within its range:
    /// an interval of 0 would spin, a huge one overflows the timer, and a
    /// handshake deadline under a tenth of a second cuts clients off.
    fn check_reloads(&self) -> Result<(), KeyError> {
        const DAY_SECS: u64 = 86_400;
        let within = |path: String, value: u64, min: u64, max: u64| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(KeyError::new(
                    path,
                    format!("must be from {min} to {max}, got {value}"),
                ))
            }
        };
        within(
            "auth.reload_interval_secs".into(),
            self.auth.reload_interval_secs,
            1,
            DAY_SECS,
        )?;
        let listeners = [
            ("receivers.grpc", &self.receivers.grpc.tls),
            ("receivers.http", &self.receivers.http.tls),
            ("api.http", &self.api.http.tls),
            ("api.grpc", &self.api.grpc.tls),
        ];
        for (listener, tls) in listeners {
            let Some(tls) = tls else { continue };
            within(
                format!("{listener}.tls.reload_interval_secs"),
                tls.reload_interval_secs,
                1,
                DAY_SECS,
            )?;
            within(
                format!("{listener}.tls.handshake_timeout_ms"),
                tls.handshake_timeout_ms,
                100,
                3_600_000,
            )?;
        }
        Ok(())
    }

    /// Cross-field checks; the error is (key path, message).
    pub fn validate(&self) -> Result<(), KeyError> {
        for section in self.sections() {
            section.check()?;
        }
        self.check_reloads()?;
        let a = &self.assembler;
        if self.wal.segment_bytes > self.wal.max_bytes {
            return Err(KeyError::new(
                "wal.segment_bytes".into(),
                "must not exceed wal.max_bytes".into(),
            ));
        }
        if self.store.backend == StoreBackend::Postgres {
            if self.store.postgres.judgement_lease_secs.get() < MIN_JUDGEMENT_LEASE_SECS {
                return Err(KeyError::new(
                    "store.postgres.judgement_lease_secs".into(),
                    format!(
                        "must be at least {MIN_JUDGEMENT_LEASE_SECS} (the claim is renewed every second at best)"
                    ),
                ));
            }
            let url = &self.store.postgres.url;
            if url.is_empty() {
                return Err(KeyError::new(
                    "store.postgres.url".into(),
                    "is required with store.backend: postgres".into(),
                ));
            }
            if let Err(e) = <postgres::Config as std::str::FromStr>::from_str(url) {
                return Err(KeyError::new("store.postgres.url".into(), e.to_string()));
            }
        }
        if a.grace_after_root_ms >= a.idle_timeout_secs.get().saturating_mul(1000) {
            return Err(KeyError::new(
                "assembler.grace_after_root_ms".into(),
                format!(
                    "must be less than assembler.idle_timeout_secs ({} s)",
                    a.idle_timeout_secs
                ),
            ));
        }
        if a.idle_timeout_secs > a.max_trace_age_secs {
            return Err(KeyError::new(
                "assembler.idle_timeout_secs".into(),
                "must not exceed assembler.max_trace_age_secs".into(),
            ));
        }
        if self.api.max_wait_ms >= self.api.request_timeout_ms.get() {
            return Err(KeyError::new(
                "api.max_wait_ms".into(),
                "must be less than api.request_timeout_ms".into(),
            ));
        }
        let r = &self.receivers;
        let listeners = [
            ("receivers.grpc.endpoint", r.grpc.enabled, r.grpc.endpoint),
            ("receivers.http.endpoint", r.http.enabled, r.http.endpoint),
            (
                "api.http.endpoint",
                self.api.http.enabled,
                self.api.http.endpoint,
            ),
            (
                "api.grpc.endpoint",
                self.api.grpc.enabled,
                self.api.grpc.endpoint,
            ),
        ];
        for (i, (path, on, addr)) in listeners.iter().enumerate() {
            let clash = listeners[..i]
                .iter()
                .find(|(_, other_on, other)| *on && *other_on && addr.port() != 0 && other == addr);
            if let Some((other, _, _)) = clash {
                return Err(KeyError::new(
                    (*path).into(),
                    format!("is the same address as {other}"),
                ));
            }
        }
        if r.http.max_request_body_bytes > r.http.max_decompressed_body_bytes {
            return Err(KeyError::new(
                "receivers.http.max_request_body_bytes".into(),
                "must not exceed receivers.http.max_decompressed_body_bytes".into(),
            ));
        }
        self.exporter.validate()?;
        self.llm.validate()?;
        self.telemetry.otlp.validate()?;
        crate::tls::keyed::validate(
            "store.postgres.tls",
            self.store.postgres.wants_tls(),
            &self.store.postgres.tls,
        )?;
        if self.exporter.enabled && self.exporter.flush_timeout_ms.get() >= self.shutdown_timeout_ms
        {
            return Err(KeyError::new(
                "exporter.flush_timeout_ms".into(),
                "must be less than shutdown_timeout_ms".into(),
            ));
        }
        if self.telemetry.otlp.enabled
            && crate::telemetry::points_at(
                &self.telemetry.otlp.endpoint,
                &[r.grpc.endpoint, r.http.endpoint],
            )
        {
            return Err(KeyError::new(
                "telemetry.otlp.endpoint".into(),
                "points at toolscore's own receivers: its telemetry would feed back into its own pipeline".into(),
            ));
        }
        if !r.grpc.enabled && !r.http.enabled {
            return Err(KeyError::new(
                "receivers".into(),
                "at least one receiver must be enabled".into(),
            ));
        }
        if let Err(why) = crate::telemetry::log_filter(&self.telemetry.log_level) {
            return Err(KeyError::new(
                "telemetry.log_level".into(),
                format!(
                    "not a valid log filter: {:?} ({why})",
                    self.telemetry.log_level
                ),
            ));
        }
        let mut ids = std::collections::HashSet::new();
        for (i, e) in self.evaluators.inline.iter().enumerate() {
            if crate::evaluator::EvaluatorType::parse(&e.kind).is_none() {
                return Err(KeyError::new(
                    format!("evaluators.inline[{i}].type"),
                    format!("unknown evaluator type {:?}", e.kind),
                ));
            }
            if !ids.insert(e.id.as_str()) {
                return Err(KeyError::new(
                    format!("evaluators.inline[{i}].id"),
                    format!("duplicate evaluator id {:?}", e.id),
                ));
            }
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.evaluators.is_empty() {
                return Err(KeyError::new(
                    format!("rules[{i}].evaluators"),
                    "a rule needs at least one evaluator".into(),
                ));
            }
            for (field, glob) in [
                ("service_name", &rule.matcher.service_name),
                ("root_span_name", &rule.matcher.root_span_name),
            ] {
                if let Some(g) = glob {
                    glob::Pattern::new(g).map_err(|e| {
                        KeyError::new(
                            format!("rules[{i}].match.{field}"),
                            format!("bad glob: {e}"),
                        )
                    })?;
                }
            }
            for key in rule.criteria.keys() {
                if !rule.evaluators.contains(key) {
                    return Err(KeyError::new(
                        format!("rules[{i}].criteria.{key}"),
                        "criteria for an evaluator the rule does not run".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The part of the configuration the binder loads (`criteria::Binder`).
    pub fn binder(&self) -> BinderConfig<'_> {
        BinderConfig {
            evaluators: &self.evaluators,
            eval_sets: &self.eval_sets,
            rules: &self.rules,
            binding: &self.binding,
        }
    }

    /// The span attributes the service reads (extraction, binding, rules,
    /// the judges); receivers drop the others before buffering.
    pub fn kept_attributes(&self) -> crate::span::KeepAttributes {
        let rule_keys = self
            .rules
            .iter()
            .flat_map(|r| r.matcher.attributes.keys().cloned());
        kept_attributes(&self.extract, &self.binding, rule_keys)
    }
}

/// The attributes extraction, binding, the judges and these rule keys
/// read: what a span keeps, live and in `toolscore eval` alike.
pub fn kept_attributes(
    extract: &ExtractConfig,
    binding: &BindingConfig,
    rule_keys: impl IntoIterator<Item = String>,
) -> crate::span::KeepAttributes {
    let keys = crate::evaluator::judged::TRACE_ATTRIBUTES
        .iter()
        .map(|k| (*k).to_owned())
        .chain(binding.attributes.iter().cloned())
        .chain(rule_keys);
    extract.keep(keys)
}

/// Collections nested deeper are refused while parsing: deserializing
/// recurses once per level, and 64 levels fit a 2 MiB thread's stack even
/// unoptimised.
const MAX_YAML_DEPTH: usize = 64;

/// How config YAML is read, here and by the tests: YAML 1.2 scalars (`on`,
/// `yes`, `010`, `1_000`, `~` and `<<` stay text wherever text is taken, so
/// criteria mean what they say), no duplicate keys, and the parser's budgets
/// (aliases, events, nesting) so that a hostile file fails fast.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! { max_depth: MAX_YAML_DEPTH },
        // A tenth of the default: a config that repeats more through
        // aliases is an alias bomb, not a configuration.
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: 100_000 },
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        null_as_string: true,
        merge_keys: serde_saphyr::MergeKeyPolicy::AsOrdinary,
        with_snippet: false,
    }
}

/// serde-saphyr's messages for users, quoting the offending scalar where
/// the parser names only the type it expected.
struct YamlMessages<'a>(&'a str);

impl serde_saphyr::MessageFormatter for YamlMessages<'_> {
    fn format_message<'e>(&self, err: &'e serde_saphyr::Error) -> std::borrow::Cow<'e, str> {
        let (expected, location) = match err {
            serde_saphyr::Error::InvalidScalar { ty, location } => (*ty, location),
            serde_saphyr::Error::InvalidBooleanStrict { location } => ("true or false", location),
            serde_saphyr::Error::Budget {
                breach: serde_saphyr::budget::BudgetBreach::Depth { .. },
                ..
            } => return format!("collections nested more than {MAX_YAML_DEPTH} deep").into(),
            // A `NonZero*` key: serde's message names a Rust type.
            serde_saphyr::Error::SerdeInvalidValue {
                unexpected,
                expected,
                ..
            } if unexpected == "integer `0`" && expected.starts_with("a nonzero ") => {
                return "invalid value `0`, expected an integer greater than 0".into();
            }
            _ => return serde_saphyr::UserMessageFormatter.format_message(err),
        };
        let span = location.span();
        let scalar = span
            .byte_offset()
            .zip(span.byte_len())
            .and_then(|(at, len)| {
                let at = usize::try_from(at).ok()?;
                self.0.get(at..at.checked_add(usize::try_from(len).ok()?)?)
            });
        match scalar {
            Some(s) if !s.is_empty() && s.len() <= 80 => {
                format!("invalid value `{s}`, expected {expected}").into()
            }
            _ => format!("invalid value, expected {expected}").into(),
        }
    }
}

/// The key path of a parse error, without the `?` that stands for a key the
/// parser had not read yet (a syntax error, a duplicate key).
fn path_or_root(p: &str) -> String {
    let mut p = p;
    while let Some(parent) = p.strip_suffix(".?") {
        p = parent;
    }
    if p.is_empty() || p == "." || p == "?" {
        "(top level)".into()
    } else {
        p.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_parses_and_validates() {
        let c = Config::embedded().unwrap();
        assert_eq!(c.receivers.grpc.endpoint.to_string(), "127.0.0.1:4317");
        assert_eq!(c.receivers.http.endpoint.to_string(), "127.0.0.1:4318");
        assert!(!c.rules.is_empty(), "the default has a sample rule");
    }

    /// Every key of an API listener is optional, its endpoint too (each
    /// listener's own default): `enabled: false` alone turns one off.
    #[test]
    fn an_api_listener_turned_off_needs_no_endpoint() {
        let c = Config::parse("api:\n  grpc:\n    enabled: false\n", "c.yaml").unwrap();
        assert!(!c.api.grpc.enabled);
        assert_eq!(c.api.grpc.endpoint.to_string(), "127.0.0.1:8081");
        let c = Config::parse("api:\n  http: {enabled: false}\n", "c.yaml").unwrap();
        assert!(!c.api.http.enabled);
        assert_eq!(c.api.http.endpoint.to_string(), "127.0.0.1:8080");
        let c = Config::parse("api:\n  http: {endpoint: '0.0.0.0:9000'}\n", "c.yaml").unwrap();
        assert!(c.api.http.enabled);
        assert_eq!(c.api.http.endpoint.to_string(), "0.0.0.0:9000");
        let e = Config::parse("api:\n  grpc:\n    enabld: false\n", "c.yaml").unwrap_err();
        assert!(e.to_string().contains("api.grpc.enabld"), "{e}");
    }

    /// YAML setting one dotted key.
    fn yaml_setting(path: &str, value: u64) -> String {
        let mut out = String::new();
        let parts: Vec<&str> = path.split('.').collect();
        for (depth, part) in parts.iter().enumerate() {
            out.push_str(&"  ".repeat(depth));
            out.push_str(part);
            out.push(':');
            out.push(if depth + 1 == parts.len() { ' ' } else { '\n' });
        }
        format!("{out}{value}\n")
    }

    /// Every number of a bounded section has a maximum (or is declared
    /// unbounded), and every declaration names one of its numbers: a new
    /// key cannot go unchecked, nor a renamed one leave its check behind.
    #[test]
    fn every_number_of_a_bounded_section_is_declared() {
        let problems: Vec<String> = Config::default()
            .sections()
            .iter()
            .flat_map(Section::undeclared)
            .collect();
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// Issue 15: `late_span_window_secs: 9223372036854775807` passed
    /// validate-config, then panicked a shard (`Instant + Duration`). Every
    /// bounded key refuses its maximum plus one, naming the key and the
    /// maximum; the defaults are within every maximum.
    #[test]
    fn every_duration_size_and_count_has_a_maximum() {
        let defaults = Config::default();
        let maxima: Vec<_> = defaults
            .sections()
            .iter()
            .flat_map(|s| s.maxima().collect::<Vec<_>>())
            .collect();
        assert!(maxima.len() >= 58, "{}", maxima.len());
        for (path, value, max) in maxima {
            let path = path.as_str();
            assert!(value <= max, "{path}: default {value} above {max}");
            for over in [max + 1, u64::MAX / 2, u64::MAX] {
                let e = Config::parse(&yaml_setting(path, over), "t.yaml")
                    .unwrap_err()
                    .to_string();
                // (A value past the field's type, e.g. u32, is refused by
                // the parser, naming the key too.)
                let refused = e.contains(&format!("at most {max}"))
                    || (over > u64::from(u32::MAX) && e.contains("invalid value"));
                assert!(
                    e.contains(&format!("`{path}`")) && refused,
                    "{path} = {over}: {e}"
                );
            }
        }
        let e = Config::parse(
            "assembler:\n  late_span_window_secs: 9223372036854775807\n",
            "t.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("assembler.late_span_window_secs"), "{e}");
        for path in [
            "exporter.timeout_ms",
            "exporter.max_retries",
            "exporter.queue_capacity",
        ] {
            let e = Config::parse(&yaml_setting(path, u64::from(u32::MAX)), "t.yaml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(path) && e.contains("at most"), "{path}: {e}");
        }
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        assert_eq!(flow_depth_within("a: [[1], {b: [2]}]\n", 3), Ok(()));
        assert_eq!(flow_depth_within("a: [[[1]]]\n", 2), Err(1));
        // Brackets in quotes and comments do not count.
        assert_eq!(
            flow_depth_within("a: '[[[' # [[[\nb: \"\\\"[[[\"\n", 1),
            Ok(())
        );
        assert_eq!(flow_depth_within("x: 1\ny: [[[\n", 2), Err(2));
        let deep = format!("a: {}1{}\n", "{b: ".repeat(100_000), "}".repeat(100_000));
        let e = Config::parse(&deep, "t.yaml").unwrap_err().to_string();
        assert!(e.contains("nested more than 128 deep at line 1"), "{e}");
    }

    #[test]
    fn unknown_keys_name_the_path() {
        let e = Config::parse("assembler:\n  grace_after_root_msec: 5\n", "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.yaml: at `assembler.grace_after_root_msec`"),
            "{e}"
        );
        assert!(e.contains("line 2"), "{e}");
        assert!(e.contains("grace_after_root_msec"), "{e}");
        let e = Config::parse("receivers:\n  grpc:\n    endpoint: nope\n", "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("receivers.grpc.endpoint"), "{e}");
    }

    #[test]
    fn yaml_errors_give_the_key_path_line_and_column() {
        let err = |yaml: &str| Config::parse(yaml, "t.yaml").unwrap_err().to_string();
        let e = err("receivers:\n  grpc:\n    enabled: on\n");
        assert!(
            e.starts_with("t.yaml: at `receivers.grpc.enabled`: "),
            "{e}"
        );
        assert!(
            e.contains("invalid value `on`, expected true or false at line 3, column 14"),
            "{e}"
        );
        let e = err("assembler:\n  shards: lots\n");
        assert!(e.starts_with("t.yaml: at `assembler.shards`: "), "{e}");
        assert!(e.contains("line 2, column 11"), "{e}");
        let e = err("assembler:\n  shards: 2\n  shards: 3\n");
        assert!(e.starts_with("t.yaml: at `assembler`: "), "{e}");
        assert!(e.contains("duplicate") && e.contains("line 3"), "{e}");
        let e = err("assembler:\n  shards: 2\n queue_capacity: 5\n");
        assert!(e.starts_with("t.yaml: at `(top level)`: "), "{e}");
        assert!(e.contains("line 3, column 2"), "{e}");
        let e = err("assembler: {shards: 2}\n---\nassembler: {shards: 3}\n");
        assert!(e.contains("multiple") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn yaml_scalars_keep_their_yaml_1_2_meaning() {
        let yaml =
            "{a: on, b: yes, c: off, d: 010, e: 1_000, f: ~, g: 0x10, h: 1.5, i: true, j: '<<'}";
        let v: serde_json::Value =
            serde_saphyr::from_str_with_options(yaml, yaml_options()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "on", "b": "yes", "c": "off", "d": "010", "e": "1_000",
                "f": null, "g": 16, "h": 1.5, "i": true, "j": "<<"})
        );
        let s: String = serde_saphyr::from_str_with_options("~", yaml_options()).unwrap();
        assert_eq!(s, "~");
        let c = Config::embedded().unwrap();
        let text = serde_saphyr::to_string(&c).unwrap();
        assert_eq!(Config::parse(&text, "t.yaml").unwrap(), c, "{text}");
    }

    #[test]
    fn hostile_yaml_fails_fast() {
        let mut bomb = String::from(
            "evaluators:\n  inline:\n    - id: x\n      type: tool-call-count\n      config:\n        a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
        );
        for i in 1..10 {
            let p = i - 1;
            bomb += &format!(
                "        a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            );
        }
        let e = Config::parse(&bomb, "t.yaml").unwrap_err().to_string();
        assert!(e.contains("too large or too complex"), "{e}");
        let nested = |depth: usize| {
            let mut y = String::from("rules:\n  - name: r\n    evaluators: [x]\n    criteria:\n");
            for level in 0..depth {
                y += &format!("{}k{level}:\n", "  ".repeat(level + 3));
            }
            y
        };
        // The document, `rules`, the rule and `criteria` are four levels;
        // the deepest accepted parses (then fails validation).
        let e = Config::parse(&nested(MAX_YAML_DEPTH - 3), "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`rules[0].criteria.k0`"), "{e}");
        let e = Config::parse(&nested(MAX_YAML_DEPTH - 2), "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nested more than 64 deep at line 66"), "{e}");
    }

    #[test]
    fn cross_field_rules_are_checked() {
        let e = Config::parse("assembler:\n  grace_after_root_ms: 400000\n", "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("assembler.grace_after_root_ms"), "{e}");
        let e = Config::parse(
            "rules:\n  - name: r\n    evaluators: [a]\n    criteria: {b: null}\n",
            "t.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rules[0].criteria.b"), "{e}");
    }

    /// Counts and durations that must not be 0 are `NonZero*`: a 0 is
    /// refused while parsing, naming the key path and the value expected.
    #[test]
    fn zero_is_refused_where_a_count_must_be_positive() {
        for (path, line, column) in [
            ("store.max_traces", 2, 3),
            ("receivers.grpc.max_concurrent_streams", 3, 5),
            ("wal.sync_interval_ms", 2, 3),
            ("exporter.max_batch", 2, 3),
        ] {
            let e = Config::parse(&yaml_setting(path, 0), "t.yaml")
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "t.yaml: at `{path}`: invalid value `0`, expected an integer greater than 0 \
                     at line {line}, column {column}"
                ),
            );
        }
        let e = Config::parse(
            "llm:\n  providers:\n    p:\n      kind: openai\n      base_url: http://x\n      max_tokens_per_minute: 0\n",
            "t.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("t.yaml: at `llm.providers.p.max_tokens_per_minute`: ")
                && e.contains("expected an integer greater than 0"),
            "{e}"
        );
    }

    #[test]
    fn json_is_accepted_too() {
        let c = Config::parse(r#"{"assembler": {"grace_after_root_ms": 5}}"#, "t.json").unwrap();
        assert_eq!(c.assembler.grace_after_root_ms, 5);
    }

    #[test]
    fn the_ui_is_on_by_default_and_its_key_is_strict() {
        let parse = |yaml: &str| Config::parse(yaml, "test.yaml");
        assert!(Config::default().api.ui.enabled);
        assert!(parse(DEFAULT_YAML).unwrap().api.ui.enabled);
        assert!(!parse("api: {ui: {enabled: false}}").unwrap().api.ui.enabled);
        let e = parse("api: {ui: {enabld: false}}").unwrap_err().to_string();
        assert!(e.contains("api.ui"), "{e}");
    }
}
