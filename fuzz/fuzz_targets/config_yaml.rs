//! The YAML configuration: parsed and validated, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = toolscore::config::Config::parse(text, "fuzz.yaml");
});
