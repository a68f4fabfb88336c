//! The compact form a buffered trace's spans are held in.
//!
//! A trace is buffered from its first span until the late-span window after
//! its evaluation closes (60 s by default). Its spans are read only when it
//! is evaluated (once, or again for a late span), so they are kept as one
//! byte buffer instead of `Span` structs with an allocation per name and
//! value: about the spans' content and a little more, below their OTLP
//! encoding, where `Span`s cost well above it (the `assembler_memory`
//! example measures it), and once toolscore falls behind, open traces are
//! most of the buffer. Each span is appended as it arrives and
//! the whole trace decoded when it is due; decoding is cheap (no parsing
//! beyond lengths; one allocation per kept value, which the receiver, since
//! it writes these records straight from protobuf, no longer makes).
//!
//! The trace ID is not stored (the buffer is keyed by it); attribute keys
//! and service names go into small per-trace tables so the interned `Arc`s
//! come back as they were.

use std::sync::Arc;

use crate::span::{AttrValue, Span, SpanId, TraceId};

/// Spans of one trace, encoded.
#[derive(Debug, Default)]
pub struct Compact {
    bytes: Vec<u8>,
    keys: Vec<Arc<str>>,
    services: Vec<Arc<str>>,
    /// In arrival order while the trace is open (the shard keeps a set for
    /// large open traces); sorted once sealed, for de-duplicating late spans
    /// by binary search.
    ids: Vec<SpanId>,
    sealed: bool,
}

/// The buffer did not decode: a bug in this module, never input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("corrupt compact trace buffer at byte {0}")]
pub struct Corrupt(usize);

impl Compact {
    /// All of `spans`, sealed (the tests' shorthand).
    #[cfg(test)]
    pub fn encode(spans: &[Span]) -> Compact {
        let mut c = Compact::default();
        // Exactly sized up front: no regrowth.
        c.bytes.reserve_exact(spans.iter().map(encoded_size).sum());
        for s in spans {
            c.push(s, 0);
        }
        c.seal();
        c
    }

    /// The bytes a span adds, give or take the buffer's growth (for the tests).
    #[cfg(test)]
    pub fn span_size(span: &Span) -> usize {
        encoded_size(span) + std::mem::size_of::<SpanId>()
    }

    /// Appends a span given as a `Span` (the tests' way in; the service
    /// appends [`Packed`] records).
    #[cfg(test)]
    pub fn push(&mut self, s: &Span, following: usize) {
        let need = encoded_size(s);
        let run = Run {
            spans: following,
            bytes: need * following,
        };
        self.grow(need, run);
        write_span(&mut self.bytes, &mut self.keys, &mut self.services, s);
        self.add_id(s.span_id, run);
    }

    /// Appends span `i` of a request's [`Packed`] spans. When the buffer
    /// must grow, it grows by room for the `run` of this trace's spans
    /// known to follow in the request (a request usually carries a trace's
    /// spans together, so a trace is sized once), or by a quarter: an open
    /// trace wastes little and appends stay amortised O(1). On error (a
    /// bug, never input) the trace is left as it was.
    pub fn push_record(&mut self, p: &Packed, i: usize, run: Run) -> Result<(), Corrupt> {
        let s = p.spans.get(i).ok_or(Corrupt(0))?;
        let rec = p.record(s).ok_or(Corrupt(0))?;
        self.grow(rec.len(), run);
        let before = self.bytes.len();
        let copied = self.copy_record(rec, p);
        if copied.is_err() {
            self.bytes.truncate(before);
        } else {
            self.add_id(s.span_id, run);
        }
        copied
    }

