//! One folder per format, each with the same shape: `read`, `write`, `validate`.
//!
//! A format plugs into the rest of the library through two traits: [`FormatReader`] (an
//! opened file's entries and their bytes) and [`FormatWriter`] (a streaming writer fed one
//! tensor at a time, in the order of the plan it was created with).

pub mod executorch;
pub mod pytorch;
pub mod safetensors;
pub mod ztensor;

use executorch::{ptd, pte};
use pytorch::{pt, pt2};
use ztensor::v0_1 as zt;

use std::any::Any;
use std::fmt;
use std::io::{Seek, Write};
use std::path::Path;

use crate::error::{Error, Result, Rule};
use crate::model::{
    ByteOrder, ChecksumKind, Chunks, Entry, Layout, MetaValue, TensorData, TensorInfo, Unreadable, gather,
};
use crate::source::{Bytes, Source};

/// How many leading bytes recognise every format ([`Format::detect`] looks at the first 12).
pub const DETECT_BYTES: u64 = 64;

/// The file formats this library knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Zt,
    Safetensors,
    /// ExecuTorch program.
    Pte,
    /// ExecuTorch named data.
    Ptd,
    /// A `torch.save` file.
    Pt,
    /// A PyTorch archive (`torch.export.save`, AOTInductor packages).
    Pt2,
}

impl Format {
    /// Every format, in the order detection tries them.
    pub const ALL: [Format; 6] = [Format::Zt, Format::Safetensors, Format::Pte, Format::Ptd, Format::Pt, Format::Pt2];

