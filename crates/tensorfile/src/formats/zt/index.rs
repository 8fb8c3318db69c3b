//! The CBOR index: parsing it, and interpreting each entry's fields.
//!
//! The index is read in one pass: the fields zTensor defines are decoded straight into the
//! form they should have, and only a field of another form, or a custom key, is decoded as a
//! generic [`MetaValue`].

use std::borrow::Cow;

use super::cbor::{self, Decoder, MapKey, Typed};
use super::{dtype_from_name, zstd_frames};
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

/// A known key, told apart from custom keys without a copy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Name,
    Offset,
    Size,
    Dtype,
    Layout,
    Shape,
    Encoding,
    DataEndianness,
    Checksum,
    SparseFormat,
    Nnz,
}

impl Key {
    fn of(text: &[u8]) -> Option<Key> {
        Some(match text {
            b"name" => Key::Name,
            b"offset" => Key::Offset,
            b"size" => Key::Size,
            b"dtype" => Key::Dtype,
            b"layout" => Key::Layout,
            b"shape" => Key::Shape,
            b"encoding" => Key::Encoding,
            b"data_endianness" => Key::DataEndianness,
            b"checksum" => Key::Checksum,
            b"sparse_format" => Key::SparseFormat,
            b"nnz" => Key::Nnz,
            _ => return None,
        })
    }

    /// The key as written (`KNOWN_KEYS` lists them in the order of the variants).
    fn text(self) -> &'static str {
        KNOWN_KEYS[self as usize]
    }

    /// This key's bit in a set of keys.
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// One entry of the index as read: its known fields in the form zTensor gives them (text
/// borrowed from the index, integers, a shape's dimensions), or, when a field has another
/// form, as the generic value found, for [`interpret`] to refuse with the rule it breaks.
pub struct RawEntry<'a> {
    pub name: Cow<'a, str>,
    pub offset: u64,
    pub size: u64,
    dtype: Option<Typed<&'a str>>,
    layout: Option<Typed<&'a str>>,
    shape: Option<Typed<Vec<u64>>>,
    encoding: Option<Typed<&'a str>>,
    data_endianness: Option<Typed<&'a str>>,
    checksum: Option<Typed<&'a str>>,
    /// `sparse_format`, `nnz` and every custom key, in file order. The first two are fields
    /// of the `layout: "sparse"` form only; with another layout they are custom fields.
    rest: Vec<(Cow<'a, str>, MetaValue)>,
}

/// An index entry as plain fields: its name and every key but name, offset and size, with
/// generic values (how an entry that cannot be read is described).
pub struct IndexEntry {
    pub name: String,
    pub fields: Vec<(Cow<'static, str>, MetaValue)>,
}

impl RawEntry<'_> {
    /// This entry as plain fields.
    pub fn plain(&self) -> IndexEntry {
        fn text(v: &Typed<&str>) -> MetaValue {
            match v {
                Typed::Found(s) => MetaValue::from(*s),
                Typed::Other(v) => (**v).clone(),
            }
        }
        let mut fields: Vec<(Cow<'static, str>, MetaValue)> = Vec::new();
        let texts = [
            (Key::Dtype, &self.dtype),
            (Key::Layout, &self.layout),
            (Key::Encoding, &self.encoding),
            (Key::DataEndianness, &self.data_endianness),
            (Key::Checksum, &self.checksum),
        ];
        for (key, value) in texts {
            if let Some(v) = value {
                fields.push((Cow::Borrowed(key.text()), text(v)));
            }
        }
        if let Some(shape) = &self.shape {
            let value = match shape {
                Typed::Found(dims) => MetaValue::Array(dims.iter().map(|&d| MetaValue::Int(i128::from(d))).collect()),
                Typed::Other(v) => (**v).clone(),
            };
            fields.push((Cow::Borrowed(Key::Shape.text()), value));
        }
        fields.extend(self.rest.iter().map(|(k, v)| (Cow::Owned(k.to_string()), v.clone())));
        IndexEntry { name: self.name.to_string(), fields }
    }

    /// A field kept in `rest` (`sparse_format`, `nnz`).
    fn rest_field(&self, key: Key) -> Option<&MetaValue> {
        self.rest.iter().find(|(k, _)| k == key.text()).map(|(_, v)| v)
    }
}

/// Parse the index: an array of maps with text keys.
///
/// Errors come in the order a full decode then a check of each entry would find them: a
/// malformed CBOR item anywhere first, then too many entries, then the first entry (in file
/// order) that lacks a name, offset or size, or has a duplicate or non-text key.
pub fn parse(bytes: &[u8]) -> Result<Vec<RawEntry<'_>>> {
    let mut d = Decoder::new(bytes);
    let Some(len) = d.container(cbor::ARRAY)? else {
        // Not an array: decode it all the same, so that a malformed item is still reported as such.
        cbor::decode(bytes)?;
        return Err(Error::invalid(Rule::BadField, "the index is not a CBOR array"));
    };
    let mut entries = Vec::new();
    let mut count: u64 = 0;
    let mut first_problem = None;
    while d.has_next(len, count)? {
        let entry = parse_entry(&mut d, count, entries.last())?;
        count += 1;
        // Once the file is known to be refused, entries are only decoded, not kept.
        if first_problem.is_none() && entries.len() < MAX_ENTRIES {
            match entry {
                Ok(e) => entries.push(e),
                Err(problem) => first_problem = Some(problem),
            }
        }
    }
    d.finish()?;
    if count > MAX_ENTRIES as u64 {
        return Err(Error::invalid(Rule::TooManyEntries, format!("{count} entries (limit {MAX_ENTRIES})")));
    }
    match first_problem {
        Some(problem) => Err(problem),
        None => Ok(entries),
    }
}

