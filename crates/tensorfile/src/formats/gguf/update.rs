//! New tensors for a GGUF file: the same file, byte for byte, with the data of the named
//! tensors replaced (same ggml type and shape: dense data for plain types, in the file's byte
//! order; blocks verbatim). The header, key/values, infos and padding are copied as they are.

use std::io::Write;
use std::path::Path;

use super::GgufReader;
use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::model::quant::BLOCKS;
use crate::model::{ByteOrder, Layout};
use crate::output::AtomicFile;
use crate::source::{Bytes, Source};
use crate::swap;
use crate::update::{UpdateOptions, UpdateReport};

/// Bytes copied from the old file at once.
const COPY_PIECE: u64 = 64 << 20;

/// [`update`], then the result opened and checked whole (every tensor read) before it is
/// reported written: the unit's updater.
pub(crate) fn update_checked(
    file: &TensorFile,
    weights: &TensorFile,
    dest: &Path,
    options: &UpdateOptions,
) -> Result<UpdateReport> {
    let report = update(file, weights, dest, options.skip_unknown)?;
    if let Some(problem) = TensorFile::open(dest)?.verify().into_iter().next() {
        return Err(problem);
    }
    Ok(report)
}

/// One tensor to replace: where its bytes are, and which entry of the weights replaces them.
struct Patch {
    offset: u64,
    len: u64,
    source: usize,
    target: usize,
}

/// Write `dest`: the GGUF `file` with each tensor named in `weights` replaced by the one found
/// there (same dtype, shape and ggml type), every other byte as it was. With `skip_unknown`,
/// tensors of `weights` that `file` lacks are ignored, else they are an error. Unlike
/// [`crate::update::update`], the result is not opened again and checked.
pub fn update(file: &TensorFile, weights: &TensorFile, dest: &Path, skip_unknown: bool) -> Result<UpdateReport> {
    let reader = file.reader_as::<GgufReader>().ok_or_else(|| Error::usage("this update is for GGUF files"))?;
    let mut patches = Vec::new();
    let mut report = UpdateReport::default();
    for (wi, i) in crate::update::matched(file, weights, skip_unknown)? {
        let (w, e) = (weights.entries()[wi].info(), &file.entries()[i]);
        let same_layout = match e.info().layout() {
            Layout::Quantized(_) => w.layout() == e.info().layout(),
            _ => w.layout().reads_dense(),
        };
        if (w.dtype(), w.shape()) != (e.info().dtype(), e.info().shape()) || !same_layout {
            return Err(crate::update::mismatch(w, e.info()));
        }
        patches.push(Patch { offset: e.storage().offset(), len: e.storage().len(), source: wi, target: i });
        report.replaced.push(w.name().to_string());
    }
    report.unchanged = file.entries().len() - report.replaced.len();
    patches.sort_unstable_by_key(|p| p.offset);
    let src = reader.source();
    let mut out = AtomicFile::create(dest)?;
    {
        let mut w = out.writer();
        let mut at = 0u64;
        for p in &patches {
            copy(src, at, p.offset, &mut w)?;
            w.write_all(&new_bytes(file, weights, p)?)?;
            at = p.offset + p.len;
        }
        copy(src, at, src.len(), &mut w)?;
        w.flush()?;
    }
    out.commit()?;
    Ok(report)
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

/// The stored bytes of the tensor `p` puts in: blocks as they are, dense data in the file's
/// byte order; exactly as many as it replaces.
fn new_bytes(file: &TensorFile, weights: &TensorFile, p: &Patch) -> Result<Bytes> {
    let e = &file.entries()[p.target];
    let data = weights.read_verified(p.source)?;
    let bytes = match e.info().layout() {
        Layout::Quantized(_) => {
            data.part(BLOCKS).cloned().ok_or_else(|| Error::usage("ggml data without its blocks"))?
        }
        _ => {
            let dense = data.into_dense()?;
            let unit = e.info().dtype().swap_unit();
            if e.storage().byte_order() == ByteOrder::Big && unit > 1 {
                Bytes::from_vec(swap::swapped(&dense, unit))
            } else {
                dense
            }
        }
    };
    if bytes.len() as u64 != p.len {
        return Err(Error::usage(format!("{} bytes given where the file stores {}", bytes.len(), p.len))
            .for_tensor(e.info().name()));
    }
    Ok(bytes)
}
