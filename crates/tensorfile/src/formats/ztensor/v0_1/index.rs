//! The CBOR index, parsed into raw entries (what each entry means is `interpret.rs`).
//!
//! The index is read in one pass: the fields zTensor defines are decoded straight into the
//! form they should have, and only a field of another form, or a custom key, is decoded as a
//! generic [`MetaValue`].

use std::borrow::Cow;

use crate::error::{Error, Result, Rule};
use crate::formats::ztensor::cbor::{self, Decoder, MapKey, Typed};
use crate::limits::MAX_ENTRIES;
use crate::model::MetaValue;

/// Keys with a meaning in zTensor 0.1 (plus our sparse keys); all others are custom fields.
pub const KNOWN_KEYS: [&str; 11] = [
    "name",
    "offset",
    "size",
    "dtype",
    "layout",
    "shape",
    "encoding",
    "data_endianness",
    "checksum",
    "sparse_format",
    "nnz",
];

/// A known key, told apart from custom keys without a copy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Name,
    Offset,
    Size,
    Dtype,
    Layout,
    Shape,
    Encoding,
    DataEndianness,
    Checksum,
    SparseFormat,
    Nnz,
}

impl Key {
    pub(super) fn of(text: &[u8]) -> Option<Key> {
        Some(match text {
            b"name" => Key::Name,
            b"offset" => Key::Offset,
            b"size" => Key::Size,
            b"dtype" => Key::Dtype,
            b"layout" => Key::Layout,
            b"shape" => Key::Shape,
            b"encoding" => Key::Encoding,
            b"data_endianness" => Key::DataEndianness,
            b"checksum" => Key::Checksum,
            b"sparse_format" => Key::SparseFormat,
            b"nnz" => Key::Nnz,
            _ => return None,
        })
    }

    /// The key as written (`KNOWN_KEYS` lists them in the order of the variants).
    fn text(self) -> &'static str {
        KNOWN_KEYS[self as usize]
    }

    /// This key's bit in a set of keys.
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// One entry of the index as read: its known fields in the form zTensor gives them (text
/// borrowed from the index, integers, a shape's dimensions), or, when a field has another
/// form, as the generic value found, for [`interpret`](super::interpret) to refuse with the
/// rule it breaks.
pub struct RawEntry<'a> {
    pub name: Cow<'a, str>,
    pub offset: u64,
    pub size: u64,
    pub(super) dtype: Option<Typed<&'a str>>,
    pub(super) layout: Option<Typed<&'a str>>,
    pub(super) shape: Option<Typed<Vec<u64>>>,
    pub(super) encoding: Option<Typed<&'a str>>,
    pub(super) data_endianness: Option<Typed<&'a str>>,
    pub(super) checksum: Option<Typed<&'a str>>,
    /// `sparse_format`, `nnz` and every custom key, in file order. The first two are fields
    /// of the `layout: "sparse"` form only; with another layout they are custom fields.
    pub(super) rest: Vec<(Cow<'a, str>, MetaValue)>,
}

