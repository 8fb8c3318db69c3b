//! AVX2 for two scale searches, their candidates or groups side by side in lanes, each lane
//! computed as the scalar code computes it alone: Q3_K's `make_q3_quants` over a block's 16
//! groups ([`q3_16_groups`]) and IQ4's candidate fits ([`iq4_fits`]). With a NaN among the
//! inputs the scalar code runs: which NaN a sum ends with depends on the order of the operands
//! of each addition, which the compiler picks; without one, every NaN the arithmetic makes is
//! the same default NaN, whatever the order.

// From Rust 1.87 the arithmetic intrinsics are safe to call in functions that enable their
// feature; the `unsafe` blocks around them keep the workspace's rust-version (1.85) building.
#![allow(unused_unsafe)]

use std::arch::x86_64::*;

use super::quantize_x86::abs;

/// ggml's `make_q3_quants` (`nmax` 4, `do_rmse`) of 16 groups of 16 side by side: `x[i][k]`
/// is value `i` of group `k`, each lane computed as ggml computes its group alone (the scalar
/// `make_q3_quants`): the scales and the levels (stored `l + 4`), in the same layout. A group
/// whose largest magnitude is below `zero_below` is all zero. The rounds go on while a lane
/// changes: a round that changes nothing in a lane leaves its sums and levels as they were, so
/// later rounds change nothing there either (where ggml stops that group). None where AVX2
/// does not run, or where a value is NaN.
pub(in crate::model::quant::ggml) fn q3_16_groups(
    x: &[[f32; 16]; 16],
    zero_below: f32,
) -> Option<([f32; 16], [[i8; 16]; 16])> {
    // A NaN among the values goes to the scalar code (see `iq4_fits`).
    if !super::avx2() || x.iter().flatten().any(|v| v.is_nan()) {
        return None;
    }
    let mut scales = [0f32; 16];
    let mut levels = [[0i8; 16]; 16];
    for half in 0..2 {
        // SAFETY: AVX2 was detected on this CPU (`avx2` above).
        let (s, l) = unsafe { q3_8_groups(x, 8 * half, zero_below) };
        scales[8 * half..8 * half + 8].copy_from_slice(&s);
        for (levels, l) in levels.iter_mut().zip(&l) {
            levels[8 * half..8 * half + 8].copy_from_slice(l);
        }
    }
    Some((scales, levels))
}

