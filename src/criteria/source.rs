//! An evaluator's config and criteria as they were given, by content: what
//! a stored score's details are rendered from, with the trace's tool calls,
//! when someone reads them. A database keeps each one once, by its hash, so
//! an eval set edited or reloaded later still explains the results scored
//! before (`store/rows.rs`).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::ItemEvaluator;
use crate::evaluator::{Evaluator, EvaluatorType};
use crate::pyvalue::{Value, exact};

/// See the module's documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The first 16 bytes of the SHA-256 of the rest.
    pub hash: [u8; 16],
    pub evaluator_type: EvaluatorType,
    /// The evaluator's config object ([`exact`] text).
    pub config: String,
    /// The criteria given ([`exact`] text); `None`: the config's default.
    pub criteria: Option<String>,
}

/// Why a stored source could not be loaded again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored evaluator config {hash}: {message}")]
pub struct SourceError {
    hash: String,
    message: String,
}

impl Source {
    /// The source of `evaluator` bound to `criteria` (`None`: its default).
    pub fn new(evaluator: &Evaluator, criteria: Option<&Value>) -> Source {
        let mut config = String::new();
        exact::write_dict(&evaluator.config_source, &mut config);
        let criteria = criteria.map(|v| {
            let mut out = String::new();
            exact::write(v, &mut out);
            out
        });
        let hash = hash_of(evaluator.kind, &config, criteria.as_deref());
        Source {
            hash,
            evaluator_type: evaluator.kind,
            config,
            criteria,
        }
    }

    /// A source read back from a database, checked against its hash.
    pub fn stored(
        hash: &[u8],
        evaluator_type: &str,
        config: String,
        criteria: Option<String>,
    ) -> Result<Source, SourceError> {
        let fail = |message: &str| SourceError {
            hash: const_hex::encode(hash),
            message: message.to_owned(),
        };
        let evaluator_type =
            EvaluatorType::parse(evaluator_type).ok_or_else(|| fail("unknown evaluator type"))?;
        let source = Source {
            hash: hash_of(evaluator_type, &config, criteria.as_deref()),
            evaluator_type,
            config,
            criteria,
        };
        if source.hash[..] != *hash {
            return Err(fail("its content does not match its hash"));
        }
        Ok(source)
    }

    /// The evaluator and criteria this names, loaded again as they were.
    pub fn load(self: &Arc<Self>) -> Result<ItemEvaluator, SourceError> {
        let fail = |message: String| SourceError {
            hash: const_hex::encode(self.hash),
            message,
        };
        let config = match exact::read(&self.config).map_err(|e| fail(e.to_string()))? {
            Value::Dict(d) => d,
            _ => return Err(fail("the config is not an object".into())),
        };
        let ev = super::build_evaluator("stored", self.evaluator_type, &config, "config")
            .map_err(|e| fail(format!("{}: {}", e.path, e.message)))?;
        let criteria = match &self.criteria {
            Some(text) => {
                let v = exact::read(text).map_err(|e| fail(e.to_string()))?;
                ev.parse_criteria(&v).map_err(|e| fail(e.to_string()))?
            }
            None => ev
                .default_criteria
                .clone()
                .ok_or_else(|| fail("no criteria and no default criteria".into()))?,
        };
        Ok(ItemEvaluator {
            evaluator: Arc::new(ev),
            criteria: Arc::new(criteria),
            source: Some(self.clone()),
        })
    }
}

/// The hash of a source's content: its parts, each with its length, so
/// that no two sources share the bytes hashed.
fn hash_of(kind: EvaluatorType, config: &str, criteria: Option<&str>) -> [u8; 16] {
    let mut h = Sha256::new();
    for part in [Some(kind.id()), Some(config), criteria] {
        match part {
            Some(p) => {
                h.update((p.len() as u64 + 1).to_le_bytes());
                h.update(p.as_bytes());
            }
            None => h.update(0u64.to_le_bytes()),
        }
    }
    let digest = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}
