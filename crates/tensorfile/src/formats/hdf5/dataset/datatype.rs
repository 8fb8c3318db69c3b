//! The datatype message (type 0x03, versions 1 to 3): which element type a dataset holds.
//!
//! Tensors are fixed-point integers of 1, 2, 4 or 8 bytes, IEEE floats (half, single, double,
//! and bfloat16 when described bit by bit), h5py's bool (an enum of int8 `FALSE = 0`,
//! `TRUE = 1`), other enums as their base integer type (their members are kept by
//! [`enum_members`]), bitfields as unsigned integers of their size (as h5py reads both), and
//! h5py's complex numbers (a compound of two floats named `r` and `i`), in either byte order.
//! An array datatype of one of these is its base element with the array's dimensions after the
//! dataset's, as h5py reads it. Every other class (strings, references, opaque, variable
//! length, other compounds, VAX floats, long doubles) is refused with its name.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::model::DType;

/// The element type of a dataset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::formats::hdf5) struct Element {
    /// What the element is, once in little-endian order (an array datatype's base element).
    pub dtype: DType,
    /// Bytes per stored element (an array datatype's whole array).
    pub size: u64,
    /// Whether stored elements (each part of a complex number) are big-endian.
    pub big_endian: bool,
    /// An array datatype's dimensions, which follow the dataset's in the tensor's shape;
    /// empty for any other datatype.
    pub array_dims: Vec<u64>,
}

impl Element {
    /// A scalar element (no array dimensions).
    fn scalar(dtype: DType, size: u64, big_endian: bool) -> Element {
        Element { dtype, size, big_endian, array_dims: Vec::new() }
    }
}

/// The HDF5 datatype classes, by number.
const CLASS_NAMES: [&str; 12] = [
    "fixed-point",
    "floating-point",
    "time",
    "string",
    "bitfield",
    "opaque",
    "compound",
    "reference",
    "enumerated",
    "variable-length",
    "array",
    "complex",
];

/// The name of a datatype message's class ("string", "compound"...), for a dataset this
/// library refuses.
pub(in crate::formats::hdf5) fn class_name(body: &[u8]) -> &'static str {
    body.first().and_then(|b| CLASS_NAMES.get(usize::from(b & 0x0f))).copied().unwrap_or("unknown")
}

/// Decodes a datatype message into the element it describes, or refuses it.
pub(in crate::formats::hdf5) fn parse(body: &[u8]) -> Result<Element> {
    let mut c = Cursor::new(body);
    parse_at(&mut c, 0)
}

/// How deep datatypes may nest (an array's base, a complex's members, an enum's base).
const MAX_DEPTH: usize = 3;

/// The most dimensions of an array datatype (HDF5's own limit on a dataspace's rank).
const MAX_ARRAY_RANK: u8 = 32;

fn refuse(what: impl Into<String>) -> Error {
    Error::invalid(Rule::UnknownDType, what.into())
}

/// The datatype at the cursor (a whole message, or a member of a compound or an enum's base).
fn parse_at(c: &mut Cursor<'_>, depth: usize) -> Result<Element> {
    if depth > MAX_DEPTH {
        return Err(refuse("HDF5 datatype nested too deeply to be a tensor element"));
    }
    let head = c.u8("datatype class and version")?;
    let (class, version) = (head & 0x0f, head >> 4);
    if !(1..=5).contains(&version) {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 datatype message version {version}")));
    }
    let bits = c.array::<3>("datatype class bit fields")?;
    let size = u64::from(c.u32_le("datatype size")?);
    match class {
        0 => fixed_point(c, bits, size),
        1 => floating_point(c, bits, size),
        4 => bitfield(c, bits, size),
        6 => compound(c, bits, size, version, depth),
        8 => enumeration(c, bits, size, version, depth).map(|(e, _)| e),
        10 => array(c, size, version, depth),
        _ => Err(refuse(format!(
            "HDF5 {} datatype: not a tensor element",
            CLASS_NAMES.get(usize::from(class)).copied().unwrap_or("unknown-class")
        ))),
    }
}

