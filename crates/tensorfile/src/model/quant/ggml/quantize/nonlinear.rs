//! Types whose codes index a table of values: IQ4_NL and IQ4_XS (ggml's `kvalues_iq4nl`), the
//! ternary TQ1_0 and TQ2_0 (-1, 0, 1), and the FP4 types MXFP4 and NVFP4 (E2M1 values).

use super::extremes::{largest_magnitude, max_magnitude, signed_max};
use super::search::GROUP_MAX_EPS;
use super::{each_block, groups, nearest_int, put_f16, put_u16, round_i32, truncate_i32};

/// IQ4_NL's values (ggml's `kvalues_iq4nl`).
pub(in crate::model::quant::ggml) const IQ4_VALUES: [i8; 16] =
    [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// E2M1 values doubled (ggml's `kvalues_mxfp4`).
pub(in crate::model::quant::ggml) const E2M1_DOUBLED: [i8; 16] =
    [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// ggml's `best_index_int8` over the IQ4 values: the index of the value nearest `x` (a binary
/// search; NaN ends on the last index).
#[inline(always)]
fn best_iq4_index(x: f32) -> u8 {
    let val = |i: usize| f32::from(IQ4_VALUES[i]);
    if x <= val(0) {
        return 0;
    }
    if x >= val(15) {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < val(mav) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    (if x - val(mu - 1) < val(mu) - x { mu - 1 } else { mu }) as u8
}

/// The candidate scales each sub-block of IQ4 tries: the first guess and 2 * 7 + 1 more.
pub(in crate::model::quant::ggml) const CANDIDATES: usize = 16;

/// For each candidate inverse scale `id`, ggml's sums over the 32 values of a sub-block with
/// their levels `q` (the IQ4 value nearest `id * x`): `sum(w * q * x)` and `sum(w * q * q)`,
/// in order. The candidates side by side in AVX2 lanes where that runs.
fn iq4_fits(x: &[f32; 32], weight: &[f32; 32], ids: &[f32; CANDIDATES]) -> ([f32; CANDIDATES], [f32; CANDIDATES]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(fits) = super::super::simd::search_x86::iq4_fits(x, weight, ids, &IQ4_VALUES) {
        return fits;
    }
    iq4_fits_scalar(x, weight, ids)
}

/// [`iq4_fits`] one candidate after the other, as ggml.
pub(in crate::model::quant::ggml) fn iq4_fits_scalar(
    x: &[f32; 32],
    weight: &[f32; 32],
    ids: &[f32; CANDIDATES],
) -> ([f32; CANDIDATES], [f32; CANDIDATES]) {
    let (mut sumqx, mut sumq2) = ([0f32; CANDIDATES], [0f32; CANDIDATES]);
    for ((&id, sumqx), sumq2) in ids.iter().zip(&mut sumqx).zip(&mut sumq2) {
        for j in 0..32 {
            let q = f32::from(IQ4_VALUES[usize::from(best_iq4_index(id * x[j]))]);
            *sumqx += weight[j] * q * x[j];
            *sumq2 += weight[j] * q * q;
        }
    }
    (sumqx, sumq2)
}

/// The search of ggml's `quantize_row_iq4_nl_impl` (with `ntry` 7, as ggml_quantize_chunk
/// runs it) over one super-block of `S` values in sub-blocks of 32: returns `d` and the
/// sub-block scale levels (IQ4_XS: `S` is 256) or the single scale (IQ4_NL: `S` is 32), with
/// the codes.
fn iq4_search<const S: usize, const G: usize>(
    x: &[f32; S],
    qw: Option<&[f32; S]>,
    codes: &mut [u8; S],
) -> (f32, [i32; G]) {
    const NTRY: i32 = 7;
    let mut sigma2 = 0f32;
    for &v in x {
        sigma2 += v * v;
    }
    sigma2 *= 2.0 / S as f32;
    let xs = groups::<G, 32>(x);
    let qws = qw.map(|qw| groups::<G, 32>(qw));
    let mut scales = [0f32; G];
    let (mut max_scale, mut amax_scale) = (0f32, 0f32);
    for ib in 0..G {
        let xb = &xs[ib];
        let mut weight = [0f32; 32];
        for j in 0..32 {
            weight[j] = match &qws {
                Some(qw) => qw[ib][j] * (sigma2 + xb[j] * xb[j]).sqrt(),
                None => xb[j] * xb[j],
            };
        }
        let (amax, max) = signed_max(xb);
        if amax < GROUP_MAX_EPS {
            scales[ib] = 0.0;
            continue;
        }
        // The candidate inverse scales in ggml's order: the first from the largest value,
        // then `NTRY` either side of the value table's end.
        let v0 = f32::from(IQ4_VALUES[0]);
        let mut ids = [1.0 / (-max / v0); CANDIDATES];
        for (id, itry) in ids[1..].iter_mut().zip(-NTRY..=NTRY) {
            *id = (itry + i32::from(IQ4_VALUES[0])) as f32 / max;
        }
        let (sumqx, sumq2) = iq4_fits(xb, &weight, &ids);
        let mut d = if sumq2[0] > 0.0 { sumqx[0] / sumq2[0] } else { 0.0 };
        let mut best = d * sumqx[0];
        for (&sumqx, &sumq2) in sumqx[1..].iter().zip(&sumq2[1..]) {
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if d.abs() > amax_scale {
            amax_scale = d.abs();
            max_scale = d;
        }
    }
    let mut levels = [0i32; G];
    let d = if G > 1 {
        let d = -max_scale / 32.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for ib in 0..G {
            let l = nearest_int(id * scales[ib]).clamp(-32, 31);
            let dl = d * l as f32;
            let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
            for j in 0..32 {
                codes[32 * ib + j] = best_iq4_index(idl * xs[ib][j]);
            }
            levels[ib] = l + 32;
        }
        d
    } else {
        let id = if scales[0] != 0.0 { 1.0 / scales[0] } else { 0.0 };
        for (c, &v) in codes.iter_mut().zip(x) {
            *c = best_iq4_index(id * v);
        }
        scales[0]
    };
    (d, levels)
}

/// Codes four bits each, sixteen bytes per 32: element `j` low, `j + 16` high.
fn pack_nibbles(codes: &[u8], qs: &mut [u8]) {
    for (q, c) in qs.chunks_exact_mut(16).zip(codes.chunks_exact(32)) {
        for j in 0..16 {
            q[j] = c[j] | (c[16 + j] << 4);
        }
    }
}

/// IQ4_NL (18 bytes: `d`, 16 bytes of codes): `x = d * value[q]`.
pub(super) fn iq4_nl(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<32, 18>(row, importance, out, |x, qw, y| {
        let mut codes = [0u8; 32];
        let (d, _) = iq4_search::<32, 1>(x, qw, &mut codes);
        put_f16(y, 0, d);
        pack_nibbles(&codes, &mut y[2..18]);
    });
}

/// IQ4_XS (136 bytes: `d`, a u16 of the scales' top 2 bits, 4 bytes of their low nibbles, 128
/// bytes of codes): sub-block `i` has scale `d * (s - 32)`.
pub(super) fn iq4_xs(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 136>(row, importance, out, |x, qw, y| {
        let mut codes = [0u8; 256];
        let (d, levels) = iq4_search::<256, 8>(x, qw, &mut codes);
        put_f16(y, 0, d);
        let mut high = 0u16;
        y[4..8].fill(0);
        for (ib, &l) in levels.iter().enumerate() {
            y[4 + ib / 2] |= ((l & 0xF) as u8) << (4 * (ib % 2));
            high |= ((l >> 4) as u16) << (2 * ib);
        }
        put_u16(y, 2, high);
        pack_nibbles(&codes, &mut y[8..136]);
    });
}

/// The ternary digit of `v * id` plus one (0, 1, 2): C's `lroundf(v) + 1` stored in an `int`,
/// where glibc's `lroundf` gives `LONG_MIN` for NaN and values past the range of `long`.
#[inline(always)]
fn trit(v: f32) -> i32 {
    let rounded = match round_i32(v) {
        // NaN, or past the range of `int`: `lroundf` rounds in 64 bits.
        i32::MIN if v.abs() < 9_223_372_036_854_775_808.0 => v.round() as i64,
        i32::MIN => i64::MIN,
        r => i64::from(r),
    };
    rounded.wrapping_add(1) as i32
}

/// A ternary block's scale `d` (its largest magnitude, as ggml's `MAX(amax, fabsf(v))` finds
/// it) and the digit of each value ([`trit`] of `x * id`). AVX2 where it runs.
#[inline(always)]
fn ternary(x: &[f32; 256]) -> (f32, [i32; 256]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(found) = super::super::simd::quantize_x86::ternary(x) {
        return found;
    }
    ternary_scalar(x)
}

/// [`ternary`] in scalar code (the reference).
pub(in crate::model::quant::ggml) fn ternary_scalar(x: &[f32; 256]) -> (f32, [i32; 256]) {
    let d = max_magnitude(x);
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    (d, std::array::from_fn(|i| trit(x[i] * id)))
}

/// Digits base 3, most significant first, as a fraction of 256 rounded up (`q * 256 / 243`).
#[inline(always)]
fn pack_trits(digits: impl Iterator<Item = i32>, extra_shift: bool) -> u8 {
    let mut q = 0u8;
    for xi in digits {
        q = q.wrapping_mul(3).wrapping_add(xi as u8);
    }
    if extra_shift {
        q = q.wrapping_mul(3);
    }
    (u32::from(q) * 256).div_ceil(243) as u8
}

/// TQ1_0 (54 bytes: 48 bytes of five digits, 4 of four, `d`): `x = d * t`, `d` the largest
/// magnitude. Importance is not used.
pub(super) fn tq1_0(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 54>(row, None, out, |x, _, y| {
        let (d, t) = ternary(x);
        put_f16(y, 52, d);
        for m in 0..32 {
            y[m] = pack_trits((0..5).map(|n| t[m + 32 * n]), false);
        }
        for m in 0..16 {
            y[32 + m] = pack_trits((0..5).map(|n| t[160 + m + 16 * n]), false);
        }
        for j in 0..4 {
            y[48 + j] = pack_trits((0..4).map(|m| t[240 + j + 4 * m]), true);
        }
    });
}

/// TQ2_0 (66 bytes: 64 bytes of 2-bit codes, `d`): element `128h + 32n + m` in bits `2n` of
/// byte `32h + m`, `x = d * (q - 1)`. Importance is not used.
pub(super) fn tq2_0(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 66>(row, None, out, |x, _, y| {
        let (d, t) = ternary(x);
        put_f16(y, 64, d);
        for h in 0..2 {
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    q = q.wrapping_add(((t[128 * h + m + 32 * n] & 3) << (2 * n)) as u8);
                }
                y[32 * h + m] = q;
            }
        }
    });
}

/// ggml's `best_index_mxfp4`: the first E2M1 code whose value times `e` is nearest `x`.
#[inline(always)]
fn best_fp4_index(x: f32, e: f32) -> u8 {
    let mut best = 0u8;
    let mut best_err = (f32::from(E2M1_DOUBLED[0]) * e - x).abs();
    for (i, &value) in E2M1_DOUBLED.iter().enumerate().skip(1) {
        let err = (f32::from(value) * e - x).abs();
        if err < best_err {
            best = i as u8;
            best_err = err;
        }
    }
    best
}

/// MXFP4 (17 bytes: an E8M0 exponent `e`, 16 bytes of E2M1 codes, element `j` low and `j + 16`
/// high): `e` puts the largest magnitude in the top binade of E2M1. Importance is not used.
pub(super) fn mxfp4(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if super::super::simd::quantize_x86::mxfp4(row, out) {
        return;
    }
    each_block::<32, 17>(row, None, out, |x, _, y| mxfp4_block(x, y));
}

/// The E8M0 exponent of an MXFP4 block whose largest magnitude is `amax`, and the scale it
/// stands for (half of 2^(e - 127): the codes' values are doubled).
#[inline(always)]
pub(in crate::model::quant::ggml) fn mxfp4_scale(amax: f32) -> (u8, f32) {
    // log2f as the C library computes it (Rust's f32::log2 calls the same libm function).
    let e = if amax > 0.0 { truncate_i32(amax.log2().floor() - 2.0 + 127.0) as u8 } else { 0 };
    (e, f32::from_bits(if e < 2 { 0x0020_0000 << e } else { u32::from(e - 1) << 23 }))
}

/// One block of MXFP4 (ggml's `quantize_row_mxfp4_ref`).
pub(in crate::model::quant::ggml) fn mxfp4_block(x: &[f32; 32], y: &mut [u8; 17]) {
    let (e, d) = mxfp4_scale(largest_magnitude(x));
    y[0] = e;
    for j in 0..16 {
        y[1 + j] = best_fp4_index(x[j], d) | (best_fp4_index(x[j + 16], d) << 4);
    }
}

/// ggml's `ggml_fp32_to_ue4m3`: a positive scale as unsigned E4M3 (bias 7), rounding half up,
/// at most `0x7E` (448); zero, negatives and NaN give 0.
fn ue4m3(x: f32) -> u8 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let mut exp = ((bits >> 23) & 0xFF) as i32 - 127 + 7;
    let man = ((bits >> 20) & 7) as i32;
    if exp <= 0 {
        let man = truncate_i32(x * 512.0 + 0.5).min(7);
        return if man < 1 { 0 } else { man as u8 };
    }
    if exp >= 15 {
        return 0x7E;
    }
    let mut man = man + ((bits >> 19) & 1) as i32;
    if man > 7 {
        man = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7E;
        }
    }
    ((exp << 3) | man) as u8
}

