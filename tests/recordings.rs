//! The recording corpus (tests/recordings/): real agents instrumented by
//! real libraries, recorded against a stub model, each fixture beside the
//! ground truth of what every tool function received and returned. Every
//! fixture is read as the service reads a trace (OTLP/JSON → records →
//! extraction with the default configuration) and must give exactly its
//! ground truth: the calls' names, arguments and outputs, in order, in the
//! trace that made them, and no call in any other trace.
//!
//! How a result is compared with the truth:
//! - calls of one model turn (parallel calls) may come in any order; turns
//!   come in order;
//! - arguments: as JSON values;
//! - output: the text the function returned; a dict result may also be
//!   its JSON (`output_json`, compared as JSON); a call that raised has no
//!   output, or the error as the framework reported it;
//! - where the instrumentation did not capture arguments or outputs
//!   (`content_captured: false`), the calls must say so, and only names
//!   are compared.
//!
//! Recordings that cannot give their truth, because the calls are in no
//! span at all or only in the text of a framework's own protocol, are
//! listed in [`UNREADABLE`] with the reason (and in docs/conventions.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;
use toolscore::extract::ToolCall;
use toolscore::pyvalue::py_dict_to_json;

/// (recorder/scenario, why its calls cannot be read from its spans).
const UNREADABLE: &[(&str, &str)] = &[
    (
        "openinference-haystack/pipeline-agent",
        "instrumented before Haystack's components were imported: no model or tool span at all",
    ),
    (
        "openinference-openai/chat-loop-noparent",
        "every model call is a trace of its own: a call's result is only in the next trace",
    ),
    (
        "openllmetry-crewai/crew",
        "traceloop's crewAI instrumentation makes no model or tool span with crewAI's own OpenAI client",
    ),
    (
        "openllmetry-openai/chat-loop-nocontent",
        "content capture off and no tool spans: nothing names the calls",
    ),
    (
        "otel-genai-openai-v2/chat-loop-nocontent",
        "content capture off and no tool spans: nothing names the calls",
    ),
    (
        "otel-genai-openai-v2/chat-loop-legacy-true",
        "content capture off (an invalid mode) and no tool spans: nothing names the calls",
    ),
];

