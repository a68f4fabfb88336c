//! Reading records in place: a due trace's [`Spans`], each a [`SpanRef`]
//! whose attributes are [`AttrRef`]s borrowed from the record bytes.
//!
//! The records are checked once, when the trace is read for evaluation
//! ([`Spans::parse`]); after that every read is infallible, and a value is
//! built only where an evaluator needs one (an array or key-value list is
//! decoded when asked for).

use std::sync::Arc;

use super::{ARRAY, BOOL, BYTES, DOUBLE, EMPTY, INT, KVLIST, STR};
use crate::pyvalue::Value;
use crate::span::{AttrValue, KeepAttributes, Span, SpanId, TraceId};

/// The records did not read back: a bug in this module, never input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("corrupt span records at byte {0}")]
pub struct Corrupt(pub(super) usize);

/// One trace's spans, checked, in the order they arrived, and the events
/// (log records) that belong to them.
#[derive(Debug)]
pub struct Spans {
    trace_id: TraceId,
    bytes: Vec<u8>,
    heads: Vec<Head>,
    events: Vec<Head>,
    keys: Arc<KeepAttributes>,
}

/// Where one span's fields are in the bytes.
#[derive(Debug, Clone, Copy)]
struct Head {
    span_id: SpanId,
    parent: Option<SpanId>,
    start: u64,
    end: u64,
    name: (usize, usize),
    service: Option<(usize, usize)>,
    scope: u32,
    attrs: (usize, usize),
}

/// One span of a [`Spans`].
#[derive(Debug, Clone, Copy)]
pub struct SpanRef<'a> {
    pub span_id: SpanId,
    /// `None` for a root span.
    pub parent_span_id: Option<SpanId>,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
    /// Read (and its UTF-8 checked again) only when asked for: most readers
    /// look at a span's attributes only.
    name: &'a [u8],
    service: Option<&'a [u8]>,
    scope: u32,
    attrs: &'a [u8],
    keys: &'a KeepAttributes,
}

/// An attribute value, borrowed from its record.
#[derive(Debug, Clone, Copy)]
pub enum AttrRef<'a> {
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(&'a [u8]),
    Array(Nested<'a>),
    KvList(Nested<'a>),
    Empty,
}

/// An attribute key as the records of a [`Spans`] name it ([`Spans::key`]):
/// resolved once for all of a trace's spans, not hashed again for every
/// span read. (The service's traces share one table, fixed at start-up;
/// spans built in tests have their own.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key(u64);

impl Key {
    /// A small number (keys are numbered from 0), for a table by key.
    pub fn index(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }

    /// A flattened message key, kept by name (it matches no key of a table).
    pub fn is_named(self) -> bool {
        self.0 == u64::MAX
    }
}

/// An attribute's value where it lies in its record, not yet read.
#[derive(Debug, Clone, Copy)]
pub struct Unread<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Unread<'a> {
    /// The value (a string's UTF-8 checked again here, where it is used).
    pub fn read(self) -> Option<AttrRef<'a>> {
        Reader {
            buf: self.buf,
            pos: self.pos,
        }
        .value_ref()
        .ok()
    }
}

/// An array's or key-value list's items, still encoded.
#[derive(Debug, Clone, Copy)]
pub struct Nested<'a> {
    count: u64,
    bytes: &'a [u8],
}

impl Spans {
    /// Checks a trace's records (every length, tag, key id and string) and
    /// indexes them.
    pub fn parse(
        trace_id: TraceId,
        bytes: Vec<u8>,
        keys: Arc<KeepAttributes>,
    ) -> Result<Spans, Corrupt> {
        let (mut heads, mut events) = (Vec::new(), Vec::new());
        let mut r = Reader::new(&bytes);
        while r.pos < bytes.len() {
            let span_id = SpanId(r.array()?);
            let (parent, event) = match r.byte()? {
                0 => (None, false),
                1 => (Some(SpanId(r.array()?)), false),
                2 => (Some(SpanId(r.array()?)), true),
                _ => return Err(r.corrupt()),
            };
            let start = r.varint()?;
            let end = r.varint()?;
            let name = r.str_at()?;
            let service = match r.byte()? {
                0 => None,
                1 => Some(r.str_at()?),
                _ => return Err(r.corrupt()),
            };
            let scope = u32::try_from(r.varint()?).map_err(|_| r.corrupt())?;
            if scope != 0 && keys.scope_name(scope).is_none() {
                return Err(r.corrupt());
            }
            let count = r.varint()?;
            let from = r.pos;
            for _ in 0..count {
                match r.key()? {
                    KeyAt::Id(id) if keys.name(id).is_none() => return Err(r.corrupt()),
                    KeyAt::Id(_) => {}
                    KeyAt::Named(..) => {}
                }
                r.skip_value(0, true)?;
            }
            let head = Head {
                span_id,
                parent,
                start,
                end,
                name,
                service,
                scope,
                attrs: (from, r.pos),
            };
            if event {
                events.push(head);
            } else {
                heads.push(head);
            }
        }
        Ok(Spans {
            trace_id,
            bytes,
            heads,
            events,
            keys,
        })
    }

