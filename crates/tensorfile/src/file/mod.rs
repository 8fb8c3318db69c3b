//! An opened tensor file of any format, or a set of files opened as one ([`sets`]): the entry
//! point of the library.

mod check_ahead;
pub mod digest;
mod open;
pub(crate) mod sets;
mod verify;

pub use digest::{DigestFrom, ExpectedDigest};
pub use open::OpenOptions;
pub use verify::{Depth, FileDigest, NonFinite, Verification};

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ahead::Ahead;
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::{FileSummary, Format, FormatReader};
use crate::model::{ByteOrder, Chunks, Encoding, Entry, Kind, Layout, TensorData, Unreadable};
use crate::source::{Bytes, Source};
use sets::{MergedSet, ShardSet};

/// How far [`TensorFile::read_each`] fetches ahead of its caller in a remote file: bytes of
/// entries fetched (or being fetched) and not yet handed over.
pub const READ_AHEAD_BYTES: u64 = 64 << 20;
/// Entries fetched at once by [`TensorFile::read_each`] in a remote file.
const READ_AHEAD_THREADS: usize = 4;

/// A tensor file, opened and validated; its format is recognised from its content.
pub struct TensorFile {
    path: Option<PathBuf>,
    /// Read over the network: worth fetching ahead.
    remote: bool,
    size: u64,
    reader: Arc<dyn FormatReader>,
    /// Entry indices sorted by name: lookups by binary search, with no copy of any name.
    by_name: Vec<usize>,
    /// The single file the entries' storage offsets point into (none for a set, or for a
    /// program opened with its `.ptd`): what [`Self::read_rows`] reads raw rows from.
    source: Option<Source>,
    /// What is checked as it is read ([`OpenOptions::verify`]).
    verify: Verify,
    /// Checks of the entries after the one read, for a caller reading in order (a local file
    /// read with [`Verify`] on).
    check_ahead: Option<check_ahead::Checks>,
    /// The files with a digest they must have, and that digest ([`Verify::Full`]).
    expected: Vec<(PathBuf, ExpectedDigest)>,
}

/// What [`OpenOptions::verify`] has checked as a file is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Nothing: [`TensorFile::read_index`] is the fast path, [`TensorFile::read_verified`]
    /// checks.
    #[default]
    Off,
    /// Every checksum the format stores (zTensor's crc32c or sha256 and xxh3 digests, HDF5's
    /// fletcher32, the CRCs of zip members), checked on the bytes of every tensor read; an
    /// entry that a failed checksum of the file's metadata left unreadable refuses the open.
    /// Which bytes each format's checksums cover: docs/verify.md.
    Checksums,
    /// The checksums, and the sha256 of every file whose digest is known: given
    /// ([`OpenOptions::expect_sha256`]), in a `.sha256` file beside it, or the one the
    /// Hugging Face hub lists for it as the tools that fetched it left it (the cache blob's
    /// name, a `--local-dir` download's record, a clone's Git LFS pointer:
    /// [`digest::expected_digest`]); checked by [`TensorFile::check_digests`].
    Full,
}

/// How [`OpenOptions::access`] reaches a local file's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Access {
    /// Mapped: nothing is read until a tensor is, and the pages are the page cache's.
    #[default]
    Map,
    /// Read whole into memory first, around the page cache ([`Bytes::read_direct`]): the
    /// fastest way to every tensor of a file that is not cached; tensors are views of that
    /// memory.
    ReadWhole,
    /// [`Access::ReadWhole`] when the file is not in the page cache (a few pages of it
    /// probed), else [`Access::Map`]: what loading every tensor wants.
    ReadWholeIfCold,
}

impl TensorFile {
    /// The format's reader.
    pub(crate) fn reader(&self) -> &dyn FormatReader {
        self.reader.as_ref()
    }

    pub(super) fn from_source_as(src: Source, format: Format) -> Result<Self> {
        let size = src.len();
        let mut file = Self::from_reader(format.open(src.clone())?, size)?;
        file.source = Some(src);
        Ok(file)
    }

    pub(super) fn from_reader(reader: Box<dyn FormatReader>, size: u64) -> Result<Self> {
        let entries = reader.entries();
        let mut by_name: Vec<usize> = (0..entries.len()).collect();
        by_name.sort_unstable_by(|&a, &b| entries[a].info().name().cmp(entries[b].info().name()));
        if let Some(w) = by_name.windows(2).find(|w| entries[w[0]].info().name() == entries[w[1]].info().name()) {
            let name = entries[w[0]].info().name();
            return Err(Error::invalid(Rule::DuplicateName, format!("two entries are named {name:?}")));
        }
        Ok(TensorFile {
            path: None,
            remote: false,
            size,
            reader: Arc::from(reader),
            by_name,
            source: None,
            verify: Verify::Off,
            check_ahead: None,
            expected: Vec::new(),
        })
    }

