//! The values `meta --set` gives: `KEY=VALUE`, or `KEY:TYPE=VALUE` with a type (`str`,
//! `bool`, `u8`..`u64`, `i8`..`i64`, `f32`, `f64`, `[T]` for an array of `T`). A value
//! `@PATH` is the text of the file at `PATH` (`@@` starts a value that is an `@` and what
//! follows). An array is written `[1, 2, 3]` (strings quoted as JSON strings:
//! `["a", "b"]`).
//!
//! The type is the one given, else the existing key's, else the value's: `true`/`false` a
//! `bool`, an integer an `i32` (an `i64`, a `u64` beyond its range), a number with a point or
//! an exponent an `f32` (as gguf-py types Python values), `[...]` an array of the one type its
//! elements take, anything else a string. Where the file keeps text only (safetensors), the
//! value is text unless a type says otherwise, and only `str` is accepted.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::limits::MAX_VALUE_FILE_BYTES;
use crate::model::{MetaValue, Number, TypedArray};

/// A value's type, as `KEY:TYPE=VALUE` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaType {
    /// Text (`str`).
    Str,
    /// `bool`.
    Bool,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// An array of elements of one type (`[u32]`).
    Array(Box<MetaType>),
}

const SCALARS: &[(&str, MetaType)] = &[
    ("str", MetaType::Str),
    ("bool", MetaType::Bool),
    ("u8", MetaType::U8),
    ("i8", MetaType::I8),
    ("u16", MetaType::U16),
    ("i16", MetaType::I16),
    ("u32", MetaType::U32),
    ("i32", MetaType::I32),
    ("u64", MetaType::U64),
    ("i64", MetaType::I64),
    ("f32", MetaType::F32),
    ("f64", MetaType::F64),
];

impl MetaType {
    /// The type named `name` (`u32`, `[str]`...).
    pub fn parse(name: &str) -> Option<MetaType> {
        if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            return match MetaType::parse(inner.trim())? {
                MetaType::Array(_) => None,
                element => Some(MetaType::Array(Box::new(element))),
            };
        }
        SCALARS.iter().find(|(n, _)| *n == name).map(|(_, t)| t.clone())
    }

    /// The type's name as `KEY:TYPE=` writes it.
    pub fn name(&self) -> String {
        match self {
            MetaType::Array(e) => format!("[{}]", e.name()),
            scalar => SCALARS.iter().find(|(_, t)| t == scalar).map_or("?", |(n, _)| n).to_string(),
        }
    }

    /// The type of a value a file holds, when it is one a value can be given as.
    pub fn of(value: &MetaValue) -> Option<MetaType> {
        Some(match value {
            MetaValue::Text(_) => MetaType::Str,
            MetaValue::Bool(_) => MetaType::Bool,
            MetaValue::Number(n) => MetaType::parse(n.type_name())?,
            MetaValue::TypedArray(a) => MetaType::Array(Box::new(match a {
                TypedArray::Text(_) => MetaType::Str,
                TypedArray::Array(_) => return None,
                other => MetaType::parse(other.element_name())?,
            })),
            _ => return None,
        })
    }
}

/// What a value is given as: text, or the text of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    /// The value as written.
    Text(String),
    /// `@PATH`: the text of this file.
    File(PathBuf),
}

/// One `--set`: the key, the type given (if any), and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The key set.
    pub key: String,
    /// The type given with `KEY:TYPE=`.
    pub ty: Option<MetaType>,
    /// The value.
    pub given: Given,
}

impl Assignment {
    /// Parse `KEY=VALUE` or `KEY:TYPE=VALUE`. The key is everything before the first `=`
    /// (less a `:TYPE` suffix that names a type); errors name the argument and the rule.
    pub fn parse(arg: &str) -> Result<Assignment> {
        let (lhs, value) = arg
            .split_once('=')
            .ok_or_else(|| Error::usage(format!("--set {arg:?}: expected KEY=VALUE or KEY:TYPE=VALUE")))?;
        let (key, ty) = match lhs.rsplit_once(':') {
            Some((key, name)) => match MetaType::parse(name) {
                Some(t) => (key, Some(t)),
                None if is_type_like(name) => {
                    return Err(Error::usage(format!(
                        "--set {key}: unknown type {name:?} (str, bool, u8..u64, i8..i64, f32, f64, [TYPE])"
                    )));
                }
                None => (lhs, None),
            },
            None => (lhs, None),
        };
        if key.is_empty() {
            return Err(Error::usage(format!("--set {arg:?}: an empty key")));
        }
        let given = match value.strip_prefix('@') {
            Some(rest) if rest.starts_with('@') => Given::Text(rest.to_string()),
            Some("") => return Err(Error::usage(format!("--set {key}: @ without a file name"))),
            Some(path) => Given::File(PathBuf::from(path)),
            None => Given::Text(value.to_string()),
        };
        Ok(Assignment { key: key.to_string(), ty, given })
    }

