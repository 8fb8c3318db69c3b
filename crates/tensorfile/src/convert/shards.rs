//! Writing a sharded checkpoint: the tensors of a conversion split, in the order the target
//! format stores them, into files of at most a given size, and their index. Every file is
//! written under a temporary name first; only when all are written are they put in place,
//! the index last. A failure leaves nothing new behind.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::convert::{self, ConvertOptions, ConvertReport, Progress, Tally};
use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::file::sets::ShardIndex;
use crate::limits::MAX_SHARDS;
use crate::output::AtomicFile;

/// The files of a sharded write to `dir/model.safetensors`, named as huggingface_hub names
/// them: shards `model-00001-of-00003.safetensors`... and the index
/// `model.safetensors.index.json`, beside it.
#[derive(Debug, Clone)]
pub struct ShardNames {
    dir: PathBuf,
    stem: String,
    extension: String,
}

impl ShardNames {
    /// The names for a write to `dest`; an error when its file name is not UTF-8 or has no
    /// extension to name shards after.
    pub fn of(dest: &Path) -> Result<ShardNames> {
        let file = dest.file_name().and_then(|n| n.to_str());
        let parts = file.and_then(|f| f.rsplit_once('.')).filter(|(stem, _)| !stem.is_empty());
        let Some((stem, extension)) = parts else {
            return Err(Error::usage(format!(
                "{} needs a UTF-8 file name with an extension to name shards after",
                dest.display()
            )));
        };
        let dir = dest.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(ShardNames { dir, stem: stem.to_string(), extension: extension.to_string() })
    }

    /// The output's file name without its extension (`model`).
    pub(crate) fn stem(&self) -> &str {
        &self.stem
    }

    /// Shard `number` (from 1) of `count`.
    pub fn shard(&self, number: usize, count: usize) -> String {
        format!("{}-{number:05}-of-{count:05}.{}", self.stem, self.extension)
    }

    /// The index's file name (`model.safetensors.index.json`).
    pub fn index(&self) -> String {
        format!("{}.{}.index.json", self.stem, self.extension)
    }

    /// `file` in the destination's folder.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Whether a sharded write to this destination writes files named `file`: the single
    /// file, a shard of any count, an index (huggingface_hub's pattern
    /// `model(-\d{5}-of-\d{5})?.safetensors(.index.json)?`).
    pub fn is_ours(&self, file: &str) -> bool {
        let Some(rest) = file.strip_prefix(self.stem.as_str()) else { return false };
        let rest = rest.strip_suffix(".index.json").unwrap_or(rest);
        let Some(numbers) = rest.strip_suffix(self.extension.as_str()).and_then(|r| r.strip_suffix('.')) else {
            return false;
        };
        let b = numbers.as_bytes();
        let digits = |r: Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        b.is_empty() || (b.len() == 15 && b[0] == b'-' && &b[6..10] == b"-of-" && digits(1..6) && digits(10..15))
    }
}

/// Consecutive runs of tensors of `sizes` bytes, each run at most `limit` bytes, except that
/// a tensor larger than the limit gets a run of its own. Always at least one run (an empty
/// one when there are no tensors).
pub fn split(sizes: &[u64], limit: u64) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let (mut start, mut filled) = (0, 0u64);
    for (i, &size) in sizes.iter().enumerate() {
        if i > start && filled.saturating_add(size) > limit {
            runs.push(start..i);
            (start, filled) = (i, 0);
        }
        filled = filled.saturating_add(size);
    }
    runs.push(start..sizes.len());
    runs
}

/// What a sharded conversion wrote.
#[derive(Debug, Clone)]
pub struct ShardedReport {
    /// The conversion over all shards: tensors written, bytes, what was left out.
    pub conversion: ConvertReport,
    /// The files holding the tensors: the shards in order, or the destination alone when
    /// every tensor fits in one file (then there is no index, as huggingface_hub does).
    pub files: Vec<PathBuf>,
    /// The index, when there are several shards.
    pub index: Option<PathBuf>,
    /// Files an earlier write to the same destination left that this one replaces: shards of
    /// another count, the single file, an index (removed, as huggingface_hub does, so that
    /// the folder holds one checkpoint).
    pub removed: Vec<PathBuf>,
}

