//! Opening a `.pte` file: its program, and every tensor with data as an entry.

use std::any::Any;

use std::collections::HashMap;

use super::delegates::{self, BlobType, DelegateGraph};
use super::program::{Origin, Program, ProgramTensor};
use super::{report, summary, validate};
use crate::error::{Error, Hint, Result, Rule};
use crate::formats::executorch::TensorLayout;
use crate::formats::executorch::ptd::PtdReader;
use crate::formats::{Catalog, FileSummary, Format, FormatReader, Structure};
use crate::model::{Entry, Kind, Layout, MetaValue, Storage, TensorData, TensorInfo};
use crate::source::{self as src, Bytes};

/// An opened `.pte` file, with the `.ptd` holding its external tensors when one is given.
///
/// Opening reads the headers and the flatbuffer only; segment data (constants, mutable
/// state, named data, delegate payloads) is read by range when asked for.
pub struct PteReader {
    src: src::Source,
    program: Program,
    /// The program tensor behind each entry.
    tensors: Vec<ProgramTensor>,
    catalog: Catalog,
    data: Option<PtdReader>,
    /// The XNNPACK delegates, decoded.
    xnnpack: Vec<DelegateGraph>,
    /// What the XNNPACK payloads say of the named-data blobs, by key.
    blob_types: HashMap<String, BlobType>,
    /// Why the delegate payloads could not be read at all, if so.
    payload_error: Option<Error>,
}

fn storage(offset: u64, len: u64) -> Storage {
    Storage::new(offset, len)
}

fn layout_of(l: &TensorLayout) -> Layout {
    if l.is_contiguous() { Layout::Dense } else { Layout::DimOrder(l.dim_order.clone()) }
}

impl PteReader {
    /// Open a program; `data` is the `.ptd` its external tensors live in.
    pub fn open(src: impl Into<src::Source>, data: Option<PtdReader>) -> Result<Self> {
        let src = src.into();
        let program = Program::open(&src)?;
        let (tensors, broken) = program.tensors()?;
        let mut reader = PteReader {
            src,
            program,
            tensors: Vec::new(),
            catalog: Catalog::default(),
            data,
            xnnpack: Vec::new(),
            blob_types: HashMap::new(),
            payload_error: None,
        };
        match delegates::decode_all(&reader.program, &reader.src) {
            Ok((graphs, types)) => (reader.xnnpack, reader.blob_types) = (graphs, types),
            Err(e) => reader.payload_error = Some(e),
        }
        for b in broken {
            reader.catalog.push_unreadable(b.name, String::new(), Vec::new(), b.error);
        }
        for t in tensors {
            match reader.entry(&t) {
                Ok(e) => {
                    reader.catalog.push(e);
                    reader.tensors.push(t);
                }
                Err(error) => {
                    let (dtype, shape) = t
                        .layout
                        .as_ref()
                        .map_or((String::new(), Vec::new()), |l| (l.dtype.name().into(), l.shape.clone()));
                    reader.catalog.push_unreadable(t.name, dtype, shape, error);
                }
            }
        }
        Ok(reader)
    }

    /// The decoded program: its flatbuffer, headers and segments.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The program's XNNPACK delegates (backend id `XnnpackBackend`), in method and delegate
    /// order, each with its decoded [`Graph`](crate::formats::executorch::xnnpack::Graph) or
    /// the reason it could not be decoded.
    pub fn xnnpack_graphs(&self) -> &[DelegateGraph] {
        &self.xnnpack
    }

    /// The program tensor behind each entry (same order as `entries`).
    pub fn program_tensors(&self) -> &[ProgramTensor] {
        &self.tensors
    }

    /// Where the file's bytes come from.
    pub fn source(&self) -> &src::Source {
        &self.src
    }

    /// The whole file, when it is local (mapped or in memory); a remote program is read by
    /// range ([`PteReader::source`]).
    #[cfg(any(test, feature = "internals"))]
    pub fn bytes(&self) -> Result<&Bytes> {
        self.src
            .as_local()
            .ok_or_else(|| Error::unsupported("a remote program is read by range, not whole: use its source's ranges"))
    }

