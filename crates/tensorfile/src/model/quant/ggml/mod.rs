//! Dequantization of ggml's block types, bit for bit as gguf-py's `gguf.quants.dequantize`
//! (which follows ggml's reference code); Q1_0, Q2_0 and Q8_K, which gguf-py does not know, as
//! ggml's own `dequantize_row_q1_0`, `dequantize_row_q2_0` and `dequantize_row_q8_K`. Q8_1 has
//! no dequantization in ggml at all. Quantization into these types is in [`quantize`].
//!
//! Every kernel decodes one block into `f32` values with the same floating-point operations,
//! in the same order, as the reference: that decides the rounding, and with special scales
//! (infinite, NaN, subnormal) which NaN comes out. Blocks are independent, so a large tensor
//! is split into runs of whole blocks decoded on several threads.

mod grid_iq1;
mod grid_iq2;
mod grid_iq3;
mod iq1_iq4;
mod iq2_iq3;
mod kquants;
mod legacy;
pub(crate) mod quantize;
// The one module of explicit SIMD (`std::arch` intrinsics behind run-time detection).
#[allow(unsafe_code)]
mod simd;
mod ternary_fp4;

use rayon::prelude::*;

use crate::error::{Error, Result, Rule};
use crate::model::quant::GgmlType;

/// Output larger than this is decoded on several threads.
const PARALLEL_ABOVE: usize = 1 << 20;
/// About this much output per task when decoding in parallel.
pub(crate) const TASK_BYTES: usize = 256 << 10;

/// Decodes a run of whole blocks into little-endian `f32` bytes.
type Kernel = fn(&[u8], &mut [u8]);

/// The kernel of `t`, or why there is none.
fn kernel(t: GgmlType) -> Result<Kernel> {
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        if let Some(kernel) = simd::dequantize_x86::kernel(t) {
            return Ok(kernel);
        }
    }
    scalar_kernel(t)
}

/// The scalar kernel of `t` (the reference the SIMD kernels match), or why there is none.
fn scalar_kernel(t: GgmlType) -> Result<Kernel> {
    use GgmlType::*;
    Ok(match t {
        Q4_0 => legacy::q4_0,
        Q4_1 => legacy::q4_1,
        Q5_0 => legacy::q5_0,
        Q5_1 => legacy::q5_1,
        Q8_0 => legacy::q8_0,
        Q1_0 => legacy::q1_0,
        Q2_0 => legacy::q2_0,
        Q2_K => kquants::q2_k,
        Q3_K => kquants::q3_k,
        Q4_K => kquants::q4_k,
        Q5_K => kquants::q5_k,
        Q6_K => kquants::q6_k,
        Q8_K => kquants::q8_k,
        IQ2_XXS => iq2_iq3::iq2_xxs,
        IQ2_XS => iq2_iq3::iq2_xs,
        IQ2_S => iq2_iq3::iq2_s,
        IQ3_XXS => iq2_iq3::iq3_xxs,
        IQ3_S => iq2_iq3::iq3_s,
        IQ1_S => iq1_iq4::iq1_s,
        IQ1_M => iq1_iq4::iq1_m,
        IQ4_NL => iq1_iq4::iq4_nl,
        IQ4_XS => iq1_iq4::iq4_xs,
        TQ1_0 => ternary_fp4::tq1_0,
        TQ2_0 => ternary_fp4::tq2_0,
        MXFP4 => ternary_fp4::mxfp4,
        NVFP4 => ternary_fp4::nvfp4,
        Q8_1 => {
            return Err(Error::unsupported(format!(
                "{} has no reference dequantization (ggml only makes its blocks, for its dot \
                 products: no to_float, no dequantize_row_q8_1): they can be copied but not read as floats",
                t.name()
            )));
        }
        F32 | F16 | BF16 | F64 | I8 | I16 | I32 | I64 => {
            return Err(Error::unsupported(format!("{} is a plain type, read as its dtype, not as blocks", t.name())));
        }
    })
}

/// Whether `t` has a reference dequantization here.
pub(crate) fn can_dequantize(t: GgmlType) -> bool {
    kernel(t).is_ok()
}

/// Dequantize whole blocks of `t` into `out` (little-endian `f32`, 4 bytes per element).
pub(crate) fn dequantize(t: GgmlType, blocks: &[u8], out: &mut [u8]) -> Result<()> {
    dequantize_on(t, blocks, out, out.len() > PARALLEL_ABOVE)
}

/// Dequantize whole blocks of `t` into `out` on this thread alone (the caller runs several).
pub(crate) fn dequantize_here(t: GgmlType, blocks: &[u8], out: &mut [u8]) -> Result<()> {
    dequantize_on(t, blocks, out, false)
}

/// `t`'s dequantization exists here: Ok, or the error [`dequantize`] gives for it whatever the
/// blocks (an empty tensor of a type without one included).
pub(crate) fn check_dequantizable(t: GgmlType) -> Result<()> {
    kernel(t).map(|_| ())
}

