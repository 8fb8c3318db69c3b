//! What a file holds, shown: `info`'s facts ([`FileFacts`]), `ls`'s rows ([`rows`],
//! [`entry_rows`]), parameter counts ([`Parameters`]), tensors printed as numpy prints them
//! ([`show`]), what a file that does not open really is ([`diagnose`]), tensors written as
//! `.npy` for other tools ([`write_npy`]), and sizes and counts for people ([`size`]).

pub use crate::diagnose::{FormatName, Need, SAMPLE_BYTES, Sample, diagnose};
pub use crate::export::{numpy_descr, write_npy};
pub use crate::facts::{FileFacts, meta_text};
pub use crate::listing::{EntryRow, entry_rows, format_rows, rows};
pub use crate::parameters::{Parameters, WIDTHS};
pub use crate::show::{AxisSlice, Extent, MAX_SHOWN, Selected, Shown, Slice, show};
pub use crate::units::{size, size_exact, thousands};
