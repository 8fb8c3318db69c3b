//! Tensors the converter makes rather than reads: llama 3's rope frequency factors
//! (`rope_freqs.weight`) and Phi 3's long-context ones (`rope_factors_long.weight`,
//! `rope_factors_short.weight`); llama 3's computed in `float32` as the converter computes them with torch
//! (each step rounded to `f32`, Python numbers taken as `f32` where they meet a tensor).

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The rope parameters the converter reads: `rope_parameters`, else `rope_scaling`, and their
/// `full_attention` part when they have one.
pub(crate) fn rope_parameters(hparams: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let params = hparams
        .get("rope_parameters")
        .filter(|v| !v.is_null())
        .or_else(|| hparams.get("rope_scaling"))
        .and_then(Value::as_object)?;
    Some(params.get("full_attention").and_then(Value::as_object).unwrap_or(params))
}

/// Whether the hyperparameters ask for llama 3's rope scaling.
pub(crate) fn is_llama3(hparams: &Map<String, Value>) -> bool {
    rope_parameters(hparams)
        .and_then(|p| p.get("rope_type").or_else(|| p.get("type")))
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("llama3"))
}

fn number(params: &Map<String, Value>, key: &str, default: f64) -> Result<f64> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_f64().ok_or_else(|| Error::usage(format!("config.json: rope {key} is {v}, not a number"))),
    }
}

/// llama 3's rope frequency factors, one per pair of rotary dimensions.
pub(crate) fn llama3_factors(hparams: &Map<String, Value>) -> Result<Vec<f32>> {
    let params = rope_parameters(hparams).ok_or_else(|| Error::usage("no rope parameters"))?;
    let theta = hparams.get("rope_theta").and_then(Value::as_f64);
    let base = params.get("rope_theta").and_then(Value::as_f64).or(theta).unwrap_or(10000.0);
    let dim = match hparams.get("head_dim").and_then(Value::as_u64) {
        Some(d) => d,
        None => {
            let width = hparams.get("hidden_size").and_then(Value::as_u64);
            let heads = hparams.get("num_attention_heads").and_then(Value::as_u64).filter(|&h| h > 0);
            width.zip(heads).map(|(w, h)| w / h).ok_or_else(|| Error::usage("no head width for the rope factors"))?
        }
    };
    if dim == 0 || dim > 1 << 16 {
        return Err(Error::usage(format!("a head width of {dim} for the rope factors")));
    }
    let factor = number(params, "factor", 8.0)?;
    let low = number(params, "low_freq_factor", 1.0)?;
    let high = number(params, "high_freq_factor", 4.0)?;
    let old_context = number(params, "original_max_position_embeddings", 8192.0)?;
    let (low_wavelen, high_wavelen) = (old_context / low, old_context / high);
    let base = base as f32;
    let mut factors = Vec::with_capacity(dim as usize / 2);
    for i in (0..dim).step_by(2) {
        let exponent = i as f32 / dim as f32;
        let freq = 1.0f32 / base.powf(exponent);
        let wavelen = (2.0 * std::f64::consts::PI) as f32 / freq;
        let value = if wavelen < high_wavelen as f32 {
            1.0
        } else if wavelen > low_wavelen as f32 {
            factor as f32
        } else {
            let smooth = (old_context as f32 / wavelen - low as f32) / (high - low) as f32;
            1.0 / ((1.0 - smooth) / factor as f32 + smooth)
        };
        factors.push(value);
    }
    Ok(factors)
}

/// Phi 3's long-context rope (`Phi3MiniModel.generate_extra_tensors`): the factors of long and
/// short contexts, stored as `rope_factors_long.weight` and `rope_factors_short.weight`, and the
/// attention factor (`rope.scaling.attn_factor`) written with them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LongRope {
    /// `sqrt(1 + ln(scale) / ln(original))` for `su` and `longrope`, `0.1 ln(scale) + 1` for
    /// `yarn`, 1 when the context is not longer than the original one (`scale` the ratio).
    pub attn_factor: f32,
    /// `long_factor`, as float32.
    pub long: Vec<f32>,
    /// `short_factor`, as float32.
    pub short: Vec<f32>,
}

/// The first of `keys` the hyperparameters hold, not null, as a number.
fn first_number(hparams: &Map<String, Value>, keys: &[&str]) -> Result<f64> {
    let (key, v) = keys
        .iter()
        .find_map(|k| hparams.get_key_value(*k).filter(|(_, v)| !v.is_null()))
        .ok_or_else(|| Error::usage(format!("config.json has no {}", keys.join(" or "))))?;
    v.as_f64().ok_or_else(|| Error::usage(format!("config.json: {key} is {v}, not a number")))
}

/// A list of factors as float32.
fn factors(key: &str, v: &Value) -> Result<Vec<f32>> {
    let items = v.as_array().ok_or_else(|| Error::usage(format!("config.json: rope {key} is not a list")))?;
    items
        .iter()
        .map(|x| {
            x.as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| Error::usage(format!("config.json: rope {key} holds {x}, not a number")))
        })
        .collect()
}

