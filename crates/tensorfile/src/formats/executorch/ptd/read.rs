//! Opening a `.ptd` file.

use std::any::Any;
use std::collections::HashSet;

use super::header::Header;
use crate::error::{Error, Result, Rule};
use crate::flatbuf::{self, Table};
use crate::formats::executorch::{TensorLayout, flat_tensor_schema, prefix};
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
        let root = flatbuf::decode(flat_tensor_schema(), &fb)?;
        let version = root.uint("version")?;
        if version != 0 {
            return Err(Error::invalid(Rule::BadField, format!("FlatTensor version {version}, expected 0")));
        }
        let segments = segments(&root, header.segment_base_offset, header.segment_data_size)?;
        let mut names = HashSet::new();
        let mut entries = Vec::new();
        let mut layouts = Vec::new();
        let mut unreadable = Vec::new();
        for nd in root.tables("named_data")? {
            let key = nd.req_str("key")?.to_string();
            if !names.insert(key.clone()) {
                return Err(Error::invalid(Rule::DuplicateName, format!("key {key:?} appears twice")).for_tensor(key));
            }
            match entry(nd, &key, &segments) {
                Ok((e, l)) => {
                    entries.push(e);
                    layouts.push(l);
                }
                Err(error) => unreadable.push(Unreadable::new(key, String::new(), Vec::new(), error)),
            }
        }
        Ok(PtdReader { src, flatbuffer: fb, header, root, catalog: (entries, unreadable).into(), layouts })
    }

    /// Where the file's bytes come from.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// The `FH01` header as read (checked against the file's length).
    pub fn header(&self) -> Header {
        self.header
    }

    /// The decoded flatbuffer.
    pub fn root(&self) -> &Table {
        &self.root
    }
}

/// One named-data entry: a tensor when it has a layout, else a blob.
fn entry(nd: &Table, key: &str, segments: &[Segment]) -> Result<(Entry, Option<TensorLayout>)> {
    let index = nd.uint("segment_index")?;
    let seg = usize::try_from(index).ok().and_then(|i| segments.get(i)).ok_or_else(|| {
        Error::invalid(Rule::OutOfBounds, format!("segment_index {index} out of range ({} segments)", segments.len()))
    })?;
    let (info, layout) = match nd.table("tensor_layout")? {
        Some(t) => {
            let l = TensorLayout::from_table(t)?;
            let nbytes = l.nbytes()?;
            if nbytes > seg.size {
                return Err(Error::invalid(
                    Rule::SizeMismatch,
                    format!("layout needs {nbytes} bytes, its segment holds {}", seg.size),
                ));
            }
            let layout = if l.is_contiguous() { Layout::Dense } else { Layout::DimOrder(l.dim_order.clone()) };
            (TensorInfo::new(key, Kind::Tensor, l.dtype, l.shape.clone(), layout)?, Some(l))
        }
        None => (TensorInfo::blob(key, seg.size), None),
    };
    let storage = Storage::new(seg.offset, info.nbytes()?);
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
        FileSummary {
            version: "FT01".into(),
            metadata: Vec::new(),
            structure: None,
            details: vec![
                ("flatbuffer_bytes".into(), int(h.flatbuffer_size)),
                ("segment_base_offset".into(), int(h.segment_base_offset)),
                ("segment_data_bytes".into(), int(h.segment_data_size)),
                ("segments".into(), int(segments as u64)),
            ],
        }
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
