//! Which tensors the converter writes, in its order, under which names and types: each
//! checkpoint tensor renamed by the architecture's table (query and key rows to be permuted),
//! the experts of a mixture stacked into one tensor per projection and block (emitted where
//! the block's last expert tensor comes, as the converter emits them), DeepSeek's `kv_b_proj`
//! split in two, an FP8 checkpoint's weights joined to their scales (`plan/fp8.rs`), gpt-oss's
//! experts repacked from MXFP4 or transposed and split (`plan/gpt_oss.rs`), the tensors the
//! converter makes (rope factors) first, and each given the type the converter stores it as.

pub(crate) mod fp8;
pub(crate) mod gpt_oss;

use serde_json::{Map, Value};

use super::arch::{Architecture, Experts, Family, class_of};
use super::checkpoint::{Checkpoint, SourceTensor};
use super::rope;
use crate::error::{Error, Result, Rule};
use crate::model::quant::{GgmlType, Quant};
use crate::model::{DType, Kind, Layout, MetaValue, Number, TensorInfo};
use fp8::{Fp8, Scales};

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
    /// It is one half of DeepSeek's `kv_b_proj` (its one source).
    pub split: Option<KvSplit>,
    /// The scales each source is multiplied by (an FP8 checkpoint's), one per source; empty
    /// when none has any.
    pub scales: Vec<Option<Scales>>,
    /// How gpt-oss's experts are made of their sources (repacked, transposed, split).
    pub gpt_oss: Option<gpt_oss::Part>,
}

impl Planned {
    /// The tensor made of `sources` as they are.
    fn of(sources: Vec<SourceTensor>, info: TensorInfo) -> Planned {
        Planned {
            sources,
            info,
            permute_heads: None,
            generated: None,
            plus_one: false,
            rows: None,
            split: None,
            scales: Vec::new(),
            gpt_oss: None,
        }
    }
}

/// One half of DeepSeek's `kv_b_proj` (`heads * (nope + v_dim)` rows of the latent rank): per
/// head, the first `nope` rows transposed (`k_b_proj`, rank by `nope`), or the last `v_dim`
/// rows (`v_b_proj`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KvSplit {
    /// `v_b_proj` (else `k_b_proj`).
    pub value: bool,
    /// `num_key_value_heads`.
    pub heads: u64,
    /// `qk_nope_head_dim`.
    pub nope: u64,
    /// `v_head_dim`.
    pub v_dim: u64,
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
    // The ternary types leave the token embeddings and the output to F16.
    let ternary = matches!(matrices, GgmlType::TQ1_0 | GgmlType::TQ2_0);
    if ternary && TERNARY_AS_F16.contains(&kind) {
        return GgmlType::F16;
    }
    let row = shape.last().copied().unwrap_or(1);
    if matrices.plain().is_none() && row % matrices.block_elements() != 0 {
        return GgmlType::F16;
    }
    matrices
}

/// llama.cpp's tensors the converter stores as F16 when the file type is ternary.
const TERNARY_AS_F16: &[&str] =
    &["token_embd", "per_layer_token_embd", "output", "altup_router", "laurel_l", "laurel_r"];

/// The type `--fp8-as-q8` gives a weight dequantized from FP8: Q8_0, F16 where its rows are
/// not whole blocks, F32 for one dimension and norms (the file type and the tensors always
/// stored as F32 do not count).
fn forced_q8(name: &str, shape: &[u64]) -> GgmlType {
    if shape.len() <= 1 || name.ends_with("_norm.weight") {
        return GgmlType::F32;
    }
    if shape.last().copied().unwrap_or(1) % GgmlType::Q8_0.block_elements() != 0 {
        return GgmlType::F16;
    }
    GgmlType::Q8_0
}

/// The tensor's description: the type the converter stores it as, forced to Q8_0 (`forced`)
/// or as the file type says.
fn described_as(name: &str, shape: Vec<u64>, matrices: GgmlType, forced: bool) -> Result<TensorInfo> {
    if forced {
        let t = forced_q8(name, &shape);
        return typed(name, shape, t);
    }
    described(name, shape, matrices)
}

fn described(name: &str, shape: Vec<u64>, matrices: GgmlType) -> Result<TensorInfo> {
    let t = stored_type(name, &shape, matrices);
    typed(name, shape, t)
}

