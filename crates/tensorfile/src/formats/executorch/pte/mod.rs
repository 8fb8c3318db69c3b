//! ExecuTorch programs (`.pte`): an `ET12` flatbuffer, an optional `eh00` extended header,
//! then segments (constants, mutable initial state, delegate payloads, named data).
//!
//! Opening reads the headers and the flatbuffer (from a remote source: a speculative read of
//! the start, then the rest of the flatbuffer); segment data is read by range when a tensor
//! or a delegate payload is read. Rewrite weights (`rewrite`): move constants into a `.ptd`
//! (externalize) or replace their bytes (update).

mod delegates;
mod extent;
mod header;
mod program;
mod read;
mod report;
pub(crate) mod rewrite;
mod summary;
#[cfg(test)]
mod tests;
mod validate;

#[cfg(any(test, feature = "internals"))]
pub use delegates::DelegateGraph;
#[cfg(any(test, feature = "internals"))]
pub use header::HeaderLayout;
#[cfg(any(test, feature = "internals"))]
pub use program::{Origin, Program, ProgramTensor};
pub use read::PteReader;

use super::scalar_type_of;
use crate::error::Error;
use crate::formats::{Caps, Companion, Extent, FormatUnit, plan_order};
use crate::model::LayoutKind;

/// The ExecuTorch program unit: read, and updated in place of its weights; not written from
/// tensors alone.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "pte",
    title: "ExecuTorch program",
    extensions: &["pte"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(PteReader::open(src, None)?)),
    writer: None,
    updater: Some(rewrite::update),
    meta_editor: None,
    check_supported: |_| Err(Error::unsupported(NOT_A_CONTAINER)),
    write_order: plan_order,
    variant: None,
    companion: Some(Companion {
        what: "a .ptd of external tensors",
        open_data: |data| Ok(Box::new(super::ptd::PtdReader::open(data)?)),
        open: |program, data| {
            let ptd = data.downcast::<super::ptd::PtdReader>().map_err(|_| Error::usage("not a .ptd"))?;
            Ok(Box::new(PteReader::open(program, Some(*ptd))?))
        },
    }),
    caps: Caps {
        holds_dtype: |d| scalar_type_of(d).is_some(),
        layouts: &[LayoutKind::Dense, LayoutKind::DimOrder],
        blobs: true,
        ..Caps::PLAIN
    },
    extent: Extent { magics: &[], found_further: None, confirm: None, measure: extent::measure },
};

/// Why tensors cannot be converted into a `.pte`.
pub const NOT_A_CONTAINER: &str =
    "a .pte is a program, not a tensor container: use `tensorfile externalize` or `update`";

/// Whether `bytes` look like a program: `ET` and two characters at byte 4.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.get(4..6) == Some(b"ET") && bytes.get(6..8).is_some_and(|v| v.iter().all(u8::is_ascii_alphanumeric))
}
