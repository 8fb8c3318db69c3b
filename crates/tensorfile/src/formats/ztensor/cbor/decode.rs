//! The decoder: definite and indefinite lengths, bounded nesting, no allocation larger than
//! the input can fill.

use std::borrow::Cow;

use super::{ARRAY, Len, MAP, MapKey, Typed};
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_NESTING, MAX_RANK};
use crate::model::MetaValue;

fn bad(msg: impl Into<String>) -> Error {
    Error::invalid(Rule::BadCbor, msg)
}

/// Reads CBOR items one after another from `input`.
pub struct Decoder<'a> {
    c: Cursor<'a>,
}

/// What a head's argument is, for messages.
const ARGUMENT: &str = "CBOR item argument";

/// What the initial byte announces.
enum Head {
    /// A number (integer value, length or count, simple value...).
    Value(u64),
    /// Additional information 31: indefinite length, or "break" for major type 7.
    Indefinite,
}

impl<'a> Decoder<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Decoder { c: Cursor::new(input) }
    }

    /// Refuse bytes left after the last item read.
    pub fn finish(&self) -> Result<()> {
        if !self.c.is_at_end() {
            return Err(bad(format!("{} bytes after the index's CBOR item", self.c.remaining())));
        }
        Ok(())
    }

    fn head(&mut self) -> Result<(u8, u8, Head)> {
        let b = self.c.u8("CBOR item head")?;
        let (major, info) = (b >> 5, b & 0x1f);
        let head = match info {
            0..=23 => Head::Value(u64::from(info)),
            24 => Head::Value(u64::from(self.c.u8(ARGUMENT)?)),
            25 => Head::Value(u64::from(self.c.u16_be(ARGUMENT)?)),
            26 => Head::Value(u64::from(self.c.u32_be(ARGUMENT)?)),
            27 => Head::Value(self.c.u64_be(ARGUMENT)?),
            31 => Head::Indefinite,
            _ => return Err(bad(format!("reserved additional information {info}"))),
        };
        Ok((major, info, head))
    }

    fn remaining(&self) -> usize {
        self.c.remaining()
    }

    /// A definite length of bytes that must all be present.
    fn bytes_of_len(&mut self, len: u64) -> Result<&'a [u8]> {
        let n = usize::try_from(len).ok().filter(|&n| n <= self.remaining()).ok_or_else(|| {
            Error::invalid(Rule::Truncated, format!("CBOR string of {len} bytes, {} left", self.remaining()))
        })?;
        self.c.take(n, "CBOR string")
    }

    fn at_break(&mut self) -> Result<bool> {
        match self.c.peek() {
            Some(0xff) => {
                self.c.skip(1, "CBOR break")?;
                Ok(true)
            }
            Some(_) => Ok(false),
            None => Err(Error::invalid(Rule::Truncated, "indefinite CBOR item without its break")),
        }
    }

    /// Bytes of a (possibly chunked) byte or text string of `major` type.
    fn string(&mut self, major: u8, head: Head) -> Result<Vec<u8>> {
        match head {
            Head::Value(len) => Ok(self.bytes_of_len(len)?.to_vec()),
            Head::Indefinite => {
                let mut out = Vec::new();
                while !self.at_break()? {
                    match self.head()? {
                        (m, _, Head::Value(len)) if m == major => out.extend_from_slice(self.bytes_of_len(len)?),
                        _ => {
                            return Err(bad(
                                "a chunk of an indefinite string is not a definite string of the same type",
                            ));
                        }
                    }
                }
                Ok(out)
            }
        }
    }

    /// The head of an array (`major` is [`ARRAY`]) or a map ([`MAP`]): its length, with a
    /// definite length checked against the bytes that remain (every item takes at least one
    /// byte, every pair two). `None`, with nothing consumed, when the next item is another.
    pub fn container(&mut self, major: u8) -> Result<Option<Len>> {
        let start = self.c;
        let (found, _, head) = self.head()?;
        if found != major {
            self.c = start;
            return Ok(None);
        }
        match head {
            Head::Indefinite => Ok(Some(Len::Indefinite)),
            Head::Value(n) => {
                let (items, room) = if major == MAP {
                    ("pairs", (self.remaining() / 2) as u64)
                } else {
                    ("items", self.remaining() as u64)
                };
                if n > room {
                    let kind = if major == MAP { "map" } else { "array" };
                    return Err(Error::invalid(
                        Rule::Truncated,
                        format!("CBOR {kind} of {n} {items}, {} bytes left", self.remaining()),
                    ));
                }
                Ok(Some(Len::Definite(n)))
            }
        }
    }

    /// Whether a container of length `len` holds another item after the `done` already read
    /// (for an indefinite length, this consumes the break that ends it).
    pub fn has_next(&mut self, len: Len, done: u64) -> Result<bool> {
        match len {
            Len::Definite(n) => Ok(done < n),
            Len::Indefinite => Ok(!self.at_break()?),
        }
    }

    /// Skip one item at nesting `depth`, with every check decoding it makes.
    pub fn skip(&mut self, depth: usize) -> Result<()> {
        self.item(depth).map(drop)
    }

    // The readers below take the item in the form their caller expects without building a
    // generic value. When the item has another form, or is malformed, they go back to its
    // start and decode it as a generic value: errors are then reported exactly as decoding
    // any item reports them.

    /// A map key at nesting `depth`: one of the keys `known` recognises (from its bytes, before
    /// any copy or UTF-8 check), other text, or not text at all.
    pub fn key<K>(&mut self, depth: usize, known: impl Fn(&[u8]) -> Option<K>) -> Result<MapKey<'a, K>> {
        let start = self.c;
        if depth <= MAX_NESTING {
            if let Some(raw) = self.definite_text() {
                if let Some(k) = known(raw) {
                    return Ok(MapKey::Known(k));
                }
                if let Ok(text) = std::str::from_utf8(raw) {
                    return Ok(MapKey::Text(Cow::Borrowed(text)));
                }
            }
        }
        self.c = start;
        Ok(match self.item(depth)? {
            MetaValue::Text(text) => match known(text.as_bytes()) {
                Some(k) => MapKey::Known(k),
                None => MapKey::Text(Cow::Owned(text)),
            },
            _ => MapKey::NotText,
        })
    }

    /// A text item at nesting `depth`, borrowed from the input. `previous`, when given, is
    /// text this item often repeats (the same field of the previous entry): an item with the
    /// same bytes is that text, and needs no UTF-8 check.
    pub fn text(&mut self, depth: usize, previous: Option<&'a str>) -> Result<Typed<&'a str>> {
        let start = self.c;
        if depth <= MAX_NESTING {
            if let Some(raw) = self.definite_text() {
                if let Some(p) = previous.filter(|p| p.as_bytes() == raw) {
                    return Ok(Typed::Found(p));
                }
                if let Ok(text) = std::str::from_utf8(raw) {
                    return Ok(Typed::Found(text));
                }
            }
        }
        self.c = start;
        self.other(depth)
    }

    /// An unsigned integer item at nesting `depth`.
    pub fn uint(&mut self, depth: usize) -> Result<Typed<u64>> {
        let start = self.c;
        if depth <= MAX_NESTING {
            if let Some((0, value)) = self.definite_head() {
                return Ok(Typed::Found(value));
            }
        }
        self.c = start;
        self.other(depth)
    }

    /// An array of unsigned integers at nesting `depth` (a shape), of definite length.
    pub fn uints(&mut self, depth: usize) -> Result<Typed<Vec<u64>>> {
        let start = self.c;
        // The items are one level deeper than the array.
        if depth < MAX_NESTING {
            if let Some(values) = self.definite_uints() {
                return Ok(Typed::Found(values));
            }
        }
        self.c = start;
        self.other(depth)
    }

    fn other<T>(&mut self, depth: usize) -> Result<Typed<T>> {
        Ok(Typed::Other(Box::new(self.item(depth)?)))
    }

    /// The next head when it holds a definite value: its major type and that value, consumed.
    /// `None` for an indefinite length, a reserved encoding, or a head cut short.
    fn definite_head(&mut self) -> Option<(u8, u64)> {
        let mut c = self.c;
        let first = c.u8("CBOR item head").ok()?;
        let (major, info) = (first >> 5, first & 0x1f);
        let value = match info {
            0..=23 => u64::from(info),
            24 => u64::from(c.u8(ARGUMENT).ok()?),
            25 => u64::from(c.u16_be(ARGUMENT).ok()?),
            26 => u64::from(c.u32_be(ARGUMENT).ok()?),
            27 => c.u64_be(ARGUMENT).ok()?,
            _ => return None,
        };
        self.c = c;
        Some((major, value))
    }

    /// The bytes of a definite text string that lies whole in the input, consumed.
    fn definite_text(&mut self) -> Option<&'a [u8]> {
        let (3, len) = self.definite_head()? else { return None };
        self.c.take(usize::try_from(len).ok()?, "CBOR text").ok()
    }

    /// A definite array of unsigned integers, consumed.
    fn definite_uints(&mut self) -> Option<Vec<u64>> {
        let (ARRAY, n) = self.definite_head()? else { return None };
        // A longer shape is refused anyway: it is left to the generic decoder (which also
        // keeps this reservation small).
        let n = usize::try_from(n).ok().filter(|&n| n <= MAX_RANK)?;
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            let (0, value) = self.definite_head()? else { return None };
            values.push(value);
        }
        Some(values)
    }

    /// One item at nesting `depth`, decoded as a generic value.
    pub fn item(&mut self, depth: usize) -> Result<MetaValue> {
        if depth > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("CBOR nested deeper than {MAX_NESTING}")));
        }
        let (major, info, head) = self.head()?;
        match (major, head) {
            (0, Head::Value(v)) => Ok(MetaValue::Int(i128::from(v))),
            (1, Head::Value(v)) => Ok(MetaValue::Int(-1 - i128::from(v))),
            (2, h) => Ok(MetaValue::Bytes(self.string(2, h)?)),
            (3, h) => {
                let raw = self.string(3, h)?;
                String::from_utf8(raw)
                    .map(MetaValue::Text)
                    .map_err(|_| Error::invalid(Rule::BadUtf8, "CBOR text string is not UTF-8"))
            }
            (4, h) => {
                let mut items = Vec::new();
                match h {
                    Head::Value(n) => {
                        // Every item takes at least one byte: a count beyond what remains is a lie.
                        if n > self.remaining() as u64 {
                            return Err(Error::invalid(
                                Rule::Truncated,
                                format!("CBOR array of {n} items, {} bytes left", self.remaining()),
                            ));
                        }
                        for _ in 0..n {
                            items.push(self.item(depth + 1)?);
                        }
                    }
                    Head::Indefinite => {
                        while !self.at_break()? {
                            items.push(self.item(depth + 1)?);
                        }
                    }
                }
                Ok(MetaValue::Array(items))
            }
            (5, h) => {
                let mut pairs = Vec::new();
                match h {
                    Head::Value(n) => {
                        if n > (self.remaining() / 2) as u64 {
                            return Err(Error::invalid(
                                Rule::Truncated,
                                format!("CBOR map of {n} pairs, {} bytes left", self.remaining()),
                            ));
                        }
                        for _ in 0..n {
                            let k = self.item(depth + 1)?;
                            let v = self.item(depth + 1)?;
                            pairs.push((k, v));
                        }
                    }
                    Head::Indefinite => {
                        while !self.at_break()? {
                            let k = self.item(depth + 1)?;
                            let v = self.item(depth + 1)?;
                            pairs.push((k, v));
                        }
                    }
                }
                Ok(MetaValue::Map(pairs))
            }
            (6, Head::Value(tag)) => Ok(MetaValue::Tagged(tag, Box::new(self.item(depth + 1)?))),
            (7, Head::Value(v)) => match info {
                20 => Ok(MetaValue::Bool(false)),
                21 => Ok(MetaValue::Bool(true)),
                22 => Ok(MetaValue::Null),
                23 => Ok(MetaValue::Undefined),
                0..=19 => Ok(MetaValue::Simple(info)),
                // The head's width bounds `v`; the conversions below cannot fail.
                24 if v >= 32 => u8::try_from(v).map(MetaValue::Simple).map_err(|_| bad("simple value")),
                24 => Err(bad(format!("simple value {v} in two-byte form"))),
                25 => u16::try_from(v)
                    .map(|h| MetaValue::Float(half::f16::from_bits(h).to_f64()))
                    .map_err(|_| bad("half float")),
                26 => {
                    u32::try_from(v).map(|f| MetaValue::Float(f64::from(f32::from_bits(f)))).map_err(|_| bad("float"))
                }
                27 => Ok(MetaValue::Float(f64::from_bits(v))),
                _ => Err(bad(format!("bad simple/float encoding {info}"))),
            },
            (7, Head::Indefinite) => Err(bad("unexpected CBOR break")),
            (_, Head::Indefinite) => Err(bad(format!("major type {major} cannot have indefinite length"))),
            (m, _) => Err(bad(format!("unknown major type {m}"))),
        }
    }
}