/// [`dequantize`], on several threads or on this one.
fn dequantize_on(t: GgmlType, blocks: &[u8], out: &mut [u8], parallel: bool) -> Result<()> {
    let kernel = kernel(t)?;
    // Both are at most a few hundred; the model's type table is the source.
    let (block_bytes, block_out) = (t.block_bytes() as usize, t.block_elements() as usize * 4);
    if blocks.len() % block_bytes != 0 || blocks.len() / block_bytes * block_out != out.len() {
        return Err(Error::invalid(
            Rule::BadQuantization,
            format!("{} bytes of {} blocks for {} output bytes", blocks.len(), t.name(), out.len()),
        ));
    }
    if parallel {
        let per_task = (TASK_BYTES / block_out).max(1);
        blocks
            .par_chunks(per_task * block_bytes)
            .zip(out.par_chunks_mut(per_task * block_out))
            .for_each(|(blocks, out)| kernel(blocks, out));
    } else {
        kernel(blocks, out);
    }
    Ok(())
}

/// Runs `decode` on every `B`-byte block of `blocks`, writing its `N` values to `out`.
#[inline(always)]
fn each_block<const B: usize, const N: usize>(blocks: &[u8], out: &mut [u8], decode: impl Fn(&[u8; B], &mut [f32; N])) {
    let mut values = [0f32; N];
    for (block, out) in blocks.chunks_exact(B).zip(out.chunks_exact_mut(4 * N)) {
        // Always a whole block: chunks_exact gives nothing shorter.
        let Ok(block) = <&[u8; B]>::try_from(block) else { return };
        decode(block, &mut values);
        for (o, v) in out.chunks_exact_mut(4).zip(&values) {
            o.copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// The IEEE half-precision float in bytes `at`, `at + 1` (little-endian), widened exactly.
#[inline(always)]
fn f16_at(block: &[u8], at: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([block[at], block[at + 1]])).to_f32()
}

/// The little-endian `u16` at `at`.
#[inline(always)]
fn u16_at(block: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([block[at], block[at + 1]])
}

/// The little-endian IEEE single-precision float at `at`, as stored (NaN payloads kept).
#[inline(always)]
fn f32_at(block: &[u8], at: usize) -> f32 {
    f32::from_bits(u32_at(block, at))
}

/// The little-endian `u32` at `at`.
#[inline(always)]
fn u32_at(block: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([block[at], block[at + 1], block[at + 2], block[at + 3]])
}

/// `magnitude` as `f32`, negative when bit 0 of `sign` is set.
#[inline(always)]
fn signed_magnitude(magnitude: u8, sign: u8) -> f32 {
    f32::from_bits(f32::from(magnitude).to_bits() | (u32::from(sign & 1) << 31))
}

/// ggml's sign patterns (`ksigns_iq2xs`): seven stored sign bits and an eighth that makes the
/// count of negative signs even.
const KSIGNS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = i as u8 | (((i as u32).count_ones() as u8 & 1) << 7);
        i += 1;
    }
    t
};

/// The byte of a grid row holding value `k`.
#[inline(always)]
fn grid_byte(row: u64, k: usize) -> u8 {
    (row >> (8 * k)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_patterns_have_an_even_count_of_negatives() {
        assert_eq!(KSIGNS[..4], [0x00, 0x81, 0x82, 0x03]);
        assert_eq!(KSIGNS[127], 0xFF);
        assert!(KSIGNS.iter().all(|s| s.count_ones() % 2 == 0));
    }

    #[test]
    fn signed_magnitudes_are_exact() {
        assert_eq!(signed_magnitude(43, 1), -43.0);
        assert_eq!(signed_magnitude(43, 2), 43.0);
        assert_eq!(signed_magnitude(0, 1).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn types_without_a_reference_refuse_clearly() {
        let t = GgmlType::Q8_1;
        assert!(!can_dequantize(t));
        let err = dequantize(t, &[], &mut []).unwrap_err();
        assert!(err.message().contains("no reference dequantization"), "{}", err.message());
        assert!(err.message().contains("no to_float"), "{}", err.message());
        let err = dequantize(t, &[0; 40], &mut [0; 128]).unwrap_err();
        assert!(err.message().contains("no reference dequantization"), "{}", err.message());
        assert!(!can_dequantize(GgmlType::F16));
        // Every other block type has its kernel.
        let missing: Vec<_> = GgmlType::ALL
            .iter()
            .filter(|t| t.is_quantized() && **t != GgmlType::Q8_1 && !can_dequantize(**t))
            .collect();
        assert!(missing.is_empty(), "no kernel: {missing:?}");
    }

    #[test]
    fn sizes_that_do_not_match_are_refused() {
        let err = dequantize(GgmlType::Q4_0, &[0; 17], &mut [0; 128]).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::BadQuantization));
        let err = dequantize(GgmlType::Q4_0, &[0; 18], &mut [0; 124]).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::BadQuantization));
    }

    #[test]
    fn several_threads_give_the_bytes_of_one() {
        // Blocks of every byte value, a few thousand of them, for every type with a kernel.
        for &t in GgmlType::ALL.iter().filter(|&&t| can_dequantize(t)) {
            let (bb, be) = (t.block_bytes() as usize, t.block_elements() as usize);
            let n = 3 * TASK_BYTES / (be * 4) + 7;
            let blocks: Vec<u8> = (0..n * bb).map(|i| (i * 131 + i / 7) as u8).collect();
            let mut one = vec![0; n * be * 4];
            let mut many = vec![1; n * be * 4];
            dequantize_on(t, &blocks, &mut one, false).unwrap();
            dequantize_on(t, &blocks, &mut many, true).unwrap();
            assert!(one == many, "{}: threads disagree", t.name());
        }
    }
}