/// An index entry as plain fields: its name and every key but name, offset and size, with
/// generic values (how an entry that cannot be read is described).
pub struct IndexEntry {
    pub name: String,
    pub fields: Vec<(Cow<'static, str>, MetaValue)>,
}

impl RawEntry<'_> {
    /// This entry as plain fields.
    pub fn plain(&self) -> IndexEntry {
        fn text(v: &Typed<&str>) -> MetaValue {
            match v {
                Typed::Found(s) => MetaValue::from(*s),
                Typed::Other(v) => (**v).clone(),
            }
        }
        let mut fields: Vec<(Cow<'static, str>, MetaValue)> = Vec::new();
        let texts = [
            (Key::Dtype, &self.dtype),
            (Key::Layout, &self.layout),
            (Key::Encoding, &self.encoding),
            (Key::DataEndianness, &self.data_endianness),
            (Key::Checksum, &self.checksum),
        ];
        for (key, value) in texts {
            if let Some(v) = value {
                fields.push((Cow::Borrowed(key.text()), text(v)));
            }
        }
        if let Some(shape) = &self.shape {
            let value = match shape {
                Typed::Found(dims) => MetaValue::Array(dims.iter().map(|&d| MetaValue::Int(i128::from(d))).collect()),
                Typed::Other(v) => (**v).clone(),
            };
            fields.push((Cow::Borrowed(Key::Shape.text()), value));
        }
        fields.extend(self.rest.iter().map(|(k, v)| (Cow::Owned(k.to_string()), v.clone())));
        IndexEntry { name: self.name.to_string(), fields }
    }

    /// A field kept in `rest` (`sparse_format`, `nnz`).
    pub(super) fn rest_field(&self, key: Key) -> Option<&MetaValue> {
        self.rest.iter().find(|(k, _)| k == key.text()).map(|(_, v)| v)
    }
}

/// Parse the index: an array of maps with text keys.
///
/// Errors come in the order a full decode then a check of each entry would find them: a
/// malformed CBOR item anywhere first, then too many entries, then the first entry (in file
/// order) that lacks a name, offset or size, or has a duplicate or non-text key.
pub fn parse(bytes: &[u8]) -> Result<Vec<RawEntry<'_>>> {
    let mut d = Decoder::new(bytes);
    let Some(len) = d.container(cbor::ARRAY)? else {
        // Not an array: decode it all the same, so that a malformed item is still reported as such.
        cbor::decode(bytes)?;
        return Err(Error::invalid(Rule::BadField, "the index is not a CBOR array"));
    };
    let mut entries = Vec::new();
    let mut count: u64 = 0;
    let mut first_problem = None;
    while d.has_next(len, count)? {
        let entry = parse_entry(&mut d, count, entries.last())?;
        count += 1;
        // Once the file is known to be refused, entries are only decoded, not kept.
        if first_problem.is_none() && entries.len() < MAX_ENTRIES {
            match entry {
                Ok(e) => entries.push(e),
                Err(problem) => first_problem = Some(problem),
            }
        }
    }
    d.finish()?;
    crate::formats::Catalog::check_count(count)?;
    match first_problem {
        Some(problem) => Err(problem),
        None => Ok(entries),
    }
}

/// One entry, decoded; inside the `Ok`, the entry or what makes it break the index's rules.
/// `previous` is the entry before, whose text fields this one most likely repeats.
fn parse_entry<'a>(
    d: &mut Decoder<'a>,
    position: u64,
    previous: Option<&RawEntry<'a>>,
) -> Result<Result<RawEntry<'a>>> {
    let bad_entry = |what: &str| Ok(Err(Error::invalid(Rule::BadField, format!("index entry {position} {what}"))));
    let Some(len) = d.container(cbor::MAP)? else {
        d.skip(1)?;
        return bad_entry("is not a map");
    };
    let (mut name, mut offset, mut size) = (None, None, None);
    let mut e = RawEntry {
        name: Cow::Borrowed(""),
        offset: 0,
        size: 0,
        dtype: None,
        layout: None,
        shape: None,
        encoding: None,
        data_endianness: None,
        checksum: None,
        rest: Vec::new(),
    };
    let mut seen = 0u16;
    // Of the keys met twice, the one that sorts first (the one reported).
    let mut twice: Option<&str> = None;
    let mut key_not_text = false;
    let mut done = 0;
    while d.has_next(len, done)? {
        done += 1;
        let known = match d.key(2, Key::of)? {
            MapKey::Known(k) => k,
            MapKey::Text(key) => {
                e.rest.push((key, d.item(2)?));
                continue;
            }
            MapKey::NotText => {
                key_not_text = true;
                d.skip(2)?;
                continue;
            }
        };
        if seen & known.bit() != 0 {
            twice = Some(twice.map_or(known.text(), |t| t.min(known.text())));
        }
        seen |= known.bit();
        match known {
            Key::Name => name = Some(d.text(2, None)?),
            Key::Offset => offset = Some(d.uint(2)?),
            Key::Size => size = Some(d.uint(2)?),
            Key::Dtype => e.dtype = Some(d.text(2, previous.and_then(|p| found(&p.dtype)))?),
            Key::Layout => e.layout = Some(d.text(2, previous.and_then(|p| found(&p.layout)))?),
            Key::Shape => e.shape = Some(d.uints(2)?),
            Key::Encoding => e.encoding = Some(d.text(2, previous.and_then(|p| found(&p.encoding)))?),
            Key::DataEndianness => {
                e.data_endianness = Some(d.text(2, previous.and_then(|p| found(&p.data_endianness)))?);
            }
            Key::Checksum => e.checksum = Some(d.text(2, None)?),
            Key::SparseFormat | Key::Nnz => e.rest.push((Cow::Borrowed(known.text()), d.item(2)?)),
        }
    }
    if key_not_text {
        return bad_entry("has a key that is not text");
    }
    // Custom keys met twice, by sorting (a hostile entry may hold many thousands of keys).
    if e.rest.len() > 1 {
        let mut keys: Vec<&str> = e.rest.iter().map(|(k, _)| k.as_ref()).collect();
        keys.sort_unstable();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            twice = Some(twice.map_or(w[0], |t| t.min(w[0])));
        }
    }
    if let Some(key) = twice {
        return Ok(Err(Error::invalid(Rule::BadField, format!("an index entry has the key {key:?} twice"))));
    }
    e.name = match name {
        Some(Typed::Found(s)) => Cow::Borrowed(s),
        Some(Typed::Other(v)) => match *v {
            MetaValue::Text(s) => Cow::Owned(s),
            _ => return Ok(Err(Error::invalid(Rule::BadField, "an index entry's name is not text"))),
        },
        None => return Ok(Err(Error::invalid(Rule::MissingField, "an index entry has no name"))),
    };
    let uint = |value: Option<Typed<u64>>, key: &str| match value {
        Some(Typed::Found(v)) => Ok(v),
        Some(Typed::Other(v)) => as_u64(&v).ok_or_else(|| {
            Error::invalid(Rule::BadField, format!("{key} is not an unsigned 64-bit integer"))
                .for_tensor(e.name.as_ref())
        }),
        None => Err(Error::invalid(Rule::MissingField, format!("no {key}")).for_tensor(e.name.as_ref())),
    };
    let fields = uint(offset, "offset").and_then(|o| Ok((o, uint(size, "size")?)));
    Ok(fields.map(|(offset, size)| RawEntry { offset, size, ..e }))
}

