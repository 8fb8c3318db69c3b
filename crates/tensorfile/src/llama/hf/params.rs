//! The architecture's key/values as the converter adds them from the hyperparameters, in its
//! order: the text model's (blocks, context, widths, heads, rope, norms, experts, head width,
//! file type), then the llama family's (vocabulary size, rope dimensions). Each key is
//! prefixed with the architecture's name and typed as gguf-py's writer types it.

use serde_json::{Map, Value};

use super::arch::{Architecture, Extra, Family};
use crate::error::{Error, Result};
use crate::model::{MetaValue, Number, TypedArray};

/// The key/values, in order.
pub(crate) struct Params<'a> {
    arch: &'a Architecture,
    hparams: &'a Map<String, Value>,
    out: Vec<(String, MetaValue)>,
}

fn u32_value(key: &str, v: &Value) -> Result<MetaValue> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .map(|n| MetaValue::Number(Number::U32(n)))
        .ok_or_else(|| Error::usage(format!("config.json: {key} is {v}, not a count")))
}

fn f32_value(key: &str, v: &Value) -> Result<MetaValue> {
    v.as_f64()
        .map(|x| MetaValue::Number(Number::F32(x as f32)))
        .ok_or_else(|| Error::usage(format!("config.json: {key} is {v}, not a number")))
}

/// A count, or a list of counts (per layer), as gguf-py writes either.
fn u32_or_array(key: &str, v: &Value) -> Result<MetaValue> {
    match v.as_array() {
        Some(items) => {
            let n: Result<Vec<u32>> = items
                .iter()
                .map(|i| match u32_value(key, i)? {
                    MetaValue::Number(Number::U32(n)) => Ok(n),
                    _ => unreachable!("u32_value gives a u32"),
                })
                .collect();
            Ok(MetaValue::TypedArray(TypedArray::I32(n?.into_iter().map(|x| x as i32).collect())))
        }
        None => u32_value(key, v),
    }
}

impl<'a> Params<'a> {
    pub(crate) fn new(arch: &'a Architecture, hparams: &'a Map<String, Value>) -> Self {
        Params { arch, hparams, out: Vec::new() }
    }

    /// The first of `keys` the hyperparameters hold (a null counts as absent).
    fn find(&self, keys: &[&str]) -> Option<(&'a str, &'a Value)> {
        keys.iter().find_map(|k| self.hparams.get_key_value(*k)).map(|(k, v)| (k.as_str(), v))
    }

    fn add(&mut self, key: &str, value: MetaValue) {
        self.out.push((format!("{}.{key}", self.arch.name), value));
    }

