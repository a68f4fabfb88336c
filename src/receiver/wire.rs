//! OTLP trace requests decoded straight from protobuf bytes into span
//! records ([`crate::record`]).
//!
//! prost would first build the whole `ExportTraceServiceRequest` — a
//! `String` for every key and every value of every attribute, an LLM span's
//! prompt included — only for the conversion to copy out the few attributes
//! toolscore reads and drop the rest. This decoder walks the wire format once
//! and copies only what a buffered span keeps (its IDs, times, name and the
//! kept attributes) into one buffer for the request, as the records the
//! assembler holds: no allocation per span or value. On the
//! service's hot path that is most of the receive cost. A span's events
//! (`Span.events`) are noted as the span is walked and read after its
//! record is written: those with a kept attribute (the model's messages,
//! as some instrumentations send them) follow it as event records.
//!
//! What it checks: the wire format everywhere (tags, wire types of the fields
//! it reads, lengths, varints, nesting depth), UTF-8 of every string it
//! keeps or compares (names, event names, attribute keys, kept values), and
//! the IDs (as [`Records::from_otlp`] does, one span at a time). Fields
//! toolscore never reads (links, status, scope, unkept attribute values,
//! the events of a refused span) are skipped without being validated
//! beyond the wire format. On well-formed input the records are byte for
//! byte those of prost followed by [`Records::from_otlp`]; the tests check
//! it.

use crate::record::{Header, Records, event_header};
use crate::span::{self, AttrValue, IdError, KeepAttributes, KeyRef, RejectedSpan};

/// Spans taken from one request, and those refused one by one.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The kept spans, each with its encoded size in bytes (its protobuf
    /// message), for the assembler's accounting of what it buffers against
    /// what was sent.
    pub spans: Records,
    pub rejected: Vec<RejectedSpan>,
    /// Log records taken as read and dropped (a logs request's; see
    /// [`crate::record::from_logs`]).
    pub ignored: u64,
}

/// The request is not a well-formed `ExportTraceServiceRequest`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid protobuf: {what} at byte {offset}")]
pub struct WireError {
    pub what: &'static str,
    pub offset: usize,
}

/// prost's nesting limit, so both accept the same messages.
const MAX_DEPTH: u32 = 100;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// Decodes an `ExportTraceServiceRequest`, keeping the attributes `keep` names.
pub fn decode_request(buf: &[u8], keep: &KeepAttributes) -> Result<Decoded, WireError> {
    let mut out = Decoded {
        // Guesses from the usual sizes; they only save regrowth.
        spans: Records::with_capacity(buf.len() / 2, buf.len() / 320),
        rejected: Vec::new(),
        ignored: 0,
    };
    let mut scratch = Scratch::default();
    let mut r = Reader::new(buf, 0);
    let mut resource = 0;
    while let Some((field, wt)) = r.field()? {
        match (field, wt) {
            (1, LEN) => {
                let rs = r.message()?;
                resource_spans(rs, resource, keep, &mut out, &mut scratch, MAX_DEPTH - 1)?;
                resource += 1;
            }
            (1, _) => return Err(r.error("wrong wire type for resource_spans")),
            _ => r.skip(field, wt, MAX_DEPTH)?,
        }
    }
    Ok(out)
}

/// A cursor over one message's bytes; `base` is its offset in the request.
#[derive(Clone, Copy)]
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    fn error(&self, what: &'static str) -> WireError {
        WireError {
            what,
            offset: self.base + self.pos,
        }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.error("truncated varint"));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return Err(self.error("varint overflows 64 bits"));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(self.error("varint longer than 10 bytes"))
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let end = self.pos + N;
        let bytes = self
            .buf
            .get(self.pos..end)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or_else(|| self.error("truncated fixed-width field"))?;
        self.pos = end;
        Ok(bytes)
    }

    fn fixed64(&mut self) -> Result<u64, WireError> {
        self.fixed::<8>().map(u64::from_le_bytes)
    }

    /// The next field's number and wire type, or `None` at the end.
    fn field(&mut self) -> Result<Option<(u32, u8)>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        // A key past u32 (a field number past 2^29 - 1) is malformed, as
        // prost has it, even in a field this decoder skips.
        let key =
            u32::try_from(self.varint()?).map_err(|_| self.error("field number too large"))?;
        let field = key >> 3;
        if field == 0 {
            return Err(self.error("field number 0"));
        }
        let wt = (key & 7) as u8;
        if wt > FIXED32 {
            return Err(self.error("unknown wire type"));
        }
        Ok(Some((field, wt)))
    }

    /// A length-delimited field's bytes.
    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let at = self.pos;
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| self.error("length too large"))?;
        let end = self
            .pos
            .checked_add(len)
            .filter(|&e| e <= self.buf.len())
            .ok_or(WireError {
                what: "length past the end of the message",
                offset: self.base + at,
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// A nested message, as a reader of its own.
    fn message(&mut self) -> Result<Reader<'a>, WireError> {
        let bytes = self.bytes()?;
        Ok(Reader::new(bytes, self.base + self.pos - bytes.len()))
    }

    fn str(&mut self) -> Result<&'a str, WireError> {
        let at = self.error("string is not valid UTF-8");
        std::str::from_utf8(self.bytes()?).map_err(|_| at)
    }

    /// Skips a field of any wire type (groups included, as prost does).
    fn skip(&mut self, field: u32, wt: u8, depth: u32) -> Result<(), WireError> {
        match wt {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed::<8>().map(drop),
            FIXED32 => self.fixed::<4>().map(drop),
            LEN => self.bytes().map(drop),
            START_GROUP => {
                let depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| self.error("nesting too deep"))?;
                loop {
                    let Some((f, w)) = self.field()? else {
                        return Err(self.error("group without end"));
                    };
                    if w == END_GROUP {
                        if f != field {
                            return Err(self.error("mismatched end group"));
                        }
                        return Ok(());
                    }
                    self.skip(f, w, depth)?;
                }
            }
            _ => Err(self.error("unexpected end group")),
        }
    }
}

