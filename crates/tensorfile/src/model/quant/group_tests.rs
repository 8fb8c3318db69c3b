//! The worked points of `zt.quant_group/1`, computed by hand, through
//! [`TensorData::to_dense`] (so that the parts are sized by the layout first).

use crate::model::quant::{BitOrder, GroupQuant, Quant, SCALES, ScaleForm, ZEROS, ZeroPoint};
use crate::model::{DATA, DType, TensorData};
use crate::source::Bytes;

fn f16s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn run(
    g: GroupQuant,
    shape: &[u64],
    data: Vec<u8>,
    scales: Vec<u8>,
    zeros: Option<Vec<u8>>,
) -> crate::Result<Vec<u32>> {
    let mut parts = vec![(DATA, Bytes::from_vec(data)), (SCALES, Bytes::from_vec(scales))];
    parts.extend(zeros.map(|z| (ZEROS, Bytes::from_vec(z))));
    let out = TensorData::quantized(Quant::Group(g), parts).to_dense(DType::Float32, shape)?;
    Ok(out.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|v| v.to_bits()).collect()
}

fn int4(order: BitOrder, word: DType, group_size: u64, axis: u8, form: ScaleForm, zero_point: ZeroPoint) -> GroupQuant {
    let scale_dtype = if form == ScaleForm::F16Factors { DType::Float16 } else { DType::Float32 };
    GroupQuant { bits: 4, group_size, axis, word, order, scale_form: form, scale_dtype, zero_point }
}

/// Shape [4, 2], groups of 2 down axis 0: element (a, n) has scale and zero (a / 2) * 2 + n.
/// Codes 1..7, 15; zeros 8, 0, 3, 1; scales 0.5, 2, 0.25, -1.
const AWQ_GPTQ_VALUES: [f32; 8] = [-3.5, 4.0, -2.5, 8.0, 0.5, -5.0, 1.0, -14.0];

#[test]
fn awq_int4_packs_codes_and_zeros_low_bits_first() {
    let zeros = ZeroPoint::Stored { packed: true, dtype: DType::UInt32 };
    let g = int4(BitOrder::LsbFirst, DType::UInt32, 2, 0, ScaleForm::F16Factors, zeros);
    let data = 0xF765_4321u32.to_le_bytes().to_vec();
    let zeros = 0x0000_1308u32.to_le_bytes().to_vec();
    let got = run(g, &[4, 2], data, f16s(&[0.5, 2.0, 0.25, -1.0]), Some(zeros)).unwrap();
    assert_eq!(got, bits(&AWQ_GPTQ_VALUES));
}

#[test]
fn gptq_int4_packs_codes_and_zeros_high_bits_first() {
    // In signed words too (torch stores GPTQ's as int32): 4-bit fields stay unsigned.
    for word in [DType::UInt32, DType::Int32] {
        let zeros = ZeroPoint::Stored { packed: true, dtype: word };
        let g = int4(BitOrder::MsbFirst, word, 2, 0, ScaleForm::F16Factors, zeros);
        let data = 0x1234_567Fu32.to_le_bytes().to_vec();
        let zeros = 0x8031_0000u32.to_le_bytes().to_vec();
        let got = run(g, &[4, 2], data, f16s(&[0.5, 2.0, 0.25, -1.0]), Some(zeros)).unwrap();
        assert_eq!(got, bits(&AWQ_GPTQ_VALUES), "{word}");
    }
}

#[test]
fn mlx_affine_int4_has_one_plain_zero_per_group() {
    // Shape [2, 8], groups of 4 along axis 1: scales and zeros (row, group).
    let zeros = ZeroPoint::Stored { packed: false, dtype: DType::Float16 };
    let g = int4(BitOrder::LsbFirst, DType::UInt32, 4, 1, ScaleForm::F16Factors, zeros);
    let data = [0x7654_3210u32, 0xBA98_CDEF].iter().flat_map(|w| w.to_le_bytes()).collect();
    let got = run(g, &[2, 8], data, f16s(&[1.0, 0.5, 2.0, -0.25]), Some(f16s(&[0.5, 8.0, 7.5, 0.0]))).unwrap();
    let want = [-0.5, 0.5, 1.5, 2.5, -2.0, -1.5, -1.0, -0.5, 15.0, 13.0, 11.0, 9.0, -2.0, -2.25, -2.5, -2.75];
    assert_eq!(got, bits(&want));
}

