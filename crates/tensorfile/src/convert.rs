//! Any reader into any writer, streaming: one tensor in memory at a time.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::formats::{Format, Output, WriteOptions};
use crate::model::{DType, MetaValue, TensorData, TensorInfo, cast};
use crate::output::{AtomicFile, StagedFile};

mod casting;
mod plan;
mod quantizing;
mod select;
pub(crate) mod shards;

pub use crate::sizes::parse_size;
use casting::cast_data;
pub(crate) use casting::written_bytes;
pub use plan::{Plan, plan};
pub use quantizing::QuantizeTypes;
pub(crate) use quantizing::as_f32;
pub use select::Selection;
pub(crate) use shards::{ShardNames, convert_to_shards, remove_replaced};

/// How to convert.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// How the target file is written (compression, checksums, metadata, byte order).
    pub write: WriteOptions,
    /// Leave out tensors the target cannot hold (and unreadable ones) instead of failing.
    pub skip_unsupported: bool,
    /// Check stored checksums while reading (on by default).
    pub verify: bool,
    /// Cast floating tensors to this dtype (one of [`cast::TARGETS`]), as torch's
    /// `Tensor.to()` does; quantized tensors are dequantized, then cast, and written dense.
    /// Integer, bool and complex tensors, and blobs, are written as they are.
    pub dtype: Option<DType>,
    /// The format to write; `None`: the one the output's extension names
    /// ([`Format::for_output`] picks a zTensor version for `.zt`).
    pub format: Option<Format>,
    /// Which entries are written, and under which names (the default: all, as they are).
    pub select: Selection,
    /// The tensors quantized, each to its ggml type, as ggml quantizes (`None`: none).
    pub quantize: Option<QuantizeTypes>,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            write: WriteOptions::default(),
            skip_unsupported: false,
            verify: true,
            dtype: None,
            format: None,
            select: Selection::default(),
            quantize: None,
        }
    }
}

impl ConvertOptions {
    /// The format written to `dest`: the one asked for, or the one its extension names.
    pub fn output_format(&self, dest: &Path) -> Result<Format> {
        self.format.map_or_else(|| Format::from_path(dest), Ok)
    }
}

/// A tensor left out, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The entry's name in the source.
    pub name: String,
    /// Why it was left out: what cannot be read, or what the target cannot hold.
    pub reason: String,
}

/// What a conversion did.
#[derive(Debug, Clone)]
pub struct ConvertReport {
    /// The format written.
    pub format: Format,
    /// Entries written (tensors and blobs).
    pub tensors: usize,
    /// Decoded bytes carried over (of cast tensors, their size in the target dtype).
    pub bytes: u64,
    /// Entries left out (with `skip_unsupported`), in the source's order.
    pub skipped: Vec<Skipped>,
    /// Tensors whose layout the target cannot hold, written decoded to dense.
    pub decoded: Vec<String>,
    /// Tensors cast to [`ConvertOptions::dtype`] (quantized ones dequantized first).
    pub cast: Vec<String>,
    /// Tensors quantized ([`ConvertOptions::quantize`]): (name in the source, ggml type).
    pub quantized: Vec<(String, crate::model::quant::GgmlType)>,
    /// Keys of the source's file metadata that the target format has no place for.
    pub dropped_metadata: Vec<String>,
    /// Entries written under another name ([`ConvertOptions::select`]): (name in the source,
    /// name written), in the source's order.
    pub renamed: Vec<(String, String)>,
    /// How many entries of the source the include and exclude filters left out.
    pub filtered_out: usize,
}

/// Progress of a conversion, reported after each tensor.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Decoded bytes written so far, over every file of the conversion.
    pub done_bytes: u64,
    /// Decoded bytes the whole conversion writes: `done_bytes` reaches it at the end.
    pub total_bytes: u64,
    /// The name of the tensor just written.
    pub tensor: &'a str,
}

/// How a tensor is described to writers: readers hand over contiguous row-major data, so
/// dense layouts that were strided or dim-ordered in the source become plain dense.
pub(crate) fn as_written(info: &TensorInfo) -> TensorInfo {
    let info = info.clone();
    if info.layout().reads_dense() { info.into_dense_layout() } else { info }
}