fn resource_spans<'a>(
    r: Reader<'a>,
    ri: usize,
    keep: &KeepAttributes,
    out: &mut Decoded,
    scratch: &mut Scratch<'a>,
    depth: u32,
) -> Result<(), WireError> {
    // First pass: the resource's `service.name` (the resource may follow the spans).
    let mut service: Option<ValueRef<'_>> = None;
    let mut first = r;
    while let Some((field, wt)) = first.field()? {
        match (field, wt) {
            (1, LEN) => {
                let mut res = first.message()?;
                while let Some((f, w)) = res.field()? {
                    match (f, w) {
                        (1, LEN) => {
                            let kv = res.message()?;
                            let (key, value) = key_value(kv)?;
                            if key == "service.name" {
                                service = Some(value);
                            }
                        }
                        (1, _) => return Err(res.error("wrong wire type for attributes")),
                        _ => res.skip(f, w, depth)?,
                    }
                }
            }
            (1 | 2, _) if wt != LEN => {
                return Err(first.error("wrong wire type in resource_spans"));
            }
            _ => first.skip(field, wt, depth)?,
        }
    }
    let service_name = match service {
        None => None,
        Some(value) => Some(any_value_of(value, depth)?.py_str()),
    };
    let mut second = r;
    let mut scope = 0;
    while let Some((field, wt)) = second.field()? {
        if (field, wt) == (2, LEN) {
            let ss = second.message()?;
            let service = service_name.as_deref();
            scope_spans(ss, ri, scope, service, keep, out, scratch, depth - 1)?;
            scope += 1;
        } else {
            second.skip(field, wt, depth)?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn scope_spans<'a>(
    mut r: Reader<'a>,
    ri: usize,
    si: usize,
    service_name: Option<&str>,
    keep: &KeepAttributes,
    out: &mut Decoded,
    scratch: &mut Scratch<'a>,
    depth: u32,
) -> Result<(), WireError> {
    // First pass: the scope's name (it may follow the spans).
    let mut scope = 0;
    let mut first = r;
    while let Some((field, wt)) = first.field()? {
        match (field, wt) {
            (1, LEN) => {
                let mut sc = first.message()?;
                while let Some((f, w)) = sc.field()? {
                    match (f, w) {
                        (1, LEN) => scope = keep.scope_id(sc.str()?),
                        (1, _) => return Err(sc.error("wrong wire type for the scope's name")),
                        _ => sc.skip(f, w, depth)?,
                    }
                }
            }
            (1, _) => return Err(first.error("wrong wire type in scope_spans")),
            _ => first.skip(field, wt, depth)?,
        }
    }
    let mut index = 0;
    let from = (service_name, scope);
    while let Some((field, wt)) = r.field()? {
        match (field, wt) {
            (2, LEN) => {
                let s = r.message()?;
                match span(s, from, keep, &mut out.spans, scratch, depth - 1)? {
                    Ok(()) => {}
                    Err(reason) => out.rejected.push(RejectedSpan {
                        what: "span",
                        resource: ri,
                        scope: si,
                        index,
                        reason,
                    }),
                }
                index += 1;
            }
            (1 | 2, _) if wt != LEN => return Err(r.error("wrong wire type in scope_spans")),
            _ => r.skip(field, wt, depth)?,
        }
    }
    Ok(())
}

/// What a span's walk collects, reused from span to span so that a span
/// costs no allocation.
#[derive(Default)]
struct Scratch<'a> {
    /// The kept attributes of the span (then of each of its events).
    kept: Vec<(KeyRef<'a>, ValueRef<'a>)>,
    /// The span's events, read once the span's record is written.
    events: Vec<Reader<'a>>,
}

/// One span, then its events that carry kept attributes: a wire error
/// fails the request; a bad ID refuses this span only.
fn span<'a>(
    mut r: Reader<'a>,
    (service_name, scope): (Option<&str>, u32),
    keep: &KeepAttributes,
    out: &mut Records,
    scratch: &mut Scratch<'a>,
    depth: u32,
) -> Result<Result<(), IdError>, WireError> {
    let size = u32::try_from(r.buf.len()).unwrap_or(u32::MAX);
    let (mut trace_id, mut span_id, mut parent): (&[u8], &[u8], &[u8]) = (&[], &[], &[]);
    let mut name = "";
    let (mut start, mut end) = (0u64, 0u64);
    let Scratch { kept, events } = scratch;
    kept.clear();
    events.clear();
    while let Some((field, wt)) = r.field()? {
        match (field, wt) {
            (1, LEN) => trace_id = r.bytes()?,
            (2, LEN) => span_id = r.bytes()?,
            (4, LEN) => parent = r.bytes()?,
            (5, LEN) => name = r.str()?,
            (7, FIXED64) => start = r.fixed64()?,
            (8, FIXED64) => end = r.fixed64()?,
            (9, LEN) => {
                let kv = r.message()?;
                let (key, value) = key_value(kv)?;
                if let Some(k) = keep.classify(key) {
                    kept.push((k, value));
                }
            }
            (11, LEN) => events.push(r.message()?),
            (1 | 2 | 4 | 5 | 7 | 8 | 9 | 11, _) => {
                return Err(r.error("wrong wire type in span"));
            }
            _ => r.skip(field, wt, depth)?,
        }
    }
    let (trace_id, span_id, parent_span_id) = match span::checked_ids(trace_id, span_id, parent) {
        Ok(ids) => ids,
        Err(e) => {
            // The values are still checked: a malformed one fails the
            // request whatever the IDs (as prost would).
            for (_, value) in kept.iter() {
                any_value_of(*value, depth - 1)?;
            }
            return Ok(Err(e));
        }
    };
    let header = Header {
        trace_id,
        span_id,
        parent: parent_span_id,
        start,
        end,
        name,
        service: service_name,
        scope,
        event: false,
    };
    // A role that is not valid UTF-8 marks nothing; the value itself is
    // refused below as any other.
    keep.retain_message_fields(kept, |v| plain_string(*v).ok().flatten());
    write_kept(out, &header, kept, depth - 1)?;
    out.end(size);
    for (index, e) in events.iter().enumerate() {
        event(*e, index, &header, keep, out, kept, depth - 1)?;
    }
    Ok(Ok(()))
}

