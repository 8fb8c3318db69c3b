//! What a zTensor 2 writer must get exactly right to be canonical (spec §2, §3.1, §3.5, §6.3):
//! the container's constants, deterministic CBOR (RFC 8949 §4.2.1: definite lengths,
//! shortest heads and floats, map keys sorted by their encoded bytes, no duplicates) and the
//! rules for names.

use unicode_normalization::is_nfc;

use crate::error::{Error, Result};
use crate::model::MetaValue;

// The container's constants (the reader's): the magic at the start of a file and at the end
// of its footer; the footer (manifest offset, length and XXH3-64, version and reserved, the
// magic); the footer's version.
pub(crate) use super::MAGIC;
/// Canonical placement: every blob, and the manifest, at a multiple of 64 KiB, the first at
/// 64 KiB.
pub(crate) const CANONICAL_ALIGN: u64 = 64 << 10;
/// Readers refuse a manifest longer than 1 GiB.
pub(crate) const MAX_MANIFEST: u64 = 1 << 30;
/// Nesting depth of the manifest, counted from its root (depth 0), that readers accept.
pub(crate) const MAX_DEPTH: usize = 32;
/// The longest name, in bytes.
const MAX_NAME_BYTES: usize = 1024;

/// A CBOR data item of the kinds a manifest may hold (no tags, no undefined, no simple
/// values beyond booleans and null).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cbor {
    /// An unsigned integer.
    Uint(u64),
    /// A negative integer `-1 - n`.
    Nint(u64),
    Bytes(Vec<u8>),
    Text(String),
    Array(Vec<Cbor>),
    /// Pairs in any order: encoding sorts them.
    Map(Vec<(Cbor, Cbor)>),
    Bool(bool),
    Null,
    Float(f64),
}

impl Cbor {
    /// A map with text keys.
    pub(crate) fn map<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Cbor)>) -> Cbor {
        Cbor::Map(pairs.into_iter().map(|(k, v)| (Cbor::Text(k.into()), v)).collect())
    }

    /// Text.
    pub(crate) fn text(s: impl Into<String>) -> Cbor {
        Cbor::Text(s.into())
    }

    /// A metadata value as a manifest may hold it: integers, floats, text, bytes, booleans,
    /// null, arrays and maps as they are; anything else (undefined, tags, simple values,
    /// kinds this module does not know) as its JSON rendering ([`MetaValue::to_json`]).
    pub(crate) fn from_meta(v: &MetaValue) -> Result<Cbor> {
        Ok(match v {
            MetaValue::Null => Cbor::Null,
            MetaValue::Bool(b) => Cbor::Bool(*b),
            MetaValue::Int(i) => int(*i)?,
            MetaValue::Float(f) => Cbor::Float(*f),
            MetaValue::Text(s) => Cbor::Text(s.clone()),
            MetaValue::Bytes(b) => Cbor::Bytes(b.clone()),
            MetaValue::Array(items) => Cbor::Array(items.iter().map(Cbor::from_meta).collect::<Result<_>>()?),
            MetaValue::Map(pairs) => Cbor::Map(
                pairs.iter().map(|(k, v)| Ok((Cbor::from_meta(k)?, Cbor::from_meta(v)?))).collect::<Result<_>>()?,
            ),
            // Numbers of a stated width (GGUF's) keep their exact value: the deterministic
            // encoding then picks the narrowest float that holds it.
            MetaValue::Number(_) | MetaValue::TypedArray(_) => Cbor::from_meta(&v.untyped())?,
            // JSON holds none of these kinds, so this converts in one step.
            other => Cbor::from_meta(&MetaValue::from_json(&other.to_json()))?,
        })
    }

    /// The deterministic encoding; `what` names the value in errors (too deep, a duplicate
    /// key).
    pub(crate) fn encode(&self, what: &str) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(&mut out, 0, what)?;
        Ok(out)
    }

    fn encode_into(&self, out: &mut Vec<u8>, depth: usize, what: &str) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::unsupported(format!(
                "{what} nests deeper than zTensor 2 allows ({MAX_DEPTH} levels from the manifest's root)"
            )));
        }
        match self {
            Cbor::Uint(n) => head(out, 0, *n),
            Cbor::Nint(n) => head(out, 1, *n),
            Cbor::Bytes(b) => {
                head(out, 2, b.len() as u64);
                out.extend_from_slice(b);
            }
            Cbor::Text(s) => {
                head(out, 3, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            Cbor::Array(items) => {
                head(out, 4, items.len() as u64);
                for item in items {
                    item.encode_into(out, depth + 1, what)?;
                }
            }
            Cbor::Map(pairs) => {
                let mut encoded = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let (mut key, mut value) = (Vec::new(), Vec::new());
                    k.encode_into(&mut key, depth + 1, what)?;
                    v.encode_into(&mut value, depth + 1, what)?;
                    encoded.push((key, value, k));
                }
                encoded.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                if let Some(w) = encoded.windows(2).find(|w| w[0].0 == w[1].0) {
                    let key = match w[0].2 {
                        Cbor::Text(s) => format!("{s:?}"),
                        other => format!("{other:?}"),
                    };
                    return Err(Error::unsupported(format!("{what} has the key {key} twice")));
                }
                head(out, 5, encoded.len() as u64);
                for (k, v, _) in encoded {
                    out.extend_from_slice(&k);
                    out.extend_from_slice(&v);
                }
            }
            Cbor::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
            Cbor::Null => out.push(0xf6),
            Cbor::Float(f) => float(out, *f),
        }
        Ok(())
    }
}

