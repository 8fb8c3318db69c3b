//! AVX2 for the blocks of 32 without importance (ggml's `quantize_row_q{4,5}_{0,1}_ref` and
//! `quantize_row_q8_0_ref`): a block's 32 values as four vectors of eight, its maximum (or
//! minimum and maximum) reduced across them, each value scaled with a separate multiply and
//! add and truncated with `cvttps2dq`, which is C's conversion on x86 (the scalar
//! `truncate_i32`: NaN and values out of range give `i32::MIN`). The scale is rounded to half
//! precision by the scalar [`fp16`]. Blocks whose answer depends on the order of a sequential
//! loop go to the scalar kernel: a zero as the minimum or maximum of a `_1` type (0 or -0:
//! whichever came first), a NaN in a Q8_0 block (`MAX(amax, fabsf(v))` restarts after it).
//!
//! And the other block formats whose kernels are simple enough: MXFP4, TQ1_0 and TQ2_0's
//! digits, BF16.

// From Rust 1.87 the arithmetic intrinsics are safe to call in functions that enable their
// feature; the `unsafe` blocks around them keep the workspace's rust-version (1.85) building.
#![allow(unused_unsafe)]

use std::arch::x86_64::*;

use super::super::quantize::{fp16, inverse};

/// The scalar kernel of one block: what the SIMD kernel falls back to.
type Block<const B: usize> = fn(&[f32; 32], &mut [u8; B]);

/// Q4_0 of `row` (whole blocks) into `out` with AVX2; false (nothing written) where AVX2 does
/// not run here.
pub(in crate::model::quant::ggml) fn q4_0(row: &[f32], out: &mut [u8]) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { q4_0_avx2(row, out) }
    })
}

/// Q4_1 (see [`q4_0`]); `scalar` takes the blocks the SIMD code leaves.
pub(in crate::model::quant::ggml) fn q4_1(row: &[f32], out: &mut [u8], scalar: Block<20>) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { q4_1_avx2(row, out, scalar) }
    })
}

/// Q5_0 (see [`q4_0`]).
pub(in crate::model::quant::ggml) fn q5_0(row: &[f32], out: &mut [u8]) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { q5_0_avx2(row, out) }
    })
}

/// Q5_1 (see [`q4_1`]).
pub(in crate::model::quant::ggml) fn q5_1(row: &[f32], out: &mut [u8], scalar: Block<24>) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { q5_1_avx2(row, out, scalar) }
    })
}

/// Q8_0 (see [`q4_1`]).
pub(in crate::model::quant::ggml) fn q8_0(row: &[f32], out: &mut [u8], scalar: Block<34>) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { q8_0_avx2(row, out, scalar) }
    })
}

/// Runs `kernel` where the AVX2 kernels run in this process.
#[inline(always)]
fn run(kernel: impl FnOnce()) -> bool {
    if !super::avx2() {
        return false;
    }
    kernel();
    true
}

/// The blocks of `row` with their `B` bytes of `out`, as arrays.
#[inline(always)]
fn blocks<'a, const B: usize>(
    row: &'a [f32],
    out: &'a mut [u8],
) -> impl Iterator<Item = (&'a [f32; 32], &'a mut [u8; B])> {
    row.chunks_exact(32)
        .zip(out.chunks_exact_mut(B))
        .filter_map(|(x, y)| Some((x.try_into().ok()?, y.try_into().ok()?)))
}

/// Q4_0 with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q4_0_avx2(row: &[f32], out: &mut [u8]) {
    for (x, y) in blocks::<18>(row, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); `load` reads the
        // 32 values of the array `x`; `pack4` writes 16 bytes of the 18 of `y`.
        unsafe {
            let v = load(x);
            let amax = largest_magnitude(&v);
            let max = if amax == 0.0 { 0.0 } else { first_of_magnitude(x, &v, amax) };
            let d = max / -8.0;
            let id = inverse(d);
            y[..2].copy_from_slice(&fp16(d).to_le_bytes());
            let q = bytes(scaled(&v, id, 8.5));
            pack4(_mm256_min_epi8(q, _mm256_set1_epi8(15)), &mut y[2..18]);
        }
    }
}

