//! The checkpoint written as the converter writes it: each tensor renamed, its query and key
//! rows permuted back, widened to `f32` and stored as the file type says (norms and other
//! one-dimensional tensors as F32, Q8_0 falling back to F16 where rows are not whole
//! blocks), one tensor in memory at a time, into one GGUF file laid out as gguf-py lays it
//! out, written atomically.

use std::io::Write;
use std::path::Path;

use super::checkpoint::Checkpoint;
use super::plan::Planned;
use crate::convert::{Progress, as_f32};
use crate::error::{Error, Result};
use crate::formats::gguf::GgufWriter;
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
        }
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

/// Whether a bfloat16 is a NaN.
fn is_bf16_nan(h: u16) -> bool {
    h & 0x7fff > 0x7f80
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
    // A value transform (Gemma's +1) needs the values.
    let ([source], None, false) = (p.sources.as_slice(), &p.generated, p.plus_one) else { return Ok(None) };
    let file = &checkpoint.parts[source.part];
    let read_as = file.entries()[source.index].info();
    let dtype = read_as.dtype();
    let same = dtype == p.info.dtype() && p.info.layout().quant().is_none() && *read_as.layout() == Layout::Dense;
    if !same || !matches!(dtype, DType::BFloat16 | DType::Float16 | DType::Float32) {
        return Ok(None);
    }
    let data = file.read_verified(source.index).map_err(|e| e.for_tensor(&source.name))?;
    data.as_dense()?.populate();
    let has_nan = |b: &[u8]| b.chunks_exact(2).any(|h| is_bf16_nan(u16::from_le_bytes([h[0], h[1]])));
    if p.permute_heads.is_none() && (dtype != DType::BFloat16 || !has_nan(data.as_dense()?)) {
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

/// The tensor's bytes as planned: its sources' values (stacked when several), permuted when
/// planned, stored as its type.
fn tensor_data(checkpoint: &Checkpoint, p: &Planned) -> Result<TensorData> {
    if let Some(data) = as_stored(checkpoint, p)? {
        return Ok(data);
    }
    let mut values = p.generated.clone().unwrap_or_default();
    for source in &p.sources {
        let file = &checkpoint.parts[source.part];
        let read_as = file.entries()[source.index].info();
        let mut part = as_f32(read_as, file.read_verified(source.index)?).map_err(|e| e.for_tensor(&source.name))?;
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

/// Write `planned` with the key/values `metadata` to `dest`, atomically.
pub(crate) fn write(
    checkpoint: &Checkpoint,
    planned: &[Planned],
    metadata: Vec<(String, MetaValue)>,
    dest: &Path,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<u64> {
    let infos: Vec<TensorInfo> = planned.iter().map(|p| p.info.clone()).collect();
    let total: u64 = infos.iter().map(|i| i.nbytes().unwrap_or(0)).sum();
    let options = WriteOptions { metadata, ..WriteOptions::default() };
    let mut file = AtomicFile::create(dest)?;
    {
        let mut out = file.writer();
        let mut done = 0u64;
        let written = (|| -> Result<()> {
            let mut writer = GgufWriter::new(Box::new(&mut out), &infos, &options)?;
            for p in planned {
                let data = tensor_data(checkpoint, p).map_err(|e| e.for_tensor(p.info.name()))?;
                writer.write(&data)?;
                done += p.info.nbytes()?;
                progress(Progress { done_bytes: done, total_bytes: total, tensor: p.info.name() });
            }
            Box::new(writer).finish()
        })();
        let flushed = out.flush().map_err(Error::from);
        written.and(flushed).map_err(|e| e.in_file(dest))?;
    }
    file.commit()?;
    Ok(total)
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
