//! The zTensor family. `v0_1`: zTensor v0.1 (`ZTEN0001`), the format of the seed reference
//! (pip `ztensor==0.1.4`); `v1`: zTensor 1.x (`ZTEN1000`, pip `ztensor` 1.x), read into the
//! structures of `v2`: zTensor 2 (`\x89ZT2\r\n\x1a\n`, the format of pip `ztensor` 2.x).
//! What they share: CBOR (`cbor`) and zstd frames decoded into exactly their declared size
//! (`zstd_frames`).

pub(crate) mod cbor;
pub mod v0_1;
pub mod v1;
pub mod v2;
pub(crate) mod zstd_frames;
