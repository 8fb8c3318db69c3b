//! What a raw index entry means: its dtype, shape, layout, encoding, byte order and
//! checksum checked and turned into a [`TensorInfo`] and its [`Storage`].

use std::borrow::Cow;

use super::dtype_from_name;
use super::index::{Key, RawEntry, as_u64};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::ztensor::cbor::Typed;
use crate::formats::ztensor::zstd_frames;
use crate::limits::MAX_RANK;
use crate::model::{ByteOrder, Checksum, DType, Encoding, Kind, Layout, MetaValue, SparseFormat, Storage, TensorInfo};
use crate::source::Bytes;

/// A field that should be text: `Ok(None)` when absent, `BadField` when of another type.
fn text<'e>(field: &'e Option<Typed<&str>>, key: &str) -> Result<Option<&'e str>> {
    match field {
        None => Ok(None),
        Some(Typed::Found(s)) => Ok(Some(s)),
        Some(Typed::Other(v)) => match v.as_ref() {
            MetaValue::Text(s) => Ok(Some(s)),
            _ => Err(Error::invalid(Rule::BadField, format!("{key} is not text"))),
        },
    }
}

/// How an entry's blob is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobForm {
    Dense,
    /// `layout: "sparse"`: index arrays then values (docs/zt-sparse.md).
    SpecSparse,
    /// `layout: "sparsecoo"` / `"sparsecsr"`: the reference's records.
    ReferenceSparse,
}

/// An entry's fields, understood.
pub struct Interpreted {
    pub info: TensorInfo,
    pub storage: Storage,
    pub nbytes: u64,
    pub form: BlobForm,
    /// A checksum string whose algorithm we do not know (so cannot verify).
    pub unknown_checksum: Option<String>,
}

