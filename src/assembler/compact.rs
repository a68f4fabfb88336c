//! The compact form of an evaluated trace kept for late spans.
//!
//! After its first evaluation a trace stays buffered for the late-span
//! window (60 s by default), which at a steady rate is most of what the
//! assembler holds. Its spans are needed again only if a late span arrives,
//! so they are kept as one exactly-sized byte buffer instead of `Span`
//! structs with an allocation per name and value: about the spans' content
//! and 30 bytes a span, below their OTLP encoding. Decoding back is rare
//! (a late span) and cheap.
//!
//! The trace ID is not stored (the buffer is keyed by it); attribute keys
//! and service names go into small per-trace tables so the interned `Arc`s
//! come back as they were.

use std::sync::Arc;

use crate::span::{AttrValue, Span, SpanId, TraceId};

/// Spans of one trace, encoded.
#[derive(Debug, Default)]
pub struct Compact {
    bytes: Box<[u8]>,
    keys: Box<[Arc<str>]>,
    services: Box<[Arc<str>]>,
    /// Sorted, for de-duplicating late spans without decoding.
    ids: Box<[SpanId]>,
}

/// The buffer did not decode: a bug in this module, never input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("corrupt compact trace buffer at byte {0}")]
pub struct Corrupt(usize);

impl Compact {
    pub fn encode(spans: &[Span]) -> Compact {
        let mut keys: Vec<Arc<str>> = Vec::new();
        let mut services: Vec<Arc<str>> = Vec::new();
        // Exactly sized up front: no regrowth, no copy when boxing.
        let mut out = Vec::with_capacity(spans.iter().map(encoded_size).sum());
        for s in spans {
            out.extend_from_slice(&s.span_id.0);
            match s.parent_span_id {
                Some(p) => {
                    out.push(1);
                    out.extend_from_slice(&p.0);
                }
                None => out.push(0),
            }
            varint(&mut out, s.start_time_unix_nano);
            varint(&mut out, s.end_time_unix_nano);
            bytes(&mut out, s.name.as_bytes());
            let service = s
                .service_name
                .as_ref()
                .map_or(0, |n| 1 + index_of(&mut services, n));
            varint(&mut out, service as u64);
            varint(&mut out, s.attributes.len() as u64);
            for (k, v) in &s.attributes {
                varint(&mut out, index_of(&mut keys, k) as u64);
                value(&mut out, v);
            }
        }
        let mut ids: Vec<SpanId> = spans.iter().map(|s| s.span_id).collect();
        ids.sort_unstable();
        Compact {
            bytes: out.into_boxed_slice(),
            keys: keys.into_boxed_slice(),
            services: services.into_boxed_slice(),
            ids: ids.into_boxed_slice(),
        }
    }

    pub fn span_count(&self) -> usize {
        self.ids.len()
    }

    pub fn contains(&self, id: &SpanId) -> bool {
        self.ids.binary_search(id).is_ok()
    }

    /// Heap bytes held, for the buffer accounting.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.len()
            + std::mem::size_of_val(&*self.keys)
            + std::mem::size_of_val(&*self.services)
            + std::mem::size_of_val(&*self.ids)
    }

    pub fn decode(&self, trace_id: TraceId) -> Result<Vec<Span>, Corrupt> {
        let mut r = Reader {
            buf: &self.bytes,
            pos: 0,
        };
        let mut spans = Vec::with_capacity(self.ids.len() + 1);
        while r.pos < r.buf.len() {
            let span_id = SpanId(r.array()?);
            let parent_span_id = match r.byte()? {
                0 => None,
                _ => Some(SpanId(r.array()?)),
            };
            let start_time_unix_nano = r.varint()?;
            let end_time_unix_nano = r.varint()?;
            let name = r.str()?.to_owned();
            let service_name = match r.varint()? {
                0 => None,
                i => Some(r.table(&self.services, i - 1)?),
            };
            let n = r.varint()?;
            let mut attributes = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1024));
            for _ in 0..n {
                let i = r.varint()?;
                let key = r.table(&self.keys, i)?;
                attributes.push((key, r.value(0)?));
            }
            spans.push(Span {
                trace_id,
                span_id,
                parent_span_id,
                name,
                start_time_unix_nano,
                end_time_unix_nano,
                attributes,
                service_name,
            });
        }
        Ok(spans)
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
        usize::try_from(i)
            .ok()
            .and_then(|i| table.get(i))
            .cloned()
            .ok_or(self.corrupt())
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
