//! One unit per format: a folder (nested by family: `executorch/{pte,ptd}`,
//! `pytorch/{pt,pt2}`, `ztensor/v0_1`) whose `UNIT` descriptor says what the format is
//! called, how its files are recognised, what it can hold ([`Caps`]) and which reader, writer
//! and updater serve it. The registry lists the units; [`Format`] names them.
//!
//! A format plugs into the rest of the library through two traits: [`FormatReader`] (an
//! opened file's entries and their bytes, kept in a [`Catalog`]) and [`FormatWriter`] (a
//! streaming writer fed one tensor at a time, in the order of the plan it was created with).

mod catalog;
mod extent;
mod registry;
mod request;
mod unit;

// The units: reached through the registry ([`Format`]), each named only by this workspace's
// tests (feature `internals`).
internal_modules!(executorch, gguf, hdf5, keras, numpy, onnx, pytorch, safetensors, ztensor);

/// Every limit the readers and writers enforce (sizes, counts, nesting, expansion), in one
/// place: a file past one is refused with a rule, never read at a cost it chooses.
pub mod limits {
    pub use crate::limits::*;
}

pub use catalog::Catalog;
pub use registry::Format;
pub use request::{Ignored, WriteOption, WriteRequest};
pub(crate) use unit::Extent;
pub use unit::{Caps, Companion, FormatUnit, MetaEdits, Probe, Replacement, Replacements, UpdateOutputs, Variant};
pub(crate) use unit::{mismatch, plan_order};

pub use crate::output::Output;
pub(crate) use crate::output::{HASH_BESIDE_MIN, write_hashing};

use std::any::Any;

use crate::error::{Error, Result};
use crate::model::{
    ByteOrder, ChecksumKind, Chunks, Entry, Layout, MetaValue, TensorData, TensorInfo, Unreadable, gather,
};
use crate::source::Bytes;

/// How many leading bytes recognise every format ([`Format::detect`] looks at the first 12).
pub(crate) const DETECT_BYTES: u64 = 64;

/// File-level facts shown by `info`.
#[derive(Debug, Clone, Default)]
pub struct FileSummary {
    /// The format's version as the file states it (e.g. `0.1` from `ZTEN0001`).
    pub version: String,
    /// File-level metadata written by the file's producer (safetensors `__metadata__`...).
    pub metadata: Vec<(String, MetaValue)>,
    /// Facts about the file's structure (index or header size...).
    pub details: Vec<(String, MetaValue)>,
    /// A format-specific description (an ExecuTorch program's methods...), when the format
    /// has more to say than its entries.
    pub structure: Option<Structure>,
}

/// A format-specific description of a file, for `info`.
#[derive(Debug, Clone)]
pub struct Structure {
    /// The description as JSON (`info --json`).
    pub json: serde_json::Value,
    /// The same, as readable text (several lines).
    pub text: String,
}

/// An opened file of some format.
pub trait FormatReader: Send + Sync {
    /// The file's format.
    fn format(&self) -> Format;
    /// File-level facts shown by `info`: version, metadata, details, a description.
    fn summary(&self) -> FileSummary;
    /// What the file's index holds: its entries and those that cannot be read.
    fn catalog(&self) -> &Catalog;
    /// The readable entries, in file order.
    fn entries(&self) -> &[Entry] {
        self.catalog().entries()
    }
    /// Entries the file declares that cannot be read, each with its reason.
    fn unreadable(&self) -> &[Unreadable] {
        self.catalog().unreadable()
    }
    /// Decode entry `index`; with `verify`, check its stored checksum first.
    fn read(&self, index: usize, verify: bool) -> Result<TensorData>;
    /// Decode dense entry `index` in pieces (see [`Chunks`]); with `verify`, check its stored
    /// checksum first. Formats whose tensors can be large and compressed decode them a
    /// piece at a time; the default hands over the whole tensor as one piece.
    fn read_chunks(&self, index: usize, verify: bool) -> Result<Chunks<'_>> {
        let data = self.read(index, verify)?;
        Ok(Box::new(std::iter::once(data.as_dense().cloned())))
    }
    /// The reader itself, for format-specific operations (`TensorFile::reader_as`).
    fn as_any(&self) -> &dyn Any;
    /// Problems of the file beyond its entries (rules a consumer checks at load), for
    /// `verify`.
    fn check(&self) -> Vec<Error> {
        Vec::new()
    }
    /// Check every checksum the file stores against the bytes it covers, decoding only what
    /// the checksum is computed over: the problems found and how many checksums were
    /// checked. The default: the format stores none.
    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        (Vec::new(), 0)
    }
    /// What a report (`tensorfile report`) shows of the file beyond its tensors, given the
    /// format's description ([`FileSummary::structure`], already made for the report's
    /// summary). The default: that description laid out as facts, tables and counts.
    fn report_sections(&self, description: Option<&Structure>) -> Vec<crate::describe::Section> {
        description.map(|s| crate::describe::sections("Structure", &s.json)).unwrap_or_default()
    }
}