/// Understand one entry. `stored` gives its blob, already checked to lie in the file: asked
/// for only by a zstd blob of the reference's sparse form (whose decoded size, hence its
/// number of values, only its frames state); nothing else reads tensor bytes at open.
/// An error here makes this entry unreadable without refusing the file. The entry's shape
/// moves into the result; on an error the entry is left as it was.
pub fn interpret(e: &mut RawEntry<'_>, stored: impl FnOnce() -> Result<Bytes>) -> Result<Interpreted> {
    let dtype_text = text(&e.dtype, "dtype")?.ok_or_else(|| Error::invalid(Rule::MissingField, "no dtype"))?;
    let dtype = dtype_from_name(dtype_text)
        .ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("unknown dtype {dtype_text:?}")))?;
    let shape = shape(e)?;
    let encoding = match text(&e.encoding, "encoding")? {
        Some("raw") => Encoding::Raw,
        Some("zstd") => Encoding::Zstd,
        Some(other) => return Err(Error::invalid(Rule::UnknownEncoding, format!("unknown encoding {other:?}"))),
        None => return Err(Error::invalid(Rule::MissingField, "no encoding")),
    };
    let declared_order = match text(&e.data_endianness, "data_endianness")? {
        None | Some("little") => ByteOrder::Little,
        Some("big") => ByteOrder::Big,
        Some(other) => {
            return Err(Error::invalid(Rule::UnknownByteOrder, format!("unknown data_endianness {other:?}")));
        }
    };
    // Like the reference, byte order applies to raw data only; zstd holds little-endian bytes.
    let byte_order = if encoding == Encoding::Raw { declared_order } else { ByteOrder::Little };
    let (checksum, unknown_checksum) = match text(&e.checksum, "checksum")? {
        None => (None, None),
        Some(s) => match parse_checksum(s)? {
            Some(c) => (Some(c), None),
            None => (None, Some(s.to_string())),
        },
    };
    let (layout, form) = match text(&e.layout, "layout")? {
        None | Some("dense") => (Layout::Dense, BlobForm::Dense),
        Some("sparse") => {
            let format = match e.rest_field(Key::SparseFormat) {
                Some(MetaValue::Text(f)) if f == "coo" => SparseFormat::Coo,
                Some(MetaValue::Text(f)) if f == "csr" => SparseFormat::Csr,
                Some(MetaValue::Text(other)) => {
                    return Err(Error::invalid(Rule::UnknownLayout, format!("unknown sparse_format {other:?}")));
                }
                Some(_) => return Err(Error::invalid(Rule::BadField, "sparse_format is not text")),
                None => return Err(Error::invalid(Rule::MissingField, "sparse layout without sparse_format")),
            };
            let nnz = match e.rest_field(Key::Nnz) {
                Some(v) => as_u64(v).ok_or_else(|| Error::invalid(Rule::BadField, "nnz is not an unsigned integer"))?,
                None => return Err(Error::invalid(Rule::MissingField, "sparse layout without nnz")),
            };
            (Layout::Sparse { format, nnz }, BlobForm::SpecSparse)
        }
        Some(l @ ("sparsecoo" | "sparsecsr")) => {
            let format = if l == "sparsecoo" { SparseFormat::Coo } else { SparseFormat::Csr };
            // zTensor blobs are raw or zstd: nothing else is accepted above.
            let decoded_len = match encoding {
                Encoding::Raw | Encoding::Deflate => e.size,
                Encoding::Zstd => zstd_frames::declared_content_size(&stored()?)?.ok_or_else(|| {
                    Error::unsupported("zstd sparse blob whose frames do not state their decoded size")
                })?,
            };
            let nnz = reference_nnz(format, dtype, &shape, decoded_len)?;
            (Layout::Sparse { format, nnz }, BlobForm::ReferenceSparse)
        }
        Some(other) => return Err(Error::invalid(Rule::UnknownLayout, format!("unknown layout {other:?}"))),
    };
    // Rank and element count are checked by shape() above; the CSR rank and the byte size
    // here, before the shape is taken from the entry (it stays there to report the entry).
    let nbytes = TensorInfo::check(Kind::Tensor, dtype, &shape, &layout)?;
    let extra = e
        .rest
        .iter()
        // Less the fields of the `layout: "sparse"` form when it has that form.
        .filter(|(k, _)| {
            form != BlobForm::SpecSparse || !matches!(Key::of(k.as_bytes()), Some(Key::SparseFormat | Key::Nnz))
        })
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let shape = match shape {
        Cow::Owned(dims) => dims,
        // Moved rather than copied; given back below if the entry is refused.
        Cow::Borrowed(_) => match &mut e.shape {
            Some(Typed::Found(dims)) => std::mem::take(dims),
            _ => Vec::new(), // (a borrowed shape is always a found one)
        },
    };
    let info = TensorInfo::checked(e.name.to_string(), Kind::Tensor, dtype, shape, layout).with_extra(extra);
    match check_size(e, &info, form, encoding, nbytes) {
        Ok(()) => {
            let storage = Storage::new(e.offset, e.size)
                .with_encoding(encoding)
                .with_byte_order(byte_order)
                .with_checksum(checksum);
            Ok(Interpreted { info, storage, nbytes, form, unknown_checksum })
        }
        Err(error) => {
            // Given back (a shape converted from a generic array is the same numbers).
            e.shape = Some(Typed::Found(info.shape().to_vec()));
            Err(error)
        }
    }
}

/// The entry's stored size checked against the `nbytes` reading `info` yields.
fn check_size(e: &RawEntry<'_>, info: &TensorInfo, form: BlobForm, encoding: Encoding, nbytes: u64) -> Result<()> {
    if encoding == Encoding::Raw {
        let needed = stored_len_raw(info, form, nbytes)?;
        if e.size != needed {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!(
                    "size is {} bytes but dtype {} and shape {:?} need {needed}",
                    e.size,
                    info.dtype(),
                    info.shape()
                ),
            ));
        }
    }
    Ok(())
}

