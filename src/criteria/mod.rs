//! UiPath evaluation files and binding criteria to traces.
//!
//! Evaluator files (`evaluations/evaluators/*.json`) and eval-set files
//! (`evaluations/eval-sets/*.json`), version "1.0", load unchanged. Every
//! error names the file and the JSON key path. Criteria are validated and
//! resolved at load time (UiPath's rules: no key for an evaluator = skipped,
//! `null`/`{}` = the evaluator's default, no default = an error), so a bad eval
//! set fails at start-up rather than on the first trace.

mod binder;
mod binding;
mod config;
mod eval_set;
mod evaluator_file;
mod source;

pub use binder::{Binder, Bound};
pub use binding::{Binding, BindingConfig, find_binding_value};
pub use config::{
    BinderConfig, EvalSetsConfig, EvaluatorsConfig, InlineEvaluator, RuleConfig, RuleMatch,
};
pub use eval_set::{EvalItem, EvalSet, ItemEvaluator, load_eval_set, parse_eval_set};
pub use evaluator_file::{
    LoadedEvaluator, build as build_evaluator, load_evaluator_file, parse_evaluator_file,
};
pub use source::{Source, SourceError};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

use crate::evaluator::Evaluator;
use crate::pyvalue::{Value, json};

/// A file that could not be loaded: which file, where in it, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}{message}", file.display(), if path.is_empty() { String::new() } else { format!("at `{path}`: ") })]
pub struct LoadError {
    pub file: PathBuf,
    /// The JSON key path (`evaluations.2.evaluationCriterias.ToolCallArgsEvaluator.toolCalls.0.args`).
    pub path: String,
    pub message: String,
}

impl LoadError {
    pub fn new(file: &Path, path: impl Into<String>, message: impl Into<String>) -> LoadError {
        LoadError {
            file: file.to_owned(),
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Reads and parses a JSON file with Python's `json.load` semantics.
pub(crate) fn read_json(file: &Path) -> Result<Value, LoadError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| LoadError::new(file, "", format!("cannot read: {e}")))?;
    json::loads(&text).map_err(|e| LoadError::new(file, "", format!("not valid JSON: {e}")))
}

/// An evaluator toolscore knows of but does not run (an LLM judge, a custom
/// Python evaluator): eval sets may reference it; it is skipped with a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub id: String,
    pub type_id: String,
    pub file: PathBuf,
    pub reason: String,
}

/// Everything loaded: evaluators by id, eval sets, and an index of eval-set
/// items by id for binding.
#[derive(Debug, Default)]
pub struct Catalog {
    pub evaluators: IndexMap<String, Arc<Evaluator>>,
    pub unsupported: IndexMap<String, Unsupported>,
    pub eval_sets: Vec<Arc<EvalSet>>,
    items: HashMap<String, (usize, usize)>,
    /// Where each evaluator came from, for error messages.
    sources: HashMap<String, PathBuf>,
}

impl Catalog {
    /// Whether `id` is a loaded LLM-judged evaluator.
    pub fn is_llm_judge(&self, id: &str) -> bool {
        self.evaluators.get(id).is_some_and(|e| e.is_llm_judged())
    }

    /// Adds an evaluator; a duplicate id is an error naming both files.
    pub fn add_evaluator(&mut self, loaded: LoadedEvaluator, file: &Path) -> Result<(), LoadError> {
        let id = loaded.id().to_owned();
        if let Some(first) = self.sources.get(&id) {
            return Err(LoadError::new(
                file,
                "id",
                format!(
                    "evaluator id {id:?} is already defined in {}",
                    first.display()
                ),
            ));
        }
        self.sources.insert(id.clone(), file.to_owned());
        match loaded {
            LoadedEvaluator::Supported(ev) => {
                self.evaluators.insert(id, Arc::new(ev));
            }
            LoadedEvaluator::Unsupported(u) => {
                self.unsupported.insert(id, u);
            }
        }
        Ok(())
    }

    /// Loads every `*.json` in `dir` (sorted by file name) as an evaluator file.
    pub fn load_evaluator_dir(&mut self, dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
        let pattern = dir.join("*.json");
        let files =
            glob_sorted(&pattern.to_string_lossy()).map_err(|m| LoadError::new(dir, "", m))?;
        for f in &files {
            let loaded = load_evaluator_file(f)?;
            self.add_evaluator(loaded, f)?;
        }
        Ok(files)
    }

    /// Loads an eval set against the evaluators loaded so far and indexes its
    /// items; an item id already used by another loaded eval set is an error.
    pub fn load_eval_set(&mut self, file: &Path) -> Result<Arc<EvalSet>, LoadError> {
        let set = Arc::new(load_eval_set(file, self)?);
        let set_idx = self.eval_sets.len();
        for (i, item) in set.items.iter().enumerate() {
            if let Some((other, _)) = self.items.get(&*item.id) {
                return Err(LoadError::new(
                    file,
                    format!("evaluations.{i}.id"),
                    format!(
                        "item id {:?} is also used by eval set {} ({}); binding by item id needs unique ids",
                        item.id,
                        self.eval_sets[*other].id,
                        self.eval_sets[*other].file.display()
                    ),
                ));
            }
        }
        for (i, item) in set.items.iter().enumerate() {
            self.items.insert(item.id.to_string(), (set_idx, i));
        }
        self.eval_sets.push(set.clone());
        Ok(set)
    }

    /// The eval set and item an item id names.
    pub fn item(&self, item_id: &str) -> Option<(&Arc<EvalSet>, &EvalItem)> {
        let (s, i) = self.items.get(item_id)?;
        let set = self.eval_sets.get(*s)?;
        Some((set, set.items.get(*i)?))
    }
}

/// Files matching a glob, sorted, so loading order (and result order) is stable.
pub fn glob_sorted(pattern: &str) -> Result<Vec<PathBuf>, String> {
    let paths = glob::glob(pattern).map_err(|e| format!("bad file pattern {pattern:?}: {e}"))?;
    let mut files = Vec::new();
    for p in paths {
        files.push(p.map_err(|e| format!("cannot list {pattern:?}: {e}"))?);
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests;