    pub fn name(self) -> &'static str {
        match self {
            Format::Zt => "zt",
            Format::Safetensors => "safetensors",
            Format::Pte => "pte",
            Format::Ptd => "ptd",
            Format::Pt => "pt",
            Format::Pt2 => "pt2",
        }
    }

    /// The format of a name as [`Format::name`] gives it (`"zt"`, `"safetensors"`...).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether files of this format carry file-level metadata (key/value text).
    pub fn holds_file_metadata(self) -> bool {
        matches!(self, Format::Safetensors)
    }

    /// The usual file extension (without the dot).
    pub fn extension(self) -> &'static str {
        self.name()
    }

    /// The format an output path asks for, from its extension.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        if matches!(ext.as_str(), "pth" | "bin") {
            return Ok(Format::Pt);
        }
        Format::ALL.into_iter().find(|f| f.extension() == ext).ok_or_else(|| {
            let known: Vec<_> = Format::ALL.iter().map(|f| format!(".{}", f.extension())).collect();
            Error::usage(format!(
                "cannot tell the output format of {}: use one of the extensions {}",
                path.display(),
                known.join(", ")
            ))
        })
    }

    /// Recognise a format from a file's leading bytes (never from its name).
    pub fn detect(bytes: &[u8]) -> Result<Format> {
        if zt::looks_like(bytes) {
            return Ok(Format::Zt);
        }
        if safetensors::looks_like(bytes) {
            return Ok(Format::Safetensors);
        }
        if ptd::looks_like(bytes) {
            return Ok(Format::Ptd);
        }
        if pte::looks_like(bytes) {
            return Ok(Format::Pte);
        }
        if pt::looks_like_legacy(bytes) {
            return Ok(Format::Pt);
        }
        if bytes.starts_with(b"PK\x03\x04") {
            let names = crate::zip::entry_names(bytes)?;
            return Ok(if pt2::looks_like(&names) { Format::Pt2 } else { Format::Pt });
        }
        Err(Error::invalid(Rule::UnknownFormat, "not a file format tensorfile recognises"))
    }

    /// Recognise the format of a file from its first bytes (and, for a zip archive, its entry
    /// names): for a remote file, a read of [`DETECT_BYTES`] bytes (and of the archive's
    /// central directory). A small read: the format's reader then reads its index where the
    /// format keeps it, at the start or at the end.
    pub fn detect_source(src: &Source) -> Result<Format> {
        let head = src.head(DETECT_BYTES)?;
        if head.starts_with(b"PK\x03\x04") {
            let names = crate::zip::entry_names_in(src)?;
            return Ok(if pt2::looks_like(&names) { Format::Pt2 } else { Format::Pt });
        }
        Format::detect(&head)
    }

    /// Open `src` as this format. A remote source is read by range: the reader fetches its
    /// index when it opens and a tensor's bytes when one is read.
    pub fn open(self, src: impl Into<Source>) -> Result<Box<dyn FormatReader>> {
        let src = src.into();
        match self {
            Format::Zt => Ok(Box::new(zt::ZtReader::open(src)?)),
            Format::Safetensors => Ok(Box::new(safetensors::SafetensorsReader::open(src)?)),
            Format::Pte => Ok(Box::new(pte::PteReader::open(src, None)?)),
            Format::Ptd => Ok(Box::new(ptd::PtdReader::open(src)?)),
            Format::Pt => Ok(Box::new(pt::PtReader::open(src)?)),
            Format::Pt2 => Ok(Box::new(pt2::Pt2Reader::open(src)?)),
        }
    }

    /// Whether this format can store `info`; the error says why not.
    pub fn check_supported(self, info: &TensorInfo) -> Result<()> {
        match self {
            Format::Zt => zt::check_supported(info),
            Format::Safetensors => safetensors::check_supported(info),
            Format::Ptd => ptd::check_supported(info),
            Format::Pt => pt::check_supported(info),
            Format::Pt2 => Err(Error::unsupported(pt2::NOT_A_CONTAINER)),
            Format::Pte => Err(Error::unsupported(pte::NOT_A_CONTAINER)),
        }
    }

    /// The order in which a writer of this format best stores `plan` (indices into it).
    /// safetensors tiles its data with no padding, so tensors of wider elements go first to
    /// keep every tensor aligned to its element size (as the safetensors library does).
    pub fn write_order(self, plan: &[TensorInfo]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..plan.len()).collect();
        if self == Format::Safetensors {
            order.sort_by_key(|&i| std::cmp::Reverse(plan[i].dtype.size().unwrap_or(0).min(8)));
        }
        order
    }

    /// A streaming writer of this format into `out`, which will receive exactly the tensors
    /// of `plan`, in order.
    pub fn writer<'w>(
        self,
        out: Box<dyn Output + 'w>,
        plan: &[TensorInfo],
        options: &WriteOptions,
    ) -> Result<Box<dyn FormatWriter + 'w>> {
        match self {
            Format::Zt => Ok(Box::new(zt::ZtWriter::new(out, plan, options)?)),
            Format::Safetensors => Ok(Box::new(safetensors::SafetensorsWriter::new(out, plan, options)?)),
            Format::Ptd => Ok(Box::new(ptd::PtdWriter::new(out, plan, options)?)),
            Format::Pt => Ok(Box::new(pt::PtWriter::new(out, plan, options)?)),
            Format::Pt2 => Err(Error::unsupported(pt2::NOT_A_CONTAINER)),
            Format::Pte => {
                Err(Format::Pte.check_supported(plan.first().unwrap_or(&TensorInfo::blob("", 0))).unwrap_err())
            }
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
    pub json: serde_json::Value,
    /// The same, as readable text (several lines).
    pub text: String,
}

/// An opened file of some format.
pub trait FormatReader: Send + Sync {
    fn format(&self) -> Format;
    fn summary(&self) -> FileSummary;
    /// The readable entries, in file order.
    fn entries(&self) -> &[Entry];
    /// Entries the file declares that cannot be read, each with its reason.
    fn unreadable(&self) -> &[Unreadable];
    /// Decode entry `index`; with `verify`, check its stored checksum first.
    fn read(&self, index: usize, verify: bool) -> Result<TensorData>;
    /// Decode dense entry `index` in pieces (see [`Chunks`]); with `verify`, check its stored
    /// checksum first. Formats whose tensors can be large and compressed decode them a
    /// piece at a time; the default hands over the whole tensor as one piece.
    fn read_chunks(&self, index: usize, verify: bool) -> Result<Chunks<'_>> {
        let data = self.read(index, verify)?;
        Ok(Box::new(std::iter::once(data.dense().cloned())))
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
}