/// Phi 3's long-context rope factors, when the rope parameters give a non-empty `long_factor`
/// (else `None`, as the converter makes nothing then). The type (`rope_type`, else `type`) must
/// be `su`, `longrope` or `yarn`, and both lists must hold one factor per pair of rotary
/// dimensions (`int(partial_rotary_factor * hidden_size) // num_attention_heads / 2`).
pub(crate) fn phi3_long_rope(hparams: &Map<String, Value>) -> Result<Option<LongRope>> {
    let Some(params) = rope_parameters(hparams) else { return Ok(None) };
    let long = match params.get("long_factor") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(a)) if a.is_empty() => return Ok(None),
        Some(v) => factors("long_factor", v)?,
    };
    let width = first_number(hparams, &["hidden_size", "n_embd"])?;
    let heads = first_number(hparams, &["num_attention_heads", "n_head"])?;
    let context = first_number(hparams, &["n_positions", "max_position_embeddings"])?;
    // The rope parameters' own, else the top level's (the converter mirrors them in).
    let original = match params.get("original_max_position_embeddings").filter(|v| !v.is_null()) {
        Some(v) => v.as_f64().ok_or_else(|| Error::usage(format!("config.json: rope original context {v}")))?,
        None => first_number(hparams, &["original_max_position_embeddings"])?,
    };
    let rot = match params.get("partial_rotary_factor").filter(|v| !v.is_null()) {
        Some(v) => v.as_f64().ok_or_else(|| Error::usage(format!("config.json: partial_rotary_factor {v}")))?,
        None => match hparams.get("partial_rotary_factor").filter(|v| !v.is_null()) {
            Some(v) => v.as_f64().ok_or_else(|| Error::usage(format!("config.json: partial_rotary_factor {v}")))?,
            None => 1.0,
        },
    };
    if heads < 1.0 || original <= 0.0 || context <= 0.0 {
        return Err(Error::usage("config.json: no heads or no context for Phi 3's long-context rope"));
    }
    let rope_dims = ((rot * width).trunc() / heads).floor();
    let kind = params.get("rope_type").or_else(|| params.get("type")).and_then(Value::as_str).unwrap_or_default();
    let scale = context / original;
    let attn_factor = match kind.to_ascii_lowercase().as_str() {
        "" => return Err(Error::usage("config.json: long-context rope factors without a rope type")),
        "su" | "longrope" if scale > 1.0 => (1.0 + scale.ln() / original.ln()).sqrt(),
        "yarn" if scale > 1.0 => 0.1 * scale.ln() + 1.0,
        "su" | "longrope" | "yarn" => 1.0,
        other => return Err(Error::unsupported(format!("rope scaling {other:?} with long-context factors"))),
    };
    let short = match params.get("short_factor") {
        None | Some(Value::Null) => {
            return Err(Error::usage("config.json: rope long_factor without short_factor"));
        }
        Some(v) => factors("short_factor", v)?,
    };
    if long.len() != short.len() || long.len() as f64 * 2.0 != rope_dims {
        return Err(Error::usage(format!(
            "config.json: rope long_factor ({}) and short_factor ({}) must hold {} factors each (rotary dimensions / 2)",
            long.len(),
            short.len(),
            rope_dims / 2.0
        )));
    }
    Ok(Some(LongRope { attn_factor: attn_factor as f32, long, short }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phi3(rope: Value) -> Map<String, Value> {
        let config = serde_json::json!({"hidden_size": 32, "num_attention_heads": 4, "max_position_embeddings": 512,
            "original_max_position_embeddings": 128, "rope_scaling": rope});
        config.as_object().unwrap().clone()
    }

    #[test]
    fn phi3_long_rope_has_the_converters_attention_factor_and_factors() {
        let long = [1.0, 1.25, 2.5, 7.75];
        let h =
            phi3(serde_json::json!({"type": "longrope", "long_factor": long, "short_factor": [1.0, 1.0, 1.0, 1.1]}));
        let got = phi3_long_rope(&h).unwrap().unwrap();
        // sqrt(1 + ln(4) / ln(128)), as the converter's float32 key holds it.
        assert_eq!(got.attn_factor, 1.133_893_4_f32);
        assert_eq!(got.long, long);
        assert_eq!(got.short[3], 1.1_f32);
        let yarn = phi3(serde_json::json!({"rope_type": "yarn", "long_factor": long, "short_factor": long}));
        assert_eq!(phi3_long_rope(&yarn).unwrap().unwrap().attn_factor, (0.1 * 4f64.ln() + 1.0) as f32);
    }

    #[test]
    fn phi3_without_long_factors_gets_none_and_bad_ones_are_refused() {
        assert_eq!(phi3_long_rope(&phi3(Value::Null)).unwrap(), None);
        assert_eq!(phi3_long_rope(&phi3(serde_json::json!({"type": "longrope", "long_factor": []}))).unwrap(), None);
        let refused = [
            serde_json::json!({"type": "longrope", "long_factor": [1.0, 1.0], "short_factor": [1.0, 1.0]}),
            serde_json::json!({"type": "longrope", "long_factor": [1.0, 1.0, 1.0, 1.0]}),
            serde_json::json!({"long_factor": [1.0, 1.0, 1.0, 1.0], "short_factor": [1.0, 1.0, 1.0, 1.0]}),
            serde_json::json!({"type": "dynamic", "long_factor": [1.0, 1.0, 1.0, 1.0], "short_factor": [1.0, 1.0, 1.0, 1.0]}),
            serde_json::json!({"type": "longrope", "long_factor": ["x", 1.0, 1.0, 1.0], "short_factor": [1.0, 1.0, 1.0, 1.0]}),
        ];
        for rope in refused {
            assert!(phi3_long_rope(&phi3(rope.clone())).is_err(), "{rope}");
        }
    }
}