/// Compression for writers that support it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Data stored as it is (the default).
    #[default]
    None,
    /// zstd at this level (1..=22; 0 means the library default, 3).
    Zstd(i32),
}

impl std::str::FromStr for Compression {
    type Err = Error;
    /// `none`, `zstd` or `zstd:LEVEL`.
    fn from_str(s: &str) -> Result<Self> {
        match s.split_once(':') {
            None if s == "none" => Ok(Compression::None),
            None if s == "zstd" => Ok(Compression::Zstd(3)),
            Some(("zstd", level)) => {
                let level: i32 = level.parse().map_err(|_| Error::usage(format!("bad zstd level {level:?}")))?;
                let range = zstd::compression_level_range();
                if !range.contains(&level) {
                    return Err(Error::usage(format!(
                        "zstd level {level} outside {}..={}",
                        range.start(),
                        range.end()
                    )));
                }
                Ok(Compression::Zstd(level))
            }
            _ => Err(Error::usage(format!("unknown compression {s:?} (expected none, zstd or zstd:LEVEL)"))),
        }
    }
}

/// Options every writer takes; each uses what its format can store.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Compression of tensor data, for formats that compress (`.zt`); none by default.
    pub compression: Compression,
    /// Checksum stored with each tensor, for formats that store them (`.zt`); CRC-32C by
    /// default.
    pub checksum: ChecksumKind,
    /// File-level metadata (safetensors `__metadata__`, GGUF key/values): typed values for
    /// formats whose [`Caps::typed_metadata`] keeps them, text for the others.
    pub metadata: Vec<(String, MetaValue)>,
    /// Byte order of raw multi-byte data, for formats that can choose (`.zt`); compressed
    /// zTensor data is always little-endian.
    pub byte_order: ByteOrder,
}

/// `stored` as the one piece of a tensor, checked by `check` on a second thread while the
/// consumer takes the piece (a conversion copying it into its output): the check's error, if
/// any, comes as the item after the piece, so a consumer that takes every item (every writer
/// does) fails before it finishes the tensor. Small pieces are checked first, in place.
pub(crate) fn checked_beside(
    stored: Bytes,
    check: impl FnOnce(&[u8]) -> Result<()> + Send + 'static,
) -> Result<Chunks<'static>> {
    if stored.len() < HASH_BESIDE_MIN {
        check(&stored)?;
        return Ok(Box::new(std::iter::once(Ok(stored))));
    }
    let piece = stored.clone();
    let checking = std::thread::spawn(move || check(&piece));
    let after = std::iter::once(checking).filter_map(|checking| match checking.join() {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(Err(e)),
        Err(_) => Some(Err(Error::from(std::io::Error::other("checking a tensor's checksum panicked")))),
    });
    Ok(Box::new(std::iter::once(Ok(stored)).chain(after)))
}

/// Write `tensors` as a complete file of `format` in memory.
pub fn write_to_vec(format: Format, tensors: &[(TensorInfo, TensorData)], options: &WriteOptions) -> Result<Vec<u8>> {
    let plan: Vec<TensorInfo> = tensors.iter().map(|(i, _)| i.clone()).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = format.writer(Box::new(&mut out), &plan, options)?;
    for (_, d) in tensors {
        w.write(d)?;
    }
    w.finish()?;
    Ok(out.into_inner())
}

/// A streaming writer: give it the data of each planned tensor in order, then finish.
pub trait FormatWriter {
    /// Write the next planned tensor.
    fn write(&mut self, data: &TensorData) -> Result<()>;
    /// Write the next planned tensor, dense, from its pieces: `open` yields them, and may be
    /// called again by a writer that needs two passes over the data. Writers that can stream
    /// keep no more than a few pieces in memory; the default gathers the tensor whole.
    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let data = gather(open()?)?;
        self.write(&TensorData::dense(data))
    }
    /// Write what follows the last tensor and flush. Errors if tensors are missing.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// The bytes a planned tensor handed over in pieces must add up to: its dense size (pieces
