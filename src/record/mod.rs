//! The one form a span takes from the wire to the evaluators: a record.
//!
//! Both receivers write records (`receiver/wire.rs` straight from protobuf
//! bytes, [`Records::from_otlp`] from the prost structs OTLP/JSON is read
//! into); a shard appends each record as it is to its trace's [`Held`]
//! buffer; when the trace is due, its records are checked once and read in
//! place through [`Spans`] and [`SpanRef`] (`view.rs`). A buffered span
//! costs about its content, no allocation of its own, and nothing is
//! decoded into structs on the way.
//!
//! A record is: the span ID (8 bytes); the parent (0, or 1 and 8 bytes; 2
//! and 8 bytes for an event of that span, below);
//! start and end times (varints); the name (length, UTF-8); the resource's
//! `service.name` (0, or 1 and a length-prefixed string); the scope's id in
//! the service's [`KeepAttributes`] (a varint, 0: none it recognises); the
//! attribute count, then each attribute as its key and a tagged value. A key
//! is its id in the service's [`KeepAttributes`] (fixed at start-up, so no
//! table travels with the records), as the varint `id × 2`, or a flattened
//! message key by name (`1`, then the length-prefixed key). The trace ID is
//! not in the record: the request's index and the trace's buffer are keyed
//! by it.
//!
//! An event is a record too: a log record that belongs to a span (the
//! GenAI conventions' message events, sent over OTLP logs), or one of a
//! span's own events (`Span.events`, where other instrumentations put the
//! same messages), is written as a record whose parent is that span,
//! marked as an event (`logs.rs`, `events.rs`). Its name is the event's
//! name, its time the event's, its attributes those kept and a log record's
//! body (under [`span::EVENT_BODY`]). Its ID is a hash of what it is, so a
//! retried export de-duplicates as spans do: of the log record, or of the
//! span, the event's place in it and the event's record. A span's events
//! follow the span's record. Readers see spans ([`Spans::iter`]) and events
//! ([`Spans::events`]) apart.

mod events;
mod logs;
mod view;

pub use events::event_header;
pub use logs::{FromLogs, from_logs};

pub use view::{AttrRef, Corrupt, Key, SpanRef, Spans, Unread};

use std::sync::Arc;

use indexmap::IndexMap;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1 as otlp;

use crate::span::{self, AttrValue, KeepAttributes, KeyRef, RejectedSpan, Span, SpanId, TraceId};

/// One request's records, as a receiver wrote them, with what the shards
/// need before they copy a record.
#[derive(Debug, Default)]
pub struct Records {
    bytes: Vec<u8>,
    spans: Vec<Entry>,
}

/// Where one span's record is in its [`Records`].
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub root: bool,
    /// An event of a span (a log record's, or one of `Span.events`), not
    /// a span: `span_id` is the event's own ID.
    pub event: bool,
    /// The span's size on the wire (0 where unknown, and for a span's
    /// events, whose span counts them).
    pub encoded: u32,
    start: usize,
    end: usize,
}

/// The spans of the same trace that follow one in a request, without a
/// break: how many, and their records' bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Run {
    pub spans: usize,
    pub bytes: usize,
}

impl Records {
    pub fn with_capacity(bytes: usize, spans: usize) -> Records {
        Records {
            bytes: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(spans),
        }
    }

    /// The records of a request read into prost structs (OTLP/JSON), with
    /// the attributes `keep` names; spans with bad IDs are refused one by one.
    pub fn from_otlp(
        resource_spans: &[otlp::ResourceSpans],
        keep: &KeepAttributes,
    ) -> (Records, Vec<RejectedSpan>) {
        use prost::Message;
        let mut out = Records::default();
        let mut rejected = Vec::new();
        for (ri, rs) in resource_spans.iter().enumerate() {
            let service = service_name(rs.resource.as_ref());
            for (si, ss) in rs.scope_spans.iter().enumerate() {
                let scope = ss.scope.as_ref().map_or(0, |s| keep.scope_id(&s.name));
                for (index, s) in ss.spans.iter().enumerate() {
                    let ids = span::checked_ids(&s.trace_id, &s.span_id, &s.parent_span_id);
                    let (trace_id, span_id, parent) = match ids {
                        Ok(ids) => ids,
                        Err(reason) => {
                            rejected.push(RejectedSpan {
                                what: "span",
                                resource: ri,
                                scope: si,
                                index,
                                reason,
                            });
                            continue;
                        }
                    };
                    let kept = kept_of(keep, &s.attributes, key_and_text);
                    let header = Header {
                        trace_id,
                        span_id,
                        parent,
                        start: s.start_time_unix_nano,
                        end: s.end_time_unix_nano,
                        name: &s.name,
                        service: service.as_deref(),
                        scope,
                        event: false,
                    };
                    out.begin(&header, kept.len());
                    out.key_values(kept);
                    out.end(u32::try_from(s.encoded_len()).unwrap_or(u32::MAX));
                    events::span_events(&mut out, keep, &header, &s.events);
                }
            }
        }
        (out, rejected)
    }

