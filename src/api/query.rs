//! Query strings read into the handlers' query structs: `form_urlencoded`
//! splits and decodes the pairs, and serde fills the struct from them as a
//! map, each value parsed as the field's type asks (`wait_ms=5` into a
//! `u64`) and its error naming the key. This is what axum's `Query` does
//! through serde_urlencoded, a crate the service needs nowhere else.

use std::borrow::Cow;

use serde::de::value::Error;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};

/// `query` (without the `?`) as a `T`.
pub(super) fn from_query<T: de::DeserializeOwned>(query: &str) -> Result<T, Error> {
    T::deserialize(Pairs {
        pairs: form_urlencoded::parse(query.as_bytes()),
        value: None,
    })
}

/// The query's pairs as a map, whose value errors name their key.
struct Pairs<'a> {
    pairs: form_urlencoded::Parse<'a>,
    /// The value of the key just read, and the key.
    value: Option<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'de, 'a> Deserializer<'de> for Pairs<'a> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        struct enum identifier ignored_any
    }
}

impl<'de, 'a> MapAccess<'de> for Pairs<'a> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.pairs.next() else {
            return Ok(None);
        };
        self.value = Some((key.clone(), value));
        seed.deserialize(Part(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("a value without its key"));
        };
        seed.deserialize(Part(value))
            .map_err(|e| de::Error::custom(format_args!("{key}: {e}")))
    }
}

/// One decoded key or value: a string that becomes a number or a bool when
/// its field asks for one.
struct Part<'a>(Cow<'a, str>);

impl<'de> IntoDeserializer<'de, Error> for Part<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// `deserialize_<type>` for a type parsed from the text with `FromStr`.
macro_rules! parsed {
    ($($method:ident $visit:ident $ty:ty,)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.parse::<$ty>() {
                Ok(v) => visitor.$visit(v),
                Err(e) => Err(de::Error::custom(format_args!("{:?}: {e}", self.0))),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for Part<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(self.0.into_owned())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    parsed! {
        deserialize_bool visit_bool bool,
        deserialize_u8 visit_u8 u8,
        deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32,
        deserialize_u64 visit_u64 u64,
        deserialize_i8 visit_i8 i8,
        deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32,
        deserialize_i64 visit_i64 i64,
        deserialize_f32 visit_f32 f32,
        deserialize_f64 visit_f64 f64,
    }

    serde::forward_to_deserialize_any! {
        u128 i128 char str string bytes byte_buf unit unit_struct newtype_struct seq
        tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Q {
        wait_ms: Option<u64>,
        max_score: Option<f64>,
        status: Option<String>,
    }

    #[test]
    fn values_are_read_as_their_fields_types() {
        let q: Q = from_query("wait_ms=250&max_score=0.5&status=a%20b&other=x").unwrap();
        assert_eq!(
            q,
            Q {
                wait_ms: Some(250),
                max_score: Some(0.5),
                status: Some("a b".into())
            }
        );
        let q: Q = from_query("").unwrap();
        assert_eq!(q.wait_ms, None);
        let q: Q = from_query("status=x+y").unwrap();
        assert_eq!(q.status.as_deref(), Some("x y"));
    }

    #[test]
    fn a_bad_value_or_a_repeated_key_is_refused_naming_it() {
        let e = from_query::<Q>("wait_ms=-1").unwrap_err().to_string();
        assert_eq!(e, "wait_ms: \"-1\": invalid digit found in string");
        let e = from_query::<Q>("max_score=abc").unwrap_err().to_string();
        assert_eq!(e, "max_score: \"abc\": invalid float literal");
        let e = from_query::<Q>("status=a&status=b")
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate field `status`"), "{e}");
    }
}
