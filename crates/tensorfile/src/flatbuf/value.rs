//! The decoded tree: tables with their fields, in schema order.

use super::schema::{Schema, TableDef, UnionDef};
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    /// Signed integers and enum values.
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    /// A `[ubyte]` vector, borrowed from the source where possible.
    Bytes(Bytes),
    Vector(Vec<Value>),
    Table(Table),
    Union(Union),
}

/// A table: its definition and its fields (in the definition's order; `None` when absent,
/// which means the field's default).
#[derive(Debug, Clone)]
pub struct Table {
    pub def: &'static TableDef,
    pub fields: Vec<Option<Value>>,
}

/// A union value: the variant number (1-based, 0 = NONE) and its table.
#[derive(Debug, Clone)]
pub struct Union {
    pub def: &'static UnionDef,
    pub tag: u8,
    pub value: Option<Box<Table>>,
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        std::ptr::eq(self.def, other.def) && self.fields == other.fields
    }
}

impl PartialEq for Union {
    fn eq(&self, other: &Union) -> bool {
        std::ptr::eq(self.def, other.def) && self.tag == other.tag && self.value == other.value
    }
}

impl Union {
    /// The variant's name (`"Tensor"`, `"KernelCall"`...), or `"NONE"`.
    pub fn variant(&self) -> &'static str {
        match usize::from(self.tag).checked_sub(1).and_then(|i| self.def.variants.get(i)) {
            Some((name, _)) => name,
            None => "NONE",
        }
    }
}

fn missing(table: &str, field: &str) -> Error {
    Error::invalid(Rule::MissingField, format!("{table}.{field} is missing"))
}

fn wrong(table: &str, field: &str, want: &str) -> Error {
    Error::invalid(Rule::BadField, format!("{table}.{field} is not {want}"))
}

impl Table {
    /// An empty table of this definition (every field absent).
    pub fn new(def: &'static TableDef) -> Table {
        Table { def, fields: vec![None; def.fields.len()] }
    }

    /// A field by name; `None` when absent. Panics on a name the schema lacks (a bug).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields[self.index(name)].as_ref()
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let i = self.index(name);
        self.fields[i].as_mut()
    }

    pub fn set(&mut self, name: &str, value: Option<Value>) {
        let i = self.index(name);
        self.fields[i] = value;
    }

    fn index(&self, name: &str) -> usize {
        self.def.field_index(name).unwrap_or_else(|| panic!("schema table {} has no field {name}", self.def.name))
    }

    fn default_of(&self, name: &str) -> i64 {
        self.def.fields[self.index(name)].default
    }

    /// An integer field (any width, enums included), its default when absent.
    pub fn int(&self, name: &str) -> Result<i64> {
        match self.get(name) {
            None => Ok(self.default_of(name)),
            Some(Value::Int(v)) => Ok(*v),
            Some(Value::UInt(v)) => i64::try_from(*v).map_err(|_| wrong(&self.def.name, name, "within i64")),
            Some(Value::Bool(b)) => Ok(i64::from(*b)),
            Some(_) => Err(wrong(&self.def.name, name, "an integer")),
        }
    }

    /// An unsigned integer field, its default when absent; negative values are errors.
    pub fn uint(&self, name: &str) -> Result<u64> {
        match self.get(name) {
            Some(Value::UInt(v)) => Ok(*v),
            _ => {
                let v = self.int(name)?;
                u64::try_from(v).map_err(|_| wrong(&self.def.name, name, "non-negative"))
            }
        }
    }

    pub fn bool(&self, name: &str) -> Result<bool> {
        Ok(self.int(name)? != 0)
    }

    pub fn float(&self, name: &str) -> Result<f64> {
        match self.get(name) {
            None => Ok(0.0),
            Some(Value::Float(f)) => Ok(*f),
            Some(_) => Err(wrong(&self.def.name, name, "a float")),
        }
    }

    pub fn str(&self, name: &str) -> Result<Option<&str>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s)),
            Some(_) => Err(wrong(&self.def.name, name, "a string")),
        }
    }

    /// A string field that must be present.
    pub fn req_str(&self, name: &str) -> Result<&str> {
        self.str(name)?.ok_or_else(|| missing(&self.def.name, name))
    }

    pub fn table(&self, name: &str) -> Result<Option<&Table>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(wrong(&self.def.name, name, "a table")),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn table_mut(&mut self, name: &str) -> Option<&mut Table> {
        match self.get_mut(name) {
            Some(Value::Table(t)) => Some(t),
            _ => None,
        }
    }

    pub fn union(&self, name: &str) -> Result<Option<&Union>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Union(u)) => Ok(Some(u)),
            Some(_) => Err(wrong(&self.def.name, name, "a union")),
        }
    }

    /// A vector field's items; empty when absent.
    pub fn vector(&self, name: &str) -> Result<&[Value]> {
        match self.get(name) {
            None => Ok(&[]),
            Some(Value::Vector(v)) => Ok(v),
            Some(_) => Err(wrong(&self.def.name, name, "a vector")),
        }
    }

    /// Whether a vector (or any) field is present at all.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn vector_mut(&mut self, name: &str) -> Option<&mut Vec<Value>> {
        match self.get_mut(name) {
            Some(Value::Vector(v)) => Some(v),
            _ => None,
        }
    }

    /// A vector of tables.
    pub fn tables(&self, name: &str) -> Result<Vec<&Table>> {
        self.vector(name)?
            .iter()
            .map(|v| match v {
                Value::Table(t) => Ok(t),
                _ => Err(wrong(&self.def.name, name, "a vector of tables")),
            })
            .collect()
    }

    /// A vector of integers (any width).
    pub fn ints(&self, name: &str) -> Result<Vec<i64>> {
        self.vector(name)?
            .iter()
            .map(|v| match v {
                Value::Int(i) => Ok(*i),
                Value::UInt(u) => i64::try_from(*u).map_err(|_| wrong(&self.def.name, name, "within i64")),
                Value::Bool(b) => Ok(i64::from(*b)),
                _ => Err(wrong(&self.def.name, name, "a vector of integers")),
            })
            .collect()
    }

    /// A `[ubyte]` field; empty when absent.
    pub fn bytes(&self, name: &str) -> Result<Bytes> {
        match self.get(name) {
            None => Ok(Bytes::from_vec(Vec::new())),
            Some(Value::Bytes(b)) => Ok(b.clone()),
            Some(_) => Err(wrong(&self.def.name, name, "bytes")),
        }
    }
}

/// A new table of the schema's table named `name`. Panics on an unknown name (a bug).
pub fn new_table(schema: &'static Schema, name: &str) -> Table {
    let def = schema.tables.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no table {name} in schema"));
    Table::new(def)
}
