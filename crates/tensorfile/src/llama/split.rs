//! GGUF outputs as llama.cpp's `llama-gguf-split` writes them (the format's facts are in
//! `formats::gguf::split`): a conversion into the parts of a split model, cut by size or by
//! tensor count, every part staged and then committed together; and a conversion of a split
//! model (or of anything whose key/values hold `split.count`) into one file, which is the
//! merge. Any other GGUF output is written as [`crate::convert::convert_file`] writes it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::convert::{self, ConvertOptions, ConvertReport, Prepared, Progress, ShardNames, Tally, remove_replaced};
use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::formats::Format;
use crate::formats::gguf::split::{self, SplitBy};
use crate::limits::MAX_SHARDS;
use crate::model::{MetaValue, TensorInfo};
use crate::output::{AtomicFile, StagedFile};

/// How a GGUF output is cut into the parts of a split model: `llama-gguf-split`'s options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SplitRequest {
    /// `--split-max-size`: parts of at most this many tensor bytes (for any other format, the
    /// size of its shards).
    pub max_size: Option<u64>,
    /// `--split-max-tensors`: parts of at most this many tensors.
    pub max_tensors: Option<u64>,
    /// `--no-tensor-first-split`: the first part holds the key/values alone.
    pub no_tensor_first_split: bool,
}

/// How `request` cuts an output of `format` into a split model, if it does; an error for
/// options that do not go together, or that only a GGUF output takes.
pub(crate) fn split_asked(request: SplitRequest, format: Format) -> Result<Option<(SplitBy, bool)>> {
    if format != Format::Gguf {
        if request.max_tensors.is_some() || request.no_tensor_first_split {
            return Err(Error::usage(format!(
                "a tensor count per part and a first part of metadata alone are for a split GGUF model, \
                 not a {format} output"
            )));
        }
        return Ok(None);
    }
    let by = match (request.max_size, request.max_tensors) {
        (Some(_), Some(_)) => {
            return Err(Error::usage("a split model is cut by size or by tensor count per part, not both"));
        }
        (Some(0), _) => return Err(Error::usage("a part must hold at least one byte")),
        (_, Some(0)) => return Err(Error::usage("a part must hold at least one tensor")),
        (Some(size), None) => SplitBy::Size(size),
        (None, Some(n)) => SplitBy::Tensors(n),
        (None, None) if request.no_tensor_first_split => {
            return Err(Error::usage(
                "a first part of metadata alone is for a split model: give a size or a tensor count per part",
            ));
        }
        (None, None) => return Ok(None),
    };
    Ok(Some((by, request.no_tensor_first_split)))
}

