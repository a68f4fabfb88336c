//! deepeval `ToolCorrectnessMetric` (`deepeval-tool-correctness`), the
//! deterministic part (SEMANTICS §2): the tool-calling score and reason, and
//! their combination with a tool-selection score. The LLM-judged selection
//! (`available_tools`) lives in `llm::deepeval`, which reuses this file's
//! score, reason and reprs.
//!
//! Tools called are the trace's tool calls: `name`, `input_parameters` = the
//! call's parsed args, `output` = the raw output attribute (absent = None).

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Map, Value as Json};

use super::common::{
    self, Interner, Invalid, expect_dict, expect_list, expect_str, field, join, lax_bool, lax_float,
};
use super::kind::{Explanation, Judged, Kind, Layout};
use super::{CriteriaError, Explain, Outcome, repr_str_list};
use crate::extract::ToolCall;
use crate::pyvalue::eq::eq_hash;
use crate::pyvalue::{Dict, Value};

mod repr;

pub(crate) use repr::json_dumps_indented;
use repr::tool_repr;
pub use repr::{py_splitlines, verbose_logs};

/// deepeval's metric parameters (snake_case or camelCase keys).
#[derive(Debug, Clone, PartialEq)]
pub struct DeepevalConfig {
    pub should_consider_ordering: bool,
    pub should_exact_match: bool,
    pub input_parameters: bool,
    pub output: bool,
    /// The configured threshold (default 0.5); strict mode uses the int 1.
    pub threshold: f64,
    /// Whether the configured threshold was written as an integer (deepeval
    /// keeps the Python type and reports it back).
    pub threshold_is_int: bool,
    pub strict_mode: bool,
    /// `available_tools` (absent or null = None): a non-empty list asks the
    /// LLM judge for a tool-selection score; `Some([])` (also when absent
    /// from a config that names the judge) takes the LLM path's details
    /// without asking it.
    pub available_tools: Option<Vec<DeepevalTool>>,
    /// The OpenAI model name of the judge (deepeval's default `gpt-5.4`).
    pub model: String,
    /// The judge's temperature (deepeval's default 0.0, dropped for models
    /// that take none).
    pub temperature: Option<f64>,
    /// deepeval's `async_mode`: no observable difference here (both modes
    /// score, call and retry alike), kept so configs round-trip.
    pub async_mode: bool,
}

/// deepeval's default judge model (`DEFAULT_GPT_MODEL`).
pub const DEFAULT_MODEL: &str = "gpt-5.4";

/// The selection reason deepeval uses when no LLM judges tool selection.
pub const NO_AVAILABLE_TOOLS_REASON: &str =
    "No available tools were provided to assess tool selection criteria";

impl Default for DeepevalConfig {
    fn default() -> Self {
        DeepevalConfig {
            should_consider_ordering: false,
            should_exact_match: false,
            input_parameters: false,
            output: false,
            threshold: 0.5,
            threshold_is_int: false,
            strict_mode: false,
            available_tools: None,
            model: DEFAULT_MODEL.to_owned(),
            temperature: None,
            async_mode: true,
        }
    }
}

const KEYS: [(&str, &str); 13] = [
    ("default_evaluation_criteria", "defaultEvaluationCriteria"),
    ("should_consider_ordering", "shouldConsiderOrdering"),
    ("should_exact_match", "shouldExactMatch"),
    ("evaluation_params", "evaluationParams"),
    ("threshold", "threshold"),
    ("strict_mode", "strictMode"),
    ("available_tools", "availableTools"),
    ("include_reason", "includeReason"),
    ("async_mode", "asyncMode"),
    ("verbose_mode", "verboseMode"),
    ("name", "name"),
    ("model", "model"),
    ("temperature", "temperature"),
];

