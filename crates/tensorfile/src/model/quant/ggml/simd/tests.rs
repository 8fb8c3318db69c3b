//! The SIMD kernels against the scalar ones, byte for byte and bit for bit, on random rows and
//! on the values where the two could part: NaN, infinities, subnormals, zeros of both signs,
//! huge values, ties at one half.

use super::quantize_x86 as q;
use super::search_x86 as search;
use crate::model::quant::ggml::quantize::legacy as scalar;

/// A small deterministic generator (xorshift).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values worth trying, alone or mixed into ordinary rows.
const SPECIAL: [f32; 24] = [
    0.0,
    -0.0,
    f32::NAN,
    -f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-40,
    -1e-40,
    1e-45,
    f32::MAX,
    -f32::MAX,
    4_194_304.0,
    -4_194_304.0,
    4_194_303.5,
    8_388_608.0,
    3e9,
    -3e9,
    0.5,
    -0.5,
    1.5,
    65504.0,
    65520.0,
];

/// Rows of 256 values: random ones at several scales, and rows made of the special values.
fn rows() -> Vec<Vec<f32>> {
    let mut r = Random(0x9E37_79B9_7F4A_7C15);
    let mut rows = Vec::new();
    for scale in [1e-30f32, 1e-6, 0.01, 1.0, 100.0, 1e6, 1e30] {
        for _ in 0..40 {
            rows.push((0..256).map(|_| (r.next() as i32 as f32 / 2_147_483_648.0) * scale).collect());
        }
    }
    // Whole blocks of one special value, and every special value among ordinary values.
    for &s in &SPECIAL {
        rows.push(vec![s; 256]);
        for _ in 0..8 {
            let mut row: Vec<f32> = (0..256).map(|_| (r.next() as i32 as f32 / 2_147_483_648.0) * 3.0).collect();
            for _ in 0..1 + r.below(6) {
                row[r.below(256)] = s;
            }
            rows.push(row);
        }
    }
    // Random mixes of special values only, and small integers (ties at one half after scaling).
    for _ in 0..200 {
        rows.push((0..256).map(|_| SPECIAL[r.below(SPECIAL.len())]).collect());
        rows.push((0..256).map(|_| r.below(33) as f32 - 16.0).collect());
        rows.push((0..256).map(|_| (r.below(511) as f32 - 255.0) * 0.5).collect());
    }
    // Ties between a value and its negation for the largest magnitude, zeros of both signs.
    let mut tie = vec![1.0f32; 256];
    for (i, v) in tie.iter_mut().enumerate() {
        *v = if i % 3 == 0 {
            -7.0
        } else if i % 5 == 0 {
            7.0
        } else {
            (i % 7) as f32
        };
    }
    rows.push(tie);
    rows.push((0..256).map(|i| if i % 2 == 0 { 0.0 } else { -0.0 }).collect());
    rows.push((0..256).map(|i| if i % 3 == 0 { -0.0 } else { 2.0 }).collect());
    rows.push((0..256).map(|i| if i % 3 == 0 { -0.0 } else { -2.0 }).collect());
    rows.push((0..256).map(|i| if i % 3 == 1 { 0.0 } else { -2.0 }).collect());
    rows
}

/// Whether this CPU has AVX2 (the SIMD kernels are tested where it does).
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Runs `simd` and the scalar block kernel on every row; the bytes must be equal.
fn same_bytes<const B: usize>(name: &str, simd: unsafe fn(&[f32], &mut [u8]), block: fn(&[f32; 32], &mut [u8; B])) {
    if !has_avx2() {
        return;
    }
    for (r, row) in rows().iter().enumerate() {
        let mut want = vec![0u8; row.len() / 32 * B];
        for (x, y) in row.chunks_exact(32).zip(want.chunks_exact_mut(B)) {
            block(x.try_into().unwrap(), y.try_into().unwrap());
        }
        let mut got = vec![0xA5u8; want.len()];
        // SAFETY: AVX2 was detected on this CPU above.
        unsafe { simd(row, &mut got) };
        for (b, (w, g)) in want.chunks_exact(B).zip(got.chunks_exact(B)).enumerate() {
            assert_eq!(w, g, "{name}, row {r}, block {b}: {:?}", &row[32 * b..32 * b + 32]);
        }
    }
}

