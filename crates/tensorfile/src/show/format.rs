//! Numbers as numpy 2 prints them with its default options (`precision=8`,
//! `floatmode='maxprec'`, `sign='-'`, `suppress=False`, `legacy=False`): one format per array,
//! decided from every value shown, so that all elements have the same width.
//!
//! Floats print with the fewest digits that identify the value in its own type (float16,
//! float32 or float64), at most 8 after the point; an array prints in scientific notation when
//! a nonzero finite value is at least `10^min(8, decimal precision of the type)` (1e3 for
//! float16, 1e6 for float32, 1e8 for float64) or below 1e-4, or when the largest is over a
//! thousand times the smallest. Every value then gets as many fraction digits as the longest
//! needs (taken from the exact value, not padded with zeros). A 0-d array prints as numpy's
//! scalar `str`.

use half::f16;

/// The floating type numbers are printed as: the digits identifying a value, and the
/// thresholds of scientific notation, depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// numpy's float16.
    F16,
    /// numpy's float32.
    F32,
    /// numpy's float64.
    F64,
}

impl Width {
    /// The value as the type holds it (callers hand values of the type already).
    fn narrow(self, x: f64) -> f64 {
        match self {
            Width::F16 => f16::from_f64(x).to_f64(),
            Width::F32 => f64::from(x as f32),
            Width::F64 => x,
        }
    }

    /// `a < b` as numpy compares two values of this type.
    fn less(self, a: f64, b: f64) -> bool {
        self.narrow(a) < self.narrow(b)
    }

    /// `a / b` computed in this type (numpy computes float16 in float32, then rounds).
    fn ratio(self, a: f64, b: f64) -> f64 {
        match self {
            Width::F16 => f16::from_f32(a as f32 / b as f32).to_f64(),
            Width::F32 => f64::from(a as f32 / b as f32),
            Width::F64 => a / b,
        }
    }

    /// Scalars at or above this print in scientific notation.
    fn scalar_cutoff(self) -> f64 {
        match self {
            Width::F16 => 1e3,
            Width::F32 => 1e6,
            Width::F64 => 1e16,
        }
    }

    /// Values at or above this print in scientific notation: `10^min(8, finfo.precision)`.
    fn exp_cutoff(self) -> f64 {
        match self {
            Width::F16 => 1e3,
            Width::F32 => 1e6,
            Width::F64 => 1e8,
        }
    }
}

/// A nonnegative decimal number `d.ddd × 10^exp`: ASCII digits, the first nonzero unless the
/// number is zero (`"0"`).
#[derive(Debug, Clone, PartialEq)]
struct Decimal {
    digits: Vec<u8>,
    exp: i32,
}

impl Decimal {
    /// Parse Rust's `{:e}` output of a nonnegative number (`1.25e-5`, `0e0`).
    fn parse_exp(text: &str) -> Decimal {
        let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
        let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
        Decimal { digits, exp: exp.parse().unwrap_or(0) }
    }

    /// Digits after the point in positional notation.
    fn fraction_len(&self) -> usize {
        let n = self.digits.len() as i64 - 1 - i64::from(self.exp);
        n.max(0) as usize
    }

    /// Trailing zeros dropped (a zero keeps one digit).
    fn trimmed(mut self) -> Decimal {
        while self.digits.len() > 1 && self.digits.last() == Some(&b'0') {
            self.digits.pop();
        }
        self
    }

    /// The integer and fraction digits in positional notation.
    fn positional(&self) -> (String, String) {
        let digits = std::str::from_utf8(&self.digits).unwrap_or("0");
        if self.digits == b"0" {
            return ("0".into(), String::new());
        }
        if self.exp < 0 {
            let zeros = "0".repeat((-self.exp - 1) as usize);
            return ("0".into(), format!("{zeros}{digits}"));
        }
        let int_len = self.exp as usize + 1;
        if digits.len() <= int_len {
            (format!("{digits}{}", "0".repeat(int_len - digits.len())), String::new())
        } else {
            (digits[..int_len].to_string(), digits[int_len..].to_string())
        }
    }
}