    /// Copies one record, re-indexing its service and keys into this
    /// trace's tables; the rest is copied as it is.
    fn copy_record(&mut self, rec: &[u8], p: &Packed) -> Result<(), Corrupt> {
        let mut r = Reader { buf: rec, pos: 0 };
        r.array::<8>()?;
        if r.byte()? != 0 {
            r.array::<8>()?;
        }
        r.varint()?;
        r.varint()?;
        r.slice()?;
        self.bytes.extend_from_slice(&rec[..r.pos]);
        // Tables are looked up by reference: cloning each key's `Arc` here
        // was an atomic increment and decrement per attribute.
        let service = match r.varint()? {
            0 => 0,
            i => 1 + index_of(&mut self.services, r.entry(&p.services, i - 1)?),
        };
        varint(&mut self.bytes, service as u64);
        let n = r.varint()?;
        varint(&mut self.bytes, n);
        for _ in 0..n {
            let k = r.varint()?;
            let key = r.entry(&p.keys, k)?;
            varint(&mut self.bytes, index_of(&mut self.keys, key) as u64);
            let from = r.pos;
            r.skip_value(0)?;
            self.bytes.extend_from_slice(&rec[from..r.pos]);
        }
        if r.pos == rec.len() {
            Ok(())
        } else {
            Err(r.corrupt())
        }
    }

    fn grow(&mut self, need: usize, run: Run) {
        if self.bytes.capacity() - self.bytes.len() < need {
            let more = (self.bytes.len() / 4).max(run.bytes);
            self.bytes.reserve_exact(need.saturating_add(more));
        }
    }

    fn add_id(&mut self, id: SpanId, run: Run) {
        if self.sealed {
            // A late span: keep the IDs sorted.
            let at = self.ids.partition_point(|x| *x < id);
            self.ids.insert(at, id);
        } else {
            if self.ids.len() == self.ids.capacity() {
                self.ids
                    .reserve_exact((self.ids.len() / 4).max(run.spans) + 1);
            }
            self.ids.push(id);
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
        self.keys.shrink_to_fit();
        self.services.shrink_to_fit();
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
        self.bytes.capacity()
            + self.keys.capacity() * std::mem::size_of::<Arc<str>>()
            + self.services.capacity() * std::mem::size_of::<Arc<str>>()
            + self.ids.capacity() * std::mem::size_of::<SpanId>()
    }

    pub fn decode(&self, trace_id: TraceId) -> Result<Vec<Span>, Corrupt> {
        let mut r = Reader {
            buf: &self.bytes,
            pos: 0,
        };
        let mut spans = Vec::with_capacity(self.ids.len());
        while r.pos < r.buf.len() {
            spans.push(r.span(trace_id, &self.keys, &self.services)?);
        }
        Ok(spans)
    }
}

/// Writes one span record: the span ID, the parent (a flag, then the ID),
/// start and end times, the name, the service (0, or 1 + its table index),
/// then the attributes (key index, value).
fn write_span(out: &mut Vec<u8>, keys: &mut Vec<Arc<str>>, services: &mut Vec<Arc<str>>, s: &Span) {
    let service = s
        .service_name
        .as_ref()
        .map_or(0, |n| 1 + index_of(services, n));
    write_header(
        out,
        s.span_id,
        s.parent_span_id,
        s.start_time_unix_nano,
        s.end_time_unix_nano,
        &s.name,
        service,
    );
    varint(out, s.attributes.len() as u64);
    for (k, v) in &s.attributes {
        varint(out, index_of(keys, k) as u64);
        value(out, v);
    }
}

fn write_header(
    out: &mut Vec<u8>,
    span_id: SpanId,
    parent: Option<SpanId>,
    start: u64,
    end: u64,
    name: &str,
    service: usize,
) {
    out.extend_from_slice(&span_id.0);
    match parent {
        Some(p) => {
            out.push(1);
            out.extend_from_slice(&p.0);
        }
        None => out.push(0),
    }
    varint(out, start);
    varint(out, end);
    bytes(out, name.as_bytes());
    varint(out, service as u64);
}

/// One request's spans in the compact form, as the receiver decodes them:
/// one buffer for the request, with its own key and service tables. A
/// shard copies each record into its trace's [`Compact`] (re-indexing keys
/// and services), so a span costs the receive path no allocation of its
/// own and the buffer holds it at about its content's size from the start.
#[derive(Debug, Default)]
pub struct Packed {
    bytes: Vec<u8>,
    keys: Vec<Arc<str>>,
    services: Vec<Arc<str>>,
    spans: Vec<PackedSpan>,
}

/// The spans of the same trace that follow one in a request, without a
/// break: how many, and their records' bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Run {
    pub spans: usize,
    pub bytes: usize,
}