impl DeepevalConfig {
    /// Validates the metric's parameters. Unknown keys are refused (Python
    /// would raise a `TypeError` for an unknown keyword argument).
    pub fn parse(d: &Dict, path: &str) -> Result<DeepevalConfig, Invalid> {
        for k in d.keys() {
            let known = k.as_str().is_some_and(|k| {
                KEYS.iter().any(|(s, c)| *s == k || *c == k) || k == "description"
            });
            if !known {
                return Err(Invalid::new(
                    join(path, k.py_str()),
                    "unknown parameter of deepeval's ToolCorrectnessMetric",
                ));
            }
        }
        let key_path =
            |which: &str, s: &str, c: &str| join(path, if which == "camel" { c } else { s });
        let flag = |s: &str, c: &str| match field(d, s, c) {
            Some((v, which)) => lax_bool(v, &key_path(which, s, c)),
            None => Ok(false),
        };
        let mut cfg = DeepevalConfig {
            should_consider_ordering: flag("should_consider_ordering", "shouldConsiderOrdering")?,
            should_exact_match: flag("should_exact_match", "shouldExactMatch")?,
            strict_mode: flag("strict_mode", "strictMode")?,
            ..DeepevalConfig::default()
        };
        if let Some((v, which)) = field(d, "async_mode", "asyncMode") {
            cfg.async_mode = lax_bool(v, &key_path(which, "async_mode", "asyncMode"))?;
        }
        match d.get_str("model") {
            None | Some(Value::None) => {}
            Some(v) => cfg.model = expect_str(v, &join(path, "model"))?,
        }
        match d.get_str("temperature") {
            None | Some(Value::None) => {}
            Some(v) => cfg.temperature = Some(lax_float(v, &join(path, "temperature"))?),
        }
        if let Some((v, which)) = field(d, "threshold", "threshold") {
            let p = key_path(which, "threshold", "threshold");
            cfg.threshold = lax_float(v, &p)?;
            cfg.threshold_is_int = matches!(v, Value::Int(_));
        }
        if let Some((v, which)) = field(d, "evaluation_params", "evaluationParams") {
            let p = key_path(which, "evaluation_params", "evaluationParams");
            for (i, item) in expect_list(v, &p)?.iter().enumerate() {
                let ip = join(&p, i);
                let name = expect_str(item, &ip)?;
                let bare = name.strip_prefix("ToolCallParams.").unwrap_or(&name);
                match bare.to_ascii_lowercase().as_str() {
                    "input_parameters" | "inputparameters" => cfg.input_parameters = true,
                    "output" => cfg.output = true,
                    _ => {
                        return Err(Invalid::new(
                            ip,
                            format!(
                                "unknown evaluation param {name:?}: expected \"input_parameters\" or \"output\""
                            ),
                        ));
                    }
                }
            }
        }
        if let Some((v, which)) = field(d, "available_tools", "availableTools") {
            let p = key_path(which, "available_tools", "availableTools");
            if !matches!(v, Value::None) {
                let items = expect_list(v, &p)?;
                let mut tools = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    tools.push(parse_tool(item, &join(&p, i))?);
                }
                cfg.available_tools = Some(tools);
            }
        }
        // A config naming the judge is deepeval's metric as its LLM path
        // runs it, whose details (verbose logs, cost) it gives without
        // `available_tools` too (`None` and `[]` alike score selection 1.0,
        // asking no model). One naming none is the deterministic part alone.
        let judge_named = ["model", "async_mode", "asyncMode", "temperature"]
            .iter()
            .any(|k| d.get_str(k).is_some());
        if cfg.available_tools.is_none() && judge_named {
            cfg.available_tools = Some(Vec::new());
        }
        Ok(cfg)
    }
}

/// One of deepeval's `ToolCall`s (type is always FUNCTION here).
#[derive(Debug, Clone)]
pub struct DeepevalTool {
    pub name: String,
    pub input_parameters: Option<Dict>,
    pub output: Option<Value>,
    pub description: Option<String>,
    pub reasoning: Option<String>,
}

/// Field by field, values compared the Python way (configs compare equal
/// when they would score alike).
impl PartialEq for DeepevalTool {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && opt_dict_eq(
                self.input_parameters.as_ref(),
                other.input_parameters.as_ref(),
            )
            && opt_eq(self.output.as_ref(), other.output.as_ref())
            && self.description == other.description
            && self.reasoning == other.reasoning
    }
}

/// The criteria: `expected_tools`.
#[derive(Debug, Clone)]
pub struct ExpectedTools {
    pub tools: Vec<DeepevalTool>,
}

pub fn parse_criteria(v: &Value) -> Result<ExpectedTools, CriteriaError> {
    let invalid = CriteriaError::InvalidExpectedTool;
    let d = expect_dict(v, "").map_err(invalid)?;
    let (list, which) = match field(d, "expected_tools", "expectedTools") {
        None | Some((Value::None, _)) => return Err(CriteriaError::MissingExpectedTools),
        Some(found) => found,
    };
    let path = if which == "camel" {
        "expectedTools"
    } else {
        "expected_tools"
    };
    let items = expect_list(list, path).map_err(invalid)?;
    let mut tools = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        tools.push(parse_tool(item, &join(path, i)).map_err(invalid)?);
    }
    Ok(ExpectedTools { tools })
}

