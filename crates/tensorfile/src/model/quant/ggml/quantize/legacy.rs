//! The blocks of 32 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and the 1- and 2-bit ones (Q1_0 of 128,
//! Q2_0 of 64). Without importance every type runs ggml's `quantize_row_*_ref`; with it
//! Q4_0/Q5_0 run `make_qx_quants` and Q4_1/Q5_1 `make_qkx3_quants`, weighted by the importance
//! times `sqrt(sigma2 + x^2)` (`sigma2` the row's mean square); Q8_0, Q1_0 and Q2_0 ignore it.

use super::extremes::{largest_magnitude, max_magnitude, min_max, signed_max};
use super::search::{Steps, make_qkx_quants, make_qx_quants};
use super::{each_block, fp16, inverse, lanes, nearest_int, put_f16, put_u16, round_i32, truncate_i32};

#[cfg(target_arch = "x86_64")]
use super::super::simd::quantize_x86 as simd;

/// Without the SIMD kernels (another architecture): nothing done, the scalar kernels run.
#[cfg(not(target_arch = "x86_64"))]
mod simd {
    pub(super) fn q4_0(_: &[f32], _: &mut [u8]) -> bool {
        false
    }
    pub(super) fn q5_0(_: &[f32], _: &mut [u8]) -> bool {
        false
    }
    pub(super) fn q4_1(_: &[f32], _: &mut [u8], _: fn(&[f32; 32], &mut [u8; 20])) -> bool {
        false
    }
    pub(super) fn q5_1(_: &[f32], _: &mut [u8], _: fn(&[f32; 32], &mut [u8; 24])) -> bool {
        false
    }
    pub(super) fn q8_0(_: &[f32], _: &mut [u8], _: fn(&[f32; 32], &mut [u8; 34])) -> bool {
        false
    }
}

/// The row's mean square, `sum(x^2) / n` (ggml's `sigma2` for the 32-element types).
fn mean_square(row: &[f32]) -> f32 {
    let mut sum_x2 = 0f32;
    for &v in row {
        sum_x2 += v * v;
    }
    sum_x2 / row.len() as f32
}

/// Quantizes `L` blocks with importance: their values, importance, the row's `sigma2`, and
/// their `L` blocks of output.
type LaneSearch = fn(&[f32], &[f32], f32, &mut [u8]);

/// The blocks of a row with importance: eight at a time, as lanes of one search, then the rest
/// one at a time (each block is searched alone in ggml: lanes change nothing but the speed).
fn in_lanes<const B: usize>(row: &[f32], importance: &[f32], out: &mut [u8], eight: LaneSearch, one: LaneSearch) {
    let sigma2 = mean_square(row);
    for ((x, qw), y) in row.chunks(256).zip(importance.chunks(256)).zip(out.chunks_mut(8 * B)) {
        if x.len() == 256 {
            eight(x, qw, sigma2, y);
        } else {
            for ((x, qw), y) in x.chunks_exact(32).zip(qw.chunks_exact(32)).zip(y.chunks_exact_mut(B)) {
                one(x, qw, sigma2, y);
            }
        }
    }
}

/// `L` blocks of 32 in lanes, with their weights `importance * sqrt(sigma2 + x^2)`.
#[inline(always)]
fn lane_weights<const L: usize>(x: &[f32], importance: &[f32], sigma2: f32) -> ([[f32; L]; 32], [[f32; L]; 32]) {
    let xt = lanes::<32, L>(x);
    let qwt = lanes::<32, L>(importance);
    let mut w = [[0f32; L]; 32];
    for i in 0..32 {
        for k in 0..L {
            w[i][k] = qwt[i][k] * (sigma2 + xt[i][k] * xt[i][k]).sqrt();
        }
    }
    (xt, w)
}

/// The search of Q4_1 and Q5_1 with importance (`make_qkx3_quants`).
const MIN_STEPS: Steps = Steps { rmin: -0.9, rdelta: 0.05, steps: 36, use_mad: false };

/// Q4_0 with importance, `L` blocks at once.
fn q4_0_weighted<const L: usize>(x: &[f32], importance: &[f32], sigma2: f32, out: &mut [u8]) {
    let (xt, w) = lane_weights::<L>(x, importance, sigma2);
    let mut levels = [[0i8; L]; 32];
    let d = make_qx_quants(8, &xt, &mut levels, Some(&w));
    for (k, y) in out.chunks_exact_mut(18).enumerate() {
        put_f16(y, 0, d[k]);
        for j in 0..16 {
            y[2 + j] = (levels[j][k] | (levels[j + 16][k] << 4)) as u8;
        }
    }
}

/// Q4_1 with importance, `L` blocks at once.
fn q4_1_weighted<const L: usize>(x: &[f32], importance: &[f32], sigma2: f32, out: &mut [u8]) {
    let (xt, w) = lane_weights::<L>(x, importance, sigma2);
    let mut levels = [[0u8; L]; 32];
    let (d, min) = make_qkx_quants(15, &xt, &w, &mut levels, MIN_STEPS, true);
    for (k, y) in out.chunks_exact_mut(20).enumerate() {
        put_f16(y, 0, d[k]);
        put_f16(y, 2, -min[k]);
        for j in 0..16 {
            y[4 + j] = levels[j][k] | (levels[j + 16][k] << 4);
        }
    }
}

