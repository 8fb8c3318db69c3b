//! An attribute's value: its datatype and dataspace messages and its data, as a metadata
//! value. Variable-length strings are read from the global heap collections they point to.

use std::collections::HashMap;

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::dataset::datatype::class_name;
use crate::formats::hdf5::io::{H5Io, uint};
use crate::model::{MetaValue, TypedArray};
use crate::source::Bytes;

/// The most dimensions of an attribute.
const MAX_RANK: usize = 32;

/// What an attribute's elements are.
#[derive(Debug, Clone, Copy)]
enum Element {
    Int {
        size: u8,
        signed: bool,
        big: bool,
    },
    Float {
        size: u8,
        big: bool,
    },
    /// Fixed-length strings of `size` bytes (NUL- or space-padded).
    Text {
        size: u64,
    },
    /// Variable-length strings (in the global heap).
    VlenText,
    /// h5py's bool: an enum of two members over one byte.
    Bool,
    /// A datatype class this reader describes but does not decode.
    Other(&'static str),
}

impl Element {
    /// Bytes per element in the attribute's data.
    fn size(self, io: &H5Io) -> u64 {
        match self {
            Element::Int { size, .. } | Element::Float { size, .. } => u64::from(size),
            Element::Text { size } => size,
            Element::VlenText => 4 + u64::from(io.offset_size()) + 4,
            Element::Bool => 1,
            Element::Other(_) => 0,
        }
    }
}

fn element(datatype: &[u8]) -> Result<Element> {
    let mut c = Cursor::new(datatype);
    let head = c.u8("datatype class")?;
    let bits = c.array::<3>("datatype bit field")?;
    let size = u64::from(c.u32_le("datatype size")?);
    let class = head & 0x0f;
    let big = bits[0] & 1 != 0;
    Ok(match (class, size) {
        (0, 1 | 2 | 4 | 8) => Element::Int { size: size as u8, signed: bits[0] & 8 != 0, big },
        (1, 2 | 4 | 8) if bits[0] & 0x40 == 0 => Element::Float { size: size as u8, big },
        (3, _) => Element::Text { size },
        (9, _) if bits[0] & 0x0f == 1 => Element::VlenText,
        (8, 1) if u16::from_le_bytes([bits[0], bits[1]]) == 2 => Element::Bool,
        _ => Element::Other(class_name(datatype)),
    })
}

/// The dimensions of a dataspace message (`None` for a null dataspace: no value).
fn dims(io: &H5Io, dataspace: &[u8]) -> Result<Option<Vec<u64>>> {
    let mut c = Cursor::new(dataspace);
    let version = c.u8("dataspace version")?;
    let rank = usize::from(c.u8("dataspace rank")?);
    c.skip(1, "dataspace flags")?;
    match version {
        1 => c.skip(5, "reserved")?,
        2 => {
            if c.u8("dataspace type")? == 2 {
                return Ok(None);
            }
        }
        v => return Err(Error::invalid(Rule::BadField, format!("attribute dataspace version {v}"))),
    }
    if rank > MAX_RANK {
        return Err(Error::invalid(Rule::BadField, format!("attribute of rank {rank} (at most {MAX_RANK})")));
    }
    (0..rank).map(|_| io.length(&mut c)).collect::<Result<Vec<_>>>().map(Some)
}

/// The value of an attribute of `datatype` and `dataspace` holding `data`.
pub(super) fn decode(io: &H5Io, datatype: &[u8], dataspace: &[u8], data: &[u8]) -> Result<MetaValue> {
    let element = element(datatype)?;
    let Some(dims) = dims(io, dataspace)? else { return Ok(MetaValue::Null) };
    if let Element::Other(class) = element {
        return Ok(MetaValue::Text(format!("<hdf5 {class} attribute of shape {dims:?}>")));
    }
    let count = checked::numel(&dims)?;
    if element.size(io) == 0 {
        return Err(Error::invalid(Rule::BadField, "attribute of zero-byte strings"));
    }
    if count == 0 {
        return Ok(MetaValue::TypedArray(elements(io, element, 0, data)?));
    }
    let need = checked::mul(count, element.size(io), "attribute data")?;
    if need > data.len() as u64 {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!("attribute of {count} elements needs {need} bytes of data, it has {}", data.len()),
        ));
    }
    let flat = elements(io, element, count as usize, data)?;
    Ok(if dims.is_empty() { flat.get(0).unwrap_or(MetaValue::Null) } else { nest(&flat, &dims) })
}

/// The elements of a rank > 0 attribute: a typed array, nested one level per dimension past
/// the first.
fn nest(flat: &TypedArray, dims: &[u64]) -> MetaValue {
    fn rows(flat: &TypedArray, from: usize, dims: &[u64]) -> TypedArray {
        let inner: usize = dims[1..].iter().map(|&d| d as usize).product();
        if dims.len() == 1 {
            return slice(flat, from, dims[0] as usize);
        }
        TypedArray::Array((0..dims[0] as usize).map(|i| rows(flat, from + i * inner, &dims[1..])).collect())
    }
    MetaValue::TypedArray(rows(flat, 0, dims))
}

