//! IQ3_XXS and IQ3_S: groups of four magnitudes on a grid of levels 1, 3, ..., 15 (times a
//! sub-block scale), signs stored apart, as ggml's `quantize_row_iq3_xxs_impl` and
//! `quantize_row_iq3_s_impl`.

use super::lattice::{self, Lattice, Place, code};
use super::{
    Abort, QK_K, Step, clamp_code, each_block, even_signs, fp16_bits, max_c, nearest_int, not_negative, put_u16,
    scale_code,
};

/// ggml's `kMaxQ` of the 3-bit grids: levels 0..kMaxQ-1.
const K_MAX_Q: i32 = 8;

/// Bytes of a block: IQ3_XXS, IQ3_S.
const XXS_BYTES: usize = 98;
const S_BYTES: usize = 110;

/// IQ3_XXS: one row, with importance weights or without.
pub(super) fn iq3_xxs(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq3_xxs();
    each_block::<XXS_BYTES>(x, importance, out, |xbl, qw, y| xxs_block(lat, xbl, qw, y))
}

/// IQ3_S: one row, with importance weights or without.
pub(super) fn iq3_s(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq3_s();
    each_block::<S_BYTES>(x, importance, out, |xbl, qw, y| s_block(lat, xbl, qw, y))
}

/// The level of `x` at inverse scale `id`, clamped to 0..=7.
#[inline(always)]
fn level(id: f32, x: f32) -> i8 {
    clamp_code(nearest_int(0.5 * (id * x - 1.0)), K_MAX_Q - 1) as i8
}

