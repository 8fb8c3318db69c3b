//! llama.cpp's rules for one tensor (src/llama-quant.cpp): its category by name, whether it
//! may be quantized at all, the type a preset's mixture gives it (attention value and FFN-down
//! tensors of some layers get more bits, the output and token embeddings their own types, MoE
//! and grouped-query models theirs), the fallback when its rows are not whole blocks of that
//! type, and whether the type needs an importance matrix.

use super::hparams::{Arch, Model};
use crate::model::quant::GgmlType;

/// The tensor categories llama.cpp's rules look at, from the tensor's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Category {
    TokenEmbd,
    AttentionQ,
    AttentionV,
    AttentionK,
    AttentionQkv,
    AttentionKvB,
    AttentionOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

/// The token embeddings' names.
pub(super) fn is_token_embd(name: &str) -> bool {
    name == "token_embd.weight" || name == "per_layer_token_embd.weight"
}

/// The category of the tensor called `name`, tested in llama.cpp's order.
pub(super) fn category(name: &str) -> Category {
    use Category::*;
    if name == "output.weight" {
        return Output;
    }
    if is_token_embd(name) {
        return TokenEmbd;
    }
    const BY_PART: [(&str, Category); 9] = [
        ("attn_qkv.weight", AttentionQkv),
        ("attn_kv_b.weight", AttentionKvB),
        ("attn_v.weight", AttentionV),
        ("attn_k.weight", AttentionK),
        ("attn_q.weight", AttentionQ),
        ("attn_output.weight", AttentionOutput),
        ("ffn_up", FfnUp),
        ("ffn_gate", FfnGate),
        ("ffn_down", FfnDown),
    ];
    BY_PART.iter().find(|(part, _)| name.contains(part)).map_or(Other, |(_, c)| *c)
}

/// Value-like attention tensors, which the mixtures give more bits.
pub(super) fn is_attn_v(c: Category) -> bool {
    matches!(c, Category::AttentionV | Category::AttentionQkv | Category::AttentionKvB)
}

/// Parts of names llama.cpp never quantizes (norms, routers, small or positional tensors).
const NEVER: [&str; 35] = [
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
];

/// More parts of names GLM-5-next keeps as they are.
const NEVER_GLM5_NEXT: [&str; 14] = [
    "hc_",
    "indexer.attn_q_b",
    "indexer.attn_k",
    "indexer.proj",
    "indexer_compressor_gate",
    "indexer_compressor_ape",
    "ssm_f_a.weight",
    "ssm_f_b.weight",
    "ssm_g_a.weight",
    "ssm_g_b.weight",
    "ssm_beta.weight",
    "attn_kv_a_mqa.weight",
    "attn_k_b.weight",
    "attn_v_b.weight",
];

/// Whether llama.cpp may quantize the tensor called `name` of `n_dims` dimensions (trailing
/// ones not counted): weights of at least 2 dimensions whose name ends with `weight`, except
/// the output when it is left as it is, norms, routers and the small tensors of some
/// architectures.
pub(super) fn allows_quantization(name: &str, n_dims: usize, arch: &Arch, quantize_output: bool) -> bool {
    if n_dims < 2 {
        return false;
    }
    // llama.cpp compares `rfind("weight")` with `size() - 6`, which for a 5-byte name wraps to
    // the "not found" value: such a name counts as ending with "weight".
    let ends_with_weight = name.ends_with("weight") || name.len() == 5;
    if !ends_with_weight || (!quantize_output && name == "output.weight") {
        return false;
    }
    if name == "position_embd.weight" || name == "token_types.weight" {
        return false;
    }
    if NEVER.iter().any(|part| name.contains(part)) {
        return false;
    }
    !(*arch == Arch::Glm5Next && NEVER_GLM5_NEXT.iter().any(|part| name.contains(part)))
}

