//! tensorfile: read, write, check and convert tensor files without running anyone's code.
//!
//! ```no_run
//! let file = tensorfile::TensorFile::open("model.zt")?;
//! for entry in file.entries() {
//!     println!("{} {} {:?}", entry.info().name(), entry.info().dtype(), entry.info().shape());
//! }
//! let bytes = file.read("weight")?; // zero-copy when stored raw little-endian
//! # Ok::<(), tensorfile::Error>(())
//! ```
//!
//! Layers, from the file up: [`source`] (bytes: a memory map or a buffer), [`formats`] (one
//! module per format, each a reader and a streaming writer), [`model`] (format-neutral
//! tensors), [`TensorFile`] (an opened file of any format), [`convert`] (any reader into any
//! writer), [`shards`] (a set of files as one: sharded checkpoints, read and written).

#![warn(missing_docs)]

/// Modules the library keeps to itself; with the feature `internals` (this workspace's own
/// tests, conformance generator and fuzz targets) they are public, hidden from the docs.
macro_rules! internal_modules {
    ($($name:ident),+) => {
        $(
            #[cfg(feature = "internals")]
            #[doc(hidden)]
            pub mod $name;
            // What only the tests use is unused without them.
            #[cfg(not(feature = "internals"))]
            #[allow(dead_code, unused_imports)]
            mod $name;
        )+
    };
}

internal_modules!(checked, cursor, flatbuf, pickle, zip);

mod ahead;
pub mod compare;
pub mod convert;
pub mod describe;
pub mod diagnose;
pub mod dump;
mod error;
pub mod executorch;
pub mod export;
pub mod facts;
mod file;
pub mod formats;
pub mod limits;
pub mod listing;
pub mod model;
pub mod numbers;
pub mod output;
pub mod parameters;
pub mod report;
pub mod shards;
pub mod show;
pub mod source;
pub mod stage;
pub mod stats;
mod swap;
pub mod units;
pub mod update;

/// The library's internal modules, for this workspace's own tests, conformance generator and
/// fuzz targets (feature `internals`): not part of the API, no stability promised.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::fuzzing::exercise;
    pub use crate::{checked, cursor, flatbuf, pickle, zip};
}

#[cfg(feature = "internals")]
mod fuzzing;

pub use error::{Error, ErrorKind, Hint, Result, Rule};
pub use file::{Access, Depth, OpenOptions, READ_AHEAD_BYTES, TensorFile, Verification};
pub use formats::{Compression, Format, WriteOptions};
pub use model::{DType, Entry, Kind, Layout, TensorData, TensorInfo};
