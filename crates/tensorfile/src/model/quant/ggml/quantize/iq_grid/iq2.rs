//! IQ2_XXS, IQ2_XS and IQ2_S: groups of eight magnitudes on a grid of levels 1, 3, 5 (times a
//! sub-block scale), signs stored apart, as ggml's `quantize_row_iq2_*_impl`.

use super::lattice::{self, Lattice, Place, code};
use super::{
    Abort, QK_K, Step, clamp_code, each_block, even_signs, fp16_bits, max_c, nearest_int, not_negative, put_u16,
    scale_code,
};

/// ggml's `kMaxQ` of the 2-bit grids: levels 0..kMaxQ-1 (and make_qp_quants' 0..kMaxQ).
const K_MAX_Q: i32 = 3;

/// Bytes of a block: IQ2_XXS, IQ2_XS, IQ2_S.
const XXS_BYTES: usize = 66;
const XS_BYTES: usize = 74;
const S_BYTES: usize = 82;

/// IQ2_XXS: one row; ggml requires the importance weights.
pub(super) fn iq2_xxs(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq2_xxs();
    each_block::<XXS_BYTES>(x, importance, out, |xbl, qw, y| {
        xxs_block(lat, xbl, qw.ok_or("missing quantization weights")?, y)
    })
}

/// IQ2_XS: one row; ggml requires the importance weights.
pub(super) fn iq2_xs(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq2_xs();
    each_block::<XS_BYTES>(x, importance, out, |xbl, qw, y| {
        xs_block(lat, xbl, qw.ok_or("missing quantization weights")?, y)
    })
}

/// IQ2_S: one row, with importance weights or without.
pub(super) fn iq2_s(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq2_s();
    each_block::<S_BYTES>(x, importance, out, |xbl, qw, y| s_block(lat, xbl, qw, y))
}

/// The levels of `xval` at inverse scale `id`, clamped to the grid's range (ggml's
/// `MAX(0, MIN(kMaxQ-1, nearest_int(0.5f*(id*x-1))))`).
#[inline(always)]
fn level(id: f32, x: f32) -> i8 {
    clamp_code(nearest_int(0.5 * (id * x - 1.0)), K_MAX_Q - 1) as i8
}

