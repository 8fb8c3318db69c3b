//! Quantized layouts: tensors stored as low-precision codes with their scales, kept as they are
//! stored and dequantized on demand.
//!
//! Three families, each a [`Quant`]: ggml's block types (GGUF, and zTensor 2's `gguf.<type>/1`
//! profiles), affine group quantization (zTensor 2's `zt.quant_group/1`) and OCP
//! Microscaling (zTensor 2's `zt.mx/1`). A quantized tensor's logical dtype is what it
//! dequantizes to (`float32`); its parts are the stored codes and scales.

pub(crate) mod ggml;
mod ggml_type;
mod group;
mod mx;

#[cfg(test)]
mod dequantize_tests;

pub use ggml_type::GgmlType;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::{DType, TensorData, cast};
use crate::source::{Bytes, FreshBuffer};
use rayon::prelude::*;

/// The part of a ggml-quantized tensor: its blocks, verbatim.
pub const BLOCKS: &str = "blocks";
/// The part holding the scales of group-quantized and MX tensors.
pub const SCALES: &str = "scales";
/// The part holding the zero points of group-quantized tensors that store them.
pub const ZEROS: &str = "zeros";

/// A quantization scheme with its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Quant {
    /// ggml blocks of one type, stored verbatim (one `blocks` part of bytes).
    Ggml(GgmlType),
    /// Affine group quantization (`data`, `scales`, and `zeros` when stored).
    Group(GroupQuant),
    /// OCP Microscaling: elements sharing a power-of-two scale per block (`data`, `scales`).
    Mx(MxQuant),
}

/// How codes sit in a storage word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOrder {
    /// The code of the lowest index occupies the low bits.
    LsbFirst,
    /// The code of the lowest index occupies the high bits.
    MsbFirst,
}

/// How a group-quantized tensor's scales are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleForm {
    /// Multipliers, widened to f32.
    F32Factors,
    /// Multipliers consumed at 16-bit float width.
    F16Factors,
    /// Exponent bytes: `b` means `2^(b - 127)`.
    E8m0Exponent,
}

/// Whether and how a zero point offsets each code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroPoint {
    /// Codes are used as they are.
    None,
    /// Every code is offset by this constant.
    Implied(i64),
    /// A `zeros` part: packed like the codes (`packed`), or one element of `dtype` per group.
    Stored {
        /// Packed exactly like the codes (`true`), or one plain element per group.
        packed: bool,
        /// The storage dtype of the `zeros` part.
        dtype: DType,
    },
}

/// The parameters of affine group quantization (zTensor 2's `zt.quant_group/1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupQuant {
    /// Width of one code: 2, 3, 4, 5, 6 or 8.
    pub bits: u8,
    /// Codes sharing one scale along `axis`; 0 means one scale per row of `axis`.
    pub group_size: u64,
    /// The axis groups run along.
    pub axis: u8,
    /// The storage dtype of the packed codes (an integer type; its width is the word's).
    pub word: DType,
    /// How codes sit in a word.
    pub order: BitOrder,
    /// How scales are read.
    pub scale_form: ScaleForm,
    /// The storage dtype of the `scales` part.
    pub scale_dtype: DType,
    /// Whether and how a zero point applies.
    pub zero_point: ZeroPoint,
}

/// The element types of OCP Microscaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MxElement {
    /// FP4 E2M1, two per byte (MXFP4).
    F4E2M1,
    /// FP8 E4M3 (MXFP8).
    F8E4M3,
    /// FP8 E5M2 (MXFP8).
    F8E5M2,
    /// 8-bit integers (MXINT8).
    Int8,
}

impl MxElement {
    /// zTensor 2's name for the element type (`f4_e2m1`, `f8_e4m3fn`, `f8_e5m2`, `i8`).
    pub fn name(self) -> &'static str {
        match self {
            MxElement::F4E2M1 => "f4_e2m1",
            MxElement::F8E4M3 => "f8_e4m3fn",
            MxElement::F8E5M2 => "f8_e5m2",
            MxElement::Int8 => "i8",
        }
    }

    /// The element type of this name.
    pub fn from_name(name: &str) -> Option<MxElement> {
        [MxElement::F4E2M1, MxElement::F8E4M3, MxElement::F8E5M2, MxElement::Int8]
            .into_iter()
            .find(|e| e.name() == name)
    }

    /// Bytes the elements of `count` take.
    fn nbytes(self, count: u64) -> u64 {
        match self {
            MxElement::F4E2M1 => count.div_ceil(2),
            _ => count,
        }
    }
}

/// The parameters of OCP Microscaling (zTensor 2's `zt.mx/1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MxQuant {
    /// The element type.
    pub element: MxElement,
    /// Elements per block, each block sharing one scale (32 for OCP formats).
    pub block_size: u64,
    /// The dimension blocks run along.
    pub axis: u8,
}

/// One stored part of a quantized tensor: its role, storage dtype and element count.
pub(crate) struct QuantPart {
    pub name: &'static str,
    pub dtype: DType,
    pub count: u64,
}