    /// The path it was opened from: the file, or for a set the index or folder (none for a
    /// list of files).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many readable entries are tensors, and how many are blobs.
    pub fn kind_counts(&self) -> (usize, usize) {
        let tensors = self.entries().iter().filter(|e| e.info().kind() == Kind::Tensor).count();
        (tensors, self.entries().len() - tensors)
    }

    /// Whether this is a set of files (a sharded checkpoint, a list of files, files merged).
    pub fn is_set(&self) -> bool {
        self.reader_as::<ShardSet>().is_some() || self.reader_as::<MergedSet>().is_some()
    }

    /// For a set of files, the shard holding entry `index` (for merged files, the file).
    pub fn shard_of(&self, index: usize) -> Option<&Path> {
        match self.reader_as::<MergedSet>() {
            Some(merged) => merged.file_of(index),
            None => self.reader_as::<ShardSet>()?.shard_of(index),
        }
    }

    /// Size of the file in bytes (of every shard, for a set).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The file's format (for a set of files, the format every shard shares; for merged
    /// files, the first one's).
    pub fn format(&self) -> Format {
        self.reader.format()
    }

    /// File-level facts shown by `info`: the version, metadata and the format's own details.
    pub fn summary(&self) -> FileSummary {
        self.reader.summary()
    }

    /// Readable entries in file order.
    pub fn entries(&self) -> &[Entry] {
        self.reader.entries()
    }

    /// Entries that are declared but cannot be read.
    pub fn unreadable(&self) -> &[Unreadable] {
        self.reader.unreadable()
    }

