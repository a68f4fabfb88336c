//! The port of Python's `ast.literal_eval` (Python-literal tool arguments),
//! and `repr` of what it returns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::literal;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(v) = literal::literal_eval(text) {
        let _ = v.repr();
    }
});
