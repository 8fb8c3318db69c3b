//! The accumulator of a tensor's statistics over one block of decoded values, and how two
//! accumulators merge.
//!
//! A block (at most [`BLOCK`] values, small enough to stay in cache) is summed in one pass,
//! shifted by one of its values (stable however large the mean is beside the spread, see
//! [`Moments::of_block`]). Blocks merge with Chan's parallel formula.
//! The common block (every value finite) takes a branch-free path over several independent
//! lanes, which the compiler turns into vector instructions; a block holding a NaN, an
//! infinity, or finite values whose sum overflows takes a scalar path that counts them.

/// Values decoded and summarised at a time.
pub const BLOCK: usize = 4096;

/// `step` folded over `values` into [`LANES`] independent accumulators (from 0), summed.
#[inline(always)]
fn lanes(values: &[f64], step: impl Fn(f64, f64) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut groups = values.chunks_exact(LANES);
    for group in &mut groups {
        for i in 0..LANES {
            acc[i] = step(acc[i], group[i]);
        }
    }
    for (i, &x) in groups.remainder().iter().enumerate() {
        acc[i] = step(acc[i], x);
    }
    acc.iter().sum()
}

/// Independent accumulators of the branch-free path: two SSE2 registers each (x86-64's
/// baseline), few enough that the five accumulators stay in registers.
const LANES: usize = 4;

/// What is known of some values: counts, extremes and moments of the finite ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Moments {
    /// Finite values.
    pub count: u64,
    /// Their mean (0 when there is none).
    pub mean: f64,
    /// The sum of their squared deviations from `mean`.
    pub m2: f64,
    /// The smallest finite value (`+inf` when there is none).
    pub min: f64,
    /// The largest finite value (`-inf` when there is none).
    pub max: f64,
    /// Values equal to zero (either sign).
    pub zeros: u64,
    /// NaN values.
    pub nan: u64,
    /// `+inf` values.
    pub posinf: u64,
    /// `-inf` values.
    pub neginf: u64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments::new()
    }
}

impl Moments {
    /// Nothing seen yet.
    pub const fn new() -> Self {
        Moments {
            count: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            zeros: 0,
            nan: 0,
            posinf: 0,
            neginf: 0,
        }
    }