/// Where one span's record is, and what the assembler needs before it
/// copies the record.
#[derive(Debug, Clone, Copy)]
pub struct PackedSpan {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub root: bool,
    /// The span's size on the wire (0 where unknown).
    pub encoded: u32,
    /// Its service: 0 for none, else 1 + its index in the request's table.
    service: usize,
    start: usize,
    end: usize,
}

impl Packed {
    pub fn with_capacity(bytes: usize, spans: usize) -> Packed {
        Packed {
            bytes: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(spans),
            ..Packed::default()
        }
    }

    /// Spans given as `Span`s (OTLP JSON, the tests).
    pub fn from_spans(spans: &[Span], encoded: &[u32]) -> Packed {
        let mut p = Packed::with_capacity(spans.iter().map(encoded_size).sum(), spans.len());
        for (i, s) in spans.iter().enumerate() {
            p.push_span(s, encoded.get(i).copied().unwrap_or(0));
        }
        p
    }

    pub fn push_span(&mut self, s: &Span, encoded: u32) {
        let start = self.bytes.len();
        write_span(&mut self.bytes, &mut self.keys, &mut self.services, s);
        let service = s
            .service_name
            .as_ref()
            .map_or(0, |n| 1 + index_of(&mut self.services, n));
        self.spans.push(PackedSpan {
            trace_id: s.trace_id,
            span_id: s.span_id,
            root: s.parent_span_id.is_none(),
            encoded,
            service,
            start,
            end: self.bytes.len(),
        });
    }

    /// Starts a span written piece by piece (the protobuf decoder's way):
    /// then `attributes` attributes, each a [`key`](Self::key) and a
    /// value ([`str_value`](Self::str_value) or [`value`](Self::value)),
    /// then [`end`](Self::end).
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &mut self,
        trace_id: TraceId,
        span_id: SpanId,
        parent: Option<SpanId>,
        start: u64,
        end: u64,
        name: &str,
        service: Option<&Arc<str>>,
        attributes: usize,
    ) {
        let at = self.bytes.len();
        let service = service.map_or(0, |n| 1 + index_of(&mut self.services, n));
        write_header(&mut self.bytes, span_id, parent, start, end, name, service);
        varint(&mut self.bytes, attributes as u64);
        self.spans.push(PackedSpan {
            trace_id,
            span_id,
            root: parent.is_none(),
            encoded: 0,
            service,
            start: at,
            end: at,
        });
    }

    pub fn key(&mut self, key: &Arc<str>) {
        let i = index_of(&mut self.keys, key);
        varint(&mut self.bytes, i as u64);
    }

    pub fn str_value(&mut self, v: &str) {
        self.bytes.push(STR);
        bytes(&mut self.bytes, v.as_bytes());
    }

    pub fn value(&mut self, v: &AttrValue) {
        value(&mut self.bytes, v);
    }

    /// Ends the span begun last, with its size on the wire.
    pub fn end(&mut self, encoded: u32) {
        let len = self.bytes.len();
        if let Some(s) = self.spans.last_mut() {
            s.end = len;
            s.encoded = encoded;
        }
    }

    /// The size of span `i`'s record (0 if there is none).
    pub fn record_size(&self, i: usize) -> usize {
        self.spans.get(i).map_or(0, |s| s.end - s.start)
    }

    pub fn spans(&self) -> &[PackedSpan] {
        &self.spans
    }

    /// The `service.name` of a span's resource, where it has one.
    pub fn service_of(&self, s: &PackedSpan) -> Option<&Arc<str>> {
        s.service.checked_sub(1).and_then(|i| self.services.get(i))
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn record(&self, s: &PackedSpan) -> Option<&[u8]> {
        self.bytes.get(s.start..s.end)
    }

    /// The spans decoded (for the tests; a shard decodes a whole trace).
    #[cfg(test)]
    pub fn decode(&self) -> Result<Vec<Span>, Corrupt> {
        self.spans
            .iter()
            .map(|s| {
                let rec = self.record(s).ok_or(Corrupt(s.start))?;
                let mut r = Reader { buf: rec, pos: 0 };
                let span = r.span(s.trace_id, &self.keys, &self.services)?;
                if r.pos == rec.len() {
                    Ok(span)
                } else {
                    Err(r.corrupt())
                }
            })
            .collect()
    }
}