/// Compression for writers that support it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
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
    pub compression: Compression,
    pub checksum: ChecksumKind,
    /// File-level metadata (safetensors `__metadata__`).
    pub metadata: Vec<(String, String)>,
    /// Byte order of raw multi-byte data, for formats that can choose (`.zt`); compressed
    /// zTensor data is always little-endian.
    pub byte_order: ByteOrder,
}

/// Where writers write: a file (or a buffer) they can seek back into, which formats whose
/// index comes first but depends on the data (`.ptd`) need.
pub trait Output: Write + Seek {}
impl<T: Write + Seek> Output for T {}

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
        self.write(&TensorData::Dense(data))
    }
    /// Write what follows the last tensor and flush. Errors if tensors are missing.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// The bytes a planned tensor handed over in pieces must add up to: its dense size (pieces
/// are for dense tensors only).
pub(crate) fn streamed_size(info: &TensorInfo) -> Result<u64> {
    if info.layout.is_sparse() {
        return Err(Error::usage("dense pieces for a sparse tensor"));
    }
    info.nbytes()
}

/// Check that pieces adding up to `got` bytes were what `info` promises (`want` bytes).
pub(crate) fn check_streamed(info: &TensorInfo, got: u64, want: u64) -> Result<()> {
    if got != want {
        return Err(Error::usage(format!(
            "{got} bytes given in pieces, dtype {} and shape {:?} need {want}",
            info.dtype, info.shape
        )));
    }
    Ok(())
}

/// Check that `data` is what `info` promises.
pub(crate) fn check_data(info: &TensorInfo, data: &TensorData) -> Result<()> {
    match (&info.layout, data) {
        (Layout::Sparse { format, nnz }, TensorData::Sparse(s)) => {
            if s.format != *format || s.nnz != *nnz {
                return Err(Error::usage(format!(
                    "sparse data is {} with nnz {}, the plan says {} with nnz {nnz}",
                    s.format.name(),
                    s.nnz,
                    format.name()
                )));
            }
            if s.values.len() as u64 != info.dtype.nbytes(*nnz)? {
                return Err(Error::usage(format!(
                    "{} bytes of sparse values for nnz {nnz} of {}",
                    s.values.len(),
                    info.dtype
                )));
            }
            s.validate(&info.shape)
        }
        (Layout::Sparse { .. }, TensorData::Dense(_)) => Err(Error::usage("dense data for a sparse tensor")),
        (_, TensorData::Sparse(_)) => Err(Error::usage("sparse data for a dense tensor")),
        (_, TensorData::Dense(b)) => {
            let want = info.nbytes()?;
            if b.len() as u64 != want {
                return Err(Error::usage(format!(
                    "{} bytes given, dtype {} and shape {:?} need {want}",
                    b.len(),
                    info.dtype,
                    info.shape
                )));
            }
            Ok(())
        }
    }
}

/// Open `data` (as `format`, or detected) and decode every entry with checksums verified,
/// asserting that what decodes has exactly its declared size. Errors are fine; panics are
/// bugs. The body of the fuzz targets (`fuzz/`) and of the regression test that replays
/// their findings on stable Rust.
#[doc(hidden)]
pub fn exercise(data: &[u8], format: Option<Format>) {
    let bytes = Bytes::from_vec(data.to_vec());
    let opened = match format {
        Some(f) => crate::TensorFile::from_bytes_as(bytes, f),
        None => crate::TensorFile::from_bytes(bytes),
    };
    let Ok(file) = opened else { return };
    let _ = file.summary();
    let _ = file.verify();
    for (i, entry) in file.entries().iter().enumerate() {
        let _ = entry.info.nbytes();
        if let Ok(d) = file.read_verified(i) {
            assert_eq!(d.len(), entry.nbytes, "entry {:?} decoded to a different size", entry.info.name);
        }
    }
}