    /// The statistics of `values`; with `moments` false only the counts and extremes (the
    /// squared deviations are not summed: `m2` stays 0).
    ///
    /// One pass, shifted by the block's first value `k`: the sums of `x - k` and `(x - k)^2`
    /// give the mean and the squared deviations. However far `k` lies from the mean, it is one
    /// of the values, so `(k - mean)^2 <= n * variance`: the cancellation in
    /// `sum (x-k)^2 - (sum (x-k))^2 / n` loses at most about `n * eps` of the result (1e-12
    /// relative for a block), however large the mean is beside the spread.
    pub fn of_block(values: &[f64], moments: bool) -> Moments {
        let Some(&k) = values.first() else { return Moments::new() };
        // Loops over the cached block each with one kind of accumulator, which the compiler
        // turns into vector instructions (one loop with all of them mixes lanes and spills).
        let s1 = lanes(values, |acc, x| acc + (x - k));
        // Counts only: the first sum alone catches NaNs and infinities.
        let s2 = if moments { lanes(values, |acc, x| acc + (x - k) * (x - k)) } else { 0.0 };
        let mut lo = [f64::INFINITY; LANES];
        let mut hi = [f64::NEG_INFINITY; LANES];
        // Counted in float64 (exact: a block is far below 2^53), so that the count is a vector
        // compare, mask and add like the other accumulators.
        let mut zeros = [0.0f64; LANES];
        let mut groups = values.chunks_exact(LANES);
        for group in &mut groups {
            for i in 0..LANES {
                let x = group[i];
                // Select, not f64::min: no NaN handling, so this vectorizes (NaNs and
                // infinities are caught by the sums below).
                lo[i] = if x < lo[i] { x } else { lo[i] };
                hi[i] = if x > hi[i] { x } else { hi[i] };
                zeros[i] += if x == 0.0 { 1.0 } else { 0.0 };
            }
        }
        for (i, &x) in groups.remainder().iter().enumerate() {
            lo[i] = if x < lo[i] { x } else { lo[i] };
            hi[i] = if x > hi[i] { x } else { hi[i] };
            zeros[i] += if x == 0.0 { 1.0 } else { 0.0 };
        }
        if !(s1.is_finite() && s2.is_finite()) {
            // A NaN or an infinity in the block, or finite values whose squares overflow.
            return Moments::of_block_scalar(values, moments);
        }
        let n = values.len() as f64;
        Moments {
            count: values.len() as u64,
            mean: k + s1 / n,
            m2: if moments { (s2 - s1 * (s1 / n)).max(0.0) } else { 0.0 },
            min: lo.iter().fold(f64::INFINITY, |a, &b| a.min(b)),
            max: hi.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)),
            zeros: zeros.iter().sum::<f64>() as u64,
            ..Moments::new()
        }
    }

    /// The same as [`Moments::of_block`], one value at a time, for blocks holding NaNs,
    /// infinities or values too large to sum.
    fn of_block_scalar(values: &[f64], moments: bool) -> Moments {
        let mut m = Moments::new();
        let mut sum = 0.0;
        for &x in values {
            if x.is_nan() {
                m.nan += 1;
            } else if x == f64::INFINITY {
                m.posinf += 1;
            } else if x == f64::NEG_INFINITY {
                m.neginf += 1;
            } else {
                m.count += 1;
                sum += x;
                m.min = m.min.min(x);
                m.max = m.max.max(x);
                m.zeros += u64::from(x == 0.0);
            }
        }
        if m.count == 0 || !moments {
            m.mean = if m.count == 0 { 0.0 } else { sum / m.count as f64 };
            return m;
        }
        if sum.is_finite() {
            m.mean = sum / m.count as f64;
            m.m2 = values.iter().filter(|x| x.is_finite()).map(|&x| (x - m.mean) * (x - m.mean)).sum();
        } else {
            // The sum overflows: Welford's update, one value at a time, never forms it.
            let (mut n, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
            for &x in values.iter().filter(|x| x.is_finite()) {
                n += 1.0;
                let d = x - mean;
                mean += d / n;
                m2 += d * (x - mean);
            }
            m.mean = mean;
            m.m2 = m2;
        }
        m
    }

    /// Add what `other` knows of the values after these (Chan et al.'s parallel update).
    pub fn merge(&mut self, other: &Moments) {
        if other.count > 0 {
            if self.count == 0 {
                self.mean = other.mean;
                self.m2 = other.m2;
            } else {
                let (na, nb) = (self.count as f64, other.count as f64);
                let n = na + nb;
                let delta = other.mean - self.mean;
                self.mean += delta * (nb / n);
                self.m2 += other.m2 + delta * delta * (na * nb / n);
            }
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.zeros += other.zeros;
        self.nan += other.nan;
        self.posinf += other.posinf;
        self.neginf += other.neginf;
    }

    /// The population standard deviation of the finite values (0 when there is none).
    pub fn std(&self) -> f64 {
        if self.count == 0 { 0.0 } else { (self.m2 / self.count as f64).sqrt() }
    }

    /// Values that are NaN or infinite.
    pub fn nonfinite(&self) -> u64 {
        self.nan + self.posinf + self.neginf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(values: &[f64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        (mean, (values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt())
    }

    #[test]
    fn merged_blocks_agree_with_one_pass() {
        let values: Vec<f64> = (0..1000).map(|i| ((i * 37 % 101) as f64 - 50.0) * 0.25).collect();
        let mut m = Moments::new();
        for block in values.chunks(77) {
            m.merge(&Moments::of_block(block, true));
        }
        let (mean, std) = direct(&values);
        assert!((m.mean - mean).abs() < 1e-12 && (m.std() - std).abs() < 1e-12);
        assert_eq!((m.min, m.max, m.count), (-12.5, 12.5, 1000));
        assert_eq!(m.zeros, values.iter().filter(|&&x| x == 0.0).count() as u64);
    }

    #[test]
    fn special_values_are_counted_not_summed() {
        let values = [1.0, f64::NAN, f64::INFINITY, -0.0, f64::NEG_INFINITY, 3.0, f64::NAN];
        let m = Moments::of_block(&values, true);
        assert_eq!((m.nan, m.posinf, m.neginf, m.zeros, m.count), (2, 1, 1, 1, 3));
        assert_eq!((m.min, m.max), (-0.0, 3.0));
        assert!((m.mean - 4.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn overflowing_sums_stay_finite() {
        let values = [f64::MAX, f64::MAX, f64::MAX];
        let m = Moments::of_block(&values, true);
        assert_eq!((m.mean, m.m2, m.count), (f64::MAX, 0.0, 3));
    }

    #[test]
    fn a_large_mean_keeps_its_small_spread() {
        let values: Vec<f64> = (0..100_000).map(|i| 1e8 + if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
        let mut m = Moments::new();
        for block in values.chunks(BLOCK) {
            m.merge(&Moments::of_block(block, true));
        }
        assert!((m.std() - 1.0).abs() < 1e-12, "{}", m.std());
        assert!((m.mean - 1e8).abs() < 1e-6);
    }
}