/// A text field's value, when it was found as one definite string.
pub(super) fn found<'a>(field: &Option<Typed<&'a str>>) -> Option<&'a str> {
    match field {
        Some(Typed::Found(text)) => Some(text),
        _ => None,
    }
}

pub(super) fn as_u64(v: &MetaValue) -> Option<u64> {
    match v {
        MetaValue::Int(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn known_keys_match_their_variants() {
        for k in KNOWN_KEYS {
            assert_eq!(Key::of(k.as_bytes()).map(Key::text), Some(k));
        }
        assert!(Key::of(b"names").is_none());
    }

    /// An index of `entries`, each an indefinite map of text keys.
    pub(in crate::formats::ztensor::v0_1) fn index(entries: &[Vec<(&str, MetaValue)>]) -> Vec<u8> {
        let mut e = cbor::Encoder::default();
        e.array_header(entries.len() as u64);
        for entry in entries {
            e.map_begin_indefinite();
            for (k, v) in entry {
                e.text(k);
                e.value(v);
            }
            e.end_indefinite();
        }
        e.out
    }

    pub(in crate::formats::ztensor::v0_1) fn dense(name: &str) -> Vec<(&'static str, MetaValue)> {
        let name = MetaValue::from(name);
        vec![
            ("name", name),
            ("offset", MetaValue::Int(64)),
            ("size", MetaValue::Int(8)),
            ("dtype", "float32".into()),
            ("shape", MetaValue::Array(vec![MetaValue::Int(2)])),
            ("encoding", "raw".into()),
        ]
    }

    fn rule(bytes: &[u8]) -> (Rule, String) {
        let e = parse(bytes).err().unwrap();
        (e.rule().unwrap(), e.detail())
    }

    #[test]
    fn the_first_duplicate_key_in_sort_order_is_reported() {
        let twice = |keys: &[&'static str]| {
            let mut fields = dense("t");
            fields.extend(keys.iter().map(|&k| (k, MetaValue::Null)));
            rule(&index(&[fields]))
        };
        assert_eq!(
            twice(&["zz", "zz", "shape"]),
            (Rule::BadField, "an index entry has the key \"shape\" twice".into())
        );
        assert_eq!(twice(&["shape", "a", "a"]), (Rule::BadField, "an index entry has the key \"a\" twice".into()));
    }

    #[test]
    fn entry_problems_come_after_malformed_cbor() {
        let mut no_name = dense("t");
        no_name.remove(0);
        assert_eq!(rule(&index(&[no_name.clone(), dense("u")])).0, Rule::MissingField);
        // Where the second entry's break was, a reserved head: the whole index is malformed.
        let mut bytes = index(&[no_name, dense("u")]);
        if let Some(last) = bytes.last_mut() {
            *last = 0x1c;
        }
        assert_eq!(rule(&bytes).0, Rule::BadCbor);
    }
}
