//! The JSON header, parsed in file order with every key kept (duplicates included, so the
//! reader can refuse them rather than silently keep the last).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// The header's top-level keys and values, in file order.
pub struct Header(pub Vec<(String, Value)>);

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
                while let Some(pair) = map.next_entry::<String, Value>()? {
                    pairs.push(pair);
                }
                Ok(Header(pairs))
            }
        }
        d.deserialize_map(V)
    }
}