#[test]
fn q4_0_is_the_scalar_kernel() {
    same_bytes::<18>("Q4_0", q::q4_0_avx2, scalar::q4_0_block);
}

#[test]
fn q4_1_is_the_scalar_kernel() {
    // SAFETY (of the call in same_bytes): the caller checked AVX2.
    same_bytes::<20>("Q4_1", |x, y| unsafe { q::q4_1_avx2(x, y, scalar::q4_1_block) }, scalar::q4_1_block);
}

#[test]
fn q5_0_is_the_scalar_kernel() {
    same_bytes::<22>("Q5_0", q::q5_0_avx2, scalar::q5_0_block);
}

#[test]
fn q5_1_is_the_scalar_kernel() {
    same_bytes::<24>("Q5_1", |x, y| unsafe { q::q5_1_avx2(x, y, scalar::q5_1_block) }, scalar::q5_1_block);
}

#[test]
fn q8_0_is_the_scalar_kernel() {
    same_bytes::<34>("Q8_0", |x, y| unsafe { q::q8_0_avx2(x, y, scalar::q8_0_block) }, scalar::q8_0_block);
}

/// Half-precision scales worth trying: NaNs (quiet, signalling, negative), infinities,
/// subnormals, zeros of both signs, the largest half.
const SPECIAL_HALVES: [u16; 12] =
    [0x7E00, 0x7C01, 0xFE00, 0x7D55, 0x7C00, 0xFC00, 0x0001, 0x8001, 0x0000, 0x8000, 0x7BFF, 0x3C00];

