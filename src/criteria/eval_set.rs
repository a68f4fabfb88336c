//! UiPath eval-set files (version "1.0").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::evaluator_file::criteria_invalid;
use super::{Catalog, LoadError, read_json};
use crate::evaluator::common::{Invalid, expect_list, expect_str, join};
use crate::evaluator::{Criteria, CriteriaError, Evaluator};
use crate::pyvalue::{Dict, Int, Value};

/// A loaded eval set.
#[derive(Debug)]
pub struct EvalSet {
    pub id: Arc<str>,
    pub name: String,
    pub file: PathBuf,
    /// The referenced evaluators toolscore runs, in reference order.
    pub evaluators: Vec<Arc<Evaluator>>,
    /// Referenced evaluators that are skipped (LLM judges, custom evaluators).
    pub skipped: Vec<String>,
    pub items: Vec<EvalItem>,
}

/// One evaluation item with its criteria resolved per evaluator.
#[derive(Debug)]
pub struct EvalItem {
    pub id: Arc<str>,
    pub name: String,
    /// The evaluators that run for this item (those with a criteria key), in
    /// the eval set's evaluator order.
    pub evaluators: Vec<ItemEvaluator>,
}

#[derive(Debug, Clone)]
pub struct ItemEvaluator {
    pub evaluator: Arc<Evaluator>,
    /// The item's own criteria, or the evaluator's default.
    pub criteria: Arc<Criteria>,
    /// Both as given, by content: a database keeps it to render its scores'
    /// details when read. `None` (a request's own evaluators): details are
    /// stored as text.
    pub source: Option<Arc<super::Source>>,
}

pub fn load_eval_set(file: &Path, catalog: &Catalog) -> Result<EvalSet, LoadError> {
    parse_eval_set(&read_json(file)?, file, catalog)
}

