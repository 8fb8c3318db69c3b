//! Dequantization of affine group quantization (zTensor 2's `zt.quant_group/1`).
//!
//! Codes are the tensor's elements in logical (row-major) order, `per_word` to a little-endian
//! word, the lowest index in the low bits (`lsb_first`) or the high ones (`msb_first`). A code
//! is an unsigned bit field, except that a code filling a whole signed word (8-bit codes in
//! `int8`) is that signed integer. Scales (and zero points) are laid out like the tensor with
//! `shape[axis]` replaced by the group count; packed zero points are packed like the codes.
//!
//! A value is `(q - zero) × scale`: `q - zero` in double precision rounded to `f32`, the
//! product in `f32`. Scales widen exactly to `f32` whether the profile says they are consumed
//! at 32- or 16-bit width (the product is then at least as precise as a 16-bit one); an E8M0
//! scale byte `b` is `2^(b - 127)`, `0xFF` NaN.

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::DType;
use crate::model::quant::{BitOrder, GroupQuant, ScaleForm, ZeroPoint, mx};

/// Packed codes: `bits` wide, `per_word` to a little-endian word of `width` bytes.
struct Codes<'a> {
    words: &'a [u8],
    width: usize,
    bits: u32,
    per_word: usize,
    order: BitOrder,
    signed: bool,
}

impl Codes<'_> {
    /// Code `i` (its word is known to be in range).
    #[inline(always)]
    fn get(&self, i: usize) -> i64 {
        let at = (i / self.per_word) * self.width;
        let mut word = [0u8; 8];
        word[..self.width].copy_from_slice(&self.words[at..at + self.width]);
        let word = u64::from_le_bytes(word);
        let slot = (i % self.per_word) as u32;
        let slot = if self.order == BitOrder::MsbFirst { self.per_word as u32 - 1 - slot } else { slot };
        let code = (word >> (slot * self.bits)) & (u64::MAX >> (64 - self.bits));
        if self.signed {
            // Sign-extend a code that fills its word.
            ((code << (64 - self.bits)) as i64) >> (64 - self.bits)
        } else {
            code as i64
        }
    }

    fn len(&self) -> usize {
        self.words.len() / self.width * self.per_word
    }
}

/// Dequantize `parts` (`data`, `scales`, then `zeros` when stored) into `out`.
pub(crate) fn dequantize(g: &GroupQuant, shape: &[u64], parts: &[&[u8]], out: &mut [u8]) -> Result<()> {
    let bad = |what: String| Error::invalid(Rule::BadQuantization, what);
    let axis = usize::from(g.axis);
    let [data, scales_part, ..] = parts else {
        return Err(bad("group-quantized data without its data and scales parts".into()));
    };
    let along =
        *shape.get(axis).ok_or_else(|| bad(format!("axis {axis} of a tensor with {} dimensions", shape.len())))?;
    let to_usize = |v: u64| checked::to_usize(v, "group extent");
    let (outer, inner) = (to_usize(checked::numel(&shape[..axis])?)?, to_usize(checked::numel(&shape[axis + 1..])?)?);
    let along = to_usize(along)?;
    let numel = out.len() / 4;
    if numel == 0 {
        return Ok(());
    }
    let codes = codes(g, g.word, data)?;
    let scales = scale_values(g, scales_part)?;
    // The group count follows from the scales the layout sized: one per group and lane.
    let lanes = outer * inner;
    let groups = scales.len() / lanes;
    if groups == 0 || scales.len() % lanes != 0 || along % groups != 0 || codes.len() < numel {
        return Err(bad(format!("{} scales and {} codes for shape {shape:?}", scales.len(), codes.len())));
    }
    let span = along / groups;
    let zeros = zero_values(g, parts.get(2).copied(), scales.len())?;
    let mut i = 0;
    let mut out = out.chunks_exact_mut(4);
    for o in 0..outer {
        for a in 0..along {
            let first = (o * groups + a / span) * inner;
            let (scales, zeros) = (&scales[first..first + inner], zeros.as_deref().map(|z| &z[first..first + inner]));
            for (n, o) in out.by_ref().take(inner).enumerate() {
                let zero = zeros.map_or(0.0, |z| z[n]);
                let value = (codes.get(i) as f64 - zero) as f32 * scales[n];
                o.copy_from_slice(&value.to_le_bytes());
                i += 1;
            }
        }
    }
    Ok(())
}

