//! What a file that does not open really is.
//!
//! When opening fails, [`diagnose`] looks at a bounded sample of the file (its first and last
//! bytes, its length and its name) and names what the bytes are: a Git LFS pointer checked in
//! instead of the file, an HTML page or a JSON error body saved by a download, plain text, a
//! zero-filled file, a file cut short (the bytes present against the bytes its header says it
//! needs), or a file whose content is of another format than its extension says. The opening
//! error keeps its [`Rule`]; the [`Diagnosis`] rides along ([`Error::diagnosis`]) and leads its
//! message, so every shell shows the same words.

mod extent;
mod sniff;

use std::path::Path;

use crate::error::{Error, ErrorKind, Rule};
use crate::formats::Format;
use crate::source::Source;
#[cfg(test)]
use crate::source::sample::last_segment;

pub use crate::error::{Diagnosis, FormatName, Need};
pub use crate::source::{SAMPLE_BYTES, Sample};

/// The extension of the sampled file's name, lowercase, and the format it names.
fn claimed(sample: &Sample) -> Option<(String, Format)> {
    let (stem, ext) = sample.name()?.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    let ext = ext.to_ascii_lowercase();
    let format = Format::ALL.iter().copied().find(|f| f.unit().extensions().contains(&ext.as_str()))?;
    Some((ext, format))
}

/// What the sampled file is, given that opening it failed with `failure` (the rule it broke,
/// when known): `None` when nothing more can be said than the error does.
pub fn diagnose(sample: &Sample, failure: Option<Rule>) -> Option<Diagnosis> {
    let claimed = claimed(sample);
    if sample.is_empty() {
        let format = claimed.map(|(_, f)| f.as_name());
        return Some(Diagnosis::Truncated { format, by_extension: true, present: 0, need: Need::Empty });
    }
    let ours = extent::our_format(sample, claimed.as_ref().map(|c| c.1));
    if let Some((format, false)) = ours {
        // The content is of a format tensorfile reads: cut short, or not what its name says.
        if let Some(need) = extent::need(format, sample, failure) {
            return Some(Diagnosis::Truncated {
                format: Some(format.as_name()),
                by_extension: false,
                present: sample.len(),
                need,
            });
        }
        return claimed.filter(|(_, c)| family(*c) != family(format)).map(|(extension, claimed)| Diagnosis::Mismatch {
            found: format.as_name().a_file(),
            extension,
            claimed: claimed.as_name(),
        });
    }
    if let Some(found) = sniff::structured(sample) {
        return Some(match (found, claimed) {
            (Diagnosis::Foreign { what }, Some((extension, claimed))) => {
                Diagnosis::Mismatch { found: what, extension, claimed: claimed.as_name() }
            }
            (found, _) => found,
        });
    }
    // Only the extension can tell the format of a file whose format has no magic.
    if let Some((format, true)) = ours {
        if let Some(need) = extent::need(format, sample, failure) {
            return Some(Diagnosis::Truncated {
                format: Some(format.as_name()),
                by_extension: true,
                present: sample.len(),
                need,
            });
        }
    }
    sniff::text(sample)
}

/// Formats that share their usual extension are one family (`.zt` is any zTensor version;
/// `.pt`/`.bin` any zip or legacy checkpoint): one taken for another is not a mismatch.
fn family(f: Format) -> &'static str {
    f.unit().extensions()[0]
}

/// `e` (an error opening the file sampled from `src`) with what the file really is attached,
/// when that says more than the error: only content errors ([`ErrorKind::Invalid`]) are
/// diagnosed, and a failure to sample the file leaves `e` as it is.
pub(crate) fn explain(e: Error, src: &Source, name: Option<&Path>) -> Error {
    if !matches!(e.kind(), ErrorKind::Invalid { .. }) || e.diagnosis().is_some() {
        return e;
    }
    match Sample::of_source(src, name) {
        Ok(sample) => explain_sample(e, &sample),
        Err(_) => e,
    }
}

/// `e` with the diagnosis of `sample` attached, when there is one.
pub(crate) fn explain_sample(e: Error, sample: &Sample) -> Error {
    match diagnose(sample, e.rule()) {
        Some(d) => e.with_diagnosis(d),
        None => e,
    }
}

#[cfg(test)]
mod tests;
