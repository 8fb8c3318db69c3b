//! New weights for an ONNX model: tensors replaced by name (same dtype and shape), their bytes
//! rewritten where they are stored, every other byte kept.
//!
//! - `raw_data` in the model: the same number of bytes at the same place, so no length in the
//!   protobuf changes; the model is copied with those ranges replaced.
//! - External data: the external file is copied with those ranges replaced, beside the output
//!   model under the same `location`; the model is copied as it is. Weights stay external, so
//!   a model over protobuf's 2 GiB limit stays under it (nothing is ever inlined).
//! - Typed fields (`float_data`...): refused, naming the tensor (a new value there would change
//!   the lengths of every enclosing message).
//!
//! Each file is written atomically (a temporary file, synced, renamed), external files first
//! and the model last; the result is opened again and verified before it is reported written.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::read::{OnnxReader, Stored};
use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::model::Layout;
use crate::output::AtomicFile;
use crate::source::{Bytes, Source};
use crate::update::{UpdateOptions, UpdateReport};

/// Bytes copied from an old file at once.
const COPY_PIECE: u64 = 64 << 20;

/// New bytes for a range of a file.
struct Patch {
    offset: u64,
    bytes: Bytes,
}

/// The unit's updater: write `dest`, the model `file` with each tensor named in `weights`
/// replaced, its external data files beside it; then open the result and verify it.
pub(crate) fn update(
    file: &TensorFile,
    weights: &TensorFile,
    dest: &Path,
    options: &UpdateOptions,
) -> Result<UpdateReport> {
    let reader = file.reader_as::<OnnxReader>().ok_or_else(|| Error::usage("this update is for ONNX models"))?;
    let mut model_patches = Vec::new();
    let mut external_patches: Vec<Vec<Patch>> = (0..reader.files.opened.len()).map(|_| Vec::new()).collect();
    let mut report = UpdateReport::default();
    for (wi, i) in crate::update::matched(file, weights, options.skip_unknown)? {
        let (w, e) = (weights.entries()[wi].info(), &file.entries()[i]);
        let name = e.info().name();
        if *e.info().layout() != Layout::Dense {
            return Err(Error::unsupported("a sparse tensor: update replaces dense initializers").for_tensor(name));
        }
        if (w.dtype(), w.shape()) != (e.info().dtype(), e.info().shape()) || !w.layout().reads_dense() {
            return Err(crate::update::mismatch(w, e.info()));
        }
        let bytes = weights.read_verified(wi)?.to_dense(w.dtype(), w.shape())?;
        if bytes.len() as u64 != e.nbytes() {
            return Err(Error::usage(format!("{} bytes given where the model stores {}", bytes.len(), e.nbytes()))
                .for_tensor(name));
        }
        match &reader.items[i].stored {
            Stored::Model { offset, .. } => model_patches.push(Patch { offset: *offset, bytes }),
            Stored::External(p) => external_patches[p.file].push(Patch { offset: p.offset, bytes }),
            Stored::Typed(_) => {
                return Err(Error::unsupported(
                    "its values are in the model's typed fields (float_data, int32_data...): update replaces tensors stored as raw_data or external data",
                )
                .for_tensor(name));
            }
        }
        report.replaced.push(w.name().to_string());
    }
    report.unchanged = file.entries().len().saturating_sub(report.replaced.len());
    let out_folder = folder_of(dest)?;
    for (k, patches) in external_patches.iter_mut().enumerate() {
        let (location, old_path, src) = reader.external(k);
        let target = out_folder.join(location);
        if patches.is_empty() && same_file(old_path, &target) {
            continue;
        }
        check_target(&out_folder, &target, location)?;
        write_patched(src, patches, &target)?;
    }
    write_patched(reader.source(), &mut model_patches, dest)?;
    // Tensors the model held unreadable (strings, padded int4...) stay so; anything else is new.
    let known = |e: &Error| e.tensor().is_some_and(|t| file.unreadable().iter().any(|u| u.name() == t));
    if let Some(problem) = TensorFile::open(dest)?.verify().into_iter().find(|e| !known(e)) {
        return Err(problem);
    }
    Ok(report)
}

/// The folder `dest` is written in.
fn folder_of(dest: &Path) -> Result<PathBuf> {
    let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parent.canonicalize().map_err(|e| Error::from(e).in_file(parent))
}

/// Whether two paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// An external file is written only inside the output's folder: its own folder (symlinks
/// resolved) must be inside, and it must not be a symlink itself.
fn check_target(folder: &Path, target: &Path, location: &str) -> Result<()> {
    let outside = || {
        Error::invalid(
            Rule::UnsafePath,
            format!("external data {location:?} would be written outside the output's folder"),
        )
    };
    let parent = target.parent().ok_or_else(outside)?;
    let real = parent.canonicalize().map_err(|e| Error::from(e).in_file(parent))?;
    if !real.starts_with(folder) || target.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(outside());
    }
    Ok(())
}

/// Write `dest` atomically: `src` with each patch's range replaced by its bytes.
fn write_patched(src: &Source, patches: &mut [Patch], dest: &Path) -> Result<()> {
    patches.sort_unstable_by_key(|p| p.offset);
    let mut out = AtomicFile::create(dest)?;
    {
        let mut w = out.writer();
        let mut at = 0u64;
        for p in patches.iter() {
            if p.offset < at {
                return Err(Error::invalid(
                    Rule::Overlap,
                    format!("two replaced tensors share the bytes at {}", p.offset),
                ));
            }
            copy(src, at, p.offset, &mut w)?;
            w.write_all(&p.bytes)?;
            at = p.offset + p.bytes.len() as u64;
        }
        copy(src, at, src.len(), &mut w)?;
        w.flush()?;
    }
    out.commit()
}

/// Bytes `from..to` of `src`, copied a piece at a time.
fn copy(src: &Source, from: u64, to: u64, out: &mut dyn Write) -> Result<()> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(COPY_PIECE);
        out.write_all(&src.range(at, n)?)?;
        at += n;
    }
    Ok(())
}