/// `sum w*x*q` and `sum w*q*q` over levels `l` (q = 2l + 1), in ggml's order.
#[inline(always)]
fn sums(weight: &[f32], xval: &[f32], l: &[i8]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for i in 0..l.len() {
        let w = weight[i];
        let q = (2 * i32::from(l[i]) + 1) as f32;
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// ggml's `make_qp_quants` for IQ2_XXS: the scale (and levels 0..=nmax) of non-negative
/// values by weighted least squares. The first levels are stored as bytes (ggml's `uint8_t`),
/// so a negative one wraps, and the later steps read it wrapped.
fn make_qp_quants(nmax: i32, x: &[f32; 32], l: &mut [u8; 32], quant_weights: &[f32; 32]) -> f32 {
    let mut max = 0f32;
    for &v in x {
        max = max_c(max, v);
    }
    if max < 1e-15 {
        *l = [0; 32];
        return 0.0;
    }
    let nmax_f = nmax as f32;
    let mut iscale = nmax_f / max;
    for i in 0..32 {
        l[i] = nearest_int(iscale * x[i]) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0f32;
    for i in 0..32 {
        let diff = x[i] - scale * f32::from(l[i]);
        best_mse += quant_weights[i] * diff * diff;
    }
    for is in -4..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1 * is as f32 + nmax_f) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0f32;
        for i in 0..32 {
            let li = nearest_int(iscale_is * x[i]).min(nmax);
            let diff = x[i] - scale_is * li as f32;
            mse += quant_weights[i] * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for i in 0..32 {
        let li = nearest_int(iscale * x[i]).min(nmax);
        l[i] = li as u8;
        let w = quant_weights[i];
        sumlx += w * x[i] * li as f32;
        suml2 += w * li as f32 * li as f32;
    }
    for _ in 0..5 {
        let mut n_changed = 0;
        for i in 0..32 {
            let w = quant_weights[i];
            let li = f32::from(l[i]);
            let mut slx = sumlx - w * x[i] * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != i32::from(l[i]) {
                    slx += w * x[i] * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        l[i] = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed += 1;
                    }
                }
            }
        }
        if n_changed == 0 {
            break;
        }
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// The weights ggml gives the 2-bit types with an importance matrix:
/// `qw[i] * sqrtf(sigma2 + x[i]*x[i])`, and their square roots.
#[inline(always)]
fn weighted<const N: usize>(qw: &[f32], xb: &[f32], sigma2: f32, weight: &mut [f32; N], waux: &mut [f32; N]) {
    for i in 0..N {
        weight[i] = qw[i] * (sigma2 + xb[i] * xb[i]).sqrt();
    }
    for i in 0..N {
        waux[i] = weight[i].sqrt();
    }
}

/// One IQ2_XXS block: eight sub-blocks of 32, each a 32-bit word of four grid indices and a
/// word of four 7-bit sign patterns and a 4-bit scale.
fn xxs_block(lat: &Lattice<8>, xbl: &[f32; QK_K], qwbl: &[f32; QK_K], y: &mut [u8; XXS_BYTES]) -> Step<()> {
    let mut scales = [0f32; QK_K / 32];
    let mut q2 = [0u32; QK_K / 16];
    let mut max_scale = 0f32;
    let sigma2 = super::sum_squares(xbl) / QK_K as f32;
    for ib in 0..QK_K / 32 {
        let xb = &xbl[32 * ib..32 * ib + 32];
        let (mut weight, mut waux, mut xval) = ([0f32; 32], [0f32; 32], [0f32; 32]);
        weighted(&qwbl[32 * ib..32 * ib + 32], xb, sigma2, &mut weight, &mut waux);
        let mut block_signs = [0u8; 4];
        for k in 0..4 {
            block_signs[k] = even_signs(&xb[8 * k..8 * k + 8], &weight[8 * k..8 * k + 8], &mut xval[8 * k..8 * k + 8]);
        }
        let mut max = xval[0];
        for &v in &xval[1..] {
            max = max_c(max, v);
        }
        if max < 1e-15 {
            scales[ib] = 0.0;
            continue;
        }
        let mut first = [0u8; 32];
        let mut scale = make_qp_quants(K_MAX_Q + 1, &xval, &mut first, &weight);
        let mut l: [i8; 32] = first.map(|v| v as i8);
        let eff_max = scale * K_MAX_Q as f32;
        if eff_max <= 0.0 {
            scales[ib] = 0.0;
            continue;
        }
        let mut best = 0f32;
        let mut laux = [0i8; 32];
        for is in -6..=6 {
            let id = (5.0 + is as f32 * 0.1) / eff_max;
            let this_scale = 1.0 / id;
            for k in 0..4 {
                for i in 0..8 {
                    laux[8 * k + i] = level(id, xval[8 * k + i]);
                }
                if let Place::Near(near) = lat.place(code(&laux[8 * k..8 * k + 8], 2))? {
                    let (xv, wa) = (&xval[8 * k..8 * k + 8], &waux[8 * k..8 * k + 8]);
                    lat.nearest(near, xv, wa, this_scale, &mut laux[8 * k..8 * k + 8])?;
                }
            }
            let (sumqx, sumq2) = sums(&weight, &xval, &laux);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                l = laux;
            }
        }
        if scale > 0.0 {
            let id = 1.0 / scale;
            for k in 0..4 {
                let mut levels = [0i8; 8];
                for i in 0..8 {
                    levels[i] = level(id, xval[8 * k + i]);
                }
                let g = match lat.place(code(&levels, 2))? {
                    Place::On(g) => g,
                    Place::Near(near) => {
                        let (xv, wa) = (&xval[8 * k..8 * k + 8], &waux[8 * k..8 * k + 8]);
                        lat.nearest(near, xv, wa, scale, &mut l[8 * k..8 * k + 8])?
                    }
                };
                lat.levels(g, &mut l[8 * k..8 * k + 8]);
            }
            let (sumqx, sumq2) = sums(&weight, &xval, &l);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        if scale < 0.0 {
            scale = -scale;
            for s in &mut block_signs {
                *s = !*s & 127;
            }
        }
        for k in 0..4 {
            let g = lat.index_on_grid(code(&l[8 * k..8 * k + 8], 2))?;
            q2[2 * ib] |= u32::from(g) << (8 * k);
            q2[2 * ib + 1] |= u32::from(block_signs[k]) << (7 * k);
        }
        not_negative(scale)?;
        scales[ib] = scale;
        max_scale = max_c(max_scale, scale);
    }
    y.fill(0);
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    put_u16(y, 0, fp16_bits(d));
    let id = 1.0 / d;
    for ib in 0..QK_K / 32 {
        q2[2 * ib + 1] |= (scale_code(id, scales[ib], 15) as u32) << 28;
    }
    for (o, w) in y[2..].chunks_exact_mut(4).zip(&q2) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    Ok(())
}

/// The scale and levels of a 16-value sub-block of IQ2_XS or IQ2_S whose largest magnitude is
/// `max` (the same search in both).
fn search_16(
    lat: &Lattice<8>,
    xval: &[f32; 16],
    weight: &[f32; 16],
    waux: &[f32; 16],
    max: f32,
) -> Step<(f32, [i8; 16])> {
    let mut l = [0i8; 16];
    let mut laux = [0i8; 16];
    let mut best = 0f32;
    let mut scale = max / (2 * K_MAX_Q - 1) as f32;
    let mut on_grid = [true; 2];
    let mut on_grid_aux = [true; 2];
    for is in -9..=9 {
        let id = (5.0 + is as f32 * 0.1) / max;
        let this_scale = 1.0 / id;
        for k in 0..2 {
            for i in 0..8 {
                laux[8 * k + i] = level(id, xval[8 * k + i]);
            }
            on_grid_aux[k] = true;
            if let Place::Near(near) = lat.place(code(&laux[8 * k..8 * k + 8], 2))? {
                on_grid_aux[k] = false;
                let (xv, wa) = (&xval[8 * k..8 * k + 8], &waux[8 * k..8 * k + 8]);
                lat.nearest(near, xv, wa, this_scale, &mut laux[8 * k..8 * k + 8])?;
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
        for k in 0..2 {
            if on_grid[k] {
                continue;
            }
            for i in 0..8 {
                l[8 * k + i] = level(id, xval[8 * k + i]);
            }
            if let Place::Near(near) = lat.place(code(&l[8 * k..8 * k + 8], 2))? {
                let (xv, wa) = (&xval[8 * k..8 * k + 8], &waux[8 * k..8 * k + 8]);
                lat.nearest(near, xv, wa, scale, &mut l[8 * k..8 * k + 8])?;
            }
        }
        let (sumqx, sumq2) = sums(weight, xval, &l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    Ok((scale, l))
}

/// One IQ2_XS block: sixteen sub-blocks of 16, each two 16-bit words (9-bit grid index, 7-bit
/// signs) and a 4-bit scale.
fn xs_block(lat: &Lattice<8>, xbl: &[f32; QK_K], qwbl: &[f32; QK_K], y: &mut [u8; XS_BYTES]) -> Step<()> {
    let mut scales = [0f32; QK_K / 16];
    let mut q2 = [0u16; QK_K / 8];
    let mut max_scale = 0f32;
    let sigma2 = super::sum_squares(xbl) / QK_K as f32;
    for ib in 0..QK_K / 16 {
        let xb = &xbl[16 * ib..16 * ib + 16];
        let (mut weight, mut waux, mut xval) = ([0f32; 16], [0f32; 16], [0f32; 16]);
        weighted(&qwbl[16 * ib..16 * ib + 16], xb, sigma2, &mut weight, &mut waux);
        let mut block_signs = [0u8; 2];
        for k in 0..2 {
            block_signs[k] = even_signs(&xb[8 * k..8 * k + 8], &weight[8 * k..8 * k + 8], &mut xval[8 * k..8 * k + 8]);
        }
        let mut max = xval[0];
        for &v in &xval[1..] {
            max = max_c(max, v);
        }
        if max < 1e-15 {
            scales[ib] = 0.0;
            continue;
        }
        let (mut scale, l) = search_16(lat, &xval, &weight, &waux, max)?;
        if scale < 0.0 {
            scale = -scale;
            for s in &mut block_signs {
                *s = !*s & 127;
            }
        }
        for k in 0..2 {
            let g = lat.index_on_grid(code(&l[8 * k..8 * k + 8], 2))?;
            q2[2 * ib + k] = g | (u16::from(block_signs[k]) << 9);
        }
        not_negative(scale)?;
        scales[ib] = scale;
        max_scale = max_c(max_scale, scale);
    }
    y.fill(0);
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    put_u16(y, 0, fp16_bits(d));
    let id = 1.0 / d;
    for (o, w) in y[2..66].chunks_exact_mut(2).zip(&q2) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    for ib in 0..QK_K / 16 {
        y[66 + ib / 2] |= (scale_code(id, scales[ib], 15) as u8) << (4 * (ib % 2));
    }
    Ok(())
}

/// One IQ2_S block: sixteen sub-blocks of 16, each two grid indices of 10 bits (low bytes in
/// `qs`, high bits in `qh`), two bytes of signs (all eight kept) and a 4-bit scale.
fn s_block(lat: &Lattice<8>, xbl: &[f32; QK_K], qwbl: Option<&[f32; QK_K]>, y: &mut [u8; S_BYTES]) -> Step<()> {
    const QS: usize = 2;
    const QH: usize = QS + QK_K / 4;
    const SCALES: usize = QH + QK_K / 32;
    y.fill(0);
    let mut scales = [0f32; QK_K / 16];
    let mut max_scale = 0f32;
    let sigma2 = 2.0 * super::sum_squares(xbl) / QK_K as f32;
    for ib in 0..QK_K / 16 {
        let xb = &xbl[16 * ib..16 * ib + 16];
        let (mut weight, mut waux, mut xval) = ([0f32; 16], [0f32; 16], [0f32; 16]);
        match qwbl {
            Some(qw) => weighted(&qw[16 * ib..16 * ib + 16], xb, sigma2, &mut weight, &mut waux),
            None => {
                for i in 0..16 {
                    weight[i] = 0.25 * sigma2 + xb[i] * xb[i];
                }
                for i in 0..16 {
                    waux[i] = weight[i].sqrt();
                }
            }
        }
        let mut block_signs = [0u8; 2];
        for k in 0..2 {
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
        let mut max = xval[0];
        for &v in &xval[1..] {
            max = max_c(max, v);
        }
        if max < 1e-8 {
            scales[ib] = 0.0;
            continue;
        }
        let (mut scale, l) = search_16(lat, &xval, &weight, &waux, max)?;
        if scale < 0.0 {
            scale = -scale;
            for s in &mut block_signs {
                *s = !*s;
            }
        }
        for k in 0..2 {
            let g = lat.index_on_grid(code(&l[8 * k..8 * k + 8], 2))?;
            let i8 = 2 * ib + k;
            y[QS + i8] = g as u8;
            y[QH + i8 / 4] |= ((g >> 8) << (2 * (i8 % 4))) as u8;
            y[QS + QK_K / 8 + i8] = block_signs[k];
        }
        not_negative(scale)?;
        scales[ib] = scale;
        max_scale = max_c(max_scale, scale);
    }
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    put_u16(y, 0, fp16_bits(d * 0.9875));
    let id = 1.0 / d;
    for ib in 0..QK_K / 16 {
        y[SCALES + ib / 2] |= (scale_code(id, scales[ib], 15) as u8) << (4 * (ib % 2));
    }
    Ok(())
}
