//! The CBOR index: parsing it, and interpreting each entry's fields.

use std::borrow::Cow;

use super::{cbor, dtype_from_name, zstd_frames};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_ENTRIES, MAX_RANK};
use crate::model::{ByteOrder, Checksum, DType, Encoding, Kind, Layout, MetaValue, SparseFormat, Storage, TensorInfo};

/// Keys with a meaning in zTensor 0.1 (plus our sparse keys); all others are custom fields.
pub const KNOWN_KEYS: [&str; 11] = [
    "name",
    "offset",
    "size",
    "dtype",
    "layout",
    "shape",
    "encoding",
    "data_endianness",
    "checksum",
    "sparse_format",
    "nnz",
];

/// One entry of the index with its structural fields decoded and the rest kept as found.
pub struct IndexEntry {
    pub name: String,
    pub offset: u64,
    pub size: u64,
    /// Every other key, in file order.
    pub fields: Vec<(Cow<'static, str>, MetaValue)>,
}

impl IndexEntry {
    fn field(&self, key: &str) -> Option<&MetaValue> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Parse the index: an array of maps with text keys.
pub fn parse(bytes: &[u8]) -> Result<Vec<IndexEntry>> {
    let Some(items) = cbor::decode_index(bytes, &KNOWN_KEYS)? else {
        return Err(Error::invalid(Rule::BadField, "the index is not a CBOR array"));
    };
    if items.len() > MAX_ENTRIES {
        return Err(Error::invalid(Rule::TooManyEntries, format!("{} entries (limit {MAX_ENTRIES})", items.len())));
    }
    items.into_iter().map(parse_entry).collect()
}

fn parse_entry(item: Result<cbor::IndexPairs, (usize, &'static str)>) -> Result<IndexEntry> {
    let mut fields =
        item.map_err(|(position, what)| Error::invalid(Rule::BadField, format!("index entry {position} {what}")))?;
    // Duplicate keys, by sorting (a hostile entry may hold many thousands of keys).
    let mut keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_ref()).collect();
    keys.sort_unstable();
    if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::invalid(Rule::BadField, format!("an index entry has the key {:?} twice", w[0])));
    }
    let mut take = |key: &str| fields.iter().position(|(k, _)| k == key).map(|i| fields.remove(i).1);
    let name = match take("name") {
        Some(MetaValue::Text(s)) => s,
        Some(_) => return Err(Error::invalid(Rule::BadField, "an index entry's name is not text")),
        None => return Err(Error::invalid(Rule::MissingField, "an index entry has no name")),
    };
    let mut uint = |key: &str| match take(key) {
        Some(v) => as_u64(&v).ok_or_else(|| {
            Error::invalid(Rule::BadField, format!("{key} is not an unsigned 64-bit integer")).for_tensor(&name)
        }),
        None => Err(Error::invalid(Rule::MissingField, format!("no {key}")).for_tensor(&name)),
    };
    let offset = uint("offset")?;
    let size = uint("size")?;
    Ok(IndexEntry { name, offset, size, fields })
}

