//! GGUF key/values: a string key, a `u32` value type, and the value. Types: 0 `u8`, 1 `i8`,
//! 2 `u16`, 3 `i16`, 4 `u32`, 5 `i32`, 6 `f32`, 7 `bool` (one byte), 8 `string` (`u64` length
//! and UTF-8), 9 `array` (`u32` element type, `u64` count, the elements; arrays of arrays
//! nest), 10 `u64`, 11 `i64`, 12 `f64`.
//!
//! Values read keep their type ([`Number`], [`TypedArray`]). Values from other formats are
//! written with the nearest type: text as `string`, booleans as `bool`, integers as `i64`
//! (`u64` above its range), floats as `f64`, bytes as a `u8` array, an untyped array as an
//! array of the one type its elements take; what GGUF has no type for (null, maps, tags, an
//! empty or mixed untyped array) is written as its JSON text.

use super::header::{Stop, Walk};
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_NESTING;
use crate::model::{MetaValue, Number, TypedArray};

/// Value type numbers.
const U8: u32 = 0;
const I8: u32 = 1;
const U16: u32 = 2;
const I16: u32 = 3;
const U32: u32 = 4;
const I32: u32 = 5;
const F32: u32 = 6;
const BOOL: u32 = 7;
const STRING: u32 = 8;
const ARRAY: u32 = 9;
const U64: u32 = 10;
const I64: u32 = 11;
const F64: u32 = 12;

/// The fewest bytes one key/value takes: a key length, a value type, a one-byte value.
pub(super) const LEAST_KV: u64 = 8 + 4 + 1;

/// The key/values of the index, `count` of them, in file order; a key twice is refused.
pub(super) fn read_all(w: &mut Walk<'_>, count: u64) -> Result<Vec<(String, MetaValue)>, Stop> {
    w.expect(count, LEAST_KV, "key/value pairs")?;
    let mut kvs = Vec::with_capacity(capacity(count, w.left_in_bytes(), LEAST_KV));
    for _ in 0..count {
        let key = w.string("key")?;
        let vtype = w.u32("value type")?;
        let value = value(w, vtype, 0).map_err(|s| in_key(s, &key))?;
        kvs.push((key, value));
    }
    let mut order: Vec<usize> = (0..kvs.len()).collect();
    order.sort_unstable_by(|&a, &b| kvs[a].0.cmp(&kvs[b].0));
    if let Some(pair) = order.windows(2).find(|p| kvs[p[0]].0 == kvs[p[1]].0) {
        let key = &kvs[pair[0]].0;
        return Err(Stop::Invalid(Error::invalid(Rule::DuplicateName, format!("the key {key:?} is given twice"))));
    }
    Ok(kvs)
}

/// Room for `count` items of at least `least` bytes, no more than the bytes at hand hold.
fn capacity(count: u64, at_hand: usize, least: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX).min(at_hand / least.max(1) as usize)
}

/// An error inside a value, said to be of `key`.
fn in_key(s: Stop, key: &str) -> Stop {
    match s {
        Stop::Invalid(e) => Stop::Invalid(e.within(format_args!("key {key:?}"), Rule::BadMetadata)),
        more => more,
    }
}

fn bad_type(vtype: u32) -> Stop {
    Stop::Invalid(Error::invalid(Rule::BadMetadata, format!("value type {vtype}, which GGUF does not define")))
}

/// A value of type `vtype`, inside `depth` arrays.
fn value(w: &mut Walk<'_>, vtype: u32, depth: usize) -> Result<MetaValue, Stop> {
    Ok(match vtype {
        U8 => MetaValue::Number(Number::U8(w.word::<1>("u8")?[0])),
        I8 => MetaValue::Number(Number::I8(i8::from_le_bytes(w.word("i8")?))),
        U16 => MetaValue::Number(Number::U16(u16::from_le_bytes(w.word("u16")?))),
        I16 => MetaValue::Number(Number::I16(i16::from_le_bytes(w.word("i16")?))),
        U32 => MetaValue::Number(Number::U32(u32::from_le_bytes(w.word("u32")?))),
        I32 => MetaValue::Number(Number::I32(i32::from_le_bytes(w.word("i32")?))),
        F32 => MetaValue::Number(Number::F32(f32::from_le_bytes(w.word("f32")?))),
        U64 => MetaValue::Number(Number::U64(u64::from_le_bytes(w.word("u64")?))),
        I64 => MetaValue::Number(Number::I64(i64::from_le_bytes(w.word("i64")?))),
        F64 => MetaValue::Number(Number::F64(f64::from_le_bytes(w.word("f64")?))),
        // Any byte but 0 is true, as ggml and numpy read it.
        BOOL => MetaValue::Bool(w.word::<1>("bool")?[0] != 0),
        STRING => MetaValue::Text(w.string("string")?),
        ARRAY => MetaValue::TypedArray(array(w, depth + 1)?),
        other => return Err(bad_type(other)),
    })
}

