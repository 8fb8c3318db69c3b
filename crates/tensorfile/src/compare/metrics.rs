//! Numeric distance between two tensors of the same shape: the metrics `diff` reports for each
//! changed tensor, whatever the two dtypes or storages (values decoded to `f64`, quantized
//! tensors dequantized).
//!
//! For pairs `(a, b)` of values, `b` from the second file (the reference), all in `f64`:
//! - `max_abs_diff`: the largest `|a - b|`.
//! - `max_rel_diff`: the largest `|a - b| / |b|`; a pair with `b = 0` counts 0 when `a = 0`
//!   too, and infinity otherwise (where numpy's division gives NaN and infinity).
//! - `cosine`: `Σab / (√Σa² · √Σb²)`; 1 when both tensors are all zeros, 0 when only one is.
//! - `nmse`: `Σ(a - b)² / Σb²`; 0 when both sums are 0, infinity when only `Σb²` is.
//! - `over_tolerance`: pairs that `numpy.isclose(a, b, rtol, atol, equal_nan=True)` calls not
//!   close: `|a - b| > atol + rtol·|b|`, equal infinities close, two NaNs close, one NaN not.
//!
//! Non-finite values: a pair where either side is NaN enters none of the four metrics; a NaN
//! facing a number counts in `nan_mismatches` and `over_tolerance`. Equal infinities count as
//! a difference of 0; an infinity facing anything else as an infinite absolute and relative
//! difference. Cosine and NMSE are sums over the pairs where both values are finite.
//! Complex values are compared part by part: the real and imaginary parts are two numbers.

use std::fmt;

use serde_json::{Value as Json, json};

/// The tolerances of `numpy.isclose`: a pair is close when `|a - b| <= atol + rtol·|b|`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The absolute tolerance (numpy's default 1e-8).
    pub atol: f64,
    /// The relative tolerance, a fraction of `|b|` (numpy's default 1e-5).
    pub rtol: f64,
}

impl Default for Tolerance {
    /// numpy's defaults: `atol = 1e-8`, `rtol = 1e-5`.
    fn default() -> Self {
        Tolerance { atol: 1e-8, rtol: 1e-5 }
    }
}

impl Tolerance {
    /// The tolerance a user asked for: numpy's default for the one not given; each given one
    /// must be a finite number of at least 0 (a usage error naming it otherwise).
    pub fn or_numpy(atol: Option<f64>, rtol: Option<f64>) -> crate::Result<Tolerance> {
        for (name, v) in [("atol", atol), ("rtol", rtol)] {
            if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                return Err(crate::Error::usage(format!("{name} must be a finite number of at least 0")));
            }
        }
        let numpy = Tolerance::default();
        Ok(Tolerance { atol: atol.unwrap_or(numpy.atol), rtol: rtol.unwrap_or(numpy.rtol) })
    }

    /// The JSON object `{"atol": .., "rtol": ..}`.
    pub fn to_json(&self) -> Json {
        json!({ "atol": number(self.atol), "rtol": number(self.rtol) })
    }
}

/// How far the values of a tensor in file A are from those in file B.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Numbers compared: elements, or twice the elements for complex dtypes.
    pub compared: u64,
    /// The largest absolute difference.
    pub max_abs_diff: f64,
    /// The largest difference relative to B's value.
    pub max_rel_diff: f64,
    /// The cosine similarity of the two tensors as vectors.
    pub cosine: f64,
    /// The squared error normalised by B's squared norm.
    pub nmse: f64,
    /// Pairs not close under the tolerance.
    pub over_tolerance: u64,
    /// Pairs where exactly one side is NaN.
    pub nan_mismatches: u64,
}

impl Metrics {
    /// The metrics as JSON (`max_abs_diff`, `max_rel_diff`, `cosine`, `nmse`,
    /// `over_tolerance`, `compared`, `nan_mismatches`); an infinity is the string `"inf"`.
    pub fn to_json(&self) -> Json {
        json!({
            "compared": self.compared,
            "max_abs_diff": number(self.max_abs_diff),
            "max_rel_diff": number(self.max_rel_diff),
            "cosine": number(self.cosine),
            "nmse": number(self.nmse),
            "over_tolerance": self.over_tolerance,
            "nan_mismatches": self.nan_mismatches,
        })
    }
}

