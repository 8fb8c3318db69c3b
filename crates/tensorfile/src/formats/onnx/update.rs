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
//! Every file goes through the update's outputs: nothing appears until all are written (then
//! external files first and the model last); the update opens the result again and verifies it.
//! Each new tensor is read when its range is written, so memory is bounded by one tensor.

use std::path::Path;

use super::read::{OnnxReader, Stored};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::{Output, Replacement, Replacements, UpdateOutputs, mismatch};
use crate::model::Layout;
use crate::output::copy_range;
use crate::source::{Bytes, Source};

/// One tensor to replace: where its stored bytes are in their file (the model or an external
/// data file), how many, and which pair replaces them. The new bytes are read only when that
/// range is written, so an update holds one new tensor at a time.
struct Patch<'r> {
    offset: u64,
    len: u64,
    pair: &'r Replacement,
}

/// The unit's updater: the model with each tensor of the pairs replaced, its external data
/// files beside it.
pub(crate) fn update(input: &Replacements<'_>, outputs: &mut dyn UpdateOutputs) -> Result<()> {
    let reader = input.file_as::<OnnxReader>().ok_or_else(|| Error::usage("this update is for ONNX models"))?;
    let mut model_patches = Vec::new();
    let mut external_patches: Vec<Vec<Patch<'_>>> = (0..reader.files.opened.len()).map(|_| Vec::new()).collect();
    for pair in input.pairs {
        let (w, e) = (input.new_entry(pair).info(), input.old_entry(pair));
        let name = e.info().name();
        if *e.info().layout() != Layout::Dense {
            return Err(Error::unsupported("a sparse tensor: update replaces dense initializers").for_tensor(name));
        }
        if (w.dtype(), w.shape()) != (e.info().dtype(), e.info().shape()) || !w.layout().reads_dense() {
            return Err(mismatch(w, e.info()));
        }
        let len = e.nbytes();
        match &reader.items[pair.target].stored {
            Stored::Model { offset, .. } => model_patches.push(Patch { offset: *offset, len, pair }),
            Stored::External(p) => external_patches[p.file].push(Patch { offset: p.offset, len, pair }),
            Stored::Typed(_) => {
                return Err(Error::unsupported(
                    "its values are in the model's typed fields (float_data, int32_data...): update replaces tensors stored as raw_data or external data",
                )
                .for_tensor(name));
            }
        }
    }
    let out_folder = outputs.folder().to_path_buf();
    for (k, patches) in external_patches.iter_mut().enumerate() {
        let (location, old_path, src) = reader.external(k);
        let target = out_folder.join(location);
        if patches.is_empty() && same_file(old_path, &target) {
            continue;
        }
        check_target(&out_folder, &target, location)?;
        patches.sort_unstable_by_key(|p| p.offset);
        outputs.write_beside(&target, &mut |w| write_patched(input, src, patches, w))?;
    }
    model_patches.sort_unstable_by_key(|p| p.offset);
    outputs.write_main(&mut |w| write_patched(input, reader.source(), &model_patches, w))
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

/// Write `src` into `w` with each patch's range (in order of offset) replaced by its new
/// tensor's bytes, each read, written and dropped in turn.
fn write_patched(input: &Replacements<'_>, src: &Source, patches: &[Patch<'_>], w: &mut dyn Output) -> Result<()> {
    let mut at = 0u64;
    for p in patches {
        if p.offset < at {
            return Err(Error::invalid(Rule::Overlap, format!("two replaced tensors share the bytes at {}", p.offset)));
        }
        copy_range(src, at, p.offset, w)?;
        w.write_all(&new_bytes(input, p)?)?;
        at = checked::add(p.offset, p.len, "end of a replaced tensor")?;
    }
    copy_range(src, at, src.len(), w)
}

/// The new tensor of `p`, dense and row-major: exactly as many bytes as it replaces.
fn new_bytes(input: &Replacements<'_>, p: &Patch<'_>) -> Result<Bytes> {
    let w = input.new_entry(p.pair).info();
    let bytes = input.read_new(p.pair)?.to_dense(w.dtype(), w.shape())?;
    if bytes.len() as u64 != p.len {
        let name = input.old_entry(p.pair).info().name();
        return Err(
            Error::usage(format!("{} bytes given where the model stores {}", bytes.len(), p.len)).for_tensor(name)
        );
    }
    Ok(bytes)
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
