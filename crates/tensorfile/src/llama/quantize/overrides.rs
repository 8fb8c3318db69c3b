//! `--override-kv KEY=TYPE:VALUE`: a key/value llama-quantize sets in its output (and that
//! its model loader reads instead of the file's), parsed as llama.cpp's
//! `string_parse_kv_override` parses it: `int:` as C's `atol`, `float:` as `atof`, `bool:`
//! exactly `true` or `false`, `str:` at most 127 bytes.

use crate::error::{Error, Result};
use crate::model::{MetaValue, Number};

/// The longest key llama.cpp's override holds (127 bytes and a NUL).
const MAX_KEY_BYTES: usize = 127;
/// The longest text value it holds.
pub(super) const MAX_TEXT_BYTES: usize = 127;

/// An override's value, of one of llama.cpp's four kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum OverrideValue {
    /// `int:`, written into the output as a `u32` (of its absolute value, cut to 32 bits).
    Int(i64),
    /// `float:`, written as an `f32`.
    Float(f64),
    /// `bool:`.
    Bool(bool),
    /// `str:`.
    Str(String),
}

/// One key/value override.
#[derive(Debug, Clone, PartialEq)]
pub struct KvOverride {
    key: String,
    value: OverrideValue,
}

impl KvOverride {
    /// An override of `key` (at most 127 bytes; an empty key ends llama.cpp's list of
    /// overrides: it and every override after it are ignored) by `value` (text of at most 127
    /// bytes).
    pub fn new(key: impl Into<String>, value: OverrideValue) -> Result<KvOverride> {
        let key = key.into();
        if key.len() > MAX_KEY_BYTES {
            return Err(Error::usage(format!(
                "override key of {} bytes: llama.cpp holds at most {MAX_KEY_BYTES}",
                key.len()
            )));
        }
        if let OverrideValue::Str(s) = &value {
            if s.len() > MAX_TEXT_BYTES {
                return Err(Error::usage(format!(
                    "override of {key}: a value of {} bytes, and llama.cpp holds at most {MAX_TEXT_BYTES}",
                    s.len()
                )));
            }
        }
        if key.contains('\0') || matches!(&value, OverrideValue::Str(s) if s.contains('\0')) {
            return Err(Error::usage(format!("override of {key:?}: a NUL byte, which ends C strings")));
        }
        Ok(KvOverride { key, value })
    }

