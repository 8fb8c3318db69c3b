//! `.npz`: a zip archive of `.npy` members, as `numpy.savez` (stored members, zip64 extra
//! fields on each) and `numpy.savez_compressed` (deflated members) write it.
//!
//! Recognised from the archive's entry names: a zip archive with at least one entry, every
//! one of them named `*.npy` (a `torch.save` file always holds a `data.pkl`, a `.pt2`
//! archive an `archive_format` or a model folder). Members are named as
//! `numpy.load(...).files` names them: the `.npy` suffix stripped, other names kept as they
//! are. A member holding an array reads as a tensor (stored members as a slice of the map,
//! deflated ones inflated into a buffer of their declared size); a member that is not an
//! `.npy` file reads as a blob of its bytes (NumPy hands back its bytes too); a member whose
//! array tensorfile does not read (objects, strings, a broken header...) is listed unreadable
//! with its reason, and the others stay readable.
//!
//! Written by `convert` with every member stored, named `<tensor>.npy`, streamed one tensor at
//! a time (zip64 records where a member or the archive passes 4 GiB).

mod read;
mod write;

pub use read::NpzReader;
pub use write::NpzWriter;

use super::{check_supported, holds_dtype};
use crate::formats::extent::{ZIP_MAGIC, zip_archive};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};

/// The `.npz` unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "npz",
    title: "NumPy archive",
    extensions: &["npz"],
    recognise: |probe| probe.zip_names().is_some_and(looks_like),
    open: |src| Ok(Box::new(NpzReader::open(src)?)),
    writer: Some(|out, plan, _| Ok(Box::new(NpzWriter::new(out, plan)?))),
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps { holds_dtype, ..Caps::PLAIN },
    extent: Extent { magics: &[ZIP_MAGIC], found_further: None, confirm: None, measure: zip_archive },
};

/// Whether a zip archive's entry names are those of an `.npz`: at least one, all ending in
/// `.npy`.
pub fn looks_like(names: &[String]) -> bool {
    !names.is_empty() && names.iter().all(|n| n.ends_with(".npy"))
}

/// The name `numpy.load(...).files` gives a member.
pub fn member_name(entry: &str) -> &str {
    entry.strip_suffix(".npy").unwrap_or(entry)
}