/// Begins a record and writes its kept attributes (values decoded at
/// `depth`).
fn write_kept(
    out: &mut Records,
    header: &Header<'_>,
    kept: &[(KeyRef<'_>, ValueRef<'_>)],
    depth: u32,
) -> Result<(), WireError> {
    out.begin(header, kept.len());
    for (key, value) in kept.iter() {
        out.key(*key);
        match plain_string(*value)? {
            Some(s) => out.str_value(s),
            None => out.value(&any_value_of(*value, depth)?),
        }
    }
    Ok(())
}

/// The `index`-th event of `span`, written as an event record of it when
/// it carries a kept attribute. Most events (`exception`, say) carry none:
/// their keys are looked up, their values never read.
fn event<'a>(
    mut r: Reader<'a>,
    index: usize,
    span: &Header<'_>,
    keep: &KeepAttributes,
    out: &mut Records,
    kept: &mut Vec<(KeyRef<'a>, ValueRef<'a>)>,
    depth: u32,
) -> Result<(), WireError> {
    let (mut time, mut name) = (0u64, "");
    kept.clear();
    while let Some((field, wt)) = r.field()? {
        match (field, wt) {
            (1, FIXED64) => time = r.fixed64()?,
            (2, LEN) => name = r.str()?,
            (3, LEN) => {
                let (key, value) = key_value(r.message()?)?;
                if let Some(k) = keep.classify(key) {
                    kept.push((k, value));
                }
            }
            (1..=3, _) => return Err(r.error("wrong wire type in span event")),
            _ => r.skip(field, wt, depth)?,
        }
    }
    keep.retain_message_fields(kept, |v| plain_string(*v).ok().flatten());
    if kept.is_empty() {
        return Ok(());
    }
    write_kept(out, &event_header(span, time, name), kept, depth - 1)?;
    out.end_event(span.span_id, index);
    Ok(())
}