    /// Spans built in code (the tests), every attribute kept, under the
    /// first span's trace ID.
    pub fn from_spans(spans: &[Span]) -> Spans {
        let keep = Arc::new(KeepAttributes::only(
            spans
                .iter()
                .flat_map(|s| s.attributes.iter().map(|(k, _)| k.to_string())),
        ));
        let trace_id = spans.first().map_or(TraceId([0; 16]), |s| s.trace_id);
        let batch = super::Records::from_spans(spans, &keep);
        // Written just above by the same module: it reads back.
        Spans::parse(trace_id, batch.bytes, keep).unwrap_or_else(|_| Spans {
            trace_id,
            bytes: Vec::new(),
            heads: Vec::new(),
            events: Vec::new(),
            keys: Arc::new(KeepAttributes::default()),
        })
    }

    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// `name` as these spans' records name it; `None` when no span can
    /// carry it (the service does not keep that attribute).
    pub fn key(&self, name: &str) -> Option<Key> {
        self.keys.id(name).map(|id| Key(u64::from(id)))
    }

    pub fn len(&self) -> usize {
        self.heads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// How many events the spans have.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = SpanRef<'_>> + Clone {
        self.heads.iter().map(|h| self.at(h))
    }

    /// The events (log records) of the trace's spans, in the order they
    /// arrived: each read as a span whose parent is the span it belongs to.
    pub fn events(&self) -> impl Iterator<Item = SpanRef<'_>> + Clone {
        self.events.iter().map(|h| self.at(h))
    }

    fn at(&self, h: &Head) -> SpanRef<'_> {
        let bytes = |(from, to): (usize, usize)| self.bytes.get(from..to).unwrap_or_default();
        SpanRef {
            span_id: h.span_id,
            parent_span_id: h.parent,
            start_time_unix_nano: h.start,
            end_time_unix_nano: h.end,
            name: bytes(h.name),
            service: h.service.map(bytes),
            scope: h.scope,
            attrs: self.bytes.get(h.attrs.0..h.attrs.1).unwrap_or_default(),
            keys: &self.keys,
        }
    }

    /// Heap bytes held, for the judges' accounting.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + (self.heads.capacity() + self.events.capacity()) * std::mem::size_of::<Head>()
    }

    /// The spans as owned [`Span`]s (for the tests' comparisons).
    pub fn to_spans(&self) -> Vec<Span> {
        self.iter().map(|s| s.to_span(self.trace_id)).collect()
    }
}

impl<'a> SpanRef<'a> {
    pub fn is_root(&self) -> bool {
        self.parent_span_id.is_none()
    }

