//! The manifest (spec §3): its deterministic CBOR checked, then its schema read into plain
//! structures, with the rules that need nothing else (required fields and their types, the
//! name rules, the closed set of storage types, blob arity, `decoded_length` with an
//! encoding, digests of the form `algo:lowercase-hex`, attributes of text keys); and checking
//! bytes against a digest.

use super::types::Storage;
use crate::error::{Error, Result, Rule};
use crate::formats::Catalog;
use crate::formats::ztensor::cbor::{self, Decoder, MapKey, Typed};
use crate::limits::{MAX_RANK, MAX_SHARDS};
use crate::model::{Checksum, MetaValue};

/// How deep the manifest's CBOR nests, counted from its root (spec §3.1).
pub const MAX_DEPTH: usize = 32;
/// The longest name (object, part, attribute key), in bytes (spec §3.5).
pub const MAX_NAME: usize = 1024;

/// What a manifest declares.
#[derive(Debug, Default)]
pub struct Manifest {
    /// The file's attributes, in manifest order.
    pub attributes: Vec<(String, MetaValue)>,
    /// The shard table, in manifest order.
    pub shards: Vec<ShardEntry>,
    /// The objects, in manifest order.
    pub objects: Vec<Object>,
}

/// A shard's identity (spec §7.1).
#[derive(Debug)]
pub struct ShardEntry {
    pub name: String,
    pub size: u64,
    pub digest: Digest,
}

/// A named object (spec §3.3).
#[derive(Debug)]
pub struct Object {
    pub name: String,
    pub shape: Vec<u64>,
    pub layout: String,
    pub attributes: Vec<(String, MetaValue)>,
    /// In manifest order; never empty.
    pub parts: Vec<Part>,
}

/// One part: a blob and how to read it (spec §3.4).
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub dtype: Storage,
    /// The logical type, when given.
    pub logical: Option<String>,
    pub offset: u64,
    pub length: u64,
    /// The shard holding the blob; `None`: this file.
    pub shard: Option<String>,
    pub encoding: Option<String>,
    pub decoded_length: Option<u64>,
    pub digest: Option<Digest>,
    /// A part of a zTensor 1.x file: its encoding `zstd` is plain zstd frames, and its
    /// digest covers the stored bytes.
    pub legacy: bool,
}

impl Part {
    /// A part `name` of `u8` at offset 0, of no length, raw: what its fields then fill in.
    pub fn new(name: &str, legacy: bool) -> Part {
        Part {
            name: name.to_string(),
            dtype: Storage::U8,
            logical: None,
            offset: 0,
            length: 0,
            shard: None,
            encoding: None,
            decoded_length: None,
            digest: None,
            legacy,
        }
    }

    /// Bytes the part decodes to: its blob's length raw, else `decoded_length`.
    pub fn decoded_size(&self) -> u64 {
        match self.encoding {
            None => self.length,
            Some(_) => self.decoded_length.unwrap_or(0),
        }
    }
}

/// A digest string (`<algorithm>:<lowercase hex>`), computed over decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digest {
    /// `xxh3` with 16 digits or `sha256` with 64.
    Known(Checksum),
    /// Another algorithm (or a registered one of another length): cannot be verified here.
    Other(String),
}