/// The value if it is an `AnyValue` holding one string and nothing else
/// (nearly every kept attribute): copied as it is, without building an
/// `AttrValue`. Anything else (`None`) goes the general way, which merges
/// repeated fields as protobuf does.
#[inline(always)]
fn plain_string(value: ValueRef<'_>) -> Result<Option<&str>, WireError> {
    let ValueRef::One(mut r) = value else {
        return Ok(None);
    };
    let mut found = None;
    while let Some((field, wt)) = r.field()? {
        if (field, wt) != (1, LEN) || found.is_some() {
            return Ok(None);
        }
        found = Some(r.str()?);
    }
    Ok(found)
}

/// A `KeyValue`'s value, not decoded yet: most attributes are not kept, and
/// their values are never looked at.
#[derive(Clone, Copy)]
enum ValueRef<'a> {
    Absent,
    One(Reader<'a>),
    /// The value field given more than once (the whole `KeyValue`):
    /// protobuf merges the occurrences.
    Many(Reader<'a>),
}

/// A `KeyValue`'s key (checked UTF-8) and its value, undecoded.
fn key_value(mut r: Reader<'_>) -> Result<(&str, ValueRef<'_>), WireError> {
    let whole = r;
    let mut key = "";
    let mut value = ValueRef::Absent;
    while let Some((field, wt)) = r.field()? {
        match (field, wt) {
            (1, LEN) => key = r.str()?,
            (2, LEN) => {
                let v = r.message()?;
                value = match value {
                    ValueRef::Absent => ValueRef::One(v),
                    _ => ValueRef::Many(whole),
                };
            }
            (1 | 2, _) => return Err(r.error("wrong wire type in key-value")),
            _ => r.skip(field, wt, MAX_DEPTH)?,
        }
    }
    Ok((key, value))
}

/// Decodes a value (absent: `Empty`, as `span::attr_of` has it).
fn any_value_of(value: ValueRef<'_>, depth: u32) -> Result<AttrValue, WireError> {
    let mut v = AttrValue::Empty;
    match value {
        ValueRef::Absent => {}
        ValueRef::One(r) => merge_any(r, &mut v, depth)?,
        ValueRef::Many(mut kv) => {
            while let Some((field, wt)) = kv.field()? {
                if (field, wt) == (2, LEN) {
                    merge_any(kv.message()?, &mut v, depth)?;
                } else {
                    kv.skip(field, wt, depth)?;
                }
            }
        }
    }
    Ok(v)
}

/// Merges one `AnyValue` message into `into`: the last member of the oneof
/// wins, and an array or key-value list given again is appended to.
fn merge_any(mut r: Reader<'_>, into: &mut AttrValue, depth: u32) -> Result<(), WireError> {
    let depth = depth
        .checked_sub(1)
        .ok_or_else(|| r.error("nesting too deep"))?;
    while let Some((field, wt)) = r.field()? {
        match (field, wt) {
            (1, LEN) => *into = AttrValue::Str(r.str()?.to_owned()),
            (2, VARINT) => *into = AttrValue::Bool(r.varint()? != 0),
            (3, VARINT) => *into = AttrValue::Int(r.varint()? as i64),
            (4, FIXED64) => *into = AttrValue::Double(f64::from_bits(r.fixed64()?)),
            (5, LEN) => {
                if !matches!(into, AttrValue::Array(_)) {
                    *into = AttrValue::Array(Vec::new());
                }
                let mut arr = r.message()?;
                while let Some((f, w)) = arr.field()? {
                    match (f, w) {
                        (1, LEN) => {
                            let mut item = AttrValue::Empty;
                            merge_any(arr.message()?, &mut item, depth)?;
                            if let AttrValue::Array(items) = into {
                                items.push(item);
                            }
                        }
                        (1, _) => return Err(arr.error("wrong wire type in array value")),
                        _ => arr.skip(f, w, depth)?,
                    }
                }
            }
            (6, LEN) => {
                if !matches!(into, AttrValue::KvList(_)) {
                    *into = AttrValue::KvList(Vec::new());
                }
                let mut list = r.message()?;
                while let Some((f, w)) = list.field()? {
                    match (f, w) {
                        (1, LEN) => {
                            let (key, value) = key_value(list.message()?)?;
                            let item = (key.to_owned(), any_value_of(value, depth)?);
                            if let AttrValue::KvList(items) = into {
                                items.push(item);
                            }
                        }
                        (1, _) => return Err(list.error("wrong wire type in key-value list")),
                        _ => list.skip(f, w, depth)?,
                    }
                }
            }
            (7, LEN) => *into = AttrValue::Bytes(r.bytes()?.to_vec()),
            // A string-table index only meaningful in profiles (see `span.rs`).
            (8, VARINT) => {
                r.varint()?;
                *into = AttrValue::Empty;
            }
            (1..=8, _) => return Err(r.error("wrong wire type in any-value")),
            _ => r.skip(field, wt, depth)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList, any_value,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{self as otlp, ResourceSpans, ScopeSpans, span};
    use proptest::prelude::*;
    use prost::Message;

    use super::*;
    use crate::span::{Span, SpanId};

    /// What prost + the JSON path's record writer make of the same bytes:
    /// the oracle.
    fn oracle(buf: &[u8], keep: &KeepAttributes) -> Option<(Records, Vec<RejectedSpan>)> {
        let req = ExportTraceServiceRequest::decode(buf).ok()?;
        Some(Records::from_otlp(&req.resource_spans, keep))
    }

    /// The same records, byte for byte, for the same spans; `sized`: with
    /// the same sizes too (prost re-encodes merged values canonically,
    /// while the decoder accounts what came over the wire).
    fn same_records(ours: &Records, want: &Records, sized: bool) {
        assert_eq!(ours.len(), want.len());
        for i in 0..ours.len() {
            let (a, b) = (ours.spans()[i], want.spans()[i]);
            assert_eq!(
                (a.trace_id, a.span_id, a.root),
                (b.trace_id, b.span_id, b.root)
            );
            if sized {
                assert_eq!(a.encoded, b.encoded);
            }
            assert_eq!(ours.record(i), want.record(i), "span {i}");
        }
    }

    fn same(buf: &[u8], keep: &KeepAttributes) {
        let ours = decode_request(buf, keep).expect("prost-encoded input decodes");
        let (spans, rejected) = oracle(buf, keep).expect("oracle decodes");
        same_records(&ours.spans, &spans, true);
        assert_eq!(ours.rejected, rejected);
    }

    /// Every key the request's spans and their events carry, kept.
    fn every_key(buf: &[u8]) -> KeepAttributes {
        let keys = ExportTraceServiceRequest::decode(buf)
            .map(|req| {
                req.resource_spans
                    .iter()
                    .flat_map(|rs| &rs.scope_spans)
                    .flat_map(|ss| &ss.spans)
                    .flat_map(|s| {
                        s.attributes
                            .iter()
                            .chain(s.events.iter().flat_map(|e| &e.attributes))
                    })
                    .map(|kv| kv.key.clone())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        KeepAttributes::only(keys.into_iter().chain(["deep".to_owned()]))
    }

    /// The spans of a decoded request, read back.
    fn read_back(d: &Decoded, keep: KeepAttributes) -> Vec<Span> {
        let traces = d.spans.traces(&std::sync::Arc::new(keep)).unwrap();
        traces.values().flat_map(|t| t.to_spans()).collect()
    }

    fn any_value() -> impl Strategy<Value = AnyValue> {
        let leaf = prop_oneof![
            ".{0,12}".prop_map(any_value::Value::StringValue),
            any::<bool>().prop_map(any_value::Value::BoolValue),
            any::<i64>().prop_map(any_value::Value::IntValue),
            any::<f64>().prop_map(any_value::Value::DoubleValue),
            prop::collection::vec(any::<u8>(), 0..6).prop_map(any_value::Value::BytesValue),
            any::<i32>().prop_map(any_value::Value::StringValueStrindex),
        ]
        .prop_map(|v| AnyValue { value: Some(v) });
        leaf.prop_recursive(3, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|values| AnyValue {
                    value: Some(any_value::Value::ArrayValue(ArrayValue { values })),
                }),
                prop::collection::vec(("[a-c]{1,2}", inner), 0..3).prop_map(|kvs| AnyValue {
                    value: Some(any_value::Value::KvlistValue(KeyValueList {
                        values: kvs
                            .into_iter()
                            .map(|(key, v)| KeyValue {
                                key,
                                value: Some(v),
                                ..KeyValue::default()
                            })
                            .collect(),
                    })),
                }),
                Just(AnyValue { value: None }),
            ]
        })
    }

    fn key_values() -> impl Strategy<Value = Vec<KeyValue>> {
        let key = prop_oneof![
            Just("tool.name".to_owned()),
            Just("input.value".to_owned()),
            Just("service.name".to_owned()),
            "[a-z.]{1,8}",
        ];
        prop::collection::vec(
            (key, prop::option::weighted(0.9, any_value())).prop_map(|(key, value)| KeyValue {
                key,
                value,
                ..KeyValue::default()
            }),
            0..5,
        )
    }

    fn id(len: usize) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => prop::collection::vec(1u8..=255, len..=len),
            1 => Just(vec![0; len]),
            1 => prop::collection::vec(any::<u8>(), 0..20),
        ]
    }

    /// A span's events: most with no attribute kept, some (sharing the
    /// spans' keys) kept.
    fn events() -> impl Strategy<Value = Vec<span::Event>> {
        let event = (
            prop_oneof![Just("exception"), Just("gen_ai.choice"), Just("ev")],
            any::<u64>(),
            key_values(),
        )
            .prop_map(|(name, time_unix_nano, attributes)| span::Event {
                time_unix_nano,
                name: name.into(),
                attributes,
                dropped_attributes_count: 1,
            });
        prop::collection::vec(event, 0..3)
    }

    fn spans() -> impl Strategy<Value = otlp::Span> {
        (
            id(16),
            id(8),
            prop_oneof![Just(Vec::new()), id(8)],
            ".{0,10}",
            any::<u64>(),
            any::<u64>(),
            key_values(),
            events(),
        )
            .prop_map(
                |(trace_id, span_id, parent_span_id, name, s, e, attributes, events)| otlp::Span {
                    trace_id,
                    span_id,
                    parent_span_id,
                    name,
                    start_time_unix_nano: s,
                    end_time_unix_nano: e,
                    attributes,
                    kind: 3,
                    events,
                    status: Some(otlp::Status {
                        message: "ok".into(),
                        code: 1,
                    }),
                    ..otlp::Span::default()
                },
            )
    }

    fn requests() -> impl Strategy<Value = ExportTraceServiceRequest> {
        let scope = prop::collection::vec(spans(), 0..4).prop_map(|spans| ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "scope".into(),
                ..InstrumentationScope::default()
            }),
            spans,
            schema_url: String::new(),
        });
        let resource = (
            prop::option::of(key_values()),
            prop::collection::vec(scope, 0..3),
        )
            .prop_map(|(attrs, scope_spans)| ResourceSpans {
                resource: attrs.map(|attributes| Resource {
                    attributes,
                    ..Resource::default()
                }),
                scope_spans,
                schema_url: "https://opentelemetry.io/schemas/1.26.0".into(),
            });
        prop::collection::vec(resource, 0..3)
            .prop_map(|resource_spans| ExportTraceServiceRequest { resource_spans })
    }

    fn keep_some() -> KeepAttributes {
        KeepAttributes::only(["tool.name".to_owned(), "input.value".to_owned()])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn decodes_what_prost_and_the_conversion_make(req in requests()) {
            let buf = req.encode_to_vec();
            same(&buf, &every_key(&buf));
            same(&buf, &keep_some());
        }

        /// A span's kept events follow its record, each an event of it
        /// (parent tag 2, then the span's ID), sized 0.
        #[test]
        fn a_span_s_kept_events_follow_it(req in requests()) {
            let buf = req.encode_to_vec();
            let d = decode_request(&buf, &every_key(&buf)).unwrap();
            let mut span = None;
            for (i, e) in d.spans.spans().iter().enumerate() {
                if !e.event {
                    span = Some(e.span_id);
                    continue;
                }
                let record = d.spans.record(i).unwrap();
                let parent = span.map(|s| [&[2u8][..], &s.0[..]].concat());
                prop_assert_eq!(Some(&record[8..17]), parent.as_deref());
                prop_assert!(!e.root);
                prop_assert_eq!(e.encoded, 0);
            }
        }

        /// Corrupted input never panics, and whatever prost accepts we
        /// accept with the same result (we may accept more: unread fields
        /// are not validated).
        #[test]
        fn corrupted_input_is_an_error_or_agrees_with_prost(
            req in requests(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut buf = req.encode_to_vec();
            if buf.is_empty() {
                return Ok(());
            }
            for (at, byte) in flips {
                let i = at.index(buf.len());
                buf[i] = byte;
            }
            let keep = every_key(&buf);
            let ours = decode_request(&buf, &keep);
            if let Some((spans, rejected)) = oracle(&buf, &keep) {
                let ours = ours.expect("prost accepted it");
                same_records(&ours.spans, &spans, false);
                prop_assert_eq!(ours.rejected, rejected);
            }
            let truncated = &buf[..cut.index(buf.len())];
            let _ = decode_request(truncated, &keep);
        }
    }

    #[test]
    fn resource_after_the_spans_still_names_the_service() {
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![KeyValue {
                        key: "service.name".into(),
                        value: Some(AnyValue {
                            value: Some(any_value::Value::StringValue("agent".into())),
                        }),
                        ..KeyValue::default()
                    }],
                    ..Resource::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![otlp::Span {
                        trace_id: vec![1; 16],
                        span_id: vec![2; 8],
                        ..otlp::Span::default()
                    }],
                    ..ScopeSpans::default()
                }],
                schema_url: String::new(),
            }],
        };
        let rs = &req.resource_spans[0];
        // Field 2 (scope_spans) first, then field 1 (resource).
        let mut body = Vec::new();
        for ss in &rs.scope_spans {
            prost::encoding::message::encode(2, ss, &mut body);
        }
        if let Some(r) = &rs.resource {
            prost::encoding::message::encode(1, r, &mut body);
        }
        let mut buf = Vec::new();
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut buf);
        prost::encoding::encode_varint(body.len() as u64, &mut buf);
        buf.extend_from_slice(&body);
        let d = decode_request(&buf, &every_key(&buf)).unwrap();
        assert_eq!(d.spans.service_of(0), Some("agent"));
        same(&buf, &every_key(&buf));
    }

    /// Values the fast path must leave to the general one: a string given
    /// twice (the last wins), a string then another type, an empty value.
    #[test]
    fn values_protobuf_merges_decode_as_prost_has_them() {
        fn field(n: u32, body: &[u8], out: &mut Vec<u8>) {
            prost::encoding::encode_key(n, prost::encoding::WireType::LengthDelimited, out);
            prost::encoding::encode_varint(body.len() as u64, out);
            out.extend_from_slice(body);
        }
        let values: [&[u8]; 4] = [
            b"\x0a\x01a\x0a\x02bc",
            b"\x0a\x01a\x18\x07",
            b"\x18\x07\x0a\x01a",
            b"",
        ];
        let mut span = Vec::new();
        field(1, &[7; 16], &mut span);
        field(2, &[8; 8], &mut span);
        for (i, v) in values.iter().enumerate() {
            let mut kv = Vec::new();
            field(1, format!("k{i}").as_bytes(), &mut kv);
            field(2, v, &mut kv);
            field(9, &kv, &mut span);
        }
        let (mut scope, mut rs, mut req) = (Vec::new(), Vec::new(), Vec::new());
        field(2, &span, &mut scope);
        field(2, &scope, &mut rs);
        field(1, &rs, &mut req);
        let keep = KeepAttributes::only((0..4).map(|i| format!("k{i}")));
        let decoded = decode_request(&req, &keep).unwrap();
        let (want, _) = oracle(&req, &keep).unwrap();
        same_records(&decoded.spans, &want, false);
        let spans = read_back(&decoded, keep);
        let got: Vec<&AttrValue> = spans[0].attributes.iter().map(|(_, v)| v).collect();
        assert_eq!(
            got,
            [
                &AttrValue::Str("bc".into()),
                &AttrValue::Int(7),
                &AttrValue::Str("a".into()),
                &AttrValue::Empty
            ]
        );
    }

    fn text_kv(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.into())),
            }),
            ..KeyValue::default()
        }
    }

    fn event(name: &str, time: u64, attributes: Vec<KeyValue>) -> span::Event {
        span::Event {
            time_unix_nano: time,
            name: name.into(),
            attributes,
            dropped_attributes_count: 0,
        }
    }

    fn request_of(spans: Vec<otlp::Span>) -> Vec<u8> {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        }
        .encode_to_vec()
    }

    #[test]
    fn span_events_with_kept_attributes_follow_their_span() {
        let choice = || {
            event(
                "gen_ai.choice",
                15,
                vec![
                    text_kv("gen_ai.event.content", r#"{"index":0}"#),
                    text_kv("other", "x"),
                ],
            )
        };
        let with_events = otlp::Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: "chat".into(),
            events: vec![
                event("exception", 11, vec![text_kv("exception.type", "E")]),
                choice(),
                event("First Token Stream Event", 12, Vec::new()),
                choice(),
            ],
            ..otlp::Span::default()
        };
        let bad_id = otlp::Span {
            span_id: vec![0; 8],
            events: vec![choice()],
            ..with_events.clone()
        };
        let plain = otlp::Span {
            span_id: vec![3; 8],
            events: vec![event("exception", 11, vec![text_kv("exception.type", "E")])],
            ..with_events.clone()
        };
        let buf = request_of(vec![with_events, bad_id, plain]);
        let keep = KeepAttributes::only(["gen_ai.event.content".to_owned()]);
        same(&buf, &keep);
        let d = decode_request(&buf, &keep).unwrap();
        assert_eq!(d.rejected.len(), 1);
        let entries = d.spans.spans();
        let kinds: Vec<(bool, bool)> = entries.iter().map(|e| (e.event, e.root)).collect();
        assert_eq!(
            kinds,
            [(false, true), (true, false), (true, false), (false, true)]
        );
        assert_eq!(entries[3].span_id, SpanId([3; 8]));
        // The same event at another place in its span is another event;
        // the same request decoded again gives the same IDs.
        assert_ne!(entries[1].span_id, entries[2].span_id);
        let again = decode_request(&buf, &keep).unwrap();
        let ids = |r: &Records| r.spans().iter().map(|e| e.span_id).collect::<Vec<_>>();
        assert_eq!(ids(&again.spans), ids(&d.spans));
        let traces = d.spans.traces(&std::sync::Arc::new(keep)).unwrap();
        let trace = &traces[&crate::span::TraceId([1; 16])];
        assert_eq!(trace.len(), 2);
        let events: Vec<_> = trace.events().collect();
        assert_eq!(events.len(), 2);
        for e in &events {
            assert_eq!(e.name(), "gen_ai.choice");
            assert_eq!(e.parent_span_id, Some(SpanId([2; 8])));
            assert_eq!((e.start_time_unix_nano, e.end_time_unix_nano), (15, 15));
            assert_eq!(
                e.attr("gen_ai.event.content").and_then(|v| v.as_str()),
                Some(r#"{"index":0}"#)
            );
            assert!(e.attr("other").is_none());
        }
    }

    /// An event's attribute values are one message deeper than a span's:
    /// what prost decodes the decoder decodes alike, and a value nested
    /// past the limit fails the request rather than the stack.
    #[test]
    fn an_event_s_values_decode_as_deep_as_prost_allows() {
        let request = |depth: usize| {
            let mut v = AnyValue {
                value: Some(any_value::Value::StringValue("x".into())),
            };
            for _ in 0..depth {
                v = AnyValue {
                    value: Some(any_value::Value::ArrayValue(ArrayValue { values: vec![v] })),
                };
            }
            let deep = KeyValue {
                key: "deep".into(),
                value: Some(v),
                ..KeyValue::default()
            };
            request_of(vec![otlp::Span {
                trace_id: vec![1; 16],
                span_id: vec![2; 8],
                events: vec![event("e", 1, vec![deep])],
                ..otlp::Span::default()
            }])
        };
        let keep = every_key(&[]);
        let mut decoded = 0;
        for depth in 40..50 {
            let buf = request(depth);
            if ExportTraceServiceRequest::decode(&buf[..]).is_ok() {
                same(&buf, &keep);
                decoded += 1;
            }
        }
        assert!(
            (1..10).contains(&decoded),
            "prost's limit is within the depths tried"
        );
        let e = decode_request(&request(200), &keep).unwrap_err();
        assert_eq!(e.what, "nesting too deep");
    }

    #[test]
    fn malformed_input_names_the_problem_and_where() {
        let e = decode_request(&[0x0a, 0x05, 0x01], &every_key(&[])).unwrap_err();
        assert_eq!(e.what, "length past the end of the message");
        assert_eq!(e.offset, 1);
        let e = decode_request(&[0x10, 0x80], &every_key(&[])).unwrap_err();
        assert_eq!(e.what, "truncated varint");
        assert!(decode_request(&[0x00], &every_key(&[])).is_err());
        // A key past u32 in a field it would skip, as prost refuses it
        // (found by the wire_decode fuzz target).
        let e = decode_request(&[0xca, 0x96, 0xff, 0xff, 0x74, 0x00], &every_key(&[])).unwrap_err();
        assert_eq!(e.what, "field number too large");
        assert!(
            ExportTraceServiceRequest::decode(&[0xca, 0x96, 0xff, 0xff, 0x74, 0x00][..]).is_err()
        );
        // Deeply nested arrays stop at the depth limit instead of the stack.
        let mut v = AnyValue {
            value: Some(any_value::Value::StringValue("x".into())),
        };
        for _ in 0..200 {
            v = AnyValue {
                value: Some(any_value::Value::ArrayValue(ArrayValue { values: vec![v] })),
            };
        }
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![otlp::Span {
                        trace_id: vec![1; 16],
                        span_id: vec![2; 8],
                        attributes: vec![KeyValue {
                            key: "deep".into(),
                            value: Some(v),
                            ..KeyValue::default()
                        }],
                        ..otlp::Span::default()
                    }],
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        };
        let e = decode_request(&req.encode_to_vec(), &every_key(&[])).unwrap_err();
        assert_eq!(e.what, "nesting too deep");
        // The same attribute, not kept, is skipped without being decoded.
        assert!(decode_request(&req.encode_to_vec(), &keep_some()).is_ok());
    }
}
