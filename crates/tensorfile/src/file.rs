//! An opened tensor file of any format: the entry point of the library.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::ahead::Ahead;
use crate::checked;
use crate::diagnose::{self, Sample};
use crate::error::{Error, Result, Rule};
use crate::formats::{DETECT_BYTES, FileSummary, Format, FormatReader};
use crate::model::{ByteOrder, Chunks, Encoding, Entry, Kind, Layout, TensorData, Unreadable};
use crate::shards::{self, MergedSet, ShardSet};
use crate::source::{self, Bytes, Source};

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
    reader: Box<dyn FormatReader>,
    /// Entry indices sorted by name: lookups by binary search, with no copy of any name.
    by_name: Vec<usize>,
    /// The single file the entries' storage offsets point into (none for a set, or for a
    /// program opened with its `.ptd`): what [`Self::read_rows`] reads raw rows from.
    source: Option<Source>,
}

/// How [`TensorFile::open_with`] reaches a local file's bytes.
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
    /// Map `path` and open it. A folder, or the index of a sharded checkpoint
    /// (`model.safetensors.index.json`), opens as one file holding every tensor of its shards
    /// (see [`crate::shards`]).
    ///
    /// A URL (`https://`, `s3://`, `gs://`, `az://`) opens the remote object ([`Self::open_url`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, Access::Map)
    }

    /// [`Self::open`], a local file's bytes reached as `access` says (a URL or a folder opens
    /// as [`Self::open`] opens it).
    pub fn open_with(path: impl AsRef<Path>, access: Access) -> Result<Self> {
        let path = path.as_ref();
        if let Some(url) = source::url_of(path) {
            return Self::open_url(url);
        }
        let whole = match access {
            Access::Map => false,
            Access::ReadWhole => true,
            Access::ReadWholeIfCold => !path.is_dir() && !source::is_cached(path),
        };
        let bytes = if whole { Bytes::read_direct(path) } else { Bytes::map_file(path) };
        let bytes = match bytes {
            Ok(bytes) => bytes,
            // A folder cannot be mapped: only then is it worth asking whether it is one.
            Err(_) if path.is_dir() => return Self::from_set(ShardSet::open_folder(path), Some(path)),
            Err(e) => return Err(e),
        };
        let format = match Format::detect(&bytes) {
            Ok(format) => format,
            Err(e) if e.rule() == Some(Rule::UnknownFormat) && shards::looks_like_index(&bytes) => {
                // Not an index after all (a JSON error body...): say what it is.
                let set = ShardSet::open_index(path, &bytes).map_err(|e| match e.path() {
                    None => diagnose::explain_sample(e, &Sample::of_bytes(&bytes, Some(path))),
                    Some(_) => e,
                });
                return Self::from_set(set, Some(path));
            }
            Err(e) => return Err(diagnose::explain_sample(e, &Sample::of_bytes(&bytes, Some(path))).in_file(path)),
        };
        let src = Source::local(bytes).at(path);
        let explain = |e| diagnose::explain(e, &src, Some(path)).in_file(path);
        Self::from_source_as(src.clone(), format).map_err(explain).map(|mut f| {
            f.path = Some(path.to_path_buf());
            f
        })
    }

    /// Open a remote object by URL. Only its index is fetched (the header of a safetensors
    /// file, the footer of a `.zt`, the central directory and records of a zip archive, the
    /// flatbuffer of a `.pte`/`.ptd`); a tensor's bytes are fetched when it is read.
    pub fn open_url(url: &str) -> Result<Self> {
        let src = Source::open_url(url).map_err(|e| e.in_file(url))?;
        let open = || -> Result<Self> {
            let src = src.clone();
            let format = match Format::detect_source(&src) {
                Ok(format) => format,
                Err(e)
                    if e.rule() == Some(Rule::UnknownFormat) && shards::looks_like_index(&src.head(DETECT_BYTES)?) =>
                {
                    // The index of a sharded checkpoint: its shards are the objects beside it.
                    // (One byte past the limit: the index parser refuses what is too long.)
                    let text = src.head(crate::limits::MAX_SHARD_INDEX.saturating_add(1))?;
                    // Not an index after all (a JSON error body...): say what it is.
                    let set = ShardSet::open_index(Path::new(url), &text).map_err(|e| match e.path() {
                        None => diagnose::explain(e, &src, Some(Path::new(url))),
                        Some(_) => e,
                    })?;
                    let size = set.size();
                    return Self::from_reader(Box::new(set), size);
                }
                Err(e) => return Err(e),
            };
            Self::from_source_as(src, format)
        };
        let mut file = open().map_err(|e| diagnose::explain(e, &src, Some(Path::new(url))).in_file(url))?;
        file.path = Some(PathBuf::from(url));
        file.remote = true;
        Ok(file)
    }

    /// Open `paths` as one set: every tensor of every file, in that order. Files must be of
    /// one format and share no tensor name.
    pub fn open_many<P: AsRef<Path> + Sync>(paths: &[P]) -> Result<Self> {
        let mut file = Self::from_set(ShardSet::open_list(paths), None)?;
        file.remote = paths.iter().any(|p| source::url_of(p.as_ref()).is_some());
        Ok(file)
    }

    /// Open `paths` merged into one file: every entry of each, in that order, whatever their
    /// formats; each may be a file, a sharded checkpoint or a URL (see [`MergedSet`]). A name
    /// in two of them is an error naming both. One path opens as [`Self::open`] opens it.
    pub fn open_merged<P: AsRef<Path> + Sync>(paths: &[P]) -> Result<Self> {
        if let [one] = paths {
            return Self::open(one);
        }
        use rayon::prelude::*;
        let opened = paths.par_iter().map(|p| Ok((p.as_ref().to_path_buf(), Self::open(p)?)));
        let inputs: Vec<(PathBuf, TensorFile)> = opened.collect::<Result<_>>()?;
        let remote = inputs.iter().any(|(_, f)| f.remote);
        let merged = MergedSet::new(inputs)?;
        let size = merged.size();
        let mut file = Self::from_reader(Box::new(merged), size)?;
        file.remote = remote;
        Ok(file)
    }

    /// The format's reader.
    pub(crate) fn reader(&self) -> &dyn FormatReader {
        self.reader.as_ref()
    }

    fn from_set(set: Result<ShardSet>, path: Option<&Path>) -> Result<Self> {
        let in_path = |e: Error| match path {
            Some(p) => e.in_file(p),
            None => e,
        };
        let set = set.map_err(in_path)?;
        let size = set.size();
        let mut file = Self::from_reader(Box::new(set), size).map_err(in_path)?;
        file.path = path.map(Path::to_path_buf);
        Ok(file)
    }

    /// Open `path`; when it is an ExecuTorch program, `data` is the `.ptd` holding its
    /// external tensors (ignored for other formats).
    pub fn open_with_data(path: impl AsRef<Path>, data: Option<&Path>) -> Result<Self> {
        let path = path.as_ref();
        let Some(data) = data else { return Self::open(path) };
        let src = Source::open(path)?;
        let detected = Format::detect_source(&src);
        if detected.map_err(|e| diagnose::explain(e, &src, Some(path)).in_file(path))? != Format::Pte {
            return Err(Error::usage(format!(
                "a .ptd of external tensors goes with an ExecuTorch program; {} is not one",
                path.display()
            )));
        }
        let ptd = crate::formats::executorch::ptd::PtdReader::open(Source::open(data)?).map_err(|e| e.in_file(data))?;
        let size = src.len();
        let reader = crate::formats::executorch::pte::PteReader::open(src, Some(ptd)).map_err(|e| e.in_file(path))?;
        let mut f = Self::from_reader(Box::new(reader), size).map_err(|e| e.in_file(path))?;
        f.path = Some(path.to_path_buf());
        f.remote = source::url_of(path).is_some() || source::url_of(data).is_some();
        Ok(f)
    }

    /// Open bytes already in memory.
    pub fn from_bytes(bytes: Bytes) -> Result<Self> {
        let explain = |e| diagnose::explain_sample(e, &Sample::of_bytes(&bytes, None));
        let format = Format::detect(&bytes).map_err(explain)?;
        Self::from_bytes_as(bytes.clone(), format).map_err(explain)
    }

    /// Open bytes as a given format, skipping detection.
    pub fn from_bytes_as(bytes: Bytes, format: Format) -> Result<Self> {
        Self::from_source_as(Source::local(bytes), format)
    }

    /// Open a file from its source (local bytes, or an object read by range), recognising its
    /// format from its content.
    pub fn from_source(src: Source) -> Result<Self> {
        let explain = |e| diagnose::explain(e, &src, None);
        let format = Format::detect_source(&src).map_err(explain)?;
        let mut file = Self::from_source_as(src.clone(), format).map_err(explain)?;
        file.remote = file.source.as_ref().is_some_and(Source::is_remote);
        Ok(file)
    }

    fn from_source_as(src: Source, format: Format) -> Result<Self> {
        let size = src.len();
        let mut file = Self::from_reader(format.open(src.clone())?, size)?;
        file.source = Some(src);
        Ok(file)
    }

    fn from_reader(reader: Box<dyn FormatReader>, size: u64) -> Result<Self> {
        let entries = reader.entries();
        let mut by_name: Vec<usize> = (0..entries.len()).collect();
        by_name.sort_unstable_by(|&a, &b| entries[a].info().name().cmp(entries[b].info().name()));
        if let Some(w) = by_name.windows(2).find(|w| entries[w[0]].info().name() == entries[w[1]].info().name()) {
            let name = entries[w[0]].info().name();
            return Err(Error::invalid(Rule::DuplicateName, format!("two entries are named {name:?}")));
        }
        Ok(TensorFile { path: None, remote: false, size, reader, by_name, source: None })
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

    /// Decode entry `index` (no checksum check: the fast path).
    pub fn read_index(&self, index: usize) -> Result<TensorData> {
        self.read_with(index, false)
    }

    /// Whether the file is read over the network (worth fetching ahead).
    pub(crate) fn is_remote(&self) -> bool {
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
        self.reader.read(index, verify).map_err(|e| self.context(e.for_tensor(entry.info().name())))
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

    /// Check everything: every checksum matches, every entry decodes, nothing is
    /// unreadable, every load-time rule holds ([`Depth::Deep`]). Returns every problem found
    /// (empty when the file is sound).
    pub fn verify(&self) -> Vec<Error> {
        self.verify_with(Depth::Deep).problems
    }

    /// Check the file as thoroughly as `depth` says.
    pub fn verify_with(&self, depth: Depth) -> Verification {
        let mut problems: Vec<Error> =
            self.unreadable().iter().map(|u| self.context(u.error().clone().for_tensor(u.name()))).collect();
        let (bad_sums, checksums) = self.reader.verify_checksums();
        problems.extend(bad_sums.into_iter().map(|e| self.context(e)));
        problems.extend(self.reader.check().into_iter().map(|e| self.context(e)));
        let mut decoded_bytes = 0;
        if depth == Depth::Deep && self.remote {
            // Fetched ahead, each entry whole (a remote read fetches an entry whole anyway).
            let all: Vec<usize> = (0..self.entries().len()).collect();
            let read = self.read_each(&all, false, &mut |_, data| {
                match data {
                    Ok(data) => decoded_bytes += data.len(),
                    Err(e) => problems.push(e),
                }
                Ok(())
            });
            problems.extend(read.err());
        } else if depth == Depth::Deep {
            for (i, entry) in self.entries().iter().enumerate() {
                // Checksums were checked above: decode only.
                let decoded = if !entry.info().layout().reads_dense() {
                    self.read_index(i).map(|d| d.len())
                } else {
                    self.read_chunks(i, false)
                        .and_then(|pieces| pieces.map(|p| p.map(|p| p.len() as u64)).sum::<Result<u64>>())
                };
                match decoded {
                    Ok(n) => decoded_bytes += n,
                    Err(e) => problems.push(e),
                }
            }
        }
        let (tensors, blobs) = self.kind_counts();
        Verification {
            problems,
            checksums,
            decoded_bytes,
            depth,
            tensors,
            blobs,
            unreadable: self.unreadable().len(),
            nonfinite: None,
        }
    }
}

/// How thoroughly [`TensorFile::verify_with`] checks a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The structure (every rule checked when the file is opened, and the rules a consumer
    /// checks at load) and every stored checksum against the bytes it covers; compressed
    /// tensors are not decoded.
    Checksums,
    /// Also decode every entry (in pieces: memory stays bounded), so that every tensor is
    /// known to be readable with exactly its declared size.
    Deep,
}

