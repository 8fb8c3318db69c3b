//! Opening a `.ptd` file.

use std::any::Any;
use std::collections::HashSet;

use super::header::Header;
use crate::error::{Error, Result, Rule};
use crate::flatbuf::{self, Schema, Table};
use crate::formats::executorch::{TensorLayout, flat_tensor_0_6_schema, flat_tensor_schema, prefix};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::{Entry, Kind, Layout, MetaValue, Storage, TensorData, TensorInfo, Unreadable};
use crate::source::{Bytes, SPECULATIVE_READ, Source};

/// An opened `.ptd` file.
///
/// Opening reads the header and the flatbuffer only; an entry's bytes are read by range when
/// it is read.
pub struct PtdReader {
    src: Source,
    /// The header and the flatbuffer (the file's first bytes).
    flatbuffer: Bytes,
    header: Header,
    root: Table,
    /// Whether the flatbuffer is of ExecuTorch 0.6's schema ([`flat_tensor_0_6_schema`]).
    v0_6: bool,
    catalog: Catalog,
    /// Per entry, its stored layout (for dim-ordered tensors).
    layouts: Vec<Option<TensorLayout>>,
}

/// Where one segment's bytes are, absolute in the file.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    pub offset: u64,
    pub size: u64,
}

/// The segments of a segment table, checked to lie within the segment data region.
pub fn segments(root: &Table, base: u64, data_size: u64) -> Result<Vec<Segment>> {
    root.tables("segments")?
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (offset, size) = (s.uint("offset")?, s.uint("size")?);
            let end = offset.checked_add(size).filter(|&e| e <= data_size);
            end.ok_or_else(|| {
                Error::invalid(
                    Rule::OutOfBounds,
                    format!("segment {i} at {offset} of {size} bytes runs past the segment data ({data_size} bytes)"),
                )
            })?;
            Ok(Segment { offset: base + offset, size })
        })
        .collect()
}

impl PtdReader {
    /// Open a `.ptd` file: check its header, decode its flatbuffer and index its named data.
    /// Entries whose description is broken are listed as unreadable; a broken file is an error.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let head = src.head(SPECULATIVE_READ)?;
        let header = Header::parse_head(&head, src.len())?;
        // Within the file: checked by the header.
        let fb_end = crate::checked::add(header.flatbuffer_offset, header.flatbuffer_size, "flatbuffer region")?;
        let fb = prefix(&src, &head, fb_end)?;
        let v0_6 = is_v0_6(&fb);
        let root = flatbuf::decode(if v0_6 { flat_tensor_0_6_schema() } else { flat_tensor_schema() }, &fb)?;
        let version = root.uint("version")?;
        if version != 0 {
            return Err(Error::invalid(Rule::BadField, format!("FlatTensor version {version}, expected 0")));
        }
        let segments = segments(&root, header.segment_base_offset, header.segment_data_size)?;
        let mut names = HashSet::new();
        let mut entries = Vec::new();
        let mut layouts = Vec::new();
        let mut unreadable = Vec::new();
        // ExecuTorch 0.6: tensors placed inside segments, then named blobs; today: named data.
        let tensors = if v0_6 { root.tables("tensors")? } else { Vec::new() };
        let described = tensors.into_iter().map(|t| (t, "fully_qualified_name", Placed::Within(t)));
        let named = root.tables("named_data")?.into_iter().map(|nd| (nd, "key", Placed::Whole(nd)));
        for (table, name_field, placed) in described.chain(named) {
            let key = table.req_str(name_field)?.to_string();
            if !names.insert(key.clone()) {
                return Err(Error::invalid(Rule::DuplicateName, format!("key {key:?} appears twice")).for_tensor(key));
            }
            match entry(table, &key, &segments, placed) {
                Ok((e, l)) => {
                    entries.push(e);
                    layouts.push(l);
                }
                Err(error) => unreadable.push(Unreadable::new(key, String::new(), Vec::new(), error)),
            }
        }
        Ok(PtdReader { src, flatbuffer: fb, header, root, v0_6, catalog: (entries, unreadable).into(), layouts })
    }

    /// The schema the flatbuffer was decoded with: today's, or ExecuTorch 0.6's.
    pub fn schema(&self) -> &'static Schema {
        if self.v0_6 { flat_tensor_0_6_schema() } else { flat_tensor_schema() }
    }

    /// Where the file's bytes come from.
    #[cfg(any(test, feature = "internals"))]
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// The `FH01` header as read (checked against the file's length).
    #[cfg(any(test, feature = "internals"))]
    pub fn header(&self) -> Header {
        self.header
    }

    /// The decoded flatbuffer.
    pub fn root(&self) -> &Table {
        &self.root
    }
}