/// `count` numbers of `N` bytes each, converted by `f` from their little-endian bytes.
fn numbers<const N: usize, T>(w: &mut Walk<'_>, count: u64, f: fn([u8; N]) -> T) -> Result<Vec<T>, Stop> {
    let len = count.saturating_mul(N as u64);
    let big = w.big_endian();
    let bytes = w.take(len, "array elements")?;
    Ok(bytes
        .chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            if big {
                a.reverse();
            }
            f(a)
        })
        .collect())
}

/// An array (its element type, count and elements), the `depth`-th nested.
fn array(w: &mut Walk<'_>, depth: usize) -> Result<TypedArray, Stop> {
    if depth > MAX_NESTING {
        return Err(Stop::Invalid(Error::invalid(
            Rule::TooDeep,
            format!("arrays nested more than {MAX_NESTING} deep"),
        )));
    }
    let element = w.u32("array element type")?;
    let count = w.u64("array length")?;
    Ok(match element {
        U8 => TypedArray::U8(numbers(w, count, |[b]| b)?),
        I8 => TypedArray::I8(numbers(w, count, i8::from_le_bytes)?),
        U16 => TypedArray::U16(numbers(w, count, u16::from_le_bytes)?),
        I16 => TypedArray::I16(numbers(w, count, i16::from_le_bytes)?),
        U32 => TypedArray::U32(numbers(w, count, u32::from_le_bytes)?),
        I32 => TypedArray::I32(numbers(w, count, i32::from_le_bytes)?),
        F32 => TypedArray::F32(numbers(w, count, f32::from_le_bytes)?),
        U64 => TypedArray::U64(numbers(w, count, u64::from_le_bytes)?),
        I64 => TypedArray::I64(numbers(w, count, i64::from_le_bytes)?),
        F64 => TypedArray::F64(numbers(w, count, f64::from_le_bytes)?),
        BOOL => TypedArray::Bool(numbers(w, count, |[b]| b != 0)?),
        STRING => {
            w.expect(count, 8, "strings of an array")?;
            let mut items = Vec::with_capacity(capacity(count, w.left_in_bytes(), 8));
            for _ in 0..count {
                items.push(w.string("string of an array")?);
            }
            TypedArray::Text(items)
        }
        ARRAY => {
            w.expect(count, 12, "arrays of an array")?;
            let mut items = Vec::with_capacity(capacity(count, w.left_in_bytes(), 12));
            for _ in 0..count {
                items.push(array(w, depth + 1)?);
            }
            TypedArray::Array(items)
        }
        other => return Err(bad_type(other)),
    })
}

/// The key/values as the index stores them, little-endian.
pub(super) fn encode_all(kvs: &[(String, MetaValue)]) -> Result<Vec<u8>> {
    encode_all_in(kvs, false)
}

/// The key/values as the index stores them, big-endian when `big` (gguf-py's writer with
/// `endianess=BIG`: every count, length, type and number swapped).
pub(super) fn encode_all_in(kvs: &[(String, MetaValue)], big: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut keys: Vec<&str> = kvs.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if let Some(pair) = keys.windows(2).find(|p| p[0] == p[1]) {
        return Err(Error::usage(format!("the metadata key {:?} is given twice", pair[0])));
    }
    for (key, value) in kvs {
        if key.is_empty() {
            return Err(Error::usage("an empty metadata key (GGUF readers refuse it)"));
        }
        string_in(&mut out, key, big);
        encode(&mut out, value, big);
    }
    Ok(out)
}

/// A number's little-endian bytes, reversed when the file is big-endian.
pub(super) fn put<const N: usize>(out: &mut Vec<u8>, mut le: [u8; N], big: bool) {
    if big {
        le.reverse();
    }
    out.extend_from_slice(&le);
}

/// A GGUF string: its `u64` length, then its bytes.
pub(super) fn string(out: &mut Vec<u8>, s: &str) {
    string_in(out, s, false);
}

/// A GGUF string of a file of either byte order.
pub(super) fn string_in(out: &mut Vec<u8>, s: &str, big: bool) {
    put(out, (s.len() as u64).to_le_bytes(), big);
    out.extend_from_slice(s.as_bytes());
}

/// A value: its type, then its bytes.
fn encode(out: &mut Vec<u8>, v: &MetaValue, big: bool) {
    match v {
        MetaValue::Number(n) => {
            let (vtype, mut bytes) = number(*n);
            put(out, vtype.to_le_bytes(), big);
            if big {
                bytes.reverse();
            }
            out.extend_from_slice(&bytes);
        }
        MetaValue::Bool(b) => {
            put(out, BOOL.to_le_bytes(), big);
            out.push(u8::from(*b));
        }
        MetaValue::Text(s) => {
            put(out, STRING.to_le_bytes(), big);
            string_in(out, s, big);
        }
        MetaValue::Int(i) => match (i64::try_from(*i), u64::try_from(*i)) {
            (Ok(v), _) => encode(out, &MetaValue::Number(Number::I64(v)), big),
            (_, Ok(v)) => encode(out, &MetaValue::Number(Number::U64(v)), big),
            _ => encode(out, &MetaValue::Text(i.to_string()), big),
        },
        MetaValue::Float(f) => encode(out, &MetaValue::Number(Number::F64(*f)), big),
        MetaValue::TypedArray(a) => {
            put(out, ARRAY.to_le_bytes(), big);
            array_bytes(out, a, big);
        }
        MetaValue::Bytes(b) => encode(out, &MetaValue::TypedArray(TypedArray::U8(b.clone())), big),
        MetaValue::Array(items) => match typed(items) {
            Some(a) => encode(out, &MetaValue::TypedArray(a), big),
            None => encode(out, &MetaValue::Text(v.to_json().to_string()), big),
        },
        other => encode(out, &MetaValue::Text(other.to_json().to_string()), big),
    }
}

