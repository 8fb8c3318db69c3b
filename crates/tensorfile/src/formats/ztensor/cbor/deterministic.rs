//! The core deterministic encoding of RFC 8949 §4.2.1, checked without decoding anything:
//! what zTensor 2 requires of its manifest before it reads a field of it.
//!
//! Refused: a head longer than its value needs, an indefinite length, map keys out of
//! bytewise order (and a key twice), a float wider than its value needs or a NaN other than
//! `f9 7e00`, a tag, a simple value other than false, true and null, text that is not UTF-8,
//! a count beyond the bytes that remain, bytes after the item, and items nested deeper than
//! the limit given (counted from the outer item, at depth 0).

use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};

fn bad(msg: impl Into<String>) -> Error {
    Error::invalid(Rule::BadCbor, msg)
}

/// Check that `input` is exactly one item in deterministic encoding, nested at most
/// `max_depth` deep.
pub fn check(input: &[u8], max_depth: usize) -> Result<()> {
    let mut c = Cursor::new(input);
    item(&mut c, input, 0, max_depth)?;
    if !c.is_at_end() {
        return Err(bad(format!("{} bytes after the manifest's CBOR item", c.remaining())));
    }
    Ok(())
}

/// The argument of a head whose additional information is `info`, in its shortest form.
fn argument(c: &mut Cursor<'_>, info: u8) -> Result<u64> {
    const WHAT: &str = "CBOR item argument";
    let (value, least) = match info {
        0..=23 => return Ok(u64::from(info)),
        24 => (u64::from(c.u8(WHAT)?), 24),
        25 => (u64::from(c.u16_be(WHAT)?), 0x100),
        26 => (u64::from(c.u32_be(WHAT)?), 0x1_0000),
        27 => (c.u64_be(WHAT)?, 0x1_0000_0000),
        31 => return Err(bad("an indefinite length (deterministic CBOR has definite lengths only)")),
        _ => return Err(bad(format!("reserved additional information {info}"))),
    };
    if value < least {
        return Err(bad(format!("the value {value} in a longer head than it needs")));
    }
    Ok(value)
}

/// A count of items that each take at least `each` bytes, checked against what remains.
fn count(c: &Cursor<'_>, n: u64, each: usize, what: &str) -> Result<u64> {
    if n > (c.remaining() / each) as u64 {
        return Err(Error::invalid(Rule::Truncated, format!("CBOR {what} of {n}, {} bytes left", c.remaining())));
    }
    Ok(n)
}

fn item(c: &mut Cursor<'_>, input: &[u8], depth: usize, max_depth: usize) -> Result<()> {
    if depth > max_depth {
        return Err(Error::invalid(Rule::TooDeep, format!("CBOR nested deeper than {max_depth}")));
    }
    let first = c.u8("CBOR item head")?;
    let (major, info) = (first >> 5, first & 0x1f);
    match major {
        6 => return Err(bad("a tag (the manifest has none)")),
        7 => return simple(c, info),
        _ => {}
    }
    let n = argument(c, info)?;
    match major {
        0 | 1 => {}
        2 | 3 => {
            let len = crate::checked::to_usize(count(c, n, 1, "string")?, "CBOR string")?;
            let bytes = c.take(len, "CBOR string")?;
            if major == 3 && std::str::from_utf8(bytes).is_err() {
                return Err(Error::invalid(Rule::BadUtf8, "CBOR text string is not UTF-8"));
            }
        }
        4 => {
            for _ in 0..count(c, n, 1, "array")? {
                item(c, input, depth + 1, max_depth)?;
            }
        }
        _ => {
            let mut previous: Option<&[u8]> = None;
            for _ in 0..count(c, n, 2, "map")? {
                let start = c.position();
                item(c, input, depth + 1, max_depth)?;
                let key = &input[start..c.position()];
                match previous.map(|p| p.cmp(key)) {
                    Some(std::cmp::Ordering::Equal) => {
                        return Err(Error::invalid(Rule::DuplicateName, "a CBOR map has one key twice"));
                    }
                    Some(std::cmp::Ordering::Greater) => {
                        return Err(bad("CBOR map keys out of order (deterministic CBOR sorts them bytewise)"));
                    }
                    _ => {}
                }
                previous = Some(key);
                item(c, input, depth + 1, max_depth)?;
            }
        }
    }
    Ok(())
}