    /// The key/values of a text model and of the llama family, ending with `general.file_type`
    /// (`file_type`) where the converter puts it.
    pub(crate) fn text_model(mut self, block_count: u32, file_type: u32) -> Result<Vec<(String, MetaValue)>> {
        if self.arch.family == Family::Gemma2 {
            return self.gemma2(block_count, file_type);
        }
        if self.arch.family == Family::Phi3 {
            return self.phi3(block_count, file_type);
        }
        self.add("block_count", MetaValue::Number(Number::U32(block_count)));
        let counts: [(&[&str], &str, bool); 5] = [
            (
                &[
                    "max_position_embeddings",
                    "n_ctx",
                    "n_positions",
                    "max_length",
                    "max_sequence_length",
                    "model_max_length",
                ],
                "context_length",
                false,
            ),
            (&["hidden_size", "n_embd", "dim"], "embedding_length", false),
            (
                &[
                    "prefix_dense_intermediate_size",
                    "dense_intermediate_size",
                    "intermediate_size",
                    "n_inner",
                    "hidden_dim",
                ],
                "feed_forward_length",
                true,
            ),
            (&["num_attention_heads", "n_head", "n_heads"], "attention.head_count", true),
            (&["num_key_value_heads", "n_kv_heads"], "attention.head_count_kv", true),
        ];
        for (keys, gguf_key, may_be_list) in counts {
            if let Some((k, v)) = self.find(keys).filter(|(_, v)| !v.is_null()) {
                let value = if may_be_list { u32_or_array(k, v)? } else { u32_value(k, v)? };
                self.add(gguf_key, value);
            }
        }
        if self.hparams.get("is_causal") == Some(&Value::Bool(false)) {
            self.add("attention.causal", MetaValue::Bool(false));
        }
        self.rope_scaling()?;
        if let Some(theta) = self.rope_theta().filter(|v| !v.is_null()) {
            self.add("rope.freq_base", f32_value("rope_theta", theta)?);
        }
        // The sliding layers' rope base (Gemma 3's `rope_local_base_freq`).
        let local =
            ["local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq"];
        if let Some((k, v)) = self.find(&local).filter(|(_, v)| !v.is_null()) {
            self.add("rope.freq_base_swa", f32_value(k, v)?);
        }
        for (keys, gguf_key) in [
            (&["rms_norm_eps", "norm_eps"][..], "attention.layer_norm_rms_epsilon"),
            (&["layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"][..], "attention.layer_norm_epsilon"),
        ] {
            if let Some((k, v)) = self.find(keys).filter(|(_, v)| !v.is_null()) {
                self.add(gguf_key, f32_value(k, v)?);
            }
        }
        for (keys, gguf_key) in [
            (&["num_local_experts", "num_experts", "n_routed_experts"][..], "expert_count"),
            (&["num_experts_per_tok", "num_experts_per_token", "top_k_experts"][..], "expert_used_count"),
            (&["n_group"][..], "expert_group_count"),
            (&["topk_group"][..], "expert_group_used_count"),
        ] {
            if let Some((k, v)) = self.find(keys).filter(|(_, v)| !v.is_null()) {
                self.add(gguf_key, u32_value(k, v)?);
            }
        }
        let gating =
            ["score_function", "scoring_func", "score_func", "moe_router_activation", "moe_router_activation_func"];
        if self.find(&gating).is_some_and(|(_, v)| !v.is_null()) {
            return Err(Error::unsupported("a mixture's gating function is not converted yet"));
        }
        if let Some(head_dim) = self.hparams.get("head_dim").filter(|v| !v.is_null()) {
            let value = u32_value("head_dim", head_dim)?;
            self.add("attention.key_length", value.clone());
            self.add("attention.value_length", value);
        }
        self.out.push(("general.file_type".into(), MetaValue::Number(Number::U32(file_type))));
        if self.arch.family != Family::Llama {
            self.extras()?;
            return Ok(self.out);
        }
        // The llama family's own.
        let vocab = self.hparams.get("vocab_size").ok_or_else(|| Error::usage("config.json has no vocab_size"))?;
        self.add("vocab_size", u32_value("vocab_size", vocab)?);
        let rope_dim = match self.hparams.get("head_dim").filter(|v| !v.is_null()) {
            Some(d) => u32_value("head_dim", d)?,
            None => {
                let width = self.hparams.get("hidden_size").and_then(Value::as_u64);
                let heads = self.hparams.get("num_attention_heads").and_then(Value::as_u64).filter(|&h| h > 0);
                match (width, heads) {
                    (Some(w), Some(h)) => u32_value("hidden_size", &Value::from(w / h))?,
                    _ => return Err(Error::usage("config.json: hidden_size and num_attention_heads are needed")),
                }
            }
        };
        self.add("rope.dimension_count", rope_dim);
        self.extras()?;
        Ok(self.out)
    }