/// are for dense tensors only).
pub(crate) fn streamed_size(info: &TensorInfo) -> Result<u64> {
    if !info.layout().reads_dense() {
        return Err(Error::usage(format!("dense pieces for a {} tensor", info.layout().describe())));
    }
    info.nbytes()
}

/// Check that pieces adding up to `got` bytes were what `info` promises (`want` bytes).
pub(crate) fn check_streamed(info: &TensorInfo, got: u64, want: u64) -> Result<()> {
    if got != want {
        return Err(Error::usage(format!(
            "{got} bytes given in pieces, dtype {} and shape {:?} need {want}",
            info.dtype(),
            info.shape()
        )));
    }
    Ok(())
}

/// Copy the pieces `open` gives of dense tensor `info` into `out` as they come, checking they
/// add up to its size (errors name the tensor; nothing is opened for a tensor that is not
/// dense): the bytes written. For writers that store a tensor's bytes verbatim.
pub(crate) fn copy_streamed<'s>(
    out: &mut dyn Output,
    info: &TensorInfo,
    open: &mut dyn FnMut() -> Result<Chunks<'s>>,
) -> Result<u64> {
    copy_streamed_hashing(out, info, open, None)
}

/// What a checksum being computed is given the bytes through.
pub(crate) type HashSink<'h> = &'h mut (dyn FnMut(&[u8]) + Send);

/// [`copy_streamed`], passing the bytes to `hash` too (beside the copy: [`write_hashing`]).
pub(crate) fn copy_streamed_hashing<'s>(
    out: &mut dyn Output,
    info: &TensorInfo,
    open: &mut dyn FnMut() -> Result<Chunks<'s>>,
    mut hash: Option<HashSink<'_>>,
) -> Result<u64> {
    let want = streamed_size(info).map_err(|e| e.for_tensor(info.name()))?;
    let mut got = 0u64;
    for piece in open()? {
        let piece = piece?;
        got += piece.len() as u64;
        if got > want {
            break;
        }
        match hash.as_deref_mut() {
            Some(hash) => write_hashing(out, &piece, |b| hash(b))?,
            None => out.write_bytes(&piece)?,
        }
    }
    check_streamed(info, got, want).map_err(|e| e.for_tensor(info.name()))?;
    Ok(want)
}

/// Check that `data` is what `info` promises.
pub(crate) fn check_data(info: &TensorInfo, data: &TensorData) -> Result<()> {
    match (info.layout(), data.layout()) {
        (Layout::Sparse { format, nnz }, Layout::Sparse { format: got, nnz: got_nnz }) => {
            if got != format || got_nnz != nnz {
                return Err(Error::usage(format!(
                    "sparse data is {} with nnz {got_nnz}, the plan says {} with nnz {nnz}",
                    got.name(),
                    format.name()
                )));
            }
            let s = data.to_sparse()?;
            if s.values().len() as u64 != info.dtype().nbytes(*nnz)? {
                return Err(Error::usage(format!(
                    "{} bytes of sparse values for nnz {nnz} of {}",
                    s.values().len(),
                    info.dtype()
                )));
            }
            s.validate(info.shape())
        }
        (Layout::Quantized(q), got) => {
            if got != info.layout() {
                return Err(Error::usage(format!("{} data for a {} tensor", got.describe(), q.describe())));
            }
            for spec in info.parts()? {
                let have = data.part(spec.name()).map_or(0, |b| b.len() as u64);
                if have != spec.nbytes()? {
                    return Err(Error::usage(format!(
                        "{have} bytes given for part {} of a {} tensor of shape {:?}, which needs {}",
                        spec.name(),
                        q.describe(),
                        info.shape(),
                        spec.nbytes()?
                    )));
                }
            }
            Ok(())
        }
        (_, Layout::Quantized(q)) => Err(Error::usage(format!("{} data for a dense tensor", q.describe()))),
        (Layout::Sparse { .. }, _) => Err(Error::usage("dense data for a sparse tensor")),
        (_, Layout::Sparse { .. }) => Err(Error::usage("sparse data for a dense tensor")),
        _ => {
            let b = data.as_dense()?;
            let want = info.nbytes()?;
            if b.len() as u64 != want {
                return Err(Error::usage(format!(
                    "{} bytes given, dtype {} and shape {:?} need {want}",
                    b.len(),
                    info.dtype(),
                    info.shape()
                )));
            }
            Ok(())
        }
    }
}
