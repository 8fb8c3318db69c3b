//! Which tensors the converter writes, in its order, under which names and types: each
//! checkpoint tensor renamed by the architecture's table (query and key rows to be permuted),
//! the experts of a mixture stacked into one tensor per projection and block (emitted where
//! the block's last expert tensor comes, as the converter emits them), and each given the type
//! the converter stores it as.

use serde_json::{Map, Value};

use super::arch::{Architecture, Experts, Family, class_of};
use super::checkpoint::{Checkpoint, SourceTensor};
use super::rope;
use crate::error::{Error, Result};
use crate::model::quant::{GgmlType, Quant};
use crate::model::{DType, Kind, Layout, TensorInfo};

/// One tensor as written.
pub(crate) struct Planned {
    /// The checkpoint's tensors it is made of: one, or a mixture's experts in order (stacked
    /// along a new first dimension).
    pub sources: Vec<SourceTensor>,
    /// Its description in the output.
    pub info: TensorInfo,
    /// Its query or key rows are permuted, in this many heads.
    pub permute_heads: Option<u64>,
    /// Its values, when the converter makes it rather than reads it (no source).
    pub generated: Option<Vec<f32>>,
    /// 1 is added to every value, in float32, before it is stored (Gemma's norms).
    pub plus_one: bool,
    /// Only its first rows are kept (Gemma 3's embeddings cut to the vocabulary).
    pub rows: Option<u64>,
}

/// Tensors the converter leaves out.
fn left_out(name: &str) -> bool {
    name.ends_with(".attention.masked_bias")
        || name.ends_with(".attention.bias")
        || name.ends_with(".rotary_emb.inv_freq")
}

/// llama.cpp's tensors the converter always stores as F32 (llama-quantize never quantizes
/// them either).
const ALWAYS_F32: &[&str] = &["ffn_gate_inp", "ffn_gate_inp_shexp", "position_embd", "token_types"];

/// The type the converter stores a tensor as: F32 for one dimension, norms, what is not a
/// weight and the tensors it keeps F32; else the file type's, F16 when Q8_0's blocks do not
/// fit its rows.
fn stored_type(name: &str, shape: &[u64], matrices: GgmlType) -> GgmlType {
    let base = name.strip_suffix(".weight").unwrap_or(name);
    let kind = base.rsplit('.').next().unwrap_or(base);
    if shape.len() <= 1 || name.ends_with("_norm.weight") || !name.ends_with(".weight") || ALWAYS_F32.contains(&kind) {
        return GgmlType::F32;
    }
    let row = shape.last().copied().unwrap_or(1);
    if matrices.plain().is_none() && row % matrices.block_elements() != 0 {
        return GgmlType::F16;
    }
    matrices
}

fn described(name: &str, shape: Vec<u64>, matrices: GgmlType) -> Result<TensorInfo> {
    let t = stored_type(name, &shape, matrices);
    match t.plain() {
        Some(dtype) => TensorInfo::new(name, Kind::Tensor, dtype, shape, Layout::Dense),
        None => TensorInfo::new(name, Kind::Tensor, DType::Float32, shape, Layout::Quantized(Quant::Ggml(t))),
    }
}

/// A stacked tensor's name before the tensor table maps it, and its experts' tensors in order.
type Stacked = (String, Vec<SourceTensor>);

/// The experts of one block, gathered until all have come.
struct Gathering {
    block: String,
    tensors: Vec<SourceTensor>,
}

