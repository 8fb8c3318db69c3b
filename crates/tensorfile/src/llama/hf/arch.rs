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
    /// DeepSeek's multi-head latent attention converter class: `kv_b_proj` split into `k_b_proj`
    /// (transposed) and `v_b_proj`, the multi-token prediction blocks past `num_hidden_layers`
    /// and a tied `lm_head` skipped, its own key/values after the text model's.
    pub mla: bool,
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
    /// `head_dim` is `qk_rope_head_dim`, whatever `config.json` says (DeepSeek's configuration
    /// classes set it so).
    HeadDimFromRope,
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
    /// A number when the key is absent; a null given stays null (a keyword argument the
    /// configuration class keeps as `None`).
    IntIfAbsent(i64),
    /// A boolean.
    Bool(bool),
    /// A floating number.
    Float(f64),
    /// The value of another key.
    SameAs(&'static str),
    /// One key divided by another (integer division).
    Quotient(&'static str, &'static str),
    /// JSON null.
    Null,
}

mod deepseek;
mod gpt_oss;
mod llama;
mod others;
mod qwen;

use deepseek::{DEEPSEEK_V2, DEEPSEEK_V3};
use gpt_oss::GPT_OSS;
use llama::{GRANITE, LLAMA, MISTRAL, MIXTRAL};
use others::{COMMAND_R, GEMMA2, GEMMA3, OLMO2, PHI3};
use qwen::{QWEN2, QWEN2_MOE, QWEN3, QWEN3_MOE};

/// Every architecture, in the order they are tried.
pub(crate) const ARCHITECTURES: &[&Architecture] = &[
    &LLAMA,
    &MISTRAL,
    &MIXTRAL,
    &QWEN2,
    &QWEN3,
    &GRANITE,
    &OLMO2,
    &QWEN2_MOE,
    &QWEN3_MOE,
    &COMMAND_R,
    &GEMMA2,
    &GEMMA3,
    &PHI3,
    &DEEPSEEK_V2,
    &DEEPSEEK_V3,
    &GPT_OSS,
];

/// The class `config` names (its first `architectures` entry).
pub(crate) fn class_of(config: &Value) -> Option<&str> {
    config.get("architectures").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str)
}

/// The architecture `config` names (its first `architectures` entry), or why there is none.
pub(crate) fn architecture_of(config: &Value) -> Result<&'static Architecture> {
    let Some(hf_name) = class_of(config) else {
        return Err(Error::invalid(
            crate::error::Rule::MissingField,
            "no architecture: the `architectures` list is missing or empty",
        ));
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
                Fallback::IntIfAbsent(_) if map.contains_key(*key) => continue,
                Fallback::Int(n) | Fallback::IntIfAbsent(n) => Value::from(*n),
                Fallback::Bool(b) => Value::from(*b),
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
            Rewrite::HeadDimFromRope => {
                let rope = map.get("qk_rope_head_dim").cloned().unwrap_or(Value::Null);
                map.insert("head_dim".into(), rope);
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
    fn deepseek_keeps_a_null_given_and_takes_its_head_width_from_the_rope_dimensions() {
        let config = serde_json::json!({"q_lora_rank": null, "head_dim": 128, "qk_rope_head_dim": 4});
        let h = DEEPSEEK_V2.hparams(&config);
        assert_eq!(h["q_lora_rank"], Value::Null);
        assert_eq!(h["head_dim"], 4);
        assert_eq!(h["n_routed_experts"], 64);
        assert_eq!(h["norm_topk_prob"], false);
        let h = DEEPSEEK_V3.hparams(&serde_json::json!({"num_attention_heads": 4}));
        assert_eq!((h["q_lora_rank"].as_u64(), h["num_key_value_heads"].as_u64()), (Some(1536), Some(128)));
        assert_eq!(h["head_dim"], 64);
        let h = DEEPSEEK_V3.hparams(&serde_json::json!({"num_attention_heads": 4, "num_key_value_heads": null}));
        assert_eq!(h["num_key_value_heads"], 4);
        assert_eq!(
            DEEPSEEK_V3.tensor_name("model.layers.3.mlp.gate.e_score_correction_bias").as_deref(),
            Some("blk.3.exp_probs_b.bias")
        );
    }

    #[test]
    fn an_unknown_architecture_is_refused_with_the_known_ones() {
        let err = architecture_of(&serde_json::json!({"architectures": ["PhiForCausalLM"]})).unwrap_err();
        assert!(err.to_string().contains("PhiForCausalLM") && err.to_string().contains("LlamaForCausalLM"), "{err}");
    }
}
