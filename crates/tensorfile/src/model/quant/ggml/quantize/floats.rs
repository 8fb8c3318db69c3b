//! The plain float types ggml_quantize_chunk also writes: F32 (copied), F16 (ggml's rounding,
//! NaN as `0x7E00`) and BF16 (ggml's reference rounding, NaN kept and made quiet).

use super::fp16;

/// F32: the values as they are, little-endian.
pub(super) fn f32_row(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    for (o, v) in out.chunks_exact_mut(4).zip(row) {
        o.copy_from_slice(&v.to_le_bytes());
    }
}

/// F16: each value through `GGML_FP32_TO_FP16`.
pub(super) fn f16_row(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    for (o, &v) in out.chunks_exact_mut(2).zip(row) {
        o.copy_from_slice(&fp16(v).to_le_bytes());
    }
}

/// ggml's `ggml_compute_fp32_to_bf16`: round to nearest even on the top 16 bits; a NaN keeps
/// its top bits with the quiet bit set.
#[inline(always)]
pub(super) fn bf16(f: f32) -> u16 {
    let i = f.to_bits();
    if i & 0x7fff_ffff > 0x7f80_0000 {
        return ((i >> 16) | 64) as u16;
    }
    (i.wrapping_add(0x7fff + ((i >> 16) & 1)) >> 16) as u16
}

/// BF16: each value through [`bf16`] (ggml_quantize_chunk uses the reference row conversion).
pub(super) fn bf16_row(row: &[f32], _importance: Option<&[f32]>, out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if super::super::simd::quantize_x86::bf16(row, out) {
        return;
    }
    bf16_row_scalar(row, out);
}

/// [`bf16_row`] in scalar code (the reference).
pub(in crate::model::quant::ggml) fn bf16_row_scalar(row: &[f32], out: &mut [u8]) {
    for (o, &v) in out.chunks_exact_mut(2).zip(row) {
        o.copy_from_slice(&bf16(v).to_le_bytes());
    }
}
