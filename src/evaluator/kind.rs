//! What one evaluator kind declares, once, beside its scoring: its ids, its
//! config and criteria types, its scorer and explainer, and how the UI and
//! the export show its details. `kinds!` (in `mod.rs`) lists the kinds and
//! writes every dispatch from this trait, so a kind missing one of its parts
//! does not compile (docs/development.md, "Adding an evaluator").

use super::common::Invalid;
use super::{CriteriaError, Explain, Outcome};
use crate::extract::ToolCall;
use crate::pyvalue::{Dict, Value};

/// One evaluator kind. A unit struct for a kind of its own (`count::Count`),
/// an enum for a family sharing its types (`judged::uipath::Kind`).
///
/// The smallest complete kind: one that counts the calls.
///
/// ```
/// use toolscore::evaluator::common::Invalid;
/// use toolscore::evaluator::kind::{Explanation, Judged, Kind, Layout};
/// use toolscore::evaluator::{CriteriaError, Explain, Outcome};
/// use toolscore::extract::ToolCall;
/// use toolscore::pyvalue::{Dict, Value};
///
/// #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// struct Probe;
///
/// impl Kind for Probe {
///     type Config = ();
///     type Criteria = ();
///     const LAYOUT: Layout = Layout::JudgeReason;
///     const EXPLANATION: Explanation = Explanation::Details;
///     fn id(self) -> &'static str { "probe" }
///     fn alias(self) -> &'static str { "probe" }
///     fn default_name(self) -> &'static str { "Probe" }
///     fn default_config(self) {}
///     fn parse_config(self, _: &Dict, _: &str) -> Result<(), Invalid> { Ok(()) }
///     fn parse_criteria(self, _: &Value) -> Result<(), CriteriaError> { Ok(()) }
///     fn missing_criteria(self) -> CriteriaError { CriteriaError::Missing }
///     fn judged(_: &()) -> Judged { Judged::No }
///     fn reads_content(_: &()) -> Option<&'static str> { None }
///     fn score(self, calls: &[ToolCall], _: &(), _: &(), _: Explain) -> Outcome {
///         Outcome::ok(calls.len() as f64, serde_json::Value::Null)
///     }
/// }
/// assert_eq!(Probe.score(&[], &(), &(), Explain::No).score, Some(0.0));
/// ```
///
/// No item has a default: the same kind without its parts does not compile.
///
/// ```compile_fail,E0046
/// use toolscore::evaluator::kind::Kind;
///
/// #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// struct Probe;
///
/// impl Kind for Probe {
///     type Config = ();
///     type Criteria = ();
///     fn id(self) -> &'static str { "probe" }
/// }
/// ```
pub trait Kind: Copy + std::fmt::Debug + PartialEq + Eq + std::hash::Hash + 'static {
    /// The validated config (`evaluatorConfig`, or deepeval's metric
    /// parameters).
    type Config: Clone + std::fmt::Debug + PartialEq;
    /// The validated criteria (`evaluationCriteria`, deepeval's expected
    /// tools).
    type Criteria: Clone + std::fmt::Debug;

    /// How the UI lays out a score's details.
    const LAYOUT: Layout;
    /// What the exported span's `toolscore.explanation` says.
    const EXPLANATION: Explanation;

    /// The canonical type id (UiPath's `evaluatorTypeId` for the UiPath ones).
    fn id(self) -> &'static str;
    /// The short alias a configuration may use instead of the id.
    fn alias(self) -> &'static str;
    /// The reference's default evaluator name (UiPath's class name).
    fn default_name(self) -> &'static str;

    /// The reference's config when none is given.
    fn default_config(self) -> Self::Config;
    /// Validates a config object; unknown keys are ignored, as pydantic does.
    fn parse_config(self, config: &Dict, path: &str) -> Result<Self::Config, Invalid>;
    /// Validates criteria, with the reference's error codes.
    fn parse_criteria(self, criteria: &Value) -> Result<Self::Criteria, CriteriaError>;
    /// The error when there are no criteria and no default ones.
    fn missing_criteria(self) -> CriteriaError;

    /// Whether a model judges it.
    fn judged(config: &Self::Config) -> Judged;
    /// What of the tool calls, beyond their names and order, it reads
    /// (`None`: names and order only), so that content the instrumentation
    /// did not capture is reported, not scored 0.
    fn reads_content(config: &Self::Config) -> Option<&'static str>;

    /// Scores the calls without a model, writing the details when `explain`
    /// says so: the same code scores in the pipeline and explains on read.
    fn score(
        self,
        calls: &[ToolCall],
        config: &Self::Config,
        criteria: &Self::Criteria,
        explain: Explain,
    ) -> Outcome;
}

