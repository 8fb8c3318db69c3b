//! GGUF (ggml's file format, llama.cpp's models): a header (`GGUF`, a `u32` version, `u64`
//! tensor and key/value counts), typed key/values, tensor infos (name, `ne` with the fastest
//! dimension first, ggml type, offset), then the data region, aligned to `general.alignment`
//! (32 by default), every tensor at a multiple of it.
//!
//! Read: versions 2 and 3, little- and big-endian (told apart by the version, as ggml does);
//! every key/value with its type; tensors of plain ggml types (F32, F16, BF16, F64, I8–I64) as
//! dense tensors of their dtype, block types (Q4_0, Q4_K, IQ2_XXS...) as
//! [`Quant::Ggml`](crate::model::quant::Quant) tensors whose one part, `blocks`, is the stored
//! bytes. Shapes are `ne` reversed (numpy's order, as gguf-py gives them). A tensor of a type
//! this library does not know is listed as unreadable; the rest of the file reads.
//!
//! Written: version 3, little-endian, as gguf-py's `GGUFWriter` lays it out (infos in plan
//! order, each tensor's data padded to the alignment, the last one too); key/values keep
//! their types (module `metadata` says how untyped values are typed). No `general.architecture` is
//! added: readers do not need one (llama.cpp's model loader does, to pick a model).
//! Updated: tensors replaced in place, same type and shape, every other byte kept.
//! Split models (`model-00001-of-00003.gguf`..., llama.cpp's `llama-gguf-split`): the facts in
//! `split`; read as one file by `file::sets`, written and merged by `convert`.
//!
//! The spec is ggml's `docs/gguf.md`; gguf-py (`GGUFReader`, `GGUFWriter`) and ggml's
//! `gguf.cpp` are the reference reader and writers.

mod encode;
mod extent;
mod header;
mod index;
mod metadata;
mod read;
pub(crate) mod split;
#[cfg(test)]
mod tests;
mod edit;
mod update;
mod write;

pub use encode::{IndexTensor, encode_padded_index, write_padding};
pub use read::GgufReader;
pub use write::GgufWriter;

use crate::error::{Error, Result};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};
use crate::model::quant::{GgmlType, Quant};
use crate::model::{Kind, Layout, LayoutKind, TensorInfo};

/// The key that sets the alignment.
pub(crate) const ALIGNMENT_KEY: &str = "general.alignment";
/// The alignment of a file that sets none.
pub(crate) const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml's longest tensor name, in bytes (`GGML_MAX_NAME` is 64 with the terminating NUL).
pub(crate) const MAX_NAME_BYTES: usize = 63;
/// ggml's most dimensions (`GGML_MAX_DIMS`).
pub(crate) const MAX_RANK_READ_BY_GGML: usize = 4;

/// The GGUF unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "gguf",
    title: "GGUF",
    extensions: &["gguf"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(GgufReader::open(src)?)),
    writer: Some(|out, plan, options| Ok(Box::new(GgufWriter::new(out, plan, options)?))),
    updater: Some(update::update),
    meta_editor: Some(edit::edit),
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps {
        holds_dtype: |d| GgmlType::for_dtype(d).is_some(),
        layouts: &[LayoutKind::Dense, LayoutKind::GgmlBlocks],
        file_metadata: true,
        typed_metadata: true,
        ..Caps::PLAIN
    },
    extent: Extent { magics: &[header::MAGIC], found_further: None, confirm: None, measure: extent::measure },
};

/// Whether `bytes` start like a GGUF file (the magic is the same in either byte order).
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(header::MAGIC)
}

/// The ggml type a tensor is stored as in a GGUF file: its blocks' type, or the plain type of
/// its dtype; an error for a tensor GGUF cannot hold.
pub fn ggml_type(info: &TensorInfo) -> Result<GgmlType> {
    match info.layout() {
        Layout::Quantized(Quant::Ggml(t)) => Ok(*t),
        layout if layout.reads_dense() => GgmlType::for_dtype(info.dtype())
            .ok_or_else(|| Error::unsupported(format!("GGUF has no dtype {}", info.dtype()))),
        layout => {
            Err(Error::unsupported(format!("GGUF holds dense tensors and ggml blocks, not {} ones", layout.describe())))
        }
    }
}

/// Whether a GGUF file can store `info` so that ggml loads it: a tensor of a plain ggml type or
/// of ggml blocks, of at most 4 dimensions, named in at most 63 bytes; the error says why not.
pub fn check_supported(info: &TensorInfo) -> Result<()> {
    if info.kind() == Kind::Blob {
        return Err(Error::unsupported("GGUF holds tensors, not opaque blobs"));
    }
    ggml_type(info)?;
    if info.shape().len() > MAX_RANK_READ_BY_GGML {
        return Err(Error::unsupported(format!(
            "{} dimensions: ggml reads at most {MAX_RANK_READ_BY_GGML}",
            info.shape().len()
        )));
    }
    if info.name().len() > MAX_NAME_BYTES {
        return Err(Error::unsupported(format!(
            "a name of {} bytes: ggml reads at most {MAX_NAME_BYTES}",
            info.name().len()
        )));
    }
    Ok(())
}
