use super::*;
use crate::error::Rule;

fn round_trip(v: MetaValue) {
    let mut e = Encoder::default();
    e.value(&v);
    assert_eq!(decode(&e.out).unwrap(), v);
}

#[test]
fn values_round_trip() {
    round_trip(MetaValue::Int(0));
    round_trip(MetaValue::Int(23));
    round_trip(MetaValue::Int(24));
    round_trip(MetaValue::Int(65536));
    round_trip(MetaValue::Int(u64::MAX as i128));
    round_trip(MetaValue::Int(-1 - u64::MAX as i128));
    round_trip(MetaValue::Text("héllo".into()));
    round_trip(MetaValue::Bytes(vec![1, 2, 3]));
    round_trip(MetaValue::Float(1.5));
    round_trip(MetaValue::Float(0.1));
    round_trip(MetaValue::Float(1e30));
    round_trip(MetaValue::Float(f64::NEG_INFINITY));
    round_trip(MetaValue::Array(vec![MetaValue::Null, MetaValue::Bool(true), MetaValue::Undefined]));
    round_trip(MetaValue::Map(vec![(MetaValue::Int(1), MetaValue::Text("x".into()))]));
    round_trip(MetaValue::Tagged(42, Box::new(MetaValue::Simple(100))));
}

#[test]
fn shortest_integers() {
    let mut e = Encoder::default();
    e.uint(23);
    e.uint(24);
    e.uint(256);
    assert_eq!(e.out, [0x17, 0x18, 24, 0x19, 1, 0]);
}

#[test]
fn shortest_floats() {
    let enc = |f: f64| {
        let mut e = Encoder::default();
        e.float(f);
        e.out
    };
    assert_eq!(enc(1.5), [0xf9, 0x3e, 0x00]);
    assert_eq!(enc(100000.0), [0xfa, 0x47, 0xc3, 0x50, 0x00]);
    assert_eq!(enc(0.1).len(), 9);
    assert_eq!(enc(f64::NAN), [0xf9, 0x7e, 0x00]);
}

#[test]
fn indefinite_forms_decode() {
    // {_ "a": 1, "b": [_ 2, 3]}, and a chunked text "ab".
    let v = decode(&[0xbf, 0x61, b'a', 0x01, 0x61, b'b', 0x9f, 0x02, 0x03, 0xff, 0xff]).unwrap();
    assert_eq!(
        v,
        MetaValue::Map(vec![
            ("a".into(), MetaValue::Int(1)),
            ("b".into(), MetaValue::Array(vec![MetaValue::Int(2), MetaValue::Int(3)])),
        ])
    );
    assert_eq!(decode(&[0x7f, 0x61, b'a', 0x61, b'b', 0xff]).unwrap(), "ab".into());
    assert_eq!(decode(&[0xf9, 0x3c, 0x00]).unwrap(), MetaValue::Float(1.0));
}

#[test]
fn typed_readers_take_the_expected_form() {
    // "ab", 7, [2, 3] (the 3 in a non-shortest head), then the key "k".
    let input = [0x62, b'a', b'b', 0x07, 0x82, 0x02, 0x18, 0x03, 0x61, b'k'];
    let mut d = Decoder::new(&input);
    assert!(matches!(d.text(2, None).unwrap(), Typed::Found("ab")));
    assert!(matches!(d.uint(2).unwrap(), Typed::Found(7)));
    assert!(matches!(d.uints(2).unwrap(), Typed::Found(v) if v == [2, 3]));
    assert!(matches!(d.key(2, |k| (k == b"k").then_some(())).unwrap(), MapKey::Known(())));
    d.finish().unwrap();
    // Text equal to the previous value is that value.
    let mut d = Decoder::new(&[0x62, b'a', b'b']);
    assert!(matches!(d.text(2, Some("ab")).unwrap(), Typed::Found("ab")));
}

/// What `text` or `uints` reads from `input` (all of it): the generic value found, or
/// `None` when the item had the expected form.
fn other_form(input: &[u8], shape: bool) -> Result<Option<MetaValue>> {
    fn other<T>(t: Typed<T>) -> Option<MetaValue> {
        match t {
            Typed::Found(_) => None,
            Typed::Other(v) => Some(*v),
        }
    }
    let mut d = Decoder::new(input);
    let v = if shape { other(d.uints(2)?) } else { other(d.text(2, None)?) };
    d.finish()?;
    Ok(v)
}

#[test]
fn typed_readers_keep_other_forms_as_generic_values() {
    // Indefinite text is still text; a number is kept as found.
    assert_eq!(other_form(&[0x7f, 0x61, b'a', 0xff], false).unwrap(), Some("a".into()));
    assert_eq!(other_form(&[0x01], false).unwrap(), Some(MetaValue::Int(1)));
    // A shape with a negative or indefinite part, or too long for a shape.
    assert_eq!(other_form(&[0x81, 0x20], true).unwrap(), Some(MetaValue::Array(vec![MetaValue::Int(-1)])));
    assert_eq!(other_form(&[0x9f, 0x01, 0xff], true).unwrap(), Some(MetaValue::Array(vec![MetaValue::Int(1)])));
    let long = [[0x98, 65].as_slice(), &[0x01; 65]].concat();
    assert_eq!(other_form(&long, true).unwrap(), Some(MetaValue::Array(vec![MetaValue::Int(1); 65])));
    // Malformed items are refused as a generic decode refuses them.
    let rule = |input: &[u8], shape| other_form(input, shape).unwrap_err().rule().unwrap();
    assert_eq!(rule(&[0x62, 0xff, 0xfe], false), Rule::BadUtf8);
    assert_eq!(rule(&[0x65, b'a'], false), Rule::Truncated);
    assert_eq!(rule(&[0x82, 0x01], true), Rule::Truncated);
    assert_eq!(rule(&[0x81, 0x1c], true), Rule::BadCbor);
    let mut d = Decoder::new(&[0x01]);
    assert!(matches!(d.key(2, |_| Some(())).unwrap(), MapKey::NotText));
    let mut d = Decoder::new(&[0x61, 0xff]);
    assert_eq!(d.key(2, |_| None::<()>).err().and_then(|e| e.rule()), Some(Rule::BadUtf8));
}

#[test]
fn hostile_cbor_is_refused() {
    let rule = |b: &[u8]| decode(b).unwrap_err().rule().unwrap();
    assert_eq!(rule(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), Rule::Truncated);
    assert_eq!(rule(&[0x7a, 0xff, 0xff, 0xff, 0xff]), Rule::Truncated);
    assert_eq!(rule(&[0x9f, 0x01]), Rule::Truncated);
    assert_eq!(rule(&[0x1c]), Rule::BadCbor);
    assert_eq!(rule(&[0x01, 0x02]), Rule::BadCbor);
    assert_eq!(rule(&[0xff]), Rule::BadCbor);
    assert_eq!(rule(&[0x62, 0xff, 0xfe]), Rule::BadUtf8);
    assert_eq!(rule(&[0x7f, 0x41, 0x00, 0xff]), Rule::BadCbor);
    assert_eq!(rule(&vec![0x81; 10_000]), Rule::TooDeep);
    assert_eq!(rule(&vec![0x9f; 10_000]), Rule::TooDeep);
}
