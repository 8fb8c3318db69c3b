//! ONNX's element types (`TensorProto.DataType`) and the typed fields their values can be
//! stored in, converted to the little-endian bytes of a [`DType`].

use super::proto::TensorProto;
use crate::error::{Error, Result, Rule};
use crate::model::DType;

/// ONNX's number for each dtype this library holds.
const TABLE: [(i32, DType); 25] = [
    (1, DType::Float32),
    (2, DType::UInt8),
    (3, DType::Int8),
    (4, DType::UInt16),
    (5, DType::Int16),
    (6, DType::Int32),
    (7, DType::Int64),
    (9, DType::Bool),
    (10, DType::Float16),
    (11, DType::Float64),
    (12, DType::UInt32),
    (13, DType::UInt64),
    (14, DType::Complex64),
    (15, DType::Complex128),
    (16, DType::BFloat16),
    (17, DType::Float8E4M3Fn),
    (18, DType::Float8E4M3Fnuz),
    (19, DType::Float8E5M2),
    (20, DType::Float8E5M2Fnuz),
    (21, DType::UInt4),
    (22, DType::Int4),
    (23, DType::Float4E2M1Fn),
    (24, DType::Float8E8M0Fnu),
    (25, DType::UInt2),
    (26, DType::Int2),
];

/// The dtype of ONNX type `code`; an error naming it when this library holds no such dtype.
pub fn dtype_of(code: i32) -> Result<DType> {
    if let Some(&(_, d)) = TABLE.iter().find(|(c, _)| *c == code) {
        return Ok(d);
    }
    Err(Error::invalid(
        Rule::UnknownDType,
        format!("ONNX type {} ({}), which tensorfile does not hold", code, name(code)),
    ))
}

/// ONNX's number for `d`, when ONNX has the dtype.
pub fn onnx_code(d: DType) -> Option<i32> {
    TABLE.iter().find(|(_, t)| *t == d).map(|(c, _)| *c)
}

/// ONNX's name of type `code` (`FLOAT`, `INT4`...), for messages and `info`.
pub fn name(code: i32) -> &'static str {
    const NAMES: [&str; 27] = [
        "UNDEFINED",
        "FLOAT",
        "UINT8",
        "INT8",
        "UINT16",
        "INT16",
        "INT32",
        "INT64",
        "STRING",
        "BOOL",
        "FLOAT16",
        "DOUBLE",
        "UINT32",
        "UINT64",
        "COMPLEX64",
        "COMPLEX128",
        "BFLOAT16",
        "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ",
        "FLOAT8E5M2",
        "FLOAT8E5M2FNUZ",
        "UINT4",
        "INT4",
        "FLOAT4E2M1",
        "FLOAT8E8M0",
        "UINT2",
        "INT2",
    ];
    usize::try_from(code).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or("unknown")
}

/// The name `ls` shows for a tensor of ONNX type `code`: our dtype's, else ONNX's.
pub fn shown(code: i32) -> String {
    dtype_of(code).map_or_else(|_| name(code).to_ascii_lowercase(), |d| d.name().to_string())
}

/// Which typed field holds values of `d`, as ONNX assigns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Float,
    Int32,
    Int64,
    Double,
    UInt64,
}

fn field_of(d: DType) -> Field {
    match d {
        DType::Float32 | DType::Complex64 => Field::Float,
        DType::Int64 => Field::Int64,
        DType::Float64 | DType::Complex128 => Field::Double,
        DType::UInt32 | DType::UInt64 => Field::UInt64,
        _ => Field::Int32,
    }
}

/// How many entries of the typed fields any tensor has: their sum (strings apart).
pub fn typed_len(t: &TensorProto) -> usize {
    t.float_data.len() + t.int32_data.len() + t.int64_data.len() + t.double_data.len() + t.uint64_data.len()
}

