//! Split GGUF models, as llama.cpp's `llama-gguf-split` writes them and its model loader reads
//! them: the tensors of one model spread over files named `PREFIX-00001-of-00003.gguf`...
//! (`%s-%05d-of-%05d.gguf`, numbered from 1), each a complete GGUF file holding the keys
//! `split.no` (`u16`, the part's number from 0), `split.count` (`u16`) and
//! `split.tensors.count` (`i32`, the tensors of every part together); every other key/value
//! is in the first part only.
//!
//! What `llama-gguf-split --split` writes, byte for byte (ggml's `gguf_write_out` with a fresh
//! context): version 3; the first part's key/values are the model's in their order, its own
//! `split.*` keys taken out, then `split.no`, `split.tensors.count`, `split.count` (ggml moves a
//! key it sets again to the end, and `split.count` is set again once the parts are counted);
//! the other parts hold these three keys alone, in that order. Tensor infos keep the model's
//! order and give `ne` as ggml's `ggml_n_dims` counts it (trailing dimensions of 1 left out);
//! the data region and every tensor are padded to 32 bytes, the last one too, and a part of no
//! tensors is padded after its infos all the same. `--split-max-size` counts each tensor's
//! bytes padded to 32 (no header) and starts a new part before a tensor that would take the
//! current one past the size; `--split-max-tensors N` starts one every N tensors;
//! `--no-tensor-first-split` leaves the model's key/values alone in the first part.
//!
//! `llama-gguf-split --merge` writes the first part's key/values with `split.count` set to 0
//! and moved last (so that the merged file is no split), then every part's tensors in order,
//! laid out as above.

use std::ops::Range;

use super::encode::encode_padded_index;
use super::read::{GgufReader, alignment_of};
use super::DEFAULT_ALIGNMENT;
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::FormatReader;
use crate::model::{MetaValue, Number};

/// The key holding a part's number, from 0.
pub(crate) const SPLIT_NO: &str = "split.no";
/// The key holding how many parts the model has.
pub(crate) const SPLIT_COUNT: &str = "split.count";
/// The key holding how many tensors the parts hold together.
pub(crate) const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// What the split keys of a part say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitKeys {
    /// `split.no`: the part's number, from 0.
    pub no: u16,
    /// `split.count`: how many parts.
    pub count: u16,
    /// `split.tensors.count`, when the part has it (llama.cpp needs it in the first part).
    pub tensors: Option<i32>,
}

/// The split keys of a file's key/values: `None` when the file is a whole model (no
/// `split.count`, or one below 2: a merged file keeps `split.count` 0). Each key must have the
/// type llama.cpp's loader asks for.
pub(crate) fn split_keys(metadata: &[(String, MetaValue)]) -> Result<Option<SplitKeys>> {
    let find = |key: &str| metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let wrong = |key: &str, want: &str| {
        Error::invalid(Rule::BadMetadata, format!("{key} must be a {want}, as llama.cpp reads it"))
    };
    let count = match find(SPLIT_COUNT) {
        None => return Ok(None),
        Some(MetaValue::Number(Number::U16(n))) => *n,
        Some(_) => return Err(wrong(SPLIT_COUNT, "u16")),
    };
    if count < 2 {
        return Ok(None);
    }
    let no = match find(SPLIT_NO) {
        Some(MetaValue::Number(Number::U16(n))) => *n,
        Some(_) => return Err(wrong(SPLIT_NO, "u16")),
        None => {
            return Err(Error::invalid(
                Rule::MissingField,
                format!("{SPLIT_COUNT} is {count} but there is no {SPLIT_NO}: which part is this?"),
            ));
        }
    };
    if no >= count {
        return Err(Error::invalid(
            Rule::ShardMismatch,
            format!("{SPLIT_NO} {no} is not below {SPLIT_COUNT} {count} (parts are numbered from 0)"),
        ));
    }
    let tensors = match find(SPLIT_TENSORS_COUNT) {
        None => None,
        Some(MetaValue::Number(Number::I32(n))) => Some(*n),
        Some(_) => return Err(wrong(SPLIT_TENSORS_COUNT, "i32")),
    };
    Ok(Some(SplitKeys { no, count, tensors }))
}