/// Validates an eval set against the loaded evaluators.
pub fn parse_eval_set(v: &Value, file: &Path, catalog: &Catalog) -> Result<EvalSet, LoadError> {
    let err = |e: Invalid| LoadError::new(file, e.path, e.message);
    let Some(d) = v.as_dict() else {
        return Err(LoadError::new(
            file,
            "",
            "an eval-set file must hold a JSON object",
        ));
    };
    if !is_v1(d.get_str("version")) {
        return Err(LoadError::new(
            file,
            "version",
            "legacy (unversioned) UiPath eval sets are not supported; use the version \"1.0\" format \
             with `evaluatorRefs` and `evaluationCriterias`",
        ));
    }
    let id = match d.get_str("id") {
        Some(v) => expect_str(v, "id").map_err(err)?,
        None => return Err(LoadError::new(file, "id", "required key is missing")),
    };
    let name = match d.get_str("name") {
        Some(v) => expect_str(v, "name").map_err(err)?,
        None => id.clone(),
    };
    let refs = evaluator_refs(d).map_err(err)?;
    let mut evaluators = Vec::new();
    let mut skipped = Vec::new();
    for (path, r) in &refs {
        if let Some(ev) = catalog.evaluators.get(r) {
            if !evaluators.iter().any(|e: &Arc<Evaluator>| *e.id == **r) {
                evaluators.push(ev.clone());
            }
        } else if catalog.unsupported.contains_key(r) {
            skipped.push(r.clone());
        } else {
            return Err(LoadError::new(
                file,
                path.clone(),
                format!(
                    "evaluator {r:?} is not loaded (loaded: {})",
                    catalog
                        .evaluators
                        .keys()
                        .chain(catalog.unsupported.keys())
                        .map(|k| format!("{k:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let items_value = match d.get_str("evaluations") {
        Some(v) => expect_list(v, "evaluations").map_err(err)?,
        None => &[],
    };
    let mut items: Vec<EvalItem> = Vec::with_capacity(items_value.len());
    for (i, item) in items_value.iter().enumerate() {
        let item = parse_item(item, &join("evaluations", i), &evaluators).map_err(err)?;
        if items.iter().any(|other| other.id == item.id) {
            return Err(LoadError::new(
                file,
                format!("evaluations.{i}.id"),
                format!("duplicate item id {:?}", item.id),
            ));
        }
        items.push(item);
    }
    Ok(EvalSet {
        id: id.into(),
        name,
        file: file.to_owned(),
        evaluators,
        skipped,
        items,
    })
}

/// `"1.0"` or any numeric-like value >= 1 selects the v1 format.
fn is_v1(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Str(s)) => s.trim().parse::<f64>().is_ok_and(|f| f >= 1.0),
        Some(Value::Int(Int::Small(i))) => *i >= 1,
        Some(Value::Float(f)) => *f >= 1.0,
        _ => false,
    }
}

/// `evaluatorConfigs` (strings or `{ref, weight}`) when present and
/// non-empty, else `evaluatorRefs`; each with its key path.
fn evaluator_refs(d: &Dict) -> Result<Vec<(String, String)>, Invalid> {
    if let Some(v) = d.get_str("evaluatorConfigs").filter(|v| v.truthy()) {
        let mut out = Vec::new();
        for (i, c) in expect_list(v, "evaluatorConfigs")?.iter().enumerate() {
            let p = join("evaluatorConfigs", i);
            let r = match c {
                Value::Str(s) => s.clone(),
                Value::Dict(cd) => match cd.get_str("ref") {
                    Some(r) => expect_str(r, &join(&p, "ref"))?,
                    None => return Err(Invalid::new(join(&p, "ref"), "required key is missing")),
                },
                other => {
                    return Err(Invalid::new(
                        p,
                        format!(
                            "must be an evaluator id or {{\"ref\": id}}, got {}",
                            other.type_name()
                        ),
                    ));
                }
            };
            out.push((p, r));
        }
        return Ok(out);
    }
    let Some(v) = d.get_str("evaluatorRefs") else {
        return Err(Invalid::new("evaluatorRefs", "required key is missing"));
    };
    expect_list(v, "evaluatorRefs")?
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let p = join("evaluatorRefs", i);
            expect_str(r, &p).map(|s| (p, s))
        })
        .collect()
}

fn parse_item(v: &Value, path: &str, evaluators: &[Arc<Evaluator>]) -> Result<EvalItem, Invalid> {
    let Some(d) = v.as_dict() else {
        return Err(Invalid::new(
            path,
            format!("an item must be an object, got {}", v.type_name()),
        ));
    };
    let mut id = match d.get_str("id") {
        Some(v) => expect_str(v, &join(path, "id"))?,
        None => return Err(Invalid::new(join(path, "id"), "required key is missing")),
    };
    if looks_like_guid(&id) {
        id = id.to_ascii_lowercase();
    }
    let name = match d.get_str("name") {
        Some(v) => expect_str(v, &join(path, "name"))?,
        None => id.clone(),
    };
    let cpath = join(path, "evaluationCriterias");
    let criterias = match d.get_str("evaluationCriterias") {
        None | Some(Value::None) => Dict::new(),
        Some(Value::Dict(c)) => c.clone(),
        Some(other) => {
            return Err(Invalid::new(
                cpath,
                format!("must be an object, got {}", other.type_name()),
            ));
        }
    };
    let mut out = Vec::new();
    for ev in evaluators {
        // No key: the evaluator is skipped for this item.
        let Some(value) = criterias.get_str(&ev.id) else {
            continue;
        };
        let p = join(&cpath, &ev.id);
        let (criteria, given) = if value.truthy() {
            let c = ev
                .parse_criteria(value)
                .map_err(|e| criteria_invalid(e, &p))?;
            (c, Some(value))
        } else {
            // null or {}: the evaluator's default criteria.
            match &ev.default_criteria {
                Some(c) => (c.clone(), None),
                None => return Err(criteria_invalid(CriteriaError::Missing, &p)),
            }
        };
        out.push(ItemEvaluator {
            source: Some(Arc::new(super::Source::new(ev, given))),
            evaluator: ev.clone(),
            criteria: Arc::new(criteria),
        });
    }
    Ok(EvalItem {
        id: id.into(),
        name,
        evaluators: out,
    })
}

/// 8-4-4-4-12 hex digits.
fn looks_like_guid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}
