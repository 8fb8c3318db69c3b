//! gpt-oss's experts (`GptOssModel`): each block's experts stored stacked, the gate and up
//! projections as one `gate_up_proj` whose even rows are the gate's and odd rows the up's.
//! Dequantized (bfloat16) checkpoints store them as `[experts, in, out]` (transposed back to
//! llama.cpp's `[experts, out, in]`); the MXFP4 checkpoints of openai/gpt-oss as `*_blocks`
//! (`[experts, rows, columns / 32, 16]` bytes of 4-bit codes) and `*_scales` (`[experts, rows,
//! columns / 32]` E8M0 exponents), repacked into ggml's MXFP4 blocks before any other tensor,
//! as the converter's `generate_extra_tensors` writes them. The biases are split as the weights
//! are; the attention sinks get a `.weight` suffix.

use serde_json::{Map, Value};

use super::super::arch::Architecture;
use super::super::checkpoint::{Checkpoint, SourceTensor};
use super::{Planned, described, typed};
use crate::error::{Error, Result};
use crate::model::DType;
use crate::model::quant::GgmlType;

/// Which rows (of a weight) or columns (of a bias) of the second to last or last dimension are
/// kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rows {
    /// All of them.
    All,
    /// The even ones (the gate's of `gate_up_proj`).
    Even,
    /// The odd ones (the up projection's).
    Odd,
}

impl Rows {
    /// How many of `n` are kept.
    pub(crate) fn count(self, n: u64) -> u64 {
        match self {
            Rows::All => n,
            Rows::Even => n.div_ceil(2),
            Rows::Odd => n / 2,
        }
    }

    /// Whether row `i` is kept.
    pub(crate) fn keeps(self, i: usize) -> bool {
        match self {
            Rows::All => true,
            Rows::Even => i % 2 == 0,
            Rows::Odd => i % 2 == 1,
        }
    }
}

/// How a gpt-oss expert tensor is made from its sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// MXFP4 blocks (the first source) and their scales (the second), those of `Rows` kept,
    /// repacked into ggml's MXFP4.
    Mxfp4(Rows),
    /// A dense `[experts, in, out]` weight transposed to `[experts, out, in]`, those of `Rows`
    /// of its rows kept.
    Transposed(Rows),
    /// A bias `[experts, n]`, those of `Rows` of its columns kept.
    Bias(Rows),
}

/// llama.cpp's name of gpt-oss.
const NAME: &str = "gpt-oss";

/// Whether the checkpoint's `quantization_config` says MXFP4 (`quant_method` `mxfp4`).
pub(crate) fn is_mxfp4(hparams: &Map<String, Value>) -> bool {
    hparams.get("quantization_config").and_then(|q| q.get("quant_method")).and_then(Value::as_str) == Some("mxfp4")
}

/// gpt-oss's converter class dequantizes nothing of an MXFP4 checkpoint.
pub(crate) fn skips_dequantizing(arch: &Architecture, hparams: &Map<String, Value>) -> bool {
    arch.name == NAME && is_mxfp4(hparams)
}

/// `general.file_type` as the converter writes it: MXFP4_MOE (38) for an MXFP4 checkpoint
/// written as F32, F16 or BF16 (0, 1, 32), else `file_type`.
pub(crate) fn file_type(hparams: &Map<String, Value>, file_type: u32) -> u32 {
    if is_mxfp4(hparams) && matches!(file_type, 0 | 1 | 32) { 38 } else { file_type }
}

fn shape_of(checkpoint: &Checkpoint, s: &SourceTensor) -> (Vec<u64>, DType) {
    let info = checkpoint.parts[s.part].entries()[s.index].info();
    (info.shape().to_vec(), info.dtype())
}

fn mapped(arch: &Architecture, name: &str, source: &str) -> Result<String> {
    arch.tensor_name(name).ok_or_else(|| {
        Error::unsupported(format!("no llama.cpp name for {name} (architecture {})", arch.name)).for_tensor(source)
    })
}

