//! Rewriting a program's weights.
//!
//! - [`update`]: replace tensors by name with new bytes of the same dtype and shape. The
//!   program and its layout stay as they are: the file is copied with the new bytes in place.
//! - [`externalize`]: move the constants of one or more programs into one `.ptd`; each
//!   program's constants become EXTERNAL tensors named as `ls` names them (prefixed by the
//!   program's name when there are several), its constant segment is emptied and its other
//!   segments are laid out again. Identical tensors are stored once in the `.ptd`.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::header::HeaderLayout as Header;
use super::program::{Origin, Program};
use super::read::PteReader;
use crate::checked;
use crate::error::{Error, Result};
use crate::flatbuf::{self, Table, Value, new_table};
use crate::formats::executorch::{SEGMENT_ALIGNMENT, program_schema};
use crate::formats::{Format, FormatReader, Replacements, UpdateOutputs, WriteOptions, mismatch};
use crate::model::{Kind, TensorInfo};
use crate::output::AtomicFile;

/// The unit's updater: the program with each tensor of the pairs replaced by the new bytes
/// (same dtype and shape; for blobs, the same size). External tensors cannot be replaced here
/// (update their `.ptd` instead).
pub(crate) fn update(input: &Replacements<'_>, outputs: &mut dyn UpdateOutputs) -> Result<()> {
    let reader = input.file_as::<PteReader>().ok_or_else(|| Error::usage("update needs a .pte program"))?;
    let mut patches = Vec::new();
    for pair in input.pairs {
        let w = input.new_entry(pair);
        let name = w.info().name();
        let (entry, tensor) = (input.old_entry(pair), &reader.program_tensors()[pair.target]);
        if matches!(tensor.source, Origin::External { .. }) {
            return Err(Error::usage("this tensor is external: update its .ptd instead").for_tensor(name));
        }
        let fits = match entry.info().kind() {
            Kind::Blob => w.nbytes() == entry.nbytes(),
            Kind::Tensor => w.info().dtype() == entry.info().dtype() && w.info().shape() == entry.info().shape(),
        };
        if !fits {
            return Err(mismatch(w.info(), entry.info()));
        }
        patches.push((entry.storage().offset(), entry.storage().len(), pair, tensor.layout.clone()));
    }
    patches.sort_by_key(|p| p.0);
    if patches.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
        return Err(Error::usage("two replaced tensors share bytes in the program"));
    }
    // Copied by range: a local program's map, or a remote one's bytes fetched piece by piece.
    let original = reader.source();
    outputs.write_main(&mut |w| {
        let mut pos = 0u64;
        for (offset, len, pair, layout) in &patches {
            w.write_all(&original.range(pos, offset - pos)?)?;
            let data = input.read_new(pair)?;
            let bytes = data.as_dense()?;
            let stored = match layout {
                Some(l) if !l.is_contiguous() => l.stored_from_row_major(bytes),
                _ => bytes.to_vec(),
            };
            debug_assert_eq!(stored.len() as u64, *len);
            w.write_all(&stored)?;
            pos = offset + len;
        }
        w.write_all(&original.range(pos, original.len() - pos)?)?;
        Ok(())
    })
}

/// What `externalize` did for one program.
#[derive(Debug, Clone)]
pub struct Externalized {
    /// The program written: the destination given with it.
    pub program: PathBuf,
    /// Keys of the tensors moved into the `.ptd`.
    pub moved: Vec<String>,
}

/// Move the constants of each program `(pte, dest)` into the `.ptd` at `data`. With several
/// programs, keys are prefixed by each program's file stem (`<stem>/constant.3`).
pub fn externalize(programs: &[(&PteReader, PathBuf)], data: &Path) -> Result<Vec<Externalized>> {
    let prefixed = programs.len() > 1;
    let mut stems = HashSet::new();
    let mut plans = Vec::new();
    for (reader, dest) in programs {
        let reader = *reader;
        let stem = dest.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if prefixed && !stems.insert(stem.clone()) {
            return Err(Error::usage(format!("two programs would both be named {stem:?}")));
        }
        let prefix = if prefixed { format!("{stem}/") } else { String::new() };
        plans.push((reader, prefix));
    }
    // The .ptd: every moved constant, in dim order as the program stores it.
    let mut tensors: Vec<(TensorInfo, usize, usize)> = Vec::new();
    for (p, (reader, prefix)) in plans.iter().enumerate() {
        for (i, (t, e)) in reader.program_tensors().iter().zip(reader.entries()).enumerate() {
            if let Origin::Constant { .. } = t.source {
                let info = e.info().clone().with_name(format!("{prefix}{}", t.name));
                tensors.push((info, p, i));
            }
        }
    }
    let plan: Vec<TensorInfo> = tensors.iter().map(|(info, _, _)| info.clone()).collect();
    let mut ptd = AtomicFile::create(data)?;
    {
        let mut w = ptd.writer();
        let mut writer = Format::Ptd.writer(Box::new(&mut w), &plan, &WriteOptions::default())?;
        for (_, p, i) in &tensors {
            writer.write(&plans[*p].0.read(*i, true)?)?;
        }
        writer.finish()?;
        w.flush()?;
    }
    let mut results = Vec::new();
    let mut outputs = Vec::new();
    for ((reader, prefix), (_, dest)) in plans.iter().zip(programs) {
        let (program, moved) = externalized_program(reader, prefix)?;
        let mut out = AtomicFile::create(dest)?;
        {
            let mut w = out.writer();
            program.write_to(&mut w)?;
            w.flush()?;
        }
        outputs.push(out);
        results.push(Externalized { program: dest.clone(), moved });
    }
    ptd.commit()?;
    for out in outputs {
        out.commit()?;
    }
    Ok(results)
}

