//! UiPath evaluator files (`criteria::parse_evaluator_file`, as
//! `evaluators.files` loads them: JSON through the `json.loads` port, then
//! validated, `defaultEvaluationCriteria` included), and an evaluator that
//! loads run with its default criteria on the example traces' tool calls,
//! its outcome rendered as the API shows it. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::criteria::{Catalog, LoadedEvaluator, parse_evaluator_file};
use toolscore::pyvalue::json;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(v) = json::loads(text) else { return };
    let path = std::path::Path::new("fuzz.json");
    let Ok(loaded) = parse_evaluator_file(&v, path) else { return };
    if let LoadedEvaluator::Supported(ev) = &loaded {
        if let Some(c) = &ev.default_criteria {
            toolscore_fuzz::evaluate_examples(ev, c);
        }
        // The same evaluator given criteria of its own (the criteria object
        // of an eval-set item): here the file's own default, re-parsed.
        if let Some(d) = v.as_dict().and_then(|d| d.get_str("evaluatorConfig")).and_then(|c| c.as_dict()) {
            if let Some(c) = d.get_str("defaultEvaluationCriteria") {
                if let Ok(parsed) = ev.parse_criteria(c) {
                    toolscore_fuzz::evaluate_examples(ev, &parsed);
                }
            }
        }
    }
    let mut catalog = Catalog::default();
    catalog.add_evaluator(loaded, path).expect("the first evaluator of a catalog adds");
});