/// What [`TensorFile::verify_with`] found.
#[derive(Debug)]
pub struct Verification {
    /// Every problem, each naming the file (and the tensor or record when one is involved).
    pub problems: Vec<Error>,
    /// Stored checksums checked (zTensor checksums, zip CRC-32s).
    pub checksums: usize,
    /// Bytes of tensor data decoded ([`Depth::Deep`]).
    pub decoded_bytes: u64,
    /// How thoroughly the file was checked.
    pub depth: Depth,
    /// Readable entries that are tensors.
    pub tensors: usize,
    /// Readable entries that are blobs (untyped bytes).
    pub blobs: usize,
    /// Entries declared but unreadable (each also a problem).
    pub unreadable: usize,
    /// With [`Verification::check_finite`], the tensors holding NaNs or infinities (each a
    /// failure); `None` when not checked.
    pub nonfinite: Option<Vec<crate::stats::NonFinite>>,
}

impl Verification {
    /// Whether nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.nonfinite.as_ref().is_none_or(Vec::is_empty)
    }

    /// Also read every tensor's values of `file` (the file verified) and list each one holding
    /// NaNs or infinities (`verify --finite`); a tensor whose values cannot be read becomes a
    /// problem unless it already is one.
    pub fn check_finite(&mut self, file: &TensorFile) {
        let (nonfinite, errors) = crate::stats::nonfinite(file);
        for e in errors {
            if !self.problems.iter().any(|p| p.tensor().is_some() && p.tensor() == e.tensor()) {
                self.problems.push(e);
            }
        }
        self.nonfinite = Some(nonfinite);
    }

    /// What `tensorfile verify --json` prints (and Python's `File.verify()` returns); `path`
    /// is the file as the user named it. Each problem has its `tensor`, `rule` (id, or null),
    /// `message` (without the file) and `error` (the whole message); after
    /// [`Verification::check_finite`], `nonfinite` lists the tensors holding NaNs or
    /// infinities.
    pub fn to_json(&self, path: &str) -> serde_json::Value {
        let problems: Vec<_> = self
            .problems
            .iter()
            .map(|p| {
                serde_json::json!({
                    "tensor": p.tensor(),
                    "rule": p.rule().map(|r| r.id()),
                    "message": p.message(),
                    "error": p.to_string(),
                })
            })
            .collect();
        let mut value = serde_json::json!({
            "file": path,
            "ok": self.ok(),
            "tensors": self.tensors,
            "blobs": self.blobs,
            "unreadable": self.unreadable,
            "deep": self.depth == Depth::Deep,
            "checksums": self.checksums,
            "decoded_bytes": self.decoded_bytes,
            "problems": problems,
        });
        if let (Some(list), Some(fields)) = (&self.nonfinite, value.as_object_mut()) {
            fields.insert("nonfinite".into(), list.iter().map(crate::stats::NonFinite::to_json).collect());
        }
        value
    }
}
