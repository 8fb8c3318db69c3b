//! Quantization into ggml's grid types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M),
//! bit for bit as `ggml_quantize_chunk` does it.
//!
//! Each kernel follows ggml's reference code operation for operation in `f32` (the order of
//! every sum and product decides the rounding, and the rounding decides which grid point wins a
//! close call), without fused multiply-add (ggml's base library is built for baseline x86-64),
//! and with ggml's own quirks kept where they change bytes: its half-precision rounding, its
//! `nearest_int` (the float's mantissa bits after adding 1.5 * 2^23), its `MAX` macro (which
//! lets a NaN through one way and not the other), the byte wrap of `make_qp_quants`' first
//! codes, glibc's merge sort for IQ1's ordering, and IQ3_S's cursor that a skipped sub-block
//! does not advance.
//!
//! Where ggml aborts (a value it cannot place on its grid: NaN, or sums that overflow to
//! infinity) or would read outside its tables, the quantization fails with an error naming the
//! type, the row and the block instead.

mod iq1;
mod iq2;
mod iq3;
mod lattice;
#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::error::{Error, Result, Rule};
use crate::model::quant::GgmlType;
// ggml's half-precision rounding and the little-endian store, shared with the other kernels.
use super::{fp16 as fp16_bits, put_u16};

/// Elements of one ggml super-block (`QK_K`).
const QK_K: usize = 256;

/// Rows larger than this in all are quantized on several threads.
const PARALLEL_ABOVE: usize = 1 << 16;

/// Where ggml stops with an assertion (or would read outside its tables): the block and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Abort {
    /// The super-block of the row.
    block: usize,
    /// What ggml finds wrong there.
    why: &'static str,
}

/// What a kernel reports: `Ok`, or ggml's abort with why (the block is set by the caller).
type Step<T> = std::result::Result<T, &'static str>;

/// Quantizes one row (whole super-blocks) into its bytes, with the importance weights of the
/// row or without.
type Kernel = fn(&[f32], Option<&[f32]>, &mut [u8]) -> std::result::Result<(), Abort>;

/// Quantizes `src` (rows of `n_per_row` f32 values) into `out` (rows * row bytes of `t`) for the
/// IQ grid types, as ggml_quantize_chunk does, with `importance` (n_per_row weights) or without.
pub(crate) fn quantize(
    t: GgmlType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    out: &mut [u8],
) -> Result<()> {
    let kernel = kernel(t)?;
    let (_, row_bytes) = super::fitted_rows(t, src, n_per_row, importance, out.len())?;
    let run = |(row, (x, y)): (usize, (&[f32], &mut [u8]))| {
        kernel(x, importance, y).map_err(|abort| {
            Error::invalid(
                Rule::BadValue,
                format!(
                    "{}: row {row}, block {}: {} (ggml aborts here); the row holds NaN, infinite or overflowing values",
                    t.name(),
                    abort.block,
                    abort.why
                ),
            )
        })
    };
    if src.len() > PARALLEL_ABOVE {
        // The first failing row, whichever thread meets a failure first.
        let rows = src.par_chunks(n_per_row).zip(out.par_chunks_mut(row_bytes)).enumerate();
        rows.map(run).find_first(|r| r.is_err()).unwrap_or(Ok(()))
    } else {
        src.chunks(n_per_row).zip(out.chunks_mut(row_bytes)).enumerate().try_for_each(run)
    }
}

/// The row kernel of `t`.
fn kernel(t: GgmlType) -> Result<Kernel> {
    Ok(match t {
        GgmlType::IQ2_XXS => iq2::iq2_xxs,
        GgmlType::IQ2_XS => iq2::iq2_xs,
        GgmlType::IQ2_S => iq2::iq2_s,
        GgmlType::IQ3_XXS => iq3::iq3_xxs,
        GgmlType::IQ3_S => iq3::iq3_s,
        GgmlType::IQ1_S => iq1::iq1_s,
        GgmlType::IQ1_M => iq1::iq1_m,
        _ => return Err(Error::unsupported(format!("{} is not one of ggml's grid (IQ1/IQ2/IQ3) types", t.name()))),
    })
}

