//! The converter's own split of its output (`--split-max-tensors`, `--split-max-size`,
//! `--no-tensor-first-split`), as gguf-py's `GGUFWriter` cuts and names it, which is not
//! llama-gguf-split's way (`crate::llama::split`): a tensor starts a new part when the part
//! it would join already holds the most tensors asked, or its bytes (unpadded) would take the
//! part past the size asked; the split keys are written last, `split.no`, `split.count`,
//! `split.tensors.count`; the other parts hold those three keys alone; a single part is the
//! output itself, with no split key.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::convert::ShardNames;
use crate::error::{Error, Result};
use crate::formats::gguf::split::part_name;
use crate::limits::MAX_SHARDS;
use crate::model::{MetaValue, Number};

/// How the converter is asked to cut its output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputSplit {
    /// `--split-max-tensors N`: at most this many tensors a part.
    pub max_tensors: Option<u64>,
    /// `--split-max-size SIZE`: at most this many tensor bytes a part (a tensor larger than
    /// that alone gets a part of its own).
    pub max_size: Option<u64>,
    /// `--no-tensor-first-split`: a first part of the key/values alone.
    pub no_tensor_first_split: bool,
}

impl OutputSplit {
    /// Whether any split is asked.
    pub(crate) fn is_asked(&self) -> bool {
        self.max_tensors.is_some_and(|n| n > 0) || self.max_size.is_some_and(|n| n > 0) || self.no_tensor_first_split
    }
}

/// The tensors of each part, as ranges of the tensors whose byte sizes are `sizes`, in the
/// order they are written; always at least one part.
pub(crate) fn cut(sizes: &[u64], split: OutputSplit) -> Vec<Range<usize>> {
    let mut parts = Vec::new();
    if split.no_tensor_first_split {
        parts.push(0..0);
    }
    let (mut start, mut filled) = (0usize, 0u64);
    for (i, &size) in sizes.iter().enumerate() {
        let held = i - start;
        let full = held > 0
            && (split.max_tensors.is_some_and(|n| n > 0 && held as u64 >= n)
                || split.max_size.is_some_and(|n| n > 0 && filled.saturating_add(size) > n));
        if full {
            parts.push(start..i);
            (start, filled) = (i, 0);
        }
        filled = filled.saturating_add(size);
    }
    parts.push(start..sizes.len());
    parts
}

/// The key/values of part `no` (from 0) of `count`, the model's being `kvs` and `tensors`
/// tensors in all; none added when there is one part.
pub(crate) fn part_kvs(kvs: &[(String, MetaValue)], no: u16, count: u16, tensors: i32) -> Vec<(String, MetaValue)> {
    let mut out = if no == 0 { kvs.to_vec() } else { Vec::with_capacity(3) };
    if count > 1 {
        out.push(("split.no".into(), MetaValue::Number(Number::U16(no))));
        out.push(("split.count".into(), MetaValue::Number(Number::U16(count))));
        out.push(("split.tensors.count".into(), MetaValue::Number(Number::I32(tensors))));
    }
    out
}

/// The files the parts are written to: `dest` for one part, else `DIR/STEM-00001-of-00003.gguf`...
/// as gguf-py names them after `dest` (its name without the last extension); and the names of
/// the write, to find an earlier write's parts by.
pub(crate) fn part_files(dest: &Path, count: usize) -> Result<(Vec<PathBuf>, ShardNames)> {
    let names = ShardNames::of(dest)?;
    if count <= 1 {
        return Ok((vec![dest.to_path_buf()], names));
    }
    let count = u16::try_from(count).ok().filter(|&n| usize::from(n) <= MAX_SHARDS).ok_or_else(|| {
        Error::usage(format!(
            "{count} parts would be needed (at most {}): give a larger size or tensor count per part",
            MAX_SHARDS.min(usize::from(u16::MAX))
        ))
    })?;
    let files = (0..count).map(|no| names.path(&part_name(names.stem(), no, count))).collect();
    Ok((files, names))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max_tensors: u64, max_size: u64, first: bool) -> OutputSplit {
        OutputSplit {
            max_tensors: (max_tensors > 0).then_some(max_tensors),
            max_size: (max_size > 0).then_some(max_size),
            no_tensor_first_split: first,
        }
    }

    #[test]
    fn parts_are_cut_as_gguf_py_cuts_them() {
        let sizes = [10, 10, 10, 10, 10];
        assert_eq!(cut(&sizes, split(0, 0, false)), vec![0..5]);
        assert_eq!(cut(&sizes, split(2, 0, false)), vec![0..2, 2..4, 4..5]);
        // Unpadded sizes: 20 fits a limit of 20, a third tensor does not.
        assert_eq!(cut(&sizes, split(0, 20, false)), vec![0..2, 2..4, 4..5]);
        assert_eq!(cut(&sizes, split(0, 25, false)), vec![0..2, 2..4, 4..5]);
        assert_eq!(cut(&sizes, split(0, 30, false)), vec![0..3, 3..5]);
        // A tensor over the limit gets a part of its own; the first is never left empty.
        assert_eq!(cut(&[50, 5, 50], split(0, 10, false)), vec![0..1, 1..2, 2..3]);
        assert_eq!(cut(&sizes, split(0, 0, true)), vec![0..0, 0..5]);
        assert_eq!(cut(&sizes, split(3, 0, true)), vec![0..0, 0..3, 3..5]);
        // Both limits: whichever comes first.
        assert_eq!(cut(&sizes, split(2, 15, false)), vec![0..1, 1..2, 2..3, 3..4, 4..5]);
        assert_eq!(cut(&[], split(2, 0, false)), vec![0..0]);
    }

    #[test]
    fn split_keys_come_last_and_other_parts_hold_them_alone() {
        let kvs = vec![("general.architecture".to_string(), MetaValue::Text("llama".into()))];
        assert_eq!(part_kvs(&kvs, 0, 1, 7), kvs);
        let first = part_kvs(&kvs, 0, 3, 7);
        let keys: Vec<&str> = first.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["general.architecture", "split.no", "split.count", "split.tensors.count"]);
        assert_eq!(first[3].1, MetaValue::Number(Number::I32(7)));
        let second = part_kvs(&kvs, 1, 3, 7);
        assert_eq!(second.len(), 3);
        assert_eq!(second[0].1, MetaValue::Number(Number::U16(1)));
    }

    #[test]
    fn parts_are_named_after_the_output() {
        let (files, _) = part_files(Path::new("out/model.gguf"), 1).unwrap();
        assert_eq!(files, [PathBuf::from("out/model.gguf")]);
        let (files, _) = part_files(Path::new("out/model.gguf"), 2).unwrap();
        assert_eq!(
            files,
            [PathBuf::from("out/model-00001-of-00002.gguf"), PathBuf::from("out/model-00002-of-00002.gguf")]
        );
    }
}
