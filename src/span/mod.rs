//! What a span is made of: IDs checked at the edge ([`TraceId`], [`SpanId`],
//! so nothing downstream handles raw byte vectors), attribute values with
//! OTLP's types ([`AttrValue`]), and which attributes are kept
//! ([`KeepAttributes`]).
//!
//! The service holds spans as records (`record/`); [`Span`] is the owned
//! form for spans built in code: the load generator, the demo, the tests.

use std::fmt;
use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};

use crate::pyvalue::{Dict, Value};

mod keep;

pub use keep::{EVENT_BODY, Field, KeepAttributes, KeyRef, MessageKey, marks_tool_result};

/// Why an ID from the wire was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{what} must be {want} bytes, got {got}")]
    Length {
        what: &'static str,
        want: usize,
        got: usize,
    },
    #[error("{what} must not be all zeros")]
    Zero { what: &'static str },
    #[error("{what} must be {want} hex characters, got {text:?}")]
    Hex {
        what: &'static str,
        want: usize,
        text: String,
    },
}

macro_rules! id_type {
    ($name:ident, $len:expr, $what:expr) => {
        #[doc = concat!("A valid (right length, not all zero) ", $what, ".")]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub [u8; $len]);

        impl $name {
            pub const LEN: usize = $len;

            /// Checks an ID as it comes off the wire.
            pub fn from_bytes(bytes: &[u8]) -> Result<Self, IdError> {
                let arr: [u8; $len] = bytes.try_into().map_err(|_| IdError::Length {
                    what: $what,
                    want: $len,
                    got: bytes.len(),
                })?;
                if arr == [0u8; $len] {
                    return Err(IdError::Zero { what: $what });
                }
                Ok($name(arr))
            }

            /// Parses lowercase or uppercase hex of exactly the right length.
            pub fn parse_hex(text: &str) -> Result<Self, IdError> {
                let err = || IdError::Hex {
                    what: $what,
                    want: $len * 2,
                    text: text.chars().take(64).collect(),
                };
                if text.len() != $len * 2 {
                    return Err(err());
                }
                let mut out = [0u8; $len];
                const_hex::decode_to_slice(text, &mut out).map_err(|_| err())?;
                Self::from_bytes(&out)
            }

            pub fn to_hex(&self) -> String {
                const_hex::encode(self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }

        /// Serialised as lowercase hex, as in OTLP JSON.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_hex())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.to_hex())
            }
        }
    };
}

id_type!(TraceId, 16, "trace ID");
id_type!(SpanId, 8, "span ID");

/// An attribute value with the types OTLP carries.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(Vec<u8>),
    Array(Vec<AttrValue>),
    KvList(Vec<(String, AttrValue)>),
    /// An `AnyValue` with no value set.
    Empty,
}

impl AttrValue {
    /// The value as the Python OpenTelemetry SDK hands it to the reference
    /// evaluators: arrays are tuples (the SDK freezes sequences), key-value
    /// lists are dicts, an empty value is `None`.
    pub fn to_py(&self) -> Value {
        match self {
            AttrValue::Str(s) => Value::Str(s.clone()),
            AttrValue::Bool(b) => Value::Bool(*b),
            AttrValue::Int(i) => Value::int(*i),
            AttrValue::Double(d) => Value::Float(*d),
            AttrValue::Bytes(b) => Value::Bytes(b.clone()),
            AttrValue::Array(items) => Value::Tuple(items.iter().map(AttrValue::to_py).collect()),
            AttrValue::KvList(kvs) => {
                let mut d = Dict::with_capacity(kvs.len());
                for (k, v) in kvs {
                    d.insert_str(k.clone(), v.to_py());
                }
                Value::Dict(d)
            }
            AttrValue::Empty => Value::None,
        }
    }

