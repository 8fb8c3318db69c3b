//! The decoded program: its segments, and the tensors whose bytes the file (or a `.ptd`)
//! holds, each with its stable name.
//!
//! Names (constants carry none inside a `.pte`; see docs/executorch.md):
//! - a constant (`data_buffer_idx = k > 0`, no `allocation_info`): `constant.<k>`;
//! - mutable initial state (`data_buffer_idx = k > 0` with `allocation_info`): its
//!   fully qualified name when it has one, else `mutable.<k>` (`mutable.<list>.<k>` for
//!   mutable segment lists other than the first);
//! - an external tensor (`location = EXTERNAL`): its fully qualified name;
//! - named data: its key.

use std::collections::HashSet;

use super::header::HeaderLayout;
use crate::error::{Error, Result, Rule};
use crate::flatbuf::{self, Table};
use crate::formats::executorch::{TensorLayout, prefix, program_schema};
use crate::source::{self, Bytes};

/// Where a program tensor's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A constant of the program, stored in the constant segment (or inline in the flatbuffer).
    Constant {
        /// Its `data_buffer_idx`, from 1.
        buffer: u64,
    },
    /// The initial value of mutable state, stored in a mutable data segment.
    Mutable {
        /// Which list of `mutable_data_segments`, from 0.
        list: u64,
        /// Its `data_buffer_idx` in that list, from 1.
        buffer: u64,
    },
    /// A tensor whose bytes a `.ptd` file holds, under its fully qualified name.
    External {
        /// The fully qualified name, the key in the `.ptd`.
        fqn: String,
    },
    /// An untyped blob of the program's `named_data`, stored in a segment.
    NamedData {
        /// The blob's key.
        key: String,
    },
}

impl Origin {
    /// `constant`, `mutable`, `external` or `named_data`, as `info` and `ls` show it.
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::Constant { .. } => "constant",
            Origin::Mutable { .. } => "mutable",
            Origin::External { .. } => "external",
            Origin::NamedData { .. } => "named_data",
        }
    }
}

/// A tensor (or named blob) of the program with data.
#[derive(Debug, Clone)]
pub struct ProgramTensor {
    /// The tensor's stable name (see the module's documentation).
    pub name: String,
    /// Where its bytes are.
    pub source: Origin,
    /// Type, shape and dim order; `None` for named data, which is an untyped blob.
    pub layout: Option<TensorLayout>,
    /// The first method and value index that use it (named data: none).
    pub used_by: Option<(String, usize)>,
}

/// A tensor the program declares but whose description is broken.
#[derive(Debug)]
pub struct BrokenTensor {
    pub name: String,
    pub error: Error,
}

/// A decoded `.pte` program and where its segments are.
pub struct Program {
    /// Where the program and the segments are, from the file's headers.
    pub layout: HeaderLayout,
    /// The decoded `Program` table of the flatbuffer.
    pub root: Table,
    /// The flatbuffer: the file's first `layout.program_size` bytes (headers included). For a
    /// local file, a slice of its map.
    pub flatbuffer: Bytes,
    /// Absolute (offset, size) of each segment.
    pub segments: Vec<(u64, u64)>,
}

impl Program {
    /// Read the headers and the flatbuffer of `src` (a speculative read of its start, then the
    /// rest of the flatbuffer when it is longer) and check where the segments are against
    /// the file's size. No segment data is read.
    pub fn open(src: &source::Source) -> Result<Program> {
        let head = src.head(source::SPECULATIVE_READ)?;
        let layout = HeaderLayout::parse_head(&head, src.len())?;
        let fb = prefix(src, &head, layout.program_size)?;
        let root = flatbuf::decode(program_schema(), &fb)?;
        let version = root.uint("version")?;
        if version != 0 {
            return Err(Error::invalid(Rule::BadField, format!("program version {version}, expected 0")));
        }
        let mut segments = Vec::new();
        for (i, s) in root.tables("segments")?.iter().enumerate() {
            let (offset, size) = (s.uint("offset")?, s.uint("size")?);
            let end = offset.checked_add(size);
            if size > 0 && end.is_none_or(|e| e > layout.segment_data_size) {
                return Err(Error::invalid(
                    Rule::OutOfBounds,
                    format!(
                        "segment {i} at {offset} of {size} bytes runs past the segment data ({} bytes)",
                        layout.segment_data_size
                    ),
                ));
            }
            // Within the segment data, itself within the file (checked by the header); an
            // empty segment's offset is not checked, and reading one checks its range.
            segments.push((layout.segment_base_offset.saturating_add(offset), size));
        }
        Ok(Program { layout, root, flatbuffer: fb, segments })
    }