/// A float as JSON; JSON has no infinity or NaN: those are the strings `"inf"`, `"-inf"`, `"nan"`.
pub(super) fn number(v: f64) -> Json {
    match serde_json::Number::from_f64(v) {
        Some(n) => Json::Number(n),
        None if v.is_nan() => Json::from("nan"),
        None if v > 0.0 => Json::from("inf"),
        None => Json::from("-inf"),
    }
}

impl fmt::Display for Metrics {
    /// `max abs 0.0039 max rel 0.0078 cos 0.99999 nmse 1.2e-05 over tol 12/4096`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "max abs {} max rel {} cos {} nmse {} over tol {}/{}",
            short(self.max_abs_diff),
            short(self.max_rel_diff),
            cosine_text(self.cosine),
            short(self.nmse),
            self.over_tolerance,
            self.compared
        )?;
        if self.nan_mismatches > 0 {
            write!(f, " ({} against NaN)", self.nan_mismatches)?;
        }
        Ok(())
    }
}

/// Five significant digits, as `%.5g` prints them: `0.0039062`, `1.2e-05`, `0.99999`, `inf`.
fn short(v: f64) -> String {
    significant(v, 5)
}

/// A cosine: five significant digits, more where those would round a cosine short of 1 up to
/// 1 (`0.999998`).
fn cosine_text(v: f64) -> String {
    (5..=17).map(|digits| significant(v, digits)).find(|t| v == 1.0 || t != "1").unwrap_or_else(|| short(v))
}

