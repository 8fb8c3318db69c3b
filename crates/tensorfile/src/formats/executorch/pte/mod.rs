//! ExecuTorch programs (`.pte`): an `ET12` flatbuffer, an optional `eh00` extended header,
//! then segments (constants, mutable initial state, delegate payloads, named data).
//!
//! Opening reads the headers and the flatbuffer (from a remote source: a speculative read of
//! the start, then the rest of the flatbuffer); segment data is read by range when a tensor
//! or a delegate payload is read. Rewrite weights (`rewrite`): move constants into a `.ptd`
//! (externalize) or replace their bytes (update).

mod header;
mod program;
mod read;
pub mod rewrite;
mod summary;
#[cfg(test)]
mod tests;
mod validate;

pub use header::HeaderLayout;
pub use program::{Origin, Program, ProgramTensor};
pub use read::PteReader;

/// Why tensors cannot be converted into a `.pte`.
pub const NOT_A_CONTAINER: &str =
    "a .pte is a program, not a tensor container: use `tensorfile externalize` or `update`";

/// Whether `bytes` look like a program: `ET` and two characters at byte 4.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.get(4..6) == Some(b"ET") && bytes.get(6..8).is_some_and(|v| v.iter().all(u8::is_ascii_alphanumeric))
}