/// The parts of a split model written, and the files of an earlier write they replaced.
pub(crate) struct Parts {
    pub files: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

/// Write `src` as the GGUF file `output`: the parts of a split model when `request` asks for
/// one, else one file (merged, when `src` is a split model).
pub(crate) fn write_gguf(
    src: &TensorFile,
    output: &Path,
    request: SplitRequest,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(ConvertReport, Option<Parts>)> {
    match split_asked(request, Format::Gguf)? {
        Some((by, no_tensor_first_split)) => {
            let (report, files, removed) =
                convert_to_split_model(src, output, by, no_tensor_first_split, options, progress)?;
            Ok((report, Some(Parts { files, removed })))
        }
        None => Ok((convert_to_one_gguf(src, output, options, progress)?, None)),
    }
}

/// Convert `src` into the parts of a split GGUF model named after `dest`
/// (`out/model.gguf`: `out/model-00001-of-00003.gguf`...), cut as `by` says, the first part of
/// metadata alone with `no_tensor_first_split`. Every part is written under a temporary name
/// and put in place once all are written; then the parts of an earlier write to `dest` of
/// another count (and `dest` itself, and an index beside it) are removed. Returns the report,
/// the parts and what was removed.
fn convert_to_split_model(
    src: &TensorFile,
    dest: &Path,
    by: SplitBy,
    no_tensor_first_split: bool,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(ConvertReport, Vec<PathBuf>, Vec<PathBuf>)> {
    let names = ShardNames::of(dest)?;
    let mut prepared = prepare(src, options)?;
    let model_metadata = std::mem::take(&mut prepared.write.metadata);
    let tensors = &prepared.plan.tensors;
    let sizes: Vec<u64> = tensors.iter().map(|(_, info)| info.nbytes()).collect::<Result<_>>()?;
    let parts = split::plan_parts(&sizes, by, no_tensor_first_split)?;
    let count = u16::try_from(parts.len()).ok().filter(|&n| usize::from(n) <= MAX_SHARDS).ok_or_else(|| {
        Error::usage(format!(
            "{} parts would be needed (a split model has at most {}): give a larger size or count",
            parts.len(),
            MAX_SHARDS.min(usize::from(u16::MAX))
        ))
    })?;
    let total = i32::try_from(tensors.len())
        .map_err(|_| Error::usage(format!("{} tensors: a split model counts at most 2^31-1", tensors.len())))?;
    let files: Vec<PathBuf> = (0..count).map(|no| names.path(&split::part_name(names.stem(), no, count))).collect();
    let mut tally = Tally::new(prepared.total_bytes(src), progress);
    let mut staged = Vec::with_capacity(files.len());
    for ((no, run), path) in (0..count).zip(parts).zip(&files) {
        let metadata = split::part_metadata(&model_metadata, no, count, total);
        staged.push(write_part(src, path, &prepared, &tensors[run], metadata, options.verify, &mut tally)?);
    }
    for file in staged {
        file.commit()?;
    }
    let removed = remove_replaced(&names, &files, None);
    Ok((prepared.report(tally.done), files, removed))
}

/// Convert `src` into one GGUF file at `dest`. When the key/values written hold `split.count`
/// (the source is a split model, or was merged from one), the file is what
/// `llama-gguf-split --merge` writes: `split.count` 0 and last, shapes as ggml counts them.
fn convert_to_one_gguf(
    src: &TensorFile,
    dest: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ConvertReport> {
    let mut prepared = convert::prepare(src, Format::Gguf, options)?;
    let mut tally = Tally::new(prepared.total_bytes(src), progress);
    let tensors = &prepared.plan.tensors;
    if !split::has_split_count(&prepared.write.metadata) {
        convert::write_staged(src, dest, &prepared, tensors, options.verify, &mut tally)?.commit()?;
        return Ok(prepared.report(tally.done));
    }
    let metadata = split::merged_metadata(&std::mem::take(&mut prepared.write.metadata));
    in_ggml_shapes(&mut prepared)?;
    let tensors = &prepared.plan.tensors;
    write_part(src, dest, &prepared, tensors, metadata, options.verify, &mut tally)?.commit()?;
    Ok(prepared.report(tally.done))
}

/// The conversion of `src` into GGUF planned, shapes as ggml writes them.
fn prepare(src: &TensorFile, options: &ConvertOptions) -> Result<Prepared> {
    let mut prepared = convert::prepare(src, Format::Gguf, options)?;
    in_ggml_shapes(&mut prepared)?;
    Ok(prepared)
}

/// Every planned tensor described with the shape ggml writes for it (leading dimensions of 1
/// left out): the same bytes, the infos llama-gguf-split writes.
fn in_ggml_shapes(prepared: &mut Prepared) -> Result<()> {
    for (_, info) in &mut prepared.plan.tensors {
        let shape = split::ggml_shape(info.shape());
        if shape != info.shape() {
            let extra = info.extra().to_vec();
            let layout = info.layout().clone();
            *info = TensorInfo::new(info.name(), info.kind(), info.dtype(), shape, layout)?.with_extra(extra);
        }
    }
    Ok(())
}

/// Write `tensors` of `src` with the key/values `metadata` as one GGUF file at `dest`, staged
/// under a temporary name. A file of no tensors is written as ggml writes one (padded after
/// its key/values).
fn write_part(
    src: &TensorFile,
    dest: &Path,
    prepared: &Prepared,
    tensors: &[(usize, TensorInfo)],
    metadata: Vec<(String, MetaValue)>,
    verify: bool,
    tally: &mut Tally<'_>,
) -> Result<StagedFile> {
    let mut file = AtomicFile::create(dest)?;
    {
        let mut w = file.writer();
        let written = if tensors.is_empty() {
            split::metadata_only(&metadata).and_then(|bytes| Ok(w.write_all(&bytes)?))
        } else {
            let mut write = prepared.write.clone();
            write.metadata = metadata;
            convert::write_tensors(src, &mut w, prepared, &write, tensors, verify, tally)
        };
        let flushed = w.flush().map_err(Error::from);
        written.and(flushed).map_err(|e| e.in_file(dest))?;
    }
    file.stage()
}
