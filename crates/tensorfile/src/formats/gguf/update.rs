//! New tensors for a GGUF file: the same file, byte for byte, with the data of the named
//! tensors replaced (same ggml type and shape: dense data for plain types, in the file's byte
//! order; blocks verbatim). The header, key/values, infos and padding are copied as they are.

use super::GgufReader;
use super::split;
use crate::error::{Error, Result};
use crate::formats::{Replacement, Replacements, UpdateOutputs, mismatch};
use crate::model::quant::BLOCKS;
use crate::model::{ByteOrder, Layout};
use crate::output::copy_range;
use crate::source::Bytes;
use crate::swap;

/// One tensor to replace: where its bytes are, and which pair replaces them.
struct Patch<'r> {
    offset: u64,
    len: u64,
    pair: &'r Replacement,
}

/// The unit's updater: the GGUF file with each tensor of the pairs replaced by its new one
/// (same dtype, shape and ggml type), every other byte as it was.
pub(crate) fn update(input: &Replacements<'_>, outputs: &mut dyn UpdateOutputs) -> Result<()> {
    let reader = input.file_as::<GgufReader>().ok_or_else(|| split::not_one_file("its tensors replaced"))?;
    let mut patches = Vec::new();
    for pair in input.pairs {
        let (w, e) = (input.new_entry(pair).info(), input.old_entry(pair));
        let same_layout = match e.info().layout() {
            Layout::Quantized(_) => w.layout() == e.info().layout(),
            _ => w.layout().reads_dense(),
        };
        if (w.dtype(), w.shape()) != (e.info().dtype(), e.info().shape()) || !same_layout {
            return Err(mismatch(w, e.info()));
        }
        patches.push(Patch { offset: e.storage().offset(), len: e.storage().len(), pair });
    }
    patches.sort_unstable_by_key(|p| p.offset);
    let src = reader.source();
    outputs.write_main(&mut |w| {
        let mut at = 0u64;
        for p in &patches {
            copy_range(src, at, p.offset, w)?;
            w.write_all(&new_bytes(input, p)?)?;
            at = p.offset + p.len;
        }
        copy_range(src, at, src.len(), w)
    })
}

/// The stored bytes of the tensor `p` puts in: blocks as they are, dense data in the file's
/// byte order; exactly as many as it replaces.
fn new_bytes(input: &Replacements<'_>, p: &Patch<'_>) -> Result<Bytes> {
    let e = input.old_entry(p.pair);
    let data = input.read_new(p.pair)?;
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
