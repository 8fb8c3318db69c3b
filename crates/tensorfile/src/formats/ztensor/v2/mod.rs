//! zTensor 2 (`.zt`, the format of pip `ztensor` 2.x, spec Draft 4): the magic
//! `\x89ZT2\r\n\x1a\n`, blobs at multiples of 4096, a manifest blob in deterministic CBOR,
//! and a 40-byte footer (manifest offset, length and XXH3-64, version 2, the magic again).
//!
//! Read: every object the spec and its registry profiles define, into the object model:
//! `dense` (the 12 storage types, and the logical types bool, fp8, fp4 and complex),
//! `zt.sparse_coo/1` and `zt.sparse_csr/1` (indices as `u64` parts), `gguf.<type>/1` (ggml
//! blocks), `zt.quant_group/1` and `zt.mx/1`; parts raw (zero-copy) or encoded
//! `zt.zstd-seekable/1`; `xxh3` and `sha256` digests over decoded bytes; parts in shard files
//! beside the root (`<stem>-<shard>.zt`). Every rule of the spec's validation summary refuses
//! the file; an object of a layout, encoding or logical type this library does not know is
//! listed unreadable, the rest of the file stays readable. Written in canonical form (spec §6.3):
//! dense, sparse and quantized tensors, file metadata, tensor fields (`write.rs`,
//! `describe.rs`, `canonical.rs`).
//!
//! The spec is the zTensor repository's `spec/ztensor-v2-spec.md`, its profiles
//! `spec/profiles/*.md`.

mod assemble;
mod blobs;
mod canonical;
mod describe;
mod edit;
mod footer;
pub(super) mod layouts;
pub(super) mod manifest;
mod plan;
mod quant;
pub(super) mod read;
mod seekable;
mod shards;
pub(super) mod types;
mod write;

#[cfg(test)]
pub(super) mod tests;

pub use read::Zt2Reader;

use crate::error::Need;
use crate::formats::{Caps, Extent, FormatUnit, Variant};
#[cfg(any(test, feature = "internals"))]
use crate::model::DType;
use crate::model::{ChecksumKind, LayoutKind};
use crate::source::Sample;

pub(crate) use describe::check_supported;
pub(crate) use write::{write_order, writer};

/// `\x89ZT2\r\n\x1a\n`, at the start of the file and at the end of its footer.
pub const MAGIC: &[u8; 8] = b"\x89ZT2\r\n\x1a\n";
/// Every blob starts at a multiple of this (and not before it).
pub const ALIGNMENT: u64 = 4096;
/// The footer's length, the last bytes of every file.
pub const FOOTER_LEN: u64 = 40;
/// The footer version this library reads.
pub const VERSION: u32 = 2;

/// The zTensor 2 unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "zt2",
    title: "zTensor 2",
    extensions: &["zt"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(Zt2Reader::open(src)?)),
    writer: Some(writer),
    updater: None,
    meta_editor: Some(edit::edit),
    check_supported,
    write_order,
    variant: Some(Variant { family: "zTensor", label: "2" }),
    companion: None,
    caps: Caps {
        holds_dtype: |d| describe::storage(d).is_some(),
        layouts: &[
            LayoutKind::Dense,
            LayoutKind::SparseCoo,
            LayoutKind::SparseCsr,
            LayoutKind::GgmlBlocks,
            LayoutKind::GroupQuant,
            LayoutKind::Mx,
        ],
        file_metadata: true,
        typed_metadata: true,
        tensor_fields: true,
        // The canonical writer stores an xxh3 digest of every part and never compresses.
        checksums: &[ChecksumKind::Xxh3],
        ..Caps::PLAIN
    },
    extent: Extent { magics: &[MAGIC], found_further: None, confirm: None, measure },
};

/// How long a zTensor 2 file should be, for `diagnose`: at least its header and footer, and
/// its footer ends in the magic again.
fn measure(s: &Sample) -> Option<Need> {
    if s.len() < 48 {
        return Some(Need::AtLeast(48));
    }
    (!s.tail().ends_with(MAGIC)).then_some(Need::IndexMissing)
}

/// Whether `bytes` start like a zTensor 2 file.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The dtypes zTensor 2 stores, for tests and the writer: the 12 storage types and the
/// registered logical types.
#[cfg(any(test, feature = "internals"))]
pub fn dtypes() -> Vec<DType> {
    DType::ALL.into_iter().filter(|&d| types::element_name(d).is_some()).collect()
}