fn parse_tool(v: &Value, path: &str) -> Result<DeepevalTool, Invalid> {
    let d = expect_dict(v, path)?;
    let name = match d.get_str("name") {
        Some(n) => expect_str(n, &join(path, "name"))?,
        None => return Err(Invalid::new(join(path, "name"), "Field required")),
    };
    let input_parameters = match field(d, "input_parameters", "inputParameters") {
        None | Some((Value::None, _)) => None,
        Some((p, _)) => Some(expect_dict(p, &join(path, "input_parameters"))?.clone()),
    };
    let opt_str = |key: &str| match d.get_str(key) {
        None | Some(Value::None) => Ok(None),
        Some(s) => expect_str(s, &join(path, key)).map(Some),
    };
    if let Some(t) = d.get_str("type") {
        let t = expect_str(t, &join(path, "type"))?;
        if !t.eq_ignore_ascii_case("function") && t != "ToolCallType.FUNCTION" {
            return Err(Invalid::new(
                join(path, "type"),
                format!("only FUNCTION tools are scored (traces carry no tool type), got {t:?}"),
            ));
        }
    }
    Ok(DeepevalTool {
        name,
        input_parameters,
        output: d
            .get_str("output")
            .filter(|o| !matches!(o, Value::None))
            .cloned(),
        description: opt_str("description")?,
        reasoning: opt_str("reasoning")?,
    })
}

/// The tools called, as the conformance harness hands them to deepeval.
pub fn tools_called(calls: &[ToolCall]) -> Result<Vec<DeepevalTool>, String> {
    calls
        .iter()
        .map(|c| {
            Ok(DeepevalTool {
                name: c.name.clone(),
                input_parameters: Some(c.args.dict().map_err(str::to_owned)?.clone()),
                output: c.raw_output.clone(),
                description: None,
                reasoning: None,
            })
        })
        .collect()
}

/// A deepeval `ToolCall` as the scorer reads it, borrowed from the criteria
/// or from a trace's tool call: no params or output is cloned.
#[derive(Clone, Copy)]
struct Tool<'a> {
    name: &'a str,
    input_parameters: Option<&'a Dict>,
    output: Option<&'a Value>,
    description: Option<&'a str>,
    reasoning: Option<&'a str>,
}

impl<'a> Tool<'a> {
    fn expected(t: &'a DeepevalTool) -> Tool<'a> {
        Tool {
            name: &t.name,
            input_parameters: t.input_parameters.as_ref(),
            output: t.output.as_ref(),
            description: t.description.as_deref(),
            reasoning: t.reasoning.as_deref(),
        }
    }

    /// As [`tools_called`] builds it: params = the parsed args, output =
    /// the raw output attribute.
    fn called(c: &'a ToolCall) -> Result<Tool<'a>, &'a str> {
        Ok(Tool {
            name: &c.name,
            input_parameters: Some(c.args.dict()?),
            output: c.raw_output.as_ref(),
            description: None,
            reasoning: None,
        })
    }

    /// deepeval's `ToolCall.__eq__`: name, params and output.
    fn value_eq(&self, other: &Tool<'_>) -> bool {
        self.name == other.name
            && opt_dict_eq(self.input_parameters, other.input_parameters)
            && opt_eq(self.output, other.output)
    }

    /// A hash of params and output such that `value_eq` implies equal
    /// hashes (names are compared apart): pairs with different hashes need
    /// no `py_eq`.
    fn eq_hash(&self) -> u64 {
        let params = self.input_parameters.map_or(0x6e6f_6e65, Dict::eq_hash);
        let output = eq_hash(self.output.unwrap_or(&Value::None));
        params.rotate_left(17) ^ output
    }
}

fn opt_dict_eq(a: Option<&Dict>, b: Option<&Dict>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.py_eq(b),
        _ => false,
    }
}

fn opt_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.unwrap_or(&Value::None).py_eq(b.unwrap_or(&Value::None))
}