/// Runs the AVX2 kernel and the scalar one on blocks of random bytes, whose half-precision
/// scales (at `halves`) are random or special; the output bytes must be equal.
fn same_floats(
    name: &str,
    block_bytes: usize,
    elements: usize,
    halves: &[usize],
    simd: unsafe fn(&[u8], &mut [u8]),
    scalar: fn(&[u8], &mut [u8]),
) {
    if !has_avx2() {
        return;
    }
    let mut r = Random(0x2545_F491_4F6C_DD1D);
    let n = 2000;
    let mut blocks: Vec<u8> = (0..n * block_bytes).map(|_| r.next() as u8).collect();
    for block in blocks.chunks_exact_mut(block_bytes) {
        for &at in halves {
            let h = match r.below(4) {
                0 => SPECIAL_HALVES[r.below(SPECIAL_HALVES.len())],
                1 => (r.next() as u16 & 0x3FFF) | 0x2000, // ordinary magnitudes
                _ => r.next() as u16,
            };
            block[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
    }
    let mut want = vec![0u8; n * elements * 4];
    let mut got = vec![0x5Au8; want.len()];
    scalar(&blocks, &mut want);
    // SAFETY: AVX2 was detected on this CPU above.
    unsafe { simd(&blocks, &mut got) };
    for (b, (w, g)) in want.chunks_exact(elements * 4).zip(got.chunks_exact(elements * 4)).enumerate() {
        assert_eq!(w, g, "{name}, block {b}: {:02x?}", &blocks[b * block_bytes..(b + 1) * block_bytes]);
    }
}

mod dequantize {
    use super::super::super::{kquants, legacy};
    use super::super::dequantize_x86 as d;
    use super::same_floats;

    #[test]
    fn q4_0_is_the_scalar_kernel() {
        same_floats("Q4_0", 18, 32, &[0], d::q4_0_avx2, legacy::q4_0);
    }

    #[test]
    fn q4_1_is_the_scalar_kernel() {
        same_floats("Q4_1", 20, 32, &[0, 2], d::q4_1_avx2, legacy::q4_1);
    }

    #[test]
    fn q5_0_is_the_scalar_kernel() {
        same_floats("Q5_0", 22, 32, &[0], d::q5_0_avx2, legacy::q5_0);
    }

    #[test]
    fn q5_1_is_the_scalar_kernel() {
        same_floats("Q5_1", 24, 32, &[0, 2], d::q5_1_avx2, legacy::q5_1);
    }

    #[test]
    fn q8_0_is_the_scalar_kernel() {
        same_floats("Q8_0", 34, 32, &[0], d::q8_0_avx2, legacy::q8_0);
    }

    #[test]
    fn q2_k_is_the_scalar_kernel() {
        same_floats("Q2_K", 84, 256, &[80, 82], d::q2_k_avx2, kquants::q2_k);
    }

    #[test]
    fn q3_k_is_the_scalar_kernel() {
        same_floats("Q3_K", 110, 256, &[108], d::q3_k_avx2, kquants::q3_k);
    }

    #[test]
    fn q4_k_is_the_scalar_kernel() {
        same_floats("Q4_K", 144, 256, &[0, 2], d::q4_k_avx2, kquants::q4_k);
    }

    #[test]
    fn q5_k_is_the_scalar_kernel() {
        same_floats("Q5_K", 176, 256, &[0, 2], d::q5_k_avx2, kquants::q5_k);
    }

    #[test]
    fn q6_k_is_the_scalar_kernel() {
        same_floats("Q6_K", 210, 256, &[208], d::q6_k_avx2, kquants::q6_k);
    }
}

/// The lanes of `q3_16_groups` against ggml's one-group `make_q3_quants`: random groups at
/// several scales, groups with special values, ties, tiny groups (below `GROUP_MAX_EPS`).
#[test]
fn q3_groups_are_the_one_group_search() {
    use crate::model::quant::ggml::quantize::search::{GROUP_MAX_EPS, make_q3_quants};
    if !has_avx2() {
        return;
    }
    let mut r = Random(0x1234_5678_9ABC_DEF1);
    let extra = [1e-16f32, -1e-20, 3e38, -3e38];
    for round in 0..600 {
        let scale = [1e-17f32, 1e-6, 0.02, 1.0, 1e3, 1e30][round % 6];
        let mut xt = [[0f32; 16]; 16];
        for (i, row) in xt.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                *v = (r.next() as i32 as f32 / 2_147_483_648.0) * scale;
                if round % 5 == 0 && r.below(9) == 0 {
                    *v = if r.below(2) == 0 { SPECIAL[r.below(SPECIAL.len())] } else { extra[r.below(extra.len())] };
                }
                if round % 7 == 0 && k % 3 == 0 {
                    *v = (i as f32 - 8.0) * 0.25;
                }
                if round % 11 == 0 && k % 4 == 1 {
                    *v = (r.below(9) as f32 - 4.0) * 0.5;
                }
            }
        }
        if xt.iter().flatten().any(|v| v.is_nan()) {
            // Left to the scalar code (which NaN a sum keeps is the compiler's choice there).
            assert!(search::q3_16_groups(&xt, GROUP_MAX_EPS).is_none());
            xt.iter_mut().flatten().filter(|v| v.is_nan()).for_each(|v| *v = f32::INFINITY);
        }
        let mut scales = [0f32; 16];
        let mut levels = [[0i8; 16]; 16];
        for first in [0, 8] {
            // SAFETY: AVX2 was detected on this CPU above.
            let (s, l) = unsafe { search::q3_8_groups(&xt, first, GROUP_MAX_EPS) };
            scales[first..first + 8].copy_from_slice(&s);
            for (levels, l) in levels.iter_mut().zip(&l) {
                levels[first..first + 8].copy_from_slice(l);
            }
        }
        for k in 0..16 {
            let group: [f32; 16] = std::array::from_fn(|i| xt[i][k]);
            let mut want = [0i8; 16];
            let scale = make_q3_quants(4, &group, &mut want);
            assert_eq!(scale.to_bits(), scales[k].to_bits(), "round {round}, group {k}: {group:?}");
            let got: [i8; 16] = std::array::from_fn(|i| levels[i][k]);
            assert_eq!(want, got, "round {round}, group {k}: {group:?}");
        }
    }
}