/// The values of `t`, stored in its typed fields, as little-endian bytes of `d` (`numel`
/// elements). The field must be the one ONNX assigns to `d`, hold one value per element (two
/// per complex element; one byte of packed elements, two 4-bit or four 2-bit ones, per
/// `int32_data` entry) and no other typed field may hold values.
pub fn typed_bytes(t: &TensorProto, d: DType, numel: u64) -> Result<Vec<u8>> {
    let field = field_of(d);
    let used = |f: Field| match f {
        Field::Float => t.float_data.len(),
        Field::Int32 => t.int32_data.len(),
        Field::Int64 => t.int64_data.len(),
        Field::Double => t.double_data.len(),
        Field::UInt64 => t.uint64_data.len(),
    };
    let have = used(field);
    if typed_len(t) != have {
        return Err(Error::invalid(
            Rule::BadField,
            format!("values in a typed field other than the one of ONNX type {}", name(t.data_type)),
        ));
    }
    let packed = d.bits() < 8;
    let want = if d.is_complex() {
        numel.checked_mul(2)
    } else if packed {
        Some(numel.div_ceil(8 / d.bits()))
    } else {
        Some(numel)
    };
    if want != Some(have as u64) {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!("{have} values in the typed field for {numel} elements of {d}"),
        ));
    }
    let width = if packed { 1 } else { (d.swap_unit()).max(1) };
    let mut out = Vec::with_capacity(have.saturating_mul(width));
    match field {
        Field::Float => t.float_data.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        Field::Int64 => t.int64_data.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        Field::Double => t.double_data.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        Field::UInt64 if d == DType::UInt32 => {
            // Kept as the low 32 bits, as numpy's cast from uint64 to uint32 keeps them.
            t.uint64_data.iter().for_each(|&v| out.extend_from_slice(&(v as u32).to_le_bytes()))
        }
        Field::UInt64 => t.uint64_data.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        Field::Int32 => {
            for &v in &t.int32_data {
                match width {
                    // A bool is any value other than 0 (as numpy's cast to bool reads it).
                    1 if d == DType::Bool => out.push(u8::from(v != 0)),
                    // 8-bit types (and bytes of packed 4- or 2-bit elements): the low byte; 16-bit types: the low
                    // two bytes (float16 and bfloat16 as their bits); int32 whole.
                    1 => out.push(v as u8),
                    2 => out.extend_from_slice(&(v as u16).to_le_bytes()),
                    _ => out.extend_from_slice(&v.to_le_bytes()),
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mapped_type_round_trips_and_others_are_unknown() {
        for &(code, d) in &TABLE {
            assert_eq!(dtype_of(code).unwrap(), d);
            assert_eq!(onnx_code(d), Some(code));
        }
        for code in [0, 8, 27, -1] {
            assert_eq!(dtype_of(code).unwrap_err().rule(), Some(Rule::UnknownDType), "{code}");
        }
        assert_eq!(onnx_code(DType::QInt8), None);
        assert_eq!(name(22), "INT4");
        assert_eq!(shown(22), "int4");
        assert_eq!(shown(8), "string");
    }

    #[test]
    fn typed_fields_become_little_endian_bytes() {
        let t = TensorProto { data_type: 10, int32_data: vec![0x3c00, 0xc000], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Float16, 2).unwrap(), [0x00, 0x3c, 0x00, 0xc0]);
        let t = TensorProto { data_type: 9, int32_data: vec![0, 5], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Bool, 2).unwrap(), [0, 1]);
        let t = TensorProto { data_type: 23, int32_data: vec![0x21, 0x03], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Float4E2M1Fn, 4).unwrap(), [0x21, 0x03]);
        // int4 [1, -2, 3, -8]: nibbles 0x1, 0xe, 0x3, 0x8, two per entry, the first low.
        let t = TensorProto { data_type: 22, int32_data: vec![0xe1, 0x83], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Int4, 4).unwrap(), [0xe1, 0x83]);
        // Three values in two entries: the last entry's high nibble is padding.
        let t = TensorProto { data_type: 21, int32_data: vec![0xf1, 0x07], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::UInt4, 3).unwrap(), [0xf1, 0x07]);
        assert_eq!(typed_bytes(&t, DType::UInt4, 5).unwrap_err().rule(), Some(Rule::SizeMismatch));
        // Four 2-bit values per entry.
        let t = TensorProto { data_type: 26, int32_data: vec![0xe4, 0x01], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Int2, 5).unwrap(), [0xe4, 0x01]);
        assert_eq!(typed_bytes(&t, DType::Int2, 9).unwrap_err().rule(), Some(Rule::SizeMismatch));
        let t = TensorProto { data_type: 14, float_data: vec![1.0, 2.0], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Complex64, 1).unwrap().len(), 8);
        let t = TensorProto { data_type: 12, uint64_data: vec![7], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::UInt32, 1).unwrap(), [7, 0, 0, 0]);
    }

    #[test]
    fn a_count_that_does_not_fit_or_a_wrong_field_is_refused() {
        let t = TensorProto { data_type: 1, float_data: vec![1.0], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Float32, 2).unwrap_err().rule(), Some(Rule::SizeMismatch));
        let t = TensorProto { data_type: 1, float_data: vec![1.0], int64_data: vec![1], ..Default::default() };
        assert_eq!(typed_bytes(&t, DType::Float32, 1).unwrap_err().rule(), Some(Rule::BadField));
    }
}