    /// Python truthiness of the value the SDK would hold.
    pub fn truthy(&self) -> bool {
        match self {
            AttrValue::Str(s) => !s.is_empty(),
            AttrValue::Bool(b) => *b,
            AttrValue::Int(i) => *i != 0,
            AttrValue::Double(d) => *d != 0.0,
            AttrValue::Bytes(b) => !b.is_empty(),
            AttrValue::Array(a) => !a.is_empty(),
            AttrValue::KvList(kv) => !kv.is_empty(),
            AttrValue::Empty => false,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python `str()` of the value.
    pub fn py_str(&self) -> String {
        match self {
            AttrValue::Str(s) => s.clone(),
            other => other.to_py().py_str(),
        }
    }
}

impl From<&AnyValue> for AttrValue {
    fn from(v: &AnyValue) -> Self {
        match &v.value {
            None => AttrValue::Empty,
            Some(any_value::Value::StringValue(s)) => AttrValue::Str(s.clone()),
            Some(any_value::Value::BoolValue(b)) => AttrValue::Bool(*b),
            Some(any_value::Value::IntValue(i)) => AttrValue::Int(*i),
            Some(any_value::Value::DoubleValue(d)) => AttrValue::Double(*d),
            Some(any_value::Value::BytesValue(b)) => AttrValue::Bytes(b.clone()),
            Some(any_value::Value::ArrayValue(a)) => {
                AttrValue::Array(a.values.iter().map(AttrValue::from).collect())
            }
            Some(any_value::Value::KvlistValue(kv)) => AttrValue::KvList(
                kv.values
                    .iter()
                    .map(|kv| (kv.key.clone(), attr_of(kv)))
                    .collect(),
            ),
            // A string-table index only meaningful in profiles; traces never use it.
            Some(any_value::Value::StringValueStrindex(_)) => AttrValue::Empty,
        }
    }
}

pub(crate) fn attr_of(kv: &KeyValue) -> AttrValue {
    kv.value
        .as_ref()
        .map(AttrValue::from)
        .unwrap_or(AttrValue::Empty)
}

/// One span, owned: how spans are built in code.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// `None` for a root span (empty `parent_span_id` on the wire).
    pub parent_span_id: Option<SpanId>,
    pub name: String,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
    /// Attributes in wire order. A repeated key: the last one wins on lookup.
    pub attributes: Vec<(Arc<str>, AttrValue)>,
    /// The resource's `service.name`, shared by every span of a resource.
    pub service_name: Option<Arc<str>>,
    /// The instrumentation scope's name.
    pub scope_name: Option<Arc<str>>,
}

impl Span {
    pub fn is_root(&self) -> bool {
        self.parent_span_id.is_none()
    }
}

/// A span (or log record) refused at the edge, with the reason reported to
/// the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {index} of scope {scope} of resource {resource}: {reason}")]
pub struct RejectedSpan {
    /// `span` or `log record`.
    pub what: &'static str,
    pub resource: usize,
    pub scope: usize,
    pub index: usize,
    pub reason: IdError,
}

/// A span's trace, span and parent span IDs as they come off the wire
/// (an empty or all-zero parent: a root span, as the Collector's pdata
/// reads it, `SpanID::IsEmpty`; some exporters and converters send zeros
/// for a root), checked.
pub fn checked_ids(
    trace_id: &[u8],
    span_id: &[u8],
    parent_span_id: &[u8],
) -> Result<(TraceId, SpanId, Option<SpanId>), IdError> {
    let trace_id = TraceId::from_bytes(trace_id)?;
    let span_id = SpanId::from_bytes(span_id)?;
    let parent = if parent_span_id.is_empty() || parent_span_id == [0u8; 8] {
        None
    } else {
        Some(parent_id(parent_span_id)?)
    };
    Ok((trace_id, span_id, parent))
}

/// A non-empty `parent_span_id` from the wire, with errors naming it.
fn parent_id(bytes: &[u8]) -> Result<SpanId, IdError> {
    SpanId::from_bytes(bytes).map_err(|e| match e {
        IdError::Length { want, got, .. } => IdError::Length {
            what: "parent span ID",
            want,
            got,
        },
        IdError::Zero { .. } => IdError::Zero {
            what: "parent span ID",
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(TraceId::from_bytes(&[1; 16]).is_ok());
        assert_eq!(
            TraceId::from_bytes(&[1; 15]),
            Err(IdError::Length {
                what: "trace ID",
                want: 16,
                got: 15
            })
        );
        assert_eq!(
            SpanId::from_bytes(&[0; 8]),
            Err(IdError::Zero { what: "span ID" })
        );
        let t = TraceId::parse_hex("0123456789abcdef0123456789ABCDEF").unwrap();
        assert_eq!(t.to_hex(), "0123456789abcdef0123456789abcdef");
        assert!(TraceId::parse_hex("0123").is_err());
        assert!(TraceId::parse_hex("zz23456789abcdef0123456789abcdef").is_err());
        assert!(TraceId::parse_hex("00000000000000000000000000000000").is_err());
    }

    #[test]
    fn an_empty_or_all_zero_parent_is_a_root() {
        let (t, s) = ([1; 16], [2; 8]);
        assert_eq!(checked_ids(&t, &s, &[]).unwrap().2, None);
        assert_eq!(checked_ids(&t, &s, &[0; 8]).unwrap().2, None);
        assert_eq!(
            checked_ids(&t, &s, &[3; 8]).unwrap().2,
            Some(SpanId([3; 8]))
        );
        assert!(
            checked_ids(&t, &s, &[0; 4]).is_err(),
            "a wrong length still is"
        );
    }

    #[test]
    fn attribute_values_render_as_python_sees_them() {
        assert_eq!(AttrValue::Int(5).py_str(), "5");
        assert_eq!(AttrValue::Bool(true).py_str(), "True");
        let arr = AttrValue::Array(vec![AttrValue::Str("x".into()), AttrValue::Str("y".into())]);
        assert_eq!(arr.py_str(), "('x', 'y')");
        assert!(!AttrValue::Str(String::new()).truthy());
        assert!(AttrValue::Str("false".into()).truthy());
        assert!(!AttrValue::Int(0).truthy());
    }
}