/// The IQ4 candidate fits in lanes against the scalar ones, bit for bit: random sub-blocks
/// and weights, the candidates as IQ4_XS makes them, and special values among the inputs.
#[test]
fn iq4_fits_are_the_scalar_ones() {
    use crate::model::quant::ggml::quantize::nonlinear::{IQ4_VALUES, iq4_fits_scalar};
    if !has_avx2() {
        return;
    }
    let mut r = Random(0x0DDB_A11C_AFEB_ABE5);
    for round in 0..3000 {
        let scale = [1e-20f32, 1e-3, 0.02, 1.0, 1e4, 1e20][round % 6];
        let mut x: [f32; 32] = std::array::from_fn(|_| (r.next() as i32 as f32 / 2_147_483_648.0) * scale);
        if round % 4 == 0 {
            for _ in 0..1 + r.below(3) {
                x[r.below(32)] = SPECIAL[r.below(SPECIAL.len())];
            }
        }
        let weight: [f32; 32] = if round % 3 == 0 {
            std::array::from_fn(|j| x[j] * x[j])
        } else {
            std::array::from_fn(|_| (r.next() % 1000) as f32 / 100.0)
        };
        let max = x.iter().copied().fold(0f32, |m, v| if v.abs() > m.abs() { v } else { m });
        let v0 = f32::from(IQ4_VALUES[0]);
        let mut ids = [1.0 / (-max / v0); 16];
        for (id, itry) in ids[1..].iter_mut().zip(-7..=7) {
            *id = (itry + i32::from(IQ4_VALUES[0])) as f32 / max;
        }
        if round % 10 == 9 {
            ids[r.below(16)] = SPECIAL[r.below(SPECIAL.len())];
        }
        if x.iter().chain(&weight).chain(&ids).any(|v| v.is_nan()) {
            // Left to the scalar code (which NaN a sum keeps is the compiler's choice there).
            assert!(search::iq4_fits(&x, &weight, &ids, &IQ4_VALUES).is_none());
            continue;
        }
        let want = iq4_fits_scalar(&x, &weight, &ids);
        // SAFETY: AVX2 was detected on this CPU above.
        let got = unsafe { search::iq4_fits_avx2(&x, &weight, &ids, &IQ4_VALUES) };
        assert_eq!(want.0.map(f32::to_bits), got.0.map(f32::to_bits), "round {round}: {x:?} {ids:?}");
        assert_eq!(want.1.map(f32::to_bits), got.1.map(f32::to_bits), "round {round}: {x:?} {ids:?}");
    }
}

#[test]
fn mxfp4_is_the_scalar_kernel() {
    use crate::model::quant::ggml::quantize::nonlinear::mxfp4_block;
    same_bytes::<17>("MXFP4", q::mxfp4_avx2, mxfp4_block);
}

#[test]
fn ternary_digits_are_the_scalar_ones() {
    use crate::model::quant::ggml::quantize::nonlinear::ternary_scalar;
    if !has_avx2() {
        return;
    }
    for (r, row) in rows().iter().enumerate() {
        let x: &[f32; 256] = row[..256].try_into().unwrap();
        let want = ternary_scalar(x);
        // SAFETY: AVX2 was detected on this CPU above.
        let Some(got) = (unsafe { q::ternary_avx2(x) }) else {
            // Left to the scalar code: a NaN, or a product out of range.
            let id = if want.0 != 0.0 { 1.0 / want.0 } else { 0.0 };
            assert!(x.iter().any(|v| v.is_nan() || (v * id).abs() >= 2_147_483_648.0 || (v * id).is_nan()), "row {r}");
            continue;
        };
        assert_eq!(want.0.to_bits(), got.0.to_bits(), "row {r}");
        assert_eq!(want.1, got.1, "row {r}: {x:?}");
    }
}

#[test]
fn bf16_is_the_scalar_conversion() {
    use crate::model::quant::ggml::quantize::floats::bf16_row_scalar;
    if !has_avx2() {
        return;
    }
    let mut r = Random(0xB16B_00B5_0000_0001);
    let mut values: Vec<f32> = rows().concat();
    // Every kind of bit pattern: NaN payloads (signalling ones too), halfway cases.
    values.extend((0..100_000).map(|_| f32::from_bits(r.next() as u32)));
    values.extend((0..1000u32).map(|i| f32::from_bits(0x3F80_8000 + (i << 16))));
    values.extend([f32::from_bits(0x7F80_0001), f32::from_bits(0xFF80_0001), f32::from_bits(0x7FFF_FFFF)]);
    for len in [values.len(), values.len() - 3, 5] {
        let mut want = vec![0u8; 2 * len];
        let mut got = vec![0xA5u8; 2 * len];
        bf16_row_scalar(&values[..len], &mut want);
        // SAFETY: AVX2 was detected on this CPU above.
        unsafe { q::bf16_avx2(&values[..len], &mut got) };
        assert!(want == got, "BF16 of {len} values differs");
    }
}