/// A segment's bytes in the source file and where they go in the new segment data.
struct Placement {
    from: u64,
    size: u64,
    /// Offset from the new segment base.
    to: u64,
}

/// The segments of a rewritten program: its segment table, and where each one's data goes.
struct Segments {
    table: Vec<Value>,
    placements: Vec<Placement>,
    data_size: u64,
}

/// A rewritten program file: the program (headers and padding included), then segment data
/// copied from the source file.
struct ProgramFile {
    program: Vec<u8>,
    placements: Vec<Placement>,
    source: crate::source::Source,
}

impl ProgramFile {
    fn write_to(&self, w: &mut dyn Write) -> Result<()> {
        w.write_all(&self.program)?;
        let mut at = 0u64;
        for p in &self.placements {
            w.write_all(&vec![0u8; usize::try_from(p.to - at).unwrap_or(0)])?;
            w.write_all(&self.source.range(p.from, p.size)?)?;
            at = p.to + p.size;
        }
        Ok(())
    }
}

/// The program of `reader` with its constants made external under `prefix` + their names.
fn externalized_program(reader: &PteReader, prefix: &str) -> Result<(ProgramFile, Vec<String>)> {
    let program = reader.program();
    let mut root = program.root.clone();
    let mut moved = Vec::new();
    let schema = program_schema();
    if let Some(plans) = root.vector_mut("execution_plan") {
        for plan in plans {
            let Value::Table(plan) = plan else { continue };
            let Some(values) = plan.vector_mut("values") else { continue };
            for v in values {
                let Some(t) = tensor_mut(v) else { continue };
                let buffer = t.uint("data_buffer_idx")?;
                let external = t.table("extra_tensor_info")?.is_some_and(|x| x.int("location").unwrap_or(0) == 1);
                if buffer == 0 || external || t.has("allocation_info") {
                    continue;
                }
                let key = format!("{prefix}constant.{buffer}");
                let mut extra =
                    t.table("extra_tensor_info")?.cloned().unwrap_or_else(|| new_table(schema, "ExtraTensorInfo"));
                extra.set("fully_qualified_name", Some(Value::Str(key.clone())));
                extra.set("location", Some(Value::Int(1)));
                t.set("extra_tensor_info", Some(Value::Table(extra)));
                t.set("data_buffer_idx", None);
                if !moved.contains(&key) {
                    moved.push(key);
                }
            }
        }
    }
    // Empty the constant storage, keeping segment indices of everything else valid.
    let constant_segment = match root.table("constant_segment")? {
        Some(cs) if program.constants_in_segment()? => Some(cs.uint("segment_index")?),
        _ => None,
    };
    let mut cs = new_table(schema, "SubsegmentOffsets");
    if let Some(index) = constant_segment {
        cs.set("segment_index", Some(Value::UInt(index)));
    }
    cs.set("offsets", Some(Value::Vector(vec![Value::UInt(0)])));
    root.set("constant_segment", Some(Value::Table(cs)));
    root.set("constant_buffer", Some(Value::Vector(Vec::new())));
    let shared = constant_segment.is_some_and(|i| segment_used_elsewhere(program, i).unwrap_or(true));
    let dropped = constant_segment.filter(|_| !shared);
    let Segments { table, placements, data_size } = lay_out_segments(program, dropped)?;
    root.set("segments", Some(Value::Vector(table)));
    let header_gap = if data_size > 0 { 32 } else { 0 };
    let mut bytes = flatbuf::encode(schema, &root, header_gap)?;
    if data_size > 0 {
        let program_size = bytes.len() as u64;
        let base = checked::align_up(program_size, SEGMENT_ALIGNMENT)?;
        bytes[8..40].copy_from_slice(&Header::extended_bytes(program_size, base, data_size));
        bytes.resize(usize::try_from(base).map_err(|_| Error::unsupported("program too large"))?, 0);
    }
    Ok((ProgramFile { program: bytes, placements, source: reader.source().clone() }, moved))
}

fn tensor_mut(v: &mut Value) -> Option<&mut Table> {
    let Value::Table(ev) = v else { return None };
    match ev.get_mut("val") {
        Some(Value::Union(u)) if u.variant() == "Tensor" => u.value.as_deref_mut(),
        _ => None,
    }
}

/// Whether anything but the constants refers to segment `index`.
fn segment_used_elsewhere(program: &Program, index: u64) -> Result<bool> {
    let root = &program.root;
    for list in root.tables("mutable_data_segments")? {
        if list.uint("segment_index")? == index {
            return Ok(true);
        }
    }
    for nd in root.tables("named_data")? {
        if nd.uint("segment_index")? == index {
            return Ok(true);
        }
    }
    for plan in root.tables("execution_plan")? {
        for d in plan.tables("delegates")? {
            if let Some(p) = d.table("processed")? {
                if p.int("location")? == 1 && p.uint("index")? == index {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// The segments after dropping segment `dropped`'s data (it stays in the table, empty), each
/// at a multiple of the segment alignment.
fn lay_out_segments(program: &Program, dropped: Option<u64>) -> Result<Segments> {
    let schema = program_schema();
    let mut table = Vec::new();
    let mut placements = Vec::new();
    let mut end = 0u64;
    for (i, &(from, size)) in program.segments.iter().enumerate() {
        let size = if dropped == Some(i as u64) { 0 } else { size };
        let offset = checked::align_up(end, SEGMENT_ALIGNMENT)?;
        let mut s = new_table(schema, "DataSegment");
        s.set("offset", Some(Value::UInt(offset)));
        s.set("size", Some(Value::UInt(size)));
        table.push(Value::Table(s));
        if size > 0 {
            placements.push(Placement { from, size, to: offset });
            end = offset + size;
        }
    }
    Ok(Segments { table, placements, data_size: end })
}