fn typed(name: &str, shape: Vec<u64>, t: GgmlType) -> Result<TensorInfo> {
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
/// `vocab_rows`: the vocabulary's size, where the architecture cuts its embeddings to it;
/// `fp8_as_q8`: weights dequantized from FP8 stored as Q8_0.
pub(crate) fn plan(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    hparams: &Map<String, Value>,
    matrices: GgmlType,
    vocab_rows: Option<u64>,
    fp8_as_q8: bool,
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
        planned.push(Planned { generated: Some(factors), ..Planned::of(Vec::new(), info) });
    }
    if arch.family == Family::Phi3 {
        planned.extend(phi3_long_rope(hparams, matrices)?);
    }
    planned.extend(gpt_oss::repacked(checkpoint, arch, sources)?);
    let fp8 = if gpt_oss::skips_dequantizing(arch, hparams) { None } else { Fp8::of(hparams, sources)? };
    let scales_of = |name: &str| fp8.as_ref().and_then(|f| f.scales_of(name));
    let tied = hparams.get("tie_word_embeddings").and_then(Value::as_bool).unwrap_or(false);
    let blocks = count("num_hidden_layers").unwrap_or(u64::MAX);
    for source in sources {
        if left_out(&source.name) || arch.drop.contains(&source.name.as_str()) {
            continue;
        }
        if let Some(made) = gpt_oss::planned(checkpoint, arch, source, matrices)? {
            planned.extend(made);
            continue;
        }
        if fp8.as_ref().is_some_and(|f| f.drops(&source.name)) || arch.mla && mla_skips(&source.name, tied, blocks) {
            continue;
        }
        // `--fp8-as-q8` goes by the tensor read: a stacked tensor by its block's last expert
        // tensor, both halves of `kv_b_proj` by it.
        let forced = fp8_as_q8 && scales_of(&source.name).is_some();
        if let Some((layout, n)) = experts.filter(|(e, _)| source.name.contains(e.marker)) {
            if let Some(stacked) = gather(&mut gathering, source, layout, n)? {
                for (name, sources) in stacked {
                    let scales: Vec<Option<Scales>> = sources.iter().map(|s| scales_of(&s.name)).collect();
                    planned.push(stack(checkpoint, arch, &name, sources, scales, (matrices, forced))?);
                }
            }
            continue;
        }
        let scales: Vec<Option<Scales>> = scales_of(&source.name).into_iter().map(Some).collect();
        if arch.mla && source.name.ends_with("kv_b_proj.weight") {
            for value in [false, true] {
                let (split, info) = split_kv_b(checkpoint, arch, hparams, source, value, (matrices, forced))?;
                let part = Planned::of(vec![source.clone()], info);
                planned.push(Planned { split: Some(split), scales: scales.clone(), ..part });
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
        if let Some(heads) = permute_heads {
            // The rotary rows are undone per head, in two halves: the rows must be cut so.
            let rows = info.shape().first().copied().unwrap_or(0);
            if heads.checked_mul(2).is_none_or(|halves| halves == 0 || rows % halves != 0) {
                let e = Error::invalid(
                    Rule::SizeMismatch,
                    format!("{rows} rows cannot be cut into the config's {heads} heads of two halves"),
                )
                .for_tensor(&source.name);
                return Err(match checkpoint.parts[source.part].path() {
                    Some(path) => e.in_file(path),
                    None => e,
                });
            }
        }
        let mut shape = info.shape().to_vec();
        // Gemma 3's `modify_tensors`: `data_torch[:n_vocab_real]` of `embed_tokens.weight`.
        let rows = vocab_rows
            .filter(|_| arch.trim_embeddings && source.name.contains("embed_tokens.weight"))
            .filter(|&n| shape.first().is_some_and(|&r| r > n));
        if let (Some(n), Some(first)) = (rows, shape.first_mut()) {
            *first = n;
        }
        let plus_one = arch.norm_plus_one && source.name.ends_with("norm.weight");
        let info = described_as(&name, shape, matrices, forced)?;
        let one = Planned::of(vec![source.clone()], info);
        planned.push(Planned { permute_heads, plus_one, rows, scales, ..one });
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

/// The experts' tensors `sources` (scaled by `scales`) stacked as `name`: every one of the
/// same shape; stored as the file type says or forced to Q8_0 (`(matrices, forced)`).
fn stack(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    merged: &str,
    sources: Vec<SourceTensor>,
    scales: Vec<Option<Scales>>,
    (matrices, forced): (GgmlType, bool),
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
    let info = described_as(&name, shape, matrices, forced)?;
    let scales = if scales.iter().any(Option::is_some) { scales } else { Vec::new() };
    Ok(Planned { scales, ..Planned::of(sources, info) })
}

/// What DeepSeek's converter class skips: a tied `lm_head`, and the blocks past
/// `num_hidden_layers` (multi-token prediction).
fn mla_skips(name: &str, tied: bool, blocks: u64) -> bool {
    if tied && (name == "lm_head.weight" || name == "model.lm_head.weight") {
        return true;
    }
    let Some(rest) = name.strip_prefix("model.layers.") else { return false };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // Past u64 is past the blocks too.
    digits > 0 && rest[..digits].parse::<u64>().map_or(true, |b| b >= blocks)
}

/// One half of DeepSeek's `kv_b_proj` `source` (`value`: `v_b_proj`, else `k_b_proj`): how it
/// is cut and its description, under the name the converter gives it.
fn split_kv_b(
    checkpoint: &Checkpoint,
    arch: &Architecture,
    hparams: &Map<String, Value>,
    source: &SourceTensor,
    value: bool,
    (matrices, forced): (GgmlType, bool),
) -> Result<(KvSplit, TensorInfo)> {
    let count = |key: &str| {
        hparams
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| Error::usage(format!("config.json: {key} is needed to split kv_b_proj")))
    };
    let split = KvSplit {
        value,
        heads: count("num_key_value_heads")?,
        nope: count("qk_nope_head_dim")?,
        v_dim: count("v_head_dim")?,
    };
    let shape = checkpoint.parts[source.part].entries()[source.index].info().shape().to_vec();
    let rows = split.nope.checked_add(split.v_dim).and_then(|w| w.checked_mul(split.heads));
    let [all, rank] = shape[..] else {
        return Err(Error::usage(format!("kv_b_proj of shape {shape:?}, not a matrix")).for_tensor(&source.name));
    };
    if rows != Some(all) {
        return Err(Error::usage(format!(
            "kv_b_proj has {all} rows, not num_key_value_heads x (qk_nope_head_dim + v_head_dim) = {} x ({} + {})",
            split.heads, split.nope, split.v_dim
        ))
        .for_tensor(&source.name));
    }
    let (part, shape) = match value {
        false => ("k_b_proj", vec![split.heads, rank, split.nope]),
        true => ("v_b_proj", vec![split.heads, split.v_dim, rank]),
    };
    let renamed = source.name.replace("kv_b_proj", part);
    let name = arch.tensor_name(&renamed).ok_or_else(|| {
        Error::unsupported(format!("no llama.cpp name for {renamed} (architecture {})", arch.name))
            .for_tensor(&source.name)
    })?;
    Ok((split, described_as(&name, shape, matrices, forced)?))
}

/// Phi 3's long-context rope factors, long then short, when the rope parameters have them.
fn phi3_long_rope(hparams: &Map<String, Value>, matrices: GgmlType) -> Result<Vec<Planned>> {
    let Some(long) = rope::phi3_long_rope(hparams)? else { return Ok(Vec::new()) };
    let mut out = Vec::with_capacity(2);
    for (name, values) in [("rope_factors_long.weight", long.long), ("rope_factors_short.weight", long.short)] {
        let info = described(name, vec![values.len() as u64], matrices)?;
        out.push(Planned { generated: Some(values), ..Planned::of(Vec::new(), info) });
    }
    Ok(out)
}

/// The key/values the converter adds while it makes its tensors, before any other but
/// `general.architecture` (none when it writes the vocabulary alone): Phi 3's long-context
/// attention factor.
pub(crate) fn generated_kvs(arch: &Architecture, hparams: &Map<String, Value>) -> Result<Vec<(String, MetaValue)>> {
    if arch.family != Family::Phi3 {
        return Ok(Vec::new());
    }
    Ok(rope::phi3_long_rope(hparams)?
        .map(|l| (format!("{}.rope.scaling.attn_factor", arch.name), MetaValue::Number(Number::F32(l.attn_factor))))
        .into_iter()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepseek_skips_its_prediction_blocks_and_a_tied_output() {
        assert!(mla_skips("model.layers.61.mlp.gate.weight", false, 61));
        assert!(!mla_skips("model.layers.60.mlp.gate.weight", false, 61));
        assert!(!mla_skips("model.norm.weight", false, 61));
        assert!(mla_skips("model.layers.99999999999999999999999.mlp.gate.weight", false, 61));
        assert!(mla_skips("lm_head.weight", true, 61));
        assert!(!mla_skips("lm_head.weight", false, 61));
    }

    #[test]
    fn fp8_weights_forced_to_q8_fall_back_to_f16_on_partial_blocks() {
        assert_eq!(forced_q8("blk.0.attn_q_b.weight", &[16, 32]), GgmlType::Q8_0);
        assert_eq!(forced_q8("blk.0.attn_k_b.weight", &[2, 32, 4]), GgmlType::F16);
        assert_eq!(forced_q8("blk.0.attn_kv_a_norm.weight", &[32, 32]), GgmlType::F32);
        assert_eq!(forced_q8("blk.0.ffn_gate_inp.weight", &[4, 32]), GgmlType::Q8_0);
    }
}
