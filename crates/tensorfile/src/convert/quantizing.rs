//! Converting with quantization ([`super::ConvertOptions::quantize`]): how a tensor given a
//! ggml type is described to the target, and its data quantized, row by row, as ggml's
//! `ggml_quantize_chunk` does.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::{Error, Result, Rule};
use crate::formats::Format;
use crate::model::quant::{self, BLOCKS, GgmlType, Quant, ggml};
use crate::model::{DType, Kind, Layout, LayoutKind, TensorData, TensorInfo, cast};
use crate::source::Bytes;

/// A quantization decided tensor by tensor: the type each one gets, and the importance
/// weights ggml's quantizers take: what a preset or a single type comes to for one source.
#[derive(Debug, Clone, Default)]
pub struct QuantizeTypes {
    /// The ggml type of each tensor quantized, by its name in the source. `F32`, `F16` and
    /// `BF16` write the tensor dense in that dtype; a type the tensor already has copies its
    /// blocks. Tensors not named are written as they are (cast, if a dtype is asked for).
    pub types: BTreeMap<String, GgmlType>,
    /// Importance weights by source tensor name: one per element of a row (the tensor's last
    /// dimension), as an importance matrix (`llama-imatrix`) gives them.
    pub importance: HashMap<String, Vec<f32>>,
    /// Whether a tensor already quantized (to another type) may be dequantized and quantized
    /// again, which loses precision twice (llama-quantize's `--allow-requantize`).
    pub allow_requantize: bool,
}

/// `info` (the source's, under its written name) as quantizing it to `t` makes it.
pub(super) fn as_quantized(info: TensorInfo, t: GgmlType, plan: &QuantizeTypes, format: Format) -> Result<TensorInfo> {
    if info.kind() != Kind::Tensor {
        return Err(Error::usage("only tensors can be quantized, not other entries"));
    }
    if let Some(dtype) = t.plain() {
        if !matches!(t, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
            return Err(Error::usage(format!("{} is an integer type, not a quantization", t.name())));
        }
        let (cast, _) = super::casting::as_cast(info, Some(dtype))?;
        return Ok(cast);
    }
    if !ggml::quantize::can_quantize(t) {
        return Err(Error::unsupported(format!("tensorfile cannot quantize into {} yet", t.name())));
    }
    if !format.caps().holds_layout(LayoutKind::GgmlBlocks) {
        return Err(Error::unsupported(format!(
            "{} files cannot hold ggml's {} blocks (GGUF and zTensor 2 files can)",
            format.unit().title,
            t.name()
        )));
    }
    match info.layout().quant() {
        Some(Quant::Ggml(have)) if *have == t => return Ok(info),
        Some(q) if !plan.allow_requantize => {
            return Err(Error::usage(format!(
                "already quantized ({}): requantizing to {} loses precision twice; allow it to do so anyway",
                q.describe(),
                t.name()
            )));
        }
        Some(q) if !crate::model::quant::can_dequantize(q) => {
            return Err(Error::unsupported(format!(
                "{} has no reference dequantization to requantize from",
                q.describe()
            )));
        }
        Some(_) => {}
        None if !is_float(info.dtype()) => {
            return Err(Error::usage(format!("{} tensors cannot be quantized (floating tensors only)", info.dtype())));
        }
        None => {}
    }
    let n_per_row = *info.shape().last().unwrap_or(&1);
    if info.shape().is_empty() || n_per_row % t.block_elements() != 0 {
        return Err(Error::usage(format!(
            "its rows hold {n_per_row} elements, not whole {}-element blocks of {}",
            t.block_elements(),
            t.name()
        )));
    }
    TensorInfo::new(info.name(), Kind::Tensor, DType::Float32, info.shape().to_vec(), Layout::Quantized(Quant::Ggml(t)))
        .map(|q| q.with_extra(info.extra().to_vec()))
}

fn is_float(dtype: DType) -> bool {
    matches!(dtype, DType::Float32 | DType::Float16 | DType::BFloat16 | DType::Float64)
}

/// The ggml type `planned` quantizes `read_as` into, when the data must be quantized here
/// (not when the source already holds those blocks).
pub(super) fn target(read_as: &TensorInfo, planned: &TensorInfo) -> Option<GgmlType> {
    match planned.layout().quant() {
        Some(Quant::Ggml(t)) if planned.layout() != read_as.layout() => Some(*t),
        _ => None,
    }
}

/// `data` (of the source tensor `read_as`) quantized to `t`, with the plan's importance
/// weights for it.
pub(super) fn quantize_data(
    read_as: &TensorInfo,
    t: GgmlType,
    data: TensorData,
    plan: &QuantizeTypes,
) -> Result<TensorData> {
    let name = read_as.name();
    let values = as_f32(read_as, data).map_err(|e| e.for_tensor(name))?;
    let n_per_row = *read_as.shape().last().unwrap_or(&1);
    let n_per_row = usize::try_from(n_per_row).map_err(|_| Error::usage("a row too long for this machine"))?;
    let importance = match plan.importance.get(name) {
        Some(w) if w.len() != n_per_row => {
            return Err(Error::invalid(
                Rule::BadQuantization,
                format!("its importance weights hold {} values for rows of {n_per_row}", w.len()),
            )
            .for_tensor(name));
        }
        w => w.map(Vec::as_slice),
    };
    let out = t.quantize(&values, n_per_row, importance).map_err(|e| e.for_tensor(name))?;
    Ok(TensorData::quantized(Quant::Ggml(t), vec![(BLOCKS, Bytes::from_vec(out))]))
}

/// The tensor's values as `f32`: dequantized, decoded to dense and cast as needed. Cast (or
/// dequantized) in pieces into the values: beside them only the stored bytes (mapped, for a
/// plain tensor) and one piece, not a second whole copy of the tensor.
pub(crate) fn as_f32(read_as: &TensorInfo, data: TensorData) -> Result<Vec<f32>> {
    /// Elements cast at a time.
    const PIECE: usize = 1 << 16;
    if let Layout::Quantized(q) = read_as.layout() {
        return quant::dequantize_f32(q, read_as.shape(), &data);
    }
    let dense = if read_as.layout().reads_dense() {
        data.as_dense()?.clone()
    } else {
        data.to_dense(read_as.dtype(), read_as.shape())?
    };
    let from = read_as.dtype();
    let Some(width) = from.size().map(|w| w as usize).filter(|&w| w > 0) else {
        // Elements smaller than a byte: cast whole (only floating tensors are quantized).
        let bytes = cast::cast(&dense, from, DType::Float32)?;
        return Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect());
    };
    let count = dense.len() / width;
    let mut values = Vec::new();
    values
        .try_reserve_exact(count)
        .map_err(|_| Error::unsupported(format!("cannot allocate {count} float32 values to quantize")))?;
    values.resize(count, 0.0);
    // Pieces on the library's threads, each cast through a buffer of its own.
    let pieces = values.par_chunks_mut(PIECE).zip(dense[..count * width].par_chunks(PIECE * width));
    pieces.try_for_each_init(
        || vec![0u8; PIECE * 4],
        |scratch, (out, piece)| {
            let bytes = &mut scratch[..piece.len() / width * 4];
            cast::cast_into(piece, from, DType::Float32, bytes)?;
            for (v, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            Ok::<(), Error>(())
        },
    )?;
    Ok(values)
}
