//! AVX2 dequantization of the most used types: the 32-element blocks (Q4_0, Q4_1, Q5_0, Q5_1,
//! Q8_0) and the k-quants (Q2_K to Q6_K). Codes are unpacked as bytes 32 at a time, widened
//! to eight `i32` and converted exactly; each value is then the scalar kernel's product (and
//! sum or difference) with the same operands in the same order, so the floats are the scalar
//! kernel's bit for bit, NaN payloads included (`add_keeping_nan` pins the operand the scalar
//! `add` pins). Per-block scales are computed by the scalar code's own expressions.

// From Rust 1.87 the arithmetic intrinsics are safe to call in functions that enable their
// feature; the `unsafe` blocks around them keep the workspace's rust-version (1.85) building.
#![allow(unused_unsafe)]

use std::arch::x86_64::*;

use super::super::{Kernel, f16_at, kquants, legacy, u32_at};
use crate::model::quant::GgmlType;

/// The AVX2 kernel of `t`, where there is one (callers check [`super::avx2`] first: the kernels
/// check again and run the scalar code where AVX2 does not run).
pub(in crate::model::quant::ggml) fn kernel(t: GgmlType) -> Option<Kernel> {
    use GgmlType::*;
    Some(match t {
        Q4_0 => q4_0,
        Q4_1 => q4_1,
        Q5_0 => q5_0,
        Q5_1 => q5_1,
        Q8_0 => q8_0,
        Q2_K => q2_k,
        Q3_K => q3_k,
        Q4_K => q4_k,
        Q5_K => q5_k,
        Q6_K => q6_k,
        _ => return None,
    })
}

/// The safe kernels: the AVX2 one where it runs, the scalar one elsewhere.
macro_rules! dispatch {
    ($($name:ident: $avx2:ident or $scalar:path;)*) => {$(
        fn $name(blocks: &[u8], out: &mut [u8]) {
            if super::avx2() {
                // SAFETY: AVX2 was detected on this CPU.
                unsafe { $avx2(blocks, out) }
            } else {
                $scalar(blocks, out)
            }
        }
    )*};
}

dispatch! {
    q4_0: q4_0_avx2 or legacy::q4_0;
    q4_1: q4_1_avx2 or legacy::q4_1;
    q5_0: q5_0_avx2 or legacy::q5_0;
    q5_1: q5_1_avx2 or legacy::q5_1;
    q8_0: q8_0_avx2 or legacy::q8_0;
    q2_k: q2_k_avx2 or kquants::q2_k;
    q3_k: q3_k_avx2 or kquants::q3_k;
    q4_k: q4_k_avx2 or kquants::q4_k;
    q5_k: q5_k_avx2 or kquants::q5_k;
    q6_k: q6_k_avx2 or kquants::q6_k;
}

/// The `B`-byte blocks of `blocks` with the `4 * N` bytes of output each.
#[inline(always)]
fn each<'a, const B: usize, const N: usize>(
    blocks: &'a [u8],
    out: &'a mut [u8],
) -> impl Iterator<Item = (&'a [u8; B], &'a mut [u8])> {
    blocks.chunks_exact(B).zip(out.chunks_exact_mut(4 * N)).filter_map(|(b, o)| Some((b.try_into().ok()?, o)))
}

/// Q4_0: `d * (q - 8)`.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q4_0_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<18, 32>(blocks, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let d = _mm256_set1_ps(f16_at(b, 0));
            let (low, high) = nibbles(load16(b, 2));
            let eight = _mm_set1_epi8(8);
            let (low, high) = (_mm_sub_epi8(low, eight), _mm_sub_epi8(high, eight));
            for (at, q) in [(0, low), (8, half(low)), (16, high), (24, half(high))] {
                store(o, at, _mm256_mul_ps(d, widen_i8(q)));
            }
        }
    }
}

/// Q4_1: `d * q + m`.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q4_1_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<20, 32>(blocks, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let (d, m) = (_mm256_set1_ps(f16_at(b, 0)), _mm256_set1_ps(f16_at(b, 2)));
            let (low, high) = nibbles(load16(b, 4));
            for (at, q) in [(0, low), (8, half(low)), (16, high), (24, half(high))] {
                store(o, at, add_keeping_nan(_mm256_mul_ps(d, widen_u8(q)), m));
            }
        }
    }
}

/// Q5_0: `d * (q - 16)`.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q5_0_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<22, 32>(blocks, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let d = _mm256_set1_ps(f16_at(b, 0));
            let codes = five_bit_codes(load16(b, 6), u32_at(b, 2));
            let sixteen = _mm256_set1_epi32(16);
            for (at, q) in codes.into_iter().enumerate() {
                store(o, 8 * at, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(q, sixteen))));
            }
        }
    }
}

/// Q5_1: `d * q + m`.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q5_1_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<24, 32>(blocks, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let (d, m) = (_mm256_set1_ps(f16_at(b, 0)), _mm256_set1_ps(f16_at(b, 2)));
            let codes = five_bit_codes(load16(b, 8), u32_at(b, 4));
            for (at, q) in codes.into_iter().enumerate() {
                store(o, 8 * at, add_keeping_nan(_mm256_mul_ps(d, _mm256_cvtepi32_ps(q)), m));
            }
        }
    }
}

