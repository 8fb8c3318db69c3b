//! Dequantization of OCP Microscaling (zTensor 2's `zt.mx/1`): elements in logical
//! (row-major) order, one E8M0 scale byte per block of `block_size` elements along `axis`.
//!
//! A value is `2^(scale - 127) × element`, computed in `f32` (exact but for overflow to
//! infinity). Elements decode as the OCP MX specification defines them: FP4 E2M1 (two a
//! byte, low nibble first), FP8 E4M3 (no infinities, `S.1111.111` NaN), FP8 E5M2 (IEEE-like)
//! and INT8 (two's complement with an implied scale of 2^-6, so 64 is 1.0). A scale byte of
//! `0xFF` is NaN: its whole block reads as NaN (`0x7FC00000`); a NaN element stays the NaN
//! its sign gives.

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::quant::{MxElement, MxQuant};

/// The quiet NaN a NaN scale gives every element of its block.
const NAN: f32 = f32::from_bits(0x7FC0_0000);

/// Dequantize `data` with one `scales` byte per block into `out`.
pub(crate) fn dequantize(m: &MxQuant, shape: &[u64], data: &[u8], scales: &[u8], out: &mut [u8]) -> Result<()> {
    let axis = usize::from(m.axis);
    let bad = |what: String| Err(Error::invalid(Rule::BadQuantization, what));
    let Some(&along) = shape.get(axis) else {
        return bad(format!("MX axis {axis} of a tensor with {} dimensions", shape.len()));
    };
    if m.block_size == 0 || along % m.block_size != 0 {
        return bad(format!("MX blocks of {} do not divide axis {axis} of {along}", m.block_size));
    }
    let to_usize = |v: u64| checked::to_usize(v, "MX extent");
    let (outer, inner) = (to_usize(checked::numel(&shape[..axis])?)?, to_usize(checked::numel(&shape[axis + 1..])?)?);
    let (along, block) = (to_usize(along)?, to_usize(m.block_size)?);
    let numel = out.len() / 4;
    let data_len = if m.element == MxElement::F4E2M1 { numel.div_ceil(2) } else { numel };
    let blocks = along / block;
    let scale_count = checked::mul(checked::mul(outer as u64, blocks as u64, "MX scales")?, inner as u64, "MX scales")?;
    if data.len() != data_len || scales.len() as u64 != scale_count || numel as u64 != checked::numel(shape)? {
        return bad(format!("MX parts of {} and {} bytes for {numel} elements", data.len(), scales.len()));
    }
    let table = element_table(m.element);
    let mut i = 0;
    let mut out = out.chunks_exact_mut(4);
    for o in 0..outer {
        for a in 0..along {
            let row = &scales[(o * blocks + a / block) * inner..][..inner];
            for (&s, o) in row.iter().zip(out.by_ref()) {
                let code = if m.element == MxElement::F4E2M1 { (data[i / 2] >> (4 * (i % 2))) & 0x0F } else { data[i] };
                o.copy_from_slice(&scaled(e8m0(s), table[usize::from(code)]).to_le_bytes());
                i += 1;
            }
        }
    }
    Ok(())
}

/// `2^(b - 127)`, NaN for `0xFF`.
pub(super) fn e8m0(b: u8) -> f32 {
    match b {
        0xFF => NAN,
        0 => f32::from_bits(0x0040_0000),
        b => f32::from_bits(u32::from(b) << 23),
    }
}

/// `scale × element`; a NaN scale gives [`NAN`], a NaN element itself.
#[inline(always)]
fn scaled(scale: f32, element: f32) -> f32 {
    if scale.is_nan() {
        NAN
    } else if element.is_nan() {
        element
    } else {
        scale * element
    }
}

/// The value of every code of an element type (16 used by FP4).
fn element_table(e: MxElement) -> [f32; 256] {
    let mut t = [0f32; 256];
    for (code, v) in t.iter_mut().enumerate() {
        let x = code as u8;
        *v = match e {
            MxElement::F4E2M1 => minifloat(x & 0x0F, 2, 1, 1, false),
            MxElement::F8E4M3 if x & 0x7F == 0x7F => f32::from_bits(NAN.to_bits() | (u32::from(x >> 7) << 31)),
            MxElement::F8E4M3 => minifloat(x, 4, 3, 7, false),
            MxElement::F8E5M2 => minifloat(x, 5, 2, 15, true),
            MxElement::Int8 => f32::from(x as i8) / 64.0,
        };
    }
    t
}

