//! Metadata values: the fields a file carries beside its tensors (custom keys, file metadata).
//! Most formats store untyped values (JSON and CBOR numbers, text); GGUF keeps the width of
//! every number and the element type of every array, which [`Number`] and [`TypedArray`] keep.

use serde_json::{Map, Value as Json};

use super::typed::{Number, TypedArray, float_json};

/// A metadata value as stored, rich enough for CBOR and JSON.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MetaValue {
    /// JSON `null`, CBOR `null`.
    Null,
    /// CBOR `undefined`.
    Undefined,
    /// A boolean.
    Bool(bool),
    /// Integers within CBOR's range: -2^64 ..= 2^64-1.
    Int(i128),
    /// A floating-point number.
    Float(f64),
    /// UTF-8 text.
    Text(String),
    /// A byte string.
    Bytes(Vec<u8>),
    /// A list of values, in file order.
    Array(Vec<MetaValue>),
    /// Key/value pairs in file order; keys need not be text.
    Map(Vec<(MetaValue, MetaValue)>),
    /// A CBOR tag and the value it marks.
    Tagged(u64, Box<MetaValue>),
    /// A CBOR simple value other than false/true/null/undefined.
    Simple(u8),
    /// A number of a stated width (GGUF's `u8`...`f64` values).
    Number(Number),
    /// An array whose elements share one stated type, kept even when it is empty (GGUF arrays).
    TypedArray(TypedArray),
}

impl MetaValue {
    /// The text, when the value is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            MetaValue::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The value in the untyped variants, for formats that keep no widths: numbers of a stated
    /// width as `Int` or `Float`, typed arrays as `Array` (recursively); others as they are.
    pub fn untyped(&self) -> MetaValue {
        match self {
            MetaValue::Number(n) => match n.as_i128() {
                Some(i) => MetaValue::Int(i),
                None => MetaValue::Float(n.as_f64()),
            },
            MetaValue::TypedArray(a) => {
                MetaValue::Array((0..a.len()).filter_map(|i| a.get(i)).map(|v| v.untyped()).collect())
            }
            other => other.clone(),
        }
    }

    /// A JSON value as metadata: integers as `Int`, other numbers as `Float`, objects as maps
    /// with text keys.
    pub fn from_json(v: &Json) -> MetaValue {
        match v {
            Json::Null => MetaValue::Null,
            Json::Bool(b) => MetaValue::Bool(*b),
            Json::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => MetaValue::Int(i128::from(i)),
                (_, Some(u)) => MetaValue::Int(i128::from(u)),
                _ => MetaValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => MetaValue::Text(s.clone()),
            Json::Array(a) => MetaValue::Array(a.iter().map(MetaValue::from_json).collect()),
            Json::Object(o) => {
                MetaValue::Map(o.iter().map(|(k, v)| (MetaValue::Text(k.clone()), MetaValue::from_json(v))).collect())
            }
        }
    }

    /// A JSON rendering for display: bytes as `{"bytes": "<hex>"}`, tags as
    /// `{"tag": n, "value": v}`, non-text map keys rendered as their JSON text.
    pub fn to_json(&self) -> Json {
        match self {
            MetaValue::Null | MetaValue::Undefined => Json::Null,
            MetaValue::Bool(b) => Json::Bool(*b),
            MetaValue::Int(i) => {
                if let Ok(v) = i64::try_from(*i) {
                    Json::from(v)
                } else if let Ok(v) = u64::try_from(*i) {
                    Json::from(v)
                } else {
                    Json::String(i.to_string())
                }
            }
            MetaValue::Float(f) => float_json(*f),
            MetaValue::Text(s) => Json::String(s.clone()),
            MetaValue::Bytes(b) => {
                let mut m = Map::new();
                m.insert("bytes".into(), Json::String(hex::encode(b)));
                Json::Object(m)
            }
            MetaValue::Array(items) => Json::Array(items.iter().map(MetaValue::to_json).collect()),
            MetaValue::Map(pairs) => {
                let mut m = Map::new();
                for (k, v) in pairs {
                    let key = match k {
                        MetaValue::Text(s) => s.clone(),
                        other => other.to_json().to_string(),
                    };
                    m.insert(key, v.to_json());
                }
                Json::Object(m)
            }
            MetaValue::Tagged(tag, v) => {
                let mut m = Map::new();
                m.insert("tag".into(), Json::from(*tag));
                m.insert("value".into(), v.to_json());
                Json::Object(m)
            }
            MetaValue::Simple(s) => {
                let mut m = Map::new();
                m.insert("simple".into(), Json::from(*s));
                Json::Object(m)
            }
            MetaValue::Number(n) => n.to_json(),
            MetaValue::TypedArray(a) => a.to_json(),
        }
    }
}

impl From<&str> for MetaValue {
    fn from(s: &str) -> Self {
        MetaValue::Text(s.to_string())
    }
}

impl From<String> for MetaValue {
    fn from(s: String) -> Self {
        MetaValue::Text(s)
    }
}
