//! The 1-bit i-quants (IQ1_S, IQ1_M: rows of -1, 0, 1 from [`super::grid_iq1`] shifted by
//! ±1/8) and the 4-bit ones (IQ4_NL, IQ4_XS: nibbles through a non-linear table).

use super::grid_iq1::IQ1S_GRID;
use super::{each_block, f16_at, grid_byte, u16_at};

/// The shift of IQ1 rows: +1/8, or -1/8 where the row's flag is set.
const IQ1_DELTA: f32 = 0.125;

/// Eight values of an IQ1 row: `dl * (value + delta)`.
#[inline(always)]
fn iq1_row(v: &mut [f32], dl: f32, index: usize, delta: f32) {
    let row = IQ1S_GRID[index & 2047];
    for (k, v) in v.iter_mut().take(8).enumerate() {
        *v = dl * (f32::from(grid_byte(row, k) as i8) + delta);
    }
}

/// IQ1_S (50 bytes: `d`, 32 index bytes, 8 little-endian u16): u16 `g` holds the high 3 bits
/// of four indices, a 3-bit scale (`d * (2s + 1)`) and the sign of group `g`'s shift.
pub(super) fn iq1_s(blocks: &[u8], out: &mut [u8]) {
    each_block::<50, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        for g in 0..8 {
            let qh = u16_at(b, 34 + 2 * g);
            let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
            let delta = if qh & 0x8000 == 0 { IQ1_DELTA } else { -IQ1_DELTA };
            for l in 0..4 {
                let index = usize::from(b[2 + 4 * g + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
                let e = 32 * g + 8 * l;
                iq1_row(&mut v[e..e + 8], dl, index, delta);
            }
        }
    });
}

/// IQ1_M (56 bytes: 32 index bytes, 16 bytes of high bits and shift signs, 4 little-endian u16
/// of 3-bit scales whose top nibbles together are `d`): row `r` uses nibble `r % 2` of byte
/// `r / 2` (3 index bits and the shift sign) and scale `r / 2`, `d * (2s + 1)`.
pub(super) fn iq1_m(blocks: &[u8], out: &mut [u8]) {
    each_block::<56, 256>(blocks, out, |b, v| {
        let words = [u16_at(b, 48), u16_at(b, 50), u16_at(b, 52), u16_at(b, 54)];
        let d_bits = (words[0] >> 12) | ((words[1] & 0xF000) >> 8) | ((words[2] & 0xF000) >> 4) | (words[3] & 0xF000);
        let d = half::f16::from_bits(d_bits).to_f32();
        let mut dl = [0f32; 16];
        for (i, dl) in dl.iter_mut().enumerate() {
            *dl = d * f32::from(2 * ((words[i / 4] >> (3 * (i % 4))) & 7) + 1);
        }
        for r in 0..32 {
            let nibble = (b[32 + r / 2] >> (4 * (r % 2))) & 0x0F;
            let index = usize::from(b[r]) | (usize::from(nibble & 7) << 8);
            let delta = if nibble & 8 == 0 { IQ1_DELTA } else { -IQ1_DELTA };
            iq1_row(&mut v[8 * r..8 * r + 8], dl[r / 2], index, delta);
        }
    });
}

/// IQ4_NL's non-linear code values (ggml's `kvalues_iq4nl`).
const IQ4_VALUES: [f32; 16] =
    [-127., -104., -83., -65., -49., -35., -22., -10., 1., 13., 25., 38., 53., 69., 89., 113.];

/// Sixteen code bytes to 32 values `dl * value`: low nibbles first, then high.
#[inline(always)]
fn iq4_run(v: &mut [f32], dl: f32, qs: &[u8]) {
    for (j, &q) in qs.iter().take(16).enumerate() {
        v[j] = dl * IQ4_VALUES[usize::from(q & 0x0F)];
        v[j + 16] = dl * IQ4_VALUES[usize::from(q >> 4)];
    }
}

/// IQ4_NL (18 bytes: `d`, 16 code bytes).
pub(super) fn iq4_nl(blocks: &[u8], out: &mut [u8]) {
    each_block::<18, 32>(blocks, out, |b, v| iq4_run(v, f16_at(b, 0), &b[2..18]));
}

/// IQ4_XS (136 bytes: `d`, a little-endian u16 of 2-bit scale tops, 4 bytes of 4-bit scale
/// bottoms, 128 code bytes): sub-block `i` of 32 has scale `d * (s - 32)`.
pub(super) fn iq4_xs(blocks: &[u8], out: &mut [u8]) {
    each_block::<136, 256>(blocks, out, |b, v| {
        let d = f16_at(b, 0);
        let tops = u16_at(b, 2);
        for i in 0..8 {
            let low = (b[4 + i / 2] >> (4 * (i % 2))) & 0x0F;
            let high = ((tops >> (2 * i)) & 3) as u8;
            let dl = d * (i32::from(low | (high << 4)) - 32) as f32;
            iq4_run(&mut v[32 * i..32 * i + 32], dl, &b[8 + 16 * i..24 + 16 * i]);
        }
    });
}