    /// Bytes `offset..offset + len` of the file: a slice of the flatbuffer already in memory
    /// when they lie inside it, else read from the source (local: a slice of the map).
    fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        let fb = &self.program.flatbuffer;
        match offset.checked_add(len) {
            Some(end) if end <= fb.len() as u64 => fb.slice(offset, len),
            _ => self.src.range(offset, len),
        }
    }

    /// The bytes of each delegate payload, by delegate: (method, delegate index, backend id,
    /// bytes). Payloads in segments are read by range (a remote program: fetched).
    pub fn delegate_payloads(&self) -> Result<Vec<(String, usize, String, Bytes)>> {
        let inline = self.program.root.tables("backend_delegate_data")?;
        let mut out = Vec::new();
        // Payloads in segments, by their place in `out`: read together (remote: concurrently).
        let mut in_segments: Vec<(usize, (u64, u64))> = Vec::new();
        for plan in self.program.root.tables("execution_plan")? {
            let method = plan.str("name")?.unwrap_or("").to_string();
            for (i, d) in plan.tables("delegates")?.iter().enumerate() {
                let id = d.str("id")?.unwrap_or("").to_string();
                let processed = d.table("processed")?.ok_or_else(|| {
                    Error::invalid(Rule::MissingField, format!("delegate {i} of {method} has no data"))
                })?;
                let index = processed.uint("index")?;
                let bytes = if processed.int("location")? == 0 {
                    let d = usize::try_from(index).ok().and_then(|i| inline.get(i)).ok_or_else(|| {
                        Error::invalid(
                            Rule::OutOfBounds,
                            format!("inline delegate data {index} out of range ({})", inline.len()),
                        )
                    })?;
                    d.bytes("data")?
                } else {
                    in_segments.push((out.len(), self.program.segment(index)?));
                    Bytes::from_vec(Vec::new())
                };
                out.push((method.clone(), i, id, bytes));
            }
        }
        let wanted: Vec<(u64, u64)> = in_segments.iter().map(|&(_, r)| r).collect();
        for ((at, _), bytes) in in_segments.iter().zip(self.src.ranges(&wanted)?) {
            out[*at].3 = bytes;
        }
        Ok(out)
    }

    /// The program described for `info` (`summary`).
    fn description(&self) -> Structure {
        summary::describe(&self.program, &self.tensors, &self.catalog, &self.xnnpack)
    }

    /// The report's sections of the program, from its description.
    fn report(&self, description: &serde_json::Value) -> Vec<crate::describe::Section> {
        report::sections(&self.program, self.src.len(), &self.tensors, self.catalog.entries(), description)
    }

    fn entry(&self, t: &ProgramTensor) -> Result<Entry> {
        let (info, store) = match (&t.source, &t.layout) {
            (Origin::NamedData { key }, _) => {
                let (offset, size) = self.program.named_data_segment(key)?;
                delegates::blob_entry(key, offset, size, self.blob_types.get(key))?
            }
            (Origin::External { fqn }, Some(l)) => {
                let data = self.data.as_ref().ok_or_else(|| {
                    Error::unsupported("external tensor: its bytes are in a .ptd file").with_hint(Hint::ProgramData)
                })?;
                let e = external_entry(data, fqn, l)?;
                (e.info().clone(), e.storage().clone())
            }
            (source, Some(l)) => {
                let nbytes = l.nbytes()?;
                let offset = match source {
                    Origin::Constant { buffer } if !self.program.constants_in_segment()? => {
                        self.program.offset_in_file(&self.program.inline_constant(*buffer, nbytes)?)?
                    }
                    Origin::Constant { buffer } => self.program.constant_range(*buffer, nbytes)?.0,
                    Origin::Mutable { list, buffer } => self.program.mutable_range(*list, *buffer, nbytes)?.0,
                    _ => unreachable!("named data and external handled above"),
                };
                let info = TensorInfo::new(&t.name, Kind::Tensor, l.dtype, l.shape.clone(), layout_of(l))?;
                (info, storage(offset, nbytes))
            }
            (_, None) => return Err(Error::invalid(Rule::MissingField, "tensor without a layout")),
        };
        // Provenance first, then what the reader found (a blob's XNNPACK type).
        let mut extra = provenance(t);
        extra.extend_from_slice(info.extra());
        Entry::new(info.with_name(t.name.clone()).with_extra(extra), store)
    }
}

