//! Histograms of the finite values over `[min, max]` in equal bins, binned as
//! `numpy.histogram` bins: edges `start + i * (stop - start) / n` with the last one `stop`,
//! each bin half-open `[edge, next)` but the last closed; a range of one value widens to
//! `value - 0.5 ..= value + 0.5`.

use serde_json::{Value as Json, json};

/// An `n`-bin histogram of a tensor's finite values.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// The `n + 1` bin edges, increasing.
    pub edges: Vec<f64>,
    /// Values in each of the `n` bins.
    pub counts: Vec<u64>,
}

impl Histogram {
    /// Empty bins over `[min, max]` (`bins` at least 1); none when float64 cannot make
    /// `bins` bins of some width there (numpy refuses them too: a range of one value beyond
    /// 2^53, more bins than numbers between `min` and `max`).
    pub fn new(min: f64, max: f64, bins: usize) -> Option<Histogram> {
        let bins = bins.max(1);
        let (start, stop) = if min == max { (min - 0.5, max + 0.5) } else { (min, max) };
        let step = (stop - start) / bins as f64;
        let mut edges: Vec<f64> = (0..=bins).map(|i| i as f64 * step + start).collect();
        edges[bins] = stop;
        if !(stop - start).is_finite() || edges.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        Some(Histogram { edges, counts: vec![0; bins] })
    }

    /// Empty bins with the same edges.
    pub fn empty_like(&self) -> Histogram {
        Histogram { edges: self.edges.clone(), counts: vec![0; self.counts.len()] }
    }

    /// Count the finite values of `values` (others are left out).
    pub fn add(&mut self, values: &[f64]) {
        for &x in values {
            if let Some(i) = self.bin(x) {
                self.counts[i] += 1;
            }
        }
    }

    /// Count `n` occurrences of the value `x` (left out unless finite and in range).
    pub fn add_count(&mut self, x: f64, n: u64) {
        if let Some(i) = self.bin(x) {
            self.counts[i] += n;
        }
    }

    /// The bin holding `x`, if any.
    fn bin(&self, x: f64) -> Option<usize> {
        let bins = self.counts.len();
        let start = self.edges[0];
        let stop = self.edges[bins];
        if !(start..=stop).contains(&x) {
            return None;
        }
        // A first guess, then moved to the bin whose edges hold x (the guess can be one off
        // near an edge).
        let scale = bins as f64 / (stop - start);
        let mut i = (((x - start) * scale) as usize).min(bins - 1);
        if x < self.edges[i] {
            i = i.saturating_sub(1);
        } else if i + 1 < bins && x >= self.edges[i + 1] {
            i += 1;
        }
        Some(i)
    }

    /// Add the counts of `other` (same edges).
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// `{"edges": [...], "counts": [...]}`.
    pub fn to_json(&self) -> Json {
        json!({ "edges": self.edges, "counts": self.counts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_and_the_closed_last_bin() {
        let mut h = Histogram::new(0.0, 4.0, 4).unwrap();
        assert_eq!(h.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        h.add(&[0.0, 0.999, 1.0, 3.5, 4.0, f64::NAN, 5.0]);
        assert_eq!(h.counts, vec![2, 1, 0, 2]);
    }

    #[test]
    fn one_value_widens_the_range() {
        let mut h = Histogram::new(2.0, 2.0, 2).unwrap();
        assert_eq!(h.edges, vec![1.5, 2.0, 2.5]);
        h.add(&[2.0]);
        assert_eq!(h.counts, vec![0, 1]);
        assert!(Histogram::new(5e18, 5e18, 10).is_none());
    }
}
