//! The checkpoint written as the converter writes it: each tensor renamed, its query and key
//! rows permuted back, widened to `f32` and stored as the file type says (norms and other
//! one-dimensional tensors as F32, Q8_0 falling back to F16 where rows are not whole
//! blocks), one tensor in memory at a time, into one GGUF file laid out as gguf-py lays it
//! out, written atomically.

mod gpt_oss;

use std::io::Write;
use std::path::{Path, PathBuf};

use super::checkpoint::Checkpoint;
use super::parts::{self, OutputSplit};
use super::plan::{KvSplit, Planned, fp8};
use crate::convert::{Progress, as_f32, remove_replaced};
use crate::error::{Error, Result};
use crate::formats::gguf::GgufWriter;
use crate::formats::gguf::split::metadata_only;
use crate::formats::{FormatWriter, WriteOptions};
use crate::model::quant::{BLOCKS, GgmlType, Quant};
use crate::model::{DType, Layout, MetaValue, TensorData, TensorInfo};
use crate::output::AtomicFile;
use crate::source::Bytes;

/// How the tensors are stored: the converter's `--outtype`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutType {
    /// As the checkpoint's first matrix is stored: bfloat16 or float16, else float16.
    #[default]
    Auto,
    /// `f32`.
    F32,
    /// `f16`.
    F16,
    /// `bf16`.
    BF16,
    /// `q8_0`.
    Q8_0,
    /// `tq1_0`: ternary, the token embeddings and output stored as F16.
    TQ1_0,
    /// `tq2_0`: ternary, the token embeddings and output stored as F16.
    TQ2_0,
}

impl OutType {
    /// The ggml type matrices get, and `general.file_type`'s number (llama.cpp's
    /// `llama_ftype`).
    pub(crate) fn resolved(self) -> (GgmlType, u32) {
        match self {
            OutType::F32 => (GgmlType::F32, 0),
            OutType::F16 | OutType::Auto => (GgmlType::F16, 1),
            OutType::BF16 => (GgmlType::BF16, 32),
            OutType::Q8_0 => (GgmlType::Q8_0, 7),
            OutType::TQ1_0 => (GgmlType::TQ1_0, 36),
            OutType::TQ2_0 => (GgmlType::TQ2_0, 37),
        }
    }

    /// The converter's name of the type (`--outtype`).
    pub fn name(self) -> &'static str {
        match self {
            OutType::Auto => "auto",
            OutType::F32 => "f32",
            OutType::F16 => "f16",
            OutType::BF16 => "bf16",
            OutType::Q8_0 => "q8_0",
            OutType::TQ1_0 => "tq1_0",
            OutType::TQ2_0 => "tq2_0",
        }
    }

    /// The type the converter's `--outtype NAME` names (`f32`, `f16`, `bf16`, `q8_0`, `tq1_0`,
    /// `tq2_0`, `auto`; upper case too).
    pub fn from_name(name: &str) -> Result<OutType> {
        let all =
            [OutType::Auto, OutType::F32, OutType::F16, OutType::BF16, OutType::Q8_0, OutType::TQ1_0, OutType::TQ2_0];
        let lower = name.to_ascii_lowercase();
        all.into_iter().find(|t| t.name() == lower).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
            Error::usage(format!("no outtype {name:?}: the converter's are {}", names.join(", ")))
        })
    }

    /// `--outtype auto`: from the first tensor of two or more dimensions stored as bfloat16
    /// or float16, else float16.
    pub(crate) fn guessed(checkpoint: &Checkpoint) -> OutType {
        for t in &checkpoint.tensors {
            let info = checkpoint.parts[t.part].entries()[t.index].info();
            if info.shape().len() < 2 {
                continue;
            }
            match info.dtype() {
                DType::BFloat16 => return OutType::BF16,
                DType::Float16 => return OutType::F16,
                _ => {}
            }
        }
        OutType::F16
    }
}

