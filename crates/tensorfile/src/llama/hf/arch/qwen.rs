//! Qwen's architectures: qwen2, qwen3 and their mixtures of experts.

use super::{Architecture, Experts, Extra, Fallback, Family, Rewrite};

/// Qwen 2 and 3's tensor names (llama's, with biases; Qwen 3's query and key norms).
pub(super) const QWEN_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"),
    ("model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"),
    ("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
    ("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
];

/// Qwen 2 (transformers' `Qwen2Config` defaults: no head width).
pub(super) const QWEN2: Architecture = Architecture {
    hf_names: &["Qwen2ForCausalLM", "Qwen2Model"],
    name: "qwen2",
    defaults: &[
        ("vocab_size", Fallback::Int(151936)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(22016)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::Int(32)),
        ("max_position_embeddings", Fallback::Int(32768)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
    ],
    tensors: QWEN_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Qwen,
    bare: &["Qwen2Model"],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Qwen 3 (`Qwen3Config`: a head width of 128 unless given).
pub(super) const QWEN3: Architecture = Architecture {
    hf_names: &["Qwen3ForCausalLM", "Qwen3Model"],
    name: "qwen3",
    defaults: &[
        ("vocab_size", Fallback::Int(151936)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(22016)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::Int(32)),
        ("head_dim", Fallback::Int(128)),
        ("max_position_embeddings", Fallback::Int(32768)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
    ],
    tensors: QWEN_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Qwen,
    bare: &["Qwen3Model"],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Qwen MoE's tensor names: the router, the shared expert and its gate, the stacked experts.
pub(super) const QWEN_MOE_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"),
    ("model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"),
    ("model.layers.{bid}.mlp.gate", "blk.{bid}.ffn_gate_inp"),
    ("model.layers.{bid}.mlp.shared_expert.gate_proj", "blk.{bid}.ffn_gate_shexp"),
    ("model.layers.{bid}.mlp.shared_expert.up_proj", "blk.{bid}.ffn_up_shexp"),
    ("model.layers.{bid}.mlp.shared_expert.down_proj", "blk.{bid}.ffn_down_shexp"),
    ("model.layers.{bid}.mlp.shared_expert_gate", "blk.{bid}.ffn_gate_inp_shexp"),
    ("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"),
    ("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
    ("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
];

/// Qwen MoE's experts: `down_proj`, `gate_proj`, `up_proj` of every expert, stacked in that
/// order.
pub(super) const QWEN_MOE_EXPERTS: Experts = Experts {
    marker: "experts",
    per_expert: "model.layers.{bid}.mlp.experts.{xid}.{wid}.weight",
    projections: &[
        ("down_proj", "model.layers.{bid}.mlp.experts.down_proj"),
        ("gate_proj", "model.layers.{bid}.mlp.experts.gate_proj"),
        ("up_proj", "model.layers.{bid}.mlp.experts.up_proj"),
    ],
    count_key: "num_experts",
};

/// Qwen 2 MoE (`Qwen2MoeConfig`'s defaults).
pub(super) const QWEN2_MOE: Architecture = Architecture {
    hf_names: &["Qwen2MoeForCausalLM"],
    name: "qwen2moe",
    defaults: &[
        ("vocab_size", Fallback::Int(151936)),
        ("hidden_size", Fallback::Int(2048)),
        ("intermediate_size", Fallback::Int(5632)),
        ("num_hidden_layers", Fallback::Int(24)),
        ("num_attention_heads", Fallback::Int(16)),
        ("num_key_value_heads", Fallback::Int(16)),
        ("max_position_embeddings", Fallback::Int(32768)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
        ("moe_intermediate_size", Fallback::Int(1408)),
        ("shared_expert_intermediate_size", Fallback::Int(5632)),
        ("num_experts_per_tok", Fallback::Int(4)),
        ("num_experts", Fallback::Int(60)),
    ],
    tensors: QWEN_MOE_TENSORS,
    undo_permute: false,
    experts: Some(&QWEN_MOE_EXPERTS),
    family: Family::Text,
    bare: &[],
    extra: &[
        ("expert_feed_forward_length", Extra::Count(&["moe_intermediate_size"])),
        ("expert_shared_feed_forward_length", Extra::Count(&["shared_expert_intermediate_size"])),
    ],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Qwen 3 MoE (`Qwen3MoeConfig`'s defaults).
pub(super) const QWEN3_MOE: Architecture = Architecture {
    hf_names: &["Qwen3MoeForCausalLM"],
    name: "qwen3moe",
    defaults: &[
        ("vocab_size", Fallback::Int(151936)),
        ("hidden_size", Fallback::Int(2048)),
        ("intermediate_size", Fallback::Int(6144)),
        ("num_hidden_layers", Fallback::Int(24)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::Int(4)),
        ("max_position_embeddings", Fallback::Int(32768)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
        ("moe_intermediate_size", Fallback::Int(768)),
        ("num_experts_per_tok", Fallback::Int(8)),
        ("num_experts", Fallback::Int(128)),
    ],
    tensors: QWEN_MOE_TENSORS,
    undo_permute: false,
    experts: Some(&QWEN_MOE_EXPERTS),
    family: Family::Text,
    bare: &[],
    extra: &[("expert_feed_forward_length", Extra::Count(&["moe_intermediate_size"]))],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};
