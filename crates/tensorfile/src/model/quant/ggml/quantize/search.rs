//! ggml's scale searches (`make_qx_quants`, `make_q3_quants`, `make_qkx2_quants`,
//! `make_qkx3_quants`, `make_qp_quants`): each picks a group's scale (and minimum) and the
//! group's integer levels, trying a few candidate scales and keeping the one with the least
//! weighted error. Only the variants ggml's quantizers call are here; every sum runs in the
//! order ggml's loops run it.

use super::nearest_int;

/// ggml's `GROUP_MAX_EPS`: a group whose largest magnitude is below it is all zero.
pub(in crate::model::quant::ggml) const GROUP_MAX_EPS: f32 = 1e-15;

/// `make_qx_quants` with `rmse_type` 1 on `L` groups at once (lane `k` of every row is group
/// `k`, each computed exactly as ggml computes one group): symmetric levels `-nmax..nmax`
/// stored as `l + nmax` in `levels`, weighted by `weights` (or by `x * x` without them);
/// returns each group's scale. The eighteen candidate scales are tried in ggml's order.
pub(super) fn make_qx_quants<const N: usize, const L: usize>(
    nmax: i32,
    x: &[[f32; L]; N],
    levels: &mut [[i8; L]; N],
    weights: Option<&[[f32; L]; N]>,
) -> [f32; L] {
    let mut max = [0f32; L];
    let mut amax = [0f32; L];
    for row in x {
        for k in 0..L {
            let ax = row[k].abs();
            if ax > amax[k] {
                amax[k] = ax;
                max[k] = row[k];
            }
        }
    }
    let w = match weights {
        Some(w) => *w,
        None => x.map(|row| row.map(|v| v * v)),
    };
    // ggml's `w*x[i]*l` is `(w * x) * l`: the first product is the same for every candidate.
    let mut wx = [[0f32; L]; N];
    for i in 0..N {
        for k in 0..L {
            wx[i][k] = w[i][k] * x[i][k];
        }
    }
    let level = |iscale: f32, v: f32| nearest_int(iscale * v).max(-nmax).min(nmax - 1) as f32;
    let mut iscale = max.map(|m| (-nmax) as f32 / m);
    // The levels kept and those of the candidate tried, as the floats the sums take.
    let mut kept = [[0f32; L]; N];
    let mut trial = [[0f32; L]; N];
    let mut sumlx = [0f32; L];
    let mut suml2 = [0f32; L];
    for i in 0..N {
        for k in 0..L {
            let l = level(iscale[k], x[i][k]);
            kept[i][k] = l;
            sumlx[k] += wx[i][k] * l;
            suml2[k] += w[i][k] * l * l;
        }
    }
    let mut scale = [0f32; L];
    let mut best = [0f32; L];
    for k in 0..L {
        scale[k] = if suml2[k] != 0.0 { sumlx[k] / suml2[k] } else { 0.0 };
        best[k] = scale[k] * sumlx[k];
    }
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = max.map(|m| -(nmax as f32 + 0.1 * is as f32) / m);
        sumlx = [0.0; L];
        suml2 = [0.0; L];
        for i in 0..N {
            for k in 0..L {
                let l = level(iscale[k], x[i][k]);
                trial[i][k] = l;
                sumlx[k] += wx[i][k] * l;
                suml2[k] += w[i][k] * l * l;
            }
        }
        let mut better = [0u32; L];
        for k in 0..L {
            let b = suml2[k] > 0.0 && sumlx[k] * sumlx[k] > best[k] * suml2[k];
            if b {
                scale[k] = sumlx[k] / suml2[k];
                best[k] = scale[k] * sumlx[k];
            }
            better[k] = u32::from(b).wrapping_neg();
        }
        select_lanes(&better, &trial, &mut kept);
    }
    for i in 0..N {
        for k in 0..L {
            levels[i][k] = (kept[i][k] as i32 + nmax) as i8;
        }
    }
    for k in 0..L {
        // An all-zero group: no levels, no scale (what the lane computed is dropped).
        if amax[k] < GROUP_MAX_EPS {
            scale[k] = 0.0;
            for row in levels.iter_mut() {
                row[k] = 0;
            }
        }
    }
    scale
}

