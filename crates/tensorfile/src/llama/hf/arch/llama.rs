//! The llama converter class's architectures: llama, mistral, mixtral, granite.

use super::{Architecture, Experts, Extra, Fallback, Family, Rewrite};

/// The llama family's tensor names.
pub(super) const LLAMA_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"),
    ("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
    ("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
    // Mixtral's router and its experts, stacked.
    ("model.layers.{bid}.block_sparse_moe.gate", "blk.{bid}.ffn_gate_inp"),
    ("layers.{bid}.feed_forward.experts.w1", "blk.{bid}.ffn_gate_exps"),
    ("layers.{bid}.feed_forward.experts.w2", "blk.{bid}.ffn_down_exps"),
    ("layers.{bid}.feed_forward.experts.w3", "blk.{bid}.ffn_up_exps"),
];

/// Llama (transformers' `LlamaConfig` defaults).
pub(super) const LLAMA: Architecture = Architecture {
    hf_names: &["LlamaForCausalLM", "LlamaModel"],
    name: "llama",
    defaults: &[
        ("vocab_size", Fallback::Int(32000)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(11008)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::SameAs("num_attention_heads")),
        ("max_position_embeddings", Fallback::Int(2048)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
        ("head_dim", Fallback::Quotient("hidden_size", "num_attention_heads")),
    ],
    tensors: LLAMA_TENSORS,
    undo_permute: true,
    experts: None,
    family: Family::Llama,
    bare: &["LlamaModel"],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Mistral: llama's converter, `MistralConfig`'s defaults (no head width unless given).
pub(super) const MISTRAL: Architecture = Architecture {
    hf_names: &["MistralForCausalLM"],
    name: "llama",
    defaults: &[
        ("vocab_size", Fallback::Int(32000)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(14336)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::Int(8)),
        ("max_position_embeddings", Fallback::Int(4096 * 32)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("head_dim", Fallback::Null),
    ],
    tensors: LLAMA_TENSORS,
    undo_permute: true,
    experts: None,
    family: Family::Llama,
    bare: &[],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Mixtral's experts: `w1` (gate), `w2` (down), `w3` (up) of every expert.
pub(super) const MIXTRAL_EXPERTS: Experts = Experts {
    marker: "block_sparse_moe.experts",
    per_expert: "model.layers.{bid}.block_sparse_moe.experts.{xid}.{wid}.weight",
    projections: &[
        ("w1", "layers.{bid}.feed_forward.experts.w1"),
        ("w2", "layers.{bid}.feed_forward.experts.w2"),
        ("w3", "layers.{bid}.feed_forward.experts.w3"),
    ],
    count_key: "num_local_experts",
};

/// Mixtral: llama's converter with its experts stacked, `MixtralConfig`'s defaults.
pub(super) const MIXTRAL: Architecture = Architecture {
    hf_names: &["MixtralForCausalLM"],
    name: "llama",
    defaults: &[
        ("vocab_size", Fallback::Int(32000)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(14336)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::Int(8)),
        ("max_position_embeddings", Fallback::Int(4096 * 32)),
        ("rms_norm_eps", Fallback::Float(1e-5)),
        ("rope_theta", Fallback::Float(1e6)),
        ("head_dim", Fallback::Null),
        ("num_experts_per_tok", Fallback::Int(2)),
        ("num_local_experts", Fallback::Int(8)),
    ],
    tensors: LLAMA_TENSORS,
    undo_permute: true,
    experts: Some(&MIXTRAL_EXPERTS),
    family: Family::Llama,
    bare: &[],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Granite: llama's converter, its multipliers as scales, no head width.
pub(super) const GRANITE: Architecture = Architecture {
    hf_names: &["GraniteForCausalLM"],
    name: "granite",
    defaults: &[
        ("vocab_size", Fallback::Int(32000)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(11008)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::SameAs("num_attention_heads")),
        ("max_position_embeddings", Fallback::Int(2048)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
        ("embedding_multiplier", Fallback::Float(1.0)),
        ("logits_scaling", Fallback::Float(1.0)),
        ("residual_multiplier", Fallback::Float(1.0)),
        ("attention_multiplier", Fallback::Float(1.0)),
    ],
    tensors: LLAMA_TENSORS,
    undo_permute: true,
    experts: None,
    family: Family::Llama,
    bare: &[],
    extra: &[
        ("attention.scale", Extra::FloatIfSet("attention_multiplier")),
        ("embedding_scale", Extra::FloatIfSet("embedding_multiplier")),
        ("residual_scale", Extra::FloatIfSet("residual_multiplier")),
        ("logit_scale", Extra::FloatIfSet("logits_scaling")),
    ],
    rewrite: Rewrite::DropHeadDim,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};
