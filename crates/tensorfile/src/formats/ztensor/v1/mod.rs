//! zTensor 1.x (`.zt`, the format of the `ztensor` crates and pip package 1.x): the magic
//! `ZTEN1000`, components at multiples of 64 bytes, a CBOR manifest, its length and the magic
//! again last. pip `ztensor` 2.x reads neither these files nor v0.1's.
//!
//! Read: the manifest's objects (`dense`, `sparse_csr`, `sparse_coo`) with their components
//! (the 13 dtypes, logical types, raw or zstd, `crc32c:`/`sha256:` digests of the stored
//! bytes) and attributes, into the structures of zTensor 2 (`v2`), whose layout rules then
//! apply. A format the manifest names without a definition (`quantized_group`, others) is
//! listed unreadable. Write: no.

mod read;
#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "internals"))]
pub use read::open;

use crate::error::{Error, Need, Result};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};
use crate::model::{ChecksumKind, LayoutKind, TensorInfo};

/// `ZTEN1000`, at the start of the file and at its end.
pub const MAGIC: &[u8; 8] = b"ZTEN1000";
/// Components start at multiples of this.
pub const ALIGNMENT: u64 = 64;

/// The zTensor 1.x unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "zt1",
    title: "zTensor 1",
    extensions: &["zt"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(read::open(src)?)),
    writer: None,
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps {
        holds_dtype: |d| super::v0_1::dtype_name(d).is_some(),
        layouts: &[LayoutKind::Dense, LayoutKind::SparseCoo, LayoutKind::SparseCsr],
        file_metadata: true,
        typed_metadata: true,
        tensor_fields: true,
        checksums: &[ChecksumKind::Crc32c, ChecksumKind::Sha256],
        compression: true,
        ..Caps::PLAIN
    },
    extent: Extent {
        magics: &[MAGIC],
        found_further: None,
        confirm: None,
        // The index and the magic again at the end.
        measure: |s| (!s.tail().ends_with(MAGIC)).then_some(Need::IndexMissing),
    },
};

/// Whether `bytes` start like a zTensor 1.x file.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// zTensor 1.x files are read only.
fn check_supported(info: &TensorInfo) -> Result<()> {
    Err(Error::unsupported(format!("tensorfile does not write zTensor 1 files ({})", info.name())))
}