fn byte_order(bits: [u8; 3]) -> bool {
    bits[0] & 1 == 1
}

/// A bitfield: h5py reads one as the unsigned integer of its size.
fn bitfield(c: &mut Cursor<'_>, bits: [u8; 3], size: u64) -> Result<Element> {
    let offset = c.u16_le("bitfield bit offset")?;
    let precision = c.u16_le("bitfield bit precision")?;
    let dtype = match size {
        1 => DType::UInt8,
        2 => DType::UInt16,
        4 => DType::UInt32,
        8 => DType::UInt64,
        _ => return Err(refuse(format!("HDF5 bitfield datatype of {size} bytes"))),
    };
    if offset != 0 || u64::from(precision) != size * 8 {
        return Err(refuse(format!(
            "HDF5 bitfield of {size} bytes using bits {offset}..{}: only whole-width bitfields are tensors",
            u32::from(offset) + u32::from(precision)
        )));
    }
    Ok(Element::scalar(dtype, size, byte_order(bits)))
}

fn fixed_point(c: &mut Cursor<'_>, bits: [u8; 3], size: u64) -> Result<Element> {
    let offset = c.u16_le("fixed-point bit offset")?;
    let precision = c.u16_le("fixed-point bit precision")?;
    let signed = bits[0] & 0x08 != 0;
    let dtype = match (size, signed) {
        (1, false) => DType::UInt8,
        (1, true) => DType::Int8,
        (2, false) => DType::UInt16,
        (2, true) => DType::Int16,
        (4, false) => DType::UInt32,
        (4, true) => DType::Int32,
        (8, false) => DType::UInt64,
        (8, true) => DType::Int64,
        _ => return Err(refuse(format!("HDF5 fixed-point datatype of {size} bytes"))),
    };
    if offset != 0 || u64::from(precision) != size * 8 {
        return Err(refuse(format!(
            "HDF5 fixed-point datatype of {size} bytes using bits {offset}..{}: only whole-width integers are tensors",
            u32::from(offset) + u32::from(precision)
        )));
    }
    Ok(Element::scalar(dtype, size, byte_order(bits)))
}

/// The bit layout of an IEEE-style float: (size, exponent location, exponent size, mantissa
/// size, bias, the dtype).
const FLOATS: [(u64, u8, u8, u8, u32, DType); 4] = [
    (2, 10, 5, 10, 15, DType::Float16),
    (2, 7, 8, 7, 127, DType::BFloat16),
    (4, 23, 8, 23, 127, DType::Float32),
    (8, 52, 11, 52, 1023, DType::Float64),
];

fn floating_point(c: &mut Cursor<'_>, bits: [u8; 3], size: u64) -> Result<Element> {
    let offset = c.u16_le("float bit offset")?;
    let precision = c.u16_le("float bit precision")?;
    let exp_loc = c.u8("float exponent location")?;
    let exp_size = c.u8("float exponent size")?;
    let mant_loc = c.u8("float mantissa location")?;
    let mant_size = c.u8("float mantissa size")?;
    let bias = c.u32_le("float exponent bias")?;
    let order = (bits[0] & 1) | ((bits[0] >> 5) & 2);
    let big_endian = match order {
        0 => false,
        1 => true,
        _ => return Err(refuse("HDF5 float in VAX byte order")),
    };
    let normalization = (bits[0] >> 4) & 3;
    let sign = bits[1];
    let found = FLOATS.iter().find(|f| {
        f.0 == size
            && f.1 == exp_loc
            && f.2 == exp_size
            && f.3 == mant_size
            && f.4 == bias
            && mant_loc == 0
            && offset == 0
            && u64::from(precision) == size * 8
            && u64::from(sign) == size * 8 - 1
            && normalization == 2
    });
    match found {
        Some(f) => Ok(Element::scalar(f.5, size, big_endian)),
        // x87's 80-bit extended precision (NumPy's longdouble), padded to 12 or 16 bytes.
        None if exp_size == 15 && bias == 16383 => Err(refuse(format!(
            "HDF5 extended-precision float (long double) of {size} bytes, {precision} bits: no tensor dtype holds it"
        ))),
        None => Err(refuse(format!(
            "HDF5 float of {size} bytes (sign bit {sign}, exponent {exp_size} bits at {exp_loc}, mantissa \
             {mant_size} bits at {mant_loc}, bias {bias}): not an IEEE half, single, double or bfloat16"
        ))),
    }
}

