//! Dequantization of affine group quantization (zTensor 2's `zt.quant_group/1`).

use crate::error::{Error, Result};
use crate::model::quant::GroupQuant;

/// Dequantize `parts` (`data`, `scales`, then `zeros` when stored) into `out`.
pub(crate) fn dequantize(g: &GroupQuant, shape: &[u64], parts: &[&[u8]], out: &mut [u8]) -> Result<()> {
    let _ = (shape, parts, out);
    Err(Error::unsupported(format!("{}-bit group quantization is not dequantized yet", g.bits)))
}
