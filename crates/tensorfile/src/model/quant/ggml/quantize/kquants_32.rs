//! The k-quants of sub-blocks of 32 with 6-bit scales and minimums: Q4_K (4-bit levels) and
//! Q5_K (5-bit levels), each a super-block of 256 with half-precision `d` and `dmin`:
//! `x = d * s * q - dmin * m`.

use super::search::{Steps, make_qkx_quants, make_qp_quants};
use super::{each_block, fp16_to_f32, lanes, nearest_int, put_f16, sum_squares, unlane};

/// The scales and minimums of the eight sub-blocks and the levels, before packing.
struct SubBlocks {
    /// The levels, sub-block after sub-block.
    levels: [u8; 256],
    /// 6-bit scale and minimum of each sub-block.
    scale_levels: [(u8, u8); 8],
    d: f32,
    dmin: f32,
}

/// Searches a super-block's sub-blocks as ggml does: without importance `make_qkx2_quants` and
/// 6-bit levels of the largest scale and minimum; with it `make_qkx3_quants` weighted by
/// `importance * sqrt(sigma2 + x^2)` and `make_qp_quants` for the scales and minimums.
/// `nmax` is 15 or 31, `ref_steps` the search of the reference path, `clamp_impl_levels`
/// whether the importance path caps the 6-bit levels at 63 (Q5_K does, Q4_K does not).
fn search(x: &[f32; 256], qw: Option<&[f32; 256]>, nmax: i32, ref_steps: Steps, clamp_impl_levels: bool) -> SubBlocks {
    let xt = lanes::<32, 8>(x);
    let mut found = [[0u8; 8]; 32];
    let mut scale_levels = [(0u8, 0u8); 8];
    match qw {
        None => {
            let mut sum_x2 = [0f32; 8];
            for row in &xt {
                for j in 0..8 {
                    sum_x2[j] += row[j] * row[j];
                }
            }
            let av_x = sum_x2.map(|s| (s / 32.0).sqrt());
            let weights = xt.map(|row| std::array::from_fn(|j| av_x[j] + row[j].abs()));
            let (scales, mins) = make_qkx_quants(nmax, &xt, &weights, &mut found, ref_steps, false);
            let (mut max_scale, mut max_min) = (0f32, 0f32);
            for j in 0..8 {
                if scales[j] > max_scale {
                    max_scale = scales[j];
                }
                if mins[j] > max_min {
                    max_min = mins[j];
                }
            }
            let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
            let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
            for j in 0..8 {
                let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
                let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
                scale_levels[j] = (ls, lm);
            }
            SubBlocks { levels: unlane(&found), scale_levels, d: max_scale / 63.0, dmin: max_min / 63.0 }
        }
        Some(qw) => {
            let sigma2 = 2.0 * sum_squares(x) / 256.0;
            let qwt = lanes::<32, 8>(qw);
            let mut weights = [[0f32; 8]; 32];
            for l in 0..32 {
                for j in 0..8 {
                    weights[l][j] = qwt[l][j] * (sigma2 + xt[l][j] * xt[l][j]).sqrt();
                }
            }
            let mut sw = [0f32; 8];
            for row in &weights {
                for j in 0..8 {
                    sw[j] += row[j];
                }
            }
            let steps = Steps { rmin: -0.9, rdelta: 0.05, steps: 36, use_mad: false };
            let (scales, mins) = make_qkx_quants(nmax, &xt, &weights, &mut found, steps, true);
            let (mut ls, mut lm) = ([0u8; 8], [0u8; 8]);
            let d = make_qp_quants(63, &scales, &mut ls, &sw);
            let dmin = make_qp_quants(63, &mins, &mut lm, &sw);
            for j in 0..8 {
                scale_levels[j] = if clamp_impl_levels { (ls[j].min(63), lm[j].min(63)) } else { (ls[j], lm[j]) };
            }
            SubBlocks { levels: unlane(&found), scale_levels, d, dmin }
        }
    }
}

/// Packs the 6-bit scales and minimums into 12 bytes (ggml's `get_scale_min_k4` reads them).
fn pack_scales(scale_levels: &[(u8, u8); 8], scales: &mut [u8]) {
    for (j, &(ls, lm)) in scale_levels.iter().enumerate() {
        if j < 4 {
            scales[j] = ls;
            scales[j + 4] = lm;
        } else {
            scales[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
            scales[j - 4] |= (ls >> 4) << 6;
            scales[j] |= (lm >> 4) << 6;
        }
    }
}

/// ggml's `get_scale_min_k4`: the 6-bit scale and minimum of sub-block `j`.
fn scale_min(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// Writes `d`, `dmin` and the scales (bytes 0..16), then quantizes each sub-block again
/// against the stored half-precision scales; returns the levels, 0..=nmax.
fn finish(x: &[f32; 256], mut found: SubBlocks, nmax: i32, y: &mut [u8]) -> [u8; 256] {
    let d = fp16_to_f32(put_f16(y, 0, found.d));
    let dmin = fp16_to_f32(put_f16(y, 2, found.dmin));
    pack_scales(&found.scale_levels, &mut y[4..16]);
    for j in 0..8 {
        let (sc, m) = scale_min(j, &y[4..16]);
        let dl = d * f32::from(sc);
        if dl == 0.0 {
            continue;
        }
        let ml = dmin * f32::from(m);
        for l in 0..32 {
            found.levels[32 * j + l] = nearest_int((x[32 * j + l] + ml) / dl).max(0).min(nmax) as u8;
        }
    }
    found.levels
}

/// Q4_K (144 bytes: `d`, `dmin`, 12 bytes of scales, 128 bytes of nibbles: element
/// `64h + l` in the low nibble of byte `32h + l`, `64h + 32 + l` in its high nibble).
pub(super) fn q4_k(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 144>(row, importance, out, |x, qw, y| {
        let steps = Steps { rmin: -1.0, rdelta: 0.1, steps: 20, use_mad: false };
        let levels = finish(x, search(x, qw, 15, steps, false), 15, y);
        for h in 0..4 {
            for l in 0..32 {
                y[16 + 32 * h + l] = levels[64 * h + l] | (levels[64 * h + 32 + l] << 4);
            }
        }
    });
}

/// Q5_K (176 bytes: `d`, `dmin`, 12 bytes of scales, 32 bytes of fifth bits, 128 bytes of
/// nibbles: element `64h + l` in the low nibble of byte `32h + l` and bit `2h` of high byte
/// `l`, `64h + 32 + l` in the high nibble and bit `2h + 1`).
pub(super) fn q5_k(row: &[f32], importance: Option<&[f32]>, out: &mut [u8]) {
    each_block::<256, 176>(row, importance, out, |x, qw, y| {
        let steps = Steps { rmin: -0.5, rdelta: 0.1, steps: 15, use_mad: false };
        let levels = finish(x, search(x, qw, 31, steps, true), 31, y);
        y[16..48].fill(0);
        for h in 0..4 {
            for l in 0..32 {
                let (mut l1, mut l2) = (levels[64 * h + l], levels[64 * h + 32 + l]);
                if l1 > 15 {
                    l1 -= 16;
                    y[16 + l] |= 1 << (2 * h);
                }
                if l2 > 15 {
                    l2 -= 16;
                    y[16 + l] |= 2 << (2 * h);
                }
                y[48 + 32 * h + l] = l1 | (l2 << 4);
            }
        }
    });
}
