//! The traces the UiPath `weather_tools` sample agent emits for each item of
//! its eval set: a root agent span carrying the item id, and one tool span
//! per tool call with `tool.name`, `openinference.span.kind = TOOL`,
//! `span_type = TOOL`, `input.value` and `output.value` as the sample does.

use serde_json::{Value as Json, json};

fn attr(key: &str, value: &str) -> Json {
    json!({"key": key, "value": {"stringValue": value}})
}

/// The tools the sample calls for an action, with their outputs for a city.
fn tool_calls(city: &str, action: &str) -> Vec<(&'static str, Json)> {
    let mut calls = vec![
        (
            "get_temperature",
            json!({"temperature": 25.0, "unit": "fahrenheit"}),
        ),
        ("get_weather_condition", json!({"condition": "cloudy"})),
        ("get_humidity", json!({"humidity": 65})),
    ];
    match action {
        "get_forecast" => {
            let forecast = if city == "Tokyo" {
                "Overcast with mild temperatures"
            } else {
                "Cloudy with a chance of rain in the afternoon"
            };
            calls.push(("get_forecast", json!({"forecast": forecast})));
        }
        "get_alerts" => {
            calls.push((
                "get_weather_alerts",
                json!({"alerts": ["Heavy rain warning until 6 PM"]}),
            ));
        }
        _ => {}
    }
    calls
}

/// One OTLP JSON object (`{"resourceSpans": …}`) for one eval-set item.
pub fn trace_for_item(index: usize, item_id: &str, city: &str, action: &str) -> Json {
    let trace_id = format!("{:032x}", 0x5ea7_0000_u128 + index as u128 + 1);
    let root_id = format!("{:016x}", 0x1000 + index as u64 * 16);
    let t0: u64 = 1_763_800_000_000_000_000 + index as u64 * 1_000_000_000;
    let mut spans = Vec::new();
    let calls = tool_calls(city, action);
    for (i, (name, output)) in calls.iter().enumerate() {
        let start = t0 + 1_000_000 + i as u64 * 10_000_000;
        spans.push(json!({
            "traceId": trace_id,
            "spanId": format!("{:016x}", 0x1000 + index as u64 * 16 + i as u64 + 1),
            "parentSpanId": root_id,
            "name": name,
            "kind": 1,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": (start + 5_000_000).to_string(),
            "attributes": [
                attr("tool.name", name),
                attr("openinference.span.kind", "TOOL"),
                attr("span_type", "TOOL"),
                attr("input.value", &json!({"city": city}).to_string()),
                attr("output.value", &json!({"content": output}).to_string()),
            ],
        }));
    }
    // The root ends last, after its tools, as the runtime exports it.
    spans.push(json!({
        "traceId": trace_id,
        "spanId": root_id,
        "name": "main",
        "kind": 1,
        "startTimeUnixNano": t0.to_string(),
        "endTimeUnixNano": (t0 + 100_000_000).to_string(),
        "attributes": [
            attr("openinference.span.kind", "AGENT"),
            attr("span_type", "agent"),
            attr("input.value", &json!({"city": city, "action": action}).to_string()),
            attr("eval.case.id", item_id),
        ],
    }));
    json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", "weather-tools-agent")]},
        "scopeSpans": [{"scope": {"name": "uipath"}, "spans": spans}],
    }]})
}

/// The whole eval set's traces as JSON Lines, one trace per line.
pub fn traces_jsonl(eval_set: &Json) -> String {
    let mut out = String::new();
    for (i, item) in eval_set["evaluations"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let t = trace_for_item(
            i,
            item["id"].as_str().unwrap(),
            item["inputs"]["city"].as_str().unwrap(),
            item["inputs"]["action"].as_str().unwrap(),
        );
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out
}
