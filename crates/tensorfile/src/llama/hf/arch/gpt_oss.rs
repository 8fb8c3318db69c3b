//! gpt-oss (`GptOssModel`): a mixture of experts with attention sinks and biases, every other
//! layer's attention over a sliding window. Its experts' tensors are made by `plan/gpt_oss.rs`.

use super::{Architecture, Extra, Fallback, Family, Rewrite};

/// gpt-oss's tensor names: a norm after attention, the router (`ffn_gate_inp`), the experts'
/// stacked projections and biases (the names the converter gives them once split), the sinks.
const GPT_OSS_TENSORS: &[(&str, &str)] = &[
    ("model.embed_tokens", "token_embd"),
    ("model.norm", "output_norm"),
    ("lm_head", "output"),
    ("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
    ("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
    ("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
    ("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
    ("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
    ("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"),
    ("model.layers.{bid}.self_attn.sinks", "blk.{bid}.attn_sinks"),
    ("model.layers.{bid}.mlp.router", "blk.{bid}.ffn_gate_inp"),
    ("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
    ("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
    ("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"),
];

/// gpt-oss (`GptOssConfig`'s defaults; its default yarn `rope_scaling` is not filled in: a
/// `config.json` without one is refused): the text model's keys, then the sliding window and
/// the experts' width.
pub(super) const GPT_OSS: Architecture = Architecture {
    hf_names: &["GptOssForCausalLM"],
    name: "gpt-oss",
    defaults: &[
        ("vocab_size", Fallback::Int(201088)),
        ("hidden_size", Fallback::Int(2880)),
        ("intermediate_size", Fallback::Int(2880)),
        ("num_hidden_layers", Fallback::Int(36)),
        ("num_attention_heads", Fallback::Int(64)),
        ("num_key_value_heads", Fallback::Int(8)),
        ("head_dim", Fallback::Int(64)),
        ("num_local_experts", Fallback::Int(128)),
        ("num_experts_per_tok", Fallback::Int(4)),
        ("sliding_window", Fallback::Int(128)),
        ("max_position_embeddings", Fallback::Int(131072)),
        ("rms_norm_eps", Fallback::Float(1e-5)),
        ("rope_theta", Fallback::Float(150000.0)),
    ],
    tensors: GPT_OSS_TENSORS,
    undo_permute: false,
    experts: None,
    family: Family::Text,
    bare: &[],
    extra: &[
        ("attention.sliding_window", Extra::Count(&["sliding_window"])),
        ("expert_feed_forward_length", Extra::Count(&["intermediate_size"])),
    ],
    rewrite: Rewrite::None,
    norm_plus_one: false,
    drop: &[],
    trim_embeddings: false,
    mla: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_oss_names_map_as_gguf_py_maps_them() {
        let cases = [
            ("model.layers.3.self_attn.sinks.weight", Some("blk.3.attn_sinks.weight")),
            ("model.layers.0.post_attention_layernorm.weight", Some("blk.0.post_attention_norm.weight")),
            ("model.layers.1.mlp.router.bias", Some("blk.1.ffn_gate_inp.bias")),
            ("model.layers.1.mlp.experts.gate_proj.weight", Some("blk.1.ffn_gate_exps.weight")),
            ("model.layers.1.mlp.experts.down_proj.bias", Some("blk.1.ffn_down_exps.bias")),
            ("model.layers.1.mlp.experts.gate_up_proj", None),
        ];
        for (hf, gguf) in cases {
            assert_eq!(GPT_OSS.tensor_name(hf).as_deref(), gguf, "{hf}");
        }
    }
}
