//! A block's largest magnitude, its value of largest magnitude, its minimum and maximum, as
//! ggml's sequential loops find them, computed eight lanes at a time (so that they vectorize)
//! where the order cannot change the answer, and in ggml's order where it can (NaN under
//! `MAX(amax, fabsf(v))`, or a tie between 0 and -0 for the smallest or largest value).

/// Lane-wise fold of `x` with `keep(current, v)` choosing the value that stays: eight lanes
/// over the whole chunks of 8, folded in order, then the rest.
#[inline(always)]
fn fold8(x: &[f32], start: f32, keep: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [start; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for k in 0..8 {
            lanes[k] = keep(lanes[k], chunk[k]);
        }
    }
    rest.iter().fold(lanes.iter().fold(start, |m, &v| keep(m, v)), |m, &v| keep(m, v))
}

/// ggml's `if (amax < fabsf(v)) amax = fabsf(v)` from 0: the largest magnitude, NaN skipped.
#[inline(always)]
pub(super) fn largest_magnitude(x: &[f32]) -> f32 {
    // Without NaN, `max` is the same in any order; NaN is never kept.
    fold8(x, 0.0, |m, v| if v.abs() > m { v.abs() } else { m })
}

/// ggml's `amax = MAX(amax, fabsf(v))` from 0 (`amax > |v| ? amax : |v|`): the largest
/// magnitude, but a NaN takes the place of everything before it.
#[inline(always)]
pub(super) fn max_magnitude(x: &[f32]) -> f32 {
    if x.iter().any(|v| v.is_nan()) {
        return x.iter().fold(0.0, |m, v| if m > v.abs() { m } else { v.abs() });
    }
    largest_magnitude(x)
}

/// ggml's `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }` from 0: the largest magnitude
/// and the first value that has it (0 when it is 0).
#[inline(always)]
pub(super) fn signed_max(x: &[f32]) -> (f32, f32) {
    let amax = largest_magnitude(x);
    if amax == 0.0 {
        return (amax, 0.0);
    }
    (amax, x.iter().copied().find(|v| v.abs() == amax).unwrap_or(0.0))
}

/// ggml's `if (v < min) min = v; if (v > max) max = v;` from `FLT_MAX` and `-FLT_MAX`: the
/// smallest and largest value, NaN skipped; of 0 and -0 the first one.
#[inline(always)]
pub(super) fn min_max(x: &[f32]) -> (f32, f32) {
    let min = fold8(x, f32::MAX, |m, v| if v < m { v } else { m });
    let max = fold8(x, -f32::MAX, |m, v| if v > m { v } else { m });
    if min == 0.0 || max == 0.0 {
        // Which zero comes first decides the sign: ggml's order.
        let (mut min, mut max) = (f32::MAX, -f32::MAX);
        for &v in x {
            if v < min {
                min = v;
            }
            if v > max {
                max = v;
            }
        }
        return (min, max);
    }
    (min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_decides_where_ggml_lets_it() {
        let mut x = [0.5f32; 32];
        x[3] = -2.0;
        x[20] = 2.0;
        assert_eq!(signed_max(&x), (2.0, -2.0));
        x[9] = f32::NAN;
        assert_eq!(largest_magnitude(&x), 2.0);
        assert_eq!(max_magnitude(&x), 2.0); // 2.0 comes after the NaN
        x[25] = f32::NAN;
        assert_eq!(max_magnitude(&x), 0.5); // only what follows the last NaN counts
        x[31] = f32::NAN;
        assert!(max_magnitude(&x).is_nan());
        let mut zeros = [0.0f32; 16];
        zeros[5] = -0.0;
        let (min, max) = min_max(&zeros);
        assert_eq!((min.to_bits(), max.to_bits()), (0, 0)); // +0 first: kept
        zeros[0] = -0.0;
        let (min, max) = min_max(&zeros);
        assert_eq!((min.to_bits(), max.to_bits()), ((-0.0f32).to_bits(), (-0.0f32).to_bits()));
        assert_eq!(min_max(&[f32::NAN; 8]), (f32::MAX, -f32::MAX));
        assert_eq!(min_max(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, -9.0, 10.0]), (-9.0, 10.0));
        assert_eq!(signed_max(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, -9.0]), (9.0, -9.0));
    }
}
