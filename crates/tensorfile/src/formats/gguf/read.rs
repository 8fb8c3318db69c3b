//! Opening a GGUF file: its index parsed, then every tensor placed in the data region: its
//! offset a multiple of the alignment, its bytes inside the file, no two sharing bytes.
//! Tensors of plain types read as dense (zero-copy, swapped to little-endian in a big-endian
//! file); block types as their blocks, verbatim, in one `blocks` part.

use super::index::{self, Declared};
use super::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAX_NAME_BYTES, MAX_RANK_READ_BY_GGML};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::quant::{BLOCKS, GgmlType, Quant};
use crate::model::{ByteOrder, DType, Entry, Kind, Layout, MetaValue, Number, Storage, TensorData, TensorInfo};
use crate::source::{Bytes, Source};
use crate::swap;

/// An opened GGUF file.
pub struct GgufReader {
    src: Source,
    version: u32,
    order: ByteOrder,
    alignment: u64,
    /// Where the index ends (the data region starts at the next multiple of the alignment).
    index_end: u64,
    data_offset: u64,
    metadata: Vec<(String, MetaValue)>,
    /// Every tensor info in file order, with its byte size when its type is known and its
    /// shape fits it: what `check` lays out as ggml would.
    declared: Vec<(Declared, Option<u64>)>,
    catalog: Catalog,
}

/// The alignment of the data region and of every tensor: `general.alignment` when the file
/// sets it (a `u32`, a power of two, as ggml requires), else 32.
pub(super) fn alignment_of(metadata: &[(String, MetaValue)]) -> Result<u64> {
    let Some((_, value)) = metadata.iter().find(|(k, _)| k == ALIGNMENT_KEY) else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    match value {
        MetaValue::Number(Number::U32(a)) if a.is_power_of_two() => Ok(u64::from(*a)),
        MetaValue::Number(Number::U32(a)) => {
            Err(Error::invalid(Rule::BadMetadata, format!("{ALIGNMENT_KEY} {a} is not a power of two")))
        }
        other => {
            Err(Error::invalid(Rule::BadMetadata, format!("{ALIGNMENT_KEY} must be a u32, not {}", describe(other))))
        }
    }
}

/// What kind of value `v` is, in GGUF's words.
fn describe(v: &MetaValue) -> String {
    match v {
        MetaValue::Number(n) => n.type_name().to_string(),
        MetaValue::TypedArray(a) => format!("an array of {}", a.element_name()),
        MetaValue::Text(_) => "a string".into(),
        MetaValue::Bool(_) => "a bool".into(),
        other => other.to_json().to_string(),
    }
}

/// The logical dtype and layout of a tensor of ggml type `t`.
pub(super) fn model_of(t: GgmlType) -> (DType, Layout) {
    match t.plain() {
        Some(dtype) => (dtype, Layout::Dense),
        None => (DType::Float32, Layout::Quantized(Quant::Ggml(t))),
    }
}

impl GgufReader {
    /// Open a GGUF file (version 2 or 3, either byte order). Only its index is read (for a
    /// remote file, its first bytes, read again longer when the index is longer); tensors are
    /// read when asked for.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let index = index::read(&src)?;
        let alignment = alignment_of(&index.metadata)?;
        let index_end = index.end;
        let data_offset = checked::align_up(index_end, alignment)?;
        let order = index.header.order;
        let mut catalog = Catalog::default();
        let mut declared = Vec::with_capacity(index.infos.len());
        let mut spans = Vec::with_capacity(index.infos.len());
        for d in index.infos {
            let placed = place(&d, alignment, data_offset, src.len())?;
            let Some(t) = GgmlType::from_id(d.ggml_type) else {
                let e = Error::invalid(
                    Rule::UnknownDType,
                    format!("ggml type {}, which this library does not know", d.ggml_type),
                );
                catalog.push_unreadable(d.name.clone(), format!("ggml type {}", d.ggml_type), d.shape(), e);
                declared.push((d, None));
                continue;
            };
            let (dtype, layout) = model_of(t);
            let shape = d.shape();
            let nbytes = match TensorInfo::check(Kind::Tensor, dtype, &shape, &layout) {
                Ok(n) => n,
                Err(e) => {
                    catalog.push_unreadable(d.name.clone(), t.name().to_string(), shape, e);
                    declared.push((d, None));
                    continue;
                }
            };
            let end = checked::add(placed, nbytes, "tensor end").map_err(|e| e.for_tensor(&d.name))?;
            if end > src.len() {
                return Err(Error::invalid(
                    Rule::OutOfBounds,
                    format!("bytes {placed}..{end} run past the end of the file ({} bytes)", src.len()),
                )
                .for_tensor(&d.name));
            }
            spans.push((placed, end, declared.len()));
            // Blocks are stored as their producer built them; plain elements in the file's order.
            let stored_order = if layout == Layout::Dense { order } else { ByteOrder::Little };
            let storage = Storage::new(placed, nbytes).with_byte_order(stored_order);
            let info = TensorInfo::checked(d.name.clone(), Kind::Tensor, dtype, shape, layout);
            catalog.push(Entry::checked(info, nbytes, storage));
            declared.push((d, Some(nbytes)));
        }
        check_overlap(&mut spans, &declared)?;
        Ok(GgufReader {
            src,
            version: index.header.version,
            order,
            alignment,
            index_end,
            data_offset,
            metadata: index.metadata,
            declared,
            catalog,
        })
    }

    /// The version the file states (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The file's byte order.
    pub fn byte_order(&self) -> ByteOrder {
        self.order
    }

    /// The alignment of the data region and of every tensor in it.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Where the data region starts.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Where the index (header, key/values, tensor infos) ends.
    pub(super) fn index_end(&self) -> u64 {
        self.index_end
    }

    /// The file, to read again (update copies it).
    pub(super) fn source(&self) -> &Source {
        &self.src
    }

    /// The key/values, in file order.
    pub(super) fn metadata(&self) -> &[(String, MetaValue)] {
        &self.metadata
    }

    /// Every tensor info in file order, with its byte size when its type is known.
    pub(super) fn declared(&self) -> &[(Declared, Option<u64>)] {
        &self.declared
    }
}