/// An integer in CBOR's range (`-2^64 ..= 2^64 - 1`).
fn int(i: i128) -> Result<Cbor> {
    let out_of_range = || Error::unsupported(format!("the integer {i} is outside CBOR's range"));
    if i >= 0 {
        u64::try_from(i).map(Cbor::Uint).map_err(|_| out_of_range())
    } else {
        u64::try_from(-1 - i).map(Cbor::Nint).map_err(|_| out_of_range())
    }
}

/// A head: the major type and its argument in the shortest form.
fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let m = major << 5;
    if arg < 24 {
        out.push(m | arg as u8);
    } else if let Ok(a) = u8::try_from(arg) {
        out.extend_from_slice(&[m | 24, a]);
    } else if let Ok(a) = u16::try_from(arg) {
        out.push(m | 25);
        out.extend_from_slice(&a.to_be_bytes());
    } else if let Ok(a) = u32::try_from(arg) {
        out.push(m | 26);
        out.extend_from_slice(&a.to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

/// A float in the narrowest of half, single and double that keeps its value exactly; NaN
/// as the half `0x7e00`, the one NaN deterministic encoding allows.
fn float(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        out.extend_from_slice(&[0xf9, 0x7e, 0x00]);
        return;
    }
    let single = f as f32;
    if f64::from(single) != f {
        out.push(0xfb);
        out.extend_from_slice(&f.to_bits().to_be_bytes());
        return;
    }
    let half = half::f16::from_f32(single);
    if f32::from(half) == single {
        out.push(0xf9);
        out.extend_from_slice(&half.to_bits().to_be_bytes());
    } else {
        out.push(0xfa);
        out.extend_from_slice(&single.to_bits().to_be_bytes());
    }
}

/// Check a name (of an object, a part or an attribute key) against the rules readers apply
/// (non-empty, at most 1024 bytes, no U+0000) and canonical form's (Unicode Normalization
/// Form C). A name not in NFC is refused rather than normalized: a tensor stored under
/// another name than the one asked for would not be found by it.
pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    let problem = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_NAME_BYTES {
        "is longer than 1024 bytes"
    } else if name.contains('\0') {
        "contains U+0000"
    } else if !name.is_ascii() && !is_nfc(name) {
        "is not in Unicode Normalization Form C, which canonical zTensor 2 files require"
    } else {
        return Ok(());
    };
    Err(Error::unsupported(format!("the {what} {name:?} {problem}")))
}