/// A span's encoded size, exact but for table indexes (counted as one
/// byte: a trace rarely has more than 127 distinct keys or services).
fn encoded_size(s: &Span) -> usize {
    let parent = if s.parent_span_id.is_some() { 9 } else { 1 };
    8 + parent
        + varint_len(s.start_time_unix_nano)
        + varint_len(s.end_time_unix_nano)
        + bytes_len(s.name.len())
        + 1
        + varint_len(s.attributes.len() as u64)
        + s.attributes
            .iter()
            .map(|(_, v)| 1 + value_size(v))
            .sum::<usize>()
}

fn value_size(v: &AttrValue) -> usize {
    1 + match v {
        AttrValue::Str(s) => bytes_len(s.len()),
        AttrValue::Bytes(b) => bytes_len(b.len()),
        AttrValue::Bool(_) => 1,
        AttrValue::Int(_) | AttrValue::Double(_) => 8,
        AttrValue::Array(items) => {
            varint_len(items.len() as u64) + items.iter().map(value_size).sum::<usize>()
        }
        AttrValue::KvList(kvs) => {
            varint_len(kvs.len() as u64)
                + kvs
                    .iter()
                    .map(|(k, v)| bytes_len(k.len()) + value_size(v))
                    .sum::<usize>()
        }
        AttrValue::Empty => 0,
    }
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn bytes_len(n: usize) -> usize {
    varint_len(n as u64) + n
}

fn index_of(table: &mut Vec<Arc<str>>, item: &Arc<str>) -> usize {
    match table
        .iter()
        .position(|t| Arc::ptr_eq(t, item) || **t == **item)
    {
        Some(i) => i,
        None => {
            table.push(item.clone());
            table.len() - 1
        }
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

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Values nest no deeper than the wire decoder lets them (100 levels).
const MAX_DEPTH: u32 = 128;

impl Reader<'_> {
    fn corrupt(&self) -> Corrupt {
        Corrupt(self.pos)
    }

    fn byte(&mut self) -> Result<u8, Corrupt> {
        let b = *self.buf.get(self.pos).ok_or(self.corrupt())?;
        self.pos += 1;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let s = self
            .buf
            .get(self.pos..self.pos + N)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or(self.corrupt())?;
        self.pos += N;
        Ok(s)
    }

    fn varint(&mut self) -> Result<u64, Corrupt> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.corrupt())
    }

    fn slice(&mut self) -> Result<&[u8], Corrupt> {
        let len = usize::try_from(self.varint()?).map_err(|_| self.corrupt())?;
        let end = self.pos.checked_add(len).ok_or(self.corrupt())?;
        let s = self.buf.get(self.pos..end).ok_or(self.corrupt())?;
        self.pos = end;
        Ok(s)
    }

    fn str(&mut self) -> Result<&str, Corrupt> {
        let at = self.corrupt();
        std::str::from_utf8(self.slice()?).map_err(|_| at)
    }

    fn table(&self, table: &[Arc<str>], i: u64) -> Result<Arc<str>, Corrupt> {
        self.entry(table, i).cloned()
    }

    fn entry<'t>(&self, table: &'t [Arc<str>], i: u64) -> Result<&'t Arc<str>, Corrupt> {
        usize::try_from(i)
            .ok()
            .and_then(|i| table.get(i))
            .ok_or(self.corrupt())
    }

    fn span(
        &mut self,
        trace_id: TraceId,
        keys: &[Arc<str>],
        services: &[Arc<str>],
    ) -> Result<Span, Corrupt> {
        let span_id = SpanId(self.array()?);
        let parent_span_id = match self.byte()? {
            0 => None,
            _ => Some(SpanId(self.array()?)),
        };
        let start_time_unix_nano = self.varint()?;
        let end_time_unix_nano = self.varint()?;
        let name = self.str()?.to_owned();
        let service_name = match self.varint()? {
            0 => None,
            i => Some(self.table(services, i - 1)?),
        };
        let n = self.varint()?;
        let mut attributes = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1024));
        for _ in 0..n {
            let i = self.varint()?;
            let key = self.table(keys, i)?;
            attributes.push((key, self.value(0)?));
        }
        Ok(Span {
            trace_id,
            span_id,
            parent_span_id,
            name,
            start_time_unix_nano,
            end_time_unix_nano,
            attributes,
            service_name,
        })
    }

    /// Steps over one value without decoding it.
    fn skip_value(&mut self, depth: u32) -> Result<(), Corrupt> {
        if depth > MAX_DEPTH {
            return Err(self.corrupt());
        }
        match self.byte()? {
            STR | BYTES => {
                self.slice()?;
            }
            BOOL => {
                self.byte()?;
            }
            INT | DOUBLE => {
                self.array::<8>()?;
            }
            ARRAY => {
                for _ in 0..self.varint()? {
                    self.skip_value(depth + 1)?;
                }
            }
            KVLIST => {
                for _ in 0..self.varint()? {
                    self.slice()?;
                    self.skip_value(depth + 1)?;
                }
            }
            EMPTY => {}
            _ => return Err(self.corrupt()),
        }
        Ok(())
    }

    fn value(&mut self, depth: u32) -> Result<AttrValue, Corrupt> {
        if depth > MAX_DEPTH {
            return Err(self.corrupt());
        }
        Ok(match self.byte()? {
            STR => AttrValue::Str(self.str()?.to_owned()),
            BOOL => AttrValue::Bool(self.byte()? != 0),
            INT => AttrValue::Int(i64::from_le_bytes(self.array()?)),
            DOUBLE => AttrValue::Double(f64::from_bits(u64::from_le_bytes(self.array()?))),
            BYTES => AttrValue::Bytes(self.slice()?.to_vec()),
            ARRAY => {
                let n = self.varint()?;
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                AttrValue::Array(items)
            }
            KVLIST => {
                let n = self.varint()?;
                let mut kvs = Vec::new();
                for _ in 0..n {
                    let k = self.str()?.to_owned();
                    kvs.push((k, self.value(depth + 1)?));
                }
                AttrValue::KvList(kvs)
            }
            EMPTY => AttrValue::Empty,
            _ => return Err(self.corrupt()),
        })
    }
}

