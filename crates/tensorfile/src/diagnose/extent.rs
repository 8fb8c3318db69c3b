//! How many bytes a file of a format tensorfile reads says it needs, from its first and last
//! bytes: a cut-short file is told apart from a corrupt one by comparing that with its length.
//! Every format fact (its magics, its measure) is its unit's ([`crate::formats::FormatUnit`]'s
//! extent); this asks every unit of the registry, in its order, and names none.

use super::{Need, Sample};
use crate::error::Rule;
use crate::formats::{Extent, Format};

/// The bytes detection is given when the start of a file is enough to tell its format.
const DETECT_HEAD: usize = 64;

fn extent(f: Format) -> &'static Extent {
    &f.unit().extent
}

/// Every magic of every unit, in the registry's order.
fn magics() -> impl Iterator<Item = &'static [u8]> {
    Format::ALL.iter().flat_map(|&f| extent(f).magics.iter().copied())
}

/// The unit that stands for the files starting with `magic`: the last registered of those
/// that have it (the one detection falls back to among them).
fn standing_for(magic: &[u8]) -> Option<Format> {
    Format::ALL.iter().rev().copied().find(|&f| extent(f).magics.contains(&magic))
}

/// A magic that `head` starts with and that several units share (a zip archive's).
fn shared_magic(head: &[u8]) -> Option<&'static [u8]> {
    magics().find(|m| head.starts_with(m) && Format::ALL.iter().filter(|&&f| extent(f).magics.contains(m)).count() > 1)
}

/// The magics a file of `format` cut short is measured by: those of the unit standing for
/// its magic (for a `.npz` or a `.pt2`, torch.save's: any zip or legacy start).
fn family_magics(format: Format) -> &'static [&'static [u8]] {
    let own = extent(format).magics;
    own.first().and_then(|m| standing_for(m)).map_or(own, |f| extent(f).magics)
}

/// Whether a file detection gave `format` is one indeed, as its unit tells.
fn confirmed(format: Format, s: &Sample) -> bool {
    extent(format).confirm.is_none_or(|confirm| confirm(s))
}

/// The format tensorfile reads that the sample is of, and whether only its extension says so
/// (`claimed`): recognised from the content, or from the start of a magic cut short, or (for
/// a format without magic bytes at the start) from the extension.
pub(super) fn our_format(s: &Sample, claimed: Option<Format>) -> Option<(Format, bool)> {
    let head = s.head();
    if let Some(magic) = shared_magic(head) {
        // Complete: the content says which; cut short, the extension, or the unit standing
        // for them.
        if s.whole() {
            if let Ok(format) = Format::detect(head) {
                return confirmed(format, s).then_some((format, false));
            }
        }
        let sharing = |c: &Format| extent(*c).magics.contains(&magic);
        return Some((claimed.filter(sharing).or_else(|| standing_for(magic))?, false));
    }
    if let Ok(format) = Format::detect(&head[..head.len().min(DETECT_HEAD)]) {
        return confirmed(format, s).then_some((format, false));
    }
    // A signature further in than detection looks (after an HDF5 user block).
    let further = Format::ALL.iter().copied().find(|&f| extent(f).found_further.is_some_and(|found| found(head)));
    if let Some(format) = further {
        return Some((format, false));
    }
    let cut = |m: &&[u8]| head.len() < m.len() && m.starts_with(head);
    match claimed {
        Some(c) if family_magics(c).iter().any(cut) => Some((c, false)),
        _ if magics().any(|m| cut(&m)) => {
            magics().find(|m| m.starts_with(head)).and_then(standing_for).map(|f| (f, false))
        }
        Some(c) if extent(c).magics.is_empty() => Some((c, true)),
        _ => None,
    }
}

/// What a file of `format` that failed to open with `failure` needs and lacks: `None` when it
/// is not cut short, as far as its fields tell.
pub(super) fn need(format: Format, s: &Sample, failure: Option<Rule>) -> Option<Need> {
    let head = s.head();
    if let Some(m) = family_magics(format).iter().find(|m| head.len() < m.len() && m.starts_with(head)) {
        return Some(Need::Magic(m.len() as u64));
    }
    match (extent(format).measure)(s) {
        Some(Need::Data(n) | Need::Header(n) | Need::AtLeast(n)) if n <= s.len() => None,
        Some(need) => Some(need),
        None => matches!(failure, Some(Rule::Truncated | Rule::OutOfBounds)).then_some(Need::Unknown),
    }
}