/// `value` rounded up to a multiple of [`CANONICAL_ALIGN`].
pub(crate) fn align_up(value: u64) -> Result<u64> {
    crate::checked::add(value, CANONICAL_ALIGN - 1, "blob offset").map(|v| v & !(CANONICAL_ALIGN - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &Cbor) -> Vec<u8> {
        v.encode("test").unwrap()
    }

    #[test]
    fn integers_and_lengths_take_the_shortest_head() {
        assert_eq!(enc(&Cbor::Uint(23)), [0x17]);
        assert_eq!(enc(&Cbor::Uint(24)), [0x18, 24]);
        assert_eq!(enc(&Cbor::Uint(256)), [0x19, 1, 0]);
        assert_eq!(enc(&Cbor::Uint(65536)), [0x1a, 0, 1, 0, 0]);
        assert_eq!(enc(&Cbor::Uint(1 << 32)), [0x1b, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(enc(&Cbor::from_meta(&MetaValue::Int(-1)).unwrap()), [0x20]);
        assert_eq!(
            enc(&Cbor::from_meta(&MetaValue::Int(-(1 << 64))).unwrap()),
            [0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert!(Cbor::from_meta(&MetaValue::Int(1 << 64)).is_err());
    }

    #[test]
    fn floats_take_the_narrowest_exact_width() {
        assert_eq!(enc(&Cbor::Float(1.5)), [0xf9, 0x3e, 0x00]);
        assert_eq!(enc(&Cbor::Float(f64::NAN)), [0xf9, 0x7e, 0x00]);
        assert_eq!(enc(&Cbor::Float(f64::INFINITY)), [0xf9, 0x7c, 0x00]);
        assert_eq!(enc(&Cbor::Float(-0.0)), [0xf9, 0x80, 0x00]);
        assert_eq!(enc(&Cbor::Float(100000.0)), [0xfa, 0x47, 0xc3, 0x50, 0x00]);
        assert_eq!(enc(&Cbor::Float(0.1))[0], 0xfb);
    }

    #[test]
    fn map_keys_sort_by_their_encoding_and_duplicates_are_refused() {
        // Shorter text sorts first (its head is smaller), then bytewise.
        let m = Cbor::map([("objects", Cbor::Null), ("b", Cbor::Null), ("attributes", Cbor::Null), ("a", Cbor::Null)]);
        let mut want = vec![0xa4, 0x61, b'a', 0xf6, 0x61, b'b', 0xf6, 0x67];
        want.extend_from_slice(b"objects");
        want.extend_from_slice(&[0xf6, 0x6a]);
        want.extend_from_slice(b"attributes");
        want.push(0xf6);
        assert_eq!(enc(&m), want);
        let dup = Cbor::map([("k", Cbor::Uint(1)), ("k", Cbor::Uint(2))]);
        assert!(dup.encode("x").unwrap_err().detail().contains("\"k\""));
    }

    #[test]
    fn nesting_is_bounded_from_the_root() {
        let mut v = Cbor::Null;
        for _ in 0..MAX_DEPTH {
            v = Cbor::Array(vec![v]);
        }
        assert!(v.encode("x").is_ok());
        assert!(Cbor::Array(vec![v]).encode("x").is_err());
    }

    #[test]
    fn values_without_a_manifest_kind_go_through_json() {
        let tagged = MetaValue::Tagged(1, Box::new(MetaValue::Int(5)));
        let got = Cbor::from_meta(&tagged).unwrap();
        assert_eq!(got, Cbor::map([("tag", Cbor::Uint(1)), ("value", Cbor::Uint(5))]));
        assert_eq!(Cbor::from_meta(&MetaValue::Undefined).unwrap(), Cbor::Null);
    }

    #[test]
    fn names_follow_the_rules() {
        assert!(check_name("object name", "layer.0.weight").is_ok());
        assert!(check_name("object name", "caf\u{e9}").is_ok());
        for bad in ["", "a\0b", "cafe\u{301}"] {
            assert!(check_name("object name", bad).is_err(), "{bad:?}");
        }
        assert!(check_name("object name", &"x".repeat(1025)).is_err());
        assert!(check_name("object name", &"x".repeat(1024)).is_ok());
    }
}
