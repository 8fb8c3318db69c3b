//! Recognition: real model heads are taken, other formats' heads and text are not.

use super::looks_like;

/// The first bytes of a model as onnx writes it: ir_version 10, producer "pytorch" "2.5",
/// then the graph.
fn model_head() -> Vec<u8> {
    let mut b = vec![0x08, 10, 0x12, 7];
    b.extend_from_slice(b"pytorch");
    b.extend_from_slice(&[0x1a, 3]);
    b.extend_from_slice(b"2.5");
    b.extend_from_slice(&[0x3a, 0x80, 0x01, 0x0a]);
    b
}

#[test]
fn a_model_head_is_recognised() {
    assert!(looks_like(&model_head()));
    // No producer at all: ir_version, then the graph.
    assert!(looks_like(&[0x08, 7, 0x3a, 5, 0x0a, 3, 0x0a, 1, 0x78]));
    // A graph whose first field is no GraphProto field, or longer than the graph.
    assert!(!looks_like(&[0x08, 7, 0x3a, 5, 0x18, 3, 0x0a, 1, 0x78]));
    assert!(!looks_like(&[0x08, 7, 0x3a, 5, 0x0a, 9, 0x0a, 1, 0x78]));
    // A doc string longer than the head.
    let mut long = vec![0x08, 9, 0x32, 0x90, 0x03];
    long.extend(std::iter::repeat_n(b'x', 59));
    assert!(looks_like(&long));
}

#[test]
fn other_heads_are_not() {
    let cases: [&[u8]; 9] = [
        b"",
        b"hello world, this is a plain text file with words",
        b"{\"__metadata__\": {}}",
        b"GGUF\x03\x00\x00\x00",
        b"PK\x03\x04\x14\x00\x00\x00",
        // ir_version 0, and one past the limit.
        &[0x08, 0x00, 0x3a, 0x01, 0x00],
        &[0x08, 0x41, 0x3a, 0x01, 0x00],
        // Fields out of order: opset_import (8) before the graph.
        &[0x08, 0x07, 0x42, 0x02, 0x08, 0x01, 0x3a, 0x01, 0x00],
        // A safetensors header length whose first byte is 0x08.
        &[0x08, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, b'{', b'"'],
    ];
    for c in cases {
        assert!(!looks_like(c), "{c:?}");
    }
    // A producer name that is not UTF-8.
    assert!(!looks_like(&[0x08, 0x07, 0x12, 0x02, 0xff, 0xfe, 0x3a, 0x01, 0x00]));
    // Every short head of the model but the whole is no model.
    let head = model_head();
    assert!(!looks_like(&head[..3]));
}

#[test]
fn random_bytes_are_not_taken_for_models() {
    // A fixed generator: 100,000 heads of 64 bytes, some starting with 0x08.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut taken = 0;
    for i in 0..100_000 {
        let mut head = [0u8; 64];
        for b in &mut head {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        if i % 2 == 0 {
            head[0] = 0x08;
        }
        taken += usize::from(looks_like(&head));
    }
    assert!(taken <= 8, "{taken} random heads taken for ONNX models");
}
