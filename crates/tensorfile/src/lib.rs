//! tensorfile: read, write, check and convert tensor files without running anyone's code.
//!
//! ```no_run
//! let file = tensorfile::TensorFile::open("model.zt")?;
//! for entry in file.entries() {
//!     println!("{} {} {:?}", entry.info.name, entry.info.dtype, entry.info.shape);
//! }
//! let bytes = file.read("weight")?; // zero-copy when stored raw little-endian
//! # Ok::<(), tensorfile::Error>(())
//! ```
//!
//! Layers, from the file up: [`source`] (bytes: a memory map or a buffer), [`formats`] (one
//! module per format, each a reader and a streaming writer), [`model`] (format-neutral
//! tensors), [`TensorFile`] (an opened file of any format), [`convert`] (any reader into any
//! writer), [`shards`] (a set of files as one: sharded checkpoints, read and written).

mod ahead;
pub mod checked;
pub mod compare;
pub mod convert;
pub mod cursor;
mod error;
pub mod facts;
mod file;
pub mod flatbuf;
pub mod formats;
pub mod limits;
pub mod model;
pub mod npy;
pub mod output;
pub mod pickle;
pub mod shards;
pub mod source;
mod swap;
pub mod update;
pub mod zip;

pub use error::{Error, ErrorKind, Hint, Result, Rule};
pub use file::{Depth, READ_AHEAD_BYTES, TensorFile, Verification};
pub use formats::{Compression, Format, WriteOptions};
pub use model::{DType, Entry, Kind, Layout, TensorData, TensorInfo};