/// The split keys of an opened file: `None` unless it is a GGUF file that is a part of a split
/// model (see [`split_keys`]).
pub(crate) fn split_keys_of(reader: &dyn FormatReader) -> Result<Option<SplitKeys>> {
    match reader.as_any().downcast_ref::<GgufReader>() {
        Some(gguf) => split_keys(gguf.metadata()),
        None => Ok(None),
    }
}

/// What `reader`, found where a part of a split model should be, is instead: a GGUF file
/// without the split keys, or another format.
pub(crate) fn not_a_part(reader: &dyn FormatReader) -> String {
    match reader.as_any().downcast_ref::<GgufReader>() {
        Some(_) => format!("has no {SPLIT_COUNT} of 2 or more"),
        None => format!("is {}, not GGUF", reader.format()),
    }
}

/// Why a set of GGUF files (a split model) cannot have `what` done to it as one file.
pub(crate) fn not_one_file(what: &str) -> Error {
    Error::unsupported(format!(
        "a set of GGUF files (a split model) cannot have {what} as one file: convert it into one .gguf first"
    ))
}

/// The file name of part `no` (from 0) of `count` of the model named `prefix`, as llama.cpp's
/// `llama_split_path` writes it: `PREFIX-00001-of-00003.gguf`.
pub(crate) fn part_name(prefix: &str, no: u16, count: u16) -> String {
    format!("{prefix}-{:05}-of-{count:05}.gguf", u32::from(no) + 1)
}

/// The prefix of `file_name` when it is the name of part `no` of `count` (llama.cpp's
/// `llama_split_prefix`: the name ends in `-00002-of-00003.gguf` after at least one byte).
pub(crate) fn prefix_of(file_name: &str, no: u16, count: u16) -> Option<&str> {
    let tail = format!("-{:05}-of-{count:05}.gguf", u32::from(no) + 1);
    file_name.strip_suffix(tail.as_str()).filter(|prefix| !prefix.is_empty())
}

/// How a model is cut into parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SplitBy {
    /// At most this many tensor bytes in a part (each tensor counted padded to 32 bytes), as
    /// `llama-gguf-split --split-max-size` cuts. A tensor larger than that alone gets a part of
    /// its own (where llama-gguf-split refuses a first tensor that large).
    Size(u64),
    /// At most this many tensors in a part (at least 1), as `--split-max-tensors` cuts.
    Tensors(u64),
}

/// The tensors of each part, as ranges of the tensors whose byte sizes are `sizes` (in the
/// order they are written), cut as `by` says; with `no_tensor_first_split` a first part of no
/// tensors comes first. Always at least one part.
pub(crate) fn plan_parts(sizes: &[u64], by: SplitBy, no_tensor_first_split: bool) -> Result<Vec<Range<usize>>> {
    let mut parts = Vec::new();
    if no_tensor_first_split {
        parts.push(0..0);
    }
    let mut start = 0;
    let mut filled = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        let padded = checked::align_up(size, DEFAULT_ALIGNMENT)?;
        let cut = match by {
            SplitBy::Size(max) => i > start && filled.saturating_add(padded) > max,
            SplitBy::Tensors(0) => return Err(Error::usage("a part must hold at least one tensor")),
            SplitBy::Tensors(n) => i > 0 && i as u64 % n == 0,
        };
        if cut {
            parts.push(start..i);
            (start, filled) = (i, 0);
        }
        filled = filled.saturating_add(padded);
    }
    parts.push(start..sizes.len());
    Ok(parts)
}

/// The key/values of part `no` (from 0) of `count` of a model whose key/values are
/// `metadata`, holding `tensors` tensors in all, in llama-gguf-split's order.
pub(crate) fn part_metadata(
    metadata: &[(String, MetaValue)],
    no: u16,
    count: u16,
    tensors: i32,
) -> Vec<(String, MetaValue)> {
    let is_split_key = |k: &str| k == SPLIT_NO || k == SPLIT_COUNT || k == SPLIT_TENSORS_COUNT;
    let mut out: Vec<(String, MetaValue)> = match no {
        0 => metadata.iter().filter(|(k, _)| !is_split_key(k)).cloned().collect(),
        _ => Vec::with_capacity(3),
    };
    out.push((SPLIT_NO.into(), MetaValue::Number(Number::U16(no))));
    out.push((SPLIT_TENSORS_COUNT.into(), MetaValue::Number(Number::I32(tensors))));
    out.push((SPLIT_COUNT.into(), MetaValue::Number(Number::U16(count))));
    out
}