/// `v` with `digits` significant digits, as C's `%.*g` prints it.
fn significant(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    let precision = digits.saturating_sub(1);
    let sci = format!("{v:.precision$e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let top = i32::try_from(digits).unwrap_or(17);
    if (-4..top).contains(&exp) {
        let decimals = usize::try_from(top - 1 - exp).unwrap_or(0);
        let fixed = format!("{v:.decimals$}");
        return trim(&fixed).to_string();
    }
    format!("{}e{}{:02}", trim(mantissa), if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

fn trim(s: &str) -> &str {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s }
}

/// Running sums over pairs, merged in order for a result that does not depend on threads.
#[derive(Debug, Clone, Default)]
pub(super) struct Sums {
    compared: u64,
    max_abs: f64,
    max_rel: f64,
    dot: f64,
    aa: f64,
    bb: f64,
    err: f64,
    over: u64,
    nan_mismatches: u64,
}

impl Sums {
    /// Add the pairs `(a[k], b[k])` (slices of the same length).
    pub(super) fn add(&mut self, a: &[f64], b: &[f64], tol: Tolerance) {
        self.compared += a.len().min(b.len()) as u64;
        for (&x, &y) in a.iter().zip(b) {
            if x.is_nan() || y.is_nan() {
                if !(x.is_nan() && y.is_nan()) {
                    self.over += 1;
                    self.nan_mismatches += 1;
                }
                continue;
            }
            if !(x.is_finite() && y.is_finite()) {
                if x != y {
                    self.max_abs = f64::INFINITY;
                    self.max_rel = f64::INFINITY;
                    self.over += 1;
                }
                continue;
            }
            let d = (x - y).abs();
            let by = y.abs();
            if d > self.max_abs {
                self.max_abs = d;
            }
            let rel = if d == 0.0 {
                0.0
            } else if by == 0.0 {
                f64::INFINITY
            } else {
                d / by
            };
            if rel > self.max_rel {
                self.max_rel = rel;
            }
            if d > tol.atol + tol.rtol * by {
                self.over += 1;
            }
            self.dot += x * y;
            self.aa += x * x;
            self.bb += y * y;
            self.err += d * d;
        }
    }

    /// Add the pairs `(a[k], a[k])`: the same sums as `add(a, a)`, in half the work (equal
    /// values differ by 0, within any tolerance; only the squares add up).
    pub(super) fn add_equal(&mut self, a: &[f64]) {
        self.compared += a.len() as u64;
        for &x in a.iter().filter(|x| x.is_finite()) {
            let square = x * x;
            self.dot += square;
            self.aa += square;
            self.bb += square;
        }
    }

    /// Pairs added.
    pub(super) fn compared(&self) -> u64 {
        self.compared
    }

    /// The sums of `self`'s pairs followed by `other`'s.
    pub(super) fn merge(&mut self, other: &Sums) {
        self.compared += other.compared;
        self.max_abs = self.max_abs.max(other.max_abs);
        self.max_rel = self.max_rel.max(other.max_rel);
        self.dot += other.dot;
        self.aa += other.aa;
        self.bb += other.bb;
        self.err += other.err;
        self.over += other.over;
        self.nan_mismatches += other.nan_mismatches;
    }

    /// The metrics of the pairs added.
    pub(super) fn finish(&self) -> Metrics {
        let cosine = match (self.aa == 0.0, self.bb == 0.0) {
            (true, true) => 1.0,
            (true, false) | (false, true) => 0.0,
            (false, false) => self.dot / (self.aa.sqrt() * self.bb.sqrt()),
        };
        let nmse = match (self.err == 0.0, self.bb == 0.0) {
            (true, _) => 0.0,
            (false, true) => f64::INFINITY,
            (false, false) => self.err / self.bb,
        };
        Metrics {
            compared: self.compared,
            max_abs_diff: self.max_abs,
            max_rel_diff: self.max_rel,
            cosine,
            nmse,
            over_tolerance: self.over,
            nan_mismatches: self.nan_mismatches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(a: &[f64], b: &[f64], tol: Tolerance) -> Metrics {
        let mut s = Sums::default();
        s.add(a, b, tol);
        s.finish()
    }

    #[test]
    fn zero_denominators_and_non_finite_pairs() {
        let inf = f64::INFINITY;
        let m = metrics(
            &[0.0, 1.0, f64::NAN, f64::NAN, inf, 2.0],
            &[0.0, 0.0, f64::NAN, 1.0, inf, 2.0],
            Tolerance::default(),
        );
        assert_eq!((m.compared, m.over_tolerance, m.nan_mismatches), (6, 2, 1));
        assert_eq!((m.max_abs_diff, m.max_rel_diff), (1.0, inf));
        assert_eq!(m.nmse, 0.25, "the finite pairs (0, 0), (1, 0), (2, 2): Σ(a-b)² = 1, Σb² = 4");
        let m = metrics(&[0.0, 0.0], &[0.0, 0.0], Tolerance::default());
        assert_eq!((m.cosine, m.nmse, m.max_rel_diff), (1.0, 0.0, 0.0));
        let m = metrics(&[1.0], &[-inf], Tolerance::default());
        assert_eq!((m.max_abs_diff, m.over_tolerance, m.cosine), (inf, 1, 1.0));
    }

    #[test]
    fn tolerance_is_numpys_isclose() {
        let tol = Tolerance { atol: 0.5, rtol: 0.25 };
        // |a - b| = 1 against 0.5 + 0.25·2 = 1 (close), then 1.0625 (not).
        let m = metrics(&[3.0, 3.0625, -1.0], &[2.0, 2.0, -1.5], tol);
        assert_eq!(m.over_tolerance, 1);
    }

    #[test]
    fn equal_values_add_as_pairs_of_themselves() {
        let a = [1.5, f64::NAN, -f64::INFINITY, 0.0, -3.25];
        let (mut pairs, mut equal) = (Sums::default(), Sums::default());
        pairs.add(&a, &a, Tolerance::default());
        equal.add_equal(&a);
        assert_eq!(pairs.finish(), equal.finish());
    }

    #[test]
    fn merging_is_adding_in_order() {
        let (a, b) = ([1.0, 2.0, 3.0, -4.0], [1.5, 2.0, 2.0, 4.0]);
        let mut parts = Sums::default();
        let mut second = Sums::default();
        parts.add(&a[..2], &b[..2], Tolerance::default());
        second.add(&a[2..], &b[2..], Tolerance::default());
        parts.merge(&second);
        assert_eq!(parts.finish(), metrics(&a, &b, Tolerance::default()));
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(0.00390625), "0.0039062");
        assert_eq!(short(1.2e-5), "1.2e-05");
        assert_eq!(short(0.999_994), "0.99999");
        assert_eq!(short(12345.0), "12345");
        assert_eq!(short(123456.0), "1.2346e+05");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(f64::INFINITY), "inf");
        assert_eq!(cosine_text(0.999_998_2), "0.999998");
        assert_eq!(cosine_text(0.999_999_994), "0.99999999");
        assert_eq!(cosine_text(0.919_699), "0.9197");
        assert_eq!(cosine_text(1.0), "1");
    }
}
