//! DeepSeek's architectures: deepseek2 (DeepSeek V2 and V3, multi-head latent attention and a
//! mixture of routed and shared experts).

use super::{Architecture, Experts, Fallback, Family, Rewrite};

/// DeepSeek V2 and V3's tensor names: the query whole (`q_proj`, V2-Lite) or through its latent
/// rank (`q_a_proj`, its norm, `q_b_proj`), the compressed key/value and its norm, `kv_b_proj`
/// split by the converter into `k_b_proj` and `v_b_proj`, the router and its bias (V3), the
/// shared experts and the stacked routed ones.
pub(super) const DEEPSEEK2_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.q_a_proj", "blk.{bid}.attn_q_a"),
    ("model.layers.{bid}.self_attn.q_a_layernorm", "blk.{bid}.attn_q_a_norm"),
    ("model.layers.{bid}.self_attn.q_b_proj", "blk.{bid}.attn_q_b"),
    ("model.layers.{bid}.self_attn.kv_a_proj_with_mqa", "blk.{bid}.attn_kv_a_mqa"),
    ("model.layers.{bid}.self_attn.kv_a_layernorm", "blk.{bid}.attn_kv_a_norm"),
    ("model.layers.{bid}.self_attn.k_b_proj", "blk.{bid}.attn_k_b"),
    ("model.layers.{bid}.self_attn.v_b_proj", "blk.{bid}.attn_v_b"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"),
    ("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
    ("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
    ("model.layers.{bid}.mlp.gate", "blk.{bid}.ffn_gate_inp"),
    // The converter reads `e_score_correction_bias` as `e_score_correction.bias`.
    ("model.layers.{bid}.mlp.gate.e_score_correction_bias", "blk.{bid}.exp_probs_b.bias"),
    ("model.layers.{bid}.mlp.shared_experts.gate_proj", "blk.{bid}.ffn_gate_shexp"),
    ("model.layers.{bid}.mlp.shared_experts.up_proj", "blk.{bid}.ffn_up_shexp"),
    ("model.layers.{bid}.mlp.shared_experts.down_proj", "blk.{bid}.ffn_down_shexp"),
    ("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"),
    ("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
    ("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
];

/// DeepSeek's routed experts: `down_proj`, `gate_proj`, `up_proj` of every expert, stacked in
/// that order (the shared experts, `mlp.shared_experts`, are not among them).
pub(super) const DEEPSEEK2_EXPERTS: Experts = Experts {
    marker: "mlp.experts",
    per_expert: "model.layers.{bid}.mlp.experts.{xid}.{wid}.weight",
    projections: &[
        ("down_proj", "model.layers.{bid}.mlp.experts.down_proj"),
        ("gate_proj", "model.layers.{bid}.mlp.experts.gate_proj"),
        ("up_proj", "model.layers.{bid}.mlp.experts.up_proj"),
    ],
    count_key: "n_routed_experts",
};

/// DeepSeek V2 (`DeepseekV2Config`'s defaults; its head width is always `qk_rope_head_dim`).
pub(super) const DEEPSEEK_V2: Architecture = Architecture {
    hf_names: &["DeepseekV2ForCausalLM"],
    name: "deepseek2",
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
        ("first_k_dense_replace", Fallback::IntIfAbsent(0)),
        ("kv_lora_rank", Fallback::Int(512)),
        ("q_lora_rank", Fallback::IntIfAbsent(1536)),
        ("n_group", Fallback::Null),
        ("n_routed_experts", Fallback::IntIfAbsent(64)),
        ("n_shared_experts", Fallback::Int(2)),
        ("qk_nope_head_dim", Fallback::Int(128)),
        ("qk_rope_head_dim", Fallback::Int(64)),
        ("routed_scaling_factor", Fallback::Float(1.0)),
        ("topk_group", Fallback::Null),
        ("v_head_dim", Fallback::Int(128)),
        ("num_experts_per_tok", Fallback::Null),
        ("norm_topk_prob", Fallback::Bool(false)),
        ("moe_intermediate_size", Fallback::Int(1407)),
    ],
    tensors: DEEPSEEK2_TENSORS,
    undo_permute: false,
    experts: Some(&DEEPSEEK2_EXPERTS),
    family: Family::Text,
    bare: &[],
    extra: &[],
    rewrite: Rewrite::HeadDimFromRope,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: true,
};

/// DeepSeek V3 (`DeepseekV3Config`'s defaults; the same converter class as V2).
pub(super) const DEEPSEEK_V3: Architecture = Architecture {
    hf_names: &["DeepseekV3ForCausalLM"],
    name: "deepseek2",
    defaults: &[
        ("vocab_size", Fallback::Int(129280)),
        ("hidden_size", Fallback::Int(7168)),
        ("intermediate_size", Fallback::Int(18432)),
        ("moe_intermediate_size", Fallback::Int(2048)),
        ("num_hidden_layers", Fallback::Int(61)),
        ("num_attention_heads", Fallback::Int(128)),
        ("num_key_value_heads", Fallback::IntIfAbsent(128)),
        ("num_key_value_heads", Fallback::SameAs("num_attention_heads")),
        ("n_shared_experts", Fallback::Int(1)),
        ("n_routed_experts", Fallback::IntIfAbsent(256)),
        ("routed_scaling_factor", Fallback::Float(2.5)),
        ("kv_lora_rank", Fallback::Int(512)),
        ("q_lora_rank", Fallback::IntIfAbsent(1536)),
        ("qk_rope_head_dim", Fallback::Int(64)),
        ("v_head_dim", Fallback::Int(128)),
        ("qk_nope_head_dim", Fallback::Int(128)),
        ("n_group", Fallback::IntIfAbsent(8)),
        ("topk_group", Fallback::IntIfAbsent(4)),
        ("num_experts_per_tok", Fallback::IntIfAbsent(8)),
        ("first_k_dense_replace", Fallback::IntIfAbsent(3)),
        ("norm_topk_prob", Fallback::Bool(true)),
        ("max_position_embeddings", Fallback::Int(4096)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
    ],
    tensors: DEEPSEEK2_TENSORS,
    undo_permute: false,
    experts: Some(&DEEPSEEK2_EXPERTS),
    family: Family::Text,
    bare: &[],
    extra: &[],
    rewrite: Rewrite::HeadDimFromRope,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: true,
};
