//! Dequantizing in pieces (to `f32` values, or cast on the way to another float) gives the
//! very bits of dequantizing whole (then casting).

use super::{BLOCKS, GgmlType, Quant, dequantize, dequantize_as, dequantize_f32};
use crate::error::Rule;
use crate::model::{DType, TensorData, cast};
use crate::source::Bytes;

/// Deterministic bytes (every bit pattern, NaN and infinite scales included).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

fn ggml(t: GgmlType, blocks: Vec<u8>) -> (Quant, TensorData) {
    let q = Quant::Ggml(t);
    let data = TensorData::quantized(q.clone(), vec![(BLOCKS, Bytes::from_vec(blocks))]);
    (q, data)
}

#[test]
fn pieces_equal_the_whole_across_piece_boundaries() {
    // 1100 x 1024 elements: 4.3 MiB of floats, so more than one piece of 4 MiB.
    let shape = [1100u64, 1024];
    let numel = 1100 * 1024;
    for (seed, t) in [GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ4_NL].into_iter().enumerate() {
        let len = numel / t.block_elements() as usize * t.block_bytes() as usize;
        let (q, data) = ggml(t, noise(len, seed as u64 + 1));
        let whole = dequantize(&q, &shape, &data).unwrap();
        let pieces = dequantize_f32(&q, &shape, &data).unwrap();
        assert_eq!(pieces.len(), numel, "{}", t.name());
        let whole_bits = whole.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        assert!(whole_bits.eq(pieces.iter().map(|v| v.to_bits())), "{}: pieces differ from the whole", t.name());
    }
}

#[test]
fn parts_of_the_wrong_size_are_refused() {
    let shape = [4u64, 64];
    let len = 4 * 2 * GgmlType::Q8_0.block_bytes() as usize;
    for wrong in [len - 1, len + 34, 0] {
        let (q, data) = ggml(GgmlType::Q8_0, noise(wrong, 7));
        let err = dequantize_f32(&q, &shape, &data).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::BadQuantization), "{}", err.message());
    }
    let (q, data) = ggml(GgmlType::Q8_0, noise(len, 7));
    assert_eq!(dequantize_f32(&q, &shape, &data).unwrap().len(), 256);
    // A tensor of nothing is no values.
    let (q, data) = ggml(GgmlType::Q8_0, Vec::new());
    assert!(dequantize_f32(&q, &[0, 64], &data).unwrap().is_empty());
}

#[test]
fn dequantized_and_cast_in_pieces_is_the_cast_of_the_whole() {
    // 300 x 1024 elements: several tasks of every thread, and a last one shorter.
    let shape = [300u64, 1024];
    let numel = 300 * 1024;
    let types = [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::TQ2_0];
    for (seed, t) in types.into_iter().enumerate() {
        let len = numel / t.block_elements() as usize * t.block_bytes() as usize;
        let (q, data) = ggml(t, noise(len, seed as u64 + 11));
        let whole = dequantize(&q, &shape, &data).unwrap();
        for to in [DType::Float16, DType::BFloat16, DType::Float8E4M3Fn, DType::Float8E5M2] {
            let want = cast::cast(&whole, DType::Float32, to).unwrap();
            let got = dequantize_as(&q, &shape, &data, to).unwrap();
            assert!(*got == want[..], "{} to {to}: differs from the cast of the whole", t.name());
        }
    }
    // A tensor of nothing is nothing; a target no cast reaches is refused, naming it.
    let (q, data) = ggml(GgmlType::Q8_0, Vec::new());
    assert!(dequantize_as(&q, &[0, 64], &data, DType::Float16).unwrap().is_empty());
    let (q, data) = ggml(GgmlType::Q8_0, noise(34, 3));
    let e = dequantize_as(&q, &[32], &data, DType::Int8).unwrap_err();
    assert!(e.message().contains("int8"), "{}", e.message());
    // A type without a dequantization is refused as dequantize refuses it, even with no
    // blocks to decode (found by the gguf_read fuzz target).
    let (q, data) = ggml(GgmlType::Q8_1, Vec::new());
    let whole = dequantize(&q, &[0, 32], &data).unwrap_err();
    let as_f16 = dequantize_as(&q, &[0, 32], &data, DType::Float16).unwrap_err();
    assert_eq!(whole.message(), as_f16.message());
    // Blocks of the wrong size are refused as dequantize refuses them.
    let (q, data) = ggml(GgmlType::Q8_0, noise(33, 3));
    assert_eq!(dequantize_as(&q, &[32], &data, DType::Float16).unwrap_err().rule(), Some(Rule::BadQuantization));
}

#[test]
fn large_outputs_are_fresh_maps_the_holder_keeps_without_a_copy() {
    // 1 MiB of float32 and more: the output is an anonymous map, already written, and a
    // caller who makes it its own (a writable numpy array) gets that very memory.
    let shape = [512u64, 1024];
    let (q, data) = ggml(GgmlType::Q8_0, noise(512 * 32 * 34, 5));
    let out = dequantize(&q, &shape, &data).unwrap();
    let (address, len) = (out.as_ptr() as usize, out.len());
    assert!(!out.is_mapped());
    let private = out.into_private();
    assert_eq!((private.address(), private.len(), private.is_mapped()), (address, len, false));
}