/// Major type 7: false, true, null, and floats in their shortest form.
fn simple(c: &mut Cursor<'_>, info: u8) -> Result<()> {
    const WHAT: &str = "CBOR float";
    match info {
        20..=22 => Ok(()),
        25 => {
            let bits = c.u16_be(WHAT)?;
            if half::f16::from_bits(bits).is_nan() && bits != 0x7e00 {
                return Err(bad(format!("the NaN {bits:#06x} (deterministic CBOR has one NaN: f9 7e00)")));
            }
            Ok(())
        }
        26 => {
            let x = f32::from_bits(c.u32_be(WHAT)?);
            if x.is_nan() {
                return Err(bad("a NaN wider than two bytes"));
            }
            if half::f16::from_f32(x).to_f32() == x {
                return Err(bad(format!("the float {x} in four bytes, where two hold it")));
            }
            Ok(())
        }
        27 => {
            let x = f64::from_bits(c.u64_be(WHAT)?);
            if x.is_nan() {
                return Err(bad("a NaN wider than two bytes"));
            }
            if f64::from(x as f32) == x {
                return Err(bad(format!("the float {x} in eight bytes, where fewer hold it")));
            }
            Ok(())
        }
        31 => Err(bad("a break outside an indefinite item")),
        _ => Err(bad(format!("the simple value {info} (the manifest has only false, true and null)"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(bytes: &[u8]) -> Option<Rule> {
        check(bytes, 32).err().and_then(|e| e.rule())
    }

    #[test]
    fn deterministic_items_pass() {
        for ok in [
            &[0x00][..],
            &[0x17],
            &[0x18, 0x18],
            &[0x19, 0x01, 0x00],
            &[0x1b, 0, 0, 0, 1, 0, 0, 0, 0],
            &[0x20],
            &[0x63, b'a', b'b', b'c'],
            &[0x42, 1, 2],
            &[0x82, 0x01, 0x02],
            // {"a": 1, "b": 2, "aa": 3}: shorter keys first (their heads sort first).
            &[0xa3, 0x61, b'a', 1, 0x61, b'b', 2, 0x62, b'a', b'a', 3],
            &[0xf4],
            &[0xf5],
            &[0xf6],
            &[0xf9, 0x3e, 0x00],
            &[0xf9, 0x7e, 0x00],
            &[0xf9, 0x7c, 0x00],
            &[0xfa, 0x47, 0xc3, 0x50, 0x00],
            &[0xfb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a],
        ] {
            assert_eq!(check(ok, 32).map_err(|e| e.to_string()), Ok(()), "{ok:x?}");
        }
    }

    #[test]
    fn everything_else_is_refused_with_its_rule() {
        let cbor = Some(Rule::BadCbor);
        assert_eq!(rule(&[0x18, 0x05]), cbor, "non-shortest integer");
        assert_eq!(rule(&[0x19, 0x00, 0xff]), cbor);
        assert_eq!(rule(&[0x1a, 0x00, 0x00, 0xff, 0xff]), cbor);
        assert_eq!(rule(&[0x1b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]), cbor);
        assert_eq!(rule(&[0x78, 0x01, b'a']), cbor, "non-shortest text length");
        assert_eq!(rule(&[0x9f, 0xff]), cbor, "indefinite array");
        assert_eq!(rule(&[0x7f, 0xff]), cbor, "indefinite text");
        assert_eq!(rule(&[0xa2, 0x61, b'b', 0, 0x61, b'a', 0]), cbor, "unsorted keys");
        assert_eq!(rule(&[0xa2, 0x62, b'a', b'a', 0, 0x61, b'b', 0]), cbor, "longer key first");
        assert_eq!(rule(&[0xa2, 0x61, b'a', 0, 0x61, b'a', 1]), Some(Rule::DuplicateName));
        assert_eq!(rule(&[0xc0, 0x00]), cbor, "a tag");
        assert_eq!(rule(&[0xf7]), cbor, "undefined");
        assert_eq!(rule(&[0xf8, 0x20]), cbor, "a simple value");
        assert_eq!(rule(&[0xff]), cbor, "a stray break");
        assert_eq!(rule(&[0x1c]), cbor, "reserved");
        assert_eq!(rule(&[0xf9, 0x7e, 0x01]), cbor, "NaN with a payload");
        assert_eq!(rule(&[0xf9, 0xfe, 0x00]), cbor, "negative NaN");
        assert_eq!(rule(&[0xfa, 0x7f, 0xc0, 0, 0]), cbor, "a four-byte NaN");
        assert_eq!(rule(&[0xfa, 0x3f, 0xc0, 0x00, 0x00]), cbor, "1.5 fits two bytes");
        assert_eq!(rule(&[0xfa, 0x80, 0, 0, 0]), cbor, "-0.0 fits two bytes");
        assert_eq!(rule(&[0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]), cbor, "1.5 fits two bytes");
        assert_eq!(rule(&[0xfb, 0x47, 0xef, 0xff, 0xff, 0xe0, 0, 0, 0]), cbor, "f32::MAX fits four bytes");
        assert_eq!(rule(&[0xfb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0]), cbor, "infinity fits two bytes");
        assert_eq!(rule(&[0x00, 0x00]), cbor, "trailing bytes");
        assert_eq!(rule(&[0x62, 0xff, 0xfe]), Some(Rule::BadUtf8));
        assert_eq!(rule(&[0x65, b'a']), Some(Rule::Truncated));
        assert_eq!(rule(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), Some(Rule::Truncated));
        assert_eq!(rule(&[0xa1, 0x00]), Some(Rule::Truncated));
        assert_eq!(rule(&[]), Some(Rule::Truncated));
    }

    #[test]
    fn depth_counts_from_the_outer_item() {
        let nested = |n: usize| {
            let mut b = vec![0x81; n];
            b.push(0x00);
            b
        };
        assert!(check(&nested(32), 32).is_ok());
        assert_eq!(rule(&nested(33)), Some(Rule::TooDeep));
        // Map keys count as one level deeper too.
        let mut keyed = vec![0x81; 31];
        keyed.extend_from_slice(&[0xa1, 0x81, 0x00, 0x00]);
        assert_eq!(rule(&keyed), Some(Rule::TooDeep));
    }
}