/// The data of entry `index` of `src` as the plan writes it (`planned`): as read, or decoded
/// to dense when the plan decodes it; cast when the plan casts it; quantized when it quantizes it.
fn as_planned(
    src: &TensorFile,
    index: usize,
    planned: &TensorInfo,
    data: TensorData,
    quantize: Option<&QuantizeTypes>,
) -> Result<TensorData> {
    let read_as = src.entries()[index].info();
    if let (Some(t), Some(plan)) = (quantizing::target(read_as, planned), quantize) {
        return quantizing::quantize_data(read_as, t, data, plan);
    }
    let data = if planned.layout().reads_dense() && !read_as.layout().reads_dense() {
        let dense = data.to_dense(read_as.dtype(), read_as.shape()).map_err(|e| e.for_tensor(read_as.name()))?;
        TensorData::dense(dense)
    } else {
        data
    };
    if planned.dtype() == read_as.dtype() {
        return Ok(data);
    }
    cast_data(data, read_as.dtype(), planned.dtype()).map_err(|e| e.for_tensor(read_as.name()))
}

/// File-level metadata to carry into the target, unless the options name some: every value
/// for a format that keeps typed values; otherwise the text values. The keys left out (other
/// values for a text-only format, everything for a format without metadata) come back with it.
fn carried_metadata(src: &TensorFile, format: Format, options: &WriteOptions) -> (WriteOptions, Vec<String>) {
    let mut w = options.clone();
    let mut dropped = Vec::new();
    if !w.metadata.is_empty() {
        return (w, dropped);
    }
    let caps = format.caps();
    for (k, v) in src.summary().metadata {
        if !caps.file_metadata() {
            dropped.push(k);
        } else if caps.typed_metadata() {
            w.metadata.push((k, v));
        } else {
            match v {
                MetaValue::Text(_) => w.metadata.push((k, v)),
                _ => dropped.push(k),
            }
        }
    }
    (w, dropped)
}

/// A conversion decided: what goes into the target, and how it is written.
pub(crate) struct Prepared {
    pub format: Format,
    pub plan: Plan,
    /// The quantization the plan applies, if any.
    pub quantize: Option<QuantizeTypes>,
    pub write: WriteOptions,
    /// Keys of the source's file metadata that the target format has no place for.
    pub dropped_metadata: Vec<String>,
}

/// Plan the conversion of `src` into `format` (errors name the source).
pub(crate) fn prepare(src: &TensorFile, format: Format, options: &ConvertOptions) -> Result<Prepared> {
    let plan = plan::plan_quantized(
        src,
        format,
        options.skip_unsupported,
        options.dtype,
        &options.select,
        options.quantize.as_ref(),
    )
    .map_err(|e| match src.path() {
        Some(p) => e.in_file(p),
        None => e,
    })?;
    let (write, dropped_metadata) = carried_metadata(src, format, &options.write);
    Ok(Prepared { format, plan, quantize: options.quantize.clone(), write, dropped_metadata })
}

impl Prepared {
    /// Decoded bytes of the planned tensors of `src`.
    pub fn total_bytes(&self, src: &TensorFile) -> u64 {
        self.plan.tensors.iter().map(|(i, info)| written_bytes(src, *i, info)).sum()
    }

    /// What the conversion did, once `done_bytes` are written.
    pub fn report(self, done_bytes: u64) -> ConvertReport {
        ConvertReport {
            format: self.format,
            tensors: self.plan.tensors.len(),
            bytes: done_bytes,
            decoded: self.plan.decoded,
            cast: self.plan.cast,
            quantized: self.plan.quantized,
            skipped: self.plan.skipped,
            dropped_metadata: self.dropped_metadata,
            renamed: self.plan.renamed,
            filtered_out: self.plan.filtered_out,
        }
    }
}

/// The progress of a conversion over one or several files: bytes done, reported after each
/// tensor.
pub(crate) struct Tally<'p> {
    pub done: u64,
    total: u64,
    progress: &'p mut dyn FnMut(Progress<'_>),
}

impl<'p> Tally<'p> {
    pub fn new(total: u64, progress: &'p mut dyn FnMut(Progress<'_>)) -> Self {
        Tally { done: 0, total, progress }
    }
}

