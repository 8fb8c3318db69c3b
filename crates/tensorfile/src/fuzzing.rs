//! The body of the fuzz targets (`fuzz/`) and of the tests that replay their findings: what
//! only this workspace's tests and fuzz targets see (feature `internals`), free to call every
//! layer of the library.

use crate::formats::Format;
use crate::source::Bytes;

/// Open `data` (as `format`, or detected), gather what `info` shows, verify it, and decode
/// every entry with checksums verified, asserting that what decodes has exactly its declared
/// size. Errors are fine; panics are bugs. The body of the fuzz targets (`fuzz/`) and of the regression test that replays
/// their findings on stable Rust.
pub fn exercise(data: &[u8], format: Option<Format>) {
    let bytes = Bytes::from_vec(data.to_vec());
    let opened = match format {
        Some(f) => crate::file::OpenOptions::new().format(f).open_bytes(bytes),
        None => crate::file::OpenOptions::new().open_bytes(bytes),
    };
    let Ok(file) = opened else { return };
    // What `info` and `report` show (the report holds all of info's facts), without the
    // statistics: those read what the loop below reads.
    let no_stats = crate::report::ReportOptions { stats: false, ..Default::default() };
    let _ = crate::report::gather(&file, "fuzz", &no_stats, None, &|_| {});
    let _ = file.verify();
    for (i, entry) in file.entries().iter().enumerate() {
        let _ = entry.info().nbytes();
        if let Ok(d) = file.read_verified(i) {
            assert_eq!(d.len(), entry.nbytes(), "entry {:?} decoded to a different size", entry.info().name());
            dequantize_both_ways(entry.info(), &d);
        }
    }
}

/// A quantized entry's data dequantized whole to float32, and dequantized and cast to float16
/// a piece at a time: either both fail or both give every element, the second exactly the
/// cast of the first.
fn dequantize_both_ways(info: &crate::model::TensorInfo, data: &crate::model::TensorData) {
    use crate::model::{DType, cast};
    if info.layout().quant().is_none() {
        return;
    }
    let (whole, as_f16) =
        (data.to_dense(info.dtype(), info.shape()), data.to_dense_as(info.dtype(), info.shape(), DType::Float16));
    match (whole, as_f16) {
        (Ok(whole), Ok(as_f16)) => {
            let cast = cast::cast(&whole, DType::Float32, DType::Float16).expect("float32 casts to float16");
            assert!(
                *as_f16 == cast[..],
                "{:?}: dequantized to float16 in pieces unlike the cast of the whole",
                info.name()
            );
        }
        (Err(_), Err(_)) => {}
        (whole, as_f16) => {
            panic!("{:?}: dequantized whole {:?}, to float16 {:?}", info.name(), whole.err(), as_f16.err())
        }
    }
}

/// Cut `data` into parts before each `GGUF` magic (after its first byte) and open them, in
/// order, as the parts of one split GGUF model named `fuzz-0000K-of-0000N.gguf`. Errors are
/// fine; panics are bugs. When the parts are accepted (the result says whether), they hold as
/// many entries as the first part's `split.tensors.count` says, and every entry that decodes
/// has exactly its declared size.
pub fn exercise_split_gguf(data: &[u8]) -> bool {
    use crate::formats::FormatReader;
    use crate::formats::gguf::split::{self, split_keys_of};

    let mut starts: Vec<usize> =
        data.windows(4).enumerate().filter(|(i, w)| *i > 0 && w == b"GGUF").map(|(i, _)| i).collect();
    starts.insert(0, 0);
    starts.truncate(16);
    let count = starts.len();
    let Ok(count16) = u16::try_from(count) else { return false };
    let parts: Vec<_> = starts
        .iter()
        .enumerate()
        .map(|(k, &start)| {
            let end = starts.get(k + 1).copied().unwrap_or(data.len());
            let name = split::part_name("fuzz", k as u16, count16);
            (std::path::PathBuf::from(name), Bytes::from_vec(data[start..end].to_vec()))
        })
        .collect();
    let Ok(set) = crate::file::sets::ShardSet::split_model_of_bytes(parts) else { return false };
    let first = set.files().next().map(std::path::Path::to_path_buf);
    let _ = set.summary();
    let _ = set.check();
    let declared = set.entries().len() + set.unreadable().len();
    if let Some(first) = first {
        let reopened = Bytes::from_vec(data[..starts.get(1).copied().unwrap_or(data.len())].to_vec());
        let keys = Format::detect(&reopened)
            .and_then(|format| format.open(crate::source::Source::local(reopened)))
            .ok()
            .and_then(|r| split_keys_of(r.as_ref()).ok().flatten());
        let expected = keys.and_then(|k| k.tensors);
        assert_eq!(
            expected.map(i64::from),
            Some(declared as i64),
            "{}: a split model of another tensor count",
            first.display()
        );
    }
    for (i, entry) in set.entries().iter().enumerate() {
        if let Ok(d) = set.read(i, true) {
            assert_eq!(d.len(), entry.nbytes(), "entry {:?} decoded to a different size", entry.info().name());
        }
    }
    true
}