/// Recordings whose tool spans are shaped as UiPath's (OpenInference's
/// `tool.name`, `input.value`, `output.value`, under a scope toolscore does
/// not tell apart): read by the reference's rules, as the UiPath evaluators
/// read them, so a dict returned without a `content` key is output `''`.
const REFERENCE_RULE: &[&str] = &[
    "openinference-openai/oitracer-agent",
    "openinference-openai/oitracer-agent-hidden",
];

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings/fixtures");
    let mut out = Vec::new();
    for recorder in std::fs::read_dir(&root).unwrap() {
        let dir = recorder.unwrap().path();
        for f in std::fs::read_dir(&dir).unwrap() {
            let p = f.unwrap().path();
            if p.to_string_lossy().ends_with(".truth.json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A fixture's traces' tool calls, as the service extracts them: read as
/// OTLP/JSON, and as OTLP/protobuf through the receivers' decoders, which
/// must give the same calls. A fixture's log records (`.logs.otlp.json`)
/// are read with its spans.
fn extract(path: &Path) -> BTreeMap<String, Vec<ToolCall>> {
    use prost::Message;
    let config = toolscore::config::Config::default();
    let keep = Arc::new(config.kept_attributes());
    let text = std::fs::read_to_string(path).unwrap();
    let parsed = toolscore::otlp_json::parse_file_text(&text, &keep)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        parsed.rejected.is_empty(),
        "{}: {:?}",
        path.display(),
        parsed.rejected
    );
    let calls = |records: toolscore::record::Records| -> BTreeMap<String, Vec<ToolCall>> {
        records
            .traces(&keep)
            .unwrap()
            .into_iter()
            .map(|(id, spans)| {
                (
                    id.to_hex(),
                    toolscore::extract::extract(&spans, &config.extract),
                )
            })
            .collect()
    };
    // The log records recorded beside the spans (the model's messages as
    // events): read with the spans, as the service keeps them together.
    let logs_path = PathBuf::from(
        path.to_string_lossy()
            .replace(".otlp.json", ".logs.otlp.json"),
    );
    let logs_text = std::fs::read_to_string(&logs_path).ok();
    let mut json_records = parsed.spans;
    if let Some(text) = &logs_text {
        let logs = toolscore::otlp_json::parse_file_text(text, &keep)
            .unwrap_or_else(|e| panic!("{}: {e}", logs_path.display()));
        assert!(logs.rejected.is_empty(), "{}", logs_path.display());
        json_records.append(logs.spans);
    }
    let from_json = calls(json_records);
    let request: opentelemetry_proto::tonic::trace::v1::TracesData =
        serde_json::from_str(&text).unwrap();
    let mut wire = toolscore::receiver::wire::decode_request(&request.encode_to_vec(), &keep)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if let Some(text) = &logs_text {
        let logs: opentelemetry_proto::tonic::logs::v1::LogsData =
            serde_json::from_str(text).unwrap();
        let decoded = toolscore::receiver::decode::decode(
            toolscore::wal::Kind::OtlpLogsProtobuf,
            &logs.encode_to_vec(),
            &keep,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", logs_path.display()));
        wire.spans.append(decoded.spans);
    }
    let from_wire = calls(wire.spans);
    let summary = |m: &BTreeMap<String, Vec<ToolCall>>| format!("{m:?}");
    assert_eq!(
        summary(&from_wire),
        summary(&from_json),
        "{}: the wire decoder reads other calls",
        path.display()
    );
    from_json
}

/// What differs between a fixture's calls and its truth (empty: none).
fn compare(truth: &Json, got: &BTreeMap<String, Vec<ToolCall>>, reference: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let captured = truth["content_captured"].as_bool().unwrap_or(true);
    let traces = truth["traces"].as_object().unwrap();
    for (trace, calls) in got {
        if !traces.contains_key(trace) && !calls.is_empty() {
            problems.push(format!(
                "trace {trace}: {} calls where the truth has none ({})",
                calls.len(),
                names(calls)
            ));
        }
    }
    for (trace, want) in traces {
        let want = want.as_array().unwrap();
        let Some(calls) = got.get(trace) else {
            problems.push(format!("trace {trace}: not in the fixture"));
            continue;
        };
        if calls.len() != want.len() {
            problems.push(format!(
                "trace {trace}: {} calls ({}), the truth has {} ({})",
                calls.len(),
                names(calls),
                want.len(),
                want.iter()
                    .map(|w| w["name"].as_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        }
        // Turn by turn; within a turn, each truth call matched to one call.
        let mut at = 0;
        while at < want.len() {
            let turn = &want[at]["turn"];
            let end = (at..want.len())
                .find(|&i| &want[i]["turn"] != turn)
                .unwrap_or(want.len());
            let mut unused: Vec<&ToolCall> = calls[at..end].iter().collect();
            for w in &want[at..end] {
                let mut why = Vec::new();
                let found = unused.iter().position(|c| {
                    let p = mismatch(w, c, captured, reference);
                    let ok = p.is_empty();
                    why.extend(p);
                    ok
                });
                match found {
                    Some(i) => {
                        unused.remove(i);
                    }
                    None => problems.push(format!(
                        "trace {trace}, turn {turn}: {} {} not found: {}",
                        w["name"],
                        w["args"],
                        why.join("; ")
                    )),
                }
            }
            at = end;
        }
    }
    problems
}

/// The reference's output rule on the truth: a JSON object's `content`,
/// or `''` when it has none.
fn reference_outputs(truth: &mut Json) {
    for calls in truth["traces"].as_object_mut().unwrap().values_mut() {
        for c in calls.as_array_mut().unwrap() {
            let json = c["output_json"]
                .as_str()
                .and_then(|j| serde_json::from_str::<Json>(j).ok());
            if let Some(Json::Object(o)) = json {
                let content = o.get("content").and_then(Json::as_str).unwrap_or_default();
                c["output"] = Json::String(content.to_owned());
                c["output_json"] = Json::Null;
            }
        }
    }
}

fn names(calls: &[ToolCall]) -> String {
    calls
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why call `c` is not truth call `w` (empty: it is).
fn mismatch(w: &Json, c: &ToolCall, captured: bool, reference: bool) -> Vec<String> {
    let mut out = Vec::new();
    if c.name != w["name"].as_str().unwrap_or_default() {
        out.push(format!("name {:?}", c.name));
        return out;
    }
    if !captured {
        if c.content_captured {
            out.push(format!("{}: content said captured", c.name));
        }
        // Evaluators that read content say it is missing (spans read by the
        // reference's rules score it as the reference does instead).
        if !c.content_missing && !reference {
            out.push(format!("{}: content not said missing", c.name));
        }
        return out;
    }
    let args = match c.args.dict() {
        Ok(d) => py_dict_to_json(d),
        Err(e) => Json::String(format!("invalid: {e}")),
    };
    if args != w["args"] {
        out.push(format!("{}: args {args}", c.name));
    }
    let output_ok = match (&w["output"], &w["error"]) {
        (Json::String(text), _) => {
            let json = w["output_json"]
                .as_str()
                .and_then(|j| serde_json::from_str::<Json>(j).ok());
            c.output == *text
                || json
                    .is_some_and(|j| serde_json::from_str::<Json>(&c.output).is_ok_and(|o| o == j))
        }
        // A call that raised returned nothing: no output, or the error as
        // the framework reported it (to the model, or on the span).
        (_, Json::String(error)) => {
            let message = error.split_once(": ").map_or(error.as_str(), |(_, m)| m);
            c.output.is_empty()
                || c.output.contains(message)
                || c.output.to_lowercase().contains("error")
        }
        _ => true,
    };
    if !output_ok {
        out.push(format!("{}: output {:?}", c.name, c.output));
    }
    out
}

#[test]
fn every_recording_gives_its_ground_truth() {
    let mut failed = Vec::new();
    let mut exact = 0;
    let files = fixtures();
    for truth_path in &files {
        let name = truth_path.to_string_lossy().replace(".truth.json", "");
        let fixture = PathBuf::from(format!("{name}.otlp.json"));
        let id = fixture
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings/fixtures"))
            .unwrap()
            .to_string_lossy()
            .replace(".otlp.json", "");
        let truth: Json =
            serde_json::from_str(&std::fs::read_to_string(truth_path).unwrap()).unwrap();
        let mut truth = truth;
        let reference = REFERENCE_RULE.contains(&id.as_str());
        if reference {
            reference_outputs(&mut truth);
        }
        let problems = compare(&truth, &extract(&fixture), reference);
        let unreadable = UNREADABLE.iter().find(|(f, _)| *f == id);
        match (problems.is_empty(), unreadable) {
            (true, None) => exact += 1,
            (true, Some((_, why))) => failed.push(format!(
                "{id}: listed as unreadable ({why}) but read exactly: take it off the list"
            )),
            (false, Some(_)) => {}
            (false, None) => failed.push(format!("{id}:\n  {}", problems.join("\n  "))),
        }
    }
    println!("{exact} of {} recordings exact", files.len());
    assert!(
        failed.is_empty(),
        "{} recordings differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