impl Quant {
    /// A short description: `ggml.q4_k`, `quant_group.4bit.g128`, `mx.f4_e2m1`.
    pub fn describe(&self) -> String {
        match self {
            Quant::Ggml(t) => format!("ggml.{}", t.lower_name()),
            Quant::Group(g) => format!("quant_group.{}bit.g{}", g.bits, g.group_size),
            Quant::Mx(m) => format!("mx.{}", m.element.name()),
        }
    }

    /// The stored parts of a tensor of `shape` quantized this way, checked against the shape
    /// (a block or group never spans two rows).
    pub(crate) fn parts(&self, shape: &[u64]) -> Result<Vec<QuantPart>> {
        let numel = checked::numel(shape)?;
        match self {
            Quant::Ggml(t) => {
                let per = t.block_elements();
                let row = shape.last().copied().unwrap_or(1);
                if row % per != 0 {
                    return Err(Error::invalid(
                        Rule::BadQuantization,
                        format!("{} blocks hold {per} elements; rows of {row} do not fill whole blocks", t.name()),
                    ));
                }
                let bytes = checked::mul(numel / per, t.block_bytes(), "ggml blocks")?;
                Ok(vec![QuantPart { name: BLOCKS, dtype: DType::UInt8, count: bytes }])
            }
            Quant::Group(g) => {
                let word_bits = g.word.bits();
                if !matches!(g.bits, 2..=6 | 8) || word_bits % u64::from(g.bits) != 0 {
                    return Err(Error::invalid(
                        Rule::BadQuantization,
                        format!("{}-bit codes do not fill a {} word", g.bits, g.word),
                    ));
                }
                let per_word = word_bits / u64::from(g.bits);
                let along = axis_extent(shape, g.axis)?;
                if g.group_size != 0 && along % g.group_size != 0 {
                    return Err(Error::invalid(
                        Rule::BadQuantization,
                        format!("groups of {} do not divide axis {} of {along}", g.group_size, g.axis),
                    ));
                }
                let groups = along.checked_div(g.group_size).unwrap_or(along);
                let lanes = numel.checked_div(along).unwrap_or(0);
                let scale_count = checked::mul(groups, lanes, "group scales")?;
                if numel % per_word != 0 {
                    return Err(Error::invalid(
                        Rule::BadQuantization,
                        format!("{numel} codes do not fill whole words of {per_word}"),
                    ));
                }
                let mut parts = vec![
                    QuantPart { name: crate::model::DATA, dtype: g.word, count: numel / per_word },
                    QuantPart { name: SCALES, dtype: g.scale_dtype, count: scale_count },
                ];
                if let ZeroPoint::Stored { packed, dtype } = g.zero_point {
                    let count = if packed { scale_count.div_ceil(per_word) } else { scale_count };
                    parts.push(QuantPart { name: ZEROS, dtype, count });
                }
                Ok(parts)
            }
            Quant::Mx(m) => {
                let along = axis_extent(shape, m.axis)?;
                if m.block_size < 2 || along % m.block_size != 0 {
                    return Err(Error::invalid(
                        Rule::BadQuantization,
                        format!("MX blocks of {} do not divide axis {} of {along}", m.block_size, m.axis),
                    ));
                }
                let data_dtype = if m.element == MxElement::Int8 { DType::Int8 } else { DType::UInt8 };
                Ok(vec![
                    QuantPart { name: crate::model::DATA, dtype: data_dtype, count: m.element.nbytes(numel) },
                    QuantPart { name: SCALES, dtype: DType::UInt8, count: numel / m.block_size },
                ])
            }
        }
    }
}

fn axis_extent(shape: &[u64], axis: u8) -> Result<u64> {
    shape.get(usize::from(axis)).copied().ok_or_else(|| {
        Error::invalid(Rule::BadQuantization, format!("axis {axis} of a tensor with {} dimensions", shape.len()))
    })
}

/// The parts of `data` that `q` reads for a tensor of `shape`, in order, each checked to hold
/// exactly the bytes the shape needs ([`Rule::BadQuantization`] otherwise).
fn sized_parts<'a>(q: &Quant, shape: &[u64], data: &'a TensorData) -> Result<Vec<&'a [u8]>> {
    let mut parts = Vec::new();
    for spec in q.parts(shape)? {
        let expected = spec.dtype.nbytes(spec.count)?;
        let bytes = match data.part(spec.name) {
            Some(b) => &b[..],
            None if expected == 0 => &[][..],
            None => {
                return Err(Error::invalid(
                    Rule::BadQuantization,
                    format!("{} data without its {} part", q.describe(), spec.name),
                ));
            }
        };
        if bytes.len() as u64 != expected {
            return Err(Error::invalid(
                Rule::BadQuantization,
                format!("{} part {} of {} bytes where {expected} are needed", q.describe(), spec.name, bytes.len()),
            ));
        }
        parts.push(bytes);
    }
    Ok(parts)
}

