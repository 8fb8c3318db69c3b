//! Bytes in and out: where a file's bytes come from ([`Source`]: a memory map, a buffer, or a
//! remote object read by range, its ranges cached between loads where [`set_remote_cache`]
//! or [`CACHE_DIR_ENV`] says; [`Bytes`]: shared, sliceable views of them), where written
//! bytes go ([`Output`], atomic files that replace their destination only once complete), and
//! staging a file's bytes into reused buffers on their way to a device ([`stage`]).

pub use crate::output::{AtomicFile, FileWriter, Output, StagedFile, write_atomically};
#[cfg(feature = "remote")]
pub use crate::source::cache::{CACHE_DIR_ENV, CACHE_LIMIT_ENV, DEFAULT_CACHE_LIMIT, RemoteCache, set_remote_cache};
pub use crate::source::{
    Bytes, PRIVATE_MAP_MIN, PrivateBytes, REMOTE_SCHEMES, SPECULATIVE_READ, Source, file_is_cached, is_cached, is_url,
    url_of,
};

/// Staging a file's bytes for a device: windows of the file read into page-aligned buffers
/// (`pread` on every core, or `O_DIRECT` when the file is not cached), for a loader to copy
/// on; packed stages for tensors that must be decoded first.
pub mod stage {
    pub use crate::stage::{
        DEFAULT_CHUNK, Deferred, Direct, Filled, Held, MIN_CHUNK, Piece, ReadLater, StageBuffer, StagePipeline,
        StagePlan, StageTensor,
    };
}