/// Where a program tensor comes from, shown with its entry: `source` (constant, mutable,
/// external, named_data), the buffer index, and the first method and value using it.
fn provenance(t: &ProgramTensor) -> Vec<(String, MetaValue)> {
    let int = |v: u64| MetaValue::Int(i128::from(v));
    let mut extra = vec![("source".to_string(), MetaValue::from(t.source.kind()))];
    match &t.source {
        Origin::Constant { buffer } | Origin::Mutable { buffer, .. } => {
            extra.push(("buffer_index".into(), int(*buffer)))
        }
        Origin::External { .. } | Origin::NamedData { .. } => {}
    }
    if let Some((method, value)) = &t.used_by {
        extra.push(("method".into(), MetaValue::from(method.as_str())));
        extra.push(("value_index".into(), int(*value as u64)));
    }
    extra
}

/// The `.ptd` entry for external tensor `fqn`, which must match the program's declaration
/// exactly (the runtime checks scalar type, sizes and dim order).
fn external_entry<'a>(data: &'a PtdReader, fqn: &str, l: &TensorLayout) -> Result<&'a Entry> {
    let e = data
        .entries()
        .iter()
        .find(|e| e.info().name() == fqn)
        .ok_or_else(|| Error::invalid(Rule::MissingField, format!("the .ptd has no entry {fqn:?}")))?;
    let dim_order: Vec<u8> = match e.info().layout() {
        Layout::DimOrder(o) => o.clone(),
        _ => (0..e.info().shape().len() as u8).collect(),
    };
    if e.info().dtype() != l.dtype || e.info().shape() != l.shape || dim_order != l.dim_order {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!(
                "the .ptd holds {} {:?} (dim order {dim_order:?}), the program expects {} {:?} (dim order {:?})",
                e.info().dtype(),
                e.info().shape(),
                l.dtype,
                l.shape,
                l.dim_order
            ),
        ));
    }
    Ok(e)
}

impl FormatReader for PteReader {
    fn format(&self) -> Format {
        Format::Pte
    }

    fn summary(&self) -> FileSummary {
        let l = self.program.layout;
        let int = |v: u64| MetaValue::Int(i128::from(v));
        FileSummary {
            version: "ET12".into(),
            metadata: Vec::new(),
            details: vec![
                ("program_bytes".into(), int(l.program_size)),
                ("extended_header_bytes".into(), int(u64::from(l.extended_length))),
                ("segment_base_offset".into(), int(l.segment_base_offset)),
                ("segment_data_bytes".into(), int(l.segment_data_size)),
                ("segments".into(), int(self.program.segments.len() as u64)),
            ],
            structure: Some(self.description()),
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let (e, t) = self
            .catalog
            .entries()
            .get(index)
            .zip(self.tensors.get(index))
            .ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        if let Origin::External { fqn } = &t.source {
            let data = self.data.as_ref().ok_or_else(|| Error::unsupported("external tensor without its .ptd"))?;
            let i = data.entries().iter().position(|d| d.info().name() == fqn).ok_or_else(|| Error::not_found(fqn))?;
            return data.read(i, verify);
        }
        let stored = self.range(e.storage().offset(), e.storage().len())?;
        Ok(TensorData::dense(match &t.layout {
            Some(l) if !l.is_contiguous() => Bytes::from_vec(l.to_row_major(&stored)),
            _ => stored,
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn check(&self) -> Vec<Error> {
        let mut out = validate::check(&self.program);
        out.extend(delegates::problems(&self.xnnpack, self.catalog.entries()));
        if let Some(e) = &self.payload_error {
            out.push(e.clone());
        }
        out
    }

    fn report_sections(&self, description: Option<&Structure>) -> Vec<crate::describe::Section> {
        match description {
            Some(d) => self.report(&d.json),
            None => self.report(&self.description().json),
        }
    }
}