/// Dequantize `data`, a tensor of `shape` quantized as `q`, to little-endian `float32` bytes in
/// row-major order. Every part's size is checked against the shape first.
/// The output is fresh memory already faulted in when large ([`FreshBuffer`]): the kernels
/// outrun the page faults of a new vector.
pub(crate) fn dequantize(q: &Quant, shape: &[u64], data: &TensorData) -> Result<Bytes> {
    let parts = sized_parts(q, shape, data)?;
    let numel = checked::to_usize(checked::numel(shape)?, "quantized elements")?;
    let out_len = checked::mul(numel as u64, 4, "dequantized bytes")?;
    let mut buffer = FreshBuffer::zeroed(checked::to_usize(out_len, "dequantized bytes")?, "dequantized bytes")?;
    let out = buffer.as_mut_slice();
    match q {
        Quant::Ggml(t) => ggml::dequantize(*t, parts[0], out)?,
        Quant::Group(g) => group::dequantize(g, shape, &parts, out)?,
        Quant::Mx(m) => mx::dequantize(m, shape, parts[0], parts[1], out)?,
    }
    Ok(buffer.into_bytes())
}

/// [`dequantize`], then each value cast to `to` (a float dtype [`cast`] casts to, as
/// `convert --dtype` does): ggml's blocks are dequantized a task at a time into a small buffer
/// of each thread's and cast from there into the output, so the tensor is never held whole as
/// `float32` on the way (half the memory written for a 16-bit `to`); the other schemes are
/// dequantized whole first.
pub(crate) fn dequantize_as(q: &Quant, shape: &[u64], data: &TensorData, to: DType) -> Result<Bytes> {
    let (_, width) = cast::widths(DType::Float32, to)?;
    let Quant::Ggml(t) = q else {
        return cast::cast_fresh(&dequantize(q, shape, data)?, DType::Float32, to);
    };
    let parts = sized_parts(q, shape, data)?;
    // Refused as `dequantize` refuses it, even with no blocks to decode.
    ggml::check_dequantizable(*t)?;
    let numel = checked::to_usize(checked::numel(shape)?, "quantized elements")?;
    let out_len =
        checked::to_usize(checked::mul(numel as u64, width as u64, "dequantized bytes")?, "dequantized bytes")?;
    let mut buffer = FreshBuffer::zeroed(out_len, "dequantized bytes")?;
    // Both are at most a few hundred (the type table is the source).
    let (block_bytes, block_elements) = (t.block_bytes() as usize, t.block_elements() as usize);
    let per_task = (ggml::TASK_BYTES / (block_elements * 4)).max(1);
    let tasks = parts[0]
        .par_chunks(per_task * block_bytes)
        .zip(buffer.as_mut_slice().par_chunks_mut(per_task * block_elements * width));
    tasks.try_for_each_init(Vec::new, |values: &mut Vec<u8>, (blocks, out)| {
        values.resize(blocks.len() / block_bytes * block_elements * 4, 0);
        ggml::dequantize_here(*t, blocks, values)?;
        cast::cast_into(values, DType::Float32, to, out)
    })?;
    Ok(buffer.into_bytes())
}

/// [`dequantize`] into `f32` values. ggml's blocks (the quantized tensors that get requantized)
/// are decoded a piece at a time into the values, so that the tensor is held once as floats,
/// not a second time as their bytes; the other schemes are decoded whole, then read.
pub(crate) fn dequantize_f32(q: &Quant, shape: &[u64], data: &TensorData) -> Result<Vec<f32>> {
    /// Output bytes decoded at a time (several threads work on each piece).
    const PIECE: usize = 4 << 20;
    let le_f32 = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let Quant::Ggml(t) = q else {
        return Ok(dequantize(q, shape, data)?.chunks_exact(4).map(le_f32).collect());
    };
    let parts = sized_parts(q, shape, data)?;
    let numel = checked::to_usize(checked::numel(shape)?, "quantized elements")?;
    let mut values = Vec::new();
    values
        .try_reserve_exact(numel)
        .map_err(|_| Error::unsupported(format!("cannot allocate {numel} float32 values to dequantize into")))?;
    // Both are at most a few hundred (the type table is the source).
    let (block_bytes, block_out) = (t.block_bytes() as usize, t.block_elements() as usize * 4);
    let per_piece = (PIECE / block_out).max(1);
    let mut scratch = Vec::new();
    for blocks in parts[0].chunks(per_piece * block_bytes) {
        scratch.resize(blocks.len() / block_bytes * block_out, 0);
        ggml::dequantize(*t, blocks, &mut scratch)?;
        values.extend(scratch.chunks_exact(4).map(le_f32));
    }
    Ok(values)
}

/// Whether `q` has a reference dequantization this library implements.
pub fn can_dequantize(q: &Quant) -> bool {
    match q {
        Quant::Ggml(t) => ggml::can_dequantize(*t),
        Quant::Group(_) | Quant::Mx(_) => true,
    }
}
