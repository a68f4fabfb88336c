//! The binder: which evaluators and criteria apply to a trace, from the
//! eval sets, rules and defaults the configuration names.

use crate::key_error::KeyError;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value as Json;

use super::{
    BinderConfig, Binding, BindingConfig, Catalog, ItemEvaluator, LoadError, RuleConfig,
    find_binding_value,
};
use crate::evaluator::EvaluatorType;
use crate::evaluator::judged::root_span;
use crate::pyvalue::json_to_py;
use crate::record::{SpanRef, Spans};

/// Evaluators and their criteria for one trace, borrowed from the binder.
#[derive(Debug, Clone)]
pub struct Bound<'a> {
    pub binding: Binding,
    pub evaluators: &'a [ItemEvaluator],
}

#[derive(Debug)]
struct Rule {
    name: Arc<str>,
    service_name: Option<glob::Pattern>,
    root_span_name: Option<glob::Pattern>,
    attributes: Vec<(String, String)>,
    evaluators: Vec<ItemEvaluator>,
}

/// Decides which evaluators and criteria apply to a trace (DESIGN §4):
/// an eval-set item named by a binding attribute, else the first matching
/// rule, else the evaluators with `apply_to_all_traces`.
#[derive(Debug, Default)]
pub struct Binder {
    pub catalog: Catalog,
    rules: Vec<Rule>,
    defaults: Vec<ItemEvaluator>,
    pub binding: BindingConfig,
}

impl Binder {
    /// Loads evaluator files, inline evaluators, eval sets and rules.
    /// `config_file` names the config in errors, and its folder resolves
    /// relative globs (`None`: the embedded default, globs as written).
    pub fn load(config: BinderConfig<'_>, config_file: Option<&Path>) -> Result<Binder, LoadError> {
        let base = config_file.and_then(Path::parent);
        let mut catalog = Catalog::default();
        for pattern in resolve_globs(&config.evaluators.files, base) {
            for f in files_of(&pattern)? {
                let loaded = super::load_evaluator_file(&f)?;
                catalog.add_evaluator(loaded, &f)?;
            }
        }
        let config_file = config_file.unwrap_or(Path::new("<embedded config/default.yaml>"));
        let mut defaults = Vec::new();
        for (i, inline) in config.evaluators.inline.iter().enumerate() {
            let path = format!("evaluators.inline[{i}]");
            let kind = EvaluatorType::parse(&inline.kind).ok_or_else(|| {
                LoadError::new(
                    config_file,
                    format!("{path}.type"),
                    "unknown evaluator type",
                )
            })?;
            let cfg = json_to_py(&Json::Object(inline.config.clone()));
            let cfg = cfg.as_dict().cloned().unwrap_or_default();
            let ev = super::build_evaluator(&inline.id, kind, &cfg, &format!("{path}.config"))
                .map_err(|e| LoadError::new(config_file, e.path, e.message))?;
            let ev = Arc::new(ev);
            if inline.apply_to_all_traces {
                let Some(c) = ev.default_criteria.clone() else {
                    return Err(LoadError::new(
                        config_file,
                        format!("{path}.apply_to_all_traces"),
                        "needs config.defaultEvaluationCriteria to apply to every trace",
                    ));
                };
                defaults.push(ItemEvaluator {
                    source: Some(Arc::new(super::Source::new(&ev, None))),
                    evaluator: ev.clone(),
                    criteria: Arc::new(c),
                });
            }
            catalog.add_evaluator(
                super::LoadedEvaluator::Supported((*ev).clone()),
                config_file,
            )?;
        }
        for pattern in resolve_globs(&config.eval_sets.files, base) {
            for f in files_of(&pattern)? {
                catalog.load_eval_set(&f)?;
            }
        }
        let mut rules = Vec::new();
        for (i, r) in config.rules.iter().enumerate() {
            rules.push(
                compile_rule(r, i, &catalog)
                    .map_err(|e| LoadError::new(config_file, e.key, e.message))?,
            );
        }
        Ok(Binder {
            catalog,
            rules,
            defaults,
            binding: config.binding.clone(),
        })
    }

