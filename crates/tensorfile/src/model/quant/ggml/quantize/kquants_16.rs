//! The k-quants of sub-blocks of 16: Q2_K (2-bit levels with a 4-bit scale and minimum per
//! sub-block), Q3_K (3-bit symmetric levels, 6-bit signed scales) and Q6_K (6-bit symmetric
//! levels, 8-bit signed scales), each a super-block of 256 with a half-precision `d`.

use super::search::{GROUP_MAX_EPS, Steps, make_q3_quants, make_qkx_quants, make_qp_quants, make_qx_quants};
use super::{each_block, fp16_to_f32, lanes, nearest_int, put_f16, sum_squares, unlane};

/// Levels 0..4 four to a byte: element `128h + 32s + l` in bits `2s` of byte `32h + l`.
fn pack_2bit(levels: &[u8; 256], qs: &mut [u8]) {
    for h in 0..2 {
        for l in 0..32 {
            let at = 128 * h + l;
            qs[32 * h + l] = levels[at] | (levels[at + 32] << 2) | (levels[at + 64] << 4) | (levels[at + 96] << 6);
        }
    }
}

/// The weight of each value of a super-block given importance `qw` (as ggml weighs them:
/// `qw * sqrt(sigma2 + x^2)`), in the same lanes as `xt`, and the sum of each sub-block's
/// weights (summed in ggml's order).
fn sub_block_weights(xt: &[[f32; 16]; 16], qw: &[f32; 256], sigma2: f32) -> ([[f32; 16]; 16], [f32; 16]) {
    let qwt = lanes::<16, 16>(qw);
    let mut weights = [[0f32; 16]; 16];
    for l in 0..16 {
        for j in 0..16 {
            weights[l][j] = qwt[l][j] * (sigma2 + xt[l][j] * xt[l][j]).sqrt();
        }
    }
    let mut sw = [0f32; 16];
    for row in &weights {
        for j in 0..16 {
            sw[j] += row[j];
        }
    }
    (weights, sw)
}

/// Q2_K (84 bytes: 16 scale bytes, low nibble the scale and high nibble the minimum of a
/// sub-block, 64 bytes of levels, `d`, `dmin`): `x = d * s * q - dmin * m`.
pub(super) fn q2_k(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 84>(row, importance, out, |x, qw, y| {
        let xt = lanes::<16, 16>(x);
        let mut found = [[0u8; 16]; 16];
        let (d, dmin) = match qw {
            None => {
                let weights = xt.map(|row| row.map(f32::abs));
                let steps = Steps { rmin: -0.5, rdelta: 0.1, steps: 15, use_mad: true };
                let (scales, mins) = make_qkx_quants(3, &xt, &weights, &mut found, steps, false);
                let (mut max_scale, mut max_min) = (0f32, 0f32);
                for j in 0..16 {
                    if scales[j] > max_scale {
                        max_scale = scales[j];
                    }
                    if mins[j] > max_min {
                        max_min = mins[j];
                    }
                }
                let mut d = 0.0;
                if max_scale > 0.0 {
                    let iscale = 15.0 / max_scale;
                    for j in 0..16 {
                        y[j] = nearest_int(iscale * scales[j]) as u8;
                    }
                    d = max_scale / 15.0;
                } else {
                    y[..16].fill(0);
                }
                let mut dmin = 0.0;
                if max_min > 0.0 {
                    let iscale = 15.0 / max_min;
                    for j in 0..16 {
                        y[j] = (i32::from(y[j]) | (nearest_int(iscale * mins[j]) << 4)) as u8;
                    }
                    dmin = max_min / 15.0;
                }
                (put_f16(y, 80, d), put_f16(y, 82, dmin))
            }
            Some(qw) => {
                let (weights, sw) = sub_block_weights(&xt, qw, sum_squares(x) / 256.0);
                let steps = Steps { rmin: -0.9, rdelta: 0.05, steps: 36, use_mad: false };
                let (scales, mins) = make_qkx_quants(3, &xt, &weights, &mut found, steps, true);
                let (mut ls, mut lm) = ([0u8; 16], [0u8; 16]);
                let dm = make_qp_quants(15, &scales, &mut ls, &sw);
                let mm = make_qp_quants(15, &mins, &mut lm, &sw);
                for j in 0..16 {
                    y[j] = ls[j] | (lm[j] << 4);
                }
                (put_f16(y, 80, dm), put_f16(y, 82, mm))
            }
        };
        let mut levels: [u8; 256] = unlane(&found);
        let (d, dmin) = (fp16_to_f32(d), fp16_to_f32(dmin));
        for j in 0..16 {
            let dl = d * f32::from(y[j] & 0xF);
            if dl == 0.0 {
                continue;
            }
            let ml = dmin * f32::from(y[j] >> 4);
            for l in 0..16 {
                levels[16 * j + l] = nearest_int((x[16 * j + l] + ml) / dl).clamp(0, 3) as u8;
            }
        }
        pack_2bit(&levels, &mut y[16..80]);
    });
}

/// Q3_K's 6-bit scale `j` (stored plus 32): low nibbles in bytes 0..8, high bits in 8..12.
fn put_q3_scale(scales: &mut [u8], j: usize, l: u8) {
    if j < 8 {
        scales[j] = l & 0xF;
    } else {
        scales[j - 8] |= (l & 0xF) << 4;
    }
    scales[j % 4 + 8] |= (l >> 4) << (2 * (j / 4));
}