/// The codes of `bytes`, packed as `g` says in words of `word`.
fn codes<'a>(g: &GroupQuant, word: DType, bytes: &'a [u8]) -> Result<Codes<'a>> {
    let signed = match word {
        DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64 => false,
        DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 => true,
        other => {
            return Err(Error::invalid(Rule::BadQuantization, format!("codes packed in {other}, not an integer word")));
        }
    };
    let word_bits = word.bits() as u32;
    let bits = u32::from(g.bits);
    if bits == 0 || word_bits % bits != 0 {
        return Err(Error::invalid(Rule::BadQuantization, format!("{bits}-bit codes in a {word} word")));
    }
    let width = (word_bits / 8) as usize;
    Ok(Codes {
        words: bytes,
        width,
        bits,
        per_word: (word_bits / bits) as usize,
        order: g.order,
        signed: signed && bits == word_bits,
    })
}

/// The scales as `f32` multipliers.
fn scale_values(g: &GroupQuant, bytes: &[u8]) -> Result<Vec<f32>> {
    Ok(match (g.scale_form, g.scale_dtype) {
        (ScaleForm::E8m0Exponent, DType::UInt8 | DType::Float8E8M0Fnu) => bytes.iter().map(|&b| mx::e8m0(b)).collect(),
        (ScaleForm::E8m0Exponent, other) => {
            return Err(Error::invalid(
                Rule::BadQuantization,
                format!("E8M0 exponent scales stored as {other}, not bytes"),
            ));
        }
        (_, dtype @ (DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64)) => {
            floats(dtype, bytes)?.into_iter().map(|v| v as f32).collect()
        }
        (_, other) => return Err(Error::unsupported(format!("group quantization with {other} scale factors"))),
    })
}

/// Every zero point as a number (`None` when the profile has no zero points per group).
fn zero_values(g: &GroupQuant, part: Option<&[u8]>, count: usize) -> Result<Option<Vec<f64>>> {
    let missing = || Error::invalid(Rule::BadQuantization, "group-quantized data without its zeros part");
    let zeros = match g.zero_point {
        ZeroPoint::None => return Ok(None),
        ZeroPoint::Implied(v) => vec![v as f64; count],
        ZeroPoint::Stored { packed: true, dtype } => {
            if dtype.bits() != g.word.bits() {
                return Err(Error::invalid(
                    Rule::BadQuantization,
                    format!("zero points packed in {dtype}, codes in {}", g.word),
                ));
            }
            let packed = codes(g, dtype, part.ok_or_else(missing)?)?;
            if packed.len() < count {
                return Err(Error::invalid(
                    Rule::BadQuantization,
                    format!("{} packed zero points for {count} groups", packed.len()),
                ));
            }
            (0..count).map(|k| packed.get(k) as f64).collect()
        }
        ZeroPoint::Stored { packed: false, dtype } => floats(dtype, part.ok_or_else(missing)?)?,
    };
    if zeros.len() != count {
        return Err(Error::invalid(Rule::BadQuantization, format!("{} zero points for {count} groups", zeros.len())));
    }
    Ok(Some(zeros))
}

/// Plain little-endian numbers of `dtype` (an integer or real float type) as `f64`.
fn floats(dtype: DType, bytes: &[u8]) -> Result<Vec<f64>> {
    fn each<const W: usize>(bytes: &[u8], f: impl Fn([u8; W]) -> f64) -> Vec<f64> {
        bytes.chunks_exact(W).map(|c| c.try_into().map_or(f64::NAN, &f)).collect()
    }
    Ok(match dtype {
        DType::Float16 => each(bytes, |b| half::f16::from_le_bytes(b).to_f64()),
        DType::BFloat16 => each(bytes, |b| half::bf16::from_le_bytes(b).to_f64()),
        DType::Float32 => each(bytes, |b| f64::from(f32::from_le_bytes(b))),
        DType::Float64 => each(bytes, f64::from_le_bytes),
        DType::UInt8 => each(bytes, |[b]| f64::from(b)),
        DType::Int8 => each(bytes, |[b]| f64::from(b as i8)),
        DType::UInt16 => each(bytes, |b| f64::from(u16::from_le_bytes(b))),
        DType::Int16 => each(bytes, |b| f64::from(i16::from_le_bytes(b))),
        DType::UInt32 => each(bytes, |b| f64::from(u32::from_le_bytes(b))),
        DType::Int32 => each(bytes, |b| f64::from(i32::from_le_bytes(b))),
        DType::UInt64 => each(bytes, |b| u64::from_le_bytes(b) as f64),
        DType::Int64 => each(bytes, |b| i64::from_le_bytes(b) as f64),
        other => return Err(Error::unsupported(format!("group quantization with {other} scales or zero points"))),
    })
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