/// Q8_0: `q * d`.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q8_0_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<34, 32>(blocks, out) {
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let d = _mm256_set1_ps(f16_at(b, 0));
            for at in [0, 8, 16, 24] {
                store(o, at, _mm256_mul_ps(widen_i8(load8(b, 2 + at)), d));
            }
        }
    }
}

/// Q2_K: `dl * q - ml` by sub-block of 16.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q2_k_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<84, 256>(blocks, out) {
        let (d, dmin) = (f16_at(b, 80), f16_at(b, 82));
        let mut dl = [0f32; 16];
        let mut ml = [0f32; 16];
        for i in 0..16 {
            dl[i] = d * f32::from(b[i] & 0x0F);
            ml[i] = dmin * f32::from(b[i] >> 4);
        }
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            for h in 0..2 {
                let codes = load32(b, 16 + 32 * h);
                for s in 0..4 {
                    let q = _mm256_and_si256(shift_right(codes, 2 * s), _mm256_set1_epi8(3));
                    let sub = 8 * h + 2 * s;
                    for (k, q) in quarters(q).into_iter().enumerate() {
                        let (dl, ml) = (_mm256_set1_ps(dl[sub + k / 2]), _mm256_set1_ps(ml[sub + k / 2]));
                        store(o, 128 * h + 32 * s + 8 * k, _mm256_sub_ps(_mm256_mul_ps(dl, widen_u8(q)), ml));
                    }
                }
            }
        }
    }
}

/// Q3_K: `dl * (low - 4 * clear)` by sub-block of 16.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q3_k_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<110, 256>(blocks, out) {
        let d = f16_at(b, 108);
        let scales = &b[96..108];
        let mut dl = [0f32; 16];
        for (i, dl) in dl.iter_mut().enumerate() {
            let low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
            let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
            *dl = d * (i32::from(low | (high << 4)) - 32) as f32;
        }
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let hmask = load32(b, 0);
            let (one, three) = (_mm256_set1_epi8(1), _mm256_set1_epi8(3));
            for h in 0..2 {
                let codes = load32(b, 32 + 32 * h);
                for s in 0..4 {
                    let low = _mm256_and_si256(shift_right(codes, 2 * s), three);
                    let clear = _mm256_xor_si256(_mm256_and_si256(shift_right(hmask, 4 * h + s), one), one);
                    // 0 or 4 in each byte: nothing crosses into the next byte.
                    let q = _mm256_sub_epi8(low, _mm256_slli_epi16::<2>(clear));
                    let sub = 8 * h + 2 * s;
                    for (k, q) in quarters(q).into_iter().enumerate() {
                        let dl = _mm256_set1_ps(dl[sub + k / 2]);
                        store(o, 128 * h + 32 * s + 8 * k, _mm256_mul_ps(dl, widen_i8(q)));
                    }
                }
            }
        }
    }
}

/// Q4_K: `dl * q - ml` by sub-block of 32.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q4_k_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<144, 256>(blocks, out) {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = kquants::scales_mins(&b[4..16]);
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            for j in 0..8 {
                let (dl, ml) = (_mm256_set1_ps(d * f32::from(sc[j])), _mm256_set1_ps(dmin * f32::from(mn[j])));
                let codes = load32(b, 16 + 32 * (j / 2));
                let q = _mm256_and_si256(shift_right(codes, 4 * (j % 2)), _mm256_set1_epi8(0x0F));
                for (k, q) in quarters(q).into_iter().enumerate() {
                    store(o, 32 * j + 8 * k, _mm256_sub_ps(_mm256_mul_ps(dl, widen_u8(q)), ml));
                }
            }
        }
    }
}

/// Q5_K: as Q4_K, with a fifth bit.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q5_k_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<176, 256>(blocks, out) {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = kquants::scales_mins(&b[4..16]);
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let qh = load32(b, 16);
            for j in 0..8 {
                let (dl, ml) = (_mm256_set1_ps(d * f32::from(sc[j])), _mm256_set1_ps(dmin * f32::from(mn[j])));
                let codes = load32(b, 48 + 32 * (j / 2));
                let low = _mm256_and_si256(shift_right(codes, 4 * (j % 2)), _mm256_set1_epi8(0x0F));
                let fifth = _mm256_and_si256(shift_right(qh, j), _mm256_set1_epi8(1));
                // 0 or 16 in each byte: nothing crosses into the next byte.
                let q = _mm256_or_si256(low, _mm256_slli_epi16::<4>(fifth));
                for (k, q) in quarters(q).into_iter().enumerate() {
                    store(o, 32 * j + 8 * k, _mm256_sub_ps(_mm256_mul_ps(dl, widen_u8(q)), ml));
                }
            }
        }
    }
}