/// ggml's `make_q3_quants` (levels -4..3, `do_rmse`) of the 16 groups of a Q3_K block: their
/// scales and their levels, group after group. The groups side by side in AVX2 lanes where
/// that runs, else one at a time.
fn q3_group_scales(x: &[f32; 256]) -> ([f32; 16], [i8; 256]) {
    #[cfg(target_arch = "x86_64")]
    if let Some((scales, levels)) = super::super::simd::search_x86::q3_16_groups(&lanes::<16, 16>(x), GROUP_MAX_EPS) {
        return (scales, unlane(&levels));
    }
    let mut found = [[0i8; 16]; 16];
    let mut scales = [0f32; 16];
    for (j, (scale, found)) in scales.iter_mut().zip(&mut found).enumerate() {
        let group: &[f32; 16] = x[16 * j..16 * j + 16].try_into().unwrap_or(&[0.0; 16]);
        *scale = make_q3_quants(4, group, found);
    }
    (scales, std::array::from_fn(|at| found[at / 16][at % 16]))
}

/// Q3_K (110 bytes: 32 bytes of high bits, 64 bytes of low 2 bits, 12 bytes of 6-bit scales,
/// `d`): `x = d * (s - 32) * (q - 4)`.
pub(super) fn q3_k(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 110>(row, importance, out, |x, qw, y| {
        y[96..108].fill(0);
        let (d, mut levels) = match qw {
            None => {
                let (scales, levels) = q3_group_scales(x);
                let (mut max_scale, mut amax) = (0f32, 0f32);
                for &scale in &scales {
                    if scale.abs() > amax {
                        amax = scale.abs();
                        max_scale = scale;
                    }
                }
                let d = if max_scale != 0.0 {
                    let iscale = -32.0 / max_scale;
                    for (j, &scale) in scales.iter().enumerate() {
                        let l = i32::from(nearest_int(iscale * scale) as i8);
                        put_q3_scale(&mut y[96..108], j, (l.clamp(-32, 31) + 32) as u8);
                    }
                    put_f16(y, 108, 1.0 / iscale)
                } else {
                    put_f16(y, 108, 0.0)
                };
                (d, levels)
            }
            Some(qw) => {
                let xt = lanes::<16, 16>(x);
                let (weights, sw) = sub_block_weights(&xt, qw, 2.0 * sum_squares(x) / 256.0);
                let mut found = [[0i8; 16]; 16];
                let scales = make_qx_quants(4, &xt, &mut found, Some(&weights));
                let mut ls = [[0i8; 1]; 16];
                let [d_block] = make_qx_quants(32, &scales.map(|s| [s]), &mut ls, Some(&sw.map(|w| [w])));
                for (j, &[l]) in ls.iter().enumerate() {
                    put_q3_scale(&mut y[96..108], j, l as u8);
                }
                (put_f16(y, 108, d_block), unlane(&found))
            }
        };
        let d = fp16_to_f32(d);
        for j in 0..16 {
            let low = if j < 8 { y[96 + j] & 0xF } else { y[96 + j - 8] >> 4 };
            let sc = (i32::from(low) | (i32::from((y[104 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
            let dl = d * (sc as i8) as f32;
            if dl == 0.0 {
                continue;
            }
            for l in 0..16 {
                levels[16 * j + l] = (nearest_int(x[16 * j + l] / dl).clamp(-4, 3) + 4) as i8;
            }
        }
        // Bit `j / 32` of high-bit byte `j % 32` where level `j` is above 3 (then less 4),
        // without branches: byte by byte across each run of 32 levels, which vectorizes.
        let mut high_bits = [0u8; 32];
        for (b, run) in levels.chunks_exact_mut(32).enumerate() {
            for (bits, l) in high_bits.iter_mut().zip(run) {
                let high = u8::from(*l > 3);
                *bits |= high << b;
                *l -= 4 * high as i8;
            }
        }
        y[..32].copy_from_slice(&high_bits);
        pack_2bit(&levels.map(|l| l as u8), &mut y[32..96]);
    });
}

/// Q6_K (210 bytes: 128 bytes of low nibbles, 64 bytes of high 2 bits, 16 signed scale
/// bytes, `d`): `x = d * s * (q - 32)`.
pub(super) fn q6_k(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 210>(row, importance, out, |x, qw, y| {
        let xt = lanes::<16, 16>(x);
        let qwt = qw.map(|qw| lanes::<16, 16>(qw));
        let mut found = [[0i8; 16]; 16];
        let scales = make_qx_quants(32, &xt, &mut found, qwt.as_ref());
        let (mut max_scale, mut max_abs_scale) = (0f32, 0f32);
        for &scale in &scales {
            if scale.abs() > max_abs_scale {
                max_abs_scale = scale.abs();
                max_scale = scale;
            }
        }
        if max_abs_scale < GROUP_MAX_EPS {
            y.fill(0);
            put_f16(y, 208, 0.0);
            return;
        }
        let iscale = -128.0 / max_scale;
        let d = fp16_to_f32(put_f16(y, 208, 1.0 / iscale));
        for j in 0..16 {
            y[192 + j] = nearest_int(iscale * scales[j]).min(127) as u8;
        }
        let mut levels: [i8; 256] = unlane(&found);
        for j in 0..16 {
            let dl = d * f32::from(y[192 + j] as i8);
            if dl == 0.0 {
                continue;
            }
            for l in 0..16 {
                levels[16 * j + l] = (nearest_int(x[16 * j + l] / dl).clamp(-32, 31) + 32) as i8;
            }
        }
        let levels = levels.map(|l| l as u8);
        for h in 0..2 {
            let (ql, qh) = (64 * h, 128 + 32 * h);
            for l in 0..32 {
                let at = 128 * h + l;
                let q = [levels[at], levels[at + 32], levels[at + 64], levels[at + 96]];
                y[ql + l] = (q[0] & 0xF) | ((q[2] & 0xF) << 4);
                y[ql + l + 32] = (q[1] & 0xF) | ((q[3] & 0xF) << 4);
                y[qh + l] = (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6);
            }
        }
    });
}