/// llama.cpp's file types (`llama_ftype`) the rules name.
#[allow(dead_code, reason = "llama.cpp's table of file types as the tool numbers them; the rules name some")]
pub(super) mod ftype {
    pub const Q4_0: u32 = 2;
    pub const Q5_0: u32 = 8;
    pub const Q2_K: u32 = 10;
    pub const Q3_K_S: u32 = 11;
    pub const Q3_K_M: u32 = 12;
    pub const Q3_K_L: u32 = 13;
    pub const Q4_K_S: u32 = 14;
    pub const Q4_K_M: u32 = 15;
    pub const Q5_K_S: u32 = 16;
    pub const Q5_K_M: u32 = 17;
    pub const IQ2_XXS: u32 = 19;
    pub const IQ2_XS: u32 = 20;
    pub const Q2_K_S: u32 = 21;
    pub const IQ3_XS: u32 = 22;
    pub const IQ3_XXS: u32 = 23;
    pub const IQ1_S: u32 = 24;
    pub const IQ4_NL: u32 = 25;
    pub const IQ3_S: u32 = 26;
    pub const IQ3_M: u32 = 27;
    pub const IQ2_S: u32 = 28;
    pub const IQ2_M: u32 = 29;
    pub const IQ4_XS: u32 = 30;
    pub const IQ1_M: u32 = 31;
    pub const TQ1_0: u32 = 36;
    pub const TQ2_0: u32 = 37;
    pub const MXFP4_MOE: u32 = 38;
    pub const Q2_0: u32 = 41;
}

/// The type a tensor whose rows are not whole blocks of `target` falls back to: a type of
/// 32-element blocks, or F16 when even those do not fit; `target` itself when it fits.
/// `None`: llama.cpp defines no fallback for `target` (a type of blocks over 32 elements that
/// the table below does not name), and refuses.
pub(crate) fn fallback(target: GgmlType, ncols: u64) -> Option<GgmlType> {
    use GgmlType::*;
    let block = target.block_elements();
    if ncols % block == 0 {
        return Some(target);
    }
    let chosen = match target {
        IQ1_S | IQ1_M | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ4_XS => IQ4_NL,
        Q2_K | Q3_K | TQ1_0 | TQ2_0 | Q2_0 => Q4_0,
        Q4_K => Q5_0,
        Q5_K => Q5_1,
        Q6_K => Q8_0,
        t if block <= 32 => t,
        _ => return None,
    };
    Some(if ncols % chosen.block_elements() != 0 { F16 } else { chosen })
}

/// Whether a tensor quantized to `t` in a file of type `ftype` needs an importance matrix:
/// the 1- and 2-bit IQ types and IQ3_XXS, and Q2_K in a Q2_K_S file; never the output or the
/// token embeddings.
pub(super) fn requires_imatrix(name: &str, t: GgmlType, file_type: u32) -> bool {
    use GgmlType::*;
    if is_token_embd(name) || name == "output.weight" {
        return false;
    }
    match t {
        IQ3_XXS | IQ2_XXS | IQ2_XS | IQ2_S | IQ1_M | IQ1_S => true,
        Q2_K => file_type == ftype::Q2_K_S,
        _ => false,
    }
}

/// What the rules keep count of while they walk the tensors in llama.cpp's order.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub n_attention_wv: u32,
    pub i_attention_wv: u32,
    pub n_ffn: u32,
    pub i_ffn_down: u32,
    pub i_ffn_gate: u32,
    pub i_ffn_up: u32,
}

/// What the rules read besides the tensor.
pub(super) struct Context<'a> {
    pub model: &'a Model,
    pub file_type: u32,
    pub has_imatrix: bool,
    pub tied_embeddings: bool,
    pub output_tensor_type: Option<GgmlType>,
    pub token_embedding_type: Option<GgmlType>,
}

/// The layer of a tensor for the FFN rules: its running count in a dense model, its `blk.N.`
/// in a model of experts (whose FFN tensors llama.cpp does not trust to come in order).
fn layer_of(ctx: &Context<'_>, counter: u32, name: &str) -> Result<(i64, i64), String> {
    let n_layer = i64::from(ctx.model.n_layer_all);
    if ctx.model.n_expert.max(1) <= 1 {
        return Ok((i64::from(counter), n_layer));
    }
    let layer =
        super::hparams::block_number(name).ok_or_else(|| format!("failed to determine layer for tensor {name}"))?;
    let layer = i64::from(layer);
    if layer < 0 || layer >= n_layer {
        return Err(format!("bad layer {layer} for tensor {name}; it must be in [0, {n_layer})"));
    }
    Ok((layer, n_layer))
}

/// llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third
/// between.
fn use_more_bits(i: i64, n: i64) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// The type the preset's mixture gives a quantizable tensor that started as `default`.
pub(super) fn mixture(
    ctx: &Context<'_>,
    counts: &mut Counters,
    name: &str,
    ne: &[u64],
    category: Category,
    default: GgmlType,
) -> Result<GgmlType, String> {
    use Category as C;
    use GgmlType::*;
    use ftype as f;
    let ft = ctx.file_type;
    let model = ctx.model;
    let gqa = model.n_gqa();
    let n_expert = model.n_expert;
    let mut t = default;
    if model.arch == Arch::Glm5Next
        && ["attn_q_a", "attn_q_b", "nextn.eh_proj"].iter().any(|p| name.contains(p))
        && !matches!(t, F32 | BF16 | F16)
    {
        return Ok(Q8_0);
    }
    let iq2_family = [f::IQ2_XXS, f::IQ2_XS, f::IQ1_S, f::IQ2_S, f::IQ2_M, f::IQ1_M].contains(&ft);
    let iq2_s_or_m = ft == f::IQ2_S || ft == f::IQ2_M;
    if category == C::Output || (ctx.tied_embeddings && category == C::TokenEmbd) {
        if let Some(o) = ctx.output_tensor_type {
            t = o;
        } else {
            let nx = ne.first().copied().unwrap_or(1);
            if ft == f::MXFP4_MOE || model.arch == Arch::Falcon || nx % t.block_elements() != 0 {
                t = Q8_0;
            } else if iq2_family || ft == f::IQ3_XXS {
                t = Q5_K;
            } else if t != Q8_0 {
                t = Q6_K;
            }
        }
    } else if ft == f::MXFP4_MOE {
        let expert_role = matches!(category, C::FfnUp | C::FfnGate | C::FfnDown);
        let experts = ne.get(2).copied().unwrap_or(1) > 1;
        t = if experts && (model.arch != Arch::BailingMoe3 || expert_role) { MXFP4 } else { Q8_0 };
    } else if category == C::TokenEmbd {
        if let Some(e) = ctx.token_embedding_type {
            t = e;
        } else if [f::IQ2_XXS, f::IQ2_XS, f::IQ1_S, f::IQ1_M].contains(&ft) {
            t = Q2_K;
        } else if iq2_s_or_m || ft == f::IQ3_XXS {
            t = IQ3_S;
        } else if [f::TQ1_0, f::TQ2_0, f::Q2_0].contains(&ft) {
            t = Q4_K;
        }
    } else if iq2_family {
        if is_attn_v(category) {
            t = if gqa >= 4 || n_expert >= 4 {
                Q4_K
            } else if iq2_s_or_m {
                IQ3_S
            } else {
                Q2_K
            };
            counts.i_attention_wv += 1;
        } else if n_expert == 8 && category == C::AttentionK {
            t = Q4_K;
        } else if category == C::FfnDown {
            if counts.i_ffn_down < counts.n_ffn / 8 {
                t = if iq2_s_or_m { IQ3_S } else { Q2_K };
            }
            counts.i_ffn_down += 1;
        } else if category == C::AttentionOutput {
            if n_expert == 8 {
                t = Q5_K;
            } else if ft == f::IQ1_S || ft == f::IQ1_M {
                t = IQ2_XXS;
            } else if iq2_s_or_m {
                t = IQ3_S;
            }
        }
    } else if is_attn_v(category) {
        attention_value(ctx, counts, &mut t);
        counts.i_attention_wv += 1;
    } else if category == C::AttentionK {
        if n_expert == 8 {
            t = Q8_0;
        } else if ft == f::IQ3_XS {
            t = IQ3_XXS;
        } else if ft == f::IQ3_XXS {
            t = IQ2_S;
        }
    } else if category == C::AttentionQ {
        if ft == f::IQ3_XS {
            t = IQ3_XXS;
        } else if ft == f::IQ3_XXS {
            t = IQ2_S;
        }
    } else if category == C::FfnDown {
        let (i, n) = layer_of(ctx, counts.i_ffn_down, name)?;
        ffn_down(ctx, i, n, &mut t);
        counts.i_ffn_down += 1;
    } else if category == C::AttentionOutput {
        attention_output(ctx, &mut t);
    } else if category == C::AttentionQkv {
        if [f::Q3_K_M, f::Q3_K_L, f::IQ3_M].contains(&ft) {
            t = Q4_K;
        } else if ft == f::Q4_K_M {
            t = Q5_K;
        } else if ft == f::Q5_K_M {
            t = Q6_K;
        }
    } else if category == C::FfnGate || category == C::FfnUp {
        let counter = if category == C::FfnGate { counts.i_ffn_gate } else { counts.i_ffn_up };
        let (i, n) = layer_of(ctx, counter, name)?;
        if ft == f::IQ3_XS && i >= n / 8 && i < 7 * n / 8 {
            t = IQ3_XXS;
        }
        if category == C::FfnGate {
            counts.i_ffn_gate += 1;
        } else {
            counts.i_ffn_up += 1;
        }
    }
    Ok(t)
}