/// Read `data` as a SentencePiece model (a `tokenizer.model`): errors are fine; panics are
/// bugs. The pieces read are no more than the input could hold (each takes at least two
/// bytes).
pub fn exercise_sentencepiece(data: &[u8]) {
    if let Ok(pieces) = crate::llama::hf::spm::proto::pieces(data) {
        assert!(pieces.len() <= data.len() / 2, "{} pieces from {} bytes", pieces.len(), data.len());
    }
}

/// Read `data` as a Hugging Face `config.json`: the architecture it names, the
/// hyperparameters the converter sees (the configuration class's defaults filled in) and
/// their GGUF key/values. Errors are fine; panics are bugs; no key/value is made twice. The
/// result says whether key/values were made.
pub fn exercise_hf_config(data: &[u8]) -> bool {
    crate::llama::hf::spm::fuzz::config(data)
}

/// The files of a Hugging Face folder's vocabulary a tokenizer input holds, in order, cut at
/// NUL bytes (an empty part: no such file).
pub const HF_TOKENIZER_FILES: [&str; 6] = crate::llama::hf::spm::fuzz::TOKENIZER_FILES;

/// Write the files `data` holds ([`HF_TOKENIZER_FILES`]) into the folder `dir` (replacing,
/// or removing, what an earlier input left there) and read the vocabulary from them as the
/// SentencePiece path does (over an empty `tokenizer.model`) and as the BPE path does without
/// the tokenizers library: `tokenizer_config.json`, `special_tokens_map.json` and
/// `added_tokens.json`'s special tokens, `tokenizer.json`'s vocabulary, added tokens,
/// merges, normalizer and post-processor, the chat template. Errors are fine; panics are
/// bugs; a vocabulary read has as many scores and token types as tokens. The result says
/// whether a vocabulary was read.
pub fn exercise_hf_tokenizer_files(data: &[u8], dir: &std::path::Path) -> bool {
    crate::llama::hf::spm::fuzz::tokenizer_files(data, dir)
}

/// Read `data` as the records a Git repository keeps of an LFS file: an index (the entry of
/// one path), a delta applied to a base (the first byte of `data` says where the base ends),
/// and an LFS pointer. Errors are fine; panics are bugs; nothing made is larger than allowed.
pub fn exercise_git_records(data: &[u8]) {
    use crate::file::digest::{git_objects, lfs};
    use crate::source::lfs_pointer::{MAX_LFS_POINTER, parse_pointer};
    let _ = lfs::find_entry(data, b"weights/model.safetensors");
    if parse_pointer(data).is_some() {
        assert!(data.len() <= MAX_LFS_POINTER, "a pointer of {} bytes", data.len());
    }
    let cut = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    if let Some(made) = git_objects::apply_delta(&data[..cut], &data[cut..], MAX_LFS_POINTER) {
        assert!(made.len() <= MAX_LFS_POINTER, "a delta made {} bytes", made.len());
    }
}