    /// Where inline bytes of the flatbuffer (a `[ubyte]` field) are in the file.
    pub fn offset_in_file(&self, inline: &Bytes) -> Result<u64> {
        let at = inline.offset_in_owner().checked_sub(self.flatbuffer.offset_in_owner());
        at.filter(|_| inline.shares_owner(&self.flatbuffer))
            .ok_or_else(|| Error::invalid(Rule::OutOfBounds, "inline data outside the flatbuffer"))
    }

    /// Segment `index` as an absolute (offset, size).
    pub fn segment(&self, index: u64) -> Result<(u64, u64)> {
        usize::try_from(index).ok().and_then(|i| self.segments.get(i)).copied().ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("segment index {index} out of range ({} segments)", self.segments.len()),
            )
        })
    }

    /// Whether constants live in `constant_segment` (else in the inline `constant_buffer`).
    pub fn constants_in_segment(&self) -> Result<bool> {
        Ok(match self.root.table("constant_segment")? {
            Some(cs) => cs.vector("offsets")?.len() > 1,
            None => false,
        })
    }

    /// The absolute byte range of sub-buffer `buffer` of a segment list (the constant segment
    /// or a mutable data segment list), `nbytes` long.
    fn subsegment(&self, list: &Table, buffer: u64, nbytes: u64, what: &str) -> Result<(u64, u64)> {
        let offsets = list.ints("offsets")?;
        let offset = usize::try_from(buffer).ok().and_then(|b| offsets.get(b)).copied().ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("{what} buffer {buffer} out of range ({} offsets)", offsets.len()),
            )
        })?;
        let offset = u64::try_from(offset).map_err(|_| Error::invalid(Rule::BadField, "negative offset"))?;
        let (start, size) = self.segment(list.uint("segment_index")?)?;
        let end = offset.checked_add(nbytes).filter(|&e| e <= size);
        end.ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("{what} buffer {buffer} at {offset} + {nbytes} bytes runs past its segment ({size} bytes)"),
            )
        })?;
        Ok((start + offset, nbytes))
    }

    /// Where constant `buffer` of `nbytes` is: an absolute range of the file.
    pub fn constant_range(&self, buffer: u64, nbytes: u64) -> Result<(u64, u64)> {
        if self.constants_in_segment()? {
            let cs = self
                .root
                .table("constant_segment")?
                .ok_or_else(|| Error::invalid(Rule::MissingField, "no constant_segment"))?;
            return self.subsegment(cs, buffer, nbytes, "constant");
        }
        Err(Error::invalid(Rule::OutOfBounds, format!("constant buffer {buffer} is not in a segment")))
    }

    /// The bytes of constant `buffer` stored inline (deprecated `constant_buffer`).
    pub fn inline_constant(&self, buffer: u64, nbytes: u64) -> Result<Bytes> {
        let buffers = self.root.tables("constant_buffer")?;
        let b = usize::try_from(buffer).ok().and_then(|i| buffers.get(i)).ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("constant buffer {buffer} out of range ({} buffers)", buffers.len()),
            )
        })?;
        let storage = b.bytes("storage")?;
        if (storage.len() as u64) < nbytes {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("constant buffer {buffer} holds {} bytes, needs {nbytes}", storage.len()),
            ));
        }
        storage.slice(0, nbytes)
    }

    /// Where mutable initial state `buffer` of list `list` is: an absolute range.
    pub fn mutable_range(&self, list: u64, buffer: u64, nbytes: u64) -> Result<(u64, u64)> {
        let lists = self.root.tables("mutable_data_segments")?;
        let l = usize::try_from(list).ok().and_then(|i| lists.get(i)).ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("mutable data segment list {list} out of range ({})", lists.len()),
            )
        })?;
        self.subsegment(l, buffer, nbytes, "mutable data")
    }

    /// Every tensor with data, in a stable order: methods in order, values in order, then
    /// named data. A buffer used by several tensors is listed once, under its first user.
    pub fn tensors(&self) -> Result<(Vec<ProgramTensor>, Vec<BrokenTensor>)> {
        let mut good = Vec::new();
        let mut broken = Vec::new();
        let mut seen: HashSet<Origin> = HashSet::new();
        for plan in self.root.tables("execution_plan")? {
            let method = plan.str("name")?.unwrap_or("").to_string();
            for (i, v) in plan.vector("values")?.iter().enumerate() {
                let flatbuf::Value::Table(ev) = v else { continue };
                let Some(u) = ev.union("val")? else { continue };
                let (Some(t), "Tensor") = (&u.value, u.variant()) else { continue };
                match classify(t) {
                    Ok(None) => {}
                    Ok(Some(source)) => {
                        if !seen.insert(source.clone()) {
                            continue;
                        }
                        let name = name_of(&source, t)?;
                        match tensor_layout(t) {
                            Ok(layout) => good.push(ProgramTensor {
                                name,
                                source,
                                layout: Some(layout),
                                used_by: Some((method.clone(), i)),
                            }),
                            Err(error) => broken.push(BrokenTensor { name, error }),
                        }
                    }
                    Err(error) => broken.push(BrokenTensor { name: format!("{method}.values.{i}"), error }),
                }
            }
        }
        for nd in self.root.tables("named_data")? {
            let key = nd.req_str("key")?.to_string();
            let source = Origin::NamedData { key: key.clone() };
            if seen.insert(source.clone()) {
                good.push(ProgramTensor { name: key, source, layout: None, used_by: None });
            } else {
                return Err(Error::invalid(Rule::DuplicateName, format!("named data key {key:?} appears twice"))
                    .for_tensor(key));
            }
        }
        Ok((good, broken))
    }

    /// The segment holding named data `key`.
    pub fn named_data_segment(&self, key: &str) -> Result<(u64, u64)> {
        for nd in self.root.tables("named_data")? {
            if nd.req_str("key")? == key {
                return self.segment(nd.uint("segment_index")?);
            }
        }
        Err(Error::not_found(key))
    }
}

