//! The first ggml types: 32 elements a block, one half-precision scale (and for `_1` types a
//! half-precision minimum), 4, 5 or 8 bits a code. Elements 0..16 of a 4- or 5-bit block sit
//! in the low nibbles of its code bytes, elements 16..32 in the high ones. And the 1- and
//! 2-bit blocks with one scale: Q1_0 (128 signs) and Q2_0 (64 two-bit codes).

use super::{each_block, f16_at, u32_at};

/// Q4_0 (18 bytes: `d`, 16 code bytes): `d * (q - 8)`.
pub(super) fn q4_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<18, 32>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for j in 0..16 {
            let q = b[2 + j];
            v[j] = d * (i32::from(q & 0x0F) - 8) as f32;
            v[j + 16] = d * (i32::from(q >> 4) - 8) as f32;
        }
    });
}

/// Q4_1 (20 bytes: `d`, `m`, 16 code bytes): `d * q + m`.
pub(super) fn q4_1(blocks: &[u8], out: &mut [u8]) {
    each_block::<20, 32>(blocks, out, |b, v| {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        for j in 0..16 {
            let q = b[4 + j];
            v[j] = add(d * f32::from(q & 0x0F), m);
            v[j + 16] = add(d * f32::from(q >> 4), m);
        }
    });
}

/// Q5_0 (22 bytes: `d`, 32 fifth bits as a little-endian u32, 16 code bytes): `d * (q - 16)`.
pub(super) fn q5_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<22, 32>(blocks, out, |b, v| {
        let (d, high) = (f16_at(b, 0), u32_at(b, 2));
        for j in 0..16 {
            let (lo, hi) = five_bits(b[6 + j], high, j);
            v[j] = d * (lo as i32 - 16) as f32;
            v[j + 16] = d * (hi as i32 - 16) as f32;
        }
    });
}

/// Q5_1 (24 bytes: `d`, `m`, fifth bits, 16 code bytes): `d * q + m`.
pub(super) fn q5_1(blocks: &[u8], out: &mut [u8]) {
    each_block::<24, 32>(blocks, out, |b, v| {
        let (d, m, high) = (f16_at(b, 0), f16_at(b, 2), u32_at(b, 4));
        for j in 0..16 {
            let (lo, hi) = five_bits(b[8 + j], high, j);
            v[j] = add(d * lo as f32, m);
            v[j + 16] = add(d * hi as f32, m);
        }
    });
}

/// Q8_0 (34 bytes: `d`, 32 signed bytes): `q * d`.
pub(super) fn q8_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<34, 32>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for (v, &q) in v.iter_mut().zip(&b[2..]) {
            *v = f32::from(q as i8) * d;
        }
    });
}

/// The 5-bit codes of elements `j` and `j + 16`: the nibbles of `byte` with their fifth bits.
#[inline(always)]
fn five_bits(byte: u8, high: u32, j: usize) -> (u32, u32) {
    let lo = u32::from(byte & 0x0F) | (((high >> j) & 1) << 4);
    let hi = u32::from(byte >> 4) | (((high >> (j + 16)) & 1) << 4);
    (lo, hi)
}

/// `a + m` as the reference adds on x86: when both are NaN, the NaN of `a`, the left operand
/// (pinned here, since the compiler may swap the operands of an addition).
#[inline(always)]
fn add(a: f32, m: f32) -> f32 {
    if a.is_nan() { a } else { a + m }
}

/// Q2_0 (18 bytes: `d`, 16 code bytes, element `4b + k` in bits `2k` of byte `b`):
/// `(q - 1) * d`, as ggml's `dequantize_row_q2_0` (gguf-py does not know the type).
pub(super) fn q2_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<18, 64>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for (j, v) in v.iter_mut().enumerate() {
            let q = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
            *v = (i32::from(q) - 1) as f32 * d;
        }
    });
}

/// Q1_0 (18 bytes: `d`, 16 bytes of signs, element `8b + k` in bit `k` of byte `b`): `d`
/// where the bit is set, `-d` where it is clear, as ggml's `dequantize_row_q1_0` (gguf-py does
/// not know the type). `-d` flips the sign bit alone, of a NaN too.
pub(super) fn q1_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<18, 128>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for (j, v) in v.iter_mut().enumerate() {
            *v = if (b[2 + j / 8] >> (j % 8)) & 1 == 1 { d } else { -d };
        }
    });
}
