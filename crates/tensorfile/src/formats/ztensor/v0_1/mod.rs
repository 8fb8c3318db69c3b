//! zTensor v0.1 (`.zt`): magic, 64-byte aligned blobs, a CBOR index at the end, its length last.
//!
//! Read: every dtype, raw and zstd, both byte orders, dense and sparse (the spec's
//! `layout: "sparse"` form, defined in `docs/zt-sparse.md`, and the reference's
//! `sparsecoo`/`sparsecsr` form), definite and indefinite CBOR, checksums. Write: streaming,
//! byte-compatible with the zTensor 0.1 reference for dense tensors.

mod extent;
mod index;
pub(super) mod interpret;
mod read;
mod sparse;
mod validate;
mod write;

pub use read::ZtReader;
pub use write::ZtWriter;

use crate::error::{Error, Result};
use crate::formats::{Caps, Extent, FormatUnit, Variant, plan_order};
use crate::model::{ByteOrder, ChecksumKind, DType, Layout, LayoutKind, TensorInfo};

/// `ZTEN0001`.
pub const MAGIC: &[u8; 8] = b"ZTEN0001";
/// Every blob starts at a multiple of this.
pub const ALIGNMENT: u64 = 64;

/// The zTensor v0.1 unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "zt",
    title: "zTensor v0.1",
    extensions: &["zt"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(ZtReader::open(src)?)),
    writer: Some(|out, plan, options| Ok(Box::new(ZtWriter::new(out, plan, options)?))),
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: Some(Variant { family: "zTensor", label: "0.1" }),
    companion: None,
    caps: Caps {
        holds_dtype: |d| dtype_name(d).is_some(),
        layouts: &[LayoutKind::Dense, LayoutKind::SparseCoo, LayoutKind::SparseCsr],
        tensor_fields: true,
        checksums: &[ChecksumKind::Crc32c, ChecksumKind::Sha256],
        compression: true,
        byte_orders: &[ByteOrder::Little, ByteOrder::Big],
        ..Caps::PLAIN
    },
    extent: Extent { magics: &[MAGIC], found_further: None, confirm: None, measure: extent::measure },
};

/// Whether `bytes` start like a `.zt` file.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The zTensor name of a dtype, for the 13 it defines.
pub fn dtype_name(d: DType) -> Option<&'static str> {
    match d {
        DType::Float64
        | DType::Float32
        | DType::Float16
        | DType::BFloat16
        | DType::Int64
        | DType::Int32
        | DType::Int16
        | DType::Int8
        | DType::UInt64
        | DType::UInt32
        | DType::UInt16
        | DType::UInt8
        | DType::Bool => Some(d.name()),
        _ => None,
    }
}

/// The dtype a zTensor name stands for.
pub fn dtype_from_name(name: &str) -> Option<DType> {
    DType::from_name(name).filter(|d| dtype_name(*d).is_some())
}

/// Whether a `.zt` file can store `info`.
pub fn check_supported(info: &TensorInfo) -> Result<()> {
    if dtype_name(info.dtype()).is_none() {
        return Err(Error::unsupported(format!("zTensor 0.1 has no dtype {}", info.dtype())));
    }
    if let Layout::Sparse { format: crate::model::SparseFormat::Csr, .. } = info.layout() {
        if info.shape().len() != 2 {
            return Err(Error::unsupported("CSR tensors must be 2-D"));
        }
    }
    Ok(())
}
