//! zTensor 2 files built for the tests: a deterministic CBOR manifest and blobs placed at
//! multiples of 4096.

use super::super::footer::{self, ManifestBlob};
use super::super::{ALIGNMENT, MAGIC};

/// A CBOR value; maps are written with their keys sorted as deterministic CBOR sorts them.
#[derive(Debug, Clone)]
pub enum V {
    U(u64),
    /// `-1 - n`.
    N(u64),
    T(String),
    B(Vec<u8>),
    F(f64),
    Bool(bool),
    Null,
    A(Vec<V>),
    M(Vec<(V, V)>),
    /// Bytes as they are (for hostile manifests).
    Raw(Vec<u8>),
}

pub fn t(s: &str) -> V {
    V::T(s.to_string())
}

pub fn uints(v: &[u64]) -> V {
    V::A(v.iter().map(|&d| V::U(d)).collect())
}

/// A map of text keys.
pub fn m(pairs: Vec<(&str, V)>) -> V {
    V::M(pairs.into_iter().map(|(k, v)| (t(k), v)).collect())
}

fn head(out: &mut Vec<u8>, major: u8, v: u64) {
    let m = major << 5;
    match v {
        0..=23 => out.push(m | v as u8),
        24..=0xff => out.extend_from_slice(&[m | 24, v as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend_from_slice(&(v as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend_from_slice(&(v as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

pub fn encode(v: &V) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, v);
    out
}

fn put(out: &mut Vec<u8>, v: &V) {
    match v {
        V::U(n) => head(out, 0, *n),
        V::N(n) => head(out, 1, *n),
        V::T(s) => {
            head(out, 3, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        V::B(b) => {
            head(out, 2, b.len() as u64);
            out.extend_from_slice(b);
        }
        V::F(x) => {
            let h = half::f16::from_f64(*x);
            if x.is_nan() {
                out.extend_from_slice(&[0xf9, 0x7e, 0x00]);
            } else if h.to_f64() == *x {
                out.push(0xf9);
                out.extend_from_slice(&h.to_bits().to_be_bytes());
            } else if f64::from(*x as f32) == *x {
                out.push(0xfa);
                out.extend_from_slice(&(*x as f32).to_bits().to_be_bytes());
            } else {
                out.push(0xfb);
                out.extend_from_slice(&x.to_bits().to_be_bytes());
            }
        }
        V::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
        V::Null => out.push(0xf6),
        V::A(items) => {
            head(out, 4, items.len() as u64);
            items.iter().for_each(|i| put(out, i));
        }
        V::M(pairs) => {
            let mut encoded: Vec<(Vec<u8>, Vec<u8>)> = pairs.iter().map(|(k, v)| (encode(k), encode(v))).collect();
            encoded.sort();
            head(out, 5, encoded.len() as u64);
            for (k, v) in encoded {
                out.extend_from_slice(&k);
                out.extend_from_slice(&v);
            }
        }
        V::Raw(b) => out.extend_from_slice(b),
    }
}

/// A file being built: the magic, then blobs at multiples of 4096.
pub struct File {
    pub bytes: Vec<u8>,
}

impl Default for File {
    fn default() -> Self {
        File { bytes: MAGIC.to_vec() }
    }
}

impl File {
    /// Place `data` at the next multiple of 4096: its `[offset, length]`.
    pub fn blob(&mut self, data: &[u8]) -> V {
        let offset = self.bytes.len().next_multiple_of(ALIGNMENT as usize);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(data);
        uints(&[offset as u64, data.len() as u64])
    }

    /// The file with `manifest` (raw CBOR bytes) and its footer.
    pub fn finish_raw(mut self, manifest: &[u8]) -> Vec<u8> {
        let offset = self.bytes.len().next_multiple_of(ALIGNMENT as usize).max(ALIGNMENT as usize);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(manifest);
        let hash = xxhash_rust::xxh3::xxh3_64(manifest);
        let blob = ManifestBlob { offset: offset as u64, len: manifest.len() as u64, hash };
        self.bytes.extend_from_slice(&footer::encode(Some(blob)));
        self.bytes
    }

    pub fn finish(self, manifest: &V) -> Vec<u8> {
        self.finish_raw(&encode(manifest))
    }

    /// The file as a data shard: its blobs and a footer pointing at no manifest.
    pub fn finish_data_shard(mut self) -> Vec<u8> {
        self.bytes.extend_from_slice(&footer::encode(None));
        self.bytes
    }
}

/// A part of `dtype` at `blob`, with more fields.
pub fn part(dtype: &str, blob: V, more: Vec<(&str, V)>) -> V {
    let mut fields = vec![("dtype", t(dtype)), ("blob", blob)];
    fields.extend(more);
    m(fields)
}

pub fn object(shape: &[u64], layout: &str, parts: Vec<(&str, V)>, attributes: Option<V>) -> V {
    let mut fields = vec![("shape", uints(shape)), ("layout", t(layout)), ("parts", m(parts))];
    if let Some(a) = attributes {
        fields.push(("attributes", a));
    }
    m(fields)
}

pub fn manifest(objects: Vec<(&str, V)>) -> V {
    m(vec![("objects", m(objects))])
}

/// A dense object: name, dtype, logical type, shape, bytes.
pub type Dense<'a> = (&'a str, &'a str, Option<&'a str>, &'a [u64], &'a [u8]);

/// A part: name, dtype, bytes, more fields.
pub type PartSpec<'a> = (&'a str, &'a str, Vec<u8>, Vec<(&'a str, V)>);

/// A file of dense objects.
pub fn dense_file(objects: &[Dense<'_>]) -> Vec<u8> {
    let mut f = File::default();
    let mut listed = Vec::new();
    for &(name, dtype, logical, shape, bytes) in objects {
        let blob = f.blob(bytes);
        let more = logical.map(|l| vec![("type", t(l))]).unwrap_or_default();
        listed.push((name, object(shape, "dense", vec![("data", part(dtype, blob, more))], None)));
    }
    f.finish(&manifest(listed))
}