/// Write `tensors` (planned entries of `src`, in the order the target stores them) into
/// `out` as one complete file of the prepared format, with the write options `write`.
pub(crate) fn write_tensors(
    src: &TensorFile,
    out: &mut dyn Output,
    prepared: &Prepared,
    write: &WriteOptions,
    tensors: &[(usize, TensorInfo)],
    verify: bool,
    tally: &mut Tally<'_>,
) -> Result<()> {
    let infos: Vec<TensorInfo> = tensors.iter().map(|(_, i)| i.clone()).collect();
    let mut writer = prepared.format.writer(Box::new(out), &infos, write)?;
    let quantize = prepared.quantize.as_ref();
    if src.is_remote() {
        // Fetched ahead of the writer, each tensor whole (a remote read fetches it whole).
        let indices: Vec<usize> = tensors.iter().map(|(index, _)| *index).collect();
        let mut planned = tensors.iter();
        src.read_each(&indices, verify, &mut |index, data| {
            let info = planned.next().map(|(_, info)| info).ok_or_else(|| Error::usage("more tensors than planned"))?;
            writer.write(&as_planned(src, index, info, data?, quantize)?)?;
            tally.done += written_bytes(src, index, info);
            (tally.progress)(Progress { done_bytes: tally.done, total_bytes: tally.total, tensor: info.name() });
            Ok(())
        })?;
        return writer.finish();
    }
    for (index, info) in tensors {
        let read_as = src.entries()[*index].info();
        if !read_as.layout().reads_dense() || quantizing::target(read_as, info).is_some() {
            let data = if verify { src.read_verified(*index)? } else { src.read_index(*index)? };
            writer.write(&as_planned(src, *index, info, data, quantize)?)?;
        } else {
            // In pieces: a large compressed tensor is never whole in memory.
            let (from, to) = (src.entries()[*index].info().dtype(), info.dtype());
            if from == to {
                writer.write_chunks(&mut || src.read_chunks(*index, verify))?;
            } else {
                let name = src.entries()[*index].info().name();
                writer.write_chunks(&mut || {
                    let pieces = cast::cast_chunks(src.read_chunks(*index, verify)?, from, to)?;
                    Ok(Box::new(pieces.map(move |p| p.map_err(|e| e.for_tensor(name)))))
                })?;
            }
        }
        tally.done += written_bytes(src, *index, info);
        (tally.progress)(Progress { done_bytes: tally.done, total_bytes: tally.total, tensor: info.name() });
    }
    writer.finish()
}

/// Write `tensors` of `src` as a new file at `dest`, under a temporary name until the staged
/// file is committed. Errors name the file they concern: the source for what it holds, `dest`
/// for the writing.
pub(crate) fn write_staged(
    src: &TensorFile,
    dest: &Path,
    prepared: &Prepared,
    tensors: &[(usize, TensorInfo)],
    verify: bool,
    tally: &mut Tally<'_>,
) -> Result<StagedFile> {
    let mut file = AtomicFile::create(dest)?;
    {
        let mut w = file.writer();
        let written = write_tensors(src, &mut w, prepared, &prepared.write, tensors, verify, tally);
        let flushed = w.flush().map_err(Error::from);
        written.and(flushed).map_err(|e| e.in_file(dest))?;
    }
    file.stage()
}

/// Write every tensor of `src` into `out` as `format`.
pub fn convert_to_writer(
    src: &TensorFile,
    out: &mut dyn Output,
    format: Format,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ConvertReport> {
    let prepared = prepare(src, format, options)?;
    let mut tally = Tally::new(prepared.total_bytes(src), progress);
    write_tensors(src, out, &prepared, &prepared.write, &prepared.plan.tensors, options.verify, &mut tally)?;
    Ok(prepared.report(tally.done))
}

/// Convert `src` into a new file at `dest` (format from its extension), atomically. Errors
/// name the file they concern: the source for what it holds, `dest` for the writing.
pub fn convert_file(
    src: &TensorFile,
    dest: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ConvertReport> {
    let prepared = prepare(src, options.output_format(dest)?, options)?;
    let mut tally = Tally::new(prepared.total_bytes(src), progress);
    write_staged(src, dest, &prepared, &prepared.plan.tensors, options.verify, &mut tally)?.commit()?;
    Ok(prepared.report(tally.done))
}