    /// The value's text: as given, or read from its file (UTF-8, at most 64 MiB).
    pub fn text(&self) -> Result<String> {
        match &self.given {
            Given::Text(t) => Ok(t.clone()),
            Given::File(path) => {
                let len = std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?.len();
                if len > MAX_VALUE_FILE_BYTES {
                    return Err(Error::usage(format!(
                        "--set {}: {} holds {len} bytes, more than the {MAX_VALUE_FILE_BYTES} a value may have",
                        self.key,
                        path.display()
                    )));
                }
                let bytes = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
                String::from_utf8(bytes)
                    .map_err(|_| Error::usage(format!("--set {}: {} is not UTF-8 text", self.key, path.display())))
            }
        }
    }

    /// The value to store: `text` read as the given type, else as the `existing` value's,
    /// else as its own (text only where `typed` is false).
    pub fn resolve(&self, text: &str, existing: Option<&MetaValue>, typed: bool) -> Result<MetaValue> {
        let key = &self.key;
        let from_file = matches!(self.given, Given::File(_));
        let ty = match (&self.ty, existing) {
            (Some(t), _) => t.clone(),
            (None, Some(old)) => match MetaType::of(old) {
                Some(t) => t,
                None if !typed => MetaType::Str,
                None => return Err(Error::usage(format!("--set {key}: the key's value cannot be given; name a type"))),
            },
            (None, None) if !typed || from_file => MetaType::Str,
            (None, None) => infer(key, text)?,
        };
        if !typed && ty != MetaType::Str {
            return Err(Error::usage(format!("--set {key}: this format keeps text values only, not {}", ty.name())));
        }
        if from_file && ty != MetaType::Str {
            return Err(Error::usage(format!("--set {key}: @FILE gives text, not {}", ty.name())));
        }
        value_of(key, &ty, text)
    }
}