/// deepeval's `_compare_dicts(expected, called)`; `Err` is its AttributeError
/// when exactly one side is None.
fn compare_dicts(expected: Option<&Dict>, called: Option<&Dict>) -> Result<f64, String> {
    if opt_dict_eq(expected, called) {
        return Ok(1.0);
    }
    let (Some(a), Some(b)) = (expected, called) else {
        return Err("AttributeError: 'NoneType' object has no attribute 'keys'".into());
    };
    let union = a.len() + b.keys().filter(|k| !a.contains_key(k)).count();
    let mut score = 0.0;
    for (k, va) in a.iter() {
        let Some(vb) = b.get(k) else { continue };
        if va.py_eq(vb) {
            score += 1.0 / union as f64;
        } else if let (Value::Dict(da), Value::Dict(db)) = (va, vb) {
            score += compare_dicts(Some(da), Some(db))? / union as f64;
        }
    }
    Ok(score)
}

/// Lazily computed [`Tool::eq_hash`]es.
struct Hashes(Vec<Option<u64>>);

impl Hashes {
    fn new(n: usize) -> Hashes {
        Hashes(vec![None; n])
    }

    fn get(&mut self, i: usize, tools: &[Tool<'_>]) -> u64 {
        match self.0[i] {
            Some(h) => h,
            None => {
                let h = tools[i].eq_hash();
                self.0[i] = Some(h);
                h
            }
        }
    }
}

struct Scorer<'a> {
    cfg: &'a DeepevalConfig,
    expected: Vec<Tool<'a>>,
    called: Vec<Tool<'a>>,
    /// Ids of the called tools' names (equal names, equal ids).
    called_name: Vec<u32>,
    /// Each expected tool's name id among the called names, or `ABSENT`.
    expected_name: Vec<u32>,
    /// How many distinct called names there are.
    names: usize,
}

/// What the score was computed from, for the reason.
enum Scored {
    Exact,
    /// The weighted LCS (indices into the expected tools).
    Ordered(Vec<usize>),
    Unordered,
}

impl<'a> Scorer<'a> {
    fn new(cfg: &'a DeepevalConfig, expected: Vec<Tool<'a>>, called: Vec<Tool<'a>>) -> Self {
        let mut names = Interner::with_capacity(called.len());
        let called_name: Vec<u32> = called
            .iter()
            .map(|c| names.intern(Cow::Borrowed(c.name)))
            .collect();
        let expected_name = expected.iter().map(|e| names.get(e.name)).collect();
        let distinct = names.len();
        Scorer {
            cfg,
            expected,
            called,
            called_name,
            expected_name,
            names: distinct,
        }
    }

    /// The weight of a name-matching pair: 1, times the params similarity,
    /// zeroed by an output mismatch.
    fn weight(&self, e: &Tool<'_>, c: &Tool<'_>) -> Result<f64, String> {
        let mut w = 1.0;
        if self.cfg.input_parameters {
            w *= compare_dicts(e.input_parameters, c.input_parameters)?;
        }
        if self.cfg.output && !opt_eq(e.output, c.output) {
            w = 0.0;
        }
        Ok(w)
    }

    fn exact(&self) -> f64 {
        if self.expected.len() != self.called.len() {
            return 0.0;
        }
        let same = self.expected.iter().zip(&self.called).all(|(e, c)| {
            e.name == c.name
                && (!self.cfg.input_parameters
                    || opt_dict_eq(e.input_parameters, c.input_parameters))
                && (!self.cfg.output || opt_eq(e.output, c.output))
        });
        if same { 1.0 } else { 0.0 }
    }

    /// Greedy matching in expected order; "already matched" is a set of
    /// values, so a call equal to a matched one counts as used too.
    ///
    /// Equal values have equal names, so only matched tools of the same
    /// name are compared, and only when their hashes agree; a tool found
    /// used stays used (the matched set only grows).
    fn unordered(&self) -> Result<f64, String> {
        if self.expected.is_empty() {
            return Ok(if self.called.is_empty() { 1.0 } else { 0.0 });
        }
        let n = self.called.len();
        let mut hashes = Hashes::new(n);
        let mut used = vec![false; n];
        let mut matched: Vec<Vec<usize>> = vec![Vec::new(); self.names];
        // Without params similarity every weight is 0 or 1: the first
        // weight-1 candidate is the one kept.
        let binary = !self.cfg.input_parameters;
        let mut total = 0.0;
        for (e, &name) in self.expected.iter().zip(&self.expected_name) {
            let Some(same_name) = matched.get(name as usize) else {
                continue;
            };
            let mut best = 0.0;
            let mut best_j = None;
            for (j, &called_name) in self.called_name.iter().enumerate() {
                if called_name != name || used[j] {
                    continue;
                }
                if !same_name.is_empty() {
                    let h = hashes.get(j, &self.called);
                    let c = &self.called[j];
                    if same_name
                        .iter()
                        .any(|&m| hashes.get(m, &self.called) == h && self.called[m].value_eq(c))
                    {
                        used[j] = true;
                        continue;
                    }
                }
                let w = self.weight(e, &self.called[j])?;
                if w > best {
                    best = w;
                    best_j = Some(j);
                    if binary {
                        break;
                    }
                }
            }
            if let Some(j) = best_j {
                total += best;
                matched[name as usize].push(j);
            }
        }
        Ok(total / self.expected.len() as f64)
    }

