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

/// A version-3 enum of `members` (name, value) over a base integer of `size` bytes.
fn enum_message(size: u32, signed: bool, big: bool, members: &[(&str, i64)]) -> Vec<u8> {
    let mut p = vec![0, 0];
    p.extend_from_slice(&(size as u16 * 8).to_le_bytes());
    let mut base = message(0, 1, [u8::from(big) | if signed { 0x08 } else { 0 }, 0, 0], size, &p);
    for (name, _) in members {
        base.extend_from_slice(name.as_bytes());
        base.push(0);
    }
    for (_, v) in members {
        let b = v.to_le_bytes();
        let mut b = b[..size as usize].to_vec();
        if big {
            b.reverse();
        }
        base.extend_from_slice(&b);
    }
    let n = members.len() as u16;
    message(8, 3, [n as u8, (n >> 8) as u8, 0], size, &base)
}

#[test]
fn enums_are_their_base_integers_with_their_members() {
    let m = enum_message(2, true, true, &[("LOW", -1), ("HIGH", 900)]);
    let e = parse(&m).unwrap();
    assert_eq!((e.dtype, e.size, e.big_endian), (DType::Int16, 2, true));
    let members = enum_members(&m).unwrap().unwrap();
    assert_eq!(members, vec![("LOW".to_string(), -1), ("HIGH".to_string(), 900)]);
    // h5py's bool stays a bool, without members.
    let b = enum_message(1, true, false, &[("FALSE", 0), ("TRUE", 1)]);
    assert_eq!(parse(&b).unwrap().dtype, DType::Bool);
    assert_eq!(enum_members(&b).unwrap(), None);
    assert_eq!(enum_members(&float(4, false, 23, 8, 23, 127)).unwrap(), None);
    // Values cut short.
    let short = enum_message(4, false, false, &[("A", 1), ("B", 2)]);
    assert_eq!(parse(&short[..short.len() - 2]).unwrap_err().rule(), Some(Rule::Truncated));
}

#[test]
fn bitfields_are_unsigned_integers_of_their_size() {
    let bits = |size: u32, big: bool, precision: u16| {
        let mut p = vec![0, 0];
        p.extend_from_slice(&precision.to_le_bytes());
        message(4, 1, [u8::from(big), 0, 0], size, &p)
    };
    let e = parse(&bits(4, true, 32)).unwrap();
    assert_eq!((e.dtype, e.size, e.big_endian), (DType::UInt32, 4, true));
    assert_eq!(parse(&bits(1, false, 8)).unwrap().dtype, DType::UInt8);
    assert_eq!(parse(&bits(2, false, 12)).unwrap_err().rule(), Some(Rule::UnknownDType));
    assert_eq!(parse(&bits(3, false, 24)).unwrap_err().rule(), Some(Rule::UnknownDType));
}

/// An array datatype message of `version` (1 to 3) over `base`, of `size` bytes.
fn array_message(version: u8, size: u32, dims: &[u32], base: &[u8]) -> Vec<u8> {
    let mut p = vec![dims.len() as u8];
    if version < 3 {
        p.extend_from_slice(&[0; 3]);
    }
    for d in dims {
        p.extend_from_slice(&d.to_le_bytes());
    }
    if version < 3 {
        for i in 0..dims.len() as u32 {
            p.extend_from_slice(&i.to_le_bytes());
        }
    }
    p.extend_from_slice(base);
    message(10, version, [0; 3], size, &p)
}

#[test]
fn arrays_are_their_base_element_with_trailing_dimensions() {
    let f4 = float(4, false, 23, 8, 23, 127);
    // Version 1 as HDF5 1.4 wrote it (old PyTables files), 2 and 3 as the specification says.
    for version in [1, 2, 3] {
        let e = parse(&array_message(version, 24, &[2, 3], &f4)).unwrap();
        assert_eq!((e.dtype, e.size, e.big_endian), (DType::Float32, 24, false));
        assert_eq!(e.array_dims, [2, 3]);
    }
    let be = float(8, true, 52, 11, 52, 1023);
    let e = parse(&array_message(3, 16, &[2], &be)).unwrap();
    assert_eq!((e.dtype, e.big_endian, e.array_dims), (DType::Float64, true, vec![2]));
    // An array of arrays: the outer dimensions first, as numpy nests subarrays.
    let inner = array_message(3, 8, &[2], &f4);
    let e = parse(&array_message(3, 24, &[3], &inner)).unwrap();
    assert_eq!((e.dtype, e.size, e.array_dims), (DType::Float32, 24, vec![3, 2]));
    // Other elements are not.
    assert_eq!(parse(&float(4, false, 23, 8, 23, 127)).unwrap().array_dims, Vec::<u64>::new());
}

#[test]
fn arrays_that_break_their_rules() {
    let f4 = float(4, false, 23, 8, 23, 127);
    let rule = |m: Vec<u8>| parse(&m).unwrap_err().rule();
    assert_eq!(rule(array_message(3, 16, &[3], &f4)), Some(Rule::SizeMismatch));
    assert_eq!(rule(array_message(3, 0, &[], &f4)), Some(Rule::BadField));
    assert_eq!(rule(array_message(3, 0, &[0], &f4)), Some(Rule::BadField));
    assert_eq!(rule(array_message(3, 4, &[1; 33], &f4)), Some(Rule::BadField));
    // Dimensions whose product overflows.
    assert_eq!(rule(array_message(3, 4, &[u32::MAX; 3], &f4)), Some(Rule::ShapeOverflow));
    // An array of strings stays refused, naming both.
    let err = parse(&array_message(3, 6, &[3], &message(3, 1, [0, 0, 0], 2, &[]))).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::UnknownDType));
    assert!(err.detail().contains("array datatype") && err.detail().contains("string"), "{err}");
    let cut = array_message(3, 12, &[3], &f4);
    assert_eq!(rule(cut[..cut.len() - 3].to_vec()), Some(Rule::Truncated));
}

#[test]
fn long_doubles_are_named() {
    // x87 extended precision in 16 bytes, as HDF5 describes NumPy's longdouble: 80 bits,
    // sign at 79, exponent 15 bits at 64, mantissa 64 bits at 0, bias 16383.
    let mut p = vec![0, 0];
    p.extend_from_slice(&80u16.to_le_bytes());
    p.extend_from_slice(&[64, 15, 0, 64]);
    p.extend_from_slice(&16383u32.to_le_bytes());
    let err = parse(&message(1, 1, [0x20, 79, 0], 16, &p)).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::UnknownDType));
    assert!(err.detail().contains("long double"), "{err}");
}