/// Q5_0 with importance, `L` blocks at once.
fn q5_0_weighted<const L: usize>(x: &[f32], importance: &[f32], sigma2: f32, out: &mut [u8]) {
    let (xt, w) = lane_weights::<L>(x, importance, sigma2);
    let mut levels = [[0i8; L]; 32];
    let d = make_qx_quants(16, &xt, &mut levels, Some(&w));
    for (k, y) in out.chunks_exact_mut(22).enumerate() {
        put_f16(y, 0, d[k]);
        pack5(|j| levels[j][k] as u8, y, 2);
    }
}

/// Q5_1 with importance, `L` blocks at once.
fn q5_1_weighted<const L: usize>(x: &[f32], importance: &[f32], sigma2: f32, out: &mut [u8]) {
    let (xt, w) = lane_weights::<L>(x, importance, sigma2);
    let mut levels = [[0u8; L]; 32];
    let (d, min) = make_qkx_quants(31, &xt, &w, &mut levels, MIN_STEPS, true);
    for (k, y) in out.chunks_exact_mut(24).enumerate() {
        put_f16(y, 0, d[k]);
        put_f16(y, 2, -min[k]);
        pack5(|j| levels[j][k], y, 4);
    }
}

/// `f(v)` of every value converted to `int` as C does on x86 ([`truncate_i32`]), then to a
/// byte by `byte`. Where every `f(v)` is below 2^22 in magnitude (always, but for infinities,
/// NaN and scales that overflow) the truncation is done with float and integer operations
/// that vectorize: the nearest integer (ggml's `nearest_int`), one less where that rounded
/// away from zero.
#[inline(always)]
fn truncated(x: &[f32; 32], f: impl Fn(f32) -> f32, byte: impl Fn(i32) -> u8) -> [u8; 32] {
    let mut v = [0f32; 32];
    for (v, &x) in v.iter_mut().zip(x) {
        *v = f(x);
    }
    let mut small = true;
    for &v in &v {
        small &= v.abs() < 4_194_304.0;
    }
    let mut q = [0u8; 32];
    if small {
        for (q, &v) in q.iter_mut().zip(&v) {
            let r = nearest_int(v);
            let rf = r as f32;
            let t = r - i32::from(v >= 0.0 && rf > v) + i32::from(v < 0.0 && rf < v);
            *q = byte(t);
        }
    } else {
        for (q, &v) in q.iter_mut().zip(&v) {
            *q = byte(truncate_i32(v));
        }
    }
    q
}

/// Nibbles: element `j` low, `j + 16` high.
#[inline(always)]
fn pack4(q: &[u8; 32], qs: &mut [u8]) {
    for j in 0..16 {
        qs[j] = q[j] | (q[j + 16] << 4);
    }
}