/// A small float of `ebits` exponent and `mbits` mantissa bits under a sign bit (exact in
/// `f32`); `ieee` gives the top exponent to infinity (mantissa 0) and NaN.
fn minifloat(x: u8, ebits: u32, mbits: u32, bias: i32, ieee: bool) -> f32 {
    let sign = if (x >> (ebits + mbits)) & 1 == 1 { -1.0f32 } else { 1.0 };
    let exp = (u32::from(x) >> mbits) & ((1 << ebits) - 1);
    let man = u32::from(x) & ((1 << mbits) - 1);
    let magnitude = if ieee && exp == (1 << ebits) - 1 {
        if man == 0 { f32::INFINITY } else { return f32::from_bits(NAN.to_bits() | (u32::from(sign < 0.0) << 31)) }
    } else if exp == 0 {
        man as f32 * 2f32.powi(1 - bias - mbits as i32)
    } else {
        (1.0 + man as f32 / (1 << mbits) as f32) * 2f32.powi(exp as i32 - bias)
    };
    sign * magnitude
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(element: MxElement, block_size: u64, axis: u8, shape: &[u64], data: &[u8], scales: &[u8]) -> Vec<u32> {
        let m = MxQuant { element, block_size, axis };
        let n = shape.iter().product::<u64>() as usize;
        let mut out = vec![0u8; 4 * n];
        dequantize(&m, shape, data, scales, &mut out).unwrap();
        out.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn fp4_elements_scale_by_a_power_of_two() {
        // Codes 0..8 then 8..16 (low nibble first), blocks of 8 with scales 1, 2, NaN, 2^-127.
        let data = [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, 0x10, 0x32, 0x54, 0x76, 0x10, 0x32, 0x54, 0x76];
        let got = run(MxElement::F4E2M1, 8, 0, &[32], &data, &[127, 128, 0xFF, 0]);
        let mut want = bits(&[0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        want.extend(bits(&[-0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0]));
        want.extend([0x7FC0_0000; 8]);
        // 2^-127 times 0, 0.5, 1, 1.5, 2, 3, 4, 6: subnormal up to 2^-126.
        want.extend([0, 0x0020_0000, 0x0040_0000, 0x0060_0000, 0x0080_0000, 0x00C0_0000, 0x0100_0000, 0x0140_0000]);
        assert_eq!(got, want);
    }

    #[test]
    fn fp8_elements_decode_as_ocp_defines_them() {
        let e4m3 = [0x00, 0x01, 0x08, 0x38, 0x7E, 0x7F, 0xB8, 0xFF];
        let got = run(MxElement::F8E4M3, 8, 0, &[8], &e4m3, &[128]);
        let want = [0.0, 2f32.powi(-8), 2f32.powi(-5), 2.0, 896.0, 0.0, -2.0, 0.0];
        let mut want = bits(&want);
        (want[5], want[7]) = (0x7FC0_0000, 0xFFC0_0000);
        assert_eq!(got, want);

        let e5m2 = [0x00, 0x01, 0x3C, 0x7B, 0x7C, 0x7D, 0xFC, 0xBE];
        let got = run(MxElement::F8E5M2, 8, 0, &[8], &e5m2, &[126]);
        let want = [0.0, 2f32.powi(-17), 0.5, 28672.0, f32::INFINITY, 0.0, f32::NEG_INFINITY, -0.75];
        let mut want = bits(&want);
        want[5] = 0x7FC0_0000;
        assert_eq!(got, want);
    }

    #[test]
    fn int8_elements_are_fixed_point_with_six_fraction_bits() {
        let data = [64u8, 0x80, 127, 0xFF];
        assert_eq!(run(MxElement::Int8, 2, 0, &[4], &data, &[127, 130]), bits(&[1.0, -2.0, 127.0 / 8.0, -1.0 / 8.0]));
    }

    #[test]
    fn blocks_run_along_their_axis() {
        // Shape [4, 2], blocks of 2 down axis 0: element (a, n) uses scale (a / 2) * 2 + n.
        let data = [64u8; 8];
        let got = run(MxElement::Int8, 2, 0, &[4, 2], &data, &[127, 128, 129, 130]);
        assert_eq!(got, bits(&[1.0, 2.0, 1.0, 2.0, 4.0, 8.0, 4.0, 8.0]));
        // The same codes blocked along axis 1: one scale per row.
        let got = run(MxElement::Int8, 2, 1, &[4, 2], &data, &[127, 128, 129, 130]);
        assert_eq!(got, bits(&[1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0]));
    }

    #[test]
    fn parts_that_do_not_fit_are_refused() {
        let m = MxQuant { element: MxElement::Int8, block_size: 2, axis: 0 };
        let err = dequantize(&m, &[4], &[0; 4], &[0; 3], &mut [0; 16]).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::BadQuantization));
        let m = MxQuant { element: MxElement::Int8, block_size: 3, axis: 0 };
        assert!(dequantize(&m, &[4], &[0; 4], &[0; 1], &mut [0; 16]).is_err());
    }
}