    /// The format's own reader, for format-specific operations: `file.reader_as::<PteReader>()`.
    pub fn reader_as<R: 'static>(&self) -> Option<&R> {
        self.reader.as_any().downcast_ref::<R>()
    }

    /// The index in [`TensorFile::entries`] of the readable entry named `name`; `None` when no
    /// readable entry has that name (a lookup, not a scan).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        let entries = self.reader.entries();
        self.by_name.binary_search_by(|&i| entries[i].info().name().cmp(name)).ok().map(|k| self.by_name[k])
    }

    /// The readable entry named `name`; `None` when there is none.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.index_of(name).map(|i| &self.entries()[i])
    }

    /// Decode entry `index`: its stored checksum checked when the file was opened to verify
    /// ([`OpenOptions::verify`]), else not (the fast path).
    pub fn read_index(&self, index: usize) -> Result<TensorData> {
        self.read_with(index, self.verifies())
    }

    /// The local files its bytes are in: the file, or every shard of a set (none for bytes in
    /// memory or a remote object).
    pub(crate) fn local_files(&self) -> Vec<PathBuf> {
        if self.remote {
            return Vec::new();
        }
        match self.reader_as::<ShardSet>() {
            Some(set) => set.files().map(Path::to_path_buf).collect(),
            None => self.path.iter().filter(|p| p.is_file()).cloned().collect(),
        }
    }

    /// Whether reads check stored checksums ([`OpenOptions::verify`]).
    pub fn verifies(&self) -> bool {
        self.verify != Verify::Off
    }

    /// The files whose digest is checked by [`TensorFile::check_digests`], and the digests
    /// expected.
    pub fn expected_digests(&self) -> &[(PathBuf, ExpectedDigest)] {
        &self.expected
    }

    /// Check every file with an expected digest (in parallel): the first mismatch as an error
    /// naming the file, both digests and where the expected one came from; else each file
    /// and its digest.
    pub fn check_digests(&self) -> Result<Vec<(PathBuf, [u8; 32])>> {
        use rayon::prelude::*;
        self.expected
            .par_iter()
            .map(|(path, want)| Ok((path.clone(), digest::check_file_digest(path, want)?)))
            .collect()
    }

    /// Run `load` (reading the file) and, beside it on another thread, [`TensorFile::check_digests`]:
    /// `load`'s result only when the digests hold, so that nothing of a file that is not the
    /// one expected is handed over.
    pub fn while_checking_digests<T: Send>(&self, load: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        if self.expected.is_empty() {
            return load();
        }
        let (loaded, checked) = rayon::join(load, || self.check_digests());
        checked?;
        loaded
    }

    /// Whether the file is read over the network (worth fetching ahead).
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Decode entry `index`, verifying its stored checksum first when it has one.
    pub fn read_verified(&self, index: usize) -> Result<TensorData> {
        self.read_with(index, true)
    }

    /// Decode the entry called `name`.
    pub fn read(&self, name: &str) -> Result<TensorData> {
        let i = self.index_of(name).ok_or_else(|| self.context(Error::not_found(name)))?;
        self.read_index(i)
    }

    fn read_with(&self, index: usize, verify: bool) -> Result<TensorData> {
        let entry =
            self.entries().get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        let read = match &self.check_ahead {
            Some(ahead) if verify => ahead.0.read(&self.reader, index),
            _ => self.reader.read(index, verify),
        };
        read.map_err(|e| self.context(e.for_tensor(entry.info().name())))
    }

    /// Rows `rows` of the first dimension of dense entry `index`: their bytes, contiguous,
    /// row-major and little-endian. Stored raw and little-endian (or in single bytes), only
    /// those bytes are read: a slice of the map, or of a remote file only that range (at the
    /// entry's [`crate::model::Storage`] offset).
    /// Otherwise the entry is decoded and the rows sliced out of it. Sparse entries and
    /// scalars have no rows to read; rows past the first dimension are a usage error.
    pub fn read_rows(&self, index: usize, rows: Range<u64>) -> Result<Bytes> {
        let entry =
            self.entries().get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        let fail = |e: Error| self.context(e.for_tensor(entry.info().name()));
        if !entry.info().layout().reads_dense() {
            return Err(fail(Error::unsupported(format!(
                "rows of a {} tensor cannot be read alone: read it whole",
                entry.info().layout().describe()
            ))));
        }
        let Some(&count) = entry.info().shape().first() else {
            return Err(fail(Error::usage("a scalar has no rows")));
        };
        if rows.start > rows.end || rows.end > count {
            return Err(fail(Error::usage(format!("rows {}..{} of a tensor of {count} rows", rows.start, rows.end))));
        }
        let row_bytes = checked::numel(&entry.info().shape()[1..])
            .and_then(|n| checked::mul(n, entry.info().dtype().bits(), "row size"))
            .map_err(fail)?;
        if row_bytes % 8 != 0 {
            return Err(fail(Error::unsupported(format!("rows of {} do not start on a byte", entry.info().dtype()))));
        }
        let row_bytes = row_bytes / 8;
        let start = checked::mul(rows.start, row_bytes, "row offset").map_err(fail)?;
        let len = checked::mul(rows.end - rows.start, row_bytes, "rows").map_err(fail)?;
        let storage = entry.storage();
        let raw = *entry.info().layout() == Layout::Dense
            && storage.encoding() == Encoding::Raw
            && (storage.byte_order() == ByteOrder::Little || entry.info().dtype().size() == Some(1))
            && storage.len() == entry.nbytes();
        match &self.source {
            // A remote file: fetch only the rows' range of the entry's stored bytes.
            Some(src) if raw && src.is_remote() => {
                let offset = checked::add(storage.offset(), start, "row offset").map_err(fail)?;
                src.range(offset, len).map_err(fail)
            }
            // A local one: raw data reads as a slice of the map (nothing is copied, and only
            // the rows' pages are touched); other data is decoded, then sliced.
            _ => {
                let data = self.read_index(index)?;
                data.as_dense().and_then(|d| d.slice(start, len)).map_err(fail)
            }
        }
    }

    /// Decode the entries `indices`, in that order, handing each to `f` as it comes; stops at
    /// the first error `f` returns. For a remote file, entries are fetched ahead of `f` on a
    /// few threads, up to [`READ_AHEAD_BYTES`] beyond the entry `f` has (one larger entry is
    /// fetched alone): the network stays busy across entries and small entries do not each
    /// wait for a round trip.
    pub fn read_each(
        &self,
        indices: &[usize],
        verify: bool,
        f: &mut dyn FnMut(usize, Result<TensorData>) -> Result<()>,
    ) -> Result<()> {
        if !self.remote {
            return indices.iter().try_for_each(|&i| f(i, self.read_with(i, verify)));
        }
        let entries = self.entries();
        let ahead = Ahead { threads: READ_AHEAD_THREADS, window: READ_AHEAD_BYTES };
        crate::ahead::read_in_order(
            indices.len(),
            ahead,
            &|k| indices.get(k).and_then(|&i| entries.get(i)).map_or(0, |e| e.nbytes()),
            &|k| self.read_with(indices[k], verify),
            &mut |k, data| f(indices[k], data),
        )
    }

    /// Decode dense entry `index` in pieces (see [`Chunks`]): a large compressed tensor is
    /// never whole in memory. With `verify`, its stored checksum is checked before the pieces
    /// end: first, or, for a large tensor stored raw and handed over as one piece, on a second
    /// thread while the caller takes the piece, a mismatch then coming as the item after it
    /// (take every item).
    pub fn read_chunks(&self, index: usize, verify: bool) -> Result<Chunks<'_>> {
        let entry =
            self.entries().get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        let name = entry.info().name().to_string();
        let pieces = self.reader.read_chunks(index, verify).map_err(|e| self.context(e.for_tensor(&name)))?;
        Ok(Box::new(pieces.map(move |piece| piece.map_err(|e| self.context(e.for_tensor(&name))))))
    }

    fn context(&self, e: Error) -> Error {
        match &self.path {
            Some(p) => e.in_file(p),
            None => e,
        }
    }
}
