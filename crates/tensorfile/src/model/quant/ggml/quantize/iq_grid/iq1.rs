//! IQ1_S and IQ1_M: groups of eight values, each -1, 0 or 1 plus a shift of ±1/8, on a
//! 2048-point grid, as ggml's `quantize_row_iq1_s_impl` and `quantize_row_iq1_m_impl`.
//!
//! Each sub-block is split exactly: its values sorted (by glibc's merge sort, whose order of
//! equal values the result depends on), every split into three groups scored, and the groups'
//! codes then moved to the nearest grid point where they are off the grid.

use super::lattice::{self, Lattice, Place, code};
use super::{Abort, QK_K, Step, each_block, fp16_bits, max_c, not_negative, put_u16, scale_code};

/// ggml's `IQ1S_DELTA` and `IQ1M_DELTA`.
const DELTA: f32 = 0.125;
/// The three values of a positive and a negative shift.
const X_P: [f32; 3] = [-1.0 + DELTA, DELTA, 1.0 + DELTA];
const X_M: [f32; 3] = [-1.0 - DELTA, -DELTA, 1.0 - DELTA];

/// Bytes of a block: IQ1_S, IQ1_M.
const S_BYTES: usize = 50;
const M_BYTES: usize = 56;

/// IQ1_S: one row; ggml requires the importance weights.
pub(super) fn iq1_s(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq1();
    each_block::<S_BYTES>(x, importance, out, |xbl, qw, y| {
        s_block(lat, xbl, qw.ok_or("missing quantization weights")?, y)
    })
}

/// IQ1_M: one row, with importance weights or without.
pub(super) fn iq1_m(x: &[f32], importance: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lat = lattice::iq1();
    each_block::<M_BYTES>(x, importance, out, |xbl, qw, y| m_block(lat, xbl, qw, y))
}

/// glibc's `qsort` for these small arrays (its merge sort, `msort_with_tmp`): halves sorted
/// first, then merged taking from the first half unless its value is greater. Equal values
/// keep their order, and even NaN (equal to everything) lands where glibc puts it.
fn merge_sort(b: &mut [(f32, u8)], tmp: &mut [(f32, u8)]) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (b1, b2) = b.split_at_mut(n1);
        merge_sort(b1, tmp);
        merge_sort(b2, tmp);
    }
    let (mut i, mut j, mut t) = (0, n1, 0);
    while i < n1 && j < n {
        if b[i].0 > b[j].0 {
            tmp[t] = b[j];
            j += 1;
        } else {
            tmp[t] = b[i];
            i += 1;
        }
        t += 1;
    }
    while i < n1 {
        tmp[t] = b[i];
        i += 1;
        t += 1;
    }
    b[..t].copy_from_slice(&tmp[..t]);
}

/// The values of `xb` with their positions, in glibc's sorted order.
pub(super) fn sorted<const N: usize>(xb: &[f32]) -> [(f32, u8); N] {
    let mut pairs: [(f32, u8); N] = std::array::from_fn(|j| (xb[j], j as u8));
    let mut tmp = [(0f32, 0u8); N];
    merge_sort(&mut pairs, &mut tmp);
    pairs
}

/// The largest magnitude of `xb` by ggml's `MAX`.
fn largest_magnitude(xb: &[f32]) -> f32 {
    let mut max = xb[0].abs();
    for v in &xb[1..] {
        max = max_c(max, v.abs());
    }
    max
}

