//! Opening a safetensors file.

use std::borrow::Cow;

use serde_json::Value;

use super::dtype_from_name;
use super::header::{Field, Header, HeaderValue, Key};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::limits::{MAX_RANK, MAX_SAFETENSORS_HEADER};
use crate::model::{Entry, Kind, Layout, MetaValue, Storage, TensorData, TensorInfo, Unreadable};
use crate::source::{SPECULATIVE_READ, Source};

/// An opened safetensors file.
pub struct SafetensorsReader {
    src: Source,
    header_len: u64,
    metadata: Vec<(String, MetaValue)>,
    catalog: Catalog,
}

/// One tensor's header fields, before its dtype and size are checked.
struct Declared {
    name: String,
    dtype: Cow<'static, str>,
    shape: Vec<u64>,
    begin: u64,
    end: u64,
    extra: Vec<(String, MetaValue)>,
}

fn bad_field(name: &str, what: &str) -> Error {
    Error::invalid(Rule::BadField, what.to_string()).for_tensor(name)
}

fn declared(name: String, value: HeaderValue) -> Result<Declared> {
    let HeaderValue::Fields(fields) = value else {
        return Err(bad_field(&name, "header entry is not an object"));
    };
    let mut dtype = None;
    let mut shape = None;
    let mut offsets = None;
    let mut extra = Vec::new();
    for (k, v) in fields {
        match k {
            Key::Dtype => {
                dtype = Some(match v {
                    Field::DType(s) => Cow::Borrowed(s),
                    Field::Text(s) | Field::Other(serde_json::Value::String(s)) => Cow::Owned(s),
                    _ => return Err(bad_field(&name, "dtype is not a string")),
                })
            }
            Key::Shape => {
                let dims = match v {
                    Field::Numbers(d) if d.len() > MAX_RANK => {
                        return Err(bad_field(&name, &format!("rank {} exceeds {MAX_RANK}", d.len())));
                    }
                    Field::Numbers(d) => d,
                    Field::Pair(a, b) => vec![a, b],
                    Field::Other(serde_json::Value::Array(a)) if a.len() > MAX_RANK => {
                        return Err(bad_field(&name, &format!("rank {} exceeds {MAX_RANK}", a.len())));
                    }
                    Field::Other(serde_json::Value::Array(_)) => {
                        return Err(bad_field(&name, "a shape dimension is not an unsigned integer"));
                    }
                    _ => return Err(bad_field(&name, "shape is not an array")),
                };
                shape = Some(dims);
            }
            Key::DataOffsets => {
                let Field::Pair(begin, end) = v else {
                    return Err(bad_field(&name, "data_offsets is not a pair of unsigned integers"));
                };
                offsets = Some((begin, end));
            }
            Key::Other(k) => extra.push((k, MetaValue::from_json(&v.into_json()))),
        }
    }
    let missing = |f: &str| Error::invalid(Rule::MissingField, format!("no {f}")).for_tensor(&name);
    let dtype = dtype.ok_or_else(|| missing("dtype"))?;
    let shape = shape.ok_or_else(|| missing("shape"))?;
    let (begin, end) = offsets.ok_or_else(|| missing("data_offsets"))?;
    if end < begin {
        return Err(Error::invalid(Rule::BadField, format!("data_offsets [{begin}, {end}] end before they begin"))
            .for_tensor(&name));
    }
    Ok(Declared { name, dtype, shape, begin, end, extra })
}

fn metadata(value: Value) -> Result<Vec<(String, MetaValue)>> {
    let Value::Object(map) = value else {
        return Err(Error::invalid(Rule::BadMetadata, "__metadata__ is not an object"));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, MetaValue::Text(s))),
            _ => Err(Error::invalid(Rule::BadMetadata, format!("__metadata__ value of {k:?} is not a string"))),
        })
        .collect()
}

/// Tensors must tile the data region: sorted by offset, each starts where the previous ended,
/// the first at 0 and the last ending at the end of the file.
fn check_tiling(declared: &[Declared], data_len: u64) -> Result<()> {
    let mut spans: Vec<(u64, u64, &str)> = declared.iter().map(|d| (d.begin, d.end, d.name.as_str())).collect();
    spans.sort_unstable();
    let mut at = 0u64;
    for (begin, end, name) in spans {
        if begin < at {
            return Err(Error::invalid(
                Rule::Overlap,
                format!("bytes {begin}..{end} overlap the previous tensor (which ends at {at})"),
            )
            .for_tensor(name));
        }
        if begin > at {
            return Err(Error::invalid(
                Rule::NotTiled,
                format!("hole in the data: bytes {at}..{begin} belong to no tensor"),
            )
            .for_tensor(name));
        }
        if end > data_len {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!("bytes {begin}..{end} run past the data region ({data_len} bytes)"),
            )
            .for_tensor(name));
        }
        at = end;
    }
    if at != data_len {
        return Err(Error::invalid(Rule::NotTiled, format!("{} bytes after the last tensor", data_len - at)));
    }
    Ok(())
}

