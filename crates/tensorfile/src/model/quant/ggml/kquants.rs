//! ggml's k-quants: super-blocks of 256 elements with a half-precision scale (and minimum)
//! and small per-sub-block scales, 2 to 6 bits a code; and Q8_K, ggml's intermediate type of
//! 256 signed bytes with a single-precision scale.

use super::{each_block, f16_at, f32_at};

/// Q2_K (84 bytes: 16 scale bytes, 64 code bytes, `d`, `dmin`): sub-block `s` of 16 is
/// `d * (sc & 15) * q - dmin * (sc >> 4)`; element `128h + 32s + j` is bits `2s` of code
/// byte `32h + j`.
pub(super) fn q2_k(blocks: &[u8], out: &mut [u8]) {
    each_block::<84, 256>(blocks, out, |b, v| {
        let (d, dmin) = (f16_at(b, 80), f16_at(b, 82));
        let mut dl = [0f32; 16];
        let mut ml = [0f32; 16];
        for i in 0..16 {
            dl[i] = d * f32::from(b[i] & 0x0F);
            ml[i] = dmin * f32::from(b[i] >> 4);
        }
        for h in 0..2 {
            for s in 0..4 {
                for j in 0..32 {
                    let e = 128 * h + 32 * s + j;
                    let q = (b[16 + 32 * h + j] >> (2 * s)) & 3;
                    v[e] = dl[e / 16] * f32::from(q) - ml[e / 16];
                }
            }
        }
    });
}

/// Q3_K (110 bytes: 32 high-bit bytes, 64 code bytes, 12 bytes of 6-bit scales, `d`):
/// sub-block `i` of 16 is `d * (scale - 32) * q`, `q` two low bits less 4 when the high bit
/// is clear.
pub(super) fn q3_k(blocks: &[u8], out: &mut [u8]) {
    each_block::<110, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 108);
        let scales = &b[96..108];
        let mut dl = [0f32; 16];
        for (i, dl) in dl.iter_mut().enumerate() {
            let low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
            let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
            *dl = d * (i32::from(low | (high << 4)) - 32) as f32;
        }
        let (hmask, qs) = (&b[0..32], &b[32..96]);
        for h in 0..2 {
            for s in 0..4 {
                let bit = 4 * h + s;
                for j in 0..32 {
                    let e = 128 * h + 32 * s + j;
                    let low = i32::from((qs[32 * h + j] >> (2 * s)) & 3);
                    let clear = i32::from(((hmask[j] >> bit) & 1) ^ 1);
                    v[e] = dl[e / 16] * (low - 4 * clear) as f32;
                }
            }
        }
    });
}

/// The eight 6-bit scales and minimums of Q4_K and Q5_K, packed in 12 bytes.
#[inline(always)]
pub(super) fn scales_mins(p: &[u8]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut mn = [0u8; 8];
    for j in 0..4 {
        sc[j] = p[j] & 0x3F;
        mn[j] = p[4 + j] & 0x3F;
        sc[4 + j] = (p[8 + j] & 0x0F) | ((p[j] >> 2) & 0x30);
        mn[4 + j] = (p[8 + j] >> 4) | ((p[4 + j] >> 2) & 0x30);
    }
    (sc, mn)
}

/// Q4_K (144 bytes: `d`, `dmin`, 12 scale bytes, 128 code bytes): sub-block `j` of 32 is
/// `d * sc * q - dmin * m`, in the low (even `j`) or high nibbles of code bytes `32 (j / 2)..`.
pub(super) fn q4_k(blocks: &[u8], out: &mut [u8]) {
    each_block::<144, 256>(blocks, out, |b, v| {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = scales_mins(&b[4..16]);
        let qs = &b[16..144];
        for j in 0..8 {
            let (dl, ml) = (d * f32::from(sc[j]), dmin * f32::from(mn[j]));
            let shift = 4 * (j % 2);
            for k in 0..32 {
                let q = (qs[32 * (j / 2) + k] >> shift) & 0x0F;
                v[32 * j + k] = dl * f32::from(q) - ml;
            }
        }
    });
}

/// Q5_K (176 bytes: `d`, `dmin`, 12 scale bytes, 32 fifth-bit bytes, 128 code bytes): as Q4_K,
/// with bit `j` of fifth-bit byte `k` on top of element `k` of sub-block `j`.
pub(super) fn q5_k(blocks: &[u8], out: &mut [u8]) {
    each_block::<176, 256>(blocks, out, |b, v| {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = scales_mins(&b[4..16]);
        let (qh, qs) = (&b[16..48], &b[48..176]);
        for j in 0..8 {
            let (dl, ml) = (d * f32::from(sc[j]), dmin * f32::from(mn[j]));
            let shift = 4 * (j % 2);
            for k in 0..32 {
                let q = ((qs[32 * (j / 2) + k] >> shift) & 0x0F) | (((qh[k] >> j) & 1) << 4);
                v[32 * j + k] = dl * f32::from(q) - ml;
            }
        }
    });
}

/// Q6_K (210 bytes: 128 low-nibble bytes, 64 high-bit bytes, 16 signed scales, `d`): sub-block
/// `i` of 16 is `d * scale * (q - 32)`. In each half `h`, byte `l` of the 32 high-bit bytes
/// tops elements `l`, `32 + l`, `64 + l`, `96 + l`, whose low nibbles are the low and high
/// nibbles of low-nibble bytes `l` and `32 + l`.
pub(super) fn q6_k(blocks: &[u8], out: &mut [u8]) {
    each_block::<210, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 208);
        let mut dl = [0f32; 16];
        for (i, dl) in dl.iter_mut().enumerate() {
            *dl = d * f32::from(b[192 + i] as i8);
        }
        for h in 0..2 {
            let (ql, qh) = (&b[64 * h..64 * h + 64], &b[128 + 32 * h..160 + 32 * h]);
            let (v, dl) = (&mut v[128 * h..128 * h + 128], &dl[8 * h..8 * h + 8]);
            for half in 0..2 {
                let dl = [dl[half], dl[2 + half], dl[4 + half], dl[6 + half]];
                for l in 16 * half..16 * half + 16 {
                    let (lo, hi, top) = (ql[l], ql[32 + l], qh[l]);
                    let q = [lo & 0x0F, hi & 0x0F, lo >> 4, hi >> 4];
                    for (k, q) in q.into_iter().enumerate() {
                        let q = i32::from(q | (((top >> (2 * k)) & 3) << 4)) - 32;
                        v[32 * k + l] = dl[k] * q as f32;
                    }
                }
            }
        }
    });
}

/// Q8_K (292 bytes: `d` as a little-endian `f32`, 256 signed bytes, 16 little-endian `i16`
/// sums of 16 codes that only ggml's dot products read): `d * q`, as ggml's
/// `dequantize_row_q8_K` (ggml's type traits give Q8_K no `to_float`; gguf-py does not know
/// the type).
pub(super) fn q8_k(blocks: &[u8], out: &mut [u8]) {
    each_block::<292, 256>(blocks, out, |b, v| {
        let d = f32_at(b, 0);
        for (v, &q) in v.iter_mut().zip(&b[4..260]) {
            *v = d * f32::from(q as i8);
        }
    });
}
