//! The JSON text writer (`json_text`, crate-private; reached through
//! `store::Details::from(&serde_json::Value)`, how every result's details
//! are stored and later served): byte for byte what `serde_json::to_string`
//! writes for the same value. The value is the input read as JSON by
//! serde_json, and also the input's text as one string (every control
//! character and escape the writer's word-at-a-time scan must find). The
//! text also reads back through `json.loads` (as
//! `pyvalue::json_to_py` assumes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value as J;
use toolscore::store::Details;
use toolscore_fuzz::agrees_with_serde;

fn check(v: &J) {
    let details = Details::from(v);
    let expected = serde_json::to_string(v).expect("a Value serialises");
    assert_eq!(&*details.text(), expected, "json_text vs serde_json");
    assert_eq!(&details.to_json(), v, "the text reads back");
    let py = toolscore::pyvalue::json::loads(&expected)
        .unwrap_or_else(|e| panic!("json.loads refuses serde_json's text: {e}: {expected}"));
    assert!(agrees_with_serde(&py, v), "json.loads of serde_json's text: {py:?} vs {v:?}");
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    check(&J::String(text.clone().into_owned()));
    if let Ok(v) = serde_json::from_slice::<J>(data) {
        check(&v);
        check(&J::Array(vec![v, J::String(text.into_owned())]));
    }
});
