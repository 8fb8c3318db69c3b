//! Decoding a flatbuffer into a [`Value`] tree, verifying as it goes: every offset and
//! length within the buffer, scalars and offsets aligned (as FlatBuffers' own verifier
//! requires), strings NUL-terminated UTF-8, vtables well formed, union tags known, nesting
//! bounded, and the total work bounded by the buffer's size (so a small buffer whose
//! offsets share subtrees cannot expand into a huge tree).

use super::schema::{Scalar, Schema, TableDef, Type};
use super::value::{Table, Union, Value};
use crate::cursor;
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_NESTING;
use crate::source::Bytes;

/// Decode the buffer `buf` (a whole flatbuffer: root offset at byte 0, file identifier at
/// byte 4) with `schema`. `[ubyte]` vectors are returned as slices of `buf`.
pub fn decode(schema: &'static Schema, buf: &Bytes) -> Result<Table> {
    let mut d = Decoder { schema, src: buf, buf, budget: 2 * buf.len() + 1024 };
    let ident = buf.get(4..8).ok_or_else(|| Error::invalid(Rule::Truncated, "flatbuffer shorter than 8 bytes"))?;
    if ident != schema.file_identifier {
        return Err(Error::invalid(
            Rule::BadMagic,
            format!(
                "file identifier {:?}, expected {:?}",
                String::from_utf8_lossy(ident),
                String::from_utf8_lossy(&schema.file_identifier)
            ),
        ));
    }
    let root = d.uoffset(0)?;
    d.table(root, &schema.tables[schema.root], 0)
}

struct Decoder<'a> {
    schema: &'static Schema,
    src: &'a Bytes,
    buf: &'a [u8],
    budget: usize,
}

fn bad(detail: String) -> Error {
    Error::invalid(Rule::OutOfBounds, detail)
}

