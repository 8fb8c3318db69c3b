//! Arguments that do not fit, types that cannot be quantized, and values no model holds: each
//! an error or a result, never a panic.

use super::*;
use crate::model::quant::GgmlType;

fn quantizable() -> impl Iterator<Item = GgmlType> {
    GgmlType::ALL.iter().copied().filter(|&t| can_quantize(t))
}

#[test]
fn arguments_that_do_not_fit_are_refused() {
    let t = GgmlType::Q4_K;
    let src = vec![0.5f32; 512];
    let mut out = vec![0u8; 288];
    let refused = |result: Result<()>, words: &str| {
        let err = result.unwrap_err();
        assert_eq!(err.rule(), Some(Rule::BadQuantization), "{}", err.message());
        assert!(err.message().contains("Q4_K") && err.message().contains(words), "{}", err.message());
    };
    // Values that are not whole rows, rows that are not whole blocks, rows of nothing.
    refused(quantize_rows(t, &src[..500], 256, None, &mut out), "not whole rows");
    refused(quantize_rows(t, &src, 100, None, &mut out), "whole blocks");
    refused(quantize_rows(t, &src, 0, None, &mut out), "0 elements");
    // Output too short, too long.
    refused(quantize_rows(t, &src, 256, None, &mut out[..287]), "output of 287");
    refused(quantize_rows(t, &src, 256, None, &mut vec![0u8; 289]), "output of 289");
    // Importance of the wrong length.
    refused(quantize_rows(t, &src, 256, Some(&[1.0; 255]), &mut out), "importance");
    refused(quantize_rows(t, &src, 256, Some(&[1.0; 512]), &mut out), "importance");
    assert!(quantize_rows(t, &src, 256, Some(&[1.0; 256]), &mut out).is_ok());
    assert!(quantize_rows(t, &src, 512, Some(&[1.0; 512]), &mut out).is_ok());
    // No rows at all is nothing to do.
    assert!(quantize_rows(t, &[], 256, None, &mut []).is_ok());
}

#[test]
fn row_sizes_are_whole_blocks() {
    assert_eq!(row_bytes(GgmlType::Q4_K, 4096), Some(16 * 144));
    assert_eq!(row_bytes(GgmlType::Q4_K, 4000), None);
    assert_eq!(row_bytes(GgmlType::Q2_0, 64), Some(18));
    assert_eq!(row_bytes(GgmlType::F16, 7), Some(14));
    assert_eq!(row_bytes(GgmlType::Q8_0, usize::MAX - 31), None);
    assert_eq!(row_bytes(GgmlType::Q8_0, 0), Some(0));
}

#[test]
fn types_ggml_does_not_quantize_are_unsupported() {
    for t in [GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::I8, GgmlType::I32, GgmlType::F64] {
        assert!(!can_quantize(t), "{}", t.name());
        let n = t.block_elements() as usize;
        let mut out = vec![0u8; t.block_bytes() as usize];
        let err = quantize_rows(t, &vec![0.0; n], n, None, &mut out).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::Unsupported), "{}", err.message());
        assert!(err.message().contains(t.name()), "{}", err.message());
    }
    // The grid types quantize through iq_grid; three of them need importance.
    for t in [GgmlType::IQ2_XXS, GgmlType::IQ2_S, GgmlType::IQ1_M] {
        assert!(can_quantize(t));
    }
    assert!(requires_importance(GgmlType::IQ2_XXS) && requires_importance(GgmlType::IQ1_S));
    assert!(!requires_importance(GgmlType::IQ1_M) && !requires_importance(GgmlType::Q4_K));
    assert_eq!(quantizable().count(), 28);
}

/// Deterministic bit patterns: every float, NaNs with payloads and infinities included.
fn hostile_values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|i| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            match i % 8 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => f32::MAX,
                4 => -f32::from_bits(1),
                _ => f32::from_bits((state >> 32) as u32),
            }
        })
        .collect()
}

/// Quantizes, or refuses by a rule where ggml would abort (the grid types on values that are
/// not finite) or where the type needs importance weights; never a panic.
fn quantizes_or_refuses(t: GgmlType, src: &[f32], n_per_row: usize, importance: Option<&[f32]>, out: &mut [u8]) {
    if let Err(e) = quantize_rows(t, src, n_per_row, importance, out) {
        let grid = super::kernel(t).is_err();
        assert!(grid || importance.is_none() && requires_importance(t), "{}: {}", t.name(), e.message());
        assert!(e.rule().is_some(), "{}: {}", t.name(), e.message());
    }
}

