//! Metadata values: the fields a file carries beside its tensors (custom keys, file metadata).

use serde_json::{Map, Number, Value as Json};

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
}

impl MetaValue {
    /// The text, when the value is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            MetaValue::Text(s) => Some(s),
            _ => None,
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
            MetaValue::Float(f) => Number::from_f64(*f).map_or(Json::String(f.to_string()), Json::Number),
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