/// A name of a compound member or an enum value: NUL-terminated, padded to a multiple of 8
/// bytes before version 3.
fn name<'a>(c: &mut Cursor<'a>, version: u8) -> Result<&'a [u8]> {
    let rest = c.rest();
    let len = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| Error::invalid(Rule::Truncated, "HDF5 datatype member name without its NUL"))?;
    let stored = if version < 3 { (len + 8) & !7 } else { len + 1 };
    c.take(stored, "datatype member name")?;
    Ok(&rest[..len])
}

/// h5py's complex numbers: members `r` at 0 and `i` at half the size, the same IEEE float.
fn compound(c: &mut Cursor<'_>, bits: [u8; 3], size: u64, version: u8, depth: usize) -> Result<Element> {
    let members = u16::from_le_bytes([bits[0], bits[1]]);
    let refused =
        || refuse(format!("HDF5 compound datatype of {members} members: only h5py's complex {{r, i}} is a tensor"));
    if members != 2 {
        return Err(refused());
    }
    let mut parts = Vec::with_capacity(2);
    for _ in 0..2 {
        let member = name(c, version)?.to_vec();
        let offset = match version {
            1 | 2 => u64::from(c.u32_le("compound member offset")?),
            _ => {
                let width = offset_width(size);
                let b = c.take(width, "compound member offset")?;
                b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x))
            }
        };
        if version == 1 {
            // Dimensionality, reserved, permutation, reserved, four dimension sizes.
            let rank = c.u8("compound member dimensionality")?;
            c.skip(3 + 4 + 4 + 16, "compound member dimensions")?;
            if rank != 0 {
                return Err(refused());
            }
        }
        let element = parse_at(c, depth + 1)?;
        parts.push((member, offset, element));
    }
    let [(r, r_at, re), (i, i_at, im)] = [parts[0].clone(), parts[1].clone()];
    if !re.array_dims.is_empty() {
        return Err(refused());
    }
    let dtype = match re.dtype {
        DType::Float32 => DType::Complex64,
        DType::Float64 => DType::Complex128,
        _ => return Err(refused()),
    };
    if r != b"r" || i != b"i" || re != im || r_at != 0 || i_at != re.size || size != 2 * re.size {
        return Err(refused());
    }
    Ok(Element::scalar(dtype, size, re.big_endian))
}

/// An array datatype (versions 1 and 2: rank, 3 reserved bytes, dimensions, a permutation;
/// version 3 on: rank, dimensions), then its base datatype: the base element, with the array's
/// dimensions (after any of a nested array's own), as h5py reads it. The specification names
/// version 2 as the first with arrays, but HDF5 1.4 wrote them as version 1 (old PyTables
/// files), and the HDF5 library reads those with version 2's layout: so does this.
fn array(c: &mut Cursor<'_>, size: u64, version: u8, depth: usize) -> Result<Element> {
    let rank = c.u8("array datatype rank")?;
    if rank == 0 || rank > MAX_ARRAY_RANK {
        return Err(Error::invalid(
            Rule::BadField,
            format!("HDF5 array datatype of rank {rank} (1 to {MAX_ARRAY_RANK})"),
        ));
    }
    if version < 3 {
        c.skip(3, "array datatype reserved bytes")?;
    }
    let mut dims = Vec::with_capacity(usize::from(rank));
    for _ in 0..rank {
        dims.push(u64::from(c.u32_le("array datatype dimension")?));
    }
    if version < 3 {
        // The permutation, which HDF5 has never used: the dimensions are in row-major order.
        c.skip(4 * usize::from(rank), "array datatype permutation")?;
    }
    if dims.contains(&0) {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 array datatype of dimensions {dims:?}")));
    }
    let base = parse_at(c, depth + 1).map_err(|e| match e.rule() {
        Some(Rule::UnknownDType) => refuse(format!("HDF5 array datatype of dimensions {dims:?} over {}", e.detail())),
        _ => e,
    })?;
    let whole = checked::mul(checked::numel(&dims)?, base.size, "HDF5 array datatype size")?;
    if whole != size {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!(
                "HDF5 array datatype of {size} bytes holding {dims:?} elements of {} bytes ({whole} bytes)",
                base.size
            ),
        ));
    }
    dims.extend_from_slice(&base.array_dims);
    Ok(Element { dtype: base.dtype, size, big_endian: base.big_endian, array_dims: dims })
}