impl Digest {
    /// Parse `s`; `BadChecksum` when it is not `<algorithm>:<lowercase hex>`.
    pub fn parse(s: &str) -> Result<Digest> {
        let well_formed = s.split_once(':').is_some_and(|(algo, digits)| {
            !algo.is_empty()
                && !digits.is_empty()
                && algo.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && digits.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if !well_formed {
            return Err(Error::invalid(Rule::BadChecksum, format!("digest {s:?} is not <algorithm>:<lowercase hex>")));
        }
        let known = match s.split_once(':') {
            Some(("xxh3", d)) if d.len() == 16 => u64::from_str_radix(d, 16).ok().map(Checksum::Xxh3),
            Some(("sha256", d)) if d.len() == 64 => {
                let mut bytes = [0u8; 32];
                hex::decode_to_slice(d, &mut bytes).ok().map(|()| Checksum::Sha256(bytes))
            }
            _ => None,
        };
        Ok(known.map_or_else(|| Digest::Other(s.to_string()), Digest::Known))
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Digest::Known(c) => c.fmt(f),
            Digest::Other(s) => f.write_str(s),
        }
    }
}

/// `bytes` against `digest`: a mismatch is `ChecksumMismatch`, an algorithm this library
/// does not compute `BadChecksum`.
pub fn check_digest(digest: &Digest, bytes: &[u8]) -> Result<()> {
    match digest {
        Digest::Known(c) => {
            let got = Checksum::compute(c.kind(), bytes);
            if got.as_ref() != Some(c) {
                let got = got.map_or_else(String::new, |g| g.to_string());
                return Err(Error::invalid(Rule::ChecksumMismatch, format!("the bytes' digest is {got}, not {c}")));
            }
            Ok(())
        }
        Digest::Other(s) => Err(Error::invalid(
            Rule::BadChecksum,
            format!("cannot verify the digest {s:?}: an algorithm this library lacks"),
        )),
    }
}

/// Check a name against the rules of spec §3.5: not empty, at most 1024 bytes, no NUL.
pub fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME || name.contains('\0') {
        let shown: String = name.chars().take(40).collect();
        return Err(Error::invalid(
            Rule::BadField,
            format!("{what} {shown:?} ({} bytes) breaks the name rules: 1 to {MAX_NAME} bytes, no NUL", name.len()),
        ));
    }
    Ok(())
}

/// Parse manifest `bytes`: deterministic CBOR first (spec §3.1), then the schema.
pub fn parse(bytes: &[u8]) -> Result<Manifest> {
    cbor::deterministic::check(bytes, MAX_DEPTH)?;
    let mut d = Decoder::new(bytes);
    let mut m = Manifest::default();
    let mut objects = false;
    for_each_entry(&mut d, 0, "the manifest", |d, key| {
        match key {
            "objects" => {
                objects = true;
                m.objects = parse_objects(d)?;
            }
            "shards" => m.shards = parse_shards(d)?,
            "attributes" => m.attributes = parse_attributes(d, 1, "the file")?,
            _ => d.skip(1)?,
        }
        Ok(())
    })?;
    if !objects {
        return Err(Error::invalid(Rule::MissingField, "the manifest has no objects"));
    }
    Ok(m)
}