/// The entry's shape: borrowed when it was read as one, else converted from the array found.
fn shape<'e>(e: &'e RawEntry<'_>) -> Result<Cow<'e, [u64]>> {
    let rank = |dims: usize| {
        if dims > MAX_RANK {
            return Err(Error::invalid(Rule::BadField, format!("rank {dims} exceeds {MAX_RANK}")));
        }
        Ok(())
    };
    let shape = match &e.shape {
        Some(Typed::Found(dims)) => {
            rank(dims.len())?;
            Cow::Borrowed(dims.as_slice())
        }
        Some(Typed::Other(v)) => match v.as_ref() {
            MetaValue::Array(dims) => {
                rank(dims.len())?;
                let dims = dims.iter().map(|d| {
                    as_u64(d)
                        .ok_or_else(|| Error::invalid(Rule::BadField, "a shape dimension is not an unsigned integer"))
                });
                Cow::Owned(dims.collect::<Result<Vec<u64>>>()?)
            }
            _ => return Err(Error::invalid(Rule::BadField, "shape is not an array")),
        },
        None => return Err(Error::invalid(Rule::MissingField, "no shape")),
    };
    checked::numel(&shape)?;
    Ok(shape)
}

/// Stored bytes of a raw blob: dense bytes, or for the reference's sparse records their size.
fn stored_len_raw(info: &TensorInfo, form: BlobForm, nbytes: u64) -> Result<u64> {
    match (form, info.layout()) {
        (BlobForm::ReferenceSparse, Layout::Sparse { format, nnz }) => {
            reference_len(*format, info.dtype(), info.shape(), *nnz)
        }
        _ => Ok(nbytes),
    }
}

/// Bytes of the reference's sparse blob for `nnz` values.
pub fn reference_len(format: SparseFormat, dtype: DType, shape: &[u64], nnz: u64) -> Result<u64> {
    let value = dtype.size().unwrap_or(1);
    match format {
        SparseFormat::Coo => checked::mul(nnz, 8 * shape.len() as u64 + value, "sparse COO records"),
        SparseFormat::Csr => {
            let rows = shape.first().copied().unwrap_or(0);
            let indptr = checked::mul(checked::add(rows, 1, "CSR rows")?, 8, "CSR indptr")?;
            checked::add(indptr, checked::mul(nnz, 8 + value, "CSR entries")?, "CSR size")
        }
    }
}

/// The number of stored values a reference sparse blob of `len` bytes holds.
fn reference_nnz(format: SparseFormat, dtype: DType, shape: &[u64], len: u64) -> Result<u64> {
    let value = dtype.size().unwrap_or(1);
    let (fixed, per_value) = match format {
        SparseFormat::Coo => (0, 8 * shape.len() as u64 + value),
        SparseFormat::Csr => {
            if shape.len() != 2 {
                return Err(Error::invalid(Rule::BadSparse, format!("CSR tensor of rank {}, not 2", shape.len())));
            }
            (checked::mul(checked::add(shape[0], 1, "CSR rows")?, 8, "CSR indptr")?, 8 + value)
        }
    };
    let rest = len.checked_sub(fixed).filter(|r| r % per_value == 0).ok_or_else(|| {
        Error::invalid(
            Rule::SizeMismatch,
            format!("{len} bytes are not a whole number of sparse {} records", format.name()),
        )
    })?;
    Ok(rest / per_value)
}