    /// The evaluators and criteria for a trace, or `None` when nothing binds it.
    pub fn bind(&self, spans: &Spans) -> Option<Bound<'_>> {
        if let Some(value) = find_binding_value(spans, &self.binding) {
            if let Some((set, item)) = self.catalog.item(&value) {
                return Some(Bound {
                    binding: Binding::EvalSet {
                        eval_set: set.id.clone(),
                        item: item.id.clone(),
                    },
                    evaluators: &item.evaluators,
                });
            }
            tracing::debug!(item = %value, "binding attribute names no loaded eval-set item");
        }
        let root = root_span(spans);
        for rule in &self.rules {
            if rule_matches(rule, root, spans) {
                return Some(Bound {
                    binding: Binding::Rule {
                        rule: rule.name.clone(),
                    },
                    evaluators: &rule.evaluators,
                });
            }
        }
        if self.defaults.is_empty() {
            return None;
        }
        Some(Bound {
            binding: Binding::Default,
            evaluators: &self.defaults,
        })
    }

    /// The evaluators and criteria a binding names under the current
    /// configuration (`None` when it names nothing loaded now): what a
    /// stored record was scored against, unless the configuration changed.
    pub fn bound(&self, binding: &Binding) -> Option<&[ItemEvaluator]> {
        match binding {
            Binding::EvalSet { item, .. } => {
                self.catalog.item(item).map(|(_, it)| &it.evaluators[..])
            }
            Binding::Rule { rule } => self
                .rules
                .iter()
                .find(|r| r.name == *rule)
                .map(|r| &r.evaluators[..]),
            Binding::Default => Some(&self.defaults),
        }
    }
}

/// Paths in the config are relative to the config file's folder.
fn resolve_globs(globs: &[String], base: Option<&Path>) -> Vec<String> {
    globs
        .iter()
        .map(|g| match base {
            Some(b) if Path::new(g).is_relative() => b.join(g).to_string_lossy().into_owned(),
            _ => g.clone(),
        })
        .collect()
}

/// The files a pattern names. A literal path (no `*`, `?` or `[`) must
/// exist: a typo would otherwise load nothing, silently. A glob that matches
/// nothing may be meant (a folder not filled yet) and is a warning.
fn files_of(pattern: &str) -> Result<Vec<std::path::PathBuf>, LoadError> {
    let files =
        super::glob_sorted(pattern).map_err(|m| LoadError::new(Path::new(pattern), "", m))?;
    if files.is_empty() {
        if !pattern.contains(['*', '?', '[']) {
            return Err(LoadError::new(
                Path::new(pattern),
                "",
                "no such file (a literal path, not a pattern, must exist)".to_owned(),
            ));
        }
        tracing::warn!(pattern, "no file matches this pattern");
    }
    Ok(files)
}

fn compile_rule(r: &RuleConfig, i: usize, catalog: &Catalog) -> Result<Rule, KeyError> {
    let pattern = |field: &str, g: &Option<String>| -> Result<Option<glob::Pattern>, KeyError> {
        g.as_ref()
            .map(|g| {
                glob::Pattern::new(g)
                    .map_err(|e| KeyError::new(format!("rules[{i}].match.{field}"), e.to_string()))
            })
            .transpose()
    };
    let mut evaluators = Vec::new();
    for (j, id) in r.evaluators.iter().enumerate() {
        let path = format!("rules[{i}].evaluators[{j}]");
        let Some(ev) = catalog.evaluators.get(id) else {
            if let Some(u) = catalog.unsupported.get(id) {
                return Err(KeyError::new(
                    path,
                    format!(
                        "evaluator {id:?} is loaded but not run by toolscore: {}",
                        u.reason
                    ),
                ));
            }
            return Err(KeyError::new(
                path,
                format!("evaluator {id:?} is not defined"),
            ));
        };
        let given = r.criteria.get(id).filter(|v| !v.is_null()).map(json_to_py);
        let criteria = match &given {
            Some(v) => ev
                .parse_criteria(v)
                .map_err(|e| KeyError::new(format!("rules[{i}].criteria.{id}"), e.to_string()))?,
            None => ev.default_criteria.clone().ok_or_else(|| {
                KeyError::new(
                    format!("rules[{i}].criteria.{id}"),
                    "no criteria given and the evaluator has no defaultEvaluationCriteria"
                        .to_owned(),
                )
            })?,
        };
        evaluators.push(ItemEvaluator {
            source: Some(Arc::new(super::Source::new(ev, given.as_ref()))),
            evaluator: ev.clone(),
            criteria: Arc::new(criteria),
        });
    }
    Ok(Rule {
        name: r.name.as_str().into(),
        service_name: pattern("service_name", &r.matcher.service_name)?,
        root_span_name: pattern("root_span_name", &r.matcher.root_span_name)?,
        attributes: r
            .matcher
            .attributes
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        evaluators,
    })
}

fn rule_matches(rule: &Rule, root: Option<SpanRef<'_>>, spans: &Spans) -> bool {
    if let Some(p) = &rule.service_name {
        let service = root
            .and_then(|r| r.service_name())
            .or_else(|| spans.iter().find_map(|s| s.service_name()));
        if !service.is_some_and(|s| p.matches(s)) {
            return false;
        }
    }
    if let Some(p) = &rule.root_span_name
        && !root.is_some_and(|r| p.matches(r.name()))
    {
        return false;
    }
    rule.attributes.iter().all(|(k, v)| {
        spans.key(k).is_some_and(|key| {
            spans
                .iter()
                .any(|s| s.get(key).is_some_and(|a| a.py_str() == *v))
        })
    })
}
