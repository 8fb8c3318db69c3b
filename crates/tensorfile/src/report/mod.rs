//! The HTML report: one self-contained page (its style, script and data inline) for a file.

pub mod page;