impl Decoder<'_> {
    fn spend(&mut self, n: usize) -> Result<()> {
        self.budget = self.budget.checked_sub(n).ok_or_else(|| {
            Error::invalid(Rule::TooManyEntries, "flatbuffer references far more data than it holds (shared subtrees)")
        })?;
        Ok(())
    }

    /// `N` bytes at `pos`, which must be aligned to `N` (for N in 2, 4, 8).
    fn bytes<const N: usize>(&self, pos: usize) -> Result<[u8; N]> {
        if N > 1 && pos % N != 0 {
            return Err(Error::invalid(Rule::Misaligned, format!("{N}-byte value at {pos} is not aligned")));
        }
        cursor::array_at(self.buf, pos, "flatbuffer value")
            .map_err(|_| bad(format!("{N}-byte value at {pos} runs past the end ({} bytes)", self.buf.len())))
    }

    fn u32(&self, pos: usize) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes::<4>(pos)?))
    }

    /// Follow the unsigned offset stored at `pos`.
    fn uoffset(&self, pos: usize) -> Result<usize> {
        let off = self.u32(pos)? as usize;
        let target = pos.checked_add(off).filter(|&t| t < self.buf.len());
        target.ok_or_else(|| bad(format!("offset at {pos} points past the end")))
    }

    fn scalar(&self, s: Scalar, pos: usize) -> Result<Value> {
        Ok(match s {
            Scalar::Bool => Value::Bool(self.bytes::<1>(pos)?[0] != 0),
            Scalar::I8 => Value::Int(i64::from(i8::from_le_bytes(self.bytes::<1>(pos)?))),
            Scalar::U8 => Value::UInt(u64::from(self.bytes::<1>(pos)?[0])),
            Scalar::I16 => Value::Int(i64::from(i16::from_le_bytes(self.bytes::<2>(pos)?))),
            Scalar::U16 => Value::UInt(u64::from(u16::from_le_bytes(self.bytes::<2>(pos)?))),
            Scalar::I32 => Value::Int(i64::from(i32::from_le_bytes(self.bytes::<4>(pos)?))),
            Scalar::U32 => Value::UInt(u64::from(self.u32(pos)?)),
            Scalar::I64 => Value::Int(i64::from_le_bytes(self.bytes::<8>(pos)?)),
            Scalar::U64 => Value::UInt(u64::from_le_bytes(self.bytes::<8>(pos)?)),
            Scalar::F32 => Value::Float(f64::from(f32::from_le_bytes(self.bytes::<4>(pos)?))),
            Scalar::F64 => Value::Float(f64::from_le_bytes(self.bytes::<8>(pos)?)),
        })
    }

    fn enum_value(&self, e: usize, pos: usize) -> Result<Value> {
        Ok(match self.scalar(self.schema.enums[e].underlying, pos)? {
            Value::UInt(u) => Value::Int(i64::try_from(u).unwrap_or(i64::MAX)),
            v => v,
        })
    }

    fn string(&mut self, pos: usize) -> Result<String> {
        self.spend(1)?;
        let len = self.u32(pos)? as usize;
        let start = pos + 4;
        let end = start.checked_add(len).filter(|&e| e < self.buf.len());
        let end = end.ok_or_else(|| bad(format!("string at {pos} of {len} bytes runs past the end")))?;
        if self.buf[end] != 0 {
            return Err(Error::invalid(Rule::BadField, format!("string at {pos} is not NUL-terminated")));
        }
        String::from_utf8(self.buf[start..end].to_vec())
            .map_err(|_| Error::invalid(Rule::BadUtf8, format!("string at {pos} is not UTF-8")))
    }

    fn vector(&mut self, pos: usize, elem: &Type, depth: usize) -> Result<Value> {
        let count = self.u32(pos)? as usize;
        let start = pos + 4;
        let width = match elem {
            Type::Scalar(s) => s.size(),
            Type::Enum(e) => self.schema.enums[*e].underlying.size(),
            _ => 4,
        };
        let end = count.checked_mul(width).and_then(|n| start.checked_add(n)).filter(|&e| e <= self.buf.len());
        end.ok_or_else(|| bad(format!("vector at {pos} of {count} items runs past the end")))?;
        if let Type::Scalar(Scalar::U8) = elem {
            self.spend(1)?;
            return Ok(Value::Bytes(self.src.slice(start as u64, count as u64)?));
        }
        self.spend(count)?;
        let mut items = Vec::with_capacity(count);
        for i in 0..count {
            let at = start + i * width;
            items.push(match elem {
                Type::Scalar(s) => self.scalar(*s, at)?,
                Type::Enum(e) => self.enum_value(*e, at)?,
                Type::String => Value::Str(self.string(self.uoffset(at)?)?),
                Type::Table(t) => Value::Table(self.table(self.uoffset(at)?, &self.schema.tables[*t], depth + 1)?),
                Type::Union(_) | Type::Vector(_) => {
                    return Err(Error::unsupported("vectors of unions or vectors in a schema"));
                }
            });
        }
        Ok(Value::Vector(items))
    }

    fn table(&mut self, pos: usize, def: &'static TableDef, depth: usize) -> Result<Table> {
        if depth > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("tables nested deeper than {MAX_NESTING}")));
        }
        self.spend(1)?;
        let soffset = i32::from_le_bytes(self.bytes::<4>(pos)?);
        let vtable = usize::try_from(pos as i64 - i64::from(soffset))
            .map_err(|_| bad(format!("vtable of the {} at {pos} lies before the buffer", def.name)))?;
        let vt_len = usize::from(u16::from_le_bytes(self.bytes::<2>(vtable)?));
        let table_len = usize::from(u16::from_le_bytes(self.bytes::<2>(vtable + 2)?));
        if vt_len < 4 || vt_len % 2 != 0 || vtable + vt_len > self.buf.len() {
            return Err(bad(format!("bad vtable of {} bytes at {vtable} for the {} at {pos}", vt_len, def.name)));
        }
        if table_len < 4 || pos + table_len > self.buf.len() {
            return Err(bad(format!("the {} at {pos} of {table_len} bytes runs past the end", def.name)));
        }
        // Where each vtable slot's field is, if present.
        let slot_count = (vt_len - 4) / 2;
        let mut slots = Vec::with_capacity(slot_count);
        for i in 0..slot_count {
            let off = usize::from(u16::from_le_bytes(self.bytes::<2>(vtable + 4 + 2 * i)?));
            if off != 0 && off >= table_len {
                return Err(bad(format!("field of the {} at {pos} lies outside the table", def.name)));
            }
            slots.push((off != 0).then_some(pos + off));
        }
        let slot = |s: u16| slots.get(usize::from(s)).copied().flatten();
        let mut fields = Vec::with_capacity(def.fields.len());
        for f in &def.fields {
            let value = match &f.ty {
                Type::Union(u) => {
                    let tag = match slot(f.slot) {
                        Some(p) => self.bytes::<1>(p)?[0],
                        None => 0,
                    };
                    let union = &self.schema.unions[*u];
                    match (tag, slot(f.slot + 1)) {
                        (0, _) => None,
                        (t, Some(p)) => {
                            let (_, table) = union.variants.get(usize::from(t) - 1).ok_or_else(|| {
                                Error::invalid(
                                    Rule::BadField,
                                    format!("{}.{}: unknown union type {t}", def.name, f.name),
                                )
                            })?;
                            let target = self.uoffset(p)?;
                            let value = self.table(target, &self.schema.tables[*table], depth + 1)?;
                            Some(Value::Union(Union { def: union, tag: t, value: Some(Box::new(value)) }))
                        }
                        (t, None) => Some(Value::Union(Union { def: union, tag: t, value: None })),
                    }
                }
                ty => match slot(f.slot) {
                    None => None,
                    Some(p) => Some(match ty {
                        Type::Scalar(s) => self.scalar(*s, p)?,
                        Type::Enum(e) => self.enum_value(*e, p)?,
                        Type::String => Value::Str(self.string(self.uoffset(p)?)?),
                        Type::Table(t) => {
                            Value::Table(self.table(self.uoffset(p)?, &self.schema.tables[*t], depth + 1)?)
                        }
                        Type::Vector(elem) => self.vector(self.uoffset(p)?, elem, depth)?,
                        Type::Union(_) => unreachable!("handled above"),
                    }),
                },
            };
            fields.push(value);
        }
        Ok(Table { def, fields })
    }
}
