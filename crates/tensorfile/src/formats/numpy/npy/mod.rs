//! `.npy`: one array, as `numpy.save` writes it. Recognised by its magic (`\x93NUMPY`).
//!
//! Read: format versions 1.0, 2.0 and 3.0, every numeric dtype in either byte order, C or
//! Fortran order (Fortran-order arrays are listed with a reversed `dim_order` layout and read
//! as row-major), 0-d and empty arrays. The array is named after the file's stem
//! (`weights.npy` holds `weights`), or [`UNNAMED`] when the file has no path. Other dtypes
//! (objects, strings, structured...) make the file's one entry unreadable. Written when a plan
//! holds exactly one tensor, as `numpy.save` writes it.

mod extent;
mod read;
mod write;

pub use read::NpyReader;
#[cfg(any(test, feature = "internals"))]
pub use read::UNNAMED;
pub use write::NpyWriter;
pub(crate) use write::header_of;

use super::{check_supported, header::has_magic, holds_dtype};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};

/// The `.npy` unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "npy",
    title: "NumPy array",
    extensions: &["npy"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(NpyReader::open(src)?)),
    writer: Some(|out, plan, _| Ok(Box::new(NpyWriter::new(out, plan)?))),
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps { holds_dtype, ..Caps::PLAIN },
    extent: Extent { magics: &[super::MAGIC], found_further: None, confirm: None, measure: extent::measure },
};

/// Whether `bytes` start like an `.npy` file: the magic.
pub fn looks_like(bytes: &[u8]) -> bool {
    has_magic(bytes)
}
