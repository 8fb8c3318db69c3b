//! Typed metadata values: numbers of a stated width and arrays of one stated element type, as
//! GGUF stores them. Arrays keep their elements unboxed (a `Vec<u8>` for bytes), so a file's
//! metadata takes about the memory its bytes take.

use serde_json::{Number as JsonNumber, Value as Json};

use super::MetaValue;

/// A number of a stated width.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Number {
    /// An unsigned 8-bit integer.
    U8(u8),
    /// A signed 8-bit integer.
    I8(i8),
    /// An unsigned 16-bit integer.
    U16(u16),
    /// A signed 16-bit integer.
    I16(i16),
    /// An unsigned 32-bit integer.
    U32(u32),
    /// A signed 32-bit integer.
    I32(i32),
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A signed 64-bit integer.
    I64(i64),
    /// A single-precision float.
    F32(f32),
    /// A double-precision float.
    F64(f64),
}

impl Number {
    /// The type's name: `u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `u64`, `i64`, `f32`, `f64`.
    pub fn type_name(self) -> &'static str {
        match self {
            Number::U8(_) => "u8",
            Number::I8(_) => "i8",
            Number::U16(_) => "u16",
            Number::I16(_) => "i16",
            Number::U32(_) => "u32",
            Number::I32(_) => "i32",
            Number::U64(_) => "u64",
            Number::I64(_) => "i64",
            Number::F32(_) => "f32",
            Number::F64(_) => "f64",
        }
    }

    /// The value of an integer type; `None` for floats.
    pub fn as_i128(self) -> Option<i128> {
        Some(match self {
            Number::U8(v) => v.into(),
            Number::I8(v) => v.into(),
            Number::U16(v) => v.into(),
            Number::I16(v) => v.into(),
            Number::U32(v) => v.into(),
            Number::I32(v) => v.into(),
            Number::U64(v) => v.into(),
            Number::I64(v) => v.into(),
            Number::F32(_) | Number::F64(_) => return None,
        })
    }

    /// The value as a double (exact for floats and for integers up to 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::F32(v) => v.into(),
            Number::F64(v) => v,
            // Integers: through i128, which holds every one exactly.
            other => other.as_i128().unwrap_or(0) as f64,
        }
    }

    /// The value as a JSON number: integers exactly, floats as the shortest decimal that reads
    /// back as the same value of their width (`0.1` for the f32 nearest 0.1); a non-finite
    /// float as its text.
    pub fn to_json(self) -> Json {
        match self {
            Number::F32(v) if v.is_finite() => {
                // The f32's shortest text, read as an f64, prints as that same text.
                v.to_string().parse::<f64>().map_or_else(|_| float_json(v.into()), float_json)
            }
            Number::F32(v) => float_json(v.into()),
            Number::F64(v) => float_json(v),
            Number::U64(v) => Json::from(v),
            Number::I64(v) => Json::from(v),
            other => Json::from(other.as_i128().and_then(|i| i64::try_from(i).ok()).unwrap_or(0)),
        }
    }
}

/// A float as a JSON number; a non-finite one (which JSON lacks) as its text.
pub(super) fn float_json(f: f64) -> Json {
    JsonNumber::from_f64(f).map_or(Json::String(f.to_string()), Json::Number)
}

/// An array whose elements all have one stated type; the type is kept when it is empty.
/// Arrays of arrays hold their own element types each.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TypedArray {
    /// Unsigned 8-bit integers.
    U8(Vec<u8>),
    /// Signed 8-bit integers.
    I8(Vec<i8>),
    /// Unsigned 16-bit integers.
    U16(Vec<u16>),
    /// Signed 16-bit integers.
    I16(Vec<i16>),
    /// Unsigned 32-bit integers.
    U32(Vec<u32>),
    /// Signed 32-bit integers.
    I32(Vec<i32>),
    /// Unsigned 64-bit integers.
    U64(Vec<u64>),
    /// Signed 64-bit integers.
    I64(Vec<i64>),
    /// Single-precision floats.
    F32(Vec<f32>),
    /// Double-precision floats.
    F64(Vec<f64>),
    /// Booleans.
    Bool(Vec<bool>),
    /// UTF-8 text.
    Text(Vec<String>),
    /// Arrays, each with its own element type.
    Array(Vec<TypedArray>),
}

