//! How many bytes a file of a format tensorfile reads says it needs, from its first and last
//! bytes: a cut-short file is told apart from a corrupt one by comparing that with its length.
//! Each format's fields are read here afresh, bounded by the sample, with no allocation sized
//! by the file: the readers refuse the file with their own rule; this only measures it.

use std::fmt;

use super::Sample;
use crate::error::Rule;
use crate::formats::Format;
use crate::units::thousands;

mod measure;

/// What a cut-short file needs that it does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Need {
    /// Its header places data up to this many bytes from the start.
    Data(u64),
    /// Its header itself ends this many bytes from the start.
    Header(u64),
    /// Its structure reaches at least this many bytes from the start.
    AtLeast(u64),
    /// It ends inside its magic, of this many bytes.
    Magic(u64),
    /// It ends inside its header, whose length only the missing bytes would tell.
    InHeader,
    /// The format keeps its index at the end of the file, and it is not there.
    IndexMissing,
    /// The file has no bytes at all.
    Empty,
    /// Its reader found its structure running past the end; how far is not known.
    Unknown,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::Data(n) => write!(f, "its header says the data needs {}", thousands(*n)),
            Need::Header(n) => write!(f, "its header needs {}", thousands(*n)),
            Need::AtLeast(n) => write!(f, "its contents need at least {}", thousands(*n)),
            Need::Magic(n) => write!(f, "it ends inside the {n}-byte magic"),
            Need::InHeader => f.write_str("it ends inside its header"),
            Need::IndexMissing => f.write_str("its index, kept at the end of the file, is missing"),
            Need::Empty => f.write_str("the file is empty"),
            Need::Unknown => f.write_str("its contents run past the end"),
        }
    }
}

const ZIP: &[u8] = b"PK\x03\x04";
const ZIP_END: &[u8] = b"PK\x05\x06";
const LEGACY_PT: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
const HDF5: &[u8] = b"\x89HDF\r\n\x1a\n";
/// The magics of the formats tensorfile reads that have one at byte 0.
const OURS: &[(&[u8], Format)] = &[
    (b"ZTEN0001", Format::Zt),
    (b"\x89ZT2\r\n\x1a\n", Format::Zt2),
    (b"ZTEN1000", Format::Zt1),
    (b"GGUF", Format::Gguf),
    (b"\x93NUMPY", Format::Npy),
    (HDF5, Format::Hdf5),
    (ZIP, Format::Pt),
    (LEGACY_PT, Format::Pt),
];

fn is_zip_format(f: Format) -> bool {
    matches!(f, Format::Pt | Format::Pt2 | Format::Npz | Format::Keras)
}

/// The format tensorfile reads that the sample is of, and whether only its extension says so
/// (`claimed`): recognised from the content, or from the start of a magic cut short, or (for
/// a format without magic bytes at the start) from the extension.
pub(super) fn our_format(s: &Sample, claimed: Option<Format>) -> Option<(Format, bool)> {
    let head = s.head();
    if head.starts_with(ZIP) {
        // Complete: the archive's entries say which; cut short, the extension, or torch.save.
        if s.whole() {
            if let Ok(names) = crate::zip::entry_names(head) {
                let format = crate::formats::Format::detect(head).ok()?;
                // torch.save is any other zip: one without a data.pkl is no checkpoint at all.
                let pickled = names.iter().any(|n| n.ends_with("data.pkl"));
                return (format != Format::Pt || pickled).then_some((format, false));
            }
        }
        return Some((claimed.filter(|c| is_zip_format(*c)).unwrap_or(Format::Pt), false));
    }
    if let Ok(format) = crate::formats::Format::detect(&head[..head.len().min(64)]) {
        return Some((format, false));
    }
    if measure::hdf5_at(head).is_some() {
        // After a user block: detection looks at byte 0 only, the HDF5 reader further.
        return Some((Format::Hdf5, false));
    }
    let cut_magic: Vec<Format> =
        OURS.iter().filter(|(m, _)| head.len() < m.len() && m.starts_with(head)).map(|&(_, f)| f).collect();
    let cut_magic = |f: Format| cut_magic.contains(&f) || (is_zip_format(f) && cut_magic.contains(&Format::Pt));
    match claimed {
        Some(c) if cut_magic(c) => Some((c, false)),
        _ if OURS.iter().any(|(m, _)| head.len() < m.len() && m.starts_with(head)) => {
            OURS.iter().find(|(m, _)| m.starts_with(head)).map(|&(_, f)| (f, false))
        }
        Some(c @ (Format::Safetensors | Format::Onnx | Format::Pte | Format::Ptd)) => Some((c, true)),
        _ => None,
    }
}

/// What a file of `format` that failed to open with `failure` needs and lacks: `None` when it
/// is not cut short, as far as its fields tell.
pub(super) fn need(format: Format, s: &Sample, failure: Option<Rule>) -> Option<Need> {
    let head = s.head();
    let magic = OURS.iter().find(|(m, f)| {
        (*f == format || (is_zip_format(format) && *f == Format::Pt)) && head.len() < m.len() && m.starts_with(head)
    });
    if let Some((m, _)) = magic {
        return Some(Need::Magic(m.len() as u64));
    }
    let found = match format {
        Format::Safetensors => measure::safetensors(s),
        Format::Npy => measure::npy(s),
        Format::Gguf => measure::gguf(s),
        Format::Pte => measure::pte(s),
        Format::Ptd => measure::ptd(s),
        Format::Hdf5 => measure::hdf5(s),
        Format::Onnx => measure::onnx(s),
        Format::Zt => measure::zt01(s),
        Format::Zt1 => (!s.tail().ends_with(b"ZTEN1000")).then_some(Need::IndexMissing),
        Format::Zt2 if s.len() < 48 => Some(Need::AtLeast(48)),
        Format::Zt2 => (!s.tail().ends_with(b"\x89ZT2\r\n\x1a\n")).then_some(Need::IndexMissing),
        Format::Pt if head.starts_with(LEGACY_PT) => None,
        Format::Pt | Format::Pt2 | Format::Npz | Format::Keras => measure::zip(s),
    };
    match found {
        Some(Need::Data(n) | Need::Header(n) | Need::AtLeast(n)) if n <= s.len() => None,
        Some(need) => Some(need),
        None => matches!(failure, Some(Rule::Truncated | Rule::OutOfBounds)).then_some(Need::Unknown),
    }
}

/// Little-endian unsigned integer of `n` bytes (at most 8) at `at`.
fn le(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(n)?)?;
    Some(bytes.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}