/// [`q3_16_groups`] of the eight groups (lanes) from `first`.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q3_8_groups(x: &[[f32; 16]; 16], first: usize, zero_below: f32) -> ([f32; 8], [[i8; 8]; 16]) {
    const NMAX: i32 = 4;
    let mut scales = [0f32; 8];
    let mut levels = [[0i8; 8]; 16];
    // SAFETY: AVX2 is enabled for this function (the caller's promise); each load reads the
    // eight floats `first..first + 8` of a row of 16 (`first` is 0 or 8: the slice checks).
    unsafe {
        let mut xs = [_mm256_setzero_ps(); 16];
        for (v, row) in xs.iter_mut().zip(x) {
            let lanes = &row[first..first + 8];
            *v = _mm256_loadu_ps(lanes.as_ptr());
        }
        // The first value of largest magnitude (NaN never compares greater).
        let (mut amax, mut max) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for &v in &xs {
            let ax = abs(v);
            let greater = _mm256_cmp_ps::<_CMP_GT_OQ>(ax, amax);
            amax = _mm256_blendv_ps(amax, ax, greater);
            max = _mm256_blendv_ps(max, v, greater);
        }
        let iscale = _mm256_div_ps(_mm256_set1_ps(-NMAX as f32), max);
        let zero = _mm256_setzero_ps();
        let (mut sumlx, mut suml2) = (zero, zero);
        let mut l = [_mm256_setzero_si256(); 16];
        for (l, &v) in l.iter_mut().zip(&xs) {
            *l = clamped_nearest(_mm256_mul_ps(iscale, v), NMAX);
            let lf = _mm256_cvtepi32_ps(*l);
            let w = _mm256_mul_ps(v, v);
            sumlx = _mm256_add_ps(sumlx, _mm256_mul_ps(_mm256_mul_ps(w, v), lf));
            suml2 = _mm256_add_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(w, lf), lf));
        }
        for _ in 0..5 {
            let mut changed = _mm256_setzero_ps();
            for (l, &v) in l.iter_mut().zip(&xs) {
                let lf = _mm256_cvtepi32_ps(*l);
                let w = _mm256_mul_ps(v, v);
                let wx = _mm256_mul_ps(w, v);
                let slx = _mm256_sub_ps(sumlx, _mm256_mul_ps(wx, lf));
                let sl2 = _mm256_sub_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(w, lf), lf));
                let new_l = clamped_nearest(_mm256_div_ps(_mm256_mul_ps(v, sl2), slx), NMAX);
                let nf = _mm256_cvtepi32_ps(new_l);
                let slx_new = _mm256_add_ps(slx, _mm256_mul_ps(wx, nf));
                let sl2_new = _mm256_add_ps(sl2, _mm256_mul_ps(_mm256_mul_ps(w, nf), nf));
                let moved = _mm256_castsi256_ps(_mm256_cmpeq_epi32(new_l, *l));
                let better = _mm256_and_ps(
                    _mm256_andnot_ps(moved, _mm256_cmp_ps::<_CMP_GT_OQ>(slx, zero)),
                    _mm256_and_ps(
                        _mm256_cmp_ps::<_CMP_GT_OQ>(sl2_new, zero),
                        _mm256_cmp_ps::<_CMP_GT_OQ>(
                            _mm256_mul_ps(_mm256_mul_ps(slx_new, slx_new), suml2),
                            _mm256_mul_ps(_mm256_mul_ps(sumlx, sumlx), sl2_new),
                        ),
                    ),
                );
                *l = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(*l), _mm256_castsi256_ps(new_l), better));
                sumlx = _mm256_blendv_ps(sumlx, slx_new, better);
                suml2 = _mm256_blendv_ps(suml2, sl2_new, better);
                changed = _mm256_or_ps(changed, better);
            }
            if _mm256_movemask_ps(changed) == 0 {
                break;
            }
        }
        let zeroed = _mm256_cmp_ps::<_CMP_LT_OQ>(amax, _mm256_set1_ps(zero_below));
        let keep = _mm256_andnot_ps(zeroed, _mm256_cmp_ps::<_CMP_GT_OQ>(suml2, zero));
        _mm256_storeu_ps(scales.as_mut_ptr(), _mm256_and_ps(keep, _mm256_div_ps(sumlx, suml2)));
        let mut lanes = [0i32; 8];
        for (levels, &l) in levels.iter_mut().zip(&l) {
            let stored = _mm256_andnot_si256(_mm256_castps_si256(zeroed), _mm256_add_epi32(l, _mm256_set1_epi32(NMAX)));
            _mm256_storeu_si256(lanes.as_mut_ptr().cast(), stored);
            for (level, &l) in levels.iter_mut().zip(&lanes) {
                *level = l as i8;
            }
        }
    }
    (scales, levels)
}

/// ggml's `nearest_int` (adding 1.5 * 2^23 and reading the low mantissa bits) clamped to
/// `-nmax..nmax - 1`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn clamped_nearest(v: __m256, nmax: i32) -> __m256i {
    let bits = _mm256_castps_si256(_mm256_add_ps(v, _mm256_set1_ps(12_582_912.0)));
    let n = _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007F_FFFF)), _mm256_set1_epi32(0x0040_0000));
    _mm256_min_epi32(_mm256_max_epi32(n, _mm256_set1_epi32(-nmax)), _mm256_set1_epi32(nmax - 1))
}

/// The fits of 16 candidate inverse scales `ids` of an IQ4 sub-block (32 values `x` with
/// their `weight`), side by side in lanes: for each, `sum(weight * q * x)` and
/// `sum(weight * q * q)` in ggml's order, `q` the value of `values` (ggml's `kvalues_iq4nl`,
/// ascending) ggml's `best_index_int8` picks for `id * x`. None where AVX2 does not run, or
/// where an input is NaN.
pub(in crate::model::quant::ggml) fn iq4_fits(
    x: &[f32; 32],
    weight: &[f32; 32],
    ids: &[f32; 16],
    values: &[i8; 16],
) -> Option<([f32; 16], [f32; 16])> {
    // With a NaN among the inputs, which NaN a sum ends with depends on the order of the
    // operands of each addition, which the compiler picks: those go to the scalar code. Without
    // one, every NaN the arithmetic makes is the same default NaN, whatever the order.
    if !super::avx2() || x.iter().chain(weight).chain(ids).any(|v| v.is_nan()) {
        return None;
    }
    // SAFETY: AVX2 was detected on this CPU (`avx2` above).
    Some(unsafe { iq4_fits_avx2(x, weight, ids, values) })
}