/// `crc32c:0x1234ABCD` or `sha256:<64 hex>`; `Ok(None)` for another algorithm.
pub(crate) fn parse_checksum(s: &str) -> Result<Option<Checksum>> {
    let bad = || Error::invalid(Rule::BadChecksum, format!("cannot parse checksum {s:?}"));
    if let Some(hex_digits) = s.strip_prefix("crc32c:") {
        let digits = hex_digits.strip_prefix("0x").or_else(|| hex_digits.strip_prefix("0X")).ok_or_else(bad)?;
        if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        return u32::from_str_radix(digits, 16).map(|v| Some(Checksum::Crc32c(v))).map_err(|_| bad());
    }
    if let Some(digits) = s.strip_prefix("sha256:") {
        let mut d = [0u8; 32];
        hex::decode_to_slice(digits, &mut d).map_err(|_| bad())?;
        return Ok(Some(Checksum::Sha256(d)));
    }
    if s.contains(':') { Ok(None) } else { Err(bad()) }
}

#[cfg(test)]
mod tests {
    use super::super::index::parse;
    use super::super::index::tests::{dense, index};
    use super::*;

    #[test]
    fn checksums_parse() {
        assert_eq!(parse_checksum("crc32c:0x0000ABCD").unwrap(), Some(Checksum::Crc32c(0xabcd)));
        assert_eq!(parse_checksum("crc32c:0xabcd").unwrap(), Some(Checksum::Crc32c(0xabcd)));
        assert!(matches!(parse_checksum(&format!("sha256:{}", "ab".repeat(32))).unwrap(), Some(Checksum::Sha256(_))));
        assert_eq!(parse_checksum("xxh3:1234").unwrap(), None);
        for bad in ["crc32c:1234", "crc32c:0x", "crc32c:0x123456789", "sha256:abc", "nonsense"] {
            assert_eq!(parse_checksum(bad).unwrap_err().rule(), Some(Rule::BadChecksum), "{bad}");
        }
    }

    #[test]
    fn reference_sparse_sizes() {
        // CSR 3x4 with 2 values of f32: indptr 4*8, indices 2*8, values 2*4.
        assert_eq!(reference_len(SparseFormat::Csr, DType::Float32, &[3, 4], 2).unwrap(), 32 + 16 + 8);
        assert_eq!(reference_nnz(SparseFormat::Csr, DType::Float32, &[3, 4], 56).unwrap(), 2);
        assert_eq!(reference_nnz(SparseFormat::Coo, DType::Float32, &[3, 4], 40).unwrap(), 2);
        assert_eq!(
            reference_nnz(SparseFormat::Coo, DType::Float32, &[3, 4], 41).unwrap_err().rule(),
            Some(Rule::SizeMismatch)
        );
    }

    #[test]
    fn custom_fields_keep_their_order() {
        let mut fields = dense("t");
        fields.insert(1, ("a", MetaValue::Int(1)));
        fields.insert(3, ("sparse_format", "coo".into()));
        fields.push(("b", MetaValue::Bool(true)));
        fields.push(("nnz", MetaValue::Int(3)));
        let bytes = index(&[fields]);
        let mut entries = parse(&bytes).unwrap();
        let info = interpret(&mut entries[0], || Ok(Bytes::from_vec(vec![0; 8]))).unwrap().info;
        let keys: Vec<&str> = info.extra().iter().map(|(k, _)| k.as_str()).collect();
        // Not a sparse layout: its fields are custom ones here.
        assert_eq!(keys, ["a", "sparse_format", "b", "nnz"]);
        assert_eq!(info.shape(), [2]);
    }

    #[test]
    fn a_refused_entry_keeps_its_shape_for_its_description() {
        let mut fields = dense("t");
        fields[2] = ("size", MetaValue::Int(9));
        let bytes = index(&[fields]);
        let mut entries = parse(&bytes).unwrap();
        assert_eq!(
            interpret(&mut entries[0], || Ok(Bytes::from_vec(vec![0; 9]))).err().and_then(|e| e.rule()),
            Some(Rule::SizeMismatch)
        );
        let plain = entries[0].plain();
        let shape = plain.fields.iter().find(|(k, _)| k == "shape").map(|(_, v)| v);
        assert_eq!(shape, Some(&MetaValue::Array(vec![MetaValue::Int(2)])));
    }
}