/// A family of kinds sharing one config and criteria type (the UiPath LLM
/// judges): `EvaluatorType`'s list of kinds takes each member.
pub trait Family: Kind {
    const ALL: &'static [Self];
}

/// Whether a model judges a kind, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    No,
    /// An LLM judge; `asks` is whether scoring sends a request (deepeval
    /// with `available_tools: []` is judged but asks nothing).
    Yes {
        asks: bool,
    },
}

/// The shape of a kind's details, which the UI lays out
/// (`api/ui/explain`): data here, so an evaluator names its layout without
/// knowing the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// UiPath's `expected`/`actual` tool counts, a row per expected tool.
    ToolCounts,
    /// UiPath's expected sequence against the calls, with the LCS.
    ToolSequence,
    /// UiPath's per-call comparison of arguments.
    CallArguments,
    /// UiPath's per-call comparison of outputs.
    CallOutputs,
    /// deepeval's reason, beside the expected tools of the binding.
    ExpectedTools,
    /// An LLM judge's score and reason.
    JudgeReason,
}

/// Which text of a score's details the export's `toolscore.explanation`
/// carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explanation {
    /// The details as they are (a string as itself, else compact JSON).
    Details,
    /// The details' `reason` field (deepeval's), else the details.
    Reason,
}

/// Lists the evaluator kinds and writes, from their [`Kind`] declarations,
/// the `EvaluatorType`, `Config` and `Criteria` enums and every dispatch on
/// them. Units are kinds of their own; families are [`Family`] enums whose
/// members share a variant.
macro_rules! kinds {
    (
        units { $( $unit:ident => $ukind:ident :: $utype:ident ),+ $(,)? }
        families { $( $fam:ident => $fkind:path ),+ $(,)? }
    ) => {
        /// The evaluator types toolscore runs, each declared by its
        /// [`Kind`](kind::Kind) impl.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EvaluatorType {
            $( $unit, )+
            $( $fam($fkind), )+
        }

        /// An evaluator's validated configuration.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Config {
            $( $unit(<$ukind::$utype as kind::Kind>::Config), )+
            $( $fam(<$fkind as kind::Kind>::Config), )+
        }

        /// Criteria validated for one evaluator type.
        #[derive(Debug, Clone)]
        pub enum Criteria {
            $( $unit(<$ukind::$utype as kind::Kind>::Criteria), )+
            $( $fam(<$fkind as kind::Kind>::Criteria), )+
        }

        impl EvaluatorType {
            /// Every type, each family's members in its order.
            pub fn all() -> impl Iterator<Item = EvaluatorType> + Clone {
                [$( EvaluatorType::$unit ),+]
                    .into_iter()
                    $( .chain(
                        <$fkind as kind::Family>::ALL.iter().copied().map(EvaluatorType::$fam)
                    ) )+
            }

            /// The canonical type id (UiPath's `evaluatorTypeId` for the
            /// UiPath ones).
            pub fn id(self) -> &'static str {
                match self {
                    $( EvaluatorType::$unit => kind::Kind::id($ukind::$utype), )+
                    $( EvaluatorType::$fam(k) => kind::Kind::id(k), )+
                }
            }

            /// The short alias (`tool-call-count`, …, `tool-correctness`,
            /// `llm-judge-…`).
            pub fn alias(self) -> &'static str {
                match self {
                    $( EvaluatorType::$unit => kind::Kind::alias($ukind::$utype), )+
                    $( EvaluatorType::$fam(k) => kind::Kind::alias(k), )+
                }
            }

            /// The reference's default evaluator name (UiPath's class name).
            pub fn default_name(self) -> &'static str {
                match self {
                    $( EvaluatorType::$unit => kind::Kind::default_name($ukind::$utype), )+
                    $( EvaluatorType::$fam(k) => kind::Kind::default_name(k), )+
                }
            }

            /// How the UI lays out this type's details.
            pub fn layout(self) -> kind::Layout {
                match self {
                    $( EvaluatorType::$unit => <$ukind::$utype as kind::Kind>::LAYOUT, )+
                    $( EvaluatorType::$fam(_) => <$fkind as kind::Kind>::LAYOUT, )+
                }
            }

            /// What the export's `toolscore.explanation` says for this type.
            pub fn explanation(self) -> kind::Explanation {
                match self {
                    $( EvaluatorType::$unit => <$ukind::$utype as kind::Kind>::EXPLANATION, )+
                    $( EvaluatorType::$fam(_) => <$fkind as kind::Kind>::EXPLANATION, )+
                }
            }

            /// The error for missing criteria.
            fn missing_criteria(self) -> CriteriaError {
                match self {
                    $( EvaluatorType::$unit => kind::Kind::missing_criteria($ukind::$utype), )+
                    $( EvaluatorType::$fam(k) => kind::Kind::missing_criteria(k), )+
                }
            }
        }

        /// The reference's config for `kind` when none is given.
        pub fn default_config(kind: EvaluatorType) -> Config {
            match kind {
                $( EvaluatorType::$unit => {
                    Config::$unit(kind::Kind::default_config($ukind::$utype))
                } )+
                $( EvaluatorType::$fam(k) => Config::$fam(kind::Kind::default_config(k)), )+
            }
        }

        /// Validates an evaluator config object (UiPath's `evaluatorConfig`,
        /// or deepeval's metric parameters). Unknown keys are ignored, as
        /// pydantic does.
        pub fn parse_config(
            kind: EvaluatorType,
            config: &Dict,
            path: &str,
        ) -> Result<Config, Invalid> {
            Ok(match kind {
                $( EvaluatorType::$unit => {
                    Config::$unit(kind::Kind::parse_config($ukind::$utype, config, path)?)
                } )+
                $( EvaluatorType::$fam(k) => {
                    Config::$fam(kind::Kind::parse_config(k, config, path)?)
                } )+
            })
        }

        /// Validates criteria for `kind`.
        pub fn parse_criteria(kind: EvaluatorType, criteria: &Value) -> Result<Criteria, CriteriaError> {
            Ok(match kind {
                $( EvaluatorType::$unit => {
                    Criteria::$unit(kind::Kind::parse_criteria($ukind::$utype, criteria)?)
                } )+
                $( EvaluatorType::$fam(k) => {
                    Criteria::$fam(kind::Kind::parse_criteria(k, criteria)?)
                } )+
            })
        }

        impl Config {
            /// Whether a model judges the evaluator, as configured.
            pub fn judged(&self) -> kind::Judged {
                match self {
                    $( Config::$unit(c) => <$ukind::$utype as kind::Kind>::judged(c), )+
                    $( Config::$fam(c) => <$fkind as kind::Kind>::judged(c), )+
                }
            }

            /// What of the calls, beyond names and order, the evaluator reads.
            pub fn reads_content(&self) -> Option<&'static str> {
                match self {
                    $( Config::$unit(c) => <$ukind::$utype as kind::Kind>::reads_content(c), )+
                    $( Config::$fam(c) => <$fkind as kind::Kind>::reads_content(c), )+
                }
            }
        }

        /// Scores through `kind`'s declaration; `None` when the config or
        /// the criteria are another type's.
        fn score_kind(
            kind: EvaluatorType,
            config: &Config,
            criteria: &Criteria,
            calls: &[ToolCall],
            explain: Explain,
        ) -> Option<Outcome> {
            match (kind, config, criteria) {
                $( (EvaluatorType::$unit, Config::$unit(cfg), Criteria::$unit(c)) => {
                    Some(kind::Kind::score($ukind::$utype, calls, cfg, c, explain))
                } )+
                $( (EvaluatorType::$fam(k), Config::$fam(cfg), Criteria::$fam(c)) => {
                    Some(kind::Kind::score(k, calls, cfg, c, explain))
                } )+
                _ => None,
            }
        }
    };
}

pub(crate) use kinds;
