//! Quantization into ggml's block types, bit for bit as ggml's `ggml_quantize_chunk` makes them.
//!
//! Each kernel quantizes one row with the floating-point operations of ggml's reference code,
//! in its order and at its precision: `f32` throughout, every `a * b + c` rounded twice (ggml's
//! base library is built without fused multiply-add), scales rounded to half precision by
//! ggml's own conversion, float-to-integer conversions as x86's truncating instructions make
//! them (out-of-range values and NaN become `i32::MIN`). With an importance matrix ggml runs a
//! type's `_impl` search, without one its `_ref` code (or the same search with default
//! weights): each kernel takes both paths as ggml does. Rows are independent (no state crosses
//! from one row to the next in ggml either), so large inputs are split into runs of rows
//! quantized on several threads. Within a row, the scale searches take the groups of a block
//! (or eight blocks) together, one group per lane of arrays the compiler vectorizes, each lane
//! computed exactly as ggml computes that group alone. Where the compiler does not vectorize
//! well enough, explicit SIMD (`super::simd`, AVX2 chosen at run time) does the same
//! arithmetic: the 32-element types without importance, Q3_K's group search, IQ4's fits.
//!
//! Checked against ggml's own output: `tests/fixtures/ggml-quant/` (`fixture_tests.rs`).
//!
//! The IQ1/IQ2/IQ3 grid types have their own search over ggml's lattices (`iq_grid`).

mod extremes;
pub(super) mod floats;
mod iq_grid;
mod kquants_16;
mod kquants_32;
pub(super) mod legacy;
pub(super) mod nonlinear;
pub(super) mod search;

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod ggufpy_tests;
#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::error::{Error, Result, Rule};
use crate::model::quant::GgmlType;

/// Inputs of more elements than this are quantized on several threads.
const PARALLEL_ABOVE: usize = 1 << 16;
/// About this many elements per task when quantizing in parallel.
const TASK_ELEMENTS: usize = 1 << 15;

/// Quantizes one row (whole blocks): its values, the importance of each of its columns (when
/// given) and the row's bytes.
type RowKernel = fn(&[f32], Option<&[f32]>, &mut [u8]);

/// The kernel of `t`, or why ggml cannot quantize into it here.
fn kernel(t: GgmlType) -> Result<RowKernel> {
    use GgmlType::*;
    Ok(match t {
        F32 => floats::f32_row,
        F16 => floats::f16_row,
        BF16 => floats::bf16_row,
        Q4_0 => legacy::q4_0,
        Q4_1 => legacy::q4_1,
        Q5_0 => legacy::q5_0,
        Q5_1 => legacy::q5_1,
        Q8_0 => legacy::q8_0,
        Q1_0 => legacy::q1_0,
        Q2_0 => legacy::q2_0,
        Q2_K => kquants_16::q2_k,
        Q3_K => kquants_16::q3_k,
        Q4_K => kquants_32::q4_k,
        Q5_K => kquants_32::q5_k,
        Q6_K => kquants_16::q6_k,
        IQ4_NL => nonlinear::iq4_nl,
        IQ4_XS => nonlinear::iq4_xs,
        TQ1_0 => nonlinear::tq1_0,
        TQ2_0 => nonlinear::tq2_0,
        MXFP4 => nonlinear::mxfp4,
        NVFP4 => nonlinear::nvfp4,
        // Their search runs over whole inputs in `iq_grid` (see `quantize_rows`).
        IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M => {
            return Err(Error::unsupported(format!("{} has no row kernel: iq_grid quantizes it", t.name())));
        }
        Q8_1 | Q8_K | I8 | I16 | I32 | I64 | F64 => {
            return Err(Error::unsupported(format!(
                "ggml does not quantize into {} (ggml_quantize_chunk has no case for it)",
                t.name()
            )));
        }
    })
}

/// Whether ggml can quantize into `t` here.
pub(crate) fn can_quantize(t: GgmlType) -> bool {
    is_grid(t) || kernel(t).is_ok()
}

/// The IQ1/IQ2/IQ3 types, whose codes are points of ggml's lattices (`iq_grid`).
fn is_grid(t: GgmlType) -> bool {
    use GgmlType::*;
    matches!(t, IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M)
}

/// Whether `t` needs an importance matrix (as ggml_quantize_requires_imatrix says).
pub(crate) fn requires_importance(t: GgmlType) -> bool {
    matches!(t, GgmlType::IQ2_XXS | GgmlType::IQ2_XS | GgmlType::IQ1_S)
}

/// Bytes of one row of `n_per_row` elements in `t`, or None when the row is not whole blocks.
pub(crate) fn row_bytes(t: GgmlType, n_per_row: usize) -> Option<usize> {
    // Both are at most a few hundred (the type table is the source).
    let (per_block, block_bytes) = (t.block_elements() as usize, t.block_bytes() as usize);
    if n_per_row % per_block != 0 {
        return None;
    }
    (n_per_row / per_block).checked_mul(block_bytes)
}