#[cfg(test)]
mod tests {
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

    fn spans() -> impl Strategy<Value = Vec<Span>> {
        let keys: Vec<Arc<str>> = ["tool.name", "input.value", "output.value"]
            .into_iter()
            .map(Arc::from)
            .collect();
        let services: Vec<Arc<str>> = ["a", "b"].into_iter().map(Arc::from).collect();
        prop::collection::vec(
            (
                any::<[u8; 8]>(),
                prop::option::of(any::<[u8; 8]>()),
                any::<u64>(),
                any::<u64>(),
                ".{0,16}",
                prop::option::of(0usize..2),
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
                        .map(|(k, v)| (keys[k].clone(), v))
                        .collect(),
                    service_name: service.map(|i| services[i].clone()),
                })
                .collect()
        })
    }

    /// Bit-exact comparison (`PartialEq` on f64 would fail on NaN).
    fn same(a: &[Span], b: &[Span]) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    proptest! {
        #[test]
        fn spans_come_back_as_they_went_in(spans in spans()) {
            let c = Compact::encode(&spans);
            prop_assert_eq!(c.bytes.len(), spans.iter().map(encoded_size).sum::<usize>());
            let back = c.decode(TraceId([9; 16])).unwrap();
            prop_assert!(same(&spans, &back));
            prop_assert_eq!(c.span_count(), spans.len());
            for s in &spans {
                prop_assert!(c.contains(&s.span_id));
            }
        }

        /// Appended one at a time as they arrive (with any growth hints),
        /// then sealed, then given late spans: the same spans come back, and
        /// every ID is found before and after sealing.
        #[test]
        fn spans_appended_one_by_one_come_back_as_they_went_in(
            spans in spans(),
            hints in prop::collection::vec(0usize..20, 12),
            late in 0usize..4,
        ) {
            let late = late.min(spans.len());
            let (first, rest) = spans.split_at(spans.len() - late);
            let mut c = Compact::default();
            for (s, hint) in first.iter().zip(&hints) {
                c.push(s, *hint);
            }
            for s in first {
                prop_assert!(c.contains(&s.span_id));
            }
            c.seal();
            prop_assert_eq!(c.spare(), 0);
            for s in rest {
                c.push(s, 0);
            }
            prop_assert!(same(&spans, &c.decode(TraceId([9; 16])).unwrap()));
            prop_assert!(c.ids().is_sorted());
            for s in &spans {
                prop_assert!(c.contains(&s.span_id));
            }
        }

        /// A request's packed records, copied into per-trace buffers with
        /// their own key and service tables, decode to the spans packed.
        #[test]
        fn records_copied_between_tables_come_back_as_they_went_in(
            spans in spans(),
            hints in prop::collection::vec(0usize..20, 12),
            split in 0usize..12,
        ) {
            // Two requests, so the second's tables index differently.
            let split = split.min(spans.len());
            let mut c = Compact::default();
            for part in [&spans[..split], &spans[split..]] {
                let p = Packed::from_spans(part, &[]);
                prop_assert!(same(&p.decode().unwrap(), part));
                for i in 0..p.len() {
                    prop_assert_eq!(p.spans()[i].span_id, part[i].span_id);
                    prop_assert_eq!(p.spans()[i].root, part[i].parent_span_id.is_none());
                    let run = Run { spans: hints[i], bytes: hints[i] * 40 };
                    c.push_record(&p, i, run).unwrap();
                }
            }
            prop_assert!(same(&spans, &c.decode(TraceId([9; 16])).unwrap()));
            prop_assert_eq!(c.span_count(), spans.len());
        }
    }

    #[test]
    fn a_corrupt_record_leaves_the_trace_as_it_was() {
        let span = Span {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([1; 8]),
            parent_span_id: None,
            name: "n".into(),
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
            attributes: vec![(Arc::from("k"), AttrValue::Str("v".into()))],
            service_name: None,
        };
        let mut c = Compact::default();
        let good = Packed::from_spans(std::slice::from_ref(&span), &[]);
        c.push_record(&good, 0, Run::default()).unwrap();
        let mut bad = Packed::from_spans(std::slice::from_ref(&span), &[]);
        bad.keys.clear();
        assert!(c.push_record(&bad, 0, Run::default()).is_err());
        assert!(
            c.push_record(&good, 1, Run::default()).is_err(),
            "no such span"
        );
        assert_eq!(c.span_count(), 1);
        assert!(same(&c.decode(TraceId([1; 16])).unwrap(), &[span]));
    }

    #[test]
    fn sizes_are_exact() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
    }

    #[test]
    fn interned_keys_come_back_shared() {
        let key: Arc<str> = Arc::from("tool.name");
        let span = |id: u8| Span {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([id; 8]),
            parent_span_id: None,
            name: "n".into(),
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
            attributes: vec![(key.clone(), AttrValue::Str("x".into()))],
            service_name: None,
        };
        let c = Compact::encode(&[span(1), span(2)]);
        let back = c.decode(TraceId([1; 16])).unwrap();
        assert!(Arc::ptr_eq(&back[0].attributes[0].0, &key));
        assert!(Arc::ptr_eq(&back[1].attributes[0].0, &key));
        assert!(!c.contains(&SpanId([3; 8])));
    }
}