    /// Weighted LCS; returns the LCS (indices of expected tools) and its total weight.
    fn weighted_lcs(&self) -> Result<(Vec<usize>, f64), String> {
        let (m, n) = (self.expected.len(), self.called.len());
        let w = n + 1;
        let mut dp = vec![0.0f64; (m + 1) * w];
        for i in 1..=m {
            let (e, name) = (&self.expected[i - 1], self.expected_name[i - 1]);
            for j in 1..=n {
                let up = dp[(i - 1) * w + j];
                let left = dp[i * w + j - 1];
                if self.called_name[j - 1] != name {
                    dp[i * w + j] = up.max(left);
                    continue;
                }
                let s = self.weight(e, &self.called[j - 1])?;
                let diag = if s > 0.0 {
                    dp[(i - 1) * w + j - 1] + s
                } else {
                    0.0
                };
                dp[i * w + j] = py_max3(up, left, diag);
            }
        }
        let (mut i, mut j, mut total) = (m, n, 0.0);
        let mut lcs = Vec::new();
        while i > 0 && j > 0 {
            let cell = dp[i * w + j];
            if cell == dp[(i - 1) * w + j] {
                i -= 1;
            } else if cell == dp[i * w + j - 1] {
                j -= 1;
            } else {
                lcs.push(i - 1);
                total += cell - dp[(i - 1) * w + j - 1];
                i -= 1;
                j -= 1;
            }
        }
        lcs.reverse();
        Ok((lcs, total))
    }

    /// The deterministic score, and what the reason needs of its computation.
    fn score(&self) -> Result<(f64, Scored), String> {
        if self.cfg.should_exact_match {
            Ok((self.exact(), Scored::Exact))
        } else if self.cfg.should_consider_ordering {
            if self.expected.is_empty() {
                let s = if self.called.is_empty() { 1.0 } else { 0.0 };
                return Ok((s, Scored::Ordered(Vec::new())));
            }
            let (lcs, weight) = self.weighted_lcs()?;
            Ok((weight / self.expected.len() as f64, Scored::Ordered(lcs)))
        } else {
            Ok((self.unordered()?, Scored::Unordered))
        }
    }

    /// The reason for a score `score` (before strict mode) computed as `how`.
    fn reason(&self, score: f64, how: &Scored) -> String {
        let e_names = repr_str_list(self.expected.iter().map(|t| t.name));
        let c_names = repr_str_list(self.called.iter().map(|t| t.name));
        match how {
            Scored::Exact => {
                let verdict = if score != 0.0 {
                    "Exact match"
                } else {
                    "Not an exact match"
                };
                format!("{verdict}: expected {e_names}, called {c_names}. See details above.")
            }
            Scored::Ordered(lcs) => {
                if score == 1.0 {
                    return format!(
                        "Correct ordering: all expected tools {e_names} were called in the correct order."
                    );
                }
                let missing = name_set_difference(&self.expected, |i| {
                    self.expected_name[i] != common::ABSENT
                });
                let in_lcs: HashSet<&str> = lcs.iter().map(|&i| self.expected[i].name).collect();
                let out_of_order =
                    name_set_difference(&self.expected, |i| in_lcs.contains(self.expected[i].name));
                let mut issues = Vec::new();
                if !missing.is_empty() {
                    issues.push(format!("missing tools {}", repr_str_list(missing)));
                }
                if !out_of_order.is_empty() {
                    issues.push(format!(
                        "out-of-order tools {}",
                        repr_str_list(out_of_order)
                    ));
                }
                format!(
                    "Incorrect tool usage: {}; expected {e_names}, called {c_names}. See more details above.",
                    issues.join(" and ")
                )
            }
            Scored::Unordered => {
                if score == 1.0 {
                    return format!(
                        "All expected tools {e_names} were called (order not considered)."
                    );
                }
                let missing: Vec<String> = self
                    .missing_tools()
                    .into_iter()
                    .map(|i| tool_repr(&self.expected[i]))
                    .collect();
                format!(
                    "Incomplete tool usage: missing tools [{}]; expected {e_names}, called {c_names}. See more details above.",
                    missing.join(", ")
                )
            }
        }
    }