/// `values` (rows of `n_per_row`) quantized into `t`: [`quantize_rows`] into [`output_for`].
pub(crate) fn quantize(t: GgmlType, values: &[f32], n_per_row: usize, importance: Option<&[f32]>) -> Result<Vec<u8>> {
    let mut out = output_for(t, values.len(), n_per_row)?;
    quantize_rows(t, values, n_per_row, importance, &mut out)?;
    Ok(out)
}

/// A zeroed buffer for `values` elements in rows of `n_per_row` quantized to `t`: no larger
/// than the values themselves as f32 (held in memory already).
pub(crate) fn output_for(t: GgmlType, values: usize, n_per_row: usize) -> Result<Vec<u8>> {
    let refuse =
        |detail: String| Error::invalid(Rule::BadQuantization, format!("quantizing into {}: {detail}", t.name()));
    let row_size = row_bytes(t, n_per_row)
        .filter(|_| n_per_row > 0)
        .ok_or_else(|| refuse(format!("rows of {n_per_row} do not fill whole blocks of {}", t.block_elements())))?;
    let size =
        (values / n_per_row).checked_mul(row_size).ok_or_else(|| refuse("the quantized size overflows".into()))?;
    Ok(vec![0u8; size])
}

/// Quantizes `src` (rows of `n_per_row` f32 values, src.len() a multiple of it) into `out`
/// (exactly rows * row_bytes bytes), as ggml_quantize_chunk does, with `importance` (n_per_row
/// weights, the imatrix row of this tensor) or without. Rows run in parallel (rayon) when large.
pub(crate) fn quantize_rows(
    t: GgmlType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    out: &mut [u8],
) -> Result<()> {
    if is_grid(t) {
        return iq_grid::quantize(t, src, n_per_row, importance, out);
    }
    let kernel = kernel(t)?;
    let (rows, row_size) = fitted_rows(t, src, n_per_row, importance, out.len())?;
    if src.len() > PARALLEL_ABOVE && rows > 1 {
        let rows_per_task = (TASK_ELEMENTS / n_per_row).max(1);
        src.par_chunks(rows_per_task * n_per_row)
            .zip(out.par_chunks_mut(rows_per_task * row_size))
            .for_each(|(src, out)| each_row(kernel, src, n_per_row, importance, out, row_size));
    } else {
        each_row(kernel, src, n_per_row, importance, out, row_size);
    }
    Ok(())
}

/// The rows of `src` and the bytes of each in `t`, once the arguments fit one another: rows of
/// whole blocks, whole rows of values, an output of exactly their bytes, and one importance
/// weight per column (present where `t` needs them). Every quantizer checks here.
fn fitted_rows(
    t: GgmlType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    out_len: usize,
) -> Result<(usize, usize)> {
    let name = t.name();
    let refuse =
        |detail: String| Err(Error::invalid(Rule::BadQuantization, format!("quantizing into {name}: {detail}")));
    if n_per_row == 0 {
        return refuse("rows of 0 elements".into());
    }
    let Some(row_size) = row_bytes(t, n_per_row) else {
        return refuse(format!(
            "blocks hold {} elements; rows of {n_per_row} do not fill whole blocks",
            t.block_elements()
        ));
    };
    if src.len() % n_per_row != 0 {
        return refuse(format!("{} values are not whole rows of {n_per_row}", src.len()));
    }
    let rows = src.len() / n_per_row;
    if rows.checked_mul(row_size) != Some(out_len) {
        return refuse(format!("{rows} rows of {row_size} bytes do not fill an output of {out_len} bytes"));
    }
    match importance {
        Some(weights) if weights.len() != n_per_row => {
            refuse(format!("{} importance weights for rows of {n_per_row}", weights.len()))
        }
        None if requires_importance(t) => {
            refuse("the type needs an importance matrix (ggml refuses to quantize it without one)".into())
        }
        _ => Ok((rows, row_size)),
    }
}

/// Runs `kernel` on every row of `src`, writing each into its `row_size` bytes of `out`.
fn each_row(
    kernel: RowKernel,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    out: &mut [u8],
    row_size: usize,
) {
    for (row, out) in src.chunks_exact(n_per_row).zip(out.chunks_exact_mut(row_size)) {
        kernel(row, importance, out);
    }
}

/// Runs `quantize` on every `N`-value block of `row` with its `B` output bytes (and the block's
/// importance weights, when given).
#[inline(always)]
fn each_block<const N: usize, const B: usize>(
    row: &[f32],
    importance: Option<&[f32]>,
    out: &mut [u8],
    mut quantize: impl FnMut(&[f32; N], Option<&[f32; N]>, &mut [u8; B]),
) {
    let blocks = row.chunks_exact(N).zip(out.chunks_exact_mut(B));
    match importance {
        Some(weights) => {
            for ((x, y), w) in blocks.zip(weights.chunks_exact(N)) {
                if let (Ok(x), Ok(w), Ok(y)) = (x.try_into(), w.try_into(), y.try_into()) {
                    quantize(x, Some(w), y);
                }
            }
        }
        None => {
            for (x, y) in blocks {
                // Always whole blocks: chunks_exact gives nothing shorter.
                if let (Ok(x), Ok(y)) = (x.try_into(), y.try_into()) {
                    quantize(x, None, y);
                }
            }
        }
    }
}

