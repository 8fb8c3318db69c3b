//! Opening a zTensor 1.x file: the magic at both ends, the manifest before the last 16
//! bytes, its objects read into zTensor 2's structures, and the placement of every component
//! checked (64-byte aligned, after the magic, before the manifest, identical or disjoint).

use super::{ALIGNMENT, MAGIC};
use crate::error::{Error, Result, Rule};
use crate::formats::Catalog;
use crate::formats::ztensor::cbor;
use crate::formats::ztensor::v0_1::interpret::parse_checksum;
use crate::formats::ztensor::v2::Zt2Reader;
use crate::formats::ztensor::v2::manifest::{Digest, Manifest, Object, Part, check_name, in_part};
use crate::formats::ztensor::v2::read::Flavor;
use crate::formats::ztensor::v2::types::Storage;
use crate::limits::{MAX_RANK, MAX_ZT_INDEX};
use crate::model::MetaValue;
use crate::source::{SPECULATIVE_READ, Source};

/// The manifest's length and the magic, last.
const TRAILER: u64 = 16;

/// Open a zTensor 1.x file: only its trailer and manifest are read.
pub fn open(src: impl Into<Source>) -> Result<Zt2Reader> {
    let src = src.into();
    let len = src.len();
    let head = src.range(0, (MAGIC.len() as u64).min(len))?;
    if len < MAGIC.len() as u64 + TRAILER {
        return Err(Error::invalid(Rule::Truncated, format!("{len} bytes: no room for the magic and the trailer")));
    }
    if !head.starts_with(MAGIC) {
        return Err(Error::invalid(Rule::BadMagic, "does not start with ZTEN1000"));
    }
    let (start, tail) = src.tail(SPECULATIVE_READ)?;
    let trailer = &tail[(len - TRAILER - start) as usize..];
    if !trailer.ends_with(MAGIC) {
        return Err(Error::invalid(Rule::BadMagic, "does not end with ZTEN1000"));
    }
    let manifest_len = crate::cursor::u64_le_at(trailer, 0, "manifest length")?;
    let room = len - MAGIC.len() as u64 - TRAILER;
    if manifest_len > room || manifest_len > MAX_ZT_INDEX {
        return Err(Error::invalid(
            Rule::HeaderTooLarge,
            format!("a manifest of {manifest_len} bytes: {room} lie between the magics (limit {MAX_ZT_INDEX})"),
        ));
    }
    let manifest_start = len - TRAILER - manifest_len;
    let root = cbor::decode(&src.range(manifest_start, manifest_len)?)?;
    let (m, version) = manifest(root)?;
    check_placement(&m, manifest_start)?;
    Zt2Reader::from_manifest(src, m, Flavor::V1 { version, manifest_len })
}

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadField, detail)
}

/// The entries of a map value, or `BadField` naming `what`.
fn entries(v: MetaValue, what: &str) -> Result<Vec<(MetaValue, MetaValue)>> {
    match v {
        MetaValue::Map(pairs) => Ok(pairs),
        _ => Err(bad(format!("{what} is not a map"))),
    }
}

/// The entries of a map keyed by text, or `BadField`.
fn text_keyed(v: MetaValue, what: &str) -> Result<Vec<(String, MetaValue)>> {
    entries(v, what)?
        .into_iter()
        .map(|(k, v)| match k {
            MetaValue::Text(k) => Ok((k, v)),
            _ => Err(bad(format!("{what} has a key that is not text"))),
        })
        .collect()
}

fn text(v: MetaValue, what: &str) -> Result<String> {
    match v {
        MetaValue::Text(s) => Ok(s),
        _ => Err(bad(format!("{what} is not text"))),
    }
}

fn uint(v: &MetaValue, what: &str) -> Result<u64> {
    match v {
        MetaValue::Int(i) => u64::try_from(*i).map_err(|_| bad(format!("{what} is {i}, not an unsigned integer"))),
        _ => Err(bad(format!("{what} is not an unsigned integer"))),
    }
}

/// The manifest's objects (as zTensor 2 objects), and its version.
fn manifest(root: MetaValue) -> Result<(Manifest, String)> {
    let mut m = Manifest::default();
    let (mut version, mut objects) = (String::new(), None);
    for (key, value) in text_keyed(root, "the manifest")? {
        match key.as_str() {
            "version" => version = text(value, "version")?,
            "attributes" => {
                let attrs = match value {
                    MetaValue::Map(_) => text_keyed(value, "the attributes"),
                    _ => Err(Error::invalid(Rule::BadMetadata, "the attributes are not a map")),
                };
                m.attributes = attrs.map_err(|e| Error::invalid(Rule::BadMetadata, e.detail()))?;
            }
            "objects" => objects = Some(value),
            _ => {}
        }
    }
    let objects = text_keyed(objects.ok_or_else(|| Error::invalid(Rule::MissingField, "no objects"))?, "objects")?;
    Catalog::check_count(objects.len() as u64)?;
    for (name, value) in objects {
        check_name(&name, "the object name")?;
        if m.objects.iter().any(|o| o.name == name) {
            return Err(Error::invalid(Rule::DuplicateName, format!("two objects are named {name:?}")));
        }
        m.objects.push(object(&name, value).map_err(|e| e.for_tensor(&name))?);
    }
    Ok((m, version))
}

