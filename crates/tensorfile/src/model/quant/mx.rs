//! Dequantization of OCP Microscaling (zTensor 2's `zt.mx/1`).

use crate::error::{Error, Result};
use crate::model::quant::MxQuant;

/// Dequantize `data` with one `scales` byte per block into `out`.
pub(crate) fn dequantize(m: &MxQuant, shape: &[u64], data: &[u8], scales: &[u8], out: &mut [u8]) -> Result<()> {
    let _ = (shape, data, scales, out);
    Err(Error::unsupported(format!("MX {} is not dequantized yet", m.element.name())))
}