/// Runs `block` on every super-block of a row: `B` output bytes each, with the row's importance
/// weights for it when given.
#[inline(always)]
fn each_block<const B: usize>(
    x: &[f32],
    importance: Option<&[f32]>,
    out: &mut [u8],
    mut block: impl FnMut(&[f32; QK_K], Option<&[f32; QK_K]>, &mut [u8; B]) -> Step<()>,
) -> std::result::Result<(), Abort> {
    for (i, (xb, yb)) in x.chunks_exact(QK_K).zip(out.chunks_exact_mut(B)).enumerate() {
        // Whole chunks by construction (the row is whole blocks, the output whole block bytes).
        let (Ok(xb), Ok(yb)) = (<&[f32; QK_K]>::try_from(xb), <&mut [u8; B]>::try_from(yb)) else {
            return Err(Abort { block: i, why: "a partial block" });
        };
        let qw = match importance.map(|w| w.get(i * QK_K..(i + 1) * QK_K).map(<&[f32; QK_K]>::try_from)) {
            None => None,
            Some(Some(Ok(w))) => Some(w),
            Some(_) => return Err(Abort { block: i, why: "importance weights shorter than the row" }),
        };
        block(xb, qw, yb).map_err(|why| Abort { block: i, why })?;
    }
    Ok(())
}

/// ggml's `nearest_int`: the low mantissa bits of `x + 1.5 * 2^23`, which round half to even
/// for |x| < 2^22 and give some fixed integer for anything else (NaN included).
#[inline(always)]
fn nearest_int(x: f32) -> i32 {
    let biased = x + 12582912.0;
    (biased.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// ggml's `MAX(a, b)` for floats: `a > b ? a : b` (a NaN `b` wins, a NaN `a` loses).
#[inline(always)]
fn max_c(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// ggml's `GGML_ASSERT(scale >= 0)`: a NaN or negative scale stops it.
#[inline(always)]
fn not_negative(scale: f32) -> Step<()> {
    if scale.is_nan() || scale < 0.0 { Err("a negative or NaN scale") } else { Ok(()) }
}

/// ggml's `MAX(lo, MIN(hi, l))` for integer codes.
#[inline(always)]
fn clamp_code(l: i32, hi: i32) -> i32 {
    l.min(hi).max(0)
}

/// ggml's sign handling of the 2- and 3-bit grids with an even count of negative signs: the
/// magnitudes of eight values and their sign bits, where an odd count of negatives makes the
/// least important value (smallest weight * x * x) positive-signed instead, its magnitude
/// negated. Returns the seven stored sign bits.
#[inline(always)]
fn even_signs(xb: &[f32], weight: &[f32], xval: &mut [f32]) -> u8 {
    let mut nflip = 0;
    let mut s = 0u8;
    for i in 0..8 {
        if xb[i] >= 0.0 {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            nflip += 1;
            s |= 1 << i;
        }
    }
    if nflip % 2 == 1 {
        let mut imin = 0;
        let mut min = weight[0] * xb[0] * xb[0];
        for i in 1..8 {
            let ax = weight[i] * xb[i] * xb[i];
            if ax < min {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= 1 << imin;
    }
    s & 127
}

/// The sum of squares of a super-block, in ggml's order.
#[inline(always)]
fn sum_squares(x: &[f32; QK_K]) -> f32 {
    let mut sum = 0f32;
    for &v in x {
        sum += v * v;
    }
    sum
}

/// The scale of a sub-block over a super-block scale `id` (its inverse), as a 4-bit code
/// (0..=15 through ggml's `nearest_int(0.5 * (id * scale - 1))`), or `hi` for IQ1's 3 bits.
#[inline(always)]
fn scale_code(id: f32, scale: f32, hi: i32) -> i32 {
    clamp_code(nearest_int(0.5 * (id * scale - 1.0)), hi)
}