/// The grid point among `neighbours` nearest to `xval` with values `xg` at `scale` (weighted
/// squared distance, the first of equals), its levels written to `l`: ggml's
/// `iq1_find_best_neighbour2`. Where no distance is below FLT_MAX, ggml goes on to search the
/// whole grid reading values past the eight it was given (outside the row): refused instead.
fn nearest(
    lat: &Lattice<8>,
    neighbours: &[u16],
    xval: &[f32],
    weight: &[f32],
    scale: f32,
    xg: &[f32; 3],
    l: &mut [i8],
) -> Step<u16> {
    let mut best_score = f32::MAX;
    let mut best = None;
    for &g in neighbours {
        let pg = lat.point(g);
        let mut d2 = 0f32;
        for i in 0..8 {
            let q = xg[((pg[i] - 1) / 2) as usize];
            let diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if d2 < best_score {
            best_score = d2;
            best = Some(g);
        }
    }
    let g =
        best.ok_or("no neighbour nearer than FLT_MAX, and ggml's search of the whole grid reads outside the row")?;
    lat.levels(g, l);
    Ok(g)
}

/// The grid indices of the groups of eight of `l` (moved to the nearest grid point where off
/// the grid, with the values `xx(k)` of group `k`), and whether all were on the grid.
#[inline(always)]
fn place_groups<const G: usize>(
    lat: &Lattice<8>,
    l: &mut [i8],
    xb: &[f32],
    weight: &[f32],
    scale: f32,
    xx: impl Fn(usize) -> &'static [f32; 3],
) -> Step<([u16; G], bool)> {
    let mut index = [0u16; G];
    let mut all_on_grid = true;
    for k in 0..G {
        index[k] = match lat.place(code(&l[8 * k..8 * k + 8], 2))? {
            Place::On(g) => g,
            Place::Near(near) => {
                all_on_grid = false;
                let (x8, w8) = (&xb[8 * k..8 * k + 8], &weight[8 * k..8 * k + 8]);
                nearest(lat, near, x8, w8, scale, xx(k), &mut l[8 * k..8 * k + 8])?
            }
        };
    }
    Ok((index, all_on_grid))
}

/// The least-squares scale of the groups at grid `index` with values `xx(k)`, where both sums
/// are positive (ggml's refit after moving groups onto the grid).
#[inline(always)]
fn refit<const G: usize>(
    lat: &Lattice<8>,
    index: &[u16; G],
    xb: &[f32],
    weight: &[f32],
    xx: impl Fn(usize) -> &'static [f32; 3],
) -> Option<f32> {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for k in 0..G {
        let pg = lat.point(index[k]);
        for j in 0..8 {
            let w = weight[8 * k + j];
            let q = xx(k)[((pg[j] - 1) / 2) as usize];
            sumqx += w * q * xb[8 * k + j];
            sumq2 += w * q * q;
        }
    }
    (sumqx > 0.0 && sumq2 > 0.0).then(|| sumqx / sumq2)
}

/// Levels 0, 1, 2 by sorted position: below `i1`, from `i1` to `i2`, from `i2` on.
fn split_levels<const N: usize>(pairs: &[(f32, u8); N], i1: usize, i2: usize) -> [i8; N] {
    let mut l = [0i8; N];
    for (j, &(_, i)) in pairs.iter().enumerate() {
        l[usize::from(i)] = i8::from(j >= i1) + i8::from(j >= i2);
    }
    l
}

/// One IQ1_S block: eight sub-blocks of 32, each four 11-bit grid indices (low bytes in `qs`,
/// high bits in a 16-bit `qh` word with a 3-bit scale and the shift's sign).
fn s_block(lat: &Lattice<8>, xbl: &[f32; QK_K], qwbl: &[f32; QK_K], y: &mut [u8; S_BYTES]) -> Step<()> {
    const QS: usize = 2;
    const QH: usize = QS + QK_K / 8;
    y.fill(0);
    let mut scales = [0f32; QK_K / 32];
    let mut shifts = [0i8; QK_K / 32];
    let mut qh = [0u16; QK_K / 32];
    let mut max_scale = 0f32;
    let sigma2 = 2.0 * super::sum_squares(xbl) / QK_K as f32;
    for ib in 0..QK_K / 32 {
        let xb = &xbl[32 * ib..32 * ib + 32];
        let qw = &qwbl[32 * ib..32 * ib + 32];
        let weight: [f32; 32] = std::array::from_fn(|i| qw[i] * (sigma2 + xb[i] * xb[i]).sqrt());
        let max = largest_magnitude(xb);
        if max < 1e-12 {
            scales[ib] = 0.0;
            shifts[ib] = 1;
            continue;
        }
        let pairs = sorted::<32>(xb);
        let (mut sumx, mut sumw) = ([0f32; 33], [0f32; 33]);
        for (j, &(_, i)) in pairs.iter().enumerate() {
            let i = usize::from(i);
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        let mut best_score = -f32::MAX;
        let mut scale = max;
        let mut best: Option<(usize, usize, i8)> = None;
        for i1 in 0..=32 {
            for i2 in i1..=32 {
                for (x, shift) in [(&X_P, 1), (&X_M, -1)] {
                    let sumqx =
                        (sumx[i1] - sumx[0]) * x[0] + (sumx[i2] - sumx[i1]) * x[1] + (sumx[32] - sumx[i2]) * x[2];
                    let sumq2 = (sumw[i1] - sumw[0]) * x[0] * x[0]
                        + (sumw[i2] - sumw[i1]) * x[1] * x[1]
                        + (sumw[32] - sumw[i2]) * x[2] * x[2];
                    if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        best = Some((i1, i2, shift));
                    }
                }
            }
        }
        let Some((i1, i2, mut best_shift)) = best else {
            scales[ib] = 0.0;
            shifts[ib] = 1;
            continue;
        };
        let mut l = split_levels(&pairs, i1, i2);
        if scale < 0.0 {
            for v in &mut l {
                *v = 2 - *v;
            }
            scale = -scale;
            best_shift = -best_shift;
        }
        let xx = move |_: usize| if best_shift == 1 { &X_P } else { &X_M };
        let (index, all_on_grid) = place_groups::<4>(lat, &mut l, xb, &weight, scale, xx)?;
        if !all_on_grid {
            if let Some(s) = refit(lat, &index, xb, &weight, xx) {
                scale = s;
            }
        }
        let mut h = 0u16;
        for k in 0..4 {
            y[QS + 4 * ib + k] = index[k] as u8;
            h |= (index[k] >> 8) << (3 * k);
        }
        qh[ib] = h;
        not_negative(scale)?;
        scales[ib] = scale;
        shifts[ib] = best_shift;
        max_scale = max_c(max_scale, scale);
    }
    if max_scale != 0.0 {
        let d = max_scale / 15.0;
        put_u16(y, 0, fp16_bits(d * 1.125));
        let id = 1.0 / d;
        for ib in 0..QK_K / 32 {
            let mut l = scale_code(id, scales[ib], 7);
            if shifts[ib] == -1 {
                l |= 8;
            }
            qh[ib] |= (l as u16) << 12;
        }
    }
    for (ib, h) in qh.iter().enumerate() {
        put_u16(y, QH + 2 * ib, *h);
    }
    Ok(())
}

/// IQ1_M's weights of a 16-value sub-block: `qw * sqrtf(sigma2 + x*x)`, or `x*x` without.
fn m_weights(qw: Option<&[f32]>, xb: &[f32], sigma2: f32) -> [f32; 16] {
    match qw {
        Some(qw) => std::array::from_fn(|i| qw[i] * (sigma2 + xb[i] * xb[i]).sqrt()),
        None => std::array::from_fn(|i| xb[i] * xb[i]),
    }
}

/// The values of group `k` (0 or 1) of an IQ1_M sub-block with shift choice `shift`: bit 1 for
/// the first group, bit 0 for the second, set for the negative shift.
fn m_values(shift: i8, k: usize) -> &'static [f32; 3] {
    let negative = if k == 0 { shift >= 2 } else { shift % 2 != 0 };
    if negative { &X_M } else { &X_P }
}

