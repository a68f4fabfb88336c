//! UiPath eval-set files (`criteria::parse_eval_set`, as `eval_sets.files`
//! loads them), against a catalog of the example evaluators
//! (`examples/uipath-weather-tools/evaluations/evaluators/`); each item's
//! evaluators then run with its criteria on the example traces' tool
//! calls. Never a panic.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolscore::criteria::{Catalog, parse_eval_set};
use toolscore::pyvalue::json;

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut c = Catalog::default();
        c.load_evaluator_dir(&toolscore_fuzz::repo().join("examples/uipath-weather-tools/evaluations/evaluators"))
            .expect("the example evaluators load");
        c
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(v) = json::loads(text) else { return };
    let Ok(set) = parse_eval_set(&v, std::path::Path::new("fuzz.json"), catalog()) else { return };
    for item in &set.items {
        for ie in &item.evaluators {
            toolscore_fuzz::evaluate_examples(&ie.evaluator, &ie.criteria);
        }
    }
});
