//! Tensors the converter makes rather than reads: llama 3's rope frequency factors
//! (`rope_freqs.weight`), computed in `float32` as the converter computes them with torch
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