/// The key/values of a merged model whose first part's are `metadata`: as they are, with
/// `split.count` 0 moved last, as `llama-gguf-split --merge` writes them.
pub(crate) fn merged_metadata(metadata: &[(String, MetaValue)]) -> Vec<(String, MetaValue)> {
    let mut out: Vec<(String, MetaValue)> = metadata.iter().filter(|(k, _)| k != SPLIT_COUNT).cloned().collect();
    out.push((SPLIT_COUNT.into(), MetaValue::Number(Number::U16(0))));
    out
}

/// Whether key/values are those of a split model, or of one merged from parts: they hold
/// `split.count`.
pub(crate) fn has_split_count(metadata: &[(String, MetaValue)]) -> bool {
    metadata.iter().any(|(k, _)| k == SPLIT_COUNT)
}

/// The shape ggml writes for a tensor of `shape` (outermost first): the dimensions of 1 that
/// lead it left out, as `ggml_n_dims` counts them (trailing ones of `ne`), at least one. A
/// dimension of 0 stays (ggml would drop it too, and write a tensor of the wrong size).
pub(crate) fn ggml_shape(shape: &[u64]) -> Vec<u64> {
    let first = shape.iter().position(|&d| d != 1).unwrap_or(shape.len());
    match &shape[first..] {
        [] => vec![1],
        kept => kept.to_vec(),
    }
}

