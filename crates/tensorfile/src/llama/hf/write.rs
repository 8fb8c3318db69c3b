//! The checkpoint written as the converter writes it: each tensor renamed, its query and key
//! rows permuted back, widened to `f32` and stored as the file type says (norms and other
//! one-dimensional tensors as F32, Q8_0 falling back to F16 where rows are not whole
//! blocks), one tensor in memory at a time, into one GGUF file laid out as gguf-py lays it
//! out, written atomically.

use std::io::Write;
use std::path::Path;

use super::arch::Architecture;
use super::checkpoint::{Checkpoint, SourceTensor};
use crate::convert::{Progress, as_f32};
use crate::error::{Error, Result};
use crate::formats::gguf::GgufWriter;
use crate::formats::{FormatWriter, WriteOptions};
use crate::model::quant::{BLOCKS, GgmlType, Quant};
use crate::model::{DType, Kind, Layout, MetaValue, TensorData, TensorInfo};
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

/// One tensor as written.
pub(crate) struct Planned {
    /// The checkpoint's tensor.
    pub source: SourceTensor,
    /// Its description in the output.
    pub info: TensorInfo,
    /// Its query or key rows are permuted, in this many heads.
    pub permute_heads: Option<u64>,
}

/// Tensors the converter leaves out.
fn left_out(name: &str) -> bool {
    name.ends_with(".attention.masked_bias")
        || name.ends_with(".attention.bias")
        || name.ends_with(".rotary_emb.inv_freq")
}

/// Every tensor as the output holds it, in the converter's order, with the type each gets.
pub(crate) fn plan(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    hparams: &serde_json::Map<String, serde_json::Value>,
    matrices: GgmlType,
) -> Result<Vec<Planned>> {
    let count = |key: &str| hparams.get(key).and_then(serde_json::Value::as_u64);
    let heads = count("num_attention_heads").ok_or_else(|| Error::usage("config.json has no num_attention_heads"))?;
    let kv_heads = count("num_key_value_heads").unwrap_or(heads);
    let mut planned = Vec::with_capacity(checkpoint.tensors.len());
    for source in &checkpoint.tensors {
        if left_out(&source.name) {
            continue;
        }
        let info = checkpoint.parts[source.part].entries()[source.index].info();
        let name = arch.tensor_name(&source.name).ok_or_else(|| {
            Error::unsupported(format!("no llama.cpp name for the tensor (architecture {})", arch.name))
                .for_tensor(&source.name)
        })?;
        let permute_heads = match () {
            _ if !arch.undo_permute => None,
            _ if source.name.ends_with("q_proj.weight") || source.name.ends_with("q_proj.bias") => Some(heads),
            _ if source.name.ends_with("k_proj.weight") || source.name.ends_with("k_proj.bias") => Some(kv_heads),
            _ => None,
        };
        let shape = info.shape().to_vec();
        let t = stored_type(&name, &shape, matrices);
        let out = match t.plain() {
            Some(dtype) => TensorInfo::new(&name, Kind::Tensor, dtype, shape, Layout::Dense)?,
            None => TensorInfo::new(&name, Kind::Tensor, DType::Float32, shape, Layout::Quantized(Quant::Ggml(t)))?,
        };
        planned.push(Planned { source: source.clone(), info: out, permute_heads });
    }
    Ok(planned)
}

/// The type the converter stores a tensor as: F32 for one dimension, norms and what is not a
/// weight; else the file type's, F16 when Q8_0's blocks do not fit its rows.
fn stored_type(name: &str, shape: &[u64], matrices: GgmlType) -> GgmlType {
    if shape.len() <= 1 || name.ends_with("_norm.weight") || !name.ends_with(".weight") {
        return GgmlType::F32;
    }
    let row = shape.last().copied().unwrap_or(1);
    if matrices.plain().is_none() && row % matrices.block_elements() != 0 {
        return GgmlType::F16;
    }
    matrices
}

/// Query or key rows permuted from Hugging Face's rotary layout back to llama.cpp's: within
/// each head, the first and second halves of its rows interleaved.
fn permute_rows(values: &[f32], shape: &[u64], heads: u64) -> Result<Vec<f32>> {
    let rows = shape.first().copied().unwrap_or(1);
    let width = values.len() as u64 / rows.max(1);
    if heads == 0 || rows % (heads * 2) != 0 {
        return Err(Error::usage(format!("{rows} rows cannot be cut into {heads} heads of two halves")));
    }
    let half = rows / heads / 2;
    let mut out = Vec::with_capacity(values.len());
    for head in 0..heads {
        for i in 0..half {
            for part in 0..2 {
                let row = (head * 2 + part) * half + i;
                let start = (row * width) as usize;
                out.extend_from_slice(&values[start..start + width as usize]);
            }
        }
    }
    Ok(out)
}

/// The tensor's bytes as planned.
fn tensor_data(checkpoint: &Checkpoint, p: &Planned) -> Result<TensorData> {
    let file = &checkpoint.parts[p.source.part];
    let read_as = file.entries()[p.source.index].info();
    let mut values = as_f32(read_as, file.read_verified(p.source.index)?)?;
    if let Some(heads) = p.permute_heads {
        values = permute_rows(&values, read_as.shape(), heads)?;
    }
    let row = usize::try_from(read_as.shape().last().copied().unwrap_or(1)).unwrap_or(1).max(1);
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
                let data = tensor_data(checkpoint, p).map_err(|e| e.for_tensor(&p.source.name))?;
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