fn as_u64(v: &MetaValue) -> Option<u64> {
    match v {
        MetaValue::Int(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

fn text<'a>(e: &'a IndexEntry, key: &str) -> Result<Option<&'a str>> {
    match e.field(key) {
        None => Ok(None),
        Some(MetaValue::Text(s)) => Ok(Some(s)),
        Some(_) => Err(Error::invalid(Rule::BadField, format!("{key} is not text"))),
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

/// Understand one entry. `stored` is its blob, already checked to lie in the file.
/// An error here makes this entry unreadable without refusing the file.
pub fn interpret(e: &IndexEntry, stored: &[u8]) -> Result<Interpreted> {
    let dtype_text = text(e, "dtype")?.ok_or_else(|| Error::invalid(Rule::MissingField, "no dtype"))?;
    let dtype = dtype_from_name(dtype_text)
        .ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("unknown dtype {dtype_text:?}")))?;
    let shape = shape(e)?;
    let encoding = match text(e, "encoding")? {
        Some("raw") => Encoding::Raw,
        Some("zstd") => Encoding::Zstd,
        Some(other) => return Err(Error::invalid(Rule::UnknownEncoding, format!("unknown encoding {other:?}"))),
        None => return Err(Error::invalid(Rule::MissingField, "no encoding")),
    };
    let declared_order = match text(e, "data_endianness")? {
        None | Some("little") => ByteOrder::Little,
        Some("big") => ByteOrder::Big,
        Some(other) => {
            return Err(Error::invalid(Rule::UnknownByteOrder, format!("unknown data_endianness {other:?}")));
        }
    };
    // Like the reference, byte order applies to raw data only; zstd holds little-endian bytes.
    let byte_order = if encoding == Encoding::Raw { declared_order } else { ByteOrder::Little };
    let (checksum, unknown_checksum) = match text(e, "checksum")? {
        None => (None, None),
        Some(s) => match parse_checksum(s)? {
            Some(c) => (Some(c), None),
            None => (None, Some(s.to_string())),
        },
    };
    let mut consumed = vec!["dtype", "shape", "encoding", "layout", "data_endianness", "checksum"];
    let (layout, form) = match text(e, "layout")? {
        None | Some("dense") => (Layout::Dense, BlobForm::Dense),
        Some("sparse") => {
            consumed.extend(["sparse_format", "nnz"]);
            let format = match text(e, "sparse_format")? {
                Some("coo") => SparseFormat::Coo,
                Some("csr") => SparseFormat::Csr,
                Some(other) => {
                    return Err(Error::invalid(Rule::UnknownLayout, format!("unknown sparse_format {other:?}")));
                }
                None => return Err(Error::invalid(Rule::MissingField, "sparse layout without sparse_format")),
            };
            let nnz = match e.field("nnz") {
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
                Encoding::Zstd => zstd_frames::declared_content_size(stored)?.ok_or_else(|| {
                    Error::unsupported("zstd sparse blob whose frames do not state their decoded size")
                })?,
            };
            let nnz = reference_nnz(format, dtype, &shape, decoded_len)?;
            (Layout::Sparse { format, nnz }, BlobForm::ReferenceSparse)
        }
        Some(other) => return Err(Error::invalid(Rule::UnknownLayout, format!("unknown layout {other:?}"))),
    };
    if let Layout::Sparse { format: SparseFormat::Csr, .. } = layout {
        if shape.len() != 2 {
            return Err(Error::invalid(Rule::BadSparse, format!("CSR tensor of rank {}, not 2", shape.len())));
        }
    }
    let info = TensorInfo {
        name: e.name.clone(),
        kind: Kind::Tensor,
        dtype,
        shape,
        layout,
        extra: e
            .fields
            .iter()
            .filter(|(k, _)| !consumed.contains(&k.as_ref()))
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    };
    let nbytes = info.nbytes()?;
    if encoding == Encoding::Raw && e.size != stored_len_raw(&info, form, nbytes)? {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!(
                "size is {} bytes but dtype {dtype} and shape {:?} need {}",
                e.size,
                info.shape,
                stored_len_raw(&info, form, nbytes)?
            ),
        ));
    }
    let storage = Storage { offset: e.offset, len: e.size, encoding, byte_order, checksum };
    Ok(Interpreted { info, storage, nbytes, form, unknown_checksum })
}

fn shape(e: &IndexEntry) -> Result<Vec<u64>> {
    let dims = match e.field("shape") {
        Some(MetaValue::Array(dims)) => dims,
        Some(_) => return Err(Error::invalid(Rule::BadField, "shape is not an array")),
        None => return Err(Error::invalid(Rule::MissingField, "no shape")),
    };
    if dims.len() > MAX_RANK {
        return Err(Error::invalid(Rule::BadField, format!("rank {} exceeds {MAX_RANK}", dims.len())));
    }
    let shape = dims
        .iter()
        .map(|d| {
            as_u64(d).ok_or_else(|| Error::invalid(Rule::BadField, "a shape dimension is not an unsigned integer"))
        })
        .collect::<Result<Vec<u64>>>()?;
    checked::numel(&shape)?;
    Ok(shape)
}

/// Stored bytes of a raw blob: dense bytes, or for the reference's sparse records their size.
fn stored_len_raw(info: &TensorInfo, form: BlobForm, nbytes: u64) -> Result<u64> {
    match (form, &info.layout) {
        (BlobForm::ReferenceSparse, Layout::Sparse { format, nnz }) => {
            reference_len(*format, info.dtype, &info.shape, *nnz)
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
fn parse_checksum(s: &str) -> Result<Option<Checksum>> {
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
}
