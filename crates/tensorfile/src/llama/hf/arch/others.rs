//! The other architectures: olmo2, command-r, gemma2, gemma3, phi3.

use super::{Architecture, Extra, Fallback, Family, Rewrite};

/// OLMo 2's tensor names: norms after attention and after the feed-forward, query and key
/// norms over all heads.
pub(super) const OLMO2_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"),
    ("model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
    ("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm"),
    ("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
    ("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
];

/// OLMo 2 (`Olmo2Config`'s defaults).
pub(super) const OLMO2: Architecture = Architecture {
    hf_names: &["Olmo2ForCausalLM"],
    name: "olmo2",
    defaults: &[
        ("vocab_size", Fallback::Int(50304)),
        ("hidden_size", Fallback::Int(4096)),
        ("intermediate_size", Fallback::Int(11008)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::SameAs("num_attention_heads")),
        ("max_position_embeddings", Fallback::Int(2048)),
        ("rms_norm_eps", Fallback::Float(1e-5)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
    ],
    tensors: OLMO2_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Text,
    bare: &[],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Command R's tensor names (one norm per block, before attention and the feed-forward).
pub(super) const COMMAND_R_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
    ("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
];

/// Command R (`CohereConfig`'s defaults).
pub(super) const COMMAND_R: Architecture = Architecture {
    hf_names: &["CohereForCausalLM"],
    name: "command-r",
    defaults: &[
        ("vocab_size", Fallback::Int(256000)),
        ("hidden_size", Fallback::Int(8192)),
        ("intermediate_size", Fallback::Int(22528)),
        ("logit_scale", Fallback::Float(0.0625)),
        ("num_hidden_layers", Fallback::Int(40)),
        ("num_attention_heads", Fallback::Int(64)),
        ("num_key_value_heads", Fallback::SameAs("num_attention_heads")),
        ("max_position_embeddings", Fallback::Int(8192)),
        ("layer_norm_eps", Fallback::Float(1e-5)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
    ],
    tensors: COMMAND_R_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Text,
    bare: &[],
    extra: &[("logit_scale", Extra::Float("logit_scale")), ("rope.scaling.type", Extra::Text("none"))],
    rewrite: Rewrite::ContextFromModelMaxLength,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

/// Gemma 2 and 3's tensor names: a norm before and after attention and the feed-forward,
/// Gemma 3's query and key norms.
pub(super) const GEMMA_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"),
    ("model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
    ("model.layers.{bid}.pre_feedforward_layernorm", "blk.{bid}.ffn_norm"),
    ("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm"),
    ("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
    ("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
];

/// Gemma 2 (`Gemma2Config`'s defaults): its own keys, soft-capping and the sliding window
/// after the file type; norms shifted by one; `lm_head` skipped.
pub(super) const GEMMA2: Architecture = Architecture {
    hf_names: &["Gemma2ForCausalLM"],
    name: "gemma2",
    defaults: &[
        ("vocab_size", Fallback::Int(256000)),
        ("hidden_size", Fallback::Int(2304)),
        ("intermediate_size", Fallback::Int(9216)),
        ("num_hidden_layers", Fallback::Int(26)),
        ("num_attention_heads", Fallback::Int(8)),
        ("num_key_value_heads", Fallback::Int(4)),
        ("head_dim", Fallback::Int(256)),
        ("max_position_embeddings", Fallback::Int(8192)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("final_logit_softcapping", Fallback::Float(30.0)),
        ("attn_logit_softcapping", Fallback::Float(50.0)),
        ("sliding_window", Fallback::Int(4096)),
    ],
    tensors: GEMMA_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Gemma2,
    bare: &[],
    extra: &[
        ("attn_logit_softcapping", Extra::Float("attn_logit_softcapping")),
        ("final_logit_softcapping", Extra::Float("final_logit_softcapping")),
        ("attention.sliding_window", Extra::Count(&["sliding_window"])),
    ],
    rewrite: Rewrite::None,
    norm_plus_one: true,
    drop: &["lm_head.weight"],
    trim_embeddings: false,
    mla: false,
};

/// Gemma 3, the text model (`Gemma3TextConfig`'s defaults): the text model's keys (with the
/// sliding layers' rope base), then the final soft-capping when set and the sliding window;
/// norms shifted by one; the embeddings cut to the vocabulary.
pub(super) const GEMMA3: Architecture = Architecture {
    hf_names: &["Gemma3ForCausalLM"],
    name: "gemma3",
    defaults: &[
        ("vocab_size", Fallback::Int(262208)),
        ("hidden_size", Fallback::Int(2304)),
        ("intermediate_size", Fallback::Int(9216)),
        ("num_hidden_layers", Fallback::Int(26)),
        ("num_attention_heads", Fallback::Int(8)),
        ("num_key_value_heads", Fallback::Int(4)),
        ("head_dim", Fallback::Int(256)),
        ("max_position_embeddings", Fallback::Int(131072)),
        ("rms_norm_eps", Fallback::Float(1e-6)),
        ("rope_theta", Fallback::Float(1_000_000.0)),
        ("rope_local_base_freq", Fallback::Float(10000.0)),
        ("sliding_window", Fallback::Int(4096)),
    ],
    tensors: GEMMA_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Gemma3,
    bare: &[],
    extra: &[
        ("final_logit_softcapping", Extra::FloatIfSet("final_logit_softcapping")),
        ("attention.sliding_window", Extra::Count(&["sliding_window"])),
    ],
    rewrite: Rewrite::None,
    norm_plus_one: true,
    drop: &[],
    trim_embeddings: true,
    mla: false,
};

/// Phi 3's tensor names: the query, key and value rows fused (`qkv_proj`), the gate and up
/// projections fused and kept so as `ffn_up`.
pub(super) const PHI3_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.self_attn.qkv_proj", "blk.{bid}.attn_qkv"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"),
    ("model.layers.{bid}.mlp.gate_up_proj", "blk.{bid}.ffn_up"),
    ("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"),
];

/// Phi 3 (`Phi3Config`'s defaults): its own keys; long-context rope factors made by `plan.rs`.
pub(super) const PHI3: Architecture = Architecture {
    hf_names: &["Phi3ForCausalLM"],
    name: "phi3",
    defaults: &[
        ("vocab_size", Fallback::Int(32064)),
        ("hidden_size", Fallback::Int(3072)),
        ("intermediate_size", Fallback::Int(8192)),
        ("num_hidden_layers", Fallback::Int(32)),
        ("num_attention_heads", Fallback::Int(32)),
        ("num_key_value_heads", Fallback::SameAs("num_attention_heads")),
        ("max_position_embeddings", Fallback::Int(4096)),
        ("original_max_position_embeddings", Fallback::Int(4096)),
        ("rms_norm_eps", Fallback::Float(1e-5)),
        ("rope_theta", Fallback::Float(10000.0)),
        ("rope_scaling", Fallback::Null),
        ("partial_rotary_factor", Fallback::Float(1.0)),
        ("sliding_window", Fallback::Null),
    ],
    tensors: PHI3_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Phi3,
    bare: &[],
    extra: &[],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};
