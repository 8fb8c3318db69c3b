//! Any reader into any writer, streaming: one tensor in memory at a time.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::formats::{Format, Output, WriteOptions};
use crate::model::{Layout, MetaValue, TensorInfo};
use crate::output::AtomicFile;

/// How to convert.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    pub write: WriteOptions,
    /// Leave out tensors the target cannot hold (and unreadable ones) instead of failing.
    pub skip_unsupported: bool,
    /// Check stored checksums while reading (on by default).
    pub verify: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions { write: WriteOptions::default(), skip_unsupported: false, verify: true }
    }
}

/// A tensor left out, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub name: String,
    pub reason: String,
}

/// What a conversion did.
#[derive(Debug, Clone)]
pub struct ConvertReport {
    pub format: Format,
    pub tensors: usize,
    /// Decoded bytes carried over.
    pub bytes: u64,
    pub skipped: Vec<Skipped>,
    /// Keys of the source's file metadata that the target format has no place for.
    pub dropped_metadata: Vec<String>,
}

/// Progress of a conversion, reported after each tensor.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub done_bytes: u64,
    pub total_bytes: u64,
    pub tensor: &'a str,
}

/// How a tensor is described to writers: readers hand over contiguous row-major data, so
/// dense layouts that were strided or dim-ordered in the source become plain dense.
pub fn as_written(info: &TensorInfo) -> TensorInfo {
    let mut info = info.clone();
    if !info.layout.is_sparse() {
        info.layout = Layout::Dense;
    }
    info
}

/// Which entries of a source go into a target, in the order the target stores them.
#[derive(Debug, Clone)]
pub struct Plan {
    /// (index of the entry in the source, how the target describes it).
    pub tensors: Vec<(usize, TensorInfo)>,
    pub skipped: Vec<Skipped>,
}

/// Decide which entries of `src` go into a file of `format`, in the order it will store them.
pub fn plan(src: &TensorFile, format: Format, skip_unsupported: bool) -> Result<Plan> {
    let mut skipped = Vec::new();
    for u in src.unreadable() {
        if !skip_unsupported {
            return Err(Error::unsupported(format!(
                "cannot read it: {} (use --skip-unsupported to leave it out)",
                u.error.detail()
            ))
            .for_tensor(&u.name));
        }
        skipped.push(Skipped { name: u.name.clone(), reason: u.error.detail() });
    }
    let mut chosen = Vec::with_capacity(src.entries().len());
    for (i, e) in src.entries().iter().enumerate() {
        let info = as_written(&e.info);
        match format.check_supported(&info) {
            Ok(()) => chosen.push((i, info)),
            Err(err) if skip_unsupported => skipped.push(Skipped { name: info.name.clone(), reason: err.detail() }),
            Err(err) => {
                return Err(Error::unsupported(format!("{} (use --skip-unsupported to leave it out)", err.detail()))
                    .for_tensor(&info.name));
            }
        }
    }
    let infos: Vec<TensorInfo> = chosen.iter().map(|(_, i)| i.clone()).collect();
    let tensors = format.write_order(&infos).into_iter().map(|k| chosen[k].clone()).collect();
    Ok(Plan { tensors, skipped })
}

/// File-level metadata to carry into the target: the source's text values, unless the
/// options name some.
fn carried_metadata(src: &TensorFile, options: &WriteOptions) -> WriteOptions {
    let mut w = options.clone();
    if w.metadata.is_empty() {
        w.metadata = src
            .summary()
            .metadata
            .into_iter()
            .filter_map(|(k, v)| match v {
                MetaValue::Text(s) => Some((k, s)),
                _ => None,
            })
            .collect();
    }
    w
}

/// Write every tensor of `src` into `out` as `format`.
pub fn convert_to_writer(
    src: &TensorFile,
    out: &mut dyn Output,
    format: Format,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ConvertReport> {
    let in_source = |e: Error| match src.path() {
        Some(p) => e.in_file(p),
        None => e,
    };
    let Plan { tensors: planned, skipped } = plan(src, format, options.skip_unsupported).map_err(in_source)?;
    let write_options = carried_metadata(src, &options.write);
    let dropped_metadata = if format.holds_file_metadata() {
        Vec::new()
    } else {
        src.summary().metadata.into_iter().map(|(k, _)| k).collect()
    };
    let infos: Vec<TensorInfo> = planned.iter().map(|(_, i)| i.clone()).collect();
    let total_bytes = planned.iter().map(|(i, _)| src.entries()[*i].nbytes).sum();
    let mut writer = format.writer(Box::new(out), &infos, &write_options)?;
    let mut done_bytes = 0;
    for (index, info) in &planned {
        if info.layout.is_sparse() {
            let data = if options.verify { src.read_verified(*index)? } else { src.read_index(*index)? };
            writer.write(&data)?;
        } else {
            // In pieces: a large compressed tensor is never whole in memory.
            writer.write_chunks(&mut || src.read_chunks(*index, options.verify))?;
        }
        done_bytes += src.entries()[*index].nbytes;
        progress(Progress { done_bytes, total_bytes, tensor: &info.name });
    }
    writer.finish()?;
    Ok(ConvertReport { format, tensors: planned.len(), bytes: done_bytes, skipped, dropped_metadata })
}

/// Convert `src` into a new file at `dest` (format from its extension), atomically. Errors
/// name the file they concern: the source for what it holds, `dest` for the writing.
pub fn convert_file(
    src: &TensorFile,
    dest: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ConvertReport> {
    let format = Format::from_path(dest)?;
    let mut file = AtomicFile::create(dest)?;
    let report = {
        let mut w = file.writer();
        let r = convert_to_writer(src, &mut w, format, options, progress);
        let flushed = w.flush().map_err(Error::from);
        r.and_then(|r| flushed.map(|()| r)).map_err(|e| e.in_file(dest))?
    };
    file.commit()?;
    Ok(report)
}
