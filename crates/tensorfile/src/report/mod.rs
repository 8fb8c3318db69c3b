//! A report of a file to look at: everything `info`, `ls`, `stats` and `diff` know of it,
//! gathered as one JSON document ([`gather`]) that a self-contained HTML page draws
//! ([`page::render`], [`write_html`]).
//!
//! The page knows nothing of formats: what is proper to a format arrives as generic
//! [`Section`]s (facts, tables, bar charts), made by the format's reader
//! ([`crate::formats::FormatReader::report_sections`]). The size of the document grows
//! with the number of tensors (a row, and a histogram of [`ReportOptions::bins`] counts,
//! each), never with their bytes.

mod bytes;
mod gather;
pub mod page;

use std::path::Path;

use serde_json::{Value as Json, json};

use crate::compare::Tolerance;
use crate::facts::FileFacts;
use crate::{Result, TensorFile};

pub use crate::describe::{Bar, MAX_BARS, Section};

/// What a report holds beyond the file's index.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Per-tensor statistics and histograms (reads every tensor's values).
    pub stats: bool,
    /// Bins of each tensor's histogram.
    pub bins: usize,
    /// The tolerance the comparison with another file counts values over.
    pub tolerance: Tolerance,
}

impl Default for ReportOptions {
    /// Statistics with 32-bin histograms; numpy's default tolerance.
    fn default() -> Self {
        ReportOptions { stats: true, bins: 32, tolerance: Tolerance::default() }
    }
}

/// The version of the document [`gather`] makes (the page checks it).
pub const REPORT_VERSION: u64 = 1;

/// The report of `file` (named `name`, as the user gave it), compared with `other` (and its
/// name) when given. `progress` is told how many more values are summarised as the statistics
/// advance (see [`crate::stats::total_values`]).
pub fn gather(
    file: &TensorFile,
    name: &str,
    options: &ReportOptions,
    other: Option<(&TensorFile, &str)>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Json> {
    let facts = FileFacts::of(file);
    let mut sections = bytes::sections(file);
    sections.extend(gather::parameter_sections(&facts));
    sections.extend(file.reader().report_sections(facts.structure.as_ref()));
    if !facts.metadata.is_empty() {
        let rows = facts.metadata_lines().into_iter().map(|(k, v)| vec![json!(k), json!(v)]).collect();
        sections.push(Section::table("Metadata", &["key", "value"], rows));
    }
    let mut tensors = gather::tensor_table(file);
    if options.stats {
        tensors["stats"] = Json::Array(gather::stats(file, options.bins, progress)?);
    }
    let compare = match other {
        Some((b, b_name)) => gather::compare(file, b, b_name, options.tolerance),
        None => Json::Null,
    };
    let title = Path::new(name).file_name().map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(json!({
        "report_version": REPORT_VERSION,
        "generator": concat!("tensorfile ", env!("CARGO_PKG_VERSION")),
        "title": title,
        "file": {
            "name": name,
            "format": file.format().name(),
            "format_title": file.format().unit().title(),
            "bytes": file.size(),
        },
        "summary": gather::summary(&facts, file),
        "sections": sections.iter().map(Section::to_json).collect::<Vec<_>>(),
        "tensors": tensors,
        "unreadable": file.unreadable().iter().map(|u| json!([u.name(), u.error().message()])).collect::<Vec<_>>(),
        "compare": compare,
    }))
}

/// Write the page of a report's document to `path`, atomically.
pub fn write_html(path: impl AsRef<Path>, data: &Json) -> Result<()> {
    let html = page::render(data);
    crate::output::write_atomically(path, |out| Ok(out.write_all(html.as_bytes())?))
}