/// Five-bit levels: the low nibbles as Q4 packs them into `qs`, the fifth bits into the
/// 32-bit mask (`qh`, at byte 2 + offset) of the block.
fn pack5(levels: impl Fn(usize) -> u8, y: &mut [u8], qh_at: usize) {
    let mut qh = 0u32;
    for j in 0..16 {
        let (xi0, xi1) = (levels(j), levels(j + 16));
        y[qh_at + 4 + j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
        qh |= u32::from((xi0 & 0x10) >> 4) << j;
        qh |= u32::from((xi1 & 0x10) >> 4) << (j + 16);
    }
    y[qh_at..qh_at + 4].copy_from_slice(&qh.to_le_bytes());
}

/// One block of Q4_0 without importance (ggml's `quantize_row_q4_0_ref`).
pub(in crate::model::quant::ggml) fn q4_0_block(x: &[f32; 32], y: &mut [u8; 18]) {
    let (_, max) = signed_max(x);
    let d = max / -8.0;
    let id = inverse(d);
    put_u16(y, 0, fp16(d));
    let q = truncated(x, |v| v * id + 8.5, |q| i32::from(q as i8).min(15) as u8);
    pack4(&q, &mut y[2..18]);
}

/// Q4_0 (18 bytes: `d`, 16 bytes of nibbles): `x = d * (q - 8)`.
pub(super) fn q4_0(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    let Some(importance) = importance else {
        if !simd::q4_0(row, out) {
            each_block::<32, 18>(row, None, out, |x, _, y| q4_0_block(x, y));
        }
        return;
    };
    in_lanes::<18>(row, importance, out, q4_0_weighted::<8>, q4_0_weighted::<1>);
}

/// One block of Q4_1 without importance (ggml's `quantize_row_q4_1_ref`).
pub(in crate::model::quant::ggml) fn q4_1_block(x: &[f32; 32], y: &mut [u8; 20]) {
    let (min, max) = min_max(x);
    let d = (max - min) / 15.0;
    let id = inverse(d);
    put_f16(y, 0, d);
    put_f16(y, 2, min);
    let q = truncated(x, |v| (v - min) * id + 0.5, |q| i32::from(q as i8).min(15) as u8);
    pack4(&q, &mut y[4..20]);
}

/// Q4_1 (20 bytes: `d`, `m`, 16 bytes of nibbles): `x = d * q + m`.
pub(super) fn q4_1(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    let Some(importance) = importance else {
        if !simd::q4_1(row, out, q4_1_block) {
            each_block::<32, 20>(row, None, out, |x, _, y| q4_1_block(x, y));
        }
        return;
    };
    in_lanes::<20>(row, importance, out, q4_1_weighted::<8>, q4_1_weighted::<1>);
}

/// One block of Q5_0 without importance (ggml's `quantize_row_q5_0_ref`).
pub(in crate::model::quant::ggml) fn q5_0_block(x: &[f32; 32], y: &mut [u8; 22]) {
    let (_, max) = signed_max(x);
    let d = max / -16.0;
    let id = inverse(d);
    put_u16(y, 0, fp16(d));
    let q = truncated(x, |v| v * id + 16.5, |q| i32::from(q as i8).min(31) as u8);
    pack5(|j| q[j], y, 2);
}

/// Q5_0 (22 bytes: `d`, 4 bytes of fifth bits, 16 bytes of nibbles): `x = d * (q - 16)`.
pub(super) fn q5_0(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    let Some(importance) = importance else {
        if !simd::q5_0(row, out) {
            each_block::<32, 22>(row, None, out, |x, _, y| q5_0_block(x, y));
        }
        return;
    };
    in_lanes::<22>(row, importance, out, q5_0_weighted::<8>, q5_0_weighted::<1>);
}

/// One block of Q5_1 without importance (ggml's `quantize_row_q5_1_ref`).
pub(in crate::model::quant::ggml) fn q5_1_block(x: &[f32; 32], y: &mut [u8; 24]) {
    let (min, max) = min_max(x);
    let d = (max - min) / 31.0;
    let id = inverse(d);
    put_f16(y, 0, d);
    put_f16(y, 2, min);
    let q = truncated(x, |v| (v - min) * id + 0.5, |q| q as u8);
    pack5(|j| q[j], y, 4);
}

/// Q5_1 (24 bytes: `d`, `m`, 4 bytes of fifth bits, 16 bytes of nibbles): `x = d * q + m`.
pub(super) fn q5_1(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    let Some(importance) = importance else {
        if !simd::q5_1(row, out, q5_1_block) {
            each_block::<32, 24>(row, None, out, |x, _, y| q5_1_block(x, y));
        }
        return;
    };
    in_lanes::<24>(row, importance, out, q5_1_weighted::<8>, q5_1_weighted::<1>);
}

/// Q8_0 (34 bytes: `d`, 32 signed bytes): `x = d * q`; importance is not used.
pub(super) fn q8_0(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    if !simd::q8_0(row, out, q8_0_block) {
        each_block::<32, 34>(row, None, out, |x, _, y| q8_0_block(x, y));
    }
}

/// One block of Q8_0 (ggml's `quantize_row_q8_0_ref`).
pub(in crate::model::quant::ggml) fn q8_0_block(x: &[f32; 32], y: &mut [u8; 34]) {
    let d = max_magnitude(x) / 127.0;
    let id = inverse(d);
    put_f16(y, 0, d);
    for j in 0..32 {
        y[2 + j] = round_i32(x[j] * id) as u8;
    }
}

/// Q1_0 (18 bytes: `d`, 16 bytes of signs): `x = d` where the bit is set (`x >= 0`), `-d`
/// elsewhere; `d` the mean magnitude. Importance is not used.
pub(super) fn q1_0(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<128, 18>(row, None, out, |x, _, y| {
        let mut sum_abs = 0f32;
        for &v in x {
            sum_abs += v.abs();
        }
        put_f16(y, 0, sum_abs / 128.0);
        for (byte, x) in y[2..].iter_mut().zip(x.chunks_exact(8)) {
            *byte = x.iter().enumerate().fold(0u8, |b, (k, &v)| b | (u8::from(v >= 0.0) << k));
        }
    });
}

/// Q2_0 (18 bytes: `d`, 16 bytes of 2-bit codes, element `4b + k` in bits `2k` of byte `b`):
/// `x = d * (q - 1)`, `d` the largest magnitude. Importance is not used.
pub(super) fn q2_0(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<64, 18>(row, None, out, |x, _, y| {
        let d = largest_magnitude(x);
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        put_f16(y, 0, d);
        for (byte, x) in y[2..].iter_mut().zip(x.chunks_exact(4)) {
            *byte = x.iter().enumerate().fold(0u8, |b, (k, &v)| {
                let q = round_i32(v * id).wrapping_add(1).clamp(0, 3) as u8;
                b | (q << (2 * k))
            });
        }
    });
}
