//! A small vocabulary for describing a file's structure without knowing its format: pairs of
//! facts, tables and bar charts ([`Section`], [`Bar`]), and the generic layout of a format's
//! JSON description into them ([`sections`]). Formats speak it (a reader's
//! `report_sections`); the report renders it.

mod section;
mod structure;

pub use section::{Bar, MAX_BARS, Section};
pub use structure::sections;
