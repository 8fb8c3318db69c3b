//! A split GGUF model (`model-00001-of-00003.gguf`..., see `formats::gguf::split`) read as one
//! file: opening any part opens them all, as llama.cpp's loader opens them from the first.
//!
//! What ties the parts together is checked as the loader checks it, and more: every part is
//! there (`missing-file`, naming the file looked for), is GGUF, says it is the part its name
//! says (`split.no`) of as many parts as the first says (`split.count`), the parts hold as many
//! tensors as the first part's `split.tensors.count` says (`shard-mismatch`, naming the part),
//! and no name is in two parts (`duplicate-name`, naming both).

use std::path::Path;

use super::ShardSet;
use super::set::{Shard, beside, check_count, holders, open_in_order, open_shard};
use crate::error::{Error, Result, Rule};
use crate::formats::FormatReader;
use crate::formats::gguf::split::{self, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT, SplitKeys};

impl ShardSet {
    /// The split model that the file at `path` (a local path or a URL), opened as `opened` of
    /// `size` bytes, is part `keys.no` of: its other parts are the files beside it named as
    /// the parts of `keys.count`.
    pub(crate) fn open_split_model(
        path: &Path,
        opened: std::sync::Arc<dyn FormatReader>,
        size: u64,
        keys: SplitKeys,
    ) -> Result<ShardSet> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let Some(prefix) = split::prefix_of(name, keys.no, keys.count) else {
            return Err(Error::invalid(
                Rule::ShardMismatch,
                format!(
                    "{SPLIT_NO} {} of {SPLIT_COUNT} {} says it is {}, but it is named {name:?}: \
                     the other parts cannot be found",
                    keys.no,
                    keys.count,
                    split::part_name("NAME", keys.no, keys.count)
                ),
            )
            .in_file(path));
        };
        check_count(usize::from(keys.count), "parts")?;
        let mut opened = Some(Shard { path: path.to_path_buf(), reader: opened, size });
        let numbers: Vec<u16> = (0..keys.count).collect();
        let others = open_in_order(&numbers, |&no| {
            if no == keys.no {
                return Ok(None);
            }
            let file = split::part_name(prefix, no, keys.count);
            let how = format!("part {} of {} of the split model {name:?}", u32::from(no) + 1, keys.count);
            open_shard(&beside(path, &file), Some(&how)).map(Some)
        })?;
        let parts: Vec<Shard> = others
            .into_iter()
            .map(|other| other.or_else(|| opened.take()))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::usage("the part opened was not among the parts of its own split model"))?;
        ShardSet::split_model(parts)
    }

    /// The parts whose bytes are `parts` (named by the paths given), in order, checked to be
    /// one split model: the body of the `split_gguf` fuzz target.
    #[cfg(feature = "internals")]
    pub(crate) fn split_model_of_bytes(parts: Vec<(std::path::PathBuf, crate::source::Bytes)>) -> Result<ShardSet> {
        let opened = parts.into_iter().map(|(path, bytes)| {
            let size = bytes.len() as u64;
            let reader = crate::Format::detect(&bytes)?.open(crate::source::Source::local(bytes))?;
            Ok(Shard { path, reader: reader.into(), size })
        });
        ShardSet::split_model(opened.collect::<Result<_>>()?)
    }

    /// The set of `parts`, in order, checked to be the parts of one split model.
    fn split_model(parts: Vec<Shard>) -> Result<ShardSet> {
        let count = parts.len();
        let mut expected_tensors = None;
        for (no, part) in parts.iter().enumerate() {
            let mismatch = |detail: String| Error::invalid(Rule::ShardMismatch, detail).in_file(&part.path);
            let keys = split::split_keys_of(part.reader.as_ref()).map_err(|e| e.in_file(&part.path))?;
            let Some(keys) = keys else {
                let what = split::not_a_part(part.reader.as_ref());
                return Err(mismatch(format!("part {} of {count} of a split model {what}", no + 1)));
            };
            if usize::from(keys.no) != no || usize::from(keys.count) != count {
                return Err(mismatch(format!(
                    "part {} of {count} of a split model says it is part {} of {} ({SPLIT_NO} {}, {SPLIT_COUNT} {})",
                    no + 1,
                    u32::from(keys.no) + 1,
                    keys.count,
                    keys.no,
                    keys.count
                )));
            }
            if no == 0 {
                expected_tensors = Some(keys.tensors.ok_or_else(|| {
                    Error::invalid(
                        Rule::MissingField,
                        format!("the first part of a split model has no {SPLIT_TENSORS_COUNT}"),
                    )
                    .in_file(&part.path)
                })?);
            }
        }
        holders(&parts)?;
        let held: usize = parts.iter().map(|p| p.reader.entries().len() + p.reader.unreadable().len()).sum();
        if let Some(expected) = expected_tensors.filter(|&n| i64::from(n) != held as i64) {
            let first = &parts[0].path;
            return Err(Error::invalid(
                Rule::ShardMismatch,
                format!("{SPLIT_TENSORS_COUNT} says {expected} tensors, but the {count} parts hold {held}"),
            )
            .in_file(first));
        }
        Ok(ShardSet::assemble(parts, Vec::new())?.into_split_model())
    }
}