    /// Spans built in code (the tests, the benchmarks), with the
    /// attributes `keep` names.
    pub fn from_spans(spans: &[Span], keep: &KeepAttributes) -> Records {
        let mut out = Records::default();
        for s in spans {
            let kept = kept_of(keep, &s.attributes, |(k, v)| {
                (
                    &**k,
                    match v {
                        AttrValue::Str(s) => Some(s.as_str()),
                        _ => None,
                    },
                )
            });
            let header = Header {
                trace_id: s.trace_id,
                span_id: s.span_id,
                parent: s.parent_span_id,
                start: s.start_time_unix_nano,
                end: s.end_time_unix_nano,
                name: &s.name,
                service: s.service_name.as_deref(),
                scope: s.scope_name.as_deref().map_or(0, |n| keep.scope_id(n)),
                event: false,
            };
            out.begin(&header, kept.len());
            for (key, (_, v)) in kept {
                out.key(key);
                out.value(v);
            }
            out.end(0);
        }
        out
    }

    /// Starts a span written piece by piece: then `attributes` attributes,
    /// each a [`key`](Self::key) and a value ([`str_value`](Self::str_value)
    /// or [`value`](Self::value)), then [`end`](Self::end).
    pub fn begin(&mut self, h: &Header<'_>, attributes: usize) {
        let at = self.bytes.len();
        let out = &mut self.bytes;
        out.extend_from_slice(&h.span_id.0);
        match h.parent {
            Some(p) => {
                out.push(if h.event { 2 } else { 1 });
                out.extend_from_slice(&p.0);
            }
            None => out.push(0),
        }
        varint(out, h.start);
        varint(out, h.end);
        bytes(out, h.name.as_bytes());
        match h.service {
            Some(s) => {
                out.push(1);
                bytes(out, s.as_bytes());
            }
            None => out.push(0),
        }
        varint(out, u64::from(h.scope));
        varint(out, attributes as u64);
        self.spans.push(Entry {
            trace_id: h.trace_id,
            span_id: h.span_id,
            root: h.parent.is_none() && !h.event,
            event: h.event,
            encoded: 0,
            start: at,
            end: at,
        });
    }

    pub fn key(&mut self, key: KeyRef<'_>) {
        match key {
            KeyRef::Id(id) => varint(&mut self.bytes, u64::from(id) << 1),
            KeyRef::Named(name, _) => {
                self.bytes.push(1);
                bytes(&mut self.bytes, name.as_bytes());
            }
        }
    }

    pub fn str_value(&mut self, v: &str) {
        self.bytes.push(STR);
        bytes(&mut self.bytes, v.as_bytes());
    }

    pub fn value(&mut self, v: &AttrValue) {
        value(&mut self.bytes, v);
    }

