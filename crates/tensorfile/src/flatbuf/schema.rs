//! A parser for the subset of the FlatBuffers schema language our schemas use: `enum`,
//! `union`, `table`, `file_identifier`, `root_type`, field defaults and attributes
//! (`force_align`, `deprecated`). `namespace`, `include`, `attribute` and `file_extension`
//! are accepted and ignored; qualified type names resolve by their last component.

use std::collections::HashMap;

/// A scalar wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Scalar {
    pub fn size(self) -> usize {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    fn from_name(name: &str) -> Option<Scalar> {
        Some(match name {
            "bool" => Scalar::Bool,
            "byte" | "int8" => Scalar::I8,
            "ubyte" | "uint8" => Scalar::U8,
            "short" | "int16" => Scalar::I16,
            "ushort" | "uint16" => Scalar::U16,
            "int" | "int32" => Scalar::I32,
            "uint" | "uint32" => Scalar::U32,
            "long" | "int64" => Scalar::I64,
            "ulong" | "uint64" => Scalar::U64,
            "float" | "float32" => Scalar::F32,
            "double" | "float64" => Scalar::F64,
            _ => return None,
        })
    }
}

/// Index of a definition in its [`Schema`] list.
pub type EnumId = usize;
pub type UnionId = usize;
pub type TableId = usize;

#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Scalar(Scalar),
    Enum(EnumId),
    String,
    Table(TableId),
    Union(UnionId),
    Vector(Box<Type>),
}

#[derive(Debug)]
pub struct EnumDef {
    pub name: String,
    pub underlying: Scalar,
    pub values: Vec<(String, i64)>,
}

impl EnumDef {
    pub fn name_of(&self, value: i64) -> Option<&str> {
        self.values.iter().find(|(_, v)| *v == value).map(|(n, _)| n.as_str())
    }
}

#[derive(Debug)]
pub struct UnionDef {
    #[allow(dead_code, reason = "the schema's name for the union: shown by Debug, read by the tests")]
    pub name: String,
    /// Variant `i + 1` is table `variants[i]` (0 is NONE).
    pub variants: Vec<(String, TableId)>,
}

#[derive(Debug)]
pub struct FieldDef {
    pub name: String,
    pub ty: Type,
    /// The vtable slot; a union takes two (its type at `slot`, its value at `slot + 1`).
    pub slot: u16,
    /// Default of a scalar or enum field (integers and floats both stored as f64-exact i64
    /// or f64; schemas here only use integer defaults).
    pub default: i64,
    pub force_align: Option<usize>,
    #[allow(dead_code, reason = "parsed from the schema and shown by Debug; no decoding rule depends on it")]
    pub deprecated: bool,
}

#[derive(Debug)]
pub struct TableDef {
    pub name: String,
    pub fields: Vec<FieldDef>,
}

impl TableDef {
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

#[derive(Debug)]
pub struct Schema {
    pub enums: Vec<EnumDef>,
    pub unions: Vec<UnionDef>,
    pub tables: Vec<TableDef>,
    pub root: TableId,
    pub file_identifier: [u8; 4],
}

/// A mistake in schema text (ours, compiled in): reported with the offending token.
#[derive(Debug)]
pub struct SchemaError(pub String);

enum Named {
    Enum(EnumId),
    Union(UnionId),
    Table(TableId),
}

/// Unresolved field: type text kept until every name is known.
struct RawField {
    name: String,
    ty: String,
    default: Option<String>,
    attrs: Vec<(String, Option<String>)>,
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '/' {
            // `//` comment to end of line.
            while chars.next_if(|&c| c != '\n').is_some() {}
        } else if c == '"' {
            chars.next();
            let mut s = String::from("\"");
            while let Some(c) = chars.next_if(|&c| c != '"') {
                s.push(c);
            }
            chars.next();
            out.push(s);
        } else if c.is_alphanumeric() || c == '_' || c == '.' || c == '-' {
            let mut s = String::new();
            while let Some(c) = chars.next_if(|c| c.is_alphanumeric() || *c == '_' || *c == '.' || *c == '-') {
                s.push(c);
            }
            out.push(s);
        } else {
            out.push(c.to_string());
            chars.next();
        }
    }
    out
}

struct Parser {
    toks: Vec<String>,
    pos: usize,
}

impl Parser {
    fn next(&mut self) -> Result<String, SchemaError> {
        let t = self.toks.get(self.pos).cloned().ok_or_else(|| SchemaError("unexpected end of schema".into()))?;
        self.pos += 1;
        Ok(t)
    }

    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn expect(&mut self, want: &str) -> Result<(), SchemaError> {
        let t = self.next()?;
        if t == want { Ok(()) } else { Err(SchemaError(format!("expected {want:?}, found {t:?}"))) }
    }

