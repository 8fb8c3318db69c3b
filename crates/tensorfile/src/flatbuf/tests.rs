//! The codec on a small schema: round trips of every kind of field, alignment, and hostile
//! buffers.

use std::sync::OnceLock;

use super::schema::{Schema, parse};
use super::value::{Table, Union, Value, new_table};
use super::{decode, encode, to_json};
use crate::error::Rule;
use crate::source::Bytes;

const SCHEMA: &str = r#"
file_identifier "TST1";
enum Kind : byte { A = 0, B = 5 }
table Leaf { x: int; name: string; }
table Other { y: long; }
union Choice { Leaf, Other }
table Node { leaves: [Leaf]; }
table Root {
  small: byte = 3;
  big: ulong;
  f: double;
  kind: Kind = B;
  names: [string];
  ints: [long];
  data: [ubyte] (force_align: 16);
  choice: Choice;
  node: Node;
  nodes: [Node];
}
root_type Root;
"#;

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| parse(SCHEMA).unwrap())
}

fn leaf(x: i64) -> Value {
    let mut l = new_table(schema(), "Leaf");
    l.set("x", Some(Value::Int(x)));
    l.set("name", Some(Value::Str(format!("leaf{x}"))));
    Value::Table(l)
}

fn sample() -> Table {
    let s = schema();
    let mut r = new_table(s, "Root");
    r.set("small", Some(Value::Int(-7)));
    r.set("big", Some(Value::UInt(u64::MAX)));
    r.set("f", Some(Value::Float(2.5)));
    r.set("names", Some(Value::Vector(vec![Value::Str("a".into()), Value::Str(String::new())])));
    r.set("ints", Some(Value::Vector(vec![Value::Int(i64::MIN), Value::Int(1)])));
    r.set("data", Some(Value::Bytes(Bytes::from_vec((0..33).collect()))));
    let mut other = new_table(s, "Other");
    other.set("y", Some(Value::Int(9)));
    r.set("choice", Some(Value::Union(Union { def: &s.unions[0], tag: 2, value: Some(Box::new(other)) })));
    let mut node = new_table(s, "Node");
    node.set("leaves", Some(Value::Vector(vec![leaf(1), leaf(2)])));
    r.set("node", Some(Value::Table(node.clone())));
    r.set("nodes", Some(Value::Vector(vec![Value::Table(node)])));
    r
}

#[test]
fn every_kind_of_field_round_trips_with_a_header_gap() {
    for gap in [0, 32, 48] {
        let bytes = encode(schema(), &sample(), gap).unwrap();
        assert_eq!(&bytes[4..8], b"TST1");
        let back = decode(schema(), &Bytes::from_vec(bytes)).unwrap();
        assert_eq!(back, sample());
    }
}

#[test]
fn absent_fields_take_their_defaults() {
    let bytes = encode(schema(), &new_table(schema(), "Root"), 0).unwrap();
    let r = decode(schema(), &Bytes::from_vec(bytes)).unwrap();
    assert_eq!((r.int("small").unwrap(), r.int("kind").unwrap(), r.uint("big").unwrap()), (3, 5, 0));
    assert!(r.vector("names").unwrap().is_empty());
}

#[test]
fn forced_alignment_and_scalar_alignment_hold() {
    let bytes = encode(schema(), &sample(), 8).unwrap();
    let r = decode(schema(), &Bytes::from_vec(bytes)).unwrap();
    let Some(Value::Bytes(data)) = r.get("data") else { panic!() };
    assert_eq!(data.offset_in_owner() % 16, 0, "force_align: 16");
}

#[test]
fn json_names_enums_and_unions() {
    let j = to_json(schema(), &sample(), Some(8));
    assert_eq!(j["choice_type"], "Other");
    assert_eq!(j["choice"]["y"], 9);
    assert_eq!(j["data"]["size"], 33);
    let mut r = sample();
    r.set("kind", Some(Value::Int(0)));
    assert_eq!(to_json(schema(), &r, None)["kind"], "A");
}

#[test]
fn wrong_identifier_and_short_buffers() {
    let mut bytes = encode(schema(), &sample(), 0).unwrap();
    bytes[4] = b'X';
    assert_eq!(decode(schema(), &Bytes::from_vec(bytes)).unwrap_err().rule(), Some(Rule::BadMagic));
    assert_eq!(decode(schema(), &Bytes::from_vec(vec![0; 5])).unwrap_err().rule(), Some(Rule::Truncated));
}

#[test]
fn every_truncation_and_every_flipped_byte_is_an_error_or_a_value_never_a_panic() {
    let good = encode(schema(), &sample(), 0).unwrap();
    for len in 0..good.len() {
        let _ = decode(schema(), &Bytes::from_vec(good[..len].to_vec()));
    }
    for i in 0..good.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut b = good.clone();
            b[i] ^= flip;
            let _ = decode(schema(), &Bytes::from_vec(b));
        }
    }
}

#[test]
fn shared_subtrees_cannot_expand_into_a_huge_tree() {
    // Build forward-pointing sharing by hand: the vectors first, the shared tables last.
    let n: u32 = 3000;
    let mut b = vec![0u8; 8];
    b[4..8].copy_from_slice(b"TST1");
    let w = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&v.to_le_bytes());
    let h = |b: &mut Vec<u8>, v: u16| b.extend_from_slice(&v.to_le_bytes());
    // Root: vtable then table with `nodes` (slot 10) at offset 4.
    let root_vt = b.len();
    h(&mut b, 4 + 2 * 11);
    h(&mut b, 8);
    for slot in 0..11 {
        h(&mut b, if slot == 10 { 4 } else { 0 });
    }
    let pad4 = |b: &mut Vec<u8>| b.resize(b.len().next_multiple_of(4), 0);
    pad4(&mut b);
    let root = b.len();
    b[0..4].copy_from_slice(&(root as u32).to_le_bytes());
    w(&mut b, (root - root_vt) as u32);
    let nodes_field = b.len();
    w(&mut b, 4); // the nodes vector follows immediately
    let nodes_vec = b.len();
    assert_eq!(nodes_vec, nodes_field + 4);
    w(&mut b, n);
    let node_refs = b.len();
    b.resize(node_refs + 4 * n as usize, 0);
    // One Node, shared by every reference.
    let node_vt = b.len();
    h(&mut b, 6);
    h(&mut b, 8);
    h(&mut b, 4);
    pad4(&mut b);
    let node = b.len();
    w(&mut b, (node - node_vt) as u32);
    let leaves_field = b.len();
    w(&mut b, 4);
    w(&mut b, n);
    let leaf_refs = b.len();
    b.resize(leaf_refs + 4 * n as usize, 0);
    let leaf_vt = b.len();
    h(&mut b, 4);
    h(&mut b, 4);
    let leaf = b.len();
    w(&mut b, (leaf - leaf_vt) as u32);
    for i in 0..n as usize {
        let at = node_refs + 4 * i;
        b[at..at + 4].copy_from_slice(&((node - at) as u32).to_le_bytes());
        let at = leaf_refs + 4 * i;
        b[at..at + 4].copy_from_slice(&((leaf - at) as u32).to_le_bytes());
    }
    let _ = leaves_field;
    // 3000 x 3000 leaves from a 24 KB buffer: refused, not expanded.
    let err = decode(schema(), &Bytes::from_vec(b)).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::TooManyEntries));
}