/// Copies into `kept` the lanes of `trial` whose `mask` is all ones (branch-free, so that it
/// vectorizes); nothing when no lane is.
#[inline(always)]
fn select_lanes<const N: usize, const L: usize>(mask: &[u32; L], trial: &[[f32; L]; N], kept: &mut [[f32; L]; N]) {
    if mask.iter().all(|&m| m == 0) {
        return;
    }
    for (kept, trial) in kept.iter_mut().zip(trial) {
        for k in 0..L {
            kept[k] = f32::from_bits((trial[k].to_bits() & mask[k]) | (kept[k].to_bits() & !mask[k]));
        }
    }
}

/// `make_q3_quants` with `do_rmse`: levels `-nmax..nmax` weighted by `x * x`, then up to five
/// passes moving single levels while that improves the fit; levels stored as `l + nmax`.
pub(in crate::model::quant::ggml) fn make_q3_quants<const N: usize>(
    nmax: i32,
    x: &[f32; N],
    levels: &mut [i8; N],
) -> f32 {
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        *levels = [0; N];
        return 0.0;
    }
    let iscale = (-nmax) as f32 / max;
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for i in 0..N {
        let l = nearest_int(iscale * x[i]).max(-nmax).min(nmax - 1);
        levels[i] = l as i8;
        let w = x[i] * x[i];
        sumlx += w * x[i] * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut changed = false;
        for i in 0..N {
            let w = x[i] * x[i];
            let li = f32::from(levels[i]);
            let mut slx = sumlx - w * x[i] * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = nearest_int(x[i] * sl2 / slx).max(-nmax).min(nmax - 1);
                if new_l != i32::from(levels[i]) {
                    slx += w * x[i] * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        levels[i] = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for l in levels.iter_mut() {
        *l = l.wrapping_add(nmax as i8);
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// The parameters of an asymmetric search: candidate `is` (0..=steps) scales the range to
/// `rmin + rdelta * is + nmax` levels.
#[derive(Clone, Copy)]
pub(super) struct Steps {
    pub rmin: f32,
    pub rdelta: f32,
    pub steps: i32,
    /// Absolute errors (`true`) or squared ones.
    pub use_mad: bool,
}

/// `make_qkx2_quants` (and `make_qkx3_quants` with weights, which differs only in testing
/// `max <= min` for an empty range) on `L` groups at once (lane `k` of every row is group `k`,
/// each computed exactly as ggml computes one group): levels `0..=nmax` of `scale * l - min`,
/// weighted by `weights`; returns each group's scale and minimum (positive: what is
/// subtracted). A candidate that wins changes the group's minimum, and with it the next
/// candidates, as in ggml.
pub(super) fn make_qkx_quants<const N: usize, const L: usize>(
    nmax: i32,
    x: &[[f32; L]; N],
    weights: &[[f32; L]; N],
    levels: &mut [[u8; L]; N],
    steps: Steps,
    empty_when_at_most: bool,
) -> ([f32; L], [f32; L]) {
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = [0f32; L];
    for k in 0..L {
        sum_x[k] = sum_w[k] * x[0][k];
    }
    for i in 1..N {
        for k in 0..L {
            if x[i][k] < min[k] {
                min[k] = x[i][k];
            }
            if x[i][k] > max[k] {
                max[k] = x[i][k];
            }
            sum_w[k] += weights[i][k];
            sum_x[k] += weights[i][k] * x[i][k];
        }
    }
    let mut empty = [false; L];
    for k in 0..L {
        if min[k] > 0.0 {
            min[k] = 0.0;
        }
        empty[k] = if empty_when_at_most { max[k] <= min[k] } else { max[k] == min[k] };
    }
    let first_min = min;
    let fnmax = nmax as f32;
    let error = |diff: f32| if steps.use_mad { diff.abs() } else { diff * diff };
    let mut iscale = [0f32; L];
    let mut scale = [0f32; L];
    for k in 0..L {
        iscale[k] = fnmax / (max[k] - min[k]);
        scale[k] = 1.0 / iscale[k];
    }
    let mut best_error = [0f32; L];
    // The levels kept, as the floats the sums take.
    let mut kept = [[0f32; L]; N];
    for i in 0..N {
        for k in 0..L {
            let l = nearest_int(iscale[k] * (x[i][k] - min[k])).max(0).min(nmax) as f32;
            kept[i][k] = l;
            let diff = scale[k] * l + min[k] - x[i][k];
            best_error[k] += weights[i][k] * error(diff);
        }
    }
    if steps.steps >= 1 {
        // This candidate's levels, as the floats the sums take.
        let mut trial = [[0f32; L]; N];
        for is in 0..=steps.steps {
            for k in 0..L {
                iscale[k] = (steps.rmin + steps.rdelta * is as f32 + fnmax) / (max[k] - min[k]);
            }
            let mut sum_l = [0f32; L];
            let mut sum_l2 = [0f32; L];
            let mut sum_xl = [0f32; L];
            for i in 0..N {
                for k in 0..L {
                    let l = nearest_int(iscale[k] * (x[i][k] - min[k])).max(0).min(nmax) as f32;
                    trial[i][k] = l;
                    let w = weights[i][k];
                    sum_l[k] += w * l;
                    sum_l2[k] += w * l * l;
                    sum_xl[k] += w * l * x[i][k];
                }
            }
            let mut this_scale = [0f32; L];
            let mut this_min = [0f32; L];
            let mut positive = [false; L];
            for k in 0..L {
                let d = sum_w[k] * sum_l2[k] - sum_l[k] * sum_l[k];
                positive[k] = d > 0.0;
                this_scale[k] = (sum_w[k] * sum_xl[k] - sum_x[k] * sum_l[k]) / d;
                this_min[k] = (sum_l2[k] * sum_x[k] - sum_l[k] * sum_xl[k]) / d;
                if this_min[k] > 0.0 {
                    this_min[k] = 0.0;
                    this_scale[k] = sum_xl[k] / sum_l2[k];
                }
            }
            let mut cur_error = [0f32; L];
            for i in 0..N {
                for k in 0..L {
                    let diff = this_scale[k] * trial[i][k] + this_min[k] - x[i][k];
                    cur_error[k] += weights[i][k] * error(diff);
                }
            }
            let mut better = [0u32; L];
            for k in 0..L {
                let b = positive[k] && cur_error[k] < best_error[k];
                if b {
                    best_error[k] = cur_error[k];
                    scale[k] = this_scale[k];
                    min[k] = this_min[k];
                }
                better[k] = u32::from(b).wrapping_neg();
            }
            select_lanes(&better, &trial, &mut kept);
        }
    }
    for i in 0..N {
        for k in 0..L {
            levels[i][k] = kept[i][k] as u8;
        }
    }
    for k in 0..L {
        // An empty range: no levels, no scale (what the lane computed is dropped).
        if empty[k] {
            scale[k] = 0.0;
            min[k] = first_min[k];
            for row in levels.iter_mut() {
                row[k] = 0;
            }
        }
    }
    (scale, min.map(|m| -m))
}

/// `make_qp_quants`: levels `0..=nmax` of non-negative `x` (a block's sub-scales or minimums),
/// weighted by `weights`: the best of nine scales, then up to five passes moving single levels.
pub(super) fn make_qp_quants<const N: usize>(nmax: i32, x: &[f32; N], levels: &mut [u8; N], weights: &[f32; N]) -> f32 {
    let mut max = 0f32;
    for &v in x {
        max = if max > v { max } else { v };
    }
    if max < GROUP_MAX_EPS {
        *levels = [0; N];
        return 0.0;
    }
    let fnmax = nmax as f32;
    let mut iscale = fnmax / max;
    for i in 0..N {
        levels[i] = nearest_int(iscale * x[i]) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0f32;
    for i in 0..N {
        let diff = x[i] - scale * f32::from(levels[i]);
        best_mse += weights[i] * diff * diff;
    }
    for is in -4..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1 * is as f32 + fnmax) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0f32;
        for i in 0..N {
            let l = nearest_int(iscale_is * x[i]).min(nmax);
            let diff = x[i] - scale_is * l as f32;
            mse += weights[i] * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for i in 0..N {
        let l = nearest_int(iscale * x[i]).min(nmax);
        levels[i] = l as u8;
        let w = weights[i];
        sumlx += w * x[i] * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut changed = false;
        for i in 0..N {
            let w = weights[i];
            let li = f32::from(levels[i]);
            let mut slx = sumlx - w * x[i] * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != i32::from(levels[i]) {
                    slx += w * x[i] * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        levels[i] = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}