/// One entry, decoded; inside the `Ok`, the entry or what makes it break the index's rules.
/// `previous` is the entry before, whose text fields this one most likely repeats.
fn parse_entry<'a>(
    d: &mut Decoder<'a>,
    position: u64,
    previous: Option<&RawEntry<'a>>,
) -> Result<Result<RawEntry<'a>>> {
    let bad_entry = |what: &str| Ok(Err(Error::invalid(Rule::BadField, format!("index entry {position} {what}"))));
    let Some(len) = d.container(cbor::MAP)? else {
        d.skip(1)?;
        return bad_entry("is not a map");
    };
    let (mut name, mut offset, mut size) = (None, None, None);
    let mut e = RawEntry {
        name: Cow::Borrowed(""),
        offset: 0,
        size: 0,
        dtype: None,
        layout: None,
        shape: None,
        encoding: None,
        data_endianness: None,
        checksum: None,
        rest: Vec::new(),
    };
    let mut seen = 0u16;
    // Of the keys met twice, the one that sorts first (the one reported).
    let mut twice: Option<&str> = None;
    let mut key_not_text = false;
    let mut done = 0;
    while d.has_next(len, done)? {
        done += 1;
        let known = match d.key(2, Key::of)? {
            MapKey::Known(k) => k,
            MapKey::Text(key) => {
                e.rest.push((key, d.item(2)?));
                continue;
            }
            MapKey::NotText => {
                key_not_text = true;
                d.skip(2)?;
                continue;
            }
        };
        if seen & known.bit() != 0 {
            twice = Some(twice.map_or(known.text(), |t| t.min(known.text())));
        }
        seen |= known.bit();
        match known {
            Key::Name => name = Some(d.text(2, None)?),
            Key::Offset => offset = Some(d.uint(2)?),
            Key::Size => size = Some(d.uint(2)?),
            Key::Dtype => e.dtype = Some(d.text(2, previous.and_then(|p| found(&p.dtype)))?),
            Key::Layout => e.layout = Some(d.text(2, previous.and_then(|p| found(&p.layout)))?),
            Key::Shape => e.shape = Some(d.uints(2)?),
            Key::Encoding => e.encoding = Some(d.text(2, previous.and_then(|p| found(&p.encoding)))?),
            Key::DataEndianness => {
                e.data_endianness = Some(d.text(2, previous.and_then(|p| found(&p.data_endianness)))?);
            }
            Key::Checksum => e.checksum = Some(d.text(2, None)?),
            Key::SparseFormat | Key::Nnz => e.rest.push((Cow::Borrowed(known.text()), d.item(2)?)),
        }
    }
    if key_not_text {
        return bad_entry("has a key that is not text");
    }
    // Custom keys met twice, by sorting (a hostile entry may hold many thousands of keys).
    if e.rest.len() > 1 {
        let mut keys: Vec<&str> = e.rest.iter().map(|(k, _)| k.as_ref()).collect();
        keys.sort_unstable();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            twice = Some(twice.map_or(w[0], |t| t.min(w[0])));
        }
    }
    if let Some(key) = twice {
        return Ok(Err(Error::invalid(Rule::BadField, format!("an index entry has the key {key:?} twice"))));
    }
    e.name = match name {
        Some(Typed::Found(s)) => Cow::Borrowed(s),
        Some(Typed::Other(v)) => match *v {
            MetaValue::Text(s) => Cow::Owned(s),
            _ => return Ok(Err(Error::invalid(Rule::BadField, "an index entry's name is not text"))),
        },
        None => return Ok(Err(Error::invalid(Rule::MissingField, "an index entry has no name"))),
    };
    let uint = |value: Option<Typed<u64>>, key: &str| match value {
        Some(Typed::Found(v)) => Ok(v),
        Some(Typed::Other(v)) => as_u64(&v).ok_or_else(|| {
            Error::invalid(Rule::BadField, format!("{key} is not an unsigned 64-bit integer"))
                .for_tensor(e.name.as_ref())
        }),
        None => Err(Error::invalid(Rule::MissingField, format!("no {key}")).for_tensor(e.name.as_ref())),
    };
    let fields = uint(offset, "offset").and_then(|o| Ok((o, uint(size, "size")?)));
    Ok(fields.map(|(offset, size)| RawEntry { offset, size, ..e }))
}

/// A text field's value, when it was found as one definite string.
fn found<'a>(field: &Option<Typed<&'a str>>) -> Option<&'a str> {
    match field {
        Some(Typed::Found(text)) => Some(text),
        _ => None,
    }
}