/// Q6_K: `dl * (q - 32)` by sub-block of 16.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q6_k_avx2(blocks: &[u8], out: &mut [u8]) {
    for (b, o) in each::<210, 256>(blocks, out) {
        let d = f16_at(b, 208);
        let mut dl = [0f32; 16];
        for (i, dl) in dl.iter_mut().enumerate() {
            *dl = d * f32::from(b[192 + i] as i8);
        }
        // SAFETY: AVX2 is enabled for this function (the caller's promise); loads and stores
        // check their bounds.
        unsafe {
            let (mask, three, bias) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(3), _mm256_set1_epi8(32));
            for h in 0..2 {
                let (first, second) = (load32(b, 64 * h), load32(b, 64 * h + 32));
                let top = load32(b, 128 + 32 * h);
                let low = [
                    _mm256_and_si256(first, mask),
                    _mm256_and_si256(second, mask),
                    _mm256_and_si256(shift_right(first, 4), mask),
                    _mm256_and_si256(shift_right(second, 4), mask),
                ];
                for (k, low) in low.into_iter().enumerate() {
                    let high = _mm256_and_si256(shift_right(top, 2 * k), three);
                    // At most 0x3F in each byte: nothing crosses into the next byte.
                    let q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16::<4>(high)), bias);
                    for (l, q) in quarters(q).into_iter().enumerate() {
                        let dl = _mm256_set1_ps(dl[8 * h + 2 * k + l / 2]);
                        store(o, 128 * h + 32 * k + 8 * l, _mm256_mul_ps(dl, widen_i8(q)));
                    }
                }
            }
        }
    }
}

/// `a + m` as the scalar `add`: where `a` is NaN, `a` itself (the compiler may swap the
/// operands of an addition, and x86 answers the first operand's NaN when both are NaN).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn add_keeping_nan(a: __m256, m: __m256) -> __m256 {
    _mm256_blendv_ps(_mm256_add_ps(a, m), a, _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a))
}

/// The 32 five-bit codes of a Q5 block as four vectors of eight: the nibbles of the 16 code
/// bytes (element `j` low, `j + 16` high) with bit `e` of `high` on top of element `e`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn five_bit_codes(codes: __m128i, high: u32) -> [__m256i; 4] {
    // SAFETY: AVX2 arithmetic, in functions that enable AVX2.
    unsafe {
        let (low, top) = nibbles(codes);
        let high = _mm256_set1_epi32(high as i32);
        let one = _mm256_set1_epi32(1);
        let mut q = [_mm256_setzero_si256(); 4];
        for (k, nibbles) in [low, half(low), top, half(top)].into_iter().enumerate() {
            let shifts = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * k as i32));
            let fifth = _mm256_and_si256(_mm256_srlv_epi32(high, shifts), one);
            q[k] = _mm256_or_si256(_mm256_cvtepu8_epi32(nibbles), _mm256_slli_epi32::<4>(fifth));
        }
        q
    }
}

/// The low and the high nibbles of 16 bytes, each as 16 bytes.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn nibbles(q: __m128i) -> (__m128i, __m128i) {
    let mask = _mm_set1_epi8(0x0F);
    (_mm_and_si128(q, mask), _mm_and_si128(_mm_srli_epi16::<4>(q), mask))
}

/// The bytes of each 16-bit lane shifted right by `n` (below 8): the caller masks away what
/// comes down from the byte above.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn shift_right(q: __m256i, n: usize) -> __m256i {
    _mm256_srl_epi16(q, _mm_cvtsi32_si128(n as i32))
}

/// Bytes 8..16 of `q` moved to 0..8.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn half(q: __m128i) -> __m128i {
    _mm_srli_si128::<8>(q)
}

/// 32 bytes as four groups of eight (each in the low 8 bytes).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn quarters(q: __m256i) -> [__m128i; 4] {
    let (low, high) = (_mm256_castsi256_si128(q), _mm256_extracti128_si256::<1>(q));
    // SAFETY: AVX2 arithmetic, in functions that enable AVX2.
    unsafe { [low, half(low), high, half(high)] }
}

/// The low 8 bytes of `q`, unsigned, as floats.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn widen_u8(q: __m128i) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q))
}

/// The low 8 bytes of `q`, signed, as floats.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn widen_i8(q: __m128i) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))
}

/// Bytes `at..at + 8` of `b` (in the low half).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load8(b: &[u8], at: usize) -> __m128i {
    let bytes = &b[at..at + 8];
    // SAFETY: the load reads the 8 bytes of `bytes`.
    unsafe { _mm_loadl_epi64(bytes.as_ptr().cast()) }
}

/// Bytes `at..at + 16` of `b`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load16(b: &[u8], at: usize) -> __m128i {
    let bytes = &b[at..at + 16];
    // SAFETY: the load reads the 16 bytes of `bytes`.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// Bytes `at..at + 32` of `b`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load32(b: &[u8], at: usize) -> __m256i {
    let bytes = &b[at..at + 32];
    // SAFETY: the load reads the 32 bytes of `bytes`.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// Eight floats as elements `at..at + 8` of a block's output (little-endian `f32` bytes).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store(o: &mut [u8], at: usize, v: __m256) {
    let bytes = &mut o[4 * at..4 * at + 32];
    // SAFETY: the store writes the 32 bytes of `bytes`, unaligned.
    unsafe { _mm256_storeu_ps(bytes.as_mut_ptr().cast(), v) }
}
