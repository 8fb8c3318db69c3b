//! NumPy's files: `.npy` (one array: a magic, a Python-literal header dict, the raw data) and
//! `.npz` (a zip archive of `.npy` members, as `numpy.savez` and `numpy.savez_compressed`
//! write it). The format is described in NumPy's `numpy/lib/format.py` (NEP 1).
//!
//! What the two units share lives here: the header (versions 1.0, 2.0 and 3.0, parsed as the
//! literal subset NumPy writes, never evaluated), the mapping between `descr` strings and
//! dtypes, and the conversion of big-endian or Fortran-order data to the row-major
//! little-endian bytes every reader of this library returns. Object, string, void, datetime
//! and structured arrays, and NumPy's extended-precision floats, are listed as unreadable:
//! nothing is ever unpickled.

mod array;
mod header;
mod literal;
pub mod npy;
pub mod npz;
mod write;

pub use write::{numpy_descr, write_npy};

use crate::error::{Error, Result, Rule};
use crate::model::{ByteOrder, DType, Kind, Layout, TensorInfo};

/// `\x93NUMPY`, the first bytes of every `.npy` file.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The longest header dict NumPy reads without being told the file is trusted
/// (`numpy.lib.format`'s default `max_header_size`); longer ones are refused.
pub const MAX_HEADER: u64 = 10_000;

/// The dtype and byte order of a `descr` string (`<f4`, `>i8`, `|b1`, `=u2`...), or why it is
/// not read (with [`Rule::UnknownDType`]).
pub(crate) fn descr_dtype(descr: &str) -> Result<(DType, ByteOrder)> {
    let unknown = |why: &str| Err(Error::invalid(Rule::UnknownDType, format!("descr {descr:?}: {why}")));
    let (order, rest) = match descr.as_bytes().first() {
        Some(b'<' | b'|') => (ByteOrder::Little, &descr[1..]),
        Some(b'>') => (ByteOrder::Big, &descr[1..]),
        Some(b'=') => (native(), &descr[1..]),
        _ => (native(), descr),
    };
    let Some(kind) = rest.chars().next() else { return unknown("empty") };
    let size = &rest[kind.len_utf8()..];
    let dtype = match (kind, size) {
        ('b', "1") => DType::Bool,
        ('i', "1") => DType::Int8,
        ('i', "2") => DType::Int16,
        ('i', "4") => DType::Int32,
        ('i', "8") => DType::Int64,
        ('u', "1") => DType::UInt8,
        ('u', "2") => DType::UInt16,
        ('u', "4") => DType::UInt32,
        ('u', "8") => DType::UInt64,
        ('f', "2") => DType::Float16,
        ('f', "4") => DType::Float32,
        ('f', "8") => DType::Float64,
        ('c', "8") => DType::Complex64,
        ('c', "16") => DType::Complex128,
        ('O', _) => return unknown("an object array holds pickled Python objects, which tensorfile never unpickles"),
        ('S' | 'a' | 'U', _) => return unknown("an array of strings, not numbers"),
        ('V', _) => return unknown("an array of raw void records, not numbers"),
        ('M' | 'm', _) => return unknown("an array of datetimes or timedeltas, not plain numbers"),
        ('f', "12" | "16") | ('c', "24" | "32") => {
            return unknown("NumPy's extended precision (long double) has no portable layout");
        }
        _ => return unknown("not a dtype NumPy writes"),
    };
    Ok((dtype, order))
}

/// The byte order `=` means: that of the machine reading the file, as NumPy reads it.
fn native() -> ByteOrder {
    if cfg!(target_endian = "big") { ByteOrder::Big } else { ByteOrder::Little }
}

/// The layout of an array stored in Fortran order: its dimensions stored last first. An array
/// of fewer than two dimensions is the same in either order.
pub(crate) fn layout_of(fortran_order: bool, rank: usize) -> Layout {
    if fortran_order && rank > 1 { Layout::DimOrder((0..rank as u8).rev().collect()) } else { Layout::Dense }
}

/// The tensor a header describes (named `name`, of `dtype`) and its size in bytes.
pub(crate) fn array_info(name: &str, h: &header::Header, dtype: DType) -> Result<(TensorInfo, u64)> {
    let layout = layout_of(h.fortran_order, h.shape.len());
    let nbytes = TensorInfo::check(Kind::Tensor, dtype, &h.shape, &layout)?;
    Ok((TensorInfo::checked(name, Kind::Tensor, dtype, h.shape.clone(), layout), nbytes))
}

/// Whether NumPy has `info`'s dtype and it is a dense array; the error names the tensor and
/// says why not.
pub fn check_supported(info: &TensorInfo) -> Result<()> {
    let why = if numpy_descr(info.dtype()).is_none() {
        format!("NumPy has no dtype {}", info.dtype())
    } else if info.kind() != Kind::Tensor {
        "an .npz holds arrays, not opaque blobs".to_string()
    } else if crate::zip::leaves_archive(&format!("{}.npy", info.name())) {
        "a name that makes an .npz member leave the archive (absolute, a drive or `..`)".to_string()
    } else if !info.layout().reads_dense() {
        format!("NumPy files hold dense arrays, not {} ones", info.layout().describe())
    } else {
        return Ok(());
    };
    Err(Error::unsupported(why).for_tensor(info.name()))
}

/// Whether NumPy holds `dtype`, for the units' [`crate::formats::Caps`].
fn holds_dtype(dtype: DType) -> bool {
    numpy_descr(dtype).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_descr_reads_back() {
        for d in DType::ALL {
            if let Some(descr) = numpy_descr(d) {
                assert_eq!(descr_dtype(descr).unwrap(), (d, ByteOrder::Little), "{descr}");
                let big = format!(">{}", &descr[1..]);
                assert_eq!(descr_dtype(&big).unwrap(), (d, ByteOrder::Big), "{big}");
            }
        }
        assert_eq!(descr_dtype("=f8").unwrap().0, DType::Float64);
        assert_eq!(descr_dtype("i4").unwrap().0, DType::Int32);
    }

    #[test]
    fn other_descrs_are_unknown_dtypes() {
        for d in ["|O", "<U3", "|S5", "|V8", "<M8[ns]", "<m8[s]", "<f16", "<c32", "<f3", "", "<", "float32", "\u{e9}"] {
            assert_eq!(descr_dtype(d).unwrap_err().rule(), Some(Rule::UnknownDType), "{d:?}");
        }
    }

    #[test]
    fn fortran_order_is_a_reversed_dim_order() {
        assert_eq!(layout_of(true, 3), Layout::DimOrder(vec![2, 1, 0]));
        assert_eq!(layout_of(true, 1), Layout::Dense);
        assert_eq!(layout_of(false, 3), Layout::Dense);
    }

    #[test]
    fn dtypes_numpy_lacks_are_refused_by_name() {
        let e = check_supported(&TensorInfo::dense("w", DType::BFloat16, vec![2])).unwrap_err();
        assert!(e.to_string().contains("bfloat16") && e.to_string().contains('w'), "{e}");
        assert!(check_supported(&TensorInfo::dense("w", DType::Complex64, vec![2])).is_ok());
        assert!(check_supported(&TensorInfo::blob("b", 3)).is_err());
        for name in ["/abs", "a/../b", "C:x", "../x"] {
            assert!(check_supported(&TensorInfo::dense(name, DType::Int8, vec![2])).is_err(), "{name}");
        }
    }
}