    /// `Gemma2Model.set_gguf_parameters`: its own keys in its order (every one required but the
    /// key/value head count), `general.file_type`, then the architecture's extras.
    fn gemma2(mut self, block_count: u32, file_type: u32) -> Result<Vec<(String, MetaValue)>> {
        let required = |key: &str| -> Result<&'a Value> {
            self.hparams
                .get(key)
                .filter(|v| !v.is_null())
                .ok_or_else(|| Error::usage(format!("config.json has no {key}")))
        };
        let context = u32_value("max_position_embeddings", required("max_position_embeddings")?)?;
        let width = u32_value("hidden_size", required("hidden_size")?)?;
        let ffn = u32_value("intermediate_size", required("intermediate_size")?)?;
        let heads_key = if self.hparams.contains_key("num_key_value_heads") {
            "num_key_value_heads"
        } else {
            "num_attention_heads"
        };
        let heads = u32_value("num_attention_heads", required("num_attention_heads")?)?;
        let kv_heads = u32_value(heads_key, required(heads_key)?)?;
        let eps = f32_value("rms_norm_eps", required("rms_norm_eps")?)?;
        let head_dim = u32_value("head_dim", required("head_dim")?)?;
        self.add("context_length", context);
        self.add("embedding_length", width);
        self.add("block_count", MetaValue::Number(Number::U32(block_count)));
        self.add("feed_forward_length", ffn);
        self.add("attention.head_count", heads);
        self.add("attention.head_count_kv", kv_heads);
        self.add("attention.layer_norm_rms_epsilon", eps);
        self.add("attention.key_length", head_dim.clone());
        self.add("attention.value_length", head_dim);
        self.out.push(("general.file_type".into(), MetaValue::Number(Number::U32(file_type))));
        self.extras()?;
        Ok(self.out)
    }

    /// `Phi3MiniModel.set_gguf_parameters`: its own keys in its order, the rope dimensions from
    /// `partial_rotary_factor`, `general.file_type`, then the sliding window (0 when none).
    /// Long-context rope factors (a tensor the converter makes) are refused.
    fn phi3(mut self, block_count: u32, file_type: u32) -> Result<Vec<(String, MetaValue)>> {
        if self.rope_parameters().is_some_and(|p| p.get("long_factor").is_some_and(|v| !v.is_null())) {
            return Err(Error::unsupported("Phi 3's long-context rope factors are not converted yet"));
        }
        let required = |keys: &[&str]| -> Result<(&'a str, &'a Value)> {
            self.find(keys)
                .filter(|(_, v)| !v.is_null())
                .ok_or_else(|| Error::usage(format!("config.json has no {}", keys.join(" or "))))
        };
        let (_, width) = required(&["hidden_size", "n_embd"])?;
        let (_, heads) = required(&["num_attention_heads", "n_head"])?;
        let (kk, kv_heads) = required(&["num_key_value_heads", "n_head_kv"])?;
        let (ek, eps) = required(&["rms_norm_eps"])?;
        let (ck, context) = required(&["n_positions", "max_position_embeddings"])?;
        let (ok, original) = required(&["original_max_position_embeddings"])?;
        let (fk, ffn) = required(&["intermediate_size"])?;
        let (tk, theta) = required(&["rope_theta"])?;
        let rot = self.hparams.get("partial_rotary_factor").and_then(Value::as_f64).unwrap_or(1.0);
        let (w, h) = (width.as_u64().unwrap_or(0), heads.as_u64().filter(|&h| h > 0));
        let Some(h) = h else { return Err(Error::usage("config.json: num_attention_heads is not a count")) };
        let rope_dims = ((rot * w as f64) as u64) / h;
        self.add("context_length", u32_value(ck, context)?);
        self.add("rope.scaling.original_context_length", u32_value(ok, original)?);
        self.add("embedding_length", u32_value("hidden_size", width)?);
        self.add("feed_forward_length", u32_value(fk, ffn)?);
        self.add("block_count", MetaValue::Number(Number::U32(block_count)));
        self.add("attention.head_count", u32_value("num_attention_heads", heads)?);
        self.add("attention.head_count_kv", u32_value(kk, kv_heads)?);
        self.add("attention.layer_norm_rms_epsilon", f32_value(ek, eps)?);
        self.add("rope.dimension_count", u32_value("partial_rotary_factor", &Value::from(rope_dims))?);
        self.add("rope.freq_base", f32_value(tk, theta)?);
        self.out.push(("general.file_type".into(), MetaValue::Number(Number::U32(file_type))));
        let window = self.hparams.get("sliding_window").filter(|v| !v.is_null()).cloned().unwrap_or(Value::from(0));
        self.add("attention.sliding_window", u32_value("sliding_window", &window)?);
        self.extras()?;
        Ok(self.out)
    }

    /// The key/values the architecture's class adds after the common ones.
    fn extras(&mut self) -> Result<()> {
        for (key, extra) in self.arch.extra {
            let value = match extra {
                Extra::Count(keys) => match self.find(keys).filter(|(_, v)| !v.is_null()) {
                    Some((k, v)) => u32_value(k, v)?,
                    None => continue,
                },
                Extra::FloatIfSet(k) => {
                    match self.hparams.get(*k).filter(|v| !v.is_null() && v.as_f64() != Some(0.0)) {
                        Some(v) => f32_value(k, v)?,
                        None => continue,
                    }
                }
                Extra::Float(k) => {
                    let v = self.hparams.get(*k).ok_or_else(|| Error::usage(format!("config.json has no {k}")))?;
                    f32_value(k, v)?
                }
                Extra::Text(t) => MetaValue::Text((*t).to_string()),
            };
            self.add(key, value);
        }
        Ok(())
    }

    /// `rope_parameters`, else `rope_scaling` (their `full_attention` part when they have one),
    /// as the converter reads them.
    fn rope_parameters(&self) -> Option<&'a Map<String, Value>> {
        super::rope::rope_parameters(self.hparams)
    }

    fn rope_theta(&self) -> Option<&'a Value> {
        let keys = ["global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"];
        self.rope_parameters().and_then(|p| p.get("rope_theta")).or_else(|| self.find(&keys).map(|(_, v)| v))
    }

    /// Rope scaling: none, or linear (the only kind converted yet; the others are refused).
    fn rope_scaling(&mut self) -> Result<()> {
        let Some(params) = self.rope_parameters() else { return Ok(()) };
        if params.is_empty() {
            return Ok(());
        }
        let kind = params.get("rope_type").or_else(|| params.get("type")).and_then(Value::as_str);
        match kind {
            None => Ok(()),
            Some("linear") => match params.get("factor").filter(|f| !f.is_null()) {
                Some(factor) => {
                    let factor = f32_value("rope_scaling.factor", factor)?;
                    self.add("rope.scaling.type", MetaValue::Text("linear".into()));
                    self.add("rope.scaling.factor", factor);
                    Ok(())
                }
                None => Ok(()),
            },
            // Its factors are a tensor (`rope_freqs.weight`), no key.
            Some(t) if t.eq_ignore_ascii_case("llama3") && self.arch.family == Family::Llama => Ok(()),
            Some(other) => Err(Error::unsupported(format!("rope scaling {other:?} is not converted yet"))),
        }
    }
}
