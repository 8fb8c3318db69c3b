//! A tree as JSON, in the style of `flatc --json`: tables as objects of their present fields
//! (in schema order), enums by name, unions as a `<field>_type` name beside the `<field>`
//! object.

use serde_json::{Map, Value as Json, json};
use sha2::{Digest, Sha256};

use super::schema::{Schema, Type};
use super::value::{Table, Value};

/// `[ubyte]` vectors longer than `bytes_limit` are summarised as `{"size": n, "sha256": ..}`
/// instead of listed byte by byte (`None`: list them all).
pub fn to_json(schema: &Schema, table: &Table, bytes_limit: Option<usize>) -> Json {
    Printer { schema, bytes_limit }.table(table)
}

struct Printer<'s> {
    schema: &'s Schema,
    bytes_limit: Option<usize>,
}

impl Printer<'_> {
    fn table(&self, t: &Table) -> Json {
        let mut obj = Map::new();
        for (f, v) in t.def.fields.iter().zip(&t.fields) {
            let Some(v) = v else { continue };
            if let Value::Union(u) = v {
                obj.insert(format!("{}_type", f.name), json!(u.variant()));
                if let Some(inner) = &u.value {
                    obj.insert(f.name.clone(), self.table(inner));
                }
                continue;
            }
            obj.insert(f.name.clone(), self.value(&f.ty, v));
        }
        Json::Object(obj)
    }

    fn value(&self, ty: &Type, v: &Value) -> Json {
        match (ty, v) {
            (Type::Enum(e), Value::Int(i)) => match self.schema.enums[*e].name_of(*i) {
                Some(name) => json!(name),
                None => json!(i),
            },
            (Type::Vector(elem), Value::Vector(items)) => {
                Json::Array(items.iter().map(|i| self.value(elem, i)).collect())
            }
            (_, Value::Bytes(b)) => match self.bytes_limit {
                Some(limit) if b.len() > limit => json!({"size": b.len(), "sha256": hex::encode(Sha256::digest(b))}),
                _ => Json::Array(b.iter().map(|x| json!(x)).collect()),
            },
            (_, Value::Table(t)) => self.table(t),
            (_, Value::Union(u)) => u.value.as_ref().map_or(Json::Null, |t| self.table(t)),
            (_, Value::Bool(b)) => json!(b),
            (_, Value::Int(i)) => json!(i),
            (_, Value::UInt(u)) => json!(u),
            (_, Value::Float(f)) => json!(f),
            (_, Value::Str(s)) => json!(s),
            (_, Value::Vector(items)) => Json::Array(items.iter().map(|i| self.value(&Type::String, i)).collect()),
        }
    }
}
