//! Writing `.npy` files: a short text header describing dtype and shape, then the raw
//! little-endian, row-major bytes (what `extract` writes, and each member of the `.npz`
//! files `convert` writes).
//!
//! Format version 1.0 (a 16-bit header length) is written whenever the header fits, 2.0 (a
//! 32-bit length) otherwise. The header is padded with spaces and ends with `\n` so that the
//! data starts at a multiple of 64 bytes, as NumPy itself writes it.

use std::io::Write;

use super::MAGIC;
use crate::error::{Error, Result};
use crate::model::DType;

/// The data of an `.npy` file starts at a multiple of this.
const ALIGNMENT: usize = 64;

/// The NumPy type string of a dtype (`<f4`, `|b1`...), or `None` when NumPy has no such type
/// (bfloat16, the float8/float6/float4 types, complex32, the quantized types, bits16).
pub fn numpy_descr(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::Bool => Some("|b1"),
        DType::UInt8 => Some("|u1"),
        DType::Int8 => Some("|i1"),
        DType::UInt16 => Some("<u2"),
        DType::Int16 => Some("<i2"),
        DType::UInt32 => Some("<u4"),
        DType::Int32 => Some("<i4"),
        DType::UInt64 => Some("<u8"),
        DType::Int64 => Some("<i8"),
        DType::Float16 => Some("<f2"),
        DType::Float32 => Some("<f4"),
        DType::Float64 => Some("<f8"),
        DType::Complex64 => Some("<c8"),
        DType::Complex128 => Some("<c16"),
        // bfloat16, the float8, float4 and float6 kinds, complex32, quantized and opaque
        // types: NumPy has no dtype for them (they are written raw).
        _ => None,
    }
}

/// A shape as a Python tuple: `()`, `(5,)`, `(2, 3)`.
fn python_tuple(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        dims => {
            let parts: Vec<String> = dims.iter().map(u64::to_string).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// Everything before the data: magic, version, header length, and the header padded so
/// that the data starts at a multiple of [`ALIGNMENT`].
pub(crate) fn header(descr: &str, shape: &[u64]) -> Result<Vec<u8>> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}", python_tuple(shape));
    // The header's length counts the dict, the padding and the final newline.
    let padded_len = |prefix: usize| (prefix + dict.len() + 1).next_multiple_of(ALIGNMENT) - prefix;
    let mut out = Vec::with_capacity(padded_len(12) + 12);
    out.extend_from_slice(MAGIC);
    if let Ok(len) = u16::try_from(padded_len(10)) {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&len.to_le_bytes());
    } else {
        let len = padded_len(12);
        let len = u32::try_from(len).map_err(|_| Error::unsupported(format!("an .npy header of {len} bytes")))?;
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize((out.len() + 1).next_multiple_of(ALIGNMENT) - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

/// Write `data` (little-endian, row-major elements of `dtype`) as an `.npy` file of `shape`:
/// the header, then the bytes as given (no copy).
pub fn write_npy(out: &mut dyn Write, dtype: DType, shape: &[u64], data: &[u8]) -> Result<()> {
    let descr = numpy_descr(dtype).ok_or_else(|| Error::unsupported(format!("NumPy has no dtype {dtype}")))?;
    let want = dtype.nbytes(crate::checked::numel(shape)?)?;
    if data.len() as u64 != want {
        return Err(Error::usage(format!("{} bytes given, dtype {dtype} and shape {shape:?} need {want}", data.len())));
    }
    out.write_all(&header(descr, shape)?)?;
    out.write_all(data)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse a header back: (version, dict text, offset of the data).
    fn parse(file: &[u8]) -> (u8, String, usize) {
        let mut c = crate::cursor::Cursor::new(file);
        assert_eq!(c.take(MAGIC.len(), "magic").unwrap(), MAGIC);
        let version = c.u8("major version").unwrap();
        c.skip(1, "minor version").unwrap();
        let len = match version {
            1 => usize::from(c.u16_le("header length").unwrap()),
            2 => c.u32_le("header length").unwrap() as usize,
            v => panic!("version {v}"),
        };
        let text = std::str::from_utf8(c.take(len, "header").unwrap()).unwrap();
        assert!(text.ends_with('\n'));
        (version, text.trim_end().to_string(), c.position())
    }

    fn npy(dtype: DType, shape: &[u64], data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_npy(&mut out, dtype, shape, data).unwrap();
        out
    }

    #[test]
    fn header_is_aligned_and_describes_the_array() {
        let data: Vec<u8> = (0..24).collect();
        let file = npy(DType::Float32, &[2, 3], &data);
        let (version, dict, start) = parse(&file);
        assert_eq!(version, 1);
        assert_eq!(dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
        assert_eq!(start % 64, 0);
        assert_eq!(&file[start..], &data[..]);
    }

    #[test]
    fn shapes_render_as_python_tuples() {
        assert_eq!(python_tuple(&[]), "()");
        assert_eq!(python_tuple(&[5]), "(5,)");
        assert_eq!(python_tuple(&[0, 3, 1]), "(0, 3, 1)");
        let (_, dict, _) = parse(&npy(DType::Bool, &[], &[1]));
        assert!(dict.contains("'descr': '|b1'") && dict.contains("'shape': ()"), "{dict}");
        let (_, dict, _) = parse(&npy(DType::Complex128, &[1], &[0; 16]));
        assert!(dict.contains("'descr': '<c16'") && dict.contains("'shape': (1,)"), "{dict}");
    }

    #[test]
    fn descriptors() {
        assert_eq!(numpy_descr(DType::Float16), Some("<f2"));
        assert_eq!(numpy_descr(DType::Complex64), Some("<c8"));
        assert_eq!(numpy_descr(DType::UInt8), Some("|u1"));
        assert_eq!(numpy_descr(DType::Int8), Some("|i1"));
        for d in
            [DType::BFloat16, DType::Float8E4M3Fn, DType::Float4E2M1Fn, DType::QInt8, DType::Bits16, DType::Complex32]
        {
            assert_eq!(numpy_descr(d), None, "{d}");
        }
    }

    #[test]
    fn large_headers_use_version_2() {
        let shape = vec![1u64; 30_000];
        let file = npy(DType::UInt8, &shape, &[7]);
        let (version, _, start) = parse(&file);
        assert_eq!(version, 2);
        assert_eq!(start % 64, 0);
        assert_eq!(&file[start..], &[7]);
    }

    #[test]
    fn refuses_wrong_sizes_and_dtypes_numpy_lacks() {
        let mut out = Vec::new();
        assert!(write_npy(&mut out, DType::Float32, &[2], &[0; 7]).is_err());
        assert!(write_npy(&mut out, DType::BFloat16, &[2], &[0; 4]).is_err());
        assert!(out.is_empty());
    }
}
