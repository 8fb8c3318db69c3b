//! A set of tensor files read as one: the shards of a checkpoint.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::index::ShardIndex;
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::limits::MAX_SHARDS;
use crate::model::{Chunks, MetaValue, TensorData, Unreadable};
use crate::source::{self, Bytes, Source};

/// One opened shard.
pub(super) struct Shard {
    pub(super) path: PathBuf,
    pub(super) reader: std::sync::Arc<dyn FormatReader>,
    pub(super) size: u64,
}

/// Several files of one format read as one: their entries in shard order, each read from the
/// shard that holds it (errors name that shard).
pub struct ShardSet {
    format: Format,
    shards: Vec<Shard>,
    /// Where each shard's entries start among `entries`, and the total at the end.
    starts: Vec<usize>,
    catalog: Catalog,
    /// The index's metadata, when the set comes from one.
    index_metadata: Vec<(String, MetaValue)>,
    /// The parts of a split GGUF model: the metadata is the first part's alone.
    split_model: bool,
    size: u64,
}

impl ShardSet {
    /// The shards an index file (already read into `bytes`) names, relative to its folder.
    /// Every tensor of the weight map must be in the shard it names, and every tensor of the
    /// shards in the weight map.
    pub fn open_index(path: &Path, bytes: &[u8]) -> Result<ShardSet> {
        let index = ShardIndex::parse(bytes)?;
        let mut files: Vec<&str> = index.weight_map.iter().map(|(_, file)| file.as_str()).collect();
        files.sort_unstable();
        files.dedup();
        if files.is_empty() {
            return Err(Error::invalid(Rule::BadField, "the weight_map is empty: no shard to open"));
        }
        check_count(files.len(), "shards")?;
        // A shard that is not there refuses the set, as transformers' loader does: the weight
        // map names its tensors but not their dtypes or shapes.
        let open = |file: &&str| {
            let how = format!("shard {file:?} of the index's weight_map, in the index's folder");
            open_shard(&beside(path, file), Some(&how))
        };
        let shards = open_in_order(&files, open)?;
        let holders = holders(&shards)?;
        check_weight_map(&shards, &holders, &index.weight_map, &files)?;
        ShardSet::assemble(shards, index.metadata)
    }

    /// Every file of `dir` whose content is a tensor file, sorted by name; other files
    /// (README, config.json, the index itself) and hidden ones are left alone.
    pub fn open_folder(dir: &Path) -> Result<ShardSet> {
        let mut paths = Vec::new();
        for item in std::fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir))? {
            let item = item.map_err(|e| Error::from(e).in_file(dir))?;
            let path = item.path();
            if item.file_name().to_string_lossy().starts_with('.') || !path.is_file() {
                continue;
            }
            paths.push(path);
            check_count(paths.len(), "files")?;
        }
        paths.sort();
        let found = open_in_order(&paths, |p| open_if_tensor_file(p))?;
        let shards: Vec<Shard> = found.into_iter().flatten().collect();
        if shards.is_empty() {
            return Err(Error::invalid(Rule::UnknownFormat, "no file in this folder is a tensor file"));
        }
        holders(&shards)?;
        ShardSet::assemble(shards, Vec::new())
    }

    /// The files `paths`, in that order.
    pub fn open_list<P: AsRef<Path> + Sync>(paths: &[P]) -> Result<ShardSet> {
        if paths.is_empty() {
            return Err(Error::usage("no files to open"));
        }
        check_count(paths.len(), "files")?;
        let shards = open_in_order(paths, |p| open_shard(p.as_ref(), None))?;
        holders(&shards)?;
        ShardSet::assemble(shards, Vec::new())
    }

    /// The set of `shards`, which are of one format and share no tensor name.
    pub(super) fn assemble(shards: Vec<Shard>, index_metadata: Vec<(String, MetaValue)>) -> Result<ShardSet> {
        let format = shards[0].reader.format();
        if let Some(other) = shards.iter().find(|s| s.reader.format() != format) {
            return Err(Error::invalid(
                Rule::ShardMismatch,
                format!(
                    "{} is {format} but {} is {}: the files of a set must be of one format",
                    shards[0].path.display(),
                    other.path.display(),
                    other.reader.format()
                ),
            ));
        }
        let count: usize = shards.iter().map(|s| s.reader.entries().len()).sum();
        Catalog::check_count(count as u64)?;
        let mut entries = Vec::with_capacity(count);
        let mut starts = Vec::with_capacity(shards.len() + 1);
        let mut unreadable = Vec::new();
        let mut size = 0u64;
        for shard in &shards {
            starts.push(entries.len());
            entries.extend_from_slice(shard.reader.entries());
            unreadable.extend(shard.reader.unreadable().iter().map(|u| {
                Unreadable::new(
                    u.name().to_string(),
                    u.dtype().to_string(),
                    u.shape().to_vec(),
                    u.error().clone().in_file(&shard.path),
                )
            }));
            size = size.saturating_add(shard.size);
        }
        starts.push(entries.len());
        let catalog = (entries, unreadable).into();
        Ok(ShardSet { format, shards, starts, catalog, index_metadata, split_model: false, size })
    }

    /// The set as the parts of a split model: its metadata is the first part's alone.
    pub(super) fn into_split_model(mut self) -> ShardSet {
        self.split_model = true;
        self
    }

    /// The shard file holding entry `index`.
    pub fn shard_of(&self, index: usize) -> Option<&Path> {
        self.locate(index).map(|(shard, _)| shard.path.as_path())
    }

    /// Bytes of every shard file together.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The shard files, in order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.shards.iter().map(|s| s.path.as_path())
    }

    /// Whether the set is the parts of a split GGUF model (`model-00001-of-00003.gguf`...).
    pub fn is_split_model(&self) -> bool {
        self.split_model
    }

    /// The shard holding entry `index`, and the entry's index in it.
    fn locate(&self, index: usize) -> Option<(&Shard, usize)> {
        let k = self.starts[1..].partition_point(|&end| end <= index);
        let shard = self.shards.get(k)?;
        Some((shard, index - self.starts[k]))
    }

    fn shard_for(&self, index: usize) -> Result<(&Shard, usize)> {
        self.locate(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))
    }
}