/// Q4_1 with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q4_1_avx2(row: &[f32], out: &mut [u8], scalar: Block<20>) {
    for (x, y) in blocks::<20>(row, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); `load` reads the
        // 32 values of the array `x`; `pack4` writes 16 bytes of the 20 of `y`.
        unsafe {
            let v = load(x);
            let Some((min, max)) = min_max(&v) else {
                scalar(x, y);
                continue;
            };
            let d = (max - min) / 15.0;
            let id = inverse(d);
            y[..2].copy_from_slice(&fp16(d).to_le_bytes());
            y[2..4].copy_from_slice(&fp16(min).to_le_bytes());
            let q = bytes(offset_scaled(&v, min, id));
            pack4(_mm256_min_epi8(q, _mm256_set1_epi8(15)), &mut y[4..20]);
        }
    }
}

/// Q5_0 with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q5_0_avx2(row: &[f32], out: &mut [u8]) {
    for (x, y) in blocks::<22>(row, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); `load` reads the
        // 32 values of the array `x`; `pack5` writes 20 bytes of the 22 of `y`.
        unsafe {
            let v = load(x);
            let amax = largest_magnitude(&v);
            let max = if amax == 0.0 { 0.0 } else { first_of_magnitude(x, &v, amax) };
            let d = max / -16.0;
            let id = inverse(d);
            y[..2].copy_from_slice(&fp16(d).to_le_bytes());
            let q = bytes(scaled(&v, id, 16.5));
            pack5(_mm256_min_epi8(q, _mm256_set1_epi8(31)), &mut y[2..22]);
        }
    }
}

/// Q5_1 with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q5_1_avx2(row: &[f32], out: &mut [u8], scalar: Block<24>) {
    for (x, y) in blocks::<24>(row, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); `load` reads the
        // 32 values of the array `x`; `pack5` writes 20 bytes of the 24 of `y`.
        unsafe {
            let v = load(x);
            let Some((min, max)) = min_max(&v) else {
                scalar(x, y);
                continue;
            };
            let d = (max - min) / 31.0;
            let id = inverse(d);
            y[..2].copy_from_slice(&fp16(d).to_le_bytes());
            y[2..4].copy_from_slice(&fp16(min).to_le_bytes());
            pack5(bytes(offset_scaled(&v, min, id)), &mut y[4..24]);
        }
    }
}

/// Q8_0 with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q8_0_avx2(row: &[f32], out: &mut [u8], scalar: Block<34>) {
    for (x, y) in blocks::<34>(row, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); `load` reads the
        // 32 values of the array `x`, the store writes 32 bytes at byte 2 of the 34 of `y`.
        unsafe {
            let v = load(x);
            if has_nan(&v) {
                scalar(x, y);
                continue;
            }
            let d = largest_magnitude(&v) / 127.0;
            let id = _mm256_set1_ps(inverse(d));
            y[..2].copy_from_slice(&fp16(d).to_le_bytes());
            let mut q = [_mm256_setzero_si256(); 4];
            for k in 0..4 {
                q[k] = round(_mm256_mul_ps(v[k], id));
            }
            let q = bytes(q);
            _mm256_storeu_si256(y[2..34].as_mut_ptr().cast(), q);
        }
    }
}

/// The 32 values of a block.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load(x: &[f32; 32]) -> [__m256; 4] {
    let p = x.as_ptr();
    // SAFETY: each load reads 8 of the 32 floats of `x`.
    unsafe { [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)), _mm256_loadu_ps(p.add(16)), _mm256_loadu_ps(p.add(24))] }
}

/// `|v|`: the sign bit cleared.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn abs(v: __m256) -> __m256 {
    // SAFETY: plain AVX arithmetic, in functions that enable AVX2.
    unsafe { _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFF_FFFF))) }
}

/// ggml's `if (amax < fabsf(v)) amax = fabsf(v)` from 0: NaN is never kept (`maxps` answers
/// its second operand, the running maximum, where the first is NaN), so any order agrees.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn largest_magnitude(v: &[__m256; 4]) -> f32 {
    // SAFETY: plain AVX arithmetic, in functions that enable AVX2.
    unsafe {
        let mut m = _mm256_setzero_ps();
        for &v in v {
            m = _mm256_max_ps(abs(v), m);
        }
        horizontal_max(m)
    }
}