    /// `list(set(expected) - set(called))`: distinct expected tools equal to
    /// no called one (indices, first-seen order).
    fn missing_tools(&self) -> Vec<usize> {
        let mut called_hashes = Hashes::new(self.called.len());
        let mut expected_hashes = Hashes::new(self.expected.len());
        let mut missing: Vec<usize> = Vec::new();
        for (i, e) in self.expected.iter().enumerate() {
            let name = self.expected_name[i];
            let h = expected_hashes.get(i, &self.expected);
            let called = name != common::ABSENT
                && (0..self.called.len()).any(|j| {
                    self.called_name[j] == name
                        && called_hashes.get(j, &self.called) == h
                        && self.called[j].value_eq(e)
                });
            if called {
                continue;
            }
            let seen = missing.iter().any(|&k| {
                expected_hashes.get(k, &self.expected) == h && self.expected[k].value_eq(e)
            });
            if !seen {
                missing.push(i);
            }
        }
        missing
    }
}

/// Python's `max(a, b, c)`: the first of the largest.
fn py_max3(a: f64, b: f64, c: f64) -> f64 {
    let mut m = a;
    if b > m {
        m = b;
    }
    if c > m {
        m = c;
    }
    m
}

/// `list(set(expected names) - {names of the tools where present(index)})`,
/// in first-seen order.
fn name_set_difference<'a>(expected: &[Tool<'a>], present: impl Fn(usize) -> bool) -> Vec<&'a str> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<&str> = Vec::new();
    for (i, t) in expected.iter().enumerate() {
        if !present(i) && seen.insert(t.name) {
            out.push(t.name);
        }
    }
    out
}

/// The tool-calling half of the metric: `_calculate_score()` (strict mode
/// already applied) and `_generate_reason()`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCalling {
    pub score: f64,
    /// Strict mode turned the score into the int `0`.
    pub score_is_int: bool,
    pub reason: String,
}

/// The metric's result once a tool-selection score is combined in.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    pub score: f64,
    pub score_is_int: bool,
    /// The two-part reason (`_construct_final_reason`).
    pub reason: String,
    pub success: bool,
    /// The effective threshold (the int 1 under strict mode).
    pub threshold: f64,
    pub threshold_is_int: bool,
}

/// `_calculate_score()` and `_generate_reason()`; `Err` is the exception the
/// reference raises (`"ExcType: message"`).
pub fn tool_calling(
    calls: &[ToolCall],
    criteria: &ExpectedTools,
    cfg: &DeepevalConfig,
) -> Result<ToolCalling, String> {
    let called = calls
        .iter()
        .map(Tool::called)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("ValidationError: {e}"))?;
    let expected = criteria.tools.iter().map(Tool::expected).collect();
    let scorer = Scorer::new(cfg, expected, called);
    let (raw, how) = scorer.score()?;
    let reason = scorer.reason(raw, &how);
    let (threshold, _) = effective_threshold(cfg);
    // strict: a score under the threshold (1) becomes the int 0.
    let (score, score_is_int) = if cfg.strict_mode && raw < threshold {
        (0.0, true)
    } else {
        (raw, false)
    };
    Ok(ToolCalling {
        score,
        score_is_int,
        reason,
    })
}

/// `1 if strict_mode else threshold`, and whether it is a Python int.
fn effective_threshold(cfg: &DeepevalConfig) -> (f64, bool) {
    if cfg.strict_mode {
        (1.0, true)
    } else {
        (cfg.threshold, cfg.threshold_is_int)
    }
}

