//! FP8 checkpoints (DeepSeek V3's): `quantization_config` with `quant_method` `fp8`, each
//! quantized weight stored beside `<weight>_scale_inv`, a tensor of scales each of which
//! multiplies one block of the weight (`weight_block_size`, the blocks at the edges partial).
//! The converter dequantizes them to float32 before anything else (`weight * scale`, in
//! float32) and drops the scales and the unused activation scales; `--fp8-as-q8` stores the
//! dequantized weights as Q8_0.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::super::checkpoint::SourceTensor;
use crate::error::{Error, Result};

/// The suffix of a weight's scales.
const SCALES: &str = "_scale_inv";

/// A weight's scales: the tensor, and the block each of its values covers (`None`: none given,
/// the scales broadcast over the weight as they are).
#[derive(Debug, Clone)]
pub(crate) struct Scales {
    /// `<weight>_scale_inv`.
    pub tensor: SourceTensor,
    /// `weight_block_size`: the block's extent in the weight's trailing dimensions.
    pub block: Option<Vec<u64>>,
}

/// An FP8 checkpoint's scales, by the name of the weight they scale.
pub(crate) struct Fp8 {
    scales: HashMap<String, SourceTensor>,
    block: Option<Vec<u64>>,
}

impl Fp8 {
    /// The checkpoint's FP8 quantization, from `quantization_config`: `None` without one;
    /// another quantization method is refused (its tensors are not converted yet).
    pub(crate) fn of(hparams: &Map<String, Value>, tensors: &[SourceTensor]) -> Result<Option<Fp8>> {
        let Some(config) = hparams.get("quantization_config").and_then(Value::as_object) else { return Ok(None) };
        match config.get("quant_method") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(m)) if m == "fp8" => {}
            Some(other) => {
                return Err(Error::unsupported(format!(
                    "config.json: a checkpoint quantized by {other} is not converted yet (fp8 is)"
                )));
            }
        }
        let block = match config.get("weight_block_size") {
            None | Some(Value::Null) => None,
            Some(Value::Array(sizes)) => {
                Some(
                    sizes.iter().map(|s| s.as_u64().filter(|&n| n > 0)).collect::<Option<Vec<u64>>>().ok_or_else(
                        || Error::usage("config.json: weight_block_size holds a size that is not a count"),
                    )?,
                )
            }
            Some(other) => return Err(Error::usage(format!("config.json: weight_block_size is {other}, not sizes"))),
        };
        let names: HashSet<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
        let mut scales = HashMap::new();
        for t in tensors {
            if let Some(weight) = t.name.strip_suffix(SCALES) {
                if !names.contains(weight) {
                    return Err(Error::usage(format!("scales of no weight: the checkpoint has no {weight}"))
                        .for_tensor(&t.name));
                }
                scales.insert(weight.to_string(), t.clone());
            }
        }
        Ok(Some(Fp8 { scales, block }))
    }

    /// Whether the converter drops `name`: scales (folded into their weights) and activation
    /// scales (unused).
    pub(crate) fn drops(&self, name: &str) -> bool {
        name.ends_with(SCALES) || name.ends_with(".activation_scale") || name.ends_with("_activation_scale")
    }

    /// The scales of the weight `name`, when it has some.
    pub(crate) fn scales_of(&self, name: &str) -> Option<Scales> {
        self.scales.get(name).map(|t| Scales { tensor: t.clone(), block: self.block.clone() })
    }
}