/// The attention value rules of the mixtures other than the 1- and 2-bit IQ ones.
fn attention_value(ctx: &Context<'_>, counts: &Counters, t: &mut GgmlType) {
    use GgmlType::*;
    use ftype as f;
    let ft = ctx.file_type;
    let gqa = ctx.model.n_gqa();
    let (i, n) = (i64::from(counts.i_attention_wv), i64::from(counts.n_attention_wv));
    if ft == f::Q2_K {
        *t = if gqa >= 4 { Q4_K } else { Q3_K };
    } else if ft == f::Q2_K_S && gqa >= 4 {
        *t = Q4_K;
    } else if ft == f::IQ3_XXS {
        *t = if gqa >= 4 {
            Q4_K
        } else if !ctx.has_imatrix {
            IQ3_S
        } else {
            IQ3_XXS
        };
    } else if ((ft == f::IQ3_XS || ft == f::IQ3_S) && gqa >= 4) || ft == f::IQ3_M {
        *t = Q4_K;
    } else if ft == f::Q3_K_M {
        *t = if counts.i_attention_wv < 2 { Q5_K } else { Q4_K };
    } else if ft == f::Q3_K_L || ((ft == f::IQ4_NL || ft == f::IQ4_XS) && gqa >= 4) {
        *t = Q5_K;
    } else if (ft == f::Q4_K_M || ft == f::Q5_K_M) && use_more_bits(i, n) {
        *t = Q6_K;
    } else if ft == f::Q4_K_S && counts.i_attention_wv < 4 {
        *t = Q5_K;
    }
    if ctx.model.is_70b && (*t == Q3_K || *t == Q4_K) {
        *t = Q5_K;
    }
    if ctx.model.n_expert == 8 {
        *t = Q8_0;
    }
}

/// The FFN-down rules of the mixtures other than the 1- and 2-bit IQ ones, for layer `i` of
/// `n`.
fn ffn_down(ctx: &Context<'_>, i: i64, n: i64, t: &mut GgmlType) {
    use GgmlType::*;
    use ftype as f;
    let ft = ctx.file_type;
    let falcon = ctx.model.arch == Arch::Falcon;
    if ft == f::Q2_K {
        *t = Q3_K;
    } else if ft == f::Q2_K_S {
        if i < n / 8 {
            *t = Q4_K;
        }
    } else if ft == f::IQ3_XXS && !ctx.has_imatrix {
        *t = if i < n / 8 { Q4_K } else { Q3_K };
    } else if ft == f::Q3_K_M {
        *t = if i < n / 16 {
            Q5_K
        } else if !falcon || use_more_bits(i, n) {
            Q4_K
        } else {
            Q3_K
        };
    } else if ft == f::IQ3_M && (i < n / 8 || (ctx.model.n_expert == 8 && use_more_bits(i, n))) {
        *t = Q4_K;
    } else if ft == f::Q3_K_L {
        *t = if falcon { Q4_K } else { Q5_K };
    } else if ft == f::Q4_K_M {
        if falcon {
            *t = if i < n / 16 {
                Q6_K
            } else if use_more_bits(i, n) {
                Q5_K
            } else {
                Q4_K
            };
        } else if use_more_bits(i, n) {
            *t = Q6_K;
        }
    } else if i < n / 8 && (ft == f::IQ4_NL || ft == f::IQ4_XS) && !ctx.has_imatrix {
        *t = Q5_K;
    } else if ft == f::Q5_K_M && use_more_bits(i, n) {
        *t = Q6_K;
    } else if ft == f::Q4_K_S && !falcon && i < n / 8 {
        *t = Q5_K;
    } else if (ft == f::Q4_0 || ft == f::Q5_0) && ctx.has_imatrix && i < n / 8 {
        *t = if ft == f::Q4_0 { Q4_1 } else { Q5_1 };
    }
}