/// [`iq4_fits`] with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn iq4_fits_avx2(
    x: &[f32; 32],
    weight: &[f32; 32],
    ids: &[f32; 16],
    values: &[i8; 16],
) -> ([f32; 16], [f32; 16]) {
    let table = values.map(f32::from);
    let (mut sumqx, mut sumq2) = ([0f32; 16], [0f32; 16]);
    // SAFETY: AVX2 is enabled for this function (the caller's promise); the loads read eight
    // floats of arrays of 16 at 0 and 8, the stores write eight of arrays of 16 at 0 and 8.
    unsafe {
        let tables = [_mm256_loadu_ps(table.as_ptr()), _mm256_loadu_ps(table.as_ptr().add(8))];
        for half in [0, 8] {
            let id = _mm256_loadu_ps(ids.as_ptr().add(half));
            let (mut qx, mut q2) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            for (&x, &w) in x.iter().zip(weight) {
                let (xv, wv) = (_mm256_set1_ps(x), _mm256_set1_ps(w));
                let q = iq4_nearest(_mm256_mul_ps(id, xv), &table, tables);
                let wq = _mm256_mul_ps(wv, q);
                qx = _mm256_add_ps(qx, _mm256_mul_ps(wq, xv));
                q2 = _mm256_add_ps(q2, _mm256_mul_ps(wq, q));
            }
            _mm256_storeu_ps(sumqx.as_mut_ptr().add(half), qx);
            _mm256_storeu_ps(sumq2.as_mut_ptr().add(half), q2);
        }
    }
    (sumqx, sumq2)
}

/// The value ggml's `best_index_int8` picks for each lane of `v` from the ascending `table`
/// (also as two vectors of eight, `tables`): the first at or below it, the last at or above it
/// or for NaN, else of the two values around it the nearer one (the upper on a tie), as its
/// binary search ends. `mu`, the count of values at or below `v` among the first fifteen, is
/// where that search ends.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn iq4_nearest(v: __m256, table: &[f32; 16], tables: [__m256; 2]) -> __m256 {
    let mut mu = _mm256_setzero_si256();
    for &t in &table[..15] {
        let at_or_below = _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_set1_ps(t), v);
        mu = _mm256_sub_epi32(mu, _mm256_castps_si256(at_or_below));
    }
    // SAFETY: AVX2 arithmetic, in functions that enable AVX2.
    let (low, high) = unsafe { (lookup(tables, _mm256_sub_epi32(mu, _mm256_set1_epi32(1))), lookup(tables, mu)) };
    let lower_nearer = _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_sub_ps(v, low), _mm256_sub_ps(high, v));
    let q = _mm256_blendv_ps(high, low, lower_nearer);
    let (first, last) = (_mm256_set1_ps(table[0]), _mm256_set1_ps(table[15]));
    let q = _mm256_blendv_ps(q, first, _mm256_cmp_ps::<_CMP_LE_OQ>(v, first));
    let q = _mm256_blendv_ps(q, last, _mm256_cmp_ps::<_CMP_GE_OQ>(v, last));
    _mm256_blendv_ps(q, last, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v))
}

/// Entry `i` (0..16; others give what the low four bits pick) of a table of 16 floats held as
/// two vectors of eight.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn lookup(tables: [__m256; 2], i: __m256i) -> __m256 {
    let (low, high) = (_mm256_permutevar8x32_ps(tables[0], i), _mm256_permutevar8x32_ps(tables[1], i));
    let upper = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(i));
    // blendv picks by the sign bit: bit 3 of `i` moved there.
    _mm256_blendv_ps(low, high, upper)
}