/// The shortest digits that identify finite `x` among the values of `width` (the closest such
/// when several do).
fn shortest(x: f64, width: Width) -> Decimal {
    let x = x.abs();
    let d = match width {
        Width::F64 => Decimal::parse_exp(&format!("{x:e}")),
        Width::F32 => Decimal::parse_exp(&format!("{:e}", x as f32)),
        Width::F16 => return shortest_f16(x),
    };
    // Between two shortest decimals as close to `x` (it ends in a 5 one digit further), numpy
    // takes the one ending in an even digit, Rust the larger: the exact value rounded half to
    // even at that length is numpy's whenever it still reads back as `x`.
    let even = rounded_scientific(x, d.digits.len() - 1);
    let text = decimal_text(&even);
    let reads_back = match width {
        Width::F32 => text.parse::<f32>().is_ok_and(|v| f64::from(v) == x),
        _ => text.parse::<f64>().is_ok_and(|v| v == x),
    };
    if even != d && reads_back { even } else { d }
}

/// Shortest digits for a float16: the fewest significant digits whose decimal reads back as
/// `x` (lies inside the interval of reals rounding to it; a float16 needs at most 5).
fn shortest_f16(x: f64) -> Decimal {
    if x == 0.0 {
        return Decimal { digits: b"0".to_vec(), exp: 0 };
    }
    let h = f16::from_f64(x);
    let bits = h.to_bits();
    let below = f16::from_bits(bits - 1).to_f64();
    let above = if h == f16::MAX { x + (x - below) } else { f16::from_bits(bits + 1).to_f64() };
    let (low, high) = ((x + below) / 2.0, (x + above) / 2.0);
    // A decimal halfway to a neighbour reads back as `x` when `x` has an even mantissa.
    let inclusive = bits & 1 == 0;
    for n in 1..=17usize {
        let near = Decimal::parse_exp(&format!("{:.*e}", n - 1, x));
        let mut best: Option<(f64, Decimal)> = None;
        for delta in [-1i64, 0, 1] {
            let Some(candidate) = bump(&near, delta) else { continue };
            let value: f64 = decimal_value(&candidate);
            let inside = if inclusive { value >= low && value <= high } else { value > low && value < high };
            if inside {
                // The closest; between two as close, the one ending in an even digit.
                let distance = (value - x).abs();
                let even = candidate.digits.last().is_some_and(|d| d % 2 == 0);
                if best.as_ref().is_none_or(|(d, _)| distance < *d || (distance == *d && even)) {
                    best = Some((distance, candidate));
                }
            }
        }
        if let Some((_, d)) = best {
            return d.trimmed();
        }
    }
    Decimal::parse_exp(&format!("{x:e}"))
}

/// `d` with `delta` (-1, 0, 1) added to its last digit, or `None` when that changes the
/// number of digits.
fn bump(d: &Decimal, delta: i64) -> Option<Decimal> {
    let digits = std::str::from_utf8(&d.digits).ok()?;
    let n: i64 = digits.parse().ok()?;
    let m = n + delta;
    let text = m.to_string();
    (m > 0 && text.len() == digits.len()).then(|| Decimal { digits: text.into_bytes(), exp: d.exp })
}

/// `d` as text Rust parses (`1.25e-5`).
fn decimal_text(d: &Decimal) -> String {
    let digits = std::str::from_utf8(&d.digits).unwrap_or("0");
    let point = if digits.len() > 1 { format!(".{}", &digits[1..]) } else { String::new() };
    format!("{}{point}e{}", &digits[..1], d.exp)
}

fn decimal_value(d: &Decimal) -> f64 {
    decimal_text(d).parse().unwrap_or(f64::NAN)
}

/// The exact value of `x` rounded (half to even) to `fraction` digits after the first.
fn rounded_scientific(x: f64, fraction: usize) -> Decimal {
    Decimal::parse_exp(&format!("{:.*e}", fraction, x.abs()))
}

/// numpy's maximum digits after the point.
const PRECISION: usize = 8;

/// Integer and fraction digits of finite `x` in positional notation: the shortest digits,
/// or the exact value rounded to 8 places when those need more (trailing zeros dropped).
fn positional_digits(x: f64, width: Width) -> (String, String) {
    let d = shortest(x, width);
    if d.fraction_len() <= PRECISION {
        return d.positional();
    }
    let text = format!("{:.*}", PRECISION, x.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    (int.to_string(), frac.trim_end_matches('0').to_string())
}

/// Digits of finite `x` in scientific notation: the shortest, or the exact value rounded to 8
/// digits after the first when those need more (trailing zeros dropped).
fn scientific_digits(x: f64, width: Width) -> Decimal {
    let d = shortest(x, width);
    if d.digits.len() - 1 <= PRECISION { d } else { rounded_scientific(x, PRECISION).trimmed() }
}

fn sign_of(x: f64, plus: bool) -> &'static str {
    if x.is_sign_negative() {
        "-"
    } else if plus {
        "+"
    } else {
        ""
    }
}

