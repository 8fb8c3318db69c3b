//! zTensor 2 (`\x89ZT2\r\n\x1a\n`), the format of pip `ztensor` 2.x: aligned blobs, a
//! deterministic-CBOR manifest after them, a 40-byte footer pointing at it. Written in
//! canonical form (spec §6.3): dense, sparse and quantized tensors, file metadata, tensor
//! fields. Reading is not merged yet.

mod canonical;
mod describe;
mod write;

use crate::error::Error;
use crate::formats::{Caps, FormatUnit};
use crate::model::LayoutKind;

pub(crate) use describe::check_supported;
pub(crate) use write::{write_order, writer};

/// The zTensor 2 unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "zt2",
    title: "zTensor 2",
    extensions: &["zt"],
    recognise: |probe| probe.head().starts_with(&canonical::MAGIC),
    open: |_| Err(not_read()),
    writer: Some(writer),
    updater: None,
    check_supported,
    write_order,
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
        ..Caps::PLAIN
    },
};

fn not_read() -> Error {
    Error::unsupported("tensorfile does not read zTensor 2 files yet (the reader is not merged)")
}
