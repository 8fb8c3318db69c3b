//! The 2- and 3-bit i-quants: codes index rows of a codebook ([`super::grid_iq2`],
//! [`super::grid_iq3`]), each row of 8 or 4 magnitudes, with sign bits (stored, or an index
//! into ggml's even-parity sign patterns) and a half-precision scale refined per sub-block.
//!
//! The reference computes `(db * magnitude) * ±1`; here `db * (±magnitude)`, which is the same
//! bits: rounding is symmetric in sign, and a NaN `db` comes out of either product unchanged.

use super::grid_iq2::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
use super::grid_iq3::{IQ3S_GRID, IQ3XXS_GRID};
use super::{KSIGNS, each_block, f16_at, grid_byte, signed_magnitude, u16_at, u32_at};

/// The sub-block scale of the 2-bit types from a 4-bit field: `d * (0.5 + s) * 0.25`.
#[inline(always)]
fn db_iq2(d: f32, s: u32) -> f32 {
    d * (0.5 + s as f32) * 0.25
}

/// Eight values from a row of 8 magnitudes, negative where `signs` has its bit set.
#[inline(always)]
fn row8(v: &mut [f32], db: f32, row: u64, signs: u8) {
    for (k, v) in v.iter_mut().take(8).enumerate() {
        *v = db * signed_magnitude(grid_byte(row, k), signs >> k);
    }
}

/// IQ2_XXS (66 bytes: `d`, then 8 groups of two little-endian u32): the first holds four
/// 8-bit grid indices, the second four 7-bit sign indices and, on top, the 4-bit scale.
pub(super) fn iq2_xxs(blocks: &[u8], out: &mut [u8]) {
    each_block::<66, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for g in 0..8 {
            let at = 2 + 8 * g;
            let aux = u32_at(b, at + 4);
            let db = db_iq2(d, aux >> 28);
            for l in 0..4 {
                let row = IQ2XXS_GRID[usize::from(b[at + l])];
                let e = 32 * g + 8 * l;
                row8(&mut v[e..e + 8], db, row, KSIGNS[((aux >> (7 * l)) & 0x7F) as usize]);
            }
        }
    });
}

/// IQ2_XS (74 bytes: `d`, 32 little-endian u16 codes of a 9-bit grid index and a 7-bit sign
/// index, 8 bytes of 4-bit scales, one per 16 elements).
pub(super) fn iq2_xs(blocks: &[u8], out: &mut [u8]) {
    each_block::<74, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for j in 0..32 {
            let code = u16_at(b, 2 + 2 * j);
            let s = (b[66 + j / 4] >> (4 * ((j / 2) % 2))) & 0x0F;
            let row = IQ2XS_GRID[usize::from(code & 511)];
            row8(&mut v[8 * j..8 * j + 8], db_iq2(d, u32::from(s)), row, KSIGNS[usize::from(code >> 9)]);
        }
    });
}

/// IQ2_S (82 bytes: `d`, 32 index bytes, 32 sign bytes, 8 bytes of index high bits, 8 bytes
/// of 4-bit scales): row `j` is index `qs[j]` plus two high bits, one sign bit per element.
pub(super) fn iq2_s(blocks: &[u8], out: &mut [u8]) {
    each_block::<82, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for j in 0..32 {
            let high = (b[66 + j / 4] >> (2 * (j % 4))) & 3;
            let index = usize::from(b[2 + j]) | (usize::from(high) << 8);
            let s = (b[74 + j / 4] >> (4 * ((j / 2) % 2))) & 0x0F;
            row8(&mut v[8 * j..8 * j + 8], db_iq2(d, u32::from(s)), IQ2S_GRID[index], b[34 + j]);
        }
    });
}

/// IQ3_XXS (98 bytes: `d`, 64 grid indices, 8 little-endian u32 of four 7-bit sign indices and
/// a 4-bit scale): group `g` of 32 has scale `d * (0.5 + s) * 0.5`, sign pattern `l` covering
/// two rows of 4.
pub(super) fn iq3_xxs(blocks: &[u8], out: &mut [u8]) {
    each_block::<98, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for g in 0..8 {
            let aux = u32_at(b, 66 + 4 * g);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for l in 0..4 {
                let signs = KSIGNS[((aux >> (7 * l)) & 0x7F) as usize];
                let rows =
                    [IQ3XXS_GRID[usize::from(b[2 + 8 * g + 2 * l])], IQ3XXS_GRID[usize::from(b[3 + 8 * g + 2 * l])]];
                let e = 32 * g + 8 * l;
                for (k, v) in v[e..e + 8].iter_mut().enumerate() {
                    let magnitude = (rows[k / 4] >> (8 * (k % 4))) as u8;
                    *v = db * signed_magnitude(magnitude, signs >> k);
                }
            }
        }
    });
}

/// IQ3_S (110 bytes: `d`, 64 index bytes, 8 bytes of index high bits, 32 sign bytes, 4 bytes of
/// 4-bit scales): group `g` of 32 has scale `d * (1 + 2s)`, one sign bit per element.
pub(super) fn iq3_s(blocks: &[u8], out: &mut [u8]) {
    each_block::<110, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for g in 0..8 {
            let s = (b[106 + g / 2] >> (4 * (g % 2))) & 0x0F;
            let db = d * f32::from(1 + 2 * s);
            for r in 8 * g..8 * g + 8 {
                let high = (b[66 + r / 8] >> (r % 8)) & 1;
                let row = IQ3S_GRID[usize::from(b[2 + r]) | (usize::from(high) << 8)];
                let signs = b[74 + r / 2] >> (4 * (r % 2));
                for (k, v) in v[4 * r..4 * r + 4].iter_mut().enumerate() {
                    let magnitude = (row >> (8 * k)) as u8;
                    *v = db * signed_magnitude(magnitude, signs >> k);
                }
            }
        }
    });
}