/// Bytes of a version-3 compound member's offset: as few as hold the compound's size.
fn offset_width(size: u64) -> usize {
    match size {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xff_ffff => 3,
        _ => 4,
    }
}

/// The most members an enum's listing keeps.
const MAX_MEMBERS: u16 = 4096;

/// An enum: its base integer type, and its members (name, value) in the order stored. h5py's
/// bool (int8 with exactly `FALSE = 0`, `TRUE = 1`) is a bool; any other enum is its base type.
fn enumeration(
    c: &mut Cursor<'_>,
    bits: [u8; 3],
    size: u64,
    version: u8,
    depth: usize,
) -> Result<(Element, Vec<(String, i128)>)> {
    let members = u16::from_le_bytes([bits[0], bits[1]]);
    let base = parse_at(c, depth + 1)?;
    use DType::*;
    let integer = matches!(base.dtype, UInt8 | Int8 | UInt16 | Int16 | UInt32 | Int32 | UInt64 | Int64);
    if !integer || base.size != size {
        return Err(refuse(format!(
            "HDF5 enumerated datatype of {size} bytes over {} of {} bytes: only integer enums are tensors",
            base.dtype.name(),
            base.size
        )));
    }
    if members > MAX_MEMBERS {
        return Err(Error::invalid(
            Rule::TooManyEntries,
            format!("HDF5 enumerated datatype of {members} members (at most {MAX_MEMBERS})"),
        ));
    }
    let mut names = Vec::with_capacity(usize::from(members));
    for _ in 0..members {
        let name = name(c, version)?;
        names.push(String::from_utf8_lossy(name).into_owned());
    }
    let signed = matches!(base.dtype, Int8 | Int16 | Int32 | Int64);
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let raw = c.take(size as usize, "enumeration value")?;
        let mut le = [0u8; 8];
        le[..raw.len()].copy_from_slice(raw);
        if base.big_endian {
            le[..raw.len()].reverse();
        }
        let unsigned = u64::from_le_bytes(le);
        let shift = 64 - 8 * size as u32;
        let value = if signed { i128::from(((unsigned << shift) as i64) >> shift) } else { i128::from(unsigned) };
        out.push((name, value));
    }
    let bool_like = base.dtype == DType::Int8
        && out.len() == 2
        && out[0] == ("FALSE".to_string(), 0)
        && out[1] == ("TRUE".to_string(), 1);
    if bool_like {
        return Ok((Element::scalar(DType::Bool, 1, false), out));
    }
    Ok((base, out))
}

/// The members of an enum dataset's datatype (name, value, in the order stored); `None` for
/// any other datatype, h5py's bool included.
pub(in crate::formats::hdf5) fn enum_members(body: &[u8]) -> Result<Option<Vec<(String, i128)>>> {
    let mut c = Cursor::new(body);
    let head = c.u8("datatype class and version")?;
    if head & 0x0f != 8 {
        return Ok(None);
    }
    let bits = c.array::<3>("datatype class bit fields")?;
    let size = u64::from(c.u32_le("datatype size")?);
    let (element, members) = enumeration(&mut c, bits, size, head >> 4, 0)?;
    Ok((element.dtype != DType::Bool).then_some(members))
}

#[cfg(test)]
#[path = "datatype_tests.rs"]
mod tests;