impl TypedArray {
    /// How many elements it holds.
    pub fn len(&self) -> usize {
        match self {
            TypedArray::U8(v) => v.len(),
            TypedArray::I8(v) => v.len(),
            TypedArray::U16(v) => v.len(),
            TypedArray::I16(v) => v.len(),
            TypedArray::U32(v) => v.len(),
            TypedArray::I32(v) => v.len(),
            TypedArray::U64(v) => v.len(),
            TypedArray::I64(v) => v.len(),
            TypedArray::F32(v) => v.len(),
            TypedArray::F64(v) => v.len(),
            TypedArray::Bool(v) => v.len(),
            TypedArray::Text(v) => v.len(),
            TypedArray::Array(v) => v.len(),
        }
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type's name: a [`Number::type_name`], `bool`, `string` or `array`.
    pub fn element_name(&self) -> &'static str {
        match self {
            TypedArray::U8(_) => "u8",
            TypedArray::I8(_) => "i8",
            TypedArray::U16(_) => "u16",
            TypedArray::I16(_) => "i16",
            TypedArray::U32(_) => "u32",
            TypedArray::I32(_) => "i32",
            TypedArray::U64(_) => "u64",
            TypedArray::I64(_) => "i64",
            TypedArray::F32(_) => "f32",
            TypedArray::F64(_) => "f64",
            TypedArray::Bool(_) => "bool",
            TypedArray::Text(_) => "string",
            TypedArray::Array(_) => "array",
        }
    }

    /// Element `i` of an array of numbers.
    fn number(&self, i: usize) -> Option<Number> {
        Some(match self {
            TypedArray::U8(v) => Number::U8(*v.get(i)?),
            TypedArray::I8(v) => Number::I8(*v.get(i)?),
            TypedArray::U16(v) => Number::U16(*v.get(i)?),
            TypedArray::I16(v) => Number::I16(*v.get(i)?),
            TypedArray::U32(v) => Number::U32(*v.get(i)?),
            TypedArray::I32(v) => Number::I32(*v.get(i)?),
            TypedArray::U64(v) => Number::U64(*v.get(i)?),
            TypedArray::I64(v) => Number::I64(*v.get(i)?),
            TypedArray::F32(v) => Number::F32(*v.get(i)?),
            TypedArray::F64(v) => Number::F64(*v.get(i)?),
            _ => return None,
        })
    }

    /// Element `i` as a value; `None` past the end.
    pub fn get(&self, i: usize) -> Option<MetaValue> {
        match self {
            TypedArray::Bool(b) => b.get(i).map(|&b| MetaValue::Bool(b)),
            TypedArray::Text(t) => t.get(i).map(|s| MetaValue::Text(s.clone())),
            TypedArray::Array(a) => a.get(i).map(|a| MetaValue::TypedArray(a.clone())),
            numbers => numbers.number(i).map(MetaValue::Number),
        }
    }

    /// Element `i` as JSON (no copy of an element that is an array); `None` past the end.
    pub fn item_json(&self, i: usize) -> Option<Json> {
        match self {
            TypedArray::Bool(b) => b.get(i).map(|&b| Json::Bool(b)),
            TypedArray::Text(t) => t.get(i).map(|s| Json::String(s.clone())),
            TypedArray::Array(a) => a.get(i).map(TypedArray::to_json),
            numbers => numbers.number(i).map(Number::to_json),
        }
    }

    /// The elements as a JSON array.
    pub fn to_json(&self) -> Json {
        Json::Array((0..self.len()).filter_map(|i| self.item_json(i)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_render_as_plain_json_and_keep_their_width() {
        assert_eq!(Number::F32(0.1).to_json().to_string(), "0.1");
        assert_eq!(Number::F64(0.1).to_json().to_string(), "0.1");
        assert_eq!(Number::U64(u64::MAX).to_json().to_string(), "18446744073709551615");
        assert_eq!(Number::I8(-3).to_json().to_string(), "-3");
        assert_eq!(Number::F32(f32::INFINITY).to_json(), Json::String("inf".into()));
        assert_eq!(Number::U16(7).type_name(), "u16");
        assert_eq!((Number::I32(-2).as_i128(), Number::F32(1.5).as_i128()), (Some(-2), None));
        assert_eq!(MetaValue::Number(Number::U8(4)).untyped(), MetaValue::Int(4));
        assert_eq!(MetaValue::Number(Number::F32(0.5)).untyped(), MetaValue::Float(0.5));
    }

    #[test]
    fn typed_arrays_keep_their_element_type_even_empty() {
        let empty = TypedArray::U16(Vec::new());
        assert_eq!((empty.len(), empty.element_name(), empty.to_json().to_string()), (0, "u16", "[]".into()));
        let nested = TypedArray::Array(vec![TypedArray::I32(vec![1, -2]), TypedArray::Text(vec!["é".into()])]);
        assert_eq!(nested.element_name(), "array");
        assert_eq!(nested.to_json().to_string(), r#"[[1,-2],["é"]]"#);
        assert_eq!(nested.get(1), Some(MetaValue::TypedArray(TypedArray::Text(vec!["é".into()]))));
        assert_eq!(nested.get(2), None);
        let untyped = MetaValue::TypedArray(nested).untyped();
        let text = MetaValue::Array(vec![MetaValue::Text("é".into())]);
        assert_eq!(
            untyped,
            MetaValue::Array(vec![MetaValue::Array(vec![MetaValue::Int(1), MetaValue::Int(-2)]), text])
        );
        assert_eq!(TypedArray::Bool(vec![true]).get(0), Some(MetaValue::Bool(true)));
        assert_eq!(TypedArray::F64(vec![2.5]).get(0), Some(MetaValue::Number(Number::F64(2.5))));
    }
}
