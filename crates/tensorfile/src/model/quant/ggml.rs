//! Dequantization of ggml's block types, bit for bit as gguf-py's `gguf.quants.dequantize`
//! (which mirrors ggml's reference code).

use crate::error::{Error, Result};
use crate::model::quant::GgmlType;

/// Whether `t` has a reference dequantization here.
pub(crate) fn can_dequantize(t: GgmlType) -> bool {
    let _ = t;
    false
}

/// Dequantize whole blocks of `t` into `out` (little-endian `f32`, 4 bytes per element).
pub(crate) fn dequantize(t: GgmlType, blocks: &[u8], out: &mut [u8]) -> Result<()> {
    let _ = (blocks, out);
    Err(Error::unsupported(format!("{} has no reference dequantization", t.name())))
}