#[test]
fn bias_8_int4_offsets_every_code_by_8() {
    let g = int4(BitOrder::LsbFirst, DType::UInt32, 4, 0, ScaleForm::F32Factors, ZeroPoint::Implied(8));
    // Codes 0, 8, 15, 7, 1, 2, 3, 4; scales 0.1 and -2.
    let data = 0x4321_7F80u32.to_le_bytes().to_vec();
    let got = run(g, &[8], data, f32s(&[0.1, -2.0]), None).unwrap();
    let want = [-8.0 * 0.1f32, 0.0, 7.0 * 0.1, -0.1, 14.0, 12.0, 10.0, 8.0];
    assert_eq!(got, bits(&want));
}

#[test]
fn symmetric_int8_codes_are_signed() {
    let int8 = |group_size| GroupQuant {
        bits: 8,
        group_size,
        axis: 0,
        word: DType::Int8,
        order: BitOrder::LsbFirst,
        scale_form: ScaleForm::F32Factors,
        scale_dtype: DType::Float32,
        zero_point: ZeroPoint::None,
    };
    let codes = || [-128i8, -1, 127, 5, 0, -7].iter().map(|&c| c as u8).collect::<Vec<u8>>();
    // One group spanning axis 0 of [2, 3]: a scale per column.
    let got = run(int8(2), &[2, 3], codes(), f32s(&[0.5, 1.0, 2.0]), None).unwrap();
    assert_eq!(got, bits(&[-64.0, -1.0, 254.0, 2.5, 0.0, -14.0]));
    // group_size 0: as the profile's sizes define it, `shape[axis]` groups, here one scale
    // per element.
    let got = run(int8(0), &[2, 3], codes(), f32s(&[0.5, 1.0, 2.0, 0.25, 3.0, -1.0]), None).unwrap();
    assert_eq!(got, bits(&[-64.0, -1.0, 254.0, 1.25, 0.0, 7.0]));
}

#[test]
fn e8m0_exponent_scales_are_powers_of_two_and_0xff_is_nan() {
    let g = GroupQuant {
        bits: 2,
        group_size: 4,
        axis: 0,
        word: DType::UInt8,
        order: BitOrder::LsbFirst,
        scale_form: ScaleForm::E8m0Exponent,
        scale_dtype: DType::UInt8,
        zero_point: ZeroPoint::Implied(2),
    };
    // Codes 0, 1, 2, 3 then 3, 2, 1, 0, two bits each; scales 2 and NaN.
    let got = run(g, &[8], vec![0xE4, 0x1B], vec![128, 0xFF], None).unwrap();
    let mut want = bits(&[-4.0, -2.0, 0.0, 2.0]);
    want.extend([0x7FC0_0000; 4]);
    assert_eq!(got, want);
}

#[test]
fn words_and_scales_of_the_wrong_kind_are_refused() {
    let g = int4(BitOrder::LsbFirst, DType::Float32, 4, 0, ScaleForm::F32Factors, ZeroPoint::None);
    assert!(run(g, &[8], vec![0; 4], f32s(&[1.0, 1.0]), None).is_err());
    let mut g = int4(BitOrder::LsbFirst, DType::UInt32, 4, 0, ScaleForm::F32Factors, ZeroPoint::None);
    g.scale_dtype = DType::Int32;
    assert!(run(g, &[8], vec![0; 4], vec![0; 8], None).is_err());
    let g = int4(BitOrder::LsbFirst, DType::UInt32, 4, 0, ScaleForm::F32Factors, ZeroPoint::None);
    assert!(run(g, &[8], vec![0; 4], vec![0; 4], None).is_err(), "scales short of the groups");
}