/// The first value of `x` whose magnitude is `amax` (a magnitude of it, not 0).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn first_of_magnitude(x: &[f32; 32], v: &[__m256; 4], amax: f32) -> f32 {
    let mut mask = 0u32;
    let amax = _mm256_set1_ps(amax);
    for (k, &v) in v.iter().enumerate() {
        // SAFETY: plain AVX arithmetic, in a function that enables AVX2.
        let equal = unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(abs(v), amax)) };
        mask |= (equal as u32) << (8 * k);
    }
    // `amax` is the magnitude of one of the values: some bit is set.
    x[(mask.trailing_zeros() as usize).min(31)]
}

/// ggml's `if (v < min) min = v; if (v > max) max = v;` from `FLT_MAX` and `-FLT_MAX` (NaN
/// skipped: `minps` and `maxps` answer the running value), or None where either is a zero
/// (of 0 and -0 the first one counts: the scalar kernel's order).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn min_max(v: &[__m256; 4]) -> Option<(f32, f32)> {
    // SAFETY: plain AVX arithmetic, in functions that enable AVX2.
    let (min, max) = unsafe {
        let (mut min, mut max) = (_mm256_set1_ps(f32::MAX), _mm256_set1_ps(-f32::MAX));
        for &v in v {
            min = _mm256_min_ps(v, min);
            max = _mm256_max_ps(v, max);
        }
        (horizontal_min(min), horizontal_max(max))
    };
    (min != 0.0 && max != 0.0).then_some((min, max))
}

/// The largest of the eight lanes of `m` (no NaN there: any order agrees).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn horizontal_max(m: __m256) -> f32 {
    let m = _mm256_max_ps(m, _mm256_permute2f128_ps::<1>(m, m));
    let m = _mm256_max_ps(m, _mm256_permute_ps::<0b01_00_11_10>(m));
    let m = _mm256_max_ps(m, _mm256_permute_ps::<0b10_11_00_01>(m));
    _mm256_cvtss_f32(m)
}

/// The smallest of the eight lanes of `m` (no NaN there: any order agrees).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn horizontal_min(m: __m256) -> f32 {
    let m = _mm256_min_ps(m, _mm256_permute2f128_ps::<1>(m, m));
    let m = _mm256_min_ps(m, _mm256_permute_ps::<0b01_00_11_10>(m));
    let m = _mm256_min_ps(m, _mm256_permute_ps::<0b10_11_00_01>(m));
    _mm256_cvtss_f32(m)
}

/// `v * id + add`, truncated: the levels of the `_0` types.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn scaled(v: &[__m256; 4], id: f32, add: f32) -> [__m256i; 4] {
    let (id, add) = (_mm256_set1_ps(id), _mm256_set1_ps(add));
    let mut q = [_mm256_setzero_si256(); 4];
    for k in 0..4 {
        q[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v[k], id), add));
    }
    q
}

/// `(v - min) * id + 0.5`, truncated: the levels of the `_1` types.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn offset_scaled(v: &[__m256; 4], min: f32, id: f32) -> [__m256i; 4] {
    let (min, id, half) = (_mm256_set1_ps(min), _mm256_set1_ps(id), _mm256_set1_ps(0.5));
    let mut q = [_mm256_setzero_si256(); 4];
    for k in 0..4 {
        q[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v[k], min), id), half));
    }
    q
}

/// Whether any of the values is NaN.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn has_nan(v: &[__m256; 4]) -> bool {
    let mut mask = 0;
    for &v in v {
        mask |= _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    }
    mask != 0
}

/// C's `(int) roundf(v)` on x86 (the scalar `round_i32`): the
/// truncation, moved one away from zero where the exact fraction left is at least one half,
/// `i32::MIN` kept.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn round(v: __m256) -> __m256i {
    // SAFETY: plain AVX arithmetic, in functions that enable AVX2.
    unsafe {
        let t = _mm256_cvttps_epi32(v);
        let fraction = _mm256_sub_ps(v, _mm256_cvtepi32_ps(t));
        let invalid = _mm256_cmpeq_epi32(t, _mm256_set1_epi32(i32::MIN));
        let up = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(fraction, _mm256_set1_ps(0.5)));
        let down = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(fraction, _mm256_set1_ps(-0.5)));
        // The masks are -1 where true.
        let t = _mm256_sub_epi32(t, _mm256_andnot_si256(invalid, up));
        _mm256_add_epi32(t, _mm256_andnot_si256(invalid, down))
    }
}