/// `measure()`'s combination: `min(tool_calling, selection)` (Python's
/// `min`, so the first of equals and NaN never wins from the right), strict
/// mode's int 0, the final reason and `success`.
pub fn combine(
    calling: &ToolCalling,
    selection_score: f64,
    selection_reason: &str,
    cfg: &DeepevalConfig,
) -> Combined {
    let (threshold, threshold_is_int) = effective_threshold(cfg);
    let (mut score, mut score_is_int) = if selection_score < calling.score {
        (selection_score, false)
    } else {
        (calling.score, calling.score_is_int)
    };
    if cfg.strict_mode && score < threshold {
        (score, score_is_int) = (0.0, true);
    }
    Combined {
        score,
        score_is_int,
        reason: format!(
            "[\n\t Tool Calling Reason: {}\n\t Tool Selection Reason: {selection_reason}\n]\n",
            calling.reason
        ),
        success: score >= threshold,
        threshold,
        threshold_is_int,
    }
}

impl Combined {
    /// The details every deepeval result carries: reason, success, threshold.
    pub fn details(&self) -> Map<String, Json> {
        let mut details = Map::with_capacity(6);
        details.insert("reason".into(), Json::String(self.reason.clone()));
        details.insert("success".into(), Json::Bool(self.success));
        details.insert(
            "threshold".into(),
            threshold_json(self.threshold, self.threshold_is_int),
        );
        details
    }

    /// An ok outcome with `details`.
    pub fn outcome(&self, details: Map<String, Json>) -> Outcome {
        let mut outcome = Outcome::ok(self.score, Json::Object(details));
        outcome.score_is_int = self.score_is_int;
        outcome.passed = Some(self.success);
        outcome.threshold = Some(self.threshold);
        outcome
    }
}

/// The metric without an LLM judge: the selection score is deepeval's
/// constant `ToolSelectionScore(score=1, ...)`.
pub fn evaluate(
    calls: &[ToolCall],
    criteria: &ExpectedTools,
    cfg: &DeepevalConfig,
    explain: Explain,
) -> Outcome {
    match tool_calling(calls, criteria, cfg) {
        Ok(calling) => {
            let combined = combine(&calling, 1.0, NO_AVAILABLE_TOOLS_REASON, cfg);
            let mut outcome = combined.outcome(Map::new());
            outcome.details = explain.details(|| Json::Object(combined.details()));
            outcome
        }
        Err(e) => Outcome::error(e),
    }
}

fn threshold_json(t: f64, is_int: bool) -> Json {
    if is_int && t.fract() == 0.0 && t.abs() < 9.0e15 {
        // Exact: the guard keeps the value in i64's exactly representable range.
        #[allow(clippy::cast_possible_truncation)]
        Json::from(t as i64)
    } else {
        serde_json::Number::from_f64(t).map_or(Json::Null, Json::Number)
    }
}

/// The kind's declaration (`evaluator::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolCorrectness;

impl Kind for ToolCorrectness {
    type Config = DeepevalConfig;
    type Criteria = ExpectedTools;
    const LAYOUT: Layout = Layout::ExpectedTools;
    const EXPLANATION: Explanation = Explanation::Reason;

    fn id(self) -> &'static str {
        "deepeval-tool-correctness"
    }
    fn alias(self) -> &'static str {
        "tool-correctness"
    }
    fn default_name(self) -> &'static str {
        "ToolCorrectnessMetric"
    }
    fn default_config(self) -> DeepevalConfig {
        DeepevalConfig::default()
    }
    fn parse_config(self, config: &Dict, path: &str) -> Result<DeepevalConfig, Invalid> {
        DeepevalConfig::parse(config, path)
    }
    fn parse_criteria(self, criteria: &Value) -> Result<ExpectedTools, CriteriaError> {
        parse_criteria(criteria)
    }
    fn missing_criteria(self) -> CriteriaError {
        CriteriaError::MissingExpectedTools
    }
    fn judged(config: &DeepevalConfig) -> Judged {
        match &config.available_tools {
            // A request only for a non-empty list (`available_tools` truthy).
            Some(tools) => Judged::Yes {
                asks: !tools.is_empty(),
            },
            None => Judged::No,
        }
    }
    fn reads_content(config: &DeepevalConfig) -> Option<&'static str> {
        match (config.input_parameters, config.output) {
            (true, true) => Some("arguments and outputs"),
            (true, false) => Some("arguments"),
            (false, true) => Some("outputs"),
            (false, false) => None,
        }
    }
    fn score(
        self,
        calls: &[ToolCall],
        config: &DeepevalConfig,
        criteria: &ExpectedTools,
        explain: Explain,
    ) -> Outcome {
        evaluate(calls, criteria, config, explain)
    }
}

#[cfg(test)]
mod tests;