impl SafetensorsReader {
    /// The file, to read again (`meta` copies its data region).
    pub(super) fn source(&self) -> &Source {
        &self.src
    }

    /// The length of the JSON header (after the 8 bytes that state it).
    pub(super) fn header_len(&self) -> u64 {
        self.header_len
    }

    /// Open a safetensors file. Only its header is read (for a remote file: one speculative
    /// read of its start, and a second when the header is longer); tensors are read when asked
    /// for.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let len = src.len();
        let head = src.head(SPECULATIVE_READ)?;
        let header_len = crate::cursor::u64_le_at(&head, 0, "header length")?;
        if header_len > MAX_SAFETENSORS_HEADER {
            return Err(Error::invalid(
                Rule::HeaderTooLarge,
                format!("header of {header_len} bytes (limit {MAX_SAFETENSORS_HEADER})"),
            ));
        }
        if header_len > len - 8 {
            return Err(Error::invalid(
                Rule::Truncated,
                format!("header of {header_len} bytes, but only {} follow", len - 8),
            ));
        }
        let raw = src.range(8, header_len)?;
        let text = std::str::from_utf8(&raw).map_err(|e| Error::invalid(Rule::BadUtf8, format!("header: {e}")))?;
        if !text.starts_with('{') {
            return Err(Error::invalid(Rule::BadJson, "header does not start with '{'"));
        }
        let Header(pairs) = serde_json::from_str(text).map_err(|e| {
            let rule = if e.to_string().contains("recursion limit") { Rule::TooDeep } else { Rule::BadJson };
            Error::invalid(rule, format!("header: {e}"))
        })?;
        Catalog::check_count(pairs.len() as u64)?;
        // Duplicate keys, found by sorting (no set of copied names to build).
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        order.sort_unstable_by(|&a, &b| pairs[a].0.cmp(&pairs[b].0));
        if let Some(w) = order.windows(2).find(|w| pairs[w[0]].0 == pairs[w[1]].0) {
            let k = &pairs[w[0]].0;
            return Err(Error::invalid(Rule::DuplicateName, format!("header has the key {k:?} twice")).for_tensor(k));
        }
        let mut meta = Vec::new();
        let mut tensors = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match v {
                HeaderValue::Other(v) if k == "__metadata__" => meta = metadata(v)?,
                v => tensors.push(declared(k, v)?),
            }
        }
        let data_start = 8 + header_len;
        check_tiling(&tensors, len - data_start)?;
        tensors.sort_by_key(|d| (d.begin, d.end));

        let mut entries = Vec::with_capacity(tensors.len());
        let mut unreadable = Vec::new();
        for d in tensors {
            match entry(d, data_start) {
                Ok(e) => entries.push(e),
                Err(failed) => {
                    let (d, error) = *failed;
                    unreadable.push(Unreadable::new(d.name, d.dtype.into_owned(), d.shape, error));
                }
            }
        }
        Ok(SafetensorsReader { src, header_len, metadata: meta, catalog: (entries, unreadable).into() })
    }
}

/// The entry a declaration describes, or the declaration back with what is wrong with it.
fn entry(d: Declared, data_start: u64) -> Result<Entry, Box<(Declared, Error)>> {
    let Some(dtype) = dtype_from_name(&d.dtype) else {
        let e = Error::invalid(Rule::UnknownDType, format!("unknown dtype {:?}", d.dtype));
        return Err(Box::new((d, e)));
    };
    match checked_entry(dtype, &d, data_start) {
        Ok((nbytes, storage)) => {
            // Checked by checked_entry, which keeps `d` to report it when the check fails.
            let info = TensorInfo::checked(d.name, Kind::Tensor, dtype, d.shape, Layout::Dense).with_extra(d.extra);
            Ok(Entry::checked(info, nbytes, storage))
        }
        Err(e) => Err(Box::new((d, e))),
    }
}

fn checked_entry(dtype: crate::DType, d: &Declared, data_start: u64) -> Result<(u64, Storage)> {
    // The rank is checked as the header is parsed; then what TensorInfo::new checks.
    let nbytes = TensorInfo::check(Kind::Tensor, dtype, &d.shape, &Layout::Dense)?;
    if nbytes != d.end - d.begin {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!(
                "data_offsets span {} bytes but dtype {dtype} and shape {:?} need {nbytes}",
                d.end - d.begin,
                d.shape
            ),
        ));
    }
    let storage = Storage::new(checked::add(data_start, d.begin, "tensor offset")?, nbytes);
    Ok((nbytes, storage))
}

impl FormatReader for SafetensorsReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Safetensors
    }

    fn summary(&self) -> FileSummary {
        FileSummary {
            version: String::new(),
            metadata: self.metadata.clone(),
            structure: None,
            details: vec![("header_bytes".into(), MetaValue::Int(i128::from(self.header_len)))],
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let e = self.catalog.get(index)?;
        Ok(TensorData::dense(self.src.range(e.storage().offset(), e.storage().len())?))
    }
}