/// `weight` (of `shape`) multiplied in place by `scale` (of `scale_shape`) as the converter
/// dequantizes it: each scale repeated over its block (`block`, for the trailing dimensions of
/// the scales), the result cut to the weight's shape, dimensions the scales lack broadcast.
/// Scales that do not cover the weight so are refused.
pub(crate) fn dequantize(
    weight: &mut [f32],
    shape: &[u64],
    scale: &[f32],
    scale_shape: &[u64],
    block: Option<&[u64]>,
) -> Result<()> {
    let n = shape.len();
    let mismatch = || {
        Error::usage(format!(
            "scales of shape {scale_shape:?} (blocks {block:?}) do not cover a weight of shape {shape:?}"
        ))
    };
    // With blocks, the converter cuts the scales along every dimension of the weight.
    let dims_fit = if block.is_some() { scale_shape.len() == n } else { scale_shape.len() <= n };
    if !dims_fit || block.is_some_and(|b| b.len() > scale_shape.len()) {
        return Err(mismatch());
    }
    // Per weight dimension: the block a scale covers, and whether the scales broadcast over it.
    let mut blocks = vec![1u64; n];
    let mut broadcast = vec![true; n];
    let offset = scale_shape.len() - block.map_or(0, <[u64]>::len);
    for d in 0..scale_shape.len() {
        let b = match block {
            Some(b) if d >= offset => b[d - offset],
            _ => 1,
        };
        let repeated = scale_shape[d].checked_mul(b).ok_or_else(mismatch)?;
        // Repeated, then cut to the weight's extent when blocks are given.
        let extent = if block.is_some() { repeated.min(shape[d]) } else { repeated };
        if extent != shape[d] && extent != 1 {
            return Err(mismatch());
        }
        blocks[d] = b;
        broadcast[d] = extent == 1;
    }
    let count: u64 = scale_shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(mismatch)?;
    let elements: u64 = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(mismatch)?;
    if count != scale.len() as u64 || elements != weight.len() as u64 {
        return Err(mismatch());
    }
    // The scales' strides, their missing trailing dimensions of extent 1.
    let mut strides = vec![0u64; n];
    let mut stride = 1u64;
    for d in (0..scale_shape.len()).rev() {
        strides[d] = stride;
        stride *= scale_shape[d];
    }
    let mut index = vec![0u64; n];
    for value in weight.iter_mut() {
        let at: u64 = (0..n).filter(|&d| !broadcast[d]).map(|d| index[d] / blocks[d] * strides[d]).sum::<u64>();
        *value *= scale[at as usize];
        for d in (0..n).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensors(names: &[&str]) -> Vec<SourceTensor> {
        names.iter().enumerate().map(|(index, n)| SourceTensor { name: (*n).to_string(), part: 0, index }).collect()
    }

    fn hparams(config: Value) -> Map<String, Value> {
        serde_json::json!({ "quantization_config": config }).as_object().cloned().unwrap()
    }

    #[test]
    fn scales_are_found_by_their_weight_and_dropped_with_the_activation_scales() {
        let names = ["a.weight", "a.weight_scale_inv", "a.activation_scale", "b.weight"];
        let config = hparams(serde_json::json!({"quant_method": "fp8", "weight_block_size": [128, 128]}));
        let fp8 = Fp8::of(&config, &tensors(&names)).unwrap().unwrap();
        let scales = fp8.scales_of("a.weight").unwrap();
        assert_eq!((scales.tensor.name.as_str(), scales.block), ("a.weight_scale_inv", Some(vec![128, 128])));
        assert!(fp8.scales_of("b.weight").is_none());
        let dropped: Vec<bool> = names.iter().map(|n| fp8.drops(n)).collect();
        assert_eq!(dropped, [false, true, true, false]);
    }

    #[test]
    fn other_quantizations_and_scales_of_no_weight_are_refused() {
        let gptq = hparams(serde_json::json!({"quant_method": "gptq"}));
        let err = Fp8::of(&gptq, &tensors(&["a.qweight"])).err().unwrap();
        assert!(err.to_string().contains("gptq"), "{err}");
        let fp8 = hparams(serde_json::json!({"quant_method": "fp8"}));
        let err = Fp8::of(&fp8, &tensors(&["b.weight_scale_inv"])).err().unwrap();
        assert!(err.to_string().contains("b.weight"), "{err}");
        let bad_block = hparams(serde_json::json!({"quant_method": "fp8", "weight_block_size": [0, 128]}));
        assert!(Fp8::of(&bad_block, &[]).is_err());
        assert!(Fp8::of(&Map::new(), &tensors(&["a.weight"])).unwrap().is_none());
    }

    #[test]
    fn blocks_scale_their_part_of_the_weight_and_partial_blocks_are_cut() {
        // A 3 x 5 weight in blocks of 2 x 2: scales 2 x 3, the last row and column partial.
        let mut w = vec![1.0f32; 15];
        let scale = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        dequantize(&mut w, &[3, 5], &scale, &[2, 3], Some(&[2, 2])).unwrap();
        assert_eq!(w, [1., 1., 2., 2., 3., 1., 1., 2., 2., 3., 4., 4., 5., 5., 6.]);
    }

    #[test]
    fn scales_without_blocks_broadcast_per_row_or_whole() {
        let mut w = vec![1.0f32; 6];
        dequantize(&mut w, &[2, 3], &[2.0, 3.0], &[2], None).unwrap();
        assert_eq!(w, [2., 2., 2., 3., 3., 3.]);
        let mut w = vec![1.0f32; 6];
        dequantize(&mut w, &[2, 3], &[0.5], &[1], None).unwrap();
        assert_eq!(w, [0.5; 6]);
    }

    #[test]
    fn scales_that_do_not_cover_the_weight_are_refused() {
        let mut w = vec![1.0f32; 15];
        assert!(dequantize(&mut w, &[3, 5], &[1.0; 2], &[1, 2], Some(&[2, 2])).is_err());
        assert!(dequantize(&mut w, &[3, 5], &[1.0; 6], &[2, 3], Some(&[2, 2])).is_ok());
        assert!(dequantize(&mut w, &[3, 5], &[1.0; 5], &[2, 3], Some(&[2, 2])).is_err());
        assert!(dequantize(&mut w, &[3, 5], &[1.0; 5], &[5], None).is_err());
        assert!(dequantize(&mut w, &[3, 5], &[1.0; 6], &[2, 3], None).is_err());
        assert!(dequantize(&mut w, &[3, 5], &[1.0; 6], &[2, 3], Some(&[u64::MAX, 2])).is_err());
    }
}
