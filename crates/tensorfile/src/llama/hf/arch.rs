//! The architectures the converter is proved on, as data: the Hugging Face class names that
//! select one, the name llama.cpp gives it, the configuration defaults transformers fills in
//! for what `config.json` leaves out, the tensor names, and whether the query and key rows are
//! permuted back to llama.cpp's rotary layout. Adding one is an entry here (CONTRIBUTING.md).

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// One architecture.
#[derive(Debug)]
pub(crate) struct Architecture {
    /// The classes `config.json`'s `architectures` names it by.
    pub hf_names: &'static [&'static str],
    /// llama.cpp's name of it (`general.architecture`, the prefix of its keys).
    pub name: &'static str,
    /// Defaults transformers' configuration class sets for keys a `config.json` may leave out:
    /// (key, what it is when absent).
    pub defaults: &'static [(&'static str, Fallback)],
    /// Tensor names: (the name in the checkpoint, `{bid}` for the block number; llama.cpp's name).
    pub tensors: &'static [(&'static str, &'static str)],
    /// The query and key rows are permuted back from Hugging Face's rotary layout.
    pub undo_permute: bool,
    /// How a mixture's experts are stored, when they are one tensor per expert.
    pub experts: Option<&'static Experts>,
    /// The converter class it goes through: its vocabulary path and extra key/values.
    pub family: Family,
    /// The classes whose checkpoints name their tensors without the `model.` prefix (the bare
    /// models, `LlamaModel`): the converter adds it.
    pub bare: &'static [&'static str],
    /// Key/values the converter class adds after the common ones, in order.
    pub extra: &'static [(&'static str, Extra)],
    /// The hyperparameters the class rewrites before anything is read.
    pub rewrite: Rewrite,
    /// Every tensor whose name ends in `norm.weight` gets 1 added, in float32, before it is
    /// stored (Gemma's norms hold `weight - 1`).
    pub norm_plus_one: bool,
    /// Checkpoint tensors the converter skips (Gemma's unused `lm_head.weight`).
    pub drop: &'static [&'static str],
    /// The token embeddings are cut to the vocabulary's size when they hold more rows
    /// (Gemma 3's out-of-vocabulary rows).
    pub trim_embeddings: bool,
}

/// A key/value an architecture adds, from the hyperparameters.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Extra {
    /// A count from the first of these keys the hyperparameters hold (left out without one).
    Count(&'static [&'static str]),
    /// A float32 from this key, written only when it is set and not zero (Python's truth).
    FloatIfSet(&'static str),
    /// A float32 from this key, which must be there.
    Float(&'static str),
    /// A fixed text.
    Text(&'static str),
}

/// How a converter class rewrites the hyperparameters first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// Not at all.
    None,
    /// `head_dim` dropped (Granite ignores it).
    DropHeadDim,
    /// `max_position_embeddings` from `model_max_length` when there is one (Command R).
    ContextFromModelMaxLength,
}

/// The converter class an architecture goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `LlamaModel`: `add_prefix_space`, SentencePiece else llama's HF vocabulary else BPE, the
    /// CodeLlama and Granite fix-ups; `vocab_size` and `rope.dimension_count` written.
    Llama,
    /// `Qwen2Model` (and Qwen3's): SentencePiece else BPE; the text model's keys alone.
    Qwen,
    /// `TextModel`'s own vocabulary (BPE from `tokenizer.json`) and keys (OLMo 2, Qwen MoE,
    /// Command R).
    Text,
    /// `Gemma2Model`: its own key/values (not the text model's), SentencePiece with
    /// `add_space_prefix` false written last.
    Gemma2,
    /// `Gemma3Model`: the text model's key/values then its own, SentencePiece (else BPE) with
    /// `add_space_prefix` false written last.
    Gemma3,
    /// `Phi3MiniModel`: its own key/values, SentencePiece without `add_space_prefix`.
    Phi3,
}

impl Family {
    /// Gemma's vocabulary: SentencePiece, then `add_space_prefix` false.
    pub(crate) fn is_gemma(self) -> bool {
        matches!(self, Family::Gemma2 | Family::Gemma3)
    }
}

/// A mixture's experts stored one tensor per expert and projection, which the converter
/// stacks into one tensor per projection and block.
#[derive(Debug)]
pub(crate) struct Experts {
    /// What the name of every expert tensor holds.
    pub marker: &'static str,
    /// The name of one (`{bid}` block, `{xid}` expert, `{wid}` projection).
    pub per_expert: &'static str,
    /// The projections in the order the converter stacks them, each with the name the
    /// stacked tensor is given before the tensor table maps it (`{bid}` block).
    pub projections: &'static [(&'static str, &'static str)],
    /// The hyperparameter counting the experts.
    pub count_key: &'static str,
}

