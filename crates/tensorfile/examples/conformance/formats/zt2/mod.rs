//! zTensor 2 `.zt`: the magic, blobs at multiples of 4096, a manifest blob in deterministic
//! CBOR, a 40-byte footer. Every file is built here byte by byte (the manifest with
//! `build::cbor`, its maps sorted as deterministic CBOR sorts them), a few copied from the
//! fixtures made by pip `ztensor` 2.1.2.

mod container;
mod data;
mod layouts;
mod shards;
mod valid;

use tensorfile::Format;

use super::Fixtures;
use crate::build::cbor::{C, encode, t};
use crate::case::Folder;

pub(super) const MAGIC: &[u8; 8] = b"\x89ZT2\r\n\x1a\n";
pub(super) const ALIGN: usize = 4096;

/// A map with its keys in deterministic order (bytewise by their encoding).
pub(super) fn map(pairs: Vec<(C, C)>) -> C {
    let mut keyed: Vec<(Vec<u8>, (C, C))> = pairs.into_iter().map(|(k, v)| (encode(&k), (k, v))).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    C::Map(keyed.into_iter().map(|(_, kv)| kv).collect())
}

/// A map of text keys.
pub(super) fn m(pairs: Vec<(&str, C)>) -> C {
    map(pairs.into_iter().map(|(k, v)| (t(k), v)).collect())
}

pub(super) fn uints(v: &[u64]) -> C {
    C::Array(v.iter().map(|&d| C::U(d)).collect())
}

/// A footer pointing at a manifest of `len` bytes at `offset` with XXH3-64 `hash`.
pub(super) fn footer(offset: u64, len: u64, hash: u64, version: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(40);
    for v in [offset, len, hash] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&version.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(MAGIC);
    f
}

/// A file being built: the magic, then blobs at multiples of 4096.
pub(super) struct File {
    pub(super) bytes: Vec<u8>,
}

impl File {
    pub(super) fn new() -> File {
        File { bytes: MAGIC.to_vec() }
    }

    /// Place `data` at the next multiple of 4096: its `[offset, length]`.
    pub(super) fn blob(&mut self, data: &[u8]) -> C {
        let offset = self.bytes.len().next_multiple_of(ALIGN);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(data);
        uints(&[offset as u64, data.len() as u64])
    }

    /// The file with the manifest `cbor` (any bytes) and a footer that matches it.
    pub(super) fn finish_raw(mut self, cbor: &[u8]) -> Vec<u8> {
        let offset = self.bytes.len().next_multiple_of(ALIGN).max(ALIGN);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(cbor);
        let hash = xxhash_rust::xxh3::xxh3_64(cbor);
        self.bytes.extend_from_slice(&footer(offset as u64, cbor.len() as u64, hash, 2));
        self.bytes
    }

    pub(super) fn finish(self, manifest: &C) -> Vec<u8> {
        self.finish_raw(&encode(manifest))
    }
}

/// A part of `dtype` at `blob`, with more fields.
pub(super) fn part(dtype: &str, blob: C, more: Vec<(&str, C)>) -> C {
    let mut fields = vec![("dtype", t(dtype)), ("blob", blob)];
    fields.extend(more);
    m(fields)
}

pub(super) fn object(shape: &[u64], layout: &str, parts: Vec<(&str, C)>, attributes: Option<C>) -> C {
    let mut fields = vec![("shape", uints(shape)), ("layout", t(layout)), ("parts", m(parts))];
    if let Some(a) = attributes {
        fields.push(("attributes", a));
    }
    m(fields)
}

pub(super) fn manifest(objects: Vec<(&str, C)>) -> C {
    m(vec![("objects", m(objects))])
}

/// One part of an object: name, dtype, bytes, more fields.
pub(super) type Part<'a> = (&'a str, &'a str, Vec<u8>, Vec<(&'a str, C)>);

/// A file of one object `name`, its parts placed one after another.
pub(super) fn one(name: &str, shape: &[u64], layout: &str, parts: Vec<Part<'_>>, attrs: Option<C>) -> Vec<u8> {
    let mut f = File::new();
    let mut listed = Vec::new();
    for (pname, dtype, bytes, more) in parts {
        let blob = f.blob(&bytes);
        listed.push((pname, part(dtype, blob, more)));
    }
    f.finish(&manifest(vec![(name, object(shape, layout, listed, attrs))]))
}

