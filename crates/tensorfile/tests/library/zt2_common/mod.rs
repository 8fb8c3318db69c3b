//! A zTensor 2 file taken apart from the spec alone, for the writer's tests: the footer, the
//! manifest (decoded with serde_cbor), every part's blob; and canonical form checked (§6.3).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_cbor::Value;
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"\x89ZT2\r\n\x1a\n";
const ALIGN: u64 = 65536;

/// A committed fixture.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

pub fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

pub fn uint(n: u64) -> Value {
    Value::Integer(n.into())
}

/// The value of text key `key` in map `m`.
pub fn get<'a>(m: &'a Value, key: &str) -> &'a Value {
    match m {
        Value::Map(m) => m.get(&text(key)).unwrap_or_else(|| panic!("no key {key:?}")),
        other => panic!("not a map: {other:?}"),
    }
}

fn u64_of(v: &Value) -> u64 {
    match v {
        Value::Integer(i) => u64::try_from(*i).expect("an unsigned integer"),
        other => panic!("not an integer: {other:?}"),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    }
}

/// One part as the manifest states it.
#[derive(Debug, Clone)]
pub struct Part {
    pub dtype: String,
    pub logical: Option<String>,
    pub offset: u64,
    pub length: u64,
    pub digest: String,
}

/// One object as the manifest states it.
#[derive(Debug, Clone)]
pub struct Object {
    pub shape: Vec<u64>,
    pub layout: String,
    pub attributes: Option<Value>,
    pub parts: BTreeMap<String, Part>,
}

/// A whole file and its manifest.
pub struct Zt2File {
    pub bytes: Vec<u8>,
    pub manifest: Value,
    pub manifest_at: u64,
    pub manifest_len: u64,
}

impl Zt2File {
    /// The file, its footer and manifest checked (§2.3, §3.1).
    pub fn parse(bytes: Vec<u8>) -> Zt2File {
        let n = bytes.len();
        assert!(n >= 48);
        assert_eq!(&bytes[..8], MAGIC);
        let footer = &bytes[n - 40..];
        let u64_at = |k: usize| u64::from_le_bytes(footer[k..k + 8].try_into().unwrap());
        let (at, len, hash) = (u64_at(0), u64_at(8), u64_at(16));
        assert_eq!(u32::from_le_bytes(footer[24..28].try_into().unwrap()), 2, "version");
        assert_eq!(&footer[28..32], &[0; 4], "reserved");
        assert_eq!(&footer[32..], MAGIC);
        assert_eq!(at + len, (n - 40) as u64, "the footer follows the manifest");
        let manifest_bytes = &bytes[at as usize..(at + len) as usize];
        assert_eq!(xxh3_64(manifest_bytes), hash, "manifest hash");
        let manifest: Value = serde_cbor::from_slice(manifest_bytes).expect("the manifest is CBOR");
        Zt2File { manifest, manifest_at: at, manifest_len: len, bytes }
    }

    pub fn root_attributes(&self) -> Option<Value> {
        match &self.manifest {
            Value::Map(m) => m.get(&text("attributes")).cloned(),
            _ => panic!("the manifest is a map"),
        }
    }

    /// Every object, by name.
    pub fn objects(&self) -> BTreeMap<String, Object> {
        let Value::Map(objects) = get(&self.manifest, "objects") else { panic!("objects is a map") };
        objects.iter().map(|(k, v)| (text_of(k), object(v))).collect()
    }

    pub fn object(&self, name: &str) -> Object {
        self.objects().remove(name).unwrap_or_else(|| panic!("no object {name:?}"))
    }

    /// The bytes of a part's blob.
    pub fn blob(&self, part: &Part) -> &[u8] {
        &self.bytes[part.offset as usize..(part.offset + part.length) as usize]
    }

    /// (object, part) names in canonical order: bytewise by object name, then part name.
    pub fn blob_order(&self) -> Vec<(String, String)> {
        let mut order: Vec<(String, String)> =
            self.objects().iter().flat_map(|(o, obj)| obj.parts.keys().map(move |p| (o.clone(), p.clone()))).collect();
        order.sort_by(|a, b| (a.0.as_bytes(), a.1.as_bytes()).cmp(&(b.0.as_bytes(), b.1.as_bytes())));
        order
    }

    /// Canonical form (§6.3) and the container's rules (§2.4): blobs packed at successive
    /// 64 KiB boundaries from 64 KiB in (object, part) order, equal bytes in one blob,
    /// references identical or disjoint, the manifest at the next boundary, zeros between,
    /// an xxh3 digest over every part that matches its bytes, no encodings, no shards.
    pub fn check_canonical(&self) {
        assert!(matches!(&self.manifest, Value::Map(m) if !m.contains_key(&text("shards"))));
        let objects = self.objects();
        let mut pos = 8u64;
        let mut placed: BTreeMap<(u64, u64), Vec<u8>> = BTreeMap::new();
        let mut covered = vec![(0u64, 8u64)];
        for (o, p) in self.blob_order() {
            let part = &objects[&o].parts[&p];
            assert_eq!(part.offset % ALIGN, 0, "{o}/{p} offset");
            assert!(part.offset >= ALIGN);
            let data = self.blob(part).to_vec();
            assert_eq!(part.digest, format!("xxh3:{:016x}", xxh3_64(&data)), "{o}/{p} digest");
            if placed.contains_key(&(part.offset, part.length)) {
                continue;
            }
            assert_eq!(part.offset, pos.next_multiple_of(ALIGN), "{o}/{p} is not packed in order");
            pos = part.offset + part.length;
            covered.push((part.offset, pos));
            placed.insert((part.offset, part.length), data);
        }
        assert_eq!(self.manifest_at, pos.next_multiple_of(ALIGN), "the manifest follows the last blob");
        covered.push((self.manifest_at, self.bytes.len() as u64));
        let distinct: BTreeSet<&Vec<u8>> = placed.values().filter(|b| !b.is_empty()).collect();
        assert_eq!(distinct.len(), placed.values().filter(|b| !b.is_empty()).count(), "equal parts in two blobs");
        covered.sort_unstable();
        for w in covered.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlapping blobs");
            assert!(self.bytes[w[0].1 as usize..w[1].0 as usize].iter().all(|&b| b == 0), "padding is not zero");
        }
    }
}

fn object(v: &Value) -> Object {
    let Value::Array(shape) = get(v, "shape") else { panic!("shape is an array") };
    let Value::Map(parts) = get(v, "parts") else { panic!("parts is a map") };
    let attributes = match v {
        Value::Map(m) => m.get(&text("attributes")).cloned(),
        _ => None,
    };
    let parts = parts
        .iter()
        .map(|(name, p)| {
            let Value::Array(blob) = get(p, "blob") else { panic!("blob is an array") };
            assert_eq!(blob.len(), 2);
            let Value::Map(fields) = p else { panic!("a part is a map") };
            assert!(!fields.contains_key(&text("encoding")), "canonical parts are raw");
            let part = Part {
                dtype: text_of(get(p, "dtype")),
                logical: fields.get(&text("type")).map(text_of),
                offset: u64_of(&blob[0]),
                length: u64_of(&blob[1]),
                digest: text_of(get(p, "digest")),
            };
            (text_of(name), part)
        })
        .collect();
    Object { shape: shape.iter().map(u64_of).collect(), layout: text_of(get(v, "layout")), attributes, parts }
}