/// `sum w*x*q` and `sum w*q*q` over levels `l` (q = 2l + 1), in ggml's order.
#[inline(always)]
fn sums(weight: &[f32; 32], xval: &[f32; 32], l: &[i8; 32]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for i in 0..32 {
        let w = weight[i];
        let q = (2 * i32::from(l[i]) + 1) as f32;
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// The weights of a 32-value sub-block (`qw * sqrtf(sigma2 + x*x)` with importance weights,
/// `x*x` without) and their square roots.
#[inline(always)]
fn weights(qw: Option<&[f32]>, xb: &[f32], sigma2: f32) -> ([f32; 32], [f32; 32]) {
    let mut weight = [0f32; 32];
    match qw {
        Some(qw) => {
            for i in 0..32 {
                weight[i] = qw[i] * (sigma2 + xb[i] * xb[i]).sqrt();
            }
        }
        None => {
            for i in 0..32 {
                weight[i] = xb[i] * xb[i];
            }
        }
    }
    (weight, weight.map(f32::sqrt))
}

/// How the two types differ in their search.
struct Search {
    /// The range of `is` in the scales tried, `(15 + 0.2 * is) / max`.
    steps: i32,
    /// Whether the groups start as on the grid (IQ3_XXS) or off it (IQ3_S).
    start_on_grid: bool,
    /// Whether the final pass redoes every group (IQ3_S) or only those off the grid.
    redo_all: bool,
}

/// The scale and levels of a 32-value sub-block whose largest magnitude is `max`.
fn search(
    lat: &Lattice<4>,
    how: &Search,
    xval: &[f32; 32],
    weight: &[f32; 32],
    waux: &[f32; 32],
    max: f32,
) -> Step<(f32, [i8; 32])> {
    let mut l = [0i8; 32];
    let mut laux = [0i8; 32];
    let mut best = 0f32;
    let mut scale = max / (2 * K_MAX_Q - 1) as f32;
    let mut on_grid = [how.start_on_grid; 8];
    let mut on_grid_aux = [true; 8];
    for is in -how.steps..=how.steps {
        let id = (15.0 + is as f32 * 0.2) / max;
        let this_scale = 1.0 / id;
        for k in 0..8 {
            for i in 0..4 {
                laux[4 * k + i] = level(id, xval[4 * k + i]);
            }
            on_grid_aux[k] = true;
            if let Place::Near(near) = lat.place(code(&laux[4 * k..4 * k + 4], 3))? {
                on_grid_aux[k] = false;
                let (xv, wa) = (&xval[4 * k..4 * k + 4], &waux[4 * k..4 * k + 4]);
                lat.nearest(near, xv, wa, this_scale, &mut laux[4 * k..4 * k + 4])?;
            }
        }
        let (sumqx, sumq2) = sums(weight, xval, &laux);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            l = laux;
            on_grid = on_grid_aux;
        }
    }
    if on_grid.contains(&false) && scale > 0.0 {
        let id = 1.0 / scale;
        for k in 0..8 {
            if on_grid[k] && !how.redo_all {
                continue;
            }
            let mut levels = [0i8; 4];
            for i in 0..4 {
                levels[i] = level(id, xval[4 * k + i]);
            }
            let g = match lat.place(code(&levels, 3))? {
                Place::On(g) => g,
                Place::Near(near) => {
                    let (xv, wa) = (&xval[4 * k..4 * k + 4], &waux[4 * k..4 * k + 4]);
                    lat.nearest(near, xv, wa, scale, &mut l[4 * k..4 * k + 4])?
                }
            };
            lat.levels(g, &mut l[4 * k..4 * k + 4]);
        }
        let (sumqx, sumq2) = sums(weight, xval, &l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    Ok((scale, l))
}

/// The largest of `xval` by ggml's `MAX`.
#[inline(always)]
fn largest(xval: &[f32; 32]) -> f32 {
    let mut max = xval[0];
    for &v in &xval[1..] {
        max = max_c(max, v);
    }
    max
}

/// One IQ3_XXS block: eight sub-blocks of 32, each eight 8-bit grid indices and a 32-bit word
/// of four 7-bit sign patterns and a 4-bit scale.
fn xxs_block(lat: &Lattice<4>, xbl: &[f32; QK_K], qwbl: Option<&[f32; QK_K]>, y: &mut [u8; XXS_BYTES]) -> Step<()> {
    const HOW: Search = Search { steps: 15, start_on_grid: true, redo_all: false };
    let mut grid = [0u8; QK_K / 4];
    let mut scales_and_signs = [0u32; QK_K / 32];
    let mut scales = [0f32; QK_K / 32];
    let mut max_scale = 0f32;
    let sigma2 = 2.0 * super::sum_squares(xbl) / QK_K as f32;
    for ib in 0..QK_K / 32 {
        let xb = &xbl[32 * ib..32 * ib + 32];
        let (weight, waux) = weights(qwbl.map(|w| &w[32 * ib..32 * ib + 32]), xb, sigma2);
        let mut xval = [0f32; 32];
        let mut block_signs = [0u8; 4];
        for k in 0..4 {
            block_signs[k] = even_signs(&xb[8 * k..8 * k + 8], &weight[8 * k..8 * k + 8], &mut xval[8 * k..8 * k + 8]);
        }
        let max = largest(&xval);
        if max < 1e-8 {
            scales[ib] = 0.0;
            continue;
        }
        let (mut scale, l) = search(lat, &HOW, &xval, &weight, &waux, max)?;
        if scale < 0.0 {
            scale = -scale;
            for s in &mut block_signs {
                *s = !*s & 127;
            }
        }
        for k in 0..8 {
            grid[8 * ib + k] = lat.index_on_grid(code(&l[4 * k..4 * k + 4], 3))? as u8;
        }
        scales_and_signs[ib] = u32::from(block_signs[0])
            | u32::from(block_signs[1]) << 7
            | u32::from(block_signs[2]) << 14
            | u32::from(block_signs[3]) << 21;
        not_negative(scale)?;
        scales[ib] = scale;
        max_scale = max_c(max_scale, scale);
    }
    y.fill(0);
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    put_u16(y, 0, fp16_bits(d * 1.0125));
    let id = 1.0 / d;
    for ib in 0..QK_K / 32 {
        scales_and_signs[ib] |= (scale_code(id, scales[ib], 15) as u32) << 28;
    }
    y[2..2 + QK_K / 4].copy_from_slice(&grid);
    for (o, w) in y[2 + QK_K / 4..].chunks_exact_mut(4).zip(&scales_and_signs) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    Ok(())
}

/// One IQ3_S block: eight sub-blocks of 32, each eight 9-bit grid indices (low bytes in `qs`,
/// high bits in `qh`), four bytes of signs (all eight kept) and a 4-bit scale.
///
/// As in ggml, a sub-block skipped for being all zero does not advance the positions in `qs`
/// and `signs`: the next sub-block's indices and signs take its place (its high bits in `qh`
/// and its scale stay at the sub-block's own position).
fn s_block(lat: &Lattice<4>, xbl: &[f32; QK_K], qwbl: Option<&[f32; QK_K]>, y: &mut [u8; S_BYTES]) -> Step<()> {
    const HOW: Search = Search { steps: 9, start_on_grid: false, redo_all: true };
    const QS: usize = 2;
    const QH: usize = QS + QK_K / 4;
    const SIGNS: usize = QH + QK_K / 32;
    const SCALES: usize = SIGNS + QK_K / 8;
    y.fill(0);
    let (mut qs, mut signs) = (QS, SIGNS);
    let mut scales = [0f32; QK_K / 32];
    let mut max_scale = 0f32;
    let sigma2 = 2.0 * super::sum_squares(xbl) / QK_K as f32;
    for ib in 0..QK_K / 32 {
        let xb = &xbl[32 * ib..32 * ib + 32];
        let (weight, waux) = weights(qwbl.map(|w| &w[32 * ib..32 * ib + 32]), xb, sigma2);
        let mut xval = [0f32; 32];
        let mut block_signs = [0u8; 4];
        for k in 0..4 {
            let mut s = 0u8;
            for i in 0..8 {
                let v = xb[8 * k + i];
                if v >= 0.0 {
                    xval[8 * k + i] = v;
                } else {
                    xval[8 * k + i] = -v;
                    s |= 1 << i;
                }
            }
            block_signs[k] = s;
        }
        let max = largest(&xval);
        if max == 0.0 {
            scales[ib] = 0.0;
            continue;
        }
        let (mut scale, l) = search(lat, &HOW, &xval, &weight, &waux, max)?;
        if scale < 0.0 {
            scale = -scale;
            for s in &mut block_signs {
                *s = !*s;
            }
        }
        for k in 0..8 {
            let g = lat.index_on_grid(code(&l[4 * k..4 * k + 4], 3))?;
            y[qs + k] = g as u8;
            y[QH + (8 * ib + k) / 8] |= ((g >> 8) << ((8 * ib + k) % 8)) as u8;
        }
        qs += 8;
        y[signs..signs + 4].copy_from_slice(&block_signs);
        signs += 4;
        not_negative(scale)?;
        scales[ib] = scale;
        max_scale = max_c(max_scale, scale);
    }
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    put_u16(y, 0, fp16_bits(d * 1.033));
    let id = 1.0 / d;
    for ib in (0..QK_K / 32).step_by(2) {
        let l1 = scale_code(id, scales[ib], 15);
        let l2 = scale_code(id, scales[ib + 1], 15);
        y[SCALES + ib / 2] = (l1 | (l2 << 4)) as u8;
    }
    Ok(())
}