/// Query or key rows permuted from Hugging Face's rotary layout back to llama.cpp's: within
/// each head, the first and second halves of its rows interleaved (as values, or as the bytes
/// of stored rows: `items` are `rows` rows of equal length).
fn permute_rows<T: Copy>(items: &[T], rows: u64, heads: u64) -> Result<Vec<T>> {
    if heads == 0 || rows % (heads * 2) != 0 {
        return Err(Error::usage(format!("{rows} rows cannot be cut into {heads} heads of two halves")));
    }
    let width = items.len() / rows.max(1) as usize;
    let half = rows / heads / 2;
    let mut out = Vec::with_capacity(items.len());
    for head in 0..heads {
        for i in 0..half {
            for part in 0..2 {
                let start = ((head * 2 + part) * half + i) as usize * width;
                out.extend_from_slice(&items[start..start + width]);
            }
        }
    }
    Ok(out)
}

/// One half of DeepSeek's `kv_b_proj` (`values` of `shape`: heads x (nope + v_dim) rows of the
/// latent rank): per head, its first `nope` rows transposed (`k_b_proj`: rank x nope) or its
/// last `v_dim` rows (`v_b_proj`: v_dim x rank).
fn split_kv_b(values: &[f32], shape: &[u64], split: KvSplit) -> Result<Vec<f32>> {
    let KvSplit { value, heads, nope, v_dim } = split;
    let rank = shape.last().copied().unwrap_or(0);
    let per_head = nope.checked_add(v_dim);
    let fits = per_head.and_then(|w| w.checked_mul(heads)).and_then(|r| r.checked_mul(rank));
    if fits != Some(values.len() as u64) {
        return Err(Error::usage(format!(
            "kv_b_proj of shape {shape:?} is not {heads} heads of {nope} + {v_dim} rows"
        )));
    }
    let (per_head, rank, nope, v_dim) = (nope as usize + v_dim as usize, rank as usize, nope as usize, v_dim as usize);
    if per_head == 0 || rank == 0 {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(if value { v_dim } else { nope } * rank * heads as usize);
    for head in values.chunks_exact(per_head * rank) {
        if value {
            out.extend_from_slice(&head[nope * rank..]);
        } else {
            for r in 0..rank {
                out.extend((0..nope).map(|j| head[j * rank + r]));
            }
        }
    }
    Ok(out)
}

/// Whether a bfloat16 is a NaN.
fn is_bf16_nan(h: u16) -> bool {
    h & 0x7fff > 0x7f80
}

/// Whether the little-endian bfloat16s `bytes` hold a NaN: pieces of 8 MiB on the library's
/// threads (a large tensor is read at the memory's speed, not one core's).
fn has_bf16_nan(bytes: &[u8]) -> bool {
    use rayon::prelude::*;
    const PIECE: usize = 8 << 20;
    if bytes.len() <= PIECE {
        return has_bf16_nan_in(bytes);
    }
    bytes.par_chunks(PIECE).any(has_bf16_nan_in)
}

/// [`has_bf16_nan`] on one thread, four values at a time: a lane's magnitude (sign cleared)
/// plus 0x7f reaches bit 15, without carrying into the next lane, exactly when it exceeds
/// infinity's 0x7f80.
fn has_bf16_nan_in(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    let mut carried = 0u64;
    for w in &mut words {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        carried |= (w & 0x7fff_7fff_7fff_7fff) + 0x007f_007f_007f_007f;
    }
    carried & 0x8000_8000_8000_8000 != 0
        || words.remainder().chunks_exact(2).any(|h| is_bf16_nan(u16::from_le_bytes([h[0], h[1]])))
}

/// A bfloat16 NaN quieted as gguf-py's bfloat16 conversion quiets it (the `0x40` bit of its
/// upper byte set); any other value as it is.
fn quiet_bf16(h: u16) -> u16 {
    if is_bf16_nan(h) { h | 0x0040 } else { h }
}

/// The tensor's bytes without the round trip through `f32`, where that round trip gives them
/// back: one source stored densely as the planned dtype (bfloat16, float16, float32), its
/// rows permuted as bytes, a bfloat16 NaN quieted as the round trip quiets it. `None`: the
/// values are widened and stored again.
fn as_stored(checkpoint: &Checkpoint, p: &Planned) -> Result<Option<TensorData>> {
    // A value transform (Gemma's +1, a split, scales) needs the values.
    let ([source], None, false) = (p.sources.as_slice(), &p.generated, p.plus_one) else { return Ok(None) };
    if p.split.is_some() || !p.scales.is_empty() {
        return Ok(None);
    }
    let file = &checkpoint.parts[source.part];
    let read_as = file.entries()[source.index].info();
    let dtype = read_as.dtype();
    let same = dtype == p.info.dtype() && p.info.layout().quant().is_none() && *read_as.layout() == Layout::Dense;
    if !same || !matches!(dtype, DType::BFloat16 | DType::Float16 | DType::Float32) {
        return Ok(None);
    }
    let data = file.read_verified(source.index).map_err(|e| e.for_tensor(&source.name))?;
    if p.permute_heads.is_some() || dtype == DType::BFloat16 {
        // Read whole here (scanned or permuted): its pages mapped in one call.
        data.as_dense()?.populate();
    }
    if p.permute_heads.is_none() && (dtype != DType::BFloat16 || !has_bf16_nan(data.as_dense()?)) {
        // The stored bytes as they are (a slice of the mapped file): nothing to change.
        return Ok(Some(data));
    }
    let mut bytes = match p.permute_heads {
        Some(heads) => permute_rows(data.as_dense()?, read_as.shape().first().copied().unwrap_or(1), heads)?,
        None => data.as_dense()?.to_vec(),
    };
    if let Some(rows) = p.rows {
        let all = read_as.shape().first().copied().unwrap_or(1).max(1);
        bytes.truncate(bytes.len() / all as usize * rows as usize);
    }
    if dtype == DType::BFloat16 {
        for pair in bytes.chunks_exact_mut(2) {
            let h = quiet_bf16(u16::from_le_bytes([pair[0], pair[1]]));
            pair.copy_from_slice(&h.to_le_bytes());
        }
    }
    Ok(Some(TensorData::dense(Bytes::from_vec(bytes))))
}

/// The tensor's bytes as planned: its sources' values (multiplied by their scales, stacked when
/// several), permuted or split when planned, stored as its type.
pub(crate) fn tensor_data(checkpoint: &Checkpoint, p: &Planned) -> Result<TensorData> {
    if let Some(part) = p.gpt_oss {
        return gpt_oss::tensor_data(checkpoint, p, part);
    }
    if let Some(data) = as_stored(checkpoint, p)? {
        return Ok(data);
    }
    let mut values = p.generated.clone().unwrap_or_default();
    for (i, source) in p.sources.iter().enumerate() {
        let file = &checkpoint.parts[source.part];
        let read_as = file.entries()[source.index].info();
        let mut part = as_f32(read_as, file.read_verified(source.index)?).map_err(|e| e.for_tensor(&source.name))?;
        if let Some(Some(scales)) = p.scales.get(i) {
            let t = &scales.tensor;
            let scale_file = &checkpoint.parts[t.part];
            let scale_info = scale_file.entries()[t.index].info();
            let scale = as_f32(scale_info, scale_file.read_verified(t.index)?).map_err(|e| e.for_tensor(&t.name))?;
            fp8::dequantize(&mut part, read_as.shape(), &scale, scale_info.shape(), scales.block.as_deref())
                .map_err(|e| e.for_tensor(&source.name))?;
        }
        if let Some(split) = p.split {
            part = split_kv_b(&part, read_as.shape(), split).map_err(|e| e.for_tensor(&source.name))?;
        }
        if let Some(heads) = p.permute_heads {
            part = permute_rows(&part, read_as.shape().first().copied().unwrap_or(1), heads)?;
        }
        if let Some(rows) = p.rows {
            let all = read_as.shape().first().copied().unwrap_or(1).max(1);
            part.truncate(part.len() / all as usize * rows as usize);
        }
        if p.plus_one {
            part.iter_mut().for_each(|v| *v += 1.0);
        }
        values.extend_from_slice(&part);
    }
    let row = usize::try_from(p.info.shape().last().copied().unwrap_or(1)).unwrap_or(1).max(1);
    let t = match p.info.layout().quant() {
        Some(Quant::Ggml(t)) => *t,
        _ => GgmlType::for_dtype(p.info.dtype()).ok_or_else(|| Error::usage("an output type ggml cannot store"))?,
    };
    let bytes = if values.is_empty() { Vec::new() } else { t.quantize(&values, row, None)? };
    Ok(match t.plain() {
        Some(_) => TensorData::dense(Bytes::from_vec(bytes)),
        None => TensorData::quantized(Quant::Ggml(t), vec![(BLOCKS, Bytes::from_vec(bytes))]),
    })
}

/// The files a conversion wrote: the output, or the parts of its split; and the files of an
/// earlier write to the same output it replaced.
pub(crate) struct Written {
    pub bytes: u64,
    pub files: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

/// Write `planned` with the key/values `metadata` to `dest`, or to the parts `split` asks
/// for; every file staged and all put in place once all are written.
pub(crate) fn write(
    checkpoint: &Checkpoint,
    planned: &[Planned],
    metadata: Vec<(String, MetaValue)>,
    dest: &Path,
    split: OutputSplit,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Written> {
    let infos: Vec<TensorInfo> = planned.iter().map(|p| p.info.clone()).collect();
    let sizes: Vec<u64> = infos.iter().map(TensorInfo::nbytes).collect::<Result<_>>()?;
    let total: u64 = sizes.iter().sum();
    let runs = parts::cut(&sizes, split);
    let (files, names) = parts::part_files(dest, runs.len())?;
    let count = u16::try_from(files.len()).map_err(|_| Error::usage("too many parts"))?;
    let tensors = i32::try_from(planned.len()).map_err(|_| Error::usage("more than 2^31-1 tensors"))?;
    let mut done = 0u64;
    let mut staged = Vec::with_capacity(files.len());
    for ((no, run), path) in (0..count).zip(runs).zip(&files) {
        let kvs = parts::part_kvs(&metadata, no, count, tensors);
        let mut file = AtomicFile::create(path)?;
        {
            let mut out = file.writer();
            let written = (|| -> Result<()> {
                if run.is_empty() && count > 1 {
                    // A part of key/values alone, padded as gguf-py pads before the data it has not.
                    return Ok(out.write_all(&metadata_only(&kvs)?)?);
                }
                let options = WriteOptions { metadata: kvs, ..WriteOptions::default() };
                let mut writer = GgufWriter::new(Box::new(&mut out), &infos[run.clone()], &options)?;
                let part = &planned[run];
                let made = |p: &Planned| tensor_data(checkpoint, p).map_err(|e| e.for_tensor(p.info.name()));
                // Each tensor made (read, checked, permuted) on a thread of its own while the one
                // before is written: the two overlap, one tensor ahead at most.
                let mut next = part.first().map(made).transpose()?;
                for (k, p) in part.iter().enumerate() {
                    let Some(data) = next.take() else { break };
                    next = std::thread::scope(|s| -> Result<Option<TensorData>> {
                        let ahead = part.get(k + 1).map(|q| s.spawn(move || made(q)));
                        writer.write(&data)?;
                        ahead.map(|h| h.join().map_err(|_| Error::usage("a tensor's reading panicked"))?).transpose()
                    })?;
                    done += p.info.nbytes()?;
                    progress(Progress { done_bytes: done, total_bytes: total, tensor: p.info.name() });
                }
                Box::new(writer).finish()
            })();
            let flushed = out.flush().map_err(Error::from);
            written.and(flushed).map_err(|e| e.in_file(path))?;
        }
        staged.push(file.stage()?);
    }
    for file in staged {
        file.commit()?;
    }
    let removed = if files.len() > 1 { remove_replaced(&names, &files, None) } else { Vec::new() };
    Ok(Written { bytes: total, files, removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_nans_are_quieted_as_gguf_py_quiets_them_and_nothing_else_changes() {
        // gguf-py: NaN (bits & 0x7fffffff > 0x7f800000) -> (bits & 0xffff0000) | (64 << 16).
        assert_eq!(quiet_bf16(0x7f81), 0x7fc1);
        assert_eq!(quiet_bf16(0xff81), 0xffc1);
        assert_eq!(quiet_bf16(0x7fc0), 0x7fc0);
        for kept in [0x7f80u16, 0xff80, 0x0000, 0x8000, 0x3f80, 0x0001, 0x7f7f] {
            assert_eq!(quiet_bf16(kept), kept, "{kept:#06x}");
        }
    }

    #[test]
    fn kv_b_splits_per_head_into_transposed_keys_and_values() {
        // 2 heads of 3 rows (1 key row and 2 value rows) of rank 3: head h, row r, column c
        // holds 100h + 10r + c.
        let values: Vec<f32> =
            (0..2).flat_map(|h| (0..3).flat_map(move |r| (0..3).map(move |c| (h * 100 + r * 10 + c) as f32))).collect();
        let shape = [6u64, 3];
        let k = split_kv_b(&values, &shape, KvSplit { value: false, heads: 2, nope: 1, v_dim: 2 }).unwrap();
        assert_eq!(k, [0., 1., 2., 100., 101., 102.]);
        let v = split_kv_b(&values, &shape, KvSplit { value: true, heads: 2, nope: 1, v_dim: 2 }).unwrap();
        assert_eq!(v, [10., 11., 12., 20., 21., 22., 110., 111., 112., 120., 121., 122.]);
        // Two key rows: each head's rank x nope, transposed.
        let k = split_kv_b(&values, &shape, KvSplit { value: false, heads: 2, nope: 2, v_dim: 1 }).unwrap();
        assert_eq!(k, [0., 10., 1., 11., 2., 12., 100., 110., 101., 111., 102., 112.]);
        assert!(split_kv_b(&values, &shape, KvSplit { value: true, heads: 3, nope: 1, v_dim: 2 }).is_err());
    }

    #[test]
    fn a_bfloat16_nan_is_found_wherever_it_is_and_nothing_else_is_one() {
        let edge = [0x7f80u16, 0xff80, 0x7f7f, 0x0000, 0x8000, 0x3f80, 0xffff, 0x7f81, 0xff81, 0x7fc0, 0xffc1];
        for len in 0..11 {
            for at in 0..len {
                for h in edge {
                    let mut values = vec![0x3f80u16; len];
                    values[at] = h;
                    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    assert_eq!(has_bf16_nan_in(&bytes), is_bf16_nan(h), "{h:#06x} at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn a_bfloat16_nan_is_found_in_any_piece_of_a_large_tensor() {
        let mut bytes = vec![0u8; (20 << 20) + 6];
        assert!(!has_bf16_nan(&bytes));
        for at in [0, (8 << 20) - 2, 8 << 20, (20 << 20) + 4] {
            bytes[at..at + 2].copy_from_slice(&0x7fc1u16.to_le_bytes());
            assert!(has_bf16_nan(&bytes), "NaN at {at}");
            bytes[at..at + 2].copy_from_slice(&0x7f80u16.to_le_bytes());
            assert!(!has_bf16_nan(&bytes), "infinity at {at}");
        }
    }

    #[test]
    fn rows_permute_as_bytes_as_they_do_as_values() {
        let values: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let by_value = permute_rows(&values, 8, 2).unwrap();
        let by_bytes = permute_rows(&bytes, 8, 2).unwrap();
        let back: Vec<f32> = by_bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(back, by_value);
        assert!(permute_rows(&bytes, 8, 3).is_err());
    }
}
