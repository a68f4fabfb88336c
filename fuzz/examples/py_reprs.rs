//! Prints, for each file named (or each file of each directory named), one
//! JSON line: what the `json.loads` and `ast.literal_eval` ports make of
//! its text, as Python's `repr`, or the error's kind. `cpython_diff.py`
//! compares the lines with CPython's own (fuzz/README.md).
//!
//!     cargo +nightly run --release --example py_reprs -- corpus/py_literal_eval | python3.12 cpython_diff.py

use std::io::Write;

use toolscore::pyvalue::{json, literal, literal::LiteralError};

fn main() -> std::io::Result<()> {
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        let p = std::path::PathBuf::from(arg);
        if p.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(&p)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(p);
        }
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    for f in files {
        let Ok(text) = String::from_utf8(std::fs::read(&f)?) else { continue };
        let json = match json::loads(&text) {
            Ok(v) => serde_json::json!({ "repr": v.repr() }),
            Err(e) => serde_json::json!({ "error": "JSONDecodeError", "message": e.to_string() }),
        };
        let literal = match literal::literal_eval(&text) {
            Ok(v) => serde_json::json!({ "repr": v.repr() }),
            Err(LiteralError::Syntax(m)) => serde_json::json!({ "error": "SyntaxError", "message": m }),
            Err(LiteralError::Value(m)) => serde_json::json!({ "error": "ValueError", "message": m }),
            Err(LiteralError::Decode(m)) => serde_json::json!({ "error": "UnicodeDecodeError", "message": m }),
            Err(LiteralError::Type(e)) => serde_json::json!({ "error": "TypeError", "message": e.to_string() }),
        };
        let line = serde_json::json!({ "file": f.display().to_string(), "text": text, "json": json, "literal": literal });
        writeln!(out, "{line}")?;
    }
    Ok(())
}
