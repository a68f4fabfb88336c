//! The port of Python's `json.loads` (span arguments, evaluator files), and
//! `repr` of what it returns: a value it makes must print, and what prints
//! must read back through `ast.literal_eval` as an equal value (NaN aside).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::{json, literal};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(v) = json::loads(text) else { return };
    let printed = v.repr();
    if !printed.contains("nan") && !printed.contains("inf") {
        let back = literal::literal_eval(&printed).expect("repr of a json value reads back");
        assert_eq!(back.repr(), printed);
    }
});