impl FormatReader for ShardSet {
    fn format(&self) -> Format {
        self.format
    }

    /// The index's metadata, then each shard's keys not seen before (the first shard's value
    /// wins; a split model's metadata is its first part's alone); details: the number of shards.
    fn summary(&self) -> FileSummary {
        let mut metadata = self.index_metadata.clone();
        let mut version = String::new();
        let read = if self.split_model { 1 } else { self.shards.len() };
        for (k, shard) in self.shards.iter().take(read).enumerate() {
            let summary = shard.reader.summary();
            if k == 0 {
                version = summary.version;
            }
            for (key, value) in summary.metadata {
                if !metadata.iter().any(|(seen, _)| *seen == key) {
                    metadata.push((key, value));
                }
            }
        }
        let details = vec![("shards".to_string(), MetaValue::Int(self.shards.len() as i128))];
        FileSummary { version, metadata, details, structure: None }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let (shard, local) = self.shard_for(index)?;
        shard.reader.read(local, verify).map_err(|e| e.in_file(&shard.path))
    }

    fn read_chunks(&self, index: usize, verify: bool) -> Result<Chunks<'_>> {
        let (shard, local) = self.shard_for(index)?;
        let pieces = shard.reader.read_chunks(local, verify).map_err(|e| e.in_file(&shard.path))?;
        Ok(Box::new(pieces.map(move |piece| piece.map_err(|e| e.in_file(&shard.path)))))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn check(&self) -> Vec<Error> {
        let per_shard = self.shards.iter().map(|s| s.reader.check().into_iter().map(|e| e.in_file(&s.path)));
        per_shard.flatten().collect()
    }

    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        let mut problems = Vec::new();
        let mut checked = 0;
        for shard in &self.shards {
            let (found, n) = shard.reader.verify_checksums();
            problems.extend(found.into_iter().map(|e| e.in_file(&shard.path)));
            checked += n;
        }
        (problems, checked)
    }
}

pub(super) fn check_count(n: usize, what: &str) -> Result<()> {
    if n > MAX_SHARDS {
        return Err(Error::invalid(Rule::TooManyEntries, format!("more than {MAX_SHARDS} {what}")));
    }
    Ok(())
}

/// The file called `name` in the folder of `index` (a local path or a URL: the shards of a
/// remote index are remote objects beside it).
pub(super) fn beside(index: &Path, name: &str) -> PathBuf {
    match source::url_of(index) {
        Some(url) => PathBuf::from(format!("{}/{name}", &url[..url.rfind('/').unwrap_or(url.len())])),
        None => index.parent().unwrap_or(Path::new("")).join(name),
    }
}

