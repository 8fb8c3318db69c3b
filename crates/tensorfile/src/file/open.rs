//! Opening files: [`OpenOptions`], in the manner of `std::fs::OpenOptions`, is the one way in;
//! [`TensorFile`]'s constructors are short calls of it. Whatever the way in, an error opening
//! a file's content is explained once, at the end, by what the file really is
//! ([`crate::diagnose`]).

use std::path::{Path, PathBuf};

use super::digest::{DigestFrom, ExpectedDigest};
use super::sets::{self, MergedSet, ShardSet};
use super::{Access, TensorFile, Verify};
use crate::diagnose::{self, Sample};
use crate::error::{Error, Result, Rule};
use crate::formats::gguf::split::split_keys_of;
use crate::formats::{DETECT_BYTES, Format};
use crate::source::{self, Bytes, Source};

/// How to open a tensor file: how a local file's bytes are reached, the second file a
/// program keeps its data in, or a format to take the file as. `OpenOptions::new().open(path)`
/// is [`TensorFile::open`].
///
/// ```no_run
/// use tensorfile::{Access, OpenOptions};
/// let program = OpenOptions::new().data("model.ptd").open("model.pte")?;
/// let cold = OpenOptions::new().access(Access::ReadWholeIfCold).open("model.safetensors")?;
/// let merged = OpenOptions::new().open_merged(&["a.safetensors", "b.gguf"])?;
/// # Ok::<(), tensorfile::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    access: Access,
    data: Option<PathBuf>,
    format: Option<Format>,
    verify: Verify,
    expect_sha256: Option<[u8; 32]>,
}

impl OpenOptions {
    /// Mapped, no second file, the format recognised from the content.
    pub fn new() -> Self {
        Self::default()
    }

    /// How a local file's bytes are reached (a URL or a folder opens as it does anyway).
    pub fn access(&mut self, access: Access) -> &mut Self {
        self.access = access;
        self
    }

    /// The second file the file is opened with, for a format that keeps data in one (an
    /// ExecuTorch program's `.ptd` of external tensors).
    pub fn data(&mut self, data: impl Into<PathBuf>) -> &mut Self {
        self.data = Some(data.into());
        self
    }

    /// What is checked as the file is read ([`Verify`]; by default nothing).
    pub fn verify(&mut self, verify: Verify) -> &mut Self {
        self.verify = verify;
        self
    }

    /// The sha256 the file opened must have (64 hexadecimal digits), checked as
    /// [`Verify::Full`] checks a digest found beside the file (and implying it).
    pub fn expect_sha256(&mut self, hex: &str) -> Result<&mut Self> {
        self.expect_sha256 = Some(super::digest::parse_sha256(hex)?);
        self.verify = Verify::Full;
        Ok(self)
    }

    /// Take bytes given to [`OpenOptions::open_bytes`] as this format, without recognising
    /// it from their content.
    pub fn format(&mut self, format: Format) -> &mut Self {
        self.format = Some(format);
        self
    }

