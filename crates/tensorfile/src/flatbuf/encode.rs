//! Encoding a [`Value`] tree into a flatbuffer.
//!
//! Objects are laid out front to back: the root table first, every child after the field
//! that refers to it (flatbuffer offsets point forward). Each table's vtable sits just
//! before it. Scalars, offsets and vector elements are aligned to their size, `[ubyte]`
//! fields with `force_align` to that; a `header_gap` of zero bytes after the file
//! identifier leaves room for ExecuTorch's extended headers.

use super::schema::{Scalar, Schema, Type};
use super::value::{Table, Value};
use crate::error::{Error, Result};

/// Encode `root` (a table of `schema`'s root type). The result starts with the root offset,
/// the schema's file identifier, then `header_gap` zero bytes.
pub fn encode(schema: &Schema, root: &Table, header_gap: usize) -> Result<Vec<u8>> {
    let mut e = Encoder { schema, out: vec![0; 8 + header_gap] };
    e.out[4..8].copy_from_slice(&schema.file_identifier);
    let root_pos = e.table(root)?;
    e.patch(0, root_pos)?;
    Ok(e.out)
}

struct Encoder<'s> {
    schema: &'s Schema,
    out: Vec<u8>,
}

/// A field's inline bytes, or a reference to a child written after the table.
enum Inline<'v> {
    Scalar(Vec<u8>),
    /// The value, its field's type, and the field's `force_align`.
    Child(&'v Value, &'v Type, Option<usize>),
}

fn mismatch(what: &str) -> Error {
    Error::usage(format!("value does not fit its schema type: {what}"))
}

fn scalar_bytes(s: Scalar, v: &Value) -> Result<Vec<u8>> {
    let int = || -> Result<i128> {
        match v {
            Value::Int(i) => Ok(i128::from(*i)),
            Value::UInt(u) => Ok(i128::from(*u)),
            Value::Bool(b) => Ok(i128::from(*b)),
            _ => Err(mismatch("expected an integer")),
        }
    };
    let out_of_range = || mismatch("integer out of range");
    Ok(match s {
        Scalar::Bool => vec![u8::from(int()? != 0)],
        Scalar::I8 => i8::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::U8 => u8::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::I16 => i16::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::U16 => u16::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::I32 => i32::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::U32 => u32::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::I64 => i64::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::U64 => u64::try_from(int()?).map_err(|_| out_of_range())?.to_le_bytes().to_vec(),
        Scalar::F32 | Scalar::F64 => {
            let f = match v {
                Value::Float(f) => *f,
                _ => int()? as f64,
            };
            if s == Scalar::F32 { (f as f32).to_le_bytes().to_vec() } else { f.to_le_bytes().to_vec() }
        }
    })
}