/// The low byte of each of the 32 integers, in order (C's conversion of `int` to a byte).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn bytes(q: [__m256i; 4]) -> __m256i {
    // SAFETY: plain AVX2 arithmetic, in functions that enable AVX2.
    unsafe {
        let low = _mm256_set1_epi32(0xFF);
        let [a, b, c, d] = [q[0], q[1], q[2], q[3]];
        let (a, b, c, d) =
            (_mm256_and_si256(a, low), _mm256_and_si256(b, low), _mm256_and_si256(c, low), _mm256_and_si256(d, low));
        // Saturation changes nothing (0..=255); the packs interleave the 128-bit halves.
        let ab = _mm256_packus_epi32(a, b);
        let cd = _mm256_packus_epi32(c, d);
        let packed = _mm256_packus_epi16(ab, cd);
        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}

/// Nibbles into 16 bytes: element `j` in the low nibble of byte `j` (its whole byte, as in
/// ggml's `qs[j] = xi0`), element `j + 16` in its high nibble.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn pack4(q: __m256i, qs: &mut [u8]) {
    assert!(qs.len() >= 16);
    // SAFETY: plain AVX2 arithmetic, in functions that enable AVX2; the store writes 16 bytes
    // of `qs`, which has at least 16.
    unsafe {
        let (low, high) = (_mm256_castsi256_si128(q), _mm256_extracti128_si256::<1>(q));
        let high = _mm_and_si128(_mm_slli_epi16::<4>(high), _mm_set1_epi8(0xF0u8 as i8));
        _mm_storeu_si128(qs.as_mut_ptr().cast(), _mm_or_si128(low, high));
    }
}

/// Five-bit levels into 20 bytes: the 32 fifth bits as a little-endian `u32` (element `j` in
/// bit `j`), then the low nibbles as [`pack4`] packs them.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn pack5(q: __m256i, y: &mut [u8]) {
    assert!(y.len() >= 20);
    // SAFETY: plain AVX2 arithmetic, in functions that enable AVX2; the store writes 16 bytes
    // at byte 4 of `y`, which has at least 20.
    unsafe {
        let fifth = _mm256_movemask_epi8(_mm256_slli_epi16::<3>(q)) as u32;
        y[..4].copy_from_slice(&fifth.to_le_bytes());
        let nibbles = _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
        let (low, high) = (_mm256_castsi256_si128(nibbles), _mm256_extracti128_si256::<1>(nibbles));
        let high = _mm_slli_epi16::<4>(high);
        _mm_storeu_si128(y[4..].as_mut_ptr().cast(), _mm_or_si128(low, high));
    }
}

/// MXFP4 of `row` (whole blocks of 32) into `out` with AVX2: the block's largest magnitude
/// reduced across its four vectors, the exponent by the scalar code, each value's code ggml's
/// `best_index_mxfp4` (the first of the 16 E2M1 values whose error `|v * d - x|` is least)
/// computed for eight values at once with the same operations. False (nothing written) where
/// AVX2 does not run here.
pub(in crate::model::quant::ggml) fn mxfp4(row: &[f32], out: &mut [u8]) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { mxfp4_avx2(row, out) }
    })
}

/// [`mxfp4`] with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn mxfp4_avx2(row: &[f32], out: &mut [u8]) {
    use super::super::quantize::nonlinear::{E2M1_DOUBLED, mxfp4_scale};
    let values = E2M1_DOUBLED.map(f32::from);
    for (x, y) in blocks::<17>(row, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); `load` reads the
        // 32 values of the array `x`; `pack4` writes 16 bytes of the 17 of `y`.
        unsafe {
            let v = load(x);
            let (e, d) = mxfp4_scale(largest_magnitude(&v));
            y[0] = e;
            let d = _mm256_set1_ps(d);
            let mut q = [_mm256_setzero_si256(); 4];
            for (q, &x) in q.iter_mut().zip(&v) {
                let mut best_err = abs(_mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(values[0]), d), x));
                for (i, &value) in values.iter().enumerate().skip(1) {
                    let err = abs(_mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(value), d), x));
                    // NaN never compares less: the first code stays, as in ggml.
                    let less = _mm256_cmp_ps::<_CMP_LT_OQ>(err, best_err);
                    *q = _mm256_blendv_epi8(*q, _mm256_set1_epi32(i as i32), _mm256_castps_si256(less));
                    best_err = _mm256_blendv_ps(best_err, err, less);
                }
            }
            pack4(bytes(q), &mut y[1..17]);
        }
    }
}