/// Where a `Tensor` table's data is, or `None` for tensors the runtime allocates.
fn classify(t: &Table) -> Result<Option<Origin>> {
    let extra = t.table("extra_tensor_info")?;
    if let Some(x) = extra {
        if x.int("location")? == 1 {
            let fqn = x.str("fully_qualified_name")?.filter(|s| !s.is_empty());
            let fqn = fqn
                .ok_or_else(|| Error::invalid(Rule::MissingField, "external tensor without a fully qualified name"))?;
            return Ok(Some(Origin::External { fqn: fqn.to_string() }));
        }
    }
    let buffer = t.uint("data_buffer_idx")?;
    if buffer == 0 {
        return Ok(None);
    }
    if t.has("allocation_info") {
        let list = match extra {
            Some(x) => x.uint("mutable_data_segments_idx")?,
            None => 0,
        };
        return Ok(Some(Origin::Mutable { list, buffer }));
    }
    Ok(Some(Origin::Constant { buffer }))
}

fn name_of(source: &Origin, t: &Table) -> Result<String> {
    Ok(match source {
        Origin::Constant { buffer } => format!("constant.{buffer}"),
        Origin::Mutable { list, buffer } => {
            let fqn = match t.table("extra_tensor_info")? {
                Some(x) => x.str("fully_qualified_name")?.filter(|s| !s.is_empty()).map(str::to_string),
                None => None,
            };
            match (fqn, list) {
                (Some(f), _) => f,
                (None, 0) => format!("mutable.{buffer}"),
                (None, l) => format!("mutable.{l}.{buffer}"),
            }
        }
        Origin::External { fqn } => fqn.clone(),
        Origin::NamedData { key } => key.clone(),
    })
}

/// A data-bearing tensor's layout, with the runtime's further rule: storage offset 0.
fn tensor_layout(t: &Table) -> Result<TensorLayout> {
    let storage_offset = t.int("storage_offset")?;
    if storage_offset != 0 {
        return Err(Error::invalid(Rule::BadField, format!("storage_offset {storage_offset}, the runtime needs 0")));
    }
    TensorLayout::from_table(t)
}