impl Encoder<'_> {
    /// Pad with zeros until `(len + ahead) % align == 0`.
    fn align(&mut self, align: usize, ahead: usize) {
        while (self.out.len() + ahead) % align != 0 {
            self.out.push(0);
        }
    }

    /// Store at `at` the forward offset to `target`.
    fn patch(&mut self, at: usize, target: usize) -> Result<()> {
        let off = u32::try_from(target - at).map_err(|_| Error::unsupported("flatbuffer larger than 4 GiB"))?;
        self.out[at..at + 4].copy_from_slice(&off.to_le_bytes());
        Ok(())
    }

    fn scalar_width(&self, ty: &Type) -> Option<Scalar> {
        match ty {
            Type::Scalar(s) => Some(*s),
            Type::Enum(e) => Some(self.schema.enums[*e].underlying),
            _ => None,
        }
    }

    fn table(&mut self, t: &Table) -> Result<usize> {
        // (slot, inline content) for every present field; unions give two.
        let mut inline: Vec<(u16, Inline<'_>)> = Vec::new();
        for (f, v) in t.def.fields.iter().zip(&t.fields) {
            let Some(v) = v else { continue };
            match (&f.ty, v) {
                (Type::Union(_), Value::Union(u)) => {
                    inline.push((f.slot, Inline::Scalar(vec![u.tag])));
                    if u.value.is_some() {
                        inline.push((f.slot + 1, Inline::Child(v, &f.ty, f.force_align)));
                    }
                }
                (ty, v) => match self.scalar_width(ty) {
                    Some(s) => inline.push((f.slot, Inline::Scalar(scalar_bytes(s, v)?))),
                    None => inline.push((f.slot, Inline::Child(v, &f.ty, f.force_align))),
                },
            }
        }
        let size = |i: &Inline<'_>| match i {
            Inline::Scalar(b) => b.len(),
            Inline::Child(..) => 4,
        };
        inline.sort_by_key(|(_, i)| std::cmp::Reverse(size(i)));
        let slots = inline.iter().map(|(s, _)| usize::from(*s) + 1).max().unwrap_or(0);
        let vt_len = 4 + 2 * slots;

        self.align(2, 0);
        let vtable = self.out.len();
        self.out.resize(vtable + vt_len, 0);
        let widest = inline.iter().map(|(_, i)| size(i)).max().unwrap_or(4).max(4);
        self.align(widest, 0);
        let start = self.out.len();
        self.out.extend_from_slice(&0i32.to_le_bytes());
        let mut offsets = vec![0u16; slots];
        let mut children = Vec::new();
        for (slot, item) in &inline {
            self.align(size(item), 0);
            let at = self.out.len();
            offsets[usize::from(*slot)] =
                u16::try_from(at - start).map_err(|_| Error::unsupported("table over 64 KiB"))?;
            match item {
                Inline::Scalar(b) => self.out.extend_from_slice(b),
                Inline::Child(v, ty, align) => {
                    self.out.extend_from_slice(&[0; 4]);
                    children.push((at, *v, *ty, *align));
                }
            }
        }
        let table_len = u16::try_from(self.out.len() - start).map_err(|_| Error::unsupported("table over 64 KiB"))?;
        let soffset = i32::try_from(start - vtable).map_err(|_| Error::unsupported("vtable too far"))?;
        self.out[start..start + 4].copy_from_slice(&soffset.to_le_bytes());
        let vt_len16 = u16::try_from(vt_len).map_err(|_| Error::unsupported("vtable over 64 KiB"))?;
        self.out[vtable..vtable + 2].copy_from_slice(&vt_len16.to_le_bytes());
        self.out[vtable + 2..vtable + 4].copy_from_slice(&table_len.to_le_bytes());
        for (i, off) in offsets.iter().enumerate() {
            self.out[vtable + 4 + 2 * i..vtable + 6 + 2 * i].copy_from_slice(&off.to_le_bytes());
        }
        for (at, v, ty, align) in children {
            let pos = self.child(ty, v, align)?;
            self.patch(at, pos)?;
        }
        Ok(start)
    }

    /// Write a non-inline value (string, vector, table, union's table); return its position.
    fn child(&mut self, ty: &Type, v: &Value, force_align: Option<usize>) -> Result<usize> {
        match (ty, v) {
            (Type::String, Value::Str(s)) => Ok(self.string(s)),
            (Type::Table(_), Value::Table(t)) => self.table(t),
            (Type::Union(_), Value::Union(u)) => match &u.value {
                Some(t) => self.table(t),
                None => Err(mismatch("union without a value")),
            },
            (Type::Vector(elem), Value::Bytes(b)) if matches!(**elem, Type::Scalar(Scalar::U8)) => {
                self.vector_start(force_align.unwrap_or(1));
                let pos = self.out.len();
                self.out
                    .extend_from_slice(&u32::try_from(b.len()).map_err(|_| mismatch("vector too long"))?.to_le_bytes());
                self.out.extend_from_slice(b);
                Ok(pos)
            }
            (Type::Vector(elem), Value::Vector(items)) => self.vector(elem, items, force_align),
            _ => Err(mismatch("value of another kind than its field")),
        }
    }

    /// Pad so that a vector's 4-byte count can be written here with its elements, which
    /// follow the count, aligned to `align` (a power of two).
    fn vector_start(&mut self, align: usize) {
        self.align(4, 0);
        while (self.out.len() + 4) % align != 0 {
            self.out.extend_from_slice(&[0; 4]);
        }
    }

    fn string(&mut self, s: &str) -> usize {
        self.align(4, 0);
        let pos = self.out.len();
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(0);
        pos
    }

    fn vector(&mut self, elem: &Type, items: &[Value], force_align: Option<usize>) -> Result<usize> {
        let count = u32::try_from(items.len()).map_err(|_| mismatch("vector too long"))?;
        if let Some(s) = self.scalar_width(elem) {
            self.vector_start(force_align.unwrap_or(1).max(s.size()));
            let pos = self.out.len();
            self.out.extend_from_slice(&count.to_le_bytes());
            for v in items {
                let b = scalar_bytes(s, v)?;
                self.out.extend_from_slice(&b);
            }
            return Ok(pos);
        }
        self.align(4, 0);
        let pos = self.out.len();
        self.out.extend_from_slice(&count.to_le_bytes());
        let first = self.out.len();
        self.out.resize(first + 4 * items.len(), 0);
        for (i, v) in items.iter().enumerate() {
            let target = match (elem, v) {
                (Type::String, Value::Str(s)) => self.string(s),
                (Type::Table(_), Value::Table(t)) => self.table(t)?,
                _ => return Err(mismatch("vector item of another kind than its element type")),
            };
            self.patch(first + 4 * i, target)?;
        }
        Ok(pos)
    }
}