/// The scale and digits of a TQ1_0 or TQ2_0 block (the scalar `ternary`): `d` the largest
/// magnitude, each digit C's `lroundf(x * id) + 1`, rounded as [`round`] rounds. None where AVX2
/// does not run, where a value is NaN (ggml's `MAX(amax, fabsf(v))` restarts after it) or
/// where a product leaves the range of `int` (`lroundf` rounds in 64 bits there): the scalar
/// code takes those blocks.
pub(in crate::model::quant::ggml) fn ternary(x: &[f32; 256]) -> Option<(f32, [i32; 256])> {
    if !super::avx2() {
        return None;
    }
    // SAFETY: AVX2 was detected on this CPU (`avx2` above).
    unsafe { ternary_avx2(x) }
}

/// [`ternary`] with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn ternary_avx2(x: &[f32; 256]) -> Option<(f32, [i32; 256])> {
    let mut digits = [0i32; 256];
    // SAFETY: AVX2 is enabled for this function (the caller's promise); each load reads
    // eight of the 256 values of `x`, each store writes eight of the 256 digits.
    unsafe {
        let p = x.as_ptr();
        let (mut m, mut nan) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for k in 0..32 {
            let v = _mm256_loadu_ps(p.add(8 * k));
            m = _mm256_max_ps(abs(v), m);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        }
        if _mm256_movemask_ps(nan) != 0 {
            return None;
        }
        let d = horizontal_max(m);
        let id = _mm256_set1_ps(inverse(d));
        let (one, out_of_range) = (_mm256_set1_epi32(1), _mm256_set1_epi32(i32::MIN));
        let mut invalid = _mm256_setzero_si256();
        for k in 0..32 {
            let t = round(_mm256_mul_ps(_mm256_loadu_ps(p.add(8 * k)), id));
            invalid = _mm256_or_si256(invalid, _mm256_cmpeq_epi32(t, out_of_range));
            _mm256_storeu_si256(digits.as_mut_ptr().add(8 * k).cast(), _mm256_add_epi32(t, one));
        }
        if _mm256_movemask_epi8(invalid) != 0 {
            return None;
        }
        Some((d, digits))
    }
}

/// BF16 of `row` into `out` (two bytes a value) with AVX2, eight values at a time with the
/// scalar `bf16`'s integer operations (round to nearest even on the top 16 bits; a NaN keeps
/// its top bits with the quiet bit set); the values past the last eight by the scalar code.
/// False (nothing written) where AVX2 does not run here.
pub(in crate::model::quant::ggml) fn bf16(row: &[f32], out: &mut [u8]) -> bool {
    run(|| {
        // SAFETY: `run` calls this only where AVX2 was detected on this CPU.
        unsafe { bf16_avx2(row, out) }
    })
}

/// [`bf16`] with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn bf16_avx2(row: &[f32], out: &mut [u8]) {
    let values = row.chunks_exact(8);
    let (rest, rest_out) = (values.remainder(), row.len() / 8 * 16);
    for (x, y) in values.zip(out.chunks_exact_mut(16)) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); the load reads the
        // 8 floats of `x`, the store the 16 bytes of `y` (chunks of exactly those lengths).
        unsafe {
            let i = _mm256_castps_si256(_mm256_loadu_ps(x.as_ptr()));
            let magnitude = _mm256_and_si256(i, _mm256_set1_epi32(0x7FFF_FFFF));
            // Signed comparison: both sides are below 2^31.
            let nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F80_0000));
            let quiet = _mm256_or_si256(_mm256_srli_epi32::<16>(i), _mm256_set1_epi32(64));
            let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(i), _mm256_set1_epi32(1));
            let bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), odd);
            let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(i, bias));
            let h = _mm256_blendv_epi8(rounded, quiet, nan);
            // Each lane is below 2^16: packing saturates nothing; then the halves in order.
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(h, h));
            _mm_storeu_si128(y.as_mut_ptr().cast(), _mm256_castsi256_si128(packed));
        }
    }
    if let Some(rest_out) = out.get_mut(rest_out..) {
        super::super::quantize::floats::bf16_row_scalar(rest, rest_out);
    }
}