    /// The kept attributes of prost's structs, each key and value.
    fn key_values(&mut self, kept: Vec<(KeyRef<'_>, &KeyValue)>) {
        for (key, kv) in kept {
            self.key(key);
            match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(text)) => self.str_value(text),
                _ => self.value(&span::attr_of(kv)),
            }
        }
    }

    /// Ends the span begun last, with its size on the wire.
    pub fn end(&mut self, encoded: u32) {
        let len = self.bytes.len();
        if let Some(s) = self.spans.last_mut() {
            s.end = len;
            s.encoded = encoded;
        }
    }

    pub fn spans(&self) -> &[Entry] {
        &self.spans
    }

    /// Span `i`'s record.
    pub fn record(&self, i: usize) -> Option<&[u8]> {
        let s = self.spans.get(i)?;
        self.bytes.get(s.start..s.end)
    }

    /// The size of span `i`'s record (0 if there is none).
    pub fn record_size(&self, i: usize) -> usize {
        self.spans.get(i).map_or(0, |s| s.end - s.start)
    }

    /// The `service.name` of span `i`'s resource, where it has one.
    pub fn service_of(&self, i: usize) -> Option<&str> {
        view::service_of(self.record(i)?)
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Appends another request's records after these.
    pub fn append(&mut self, other: Records) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.spans.extend(other.spans.into_iter().map(|e| Entry {
            start: e.start + base,
            end: e.end + base,
            ..e
        }));
    }

    /// The records grouped by trace (first-seen order), each trace checked
    /// and read: how `toolscore eval` and `POST /v1/evaluate` take a
    /// document's traces.
    pub fn traces(&self, keys: &Arc<KeepAttributes>) -> Result<IndexMap<TraceId, Spans>, Corrupt> {
        let mut held: IndexMap<TraceId, Held> = IndexMap::new();
        for (i, s) in self.spans.iter().enumerate() {
            let rec = self.record(i).ok_or(Corrupt(s.start))?;
            held.entry(s.trace_id)
                .or_default()
                .push(rec, s.span_id, Run::default());
        }
        held.into_iter()
            .map(|(id, h)| Ok((id, h.spans(id, keys)?)))
            .collect()
    }
}

/// A span's fixed fields, as a record begins.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    pub start: u64,
    pub end: u64,
    pub name: &'a str,
    pub service: Option<&'a str>,
    /// The scope's id in the [`KeepAttributes`] (0: none it recognises).
    pub scope: u32,
    /// An event of the span `parent` (a log record), not a span.
    pub event: bool,
}

/// The attributes of `attrs` a span keeps, with how each key is written:
/// exact keys, and flattened message keys filtered by
/// [`KeepAttributes::retain_message_fields`]. `key_of` gives an attribute's
/// key and its value when that is a string.
pub fn kept_of<'a, T>(
    keep: &KeepAttributes,
    attrs: &'a [T],
    key_of: impl Fn(&'a T) -> (&'a str, Option<&'a str>),
) -> Vec<(KeyRef<'a>, &'a T)> {
    let mut kept: Vec<(KeyRef<'a>, &'a T)> = attrs
        .iter()
        .filter_map(|a| Some((keep.classify(key_of(a).0)?, a)))
        .collect();
    keep.retain_message_fields(&mut kept, |a| key_of(a).1);
    kept
}

/// A `KeyValue`'s key, and its value when that is a string: what
/// [`kept_of`] asks of prost's attributes.
/// A resource's `service.name` (the last one, as a dict built from the
/// list keeps), as Python's `str()` of its value.
fn service_name(resource: Option<&Resource>) -> Option<String> {
    resource?
        .attributes
        .iter()
        .rev()
        .find(|kv| kv.key == "service.name")
        .map(|kv| span::attr_of(kv).py_str())
}

fn key_and_text(kv: &KeyValue) -> (&str, Option<&str>) {
    let text = kv.value.as_ref().and_then(|v| match &v.value {
        Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
        _ => None,
    });
    (&kv.key, text)
}

/// One trace's records, appended as its spans arrive.
#[derive(Debug, Default)]
pub struct Held {
    bytes: Vec<u8>,
    /// In arrival order while the trace is open (the shard keeps a set for
    /// large open traces); sorted once sealed, for de-duplicating late spans
    /// by binary search.
    ids: Vec<SpanId>,
    sealed: bool,
}

impl Held {
    /// Appends a record. When the buffer must grow, it grows by room for
    /// the `run` of this trace's spans known to follow in the request (a
    /// request usually carries a trace's spans together, so a trace is
    /// sized once), or by a quarter: an open trace wastes little and
    /// appends stay amortised O(1).
    pub fn push(&mut self, record: &[u8], span_id: SpanId, run: Run) {
        if self.bytes.capacity() - self.bytes.len() < record.len() {
            let more = (self.bytes.len() / 4).max(run.bytes);
            self.bytes.reserve_exact(record.len().saturating_add(more));
        }
        self.bytes.extend_from_slice(record);
        if self.sealed {
            // A late span: keep the IDs sorted.
            let at = self.ids.partition_point(|x| *x < span_id);
            self.ids.insert(at, span_id);
        } else {
            if self.ids.len() == self.ids.capacity() {
                self.ids
                    .reserve_exact((self.ids.len() / 4).max(run.spans) + 1);
            }
            self.ids.push(span_id);
        }
    }

