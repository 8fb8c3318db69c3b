//! The architecture's key/values as the converter adds them from the hyperparameters, in its
//! order: the text model's (blocks, context, widths, heads, rope, norms, experts, head width,
//! file type), then the llama family's (vocabulary size, rope dimensions). Each key is
//! prefixed with the architecture's name and typed as gguf-py's writer types it.

use serde_json::{Map, Value};

use super::arch::{Architecture, Extra, Family};
use crate::error::{Error, Result, Rule};
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
        .ok_or_else(|| Error::invalid(Rule::BadField, format!("{key} is {v}, not a count below 2^32")))
}

fn f32_value(key: &str, v: &Value) -> Result<MetaValue> {
    v.as_f64()
        .map(|x| MetaValue::Number(Number::F32(x as f32)))
        .ok_or_else(|| Error::invalid(Rule::BadField, format!("{key} is {v}, not a number")))
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

    /// A key/value written (gguf-py's writer holds them by key: one written again keeps its
    /// place, with the later value).
    fn add(&mut self, key: &str, value: MetaValue) {
        self.set(key, value);
    }

    /// A key/value set again: its value replaced where it was first written (gguf-py keeps a
    /// key's place), else added.
    fn set(&mut self, key: &str, value: MetaValue) {
        let full = format!("{}.{key}", self.arch.name);
        match self.out.iter_mut().find(|(k, _)| *k == full) {
            Some((_, v)) => *v = value,
            None => self.out.push((full, value)),
        }
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
            if self.arch.mla && gguf_key == "attention.head_count_kv" {
                // DeepSeek's latent attention is written as one key/value head (the converter
                // sets `num_key_value_heads` to 1 first).
                self.add(gguf_key, MetaValue::Number(Number::U32(1)));
                continue;
            }
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
        self.gating_function()?;
        if let Some(head_dim) = self.hparams.get("head_dim").filter(|v| !v.is_null()) {
            let value = u32_value("head_dim", head_dim)?;
            self.add("attention.key_length", value.clone());
            self.add("attention.value_length", value);
        }
        self.out.push(("general.file_type".into(), MetaValue::Number(Number::U32(file_type))));
        if self.arch.family != Family::Llama {
            self.extras()?;
            if self.arch.mla {
                self.deepseek2(block_count)?;
            }
            return Ok(self.out);
        }
        // The llama family's own.
        let vocab =
            self.hparams.get("vocab_size").ok_or_else(|| Error::invalid(Rule::MissingField, "no vocab_size"))?;
        self.add("vocab_size", u32_value("vocab_size", vocab)?);
        let rope_dim = match self.hparams.get("head_dim").filter(|v| !v.is_null()) {
            Some(d) => u32_value("head_dim", d)?,
            None => {
                let width = self.hparams.get("hidden_size").and_then(Value::as_u64);
                let heads = self.hparams.get("num_attention_heads").and_then(Value::as_u64).filter(|&h| h > 0);
                match (width, heads) {
                    (Some(w), Some(h)) => u32_value("hidden_size", &Value::from(w / h))?,
                    _ => return Err(Error::invalid(Rule::BadField, "hidden_size and num_attention_heads are needed")),
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
                .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no {key}")))
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
    /// Long-context rope factors are tensors and a key the converter makes with them (`plan.rs`).
    fn phi3(mut self, block_count: u32, file_type: u32) -> Result<Vec<(String, MetaValue)>> {
        let required = |keys: &[&str]| -> Result<(&'a str, &'a Value)> {
            self.find(keys)
                .filter(|(_, v)| !v.is_null())
                .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no {}", keys.join(" or "))))
        };
        let (_, width) = required(&["hidden_size", "n_embd"])?;
        let (_, heads) = required(&["num_attention_heads", "n_head"])?;
        let (kk, kv_heads) = required(&["num_key_value_heads", "n_head_kv"])?;
        let (ek, eps) = required(&["rms_norm_eps"])?;
        let (ck, context) = required(&["n_positions", "max_position_embeddings"])?;
        // The rope parameters' own original context, else the top level's.
        let original_in_rope = self.rope_parameters().and_then(|p| p.get_key_value("original_max_position_embeddings"));
        let (ok, original) = match original_in_rope.filter(|(_, v)| !v.is_null()) {
            Some((k, v)) => (k.as_str(), v),
            None => required(&["original_max_position_embeddings"])?,
        };
        let (fk, ffn) = required(&["intermediate_size"])?;
        let (tk, theta) = required(&["rope_theta"])?;
        let rot = self.hparams.get("partial_rotary_factor").and_then(Value::as_f64).unwrap_or(1.0);
        let (w, h) = (width.as_u64().unwrap_or(0), heads.as_u64().filter(|&h| h > 0));
        let Some(h) = h else { return Err(Error::invalid(Rule::BadField, "num_attention_heads is not a count")) };
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

    /// `DeepseekV2Model.set_gguf_parameters`' own keys, after the text model's: the leading
    /// dense blocks, the vocabulary size, the latent ranks, the key and value widths of the
    /// latent attention (key_length and value_length set again in their place), the experts'
    /// widths, counts, scale and normalization, the rope dimensions and yarn's log multiplier.
    fn deepseek2(&mut self, block_count: u32) -> Result<()> {
        let h = self.hparams;
        let given = |key: &str| h.get(key).filter(|v| !v.is_null());
        let required = |key: &str| given(key).ok_or_else(|| Error::invalid(Rule::MissingField, format!("no {key}")));
        let routed = given("n_routed_experts");
        let dense = match given("first_k_dense_replace") {
            Some(v) => u32_value("first_k_dense_replace", v)?,
            // All dense without experts, none with them.
            None => MetaValue::Number(Number::U32(if routed.is_none() { block_count } else { 0 })),
        };
        self.add("leading_dense_block_count", dense);
        self.add("vocab_size", u32_value("vocab_size", required("vocab_size")?)?);
        if let Some(q) = given("q_lora_rank") {
            self.add("attention.q_lora_rank", u32_value("q_lora_rank", q)?);
        }
        let kv_rank = match h.get("kv_lora_rank") {
            None => 512,
            Some(v) => {
                v.as_u64().ok_or_else(|| Error::invalid(Rule::BadField, format!("kv_lora_rank is {v}, not a count")))?
            }
        };
        let count = |key: &str| -> Result<u64> {
            required(key)?.as_u64().ok_or_else(|| Error::invalid(Rule::BadField, format!("{key} is not a count")))
        };
        let (rope, nope, v_dim) = (count("qk_rope_head_dim")?, count("qk_nope_head_dim")?, count("v_head_dim")?);
        let width = |what: &str, n: Option<u64>| -> Result<MetaValue> {
            n.and_then(|n| u32::try_from(n).ok())
                .map(|n| MetaValue::Number(Number::U32(n)))
                .ok_or_else(|| Error::invalid(Rule::BadField, format!("the {what} does not fit a count")))
        };
        self.add("attention.kv_lora_rank", width("kv_lora_rank", Some(kv_rank))?);
        self.set("attention.key_length", width("key length", kv_rank.checked_add(rope))?);
        self.set("attention.value_length", width("value length", Some(kv_rank))?);
        self.add("attention.key_length_mla", width("latent key length", nope.checked_add(rope))?);
        self.add("attention.value_length_mla", width("v_head_dim", Some(v_dim))?);
        let (k, ffn) = self
            .find(&["moe_intermediate_size", "intermediate_size"])
            .ok_or_else(|| Error::invalid(Rule::MissingField, "no moe_intermediate_size"))?;
        self.add("expert_feed_forward_length", u32_value(k, ffn)?);
        if let Some(n) = routed {
            self.set("expert_count", u32_value("n_routed_experts", n)?);
        }
        let shared = h.get("n_shared_experts").cloned().unwrap_or(Value::from(0));
        self.add("expert_shared_count", u32_value("n_shared_experts", &shared)?);
        if let Some(scale) = given("routed_scaling_factor") {
            self.add("expert_weights_scale", f32_value("routed_scaling_factor", scale)?);
        }
        // Written when true (Python's truth of the value).
        let truthy = |v: &Value| match v {
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
            Value::String(t) => !t.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Null => false,
        };
        if given("norm_topk_prob").is_some_and(truthy) {
            self.add("expert_weights_norm", MetaValue::Bool(true));
        }
        self.add("rope.dimension_count", width("qk_rope_head_dim", Some(rope))?);
        if let Some(m) = self.rope_parameters().and_then(|p| p.get("mscale_all_dim")).filter(|v| !v.is_null()) {
            let m = m
                .as_f64()
                .ok_or_else(|| Error::invalid(Rule::BadField, format!("mscale_all_dim is {m}, not a number")))?;
            self.add("rope.scaling.yarn_log_multiplier", MetaValue::Number(Number::F32((0.1 * m) as f32)));
        }
        Ok(())
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
                    let v =
                        self.hparams.get(*k).ok_or_else(|| Error::invalid(Rule::MissingField, format!("no {k}")))?;
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

    /// Rope scaling: none, linear or yarn (the other kinds are refused).
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
            Some("yarn") => match params.get("factor").filter(|f| !f.is_null()) {
                Some(factor) => self.yarn(params, factor),
                None => Ok(()),
            },
            // Its factors are a tensor (`rope_freqs.weight`), no key.
            Some(t) if t.eq_ignore_ascii_case("llama3") && self.arch.family == Family::Llama => Ok(()),
            Some(other) => Err(Error::unsupported(format!("rope scaling {other:?} is not converted yet"))),
        }
    }

    /// Yarn rope scaling as the text model writes it: its type, factor, original context
    /// (which must be given) and the optional extrapolation and attention factors and betas.
    fn yarn(&mut self, params: &Map<String, Value>, factor: &Value) -> Result<()> {
        let factor = f32_value("rope_scaling.factor", factor)?;
        // The converter mirrors the top-level `original_max_position_embeddings` into the rope
        // parameters when they lack it.
        let original = params
            .get("original_max_position_embeddings")
            .or_else(|| self.hparams.get("original_max_position_embeddings"))
            .ok_or_else(|| {
                Error::invalid(Rule::BadField, "yarn rope scaling without original_max_position_embeddings")
            })?;
        let original = u32_value("rope_scaling.original_max_position_embeddings", original)?;
        self.add("rope.scaling.type", MetaValue::Text("yarn".into()));
        self.add("rope.scaling.factor", factor);
        self.add("rope.scaling.original_context_length", original);
        let optional: [(&[&str], &str); 4] = [
            (&["extrapolation_factor"], "rope.scaling.yarn_ext_factor"),
            (&["attention_factor", "attn_factor"], "rope.scaling.yarn_attn_factor"),
            (&["beta_fast"], "rope.scaling.yarn_beta_fast"),
            (&["beta_slow"], "rope.scaling.yarn_beta_slow"),
        ];
        for (keys, gguf_key) in optional {
            // `get(a, get(b))`: the first key when it is there (a null in it included).
            let found = keys.iter().find_map(|k| params.get_key_value(*k));
            if let Some((k, v)) = found.filter(|(_, v)| !v.is_null()) {
                self.add(gguf_key, f32_value(k, v)?);
            }
        }
        Ok(())
    }

    /// A mixture's gating function, from the first of the keys naming it: sigmoid, softmax or
    /// sqrtsoftplus (gguf-py's numbers); another is refused, as the converter refuses it.
    fn gating_function(&mut self) -> Result<()> {
        let keys = [
            "score_function",
            "scoring_func",
            "score_func",
            "moe_router_activation",
            "moe_router_activation_func",
            "expert_selection_fn",
        ];
        let Some((key, v)) = self.find(&keys).filter(|(_, v)| !v.is_null()) else { return Ok(()) };
        let number = match v.as_str() {
            Some("softmax") => 1,
            Some("sigmoid") => 2,
            Some("sqrtsoftplus") => 4,
            _ => {
                return Err(Error::unsupported(format!("{key} {v} is not a gating function llama.cpp has")));
            }
        };
        self.add("expert_gating_func", MetaValue::Number(Number::U32(number)));
        Ok(())
    }
}