fn object(name: &str, value: MetaValue) -> Result<Object> {
    let (mut shape, mut layout, mut parts, mut attributes) = (None, None, None, Vec::new());
    for (key, value) in text_keyed(value, "an object")? {
        match key.as_str() {
            "shape" => shape = Some(shape_of(&value)?),
            "format" => layout = Some(text(value, "format")?),
            "attributes" => attributes = text_keyed(value, "its attributes")?,
            "components" => {
                let components = text_keyed(value, "components")?;
                parts = Some(
                    components
                        .into_iter()
                        .map(|(n, v)| part(&n, v).map_err(|e| in_part(e, &n)))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            _ => {}
        }
    }
    let missing = |field: &str| Error::invalid(Rule::MissingField, format!("an object without {field}"));
    let parts = parts.ok_or_else(|| missing("components"))?;
    if parts.is_empty() {
        return Err(missing("components"));
    }
    // zTensor 1.x formats, as the zTensor 2 layouts that define them.
    let layout = match layout.ok_or_else(|| missing("format"))?.as_str() {
        "dense" => "dense".to_string(),
        "sparse_csr" => "zt.sparse_csr/1".to_string(),
        "sparse_coo" => "zt.sparse_coo/1".to_string(),
        other => format!("zTensor 1 format {other}"),
    };
    let shape = shape.ok_or_else(|| missing("shape"))?;
    Ok(Object { name: name.to_string(), shape, layout, attributes, parts })
}

fn shape_of(v: &MetaValue) -> Result<Vec<u64>> {
    let MetaValue::Array(dims) = v else { return Err(bad("shape is not an array")) };
    if dims.len() > MAX_RANK {
        return Err(bad(format!("rank {} exceeds {MAX_RANK}", dims.len())));
    }
    let shape = dims.iter().map(|d| uint(d, "a dimension")).collect::<Result<Vec<u64>>>()?;
    crate::checked::numel(&shape)?;
    Ok(shape)
}

fn part(name: &str, value: MetaValue) -> Result<Part> {
    check_name(name, "the component name")?;
    let mut p = Part::new(name, true);
    let (mut dtype, mut offset, mut length) = (None, None, None);
    for (key, value) in text_keyed(value, "a component")? {
        match key.as_str() {
            "dtype" => dtype = Some(text(value, "dtype")?),
            "type" => p.logical = Some(text(value, "type")?),
            "offset" => offset = Some(uint(&value, "offset")?),
            "length" => length = Some(uint(&value, "length")?),
            "uncompressed_length" => p.decoded_length = Some(uint(&value, "uncompressed_length")?),
            "encoding" => p.encoding = Some(text(value, "encoding")?).filter(|e| e != "raw"),
            "digest" => {
                let s = text(value, "digest")?;
                p.digest = Some(parse_checksum(&s)?.map_or(Digest::Other(s), Digest::Known));
            }
            _ => {}
        }
    }
    let missing = |field: &str| Error::invalid(Rule::MissingField, format!("no {field}"));
    (p.offset, p.length) = (offset.ok_or_else(|| missing("offset"))?, length.ok_or_else(|| missing("length"))?);
    // zTensor 1.x's 13 dtypes: the 12 storage types and bool (over u8).
    match dtype.ok_or_else(|| missing("dtype"))?.as_str() {
        "bool" if p.logical.is_none() => p.logical = Some("bool".into()),
        d => p.dtype = Storage::from_name(d)?,
    }
    match (&p.encoding, p.decoded_length) {
        (Some(_), None) => return Err(missing("uncompressed_length (the component is encoded)")),
        (None, Some(_)) => p.decoded_length = None,
        _ => {}
    }
    Ok(p)
}

/// Every component 64-byte aligned, after the magic and before the manifest, and components
/// identical or disjoint.
fn check_placement(m: &Manifest, manifest_start: u64) -> Result<()> {
    let mut blobs = Vec::new();
    for o in &m.objects {
        for p in &o.parts {
            let place = |e: Error| in_part(e, &p.name).for_tensor(&o.name);
            if p.offset % ALIGNMENT != 0 || p.offset < ALIGNMENT {
                return Err(place(Error::invalid(
                    Rule::Misaligned,
                    format!("component at {}: not a multiple of {ALIGNMENT} from {ALIGNMENT} on", p.offset),
                )));
            }
            if p.offset.checked_add(p.length).is_none_or(|end| end > manifest_start) {
                return Err(place(Error::invalid(
                    Rule::OutOfBounds,
                    format!("component at {} (+{}) runs past the data's end at {manifest_start}", p.offset, p.length),
                )));
            }
            if p.length > 0 {
                blobs.push((p.offset, p.length, o.name.as_str()));
            }
        }
    }
    blobs.sort_unstable();
    blobs.dedup_by_key(|&mut (offset, len, _)| (offset, len));
    if let Some(w) = blobs.windows(2).find(|w| w[0].0 + w[0].1 > w[1].0) {
        let detail = format!("the components of {:?} and {:?} partly overlap", w[0].2, w[1].2);
        return Err(Error::invalid(Rule::Overlap, detail).for_tensor(w[1].2));
    }
    Ok(())
}