/// Whether the flatbuffer `fb` is of ExecuTorch 0.6's schema: its root table has more than
/// the three fields of today's `FlatTensor` (0.6 wrote five: version, tensor_alignment,
/// tensors, segments, named_data). Both say version 0, so the vtable tells them apart; a
/// flatbuffer too broken to tell is left to today's schema, whose decoder names the fault.
fn is_v0_6(fb: &[u8]) -> bool {
    let u32_at = |at: usize| fb.get(at..at.checked_add(4)?).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let fields = || -> Option<usize> {
        let table = usize::try_from(u32_at(0)?).ok()?;
        let back = i64::from(u32_at(table)? as i32);
        let vtable = usize::try_from(i64::try_from(table).ok()?.checked_sub(back)?).ok()?;
        let len = fb.get(vtable..vtable.checked_add(2)?)?;
        Some(usize::from(u16::from_le_bytes([len[0], len[1]])).saturating_sub(4) / 2)
    };
    fields().is_some_and(|n| n > 3)
}

/// Where an entry's bytes are in its segment.
#[derive(Clone, Copy)]
enum Placed<'a> {
    /// The whole segment: a named-data entry, a tensor when it has a `tensor_layout`.
    Whole(&'a Table),
    /// At `offset` inside the segment, as many bytes as its layout takes: a tensor of
    /// ExecuTorch 0.6, whose layout fields are its own.
    Within(&'a Table),
}

/// One entry: a tensor when it has a layout, else a blob (the whole of its segment).
fn entry(t: &Table, key: &str, segments: &[Segment], placed: Placed) -> Result<(Entry, Option<TensorLayout>)> {
    let index = t.uint("segment_index")?;
    let seg = usize::try_from(index).ok().and_then(|i| segments.get(i)).ok_or_else(|| {
        Error::invalid(Rule::OutOfBounds, format!("segment_index {index} out of range ({} segments)", segments.len()))
    })?;
    let (layout_table, within) = match placed {
        Placed::Whole(nd) => (nd.table("tensor_layout")?, 0),
        Placed::Within(tensor) => (Some(tensor), tensor.uint("offset")?),
    };
    let room = seg.size.checked_sub(within).ok_or_else(|| {
        Error::invalid(Rule::OutOfBounds, format!("offset {within} lies past its segment's {} bytes", seg.size))
    })?;
    let (info, layout) = match layout_table {
        Some(t) => {
            let l = TensorLayout::from_table(t)?;
            let nbytes = l.nbytes()?;
            if nbytes > room {
                return Err(Error::invalid(
                    Rule::SizeMismatch,
                    format!("layout needs {nbytes} bytes, its segment holds {room} from offset {within}"),
                ));
            }
            let layout = if l.is_contiguous() { Layout::Dense } else { Layout::DimOrder(l.dim_order.clone()) };
            (TensorInfo::new(key, Kind::Tensor, l.dtype, l.shape.clone(), layout)?, Some(l))
        }
        None => (TensorInfo::blob(key, seg.size), None),
    };
    let storage = Storage::new(seg.offset + within, info.nbytes()?);
    Ok((Entry::new(info, storage)?, layout.filter(|l| !l.is_contiguous())))
}

impl FormatReader for PtdReader {
    fn format(&self) -> Format {
        Format::Ptd
    }

    fn summary(&self) -> FileSummary {
        let h = self.header;
        let segments = self.root.vector("segments").map_or(0, <[_]>::len);
        let int = |v: u64| MetaValue::Int(i128::from(v));
        let mut details = vec![
            ("flatbuffer_bytes".into(), int(h.flatbuffer_size)),
            ("segment_base_offset".into(), int(h.segment_base_offset)),
            ("segment_data_bytes".into(), int(h.segment_data_size)),
            ("segments".into(), int(segments as u64)),
        ];
        if self.v0_6 {
            details.push(("schema".into(), MetaValue::Text("ExecuTorch 0.6 (tensors inside segments)".into())));
            details.push(("tensor_alignment".into(), int(self.root.uint("tensor_alignment").unwrap_or(0))));
        }
        FileSummary { version: "FT01".into(), metadata: Vec::new(), structure: None, details }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let e = self.catalog.get(index)?;
        let (offset, len) = (e.storage().offset(), e.storage().len());
        let stored = match offset.checked_add(len) {
            // Segments follow the flatbuffer, but a hostile file may place one inside it.
            Some(end) if end <= self.flatbuffer.len() as u64 => self.flatbuffer.slice(offset, len)?,
            _ => self.src.range(offset, len)?,
        };
        Ok(TensorData::dense(match &self.layouts[index] {
            Some(l) => Bytes::from_vec(l.to_row_major(&stored)),
            None => stored,
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