macro_rules! slice_variants {
    ($a:expr, $from:expr, $n:expr, $($v:ident),*) => {
        match $a {
            $(TypedArray::$v(x) => TypedArray::$v(x[$from..$from + $n].to_vec()),)*
            TypedArray::Array(x) => TypedArray::Array(x[$from..$from + $n].to_vec()),
        }
    };
}

fn slice(a: &TypedArray, from: usize, n: usize) -> TypedArray {
    slice_variants!(a, from, n, U8, I8, U16, I16, U32, I32, U64, I64, F32, F64, Bool, Text)
}

fn ints<const N: usize, T>(data: &[u8], count: usize, big: bool, from: fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .take(count)
        .map(|c| {
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            if big {
                b.reverse();
            }
            from(b)
        })
        .collect()
}

/// `count` elements of `data` as a typed array (checked to hold them).
fn elements(io: &H5Io, element: Element, count: usize, data: &[u8]) -> Result<TypedArray> {
    Ok(match element {
        Element::Int { size: 1, signed: false, .. } => TypedArray::U8(data[..count].to_vec()),
        Element::Int { size: 1, signed: true, .. } => TypedArray::I8(data[..count].iter().map(|&b| b as i8).collect()),
        Element::Int { size: 2, signed, big } if signed => TypedArray::I16(ints(data, count, big, i16::from_le_bytes)),
        Element::Int { size: 2, big, .. } => TypedArray::U16(ints(data, count, big, u16::from_le_bytes)),
        Element::Int { size: 4, signed, big } if signed => TypedArray::I32(ints(data, count, big, i32::from_le_bytes)),
        Element::Int { size: 4, big, .. } => TypedArray::U32(ints(data, count, big, u32::from_le_bytes)),
        Element::Int { signed, big, .. } if signed => TypedArray::I64(ints(data, count, big, i64::from_le_bytes)),
        Element::Int { big, .. } => TypedArray::U64(ints(data, count, big, u64::from_le_bytes)),
        Element::Float { size: 2, big } => {
            TypedArray::F32(ints(data, count, big, |b| half::f16::from_le_bytes(b).to_f32()))
        }
        Element::Float { size: 4, big } => TypedArray::F32(ints(data, count, big, f32::from_le_bytes)),
        Element::Float { big, .. } => TypedArray::F64(ints(data, count, big, f64::from_le_bytes)),
        Element::Bool => TypedArray::Bool(data[..count].iter().map(|&b| b != 0).collect()),
        Element::Text { size } => {
            let size = size as usize;
            TypedArray::Text((0..count).map(|i| text(&data[i * size..(i + 1) * size])).collect())
        }
        Element::VlenText => {
            let mut heaps = GlobalHeaps::default();
            let mut c = Cursor::new(data);
            let mut out = Vec::with_capacity(count);
            for _ in 0..count {
                let _len = c.u32_le("string length")?;
                let collection = io.offset(&mut c)?;
                let index = c.u32_le("global heap object index")?;
                out.push(if collection == 0 && index == 0 {
                    String::new()
                } else {
                    text(&heaps.object(io, collection, index)?)
                });
            }
            TypedArray::Text(out)
        }
        Element::Other(_) => TypedArray::Text(Vec::new()),
    })
}

/// Text of a string's bytes, without its padding (NULs, or spaces).
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim_end_matches(' ').to_string()
}

/// Global heap collections (`GCOL`) read so far.
#[derive(Default)]
struct GlobalHeaps {
    collections: HashMap<u64, Bytes>,
}

impl GlobalHeaps {
    /// Object `index` of the collection at `addr`: the collection is `GCOL`, version 1, three
    /// reserved bytes, its size, then objects (index, reference count, reserved, size, data
    /// padded to 8 bytes) up to object 0, the free space.
    fn object(&mut self, io: &H5Io, addr: u64, index: u32) -> Result<Vec<u8>> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.collections.entry(addr) {
            let head = io.read_what(addr, 8 + u64::from(io.length_size()), "global heap collection")?;
            let mut c = Cursor::new(&head);
            if c.take(4, "signature")? != b"GCOL" {
                return Err(Error::invalid(
                    Rule::BadMagic,
                    format!("global heap collection at {addr} does not start with GCOL"),
                ));
            }
            c.skip(4, "version and reserved")?;
            let size = io.length(&mut c)?;
            slot.insert(io.read_what(addr, size, "global heap collection")?);
        }
        let block = &self.collections[&addr];
        let mut c = Cursor::new(block);
        c.skip(8 + usize::from(io.length_size()), "collection header")?;
        while c.remaining() >= 8 + usize::from(io.length_size()) {
            let i = c.u16_le("heap object index")?;
            c.skip(6, "reference count and reserved")?;
            let size = uint(&mut c, io.length_size(), "heap object size")?;
            if i == 0 {
                break;
            }
            let n = checked::to_usize(size, "heap object size")?;
            let data = c.take(n, "heap object")?;
            if u32::from(i) == index {
                return Ok(data.to_vec());
            }
            c.skip(((8 - n % 8) % 8).min(c.remaining()), "padding")?;
        }
        Err(Error::invalid(Rule::OutOfBounds, format!("global heap collection at {addr} has no object {index}")))
    }
}
