use super::*;

/// A datatype message: class and version, bit fields, size, properties.
fn message(class: u8, version: u8, bits: [u8; 3], size: u32, props: &[u8]) -> Vec<u8> {
    let mut v = vec![class | (version << 4)];
    v.extend_from_slice(&bits);
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(props);
    v
}

fn float(size: u32, big: bool, exp_loc: u8, exp_size: u8, mant: u8, bias: u32) -> Vec<u8> {
    let mut p = vec![0, 0];
    p.extend_from_slice(&(size as u16 * 8).to_le_bytes());
    p.extend_from_slice(&[exp_loc, exp_size, 0, mant]);
    p.extend_from_slice(&bias.to_le_bytes());
    message(1, 1, [0x20 | u8::from(big), (size * 8 - 1) as u8, 0], size, &p)
}

#[test]
fn floats_from_their_bit_fields() {
    let e = parse(&float(4, false, 23, 8, 23, 127)).unwrap();
    assert_eq!((e.dtype, e.size, e.big_endian), (DType::Float32, 4, false));
    assert_eq!(parse(&float(8, true, 52, 11, 52, 1023)).unwrap().dtype, DType::Float64);
    assert_eq!(parse(&float(2, false, 10, 5, 10, 15)).unwrap().dtype, DType::Float16);
    assert_eq!(parse(&float(2, false, 7, 8, 7, 127)).unwrap().dtype, DType::BFloat16);
    // An odd bias is not IEEE.
    assert_eq!(parse(&float(4, false, 23, 8, 23, 100)).unwrap_err().rule(), Some(Rule::UnknownDType));
    // VAX order (bits 0 and 6 set).
    let mut vax = float(4, true, 23, 8, 23, 127);
    vax[1] |= 0x40;
    assert_eq!(parse(&vax).unwrap_err().rule(), Some(Rule::UnknownDType));
}

#[test]
fn integers_and_refusals() {
    let int = |size: u32, signed: bool, precision: u16| {
        let mut p = vec![0, 0];
        p.extend_from_slice(&precision.to_le_bytes());
        message(0, 1, [if signed { 0x08 } else { 0 }, 0, 0], size, &p)
    };
    assert_eq!(parse(&int(8, true, 64)).unwrap().dtype, DType::Int64);
    assert_eq!(parse(&int(2, false, 16)).unwrap().dtype, DType::UInt16);
    assert_eq!(parse(&int(3, false, 24)).unwrap_err().rule(), Some(Rule::UnknownDType));
    assert_eq!(parse(&int(4, false, 12)).unwrap_err().rule(), Some(Rule::UnknownDType));
    let string = message(3, 1, [0, 0, 0], 5, &[]);
    assert_eq!(class_name(&string), "string");
    assert_eq!(parse(&string).unwrap_err().rule(), Some(Rule::UnknownDType));
    assert_eq!(parse(&message(0, 9, [0; 3], 4, &[0; 4])).unwrap_err().rule(), Some(Rule::BadField));
    assert_eq!(parse(&int(4, true, 32)[..9]).unwrap_err().rule(), Some(Rule::Truncated));
}
