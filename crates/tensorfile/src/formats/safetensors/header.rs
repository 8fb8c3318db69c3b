//! The JSON header, parsed in file order with every key kept (duplicates included, so the
//! reader can refuse them rather than silently keep the last). Tensor entries are read
//! straight into their list of fields (no map is built for them: with tens of thousands of
//! tensors, building one map per entry was most of the time spent opening a file).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::known_dtype_name;

/// A top-level value: a tensor entry's fields in file order, or (for `__metadata__`, and for
/// an entry that is not an object) the value itself.
pub enum HeaderValue {
    Fields(Vec<(Key, Field)>),
    Other(Value),
}

/// A tensor entry's key: the three every entry has are told apart without copying them.
pub enum Key {
    Dtype,
    Shape,
    DataOffsets,
    Other(String),
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "dtype" => Key::Dtype,
                    "shape" => Key::Shape,
                    "data_offsets" => Key::DataOffsets,
                    other => Key::Other(other.to_string()),
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// One field of a tensor entry. The three a tensor needs are read into their types as they
/// are parsed (a JSON value tree per field costs allocations by the dozen); a field of the
/// wrong type is kept as `Other`, for the reader to refuse with the rule it breaks.
pub enum Field {
    /// Text that names a safetensors dtype (no copy).
    DType(&'static str),
    Text(String),
    /// Two unsigned integers (data_offsets, or a shape of rank 2), kept without a vector.
    Pair(u64, u64),
    /// An array of unsigned integers of another length (shape).
    Numbers(Vec<u64>),
    Other(Value),
}

impl Field {
    /// The field as JSON (for fields beyond the three, kept as they are).
    pub fn into_json(self) -> Value {
        match self {
            Field::DType(s) => Value::String(s.to_string()),
            Field::Text(s) => Value::String(s),
            Field::Pair(a, b) => Value::Array(vec![Value::from(a), Value::from(b)]),
            Field::Numbers(n) => Value::Array(n.into_iter().map(Value::from).collect()),
            Field::Other(v) => v,
        }
    }
}

/// The header's top-level keys and values, in file order.
pub struct Header(pub Vec<(String, HeaderValue)>);

impl<'de> de::Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
                let mut pairs = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = if key == "__metadata__" {
                        HeaderValue::Other(map.next_value::<Value>()?)
                    } else {
                        map.next_value_seed(EntrySeed)?
                    };
                    pairs.push((key, value));
                }
                Ok(Header(pairs))
            }
        }
        d.deserialize_map(V)
    }
}

/// A tensor entry: its fields when it is an object; anything else is kept as a marker the
/// reader refuses ("not an object").
struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = HeaderValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<HeaderValue, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

/// What an entry that is not an object becomes (its content does not matter).
fn not_object<E>() -> Result<HeaderValue, E> {
    Ok(HeaderValue::Other(Value::Null))
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = HeaderValue;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tensor entry")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HeaderValue, A::Error> {
        let mut fields = Vec::with_capacity(3);
        while let Some(key) = map.next_key::<Key>()? {
            let value = match key {
                Key::Other(_) => Field::Other(map.next_value::<Value>()?),
                _ => map.next_value_seed(FieldSeed)?,
            };
            fields.push((key, value));
        }
        Ok(HeaderValue::Fields(fields))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HeaderValue, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        not_object()
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<HeaderValue, E> {
        not_object()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<HeaderValue, E> {
        not_object()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<HeaderValue, E> {
        not_object()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<HeaderValue, E> {
        not_object()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<HeaderValue, E> {
        not_object()
    }
    fn visit_unit<E: de::Error>(self) -> Result<HeaderValue, E> {
        not_object()
    }
}

/// A field read into its type when it has the expected one.
struct FieldSeed;

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Field;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
        Ok(known_dtype_name(v).map_or_else(|| Field::Text(v.to_string()), Field::DType))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Field, E> {
        Ok(Field::Text(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field, A::Error> {
        // The first two numbers on the stack: most arrays are data_offsets.
        let mut first = [0u64; 2];
        let mut count = 0usize;
        let mut numbers = Vec::new();
        let mut others = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            match v.as_u64() {
                Some(n) if others.is_empty() && count < 2 => {
                    first[count] = n;
                    count += 1;
                }
                Some(n) if others.is_empty() => {
                    if numbers.is_empty() {
                        numbers.extend_from_slice(&first);
                    }
                    numbers.push(n);
                }
                _ => others.push(v),
            }
        }
        if numbers.is_empty() {
            numbers.extend_from_slice(&first[..count]);
        }
        if others.is_empty() {
            return Ok(match numbers[..] {
                [a, b] => Field::Pair(a, b),
                _ => Field::Numbers(numbers),
            });
        }
        let mut all: Vec<Value> = numbers.into_iter().map(Value::from).collect();
        all.extend(others);
        Ok(Field::Other(Value::Array(all)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Field::Other(Value::Object(Default::default())))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Field, E> {
        Ok(Field::Other(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Field, E> {
        Ok(Field::Other(Value::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Field, E> {
        Ok(Field::Other(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Field, E> {
        Ok(Field::Other(Value::from(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Field, E> {
        Ok(Field::Other(Value::Null))
    }
}