    pub fn name(&self) -> &'a str {
        // Checked by `Spans::parse`: never the empty fallback.
        std::str::from_utf8(self.name).unwrap_or_default()
    }

    /// The resource's `service.name`.
    pub fn service_name(&self) -> Option<&'a str> {
        self.service
            .map(|s| std::str::from_utf8(s).unwrap_or_default())
    }

    /// The instrumentation scope, as the pattern it was recognised by
    /// (`None`: not one extraction recognises).
    pub fn scope(&self) -> Option<&'a str> {
        self.keys.scope_name(self.scope)
    }

    /// The attribute `key` (the last one if repeated, as a Python dict built
    /// from the list would keep). Compares key ids and steps over the other
    /// values unread: only the value returned is looked at.
    pub fn attr(&self, key: &str) -> Option<AttrRef<'a>> {
        self.get(Key(u64::from(self.keys.id(key)?)))
    }

    /// [`attr`](Self::attr) by a key resolved with this span's
    /// [`Spans::key`].
    pub fn get(&self, key: Key) -> Option<AttrRef<'a>> {
        self.keyed().filter(|(k, _)| *k == key).last()?.1.read()
    }

    /// Each kept attribute's key and value, unread, in wire order: a reader
    /// of several keys takes them in one pass.
    pub fn keyed(&self) -> impl Iterator<Item = (Key, Unread<'a>)> + use<'a> {
        let mut r = Reader::new(self.attrs);
        std::iter::from_fn(move || {
            if r.pos >= r.buf.len() {
                return None;
            }
            // A message key by name matches no key of a table.
            let key = match r.key().ok()? {
                KeyAt::Id(id) => Key(id),
                KeyAt::Named(..) => Key(u64::MAX),
            };
            let value = Unread {
                buf: r.buf,
                pos: r.pos,
            };
            r.skip_value(0, false).ok()?;
            Some((key, value))
        })
    }

    pub fn has_attributes(&self) -> bool {
        !self.attrs.is_empty()
    }

    /// The kept attributes, in wire order.
    pub fn attributes(&self) -> impl Iterator<Item = (&'a str, AttrRef<'a>)> + use<'a> {
        let mut r = Reader::new(self.attrs);
        let keys = self.keys;
        std::iter::from_fn(move || {
            if r.pos >= r.buf.len() {
                return None;
            }
            let key = match r.key().ok()? {
                KeyAt::Id(id) => keys.name(id)?,
                KeyAt::Named(from, to) => std::str::from_utf8(r.buf.get(from..to)?).ok()?,
            };
            Some((key, r.value_ref().ok()?))
        })
    }

    /// The flattened model message attributes kept by name, in wire order.
    pub fn messages(&self) -> impl Iterator<Item = (&'a str, AttrRef<'a>)> + use<'a> {
        let mut r = Reader::new(self.attrs);
        std::iter::from_fn(move || {
            loop {
                if r.pos >= r.buf.len() {
                    return None;
                }
                match r.key().ok()? {
                    KeyAt::Id(_) => r.skip_value(0, false).ok()?,
                    KeyAt::Named(from, to) => {
                        let key = std::str::from_utf8(r.buf.get(from..to)?).ok()?;
                        return Some((key, r.value_ref().ok()?));
                    }
                }
            }
        })
    }

    pub fn to_span(&self, trace_id: TraceId) -> Span {
        Span {
            trace_id,
            span_id: self.span_id,
            parent_span_id: self.parent_span_id,
            name: self.name().to_owned(),
            start_time_unix_nano: self.start_time_unix_nano,
            end_time_unix_nano: self.end_time_unix_nano,
            attributes: self
                .attributes()
                .map(|(k, v)| (Arc::from(k), v.to_value()))
                .collect(),
            service_name: self.service_name().map(Arc::from),
            scope_name: self.scope().map(Arc::from),
        }
    }
}

impl<'a> AttrRef<'a> {
    pub fn to_value(&self) -> AttrValue {
        match *self {
            AttrRef::Str(s) => AttrValue::Str(s.to_owned()),
            AttrRef::Bool(b) => AttrValue::Bool(b),
            AttrRef::Int(i) => AttrValue::Int(i),
            AttrRef::Double(d) => AttrValue::Double(d),
            AttrRef::Bytes(b) => AttrValue::Bytes(b.to_vec()),
            AttrRef::Array(n) => AttrValue::Array(n.values().map(|v| v.to_value()).collect()),
            AttrRef::KvList(n) => AttrValue::KvList(
                n.entries()
                    .map(|(k, v)| (k.to_owned(), v.to_value()))
                    .collect(),
            ),
            AttrRef::Empty => AttrValue::Empty,
        }
    }

    /// The value as the Python OpenTelemetry SDK hands it to the reference
    /// evaluators (see [`AttrValue::to_py`]).
    pub fn to_py(&self) -> Value {
        match *self {
            AttrRef::Str(s) => Value::Str(s.to_owned()),
            other => other.to_value().to_py(),
        }
    }

    /// Python truthiness of the value the SDK would hold.
    pub fn truthy(&self) -> bool {
        match *self {
            AttrRef::Str(s) => !s.is_empty(),
            AttrRef::Bool(b) => b,
            AttrRef::Int(i) => i != 0,
            AttrRef::Double(d) => d != 0.0,
            AttrRef::Bytes(b) => !b.is_empty(),
            AttrRef::Array(n) | AttrRef::KvList(n) => n.count != 0,
            AttrRef::Empty => false,
        }
    }

    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            AttrRef::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python `str()` of the value.
    pub fn py_str(&self) -> String {
        match *self {
            AttrRef::Str(s) => s.to_owned(),
            other => other.to_value().py_str(),
        }
    }
}

impl<'a> Nested<'a> {
    fn values(&self) -> impl Iterator<Item = AttrRef<'a>> + use<'a> {
        let mut r = Reader::new(self.bytes);
        (0..self.count).map_while(move |_| r.value_ref().ok())
    }