    /// The trace was evaluated: sort the IDs and give back spare capacity.
    pub fn seal(&mut self) {
        if !self.sealed {
            self.ids.sort_unstable();
            self.sealed = true;
        }
        self.bytes.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    /// Gives back room reserved for spans that did not come, beyond a
    /// quarter of slack.
    pub fn trim(&mut self) {
        let keep = self.bytes.len() + self.bytes.len() / 4;
        if self.bytes.capacity() > keep {
            self.bytes.shrink_to(keep);
        }
        let keep = self.ids.len() + self.ids.len() / 4 + 1;
        if self.ids.capacity() > keep {
            self.ids.shrink_to(keep);
        }
    }

    /// Capacity held beyond what the spans use, in bytes (for the tests).
    #[cfg(test)]
    pub fn spare(&self) -> usize {
        self.bytes.capacity() - self.bytes.len()
            + (self.ids.capacity() - self.ids.len()) * std::mem::size_of::<SpanId>()
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    pub fn span_count(&self) -> usize {
        self.ids.len()
    }

    /// Whether a span with this ID is held: a binary search once sealed, a
    /// scan before (the shard asks only for small open traces).
    pub fn contains(&self, id: &SpanId) -> bool {
        if self.sealed {
            self.ids.binary_search(id).is_ok()
        } else {
            self.ids.contains(id)
        }
    }

    /// The span IDs held, in no particular order.
    pub fn ids(&self) -> &[SpanId] {
        &self.ids
    }

    /// Heap bytes held (capacities), for the buffer accounting.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ids.capacity() * std::mem::size_of::<SpanId>()
    }

    /// The spans, checked, for evaluation (a copy: the trace stays
    /// buffered for late spans).
    pub fn spans(&self, trace_id: TraceId, keys: &Arc<KeepAttributes>) -> Result<Spans, Corrupt> {
        Spans::parse(trace_id, self.bytes.clone(), keys.clone())
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

const STR: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const DOUBLE: u8 = 3;
const BYTES: u8 = 4;
const ARRAY: u8 = 5;
const KVLIST: u8 = 6;
const EMPTY: u8 = 7;

fn value(out: &mut Vec<u8>, v: &AttrValue) {
    match v {
        AttrValue::Str(s) => {
            out.push(STR);
            bytes(out, s.as_bytes());
        }
        AttrValue::Bool(b) => {
            out.push(BOOL);
            out.push(u8::from(*b));
        }
        AttrValue::Int(i) => {
            out.push(INT);
            out.extend_from_slice(&i.to_le_bytes());
        }
        AttrValue::Double(d) => {
            out.push(DOUBLE);
            out.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        AttrValue::Bytes(b) => {
            out.push(BYTES);
            bytes(out, b);
        }
        AttrValue::Array(items) => {
            out.push(ARRAY);
            varint(out, items.len() as u64);
            for item in items {
                value(out, item);
            }
        }
        AttrValue::KvList(kvs) => {
            out.push(KVLIST);
            varint(out, kvs.len() as u64);
            for (k, v) in kvs {
                bytes(out, k.as_bytes());
                value(out, v);
            }
        }
        AttrValue::Empty => out.push(EMPTY),
    }
}

/// `f` of `value` as the evaluators see it: read in place from a record
/// (for the tests of functions of one attribute).
#[cfg(test)]
pub(crate) fn with_value<T>(
    value: Option<&AttrValue>,
    f: impl FnOnce(Option<AttrRef<'_>>) -> T,
) -> T {
    let span = Span {
        trace_id: TraceId([1; 16]),
        span_id: SpanId([1; 8]),
        parent_span_id: None,
        name: String::new(),
        start_time_unix_nano: 0,
        end_time_unix_nano: 0,
        attributes: value
            .map(|v| vec![(Arc::from("v"), v.clone())])
            .unwrap_or_default(),
        service_name: None,
        scope_name: None,
    };
    let spans = Spans::from_spans(&[span]);
    f(spans.iter().next().and_then(|s| s.attr("v")))
}

#[cfg(test)]
mod tests;