/// ggml's `nearest_int`: `v` rounded to the nearest integer, ties to even, by adding 1.5 * 2^23
/// and reading the low mantissa bits (exact for |v| < 2^22; other values give what those bits
/// hold, as in ggml, whose range assertion is compiled out).
#[inline(always)]
fn nearest_int(v: f32) -> i32 {
    let bits = (v + 12_582_912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// C's conversion of a float to a 32-bit integer as x86 performs it (`cvttss2si`): toward zero,
/// and `i32::MIN` for NaN and values out of range. ggml's conversions to narrower integers go
/// through it and keep the low bits.
#[inline(always)]
fn truncate_i32(v: f32) -> i32 {
    // `as` saturates (NaN to 0); the comparison picks x86's answer for what is out of range.
    let t = v as i32;
    if (-2_147_483_648.0..2_147_483_648.0).contains(&v) { t } else { i32::MIN }
}

/// C's `(int) roundf(v)` on x86: `v` rounded half away from zero, `i32::MIN` for NaN and values
/// out of range (computed without a call to `roundf`: the fraction left by truncation is exact).
#[inline(always)]
fn round_i32(v: f32) -> i32 {
    let t = truncate_i32(v);
    let fraction = v - t as f32;
    // Branch-free, so that loops of it vectorize; i32::MIN (NaN, out of range) stays.
    let valid = t != i32::MIN;
    t + i32::from(valid & (fraction >= 0.5)) - i32::from(valid & (fraction <= -0.5))
}

/// ggml's `GGML_FP32_TO_FP16`: round to nearest even, overflow to infinity, NaN to `0x7E00`
/// with the sign kept (the bit-exact computation ggml's base library does without F16C).
#[inline(always)]
pub(in crate::model::quant::ggml) fn fp16(f: f32) -> u16 {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;
    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);
    // ggml adds `base` to this term: addition commutes exactly (and the term is never NaN).
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    ((sign >> 16) | if shl1_w > 0xFF00_0000 { 0x7E00 } else { nonsign }) as u16
}

/// `1 / d`, or 0 where `d` is zero (ggml's `d ? 1.0f/d : 0.0f`).
#[inline(always)]
pub(in crate::model::quant::ggml) fn inverse(d: f32) -> f32 {
    if d != 0.0 { 1.0 / d } else { 0.0 }
}

/// ggml's `GGML_FP16_TO_FP32` (exact widening).
#[inline(always)]
fn fp16_to_f32(h: u16) -> f32 {
    let w = u32::from(h) << 16;
    let sign = w & 0x8000_0000;
    let two_w = w.wrapping_add(w);
    let exp_offset = 0xE0u32 << 23;
    let exp_scale = f32::from_bits(0x0780_0000); // 2^-112
    let normalized = f32::from_bits((two_w >> 4) + exp_offset) * exp_scale;
    let magic_mask = 126u32 << 23;
    let denormalized = f32::from_bits((two_w >> 17) | magic_mask) - 0.5;
    let denormalized_cutoff = 1u32 << 27;
    let result = sign | if two_w < denormalized_cutoff { denormalized.to_bits() } else { normalized.to_bits() };
    f32::from_bits(result)
}

/// `x` (at least `G * N` values) as `G` groups of `N`, copied.
#[inline(always)]
fn groups<const G: usize, const N: usize>(x: &[f32]) -> [[f32; N]; G] {
    std::array::from_fn(|j| std::array::from_fn(|l| x[N * j + l]))
}

/// `x` (at least `L * N` values, `L` groups of `N`) with group `k` in lane `k` of each of `N`
/// rows: the layout the scale searches work on, every group at once.
#[inline(always)]
fn lanes<const N: usize, const L: usize>(x: &[f32]) -> [[f32; L]; N] {
    std::array::from_fn(|i| std::array::from_fn(|k| x[N * k + i]))
}

/// Levels in [`lanes`] layout laid out group after group again.
#[inline(always)]
fn unlane<T: Copy, const N: usize, const L: usize, const LEN: usize>(levels: &[[T; L]; N]) -> [T; LEN] {
    std::array::from_fn(|at| levels[at % N][at / N])
}

/// The sum of `x[i]^2`, in order.
#[inline(always)]
fn sum_squares(x: &[f32]) -> f32 {
    let mut sum = 0f32;
    for &v in x {
        sum += v * v;
    }
    sum
}

/// Writes `value` little-endian at `at`.
#[inline(always)]
fn put_u16(out: &mut [u8], at: usize, value: u16) {
    out[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

/// `value` rounded to half precision as ggml rounds scales, written at `at`; returns the bits.
#[inline(always)]
fn put_f16(out: &mut [u8], at: usize, value: f32) -> u16 {
    let h = fp16(value);
    put_u16(out, at, h);
    h
}