/// Where the data of `d` starts in the file: its offset must be a multiple of the alignment.
fn place(d: &Declared, alignment: u64, data_offset: u64, file_len: u64) -> Result<u64> {
    if d.offset % alignment != 0 {
        return Err(Error::invalid(
            Rule::Misaligned,
            format!("data offset {} is not a multiple of the alignment {alignment}", d.offset),
        )
        .for_tensor(&d.name));
    }
    let at = checked::add(data_offset, d.offset, "tensor offset").map_err(|e| e.for_tensor(&d.name))?;
    if at > file_len {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("data at {at}, past the end of the file ({file_len} bytes)"),
        )
        .for_tensor(&d.name));
    }
    Ok(at)
}

/// No two tensors share a byte (tensors of no bytes share none).
fn check_overlap(spans: &mut [(u64, u64, usize)], declared: &[(Declared, Option<u64>)]) -> Result<()> {
    spans.sort_unstable();
    let mut last: Option<(u64, usize)> = None;
    for &(start, end, i) in spans.iter().filter(|s| s.0 < s.1) {
        if let Some((last_end, j)) = last {
            if start < last_end {
                let (a, b) = (&declared[j].0.name, &declared[i].0.name);
                return Err(Error::invalid(
                    Rule::Overlap,
                    format!("bytes {start}..{end} overlap those of {a:?}, which end at {last_end}"),
                )
                .for_tensor(b));
            }
        }
        if last.is_none_or(|(e, _)| end > e) {
            last = Some((end, i));
        }
    }
    Ok(())
}

impl FormatReader for GgufReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Gguf
    }

    fn summary(&self) -> FileSummary {
        let int = |v: u64| MetaValue::Int(i128::from(v));
        FileSummary {
            version: self.version.to_string(),
            metadata: self.metadata.clone(),
            details: vec![
                ("byte_order".into(), MetaValue::Text(self.order.name().into())),
                ("alignment".into(), int(self.alignment)),
                ("data_offset".into(), int(self.data_offset)),
            ],
            structure: None,
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let e = self.catalog.get(index)?;
        let bytes = self.src.range(e.storage().offset(), e.storage().len())?;
        if let Layout::Quantized(q) = e.info().layout() {
            return Ok(TensorData::quantized(q.clone(), vec![(BLOCKS, bytes)]));
        }
        let unit = e.info().dtype().swap_unit();
        if e.storage().byte_order() == ByteOrder::Big && unit > 1 {
            return Ok(TensorData::dense(Bytes::from_vec(swap::swapped(&bytes, unit))));
        }
        Ok(TensorData::dense(bytes))
    }

    /// What ggml checks when it loads a file, beyond what opening checks: at most 4
    /// dimensions, names shorter than 64 bytes, and tensors stored in the order of their infos,
    /// each right after the previous one padded to the alignment.
    fn check(&self) -> Vec<Error> {
        let mut problems = Vec::new();
        let mut expected = Some(0u64);
        for (d, nbytes) in &self.declared {
            if d.ne.len() > MAX_RANK_READ_BY_GGML {
                let e = Error::invalid(
                    Rule::BadField,
                    format!("{} dimensions: ggml reads at most {MAX_RANK_READ_BY_GGML}", d.ne.len()),
                );
                problems.push(e.for_tensor(&d.name));
            }
            if d.name.len() > MAX_NAME_BYTES {
                let e = Error::invalid(
                    Rule::BadField,
                    format!("a name of {} bytes: ggml reads at most {MAX_NAME_BYTES}", d.name.len()),
                );
                problems.push(e.for_tensor(&d.name));
            }
            // An unreadable tensor (reported already) has no size to lay the next one after.
            match (expected, nbytes) {
                (Some(at), Some(n)) if d.offset == at => {
                    expected = checked::align_up(at.saturating_add(*n), self.alignment).ok();
                }
                (Some(at), Some(_)) => {
                    let e = Error::invalid(
                        Rule::NotTiled,
                        format!(
                            "data at offset {}, where ggml expects it right after the previous tensor, at {at}",
                            d.offset
                        ),
                    );
                    problems.push(e.for_tensor(&d.name));
                    expected = None;
                }
                _ => expected = None,
            }
        }
        problems
    }
}