    /// `KEY=TYPE:VALUE` as llama-quantize's `--override-kv` reads it.
    pub fn parse(text: &str) -> Result<KvOverride> {
        let bad = |why: &str| Error::usage(format!("bad override {text:?}: {why} (write it KEY=TYPE:VALUE)"));
        let (key, rest) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        if key.len() > MAX_KEY_BYTES {
            return Err(bad("a key longer than 127 bytes"));
        }
        let value = if let Some(v) = rest.strip_prefix("int:") {
            OverrideValue::Int(c_atol(v))
        } else if let Some(v) = rest.strip_prefix("float:") {
            OverrideValue::Float(c_atof(v))
        } else if let Some(v) = rest.strip_prefix("bool:") {
            match v {
                "true" => OverrideValue::Bool(true),
                "false" => OverrideValue::Bool(false),
                _ => return Err(bad("a bool is true or false")),
            }
        } else if let Some(v) = rest.strip_prefix("str:") {
            OverrideValue::Str(v.to_string())
        } else {
            return Err(bad("the type is int, float, bool or str"));
        };
        KvOverride::new(key, value)
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value.
    pub fn value(&self) -> &OverrideValue {
        &self.value
    }

    /// The value as llama-quantize writes it into its output.
    pub(super) fn written(&self) -> MetaValue {
        match &self.value {
            // C++'s `std::abs` of the most negative value is itself; cut to 32 bits it is 0,
            // as `unsigned_abs` gives it.
            OverrideValue::Int(i) => MetaValue::Number(Number::U32(i.unsigned_abs() as u32)),
            OverrideValue::Float(f) => MetaValue::Number(Number::F32(*f as f32)),
            OverrideValue::Bool(b) => MetaValue::Bool(*b),
            OverrideValue::Str(s) => MetaValue::Text(s.clone()),
        }
    }
}

/// C's white space (`isspace` in the C locale).
fn c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

/// C's `atol` (glibc's `strtol`): white space, a sign, digits; saturated at the ends of the
/// range; 0 without digits.
pub(super) fn c_atol(text: &str) -> i64 {
    let t = text.trim_start_matches(c_space);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    t.bytes().take_while(u8::is_ascii_digit).fold(0i64, |acc, d| {
        let d = i64::from(d - b'0');
        if negative { acc.saturating_mul(10).saturating_sub(d) } else { acc.saturating_mul(10).saturating_add(d) }
    })
}

/// C's `atof` (glibc's `strtod`) on the longest prefix that is a number: white space, a sign,
/// then `inf`/`infinity`/`nan` (any case), a hexadecimal number (`0x1.8p3`), or a decimal one
/// with an optional exponent; 0 when no number starts the text.
pub(super) fn c_atof(text: &str) -> f64 {
    let t = text.trim_start_matches(c_space);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = t.get(..8).unwrap_or(t).to_ascii_lowercase();
    let magnitude = if lower.starts_with("inf") {
        f64::INFINITY
    } else if lower.starts_with("nan") {
        f64::NAN
    } else if lower.starts_with("0x") {
        hex_float(&t[2..]).unwrap_or(0.0)
    } else {
        decimal(t)
    };
    if negative { -magnitude } else { magnitude }
}

/// The longest decimal number starting `t` (digits, a point, digits, an exponent).
fn decimal(t: &str) -> f64 {
    let b = t.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    let mut end = int;
    let mut frac = 0;
    if b.get(end) == Some(&b'.') {
        frac = digits(end + 1);
        end += 1 + frac;
    }
    if int + frac == 0 {
        return 0.0;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut at = end + 1;
        if matches!(b.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exp = digits(at);
        if exp > 0 {
            end = at + exp;
        }
    }
    // What is left is a valid float literal for Rust's correctly rounded parser, as glibc's.
    t[..end].parse::<f64>().unwrap_or(0.0)
}

/// A hexadecimal float after its `0x`: hex digits, a point, hex digits, an optional binary
/// exponent `p±N`. Significant digits past the 15th only round the last bit they reach.
fn hex_float(t: &str) -> Option<f64> {
    let b = t.as_bytes();
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut seen = false;
    let mut sticky = false;
    let mut i = 0;
    let mut after_point = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' && !after_point {
            after_point = true;
            i += 1;
            continue;
        }
        let Some(d) = (c as char).to_digit(16) else { break };
        seen = true;
        if mantissa >> 56 == 0 {
            mantissa = mantissa << 4 | u64::from(d);
            if after_point {
                exponent -= 4;
            }
        } else {
            sticky |= d != 0;
            if !after_point {
                exponent += 4;
            }
        }
        i += 1;
    }
    if !seen {
        return None;
    }
    if matches!(b.get(i), Some(b'p' | b'P')) {
        let rest = &t[i + 1..];
        let (neg, digits) = match rest.as_bytes().first() {
            Some(b'-') => (true, &rest[1..]),
            Some(b'+') => (false, &rest[1..]),
            _ => (false, rest),
        };
        let n = digits.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            let e = digits[..n].bytes().fold(0i64, |acc, d| acc.saturating_mul(10).saturating_add(i64::from(d - b'0')));
            exponent = exponent.saturating_add(if neg { -e } else { e });
        }
    }
    let m = (mantissa | u64::from(sticky)) as f64;
    Some(m * 2f64.powi(exponent.clamp(-1100, 1100) as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_llama_cpp_parses_them() {
        let o = KvOverride::parse("general.name=str:a=b").unwrap();
        assert_eq!((o.key(), o.value()), ("general.name", &OverrideValue::Str("a=b".into())));
        assert_eq!(KvOverride::parse("k=int: -12abc").unwrap().value(), &OverrideValue::Int(-12));
        assert_eq!(KvOverride::parse("k=float:1e3x").unwrap().value(), &OverrideValue::Float(1000.0));
        assert_eq!(KvOverride::parse("k=bool:false").unwrap().value(), &OverrideValue::Bool(false));
        assert!(KvOverride::parse("k=bool:yes").is_err());
        assert!(KvOverride::parse("k=u32:1").is_err());
        assert!(KvOverride::parse("novalue").is_err());
        assert!(KvOverride::parse(&format!("k=str:{}", "x".repeat(128))).is_err());
        assert!(KvOverride::parse(&format!("{}=int:1", "k".repeat(128))).is_err());
        assert_eq!(KvOverride::parse("=int:1").unwrap().key(), "");
    }

    #[test]
    fn numbers_parse_as_c_parses_them() {
        assert_eq!(c_atol("99999999999999999999"), i64::MAX);
        assert_eq!(c_atol("-99999999999999999999"), i64::MIN);
        assert_eq!(c_atol("x1"), 0);
        assert_eq!(c_atof("  .5e-1z"), 0.05);
        assert_eq!(c_atof("1e"), 1.0);
        assert_eq!(c_atof("-INFINITY"), f64::NEG_INFINITY);
        assert!(c_atof("nan").is_nan());
        assert_eq!(c_atof("0x1.8p3"), 12.0);
        assert_eq!(c_atof("0x"), 0.0);
        assert_eq!(c_atof("."), 0.0);
        assert_eq!(c_atof("0.3") as f32, 0.3f32);
    }

    #[test]
    fn integers_are_written_as_their_absolute_u32() {
        let written = |i| KvOverride::new("k", OverrideValue::Int(i)).unwrap().written();
        assert_eq!(written(-7), MetaValue::Number(Number::U32(7)));
        assert_eq!(written(i64::MIN), MetaValue::Number(Number::U32(0)));
        assert_eq!(written(1 << 33 | 5), MetaValue::Number(Number::U32(5)));
    }
}