/// The format of one array of floats (or of the real or imaginary parts of complex numbers).
#[derive(Debug)]
pub(crate) struct FloatFormat {
    width: Width,
    scientific: bool,
    /// Positive values print their sign (`+`): the imaginary parts of complex numbers.
    plus: bool,
    pad_left: usize,
    pad_right: usize,
    /// Scientific notation: digits after the point of every value.
    precision: usize,
    /// Scientific notation: digits of the exponent.
    exp_size: usize,
}

impl FloatFormat {
    /// The format numpy picks for `values` (those shown) of type `width`.
    pub(crate) fn new(values: &[f64], width: Width, plus: bool) -> FloatFormat {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let nonzero = finite.iter().map(|v| v.abs()).filter(|v| *v != 0.0);
        let (min, max) = nonzero.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let scientific =
            min.is_finite() && (max >= width.exp_cutoff() || width.less(min, 1e-4) || width.ratio(max, min) > 1000.0);
        let mut f = FloatFormat { width, scientific, plus, pad_left: 0, pad_right: 0, precision: 0, exp_size: 0 };
        if finite.is_empty() {
        } else if scientific {
            let digits: Vec<Decimal> = finite.iter().map(|&x| scientific_digits(x, width)).collect();
            f.precision = digits.iter().map(|d| d.digits.len() - 1).max().unwrap_or(0);
            f.exp_size = digits.iter().map(|d| d.exp.unsigned_abs().to_string().len().max(2)).max().unwrap_or(2);
            f.pad_left = finite.iter().map(|&x| 1 + sign_of(x, plus).len()).max().unwrap_or(1);
            f.pad_right = f.exp_size + 2 + f.precision;
        } else {
            for &x in &finite {
                let (int, frac) = positional_digits(x, width);
                f.pad_left = f.pad_left.max(sign_of(x, plus).len() + int.len());
                f.pad_right = f.pad_right.max(frac.len());
            }
        }
        if finite.len() != values.len() {
            let neginf = plus || values.contains(&f64::NEG_INFINITY);
            let offset = f.pad_right + 1;
            f.pad_left =
                f.pad_left.max(3usize.saturating_sub(offset)).max((3 + usize::from(neginf)).saturating_sub(offset));
        }
        f
    }

    /// `x` as an element of the array: padded to the array's width.
    pub(crate) fn format(&self, x: f64) -> String {
        if !x.is_finite() {
            let text = if x.is_nan() {
                format!("{}nan", if self.plus { "+" } else { "" })
            } else {
                format!("{}inf", sign_of(x, self.plus))
            };
            let total = self.pad_left + self.pad_right + 1;
            return format!("{text:>total$}");
        }
        let sign = sign_of(x, self.plus);
        if self.scientific {
            let mut d = scientific_digits(x, self.width);
            if d.digits.len() - 1 < self.precision {
                d = rounded_scientific(x, self.precision);
            }
            let digits = std::str::from_utf8(&d.digits).unwrap_or("0");
            let head = format!("{sign}{}", &digits[..1]);
            let exp_sign = if d.exp < 0 { '-' } else { '+' };
            let exp = format!("{:0>w$}", d.exp.unsigned_abs(), w = self.exp_size);
            format!("{head:>w$}.{}e{exp_sign}{exp}", &digits[1..], w = self.pad_left)
        } else {
            let (int, frac) = positional_digits(x, self.width);
            let head = format!("{sign}{int}");
            format!("{head:>l$}.{frac:<r$}", l = self.pad_left, r = self.pad_right)
        }
    }
}

/// The format of one array of integers: right-aligned to the widest of its extremes.
pub(crate) fn int_width(values: &[i128]) -> usize {
    let max = values.iter().max().map_or(0, |v| v.to_string().len());
    let min = values.iter().min().map_or(0, |v| v.to_string().len());
    max.max(min)
}

/// An element of a complex array: the real part's format, then the imaginary part's (signed)
/// with `j` before its padding.
pub(crate) fn complex_element(re: &FloatFormat, im: &FloatFormat, value: (f64, f64)) -> String {
    let r = re.format(value.0);
    let i = im.format(value.1);
    let end = i.trim_end().len();
    format!("{r}{}j{}", &i[..end], &i[end..])
}