/// The attention output rules of the mixtures other than the 1- and 2-bit IQ ones.
fn attention_output(ctx: &Context<'_>, t: &mut GgmlType) {
    use GgmlType::*;
    use ftype as f;
    let ft = ctx.file_type;
    if ctx.model.arch == Arch::Falcon {
        if ft == f::Q3_K_L {
            *t = Q4_K;
        }
        return;
    }
    if ctx.model.n_expert == 8 {
        let bumped = [
            f::Q2_K,
            f::IQ3_XS,
            f::IQ3_XXS,
            f::Q3_K_S,
            f::Q3_K_M,
            f::IQ4_NL,
            f::Q4_K_S,
            f::Q4_K_M,
            f::IQ3_S,
            f::IQ3_M,
            f::IQ4_XS,
        ];
        if bumped.contains(&ft) {
            *t = Q5_K;
        }
        return;
    }
    *t = match ft {
        f::Q2_K => Q3_K,
        f::IQ3_XXS => IQ3_S,
        f::Q3_K_M | f::IQ3_M => Q4_K,
        f::Q3_K_L => Q5_K,
        _ => *t,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_follow_llama_cpp_order() {
        assert_eq!(category("output.weight"), Category::Output);
        assert_eq!(category("blk.0.attn_qkv.weight"), Category::AttentionQkv);
        assert_eq!(category("blk.0.attn_v.weight"), Category::AttentionV);
        assert_eq!(category("blk.0.ffn_gate_exps.weight"), Category::FfnGate);
        assert_eq!(category("blk.0.ffn_up_exps.weight"), Category::FfnUp);
        assert_eq!(category("blk.0.ffn_down.bias"), Category::FfnDown);
        assert_eq!(category("blk.0.attn_norm.weight"), Category::Other);
    }

    #[test]
    fn fallbacks_are_llama_cpp_table() {
        use GgmlType::*;
        assert_eq!(fallback(Q4_K, 160), Some(Q5_0));
        assert_eq!(fallback(Q4_K, 256), Some(Q4_K));
        assert_eq!(fallback(IQ2_XXS, 160), Some(IQ4_NL));
        assert_eq!(fallback(Q6_K, 48), Some(F16));
        assert_eq!(fallback(Q4_0, 48), Some(F16));
        assert_eq!(fallback(Q1_0, 160), None);
        assert_eq!(fallback(NVFP4, 96), None);
    }

    #[test]
    fn more_bits_for_the_first_and_last_eighth_and_every_third() {
        let picked: Vec<i64> = (0..16).filter(|&i| use_more_bits(i, 16)).collect();
        assert_eq!(picked, vec![0, 1, 4, 7, 10, 13, 14, 15]);
        assert!(use_more_bits(1, 2) && !use_more_bits(0, 2));
    }

    #[test]
    fn five_byte_names_count_as_weights() {
        let arch = Arch::Other;
        assert!(allows_quantization("abcde", 2, &arch, true));
        assert!(!allows_quantization("abcdef", 2, &arch, true));
        assert!(!allows_quantization("blk.0.attn_norm.weight", 2, &arch, true));
        assert!(!allows_quantization("output.weight", 2, &arch, false));
        assert!(!allows_quantization("blk.0.attn_q.weight", 1, &arch, true));
    }
}