/// The entries of the map at `depth` (keyed by text; `what` names it), each handed to `f`
/// with its key to read the value at `depth + 1`. A map key of another type is refused.
fn for_each_entry(
    d: &mut Decoder<'_>,
    depth: usize,
    what: &str,
    mut f: impl FnMut(&mut Decoder<'_>, &str) -> Result<()>,
) -> Result<()> {
    let n = map_len(d, depth, what)?;
    for _ in 0..n {
        match d.key(depth + 1, |_| None::<()>)? {
            MapKey::Text(key) => f(d, &key)?,
            _ => return Err(Error::invalid(Rule::BadField, format!("{what} has a key that is not text"))),
        }
    }
    Ok(())
}

/// The length of the map that comes next, or `BadField` naming `what` when it is no map.
fn map_len(d: &mut Decoder<'_>, depth: usize, what: &str) -> Result<u64> {
    match d.container(cbor::MAP)? {
        // Deterministic CBOR has definite lengths only.
        Some(cbor::Len::Definite(n)) => Ok(n),
        _ => {
            d.skip(depth)?;
            Err(Error::invalid(Rule::BadField, format!("{what} is not a map")))
        }
    }
}

fn text(d: &mut Decoder<'_>, depth: usize, what: &str) -> Result<String> {
    match d.text(depth, None)? {
        Typed::Found(s) => Ok(s.to_string()),
        Typed::Other(_) => Err(Error::invalid(Rule::BadField, format!("{what} is not text"))),
    }
}

fn uint(d: &mut Decoder<'_>, depth: usize, what: &str) -> Result<u64> {
    match d.uint(depth)? {
        Typed::Found(v) => Ok(v),
        Typed::Other(_) => Err(Error::invalid(Rule::BadField, format!("{what} is not an unsigned integer"))),
    }
}

/// An `attributes` map at `depth` (spec §3.1): text keys obeying the name rules, any values
/// (the deterministic check has refused tags and other simple values already).
fn parse_attributes(d: &mut Decoder<'_>, depth: usize, whose: &str) -> Result<Vec<(String, MetaValue)>> {
    let Some(cbor::Len::Definite(n)) = d.container(cbor::MAP)? else {
        d.skip(depth)?;
        return Err(Error::invalid(Rule::BadMetadata, format!("the attributes of {whose} are not a map")));
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let key = match d.key(depth + 1, |_| None::<()>)? {
            MapKey::Text(key) => key.into_owned(),
            _ => {
                return Err(Error::invalid(Rule::BadMetadata, format!("an attribute of {whose} has a key not text")));
            }
        };
        check_name(&key, "the attribute key")?;
        let value = d.item(depth + 1)?;
        out.push((key, value));
    }
    Ok(out)
}

fn parse_shards(d: &mut Decoder<'_>) -> Result<Vec<ShardEntry>> {
    let mut shards = Vec::new();
    for_each_entry(d, 1, "the shard table", |d, name| {
        check_shard_name(name)?;
        if shards.len() >= MAX_SHARDS {
            return Err(Error::invalid(Rule::TooManyEntries, format!("more than {MAX_SHARDS} shards")));
        }
        let (mut size, mut digest) = (None, None);
        let what = format!("shard {name:?}");
        for_each_entry(d, 2, &what, |d, key| {
            match key {
                "size" => size = Some(uint(d, 3, "a shard's size")?),
                "digest" => digest = Some(Digest::parse(&text(d, 3, "a shard's digest")?)?),
                _ => d.skip(3)?,
            }
            Ok(())
        })?;
        let missing = |field: &str| Error::invalid(Rule::MissingField, format!("{what} has no {field}"));
        let size = size.ok_or_else(|| missing("size"))?;
        let digest = digest.ok_or_else(|| missing("digest"))?;
        if size < super::footer::MIN_LEN {
            return Err(Error::invalid(
                Rule::BadField,
                format!("{what} of {size} bytes: too small for a zTensor file"),
            ));
        }
        shards.push(ShardEntry { name: name.to_string(), size, digest });
        Ok(())
    })?;
    Ok(shards)
}

/// Check a shard name (spec §7.1): 1 to 64 bytes of `A-Z a-z 0-9 . _ -`, not starting with a
/// dot. A name that could leave the folder (a separator, a leading dot) is `UnsafePath`.
pub fn check_shard_name(name: &str) -> Result<()> {
    let unsafe_path = name.starts_with('.') || name.contains(['/', '\\']);
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if unsafe_path || name.is_empty() || name.len() > 64 || !name.chars().all(allowed) {
        let rule = if unsafe_path { Rule::UnsafePath } else { Rule::BadField };
        return Err(Error::invalid(
            rule,
            format!("shard name {name:?}: a shard name is 1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot"),
        ));
    }
    Ok(())
}

fn parse_objects(d: &mut Decoder<'_>) -> Result<Vec<Object>> {
    let Some(cbor::Len::Definite(n)) = d.container(cbor::MAP)? else {
        d.skip(1)?;
        return Err(Error::invalid(Rule::BadField, "objects is not a map"));
    };
    Catalog::check_count(n)?;
    let mut objects = Vec::new();
    for _ in 0..n {
        let name = match d.key(2, |_| None::<()>)? {
            MapKey::Text(key) => key.into_owned(),
            _ => return Err(Error::invalid(Rule::BadField, "an object name is not text")),
        };
        check_name(&name, "the object name")?;
        let object = parse_object(d, name.clone()).map_err(|e| e.for_tensor(&name))?;
        objects.push(object);
    }
    Ok(objects)
}

fn parse_object(d: &mut Decoder<'_>, name: String) -> Result<Object> {
    let (mut shape, mut layout, mut parts, mut attributes) = (None, None, None, Vec::new());
    for_each_entry(d, 2, "an object", |d, key| {
        match key {
            "shape" => shape = Some(parse_shape(d)?),
            "layout" => layout = Some(text(d, 3, "layout")?),
            "parts" => parts = Some(parse_parts(d)?),
            "attributes" => attributes = parse_attributes(d, 3, "an object")?,
            _ => d.skip(3)?,
        }
        Ok(())
    })?;
    let missing = |field: &str| Error::invalid(Rule::MissingField, format!("an object without {field}"));
    let shape = shape.ok_or_else(|| missing("shape"))?;
    let layout = layout.ok_or_else(|| missing("layout"))?;
    let parts = parts.ok_or_else(|| missing("parts"))?;
    if parts.is_empty() {
        return Err(Error::invalid(Rule::MissingField, "an object with no parts (spec §3.3: parts is non-empty)"));
    }
    Ok(Object { name, shape, layout, attributes, parts })
}

fn parse_shape(d: &mut Decoder<'_>) -> Result<Vec<u64>> {
    let shape = match d.uints(3)? {
        Typed::Found(dims) => dims,
        Typed::Other(v) => match *v {
            MetaValue::Array(items) if items.len() > MAX_RANK => {
                return Err(Error::invalid(Rule::BadField, format!("rank {} exceeds {MAX_RANK}", items.len())));
            }
            _ => return Err(Error::invalid(Rule::BadField, "shape is not an array of unsigned integers")),
        },
    };
    crate::checked::numel(&shape)?;
    Ok(shape)
}

fn parse_parts(d: &mut Decoder<'_>) -> Result<Vec<Part>> {
    let mut parts = Vec::new();
    for_each_entry(d, 3, "parts", |d, name| {
        check_name(name, "the part name")?;
        let part = parse_part(d, name).map_err(|e| in_part(e, name))?;
        parts.push(part);
        Ok(())
    })?;
    Ok(parts)
}

fn parse_part(d: &mut Decoder<'_>, name: &str) -> Result<Part> {
    let mut p = Part::new(name, false);
    let (mut dtype, mut blob) = (None, None);
    for_each_entry(d, 4, "a part", |d, key| {
        match key {
            "dtype" => dtype = Some(Storage::from_name(&text(d, 5, "dtype")?)?),
            "type" => p.logical = Some(text(d, 5, "type")?),
            "blob" => blob = Some(parse_blob(d)?),
            "shard" => p.shard = Some(text(d, 5, "shard")?),
            "encoding" => p.encoding = Some(text(d, 5, "encoding")?),
            "decoded_length" => p.decoded_length = Some(uint(d, 5, "decoded_length")?),
            "digest" => p.digest = Some(Digest::parse(&text(d, 5, "digest")?)?),
            _ => d.skip(5)?,
        }
        Ok(())
    })?;
    p.dtype = dtype.ok_or_else(|| Error::invalid(Rule::MissingField, "no dtype"))?;
    (p.offset, p.length) = blob.ok_or_else(|| Error::invalid(Rule::MissingField, "no blob"))?;
    match (&p.encoding, p.decoded_length) {
        (Some(e), None) => {
            return Err(Error::invalid(Rule::MissingField, format!("encoding {e:?} without decoded_length")));
        }
        (None, Some(_)) => return Err(Error::invalid(Rule::BadField, "decoded_length without an encoding")),
        _ => {}
    }
    Ok(p)
}

/// `[offset, length]`, exactly two unsigned integers.
fn parse_blob(d: &mut Decoder<'_>) -> Result<(u64, u64)> {
    match d.uints(5)? {
        Typed::Found(v) if v.len() == 2 => Ok((v[0], v[1])),
        _ => Err(Error::invalid(Rule::BadField, "blob is not [offset, length]")),
    }
}

/// `e` with the part it concerns named in its detail (errors name a tensor, not a part).
pub fn in_part(e: Error, part: &str) -> Error {
    match e.kind() {
        crate::error::ErrorKind::Invalid { rule, .. } => Error::invalid(*rule, format!("part {part:?}: {}", e.detail())),
        _ => e,
    }
}