/// A configuration default.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fallback {
    /// A number.
    Int(i64),
    /// A floating number.
    Float(f64),
    /// The value of another key.
    SameAs(&'static str),
    /// One key divided by another (integer division).
    Quotient(&'static str, &'static str),
    /// JSON null.
    Null,
}

/// The llama family's tensor names.
const LLAMA_TENSORS: &[(&str, &str)] = &[
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
const LLAMA: Architecture = Architecture {
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
};

/// Mistral: llama's converter, `MistralConfig`'s defaults (no head width unless given).
const MISTRAL: Architecture = Architecture {
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
};

/// Mixtral's experts: `w1` (gate), `w2` (down), `w3` (up) of every expert.
const MIXTRAL_EXPERTS: Experts = Experts {
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
const MIXTRAL: Architecture = Architecture {
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
};

/// Qwen 2 and 3's tensor names (llama's, with biases; Qwen 3's query and key norms).
const QWEN_TENSORS: &[(&str, &str)] = &[
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
const QWEN2: Architecture = Architecture {
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
};

/// Qwen 3 (`Qwen3Config`: a head width of 128 unless given).
const QWEN3: Architecture = Architecture {
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
};

/// Granite: llama's converter, its multipliers as scales, no head width.
const GRANITE: Architecture = Architecture {
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
};

/// OLMo 2's tensor names: norms after attention and after the feed-forward, query and key
/// norms over all heads.
const OLMO2_TENSORS: &[(&str, &str)] = &[
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
const OLMO2: Architecture = Architecture {
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
};

/// Qwen MoE's tensor names: the router, the shared expert and its gate, the stacked experts.
const QWEN_MOE_TENSORS: &[(&str, &str)] = &[
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
const QWEN_MOE_EXPERTS: Experts = Experts {
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
const QWEN2_MOE: Architecture = Architecture {
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
};

/// Qwen 3 MoE (`Qwen3MoeConfig`'s defaults).
const QWEN3_MOE: Architecture = Architecture {
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
};

/// Command R's tensor names (one norm per block, before attention and the feed-forward).
const COMMAND_R_TENSORS: &[(&str, &str)] = &[
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
const COMMAND_R: Architecture = Architecture {
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
};

/// Gemma 2 and 3's tensor names: a norm before and after attention and the feed-forward,
/// Gemma 3's query and key norms.
const GEMMA_TENSORS: &[(&str, &str)] = &[
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
const GEMMA2: Architecture = Architecture {
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
};

/// Gemma 3, the text model (`Gemma3TextConfig`'s defaults): the text model's keys (with the
/// sliding layers' rope base), then the final soft-capping when set and the sliding window;
/// norms shifted by one; the embeddings cut to the vocabulary.
const GEMMA3: Architecture = Architecture {
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
};

/// Phi 3's tensor names: the query, key and value rows fused (`qkv_proj`), the gate and up
/// projections fused and kept so as `ffn_up`.
const PHI3_TENSORS: &[(&str, &str)] = &[
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

/// Phi 3 (`Phi3Config`'s defaults): its own keys; long-context rope factors refused.
const PHI3: Architecture = Architecture {
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
};

/// Every architecture, in the order they are tried.
pub(crate) const ARCHITECTURES: &[&Architecture] = &[
    &LLAMA, &MISTRAL, &MIXTRAL, &QWEN2, &QWEN3, &GRANITE, &OLMO2, &QWEN2_MOE, &QWEN3_MOE, &COMMAND_R, &GEMMA2, &GEMMA3,
    &PHI3,
];

/// The class `config` names (its first `architectures` entry).
pub(crate) fn class_of(config: &Value) -> Option<&str> {
    config.get("architectures").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str)
}

/// The architecture `config` names (its first `architectures` entry), or why there is none.
pub(crate) fn architecture_of(config: &Value) -> Result<&'static Architecture> {
    let named = config.get("architectures").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str);
    let Some(hf_name) = named else {
        return Err(Error::usage("config.json names no architecture (its `architectures` list is missing or empty)"));
    };
    ARCHITECTURES.iter().copied().find(|a| a.hf_names.contains(&hf_name)).ok_or_else(|| {
        let known: Vec<&str> = ARCHITECTURES.iter().flat_map(|a| a.hf_names.iter().copied()).collect();
        Error::unsupported(format!("the architecture {hf_name} is not converted yet (converted: {})", known.join(", ")))
    })
}

impl Architecture {
    /// The hyperparameters as the converter sees them: `config` (its `text_config` lifted to
    /// the top, as the converter does) with the configuration class's defaults for what it
    /// leaves out.
    pub(crate) fn hparams(&self, config: &Value) -> Map<String, Value> {
        let mut map = config.as_object().cloned().unwrap_or_default();
        if let Some(Value::Object(text)) = map.get("text_config").cloned() {
            map.extend(text);
        }
        for (key, default) in self.defaults {
            if map.get(*key).is_some_and(|v| !v.is_null()) {
                continue;
            }
            let value = match default {
                Fallback::Int(n) => Value::from(*n),
                Fallback::Float(x) => Value::from(*x),
                Fallback::Null => Value::Null,
                Fallback::SameAs(other) => map.get(*other).cloned().unwrap_or(Value::Null),
                Fallback::Quotient(a, b) => {
                    match (map.get(*a).and_then(Value::as_i64), map.get(*b).and_then(Value::as_i64)) {
                        (Some(a), Some(b)) if b != 0 => Value::from(a.div_euclid(b)),
                        _ => Value::Null,
                    }
                }
            };
            if !(map.contains_key(*key) && value.is_null()) {
                map.insert((*key).to_string(), value);
            }
        }
        match self.rewrite {
            Rewrite::None => {}
            Rewrite::DropHeadDim => {
                map.remove("head_dim");
            }
            Rewrite::ContextFromModelMaxLength => {
                if let Some(n) = map.get("model_max_length").or_else(|| map.get("max_position_embeddings")).cloned() {
                    map.insert("max_position_embeddings".into(), n);
                }
            }
        }
        map
    }

    /// llama.cpp's name for the checkpoint's tensor `name` (its `.weight` or `.bias` suffix
    /// kept), or `None` when the table has none.
    pub(crate) fn tensor_name(&self, name: &str) -> Option<String> {
        let (base, suffix) = match name.rsplit_once('.') {
            Some((base, s @ ("weight" | "bias"))) => (base, Some(s)),
            _ => (name, None),
        };
        let mapped = self.map_base(base)?;
        Some(match suffix {
            Some(s) => format!("{mapped}.{s}"),
            None => mapped,
        })
    }

    fn map_base(&self, base: &str) -> Option<String> {
        let bid = base.split('.').find(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        for (hf, gguf) in self.tensors {
            match bid {
                Some(n) if hf.contains("{bid}") && hf.replace("{bid}", n) == base => {
                    return Some(gguf.replace("{bid}", n));
                }
                None if !hf.contains("{bid}") && *hf == base => return Some((*gguf).to_string()),
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_names_map_as_gguf_py_maps_them() {
        let cases = [
            ("model.embed_tokens.weight", Some("token_embd.weight")),
            ("model.layers.11.self_attn.k_proj.weight", Some("blk.11.attn_k.weight")),
            ("model.layers.0.self_attn.q_proj.bias", Some("blk.0.attn_q.bias")),
            ("lm_head.weight", Some("output.weight")),
            ("model.layers.0.mlp.experts.0.w1.weight", None),
            ("model.layers.x.mlp.up_proj.weight", None),
        ];
        for (hf, gguf) in cases {
            assert_eq!(LLAMA.tensor_name(hf).as_deref(), gguf, "{hf}");
        }
    }

    #[test]
    fn defaults_fill_what_config_json_leaves_out() {
        let config = serde_json::json!({"hidden_size": 64, "num_attention_heads": 4, "rope_theta": 500000.0});
        let h = LLAMA.hparams(&config);
        assert_eq!(h["head_dim"], 16);
        assert_eq!(h["num_key_value_heads"], 4);
        assert_eq!(h["rope_theta"], 500000.0);
        assert_eq!(h["rms_norm_eps"], 1e-6);
    }

    #[test]
    fn an_unknown_architecture_is_refused_with_the_known_ones() {
        let err = architecture_of(&serde_json::json!({"architectures": ["PhiForCausalLM"]})).unwrap_err();
        assert!(err.to_string().contains("PhiForCausalLM") && err.to_string().contains("LlamaForCausalLM"), "{err}");
    }
}
