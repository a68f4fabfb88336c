//! UiPath evaluator files (and their criteria), as `evaluators.files` loads
//! them: JSON through the `json.loads` port, then validated.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::json;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(v) = json::loads(text) else { return };
    let _ = toolscore::criteria::parse_evaluator_file(&v, std::path::Path::new("fuzz.json"));
});