    fn entries(&self) -> impl Iterator<Item = (&'a str, AttrRef<'a>)> + use<'a> {
        let mut r = Reader::new(self.bytes);
        (0..self.count).map_while(move |_| {
            let (from, to) = r.str_at().ok()?;
            let key = std::str::from_utf8(r.buf.get(from..to)?).ok()?;
            Some((key, r.value_ref().ok()?))
        })
    }
}

/// The `service.name` in a record's header, read without checking the rest.
pub(super) fn service_of(record: &[u8]) -> Option<&str> {
    let mut r = Reader::new(record);
    r.array::<8>().ok()?;
    if r.byte().ok()? != 0 {
        r.array::<8>().ok()?;
    }
    r.varint().ok()?;
    r.varint().ok()?;
    r.str_at().ok()?;
    if r.byte().ok()? == 0 {
        return None;
    }
    let (from, to) = r.str_at().ok()?;
    std::str::from_utf8(record.get(from..to)?).ok()
}

/// An attribute key as a record holds it.
enum KeyAt {
    Id(u64),
    /// A flattened message key: its bytes' place.
    Named(usize, usize),
}

/// Values nest no deeper than the wire decoder lets them (100 levels).
const MAX_DEPTH: u32 = 128;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

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

    fn slice(&mut self) -> Result<&'a [u8], Corrupt> {
        let len = usize::try_from(self.varint()?).map_err(|_| self.corrupt())?;
        let end = self.pos.checked_add(len).ok_or(self.corrupt())?;
        let s = self.buf.get(self.pos..end).ok_or(self.corrupt())?;
        self.pos = end;
        Ok(s)
    }

    /// An attribute's key: a table id, or a name's place (checked UTF-8).
    fn key(&mut self) -> Result<KeyAt, Corrupt> {
        match self.varint()? {
            1 => {
                let (from, to) = self.str_at()?;
                Ok(KeyAt::Named(from, to))
            }
            v if v & 1 == 0 => Ok(KeyAt::Id(v >> 1)),
            _ => Err(self.corrupt()),
        }
    }

    /// A string's place, checked UTF-8.
    fn str_at(&mut self) -> Result<(usize, usize), Corrupt> {
        let at = self.corrupt();
        let s = self.slice()?;
        std::str::from_utf8(s).map_err(|_| at)?;
        Ok((self.pos - s.len(), self.pos))
    }

    /// Steps over one value, checking its strings' UTF-8 if `check`.
    fn skip_value(&mut self, depth: u32, check: bool) -> Result<(), Corrupt> {
        if depth > MAX_DEPTH {
            return Err(self.corrupt());
        }
        match self.byte()? {
            STR if check => {
                self.str_at()?;
            }
            STR => {
                self.slice()?;
            }
            BYTES => {
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
                    self.skip_value(depth + 1, check)?;
                }
            }
            KVLIST => {
                for _ in 0..self.varint()? {
                    if check {
                        self.str_at()?;
                    } else {
                        self.slice()?;
                    }
                    self.skip_value(depth + 1, check)?;
                }
            }
            EMPTY => {}
            _ => return Err(self.corrupt()),
        }
        Ok(())
    }

    /// One value, borrowed (its record was checked by [`Spans::parse`]).
    fn value_ref(&mut self) -> Result<AttrRef<'a>, Corrupt> {
        let tag = self.byte()?;
        Ok(match tag {
            STR => {
                let at = self.corrupt();
                AttrRef::Str(std::str::from_utf8(self.slice()?).map_err(|_| at)?)
            }
            BOOL => AttrRef::Bool(self.byte()? != 0),
            INT => AttrRef::Int(i64::from_le_bytes(self.array()?)),
            DOUBLE => AttrRef::Double(f64::from_bits(u64::from_le_bytes(self.array()?))),
            BYTES => AttrRef::Bytes(self.slice()?),
            ARRAY | KVLIST => {
                let count = self.varint()?;
                let from = self.pos;
                for _ in 0..count {
                    if tag == KVLIST {
                        self.slice()?;
                    }
                    self.skip_value(1, false)?;
                }
                let nested = Nested {
                    count,
                    bytes: &self.buf[from..self.pos],
                };
                if tag == ARRAY {
                    AttrRef::Array(nested)
                } else {
                    AttrRef::KvList(nested)
                }
            }
            EMPTY => AttrRef::Empty,
            _ => return Err(self.corrupt()),
        })
    }
}