/// The MXFP4 experts repacked, in the converter's order: at each `*_scales` tensor, its
/// blocks' (`down_proj`; `gate_up_proj` as the gate then the up projection). Nothing but for
/// gpt-oss; a gpt-oss `config.json` without `rope_scaling` is refused (the configuration
/// class's default, a yarn scaling, is not filled in).
pub(crate) fn repacked(checkpoint: &Checkpoint, arch: &Architecture, sources: &[SourceTensor]) -> Result<Vec<Planned>> {
    let mut out = Vec::new();
    if arch.name != NAME {
        return Ok(out);
    }
    if !arch_has_rope_scaling(checkpoint) {
        return Err(Error::unsupported(
            "config.json has no rope_scaling: GptOssConfig's default (yarn) is not filled in; give it",
        ));
    }
    for scales in sources {
        let (stem, parts): (&str, &[(&str, Rows)]) =
            if let Some(stem) = scales.name.strip_suffix("mlp.experts.down_proj_scales") {
                (stem, &[("down_proj", Rows::All)])
            } else if let Some(stem) = scales.name.strip_suffix("mlp.experts.gate_up_proj_scales") {
                (stem, &[("gate_proj", Rows::Even), ("up_proj", Rows::Odd)])
            } else {
                continue;
            };
        let blocks_name = scales.name.replace("_scales", "_blocks");
        let blocks = sources.iter().find(|t| t.name == blocks_name).ok_or_else(|| {
            Error::usage(format!("MXFP4 scales without their blocks {blocks_name}")).for_tensor(&scales.name)
        })?;
        let (b_shape, b_dtype) = shape_of(checkpoint, blocks);
        let (s_shape, s_dtype) = shape_of(checkpoint, scales);
        let fits = matches!(b_shape[..], [e, r, n, 16] if s_shape[..] == [e, r, n]);
        if !fits || b_dtype != DType::UInt8 || s_dtype != DType::UInt8 {
            return Err(Error::usage(format!(
                "MXFP4 blocks {b_shape:?} ({b_dtype:?}) and scales {s_shape:?} ({s_dtype:?}) are not uint8 \
                 [experts, rows, blocks, 16] and [experts, rows, blocks]"
            ))
            .for_tensor(&scales.name));
        }
        let columns = b_shape[2].checked_mul(32).ok_or_else(|| Error::usage("MXFP4 blocks too wide"))?;
        for (projection, rows) in parts {
            let name = mapped(arch, &format!("{stem}mlp.experts.{projection}.weight"), &scales.name)?;
            let shape = vec![b_shape[0], rows.count(b_shape[1]), columns];
            let info = typed(&name, shape, GgmlType::MXFP4)?;
            let one = Planned::of(vec![blocks.clone(), scales.clone()], info);
            out.push(Planned { gpt_oss: Some(Part::Mxfp4(*rows)), ..one });
        }
    }
    Ok(out)
}

fn arch_has_rope_scaling(checkpoint: &Checkpoint) -> bool {
    let config = &checkpoint.config;
    config.get("rope_scaling").is_some()
        || config.get("rope_parameters").is_some()
        || config.get("text_config").is_some_and(|t| t.get("rope_scaling").is_some())
}

/// What gpt-oss's converter class makes of the checkpoint tensor `source`: `None` when it is
/// renamed by the table alone; else the tensors it becomes (none for MXFP4 blocks and scales,
/// written before; the gate and up halves of `gate_up_proj`; the sinks, suffixed).
pub(crate) fn planned(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    source: &SourceTensor,
    matrices: GgmlType,
) -> Result<Option<Vec<Planned>>> {
    if arch.name != NAME {
        return Ok(None);
    }
    let name = source.name.as_str();
    let (shape, _) = shape_of(checkpoint, source);
    if name.contains("sinks") {
        let renamed = format!("{name}.weight");
        let info = described(&mapped(arch, &renamed, name)?, shape, matrices)?;
        return Ok(Some(vec![Planned::of(vec![source.clone()], info)]));
    }
    let quantized = name.contains("_blocks") || name.contains("_scales");
    let split: &[(&str, Rows)] = if name.contains("gate_up_proj") {
        &[("gate_proj", Rows::Even), ("up_proj", Rows::Odd)]
    } else if name.contains("down_proj") {
        &[("down_proj", Rows::All)]
    } else {
        return Ok(None);
    };
    let whole = if split.len() == 2 { "gate_up_proj" } else { "down_proj" };
    let bias = name.ends_with("_bias");
    if quantized && !bias {
        // Repacked first (`repacked`).
        return Ok(Some(Vec::new()));
    }
    let mut out = Vec::with_capacity(split.len());
    for (projection, rows) in split {
        let (renamed, part, shape) = if bias {
            let renamed = name.replace(&format!("{whole}_bias"), &format!("{projection}.bias"));
            let Some((&last, lead)) = shape.split_last() else {
                return Err(Error::usage("an expert bias of no dimension").for_tensor(name));
            };
            let shape: Vec<u64> = lead.iter().copied().chain([rows.count(last)]).collect();
            (renamed, Part::Bias(*rows), shape)
        } else {
            let renamed = name.replace(whole, &format!("{projection}.weight"));
            let [experts, inner, outer] = shape[..] else {
                return Err(
                    Error::usage(format!("experts of shape {shape:?}, not [experts, in, out]")).for_tensor(name)
                );
            };
            (renamed, Part::Transposed(*rows), vec![experts, rows.count(outer), inner])
        };
        let info = described(&mapped(arch, &renamed, name)?, shape, matrices)?;
        out.push(Planned { gpt_oss: Some(part), ..Planned::of(vec![source.clone()], info) });
    }
    Ok(Some(out))
}