    /// Open `path`: a file (mapped), a folder or the index of a sharded checkpoint
    /// (`model.safetensors.index.json`: one file holding every tensor of its shards), or a URL
    /// (`https://`, `s3://`, `gs://`, `az://`: only the index is fetched, a tensor's bytes when
    /// it is read). A part of a split GGUF model (`model-00002-of-00003.gguf`, any part) opens
    /// as the whole model: every part's tensors, the first part's metadata.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<TensorFile> {
        let path = path.as_ref();
        let file = if let Some(data) = &self.data {
            open_with_companion(path, data)?
        } else {
            match source::url_of(path) {
                Some(url) => open_url(url)?,
                None => open_local(path, self.access)?,
            }
        };
        self.verifying(file, path)
    }

    /// `file`, opened from `path`, set to check what these options ask: stored checksums on
    /// every read, and with [`Verify::Full`] the digests its files are expected to have.
    fn verifying(&self, mut file: TensorFile, path: &Path) -> Result<TensorFile> {
        file.verify = self.verify;
        if self.verify == Verify::Off {
            return Ok(file);
        }
        if !file.remote {
            file.check_ahead = super::check_ahead::Checks::for_entries(file.entries().len());
        }
        // An entry listed unreadable because a checksum of its metadata failed (an HDF5
        // object header, an `.npy` member whose header breaks and whose CRC fails or whose
        // deflate stream breaks) is a file not as written: verified, it is refused, not left
        // out of the tensors handed over.
        let not_as_written = |rule| {
            matches!(rule, Some(Rule::ChecksumMismatch | Rule::BadCompressedData | Rule::DecompressedSizeMismatch))
        };
        if let Some(u) = file.unreadable().iter().find(|u| not_as_written(u.error().rule())) {
            let e = u.error().clone();
            let e = if e.tensor().is_none() { e.for_tensor(u.name()) } else { e };
            return Err(e.in_file(path));
        }
        if self.verify != Verify::Full {
            return Ok(file);
        }
        let files: Vec<PathBuf> = match file.reader_as::<ShardSet>() {
            Some(set) => set.files().map(Path::to_path_buf).collect(),
            None => vec![path.to_path_buf()],
        };
        if let Some(sha256) = self.expect_sha256 {
            if files.len() != 1 || file.remote {
                return Err(Error::usage(
                    "one expected sha256 goes with one local file (a set of files is checked by the .sha256 files \
                     beside them)",
                )
                .in_file(path));
            }
            file.expected = vec![(files[0].clone(), ExpectedDigest { sha256, from: DigestFrom::Given })];
            return Ok(file);
        }
        if file.remote {
            return Ok(file);
        }
        for f in files {
            if let Some(expected) = super::digest::expected_digest(&f)? {
                file.expected.push((f, expected));
            }
        }
        Ok(file)
    }

    /// Open `paths` as one set: every tensor of every file, in that order. Files must be of
    /// one format and share no tensor name.
    pub fn open_set<P: AsRef<Path> + Sync>(&self, paths: &[P]) -> Result<TensorFile> {
        let mut file = from_set(ShardSet::open_list(paths), None)?;
        file.remote = paths.iter().any(|p| source::url_of(p.as_ref()).is_some());
        Ok(file)
    }

    /// Open `paths` merged into one file: every entry of each, in that order, whatever their
    /// formats; each may be a file, a sharded checkpoint or a URL. A name
    /// in two of them is an error naming both. One path opens as [`OpenOptions::open`] opens
    /// it (with the second file given by [`OpenOptions::data`]); a second file goes with one
    /// path only.
    pub fn open_merged<P: AsRef<Path> + Sync>(&self, paths: &[P]) -> Result<TensorFile> {
        match paths {
            [one] => return self.open(one),
            _ if self.data.is_some() => {
                return Err(Error::usage("the second file of a program goes with a single input"));
            }
            _ => {}
        }
        use rayon::prelude::*;
        let opened = paths.par_iter().map(|p| Ok((p.as_ref().to_path_buf(), self.open(p)?)));
        let mut inputs: Vec<(PathBuf, TensorFile)> = opened.collect::<Result<_>>()?;
        once_per_split_model(&mut inputs);
        if inputs.len() == 1 {
            return Ok(inputs.remove(0).1);
        }
        let remote = inputs.iter().any(|(_, f)| f.remote);
        let merged = MergedSet::new(inputs)?;
        let size = merged.size();
        let mut file = TensorFile::from_reader(Box::new(merged), size)?;
        file.remote = remote;
        Ok(file)
    }

    /// Open bytes already in memory (as the format given by [`OpenOptions::format`], else
    /// recognised from their content).
    pub fn open_bytes(&self, bytes: Bytes) -> Result<TensorFile> {
        match self.format {
            Some(format) => TensorFile::from_source_as(Source::local(bytes), format),
            None => {
                let explain = |e| diagnose::explain_sample(e, &Sample::of_bytes(&bytes, None));
                let format = Format::detect(&bytes).map_err(explain)?;
                TensorFile::from_source_as(Source::local(bytes.clone()), format).map_err(explain)
            }
        }
    }

    /// Open a file from its source (local bytes, or an object read by range), recognising its
    /// format from its content (or as the format given by [`OpenOptions::format`]).
    pub fn open_source(&self, src: Source) -> Result<TensorFile> {
        let explain = |e| diagnose::explain(e, &src, None);
        let format = match self.format {
            Some(format) => format,
            None => Format::detect_source(&src).map_err(explain)?,
        };
        let mut file = TensorFile::from_source_as(src.clone(), format).map_err(explain)?;
        file.remote = file.source.as_ref().is_some_and(Source::is_remote);
        Ok(file)
    }
}