fn as_u64(v: &MetaValue) -> Option<u64> {
    match v {
        MetaValue::Int(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

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

/// Understand one entry. `stored` is its blob, already checked to lie in the file.
/// An error here makes this entry unreadable without refusing the file. The entry's shape
/// moves into the result; on an error the entry is left as it was.
pub fn interpret(e: &mut RawEntry<'_>, stored: &[u8]) -> Result<Interpreted> {
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
    let info = TensorInfo { name: e.name.to_string(), kind: Kind::Tensor, dtype, shape, layout, extra };
    match nbytes(e, &info, form, encoding) {
        Ok(nbytes) => {
            let storage = Storage { offset: e.offset, len: e.size, encoding, byte_order, checksum };
            Ok(Interpreted { info, storage, nbytes, form, unknown_checksum })
        }
        Err(error) => {
            // Given back (a shape converted from a generic array is the same numbers).
            e.shape = Some(Typed::Found(info.shape));
            Err(error)
        }
    }
}

/// The bytes reading `info` yields, once the entry's stored size is checked against them.
fn nbytes(e: &RawEntry<'_>, info: &TensorInfo, form: BlobForm, encoding: Encoding) -> Result<u64> {
    let nbytes = info.nbytes()?;
    if encoding == Encoding::Raw {
        let needed = stored_len_raw(info, form, nbytes)?;
        if e.size != needed {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("size is {} bytes but dtype {} and shape {:?} need {needed}", e.size, info.dtype, info.shape),
            ));
        }
    }
    Ok(nbytes)
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

    #[test]
    fn known_keys_match_their_variants() {
        for k in KNOWN_KEYS {
            assert_eq!(Key::of(k.as_bytes()).map(Key::text), Some(k));
        }
        assert!(Key::of(b"names").is_none());
    }

    /// An index of `entries`, each an indefinite map of text keys.
    fn index(entries: &[Vec<(&str, MetaValue)>]) -> Vec<u8> {
        let mut e = cbor::Encoder::default();
        e.array_header(entries.len() as u64);
        for entry in entries {
            e.map_begin_indefinite();
            for (k, v) in entry {
                e.text(k);
                e.value(v);
            }
            e.end_indefinite();
        }
        e.out
    }

    fn dense(name: &str) -> Vec<(&'static str, MetaValue)> {
        let name = MetaValue::from(name);
        vec![
            ("name", name),
            ("offset", MetaValue::Int(64)),
            ("size", MetaValue::Int(8)),
            ("dtype", "float32".into()),
            ("shape", MetaValue::Array(vec![MetaValue::Int(2)])),
            ("encoding", "raw".into()),
        ]
    }

    fn rule(bytes: &[u8]) -> (Rule, String) {
        let e = parse(bytes).err().unwrap();
        (e.rule().unwrap(), e.detail())
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
        let info = interpret(&mut entries[0], &[0; 8]).unwrap().info;
        let keys: Vec<&str> = info.extra.iter().map(|(k, _)| k.as_str()).collect();
        // Not a sparse layout: its fields are custom ones here.
        assert_eq!(keys, ["a", "sparse_format", "b", "nnz"]);
        assert_eq!(info.shape, [2]);
    }

    #[test]
    fn the_first_duplicate_key_in_sort_order_is_reported() {
        let twice = |keys: &[&'static str]| {
            let mut fields = dense("t");
            fields.extend(keys.iter().map(|&k| (k, MetaValue::Null)));
            rule(&index(&[fields]))
        };
        assert_eq!(
            twice(&["zz", "zz", "shape"]),
            (Rule::BadField, "an index entry has the key \"shape\" twice".into())
        );
        assert_eq!(twice(&["shape", "a", "a"]), (Rule::BadField, "an index entry has the key \"a\" twice".into()));
    }

    #[test]
    fn entry_problems_come_after_malformed_cbor() {
        let mut no_name = dense("t");
        no_name.remove(0);
        assert_eq!(rule(&index(&[no_name.clone(), dense("u")])).0, Rule::MissingField);
        // Where the second entry's break was, a reserved head: the whole index is malformed.
        let mut bytes = index(&[no_name, dense("u")]);
        if let Some(last) = bytes.last_mut() {
            *last = 0x1c;
        }
        assert_eq!(rule(&bytes).0, Rule::BadCbor);
    }

    #[test]
    fn a_refused_entry_keeps_its_shape_for_its_description() {
        let mut fields = dense("t");
        fields[2] = ("size", MetaValue::Int(9));
        let bytes = index(&[fields]);
        let mut entries = parse(&bytes).unwrap();
        assert_eq!(interpret(&mut entries[0], &[0; 9]).err().and_then(|e| e.rule()), Some(Rule::SizeMismatch));
        let plain = entries[0].plain();
        let shape = plain.fields.iter().find(|(k, _)| k == "shape").map(|(_, v)| v);
        assert_eq!(shape, Some(&MetaValue::Array(vec![MetaValue::Int(2)])));
    }
}