/// Half of an unsigned E4M3 scale, as ggml's `ggml_ue4m3_to_fp32` gives it (exact).
fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let (exp, man) = (u32::from((x >> 3) & 0xF), f32::from(x & 7));
    // 2^-9, and 2^(exp - 7) for exp 1..=15: powers of two, so both products are exact.
    let raw =
        if exp == 0 { man * f32::from_bits(118 << 23) } else { (1.0 + man / 8.0) * f32::from_bits((exp + 120) << 23) };
    raw * 0.5
}

/// NVFP4 (36 bytes: four UE4M3 scales, 32 bytes of E2M1 codes): four sub-blocks of 16, each
/// scaled so that its largest magnitude is 6; element `j` of a sub-block in the low nibble of
/// its byte `j % 8`, `j + 8` in the high one. Importance is not used.
pub(super) fn nvfp4(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<64, 36>(row, None, out, |x, _, y| {
        for (s, xb) in x.chunks_exact(16).enumerate() {
            let scale = ue4m3(largest_magnitude(xb) / 6.0);
            y[s] = scale;
            let d = ue4m3_half(scale);
            for j in 0..8 {
                y[4 + 8 * s + j] = best_fp4_index(xb[j], d) | (best_fp4_index(xb[8 + j], d) << 4);
            }
        }
    });
}