/// A local file or folder.
fn open_local(path: &Path, access: Access) -> Result<TensorFile> {
    let whole = match access {
        Access::Map => false,
        Access::ReadWhole => true,
        Access::ReadWholeIfCold => !path.is_dir() && !source::is_cached(path),
    };
    let bytes = if whole { Bytes::read_direct(path) } else { Bytes::map_file(path) };
    let bytes = match bytes {
        Ok(bytes) => bytes,
        // A folder cannot be mapped: only then is it worth asking whether it is one.
        Err(_) if path.is_dir() => return from_set(ShardSet::open_folder(path), Some(path)),
        Err(e) => return Err(e),
    };
    let format = match Format::detect(&bytes) {
        Ok(format) => format,
        Err(e) if e.rule() == Some(Rule::UnknownFormat) && sets::looks_like_index(&bytes) => {
            // Not an index after all (a JSON error body...): say what it is.
            let set = ShardSet::open_index(path, &bytes).map_err(|e| match e.path() {
                None => diagnose::explain_sample(e, &Sample::of_bytes(&bytes, Some(path))),
                Some(_) => e,
            });
            return from_set(set, Some(path));
        }
        Err(e) => return Err(diagnose::explain_sample(e, &Sample::of_bytes(&bytes, Some(path))).in_file(path)),
    };
    let src = Source::local(bytes).at(path);
    let explain = |e| diagnose::explain(e, &src, Some(path)).in_file(path);
    let mut file = TensorFile::from_source_as(src.clone(), format).map_err(explain)?;
    file.path = Some(path.to_path_buf());
    whole_model(file, path)
}

/// `file`, opened from `path` (a local path or a URL); when it is a part of a split GGUF
/// model, the whole model, every part opened.
fn whole_model(file: TensorFile, path: &Path) -> Result<TensorFile> {
    let Some(keys) = split_keys_of(file.reader()).map_err(|e| e.in_file(path))? else {
        return Ok(file);
    };
    let TensorFile { reader, size, remote, .. } = file;
    let mut whole = from_set(ShardSet::open_split_model(path, reader, size, keys), Some(path))?;
    whole.remote = remote;
    Ok(whole)
}

/// Inputs that are the same split model (the same first part), given by several of its parts,
/// kept once: where the first of them is.
fn once_per_split_model(inputs: &mut Vec<(PathBuf, TensorFile)>) {
    let mut seen: Vec<PathBuf> = Vec::new();
    inputs.retain(|(_, file)| {
        let Some(set) = file.reader_as::<ShardSet>().filter(|s| s.is_split_model()) else { return true };
        let Some(first) = set.files().next() else { return true };
        // `./m-00001-of-00002.gguf` and `m-00001-of-00002.gguf` are one file.
        let first = std::fs::canonicalize(first).unwrap_or_else(|_| first.to_path_buf());
        if seen.contains(&first) {
            return false;
        }
        seen.push(first);
        true
    });
}