/// A file of one dense object `t`.
pub(super) fn dense(dtype: &str, shape: &[u64], bytes: Vec<u8>, more: Vec<(&str, C)>) -> Vec<u8> {
    one("t", shape, "dense", vec![("data", dtype, bytes, more)], None)
}

/// A float in the shortest of the three widths that holds it (NaN as `f9 7e00`).
pub(super) fn float(x: f64) -> C {
    if x.is_nan() {
        return C::Raw(vec![0xf9, 0x7e, 0x00]);
    }
    if let Some(h) = f16_bits(x) {
        let mut b = vec![0xf9];
        b.extend_from_slice(&h.to_be_bytes());
        return C::Raw(b);
    }
    if f64::from(x as f32) == x {
        let mut b = vec![0xfa];
        b.extend_from_slice(&(x as f32).to_bits().to_be_bytes());
        return C::Raw(b);
    }
    let mut b = vec![0xfb];
    b.extend_from_slice(&x.to_bits().to_be_bytes());
    C::Raw(b)
}

/// The half-float bits of `x`, when a half float holds it exactly (normal numbers, zeros and
/// infinities; subnormal halves are not needed here).
fn f16_bits(x: f64) -> Option<u16> {
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    if x == 0.0 {
        return Some(sign);
    }
    if x.is_infinite() {
        return Some(sign | 0x7c00);
    }
    let a = x.abs();
    let e = a.log2().floor() as i32;
    if !(-14..=15).contains(&e) {
        return None;
    }
    let m = (a / 2f64.powi(e) - 1.0) * 1024.0;
    let exact = m.fract() == 0.0 && (1.0 + m / 1024.0) * 2f64.powi(e) == a;
    exact.then(|| sign | (((e + 15) as u16) << 10) | m as u16)
}

/// `data` as one zstd frame of raw blocks with a content checksum (XXH64's low 32 bits).
pub(super) fn checked_frame(data: &[u8]) -> Vec<u8> {
    let mut frame = crate::build::zstd::raw_frame(data);
    frame[4] |= 0x04; // Content_Checksum_flag
    frame.extend_from_slice(&(xxhash_rust::xxh64::xxh64(data, 0) as u32).to_le_bytes());
    frame
}

/// `frames` (each with the content size its seek table entry states) and their seek table:
/// the zstd seekable format of `zt.zstd-seekable/1`.
pub(super) fn seekable(frames: &[(Vec<u8>, u32)]) -> Vec<u8> {
    let mut out: Vec<u8> = frames.iter().flat_map(|(f, _)| f.iter().copied()).collect();
    out.extend_from_slice(&0x184D_2A5Eu32.to_le_bytes());
    out.extend_from_slice(&((frames.len() * 8 + 9) as u32).to_le_bytes());
    for (f, content) in frames {
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&content.to_le_bytes());
    }
    out.extend_from_slice(&(frames.len() as u32).to_le_bytes());
    out.push(0);
    out.extend_from_slice(&0x8F92_EAB1u32.to_le_bytes());
    out
}

/// `data` in frames of `frame` bytes.
pub(super) fn seekable_of(data: &[u8], frame: usize) -> Vec<u8> {
    let frames: Vec<(Vec<u8>, u32)> = data.chunks(frame).map(|c| (checked_frame(c), c.len() as u32)).collect();
    seekable(&frames)
}

pub(super) fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(super) fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(super) fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(super) fn xxh3(data: &[u8]) -> String {
    format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(data))
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("zt2", Format::Zt2, "zt");
    valid::cases(&mut f, fx)?;
    container::frame(&mut f);
    container::cbor(&mut f);
    container::schema(&mut f);
    container::blobs(&mut f);
    layouts::dense_objects(&mut f);
    layouts::sparse(&mut f);
    layouts::quantized(&mut f);
    data::cases(&mut f);
    Ok(f)
}