    fn eat(&mut self, want: &str) -> bool {
        if self.peek() == Some(want) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn skip_to(&mut self, end: &str) -> Result<(), SchemaError> {
        while self.next()? != end {}
        Ok(())
    }

    fn attributes(&mut self) -> Result<Vec<(String, Option<String>)>, SchemaError> {
        let mut attrs = Vec::new();
        if self.eat("(") {
            loop {
                let key = self.next()?;
                let value = if self.eat(":") { Some(self.next()?) } else { None };
                attrs.push((key, value));
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok(attrs)
    }
}

fn last_component(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// Parse schema text.
pub fn parse(text: &str) -> Result<Schema, SchemaError> {
    let mut p = Parser { toks: tokens(text), pos: 0 };
    let mut enums = Vec::new();
    let mut raw_unions: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut raw_tables: Vec<(String, Vec<RawField>)> = Vec::new();
    let mut root = None;
    let mut ident = None;
    while let Some(t) = p.peek().map(str::to_string) {
        p.pos += 1;
        match t.as_str() {
            "namespace" | "include" | "attribute" | "file_extension" => p.skip_to(";")?,
            "file_identifier" => {
                let id = p.next()?;
                let id = id.trim_start_matches('"').as_bytes();
                ident =
                    Some(<[u8; 4]>::try_from(id).map_err(|_| SchemaError("file_identifier must be 4 bytes".into()))?);
                p.expect(";")?;
            }
            "root_type" => {
                root = Some(p.next()?);
                p.expect(";")?;
            }
            "enum" => {
                let name = p.next()?;
                p.expect(":")?;
                let underlying =
                    Scalar::from_name(&p.next()?).ok_or_else(|| SchemaError(format!("enum {name}: bad type")))?;
                p.attributes()?;
                p.expect("{")?;
                let mut values = Vec::new();
                let mut next_value = 0i64;
                while !p.eat("}") {
                    let v = p.next()?;
                    if p.eat("=") {
                        next_value = p.next()?.parse().map_err(|_| SchemaError(format!("enum {name}: bad value")))?;
                    }
                    values.push((v, next_value));
                    next_value += 1;
                    p.eat(",");
                }
                enums.push(EnumDef { name, underlying, values });
            }
            "union" => {
                let name = p.next()?;
                p.expect("{")?;
                let mut variants = Vec::new();
                while !p.eat("}") {
                    // `Name` or `Alias: Table` (a variant named apart from its table).
                    let variant = p.next()?;
                    let table = if p.eat(":") { p.next()? } else { variant.clone() };
                    variants.push((variant, table));
                    p.eat(",");
                }
                raw_unions.push((name, variants));
            }
            "table" => {
                let name = p.next()?;
                p.attributes()?;
                p.expect("{")?;
                let mut fields = Vec::new();
                while !p.eat("}") {
                    let fname = p.next()?;
                    p.expect(":")?;
                    let ty = if p.eat("[") {
                        let inner = p.next()?;
                        p.expect("]")?;
                        format!("[{inner}]")
                    } else {
                        p.next()?
                    };
                    let default = if p.eat("=") { Some(p.next()?) } else { None };
                    let attrs = p.attributes()?;
                    p.expect(";")?;
                    fields.push(RawField { name: fname, ty, default, attrs });
                }
                raw_tables.push((name, fields));
            }
            other => return Err(SchemaError(format!("unexpected {other:?}"))),
        }
    }
    resolve(enums, raw_unions, raw_tables, root, ident)
}

fn resolve(
    enums: Vec<EnumDef>,
    raw_unions: Vec<(String, Vec<(String, String)>)>,
    raw_tables: Vec<(String, Vec<RawField>)>,
    root: Option<String>,
    ident: Option<[u8; 4]>,
) -> Result<Schema, SchemaError> {
    let mut names: HashMap<String, Named> = HashMap::new();
    for (i, e) in enums.iter().enumerate() {
        names.insert(e.name.clone(), Named::Enum(i));
    }
    for (i, (n, _)) in raw_unions.iter().enumerate() {
        names.insert(n.clone(), Named::Union(i));
    }
    for (i, (n, _)) in raw_tables.iter().enumerate() {
        names.insert(n.clone(), Named::Table(i));
    }
    let table_id = |n: &str| match names.get(last_component(n)) {
        Some(Named::Table(i)) => Ok(*i),
        _ => Err(SchemaError(format!("unknown table {n:?}"))),
    };
    let unions = raw_unions
        .iter()
        .map(|(name, vs)| {
            let variants =
                vs.iter().map(|(v, t)| Ok((v.clone(), table_id(t)?))).collect::<Result<_, SchemaError>>()?;
            Ok(UnionDef { name: name.clone(), variants })
        })
        .collect::<Result<Vec<_>, SchemaError>>()?;
    let ty_of = |t: &str| -> Result<Type, SchemaError> {
        if let Some(inner) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            let inner = match Scalar::from_name(inner) {
                Some(s) => Type::Scalar(s),
                None if inner == "string" => Type::String,
                None => match names.get(last_component(inner)) {
                    Some(Named::Enum(i)) => Type::Enum(*i),
                    Some(Named::Table(i)) => Type::Table(*i),
                    _ => return Err(SchemaError(format!("unsupported vector element {inner:?}"))),
                },
            };
            return Ok(Type::Vector(Box::new(inner)));
        }
        if let Some(s) = Scalar::from_name(t) {
            return Ok(Type::Scalar(s));
        }
        if t == "string" {
            return Ok(Type::String);
        }
        match names.get(last_component(t)) {
            Some(Named::Enum(i)) => Ok(Type::Enum(*i)),
            Some(Named::Union(i)) => Ok(Type::Union(*i)),
            Some(Named::Table(i)) => Ok(Type::Table(*i)),
            None => Err(SchemaError(format!("unknown type {t:?}"))),
        }
    };
    let mut tables = Vec::with_capacity(raw_tables.len());
    for (name, raw_fields) in &raw_tables {
        let mut fields = Vec::with_capacity(raw_fields.len());
        let mut slot = 0u16;
        for f in raw_fields {
            let ty = ty_of(&f.ty)?;
            let default = match (&f.default, &ty) {
                (None, _) => 0,
                (Some(d), Type::Enum(e)) => match enums[*e].values.iter().find(|(n, _)| n == d) {
                    Some((_, v)) => *v,
                    None => d.parse().map_err(|_| SchemaError(format!("{name}.{}: bad default", f.name)))?,
                },
                (Some(d), _) => d.parse().map_err(|_| SchemaError(format!("{name}.{}: bad default", f.name)))?,
            };
            let attr = |k: &str| f.attrs.iter().find(|(key, _)| key == k);
            let force_align = match attr("force_align") {
                Some((_, Some(v))) => Some(v.parse().map_err(|_| SchemaError("bad force_align".into()))?),
                _ => None,
            };
            let width = if matches!(ty, Type::Union(_)) { 2 } else { 1 };
            fields.push(FieldDef {
                name: f.name.clone(),
                ty,
                slot,
                default,
                force_align,
                deprecated: attr("deprecated").is_some(),
            });
            slot += width;
        }
        tables.push(TableDef { name: name.clone(), fields });
    }
    let root = table_id(root.as_deref().ok_or_else(|| SchemaError("no root_type".into()))?)?;
    let file_identifier = ident.ok_or_else(|| SchemaError("no file_identifier".into()))?;
    Ok(Schema { enums, unions, tables, root, file_identifier })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_enums_unions_tables_and_slots() {
        let s = parse(
            r#"
            namespace x.y; // ignored
            file_identifier "AB12";
            enum Color : byte { RED = 1, GREEN, BLUE = 7 }
            table A { n: int = 3; c: Color = GREEN; }
            table B { s: string; }
            union U { A, B }
            table Root { u: U; list: [A]; bytes: [ubyte] (force_align: 16); after: long; }
            root_type Root;
            "#,
        )
        .unwrap();
        assert_eq!(&s.file_identifier, b"AB12");
        assert_eq!(s.enums[0].values, vec![("RED".into(), 1), ("GREEN".into(), 2), ("BLUE".into(), 7)]);
        let root = &s.tables[s.root];
        assert_eq!(root.fields.iter().map(|f| f.slot).collect::<Vec<_>>(), [0, 2, 3, 4]);
        assert_eq!(root.fields[2].force_align, Some(16));
        assert_eq!(s.tables[0].fields[1].default, 2);
        assert_eq!(s.unions[0].variants.iter().map(|(_, t)| *t).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn our_schemas_parse() {
        let p = parse(include_str!("../../schema/program.fbs")).unwrap();
        assert_eq!(p.tables[p.root].name, "Program");
        let f = parse(include_str!("../../schema/flat_tensor.fbs")).unwrap();
        assert_eq!(&f.file_identifier, b"FT01");
    }
}