/// Whether `name` looks like a type rather than part of a key (`general.name:foo` is a key
/// with a colon; `x:u33` is a mistyped type).
fn is_type_like(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    name.starts_with('[')
        || matches!(bare.as_bytes().first(), Some(b'u' | b'i' | b'f'))
            && bare.len() > 1
            && bare[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The type of a value given without one, for a new key.
fn infer(key: &str, text: &str) -> Result<MetaType> {
    let t = text.trim();
    if t.starts_with('[') && t.ends_with(']') {
        let items = elements(key, t, None)?;
        if items.is_empty() {
            return Err(Error::usage(format!("--set {key}: an empty array needs a type (KEY:[u32]=[])")));
        }
        let types: Vec<MetaType> = items.iter().map(|i| infer_scalar(i)).collect::<Vec<_>>();
        let element = common(&types)
            .ok_or_else(|| Error::usage(format!("--set {key}: the array's elements are of different types")))?;
        return Ok(MetaType::Array(Box::new(element)));
    }
    Ok(infer_scalar(text))
}

/// A scalar's type from its text: bool, i32/i64/u64, f32, else text.
fn infer_scalar(text: &str) -> MetaType {
    let t = text.trim();
    if t == "true" || t == "false" {
        MetaType::Bool
    } else if t.parse::<i32>().is_ok() {
        MetaType::I32
    } else if t.parse::<i64>().is_ok() {
        MetaType::I64
    } else if t.parse::<u64>().is_ok() {
        MetaType::U64
    } else if t.bytes().any(|b| b.is_ascii_digit()) && t.parse::<f64>().is_ok_and(f64::is_finite) {
        MetaType::F32
    } else {
        MetaType::Str
    }
}

/// The one type elements of types `types` take: integers widen (i32, i64, u64), integers
/// and floats take f32; none for a mix with text or bools.
fn common(types: &[MetaType]) -> Option<MetaType> {
    let rank = |t: &MetaType| match t {
        MetaType::I32 => Some(0),
        MetaType::I64 => Some(1),
        MetaType::U64 => Some(2),
        MetaType::F32 => Some(3),
        _ => None,
    };
    let first = types.first()?.clone();
    if types.iter().all(|t| *t == first) {
        return Some(first);
    }
    let ranks: Option<Vec<u8>> = types.iter().map(rank).collect();
    let top = ranks?.into_iter().max()?;
    // A u64 beside a negative number fits no integer type: f32 takes both.
    if top == 2 && types.iter().any(|t| *t != MetaType::U64) {
        return Some(MetaType::F32);
    }
    Some([MetaType::I32, MetaType::I64, MetaType::U64, MetaType::F32][usize::from(top)].clone())
}

/// The elements of an array's text `[a, b, c]`: strings as JSON strings when `element` is
/// text (or unknown and the first element is quoted), else split at commas.
fn elements(key: &str, text: &str, element: Option<&MetaType>) -> Result<Vec<String>> {
    let t = text.trim();
    let inner = t
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| Error::usage(format!("--set {key}: an array is written [a, b, ...]")))?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let quoted = match element {
        Some(MetaType::Str) => true,
        Some(_) => false,
        None => inner.trim_start().starts_with('"'),
    };
    if quoted {
        let strings: Vec<String> = serde_json::from_str(t)
            .map_err(|e| Error::usage(format!("--set {key}: an array of strings is written [\"a\", \"b\"] ({e})")))?;
        // Text elements keep their JSON quotes for `value_of` to know they are strings.
        return Ok(strings.into_iter().map(|s| serde_json::Value::String(s).to_string()).collect());
    }
    Ok(inner.split(',').map(|s| s.trim().to_string()).collect())
}

/// `text` read as a value of type `ty`.
fn value_of(key: &str, ty: &MetaType, text: &str) -> Result<MetaValue> {
    let bad = |what: &str| Error::usage(format!("--set {key}: {text:?} is not {what}"));
    Ok(match ty {
        MetaType::Str => MetaValue::Text(text.to_string()),
        MetaType::Bool => MetaValue::Bool(boolean(text).ok_or_else(|| bad("a bool (true or false)"))?),
        MetaType::Array(element) => {
            let items = elements(key, text, Some(element))?;
            MetaValue::TypedArray(array(key, element, &items)?)
        }
        number => MetaValue::Number(scalar(number, text.trim()).ok_or_else(|| bad(&format!("a {}", number.name())))?),
    })
}

fn boolean(text: &str) -> Option<bool> {
    match text.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// A number of type `ty` from `t`; none when `t` is not one in its range (floats: finite
/// or `nan`/`inf` spelled out, as Rust reads them).
fn scalar(ty: &MetaType, t: &str) -> Option<Number> {
    Some(match ty {
        MetaType::U8 => Number::U8(t.parse().ok()?),
        MetaType::I8 => Number::I8(t.parse().ok()?),
        MetaType::U16 => Number::U16(t.parse().ok()?),
        MetaType::I16 => Number::I16(t.parse().ok()?),
        MetaType::U32 => Number::U32(t.parse().ok()?),
        MetaType::I32 => Number::I32(t.parse().ok()?),
        MetaType::U64 => Number::U64(t.parse().ok()?),
        MetaType::I64 => Number::I64(t.parse().ok()?),
        MetaType::F32 => Number::F32(t.parse().ok()?),
        MetaType::F64 => Number::F64(t.parse().ok()?),
        _ => return None,
    })
}

/// The elements `items` as an array of `element`s.
fn array(key: &str, element: &MetaType, items: &[String]) -> Result<TypedArray> {
    let bad =
        |i: usize, item: &str| Error::usage(format!("--set {key}: element {i}, {item:?}, is not a {}", element.name()));
    macro_rules! numbers {
        ($variant:ident, $t:ty) => {
            TypedArray::$variant(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| s.parse::<$t>().map_err(|_| bad(i, s)))
                    .collect::<Result<Vec<_>>>()?,
            )
        };
    }
    Ok(match element {
        MetaType::Str => TypedArray::Text(
            items
                .iter()
                .enumerate()
                .map(|(i, s)| serde_json::from_str::<String>(s).map_err(|_| bad(i, s)))
                .collect::<Result<Vec<_>>>()?,
        ),
        MetaType::Bool => TypedArray::Bool(
            items.iter().enumerate().map(|(i, s)| boolean(s).ok_or_else(|| bad(i, s))).collect::<Result<Vec<_>>>()?,
        ),
        MetaType::U8 => numbers!(U8, u8),
        MetaType::I8 => numbers!(I8, i8),
        MetaType::U16 => numbers!(U16, u16),
        MetaType::I16 => numbers!(I16, i16),
        MetaType::U32 => numbers!(U32, u32),
        MetaType::I32 => numbers!(I32, i32),
        MetaType::U64 => numbers!(U64, u64),
        MetaType::I64 => numbers!(I64, i64),
        MetaType::F32 => numbers!(F32, f32),
        MetaType::F64 => numbers!(F64, f64),
        MetaType::Array(_) => {
            return Err(Error::usage(format!("--set {key}: arrays of arrays cannot be given")));
        }
    })
}