/// Convert `src` into shards of at most `max_shard_size` tensor bytes named after `dest`
/// (whose extension picks the format), plus their index, all atomically. (A split GGUF
/// model is cut as llama.cpp cuts it: `crate::llama`, through the convert job.)
pub fn convert_to_shards(
    src: &TensorFile,
    dest: &Path,
    max_shard_size: u64,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ShardedReport> {
    if max_shard_size == 0 {
        return Err(Error::usage("a shard must hold at least one byte"));
    }
    let format = options.output_format(dest)?;
    let names = ShardNames::of(dest)?;
    let prepared = convert::prepare(src, format, options)?;
    let tensors = &prepared.plan.tensors;
    let sizes: Vec<u64> = tensors.iter().map(|(i, info)| convert::written_bytes(src, *i, info)).collect();
    let runs = split(&sizes, max_shard_size);
    let count = runs.len();
    if count > MAX_SHARDS {
        return Err(Error::usage(format!(
            "{count} shards of at most {max_shard_size} bytes would be needed (limit {MAX_SHARDS}): \
             give a larger size"
        )));
    }
    let files: Vec<PathBuf> = match count {
        1 => vec![dest.to_path_buf()],
        _ => (1..=count).map(|k| names.path(&names.shard(k, count))).collect(),
    };
    let mut tally = Tally::new(sizes.iter().sum(), progress);
    let mut staged = Vec::with_capacity(count + 1);
    let mut weight_map = Vec::with_capacity(tensors.len());
    for (run, path) in runs.into_iter().zip(&files) {
        let part = &tensors[run];
        staged.push(convert::write_staged(src, path, &prepared, part, options.verify, &mut tally)?);
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        weight_map.extend(part.iter().map(|(_, info)| (info.name().to_string(), file.clone())));
    }
    let index = (count > 1).then(|| names.path(&names.index()));
    if let Some(index) = &index {
        let mut file = AtomicFile::create(index)?;
        {
            let mut w = file.writer();
            let text = ShardIndex::to_json(tally.done, &weight_map);
            w.write_all(&text).and_then(|()| w.flush()).map_err(|e| Error::from(e).in_file(index))?;
        }
        staged.push(file.stage()?);
    }
    // Everything is written: put the files in place, the index last.
    for file in staged {
        file.commit()?;
    }
    let removed = remove_replaced(&names, &files, index.as_deref());
    Ok(ShardedReport { conversion: prepared.report(tally.done), files, index, removed })
}

/// Remove the files of an earlier write to the same destination that this one did not
/// overwrite; what cannot be removed stays.
pub(crate) fn remove_replaced(names: &ShardNames, written: &[PathBuf], index: Option<&Path>) -> Vec<PathBuf> {
    let dir = if names.dir.as_os_str().is_empty() { Path::new(".") } else { names.dir.as_path() };
    let Ok(listing) = std::fs::read_dir(dir) else { return Vec::new() };
    let kept: HashSet<OsString> =
        written.iter().map(PathBuf::as_path).chain(index).filter_map(Path::file_name).map(OsString::from).collect();
    let mut removed = Vec::new();
    for item in listing.flatten() {
        let name = item.file_name();
        let Some(text) = name.to_str() else { continue };
        if names.is_ours(text) && !kept.contains(&name) && item.path().is_file() {
            let path = names.path(text);
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stay_under_the_limit_and_a_large_tensor_goes_alone() {
        assert_eq!(split(&[], 10), vec![0..0]);
        assert_eq!(split(&[4, 4, 4], 10), vec![0..2, 2..3]);
        assert_eq!(split(&[4, 6, 1], 10), vec![0..2, 2..3]);
        assert_eq!(split(&[3, 25, 3, 3], 10), vec![0..1, 1..2, 2..4]);
        assert_eq!(split(&[25], 10), vec![0..1]);
        assert_eq!(split(&[0, 0, 10, 0], 10), vec![0..4]);
    }

    #[test]
    fn names_follow_huggingface_hub() {
        let names = ShardNames::of(Path::new("out/model.safetensors")).unwrap();
        assert_eq!(names.shard(2, 3), "model-00002-of-00003.safetensors");
        assert_eq!(names.index(), "model.safetensors.index.json");
        assert_eq!(names.path("x"), Path::new("out/x"));
        for ours in ["model.safetensors", "model-00001-of-00009.safetensors", "model.safetensors.index.json"] {
            assert!(names.is_ours(ours), "{ours}");
        }
        for other in [
            "model.safetensors.bak",
            "model-1-of-2.safetensors",
            "model-00001-of-0000x.safetensors",
            "xmodel.safetensors",
            "model.zt",
            "model-00001-of-00002.safetensors.tmp",
        ] {
            assert!(!names.is_ours(other), "{other}");
        }
        assert!(ShardNames::of(Path::new("noextension")).is_err());
        assert_eq!(
            ShardNames::of(Path::new("pytorch_model.bin")).unwrap().shard(1, 2),
            "pytorch_model-00001-of-00002.bin"
        );
    }
}