/// A remote object by URL. Only its index is fetched (the header of a safetensors file, the
/// footer of a `.zt`, the central directory and records of a zip archive, the flatbuffer of
/// a `.pte`/`.ptd`); a tensor's bytes are fetched when it is read.
fn open_url(url: &str) -> Result<TensorFile> {
    let src = Source::open_url(url).map_err(|e| e.in_file(url))?;
    let open = || -> Result<TensorFile> {
        let src = src.clone();
        let format = match Format::detect_source(&src) {
            Ok(format) => format,
            Err(e) if e.rule() == Some(Rule::UnknownFormat) && sets::looks_like_index(&src.head(DETECT_BYTES)?) => {
                // The index of a sharded checkpoint: its shards are the objects beside it.
                // (One byte past the limit: the index parser refuses what is too long.)
                let text = src.head(crate::limits::MAX_SHARD_INDEX.saturating_add(1))?;
                // Not an index after all (a JSON error body...): say what it is.
                let set = ShardSet::open_index(Path::new(url), &text).map_err(|e| match e.path() {
                    None => diagnose::explain(e, &src, Some(Path::new(url))),
                    Some(_) => e,
                })?;
                let size = set.size();
                return TensorFile::from_reader(Box::new(set), size);
            }
            Err(e) => return Err(e),
        };
        TensorFile::from_source_as(src, format)
    };
    let mut file = open().map_err(|e| diagnose::explain(e, &src, Some(Path::new(url))).in_file(url))?;
    file.path = Some(PathBuf::from(url));
    file.remote = true;
    whole_model(file, Path::new(url))
}

/// `path` with the second file its format keeps data in (`data`): the format's companion.
fn open_with_companion(path: &Path, data: &Path) -> Result<TensorFile> {
    let src = Source::open(path)?;
    let format = Format::detect_source(&src).map_err(|e| diagnose::explain(e, &src, Some(path)).in_file(path))?;
    let Some(companion) = format.unit().companion() else {
        let takers: Vec<String> = Format::ALL
            .iter()
            .filter_map(|f| f.unit().companion().map(|c| format!("{} goes with {}", c.what(), article_title(*f))))
            .collect();
        return Err(Error::usage(format!("{}; {} is not one", takers.join("; "), path.display())));
    };
    let how = format_args!("{}, as given with the program", companion.what());
    let data_src = Source::open(data).map_err(|e| e.named_by(data, how).in_file(path))?;
    let size = src.len();
    let reader = companion.open_with(src, data_src, path, data)?;
    let mut f = TensorFile::from_reader(reader, size).map_err(|e| e.in_file(path))?;
    f.path = Some(path.to_path_buf());
    f.remote = source::url_of(path).is_some() || source::url_of(data).is_some();
    Ok(f)
}

/// `an ExecuTorch program`: the format's title with its article.
fn article_title(format: Format) -> String {
    let title = format.unit().title();
    let vowel = title.chars().next().is_some_and(|c| "AEIOUaeiou".contains(c));
    format!("{} {title}", if vowel { "an" } else { "a" })
}

fn from_set(set: Result<ShardSet>, path: Option<&Path>) -> Result<TensorFile> {
    let in_path = |e: Error| match path {
        Some(p) => e.in_file(p),
        None => e,
    };
    let set = set.map_err(in_path)?;
    let size = set.size();
    let mut file = TensorFile::from_reader(Box::new(set), size).map_err(in_path)?;
    file.path = path.map(Path::to_path_buf);
    Ok(file)
}

impl TensorFile {
    /// Map `path` and open it. A folder, or the index of a sharded checkpoint
    /// (`model.safetensors.index.json`), opens as one file holding every tensor of its shards
    /// (a [`crate::ConvertJob`] with a shard size writes one). A URL (`https://`, `s3://`,
    /// `gs://`, `az://`) opens the remote object. [`OpenOptions`] opens in every other way
    /// (bytes in memory, a set of files, files merged, a program with its `.ptd`...): this is
    /// `OpenOptions::new().open(path)`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open(path)
    }
}