/// A GGUF file of key/values and no tensors, as ggml writes it: the header, the key/values,
/// then zeros up to the alignment.
pub(crate) fn metadata_only(metadata: &[(String, MetaValue)]) -> Result<Vec<u8>> {
    let alignment = alignment_of(metadata).map_err(|e| Error::usage(e.detail()))?;
    encode_padded_index(metadata, &[], alignment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16v(n: u16) -> MetaValue {
        MetaValue::Number(Number::U16(n))
    }

    #[test]
    fn names_as_llama_cpp_writes_them() {
        assert_eq!(part_name("out/model", 0, 3), "out/model-00001-of-00003.gguf");
        assert_eq!(part_name("m", 65534, 65535), "m-65535-of-65535.gguf");
        assert_eq!(prefix_of("model-00002-of-00003.gguf", 1, 3), Some("model"));
        assert_eq!(prefix_of("a-b-00001-of-00010.gguf", 0, 10), Some("a-b"));
        assert_eq!(prefix_of("model-00002-of-00003.gguf", 0, 3), None);
        assert_eq!(prefix_of("model-00002-of-00004.gguf", 1, 3), None);
        assert_eq!(prefix_of("-00001-of-00002.gguf", 0, 2), None);
        assert_eq!(prefix_of("model.gguf", 0, 2), None);
    }

    #[test]
    fn split_keys_are_typed_as_llama_cpp_reads_them() {
        let kv = |items: Vec<(&str, MetaValue)>| -> Vec<(String, MetaValue)> {
            items.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
        };
        assert_eq!(split_keys(&kv(vec![])).unwrap(), None);
        assert_eq!(split_keys(&kv(vec![(SPLIT_COUNT, u16v(0)), (SPLIT_NO, u16v(0))])).unwrap(), None);
        assert_eq!(split_keys(&kv(vec![(SPLIT_COUNT, u16v(1))])).unwrap(), None);
        let keys = kv(vec![
            (SPLIT_NO, u16v(2)),
            (SPLIT_COUNT, u16v(3)),
            (SPLIT_TENSORS_COUNT, MetaValue::Number(Number::I32(7))),
        ]);
        assert_eq!(split_keys(&keys).unwrap(), Some(SplitKeys { no: 2, count: 3, tensors: Some(7) }));
        let rule = |items| split_keys(&kv(items)).unwrap_err().rule();
        assert_eq!(rule(vec![(SPLIT_COUNT, MetaValue::Number(Number::U32(3)))]), Some(Rule::BadMetadata));
        assert_eq!(rule(vec![(SPLIT_COUNT, u16v(3))]), Some(Rule::MissingField));
        assert_eq!(rule(vec![(SPLIT_COUNT, u16v(3)), (SPLIT_NO, u16v(3))]), Some(Rule::ShardMismatch));
        assert_eq!(rule(vec![(SPLIT_COUNT, u16v(3)), (SPLIT_NO, MetaValue::Int(1))]), Some(Rule::BadMetadata));
        let bad_total = vec![(SPLIT_COUNT, u16v(3)), (SPLIT_NO, u16v(1)), (SPLIT_TENSORS_COUNT, u16v(1))];
        assert_eq!(rule(bad_total), Some(Rule::BadMetadata));
    }

    #[test]
    fn parts_are_cut_as_llama_gguf_split_cuts() {
        let by_size = |sizes: &[u64], max, empty_first| plan_parts(sizes, SplitBy::Size(max), empty_first).unwrap();
        // Sizes count padded to 32: 33 bytes count 64.
        assert_eq!(by_size(&[33, 33, 33], 128, false), vec![0..2, 2..3]);
        assert_eq!(by_size(&[32, 32, 32, 32], 128, false), vec![0..4]);
        assert_eq!(by_size(&[32, 200, 32], 100, false), vec![0..1, 1..2, 2..3]);
        assert_eq!(by_size(&[200, 32], 100, false), vec![0..1, 1..2]);
        assert_eq!(by_size(&[], 100, false), vec![0..0]);
        assert_eq!(by_size(&[], 100, true), vec![0..0, 0..0]);
        assert_eq!(by_size(&[10, 10], 100, true), vec![0..0, 0..2]);
        let by_count = |n: usize, per, empty_first| plan_parts(&vec![1; n], SplitBy::Tensors(per), empty_first).unwrap();
        assert_eq!(by_count(5, 2, false), vec![0..2, 2..4, 4..5]);
        assert_eq!(by_count(4, 2, false), vec![0..2, 2..4]);
        assert_eq!(by_count(4, 2, true), vec![0..0, 0..2, 2..4]);
        assert_eq!(by_count(1, 128, false), vec![0..1]);
        assert!(plan_parts(&[1], SplitBy::Tensors(0), false).is_err());
    }

    #[test]
    fn keys_in_llama_gguf_split_order() {
        let model = vec![
            ("general.name".to_string(), MetaValue::Text("m".into())),
            (SPLIT_COUNT.to_string(), u16v(0)),
            ("general.alignment".to_string(), MetaValue::Number(Number::U32(32))),
        ];
        let first: Vec<String> = part_metadata(&model, 0, 2, 5).into_iter().map(|(k, _)| k).collect();
        assert_eq!(first, ["general.name", "general.alignment", SPLIT_NO, SPLIT_TENSORS_COUNT, SPLIT_COUNT]);
        let second = part_metadata(&model, 1, 2, 5);
        assert_eq!(second.len(), 3);
        assert_eq!(second[2], (SPLIT_COUNT.to_string(), u16v(2)));
        let merged = merged_metadata(&part_metadata(&model, 0, 2, 5));
        assert_eq!(merged.last(), Some(&(SPLIT_COUNT.to_string(), u16v(0))));
        assert_eq!(merged.len(), 5);
    }

    #[test]
    fn shapes_as_ggml_counts_dimensions() {
        assert_eq!(ggml_shape(&[]), vec![1]);
        assert_eq!(ggml_shape(&[1, 1]), vec![1]);
        assert_eq!(ggml_shape(&[1, 4]), vec![4]);
        assert_eq!(ggml_shape(&[4, 1]), vec![4, 1]);
        assert_eq!(ggml_shape(&[1, 3, 1, 2]), vec![3, 1, 2]);
        assert_eq!(ggml_shape(&[0, 3]), vec![0, 3]);
    }

    #[test]
    fn a_part_of_no_tensors_is_padded() {
        let bytes = metadata_only(&part_metadata(&[], 0, 2, 0)).unwrap();
        assert_eq!(bytes.len() % 32, 0);
        assert!(bytes.starts_with(b"GGUF\x03\0\0\0"));
    }
}