/// Open `path` (or URL), which must be a tensor file; `named` says how its name was derived
/// when another file names it.
/// `open` of every item, side by side on rayon's threads, in the items' order; where several
/// fail, the error of the first in that order (rayon's own collect into a `Result` gives
/// whichever failed first in time, so a set missing two files would name either).
pub(super) fn open_in_order<I: Sync, T: Send>(items: &[I], open: impl Fn(&I) -> Result<T> + Sync) -> Result<Vec<T>> {
    let results: Vec<Result<T>> = items.par_iter().map(&open).collect();
    results.into_iter().collect()
}

pub(super) fn open_shard(path: &Path, named: Option<&str>) -> Result<Shard> {
    let src = Source::open(path).map_err(|e| match named {
        Some(how) => e.named_by(path, how),
        None => e,
    })?;
    let explain = |e| crate::diagnose::explain(e, &src, Some(path)).in_file(path);
    let format = Format::detect_source(&src).map_err(explain)?;
    let size = src.len();
    let reader = format.open(src.clone()).map_err(explain)?;
    Ok(Shard { path: path.to_path_buf(), reader: reader.into(), size })
}

/// Open `path` if its content is a tensor file; `None` if it is something else.
fn open_if_tensor_file(path: &Path) -> Result<Option<Shard>> {
    let bytes = Bytes::map_file(path)?;
    match Format::detect(&bytes) {
        Ok(format) => open_as(path, bytes, format).map(Some),
        Err(e) if e.rule() == Some(Rule::UnknownFormat) => Ok(None),
        Err(e) => Err(e.in_file(path)),
    }
}

fn open_as(path: &Path, bytes: Bytes, format: Format) -> Result<Shard> {
    let size = bytes.len() as u64;
    let reader = format.open(Source::local(bytes).at(path)).map_err(|e| e.in_file(path))?;
    Ok(Shard { path: path.to_path_buf(), reader: reader.into(), size })
}

/// Every name a shard declares, readable or not.
fn names(shard: &Shard) -> impl Iterator<Item = &str> {
    let readable = shard.reader.entries().iter().map(|e| e.info().name());
    readable.chain(shard.reader.unreadable().iter().map(|u| u.name()))
}

/// Which shard holds each name; a name in two shards is an error naming both.
pub(super) fn holders(shards: &[Shard]) -> Result<HashMap<&str, usize>> {
    let mut holder: HashMap<&str, usize> = HashMap::new();
    for (k, shard) in shards.iter().enumerate() {
        for name in names(shard) {
            if let Some(first) = holder.insert(name, k) {
                let detail = if first == k {
                    format!("two entries of {} are named {name:?}", shard.path.display())
                } else {
                    format!("{} and {} both hold {name:?}", shards[first].path.display(), shard.path.display())
                };
                return Err(Error::invalid(Rule::DuplicateName, detail).for_tensor(name));
            }
        }
    }
    Ok(holder)
}

/// The index and the shards agree: each tensor is where the weight map puts it, and the weight
/// map lists every tensor. `files` are the shard names, sorted, in the order of `shards`.
fn check_weight_map(
    shards: &[Shard],
    holders: &HashMap<&str, usize>,
    weight_map: &[(String, String)],
    files: &[&str],
) -> Result<()> {
    let mismatch = |detail: String, tensor: &str| Error::invalid(Rule::ShardMismatch, detail).for_tensor(tensor);
    for (tensor, file) in weight_map {
        let listed = files.binary_search(&file.as_str()).ok();
        match holders.get(tensor.as_str()) {
            Some(&k) if Some(k) == listed => {}
            Some(&k) => {
                let held = shards[k].path.display();
                return Err(mismatch(format!("the index puts it in {file}, but {held} holds it"), tensor));
            }
            None => return Err(mismatch(format!("the index puts it in {file}, which does not hold it"), tensor)),
        }
    }
    if holders.len() > weight_map.len() {
        let listed: HashSet<&str> = weight_map.iter().map(|(tensor, _)| tensor.as_str()).collect();
        for shard in shards {
            if let Some(name) = names(shard).find(|n| !listed.contains(n)) {
                let detail = format!("{} holds it, but the index does not list it", shard.path.display());
                return Err(mismatch(detail, name));
            }
        }
    }
    Ok(())
}
