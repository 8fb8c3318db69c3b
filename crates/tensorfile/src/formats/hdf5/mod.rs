//! HDF5: the files h5py, Keras, TensorFlow, netCDF-4 and MATLAB write (`.h5`, `.hdf5`, Keras
//! `.weights.h5`, `.nc`, MATLAB v7.3 `.mat`).
//!
//! A bounded reader of the subset those producers use, written here: superblock versions 0
//! to 3, object headers v1 and v2, old-style groups (symbol tables over B-tree v1 nodes and
//! local heaps) and new-style ones (link messages, dense links in a fractal heap indexed by a
//! B-tree v2), attributes (compact and dense) as metadata, and the datasets `dataset/` reads
//! (compact, contiguous and chunked, deflate, shuffle and fletcher32, numeric dtypes in
//! either byte order). Read only; see docs/hdf5.md for what is refused and why no
//! third-party HDF5 crate is used. The specification: the HDF5 File Format Specification
//! version 3.0 (The HDF Group).

mod attribute;
mod btree2;
mod checksum;
mod dataset;
mod dense;
mod extent;
mod group;
mod io;
mod object_header;
mod read;
mod superblock;

pub use read::Hdf5Reader;

use crate::error::{Error, Result};
use crate::formats::{Caps, Extent, FormatUnit};
use crate::model::{ByteOrder, DType, TensorInfo};

/// The HDF5 unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "hdf5",
    title: "HDF5",
    // MATLAB v7.3 `.mat` files are HDF5 after a 512-byte user block (older `.mat` files are
    // not HDF5: their content decides).
    extensions: &["h5", "hdf5", "mat"],
    recognise: extent::recognise,
    open: |src| Ok(Box::new(Hdf5Reader::open(src)?)),
    writer: None,
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: crate::formats::plan_order,
    variant: None,
    companion: None,
    caps: Caps {
        holds_dtype: holds,
        file_metadata: true,
        typed_metadata: true,
        tensor_fields: true,
        compression: true,
        byte_orders: &[ByteOrder::Little, ByteOrder::Big],
        ..Caps::PLAIN
    },
    extent: Extent {
        magics: &[superblock::SIGNATURE],
        // After a user block: detection looks there once nothing recognised the head.
        found_further: Some(|head| extent::signature_at(head).is_some()),
        confirm: None,
        measure: extent::measure,
    },
};

/// The dtypes this reader reads from HDF5 datasets.
fn holds(d: DType) -> bool {
    use DType::*;
    matches!(
        d,
        Bool | UInt8
            | Int8
            | UInt16
            | Int16
            | UInt32
            | Int32
            | UInt64
            | Int64
            | Float16
            | BFloat16
            | Float32
            | Float64
            | Complex64
            | Complex128
    )
}

/// Whether `bytes` start with the HDF5 signature (detection also finds it after a user block,
/// at 512, 1024... bytes).
#[cfg(any(test, feature = "internals"))]
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(superblock::SIGNATURE)
}

/// tensorfile reads HDF5 files but does not write them.
pub fn check_supported(_info: &TensorInfo) -> Result<()> {
    Err(Error::unsupported("tensorfile reads HDF5 files but does not write them"))
}

/// lookup3 as HDF5 computes its checksums: for the conformance generator's hand-built files.
#[cfg(feature = "internals")]
pub fn lookup3(bytes: &[u8]) -> u32 {
    checksum::lookup3(bytes)
}
