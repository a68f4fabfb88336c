use std::sync::Arc;

use proptest::prelude::*;

use super::*;

fn attr_value() -> impl Strategy<Value = AttrValue> {
    let leaf = prop_oneof![
        ".{0,20}".prop_map(AttrValue::Str),
        any::<bool>().prop_map(AttrValue::Bool),
        any::<i64>().prop_map(AttrValue::Int),
        any::<f64>().prop_map(AttrValue::Double),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(AttrValue::Bytes),
        Just(AttrValue::Empty),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(AttrValue::Array),
            prop::collection::vec((".{0,4}", inner), 0..4).prop_map(AttrValue::KvList),
        ]
    })
}

const KEYS: [&str; 3] = ["tool.name", "input.value", "output.value"];

fn keep() -> Arc<KeepAttributes> {
    Arc::new(KeepAttributes::only(KEYS.map(str::to_owned)))
}

fn spans() -> impl Strategy<Value = Vec<Span>> {
    prop::collection::vec(
        (
            any::<[u8; 8]>(),
            prop::option::of(any::<[u8; 8]>()),
            any::<u64>(),
            any::<u64>(),
            ".{0,16}",
            prop::option::of(prop_oneof![Just("a"), Just("bé")]),
            prop::collection::vec((0usize..3, attr_value()), 0..4),
        ),
        0..12,
    )
    .prop_map(move |raw| {
        raw.into_iter()
            .map(|(id, parent, start, end, name, service, attrs)| Span {
                trace_id: TraceId([9; 16]),
                span_id: SpanId(id),
                parent_span_id: parent.map(SpanId),
                name,
                start_time_unix_nano: start,
                end_time_unix_nano: end,
                attributes: attrs
                    .into_iter()
                    .map(|(k, v)| (Arc::from(KEYS[k]), v))
                    .collect(),
                service_name: service.map(Arc::from),
                scope_name: None,
            })
            .collect()
    })
}

/// Bit-exact comparison (`PartialEq` on f64 would fail on NaN).
fn same(a: &[Span], b: &[Span]) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

proptest! {
    /// Written into a request's records, appended to a trace one at a time
    /// (with any growth hints), sealed, then given late spans: the same
    /// spans read back, and every ID is found before and after sealing.
    #[test]
    fn spans_read_back_as_they_were_written(
        spans in spans(),
        hints in prop::collection::vec(0usize..20, 12),
        late in 0usize..4,
    ) {
        let keep = keep();
        let batch = Records::from_spans(&spans, &keep);
        prop_assert_eq!(batch.len(), spans.len());
        let late = late.min(spans.len());
        let mut held = Held::default();
        for i in 0..spans.len() {
            let e = batch.spans()[i];
            prop_assert_eq!(e.span_id, spans[i].span_id);
            prop_assert_eq!(e.root, spans[i].parent_span_id.is_none());
            prop_assert_eq!(
                batch.service_of(i),
                spans[i].service_name.as_deref()
            );
            if i == spans.len() - late {
                held.seal();
                prop_assert_eq!(held.spare(), 0);
            }
            let run = Run { spans: hints[i], bytes: hints[i] * 40 };
            held.push(batch.record(i).unwrap(), e.span_id, run);
            prop_assert!(held.contains(&e.span_id));
        }
        let back = held.spans(TraceId([9; 16]), &keep).unwrap();
        prop_assert!(same(&spans, &back.to_spans()));
        prop_assert_eq!(held.span_count(), spans.len());
        for s in &spans {
            prop_assert!(held.contains(&s.span_id));
        }
    }
}

/// A root span with these attributes.
fn root(attributes: Vec<(&str, AttrValue)>, service: Option<&str>) -> Span {
    Span {
        trace_id: TraceId([1; 16]),
        span_id: SpanId([1; 8]),
        parent_span_id: None,
        name: "n".into(),
        start_time_unix_nano: 1,
        end_time_unix_nano: 2,
        attributes: attributes
            .into_iter()
            .map(|(k, v)| (Arc::from(k), v))
            .collect(),
        service_name: service.map(Arc::from),
        scope_name: None,
    }
}

#[test]
fn values_read_in_place_as_python_sees_them() {
    let span = root(
        vec![
            ("tool.name", AttrValue::Str("first".into())),
            (
                "input.value",
                AttrValue::Array(vec![AttrValue::Str("x".into()), AttrValue::Int(0)]),
            ),
            ("tool.name", AttrValue::Str("last".into())),
            ("output.value", AttrValue::KvList(Vec::new())),
        ],
        None,
    );
    let spans = Spans::from_spans(std::slice::from_ref(&span));
    let s = spans.iter().next().unwrap();
    assert_eq!(s.attr("tool.name").and_then(|v| v.as_str()), Some("last"));
    assert_eq!(s.attr("input.value").unwrap().py_str(), "('x', 0)");
    assert!(s.attr("input.value").unwrap().truthy());
    assert!(!s.attr("output.value").unwrap().truthy());
    assert!(s.attr("missing").is_none());
    assert!(s.is_root());
}

#[test]
fn records_that_do_not_read_back_are_refused_not_read() {
    let keep = keep();
    let span = root(vec![("tool.name", AttrValue::Str("v".into()))], Some("svc"));
    let batch = Records::from_spans(std::slice::from_ref(&span), &keep);
    let good = batch.record(0).unwrap().to_vec();
    assert!(Spans::parse(TraceId([1; 16]), good.clone(), keep.clone()).is_ok());
    // Cut short, or naming a key the service does not keep.
    for bad in [
        good[..good.len() - 1].to_vec(),
        good.iter()
            .enumerate()
            .map(|(i, b)| if i == good.len() - 4 { 9 } else { *b })
            .collect(),
    ] {
        assert!(Spans::parse(TraceId([1; 16]), bad, keep.clone()).is_err());
    }
}
