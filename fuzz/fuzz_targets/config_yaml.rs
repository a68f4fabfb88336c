//! The YAML configuration (`config::Config::parse(text, name)`: parsed and
//! validated), then what start-up builds from a configuration that parses:
//! the kept-attribute list, and the binder (`Binder::load`: inline
//! evaluators and their criteria, rules; the file globs are dropped, so no
//! file system is read), which then binds and evaluates the example traces
//! with the configuration's extraction conventions. Never a panic.
#![no_main]

use std::time::{Instant, SystemTime};

use libfuzzer_sys::fuzz_target;
use toolscore::assembler::{Ready, Reason};
use toolscore::config::Config;
use toolscore::criteria::Binder;
use toolscore::scoring::evaluate_ready;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut config) = Config::parse(text, "fuzz.yaml") else {
        return;
    };
    let _ = config.kept_attributes();
    config.evaluators.files.clear();
    config.eval_sets.files.clear();
    let Ok(binder) = Binder::load(config.binder(), None) else {
        return;
    };
    for spans in toolscore_fuzz::example_traces() {
        let ready = Ready {
            trace_id: spans.trace_id(),
            complete: true,
            spans: spans.clone(),
            revision: 1,
            reason: Reason::Complete,
            root_arrived: None,
            due: Instant::now(),
            pin: Default::default(),
            ticket: Default::default(),
        };
        let record = evaluate_ready(&binder, &config.extract, &ready, SystemTime::now()).record;
        let _ = toolscore::api::http::scores_json(&record);
    }
});
