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
}

/// The converter class an architecture goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `LlamaModel`: `add_prefix_space`, SentencePiece else llama's HF vocabulary else BPE, the
    /// CodeLlama and Granite fix-ups; `vocab_size` and `rope.dimension_count` written.
    Llama,
    /// `Qwen2Model` (and Qwen3's): SentencePiece else BPE; the text model's keys alone.
    Qwen,
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
};

/// Every architecture, in the order they are tried.
pub(crate) const ARCHITECTURES: &[&Architecture] = &[&LLAMA, &MISTRAL, &MIXTRAL, &QWEN2, &QWEN3];

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
        let err = architecture_of(&serde_json::json!({"architectures": ["Phi3ForCausalLM"]})).unwrap_err();
        assert!(err.to_string().contains("Phi3ForCausalLM") && err.to_string().contains("LlamaForCausalLM"), "{err}");
    }
}