/// The best split of an IQ1_M sub-block: positions `i1`, `i2`, shift choice 0..=3, and the scale.
fn m_split(pairs: &[(f32, u8); 16], xb: &[f32], weight: &[f32; 16], max: f32) -> (Option<(usize, usize, i8)>, f32) {
    let (mut px, mut pw) = ([[0f32; 17]; 2], [[0f32; 17]; 2]);
    for (j, &(_, i)) in pairs.iter().enumerate() {
        let i = usize::from(i);
        let h = usize::from(i >= 8);
        px[h][j + 1] = px[h][j] + weight[i] * xb[i];
        px[1 - h][j + 1] = px[1 - h][j];
        pw[h][j + 1] = pw[h][j] + weight[i];
        pw[1 - h][j + 1] = pw[1 - h][j];
    }
    let txs = [px[0][16], px[1][16]];
    let tws = [pw[0][16], pw[1][16]];
    let (p2, m2) = (X_P[2], X_M[2]);
    let cp1 = X_P[0] * X_P[0] - X_P[1] * X_P[1];
    let cp2 = X_P[1] * X_P[1] - X_P[2] * X_P[2];
    let cm1 = X_M[0] * X_M[0] - X_M[1] * X_M[1];
    let cm2 = X_M[1] * X_M[1] - X_M[2] * X_M[2];
    let mut best_score = -f32::MAX;
    let mut scale = max;
    let mut best = None;
    for i1 in 0..=16 {
        for i2 in i1..=16 {
            let (mut qx_p, mut qx_m, mut q2_p, mut q2_m) = ([0f32; 2], [0f32; 2], [0f32; 2], [0f32; 2]);
            for h in 0..2 {
                let sx = px[h][i1] + px[h][i2];
                qx_p[h] = txs[h] * p2 - sx;
                qx_m[h] = txs[h] * m2 - sx;
                q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
            }
            let sumqx = [qx_p[0] + qx_p[1], qx_p[0] + qx_m[1], qx_m[0] + qx_p[1], qx_m[0] + qx_m[1]];
            let sumq2 = [q2_p[0] + q2_p[1], q2_p[0] + q2_m[1], q2_m[0] + q2_p[1], q2_m[0] + q2_m[1]];
            for k in 0..4 {
                if sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k] {
                    scale = sumqx[k] / sumq2[k];
                    best_score = scale * sumqx[k];
                    best = Some((i1, i2, k as i8));
                }
            }
        }
    }
    (best, scale)
}