/// Every tensor as the output holds it, in the converter's order, with the type each gets;
/// `vocab_rows`: the vocabulary's size, where the architecture cuts its embeddings to it.
pub(crate) fn plan(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    hparams: &Map<String, Value>,
    matrices: GgmlType,
    vocab_rows: Option<u64>,
) -> Result<Vec<Planned>> {
    let count = |key: &str| hparams.get(key).and_then(Value::as_u64);
    let heads = count("num_attention_heads").ok_or_else(|| Error::usage("config.json has no num_attention_heads"))?;
    let kv_heads = count("num_key_value_heads").unwrap_or(heads);
    let experts = arch.experts.map(|e| (e, count(e.count_key))).map(|(e, n)| (e, n.unwrap_or(0)));
    let mut gathering: Vec<Gathering> = Vec::new();
    let mut planned = Vec::with_capacity(checkpoint.tensors.len());
    // A bare model's tensors lack the `model.` prefix the tables name them by.
    let bare = class_of(&checkpoint.config).is_some_and(|c| arch.bare.contains(&c));
    let renamed: Vec<SourceTensor>;
    let sources: &[SourceTensor] = if bare {
        renamed = checkpoint
            .tensors
            .iter()
            .map(|t| SourceTensor { name: format!("model.{}", t.name), ..t.clone() })
            .collect();
        &renamed
    } else {
        &checkpoint.tensors
    };
    // What the converter makes comes first (`generate_extra_tensors`).
    if arch.family == Family::Llama && rope::is_llama3(hparams) {
        let factors = rope::llama3_factors(hparams)?;
        let name = "rope_freqs.weight";
        let info = described(name, vec![factors.len() as u64], matrices)?;
        planned.push(Planned {
            sources: Vec::new(),
            info,
            permute_heads: None,
            generated: Some(factors),
            plus_one: false,
            rows: None,
        });
    }
    for source in sources {
        if left_out(&source.name) || arch.drop.contains(&source.name.as_str()) {
            continue;
        }
        if let Some((layout, n)) = experts.filter(|(e, _)| source.name.contains(e.marker)) {
            if let Some(stacked) = gather(&mut gathering, source, layout, n)? {
                for (name, sources) in stacked {
                    planned.push(stack(checkpoint, arch, &name, sources, matrices)?);
                }
            }
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
        let mut shape = info.shape().to_vec();
        // Gemma 3's `modify_tensors`: `data_torch[:n_vocab_real]` of `embed_tokens.weight`.
        let rows = vocab_rows
            .filter(|_| arch.trim_embeddings && source.name.contains("embed_tokens.weight"))
            .filter(|&n| shape.first().is_some_and(|&r| r > n));
        if let (Some(n), Some(first)) = (rows, shape.first_mut()) {
            *first = n;
        }
        let plus_one = arch.norm_plus_one && source.name.ends_with("norm.weight");
        let info = described(&name, shape, matrices)?;
        planned.push(Planned { sources: vec![source.clone()], info, permute_heads, generated: None, plus_one, rows });
    }
    if let Some(left) = gathering.iter().find(|g| !g.tensors.is_empty()) {
        return Err(Error::usage(format!(
            "block {}: {} expert tensors, not every expert's projections",
            left.block,
            left.tensors.len()
        )));
    }
    Ok(planned)
}

/// Add an expert tensor to its block's; when the block has all of them, its projections in
/// the converter's order (the merged name, the experts' tensors in expert order).
fn gather(
    gathering: &mut Vec<Gathering>,
    source: &SourceTensor,
    layout: &Experts,
    n: u64,
) -> Result<Option<Vec<Stacked>>> {
    let block = source.name.split('.').find(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let Some(block) = block.map(str::to_string) else {
        return Err(Error::usage("an expert tensor of no block").for_tensor(&source.name));
    };
    let at = match gathering.iter().position(|g| g.block == block) {
        Some(at) => at,
        None => {
            gathering.push(Gathering { block: block.clone(), tensors: Vec::new() });
            gathering.len() - 1
        }
    };
    let tensors = &mut gathering[at].tensors;
    tensors.push(source.clone());
    let wanted = n.checked_mul(layout.projections.len() as u64).filter(|&w| w > 0);
    if wanted.is_none_or(|w| (tensors.len() as u64) < w) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(layout.projections.len());
    for (projection, merged) in layout.projections {
        let mut stacked = Vec::with_capacity(n as usize);
        for expert in 0..n {
            let name = layout
                .per_expert
                .replace("{bid}", &block)
                .replace("{xid}", &expert.to_string())
                .replace("{wid}", projection);
            let found = tensors
                .iter()
                .find(|t| t.name == name)
                .ok_or_else(|| Error::usage(format!("block {block} has no {name} among its experts' tensors")))?;
            stacked.push(found.clone());
        }
        out.push((merged.replace("{bid}", &block), stacked));
    }
    tensors.clear();
    Ok(Some(out))
}

/// The experts' tensors `sources` stacked as `name`: every one of the same shape.
fn stack(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    merged: &str,
    sources: Vec<SourceTensor>,
    matrices: GgmlType,
) -> Result<Planned> {
    let shape_of = |s: &SourceTensor| checkpoint.parts[s.part].entries()[s.index].info().shape().to_vec();
    let first = shape_of(&sources[0]);
    if let Some(other) = sources.iter().find(|s| shape_of(s) != first) {
        return Err(Error::usage(format!("experts of shapes {first:?} and {:?} cannot be stacked", shape_of(other)))
            .for_tensor(&other.name));
    }
    let name = arch
        .tensor_name(&format!("{merged}.weight"))
        .ok_or_else(|| Error::unsupported(format!("no llama.cpp name for {merged}")))?;
    let shape: Vec<u64> = std::iter::once(sources.len() as u64).chain(first).collect();
    let info = described(&name, shape, matrices)?;
    Ok(Planned { sources, info, permute_heads: None, generated: None, plus_one: false, rows: None })
}