/// A number's value type and little-endian bytes.
fn number(n: Number) -> (u32, Vec<u8>) {
    match n {
        Number::U8(v) => (U8, vec![v]),
        Number::I8(v) => (I8, v.to_le_bytes().to_vec()),
        Number::U16(v) => (U16, v.to_le_bytes().to_vec()),
        Number::I16(v) => (I16, v.to_le_bytes().to_vec()),
        Number::U32(v) => (U32, v.to_le_bytes().to_vec()),
        Number::I32(v) => (I32, v.to_le_bytes().to_vec()),
        Number::U64(v) => (U64, v.to_le_bytes().to_vec()),
        Number::I64(v) => (I64, v.to_le_bytes().to_vec()),
        Number::F32(v) => (F32, v.to_le_bytes().to_vec()),
        Number::F64(v) => (F64, v.to_le_bytes().to_vec()),
    }
}

/// An array's element type, count and elements.
fn array_bytes(out: &mut Vec<u8>, a: &TypedArray, big: bool) {
    let each = |out: &mut Vec<u8>, vtype: u32, n: usize| {
        put(out, vtype.to_le_bytes(), big);
        put(out, (n as u64).to_le_bytes(), big);
    };
    macro_rules! numbers {
        ($vtype:expr, $v:expr) => {{
            each(out, $vtype, $v.len());
            $v.iter().for_each(|x| put(out, x.to_le_bytes(), big));
        }};
    }
    match a {
        TypedArray::U8(v) => {
            each(out, U8, v.len());
            out.extend_from_slice(v);
        }
        TypedArray::I8(v) => numbers!(I8, v),
        TypedArray::U16(v) => numbers!(U16, v),
        TypedArray::I16(v) => numbers!(I16, v),
        TypedArray::U32(v) => numbers!(U32, v),
        TypedArray::I32(v) => numbers!(I32, v),
        TypedArray::U64(v) => numbers!(U64, v),
        TypedArray::I64(v) => numbers!(I64, v),
        TypedArray::F32(v) => numbers!(F32, v),
        TypedArray::F64(v) => numbers!(F64, v),
        TypedArray::Bool(v) => {
            each(out, BOOL, v.len());
            out.extend(v.iter().map(|&b| u8::from(b)));
        }
        TypedArray::Text(v) => {
            put(out, STRING.to_le_bytes(), big);
            put(out, (v.len() as u64).to_le_bytes(), big);
            v.iter().for_each(|s| string_in(out, s, big));
        }
        TypedArray::Array(v) => {
            put(out, ARRAY.to_le_bytes(), big);
            put(out, (v.len() as u64).to_le_bytes(), big);
            v.iter().for_each(|a| array_bytes(out, a, big));
        }
    }
}

/// An untyped array as a typed one, when its elements all take one GGUF type: booleans, text,
/// integers (as `i64`, else `u64`), floats (`f64`), or arrays that are typed themselves.
fn typed(items: &[MetaValue]) -> Option<TypedArray> {
    let items: Vec<MetaValue> = items.iter().map(MetaValue::untyped).collect();
    let all = |f: fn(&MetaValue) -> bool| items.iter().all(f);
    Some(match items.first()? {
        MetaValue::Bool(_) if all(|v| matches!(v, MetaValue::Bool(_))) => TypedArray::Bool(
            items.iter().filter_map(|v| if let MetaValue::Bool(b) = v { Some(*b) } else { None }).collect(),
        ),
        MetaValue::Text(_) if all(|v| matches!(v, MetaValue::Text(_))) => {
            TypedArray::Text(items.iter().filter_map(|v| v.as_text().map(str::to_string)).collect())
        }
        MetaValue::Int(_) => {
            let ints: Vec<i128> =
                items.iter().map(|v| if let MetaValue::Int(i) = v { Some(*i) } else { None }).collect::<Option<_>>()?;
            match ints.iter().map(|&i| i64::try_from(i).ok()).collect::<Option<Vec<_>>>() {
                Some(v) => TypedArray::I64(v),
                None => TypedArray::U64(ints.iter().map(|&i| u64::try_from(i).ok()).collect::<Option<_>>()?),
            }
        }
        MetaValue::Float(_) => TypedArray::F64(
            items.iter().map(|v| if let MetaValue::Float(f) = v { Some(*f) } else { None }).collect::<Option<_>>()?,
        ),
        MetaValue::Array(_) => TypedArray::Array(
            items.iter().map(|v| if let MetaValue::Array(a) = v { typed(a) } else { None }).collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}