/// One IQ1_M block: sixteen sub-blocks of 16, each two 11-bit grid indices (low bytes in `qs`,
/// high bits and the shifts in a `qh` byte) and a 3-bit scale; the super-block's half-precision
/// scale spread over the top nibbles of the four 16-bit scale words.
fn m_block(lat: &Lattice<8>, xbl: &[f32; QK_K], qwbl: Option<&[f32; QK_K]>, y: &mut [u8; M_BYTES]) -> Step<()> {
    const QH: usize = QK_K / 8;
    const SCALES: usize = QH + QK_K / 16;
    const MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];
    y.fill(0);
    let mut scales = [0f32; QK_K / 16];
    let mut shifts = [0i8; QK_K / 16];
    let mut max_scale = 0f32;
    let sigma2 = 2.0 * super::sum_squares(xbl) / QK_K as f32;
    let qw_of = |ib: usize| qwbl.map(|w| &w[16 * ib..16 * ib + 16]);
    for ib in 0..QK_K / 16 {
        let xb = &xbl[16 * ib..16 * ib + 16];
        let weight = m_weights(qw_of(ib), xb, sigma2);
        let max = largest_magnitude(xb);
        if max < 1e-7 {
            scales[ib] = 0.0;
            shifts[ib] = 0;
            continue;
        }
        let pairs = sorted::<16>(xb);
        let (best, mut scale) = m_split(&pairs, xb, &weight, max);
        let Some((i1, i2, mut best_k)) = best else {
            scales[ib] = 0.0;
            shifts[ib] = 0;
            continue;
        };
        let mut l = split_levels(&pairs, i1, i2);
        if scale < 0.0 {
            for v in &mut l {
                *v = 2 - *v;
            }
            scale = -scale;
            best_k = 3 - best_k;
        }
        let xx = move |k: usize| m_values(best_k, k);
        let (index, all_on_grid) = place_groups::<2>(lat, &mut l, xb, &weight, scale, xx)?;
        if !all_on_grid {
            if let Some(s) = refit(lat, &index, xb, &weight, xx) {
                scale = s;
            }
        }
        y[2 * ib] = index[0] as u8;
        y[2 * ib + 1] = index[1] as u8;
        y[QH + ib] = ((index[0] >> 8) | ((index[1] >> 8) << 4)) as u8;
        not_negative(scale)?;
        scales[ib] = scale;
        shifts[ib] = best_k;
        max_scale = max_c(max_scale, scale);
    }
    if max_scale == 0.0 {
        return Ok(());
    }
    let mut sc = [0u16; 4];
    let mut d = max_scale / 15.0;
    let id = 1.0 / d;
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for ib in 0..QK_K / 16 {
        let l = scale_code(id, scales[ib], 7);
        sc[ib / 4] |= (l << (3 * (ib % 4))) as u16;
        y[QH + ib] |= MASKS[shifts[ib] as usize & 3];
        let xb = &xbl[16 * ib..16 * ib + 16];
        let weight = m_weights(qw_of(ib), xb, sigma2);
        for k in 0..2 {
            let xx = m_values(shifts[ib], k);
            let g = u16::from(y[2 * ib + k]) + ((u16::from(y[QH + ib]) << (8 - 4 * k)) & 0x700);
            let pg = lat.point(g);
            for j in 0..8 {
                let w = weight[8 * k + j];
                let q = xx[((pg[j] - 1) / 2) as usize] * (2 * l + 1) as f32;
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
    }
    if sumq2 > 0.0 {
        d = sumqx / sumq2;
    }
    let s = fp16_bits(d * 1.1125);
    sc[0] |= (s & 0x000f) << 12;
    sc[1] |= (s & 0x00f0) << 8;
    sc[2] |= (s & 0x0f00) << 4;
    sc[3] |= s & 0xf000;
    for (i, w) in sc.iter().enumerate() {
        put_u16(y, SCALES + 2 * i, *w);
    }
    Ok(())
}