/// numpy's `str` of a float scalar (a 0-d array): positional from 1e-4 to below 1e3 (float16),
/// 1e6 (float32) or 1e16 (float64) with at least one fraction digit (`1.0`), scientific
/// otherwise (`1e-05`, `1.5e+16`).
pub(crate) fn scalar_float(x: f64, width: Width, plus: bool, keep_zero: bool) -> String {
    if x.is_nan() {
        return format!("{}nan", if plus { "+" } else { "" });
    }
    if x.is_infinite() {
        return format!("{}inf", sign_of(x, plus));
    }
    let sign = sign_of(x, plus);
    let a = x.abs();
    let d = shortest(x, width);
    if a == 0.0 || (a >= 1e-4 && a < width.scalar_cutoff()) {
        let (int, frac) = d.positional();
        let frac = if frac.is_empty() && keep_zero { "0".to_string() } else { frac };
        if frac.is_empty() { format!("{sign}{int}") } else { format!("{sign}{int}.{frac}") }
    } else {
        let digits = std::str::from_utf8(&d.digits).unwrap_or("0");
        let point = if digits.len() > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        let exp_sign = if d.exp < 0 { '-' } else { '+' };
        format!("{sign}{}{point}e{exp_sign}{:02}", &digits[..1], d.exp.unsigned_abs())
    }
}

/// numpy's `str` of a complex scalar: `(1+2j)`, or `2j` when the real part is zero.
pub(crate) fn scalar_complex(value: (f64, f64), width: Width) -> String {
    let (re, im) = value;
    let imag = scalar_float(im, width, false, false);
    if re == 0.0 {
        return format!("{imag}j");
    }
    format!("({}{}j)", scalar_float(re, width, false, false), scalar_float(im, width, true, false))
}

/// The shortest decimal text of finite `x` in its type (`0.1` for a float32 0.1), as a
/// number JSON readers parse back to the same value.
pub(crate) fn shortest_text(x: f64, width: Width) -> String {
    let d = shortest(x, width);
    let digits = std::str::from_utf8(&d.digits).unwrap_or("0");
    format!("{}{}.{}e{}", sign_of(x, false), &digits[..1], &digits[1..], d.exp).replace(".e", "e")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(values: &[f64], width: Width) -> Vec<String> {
        let f = FloatFormat::new(values, width, false);
        values.iter().map(|&v| f.format(v)).collect()
    }

    #[test]
    fn positional_pads_to_one_width() {
        assert_eq!(array(&[f64::NAN, 1.5, -0.0], Width::F64), [" nan", " 1.5", "-0. "]);
        assert_eq!(array(&[2f64.powi(-9), 1.0], Width::F64), ["0.00195312", "1.        "]);
    }

    #[test]
    fn scientific_takes_digits_from_the_exact_value() {
        let tenth = f16::from_f64(0.1).to_f64();
        let small = f16::from_f64(1e-5).to_f64();
        assert_eq!(array(&[tenth, small], Width::F16), ["1.e-01", "1.e-05"]);
        assert_eq!(array(&[1e6, 1.5], Width::F32), ["1.0e+06", "1.5e+00"]);
        assert_eq!(array(&[1e3, 1.5], Width::F16), ["1.0e+03", "1.5e+00"]);
    }

    #[test]
    fn scalars() {
        assert_eq!(scalar_float(1e16, Width::F32, false, true), "1e+16");
        assert_eq!(scalar_float(1e-5, Width::F64, false, true), "1e-05");
        assert_eq!(scalar_float(f16::from_f64(0.1).to_f64(), Width::F16, false, true), "0.1");
        assert_eq!(scalar_float(-0.0, Width::F64, false, true), "-0.0");
        assert_eq!(scalar_complex((1.0, 2.0), Width::F64), "(1+2j)");
        assert_eq!(scalar_complex((0.0, 2.0), Width::F64), "2j");
    }

    #[test]
    fn complex_elements() {
        let re = FloatFormat::new(&[1.0, f64::NAN], Width::F32, false);
        let im = FloatFormat::new(&[2.0, -1.0], Width::F32, true);
        assert_eq!(complex_element(&re, &im, (1.0, 2.0)), " 1.+2.j");
        assert_eq!(complex_element(&re, &im, (f64::NAN, -1.0)), "nan-1.j");
    }
}
