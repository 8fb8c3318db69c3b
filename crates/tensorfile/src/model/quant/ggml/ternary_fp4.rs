//! Ternary types (TQ1_0, TQ2_0: codes -1, 0, 1 with a half-precision scale) and the FP4 types
//! (MXFP4 with a power-of-two scale byte, NVFP4 with FP8 scales).

use super::{each_block, f16_at};

/// Powers of three: TQ1_0 packs five (or four) ternary digits a byte as a fixed-point fraction.
const POW3: [u8; 5] = [1, 3, 9, 27, 81];

/// Digit `pow = 3^p` of the byte `x`: the top of `x * 3^p` (mod 256), `(y * 3) >> 8`, less one
/// (in 16-bit arithmetic, which vectorizes).
#[inline(always)]
fn trit(x: u8, pow: u8) -> i32 {
    let y = (u16::from(x) * u16::from(pow)) & 0xFF;
    i32::from((y * 3) >> 8) - 1
}

/// TQ1_0 (54 bytes: 48 bytes of five digits, 4 bytes of four, `d`): `d * t`. Digit `p` of a
/// byte is the top of the byte times `3^p` (mod 256); elements run through the first 32
/// bytes for each `p`, then the next 16, then the last 4.
pub(super) fn tq1_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<54, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 52);
        for (p, &pow) in POW3.iter().enumerate() {
            for (v, &x) in v[32 * p..32 * p + 32].iter_mut().zip(&b[..32]) {
                *v = d * trit(x, pow) as f32;
            }
            for (v, &x) in v[160 + 16 * p..176 + 16 * p].iter_mut().zip(&b[32..48]) {
                *v = d * trit(x, pow) as f32;
            }
        }
        for (p, &pow) in POW3[..4].iter().enumerate() {
            for (v, &x) in v[240 + 4 * p..244 + 4 * p].iter_mut().zip(&b[48..52]) {
                *v = d * trit(x, pow) as f32;
            }
        }
    });
}

/// TQ2_0 (66 bytes: 64 code bytes, `d`): `d * (q - 1)`, element `128h + 32s + j` in bits `2s`
/// of byte `32h + j`.
pub(super) fn tq2_0(blocks: &[u8], out: &mut [u8]) {
    each_block::<66, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 64);
        for h in 0..2 {
            let v = &mut v[128 * h..128 * h + 128];
            for (j, &q) in b[32 * h..32 * h + 32].iter().enumerate() {
                v[j] = d * (i32::from(q & 3) - 1) as f32;
                v[32 + j] = d * (i32::from((q >> 2) & 3) - 1) as f32;
                v[64 + j] = d * (i32::from((q >> 4) & 3) - 1) as f32;
                v[96 + j] = d * (i32::from(q >> 6) - 1) as f32;
            }
        }
    });
}

/// E2M1 values, doubled (ggml's `kvalues_mxfp4`): the scales below are halved to match.
const E2M1_DOUBLED: [f32; 16] = [0., 1., 2., 3., 4., 6., 8., 12., 0., -1., -2., -3., -4., -6., -8., -12.];

/// Half of `2^(e - 127)`, as ggml widens an E8M0 scale for doubled E2M1 values
/// (`ggml_e8m0_to_fp32_half`): 255 is `2^127`, not NaN.
#[inline(always)]
fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 { 0x0020_0000u32 << e } else { u32::from(e - 1) << 23 };
    f32::from_bits(bits)
}

/// MXFP4 (17 bytes: an E8M0 scale, 16 code bytes): `scale * e2m1`, elements 0..16 in the low
/// nibbles, 16..32 in the high ones.
pub(super) fn mxfp4(blocks: &[u8], out: &mut [u8]) {
    each_block::<17, 32>(blocks, out, |b, v| {
        let d = e8m0_half(b[0]);
        for j in 0..16 {
            let q = b[1 + j];
            v[j] = d * E2M1_DOUBLED[usize::from(q & 0x0F)];
            v[j + 16] = d * E2M1_DOUBLED[usize::from(q >> 4)];
        }
    });
}

/// Half of an unsigned E4M3 scale (bias 7; the sign bit ignored), as gguf-py reads NVFP4's:
/// `0x00` and `0x7F` are zero, subnormals are `m * 2^-9`.
#[inline(always)]
fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let (exp, man) = (u32::from((x >> 3) & 0x0F), u32::from(x & 7));
    if exp == 0 {
        // m * 2^-9 / 2, exact.
        man as f32 * f32::from_bits(0x3A80_0000)
    } else {
        // (1 + m/8) * 2^(exp - 7) / 2: an exponent field of exp - 8 + 127.
        f32::from_bits(((exp + 119) << 23) | (man << 20))
    }
}

/// NVFP4 (36 bytes: four UE4M3 scales, 32 code bytes): 4 sub-blocks of 16, each
/// `scale * e2m1`, elements 0..8 in the low nibbles of its 8 bytes, 8..16 in the high ones.
pub(super) fn nvfp4(blocks: &[u8], out: &mut [u8]) {
    each_block::<36, 64>(blocks, out, |b, v| {
        for i in 0..4 {
            let d = ue4m3_half(b[i]);
            for k in 0..8 {
                let q = b[4 + 8 * i + k];
                v[16 * i + k] = d * E2M1_DOUBLED[usize::from(q & 0x0F)];
                v[16 * i + 8 + k] = d * E2M1_DOUBLED[usize::from(q >> 4)];
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_bytes_widen_as_ggml_reads_them() {
        assert_eq!(e8m0_half(127), 0.5);
        assert_eq!(e8m0_half(0).to_bits(), 0x0020_0000);
        assert_eq!(e8m0_half(1).to_bits(), 0x0040_0000);
        assert_eq!(e8m0_half(255), 2f32.powi(127));
        assert_eq!(ue4m3_half(0x38), 0.5); // exponent 7, mantissa 0: 1.0, halved
        assert_eq!(ue4m3_half(0x01), 2f32.powi(-10));
        assert_eq!(ue4m3_half(0x7E), 224.0);
        assert_eq!(ue4m3_half(0xFF), 240.0);
        assert_eq!(ue4m3_half(0x80), 0.0);
    }
}