#[test]
fn any_value_quantizes_without_panicking() {
    let n_per_row = 512;
    for t in quantizable() {
        let size = row_bytes(t, n_per_row).unwrap();
        for (seed, importance) in [(1, None), (2, Some(hostile_values(n_per_row, 9))), (3, Some(vec![0.0; n_per_row]))]
        {
            let src = hostile_values(4 * n_per_row, seed);
            let mut out = vec![0u8; 4 * size];
            quantizes_or_refuses(t, &src, n_per_row, importance.as_deref(), &mut out);
        }
        // Every value the same non-finite or extreme one.
        for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, f32::from_bits(1), -0.0] {
            let mut out = vec![0u8; size];
            quantizes_or_refuses(t, &vec![v; n_per_row], n_per_row, Some(&vec![1.0; n_per_row]), &mut out);
            quantizes_or_refuses(t, &vec![v; n_per_row], n_per_row, None, &mut out);
        }
    }
}

#[test]
fn conversions_round_as_ggml_does() {
    // Half precision: ties to even, overflow to infinity, NaN to 0x7E00 with its sign.
    assert_eq!(fp16(1.0), 0x3C00);
    assert_eq!(fp16(65504.0), 0x7BFF);
    assert_eq!(fp16(65520.0), 0x7C00);
    assert_eq!(fp16(-f32::INFINITY), 0xFC00);
    assert_eq!(fp16(f32::from_bits(0xFFC0_0001)), 0xFE00);
    assert_eq!(fp16(1.0 + f32::EPSILON * 4096.0), 0x3C00); // halfway between two halves: even
    assert_eq!(fp16(1.0 + f32::EPSILON * 3.0 * 4096.0), 0x3C02);
    assert_eq!(fp16(f32::from_bits(0x3380_0000)), 0x0001); // 2^-24, the smallest subnormal
    assert_eq!(fp16(f32::from_bits(0x3300_0000)), 0x0000); // 2^-25, a tie: even
    for h in [0u16, 1, 0x3C00, 0x7BFF, 0x8001, 0x7C00, 0xFC00] {
        assert_eq!(fp16(fp16_to_f32(h)), h);
    }
    assert!(fp16_to_f32(0x7E00).is_nan());
    assert_eq!(floats::bf16(1.0), 0x3F80);
    assert_eq!(floats::bf16(f32::from_bits(0x3F80_8000)), 0x3F80); // tie: even
    assert_eq!(floats::bf16(f32::from_bits(0x3F81_8000)), 0x3F82);
    assert_eq!(floats::bf16(f32::from_bits(0x7F80_0001)), 0x7FC0); // signalling NaN made quiet
    // nearest_int: ties to even; truncation as x86 does it.
    assert_eq!((nearest_int(2.5), nearest_int(-2.5), nearest_int(3.5)), (2, -2, 4));
    assert_eq!(nearest_int(f32::NAN), 0);
    assert_eq!((truncate_i32(-1.9), truncate_i32(f32::NAN), truncate_i32(3e9)), (-1, i32::MIN, i32::MIN));
    // Truncation through the nearest integer, as Q4_0..Q5_1 take it, against x86's.
    let mut state = 7u64;
    for _ in 0..100_000 {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        // Any bits: every exponent alike, integers and halves among the larger ones.
        let v = f32::from_bits((state >> 32) as u32);
        if v.abs() < 4_194_304.0 {
            let r = nearest_int(v);
            let t = r - i32::from(v >= 0.0 && r as f32 > v) + i32::from(v < 0.0 && (r as f32) < v);
            assert_eq!(t, truncate_i32(v), "{v}");
        }
    }
    // (int) roundf: half away from zero, for every kind of value.
    for v in [0.5f32, -0.5, 1.5, -2.5, 0.499_999_97, -0.499_999_97, 8_388_607.5, -8_388_609.0, 2_147_483_520.0] {
        assert_eq!(round_i32(v), v.round() as i32, "{v}");
    }
    assert_eq!(
        (round_i32(-2_147_483_648.0), round_i32(f32::NAN), round_i32(f32::INFINITY)),
        (i32::MIN, i32::MIN, i32::MIN)
    );
}
